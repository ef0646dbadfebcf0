// The pool behind parallel() (kernels/parallel.hpp): one process-wide set of
// workers, each waiting on its own futex word, one region at a time.
#include "kernels/parallel.hpp"

#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>

#include "staticlm/types.hpp"

namespace staticlm::kernels {
namespace {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
}

int read_spin_us() {
    const char* text = std::getenv("STATICLM_SPIN_US");
    const int us = parse_spin_us(text);
    if (us >= 0) return us;
    std::fprintf(stderr, "staticlm: STATICLM_SPIN_US=%s is not a number of microseconds in 0..100000; using %d\n",
                 text, kDefaultSpinUs);
    return kDefaultSpinUs;
}

// A 32-bit word threads wait on: spin (pause, then yield the core) for up to
// spin_ns, then sleep in the kernel. The thread that changes the word calls
// notify(), a system call only when someone sleeps. `sleepers` and `value` are
// both accessed seq_cst so that a waiter about to sleep and a notifier never
// miss each other (each sees the other's write).
struct alignas(64) Word {
    std::atomic<uint32_t> value{0};
    std::atomic<int> sleepers{0};

    template <class Done>
    void wait_until(Done done, int64_t spin_ns) {
        if (done(value.load(std::memory_order_acquire))) return;
        if (spin_ns > 0) {
            const auto start = std::chrono::steady_clock::now();
            for (unsigned i = 1;; ++i) {
                cpu_relax();
                if (done(value.load(std::memory_order_acquire))) return;
                if ((i & 63) == 0) {
                    if (std::chrono::steady_clock::now() - start > std::chrono::nanoseconds(spin_ns)) break;
                    // Past the first few µs, let another runnable thread have
                    // this core: on an oversubscribed CPU it may be the one we
                    // wait for.
                    if (i >= 1024) sched_yield();
                }
            }
        }
        sleepers.fetch_add(1, std::memory_order_seq_cst);
        for (;;) {
            const uint32_t v = value.load(std::memory_order_seq_cst);
            if (done(v)) break;
            syscall(SYS_futex, reinterpret_cast<uint32_t*>(&value), FUTEX_WAIT_PRIVATE, v, nullptr,
                    nullptr, 0);
        }
        sleepers.fetch_sub(1, std::memory_order_relaxed);
    }

    // Call after changing value (with a seq_cst operation).
    void notify() {
        if (sleepers.load(std::memory_order_seq_cst) > 0)
            syscall(SYS_futex, reinterpret_cast<uint32_t*>(&value), FUTEX_WAKE_PRIVATE, INT_MAX,
                    nullptr, nullptr, 0);
    }
};
static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t));

thread_local bool t_in_region = false;
std::atomic<bool> g_forked{false};

}  // namespace

int parse_spin_us(const char* text) {
    if (text == nullptr || *text == '\0') return kDefaultSpinUs;
    long v = 0;
    for (const char* c = text; *c != '\0'; ++c) {
        if (*c < '0' || *c > '9') return -1;
        v = v * 10 + (*c - '0');
        if (v > 100000) return -1;
    }
    return int(v);
}

struct Pool {
    struct alignas(64) Slot {
        Word go;                          // bumped once per region the worker is part of
        std::atomic<int64_t> end_ns{0};   // when the worker returned from the last body
    };

    const int capacity = std::max(1, max_threads());
    const int64_t spin_ns = int64_t(read_spin_us()) * 1000;
    std::unique_ptr<Slot[]> slots{new Slot[size_t(capacity)]};
    std::atomic<int> started{1};  // slot 0 is the caller's
    std::mutex grow_mutex;
    std::mutex run_mutex;  // one region at a time

    // The current region (written by its caller before any go word is bumped).
    detail::RegionFn fn = nullptr;
    void* ctx = nullptr;
    int size = 1;
    Word done;  // workers of the current region that have returned
    Word barrier_gen;
    std::atomic<int> barrier_count{0};
    std::atomic<int64_t> barrier_first_ns{0};  // when the first thread reached the current barrier
    std::atomic<int64_t> barrier_spread_ns{0};  // the longest first-to-last arrival of this region
    std::atomic<bool> error_claimed{false};
    std::exception_ptr error;

    // Oversubscription guard (under run_mutex). A region is "stalled" when
    // threads waited for one another (its last thread returned after its
    // first, or the last reached a barrier after the first) for more than
    // 1 ms and more than half the region's time: with dynamic work sharing
    // that only happens when a thread lost its core mid-region (the
    // scheduler gave it to another process, for a time slice of
    // milliseconds). After kStallsToShrink such regions (net of normal ones)
    // regions run on the caller alone for
    // kShrinkNs, doubled up to kMaxShrinkNs each time the stalls come back
    // within kRecurNs of a solo period's end; then the full team is tried
    // again. Results
    // do not depend on the team's size (every kernel's output is the same on
    // 1 or n threads). On 2 cores with a busy-looping process pinned to one,
    // 2-thread decode went from 0.70x to ~1x of 1-thread decode with this.
    static constexpr int64_t kStallMinNs = 1'000'000;
    static constexpr int kStallsToShrink = 2;
    static constexpr int64_t kShrinkNs = 200'000'000;
    static constexpr int64_t kMaxShrinkNs = 12'800'000'000;
    static constexpr int64_t kRecurNs = 2'000'000'000;
    int stall_score = 0;
    int64_t solo_until_ns = 0;
    int64_t solo_ns = kShrinkNs;  // doubles (to kMaxShrinkNs) while the load lasts
    std::atomic<uint64_t> shrinks{0};

    static int64_t now_ns() {
        return std::chrono::duration_cast<std::chrono::nanoseconds>(
                   std::chrono::steady_clock::now().time_since_epoch())
            .count();
    }

    void run_body(int tid) {
        const Team team(tid, size);
        try {
            fn(ctx, team);
        } catch (...) {
            if (!error_claimed.exchange(true)) error = std::current_exception();
        }
    }

    void worker(int i) {
        t_in_region = true;  // anything a worker opens runs inline
        Word& go = slots[size_t(i)].go;
        uint32_t seen = 0;
        for (;;) {
            go.wait_until([seen](uint32_t v) { return v != seen; }, spin_ns);
            seen = go.value.load(std::memory_order_acquire);
            run_body(i);
            slots[size_t(i)].end_ns.store(now_ns(), std::memory_order_relaxed);
            done.value.fetch_add(1, std::memory_order_seq_cst);
            done.notify();
        }
    }

    void ensure(int n) {
        if (started.load(std::memory_order_acquire) >= n) return;
        std::lock_guard lock(grow_mutex);
        for (int i = started.load(std::memory_order_relaxed); i < n; ++i) {
            // Workers live as long as the process (the pool is never destroyed).
            std::thread([this, i] { worker(i); }).detach();
            started.store(i + 1, std::memory_order_release);
        }
    }

    void note_balance(int n, int64_t start, int64_t own_end) {
        int64_t first = own_end, last = own_end;
        for (int i = 1; i < n; ++i) {
            const int64_t e = slots[size_t(i)].end_ns.load(std::memory_order_relaxed);
            first = std::min(first, e);
            last = std::max(last, e);
        }
        const int64_t spread =
            std::max(last - first, barrier_spread_ns.exchange(0, std::memory_order_relaxed));
        if (spread > kStallMinNs && 2 * spread > last - start) {
            if (++stall_score >= kStallsToShrink) {
                stall_score = 0;
                // Stalled again soon after a solo period: the load is still
                // there, so stay solo longer before the next try.
                solo_ns = last - solo_until_ns < kRecurNs ? std::min(2 * solo_ns, kMaxShrinkNs) : kShrinkNs;
                solo_until_ns = last + solo_ns;
                shrinks.fetch_add(1, std::memory_order_relaxed);
            }
        } else if (spread < kStallMinNs / 4 && stall_score > 0) {
            --stall_score;
        }
    }

    void run(int n, detail::RegionFn f, void* c, bool fixed_team) {
        std::exception_ptr failure;
        {
            std::lock_guard lock(run_mutex);
            const int64_t start = now_ns();
            if (start < solo_until_ns && !fixed_team) n = 1;
            fn = f;
            ctx = c;
            size = n;
            done.value.store(0, std::memory_order_relaxed);
            barrier_spread_ns.store(0, std::memory_order_relaxed);
            for (int i = 1; i < n; ++i) {
                slots[size_t(i)].go.value.fetch_add(1, std::memory_order_seq_cst);
                slots[size_t(i)].go.notify();
            }
            t_in_region = true;
            run_body(0);
            t_in_region = false;
            const int64_t own_end = now_ns();
            const uint32_t others = uint32_t(n - 1);
            done.wait_until([others](uint32_t v) { return v == others; }, spin_ns);
            if (n > 1 && !fixed_team) note_balance(n, start, own_end);
            if (error_claimed.load(std::memory_order_acquire)) {
                failure = std::exchange(error, nullptr);
                error_claimed.store(false, std::memory_order_relaxed);
            }
        }
        if (failure) std::rethrow_exception(failure);
    }
};

namespace {

Pool& pool() {
    // Never destroyed: workers may still be asleep in it when the process exits.
    static Pool* const p = [] {
        // A forked child has the pool's memory but not its threads.
        pthread_atfork(nullptr, nullptr, [] { g_forked.store(true); });
        return new Pool;
    }();
    return *p;
}

}  // namespace

void Team::barrier() const {
    if (size_ <= 1) return;
    Pool& p = pool();
    const uint32_t gen = p.barrier_gen.value.load(std::memory_order_acquire);
    const int arrived = p.barrier_count.fetch_add(1, std::memory_order_acq_rel);
    if (arrived == 0) p.barrier_first_ns.store(Pool::now_ns(), std::memory_order_relaxed);
    if (arrived + 1 == size_) {
        // A thread that lost its core before the barrier shows here (after it
        // the team shares the rest dynamically and ends together).
        const int64_t spread = Pool::now_ns() - p.barrier_first_ns.load(std::memory_order_relaxed);
        if (spread > p.barrier_spread_ns.load(std::memory_order_relaxed))
            p.barrier_spread_ns.store(spread, std::memory_order_relaxed);
        p.barrier_count.store(0, std::memory_order_relaxed);
        p.barrier_gen.value.fetch_add(1, std::memory_order_seq_cst);
        p.barrier_gen.notify();
    } else {
        p.barrier_gen.wait_until([gen](uint32_t v) { return v != gen; }, p.spin_ns);
    }
}

void detail::run_region(int n_threads, RegionFn fn, void* ctx, bool fixed_team) {
    if (n_threads <= 1 || t_in_region || g_forked.load(std::memory_order_relaxed)) {
        const Team solo(0, 1);
        fn(ctx, solo);
        return;
    }
    Pool& p = pool();
    const int n = std::min(n_threads, p.capacity);
    p.ensure(n);
    p.run(n, fn, ctx, fixed_team);
}

void reserve_threads(int n_threads) {
    if (n_threads <= 1 || g_forked.load()) return;
    Pool& p = pool();
    p.ensure(std::min(n_threads, p.capacity));
}

int pool_capacity() { return pool().capacity; }
void detail::reset_pool_guard() {
    Pool& p = pool();
    std::lock_guard lock(p.run_mutex);
    p.stall_score = 0;
    p.solo_until_ns = 0;
    p.solo_ns = Pool::kShrinkNs;
}

uint64_t pool_shrinks() { return pool().shrinks.load(std::memory_order_relaxed); }
int spin_us() { return int(pool().spin_ns / 1000); }
bool in_parallel_region() { return t_in_region; }

}  // namespace staticlm::kernels
