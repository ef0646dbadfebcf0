// q8 matmul y[m][n] = x[m][k] · Wᵀ on packed q8 weights (layout in kernels.hpp),
// compiled per target. Activation rows are quantized once per call into the
// caller's scratch; one OpenMP region per call splits panels (and rows for small n).
//
// Numerical contract: activations are quantized exactly as ref::quantize_row_q8
// (IEEE division, round half away from zero), so every target sees the same int8
// data. Inside a group of 32 the dot product is exact int32 (vpdpbusd on w + 128
// with the accumulator started at -128·Σq; AVX2 without VNNI: maddubs on |x| and
// sign-flipped signed weights, whose int16 pair sums ≤ 2·127·127 cannot saturate).
// Across groups the sum is fp32 in group order: y = fma(float(dot), w_s·x_s, y) on
// SIMD targets, (x_s·w_s)·float(dot) then an add on the generic target.
#include <algorithm>
#include <cstdint>
#include <cstring>

#if defined(_OPENMP)
#include <omp.h>
#endif
#if STATICLM_TARGET != STATICLM_TARGET_GENERIC
#include <immintrin.h>
#endif

#include "kernels/simd/simd.hpp"

#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
// GCC 12's AVX-512 intrinsics pass `_mm512_undefined_*()` (a self-initialized
// variable) as the merge source and then warn about it at every use (GCC PR 105593).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace staticlm::kernels::STATICLM_NS {

namespace {

constexpr size_t kBlockBytes = 544;  // per panel per group: 512 B of w + 128, 16 f16 scales
constexpr size_t kScaleOffset = 512;
constexpr int kQuadsPerGroup = kQ8Group / 4;  // 4 consecutive k per int32 lane

// Tile sizes (rows of x × 16-row weight panels per inner kernel call).
//
// AVX-512 (32 zmm): a tile of kMr rows × NP = 2 panels keeps kMr·NP int32 group
// accumulators and kMr·NP fp32 sums in registers, plus NP weight vectors and two
// temporaries: 6·2·2 + 2 + 2 = 28 zmm (activations are broadcast from memory with
// vpbroadcastd). At 2 vpdpbusd/cycle and an assumed latency of 4-5 cycles, ≥ 10
// independent chains hide the latency; 12 do (12-chain and 24-chain peak loops
// measured the same throughput here). Each weight vector feeds kMr = 6 vpdpbusd
// and each broadcast feeds NP = 2: 8 loads per 12 vpdpbusd (6 cycles) against
// 2-3 load ports. Per group the fp32 epilogue is 3 ops (cvt, mul, fma) per 8
// vpdpbusd: that, not the tile shape, bounds GEMM at roughly 70-80% of peak.
//
// AVX2 (16 ymm): a 16-row panel is two 8-row halves, so a tile of MR rows × NP
// panels needs 4·MR·NP accumulators; kMr = 2 rows × 1 panel = 8 ymm + weights,
// broadcast, |x| and the ones constant for maddubs. Single-row tiles (decode)
// take 2 panels, one from each of the thread's two weight streams.
// The generic target is scalar; its tile shape only orders the loops.
#if STATICLM_TARGET == STATICLM_TARGET_AVX512
constexpr int kMr = 6;
constexpr bool kTwoPanelTiles = true;
#elif STATICLM_TARGET == STATICLM_TARGET_GENERIC
constexpr int kMr = 4;
constexpr bool kTwoPanelTiles = true;
#else
constexpr int kMr = 2;
constexpr bool kTwoPanelTiles = false;
#endif

// Where the parts of one quantized activation row live (see kernels.hpp).
struct ActLayout {
    int k = 0;
    int n_groups = 0;
    size_t stride = 0;     // bytes between rows
    size_t scale_off = 0;  // float scale[n_groups]
    size_t corr_off = 0;   // int32 corr[n_groups]
};

ActLayout act_layout(int k) {
    ActLayout a;
    a.k = k;
    const int k_pad = padded_k(WeightType::q8, k);
    a.n_groups = k_pad / kQ8Group;
    a.stride = q8_act_row_bytes(k);
    a.scale_off = size_t(k_pad);
    a.corr_off = size_t(k_pad) + sizeof(float) * size_t(a.n_groups);
    return a;
}

inline int32_t load_i32(const int8_t* p) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return v;
}

// ---------------------------------------------------------------------------
// Activation quantization (bit-identical to ref::quantize_row_q8)
// ---------------------------------------------------------------------------

// Quantizes one group of 32 floats (zero padded); returns Σq.
inline int32_t quantize_group(const float* x, float s, int8_t* q) {
#if STATICLM_TARGET == STATICLM_TARGET_AVX512
    const __m512 sv = _mm512_set1_ps(s);
    const __m512 sign_mask = _mm512_set1_ps(-0.0f);
    __m512i sum = _mm512_setzero_si512();
    for (int h = 0; h < 2; ++h) {
        const __m512 t = _mm512_div_ps(_mm512_loadu_ps(x + 16 * h), sv);
        __m512 r = _mm512_roundscale_ps(t, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
        // Round half away from zero: t - trunc(t) is exact, step away when |.| >= 0.5.
        const __m512 frac = _mm512_abs_ps(_mm512_sub_ps(t, r));
        const __mmask16 away = _mm512_cmp_ps_mask(frac, _mm512_set1_ps(0.5f), _CMP_GE_OQ);
        const __m512 one = _mm512_or_ps(_mm512_and_ps(t, sign_mask), _mm512_set1_ps(1.0f));
        r = _mm512_mask_add_ps(r, away, r, one);
        r = _mm512_min_ps(_mm512_max_ps(r, _mm512_set1_ps(-127.0f)), _mm512_set1_ps(127.0f));
        const __m512i qi = _mm512_cvtps_epi32(r);
        sum = _mm512_add_epi32(sum, qi);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(q + 16 * h), _mm512_cvtepi32_epi8(qi));
    }
    return _mm512_reduce_add_epi32(sum);
#elif STATICLM_TARGET == STATICLM_TARGET_GENERIC
    int32_t sum = 0;
    for (int i = 0; i < kQ8Group; ++i) {
        const float t = x[i] / s;
        float r = __builtin_truncf(t);
        if (__builtin_fabsf(t - r) >= 0.5f) r += t < 0.0f ? -1.0f : 1.0f;
        r = std::min(127.0f, std::max(-127.0f, r));
        q[i] = int8_t(int(r));
        sum += int(r);
    }
    return sum;
#else
    const __m256 sv = _mm256_set1_ps(s);
    const __m256 sign_mask = _mm256_set1_ps(-0.0f);
    alignas(32) int32_t qi[kQ8Group];
    __m256i sum = _mm256_setzero_si256();
    for (int h = 0; h < 4; ++h) {
        const __m256 t = _mm256_div_ps(_mm256_loadu_ps(x + 8 * h), sv);
        __m256 r = _mm256_round_ps(t, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
        const __m256 frac = _mm256_andnot_ps(sign_mask, _mm256_sub_ps(t, r));
        const __m256 away = _mm256_cmp_ps(frac, _mm256_set1_ps(0.5f), _CMP_GE_OQ);
        const __m256 one = _mm256_or_ps(_mm256_and_ps(t, sign_mask), _mm256_set1_ps(1.0f));
        r = _mm256_add_ps(r, _mm256_and_ps(away, one));
        r = _mm256_min_ps(_mm256_max_ps(r, _mm256_set1_ps(-127.0f)), _mm256_set1_ps(127.0f));
        const __m256i v = _mm256_cvtps_epi32(r);
        sum = _mm256_add_epi32(sum, v);
        _mm256_store_si256(reinterpret_cast<__m256i*>(qi + 8 * h), v);
    }
    for (int i = 0; i < kQ8Group; ++i) q[i] = int8_t(qi[i]);
    alignas(32) int32_t lanes[8];
    _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), sum);
    int32_t total = 0;
    for (int32_t v : lanes) total += v;
    return total;
#endif
}

// max |x| of a group: exact in any order, so every target gets the reference scale.
inline float group_absmax(const float* x) {
#if STATICLM_TARGET == STATICLM_TARGET_AVX512
    return _mm512_reduce_max_ps(
        _mm512_max_ps(_mm512_abs_ps(_mm512_loadu_ps(x)), _mm512_abs_ps(_mm512_loadu_ps(x + 16))));
#elif STATICLM_TARGET == STATICLM_TARGET_GENERIC
    float amax = 0.0f;
    for (int i = 0; i < kQ8Group; ++i) amax = std::max(amax, __builtin_fabsf(x[i]));
    return amax;
#else
    const __m256 sign_mask = _mm256_set1_ps(-0.0f);
    __m256 m = _mm256_andnot_ps(sign_mask, _mm256_loadu_ps(x));
    for (int h = 1; h < 4; ++h) m = _mm256_max_ps(m, _mm256_andnot_ps(sign_mask, _mm256_loadu_ps(x + 8 * h)));
    __m128 v = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    v = _mm_max_ps(v, _mm_movehl_ps(v, v));
    v = _mm_max_ss(v, _mm_movehdup_ps(v));
    return _mm_cvtss_f32(v);
#endif
}

void quantize_row(const float* x, const ActLayout& a, std::byte* dst) {
    auto* q = reinterpret_cast<int8_t*>(dst);
    auto* scale = reinterpret_cast<float*>(dst + a.scale_off);
    auto* corr = reinterpret_cast<int32_t*>(dst + a.corr_off);
    float buf[kQ8Group];
    for (int g = 0; g < a.n_groups; ++g) {
        const int len = std::min(kQ8Group, a.k - g * kQ8Group);
        const float* src = x + size_t(g) * kQ8Group;
        if (len < kQ8Group) {  // the padded tail group
            std::memset(buf, 0, sizeof(buf));
            std::memcpy(buf, src, sizeof(float) * size_t(len));
            src = buf;
        }
        const float s = group_absmax(src) / 127.0f;
        scale[g] = s;
        int32_t sum = 0;
        if (s != 0.0f)
            sum = quantize_group(src, s, q + size_t(g) * kQ8Group);
        else
            std::memset(q + size_t(g) * kQ8Group, 0, kQ8Group);
        corr[g] = -128 * sum;
    }
}

// ---------------------------------------------------------------------------
// Inner kernels: MR activation rows × NP panels, all groups of K.
// ---------------------------------------------------------------------------

struct TileArgs {
    const std::byte* act;  // first activation row of the tile
    const ActLayout* a;
    const uint8_t* panel[2];  // group-0 block of each panel
    float* y;                 // y of the first row, first column of panel[0]
    size_t ldy;
    ptrdiff_t y_off[2];  // column offset of each panel's outputs in y
    int cols[2];         // valid output columns of each panel (1..16)
};

#if STATICLM_TARGET == STATICLM_TARGET_AVX512

template <int MR, int NP>
void tile(const TileArgs& t) {
    const ActLayout& a = *t.a;
    __m512 f[MR][NP];
    for (int r = 0; r < MR; ++r)
        for (int p = 0; p < NP; ++p) f[r][p] = _mm512_setzero_ps();
    const uint8_t* w[NP];
    for (int p = 0; p < NP; ++p) w[p] = t.panel[p];
    const std::byte* act = t.act;
    const size_t stride = a.stride;
    for (int g = 0; g < a.n_groups; ++g) {
        const int8_t* q = reinterpret_cast<const int8_t*>(act) + size_t(g) * kQ8Group;
        const float* xs = reinterpret_cast<const float*>(act + a.scale_off) + g;
        const int32_t* corr = reinterpret_cast<const int32_t*>(act + a.corr_off) + g;
        __m512i acc[MR][NP];
#pragma GCC unroll 8
        for (int r = 0; r < MR; ++r) {
            const __m512i c = _mm512_set1_epi32(
                *reinterpret_cast<const int32_t*>(reinterpret_cast<const std::byte*>(corr) +
                                                  r * stride));
            for (int p = 0; p < NP; ++p) acc[r][p] = c;
        }
#pragma GCC unroll 8
        for (int j = 0; j < kQuadsPerGroup; ++j) {
            __m512i wv[NP];
            for (int p = 0; p < NP; ++p)
                wv[p] = _mm512_loadu_si512(w[p] + size_t(g) * kBlockBytes + 64 * j);
#pragma GCC unroll 8
            for (int r = 0; r < MR; ++r) {
                const __m512i xb = _mm512_set1_epi32(load_i32(
                    reinterpret_cast<const int8_t*>(reinterpret_cast<const std::byte*>(q) +
                                                    r * stride) +
                    4 * j));
                for (int p = 0; p < NP; ++p)
                    acc[r][p] = _mm512_dpbusd_epi32(acc[r][p], wv[p], xb);
            }
        }
        for (int p = 0; p < NP; ++p) {
            const __m512 ws = _mm512_cvtph_ps(_mm256_loadu_si256(
                reinterpret_cast<const __m256i*>(w[p] + size_t(g) * kBlockBytes + kScaleOffset)));
#pragma GCC unroll 8
            for (int r = 0; r < MR; ++r) {
                const float x_s = *reinterpret_cast<const float*>(
                    reinterpret_cast<const std::byte*>(xs) + r * stride);
                const __m512 s = _mm512_mul_ps(ws, _mm512_set1_ps(x_s));
                f[r][p] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc[r][p]), s, f[r][p]);
            }
        }
    }
    for (int r = 0; r < MR; ++r)
        for (int p = 0; p < NP; ++p) {
            float* out = t.y + r * t.ldy + t.y_off[p];
            if (t.cols[p] == kPanelRows)
                _mm512_storeu_ps(out, f[r][p]);
            else
                _mm512_mask_storeu_ps(out, __mmask16((1u << t.cols[p]) - 1), f[r][p]);
        }
}

#elif STATICLM_TARGET == STATICLM_TARGET_GENERIC

template <int MR, int NP>
void tile(const TileArgs& t) {
    const ActLayout& a = *t.a;
    for (int r = 0; r < MR; ++r) {
        const std::byte* act = t.act + r * a.stride;
        const auto* q = reinterpret_cast<const int8_t*>(act);
        const auto* xs = reinterpret_cast<const float*>(act + a.scale_off);
        const auto* corr = reinterpret_cast<const int32_t*>(act + a.corr_off);
        for (int p = 0; p < NP; ++p) {
            float acc[kPanelRows] = {};
            for (int g = 0; g < a.n_groups; ++g) {
                const uint8_t* blk = t.panel[p] + size_t(g) * kBlockBytes;
                float ws[kPanelRows];
                for (int c = 0; c < kPanelRows; ++c) {
                    uint16_t h;
                    std::memcpy(&h, blk + kScaleOffset + 2 * c, 2);
                    ws[c] = f16_to_f32(h);
                }
                int32_t dot[kPanelRows];
                for (int c = 0; c < kPanelRows; ++c) dot[c] = corr[g];
                for (int j = 0; j < kQuadsPerGroup; ++j)
                    for (int c = 0; c < kPanelRows; ++c)
                        for (int e = 0; e < 4; ++e)
                            dot[c] += int32_t(blk[64 * j + 4 * c + e]) *
                                      int32_t(q[g * kQ8Group + 4 * j + e]);
                for (int c = 0; c < kPanelRows; ++c) {
                    const float s = xs[g] * ws[c];
                    const float term = s * float(dot[c]);
                    acc[c] += term;
                }
            }
            float* out = t.y + r * t.ldy + t.y_off[p];
            for (int c = 0; c < t.cols[p]; ++c) out[c] = acc[c];
        }
    }
}

#else  // AVX2 and AVX-VNNI: 256-bit halves of the 64-byte weight vectors

template <int MR, int NP>
void tile(const TileArgs& t) {
    constexpr int NV = 2 * NP;  // 8-row column vectors
    const ActLayout& a = *t.a;
    __m256 f[MR][NV];
    for (int r = 0; r < MR; ++r)
        for (int v = 0; v < NV; ++v) f[r][v] = _mm256_setzero_ps();
#if STATICLM_TARGET != STATICLM_TARGET_AVX2_VNNI
    const __m256i ones = _mm256_set1_epi16(1);
#endif
    const size_t stride = a.stride;
    for (int g = 0; g < a.n_groups; ++g) {
        const std::byte* act = t.act;
        __m256i acc[MR][NV];
        for (int r = 0; r < MR; ++r) {
#if STATICLM_TARGET == STATICLM_TARGET_AVX2_VNNI
            const __m256i c = _mm256_set1_epi32(reinterpret_cast<const int32_t*>(
                act + r * stride + a.corr_off)[g]);
#else
            const __m256i c = _mm256_setzero_si256();  // signed weights: no bias to remove
#endif
            for (int v = 0; v < NV; ++v) acc[r][v] = c;
        }
        // Unrolling the 8 quads lets GCC hoist loads until 16 ymm spill: keep 2.
#pragma GCC unroll 2
        for (int j = 0; j < kQuadsPerGroup; ++j) {
#pragma GCC unroll 4
            for (int r = 0; r < MR; ++r) {
                const __m256i xb = _mm256_set1_epi32(
                    load_i32(reinterpret_cast<const int8_t*>(act + r * stride) +
                             g * kQ8Group + 4 * j));
#if STATICLM_TARGET != STATICLM_TARGET_AVX2_VNNI
                const __m256i ax = _mm256_abs_epi8(xb);
#endif
#pragma GCC unroll 4
                for (int v = 0; v < NV; ++v) {
                    const __m256i wv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(
                        t.panel[v / 2] + size_t(g) * kBlockBytes + 64 * j + 32 * (v % 2)));
#if STATICLM_TARGET == STATICLM_TARGET_AVX2_VNNI
                    acc[r][v] = _mm256_dpbusd_avx_epi32(acc[r][v], wv, xb);
#else
                    // maddubs saturates at int16: use |x| (unsigned) × sign(x)·w (signed),
                    // with w flipped back from w + 128; |pair sum| <= 2·127·127.
                    const __m256i ws = _mm256_xor_si256(wv, _mm256_set1_epi8(char(0x80)));
                    const __m256i p16 = _mm256_maddubs_epi16(ax, _mm256_sign_epi8(ws, xb));
                    acc[r][v] = _mm256_add_epi32(acc[r][v], _mm256_madd_epi16(p16, ones));
#endif
                }
            }
        }
        for (int v = 0; v < NV; ++v) {
            const __m256 ws = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(
                t.panel[v / 2] + size_t(g) * kBlockBytes + kScaleOffset + 16 * (v % 2))));
            for (int r = 0; r < MR; ++r) {
                const float x_s =
                    reinterpret_cast<const float*>(act + r * stride + a.scale_off)[g];
                const __m256 s = _mm256_mul_ps(ws, _mm256_set1_ps(x_s));
                f[r][v] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc[r][v]), s, f[r][v]);
            }
        }
    }
    for (int r = 0; r < MR; ++r)
        for (int p = 0; p < NP; ++p) {
            float* out = t.y + r * t.ldy + t.y_off[p];
            if (t.cols[p] == kPanelRows) {
                _mm256_storeu_ps(out, f[r][2 * p]);
                _mm256_storeu_ps(out + 8, f[r][2 * p + 1]);
            } else {
                alignas(32) float tmp[kPanelRows];
                _mm256_store_ps(tmp, f[r][2 * p]);
                _mm256_store_ps(tmp + 8, f[r][2 * p + 1]);
                for (int c = 0; c < t.cols[p]; ++c) out[c] = tmp[c];
            }
        }
}

#endif

// Runs rows [0, mr) of a tile (mr <= kMr) on the panels in t.
template <int NP>
void tile_rows(const TileArgs& t, int mr) {
    if constexpr (NP == 2 && !kTwoPanelTiles) {
        if (mr > 1) {  // not enough registers for two panels: one at a time
            TileArgs t1 = t;
            tile_rows<1>(t1, mr);
            t1.panel[0] = t.panel[1];
            t1.y_off[0] = t.y_off[1];
            t1.cols[0] = t.cols[1];
            tile_rows<1>(t1, mr);
            return;
        }
    }
    switch (mr) {
        case 1: tile<1, NP>(t); break;
#if STATICLM_TARGET == STATICLM_TARGET_AVX512 || STATICLM_TARGET == STATICLM_TARGET_GENERIC
        case 2: tile<2, NP>(t); break;
        case 3: tile<3, NP>(t); break;
        case 4: tile<4, NP>(t); break;
#endif
#if STATICLM_TARGET == STATICLM_TARGET_AVX512
        case 5: tile<5, NP>(t); break;
        case 6: tile<6, NP>(t); break;
#endif
#if STATICLM_TARGET == STATICLM_TARGET_AVX2 || STATICLM_TARGET == STATICLM_TARGET_AVX2_VNNI
        case 2: tile<2, NP>(t); break;
#endif
        default: break;
    }
}

static_assert(kMr <= 6, "tile_rows instantiates up to 6 rows");

// Pairs of panels whose weights stay in L2 while one tile of activation rows
// (kMr rows · (k + 8·k/32) bytes, 15 KB at k = 2048) is reused from L1 across
// them: 4 pairs · 2 panels · 36 KB (k = 2048) = 288 KB of a 1 MB L2.
constexpr int kPairsPerBlock = 4;

// One thread's share: panels [p0, p1) × rows [r0, r1). The panel range is
// walked as two independent streams (its first and second half) so that two
// hardware prefetch streams stay busy while weights come from DRAM.
void run_range(const PackedMatrix& w, const ActLayout& a, const std::byte* act, float* y,
               size_t ldy, int p0, int p1, int r0, int r1) {
    const size_t panel_bytes = size_t(a.n_groups) * kBlockBytes;
    const auto* base = reinterpret_cast<const uint8_t*>(w.data);
    const int half = (p1 - p0 + 1) / 2;
    for (int i0 = 0; i0 < half; i0 += kPairsPerBlock) {
        const int i1 = std::min(half, i0 + kPairsPerBlock);
        for (int r = r0; r < r1; r += kMr) {
            const int mr = std::min(kMr, r1 - r);
            for (int i = i0; i < i1; ++i) {
                const int pa = p0 + i, pb = p0 + half + i;
                const int np = pb < p1 ? 2 : 1;
                TileArgs t{};
                t.a = &a;
                t.ldy = ldy;
                t.act = act + size_t(r) * a.stride;
                t.y = y + size_t(r) * ldy;
                const int pan[2] = {pa, pb};
                for (int p = 0; p < np; ++p) {
                    t.panel[p] = base + size_t(pan[p]) * panel_bytes;
                    t.y_off[p] = ptrdiff_t(pan[p]) * kPanelRows;
                    t.cols[p] = std::min(kPanelRows, w.n - pan[p] * kPanelRows);
                }
                if (np == 2)
                    tile_rows<2>(t, mr);
                else
                    tile_rows<1>(t, mr);
            }
        }
    }
}

inline void split(int n, int parts, int i, int& begin, int& end) {
    begin = int(int64_t(n) * i / parts);
    end = int(int64_t(n) * (i + 1) / parts);
}

}  // namespace

void quantize_act(const float* x, size_t ldx, int m, int k, std::byte* dst) {
    const ActLayout a = act_layout(k);
    for (int r = 0; r < m; ++r) quantize_row(x + size_t(r) * ldx, a, dst + size_t(r) * a.stride);
}

void matmul_q8(const PackedMatrix& w, const float* x, size_t ldx, int m, float* y, size_t ldy,
               std::byte* scratch, int n_threads) {
    if (m <= 0 || w.n <= 0) return;
    const ActLayout a = act_layout(w.k);
    const int n_panels = (w.n + kPanelRows - 1) / kPanelRows;
    const int m_tiles = (m + kMr - 1) / kMr;
    // No more threads than there are tiles to share.
    n_threads = std::max(1, std::min(n_threads, n_panels * m_tiles));
#pragma omp parallel num_threads(n_threads) if (n_threads > 1)
    {
        int tid = 0, nth = 1;
#if defined(_OPENMP)
        tid = omp_get_thread_num();
        nth = omp_get_num_threads();
#endif
        int q0, q1;
        split(m, nth, tid, q0, q1);
        for (int r = q0; r < q1; ++r)
            quantize_row(x + size_t(r) * ldx, a, scratch + size_t(r) * a.stride);
#pragma omp barrier
        // Threads share panels (each gets two streams) when there are enough of
        // them; otherwise rows too (prefill of a narrow matrix).
        const int tm = n_panels >= 2 * nth ? 1 : std::min(nth, m_tiles);
        const int tn = nth / tm;
        if (tid < tm * tn) {
            int p0, p1, t0, t1;
            split(n_panels, tn, tid % tn, p0, p1);
            split(m_tiles, tm, tid / tn, t0, t1);
            run_range(w, a, scratch, y, ldy, p0, p1, t0 * kMr, std::min(m, t1 * kMr));
        }
    }
}

}  // namespace staticlm::kernels::STATICLM_NS
