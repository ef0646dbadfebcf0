// Scalar reference for the q8 format and q8 matmul: the specification that the
// packing code and every SIMD target are tested against. Plain row-major data.
// Also the pieces several integer formats' references share (their row
// quantizers over a group quantizer, the affine matmul); each format's own
// reference is in its folder, kernels/formats/<name>/format.cpp.
#include <algorithm>
#include <cmath>
#include <vector>

#include "formats/q4k/layout.hpp"
#include "kernels/ref.hpp"

namespace staticlm::kernels::ref {

namespace {

void quantize_row(const float* x, int k, int8_t* q, float* scale, bool half_scale) {
    const int k_pad = padded_k(WeightType::q8, k);
    for (int g0 = 0; g0 < k_pad; g0 += kQ8Group) {
        const int len = std::max(0, std::min(kQ8Group, k - g0));
        float amax = 0.0f;
        for (int i = 0; i < len; ++i) amax = std::max(amax, std::fabs(x[g0 + i]));
        float s = amax / 127.0f;
        if (half_scale) s = f16_to_f32(f32_to_f16(std::min(s, 65504.0f)));
        scale[g0 / kQ8Group] = s;
        for (int i = 0; i < kQ8Group; ++i) {
            int v = 0;
            if (i < len && s != 0.0f) {
                // std::round rounds half away from zero.
                const float r = std::round(x[g0 + i] / s);
                v = int(std::max(-127.0f, std::min(127.0f, r)));
            }
            q[g0 + i] = int8_t(v);
        }
    }
}

}  // namespace

void quantize_row_q8(const float* x, int k, int8_t* q, float* scale) {
    quantize_row(x, k, q, scale, false);
}

void quantize_weight_row_q8(const float* x, int k, int8_t* q, float* scale) {
    quantize_row(x, k, q, scale, true);
}

void quantize_row_act(const float* x, int k, int act_bits, int32_t* q, float* scale) {
    const int k_pad = padded_k(WeightType::q8, k);
    std::vector<int8_t> q8(static_cast<size_t>(k_pad));
    quantize_row_q8(x, k, q8.data(), scale);
    for (int i = 0; i < k_pad; ++i) q[i] = q8[size_t(i)];
    if (act_bits != 16) return;
    for (int g0 = 0; g0 < k_pad; g0 += kQ8Group) {
        const float s = scale[g0 / kQ8Group];
        scale[g0 / kQ8Group] = s / 256.0f;
        for (int i = g0; i < g0 + kQ8Group; ++i) {
            int lo = 0;
            if (i < k && s != 0.0f) {
                const float t = x[i] / s;
                const float r = std::max(-127.0f, std::min(127.0f, std::round(t)));
                lo = int(std::max(-127.0f, std::min(127.0f, std::round((t - r) * 256.0f))));
            }
            q[i] = 256 * q[i] + lo;
        }
    }
}

void quantize_symmetric_row(float (*quantize)(const float*, int8_t*), const float* x, int k, int8_t* q,
                            float* scale) {
    const int k_pad = (k + kQ8Group - 1) / kQ8Group * kQ8Group;
    for (int g0 = 0; g0 < k_pad; g0 += kQ8Group) {
        float buf[kQ8Group] = {};
        for (int i = 0; i < kQ8Group && g0 + i < k; ++i) buf[i] = x[g0 + i];
        scale[g0 / kQ8Group] = quantize(buf, q + g0);
    }
}

void quantize_affine_k_row(void (*quantize)(const float*, uint8_t*, uint8_t*, uint8_t*, uint16_t*, uint16_t*),
                           WeightType type, const float* x, int k, uint8_t* wn, float* ws, float* wm) {
    const int k_pad = padded_k(type, k);
    for (int s0 = 0; s0 < k_pad; s0 += kQ4kSuper) {
        float buf[kQ4kSuper] = {};
        for (int i = 0; i < kQ4kSuper && s0 + i < k; ++i) buf[i] = x[s0 + i];
        uint8_t sc[kQ4kGroups], mn[kQ4kGroups];
        uint16_t d, dmin;
        quantize(buf, wn + s0, sc, mn, &d, &dmin);
        for (int g = 0; g < kQ4kGroups; ++g) {
            ws[s0 / kQ8Group + g] = f16_to_f32(d) * float(sc[g]);
            wm[s0 / kQ8Group + g] = f16_to_f32(dmin) * float(mn[g]);
        }
    }
}

void quantize_affine_g_row(void (*quantize)(const float*, uint8_t*, uint16_t*, uint16_t*), const float* x, int k,
                           uint8_t* wn, float* ws, float* wm) {
    const int k_pad = padded_k(WeightType::q8, k);
    for (int g0 = 0; g0 < k_pad; g0 += kQ8Group) {
        float buf[kQ8Group] = {};
        for (int i = 0; i < kQ8Group && g0 + i < k; ++i) buf[i] = x[g0 + i];
        uint16_t d, m;
        quantize(buf, wn + g0, &d, &m);
        ws[g0 / kQ8Group] = f16_to_f32(d);
        wm[g0 / kQ8Group] = -f16_to_f32(m);
    }
}

void matmul_q4k(const uint8_t* wn, const float* ws, const float* wm, int n, int k, const float* x, size_t ldx,
                int m, float* y, size_t ldy, int act_bits) {
    matmul_affine(wn, ws, wm, n, k, padded_k(WeightType::q4k, k), x, ldx, m, y, ldy, act_bits);
}

void matmul_affine(const uint8_t* wn, const float* ws, const float* wm, int n, int k, int k_pad, const float* x,
                   size_t ldx, int m, float* y, size_t ldy, int act_bits) {
    const int k_act = padded_k(WeightType::q8, k);
    const int n_groups = k_act / kQ8Group, w_groups = k_pad / kQ8Group;
    std::vector<int32_t> xq(static_cast<size_t>(k_act));
    std::vector<float> xs(static_cast<size_t>(n_groups));
    for (int r = 0; r < m; ++r) {
        quantize_row_act(x + size_t(r) * ldx, k, act_bits, xq.data(), xs.data());
        for (int c = 0; c < n; ++c) {
            const uint8_t* wrow = wn + size_t(c) * size_t(k_pad);
            float acc = 0.0f;
            for (int g = 0; g < n_groups; ++g) {
                int32_t dot = 0, sum = 0;
                for (int i = g * kQ8Group; i < (g + 1) * kQ8Group; ++i) {
                    dot += int32_t(wrow[i]) * int32_t(xq[size_t(i)]);
                    sum += int32_t(xq[size_t(i)]);
                }
                const float xsg = xs[size_t(g)];
                const size_t wi = size_t(c) * size_t(w_groups) + size_t(g);
                const float t1 = (xsg * ws[wi]) * float(dot);
                acc += t1;
                const float t2 = wm[wi] * -(xsg * float(sum));
                acc += t2;
            }
            y[size_t(r) * ldy + size_t(c)] = acc;
        }
    }
}

void dequantize_row_q8(const int8_t* q, const float* scale, int k, float* out) {
    for (int i = 0; i < k; ++i) out[i] = float(q[i]) * scale[i / kQ8Group];
}

void matmul_q8(const int8_t* wq, const float* wscale, int n, int k, const float* x, size_t ldx,
               int m, float* y, size_t ldy, int act_bits) {
    const int k_pad = padded_k(WeightType::q8, k);
    const int n_groups = k_pad / kQ8Group;
    std::vector<int32_t> xq(static_cast<size_t>(k_pad));
    std::vector<float> xs(static_cast<size_t>(n_groups));
    for (int r = 0; r < m; ++r) {
        quantize_row_act(x + size_t(r) * ldx, k, act_bits, xq.data(), xs.data());
        for (int c = 0; c < n; ++c) {
            const int8_t* wrow = wq + size_t(c) * size_t(k_pad);
            const float* wsrow = wscale + size_t(c) * size_t(n_groups);
            float acc = 0.0f;
            for (int g = 0; g < n_groups; ++g) {
                int32_t dot = 0;
                for (int i = g * kQ8Group; i < (g + 1) * kQ8Group; ++i)
                    dot += int32_t(wrow[i]) * int32_t(xq[size_t(i)]);
                const float s = xs[size_t(g)] * wsrow[g];
                const float term = s * float(dot);
                acc += term;
            }
            y[size_t(r) * ldy + size_t(c)] = acc;
        }
    }
}

}  // namespace staticlm::kernels::ref
