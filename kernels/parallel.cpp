// The pool behind parallel() (kernels/parallel.hpp): one process-wide set of
// workers, each waiting on its own futex word, one region at a time.
#include "kernels/parallel.hpp"

#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>
#include <system_error>
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

bool detail::StallGuard::note(int64_t now_ns, int64_t region_ns, int64_t max_lost_ns) {
    if (max_lost_ns > kStallMinNs && 2 * max_lost_ns > region_ns) {
        // Stalled again soon after a solo period: the load is still there,
        // so go back at once and stay solo longer before the next try.
        const bool recurring = probation(now_ns);
        if (++score_ < kStallsToShrink && !recurring) return false;
        score_ = 0;
        solo_ns_ = recurring ? std::min(2 * solo_ns_, kMaxShrinkNs) : kShrinkNs;
        solo_until_ = now_ns + solo_ns_;
        ++shrinks_;
        return true;
    }
    if (max_lost_ns < kStallMinNs / 4 && score_ > 0) --score_;
    return false;
}

namespace {

int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

// CPU time of the calling thread (a system call: only sampled regions read it).
int64_t thread_cpu_ns() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// Wall and CPU time this thread spent waiting at barriers in the current
// region (not lost: it had nothing to do).
struct BarrierWaits {
    int64_t wall = 0, cpu = 0;
};
thread_local BarrierWaits t_waits;

}  // namespace

struct Pool {
    struct alignas(64) Slot {
        Word go;                          // bumped once per region the worker is part of
        std::atomic<int64_t> lost_ns{0};  // sampled regions: time the thread lost its core
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
    bool measure = false;    // sample the threads' lost time in this region
    int64_t start_ns = 0;    // when the caller woke the team (sampled regions)
    Word done;  // workers of the current region that have returned
    Word barrier_gen;
    std::atomic<int> barrier_count{0};
    std::atomic<bool> error_claimed{false};
    std::exception_ptr error;

    // The oversubscription guard (under run_mutex); one region in
    // kSampleEvery is measured while it sees no stalls, every region after one.
    static constexpr unsigned kSampleEvery = 4;
    detail::StallGuard guard;
    unsigned region_count = 0;
    std::atomic<uint64_t> shrinks{0};

    void run_body(int tid) {
        const Team team(tid, size);
        int64_t w0 = 0, c0 = 0;
        if (measure) {
            t_waits = {};
            w0 = now_ns();
            c0 = thread_cpu_ns();
        }
        try {
            fn(ctx, team);
        } catch (...) {
            if (!error_claimed.exchange(true)) error = std::current_exception();
        }
        if (measure) {
            const int64_t wall = now_ns() - w0 - t_waits.wall;
            const int64_t cpu = thread_cpu_ns() - c0 - t_waits.cpu;
            const int64_t late = tid > 0 ? w0 - start_ns : 0;  // woken but not yet running
            slots[size_t(tid)].lost_ns.store(std::max<int64_t>(0, late + wall - cpu), std::memory_order_relaxed);
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
            done.value.fetch_add(1, std::memory_order_seq_cst);
            done.notify();
        }
    }

    // Starts workers up to n (as many as the system allows); returns how many
    // threads a team can have.
    int ensure(int n) {
        int have = started.load(std::memory_order_acquire);
        if (have >= n) return n;
        std::lock_guard lock(grow_mutex);
        for (have = started.load(std::memory_order_relaxed); have < n; ++have) {
            try {
                // Workers live as long as the process (the pool is never destroyed).
                std::thread([this, i = have] { worker(i); }).detach();
            } catch (const std::system_error&) {
                break;  // no more threads: teams stay this size
            }
            started.store(have + 1, std::memory_order_release);
        }
        return have;
    }

    void run(int n, detail::RegionFn f, void* c, bool fixed_team) {
        std::exception_ptr failure;
        {
            std::lock_guard lock(run_mutex);
            const int64_t start = now_ns();
            if (!fixed_team && guard.solo(start)) n = 1;
            fn = f;
            ctx = c;
            size = n;
            measure = n > 1 && !fixed_team && (guard.watching(start) || region_count++ % kSampleEvery == 0);
            start_ns = start;
            done.value.store(0, std::memory_order_relaxed);
            for (int i = 1; i < n; ++i) {
                slots[size_t(i)].go.value.fetch_add(1, std::memory_order_seq_cst);
                slots[size_t(i)].go.notify();
            }
            t_in_region = true;
            run_body(0);
            t_in_region = false;
            const uint32_t others = uint32_t(n - 1);
            done.wait_until([others](uint32_t v) { return v == others; }, spin_ns);
            if (measure) {
                const int64_t end = now_ns();
                int64_t lost = 0;
                for (int i = 0; i < n; ++i)
                    lost = std::max(lost, slots[size_t(i)].lost_ns.load(std::memory_order_relaxed));
                if (guard.note(end, end - start, lost)) shrinks.fetch_add(1, std::memory_order_relaxed);
            }
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
    if (p.barrier_count.fetch_add(1, std::memory_order_acq_rel) + 1 == size_) {
        p.barrier_count.store(0, std::memory_order_relaxed);
        p.barrier_gen.value.fetch_add(1, std::memory_order_seq_cst);
        p.barrier_gen.notify();
        return;
    }
    int64_t w0 = 0, c0 = 0;
    if (p.measure) {
        w0 = now_ns();
        c0 = thread_cpu_ns();
    }
    p.barrier_gen.wait_until([gen](uint32_t v) { return v != gen; }, p.spin_ns);
    if (p.measure) {
        t_waits.wall += now_ns() - w0;
        t_waits.cpu += thread_cpu_ns() - c0;
    }
}

void detail::run_region(int n_threads, RegionFn fn, void* ctx, bool fixed_team) {
    if (n_threads <= 1 || t_in_region || g_forked.load(std::memory_order_relaxed)) {
        const Team solo(0, 1);
        fn(ctx, solo);
        return;
    }
    Pool& p = pool();
    const int n = p.ensure(std::min(n_threads, p.capacity));
    p.run(n, fn, ctx, fixed_team);
}

void detail::reset_pool_guard() {
    Pool& p = pool();
    std::lock_guard lock(p.run_mutex);
    p.guard = StallGuard{};
}

void reserve_threads(int n_threads) {
    if (n_threads <= 1 || g_forked.load()) return;
    Pool& p = pool();
    p.ensure(std::min(n_threads, p.capacity));
}

int fixed_team_size(int n_threads) {
    if (n_threads <= 1 || t_in_region || g_forked.load()) return 1;
    Pool& p = pool();
    return p.ensure(std::min(n_threads, p.capacity));
}

int pool_capacity() { return pool().capacity; }

uint64_t pool_shrinks() { return pool().shrinks.load(std::memory_order_relaxed); }
int spin_us() { return int(pool().spin_ns / 1000); }
bool in_parallel_region() { return t_in_region; }

}  // namespace staticlm::kernels
