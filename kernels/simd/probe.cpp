// The register-only loops behind the machine ceilings (kernels/probe.cpp times
// them; staticlm/probe.hpp): streaming read, int8 dot-product peak, fp32 FMA
// peak and, on AVX512-BF16 CPUs, bf16 dot peak. Compiled per target like the
// kernels; the generic target has none (its ceilings are reported as not
// measured). Peak loops are written in assembly where intrinsics let GCC copy
// or spill accumulators, so, beside vec.hpp, this is one of the places where
// instructions are named (docs/ARCHITECTURE.md lists them).
#include <cstdint>

#include "kernels/simd/amx.hpp"
#include "kernels/simd/simd.hpp"

#if STATICLM_TARGET != STATICLM_TARGET_GENERIC
#include <immintrin.h>
#endif

namespace staticlm::kernels::STATICLM_NS {

namespace {

#define SLM_NOINLINE __attribute__((noinline))

// Hides a value from the optimizer so it stays in a register and the peak
// loops cannot be folded or turned into memory-operand broadcasts.
#define SLM_OPAQUE(v) asm volatile("" : "+v"(v))

#if STATICLM_TARGET == STATICLM_TARGET_AVX512

// ---- read bandwidth ----------------------------------------------------------
// Eight independent accumulators keep eight loads in flight per thread; the
// integer adds are 1-cycle, so the loop is bound by the loads alone.

SLM_NOINLINE uint64_t read_avx512(const std::byte* p, size_t bytes) {
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

SLM_NOINLINE int64_t vnni_avx512(int64_t iters) {
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

#if defined(STATICLM_AMX)
// ---- AMX-INT8 peak ---------------------------------------------------------------
// Full tiles: four 16 × 16 int32 accumulators (tmm0-3) from two 16 × 64-byte A
// tiles and two 16-row B tiles (2 × 2 blocking, as a GEMM would), four
// tdpbusd per iteration, each 16 · 16 · KB multiply-adds. KB = 32 (A tiles 32
// bytes wide, B tiles 8 rows) is the most a product can sum where every 32 k
// have their own scales (q8): it measures what that costs.
template <int KB>
constexpr int kAmxMacsPerIter = 4 * 16 * 16 * KB;

// One loop for both tile dot products: int8 (tdpbusd) or bf16 (tdpbf16ps,
// half the multiply-adds per instruction).
template <bool kBf16, int KB = 64>
SLM_NOINLINE int64_t amx_avx512(int64_t iters) {
    static const amx::TileConfig kConfig = [] {
        amx::TileConfig c;
        for (int i = 0; i < 8; ++i) {
            c.rows[i] = uint8_t(i >= 6 ? KB / 4 : 16);
            c.colsb[i] = uint16_t(i == 4 || i == 5 ? KB : 64);
        }
        return c;
    }();
    alignas(64) static const uint8_t kData[16 * 64] = {1, 2, 3};
    alignas(64) int32_t out[16 * 16];
    const long stride = 64;
    amx::configure(kConfig);
    __asm__ volatile(
        "tilezero %%tmm0\n\ttilezero %%tmm1\n\ttilezero %%tmm2\n\ttilezero %%tmm3\n\t"
        "tileloadd (%0,%1,1), %%tmm4\n\ttileloadd (%0,%1,1), %%tmm5\n\t"
        "tileloadd (%0,%1,1), %%tmm6\n\ttileloadd (%0,%1,1), %%tmm7" ::"r"(kData),
        "r"(stride)
        : "memory");
    for (int64_t it = 0; it < iters; ++it) {
        if constexpr (kBf16)
            __asm__ volatile(
                "tdpbf16ps %%tmm6, %%tmm4, %%tmm0\n\ttdpbf16ps %%tmm7, %%tmm4, %%tmm1\n\t"
                "tdpbf16ps %%tmm6, %%tmm5, %%tmm2\n\ttdpbf16ps %%tmm7, %%tmm5, %%tmm3" ::: "memory");
        else
            __asm__ volatile(
                "tdpbusd %%tmm6, %%tmm4, %%tmm0\n\ttdpbusd %%tmm7, %%tmm4, %%tmm1\n\t"
                "tdpbusd %%tmm6, %%tmm5, %%tmm2\n\ttdpbusd %%tmm7, %%tmm5, %%tmm3" ::: "memory");
    }
    __asm__ volatile("tilestored %%tmm0, (%0,%1,1)" ::"r"(out), "r"(stride) : "memory");
    amx::release();
    return out[0];
}
#endif

// ---- fp32 FMA peak ----------------------------------------------------------------
// FMA: 4 cycles latency, 2 per cycle → ≥ 8 chains; 16 used. 32 flops per zmm FMA.
// c += a·b with a·b = 1e-6 stays small: no overflow or denormals.

SLM_NOINLINE float fma_avx512(int64_t iters) {
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

// ---- bf16 dot peak -----------------------------------------------------------------
// vdpbf16ps: 16 lanes × 2 bf16 products = 64 flops per instruction.
SLM_NOINLINE __attribute__((target("avx512bf16"))) float bf16_avx512(int64_t iters) {
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


#elif STATICLM_TARGET == STATICLM_TARGET_AVX2 || STATICLM_TARGET == STATICLM_TARGET_AVX2_VNNI

SLM_NOINLINE uint64_t read_avx2(const std::byte* p, size_t bytes) {
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

// AVX2 without VNNI: the maddubs (u8·s8 → i16 pairs) + madd (→ i32) + add
// sequence the avx2 kernels use, 32 multiply-adds per step. Only the 1-cycle
// add carries a dependency, so 4 chains suffice; asm because GCC merges
// identical intrinsic chains into one.
SLM_NOINLINE int64_t int8_avx2(int64_t iters) {
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

// 16 ymm registers only: 12 chains + 2 sources.
SLM_NOINLINE float fma_avx2(int64_t iters) {
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


#endif

}  // namespace

PeakLoops peak_loops(const CpuFeatures& cpu) {
    PeakLoops p;
#if STATICLM_TARGET == STATICLM_TARGET_AVX512
    p.isa = "avx512";
    p.read = read_avx512;
    p.int8 = vnni_avx512;
    p.int8_ops = kChains * 64 * 2;
    p.fp32 = fma_avx512;
    p.fp32_ops = kChains * 16 * 2;
    if (cpu.avx512_bf16) {
        p.bf16 = bf16_avx512;
        p.bf16_ops = kChains * 32 * 2;
    }
#if defined(STATICLM_AMX)
    if (cpu.amx_int8) {
        p.amx_int8 = amx_avx512<false>;
        p.amx_int8_ops = 2.0 * kAmxMacsPerIter<64>;
        p.amx_int8_k32 = amx_avx512<false, 32>;
        p.amx_int8_k32_ops = 2.0 * kAmxMacsPerIter<32>;
    }
    if (cpu.amx_bf16) {
        p.amx_bf16 = amx_avx512<true>;
        p.amx_bf16_ops = 2.0 * kAmxMacsPerIter<64> / 2;
    }
#endif
#elif STATICLM_TARGET == STATICLM_TARGET_AVX2 || STATICLM_TARGET == STATICLM_TARGET_AVX2_VNNI
    // AVX-VNNI CPUs are measured with the maddubs sequence too (as before the
    // per-target loops), so their ratios compare with the AVX2 ones.
    p.isa = "avx2";
    p.read = read_avx2;
    p.int8 = int8_avx2;
    p.int8_ops = 4 * 32 * 2;
    p.fp32 = fma_avx2;
    p.fp32_ops = 12 * 8 * 2;
#endif
    (void)cpu;
    return p;
}

}  // namespace staticlm::kernels::STATICLM_NS
