// Scalar reference attention: the specification of kernels/simd/attention.cpp.
// Two passes per (row, head): the maximum score, then exp-weights and the
// weighted sum of V. Scores, weights and sums are accumulated in double; K/V
// are read through the same slot mapping (position p in slot p % n_slots); a
// q8 row is q · scale per block, written independently of the SIMD loads.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/attention_internal.hpp"
#include "kernels/ref.hpp"

namespace staticlm::kernels::ref {

namespace {

// The cache row of (kv head g, position p) as doubles.
void kv_row(const AttentionArgs& a, const void* base, int g, int p, double* dst) {
    const size_t slot = size_t(g) * size_t(a.n_slots) + size_t(p % a.n_slots);
    const auto* row = static_cast<const std::byte*>(base) + slot * kv_row_bytes(a.kv_type, a.head_dim);
    for (int e = 0; e < a.head_dim; ++e) {
        if (a.kv_type == KvType::q8) {
            float scale;
            std::memcpy(&scale, row + a.head_dim + size_t(e / kKvQ8Block) * sizeof(float), sizeof(float));
            dst[e] = double(reinterpret_cast<const int8_t*>(row)[e]) * double(scale);
        } else if (a.kv_type == KvType::f16) {
            uint16_t h;
            std::memcpy(&h, row + size_t(e) * 2, 2);
            dst[e] = double(f16_to_f32(h));
        } else {
            float f;
            std::memcpy(&f, row + size_t(e) * 4, 4);
            dst[e] = double(f);
        }
    }
}

}  // namespace

void attention(const AttentionArgs& a) {
    detail::check_attention_args(a);
    if (a.t == 0) return;
    const int d = a.head_dim;
    const int group = a.n_heads / a.n_kv_heads;
    std::vector<double> acc(static_cast<size_t>(d)), row(static_cast<size_t>(d)), scores;
    for (int i = 0; i < a.t; ++i) {
        const int p = a.pos0 + i;
        const int lo = a.window > 0 ? std::max(0, p - a.window + 1) : 0;
        for (int h = 0; h < a.n_heads; ++h) {
            const int g = h / group;
            const float* q = a.q + size_t(i) * a.ldq + size_t(h) * d;
            // Pass 1: scores and their maximum.
            scores.clear();
            double m = -std::numeric_limits<double>::infinity();
            for (int j = lo; j <= p; ++j) {
                kv_row(a, a.k, g, j, row.data());
                double s = 0.0;
                for (int e = 0; e < d; ++e) s += double(q[e]) * row[size_t(e)];
                scores.push_back(s * double(a.scale));
                m = std::max(m, scores.back());
            }
            // Pass 2: weights exp(s - m), their sum and the weighted sum of V.
            double sum = 0.0;
            std::fill(acc.begin(), acc.end(), 0.0);
            for (int j = lo; j <= p; ++j) {
                const double w = std::exp(scores[size_t(j - lo)] - m);
                sum += w;
                kv_row(a, a.v, g, j, row.data());
                for (int e = 0; e < d; ++e) acc[size_t(e)] += w * row[size_t(e)];
            }
            float* o = a.out + size_t(i) * a.ldo + size_t(h) * d;
            for (int e = 0; e < d; ++e) o[e] = float(acc[size_t(e)] / sum);
        }
    }
}

}  // namespace staticlm::kernels::ref
