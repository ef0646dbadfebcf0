// Scalar references for the element-wise kernels (norm, residual, RoPE,
// gated activations, softcap, argmax, top-k): the specification the SIMD
// bodies in kernels/simd/{norm,rope,activation}.cpp are tested against.
// Sums and transcendental functions are evaluated in double; results round once to float.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "kernels/ref.hpp"

namespace staticlm::kernels::ref {

void rmsnorm(const float* x, size_t ldx, int m, int n, const float* w, float eps, float* y,
             size_t ldy) {
    for (int r = 0; r < m; ++r) {
        const float* xr = x + size_t(r) * ldx;
        float* yr = y + size_t(r) * ldy;
        double ss = 0.0;
        for (int i = 0; i < n; ++i) ss += double(xr[i]) * double(xr[i]);
        const double inv = n > 0 ? 1.0 / std::sqrt(ss / n + double(eps)) : 0.0;
        for (int i = 0; i < n; ++i)
            yr[i] = float(double(xr[i]) * inv * (w ? double(w[i]) : 1.0));
    }
}

void add(float* y, const float* x, size_t n) {
    for (size_t i = 0; i < n; ++i) y[i] += x[i];
}

void scale(float* y, size_t n, float s) {
    for (size_t i = 0; i < n; ++i) y[i] *= s;
}

// The angle is the fp32 product float(pos) * inv_freq[j] (what transformers
// computes); only cos/sin and the rotation are done in double. Zero
// frequencies leave their two dims untouched, bit for bit.
void rope(float* x, size_t ldx, int t, int n_heads, int head_dim, int pos0,
          const float* inv_freq) {
    const int half = head_dim / 2;
    for (int i = 0; i < t; ++i) {
        const float pos = float(pos0 + i);
        for (int h = 0; h < n_heads; ++h) {
            float* xh = x + size_t(i) * ldx + size_t(h) * head_dim;
            for (int j = 0; j < half; ++j) {
                const float angle = pos * inv_freq[j];
                if (angle == 0.0f) continue;
                const double c = std::cos(double(angle)), s = std::sin(double(angle));
                const double a = xh[j], b = xh[j + half];
                xh[j] = float(a * c - b * s);
                xh[j + half] = float(b * c + a * s);
            }
        }
    }
}

void silu_mul(const float* gate, const float* up, size_t n, float* out) {
    for (size_t i = 0; i < n; ++i) {
        const double g = gate[i];
        out[i] = float(g / (1.0 + std::exp(-g)) * double(up[i]));
    }
}

void gelu_tanh_mul(const float* gate, const float* up, size_t n, float* out) {
    const double k = std::sqrt(2.0 / M_PI);
    for (size_t i = 0; i < n; ++i) {
        const double g = gate[i];
        out[i] = float(0.5 * g * (1.0 + std::tanh(k * (g + 0.044715 * g * g * g))) * double(up[i]));
    }
}

void softcap(float* x, size_t n, float cap) {
    for (size_t i = 0; i < n; ++i) x[i] = float(double(cap) * std::tanh(double(x[i]) / cap));
}

int argmax(const float* x, int n) {
    int best = 0;
    for (int i = 1; i < n; ++i)
        if (x[i] > x[best]) best = i;
    return best;
}

// Full stable sort by value (NaN last): independent of the heap in topk.cpp.
void top_k(const float* x, int n, int k, int* idx, float* val) {
    std::vector<int> order(size_t(std::max(n, 0)));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [x](int a, int b) {
        if (std::isnan(x[b])) return !std::isnan(x[a]);
        return x[a] > x[b];
    });
    for (int i = 0; i < k; ++i) {
        idx[i] = order[size_t(i)];
        val[i] = x[order[size_t(i)]];
    }
}

}  // namespace staticlm::kernels::ref
