// top_k of a logits row for sampling (not dispatched): a heap of the k best
// seen so far, kept in the caller's idx buffer, so nothing is allocated.
// Order: value descending, ties by lower index, NaN below every number.
#include <algorithm>
#include <cmath>
#include <string>

#include "kernels/kernels.hpp"
#include "staticlm/error.hpp"

namespace staticlm::kernels {

void top_k(const float* x, int n, int k, int* idx, float* val) {
    if (k < 0 || k > n)
        throw Error(ErrorKind::input, "top_k: k = " + std::to_string(k) + " outside 0.." +
                                          std::to_string(n) + " (the row length)");
    if (k == 0) return;
    // ranks_before(a, b): a comes before b in the output. As the heap's "less",
    // it puts the worst kept element at idx[0], the one a new candidate must beat.
    const auto ranks_before = [x](int a, int b) {
        const float va = x[a], vb = x[b];
        const bool na = std::isnan(va), nb = std::isnan(vb);
        if (na || nb) return na != nb ? nb : a < b;
        return va != vb ? va > vb : a < b;
    };
    for (int i = 0; i < k; ++i) idx[i] = i;
    std::make_heap(idx, idx + k, ranks_before);
    // Later indices lose ties, so only a strictly larger value (or a number
    // against a NaN at the top) enters; most of a vocabulary stops at the
    // first comparison with the cached threshold.
    float top = x[idx[0]];
    bool top_nan = std::isnan(top);
    for (int i = k; i < n; ++i) {
        if (!(x[i] > top) && !(top_nan && !std::isnan(x[i]))) continue;
        std::pop_heap(idx, idx + k, ranks_before);
        idx[k - 1] = i;
        std::push_heap(idx, idx + k, ranks_before);
        top = x[idx[0]];
        top_nan = std::isnan(top);
    }
    std::sort_heap(idx, idx + k, ranks_before);
    for (int i = 0; i < k; ++i) val[i] = x[idx[i]];
}

}  // namespace staticlm::kernels
