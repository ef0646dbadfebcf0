// The reference metrics on hand-computed cases.
#include <doctest/doctest.h>

#include <vector>

#include "staticlm/metrics.hpp"

TEST_CASE("compare_logits: mean/max |diff|, PEIR over the reference's range, top-1") {
    const std::vector<float> r = {1.0f, 3.0f, -1.0f, 0.0f};  // range 4, argmax 1
    const std::vector<float> x = {1.5f, 2.0f, -1.0f, 0.25f};  // diffs .5, 1, 0, .25 ; argmax 1
    const staticlm::LogitDiff d = staticlm::compare_logits(x, r);
    CHECK(d.mean_abs == doctest::Approx(1.75 / 4));
    CHECK(d.max_abs == doctest::Approx(1.0));
    CHECK(d.peir == doctest::Approx(0.25));
    CHECK(d.top1());
    const std::vector<float> y = {4.0f, 3.0f, -1.0f, 0.0f};  // argmax 0
    CHECK_FALSE(staticlm::compare_logits(y, r).top1());
    // a flat reference: the interval is taken as 1
    const std::vector<float> flat = {2.0f, 2.0f};
    const std::vector<float> z = {2.5f, 2.0f};
    CHECK(staticlm::compare_logits(z, flat).peir == doctest::Approx(0.5));
}
