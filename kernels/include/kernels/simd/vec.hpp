// The vector layer of the per-target kernel bodies (kernels/simd/*.cpp): one
// float vector type F and one int32 vector type I of kLanes lanes per target,
// with the loads, stores, arithmetic and conversions the kernels use, and the
// int8 dot-product step of the integer formats. Kernel bodies are written once
// against it and name no instructions themselves; the exceptions (attention's
// xsimd, the AMX paths, probe.cpp's peak loops) are listed in
// docs/ARCHITECTURE.md. Adding an instruction set = one more section.
//
// The same contract on every target, so that kernels give the same bits
// wherever their operations are exact:
//  - max(a, b) / min(a, b) return b when either is NaN (the x86 rule);
//    ge(a, b) / eq(a, b) are ordered compares (false when either is NaN);
//  - fma(a, b, c) rounds once on FMA targets, twice (a·b, then + c) on generic;
//  - to_int(v) is exact for integral v in int32 range; shl8(v) shifts each
//    int32 lane left by 8 (16-bit activations' first plane);
//  - load(const uint16_t*) converts IEEE halves exactly (x86 quiets signalling
//    NaNs), store_f16 rounds to nearest even (x86 keeps NaN payload bits);
//  - dot4(acc, w, x): lane l gets acc + Σ_{e<4} w[4l+e]·x[e], exact int32, w
//    the biased weight bytes (stored value + 128), x four signed bytes. With
//    kDotBiased the bytes are multiplied as stored, so the caller starts acc at
//    -128·Σx; without it the bias is removed first and acc starts at 0;
//  - load_q4(p, lo, hi): the q4 nibble pairs n = q + 8 of one load_q's bytes
//    as two dot4 operands, and q4_dot(acc) the group's Σ q·x from the int32
//    sum of their dot4 steps (acc started as for q8). With the biased dot4
//    the operands are the bytes 16·n (2 ops each, where n + 120 takes 3),
//    which dot4 reads as 16·q + 128, so the sum is 16·Σ q·x and q4_dot shifts
//    it back (exact: a multiple of 16); plain AVX2 uses n + 120 = q + 128;
//  - load_q5(p, b0, b1, lo, hi): the same for q5 (kernels/formats/q5/layout.hpp): the
//    nibbles at p give bits 0-3 of n = q + 16, the bit-plane bytes b0 and b1
//    (one bit per operand byte, in byte order) bit 4 of the two quads; the
//    operands are the bytes 8·n, q5_dot shifts by 3; plain AVX2 takes
//    n + 112 = q + 128;
//  - load_u4(p, lo, hi) and load_u5(p, b0, b1, lo, hi): the same nibbles
//    (and bit planes) as unsigned n in [0, 15] / [0, 31] for the affine
//    formats, whose sums start at 0: with the biased dot4 the operands are
//    the bytes n themselves, so the sum is Σ n·x with no shift; plain AVX2
//    takes load_q4's / load_q5's n + 120 / n + 112 and leaves Σ (n - 8)·x /
//    Σ (n - 16)·x;
//  - load_q6(p, h, s, lo, hi): q6k's 6-bit n (kernels/formats/q6k/layout.hpp): bits
//    0-3 from the nibbles at p, bits 4-5 from bits s, s + 1 (lo) and s + 2,
//    s + 3 (hi) of the bytes at h; the operands are n itself with the biased
//    dot4 (the caller starts acc at -32·Σx, so the sum is Σ (n - 32)·x with
//    no shift), plain AVX2 n + 96 = (n - 32) + 128; load_i8 converts kLanes
//    signed bytes to floats;
//  - load_q3(p, s, b0, b1, lo, hi): q3k's 3-bit n = q + 4 in [0, 7]
//    (kernels/formats/q3k/layout.hpp): bits 0-1 from bits s, s + 1 (lo) and
//    s + 2, s + 3 (hi) of the bytes at p (s is 0 or 4), bit 2 from the bit-plane bytes b0
//    and b1 (one bit per operand byte, in byte order, as load_q5); the
//    operands are 32·n (plain AVX2: n + 124 = q + 128), q3_dot shifts by 5;
//  - load_nl4(p, t, lo, hi): the nibble pairs of one load_q's bytes (q4's
//    order) looked up in the 16-byte table t, as two dot4 operands: the bytes
//    t[nibble], used as stored (iq4nl's table holds value + 128, q8's biased
//    weight bytes, so the caller's sum is q8's); load_nl4_vbmi (AVX-512 with
//    STATICLM_VEC_VBMI, where CpuFeatures::avx512_vbmi) gives the same bytes
//    in 3 ops per 64 bytes instead of 5;
//  - load_u6(lo, ls, hi, hs): kLanes 6-bit values as floats, bits 0-3 from
//    bits ls .. ls + 3 of the bytes at lo (ls 0 or 4) and bits 4-5 from bits
//    hs, hs + 1 of the bytes at hi (hs 0, 2, 4 or 6): q3k's scales, in integer
//    lanes (the float decode it replaced took twice the instructions);
//    load_nibbles(p, lo, hi): the low and high nibbles of kLanes bytes as
//    floats (q2k's scales and mins);
//  - load_q2(p, s, lo, hi): the 2-bit values n in [0, 3] at bits s, s + 1
//    (lo) and s + 2, s + 3 (hi) of each of one load_q's bytes, as two dot4
//    operands whose dot4 sum started at 0 is Σ n·x on every target: the
//    bytes n where dot4 is biased (an unsigned operand below 128 needs no
//    bias), n + 128 on plain AVX2 (whose dot4 removes the 128).
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/target.hpp"

#if STATICLM_TARGET != STATICLM_TARGET_GENERIC
#include <immintrin.h>
#endif

namespace staticlm::kernels::STATICLM_NS::vec {

// xsimd's float batch of this target (attention, norms, activations use it
// directly); F converts to and from it.
using B = xsimd::batch<float, Arch>;

#if STATICLM_TARGET == STATICLM_TARGET_AVX512
// ---------------------------------------------------------------------------
// AVX-512 (F, BW, VL, DQ, VNNI): 16 lanes, 32 registers.
// ---------------------------------------------------------------------------
using F = __m512;
using I = __m512i;
using Mask = __mmask16;
using Q = __m512i;   // 64 weight bytes: 16 lanes × 4 k
using X4 = __m512i;  // 4 activation bytes in every lane
inline constexpr int kLanes = 16;
inline constexpr int kRegisters = 32;
inline constexpr bool kDotBiased = true;

inline F zero() { return _mm512_setzero_ps(); }
inline F set1(float v) { return _mm512_set1_ps(v); }
inline F load(const float* p) { return _mm512_loadu_ps(p); }
// The maskz forms with a full mask compile to the plain instructions and avoid
// GCC 12's false -Wmaybe-uninitialized on _mm512_undefined_*() inside the
// unmasked intrinsics.
inline F load(const uint16_t* p) {
    return _mm512_maskz_cvtph_ps(__mmask16(0xffff),
                                 _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
// 16 bf16 pairs [16][2]: the even (odd = false) or odd element of each pair.
inline F load_bf16(const uint16_t* p, bool odd) {
    const __m512i v = _mm512_loadu_si512(p);
    return _mm512_castsi512_ps(odd ? _mm512_and_si512(v, _mm512_set1_epi32(int(0xffff0000u)))
                                   : _mm512_maskz_slli_epi32(__mmask16(0xffff), v, 16));
}
// kLanes bytes as floats (unsigned).
inline F load_u8(const uint8_t* p) {
    return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
}
inline F load_u6(const uint8_t* lo, int ls, const uint8_t* hi, int hs) {
    const __m512i l = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(lo)));
    const __m512i h = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(hi)));
    const __m512i h45 = _mm512_and_si512(
        hs <= 4 ? _mm512_slli_epi32(h, unsigned(4 - hs)) : _mm512_srli_epi32(h, unsigned(hs - 4)),
        _mm512_set1_epi32(0x30));
    // (l >> ls) & 0x0f | h45 (vpternlogd 0xea: A & B | C).
    const __m512i l03 = ls == 0 ? l : _mm512_srli_epi32(l, unsigned(ls));
    return _mm512_cvtepi32_ps(_mm512_ternarylogic_epi32(l03, _mm512_set1_epi32(0x0f), h45, 0xea));
}
inline void load_nibbles(const uint8_t* p, F& lo, F& hi) {
    const __m512i b = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    lo = _mm512_cvtepi32_ps(_mm512_and_si512(b, _mm512_set1_epi32(0x0f)));
    hi = _mm512_cvtepi32_ps(_mm512_srli_epi32(b, 4));
}
inline void store(float* p, F v) { _mm512_storeu_ps(p, v); }
inline void istore(int32_t* p, I v) { _mm512_storeu_si512(p, v); }
inline void store_part(float* p, F v, int n) {
    _mm512_mask_storeu_ps(p, __mmask16((1u << n) - 1), v);
}
inline void store_f16(uint16_t* p, F v) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p),
                        _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}
inline F add(F a, F b) { return _mm512_add_ps(a, b); }
inline F sub(F a, F b) { return _mm512_sub_ps(a, b); }
inline F mul(F a, F b) { return _mm512_mul_ps(a, b); }
inline F div(F a, F b) { return _mm512_div_ps(a, b); }
inline F fma(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
inline F abs(F v) { return _mm512_abs_ps(v); }
inline F max(F a, F b) { return _mm512_max_ps(a, b); }
inline F min(F a, F b) { return _mm512_min_ps(a, b); }
inline float hmax(F v) {
    const __m256 a = _mm256_max_ps(_mm512_maskz_extractf32x8_ps(__mmask8(0xff), v, 0),
                                   _mm512_maskz_extractf32x8_ps(__mmask8(0xff), v, 1));
    __m128 b = _mm_max_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    b = _mm_max_ps(b, _mm_movehl_ps(b, b));
    b = _mm_max_ss(b, _mm_movehdup_ps(b));
    return _mm_cvtss_f32(b);
}
inline F trunc(F v) { return _mm512_roundscale_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC); }
inline Mask ge(F a, F b) { return _mm512_cmp_ps_mask(a, b, _CMP_GE_OQ); }
inline Mask eq(F a, F b) { return _mm512_cmp_ps_mask(a, b, _CMP_EQ_OQ); }
inline F select(Mask m, F a, F b) { return _mm512_mask_blend_ps(m, b, a); }
// ±1 with the sign bit of t.
inline F sign_one(F t) { return _mm512_or_ps(_mm512_and_ps(t, set1(-0.0f)), set1(1.0f)); }
inline bool any_nan(F v) { return _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q) != 0; }

inline I iset1(int32_t v) { return _mm512_set1_epi32(v); }
inline I iadd(I a, I b) { return _mm512_add_epi32(a, b); }
inline I shl8(I a) { return _mm512_slli_epi32(a, 8); }
inline I q4_dot(I acc) { return _mm512_srai_epi32(acc, 4); }
inline int32_t ihsum(I v) { return _mm512_reduce_add_epi32(v); }
// Float and int32 vectors as each other's bits (the shuffles of reduce_lanes).
inline F as_ps(F x) { return x; }
inline F as_ps(I x) { return _mm512_castsi512_ps(x); }
inline F from_ps(F x, F) { return x; }
inline I from_ps(F x, I) { return _mm512_castps_si512(x); }
// v[0..15] reduced across lanes, lane i the result for v[i] (hmax_lanes,
// ihsum_lanes): a transposing tree of 128-bit and 32-bit shuffles, 45
// operations for all 16 (one hmax / ihsum takes about 8). Without NaN lanes
// hmax_lanes gives hmax's values (a max is exact in any order). Pairing v[k]
// with v[k + 4], then the results k with k + 8, leaves chunk c holding
// v[4c .. 4c + 3] in order. (The maskz forms: see load above.)
template <class V, class Op>
inline V reduce_lanes(const V* v, Op op) {
    constexpr __mmask16 kAll = 0xffff;
    auto cast = [](V x) { return as_ps(x); };
    auto back = [](F x) { return from_ps(x, V{}); };
    auto chunks = [&](V a, V b, auto lo, auto hi) {  // chunk pairs of a and b, combined
        return op(back(_mm512_maskz_shuffle_f32x4(kAll, cast(a), cast(b), decltype(lo)::value)),
                  back(_mm512_maskz_shuffle_f32x4(kAll, cast(a), cast(b), decltype(hi)::value)));
    };
    auto pairs = [&](V a, V b, auto lo, auto hi) {  // lane pairs within each chunk
        return op(back(_mm512_maskz_shuffle_ps(kAll, cast(a), cast(b), decltype(lo)::value)),
                  back(_mm512_maskz_shuffle_ps(kAll, cast(a), cast(b), decltype(hi)::value)));
    };
    using C1010 = std::integral_constant<int, _MM_SHUFFLE(1, 0, 1, 0)>;
    using C3232 = std::integral_constant<int, _MM_SHUFFLE(3, 2, 3, 2)>;
    using C2020 = std::integral_constant<int, _MM_SHUFFLE(2, 0, 2, 0)>;
    using C3131 = std::integral_constant<int, _MM_SHUFFLE(3, 1, 3, 1)>;
    V x[8], y[4];
    // x[k]: lanes 0-7 from v[k], 8-15 from v[k + 4]; x[k + 4]: v[k + 8], v[k + 12].
    for (int k = 0; k < 4; ++k) {
        x[k] = chunks(v[k], v[k + 4], C1010{}, C3232{});
        x[k + 4] = chunks(v[k + 8], v[k + 12], C1010{}, C3232{});
    }
    // y[k]: chunk c from v[k + 4c].
    for (int k = 0; k < 4; ++k) y[k] = chunks(x[k], x[k + 4], C2020{}, C3131{});
    // Chunk c of z0: lanes 0-1 from v[4c], 2-3 from v[4c + 1]; of z1: v[4c + 2], v[4c + 3].
    const V z0 = pairs(y[0], y[1], C1010{}, C3232{}), z1 = pairs(y[2], y[3], C1010{}, C3232{});
    return pairs(z0, z1, C2020{}, C3131{});
}
inline F hmax_lanes(const F* v) { return reduce_lanes(v, [](F a, F b) { return _mm512_max_ps(a, b); }); }
inline I ihsum_lanes(const I* v) { return reduce_lanes(v, [](I a, I b) { return _mm512_add_epi32(a, b); }); }
inline F to_float(I v) { return _mm512_cvtepi32_ps(v); }
inline I to_int(F v) { return _mm512_cvtps_epi32(v); }
// The low byte of each lane, kLanes bytes.
inline void store_bytes(void* p, I v) {
    _mm_storeu_si128(static_cast<__m128i*>(p), _mm512_cvtepi32_epi8(v));
}

inline Q load_q(const uint8_t* p) { return _mm512_loadu_si512(p); }
inline void load_q4(const uint8_t* p, Q& lo, Q& hi) {
    const __m512i v = _mm512_loadu_si512(p), m = _mm512_set1_epi8(char(0xf0));
    lo = _mm512_and_si512(_mm512_slli_epi16(v, 4), m);
    hi = _mm512_and_si512(v, m);
}
inline void load_q5(const uint8_t* p, const uint8_t* b0, const uint8_t* b1, Q& lo, Q& hi) {
    const __m512i v = _mm512_loadu_si512(p), m = _mm512_set1_epi8(0x78), top = _mm512_set1_epi8(char(0x80));
    uint64_t k0, k1;
    std::memcpy(&k0, b0, 8);
    std::memcpy(&k1, b1, 8);
    const __m512i l = _mm512_and_si512(_mm512_slli_epi16(v, 3), m);
    const __m512i h = _mm512_and_si512(_mm512_srli_epi16(v, 1), m);
    lo = _mm512_mask_add_epi8(l, _cvtu64_mask64(k0), l, top);
    hi = _mm512_mask_add_epi8(h, _cvtu64_mask64(k1), h, top);
}
inline I q5_dot(I acc) { return _mm512_srai_epi32(acc, 3); }
inline void load_u4(const uint8_t* p, Q& lo, Q& hi) {
    const __m512i v = _mm512_loadu_si512(p), m = _mm512_set1_epi8(0x0f);
    lo = _mm512_and_si512(v, m);
    hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), m);
}
inline void load_u5(const uint8_t* p, const uint8_t* b0, const uint8_t* b1, Q& lo, Q& hi) {
    const __m512i v = _mm512_loadu_si512(p), m = _mm512_set1_epi8(0x0f), top = _mm512_set1_epi8(16);
    uint64_t k0, k1;
    std::memcpy(&k0, b0, 8);
    std::memcpy(&k1, b1, 8);
    const __m512i l = _mm512_and_si512(v, m), h = _mm512_and_si512(_mm512_srli_epi16(v, 4), m);
    lo = _mm512_mask_add_epi8(l, _cvtu64_mask64(k0), l, top);
    hi = _mm512_mask_add_epi8(h, _cvtu64_mask64(k1), h, top);
}
inline void load_nl4(const uint8_t* p, const uint8_t* t, Q& lo, Q& hi) {
    const __m512i v = _mm512_loadu_si512(p), m = _mm512_set1_epi8(0x0f);
    const __m512i tab = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(t)));
    lo = _mm512_shuffle_epi8(tab, _mm512_and_si512(v, m));
    hi = _mm512_shuffle_epi8(tab, _mm512_and_si512(_mm512_srli_epi16(v, 4), m));
}
// AVX512-VBMI's vpermb looks each byte's low 6 bits up in a 64-byte table:
// with t four times over, bits 4-5 do not matter, so the low nibbles need no
// mask and the high ones one 16-bit shift (load_q4's 3 ops). In assembly: the
// avx512 target is compiled without -mavx512vbmi (the CPU is asked at run time).
#define STATICLM_VEC_VBMI 1
inline void load_nl4_vbmi(const uint8_t* p, const uint8_t* t, Q& lo, Q& hi) {
    const __m512i v = _mm512_loadu_si512(p), s = _mm512_srli_epi16(v, 4);
    const __m512i tab = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(t)));
    __asm__("vpermb %1, %2, %0" : "=v"(lo) : "v"(tab), "v"(v));
    __asm__("vpermb %1, %2, %0" : "=v"(hi) : "v"(tab), "v"(s));
}
inline void load_q6(const uint8_t* p, const uint8_t* hp, int s, Q& lo, Q& hi) {
    const __m512i v = _mm512_loadu_si512(p), h = _mm512_loadu_si512(hp);
    const __m512i m4 = _mm512_set1_epi8(0x0f), m2 = _mm512_set1_epi8(0x30);
    const __m512i hl = s == 0 ? _mm512_slli_epi16(h, 4) : h;
    const __m512i hh = s == 0 ? _mm512_slli_epi16(h, 2) : _mm512_srli_epi16(h, 2);
    // 16-bit shifts: the masks keep only bits that came from the same byte.
    // vpternlogd 0xea: A & B | C.
    lo = _mm512_ternarylogic_epi32(v, m4, _mm512_and_si512(hl, m2), 0xea);
    hi = _mm512_ternarylogic_epi32(_mm512_srli_epi16(v, 4), m4, _mm512_and_si512(hh, m2), 0xea);
}
inline void load_q3(const uint8_t* p, int s, const uint8_t* b0, const uint8_t* b1, Q& lo, Q& hi) {
    const __m512i v = _mm512_loadu_si512(p), m = _mm512_set1_epi8(0x60), top = _mm512_set1_epi8(char(0x80));
    uint64_t k0, k1;
    std::memcpy(&k0, b0, 8);
    std::memcpy(&k1, b1, 8);
    // Bits s, s + 1 and s + 2, s + 3 to bits 5-6 (16-bit shifts: the mask keeps
    // only bits of the same byte).
    const __m512i l = s == 0 ? _mm512_slli_epi16(v, 5) : _mm512_slli_epi16(v, 1);
    const __m512i h = s == 0 ? _mm512_slli_epi16(v, 3) : _mm512_srli_epi16(v, 1);
    // Bits 5-6 of l and h, bit 7 where the plane's bit is set (vpternlogd 0xea: A & B | C).
    lo = _mm512_ternarylogic_epi32(l, m, _mm512_maskz_mov_epi8(_cvtu64_mask64(k0), top), 0xea);
    hi = _mm512_ternarylogic_epi32(h, m, _mm512_maskz_mov_epi8(_cvtu64_mask64(k1), top), 0xea);
}
inline I q3_dot(I acc) { return _mm512_srai_epi32(acc, 5); }
inline void load_q2(const uint8_t* p, int s, Q& lo, Q& hi) {
    const __m512i v = _mm512_loadu_si512(p), m = _mm512_set1_epi8(3);
    // 16-bit shifts: the mask keeps only bits that came from the same byte.
    lo = _mm512_and_si512(_mm512_srli_epi16(v, unsigned(s)), m);
    hi = _mm512_and_si512(_mm512_srli_epi16(v, unsigned(s + 2)), m);
}
inline F load_i8(const int8_t* p) {
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
}
inline X4 bcast4(const int8_t* p) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return _mm512_set1_epi32(v);
}
inline I dot4(I acc, Q w, X4 x) { return _mm512_dpbusd_epi32(acc, w, x); }

// out[j] = Σ lanes of rows[j], j < kLanes: reduce_lanes' tree (xsimd 8.1's
// AVX-512 haddp returns the sums permuted).
inline void hsum_rows(const F* rows, float* out) {
    _mm512_storeu_ps(out, reduce_lanes(rows, [](F a, F b) { return _mm512_add_ps(a, b); }));
}

// AVX512-BF16 (vdpbf16ps), chosen at run time: functions using these carry
// STATICLM_BF16_DOT, the target attribute that enables the instruction.
#define STATICLM_VEC_BF16_DOT 1
#define STATICLM_BF16_DOT __attribute__((target("avx512bf16")))
// acc + x_even·w_even + x_odd·w_odd per lane (16 bf16 pairs each).
STATICLM_BF16_DOT inline F dot_bf16(F acc, I x_pairs, I w_pairs) {
    return _mm512_dpbf16_ps(acc, (__m512bh)x_pairs, (__m512bh)w_pairs);
}
inline I load_i(const void* p) { return _mm512_loadu_si512(p); }
// A row of x as bf16 pairs (round to nearest even, denormals flushed), zero
// padded to whole chunks of 32 (within the 64-byte-aligned row stride).
STATICLM_BF16_DOT inline void to_bf16_pairs(const float* x, int k, uint16_t* xq) {
    for (int c = 0; c < k; c += 32) {
        const int left = k - c;
        const __mmask16 lo = left >= 16 ? __mmask16(0xffff) : __mmask16((1u << left) - 1);
        const __mmask16 hi = left >= 32  ? __mmask16(0xffff)
                             : left > 16 ? __mmask16((1u << (left - 16)) - 1)
                                         : __mmask16(0);
        const __m512 a = _mm512_maskz_loadu_ps(lo, x + c);
        const __m512 b = _mm512_maskz_loadu_ps(hi, x + c + 16);
        _mm512_storeu_si512(xq + c, (__m512i)_mm512_cvtne2ps_pbh(b, a));
    }
}

#elif STATICLM_TARGET == STATICLM_TARGET_AVX2 || STATICLM_TARGET == STATICLM_TARGET_AVX2_VNNI
// ---------------------------------------------------------------------------
// AVX2 + FMA + F16C (and AVX-VNNI): 8 lanes, 16 registers.
// ---------------------------------------------------------------------------
using F = __m256;
using I = __m256i;
using Mask = __m256;
using Q = __m256i;   // 32 weight bytes: 8 lanes × 4 k
using X4 = __m256i;  // 4 activation bytes in every lane
inline constexpr int kLanes = 8;
inline constexpr int kRegisters = 16;
inline constexpr bool kDotBiased = STATICLM_TARGET == STATICLM_TARGET_AVX2_VNNI;

inline F zero() { return _mm256_setzero_ps(); }
inline F set1(float v) { return _mm256_set1_ps(v); }
inline F load(const float* p) { return _mm256_loadu_ps(p); }
inline F load(const uint16_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
inline F load_bf16(const uint16_t* p, bool odd) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    return _mm256_castsi256_ps(odd ? _mm256_and_si256(v, _mm256_set1_epi32(int(0xffff0000u)))
                                   : _mm256_slli_epi32(v, 16));
}
inline F load_u8(const uint8_t* p) {
    return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
}
inline F load_u6(const uint8_t* lo, int ls, const uint8_t* hi, int hs) {
    const __m256i l = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(lo)));
    const __m256i h = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(hi)));
    const __m256i h45 = _mm256_and_si256(
        hs <= 4 ? _mm256_slli_epi32(h, 4 - hs) : _mm256_srli_epi32(h, hs - 4), _mm256_set1_epi32(0x30));
    const __m256i l03 = _mm256_and_si256(ls == 0 ? l : _mm256_srli_epi32(l, ls), _mm256_set1_epi32(0x0f));
    return _mm256_cvtepi32_ps(_mm256_or_si256(l03, h45));
}
inline void load_nibbles(const uint8_t* p, F& lo, F& hi) {
    const __m256i b = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
    lo = _mm256_cvtepi32_ps(_mm256_and_si256(b, _mm256_set1_epi32(0x0f)));
    hi = _mm256_cvtepi32_ps(_mm256_srli_epi32(b, 4));
}
inline void store(float* p, F v) { _mm256_storeu_ps(p, v); }
inline void istore(int32_t* p, I v) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v); }
inline void store_part(float* p, F v, int n) {
    alignas(32) float tmp[kLanes];
    _mm256_store_ps(tmp, v);
    std::memcpy(p, tmp, size_t(n) * sizeof(float));
}
inline void store_f16(uint16_t* p, F v) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p),
                     _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}
inline F add(F a, F b) { return _mm256_add_ps(a, b); }
inline F sub(F a, F b) { return _mm256_sub_ps(a, b); }
inline F mul(F a, F b) { return _mm256_mul_ps(a, b); }
inline F div(F a, F b) { return _mm256_div_ps(a, b); }
inline F fma(F a, F b, F c) { return _mm256_fmadd_ps(a, b, c); }
inline F abs(F v) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v); }
inline F max(F a, F b) { return _mm256_max_ps(a, b); }
inline F min(F a, F b) { return _mm256_min_ps(a, b); }
inline float hmax(F v) {
    __m128 h = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    h = _mm_max_ps(h, _mm_movehl_ps(h, h));
    h = _mm_max_ss(h, _mm_movehdup_ps(h));
    return _mm_cvtss_f32(h);
}
inline F trunc(F v) { return _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC); }
inline Mask ge(F a, F b) { return _mm256_cmp_ps(a, b, _CMP_GE_OQ); }
inline Mask eq(F a, F b) { return _mm256_cmp_ps(a, b, _CMP_EQ_OQ); }
inline F select(Mask m, F a, F b) { return _mm256_blendv_ps(b, a, m); }
inline F sign_one(F t) {
    return _mm256_or_ps(_mm256_and_ps(t, _mm256_set1_ps(-0.0f)), _mm256_set1_ps(1.0f));
}
inline bool any_nan(F v) { return _mm256_movemask_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)) != 0; }

inline I iset1(int32_t v) { return _mm256_set1_epi32(v); }
inline I iadd(I a, I b) { return _mm256_add_epi32(a, b); }
inline I shl8(I a) { return _mm256_slli_epi32(a, 8); }
inline int32_t ihsum(I v) {
    __m128i h = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    h = _mm_add_epi32(h, _mm_shuffle_epi32(h, _MM_SHUFFLE(1, 0, 3, 2)));
    h = _mm_add_epi32(h, _mm_shuffle_epi32(h, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm_cvtsi128_si32(h);
}
// Float and int32 vectors as each other's bits (the shuffles of reduce_lanes).
inline F as_ps(F x) { return x; }
inline F as_ps(I x) { return _mm256_castsi256_ps(x); }
inline F from_ps(F x, F) { return x; }
inline I from_ps(F x, I) { return _mm256_castps_si256(x); }
// v[0..7] reduced across lanes, lane i the result for v[i] (hmax_lanes,
// ihsum_lanes): a transposing tree of 128-bit and 32-bit shuffles, 21
// operations for all 8. Without NaN lanes hmax_lanes gives hmax's values.
template <class V, class Op>
inline V reduce_lanes(const V* v, Op op) {
    auto cast = [](V x) { return as_ps(x); };
    auto back = [](F x) { return from_ps(x, V{}); };
    auto pairs = [&](V a, V b, auto lo, auto hi) {  // lane pairs within each 128-bit half
        return op(back(_mm256_shuffle_ps(cast(a), cast(b), decltype(lo)::value)),
                  back(_mm256_shuffle_ps(cast(a), cast(b), decltype(hi)::value)));
    };
    using C1010 = std::integral_constant<int, _MM_SHUFFLE(1, 0, 1, 0)>;
    using C3232 = std::integral_constant<int, _MM_SHUFFLE(3, 2, 3, 2)>;
    using C2020 = std::integral_constant<int, _MM_SHUFFLE(2, 0, 2, 0)>;
    using C3131 = std::integral_constant<int, _MM_SHUFFLE(3, 1, 3, 1)>;
    V x[4];
    // x[k]: lanes 0-3 from v[k], 4-7 from v[k + 4].
    for (int k = 0; k < 4; ++k)
        x[k] = op(back(_mm256_permute2f128_ps(cast(v[k]), cast(v[k + 4]), 0x20)),
                  back(_mm256_permute2f128_ps(cast(v[k]), cast(v[k + 4]), 0x31)));
    // Half c of y0: lanes 0-1 from v[4c], 2-3 from v[4c + 1]; of y1: v[4c + 2], v[4c + 3].
    const V y0 = pairs(x[0], x[1], C1010{}, C3232{}), y1 = pairs(x[2], x[3], C1010{}, C3232{});
    return pairs(y0, y1, C2020{}, C3131{});
}
inline F hmax_lanes(const F* v) { return reduce_lanes(v, [](F a, F b) { return _mm256_max_ps(a, b); }); }
inline I ihsum_lanes(const I* v) { return reduce_lanes(v, [](I a, I b) { return _mm256_add_epi32(a, b); }); }
inline F to_float(I v) { return _mm256_cvtepi32_ps(v); }
inline I to_int(F v) { return _mm256_cvtps_epi32(v); }
inline void store_bytes(void* p, I v) {
    // Byte 0 of each 32-bit lane to the bottom of its 128-bit half, then the halves together.
    const __m256i pick =
        _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 0, 4, 8, 12,
                         -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
    const __m256i b = _mm256_shuffle_epi8(v, pick);
    _mm_storel_epi64(static_cast<__m128i*>(p),
                     _mm_unpacklo_epi32(_mm256_castsi256_si128(b), _mm256_extracti128_si256(b, 1)));
}

inline Q load_q(const uint8_t* p) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}
#if STATICLM_TARGET == STATICLM_TARGET_AVX2_VNNI
inline void load_q4(const uint8_t* p, Q& lo, Q& hi) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    const __m256i m = _mm256_set1_epi8(char(0xf0));
    lo = _mm256_and_si256(_mm256_slli_epi16(v, 4), m);
    hi = _mm256_and_si256(v, m);
}
inline I q4_dot(I acc) { return _mm256_srai_epi32(acc, 4); }
#else
// maddubs' sign trick cannot negate 16·(-8) = -128: here the operands are
// nibble + 120 = q + 128, q8's own encoding, and the dot needs no shift.
inline void load_q4(const uint8_t* p, Q& lo, Q& hi) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    const __m256i m = _mm256_set1_epi8(0x0f), b = _mm256_set1_epi8(120);
    lo = _mm256_add_epi8(_mm256_and_si256(v, m), b);
    hi = _mm256_add_epi8(_mm256_and_si256(_mm256_srli_epi16(v, 4), m), b);
}
inline I q4_dot(I acc) { return acc; }
#endif
inline void load_nl4(const uint8_t* p, const uint8_t* t, Q& lo, Q& hi) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)), m = _mm256_set1_epi8(0x0f);
    const __m256i tab = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(t)));
    lo = _mm256_shuffle_epi8(tab, _mm256_and_si256(v, m));
    hi = _mm256_shuffle_epi8(tab, _mm256_and_si256(_mm256_srli_epi16(v, 4), m));
}
// 0xff in byte i where bit i of the 32 bits at b is set.
inline __m256i bit_bytes(const uint8_t* b) {
    int32_t w;
    std::memcpy(&w, b, 4);
    const __m256i spread = _mm256_shuffle_epi8(
        _mm256_set1_epi32(w), _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2,
                                               2, 2, 3, 3, 3, 3, 3, 3, 3, 3));
    const __m256i sel = _mm256_set1_epi64x(int64_t(0x8040201008040201ull));
    return _mm256_cmpeq_epi8(_mm256_and_si256(spread, sel), sel);
}
inline void load_q5(const uint8_t* p, const uint8_t* b0, const uint8_t* b1, Q& lo, Q& hi) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
#if STATICLM_TARGET == STATICLM_TARGET_AVX2_VNNI
    const __m256i m = _mm256_set1_epi8(0x78), top = _mm256_set1_epi8(char(0x80));
    lo = _mm256_or_si256(_mm256_and_si256(_mm256_slli_epi16(v, 3), m), _mm256_and_si256(bit_bytes(b0), top));
    hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v, 1), m), _mm256_and_si256(bit_bytes(b1), top));
#else
    const __m256i m = _mm256_set1_epi8(0x0f), b = _mm256_set1_epi8(112), sixteen = _mm256_set1_epi8(16);
    lo = _mm256_add_epi8(_mm256_add_epi8(_mm256_and_si256(v, m), b), _mm256_and_si256(bit_bytes(b0), sixteen));
    hi = _mm256_add_epi8(_mm256_add_epi8(_mm256_and_si256(_mm256_srli_epi16(v, 4), m), b),
                         _mm256_and_si256(bit_bytes(b1), sixteen));
#endif
}
#if STATICLM_TARGET == STATICLM_TARGET_AVX2_VNNI
inline I q5_dot(I acc) { return _mm256_srai_epi32(acc, 3); }
inline void load_u4(const uint8_t* p, Q& lo, Q& hi) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)), m = _mm256_set1_epi8(0x0f);
    lo = _mm256_and_si256(v, m);
    hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m);
}
inline void load_u5(const uint8_t* p, const uint8_t* b0, const uint8_t* b1, Q& lo, Q& hi) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    const __m256i m = _mm256_set1_epi8(0x0f), sixteen = _mm256_set1_epi8(16);
    lo = _mm256_or_si256(_mm256_and_si256(v, m), _mm256_and_si256(bit_bytes(b0), sixteen));
    hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v, 4), m), _mm256_and_si256(bit_bytes(b1), sixteen));
}
#else
inline I q5_dot(I acc) { return acc; }
inline void load_u4(const uint8_t* p, Q& lo, Q& hi) { load_q4(p, lo, hi); }
inline void load_u5(const uint8_t* p, const uint8_t* b0, const uint8_t* b1, Q& lo, Q& hi) {
    load_q5(p, b0, b1, lo, hi);
}
#endif
inline void load_q6(const uint8_t* p, const uint8_t* hp, int s, Q& lo, Q& hi) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(hp));
    const __m256i m4 = _mm256_set1_epi8(0x0f), m2 = _mm256_set1_epi8(0x30);
    const __m256i hl = s == 0 ? _mm256_slli_epi16(h, 4) : h;
    const __m256i hh = s == 0 ? _mm256_slli_epi16(h, 2) : _mm256_srli_epi16(h, 2);
    lo = _mm256_or_si256(_mm256_and_si256(v, m4), _mm256_and_si256(hl, m2));
    hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v, 4), m4), _mm256_and_si256(hh, m2));
#if STATICLM_TARGET != STATICLM_TARGET_AVX2_VNNI
    const __m256i b = _mm256_set1_epi8(96);
    lo = _mm256_add_epi8(lo, b);
    hi = _mm256_add_epi8(hi, b);
#endif
}
inline void load_q3(const uint8_t* p, int s, const uint8_t* b0, const uint8_t* b1, Q& lo, Q& hi) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
#if STATICLM_TARGET == STATICLM_TARGET_AVX2_VNNI
    const __m256i m = _mm256_set1_epi8(0x60), top = _mm256_set1_epi8(char(0x80));
    const __m256i l = _mm256_and_si256(s == 0 ? _mm256_slli_epi16(v, 5) : _mm256_slli_epi16(v, 1), m);
    const __m256i h = _mm256_and_si256(s == 0 ? _mm256_slli_epi16(v, 3) : _mm256_srli_epi16(v, 1), m);
    lo = _mm256_or_si256(l, _mm256_and_si256(bit_bytes(b0), top));
    hi = _mm256_or_si256(h, _mm256_and_si256(bit_bytes(b1), top));
#else
    const __m256i m = _mm256_set1_epi8(3), b = _mm256_set1_epi8(124), four = _mm256_set1_epi8(4);
    const __m256i l = _mm256_and_si256(s == 0 ? v : _mm256_srli_epi16(v, 4), m);
    const __m256i h = _mm256_and_si256(s == 0 ? _mm256_srli_epi16(v, 2) : _mm256_srli_epi16(v, 6), m);
    lo = _mm256_add_epi8(_mm256_add_epi8(l, b), _mm256_and_si256(bit_bytes(b0), four));
    hi = _mm256_add_epi8(_mm256_add_epi8(h, b), _mm256_and_si256(bit_bytes(b1), four));
#endif
}
#if STATICLM_TARGET == STATICLM_TARGET_AVX2_VNNI
inline I q3_dot(I acc) { return _mm256_srai_epi32(acc, 5); }
#else
inline I q3_dot(I acc) { return acc; }
#endif
inline void load_q2(const uint8_t* p, int s, Q& lo, Q& hi) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)), m = _mm256_set1_epi8(3);
    lo = _mm256_and_si256(_mm256_srli_epi16(v, s), m);
    hi = _mm256_and_si256(_mm256_srli_epi16(v, s + 2), m);
#if STATICLM_TARGET != STATICLM_TARGET_AVX2_VNNI
    const __m256i b = _mm256_set1_epi8(char(0x80));
    lo = _mm256_or_si256(lo, b);
    hi = _mm256_or_si256(hi, b);
#endif
}
inline F load_i8(const int8_t* p) {
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
}
inline X4 bcast4(const int8_t* p) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return _mm256_set1_epi32(v);
}
#if STATICLM_TARGET == STATICLM_TARGET_AVX2_VNNI
inline I dot4(I acc, Q w, X4 x) { return _mm256_dpbusd_avx_epi32(acc, w, x); }
#else
// maddubs multiplies unsigned by signed bytes and saturates pair sums at int16:
// |x| (unsigned) times sign(x)·w (signed, w = stored - 128) keeps every pair
// sum within 2·127·127.
inline I dot4(I acc, Q w, X4 x) {
    const __m256i ws = _mm256_xor_si256(w, _mm256_set1_epi8(char(0x80)));
    const __m256i p16 = _mm256_maddubs_epi16(_mm256_abs_epi8(x), _mm256_sign_epi8(ws, x));
    return _mm256_add_epi32(acc, _mm256_madd_epi16(p16, _mm256_set1_epi16(1)));
}
#endif

inline void hsum_rows(const F* rows, float* out) {
    B b[kLanes];
    for (int i = 0; i < kLanes; ++i) b[i] = B(rows[i]);
    xsimd::haddp(b).store_unaligned(out);
}

#else
// ---------------------------------------------------------------------------
// Generic: xsimd's baseline float batch (SSE2 on x86-64, NEON elsewhere) and
// plain int32 lanes; no FMA, no F16C.
// ---------------------------------------------------------------------------
using F = B;
using Mask = xsimd::batch_bool<float, Arch>;
inline constexpr int kLanes = int(F::size);
inline constexpr int kRegisters = 16;
inline constexpr bool kDotBiased = true;
struct I {
    int32_t v[kLanes];
};
struct Q {
    uint8_t b[4 * kLanes];
};
struct X4 {
    int8_t b[4];
};

inline F zero() { return F(0.0f); }
inline F set1(float v) { return F(v); }
inline F load(const float* p) { return F::load_unaligned(p); }
// Branch-free half -> float: the exponent and mantissa shifted into place and
// rescaled by 2^112 (exact, subnormals too); inf/NaN get the full exponent back.
inline F load(const uint16_t* p) {
    alignas(64) float tmp[kLanes];
    for (int i = 0; i < kLanes; ++i) {
        const uint32_t h = p[i];
        const uint32_t em = (h & 0x7fffu) << 13;
        float f;
        std::memcpy(&f, &em, 4);
        f *= 5.192296858534828e33f;  // 2^112
        uint32_t bits;
        std::memcpy(&bits, &f, 4);
        if ((h & 0x7c00u) == 0x7c00u) bits = 0x7f800000u | em;
        bits |= (h & 0x8000u) << 16;
        std::memcpy(&tmp[i], &bits, 4);
    }
    return F::load_aligned(tmp);
}
inline F load_bf16(const uint16_t* p, bool odd) {
    alignas(64) float tmp[kLanes];
    for (int i = 0; i < kLanes; ++i) {
        const uint32_t bits = uint32_t(p[2 * i + (odd ? 1 : 0)]) << 16;
        std::memcpy(&tmp[i], &bits, 4);
    }
    return F::load_aligned(tmp);
}
inline F load_u8(const uint8_t* p) {
    alignas(64) float tmp[kLanes];
    for (int i = 0; i < kLanes; ++i) tmp[i] = float(p[i]);
    return F::load_aligned(tmp);
}
inline F load_u6(const uint8_t* lo, int ls, const uint8_t* hi, int hs) {
    alignas(64) float tmp[kLanes];
    for (int i = 0; i < kLanes; ++i) tmp[i] = float(((lo[i] >> ls) & 15) | (((hi[i] >> hs) & 3) << 4));
    return F::load_aligned(tmp);
}
inline void load_nibbles(const uint8_t* p, F& lo, F& hi) {
    alignas(64) float l[kLanes], h[kLanes];
    for (int i = 0; i < kLanes; ++i) {
        l[i] = float(p[i] & 15);
        h[i] = float(p[i] >> 4);
    }
    lo = F::load_aligned(l);
    hi = F::load_aligned(h);
}
inline void store(float* p, F v) { v.store_unaligned(p); }
inline void istore(int32_t* p, I v) { std::memcpy(p, v.v, sizeof(v.v)); }
inline void store_part(float* p, F v, int n) {
    alignas(64) float tmp[kLanes];
    v.store_aligned(tmp);
    std::memcpy(p, tmp, size_t(n) * sizeof(float));
}
inline void store_f16(uint16_t* p, F v) {
    alignas(64) float tmp[kLanes];
    v.store_aligned(tmp);
    for (int i = 0; i < kLanes; ++i) p[i] = f32_to_f16(tmp[i]);
}
inline F add(F a, F b) { return a + b; }
inline F sub(F a, F b) { return a - b; }
inline F mul(F a, F b) { return a * b; }
inline F div(F a, F b) { return a / b; }
inline F fma(F a, F b, F c) { return a * b + c; }
inline F abs(F v) { return xsimd::abs(v); }
#if defined(__SSE2__)
// maxps / minps are the contract's rule as one instruction (GCC does not fold
// the select form into them).
inline F max(F a, F b) { return xsimd::max(a, b); }
inline F min(F a, F b) { return xsimd::min(a, b); }
#else
inline F max(F a, F b) { return xsimd::select(a > b, a, b); }
inline F min(F a, F b) { return xsimd::select(a < b, a, b); }
#endif
inline float hmax(F v) {
    alignas(64) float tmp[kLanes];
    v.store_aligned(tmp);
    float m = tmp[0];
    for (int i = 1; i < kLanes; ++i) m = tmp[i] > m ? tmp[i] : m;
    return m;
}
inline F trunc(F v) { return xsimd::trunc(v); }
inline Mask ge(F a, F b) { return a >= b; }
inline Mask eq(F a, F b) { return a == b; }
inline F select(Mask m, F a, F b) { return xsimd::select(m, a, b); }
inline F sign_one(F t) { return (t & F(-0.0f)) | F(1.0f); }
inline bool any_nan(F v) { return xsimd::any(v != v); }

inline I iset1(int32_t v) {
    I r;
    for (int i = 0; i < kLanes; ++i) r.v[i] = v;
    return r;
}
inline I iadd(I a, I b) {
    for (int i = 0; i < kLanes; ++i) a.v[i] += b.v[i];
    return a;
}
inline I shl8(I a) {
    for (int i = 0; i < kLanes; ++i) a.v[i] = int32_t(uint32_t(a.v[i]) << 8);  // as vpslld
    return a;
}
inline int32_t ihsum(I v) {
    int32_t s = 0;
    for (int i = 0; i < kLanes; ++i) s += v.v[i];
    return s;
}
// v[0..kLanes) reduced across lanes, lane i the result for v[i].
inline F hmax_lanes(const F* v) {
    alignas(64) float tmp[kLanes];
    for (int i = 0; i < kLanes; ++i) tmp[i] = hmax(v[i]);
    return F::load_aligned(tmp);
}
inline I ihsum_lanes(const I* v) {
    I r;
    for (int i = 0; i < kLanes; ++i) r.v[i] = ihsum(v[i]);
    return r;
}
inline F to_float(I v) {
    alignas(64) float tmp[kLanes];
    for (int i = 0; i < kLanes; ++i) tmp[i] = float(v.v[i]);
    return F::load_aligned(tmp);
}
inline I to_int(F v) {
    alignas(64) float tmp[kLanes];
    v.store_aligned(tmp);
    I r;
    for (int i = 0; i < kLanes; ++i) r.v[i] = int32_t(tmp[i]);
    return r;
}
inline void store_bytes(void* p, I v) {
    auto* b = static_cast<uint8_t*>(p);
    for (int i = 0; i < kLanes; ++i) b[i] = uint8_t(v.v[i]);
}

inline Q load_q(const uint8_t* p) {
    Q q;
    std::memcpy(q.b, p, sizeof(q.b));
    return q;
}
inline void load_q4(const uint8_t* p, Q& lo, Q& hi) {
    for (size_t i = 0; i < sizeof(lo.b); ++i) {
        lo.b[i] = uint8_t(p[i] << 4);
        hi.b[i] = uint8_t(p[i] & 0xf0);
    }
}
inline I q4_dot(I acc) {
    for (int i = 0; i < kLanes; ++i) acc.v[i] >>= 4;  // arithmetic: exact on multiples of 16
    return acc;
}
inline void load_nl4(const uint8_t* p, const uint8_t* t, Q& lo, Q& hi) {
    for (size_t i = 0; i < sizeof(lo.b); ++i) {
        lo.b[i] = t[p[i] & 15];
        hi.b[i] = t[p[i] >> 4];
    }
}
inline void load_q5(const uint8_t* p, const uint8_t* b0, const uint8_t* b1, Q& lo, Q& hi) {
    for (size_t i = 0; i < sizeof(lo.b); ++i) {
        const int h0 = (b0[i / 8] >> (i % 8)) & 1, h1 = (b1[i / 8] >> (i % 8)) & 1;
        lo.b[i] = uint8_t(8 * ((p[i] & 15) + 16 * h0));
        hi.b[i] = uint8_t(8 * ((p[i] >> 4) + 16 * h1));
    }
}
inline I q5_dot(I acc) {
    for (int i = 0; i < kLanes; ++i) acc.v[i] >>= 3;  // arithmetic: exact on multiples of 8
    return acc;
}
inline void load_u4(const uint8_t* p, Q& lo, Q& hi) {
    for (size_t i = 0; i < sizeof(lo.b); ++i) {
        lo.b[i] = uint8_t(p[i] & 15);
        hi.b[i] = uint8_t(p[i] >> 4);
    }
}
inline void load_u5(const uint8_t* p, const uint8_t* b0, const uint8_t* b1, Q& lo, Q& hi) {
    for (size_t i = 0; i < sizeof(lo.b); ++i) {
        const int h0 = (b0[i / 8] >> (i % 8)) & 1, h1 = (b1[i / 8] >> (i % 8)) & 1;
        lo.b[i] = uint8_t((p[i] & 15) + 16 * h0);
        hi.b[i] = uint8_t((p[i] >> 4) + 16 * h1);
    }
}
inline void load_q6(const uint8_t* p, const uint8_t* hp, int s, Q& lo, Q& hi) {
    for (size_t i = 0; i < sizeof(lo.b); ++i) {
        lo.b[i] = uint8_t((p[i] & 15) | (((hp[i] >> s) & 3) << 4));
        hi.b[i] = uint8_t((p[i] >> 4) | (((hp[i] >> (s + 2)) & 3) << 4));
    }
}
inline void load_q3(const uint8_t* p, int s, const uint8_t* b0, const uint8_t* b1, Q& lo, Q& hi) {
    for (size_t i = 0; i < sizeof(lo.b); ++i) {
        const int h0 = (b0[i / 8] >> (i % 8)) & 1, h1 = (b1[i / 8] >> (i % 8)) & 1;
        lo.b[i] = uint8_t(32 * (((p[i] >> s) & 3) | (h0 << 2)));
        hi.b[i] = uint8_t(32 * (((p[i] >> (s + 2)) & 3) | (h1 << 2)));
    }
}
inline I q3_dot(I acc) {
    for (int i = 0; i < kLanes; ++i) acc.v[i] >>= 5;  // arithmetic: exact on multiples of 32
    return acc;
}
inline void load_q2(const uint8_t* p, int s, Q& lo, Q& hi) {
    for (size_t i = 0; i < sizeof(lo.b); ++i) {
        lo.b[i] = uint8_t((p[i] >> s) & 3);
        hi.b[i] = uint8_t((p[i] >> (s + 2)) & 3);
    }
}
inline F load_i8(const int8_t* p) {
    alignas(64) float tmp[kLanes];
    for (int i = 0; i < kLanes; ++i) tmp[i] = float(p[i]);
    return F::load_aligned(tmp);
}
inline X4 bcast4(const int8_t* p) {
    X4 x;
    std::memcpy(x.b, p, 4);
    return x;
}
inline I dot4(I acc, const Q& w, X4 x) {
    for (int l = 0; l < kLanes; ++l)
        for (int e = 0; e < 4; ++e) acc.v[l] += int32_t(w.b[4 * l + e]) * int32_t(x.b[e]);
    return acc;
}

inline void hsum_rows(const F* rows, float* out) { xsimd::haddp(rows).store_unaligned(out); }

#endif

#if !defined(STATICLM_VEC_BF16_DOT)
#define STATICLM_VEC_BF16_DOT 0
#endif

// The float vectors as xsimd batches and back (the same registers).
inline B to_batch(F v) { return B(v); }

// ---------------------------------------------------------------------------
// Every target: xsimd's versions on the same registers. exp, tanh and sincos
// are its fp32 polynomials (no FMA: Arch names no fma3 extension, so their
// steps round after each multiply); hsum is its reduction tree (halves added
// pairwise down to one lane); neg is its unary minus, a sign flip on AVX2 and
// generic, 0 - v on AVX-512 (so neg(+0) = +0 there).
// ---------------------------------------------------------------------------
inline F exp(F v) { return xsimd::exp(B(v)); }
inline F tanh(F v) { return xsimd::tanh(B(v)); }
inline void sincos(F v, F& s, F& c) {
    const auto [bs, bc] = xsimd::sincos(B(v));
    s = bs;
    c = bc;
}
inline float hsum(F v) { return xsimd::hadd(B(v)); }
inline F neg(F v) { return -B(v); }

}  // namespace staticlm::kernels::STATICLM_NS::vec
