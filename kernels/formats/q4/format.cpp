// The q4 format's entry: 4-bit weights in 16-row panels of Q4Blocks (layout in
// kernels/formats/q4/layout.hpp), the scale search of the weight quantizer, and the
// exact repacking of already-quantized rows (GGUF Q4_0).
#include "formats/q4/layout.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "formats/hooks.hpp"
#include "kernels/formats/format.hpp"
#include "formats/q8/layout.hpp"
#include "staticlm/error.hpp"

namespace staticlm::kernels {

namespace {

size_t panel_size(int k) { return size_t(q8_groups(k)) * sizeof(Q4Block); }

size_t matrix_size(int n, int k) {
    detail::check_k("q4", n, k);
    return detail::panels(n) * panel_size(k);
}

size_t scratch_size(int m, int k) { return q8_act_scratch_bytes(m, k); }

// Nibble of row r, k = j (0..31) in a block, as the signed value.
int block_q(const Q4Block& b, int r, int j) {
    const int t = j / 8, quad = (j % 8) / 4, c = j % 4;
    const uint8_t byte = b.q[t][r][c];
    return int(quad == 0 ? byte & 15 : byte >> 4) - 8;
}

void set_block_q(Q4Block& b, int r, int j, int q) {
    const int t = j / 8, quad = (j % 8) / 4, c = j % 4;
    uint8_t& byte = b.q[t][r][c];
    const auto nib = uint8_t(q + 8);
    byte = quad == 0 ? uint8_t((byte & 0xF0) | nib) : uint8_t((byte & 0x0F) | (nib << 4));
}

void read_row(const PackedMatrix& w, int row, float scale, float* out) {
    detail::check_row(w, row);
    const int p = row / kPanelRows, r = row % kPanelRows;
    const auto* blocks = reinterpret_cast<const Q4Block*>(w.data + size_t(p) * panel_size(w.k));
    for (int i = 0; i < w.k; ++i) {
        const Q4Block& b = blocks[i / kQ8Group];
        uint16_t s16;
        std::memcpy(&s16, &b.scale[r], 2);
        out[i] = float(block_q(b, r, i % kQ8Group)) * f16_to_f32(s16) * scale;
    }
}

void clear_block(std::byte* block) {  // every row q = 0 (nibble 8), scale 0
    auto& b = *reinterpret_cast<Q4Block*>(block);
    std::memset(b.q, 0x88, sizeof b.q);
    std::memset(b.scale, 0, sizeof b.scale);
}

// The value a half holds nearest to s (finite: capped at ±65504).
float half_of(float s) { return f16_to_f32(f32_to_f16(std::clamp(s, -65504.0f, 65504.0f))); }

// round(v) half away from zero, clamped to [-8, 7] (v finite), as a float.
// Clamping first to the floats just inside [-8.5, 7.5] gives the same result
// and keeps the conversion in range. Scalar and SSE2 forms: the same IEEE
// operations per element, no branches.
constexpr float kLoClamp = -8.499999f, kHiClamp = 7.499999f;
inline float round_q4(float v) {
    v = std::min(std::max(v, kLoClamp), kHiClamp);
    const float t = float(int(v));  // toward zero
    const float frac = v - t;
    return t + (float(frac >= 0.5f) - float(frac <= -0.5f));
}
#if defined(__SSE2__)
inline __m128 round_q4(__m128 v) {
    v = _mm_min_ps(_mm_max_ps(v, _mm_set1_ps(kLoClamp)), _mm_set1_ps(kHiClamp));
    const __m128 t = _mm_cvtepi32_ps(_mm_cvttps_epi32(v));
    const __m128 frac = _mm_sub_ps(v, t), one = _mm_set1_ps(1.0f);
    const __m128 up = _mm_and_ps(_mm_cmpge_ps(frac, _mm_set1_ps(0.5f)), one);
    const __m128 down = _mm_and_ps(_mm_cmple_ps(frac, _mm_set1_ps(-0.5f)), one);
    return _mm_add_ps(t, _mm_sub_ps(up, down));
}
#endif

// For a candidate scale with inverse inv: xq[u] = Σ wx·q and qq[u] = Σ w·q²
// over the elements i ≡ u (mod 8), each in element order.
void candidate_sums(const float* x, const float* w, const float* wx, float inv, float* xq, float* qq) {
#if defined(__SSE2__)
    const __m128 iv = _mm_set1_ps(inv);
    __m128 a0 = _mm_setzero_ps(), a1 = a0, b0 = a0, b1 = a0;
    for (int i = 0; i < kQ8Group; i += 8) {
        const __m128 q0 = round_q4(_mm_mul_ps(_mm_loadu_ps(x + i), iv));
        const __m128 q1 = round_q4(_mm_mul_ps(_mm_loadu_ps(x + i + 4), iv));
        a0 = _mm_add_ps(a0, _mm_mul_ps(_mm_loadu_ps(wx + i), q0));
        a1 = _mm_add_ps(a1, _mm_mul_ps(_mm_loadu_ps(wx + i + 4), q1));
        b0 = _mm_add_ps(b0, _mm_mul_ps(_mm_loadu_ps(w + i), _mm_mul_ps(q0, q0)));
        b1 = _mm_add_ps(b1, _mm_mul_ps(_mm_loadu_ps(w + i + 4), _mm_mul_ps(q1, q1)));
    }
    _mm_storeu_ps(xq, a0), _mm_storeu_ps(xq + 4, a1), _mm_storeu_ps(qq, b0), _mm_storeu_ps(qq + 4, b1);
#else
    for (int u = 0; u < 8; ++u) xq[u] = qq[u] = 0.0f;
    for (int i = 0; i < kQ8Group; i += 8)
        for (int u = 0; u < 8; ++u) {
            const float q = round_q4(x[i + u] * inv);
            xq[u] += wx[i + u] * q;
            qq[u] += w[i + u] * (q * q);
        }
#endif
}

// Divisors d of the search: the largest |x| rounds to about d.
constexpr float kDivisors[] = {-7.0f, -7.25f, -7.5f, -7.75f, -8.0f, -8.25f, -8.5f, -8.75f, -9.0f, -9.5f};

}  // namespace

float quantize_q4_group(const float* x, int8_t* q) {
    constexpr int G = kQ8Group, P = 8;  // P interleaved partial sums
    std::memset(q, 0, G);
    float amax = 0.0f, mx = 0.0f;
    for (int i = 0; i < G; ++i) {
        if (!std::isfinite(x[i])) return 0.0f;
        if (std::fabs(x[i]) > amax) amax = std::fabs(x[i]), mx = x[i];
    }
    if (amax == 0.0f) return 0.0f;
    // Weights w and w·x in float (x / amax keeps them far from overflow and
    // underflow; the error is then Σ w (x/amax - s/amax · q)², the same
    // ranking), the sums in P interleaved float parts added in double: a
    // fixed order, so the same bits on every target.
    float w[G], wx[G], xn[G];
    float mean2 = 0.0f;
    for (int i = 0; i < G; ++i) xn[i] = x[i] / amax, mean2 += xn[i] * xn[i];
    mean2 /= float(G);
    double sxx = 0.0;
    for (int i = 0; i < G; ++i) {
        w[i] = xn[i] * xn[i] + mean2;
        wx[i] = w[i] * xn[i];
        sxx += double(wx[i]) * double(xn[i]);
    }
    // Σ w (x - s q)² = sxx - 2 s sxq + s² sqq for the q of a candidate (all
    // in units of amax).
    float best = half_of(mx / -8.0f);  // round to nearest: the baseline
    double best_err = std::numeric_limits<double>::infinity();
    auto consider = [&](float s, bool least_squares) {
        if (s == 0.0f) return;
        const float inv = 1.0f / s;
        float xq[P], qq[P];
        candidate_sums(x, w, wx, inv, xq, qq);
        double sxq = 0.0, sqq = 0.0;
        for (int u = 0; u < P; ++u) sxq += double(xq[u]), sqq += double(qq[u]);
        if (sqq == 0.0) return;
        const float sh = least_squares ? half_of(float(sxq / sqq * double(amax))) : s;
        const double sn = double(sh) / double(amax);
        const double err = sxx - 2.0 * sn * sxq + sn * sn * sqq;
        if (sh != 0.0f && err < best_err) best_err = err, best = sh;
    };
    consider(best, false);
    for (float d : kDivisors) consider(mx / d, true);
    if (best == 0.0f) return 0.0f;
#if defined(__SSE2__)
    for (int i = 0; i < G; i += 4) {
        alignas(16) int32_t v[4];
        _mm_store_si128(reinterpret_cast<__m128i*>(v),
                        _mm_cvttps_epi32(round_q4(_mm_div_ps(_mm_loadu_ps(x + i), _mm_set1_ps(best)))));
        for (int u = 0; u < 4; ++u) q[i + u] = int8_t(v[u]);
    }
#else
    for (int i = 0; i < G; ++i) q[i] = int8_t(round_q4(x[i] / best));
#endif
    return best;
}

namespace {
constexpr GgmlType kGguf[] = {GgmlType::q4_0};
}

const FormatInfo formats::q4 = {
    .traits = {WeightType::q4, "q4", WeightMath::int8, false,
               double(sizeof(Q4Block)) / (kPanelRows * kQ8Group)},
    .k_align = kQ8Group,
    .panel_bytes = panel_size,
    .packed_bytes = matrix_size,
    .scratch_bytes = scratch_size,
    .unpack_row = read_row,
    .ref_row = detail::ref_row_symmetric<ref::quantize_weight_row_q4>,
    .vocab_q8 = true,
    .gguf = detail::GivenQuantsIngest<pack_q4_quants>::hook(kGguf, kGguf),
};

void pack_q4_quants(const int8_t* q, const uint16_t* scales, int n, int k, int n0, int n1, std::byte* dst) {
    const detail::GivenQuants given{"pack_q4_quants", WeightType::q4, -8, 7, sizeof(Q4Block), clear_block,
                                    detail::store_q4_group};
    detail::pack_given_quants(given, q, scales, n, k, n0, n1, dst);
}

namespace detail {

void store_q4_group(std::byte* block, int r, const int8_t* q, float scale) {
    auto& b = *reinterpret_cast<Q4Block*>(block);
    for (int j = 0; j < kQ8Group; ++j) set_block_q(b, r, j, q[j]);
    const uint16_t h = f32_to_f16(scale);  // exact: a half already
    std::memcpy(&b.scale[r], &h, 2);
}

}  // namespace detail

namespace ref {

void quantize_weight_row_q4(const float* x, int k, int8_t* q, float* scale) {
    quantize_symmetric_row(quantize_q4_group, x, k, q, scale);
}

}  // namespace ref

}  // namespace staticlm::kernels
