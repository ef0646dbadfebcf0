// RMSNorm, residual add and scaling for one target (compiled per target).
// Contract: the sum of squares of a row is accumulated in fp32 (4 vector
// accumulators, each step a product rounded and then added: no FMA, then a
// horizontal add); 1/sqrt(mean + eps) is taken in double and rounded to
// float; y = (x * inv) * w, two float roundings per element.
#include <cmath>

#include "kernels/simd/simd.hpp"
#include "kernels/simd/vec.hpp"

namespace staticlm::kernels::STATICLM_NS {

namespace {
using vec::F;
constexpr size_t kLanes = size_t(vec::kLanes);

// acc + v·v, rounded twice (the sum of squares has always been unfused, on
// every target; keeping it so keeps every target's norms bit-stable).
F add_square(F v, F acc) { return vec::add(vec::mul(v, v), acc); }

float sum_squares(const float* x, size_t n) {
    // Four independent accumulators hide the add latency (4 cycles) and spread
    // the rounding error over 4 × lanes partial sums.
    F a0 = vec::zero(), a1 = a0, a2 = a0, a3 = a0;
    size_t i = 0;
    for (; i + 4 * kLanes <= n; i += 4 * kLanes) {
        a0 = add_square(vec::load(x + i), a0);
        a1 = add_square(vec::load(x + i + kLanes), a1);
        a2 = add_square(vec::load(x + i + 2 * kLanes), a2);
        a3 = add_square(vec::load(x + i + 3 * kLanes), a3);
    }
    for (; i + kLanes <= n; i += kLanes) a0 = add_square(vec::load(x + i), a0);
    float ss = vec::hsum(vec::add(vec::add(a0, a1), vec::add(a2, a3)));
    for (; i < n; ++i) ss += x[i] * x[i];
    return ss;
}
}  // namespace

void rmsnorm(const float* x, size_t ldx, int m, int n, const float* w, float eps, float* y,
             size_t ldy) {
    if (n <= 0) return;
    const size_t nn = size_t(n);
    for (int r = 0; r < m; ++r) {
        const float* xr = x + size_t(r) * ldx;
        float* yr = y + size_t(r) * ldy;
        const float inv = float(1.0 / std::sqrt(double(sum_squares(xr, nn)) / n + double(eps)));
        const F vinv = vec::set1(inv);
        size_t i = 0;
        if (w) {
            for (; i + kLanes <= nn; i += kLanes)
                vec::store(yr + i, vec::mul(vec::mul(vec::load(xr + i), vinv), vec::load(w + i)));
            for (; i < nn; ++i) yr[i] = xr[i] * inv * w[i];
        } else {
            for (; i + kLanes <= nn; i += kLanes) vec::store(yr + i, vec::mul(vec::load(xr + i), vinv));
            for (; i < nn; ++i) yr[i] = xr[i] * inv;
        }
    }
}

void add(float* y, const float* x, size_t n) {
    size_t i = 0;
    for (; i + kLanes <= n; i += kLanes) vec::store(y + i, vec::add(vec::load(y + i), vec::load(x + i)));
    for (; i < n; ++i) y[i] += x[i];
}

void scale(float* y, size_t n, float s) {
    const F vs = vec::set1(s);
    size_t i = 0;
    for (; i + kLanes <= n; i += kLanes) vec::store(y + i, vec::mul(vec::load(y + i), vs));
    for (; i < n; ++i) y[i] *= s;
}

}  // namespace staticlm::kernels::STATICLM_NS
