// Gated activations, softcap, argmax and f16 row conversions for one target
// (compiled per target). exp/tanh are xsimd's fp32 vector versions; measured
// against double: silu/gelu within 1.2e-7·max(1, |y|), softcap (x·(1/cap), one
// extra rounding) within 2.4e-7·max(1, |y|); tests allow 1e-6. gelu-tanh uses
// 0.5·(1 + tanh(z)) = 1 / (1 + exp(-2z)), which avoids the cancellation of
// 1 + tanh for negative z. f16 conversions round to nearest even (vcvtps2ph).
// GCC 12's AVX-512 headers write `__m512 __Y = __Y;` for "any value", and
// -Wmaybe-uninitialized flags it wherever xsimd's exp/sincos or the
// conversions inline; it is a false positive, silenced for this file only.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <algorithm>
#include <cmath>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "kernels/simd/simd.hpp"

namespace staticlm::kernels::STATICLM_NS {

namespace {
using B = xsimd::batch<float, Arch>;
constexpr size_t kLanes = B::size;

// out[i] = f(gate[i]) * up[i] where f is applied to vectors (the scalar tail
// goes through a padded vector too, so every element sees the same formula).
template <class F>
void gated(const float* gate, const float* up, size_t n, float* out, F f) {
    size_t i = 0;
    for (; i + kLanes <= n; i += kLanes)
        (f(B::load_unaligned(gate + i)) * B::load_unaligned(up + i)).store_unaligned(out + i);
    if (i < n) {
        alignas(64) float g[kLanes] = {};
        alignas(64) float u[kLanes] = {};
        const size_t r = n - i;
        for (size_t j = 0; j < r; ++j) g[j] = gate[i + j], u[j] = up[i + j];
        (f(B::load_aligned(g)) * B::load_aligned(u)).store_aligned(g);
        for (size_t j = 0; j < r; ++j) out[i + j] = g[j];
    }
}
}  // namespace

void silu_mul(const float* gate, const float* up, size_t n, float* out) {
    // g / (1 + exp(-g)): exp overflows to inf for g < -88 and the quotient is -0.
    gated(gate, up, n, out, [](B g) { return g / (B(1.0f) + xsimd::exp(-g)); });
}

void gelu_tanh_mul(const float* gate, const float* up, size_t n, float* out) {
    // 0.5·g·(1 + tanh(z)) with z = √(2/π)·(g + 0.044715·g³), written as g / (1 + exp(-2z)).
    const B k2(float(2.0 * 0.7978845608028654));
    const B k2c(float(2.0 * 0.7978845608028654 * 0.044715));
    gated(gate, up, n, out, [&](B g) {
        const B two_z = g * xsimd::fma(k2c, g * g, k2);
        return g / (B(1.0f) + xsimd::exp(-two_z));
    });
}

void softcap(float* x, size_t n, float cap) {
    const B vcap(cap), vinv(1.0f / cap);
    size_t i = 0;
    for (; i + kLanes <= n; i += kLanes)
        (vcap * xsimd::tanh(B::load_unaligned(x + i) * vinv)).store_unaligned(x + i);
    if (i < n) {
        alignas(64) float t[kLanes] = {};
        const size_t r = n - i;
        for (size_t j = 0; j < r; ++j) t[j] = x[i + j];
        (vcap * xsimd::tanh(B::load_aligned(t) * vinv)).store_aligned(t);
        for (size_t j = 0; j < r; ++j) x[i + j] = t[j];
    }
}

// One pass of vector maxima over blocks of kBlock values remembers the first
// block holding the largest value; only that block is scanned again for the
// first index equal to it. (NaN inputs give some index in range.)
int argmax(const float* x, int n) {
    constexpr int kBlock = 1024;
    if (n <= 1) return 0;
    float best = x[0];
    int best_block = 0;
    for (int b0 = 0; b0 < n; b0 += kBlock) {
        const int len = std::min(kBlock, n - b0);
        const float* xb = x + b0;
        int i = 0;
        float m = xb[0];
        if (len >= int(4 * kLanes)) {
            B m0 = B::load_unaligned(xb), m1 = m0, m2 = m0, m3 = m0;
            for (; i + int(4 * kLanes) <= len; i += int(4 * kLanes)) {
                m0 = xsimd::max(m0, B::load_unaligned(xb + i));
                m1 = xsimd::max(m1, B::load_unaligned(xb + i + kLanes));
                m2 = xsimd::max(m2, B::load_unaligned(xb + i + 2 * kLanes));
                m3 = xsimd::max(m3, B::load_unaligned(xb + i + 3 * kLanes));
            }
            alignas(64) float lanes[kLanes];
            xsimd::max(xsimd::max(m0, m1), xsimd::max(m2, m3)).store_aligned(lanes);
            for (size_t l = 0; l < kLanes; ++l) m = std::max(m, lanes[l]);
        }
        for (; i < len; ++i) m = std::max(m, xb[i]);
        if (m > best) {
            best = m;
            best_block = b0;
        }
    }
    const int end = std::min(n, best_block + kBlock);
    for (int i = best_block; i < end; ++i)
        if (x[i] == best) return i;
    return best_block;
}

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)

void to_f16(const float* x, size_t n, uint16_t* y) {
    constexpr int kRne = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i),
                            _mm512_cvtps_ph(_mm512_loadu_ps(x + i), kRne));
    if (i < n) {
        const __mmask16 m = __mmask16((1u << (n - i)) - 1);
        _mm256_mask_storeu_epi16(y + i, m, _mm512_cvtps_ph(_mm512_maskz_loadu_ps(m, x + i), kRne));
    }
}

void from_f16(const uint16_t* x, size_t n, float* y) {
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(y + i,
                         _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i))));
    if (i < n) {
        const __mmask16 m = __mmask16((1u << (n - i)) - 1);
        _mm512_mask_storeu_ps(y + i, m, _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, x + i)));
    }
}

#elif defined(__F16C__)

void to_f16(const float* x, size_t n, uint16_t* y) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
    if (i < n) {  // the tail goes through the same instruction via a padded copy
        alignas(32) float t[8] = {};
        alignas(16) uint16_t h[8];
        for (size_t j = 0; j < n - i; ++j) t[j] = x[i + j];
        _mm_store_si128(reinterpret_cast<__m128i*>(h),
                        _mm256_cvtps_ph(_mm256_load_ps(t), _MM_FROUND_TO_NEAREST_INT));
        for (size_t j = 0; j < n - i; ++j) y[i + j] = h[j];
    }
}

void from_f16(const uint16_t* x, size_t n, float* y) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i,
                         _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i))));
    if (i < n) {
        alignas(16) uint16_t h[8] = {};
        alignas(32) float t[8];
        for (size_t j = 0; j < n - i; ++j) h[j] = x[i + j];
        _mm256_store_ps(t, _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(h))));
        for (size_t j = 0; j < n - i; ++j) y[i + j] = t[j];
    }
}

#else

void to_f16(const float* x, size_t n, uint16_t* y) {
    for (size_t i = 0; i < n; ++i) y[i] = f32_to_f16(x[i]);
}

void from_f16(const uint16_t* x, size_t n, float* y) {
    for (size_t i = 0; i < n; ++i) y[i] = f16_to_f32(x[i]);
}

#endif

}  // namespace staticlm::kernels::STATICLM_NS
