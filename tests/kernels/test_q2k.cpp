// The q2k format (GGUF Q2_K kept as it is, kernels/formats/q2k/): the
// documented layout through the GGUF repack (against ggml's dequantizer), the
// quantizer on a hand-computed super-block, and every runnable target's matmul
// against the scalar reference (ref::matmul_q2k): exactly where the fp32 sums
// are exact (given blocks with power-of-two d and dmin), else within 1e-5 of
// Σ|x·w| (float sources); odd n, k tails, m from 1 to 100, one and two
// threads, 8- and 16-bit activations.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "formats/q2k/layout.hpp"
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

constexpr int G = kQ8Group;
constexpr int kSuper = 256, kBlockBytes = 84;  // GGUF Q2_K: scales[16], qs[64], d, dmin
constexpr size_t kGroupBytes = 160, kSuperBytes = 1344;

// GGUF Q2_K blocks for n rows × k, written from ggml's block definition:
// random value and scale bytes; d and dmin powers of two in [2^-8, 2^-5]
// (exact: every product of the matmul is then exact in fp32) or random halves.
std::vector<uint8_t> random_blocks(int n, int k, bool exact, std::mt19937& rng) {
    std::vector<uint8_t> b(size_t(n) * size_t(k / kSuper) * kBlockBytes);
    std::uniform_int_distribution<int> byte(0, 255), expo(-8, -5);
    std::uniform_real_distribution<float> u(0.001f, 0.05f);
    for (size_t i = 0; i < b.size(); i += kBlockBytes) {
        for (int j = 0; j < 80; ++j) b[i + size_t(j)] = uint8_t(byte(rng));
        for (int h = 0; h < 2; ++h) {
            const uint16_t v = f32_to_f16(exact ? std::ldexp(1.0f, expo(rng)) : u(rng));
            std::memcpy(&b[i + 80 + 2 * size_t(h)], &v, 2);
        }
    }
    return b;
}

// The blocks' fields as ref::matmul_q2k takes them: n [rows][k] (element
// 128h + 32s + i is bits 2s, 2s + 1 of qs[32h + i]), ws = d·sc and wm = dmin·m
// per 16 (scales[j] = sc | m << 4).
struct Fields {
    std::vector<uint8_t> n;
    std::vector<float> ws, wm;
};
Fields fields_of(const std::vector<uint8_t>& blocks, int rows, int k) {
    Fields f;
    f.n.resize(size_t(rows) * size_t(k));
    f.ws.resize(size_t(rows) * size_t(k / 16));
    f.wm.resize(f.ws.size());
    for (size_t b = 0; b < f.n.size() / kSuper; ++b) {
        const uint8_t* p = blocks.data() + b * kBlockBytes;
        uint16_t d, dmin;
        std::memcpy(&d, p + 80, 2);
        std::memcpy(&dmin, p + 82, 2);
        for (int h = 0; h < 2; ++h)
            for (int s = 0; s < 4; ++s)
                for (int i = 0; i < 32; ++i) f.n[b * kSuper + size_t(128 * h + 32 * s + i)] = (p[16 + 32 * h + i] >> (2 * s)) & 3;
        for (int j = 0; j < 16; ++j) {
            f.ws[b * 16 + size_t(j)] = f16_to_f32(d) * float(p[j] & 15);
            f.wm[b * 16 + size_t(j)] = f16_to_f32(dmin) * float(p[j] >> 4);
        }
    }
    return f;
}

// The matmul checks' reference (format_matmul_harness.hpp): ref::matmul_q2k of
// the fields n [n][k_pad], ws and wm [n][k_pad / 16].
const harness::AffineRef kRef{WeightType::q2k, 16, ref::quantize_weight_row_q2k, ref::matmul_q2k};

// kt's q2k matmul of w against ref::matmul_q2k of f: bitwise where `exact`,
// else within 1e-5 of Σ|x·w|; nothing written past the n columns.
void check_matmul(const KernelTable& kt, const PackedMatrix& w, const Fields& f, int m, int threads, bool exact,
                  std::mt19937& rng, int act_bits = 8) {
    harness::check_affine(kt, kRef, w, f.n, f.ws, f.wm, m, threads, exact, rng, act_bits);
}

}  // namespace

TEST_CASE("q2k: traits and sizes are GGUF Q2_K's 2.625 bits per weight") {
    const WeightTypeInfo& info = weight_type_info(WeightType::q2k);
    CHECK(std::string(info.name) == "q2k");
    CHECK(info.bytes_per_weight == 0.328125);  // 84 bytes per 256, the file's
    CHECK(parse_weight_type("q2k") == WeightType::q2k);
    CHECK(format_info(WeightType::q2k).k_align == 256);
    CHECK(packed_bytes(WeightType::q2k, 17, 300) == 2 * 2 * kSuperBytes);
    CHECK(vocab_weight_type(WeightType::q2k) == WeightType::q8);
    CHECK(gguf_native_type(GgmlType::q2_k) == WeightType::q2k);
}

TEST_CASE("q2k repack of GGUF blocks: the documented layout, ggml's values, row ranges, bad shapes refused") {
    std::mt19937 rng(5);
    const int n = 20, k = 512, ns = k / kSuper;
    const std::vector<uint8_t> src = random_blocks(n, k, false, rng);
    const Fields f = fields_of(src, n, k);
    Buffer buf(packed_bytes(WeightType::q2k, n, k));
    REQUIRE(buf.size() == 2 * 2 * kSuperBytes);  // 2 panels × 2 super-blocks
    std::memset(buf.data(), 0xAB, buf.size());
    pack_q2k_ggml(src.data(), n, k, 0, 16, buf.data());                                  // panel 0
    pack_q2k_ggml(src.data() + size_t(16) * ns * kBlockBytes, n, k, 16, n, buf.data());  // panel 1, rows 16-19
    const auto* bytes = reinterpret_cast<const uint8_t*>(buf.data());
    int bad = 0;
    for (int r = 0; r < 32; ++r)
        for (int s = 0; s < ns; ++s) {
            const uint8_t* sup = bytes + size_t(r / 16) * ns * kSuperBytes + size_t(s) * kSuperBytes;
            const int rr = r % 16;
            const uint8_t* blk = src.data() + (size_t(r) * ns + size_t(s)) * kBlockBytes;
            uint16_t d, dmin, want_d = 0, want_dmin = 0;
            std::memcpy(&d, sup + 8 * kGroupBytes + 2 * rr, 2);
            std::memcpy(&dmin, sup + 8 * kGroupBytes + 32 + 2 * rr, 2);
            if (r < n) std::memcpy(&want_d, blk + 80, 2), std::memcpy(&want_dmin, blk + 82, 2);
            CHECK(d == want_d);
            CHECK(dmin == want_dmin);
            for (int g = 0; g < 8; ++g) {
                const uint8_t* grp = sup + size_t(g) * kGroupBytes;
                for (int u = 0; u < 2; ++u)  // sm[u][rr]: the file's scale byte of sub-block 2g + u
                    if (grp[128 + 16 * u + rr] != (r < n ? blk[2 * g + u] : 0) && bad++ < 5) FAIL_CHECK("sm r ", r);
                for (int j = 0; j < G; ++j) {
                    // q[u][rr][c] holds quad jq = 4u .. 4u + 3 (k = 4jq + c) in bits 2(jq - 4u).
                    const int jq = j / 4;
                    const int got = (grp[(jq / 4) * 64 + rr * 4 + j % 4] >> (2 * (jq % 4))) & 3;
                    const int want = r < n ? f.n[size_t(r) * k + size_t(s * kSuper + g * G + j)] : 0;
                    if (got != want && bad++ < 5) FAIL_CHECK("q r ", r, " k ", s * kSuper + g * G + j);
                }
            }
        }
    CHECK(bad == 0);
    const PackedMatrix w{WeightType::q2k, n, k, buf.data(), buf.size()};
    std::vector<float> row(k), want(k);
    for (int r = 0; r < n; ++r) {
        unpack_row(w, r, 1.0f, row.data());
        REQUIRE(dequantize_ggml(GgmlType::q2_k, src.data() + size_t(r) * ns * kBlockBytes, want.data(), k));
        for (int i = 0; i < k; ++i) {
            const size_t h = size_t(r) * size_t(k / 16) + size_t(i / 16);
            CHECK(want[size_t(i)] == f.ws[h] * float(f.n[size_t(r) * k + size_t(i)]) - f.wm[h]);  // ggml's order
            if (std::memcmp(&row[size_t(i)], &want[size_t(i)], 4) != 0 && bad++ < 5) FAIL_CHECK("unpack r ", r);
        }
    }
    CHECK(bad == 0);
    CHECK_THROWS_WITH_AS(pack_q2k_ggml(src.data(), n, 288, 0, 16, buf.data()),
                         "pack_q2k_ggml: k = 288 is not whole super-blocks of 256", Error);
    CHECK_THROWS_AS(pack_q2k_ggml(src.data(), n, k, 8, 16, buf.data()), Error);   // not a panel start
    CHECK_THROWS_AS(pack_q2k_ggml(src.data(), n, k, 0, 17, buf.data()), Error);   // ends inside a panel
}

TEST_CASE("q2k quantizer: a hand-computed super-block, zeros and non-finite sub-blocks, error within the step") {
    float x[kSuper] = {};
    uint8_t n[kSuper], sm[16];
    uint16_t d, dmin;
    // Sub-block 0: 1.875·q (scale 1.875, min 0); sub-block 1: 0.375·q - 1.875
    // (scale 0.375, min 1.875); the rest 0. Then d = dmin = 1.875 / 15 = 0.125
    // (halves), sc = 15 and 3, m = 0 and 15, and every q comes back.
    for (int i = 0; i < 16; ++i) x[i] = 1.875f * float(i % 4), x[16 + i] = 0.375f * float((i * 3) % 4) - 1.875f;
    quantize_q2k_super(x, n, sm, &d, &dmin);
    CHECK(f16_to_f32(d) == 0.125f);
    CHECK(f16_to_f32(dmin) == 0.125f);
    CHECK(int(sm[0]) == 15);
    CHECK(int(sm[1]) == (3 | 15 << 4));
    for (int s = 2; s < 16; ++s) CHECK(int(sm[s]) == 0);
    for (int i = 0; i < 16; ++i) {
        CHECK(int(n[i]) == i % 4);
        CHECK(int(n[16 + i]) == (i * 3) % 4);
    }
    for (int i = 32; i < kSuper; ++i) CHECK(int(n[i]) == 0);
    // All zero: d = dmin = 0, n = 0. A non-finite value zeroes its sub-block only.
    std::fill(x, x + kSuper, 0.0f);
    quantize_q2k_super(x, n, sm, &d, &dmin);
    CHECK(d == 0);
    CHECK(dmin == 0);
    std::mt19937 rng(3);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    double err2 = 0, step2 = 0;
    for (int trial = 0; trial < 200; ++trial) {
        for (float& v : x) v = normal(rng) * 0.02f;
        if (trial == 0) x[40] = std::nanf("");  // sub-block 2 becomes zeros
        quantize_q2k_super(x, n, sm, &d, &dmin);
        for (int s = 0; s < 16; ++s) {
            const float ws = f16_to_f32(d) * float(sm[s] & 15), wm = f16_to_f32(dmin) * float(sm[s] >> 4);
            if (trial == 0 && s == 2) {
                CHECK(int(sm[s] & 15) == 0);
                for (int i = 32; i < 48; ++i) CHECK(n[i] == 0);
                continue;
            }
            for (int i = s * 16; i < s * 16 + 16; ++i) {
                REQUIRE(n[i] <= 3);
                const double e = double(x[i]) - (double(ws) * n[i] - double(wm));
                err2 += e * e;
                step2 += double(ws) * ws;
            }
        }
    }
    // Rounding to a uniform grid leaves an RMS error of step / sqrt(12) = 0.29
    // step (0.27 measured: the step is the rounded scale's).
    MESSAGE("q2k quantizer RMS error / RMS step: ", std::sqrt(err2 / step2));
    CHECK(std::sqrt(err2 / step2) < 0.35);
}

TEST_CASE("q2k matmul equals the reference exactly on every target (given blocks, exact fp32 sums)") {
    std::mt19937 rng(17);
    for_each_target([&](const KernelTable& kt) {
        for (const int k : {256, 768})
            for (const int n : {1, 16, 33}) {
                const std::vector<uint8_t> blocks = random_blocks(n, k, true, rng);
                Buffer buf(packed_bytes(WeightType::q2k, n, k));
                pack_q2k_ggml(blocks.data(), n, k, 0, n, buf.data());
                const PackedMatrix w{WeightType::q2k, n, k, buf.data(), buf.size()};
                const Fields f = fields_of(blocks, n, k);
                for (const int m : {0, 1, 2, 6, 7, 13, 40})
                    for (const int threads : {1, 2}) check_matmul(kt, w, f, m, threads, true, rng);
                for (const int m : {1, 3, 7}) check_matmul(kt, w, f, m, 2, true, rng, 16);
            }
        // Rows split over threads (prefill of a narrow matrix) and panels split.
        for (const auto& [m, n] : {std::pair{100, 17}, std::pair{29, 200}}) {
            const std::vector<uint8_t> blocks = random_blocks(n, 512, true, rng);
            Buffer buf(packed_bytes(WeightType::q2k, n, 512));
            pack_q2k_ggml(blocks.data(), n, 512, 0, n, buf.data());
            const PackedMatrix w{WeightType::q2k, n, 512, buf.data(), buf.size()};
            for (const int threads : {1, 2}) check_matmul(kt, w, fields_of(blocks, n, 512), m, threads, true, rng);
        }
    });
}

TEST_CASE("q2k matmul matches the reference on random data on every target (float sources, odd n, k tails)") {
    std::mt19937 rng(19);
    for_each_target([&](const KernelTable& kt) {
        for (const int k : {1, 33, 300, 512})
            for (const int n : {17, 48}) harness::check_affine_from_floats(kt, kRef, n, k, rng);
    });
}
