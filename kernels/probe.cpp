// Machine ceilings measured by the running binary (bench_kernels, `staticlm
// bench`): streaming read bandwidth, int8 dot-product peak (vpdpbusd), fp32 FMA
// peak and bf16 dot peak (vdpbf16ps). AVX-512 code sits in functions with a
// target attribute; CPUs without it fall back to AVX2 (or report 0 = not measured).
#include <immintrin.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

#include "kernels/kernels.hpp"
#include "kernels/memory.hpp"
#include "staticlm/probe.hpp"

#if STATICLM_OPENMP
#include <omp.h>
#endif

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


#define SLM_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni"), noinline))
#define SLM_AVX512_BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16"), noinline))
#define SLM_AVX2 __attribute__((target("avx2,fma"), noinline))

// Hides a value from the optimizer so it stays in a register and the peak
// loops cannot be folded or turned into memory-operand broadcasts.
#define SLM_OPAQUE(v) asm volatile("" : "+v"(v))

// ---- read bandwidth ----------------------------------------------------------
// Eight independent accumulators keep eight loads in flight per thread; the
// integer adds are 1-cycle, so the loop is bound by the loads alone.

SLM_AVX512 uint64_t read_avx512(const std::byte* p, size_t bytes) {
    __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0,
            a7 = a0;
    for (size_t i = 0; i + 512 <= bytes; i += 512) {
        a0 = _mm512_add_epi64(a0, _mm512_load_si512(p + i));
        a1 = _mm512_add_epi64(a1, _mm512_load_si512(p + i + 64));
        a2 = _mm512_add_epi64(a2, _mm512_load_si512(p + i + 128));
        a3 = _mm512_add_epi64(a3, _mm512_load_si512(p + i + 192));
        a4 = _mm512_add_epi64(a4, _mm512_load_si512(p + i + 256));
        a5 = _mm512_add_epi64(a5, _mm512_load_si512(p + i + 320));
        a6 = _mm512_add_epi64(a6, _mm512_load_si512(p + i + 384));
        a7 = _mm512_add_epi64(a7, _mm512_load_si512(p + i + 448));
    }
    a0 = _mm512_add_epi64(_mm512_add_epi64(_mm512_add_epi64(a0, a1), _mm512_add_epi64(a2, a3)),
                          _mm512_add_epi64(_mm512_add_epi64(a4, a5), _mm512_add_epi64(a6, a7)));
    // Lanes summed through memory: GCC 12's _mm512_reduce_* warn (-Wuninitialized).
    uint64_t lanes[8];
    _mm512_storeu_si512(lanes, a0);
    uint64_t total = 0;
    for (uint64_t v : lanes) total += v;
    return total;
}

SLM_AVX2 uint64_t read_avx2(const std::byte* p, size_t bytes) {
    __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0,
            a7 = a0;
    for (size_t i = 0; i + 256 <= bytes; i += 256) {
        const auto* q = reinterpret_cast<const __m256i*>(p + i);
        a0 = _mm256_add_epi64(a0, _mm256_load_si256(q + 0));
        a1 = _mm256_add_epi64(a1, _mm256_load_si256(q + 1));
        a2 = _mm256_add_epi64(a2, _mm256_load_si256(q + 2));
        a3 = _mm256_add_epi64(a3, _mm256_load_si256(q + 3));
        a4 = _mm256_add_epi64(a4, _mm256_load_si256(q + 4));
        a5 = _mm256_add_epi64(a5, _mm256_load_si256(q + 5));
        a6 = _mm256_add_epi64(a6, _mm256_load_si256(q + 6));
        a7 = _mm256_add_epi64(a7, _mm256_load_si256(q + 7));
    }
    a0 = _mm256_add_epi64(_mm256_add_epi64(_mm256_add_epi64(a0, a1), _mm256_add_epi64(a2, a3)),
                          _mm256_add_epi64(_mm256_add_epi64(a4, a5), _mm256_add_epi64(a6, a7)));
    uint64_t lanes[4];
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(lanes), a0);
    return lanes[0] + lanes[1] + lanes[2] + lanes[3];
}

// ---- int8 peak -----------------------------------------------------------------
// vpdpbusd: 4-5 cycles latency, up to 2 zmm per cycle (Intel server cores,
// full-width Zen 5), so at least 10 independent chains are needed; 16
// accumulators + 2 sources use 18 of the 32 zmm registers. One instruction =
// 64 multiply-adds = 128 ops. (The 2-core Zen 5 VM here retires 1 zmm or
// 2 ymm per cycle at 3.6 GHz — checked with a hand-written asm loop.)
constexpr int kChains = 16;

#define SLM_REP16(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) \
                     X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15)

// The accumulating instructions overwrite their accumulator; written with
// intrinsics GCC 12 copied every accumulator each iteration and spilled two to
// the stack (objdump), so one asm statement holds all 16 chains in registers.
// ("+v" counts twice toward GCC's 30-operand limit, so 8 chains per statement.)
#define SLM_PEAK_ASM8(insn, x0, x1, x2, x3, x4, x5, x6, x7)                                 \
    asm volatile(insn " %[b], %[a], %[c0]\n\t" insn " %[b], %[a], %[c1]\n\t"                \
                 insn " %[b], %[a], %[c2]\n\t" insn " %[b], %[a], %[c3]\n\t"                \
                 insn " %[b], %[a], %[c4]\n\t" insn " %[b], %[a], %[c5]\n\t"                \
                 insn " %[b], %[a], %[c6]\n\t" insn " %[b], %[a], %[c7]"                     \
                 : [c0] "+v"(x0), [c1] "+v"(x1), [c2] "+v"(x2), [c3] "+v"(x3), [c4] "+v"(x4), \
                   [c5] "+v"(x5), [c6] "+v"(x6), [c7] "+v"(x7)                                \
                 : [a] "v"(a), [b] "v"(b))
#define SLM_PEAK_ASM(insn)                                       \
    do {                                                         \
        SLM_PEAK_ASM8(insn, c0, c1, c2, c3, c4, c5, c6, c7);     \
        SLM_PEAK_ASM8(insn, c8, c9, c10, c11, c12, c13, c14, c15); \
    } while (0)

SLM_AVX512 int64_t vnni_avx512(int64_t iters) {
    const __m512i a = _mm512_set1_epi8(3), b = _mm512_set1_epi8(-2);
#define DECL(i) __m512i c##i = _mm512_set1_epi32(i);
    SLM_REP16(DECL)
#undef DECL
    for (int64_t it = 0; it < iters; ++it) SLM_PEAK_ASM("vpdpbusd");
#define SUM(i) s = _mm512_add_epi32(s, c##i);
    __m512i s = _mm512_setzero_si512();
    SLM_REP16(SUM)
#undef SUM
    int32_t lanes[16];
    _mm512_storeu_si512(lanes, s);
    int64_t total = 0;
    for (int32_t v : lanes) total += v;
    return total;
}

// AVX2 without VNNI: the maddubs (u8·s8 → i16 pairs) + madd (→ i32) + add
// sequence the avx2 kernels use, 32 multiply-adds per step. Only the 1-cycle
// add carries a dependency, so 4 chains suffice; asm because GCC merges
// identical intrinsic chains into one.
SLM_AVX2 int64_t int8_avx2(int64_t iters) {
    const __m256i a = _mm256_set1_epi8(3), b = _mm256_set1_epi8(-2), ones = _mm256_set1_epi16(1);
    __m256i c0 = _mm256_setzero_si256(), c1 = c0, c2 = c0, c3 = c0, t0, t1, t2, t3;
    for (int64_t it = 0; it < iters; ++it) {
        asm volatile(
            "vpmaddubsw %[b], %[a], %[t0]\n\t"
            "vpmaddubsw %[b], %[a], %[t1]\n\t"
            "vpmaddubsw %[b], %[a], %[t2]\n\t"
            "vpmaddubsw %[b], %[a], %[t3]\n\t"
            "vpmaddwd %[o], %[t0], %[t0]\n\t"
            "vpmaddwd %[o], %[t1], %[t1]\n\t"
            "vpmaddwd %[o], %[t2], %[t2]\n\t"
            "vpmaddwd %[o], %[t3], %[t3]\n\t"
            "vpaddd %[t0], %[c0], %[c0]\n\t"
            "vpaddd %[t1], %[c1], %[c1]\n\t"
            "vpaddd %[t2], %[c2], %[c2]\n\t"
            "vpaddd %[t3], %[c3], %[c3]"
            : [c0] "+x"(c0), [c1] "+x"(c1), [c2] "+x"(c2), [c3] "+x"(c3), [t0] "=&x"(t0),
              [t1] "=&x"(t1), [t2] "=&x"(t2), [t3] "=&x"(t3)
            : [a] "x"(a), [b] "x"(b), [o] "x"(ones));
    }
    __m256i s = _mm256_add_epi32(_mm256_add_epi32(c0, c1), _mm256_add_epi32(c2, c3));
    int32_t lanes[8];
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(lanes), s);
    int64_t total = 0;
    for (int32_t v : lanes) total += v;
    return total;
}

// ---- fp32 FMA peak ----------------------------------------------------------------
// FMA: 4 cycles latency, 2 per cycle → ≥ 8 chains; 16 used. 32 flops per zmm FMA.
// c += a·b with a·b = 1e-6 stays small: no overflow or denormals.

SLM_AVX512 float fma_avx512(int64_t iters) {
    const __m512 a = _mm512_set1_ps(1e-3f), b = _mm512_set1_ps(1e-3f);
#define DECL(i) __m512 c##i = _mm512_set1_ps(float(i));
    SLM_REP16(DECL)
#undef DECL
    for (int64_t it = 0; it < iters; ++it) SLM_PEAK_ASM("vfmadd231ps");
    __m512 s = _mm512_setzero_ps();
#define SUM(i) s = _mm512_add_ps(s, c##i);
    SLM_REP16(SUM)
#undef SUM
    float lanes[16];
    _mm512_storeu_ps(lanes, s);
    float total = 0;
    for (float v : lanes) total += v;
    return total;
}

// 16 ymm registers only: 12 chains + 2 sources.
SLM_AVX2 float fma_avx2(int64_t iters) {
    __m256 a = _mm256_set1_ps(0.999f), b = _mm256_set1_ps(1e-3f);
    SLM_OPAQUE(a);
    SLM_OPAQUE(b);
    __m256 c[12];
    for (int i = 0; i < 12; ++i) c[i] = _mm256_set1_ps(float(i));
    for (int64_t it = 0; it < iters; ++it) {
        for (int i = 0; i < 12; ++i) c[i] = _mm256_fmadd_ps(c[i], a, b);
    }
    __m256 s = _mm256_setzero_ps();
    for (int i = 0; i < 12; ++i) s = _mm256_add_ps(s, c[i]);
    float lanes[8];
    _mm256_storeu_ps(lanes, s);
    float total = 0;
    for (float v : lanes) total += v;
    return total;
}

// ---- bf16 dot peak -----------------------------------------------------------------
// vdpbf16ps: 16 lanes × 2 bf16 products = 64 flops per instruction.
SLM_AVX512_BF16 float bf16_avx512(int64_t iters) {
    const __m512i a = _mm512_set1_epi16(0x3a83), b = a;  // bf16 ≈ 1e-3
#define DECL(i) __m512 c##i = _mm512_set1_ps(float(i));
    SLM_REP16(DECL)
#undef DECL
    for (int64_t it = 0; it < iters; ++it) SLM_PEAK_ASM("vdpbf16ps");
    __m512 s = _mm512_setzero_ps();
#define SUM(i) s = _mm512_add_ps(s, c##i);
    SLM_REP16(SUM)
#undef SUM
    float lanes[16];
    _mm512_storeu_ps(lanes, s);
    float total = 0;
    for (float v : lanes) total += v;
    return total;
}

// ---- harness ----------------------------------------------------------------------

volatile double g_sink = 0;  // keeps every measured loop's result alive

int thread_id() {
#if STATICLM_OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}

// Runs body(thread) on n threads at once and returns the wall time of the slowest.
template <class Body>
double timed_parallel(int n_threads, Body body) {
    WallTimer timer;
#pragma omp parallel num_threads(n_threads)
    body(thread_id());
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
Rate measure_read(bool avx512, int n_threads, bool quick) {
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
    timed_parallel(n_threads, [&](int t) {
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
        // after a barrier: waking a sleeping OpenMP thread took milliseconds
        // under load and is no part of the memory system's bandwidth.
        timed_parallel(n_threads, [&](int t) {
#pragma omp barrier
            t0[t] = Clock::now();
            sums[t] = avx512 ? read_avx512(base + t * part, part)
                             : read_avx2(base + t * part, part);
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
               timed_parallel(n_threads, [&](int t) {
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

}  // namespace

MachineCeilings measure_ceilings(int threads, bool quick, const std::string& isa) {
    const kernels::CpuFeatures cpu = kernels::cpu_features();
    MachineCeilings c;
    threads = threads < 1 ? 1 : threads;
    c.threads = threads;
    bool avx512 = cpu.avx512;
    bool avx2 = cpu.avx2_fma_f16c;
    if (isa == "avx2") avx512 = false;
    if (!avx512 && !avx2) {
        c.isa = "none (no AVX2 on this CPU: ceilings not measured)";
        return c;
    }
    c.isa = avx512 ? "avx512" : "avx2";
    // About 2.5 ms per timed pass at full speed (16 instructions per iteration,
    // 2 per cycle): short enough to fit between other processes' time slices.
    const int64_t iters = quick ? 200'000 : 1'000'000;

    const Rate read = measure_read(avx512, threads, quick);
    c.read_gb_per_s = read.best;
    c.read_gb_per_s_median = read.median;
    if (avx512) {
        c.int8_gops = measure_peak(vnni_avx512, iters, kChains * 64 * 2, threads, quick);
        c.fp32_gflops = measure_peak(fma_avx512, iters, kChains * 16 * 2, threads, quick);
        if (cpu.avx512_bf16)
            c.bf16_gflops = measure_peak(bf16_avx512, iters, kChains * 32 * 2, threads, quick);
    } else {
        c.int8_gops = measure_peak(int8_avx2, iters, 4 * 32 * 2, threads, quick);
        c.fp32_gflops = measure_peak(fma_avx2, iters, 12 * 8 * 2, threads, quick);
    }
    return c;
}

}  // namespace staticlm
