// RoPE (rotate-half) on every runnable target against the reference, which
// uses the same fp32 angle float(pos) * inv_freq[j] and double cos/sin.
// Tolerance: 1e-6 absolute on inputs in [-1, 1], positions up to 8192.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/kernels.hpp"
#include "kernels/ref.hpp"
#include "tests/kernels/targets.hpp"

using namespace staticlm::kernels;

namespace {

constexpr double kRopeAbsTol = 1e-6;

std::vector<float> random_floats(size_t n, unsigned seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> d(-1.0f, 1.0f);
    std::vector<float> v(n);
    for (float& x : v) x = d(rng);
    return v;
}

// inv_freq[i] = theta^(-2i/d) for i < n_rot, 0 after (Gemma's "proportional" RoPE).
std::vector<float> inv_freq_table(int head_dim, double theta, int n_rot) {
    std::vector<float> f(size_t(head_dim / 2), 0.0f);
    for (int i = 0; i < n_rot; ++i) f[size_t(i)] = float(std::pow(theta, -2.0 * i / head_dim));
    return f;
}

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

}  // namespace

TEST_CASE("rope of one pair at positions 1 and 2 is a rotation by 1 and 2 radians") {
    const float inv_freq[1] = {1.0f};
    for_each_target([&](const KernelTable& kt) {
        float x[4] = {1.0f, 0.0f, 0.0f, 1.0f};  // two tokens, head_dim 2
        kt.rope(x, 2, 2, 1, 2, 1, inv_freq);
        CHECK(x[0] == doctest::Approx(0.5403023058681398).epsilon(1e-6));
        CHECK(x[1] == doctest::Approx(0.8414709848078965).epsilon(1e-6));
        // (0, 1) rotated by 2 rad: (-sin 2, cos 2).
        CHECK(x[2] == doctest::Approx(-0.9092974268256817).epsilon(1e-6));
        CHECK(x[3] == doctest::Approx(-0.4161468365471424).epsilon(1e-6));
    });
}

TEST_CASE("rope matches the fp32-angle reference on every target and head size") {
    for_each_target([&](const KernelTable& kt) {
        for (int head_dim : {2, 6, 10, 34, 64, 80, 128, 256, 512}) {
            for (int n_heads : {1, 3}) {
                for (int pos0 : {0, 1, 37, 4093, 8185}) {
                    INFO("head_dim = ", head_dim, " n_heads = ", n_heads, " pos0 = ", pos0);
                    const int t = 7;
                    const size_t ldx = size_t(n_heads * head_dim) + 3;
                    const std::vector<float> inv = inv_freq_table(head_dim, 10000.0, head_dim / 2);
                    std::vector<float> want = random_floats(t * ldx + 1, unsigned(head_dim + pos0));
                    std::vector<float> got = want;
                    // +1 float: rows start misaligned.
                    ref::rope(want.data() + 1, ldx, t, n_heads, head_dim, pos0, inv.data());
                    kt.rope(got.data() + 1, ldx, t, n_heads, head_dim, pos0, inv.data());
                    double worst = 0.0;
                    for (size_t i = 0; i < want.size(); ++i)
                        worst = std::max(worst, std::fabs(double(got[i]) - double(want[i])));
                    CHECK(worst <= kRopeAbsTol);
                }
            }
        }
    });
}

TEST_CASE("rope at position 0 and with zero frequencies passes values through bit-exactly") {
    for_each_target([&](const KernelTable& kt) {
        for (int head_dim : {6, 10, 64, 256, 512}) {
            INFO("head_dim = ", head_dim);
            const int n_heads = 2, t = 3, half = head_dim / 2;
            const size_t ldx = size_t(n_heads * head_dim);
            std::vector<float> x0 = random_floats(t * ldx, unsigned(head_dim));
            // -0 paired with a negative partner: x·cos - y·sin would give +0.
            for (size_t i = 0; i < x0.size(); i += 5) x0[i] = -0.0f;
            for (size_t i = 0; i < x0.size(); ++i)
                if (x0[i] == 0.0f && i % ldx % head_dim < size_t(half)) x0[i + half] = -0.5f;

            // Position 0: identity for every frequency.
            std::vector<float> full = inv_freq_table(head_dim, 10000.0, half);
            std::vector<float> x = x0;
            kt.rope(x.data(), ldx, 1, n_heads, head_dim, 0, full.data());
            bool exact = true;
            for (size_t i = 0; i < ldx; ++i) exact = exact && same_bits(x[i], x0[i]);
            CHECK(exact);

            // A quarter of the pairs rotate (Gemma full-attention layers); the rest
            // have inv_freq 0 and must come out unchanged at any position.
            const int n_rot = std::max(1, half / 4);
            std::vector<float> part = inv_freq_table(head_dim, 1e6, n_rot);
            x = x0;
            kt.rope(x.data(), ldx, t, n_heads, head_dim, 8190, part.data());
            exact = true;
            int rotated = 0;
            for (size_t i = 0; i < x.size(); ++i) {
                const int j = int(i % ldx % head_dim) % half;
                if (j >= n_rot)
                    exact = exact && same_bits(x[i], x0[i]);
                else
                    rotated += x[i] != x0[i];
            }
            CHECK(exact);
            CHECK(rotated > 0);
        }
    });
}
