// RMSNorm, residual add and scaling for one target (compiled per target).
// Contract: the sum of squares of a row is accumulated in fp32 (4 vector
// accumulators, then a horizontal add); 1/sqrt(mean + eps) is taken in double
// and rounded to float; y = (x * inv) * w, two float roundings per element.
#include <cmath>

#include "kernels/simd/simd.hpp"

namespace staticlm::kernels::STATICLM_NS {

namespace {
using B = xsimd::batch<float, Arch>;
constexpr size_t kLanes = B::size;

float sum_squares(const float* x, size_t n) {
    // Four independent accumulators hide the FMA latency (4 cycles) and spread
    // the rounding error over 4 × lanes partial sums.
    B a0(0.0f), a1(0.0f), a2(0.0f), a3(0.0f);
    size_t i = 0;
    for (; i + 4 * kLanes <= n; i += 4 * kLanes) {
        const B v0 = B::load_unaligned(x + i), v1 = B::load_unaligned(x + i + kLanes);
        const B v2 = B::load_unaligned(x + i + 2 * kLanes);
        const B v3 = B::load_unaligned(x + i + 3 * kLanes);
        a0 = xsimd::fma(v0, v0, a0);
        a1 = xsimd::fma(v1, v1, a1);
        a2 = xsimd::fma(v2, v2, a2);
        a3 = xsimd::fma(v3, v3, a3);
    }
    for (; i + kLanes <= n; i += kLanes) {
        const B v = B::load_unaligned(x + i);
        a0 = xsimd::fma(v, v, a0);
    }
    float ss = xsimd::hadd((a0 + a1) + (a2 + a3));
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
        const B vinv(inv);
        size_t i = 0;
        if (w) {
            for (; i + kLanes <= nn; i += kLanes)
                (B::load_unaligned(xr + i) * vinv * B::load_unaligned(w + i)).store_unaligned(yr + i);
            for (; i < nn; ++i) yr[i] = xr[i] * inv * w[i];
        } else {
            for (; i + kLanes <= nn; i += kLanes)
                (B::load_unaligned(xr + i) * vinv).store_unaligned(yr + i);
            for (; i < nn; ++i) yr[i] = xr[i] * inv;
        }
    }
}

void add(float* y, const float* x, size_t n) {
    size_t i = 0;
    for (; i + kLanes <= n; i += kLanes)
        (B::load_unaligned(y + i) + B::load_unaligned(x + i)).store_unaligned(y + i);
    for (; i < n; ++i) y[i] += x[i];
}

void scale(float* y, size_t n, float s) {
    const B vs(s);
    size_t i = 0;
    for (; i + kLanes <= n; i += kLanes) (B::load_unaligned(y + i) * vs).store_unaligned(y + i);
    for (; i < n; ++i) y[i] *= s;
}

}  // namespace staticlm::kernels::STATICLM_NS
