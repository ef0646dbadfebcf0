// The thread pool every parallel region of the engine runs on.
//
// Why not OpenMP: libgomp's idle workers spin for a long, fixed time (or
// forever with OMP_WAIT_POLICY=active) before sleeping, so on a shared or
// oversubscribed machine they take the cores from the threads doing the work
// (with a busy loop on one of 2 cores, 2-thread decode ran at 0.69-0.81x of
// 1-thread decode), and its behaviour is set by environment variables read
// before main(). Here a waiting
// thread spins for a bounded time (kDefaultSpinUs, STATICLM_SPIN_US overrides),
// yielding its core to other runnable threads, then sleeps on a futex; the
// thread that ends the wait wakes sleepers only when there are any.
//
// Semantics (what the kernels rely on):
// - parallel(n, body) runs body(team) on n threads: the caller is thread 0,
//   pool workers are 1 .. n-1; it returns when every thread has returned.
// - n is clamped to pool_capacity() (staticlm::max_threads()).
// - When threads keep losing their cores to other processes mid-region (a
//   loaded or oversubscribed machine), regions run on their caller alone for a
//   while (detail::StallGuard), then the full team is tried again. A body must
//   therefore compute the same result whatever team.size() it gets (lay work
//   out from the requested count, not from the team's size).
// - A region opened from inside a region (nested) runs on the calling thread
//   alone (team of one), as OpenMP does with nesting off.
// - Regions opened at the same time from different threads of the program
//   (two sessions in two threads) take turns: one pool, one region at a time.
// - Workers start on first use; reserve_threads(n) starts them earlier (at
//   session creation) so that no region ever allocates.
// - An exception thrown by a body is caught, the first one is rethrown by
//   parallel() on the caller after every thread has returned. A body that can
//   throw must not wait at team.barrier() (its team would wait for ever).
#pragma once

#include <atomic>
#include <cstdint>
#include <type_traits>

namespace staticlm::kernels {

constexpr int kDefaultSpinUs = 1000;

class Team;
namespace detail {
using RegionFn = void (*)(void* ctx, const Team& team);
void run_region(int n_threads, RegionFn fn, void* ctx, bool fixed_team);
}  // namespace detail

// What a region's body gets: its thread id and the team's size. Only the pool
// makes teams (a barrier outside a region would wait for threads that do not
// exist).
class Team {
public:
    int tid() const { return tid_; }
    int size() const { return size_; }
    // Every thread of the team waits here until all have arrived.
    void barrier() const;

private:
    friend struct Pool;
    friend void detail::run_region(int, detail::RegionFn, void*, bool);
    Team(int tid, int size) : tid_(tid), size_(size) {}
    int tid_;
    int size_;
};

namespace detail {

// The oversubscription guard's bookkeeping, fed by the pool after sampled
// regions. A region is stalled when one of its threads lost more than
// kStallMinNs, and more than half the region's wall time, while it had work:
// time it was runnable but another process had its core (wall time minus its
// CPU time, waits at barriers excluded, plus, for a worker, the delay before
// it started). Planned imbalance (a thread with less work waiting at a
// barrier) is not a loss. After kStallsToShrink stalled regions (net of clean
// ones) regions run on their caller alone for kShrinkNs; then the full team
// is tried again, on probation for kRecurNs: every region is measured and
// the first stalled one starts the next solo period, twice as long (up to
// kMaxShrinkNs). Waiting for two stalls on sampled regions there left the
// busy-neighbour check of docs/PERFORMANCE.md at 0.93-0.98x of one thread's
// decode on a 2-core Xeon (0.97-0.99x with the probation).
class StallGuard {
public:
    static constexpr int64_t kStallMinNs = 1'000'000;
    static constexpr int kStallsToShrink = 2;
    static constexpr int64_t kShrinkNs = 200'000'000;
    static constexpr int64_t kMaxShrinkNs = 12'800'000'000;
    static constexpr int64_t kRecurNs = 2'000'000'000;

    bool solo(int64_t now_ns) const { return now_ns < solo_until_; }
    // Within kRecurNs after a solo period's end.
    bool probation(int64_t now_ns) const {
        return solo_until_ != 0 && now_ns >= solo_until_ && now_ns - solo_until_ < kRecurNs;
    }
    // A sampled region that ended at now_ns after region_ns, whose threads
    // lost at most max_lost_ns; true when it starts a solo period.
    bool note(int64_t now_ns, int64_t region_ns, int64_t max_lost_ns);
    // Whether a region starting at now_ns is measured whatever the sampling.
    bool watching(int64_t now_ns) const { return score_ > 0 || probation(now_ns); }
    uint64_t shrinks() const { return shrinks_; }
    int64_t solo_until() const { return solo_until_; }

private:
    int score_ = 0;
    int64_t solo_until_ = 0;
    int64_t solo_ns_ = kShrinkNs;
    uint64_t shrinks_ = 0;
};

// Forgets the stalls seen so far and ends a solo period (tests).
void reset_pool_guard();

}  // namespace detail

template <class F>
void parallel(int n_threads, F&& body, bool fixed_team = false) {
    using Body = std::remove_reference_t<F>;
    detail::run_region(
        n_threads, [](void* ctx, const Team& t) { (*static_cast<Body*>(ctx))(t); },
        const_cast<void*>(static_cast<const void*>(&body)), fixed_team);
}

// parallel() whose team is never shrunk (n threads, clamped to the capacity,
// whatever the load): for measuring the machine (the probe) and for tests.
template <class F>
void parallel_fixed(int n_threads, F&& body) {
    parallel(n_threads, static_cast<F&&>(body), true);
}

// Hands out the indices [0, n) one at a time to whichever thread asks next
// (OpenMP's schedule(dynamic, 1)); shared by the threads of one region.
class IndexQueue {
public:
    explicit IndexQueue(long n) : n_(n) {}
    bool next(long& i) {
        i = next_.fetch_add(1, std::memory_order_relaxed);
        return i < n_;
    }

private:
    long n_;
    std::atomic<long> next_{0};
};

// body(i, team) for every i in [0, n), dynamically; no more threads than items.
template <class F>
void parallel_for(int n_threads, int n, F&& body) {
    if (n <= 0) return;
    IndexQueue queue(n);
    parallel(n_threads < n ? n_threads : n, [&](const Team& t) {
        for (long i; queue.next(i);) body(int(i), t);
    });
}

// Starts pool workers so that a team of n_threads needs no new thread. If the
// system refuses a thread, the pool stays as large as it got (teams are
// clamped to it).
void reserve_threads(int n_threads);
// The team parallel_fixed(n_threads, ...) gets when called from this thread
// now: 1 inside a region or in a forked child, else n clamped to the pool.
int fixed_team_size(int n_threads);
// The largest team a region gets (staticlm::max_threads()).
int pool_capacity();
// How many times the pool ran regions on their caller alone because threads
// kept losing their cores (see Pool in kernels/parallel.cpp).
uint64_t pool_shrinks();
// How long (µs) a waiting thread spins before it sleeps: STATICLM_SPIN_US
// parsed by parse_spin_us when the pool starts.
int spin_us();
// A whole number of µs in 0 .. 100000; nullptr or "" give kDefaultSpinUs; any
// other text gives -1 (the pool then warns on stderr and uses the default).
int parse_spin_us(const char* text);
// True on a pool worker, and on any thread while it runs a region's body.
bool in_parallel_region();

}  // namespace staticlm::kernels
