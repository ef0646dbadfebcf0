// top_k (not dispatched) against the full-sort reference: value descending,
// ties by lower index, NaN last; k outside 0..n is an input error.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "kernels/kernels.hpp"
#include "kernels/ref.hpp"
#include "staticlm/error.hpp"

using namespace staticlm::kernels;

TEST_CASE("top_k of a hand-written row") {
    const float x[6] = {1.0f, 3.0f, 2.0f, 3.0f, -1.0f, 2.0f};
    int idx[4];
    float val[4];
    top_k(x, 6, 4, idx, val);
    CHECK(idx[0] == 1);
    CHECK(idx[1] == 3);
    CHECK(idx[2] == 2);
    CHECK(idx[3] == 5);
    CHECK(val[0] == 3.0f);
    CHECK(val[3] == 2.0f);
    top_k(x, 6, 0, idx, val);  // nothing to do, nothing written
    CHECK(idx[0] == 1);
}

TEST_CASE("top_k matches the reference with ties and NaNs") {
    std::mt19937 rng(1);
    for (int n : {1, 2, 3, 7, 16, 33, 100, 1000, 32000}) {
        for (int k : {1, 2, 5, 40, n}) {
            if (k > n) continue;
            for (int levels : {3, 1000000}) {
                INFO("n = ", n, " k = ", k, " levels = ", levels);
                std::uniform_int_distribution<int> d(0, levels);
                std::vector<float> x(static_cast<size_t>(n));
                for (float& v : x) v = float(d(rng)) / float(levels) - 0.5f;
                if (n > 10) x[3] = std::numeric_limits<float>::quiet_NaN();
                std::vector<int> idx(static_cast<size_t>(k)), ridx(static_cast<size_t>(k));
                std::vector<float> val(static_cast<size_t>(k)), rval(static_cast<size_t>(k));
                top_k(x.data(), n, k, idx.data(), val.data());
                ref::top_k(x.data(), n, k, ridx.data(), rval.data());
                CHECK(idx == ridx);
                int val_bad = 0;
                for (int i = 0; i < k; ++i)
                    val_bad += !(val[size_t(i)] == x[size_t(idx[size_t(i)])] ||
                                 std::isnan(val[size_t(i)]));
                CHECK(val_bad == 0);
            }
        }
    }
}

TEST_CASE("top_k rejects k outside 0..n") {
    const float x[3] = {1, 2, 3};
    int idx[4];
    float val[4];
    CHECK_THROWS_AS(top_k(x, 3, 4, idx, val), staticlm::Error);
    CHECK_THROWS_AS(top_k(x, 3, -1, idx, val), staticlm::Error);
}
