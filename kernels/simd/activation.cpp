// Gated activations, softcap, argmax and f16 row conversions for one target
// (compiled per target). exp/tanh are the vector layer's fp32 versions
// (vec::exp, vec::tanh: xsimd's); measured against double: silu/gelu within
// 1.2e-7·max(1, |y|), softcap (x·(1/cap), one extra rounding) within
// 2.4e-7·max(1, |y|); tests allow 1e-6. gelu-tanh uses 0.5·(1 + tanh(z)) =
// 1 / (1 + exp(-2z)), which avoids the cancellation of 1 + tanh for negative
// z; its k·g² + c rounds the product, then adds (no FMA). f16 conversions
// round to nearest even (vec::store_f16).
#include <algorithm>
#include <cmath>

#include "kernels/simd/simd.hpp"
#include "kernels/simd/vec.hpp"

namespace staticlm::kernels::STATICLM_NS {

namespace {
using vec::F;
constexpr size_t kLanes = size_t(vec::kLanes);

// out[i] = f(gate[i]) * up[i] where f is applied to vectors (the scalar tail
// goes through a padded vector too).
template <class Fn>
void gated(const float* gate, const float* up, size_t n, float* out, Fn f) {
    size_t i = 0;
    for (; i + kLanes <= n; i += kLanes)
        vec::store(out + i, vec::mul(f(vec::load(gate + i)), vec::load(up + i)));
    if (i < n) {
        alignas(64) float g[kLanes] = {};
        alignas(64) float u[kLanes] = {};
        const size_t r = n - i;
        for (size_t j = 0; j < r; ++j) g[j] = gate[i + j], u[j] = up[i + j];
        vec::store(g, vec::mul(f(vec::load(g)), vec::load(u)));
        for (size_t j = 0; j < r; ++j) out[i + j] = g[j];
    }
}

// y = op(x) kLanes elements at a time, op given their addresses; the tail
// goes through zero-padded copies, so every element sees the same formula.
template <class In, class Out, class Op>
void map_vectors(const In* x, size_t n, Out* y, Op op) {
    size_t i = 0;
    for (; i + kLanes <= n; i += kLanes) op(x + i, y + i);
    if (i < n) {
        alignas(64) In t[kLanes] = {};
        alignas(64) Out u[kLanes];
        std::copy(x + i, x + n, t);
        op(t, u);
        std::copy(u, u + (n - i), y + i);
    }
}
}  // namespace

void silu_mul(const float* gate, const float* up, size_t n, float* out) {
    // g / (1 + exp(-g)): exp overflows to inf for g < -88 and the quotient is -0.
    const F one = vec::set1(1.0f);
    gated(gate, up, n, out, [&](F g) { return vec::div(g, vec::add(one, vec::exp(vec::neg(g)))); });
}

void gelu_tanh_mul(const float* gate, const float* up, size_t n, float* out) {
    // 0.5·g·(1 + tanh(z)) with z = √(2/π)·(g + 0.044715·g³), written as g / (1 + exp(-2z)).
    const F k2 = vec::set1(float(2.0 * 0.7978845608028654));
    const F k2c = vec::set1(float(2.0 * 0.7978845608028654 * 0.044715));
    const F one = vec::set1(1.0f);
    gated(gate, up, n, out, [&](F g) {
        const F two_z = vec::mul(g, vec::add(vec::mul(k2c, vec::mul(g, g)), k2));
        return vec::div(g, vec::add(one, vec::exp(vec::neg(two_z))));
    });
}

void softcap(float* x, size_t n, float cap) {
    const F vcap = vec::set1(cap), vinv = vec::set1(1.0f / cap);
    map_vectors(x, n, x, [&](const float* a, float* b) {
        vec::store(b, vec::mul(vcap, vec::tanh(vec::mul(vec::load(a), vinv))));
    });
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
            F m0 = vec::load(xb), m1 = m0, m2 = m0, m3 = m0;
            for (; i + int(4 * kLanes) <= len; i += int(4 * kLanes)) {
                m0 = vec::max(m0, vec::load(xb + i));
                m1 = vec::max(m1, vec::load(xb + i + kLanes));
                m2 = vec::max(m2, vec::load(xb + i + 2 * kLanes));
                m3 = vec::max(m3, vec::load(xb + i + 3 * kLanes));
            }
            alignas(64) float lanes[kLanes];
            vec::store(lanes, vec::max(vec::max(m0, m1), vec::max(m2, m3)));
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

// f16 rows of the KV cache, through the layer's conversions.
void to_f16(const float* x, size_t n, uint16_t* y) {
    map_vectors(x, n, y, [](const float* a, uint16_t* b) { vec::store_f16(b, vec::load(a)); });
}

void from_f16(const uint16_t* x, size_t n, float* y) {
    map_vectors(x, n, y, [](const uint16_t* a, float* b) { vec::store(b, vec::load(a)); });
}

}  // namespace staticlm::kernels::STATICLM_NS
