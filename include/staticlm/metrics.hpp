// Reference metrics of RUNTIME.md, shared by `staticlm verify` and the tests:
// mean|diff|, max|diff|, PEIR = max|x - r| / (max(r) - min(r)), top-1 agreement.
#pragma once

#include <span>

namespace staticlm {

struct LogitDiff {
    double mean_abs = 0;
    double max_abs = 0;
    double peir = 0;  // a fraction (0.0001 = 0.01%)
    int argmax_x = -1;
    int argmax_r = -1;
    bool top1() const { return argmax_x == argmax_r; }
};

// x: engine logits, r: reference logits of the same position (same length >= 1).
LogitDiff compare_logits(std::span<const float> x, std::span<const float> r);

}  // namespace staticlm
