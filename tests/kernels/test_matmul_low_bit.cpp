// The low-bit formats q4 and q5: q4's scale search against hand-computed
// groups and against round-to-nearest, q5's round-to-nearest on hand-computed
// groups, the documented nibble and bit layouts, exact repacking of given
// quants (GGUF Q4_0, Q5_0), and every runnable target's matmul against the
// reference (ref::matmul_q8 of the q values: exactly where the fp32 sums are
// exact, else tightly), and q5 against q8 holding the same values, bit for bit.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/formats/format.hpp"
#include "formats/q4/layout.hpp"
#include "formats/q4a/layout.hpp"
#include "formats/q5a/layout.hpp"
#include "formats/q4k/layout.hpp"
#include "formats/q5/layout.hpp"
#include "formats/q5k/layout.hpp"
#include "formats/q6k/layout.hpp"
#include "formats/q8/layout.hpp"
#include "kernels/kernels.hpp"
#include "kernels/memory.hpp"
#include "kernels/ref.hpp"
#include "staticlm/error.hpp"
#include "format_matmul_harness.hpp"
#include "targets.hpp"

using namespace staticlm;
using namespace staticlm::kernels;

namespace {

constexpr int G = kQ8Group;

// Σ w (x - s q)² with w = x² + mean(x²), the error the search minimizes.
double weighted_error(const float* x, const int8_t* q, float s) {
    double mean2 = 0;
    for (int i = 0; i < G; ++i) mean2 += double(x[i]) * x[i];
    mean2 /= G;
    double e = 0;
    for (int i = 0; i < G; ++i) {
        const double d = double(x[i]) - double(s) * q[i];
        e += (double(x[i]) * x[i] + mean2) * d * d;
    }
    return e;
}

// llama.cpp's Q4_0 rule (round to nearest, the largest |x| at -8), written
// from its definition: d = max / -8 as a half, q = clamp(round(x / d)).
float rtn_q4(const float* x, int8_t* q) {
    float amax = 0, mx = 0;
    for (int i = 0; i < G; ++i)
        if (std::fabs(x[i]) > amax) amax = std::fabs(x[i]), mx = x[i];
    const float d = f16_to_f32(f32_to_f16(mx / -8.0f));
    for (int i = 0; i < G; ++i)
        q[i] = d == 0 ? 0 : int8_t(std::clamp(std::round(x[i] / d), -8.0f, 7.0f));
    return d;
}

// What the tests need of a low-bit format: its q range, the documented block
// (bytes, where the scales are, how row r's k = j is read from the bytes),
// the reference quantizer and the packer of given quants.
struct LowBit {
    WeightType type;
    int lo, hi;
    size_t block_bytes, scale_off;
    int (*block_q)(const uint8_t* blk, int r, int j);
    void (*ref_row)(const float* x, int k, int8_t* q, float* scale);
    void (*pack_given)(const int8_t* q, const uint16_t* scales, int n, int k, int n0, int n1, std::byte* dst);
};

// The layouts as q4.hpp and q5.hpp document them, read independently.
int q4_block_q(const uint8_t* blk, int r, int j) {
    const uint8_t byte = blk[(j / 8) * 64 + r * 4 + j % 4];
    return ((j % 8) < 4 ? byte & 15 : byte >> 4) - 8;
}
int q5_block_q(const uint8_t* blk, int r, int j) {
    const uint8_t byte = blk[(j / 8) * 64 + r * 4 + j % 4];
    const int bit = 4 * r + j % 4;  // of quad j / 4's little-endian 64-bit word
    const int hi = (blk[256 + 8 * (j / 4) + bit / 8] >> (bit % 8)) & 1;
    return ((j % 8) < 4 ? byte & 15 : byte >> 4) + 16 * hi - 16;
}

const LowBit kQ4{WeightType::q4, -8, 7, 288, 256, q4_block_q, ref::quantize_weight_row_q4, pack_q4_quants};
const LowBit kQ5{WeightType::q5, -16, 15, 352, 320, q5_block_q, ref::quantize_weight_row_q5, pack_q5_quants};

struct LowBitMatrix {
    Buffer buf;
    PackedMatrix w;
    std::vector<int8_t> q;  // [n][k_pad]
    std::vector<float> s;   // [n][k_pad/32]
};

LowBitMatrix make_matrix(const LowBit& f, const KernelTable& kt, const std::vector<float>& src, int n, int k) {
    LowBitMatrix m;
    m.w = harness::pack_from_floats(kt, f.type, src, n, k, m.buf);
    const int kp = padded_k(f.type, k);
    m.q.resize(size_t(n) * size_t(kp));
    m.s.resize(size_t(n) * size_t(kp / G));
    for (int r = 0; r < n; ++r)
        f.ref_row(src.data() + size_t(r) * size_t(k), k, m.q.data() + size_t(r) * kp,
                  m.s.data() + size_t(r) * size_t(kp / G));
    return m;
}

// Groups that the format holds exactly: q in [lo, hi] times a power of two,
// lo at the largest |x| (so round to nearest finds the scale and the error is 0).
std::vector<float> exact_values(const LowBit& f, int rows, int k, std::mt19937& rng) {
    std::vector<float> v(size_t(rows) * size_t(k));
    std::uniform_int_distribution<int> small(f.lo + 1, -f.lo - 1), expo(-2, 0), pos(0, G - 1), sign(0, 1);
    for (int r = 0; r < rows; ++r)
        for (int g0 = 0; g0 < k; g0 += G) {
            const float scale = std::ldexp(1.0f, expo(rng)) * (sign(rng) ? 1.0f : -1.0f);
            const int len = std::min(G, k - g0);
            const int big = pos(rng) % len;
            for (int i = 0; i < len; ++i)
                v[size_t(r) * size_t(k) + size_t(g0 + i)] = float(i == big ? f.lo : small(rng)) * scale;
        }
    return v;
}

}  // namespace

TEST_CASE("q4 quantizer: hand-computed groups") {
    float x[G] = {};
    int8_t q[G];
    SUBCASE("exact group: the largest |x| takes -8, the scale carries the sign") {
        x[0] = 8.0f;  // scale -1: 8 -> -8
        x[1] = -7.0f;
        x[2] = 3.0f;
        x[5] = 0.0f;
        CHECK(quantize_q4_group(x, q) == -1.0f);
        CHECK(q[0] == -8);
        CHECK(q[1] == 7);
        CHECK(q[2] == -3);
        for (int i = 3; i < G; ++i) CHECK(q[i] == 0);
    }
    SUBCASE("exact group with a negative maximum and a fractional scale") {
        x[3] = -2.0f;  // scale 0.25
        x[4] = 1.75f;
        x[7] = -0.25f;
        CHECK(quantize_q4_group(x, q) == 0.25f);
        CHECK(q[3] == -8);
        CHECK(q[4] == 7);
        CHECK(q[7] == -1);
    }
    SUBCASE("all zero, NaN and inf give scale 0 and q 0") {
        CHECK(quantize_q4_group(x, q) == 0.0f);
        for (int i = 0; i < G; ++i) CHECK(q[i] == 0);
        x[1] = 1.0f;
        x[9] = std::nanf("");
        CHECK(quantize_q4_group(x, q) == 0.0f);
        for (int i = 0; i < G; ++i) CHECK(q[i] == 0);
        x[9] = -INFINITY;
        CHECK(quantize_q4_group(x, q) == 0.0f);
    }
    SUBCASE("between the grid points round to nearest wastes: the search does not") {
        // Largest |x| 7.5 puts round to nearest at scale -0.9375, where the
        // values 3 (q = -3.2) and -5 (q = 5.33) land between levels; scale -1
        // is a half that the candidates reach and holds all but the 7.5
        // (error 0.25 on it) exactly.
        for (int i = 0; i < G; ++i) x[i] = i % 2 ? 3.0f : -5.0f;
        x[0] = 7.5f;
        int8_t qr[G];
        const float sr = rtn_q4(x, qr);
        CHECK(sr == -0.9375f);
        const float s = quantize_q4_group(x, q);
        CHECK(weighted_error(x, q, s) < 0.5 * weighted_error(x, qr, sr));
    }
    SUBCASE("huge values: the scale stays a finite half") {
        x[0] = 3e38f;
        x[1] = -1e38f;
        const float s = quantize_q4_group(x, q);
        CHECK(std::isfinite(s));
        CHECK(s == f16_to_f32(f32_to_f16(s)));
        CHECK(std::fabs(s) == 65504.0f);
    }
}

TEST_CASE("q4 quantizer: never worse than round to nearest, better on average") {
    std::mt19937 rng(11);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::student_t_distribution<float> heavy(3.0f);  // weights have outliers
    double sum_search = 0, sum_rtn = 0;
    for (int trial = 0; trial < 2000; ++trial) {
        float x[G];
        for (float& v : x) v = trial % 2 ? normal(rng) : heavy(rng) * 0.02f;
        int8_t q[G], qr[G];
        const float s = quantize_q4_group(x, q);
        const float sr = rtn_q4(x, qr);
        REQUIRE(s == f16_to_f32(f32_to_f16(s)));
        for (int i = 0; i < G; ++i) REQUIRE((q[i] >= -8 && q[i] <= 7));
        const double e = weighted_error(x, q, s), er = weighted_error(x, qr, sr);
        CHECK(e <= er * (1 + 1e-12));
        sum_search += e;
        sum_rtn += er;
    }
    MESSAGE("q4 weighted error, search / round to nearest: ", sum_search / sum_rtn);
    CHECK(sum_search < 0.9 * sum_rtn);  // 0.857 measured
}

TEST_CASE("q5 quantizer: round to nearest on hand-computed groups") {
    float x[G] = {};
    int8_t q[G];
    SUBCASE("the largest |x| takes -16, halves round away from zero, +16 clamps to 15") {
        x[0] = 16.0f;  // scale -1
        x[1] = 2.5f;   // -2.5 -> -3
        x[2] = -0.5f;  // 0.5 -> 1
        x[3] = -16.0f;  // 16 -> 15
        x[4] = 15.0f;
        CHECK(quantize_q5_group(x, q) == -1.0f);
        CHECK(q[0] == -16);
        CHECK(q[1] == -3);
        CHECK(q[2] == 1);
        CHECK(q[3] == 15);
        CHECK(q[4] == -15);
        for (int i = 5; i < G; ++i) CHECK(q[i] == 0);
    }
    SUBCASE("a negative maximum: positive scale; the scale is rounded to a half first") {
        x[7] = -3.2f;  // scale half(0.2) = 0.199951171875
        x[8] = 1.0f;   // 1 / 0.19995 = 5.0012 -> 5
        const float s = quantize_q5_group(x, q);
        CHECK(s == 0.199951171875f);
        CHECK(q[7] == -16);
        CHECK(q[8] == 5);
    }
    SUBCASE("all zero, NaN and inf give scale 0 and q 0; huge values a finite half") {
        CHECK(quantize_q5_group(x, q) == 0.0f);
        x[1] = 1.0f;
        x[9] = std::nanf("");
        CHECK(quantize_q5_group(x, q) == 0.0f);
        for (int i = 0; i < G; ++i) CHECK(q[i] == 0);
        x[9] = 3e38f;
        x[1] = -1e38f;
        CHECK(std::fabs(quantize_q5_group(x, q)) == 65504.0f);
    }
}

TEST_CASE("low-bit panels: the documented layouts, unpack_row, every target") {
    std::mt19937 rng(5);
    for (const LowBit* fp : {&kQ4, &kQ5})
    for_each_target([&](const KernelTable& kt) {
        const LowBit& f = *fp;
        CAPTURE(weight_type_name(f.type));
        for (int k : {1, 31, 32, 33, 100, 300})
            for (int n : {1, 15, 16, 17, 40}) {
                CAPTURE(k);
                CAPTURE(n);
                const std::vector<float> src = harness::random_values(size_t(n) * size_t(k), rng);
                LowBitMatrix m = make_matrix(f, kt, src, n, k);
                const int kp = padded_k(f.type, k), ng = kp / G;
                const size_t panel = format_info(f.type).panel_bytes(k);
                REQUIRE(panel == size_t(ng) * f.block_bytes);
                int bad = 0;
                for (int r = 0; r < ((n + 15) / 16) * 16; ++r)
                    for (int g = 0; g < ng; ++g) {
                        const auto* blk = reinterpret_cast<const uint8_t*>(m.buf.data()) + size_t(r / 16) * panel +
                                          size_t(g) * f.block_bytes;
                        const int rr = r % 16;
                        uint16_t h;
                        std::memcpy(&h, blk + f.scale_off + 2 * rr, 2);
                        const float want_s = r < n ? m.s[size_t(r) * ng + g] : 0.0f;
                        if (f16_to_f32(h) != want_s && bad++ < 5) FAIL_CHECK("scale r ", r, " g ", g);
                        for (int j = 0; j < G; ++j) {
                            const int want = r < n ? m.q[size_t(r) * kp + size_t(g * G + j)] : 0;
                            if (f.block_q(blk, rr, j) != want && bad++ < 5) FAIL_CHECK("q r ", r, " k ", g * G + j);
                        }
                    }
                std::vector<float> row(static_cast<size_t>(k));
                for (int r = 0; r < n; ++r) {
                    unpack_row(m.w, r, 2.0f, row.data());
                    for (int i = 0; i < k; ++i) {
                        const float want = float(m.q[size_t(r) * kp + i]) * m.s[size_t(r) * ng + i / G] * 2.0f;
                        if (row[size_t(i)] != want && bad++ < 5) FAIL_CHECK("unpack r ", r, " i ", i);
                    }
                }
                CHECK(bad == 0);
            }
    });
}

TEST_CASE("low-bit formats from given quants (GGUF Q4_0, Q5_0): exact, row ranges, range checked") {
    for (const LowBit* fp : {&kQ4, &kQ5}) {
    const LowBit& f = *fp;
    CAPTURE(weight_type_name(f.type));
    const int n = 20, k = 64;
    std::mt19937 rng(2);
    std::uniform_int_distribution<int> val(f.lo, f.hi);
    std::vector<int8_t> q(size_t(n) * k);
    std::vector<uint16_t> s(size_t(n) * (k / G));
    for (auto& v : q) v = int8_t(val(rng));
    for (size_t i = 0; i < s.size(); ++i) s[i] = f32_to_f16(0.01f * float(i + 1) * (i % 3 ? 1.0f : -1.0f));
    Buffer buf(packed_bytes(f.type, n, k));
    const PackedMatrix w{f.type, n, k, buf.data(), buf.size()};
    f.pack_given(q.data(), s.data(), n, k, 0, 16, buf.data());
    f.pack_given(q.data() + 16 * k, s.data() + 16 * (k / G), n, k, 16, n, buf.data());
    std::vector<float> row(k);
    for (int r = 0; r < n; ++r) {
        unpack_row(w, r, 1.0f, row.data());
        for (int i = 0; i < k; ++i)
            REQUIRE(row[size_t(i)] == float(q[size_t(r) * k + i]) * f16_to_f32(s[size_t(r) * (k / G) + i / G]));
    }
    // Padding rows 20..31 of the last panel read back as zeros (unpack_row
    // stops at n, so read the block directly).
    const auto* last = reinterpret_cast<const uint8_t*>(buf.data()) + format_info(f.type).panel_bytes(k);
    for (int rr = n - 16; rr < 16; ++rr)
        for (int j = 0; j < G; ++j) REQUIRE(f.block_q(last, rr, j) == 0);
    const std::string name = f.type == WeightType::q4 ? "pack_q4_quants" : "pack_q5_quants";
    q[5] = int8_t(f.hi + 1);
    CHECK_THROWS_WITH_AS(f.pack_given(q.data(), s.data(), n, k, 0, 16, buf.data()),
                         (name + ": value " + std::to_string(f.hi + 1) + " of row 0 is outside [" +
                          std::to_string(f.lo) + ", " + std::to_string(f.hi) + "]").c_str(),
                         Error);
    q[5] = int8_t(f.lo - 1);
    CHECK_THROWS_AS(f.pack_given(q.data(), s.data(), n, k, 0, 16, buf.data()), Error);
    CHECK_THROWS_AS(f.pack_given(q.data(), s.data(), n, 48, 0, 16, buf.data()), Error);
    }
}

namespace {

// kt's q4 or q5 matmul on a strided, misaligned x and y
// (format_matmul_harness.hpp) against ref::matmul_q8 of the
// reference-quantized weights; exact: bitwise, else a tight bound.
void check_matmul(const LowBit& f, const KernelTable& kt, int m, int n, int k, int n_threads, bool exact,
                  std::mt19937& rng, int act_bits = 8) {
    const std::vector<float> w =
        exact ? exact_values(f, n, k, rng) : harness::random_values(size_t(n) * size_t(k), rng);
    LowBitMatrix mat = make_matrix(f, kt, w, n, k);
    mat.w.act_bits = act_bits;
    const harness::MatmulRun run = harness::run_matmul(kt, mat.w, m, n_threads, exact, rng);
    std::vector<float> yref(size_t(m) * size_t(n));
    ref::matmul_q8(mat.q.data(), mat.s.data(), n, k, run.x(), run.ldx, m, yref.data(), size_t(n), act_bits);
    harness::check_outputs(run, yref, exact, exact ? std::vector<double>{} : harness::abs_values(w), size_t(k));
}

}  // namespace

TEST_CASE("low-bit matmuls equal the reference exactly on every target (exact fp32 sums)") {
    std::mt19937 rng(7);
    for (const LowBit* f : {&kQ4, &kQ5})
        for_each_target([&](const KernelTable& kt) {
            for (int m : {0, 1, 2, 3, 5, 6, 7, 13})
                for (int n : {1, 15, 16, 17, 33, 48})
                    for (int k : {1, 31, 32, 33, 64, 100})
                        for (int threads : {1, 2}) check_matmul(*f, kt, m, n, k, threads, true, rng);
            for (int threads : {1, 2}) {
                check_matmul(*f, kt, 64, 33, 100, threads, true, rng);
                check_matmul(*f, kt, 100, 17, 33, threads, true, rng);  // rows split
                check_matmul(*f, kt, 29, 200, 64, threads, true, rng);  // panels split
                // avx512-amx: three AMX blocks over one chunk of 10 groups,
                // then 5 rows on VNNI; nine blocks (a set of eight, then one)
                // over chunks of 64 groups and a tail of 2.
                check_matmul(*f, kt, 53, 33, 300, threads, true, rng);
                check_matmul(*f, kt, 150, 33, 2100, threads, true, rng);
                for (int m : {1, 7, 17}) check_matmul(*f, kt, m, 33, 100, threads, true, rng, 16);
            }
        });
}

TEST_CASE("low-bit matmuls match the reference on random data on every target") {
    std::mt19937 rng(9);
    for (const LowBit* f : {&kQ4, &kQ5})
        for_each_target([&](const KernelTable& kt) {
            for (int m : {1, 2, 5, 12, 64})
                for (int n : {17, 33, 80})
                    for (int k : {33, 100, 256})
                        for (int threads : {1, 2}) check_matmul(*f, kt, m, n, k, threads, false, rng);
            check_matmul(*f, kt, 70, 130, 300, 2, false, rng);
            for (int m : {1, 5, 17})
                for (int k : {33, 300}) check_matmul(*f, kt, m, 40, k, 2, false, rng, 16);
        });
}

// A Q5_0 file loads as q5 (native) or as q8 (--weights q8) holding the same
// values; both matmuls compute the exact group sums and the same fp32
// epilogue, so every output is the same bits, on every target, for decode and
// prefill shapes (16-row AMX blocks for q8 where the CPU has them).
TEST_CASE("q5 and q8 holding the same Q5_0 values give the same bits on every target") {
    std::mt19937 rng(13);
    std::uniform_int_distribution<int> val(-16, 15);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (const int k : {32, 96, 640})
        for (const int n : {17, 48}) {
            CAPTURE(k);
            CAPTURE(n);
            std::vector<int8_t> q(size_t(n) * size_t(k));
            std::vector<uint16_t> s(size_t(n) * size_t(k / G));
            for (auto& v : q) v = int8_t(val(rng));
            for (auto& v : s) v = f32_to_f16(0.05f * normal(rng));
            Buffer b5(packed_bytes(WeightType::q5, n, k)), b8(packed_bytes(WeightType::q8, n, k));
            pack_q5_quants(q.data(), s.data(), n, k, 0, n, b5.data());
            pack_q8_quants(q.data(), s.data(), n, k, 0, n, b8.data());
            const PackedMatrix w5{WeightType::q5, n, k, b5.data(), b5.size()};
            const PackedMatrix w8{WeightType::q8, n, k, b8.data(), b8.size()};
            for (const int m : {1, 3, 16, 37}) {
                CAPTURE(m);
                std::vector<float> x(size_t(m) * size_t(k));
                for (float& v : x) v = normal(rng);
                for_each_target([&](const KernelTable& kt) {
                    std::vector<float> y5(size_t(m) * size_t(n)), y8(y5.size());
                    Buffer scratch(std::max<size_t>(matmul_scratch_bytes(WeightType::q8, m, k), 64));
                    REQUIRE(matmul_scratch_bytes(WeightType::q5, m, k) == matmul_scratch_bytes(WeightType::q8, m, k));
                    matmul(kt, w5, x.data(), size_t(k), m, y5.data(), size_t(n), scratch.data(), 2);
                    matmul(kt, w8, x.data(), size_t(k), m, y8.data(), size_t(n), scratch.data(), 2);
                    int bad = 0;
                    for (size_t i = 0; i < y5.size(); ++i)
                        if (std::memcmp(&y5[i], &y8[i], 4) != 0 && bad++ < 5) FAIL_CHECK("output ", i, ": ", y5[i], " != ", y8[i]);
                    CHECK(bad == 0);
                });
            }
        }
}

// ---------------------------------------------------------------------------
// q4k and q5k (GGUF Q4_K and Q5_K kept as super-blocks)
// ---------------------------------------------------------------------------

namespace {

// What the tests need of q4k / q5k: the largest n, the documented sizes, the
// packer of given fields and the reference quantizers.
struct AffineK {
    WeightType type;
    int levels;
    size_t group_bytes, super_bytes;
    void (*pack_given)(const uint8_t*, const uint8_t*, const uint8_t*, const uint16_t*, const uint16_t*, int, int,
                       int, int, std::byte*);
    void (*quantize_super)(const float*, uint8_t*, uint8_t*, uint8_t*, uint16_t*, uint16_t*);
    void (*ref_row)(const float*, int, uint8_t*, float*, float*);
    const char* name;
};
const AffineK kQ4k{WeightType::q4k, 15, 288, 2368, pack_q4k_quants, quantize_q4k_super,
                   ref::quantize_weight_row_q4k, "q4k"};
const AffineK kQ5k{WeightType::q5k, 31, 352, 2880, pack_q5k_quants, quantize_q5k_super,
                   ref::quantize_weight_row_q5k, "q5k"};

// Given Q4_K fields for n rows × k (k a multiple of 256): random nibbles and
// 6-bit scales/mins; d and dmin powers of two (exact = true: every product of
// the matmul is then exact in fp32) or random halves.
struct Q4kFields {
    int n, k;
    std::vector<uint8_t> q, sc, m;
    std::vector<uint16_t> d, dmin;
};

Q4kFields random_q4k(int n, int k, bool exact, std::mt19937& rng, int levels = 15) {
    Q4kFields f{n, k, {}, {}, {}, {}, {}};
    std::uniform_int_distribution<int> nib(0, levels), six(0, 63), expo(-8, -5);
    std::uniform_real_distribution<float> u(0.001f, 0.05f);
    f.q.resize(size_t(n) * size_t(k));
    f.sc.resize(size_t(n) * size_t(k / G));
    f.m.resize(f.sc.size());
    f.d.resize(size_t(n) * size_t(k / 256));
    f.dmin.resize(f.d.size());
    for (auto& v : f.q) v = uint8_t(nib(rng));
    for (auto& v : f.sc) v = uint8_t(six(rng));
    for (auto& v : f.m) v = uint8_t(six(rng));
    for (size_t i = 0; i < f.d.size(); ++i) {
        f.d[i] = f32_to_f16(exact ? std::ldexp(1.0f, expo(rng)) : u(rng));
        f.dmin[i] = f32_to_f16(exact ? std::ldexp(1.0f, expo(rng)) : u(rng));
    }
    return f;
}

// The fields as the reference takes them: ws = d·sc, wm = dmin·m per group.
void q4k_ref_scales(const Q4kFields& f, std::vector<float>& ws, std::vector<float>& wm) {
    const int groups = f.k / G;
    ws.resize(size_t(f.n) * size_t(groups));
    wm.resize(ws.size());
    for (int r = 0; r < f.n; ++r)
        for (int g = 0; g < groups; ++g) {
            const size_t i = size_t(r) * size_t(groups) + size_t(g), s = size_t(r) * size_t(f.k / 256) + size_t(g / 8);
            ws[i] = f16_to_f32(f.d[s]) * float(f.sc[i]);
            wm[i] = f16_to_f32(f.dmin[s]) * float(f.m[i]);
        }
}

// ref::matmul_affine at q4k's and q5k's padding of k (to 256) and at q4a's and
// q5a's (to 32).
void ref_matmul_k256(const uint8_t* wn, const float* ws, const float* wm, int n, int k, const float* x, size_t ldx,
                     int m, float* y, size_t ldy, int act_bits) {
    ref::matmul_affine(wn, ws, wm, n, k, padded_k(WeightType::q4k, k), x, ldx, m, y, ldy, act_bits);
}
void ref_matmul_k32(const uint8_t* wn, const float* ws, const float* wm, int n, int k, const float* x, size_t ldx,
                    int m, float* y, size_t ldy, int act_bits) {
    ref::matmul_affine(wn, ws, wm, n, k, padded_k(WeightType::q4a, k), x, ldx, m, y, ldy, act_bits);
}

// The matmul checks' reference of an affine format (q4k, q5k, q4a, q5a;
// format_matmul_harness.hpp): ref::matmul_affine of its fields, on x and y at
// strides k + 5 and n + 3.
harness::AffineRef affine_ref(WeightType type, void (*ref_row)(const float*, int, uint8_t*, float*, float*)) {
    const bool super = type == WeightType::q4k || type == WeightType::q5k;
    REQUIRE(padded_k(type, 1) == (super ? 256 : 32));
    return {type, G, ref_row, super ? ref_matmul_k256 : ref_matmul_k32, 5, 3};
}

void check_affine_k_matmul(const KernelTable& kt, const PackedMatrix& w, const std::vector<uint8_t>& wn,
                           const std::vector<float>& ws, const std::vector<float>& wm, int m, int n_threads,
                           bool exact, std::mt19937& rng) {
    harness::check_affine(kt, affine_ref(w.type, nullptr), w, wn, ws, wm, m, n_threads, exact, rng);
}

}  // namespace

TEST_CASE("q4k and q5k from given Q4_K / Q5_K fields: the documented layout, unpack_row, range checks") {
    for (const AffineK* fp : {&kQ4k, &kQ5k}) {
    const AffineK& fmt = *fp;
    CAPTURE(fmt.name);
    const size_t GB = fmt.group_bytes, SB = fmt.super_bytes;
    std::mt19937 rng(21);
    const int n = 20, k = 512;
    const Q4kFields f = random_q4k(n, k, false, rng, fmt.levels);
    Buffer buf(packed_bytes(fmt.type, n, k));
    REQUIRE(buf.size() == 2 * 2 * SB);  // 2 panels × 2 super-blocks
    fmt.pack_given(f.q.data(), f.sc.data(), f.m.data(), f.d.data(), f.dmin.data(), n, k, 0, 16, buf.data());
    fmt.pack_given(f.q.data() + 16 * k, f.sc.data() + 16 * (k / G), f.m.data() + 16 * (k / G),
                   f.d.data() + 16 * 2, f.dmin.data() + 16 * 2, n, k, 16, n, buf.data());
    const PackedMatrix w{fmt.type, n, k, buf.data(), buf.size()};
    const auto* bytes = reinterpret_cast<const uint8_t*>(buf.data());
    std::vector<float> row(static_cast<size_t>(k));
    int bad = 0;
    for (int r = 0; r < 32; ++r) {
        const uint8_t* panel = bytes + size_t(r / 16) * 2 * SB;
        const int rr = r % 16;
        for (int s = 0; s < 2; ++s) {
            const uint8_t* sup = panel + size_t(s) * SB;
            uint16_t d, dmin;
            std::memcpy(&d, sup + 8 * GB + 2 * rr, 2);
            std::memcpy(&dmin, sup + 8 * GB + 32 + 2 * rr, 2);
            CHECK(d == (r < n ? f.d[size_t(r) * 2 + size_t(s)] : 0));
            CHECK(dmin == (r < n ? f.dmin[size_t(r) * 2 + size_t(s)] : 0));
            for (int g = 0; g < 8; ++g) {
                const uint8_t* grp = sup + size_t(g) * GB;
                const size_t gi = size_t(r) * size_t(k / G) + size_t(s * 8 + g);
                if (grp[GB - 32 + rr] != (r < n ? f.sc[gi] : 0) && bad++ < 5) FAIL_CHECK("sc r ", r, " g ", g);
                if (grp[GB - 16 + rr] != (r < n ? f.m[gi] : 0) && bad++ < 5) FAIL_CHECK("m r ", r, " g ", g);
                for (int j = 0; j < G; ++j) {
                    // q4k: the nibbles; q5k: q5's nibble and bit planes.
                    const int nib = fmt.levels == 15 ? q4_block_q(grp, rr, j) + 8 : q5_block_q(grp, rr, j) + 16;
                    const int want = r < n ? f.q[size_t(r) * k + size_t((s * 8 + g) * G + j)] : 0;
                    if (nib != want && bad++ < 5) FAIL_CHECK("q r ", r, " k ", (s * 8 + g) * G + j);
                }
            }
        }
    }
    std::vector<float> ws, wm;
    q4k_ref_scales(f, ws, wm);
    for (int r = 0; r < n; ++r) {
        unpack_row(w, r, 1.0f, row.data());
        for (int i = 0; i < k; ++i) {
            const size_t gi = size_t(r) * size_t(k / G) + size_t(i / G);
            const float want = ws[gi] * float(f.q[size_t(r) * k + i]) - wm[gi];  // dequantize_ggml's order
            if (row[size_t(i)] != want && bad++ < 5) FAIL_CHECK("unpack r ", r, " i ", i);
        }
    }
    CHECK(bad == 0);
    std::vector<uint8_t> q = f.q, sc = f.sc;
    q[7] = uint8_t(fmt.levels + 1);
    const std::string msg = std::string("pack_") + fmt.name + "_quants: value " + std::to_string(fmt.levels + 1) +
                            " of row 0 is outside [0, " + std::to_string(fmt.levels) + "]";
    CHECK_THROWS_WITH_AS(fmt.pack_given(q.data(), f.sc.data(), f.m.data(), f.d.data(), f.dmin.data(), n, k, 0, 16,
                                        buf.data()),
                         msg.c_str(), Error);
    sc[3] = 64;
    CHECK_THROWS_AS(fmt.pack_given(f.q.data(), sc.data(), f.m.data(), f.d.data(), f.dmin.data(), n, k, 0, 16,
                                   buf.data()),
                    Error);
    CHECK_THROWS_AS(fmt.pack_given(f.q.data(), f.sc.data(), f.m.data(), f.d.data(), f.dmin.data(), n, 288, 0, 16,
                                   buf.data()),
                    Error);  // not whole super-blocks
    }
}

TEST_CASE("q4k and q5k quantizers: zeros, non-finite groups, error within the rounding step") {
    for (const AffineK* fp : {&kQ4k, &kQ5k}) {
    const AffineK& fmt = *fp;
    CAPTURE(fmt.name);
    float x[256] = {};
    uint8_t n[256], sc[8], m[8];
    uint16_t d, dmin;
    fmt.quantize_super(x, n, sc, m, &d, &dmin);
    CHECK(f16_to_f32(d) == 0.0f);
    CHECK(f16_to_f32(dmin) == 0.0f);
    for (int i = 0; i < 256; ++i) CHECK(n[i] == 0);
    std::mt19937 rng(3);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    double err2 = 0, step2 = 0;
    for (int trial = 0; trial < 200; ++trial) {
        for (float& v : x) v = normal(rng) * 0.02f;
        if (trial == 0) x[40] = std::nanf("");  // group 1 becomes zeros
        fmt.quantize_super(x, n, sc, m, &d, &dmin);
        for (int g = 0; g < 8; ++g) {
            const float ws = f16_to_f32(d) * float(sc[g]), wm = f16_to_f32(dmin) * float(m[g]);
            if (trial == 0 && g == 1) {
                for (int i = 32; i < 64; ++i) CHECK(n[i] == 0);
                continue;
            }
            for (int i = g * 32; i < g * 32 + 32; ++i) {
                REQUIRE(n[i] <= fmt.levels);
                const double e = double(x[i]) - (double(ws) * n[i] - double(wm));
                err2 += e * e;
                step2 += double(ws) * ws;
            }
        }
    }
    // Rounding to a uniform grid leaves an RMS error of step / sqrt(12) = 0.29 step.
    MESSAGE(fmt.name, " quantizer RMS error / RMS step: ", std::sqrt(err2 / step2));
    CHECK(std::sqrt(err2 / step2) < 0.35);
    }
}

TEST_CASE("q4k and q5k matmuls equal the reference exactly on every target (exact fp32 sums)") {
    std::mt19937 rng(17);
    for (const AffineK* fp : {&kQ4k, &kQ5k})
    for_each_target([&](const KernelTable& kt) {
        const AffineK& fmt = *fp;
        CAPTURE(fmt.name);
        for (const int k : {256, 768, 2304})  // 2304: a chunk of 64 groups and 8 more
            for (const int n : {1, 16, 33}) {
                const Q4kFields f = random_q4k(n, k, true, rng, fmt.levels);
                Buffer buf(packed_bytes(fmt.type, n, k));
                fmt.pack_given(f.q.data(), f.sc.data(), f.m.data(), f.d.data(), f.dmin.data(), n, k, 0, n,
                               buf.data());
                const PackedMatrix w{fmt.type, n, k, buf.data(), buf.size()};
                std::vector<float> ws, wm;
                q4k_ref_scales(f, ws, wm);
                // avx512-amx: 16 and 24 rows stream one AMX block, 53 run
                // three and five rows on VNNI, 150 nine (eight, then one).
                for (const int m : {0, 1, 2, 6, 7, 13, 16, 24, 40, 53, 150})
                    for (const int threads : {1, 2}) check_affine_k_matmul(kt, w, f.q, ws, wm, m, threads, true, rng);
            }
    });
}

TEST_CASE("q4k and q5k matmuls match the reference on random data on every target (float sources, padded k)") {
    std::mt19937 rng(19);
    for (const AffineK* fp : {&kQ4k, &kQ5k})
    for_each_target([&](const KernelTable& kt) {
        const AffineK& fmt = *fp;
        CAPTURE(fmt.name);
        for (const int k : {1, 33, 300, 512})
            for (const int n : {17, 48}) {
                harness::check_affine_from_floats(kt, affine_ref(fmt.type, fmt.ref_row), n, k, rng);
            }
    });
}

// ---------------------------------------------------------------------------
// q6k (GGUF Q6_K kept as super-blocks)
// ---------------------------------------------------------------------------

namespace {

struct Q6kFields {
    int n, k;
    std::vector<uint8_t> q;  // n in [0, 63]
    std::vector<int8_t> sc;  // per 16
    std::vector<uint16_t> d;
};

// Random fields; exact = true: d a power of two and small scales, so that
// every product of the matmul is exact in fp32.
Q6kFields random_q6k(int n, int k, bool exact, std::mt19937& rng) {
    Q6kFields f{n, k, {}, {}, {}};
    std::uniform_int_distribution<int> six(0, 63), scale(exact ? -8 : -128, exact ? 8 : 127), expo(-10, -7);
    std::uniform_real_distribution<float> u(0.0001f, 0.01f);
    f.q.resize(size_t(n) * size_t(k));
    f.sc.resize(size_t(n) * size_t(k / 16));
    f.d.resize(size_t(n) * size_t(k / 256));
    for (auto& v : f.q) v = uint8_t(six(rng));
    for (auto& v : f.sc) v = int8_t(scale(rng));
    for (auto& v : f.d) v = f32_to_f16(exact ? std::ldexp(1.0f, expo(rng)) : u(rng));
    return f;
}

// As the reference takes them: q - 32 [n][k] and d·sc per 16.
void q6k_ref_fields(const Q6kFields& f, std::vector<int8_t>& wq, std::vector<float>& ws) {
    wq.resize(f.q.size());
    for (size_t i = 0; i < f.q.size(); ++i) wq[i] = int8_t(f.q[i] - 32);
    ws.resize(f.sc.size());
    for (int r = 0; r < f.n; ++r)
        for (int h = 0; h < f.k / 16; ++h) {
            const size_t i = size_t(r) * size_t(f.k / 16) + size_t(h);
            ws[i] = f16_to_f32(f.d[size_t(r) * size_t(f.k / 256) + size_t(h / 16)]) * float(f.sc[i]);
        }
}

// The q6k matmul checks' reference (format_matmul_harness.hpp): ref::matmul_q6k
// of q - 32 [n][k_pad] and ws [n][k_pad / 16], on x and y at strides k + 5 and
// n + 3.
const harness::SignedRef kQ6kRef{WeightType::q6k, 16, ref::quantize_weight_row_q6k, ref::matmul_q6k, 5, 3};

}  // namespace

TEST_CASE("q6k from given Q6_K fields: the documented layout, unpack_row, range checks") {
    std::mt19937 rng(23);
    const int n = 20, k = 512;
    const Q6kFields f = random_q6k(n, k, false, rng);
    Buffer buf(packed_bytes(WeightType::q6k, n, k));
    REQUIRE(buf.size() == 2 * 2 * size_t(3360));  // 2 panels × 2 super-blocks
    pack_q6k_quants(f.q.data(), f.sc.data(), f.d.data(), n, k, 0, 16, buf.data());
    pack_q6k_quants(f.q.data() + 16 * k, f.sc.data() + 16 * (k / 16), f.d.data() + 16 * 2, n, k, 16, n, buf.data());
    const PackedMatrix w{WeightType::q6k, n, k, buf.data(), buf.size()};
    const auto* bytes = reinterpret_cast<const uint8_t*>(buf.data());
    int bad = 0;
    for (int r = 0; r < 32; ++r) {
        const int rr = r % 16;
        for (int s = 0; s < 2; ++s) {
            const uint8_t* sup = bytes + size_t(r / 16) * 2 * 3360 + size_t(s) * 3360;
            uint16_t d;
            std::memcpy(&d, sup + 3328 + 2 * rr, 2);
            CHECK(d == (r < n ? f.d[size_t(r) * 2 + size_t(s)] : 0));
            for (int g = 0; g < 8; ++g) {
                const uint8_t* grp = sup + size_t(g) * 416;
                for (int h = 0; h < 2; ++h) {
                    const int8_t want = r < n ? f.sc[size_t(r) * size_t(k / 16) + size_t(s * 16 + g * 2 + h)] : 0;
                    if (int8_t(grp[384 + 16 * h + rr]) != want && bad++ < 5) FAIL_CHECK("sc r ", r, " g ", g);
                }
                for (int j = 0; j < G; ++j) {
                    const uint8_t byte = grp[(j / 8) * 64 + rr * 4 + j % 4];
                    const int lo = (j % 8) < 4 ? byte & 15 : byte >> 4;
                    const int quad = j / 4;
                    const int hi = (grp[256 + (quad / 4) * 64 + rr * 4 + j % 4] >> (2 * (quad % 4))) & 3;
                    const int want = r < n ? f.q[size_t(r) * k + size_t((s * 8 + g) * G + j)] : 0;
                    if ((lo | (hi << 4)) != want && bad++ < 5) FAIL_CHECK("q r ", r, " k ", (s * 8 + g) * G + j);
                }
            }
        }
    }
    std::vector<int8_t> wq;
    std::vector<float> ws;
    q6k_ref_fields(f, wq, ws);
    std::vector<float> row(static_cast<size_t>(k));
    for (int r = 0; r < n; ++r) {
        unpack_row(w, r, 1.0f, row.data());
        for (int i = 0; i < k; ++i) {
            const float want = ws[size_t(r) * size_t(k / 16) + size_t(i / 16)] * float(wq[size_t(r) * k + i]);
            if (row[size_t(i)] != want && bad++ < 5) FAIL_CHECK("unpack r ", r, " i ", i);
        }
    }
    CHECK(bad == 0);
    std::vector<uint8_t> q = f.q;
    q[9] = 64;
    CHECK_THROWS_WITH_AS(pack_q6k_quants(q.data(), f.sc.data(), f.d.data(), n, k, 0, 16, buf.data()),
                         "pack_q6k_quants: value 64 of row 0 is outside [0, 63]", Error);
    CHECK_THROWS_AS(pack_q6k_quants(f.q.data(), f.sc.data(), f.d.data(), n, 288, 0, 16, buf.data()), Error);
}

TEST_CASE("q6k quantizer: zeros, a non-finite sub-block, error within the rounding step") {
    float x[256] = {};
    uint8_t n[256];
    int8_t sc[16];
    uint16_t d;
    quantize_q6k_super(x, n, sc, &d);
    CHECK(f16_to_f32(d) == 0.0f);
    for (int i = 0; i < 256; ++i) CHECK(n[i] == 32);  // q = 0
    std::mt19937 rng(4);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    double err2 = 0, step2 = 0;
    for (int trial = 0; trial < 200; ++trial) {
        for (float& v : x) v = normal(rng) * 0.02f;
        if (trial == 0) x[20] = INFINITY;  // sub-block 1 becomes zeros
        quantize_q6k_super(x, n, sc, &d);
        for (int h = 0; h < 16; ++h) {
            const float ws = f16_to_f32(d) * float(sc[h]);
            if (trial == 0 && h == 1) {
                for (int i = 16; i < 32; ++i) CHECK(n[i] == 32);
                continue;
            }
            for (int i = h * 16; i < h * 16 + 16; ++i) {
                REQUIRE(n[i] <= 63);
                const double e = double(x[i]) - double(ws) * (int(n[i]) - 32);
                err2 += e * e;
                step2 += double(ws) * ws;
            }
        }
    }
    MESSAGE("q6k quantizer RMS error / RMS step: ", std::sqrt(err2 / step2));
    CHECK(std::sqrt(err2 / step2) < 0.35);
}

TEST_CASE("q6k matmul equals the reference exactly on every target (exact fp32 sums)") {
    std::mt19937 rng(29);
    for_each_target([&](const KernelTable& kt) {
        for (const int k : {256, 768})
            for (const int n : {1, 16, 33}) {
                const Q6kFields f = random_q6k(n, k, true, rng);
                Buffer buf(packed_bytes(WeightType::q6k, n, k));
                pack_q6k_quants(f.q.data(), f.sc.data(), f.d.data(), n, k, 0, n, buf.data());
                const PackedMatrix w{WeightType::q6k, n, k, buf.data(), buf.size()};
                std::vector<int8_t> wq;
                std::vector<float> ws;
                q6k_ref_fields(f, wq, ws);
                for (const int m : {0, 1, 2, 6, 7, 13, 40})
                    for (const int threads : {1, 2})
                        harness::check_signed(kt, kQ6kRef, w, wq, ws, m, threads, true, rng);
                harness::check_signed(kt, kQ6kRef, w, wq, ws, 7, 2, true, rng, 16);
            }
    });
}

TEST_CASE("q6k matmul matches the reference on random data on every target (float sources, padded k)") {
    std::mt19937 rng(31);
    for_each_target([&](const KernelTable& kt) {
        for (const int k : {1, 33, 300, 512})
            for (const int n : {17, 48}) harness::check_signed_from_floats(kt, kQ6kRef, n, k, rng);
    });
}

// ---------------------------------------------------------------------------
// q4a and q5a (GGUF Q4_1 and Q5_1 kept as they are)
// ---------------------------------------------------------------------------

namespace {

struct AffineG {
    WeightType type;
    int levels;
    size_t block_bytes;
    void (*pack_given)(const uint8_t*, const uint16_t*, const uint16_t*, int, int, int, int, std::byte*);
    void (*quantize_group)(const float*, uint8_t*, uint16_t*, uint16_t*);
    void (*ref_row)(const float*, int, uint8_t*, float*, float*);
    const char* name;
};
const AffineG kQ4a{WeightType::q4a, 15, 320, pack_q4a_quants, quantize_q4a_group, ref::quantize_weight_row_q4a, "q4a"};
const AffineG kQ5a{WeightType::q5a, 31, 384, pack_q5a_quants, quantize_q5a_group, ref::quantize_weight_row_q5a, "q5a"};

// Random Q4_1 / Q5_1 fields; exact = true: d and m small multiples of powers
// of two, so that the matmul's sums are exact in fp32.
struct AffineGFields {
    std::vector<uint8_t> q;
    std::vector<uint16_t> d, m;
    std::vector<float> ws, wm;  // as the reference takes them: d, -m
};
AffineGFields random_affine_g(const AffineG& f, int n, int k, bool exact, std::mt19937& rng) {
    AffineGFields a;
    std::uniform_int_distribution<int> val(0, f.levels), expo(-9, -6), small(-8, 8);
    std::uniform_real_distribution<float> u(-0.05f, 0.05f);
    a.q.resize(size_t(n) * size_t(k));
    for (auto& v : a.q) v = uint8_t(val(rng));
    for (size_t i = 0; i < size_t(n) * size_t(k / G); ++i) {
        const float d = exact ? std::ldexp(1.0f, expo(rng)) : std::fabs(u(rng)) + 0.001f;
        const float m = exact ? std::ldexp(float(small(rng)), -8) : u(rng);
        a.d.push_back(f32_to_f16(d));
        a.m.push_back(f32_to_f16(m));
        a.ws.push_back(f16_to_f32(a.d.back()));
        a.wm.push_back(-f16_to_f32(a.m.back()));
    }
    return a;
}

}  // namespace

TEST_CASE("q4a and q5a from given Q4_1 / Q5_1 fields: the documented layout, unpack_row, range checks") {
    for (const AffineG* fp : {&kQ4a, &kQ5a}) {
        const AffineG& f = *fp;
        CAPTURE(f.name);
        std::mt19937 rng(37);
        const int n = 20, k = 64;
        const AffineGFields a = random_affine_g(f, n, k, false, rng);
        Buffer buf(packed_bytes(f.type, n, k));
        REQUIRE(buf.size() == 2 * 2 * f.block_bytes);
        f.pack_given(a.q.data(), a.d.data(), a.m.data(), n, k, 0, 16, buf.data());
        f.pack_given(a.q.data() + 16 * k, a.d.data() + 16 * 2, a.m.data() + 16 * 2, n, k, 16, n, buf.data());
        const PackedMatrix w{f.type, n, k, buf.data(), buf.size()};
        const auto* bytes = reinterpret_cast<const uint8_t*>(buf.data());
        int bad = 0;
        for (int r = 0; r < 32; ++r)
            for (int g = 0; g < 2; ++g) {
                const uint8_t* blk = bytes + size_t(r / 16) * 2 * f.block_bytes + size_t(g) * f.block_bytes;
                const int rr = r % 16;
                uint16_t d, m;
                std::memcpy(&d, blk + f.block_bytes - 64 + 2 * rr, 2);
                std::memcpy(&m, blk + f.block_bytes - 32 + 2 * rr, 2);
                const size_t gi = size_t(r) * 2 + size_t(g);
                if (d != (r < n ? a.d[gi] : 0) && bad++ < 5) FAIL_CHECK("d r ", r, " g ", g);
                if (m != (r < n ? a.m[gi] : 0) && bad++ < 5) FAIL_CHECK("m r ", r, " g ", g);
                for (int j = 0; j < G; ++j) {
                    const int got = f.levels == 15 ? q4_block_q(blk, rr, j) + 8 : q5_block_q(blk, rr, j) + 16;
                    const int want = r < n ? a.q[size_t(r) * k + size_t(g * G + j)] : 0;
                    if (got != want && bad++ < 5) FAIL_CHECK("q r ", r, " k ", g * G + j);
                }
            }
        std::vector<float> row(static_cast<size_t>(k));
        for (int r = 0; r < n; ++r) {
            unpack_row(w, r, 1.0f, row.data());
            for (int i = 0; i < k; ++i) {  // dequantize_ggml's order: q · d + m
                const size_t gi = size_t(r) * 2 + size_t(i / G);
                const float want = float(a.q[size_t(r) * k + i]) * a.ws[gi] + f16_to_f32(a.m[gi]);
                if (row[size_t(i)] != want && bad++ < 5) FAIL_CHECK("unpack r ", r, " i ", i);
            }
        }
        CHECK(bad == 0);
        std::vector<uint8_t> q = a.q;
        q[3] = uint8_t(f.levels + 1);
        CHECK_THROWS_AS(f.pack_given(q.data(), a.d.data(), a.m.data(), n, k, 0, 16, buf.data()), Error);
    }
}

TEST_CASE("q4a and q5a quantizers: non-finite groups, error within the rounding step") {
    for (const AffineG* fp : {&kQ4a, &kQ5a}) {
        const AffineG& f = *fp;
        CAPTURE(f.name);
        float x[G] = {};
        uint8_t n[G];
        uint16_t d, m;
        x[3] = std::nanf("");
        f.quantize_group(x, n, &d, &m);
        CHECK(d == 0);
        CHECK(m == 0);
        std::mt19937 rng(6);
        std::normal_distribution<float> normal(0.0f, 1.0f);
        double err2 = 0, step2 = 0;
        for (int trial = 0; trial < 500; ++trial) {
            for (float& v : x) v = normal(rng) * 0.02f;
            f.quantize_group(x, n, &d, &m);
            for (int i = 0; i < G; ++i) {
                REQUIRE(n[i] <= f.levels);
                const double e = double(x[i]) - (double(n[i]) * f16_to_f32(d) + f16_to_f32(m));
                err2 += e * e;
                step2 += double(f16_to_f32(d)) * f16_to_f32(d);
            }
        }
        MESSAGE(f.name, " quantizer RMS error / RMS step: ", std::sqrt(err2 / step2));
        CHECK(std::sqrt(err2 / step2) < 0.35);
    }
}

TEST_CASE("q4a and q5a matmuls equal the reference on every target (exact, and random float sources)") {
    std::mt19937 rng(43);
    for (const AffineG* fp : {&kQ4a, &kQ5a})
        for_each_target([&](const KernelTable& kt) {
            const AffineG& f = *fp;
            CAPTURE(f.name);
            for (const int k : {32, 96})
                for (const int n : {1, 16, 33}) {
                    const AffineGFields a = random_affine_g(f, n, k, true, rng);
                    Buffer buf(packed_bytes(f.type, n, k));
                    f.pack_given(a.q.data(), a.d.data(), a.m.data(), n, k, 0, n, buf.data());
                    const PackedMatrix w{f.type, n, k, buf.data(), buf.size()};
                    for (const int m : {0, 1, 2, 6, 7, 13, 40})
                        for (const int threads : {1, 2}) check_affine_k_matmul(kt, w, a.q, a.ws, a.wm, m, threads, true, rng);
                }
            for (const int k : {1, 33, 100})
                for (const int n : {17, 48}) {
                    harness::check_affine_from_floats(kt, affine_ref(f.type, f.ref_row), n, k, rng);
                }
        });
}
