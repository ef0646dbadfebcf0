// The iq4nl format (GGUF IQ4_NL kept as it is, kernels/formats/iq4nl/):
// its quantizer on hand-computed groups, the documented index layout through
// the GGUF repack, and every runnable target's matmul against the scalar
// reference (ref::matmul_iq4nl: ref::matmul_q8 of the table values), exactly
// where the fp32 sums are exact, else within 1e-5 of Σ|x·w|; odd n, k tails,
// m from 1, one and two threads, 8- and 16-bit activations.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/formats/format.hpp"
#include "formats/iq4nl/layout.hpp"
#include "kernels/ggml_blocks.hpp"
#include "kernels/kernels.hpp"
#include "kernels/memory.hpp"
#include "staticlm/error.hpp"
#include "format_matmul_harness.hpp"
#include "targets.hpp"

using namespace staticlm;
using namespace staticlm::kernels;

namespace {

constexpr int G = kQ8Group;
// ggml's kvalues_iq4nl, written out here independently of the header.
constexpr int kTable[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

uint16_t half_bits(float x) { return f32_to_f16(x); }

}  // namespace

TEST_CASE("iq4nl: the table and the block are ggml's and the documented ones") {
    for (int i = 0; i < 16; ++i) CHECK(int(kIq4nlValues[i]) == kTable[i]);
    for (int i = 0; i < 16; ++i) CHECK(int(kIq4nlBiased.b[i]) == kTable[i] + 128);
    const WeightTypeInfo& info = weight_type_info(WeightType::iq4nl);
    CHECK(std::string(info.name) == "iq4nl");
    CHECK(info.bytes_per_weight == 0.5625);  // 4.5 bits, GGUF IQ4_NL's own 18 bytes per 32
    CHECK(parse_weight_type("iq4nl") == WeightType::iq4nl);
    CHECK(format_info(WeightType::iq4nl).k_align == 32);
    CHECK(packed_bytes(WeightType::iq4nl, 17, 33) == 2 * 2 * 288);
}

TEST_CASE("iq4nl quantizer: hand-computed groups") {
    float x[G] = {};
    uint8_t idx[G];
    SUBCASE("table values times a power of two are held exactly") {
        for (int i = 0; i < G; ++i) x[i] = float(kTable[i % 16]) * 0.25f;
        CHECK(quantize_iq4nl_group(x, G, idx) == 0.25f);
        for (int i = 0; i < G; ++i) CHECK(int(idx[i]) == i % 16);
    }
    SUBCASE("largest |x| positive: a negative scale; the least-squares scale wins") {
        x[0] = 2.54f;  // d0 = half(2.54 / -127) = half(-0.02): index 0 (-127)
        x[1] = -0.2f;  // -0.2 / d0 = 9.998: nearest 13 (index 9; midpoint 7)
        for (int i = 2; i < G; ++i) x[i] = 123.0f;  // past len: ignored
        const float d0 = f16_to_f32(half_bits(2.54f / -127.0f));
        const auto err = [&](float d) {
            const double e0 = double(x[0]) - double(d) * -127, e1 = double(x[1]) - double(d) * 13;
            return e0 * e0 + e1 * e1;
        };
        const float d1 = f16_to_f32(half_bits(float((double(x[0]) * -127 + double(x[1]) * 13) / (127.0 * 127 + 13 * 13))));
        REQUIRE(err(d1) < err(d0));  // 3.57e-3 against 3.61e-3
        CHECK(quantize_iq4nl_group(x, 2, idx) == d1);
        CHECK(int(idx[0]) == 0);
        CHECK(int(idx[1]) == 9);
        for (int i = 2; i < G; ++i) CHECK(int(idx[i]) == 8);
    }
    SUBCASE("ties go to the lower value; zero is the value 1") {
        x[0] = -127.0f;  // d = 1
        x[1] = 7.0f;     // midpoint of 1 and 13: index 8
        x[2] = 0.0f;
        x[3] = -4.5f;    // midpoint of -10 and 1: index 7
        // The rest exact, so the least-squares scale 373713 / 373763 rounds to the half 1.
        for (int i = 4; i < G; ++i) x[i] = 113.0f;
        CHECK(quantize_iq4nl_group(x, G, idx) == 1.0f);
        CHECK(int(idx[1]) == 8);
        CHECK(int(idx[2]) == 8);
        CHECK(int(idx[3]) == 7);
    }
    SUBCASE("all zero or non-finite: scale 0, index 8 (the value 1)") {
        CHECK(quantize_iq4nl_group(x, G, idx) == 0.0f);
        for (int i = 0; i < G; ++i) CHECK(int(idx[i]) == 8);
        x[3] = std::nanf("");
        x[4] = 1.0f;
        CHECK(quantize_iq4nl_group(x, G, idx) == 0.0f);
        for (int i = 0; i < G; ++i) CHECK(int(idx[i]) == 8);
    }
}

TEST_CASE("iq4nl repack of GGUF blocks: the documented index layout, row ranges, bad shapes refused") {
    // 20 rows x 64 k of GGUF IQ4_NL blocks, index of row r, element j = (r + j) % 16.
    const int n = 20, k = 64, groups = k / G;
    std::vector<BlockIQ4_NL> src(size_t(n) * groups);
    for (int r = 0; r < n; ++r)
        for (int g = 0; g < groups; ++g) {
            BlockIQ4_NL& b = src[size_t(r) * groups + size_t(g)];
            b.d = half_bits(0.5f * float(r + 1) * (g ? -1.0f : 1.0f));
            for (int j = 0; j < 16; ++j)
                b.qs[j] = uint8_t(((r + g * G + j) % 16) | (((r + g * G + j + 16) % 16) << 4));
        }
    Buffer buf(packed_bytes(WeightType::iq4nl, n, k));
    std::memset(buf.data(), 0xAB, buf.size());
    pack_iq4nl_ggml(src.data(), n, k, 0, 16, buf.data());                            // panel 0
    pack_iq4nl_ggml(src.data() + size_t(16) * groups, n, k, 16, n, buf.data());  // panel 1, rows 16-19
    const auto* bytes = reinterpret_cast<const uint8_t*>(buf.data());
    for (int r = 0; r < 32; ++r)
        for (int g = 0; g < groups; ++g) {
            // Block g of panel r / 16: q[t][rr][c] = k 8t + c (low nibble), 8t + 4 + c (high).
            const uint8_t* blk = bytes + size_t(r / 16) * groups * 288 + size_t(g) * 288;
            const int rr = r % 16;
            uint16_t d;
            std::memcpy(&d, blk + 256 + 2 * rr, 2);
            CHECK(d == (r < n ? half_bits(0.5f * float(r + 1) * (g ? -1.0f : 1.0f)) : 0));
            for (int j = 0; j < G; ++j) {
                const uint8_t byte = blk[(j / 8) * 64 + rr * 4 + j % 4];
                const int got = (j % 8) < 4 ? byte & 15 : byte >> 4;
                CHECK(got == (r < n ? (r + g * G + j) % 16 : 8));
            }
        }
    const PackedMatrix w{WeightType::iq4nl, n, k, buf.data(), buf.size()};
    std::vector<float> row(k), want(k);
    for (int r = 0; r < n; ++r) {
        unpack_row(w, r, 1.0f, row.data());
        REQUIRE(dequantize_ggml(GgmlType::iq4_nl, src.data() + size_t(r) * groups, want.data(), k));
        for (int i = 0; i < k; ++i) CHECK(row[size_t(i)] == want[size_t(i)]);
    }
    CHECK(want[1] == f16_to_f32(src[size_t(n - 1) * groups].d) * float(kTable[(n - 1 + 1) % 16]));
    CHECK_THROWS_AS(pack_iq4nl_ggml(src.data(), n, 48, 0, 16, buf.data()), Error);  // k not whole blocks
    CHECK_THROWS_AS(pack_iq4nl_ggml(src.data(), n, k, 8, 16, buf.data()), Error);  // not a panel start
    CHECK_THROWS_AS(pack_iq4nl_ggml(src.data(), n, k, 0, 17, buf.data()), Error);  // ends inside a panel
}

namespace {

// Groups iq4nl holds exactly: table values times a power of two of either
// sign, -127 at one place (so the quantizer finds that scale).
std::vector<float> exact_values(int rows, int k, std::mt19937& rng) {
    std::vector<float> v(size_t(rows) * size_t(k));
    std::uniform_int_distribution<int> any(1, 15), expo(-2, 0), pos(0, G - 1), sign(0, 1);
    for (int r = 0; r < rows; ++r)
        for (int g0 = 0; g0 < k; g0 += G) {
            const float scale = std::ldexp(1.0f, expo(rng)) * (sign(rng) ? 1.0f : -1.0f);
            const int len = std::min(G, k - g0);
            const int big = pos(rng) % len;
            for (int i = 0; i < len; ++i)
                v[size_t(r) * size_t(k) + size_t(g0 + i)] = float(kTable[i == big ? 0 : any(rng)]) * scale;
        }
    return v;
}

// kt's iq4nl matmul (weights packed by kt from floats) on strided, misaligned
// x and y (format_matmul_harness.hpp) against ref::matmul_iq4nl of
// ref::quantize_weight_row_iq4nl's weights.
void check_matmul(const KernelTable& kt, int m, int n, int k, int threads, bool exact, std::mt19937& rng,
                  int act_bits = 8) {
    const std::vector<float> w = exact ? exact_values(n, k, rng) : harness::random_values(size_t(n) * size_t(k), rng);
    Buffer buf;
    PackedMatrix pm = harness::pack_from_floats(kt, WeightType::iq4nl, w, n, k, buf);
    pm.act_bits = act_bits;
    const int kp = padded_k(WeightType::iq4nl, k);
    std::vector<uint8_t> idx(size_t(n) * size_t(kp));
    std::vector<uint16_t> d(size_t(n) * size_t(kp / G));
    for (int r = 0; r < n; ++r)
        ref::quantize_weight_row_iq4nl(w.data() + size_t(r) * size_t(k), k, idx.data() + size_t(r) * size_t(kp),
                                       d.data() + size_t(r) * size_t(kp / G));
    const harness::MatmulRun run = harness::run_matmul(kt, pm, m, threads, exact, rng);
    std::vector<float> yref(size_t(m) * size_t(n) + 1);
    ref::matmul_iq4nl(idx.data(), d.data(), n, k, run.x(), run.ldx, m, yref.data(), size_t(n), act_bits);
    harness::check_outputs(run, yref, exact, exact ? std::vector<double>{} : harness::abs_values(w), size_t(k));
}

}  // namespace

TEST_CASE("iq4nl matmul equals the reference exactly on every target (exact fp32 sums)") {
    std::mt19937 rng(21);
    for_each_target([&](const KernelTable& kt) {
        for (int m : {0, 1, 2, 3, 5, 7, 13})
            for (int n : {1, 15, 17, 33})
                for (int k : {1, 31, 32, 33, 100})
                    for (int threads : {1, 2}) check_matmul(kt, m, n, k, threads, true, rng);
        for (int threads : {1, 2}) {
            check_matmul(kt, 100, 17, 33, threads, true, rng);  // rows split
            check_matmul(kt, 29, 200, 64, threads, true, rng);  // panels split
            // avx512-amx (signed B tiles): 16 and 24 rows stream one block,
            // 53 run a pair of blocks on unpacked chunks, a lone one and 5 rows on VNNI.
            for (int m : {16, 24, 53}) check_matmul(kt, m, 33, 300, threads, true, rng);
            for (int m : {1, 7, 17}) check_matmul(kt, m, 33, 100, threads, true, rng, 16);
        }
    });
}

TEST_CASE("iq4nl matmul matches the reference on random data on every target") {
    std::mt19937 rng(22);
    for_each_target([&](const KernelTable& kt) {
        for (int m : {1, 2, 5, 12, 33})
            for (int n : {17, 80})
                for (int k : {33, 256, 300}) check_matmul(kt, m, n, k, 2, false, rng);
        for (int m : {1, 5, 17}) check_matmul(kt, m, 40, 300, 2, false, rng, 16);
    });
}
