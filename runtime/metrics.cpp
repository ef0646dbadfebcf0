// compare_logits: the reference metrics of RUNTIME.md.
#include "staticlm/metrics.hpp"

#include <algorithm>
#include <cmath>

namespace staticlm {

LogitDiff compare_logits(std::span<const float> x, std::span<const float> r) {
    LogitDiff d;
    const size_t n = std::min(x.size(), r.size());
    if (n == 0) return d;
    double sum = 0;
    float rmin = r[0], rmax = r[0];
    d.argmax_x = 0;
    d.argmax_r = 0;
    for (size_t i = 0; i < n; ++i) {
        const double diff = std::fabs(double(x[i]) - double(r[i]));
        sum += diff;
        d.max_abs = std::max(d.max_abs, std::isnan(diff) ? INFINITY : diff);
        rmin = std::min(rmin, r[i]);
        rmax = std::max(rmax, r[i]);
        if (x[i] > x[size_t(d.argmax_x)]) d.argmax_x = int(i);
        if (r[i] > r[size_t(d.argmax_r)]) d.argmax_r = int(i);
    }
    d.mean_abs = sum / double(n);
    const double range = double(rmax) - double(rmin);
    d.peir = d.max_abs / (range > 0 ? range : 1.0);
    return d;
}

}  // namespace staticlm
