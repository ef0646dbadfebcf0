// The iq4xs format (GGUF IQ4_XS kept as it is, kernels/formats/iq4xs/): its
// quantizer on a hand-computed super-block, the documented layout through the
// GGUF repack, and every runnable target's matmul against the scalar reference
// (ref::matmul_iq4xs: ref::matmul_q8 of the table values and the scales d·sc):
// exactly on GGUF blocks whose fp32 sums are exact, within 1e-5 of Σ|x·w| on
// float weights with odd n and k tails; m from 1 to 100, 8- and 16-bit
// activations, one and two threads.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "formats/iq4xs/layout.hpp"
#include "kernels/formats/format.hpp"
#include "kernels/ggml_blocks.hpp"
#include "kernels/kernels.hpp"
#include "kernels/memory.hpp"
#include "staticlm/error.hpp"
#include "format_matmul_harness.hpp"
#include "targets.hpp"

using namespace staticlm;
using namespace staticlm::kernels;

namespace {

constexpr int G = kQ8Group, S = 256;
// ggml's kvalues_iq4nl, written out here independently of the header.
constexpr int kTable[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

// An IQ4_XS block from its fields, written by the GGUF bit layout (not
// iq4xs_scale): ls[8] in [0, 63], idx[256] in [0, 15].
BlockIQ4_XS make_block(float d, const int* ls, const int* idx) {
    BlockIQ4_XS b{};
    b.d = f32_to_f16(d);
    b.scales_h = 0;
    for (int s = 0; s < 8; ++s) {
        b.scales_h = uint16_t(b.scales_h | ((ls[s] >> 4) << (2 * s)));
        b.scales_l[s / 2] = uint8_t(b.scales_l[s / 2] | ((ls[s] & 15) << (4 * (s % 2))));
        for (int j = 0; j < 16; ++j) b.qs[16 * s + j] = uint8_t(idx[32 * s + j] | (idx[32 * s + 16 + j] << 4));
    }
    return b;
}

}  // namespace

TEST_CASE("iq4xs: the entry and the block are the documented ones") {
    const WeightTypeInfo& info = weight_type_info(WeightType::iq4xs);
    CHECK(std::string(info.name) == "iq4xs");
    CHECK(info.bytes_per_weight == 0.5390625);  // 4.3125 bits: 2208 bytes per 16 rows x 256
    CHECK(info.bytes_per_weight / (136.0 / 256) < 1.02);  // GGUF IQ4_XS: 136 bytes per 256
    CHECK(parse_weight_type("iq4xs") == WeightType::iq4xs);
    CHECK(format_info(WeightType::iq4xs).k_align == 256);
    CHECK(packed_bytes(WeightType::iq4xs, 17, 257) == 2 * 2 * 2208);
    CHECK(vocab_weight_type(WeightType::iq4xs) == WeightType::q8);
}

TEST_CASE("iq4xs quantizer: a hand-computed super-block") {
    // Group g holds table values times d·l[g] with d = 1/16, index 0 (-127)
    // among them, so iq4nl's group scale is d·l[g] exactly; l[0] = -32 makes
    // d = (-2) / -32. Group 7 is zero: sc 0, index 8.
    const int l[8] = {-32, -5, 3, 31, 1, -1, 7, 0};
    float x[S];
    int want_idx[S];
    for (int g = 0; g < 8; ++g)
        for (int j = 0; j < G; ++j) {
            const int i = j == 5 ? 0 : (j * 7 + g) % 16;
            want_idx[g * G + j] = l[g] == 0 ? 8 : i;
            x[g * G + j] = float(kTable[i]) * (float(l[g]) / 16.0f) * (l[g] != 0);
        }
    uint8_t idx[S];
    int8_t sc[8];
    uint16_t d;
    quantize_iq4xs_super(x, S, idx, sc, &d);
    CHECK(f16_to_f32(d) == 0.0625f);
    for (int g = 0; g < 8; ++g) CHECK(int(sc[g]) == l[g]);
    for (int i = 0; i < S; ++i) CHECK(int(idx[i]) == want_idx[i]);
    SUBCASE("padding past len does not steer the scales") {
        for (int i = 40; i < S; ++i) x[i] = 1000.0f;
        quantize_iq4xs_super(x, 40, idx, sc, &d);
        CHECK(f16_to_f32(d) == 0.0625f);  // group 0 still the largest
        CHECK(int(sc[0]) == -32);
        CHECK(int(sc[1]) == -5);  // from its 8 real values: index 0 is at j = 5
        for (int g = 2; g < 8; ++g) CHECK(int(sc[g]) == 0);
        for (int i = 40; i < S; ++i) CHECK(int(idx[i]) == 8);
    }
    SUBCASE("a non-finite value or all zeros: d = 0, every sc 0, every index 8") {
        x[100] = std::nanf("");
        quantize_iq4xs_super(x, S, idx, sc, &d);
        CHECK(d == 0);
        std::fill(x, x + S, 0.0f);
        quantize_iq4xs_super(x, S, idx, sc, &d);
        CHECK(d == 0);
        for (int g = 0; g < 8; ++g) CHECK(int(sc[g]) == 0);
        for (int i = 0; i < S; ++i) CHECK(int(idx[i]) == 8);
    }
}

TEST_CASE("iq4xs repack of GGUF blocks: the documented layout, row ranges, bad shapes refused") {
    // 20 rows x 512 k: row r, super s: ls of group b = (5r + 3s + 7b) % 64, index of element i = (r + i) % 16.
    const int n = 20, k = 512, ns = k / S;
    std::vector<BlockIQ4_XS> src(size_t(n) * ns);
    int ls[8], idx[S];
    for (int r = 0; r < n; ++r)
        for (int s = 0; s < ns; ++s) {
            for (int b = 0; b < 8; ++b) ls[b] = (5 * r + 3 * s + 7 * b) % 64;
            for (int i = 0; i < S; ++i) idx[i] = (r + i) % 16;
            src[size_t(r) * ns + size_t(s)] = make_block(0.25f * float(r + 1) * (s ? -1.0f : 1.0f), ls, idx);
        }
    Buffer buf(packed_bytes(WeightType::iq4xs, n, k));
    std::memset(buf.data(), 0xAB, buf.size());
    pack_iq4xs_ggml(src.data(), n, k, 0, 16, buf.data());                       // panel 0
    pack_iq4xs_ggml(src.data() + size_t(16) * ns, n, k, 16, n, buf.data());  // panel 1, rows 16-19
    const auto* bytes = reinterpret_cast<const uint8_t*>(buf.data());
    for (int r = 0; r < 32; ++r)
        for (int s = 0; s < ns; ++s) {
            // Super-block s of panel r / 16: 8 groups of 272 bytes (q[t][rr][c], then sc[rr]), then d[rr].
            const uint8_t* sup = bytes + size_t(r / 16) * ns * 2208 + size_t(s) * 2208;
            const int rr = r % 16;
            uint16_t d;
            std::memcpy(&d, sup + 2176 + 2 * rr, 2);
            CHECK(d == (r < n ? f32_to_f16(0.25f * float(r + 1) * (s ? -1.0f : 1.0f)) : 0));
            for (int b = 0; b < 8; ++b) {
                const uint8_t* grp = sup + 272 * b;
                CHECK(int(int8_t(grp[256 + rr])) == (r < n ? (5 * r + 3 * s + 7 * b) % 64 - 32 : 0));
                for (int j = 0; j < G; ++j) {
                    const uint8_t byte = grp[(j / 8) * 64 + rr * 4 + j % 4];
                    const int got = (j % 8) < 4 ? byte & 15 : byte >> 4;
                    CHECK(got == (r < n ? (r + 32 * b + j) % 16 : 0));
                }
            }
        }
    const PackedMatrix w{WeightType::iq4xs, n, k, buf.data(), buf.size()};
    std::vector<float> row(k), want(k);
    for (int r = 0; r < n; ++r) {
        unpack_row(w, r, 1.0f, row.data());
        REQUIRE(dequantize_ggml(GgmlType::iq4_xs, src.data() + size_t(r) * ns, want.data(), k));
        for (int i = 0; i < k; ++i) CHECK(row[size_t(i)] == want[size_t(i)]);
    }
    // Row 19, super 1, group 2: (d · (ls - 32)) · value by hand.
    const int ls19 = (5 * 19 + 3 + 14) % 64;
    CHECK(want[S + 2 * G] == (-5.0f * float(ls19 - 32)) * float(kTable[(19 + 2 * G) % 16]));
    CHECK_THROWS_AS(pack_iq4xs_ggml(src.data(), n, 480, 0, 16, buf.data()), Error);  // k not whole super-blocks
    CHECK_THROWS_AS(pack_iq4xs_ggml(src.data(), n, k, 8, 16, buf.data()), Error);    // not a panel start
    CHECK_THROWS_AS(pack_iq4xs_ggml(src.data(), n, k, 0, 17, buf.data()), Error);    // ends inside a panel
}

namespace {

// Weights [n][k] (k whole super-blocks) as GGUF blocks with exact fp32 sums:
// d = ±2^e (e in {-1, 0}), ls - 32 in {±1, ±2}, random indices; also their
// reference fields.
struct GgufWeights {
    std::vector<BlockIQ4_XS> blocks;
    std::vector<uint8_t> idx;
    std::vector<int8_t> sc;
    std::vector<uint16_t> d;
};

GgufWeights exact_blocks(int n, int k, std::mt19937& rng) {
    GgufWeights w;
    std::uniform_int_distribution<int> any(0, 15), pick(0, 3), bit(0, 1);
    const int ns = k / S, scales[4] = {1, 2, -1, -2};
    int ls[8], idx[S];
    for (int r = 0; r < n; ++r)
        for (int s = 0; s < ns; ++s) {
            const float d = (bit(rng) ? 0.5f : 1.0f) * (bit(rng) ? -1.0f : 1.0f);
            for (int b = 0; b < 8; ++b) {
                ls[b] = 32 + scales[pick(rng)];
                w.sc.push_back(int8_t(ls[b] - 32));
            }
            for (int i = 0; i < S; ++i) {
                idx[i] = any(rng);
                w.idx.push_back(uint8_t(idx[i]));
            }
            w.blocks.push_back(make_block(d, ls, idx));
            w.d.push_back(f32_to_f16(d));
        }
    return w;
}

// kt's iq4xs matmul on strided, misaligned x and y (format_matmul_harness.hpp)
// against ref::matmul_iq4xs: exact (GGUF blocks packed by pack_iq4xs_ggml,
// exact activations with scales 2^-1 and 2^0, equality) or float weights
// packed by kt against ref::quantize_weight_row_iq4xs's fields (within 1e-5
// of Σ|x·w|).
void check_matmul(const KernelTable& kt, int m, int n, int k, int threads, bool exact, std::mt19937& rng,
                  int act_bits = 8) {
    const WeightType t = WeightType::iq4xs;
    Buffer buf;
    const int kp = padded_k(t, k);
    REQUIRE(kp % S == 0);
    GgufWeights ref_w;
    std::vector<float> w;  // the weights as floats, for the tolerance
    PackedMatrix pm;
    if (exact) {
        REQUIRE(k % S == 0);
        ref_w = exact_blocks(n, k, rng);
        buf = Buffer(std::max<size_t>(packed_bytes(t, n, k), 64));
        pack_iq4xs_ggml(ref_w.blocks.data(), n, k, 0, n, buf.data());
        pm = {t, n, k, buf.data(), packed_bytes(t, n, k)};
    } else {
        w = harness::random_values(size_t(n) * size_t(k), rng);
        pm = harness::pack_from_floats(kt, t, w, n, k, buf);
        ref_w.idx.resize(size_t(n) * size_t(kp));
        ref_w.sc.resize(size_t(n) * size_t(kp / G));
        ref_w.d.resize(size_t(n) * size_t(kp / S));
        for (int r = 0; r < n; ++r)
            ref::quantize_weight_row_iq4xs(w.data() + size_t(r) * size_t(k), k, ref_w.idx.data() + size_t(r) * size_t(kp),
                                           ref_w.sc.data() + size_t(r) * size_t(kp / G),
                                           ref_w.d.data() + size_t(r) * size_t(kp / S));
    }
    pm.act_bits = act_bits;
    const harness::MatmulRun run = harness::run_matmul(kt, pm, m, threads, exact, rng, -1);
    std::vector<float> yref(size_t(m) * size_t(n) + 1);
    ref::matmul_iq4xs(ref_w.idx.data(), ref_w.sc.data(), ref_w.d.data(), n, k, run.x(), run.ldx, m, yref.data(),
                      size_t(n), act_bits);
    harness::check_outputs(run, yref, exact, harness::abs_values(w), size_t(k));
}

}  // namespace

TEST_CASE("iq4xs matmul equals the reference exactly on every target (GGUF blocks, exact fp32 sums)") {
    std::mt19937 rng(31);
    for_each_target([&](const KernelTable& kt) {
        for (int m : {0, 1, 2, 3, 5, 7, 13})
            for (int n : {1, 15, 17, 33})
                for (int threads : {1, 2}) check_matmul(kt, m, n, 256, threads, true, rng);
        for (int threads : {1, 2}) {
            check_matmul(kt, 100, 17, 512, threads, true, rng);  // rows split
            check_matmul(kt, 29, 200, 256, threads, true, rng);  // panels split
            // avx512-amx (signed B tiles): 16 and 24 rows stream one block,
            // 53 run a pair of blocks on unpacked chunks, a lone one and 5 rows on VNNI.
            for (int m : {16, 24, 53}) check_matmul(kt, m, 33, 512, threads, true, rng);
            for (int m : {1, 7, 17}) check_matmul(kt, m, 33, 512, threads, true, rng, 16);
        }
    });
}

TEST_CASE("iq4xs matmul matches the reference on float weights on every target (odd n, k tails)") {
    std::mt19937 rng(32);
    for_each_target([&](const KernelTable& kt) {
        for (int m : {1, 2, 5, 12, 33, 97})
            for (int n : {17, 81})
                for (int k : {1, 33, 256, 300, 520}) check_matmul(kt, m, n, k, 2, false, rng);
        for (int m : {1, 5, 17}) check_matmul(kt, m, 41, 300, 2, false, rng, 16);
    });
}
