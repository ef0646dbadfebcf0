// RMSNorm, add and scale on every runnable target against the scalar
// references in kernels/ref_elementwise.cpp, plus a hand-computed case.
// Tolerance: rmsnorm relative 1e-6 per element (fp32 sum of squares vs double).
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/kernels.hpp"
#include "kernels/ref.hpp"
#include "tests/kernels/targets.hpp"

using namespace staticlm::kernels;

namespace {

constexpr double kRmsRelTol = 1e-6;

// Sizes 0 .. 3 × 16 lanes (AVX-512) and beyond, with odd tails.
std::vector<int> test_sizes() {
    std::vector<int> s;
    for (int n = 0; n <= 49; ++n) s.push_back(n);
    for (int n : {63, 64, 65, 127, 255, 256, 257, 1000, 2048, 4099}) s.push_back(n);
    return s;
}

std::vector<float> random_floats(size_t n, float lo, float hi, unsigned seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> d(lo, hi);
    std::vector<float> v(n);
    for (float& x : v) x = d(rng);
    return v;
}

bool close_rel(float got, float want, double rel) {
    return std::fabs(double(got) - double(want)) <= rel * std::fabs(double(want)) + 1e-30;
}

}  // namespace

TEST_CASE("rmsnorm of [3, 4] matches the hand-computed values") {
    // mean(x²) = 12.5, so y = x / sqrt(12.5).
    const float x[2] = {3.0f, 4.0f};
    const float w[2] = {2.0f, 0.5f};
    for_each_target([&](const KernelTable& kt) {
        float y[2];
        kt.rmsnorm(x, 2, 1, 2, nullptr, 0.0f, y, 2);
        CHECK(y[0] == doctest::Approx(0.848528137423857).epsilon(1e-6));
        CHECK(y[1] == doctest::Approx(1.131370849898476).epsilon(1e-6));
        kt.rmsnorm(x, 2, 1, 2, w, 0.0f, y, 2);
        CHECK(y[0] == doctest::Approx(2 * 0.848528137423857).epsilon(1e-6));
        CHECK(y[1] == doctest::Approx(0.5 * 1.131370849898476).epsilon(1e-6));
        // eps enters inside the square root: [3,4] with eps 87.5 → sqrt(100) = 10.
        kt.rmsnorm(x, 2, 1, 2, nullptr, 87.5f, y, 2);
        CHECK(y[0] == doctest::Approx(0.3).epsilon(1e-6));
        CHECK(y[1] == doctest::Approx(0.4).epsilon(1e-6));
    });
}

TEST_CASE("rmsnorm matches the reference on every target, size, stride and alignment") {
    for_each_target([&](const KernelTable& kt) {
        for (int n : test_sizes()) {
            for (bool weighted : {false, true}) {
                INFO("n = ", n, " weighted = ", weighted);
                const int m = 3;
                const size_t ldx = size_t(n) + 5, ldy = size_t(n) + 3;
                // +1: every row starts one float past a 64-byte boundary.
                std::vector<float> xbuf = random_floats(m * ldx + 1, -2.0f, 2.0f, 11 + n);
                std::vector<float> wbuf = random_floats(size_t(n) + 1, 0.5f, 1.5f, 7);
                const float* x = xbuf.data() + 1;
                const float* w = weighted ? wbuf.data() + 1 : nullptr;
                std::vector<float> want(m * ldy, -7.0f), got(m * ldy + 1, -7.0f);
                ref::rmsnorm(x, ldx, m, n, w, 1e-6f, want.data(), ldy);
                kt.rmsnorm(x, ldx, m, n, w, 1e-6f, got.data() + 1, ldy);
                int bad = 0;
                for (size_t i = 0; i < want.size(); ++i)
                    if (!close_rel(got[i + 1], want[i], kRmsRelTol)) ++bad;  // padding stays -7
                CHECK(bad == 0);
            }
        }
    });
}

TEST_CASE("rmsnorm works in place and on long rows with a large mean") {
    for_each_target([&](const KernelTable& kt) {
        for (int n : {256, 2048, 8192, 16384}) {
            INFO("n = ", n);
            // All values near 3: the sum of squares is a long run of same-sign terms,
            // the hard case for an fp32 accumulator.
            std::vector<float> x = random_floats(size_t(n), 2.5f, 3.5f, 3);
            std::vector<float> want(x.size());
            ref::rmsnorm(x.data(), size_t(n), 1, n, nullptr, 1e-5f, want.data(), size_t(n));
            kt.rmsnorm(x.data(), size_t(n), 1, n, nullptr, 1e-5f, x.data(), size_t(n));
            int bad = 0;
            for (size_t i = 0; i < x.size(); ++i)
                if (!close_rel(x[i], want[i], kRmsRelTol)) ++bad;
            CHECK(bad == 0);
        }
    });
}

TEST_CASE("add and scale are exact element-wise float operations") {
    for_each_target([&](const KernelTable& kt) {
        for (int n : test_sizes()) {
            INFO("n = ", n);
            std::vector<float> xb = random_floats(size_t(n) + 1, -3.0f, 3.0f, 5);
            std::vector<float> yb = random_floats(size_t(n) + 2, -3.0f, 3.0f, 6);
            std::vector<float> want(yb.begin() + 1, yb.end());
            ref::add(want.data(), xb.data() + 1, size_t(n));
            kt.add(yb.data() + 1, xb.data() + 1, size_t(n));
            CHECK(std::vector<float>(yb.begin() + 1, yb.end()) == want);  // last is padding
            ref::scale(want.data(), size_t(n), 0.37f);
            kt.scale(yb.data() + 1, size_t(n), 0.37f);
            CHECK(std::vector<float>(yb.begin() + 1, yb.end()) == want);
        }
    });
}
