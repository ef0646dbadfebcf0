// Scalar reference attention: the specification of kernels/simd/attention.cpp.
// Two passes per (row, head): the maximum score, then exp-weights and the
// weighted sum of V. Scores, weights and sums are accumulated in double; K/V
// are read through the same slot mapping (position p in slot p % n_slots).
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/attention_internal.hpp"
#include "kernels/ref.hpp"

namespace staticlm::kernels::ref {

namespace {

// Element e of the cache row of (kv head g, position p), as float.
float kv_at(const AttentionArgs& a, const void* base, int g, int p, int e) {
    const size_t idx = (size_t(g) * size_t(a.n_slots) + size_t(p % a.n_slots)) *
                           size_t(a.head_dim) + size_t(e);
    if (a.kv_type == KvType::f16) return f16_to_f32(static_cast<const uint16_t*>(base)[idx]);
    return static_cast<const float*>(base)[idx];
}

}  // namespace

void attention(const AttentionArgs& a) {
    detail::check_attention_args(a);
    const int d = a.head_dim;
    const int group = a.t > 0 ? a.n_heads / a.n_kv_heads : 1;
    std::vector<double> acc(size_t(std::max(d, 0)));
    for (int i = 0; i < a.t; ++i) {
        const int p = a.pos0 + i;
        const int lo = a.window > 0 ? std::max(0, p - a.window + 1) : 0;
        for (int h = 0; h < a.n_heads; ++h) {
            const int g = h / group;
            const float* q = a.q + size_t(i) * a.ldq + size_t(h) * d;
            auto score = [&](int j) {
                double s = 0.0;
                for (int e = 0; e < d; ++e) s += double(q[e]) * double(kv_at(a, a.k, g, j, e));
                return s * double(a.scale);
            };
            double m = -std::numeric_limits<double>::infinity();
            for (int j = lo; j <= p; ++j) m = std::max(m, score(j));
            double sum = 0.0;
            std::fill(acc.begin(), acc.end(), 0.0);
            for (int j = lo; j <= p; ++j) {
                const double w = std::exp(score(j) - m);
                sum += w;
                for (int e = 0; e < d; ++e) acc[size_t(e)] += w * double(kv_at(a, a.v, g, j, e));
            }
            float* o = a.out + size_t(i) * a.ldo + size_t(h) * d;
            for (int e = 0; e < d; ++e) o[e] = float(acc[size_t(e)] / sum);
        }
    }
}

}  // namespace staticlm::kernels::ref
