// Gated activations, softcap, argmax and f16 row conversions on every
// runnable target against the scalar references (double) and the scalar
// f32_to_f16 / f16_to_f32. Tolerances: |got - want| <= 1e-6 · max(1, |want|).
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kernels/kernels.hpp"
#include "kernels/ref.hpp"
#include "tests/kernels/targets.hpp"

using namespace staticlm::kernels;

namespace {

constexpr double kActTol = 1e-6;

std::vector<int> test_sizes() {
    std::vector<int> s;
    for (int n = 0; n <= 49; ++n) s.push_back(n);
    for (int n : {63, 64, 65, 255, 257, 1000, 4099}) s.push_back(n);
    return s;
}

std::vector<float> random_floats(size_t n, float lo, float hi, unsigned seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> d(lo, hi);
    std::vector<float> v(n);
    for (float& x : v) x = d(rng);
    return v;
}

bool close(float got, float want) {
    return std::fabs(double(got) - double(want)) <= kActTol * std::max(1.0, std::fabs(double(want)));
}

int count_far(const float* got, const float* want, size_t n) {
    int bad = 0;
    for (size_t i = 0; i < n; ++i) bad += !close(got[i], want[i]);
    return bad;
}

uint32_t bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}

float from_bits(uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

using GatedFn = void (*)(const float*, const float*, size_t, float*);

void check_gated(GatedFn fn, GatedFn ref_fn) {
    for (int n : test_sizes()) {
        INFO("n = ", n);
        // Gates cover the saturating ends; a few exact extremes are planted.
        std::vector<float> g = random_floats(size_t(n) + 1, -20.0f, 20.0f, unsigned(n));
        std::vector<float> u = random_floats(size_t(n) + 1, -3.0f, 3.0f, unsigned(n) + 99);
        const float special[] = {0.0f, -0.0f, -100.0f, 100.0f, -88.5f, 1e-20f, -5.0f, 3.0f};
        for (size_t i = 1; i <= size_t(n); i += 3) g[i] = special[(i / 3) % 8];
        std::vector<float> want(static_cast<size_t>(n));
        ref_fn(g.data() + 1, u.data() + 1, size_t(n), want.data());
        std::vector<float> out(size_t(n) + 1);
        fn(g.data() + 1, u.data() + 1, size_t(n), out.data() + 1);  // misaligned
        CHECK(count_far(out.data() + 1, want.data(), size_t(n)) == 0);
        // out may alias gate or up.
        std::vector<float> g2 = g, u2 = u;
        fn(g2.data() + 1, u2.data() + 1, size_t(n), g2.data() + 1);
        fn(g.data() + 1, u2.data() + 1, size_t(n), u2.data() + 1);
        CHECK(count_far(g2.data() + 1, want.data(), size_t(n)) == 0);
        CHECK(count_far(u2.data() + 1, want.data(), size_t(n)) == 0);
    }
}

}  // namespace

TEST_CASE("silu_mul, gelu_tanh_mul and softcap match hand-computed values") {
    for_each_target([&](const KernelTable& kt) {
        const float g[4] = {1.0f, -2.0f, 0.0f, -0.5f};
        const float u[4] = {1.0f, 1.0f, 5.0f, 2.0f};
        float y[4];
        kt.silu_mul(g, u, 4, y);
        CHECK(y[0] == doctest::Approx(0.7310585786300049).epsilon(1e-6));
        CHECK(y[1] == doctest::Approx(-0.2384058440442351).epsilon(1e-6));
        CHECK(y[2] == 0.0f);
        kt.gelu_tanh_mul(g, u, 4, y);
        CHECK(y[0] == doctest::Approx(0.8411919906082768).epsilon(1e-6));
        CHECK(y[2] == 0.0f);
        CHECK(y[3] == doctest::Approx(2 * -0.15428599017485606).epsilon(1e-6));
        float x[3] = {30.0f, -50.0f, 0.0f};
        kt.softcap(x, 3, 30.0f);
        CHECK(x[0] == doctest::Approx(22.847824678672946).epsilon(1e-6));
        CHECK(x[1] == doctest::Approx(-27.93328826002733).epsilon(1e-6));
        CHECK(x[2] == 0.0f);
    });
}

TEST_CASE("silu_mul and gelu_tanh_mul match the reference on every target") {
    for_each_target([&](const KernelTable& kt) {
        SUBCASE("silu") { check_gated(kt.silu_mul, ref::silu_mul); }
        SUBCASE("gelu_tanh") { check_gated(kt.gelu_tanh_mul, ref::gelu_tanh_mul); }
    });
}

TEST_CASE("softcap matches the reference on every target") {
    for_each_target([&](const KernelTable& kt) {
        for (int n : test_sizes()) {
            INFO("n = ", n);
            std::vector<float> x = random_floats(size_t(n) + 1, -200.0f, 200.0f, unsigned(n));
            for (size_t i = 1; i <= size_t(n); i += 4) x[i] *= 0.01f;  // the near-linear part
            std::vector<float> want(x.begin() + 1, x.end());
            ref::softcap(want.data(), want.size(), 30.0f);
            kt.softcap(x.data() + 1, size_t(n), 30.0f);
            CHECK(count_far(x.data() + 1, want.data(), size_t(n)) == 0);
        }
    });
}

TEST_CASE("argmax returns the first index of the largest value") {
    for_each_target([&](const KernelTable& kt) {
        for (int n : test_sizes()) {
            if (n == 0) continue;
            INFO("n = ", n);
            // Few distinct values: many ties.
            std::vector<float> x = random_floats(size_t(n) + 1, -4.0f, 4.0f, unsigned(n));
            for (float& v : x) v = std::round(v);
            CHECK(kt.argmax(x.data() + 1, n) == ref::argmax(x.data() + 1, n));
            std::vector<float> neg(size_t(n), -1e30f);
            neg.back() = -1e29f;
            CHECK(kt.argmax(neg.data(), n) == n - 1);
            CHECK(kt.argmax(std::vector<float>(size_t(n), 2.0f).data(), n) == 0);
        }
        // A vocabulary row: the maximum appears twice, in different 1024-blocks.
        const int n = 262144;
        std::vector<float> x = random_floats(size_t(n), -10.0f, 10.0f, 42);
        x[200000] = 11.0f;
        x[150001] = 11.0f;
        x[5] = 10.999f;
        CHECK(kt.argmax(x.data(), n) == 150001);
        x[262143] = 12.0f;
        CHECK(kt.argmax(x.data(), n) == 262143);
        x[0] = 12.0f;
        CHECK(kt.argmax(x.data(), n) == 0);
    });
}

TEST_CASE("to_f16 matches f32_to_f16 bit for bit around every half and midpoint") {
    // Every half value, the midpoints between neighbours (the rounding
    // boundaries), one float ulp either side of both, plus a strided sweep of
    // all float bit patterns.
    std::vector<float> in;
    for (uint32_t h = 0; h < 0x10000; ++h) {
        const float f = f16_to_f32(uint16_t(h));
        if (std::isnan(f)) continue;
        const uint32_t b = bits(f);
        for (uint32_t d : {0u, 1u, 4096u, 4095u, 4097u}) in.push_back(from_bits(b + d));
        in.push_back(from_bits(b - 1));
    }
    for (uint32_t b = 0x33000000u - 8; b < 0x33000000u + 8; ++b) in.push_back(from_bits(b));
    for (uint64_t b = 0; b < 0x100000000ull; b += 4099) in.push_back(from_bits(uint32_t(b)));
    for_each_target([&](const KernelTable& kt) {
        std::vector<uint16_t> out(in.size() + 1);
        kt.to_f16(in.data(), in.size(), out.data() + 1);
        int bad = 0, nan_lost = 0;
        size_t first_bad = 0;
        for (size_t i = 0; i < in.size(); ++i) {
            const uint16_t h = out[i + 1];
            if (std::isnan(in[i])) {
                nan_lost += !((h & 0x7c00) == 0x7c00 && (h & 0x3ff));
            } else if (h != f32_to_f16(in[i])) {
                if (!bad) first_bad = i;
                ++bad;
            }
        }
        INFO("first mismatch: float bits ", bits(in[first_bad]));
        CHECK(bad == 0);
        CHECK(nan_lost == 0);
    });
}

TEST_CASE("to_f16 and from_f16 handle every size and alignment; from_f16 is exact") {
    std::vector<uint16_t> all(0x10000);
    for (uint32_t h = 0; h < 0x10000; ++h) all[h] = uint16_t(h);
    for_each_target([&](const KernelTable& kt) {
        std::vector<float> f(all.size());
        kt.from_f16(all.data(), all.size(), f.data());
        int bad = 0;
        for (uint32_t h = 0; h < 0x10000; ++h) {
            const float want = f16_to_f32(uint16_t(h));
            bad += std::isnan(want) ? !std::isnan(f[h]) : bits(f[h]) != bits(want);
        }
        CHECK(bad == 0);
        for (int n : test_sizes()) {
            INFO("n = ", n);
            std::vector<float> x = random_floats(size_t(n) + 1, -70000.0f, 70000.0f, unsigned(n));
            std::vector<uint16_t> h(size_t(n) + 2, 0xabcd);
            kt.to_f16(x.data() + 1, size_t(n), h.data() + 1);
            bad = 0;
            for (size_t i = 0; i < size_t(n); ++i) bad += h[i + 1] != f32_to_f16(x[i + 1]);
            CHECK(bad == 0);
            CHECK(h[0] == 0xabcd);
            CHECK(h[size_t(n) + 1] == 0xabcd);  // nothing written past the end
            std::vector<float> back(size_t(n) + 2, 7.0f);
            kt.from_f16(h.data() + 1, size_t(n), back.data() + 1);
            bad = 0;
            for (size_t i = 0; i < size_t(n); ++i)
                bad += bits(back[i + 1]) != bits(f16_to_f32(h[i + 1]));
            CHECK(bad == 0);
            CHECK(back[size_t(n) + 1] == 7.0f);
        }
    });
}
