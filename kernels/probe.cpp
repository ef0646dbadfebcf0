// Machine ceilings measured by the running binary (bench_kernels, `staticlm
// bench`): streaming read bandwidth, int8 dot-product peak (vpdpbusd), fp32 FMA
// peak and bf16 dot peak (vdpbf16ps). This is the harness (threads, timing,
// best-of passes); the loops are each target's PeakLoops (kernels/simd/probe.cpp).
// Targets without loops (generic) report 0 = not measured.
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

#include "kernels/kernels.hpp"
#include "kernels/memory.hpp"
#include "kernels/parallel.hpp"
#include "staticlm/probe.hpp"

namespace staticlm {
namespace {

class WallTimer {
public:
    WallTimer() : t0_(std::chrono::steady_clock::now()) {}
    double seconds() const {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
    }

private:
    std::chrono::steady_clock::time_point t0_;
};


// ---- harness ----------------------------------------------------------------------

volatile double g_sink = 0;  // keeps every measured loop's result alive

// Runs body(team) on n threads at once and returns the wall time of the slowest.
template <class Body>
double timed_parallel(int n_threads, Body body) {
    WallTimer timer;
    kernels::parallel_fixed(n_threads, body);
    return timer.seconds();
}

// Best and median of reps measurements of a rate (higher is better).
struct Rate {
    double best = 0, median = 0;
};
template <class Measure>
Rate best_of(int reps, Measure measure) {
    std::vector<double> r;
    for (int i = 0; i < reps; ++i) r.push_back(measure());
    std::sort(r.begin(), r.end());
    return {r.back(), r[r.size() / 2]};
}

// The machines here are shared: many short passes, keeping the best, find the
// moments when this process has the cores and the memory bus to itself.
Rate measure_read(uint64_t (*read)(const std::byte*, size_t), int n_threads, bool quick) {
    // 1 GiB is 32× the LLC here, read in windows of 16 MiB: a window was last
    // read 1008 MiB earlier, so it comes from DRAM. Short windows (well under
    // a millisecond, like one GEMV call) leave passes that no other process
    // interrupted; 128 MiB windows measured a third of the bandwidth under load.
    // Quick mode only checks that the code runs.
    const size_t bytes = quick ? (size_t{64} << 20) : (size_t{1} << 30);
    const size_t window = quick ? (size_t{8} << 20) : (size_t{16} << 20);
    const size_t part = window / n_threads / 4096 * 4096;
    Buffer buf(bytes);
    // First touch by the thread that will read the part (NUMA-local pages).
    timed_parallel(n_threads, [&](const kernels::Team& team) {
        const int t = team.tid();
        for (size_t w = 0; w < bytes; w += window)
            std::memset(buf.data() + w + t * part, 1 + t, part);
    });
    size_t w = 0;
    using Clock = std::chrono::steady_clock;
    return best_of(int(3 * (bytes / window)), [&] {
        std::vector<uint64_t> sums(n_threads);
        std::vector<Clock::time_point> t0(n_threads), t1(n_threads);
        const std::byte* base = buf.data() + w;
        // The pass runs from the first thread's start to the last one's end,
        // after a barrier: waking a sleeping thread took milliseconds under
        // load and is no part of the memory system's bandwidth.
        timed_parallel(n_threads, [&](const kernels::Team& team) {
            const int t = team.tid();
            team.barrier();
            t0[t] = Clock::now();
            sums[t] = read(base + t * part, part);
            t1[t] = Clock::now();
        });
        for (uint64_t v : sums) g_sink = g_sink + double(v);
        w = (w + window) % bytes;
        const double s =
            std::chrono::duration<double>(*std::max_element(t1.begin(), t1.end()) -
                                          *std::min_element(t0.begin(), t0.end()))
                .count();
        return double(part) * n_threads / s * 1e-9;
    });
}

double thread_cpu_seconds() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

// Peak arithmetic rate of n_threads cores: the sum over threads of ops per
// second of that thread's own CPU time. The loops touch only registers, so a
// thread's CPU time is exactly its running time, and the figure does not
// depend on how often other processes take the core (wall time would: with a
// load of 10 on 2 cores, wall-time passes measured a quarter of the peak).
// ops_per_iter: operations one call performs per loop iteration.
template <class Fn>
double measure_peak(Fn fn, int64_t iters, double ops_per_iter, int n_threads, bool quick) {
    fn(iters / 10);  // warm up: clocks and the license level for wide vectors
    return best_of(quick ? 3 : 10, [&] {
               std::vector<double> rate(n_threads);
               timed_parallel(n_threads, [&](const kernels::Team& team) {
                   const int t = team.tid();
                   const double c0 = thread_cpu_seconds();
                   g_sink = g_sink + double(fn(iters));
                   const double cpu = thread_cpu_seconds() - c0;
                   rate[t] = cpu > 0 ? ops_per_iter * double(iters) / cpu * 1e-9 : 0;
               });
               double total = 0;
               for (double r : rate) total += r;
               return total;
           })
        .best;
}

// The loops of the best target, or of the first 256-bit one for isa "avx2".
const kernels::PeakLoops& peak_loops(const std::string& isa) {
    if (isa == "avx2")
        for (kernels::Target t : kernels::compiled_targets())
            if (kernels::target_supported(t) && std::string(kernels::table_for(t).peaks.isa) == "avx2")
                return kernels::table_for(t).peaks;
    return kernels::table().peaks;
}

}  // namespace

uint64_t thread_pool_shrinks() { return kernels::pool_shrinks(); }

MachineCeilings measure_ceilings(int threads, bool quick, const std::string& isa) {
    const kernels::PeakLoops& p = peak_loops(isa);
    MachineCeilings c;
    // The team the timed regions will really get (1 when called from inside
    // a region): every per-thread array below is that size.
    threads = kernels::fixed_team_size(threads < 1 ? 1 : threads);
    c.threads = threads;
    if (!p.read) {
        c.isa = "none (no AVX2 on this CPU: ceilings not measured)";
        return c;
    }
    c.isa = p.isa;
    // About 2.5 ms per timed pass at full speed (16 instructions per iteration,
    // 2 per cycle): short enough to fit between other processes' time slices.
    const int64_t iters = quick ? 200'000 : 1'000'000;

    const Rate read = measure_read(p.read, threads, quick);
    c.read_gb_per_s = read.best;
    c.read_gb_per_s_median = read.median;
    c.int8_gops = measure_peak(p.int8, iters, p.int8_ops, threads, quick);
    c.fp32_gflops = measure_peak(p.fp32, iters, p.fp32_ops, threads, quick);
    if (p.bf16) c.bf16_gflops = measure_peak(p.bf16, iters, p.bf16_ops, threads, quick);
    // A tile iteration is 64 times a vector one's work.
    if (p.amx_int8)
        c.amx_int8_gops = measure_peak(p.amx_int8, iters / 64, p.amx_int8_ops, threads, quick);
    if (p.amx_int8_k32)
        c.amx_int8_k32_gops =
            measure_peak(p.amx_int8_k32, iters / 64, p.amx_int8_k32_ops, threads, quick);
    if (p.amx_bf16)
        c.amx_bf16_gflops = measure_peak(p.amx_bf16, iters / 64, p.amx_bf16_ops, threads, quick);
    return c;
}

}  // namespace staticlm
