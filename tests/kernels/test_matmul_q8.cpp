// q8 format and q8 matmul: the scalar reference against hand-computed values,
// packing round trips, and every runnable target's quantize_act / matmul_q8
// against the reference (exactly where the fp32 sums are exact, else tightly).
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "staticlm/error.hpp"
#include "kernels/kernels.hpp"
#include "kernels/memory.hpp"
#include "kernels/ref.hpp"
#include "format_matmul_harness.hpp"

using namespace staticlm;
using namespace staticlm::kernels;

namespace {

int k_pad_of(int k) { return padded_k(WeightType::q8, k); }

// A packed q8 matrix and its reference (row-major quantized) twin.
struct Q8Matrix {
    Buffer buf;
    PackedMatrix w;
    std::vector<int8_t> q;  // [n][k_pad]
    std::vector<float> s;   // [n][k_pad/32]
};

Q8Matrix make_matrix(const std::vector<float>& src, int n, int k) {
    Q8Matrix m;
    const size_t bytes = packed_bytes(WeightType::q8, n, k);
    m.buf = Buffer(std::max<size_t>(bytes, 64));
    m.w = {WeightType::q8, n, k, m.buf.data(), bytes};
    pack_weights(WeightType::q8, SrcType::f32, src.data(), n, k, 0, n, m.buf.data());
    const int kp = k_pad_of(k);
    m.q.resize(size_t(n) * size_t(kp));
    m.s.resize(size_t(n) * size_t(kp / kQ8Group));
    for (int r = 0; r < n; ++r)
        ref::quantize_weight_row_q8(src.data() + size_t(r) * size_t(k), k,
                                    m.q.data() + size_t(r) * kp,
                                    m.s.data() + size_t(r) * size_t(kp / kQ8Group));
    return m;
}

std::vector<Target> runnable_targets() {
    std::vector<Target> out;
    for (Target t : compiled_targets())
        if (target_supported(t)) out.push_back(t);
    return out;
}

// Values whose group quantization is exact (format_matmul_harness.hpp), and
// N(0, 1) values.
std::vector<float> exact_values(int rows, int k, std::mt19937& rng) { return harness::exact_acts(rows, k, -2, rng); }
using harness::random_values;

}  // namespace

TEST_CASE("q8 reference quantization of hand-computed rows") {
    SUBCASE("scale 1: rounding half away from zero, signs, exact values") {
        float x[32] = {};
        x[0] = 127.0f;  // sets the scale to exactly 1
        x[1] = 2.5f;
        x[2] = -2.5f;
        x[3] = 0.5f;
        x[4] = -0.5f;
        x[5] = 1.4999999f;
        x[6] = 126.5f;
        x[7] = -3.0f;
        x[8] = 0.49999997f;
        int8_t q[32];
        float s = -1.0f;
        ref::quantize_row_q8(x, 32, q, &s);
        CHECK(s == 1.0f);
        const int expect[9] = {127, 3, -3, 1, -1, 1, 127, -3, 0};
        for (int i = 0; i < 9; ++i) CHECK_MESSAGE(q[i] == expect[i], "element ", i);
        for (int i = 9; i < 32; ++i) CHECK(q[i] == 0);
    }
    SUBCASE("scale 0.5 from a negative maximum; ties go away from zero, not to even") {
        float x[32] = {};
        x[0] = -63.5f;  // max |x| = 63.5 -> scale 0.5
        x[1] = 0.25f;   // 0.5 -> 1
        x[2] = -0.25f;  // -0.5 -> -1
        x[3] = 1.25f;   // 2.5 -> 3 (even rounding would give 2)
        x[4] = 0.75f;   // 1.5 -> 2
        x[5] = 0.2f;    // 0.4 -> 0
        int8_t q[32];
        float s;
        ref::quantize_row_q8(x, 32, q, &s);
        CHECK(s == 0.5f);
        CHECK(q[0] == -127);
        CHECK(q[1] == 1);
        CHECK(q[2] == -1);
        CHECK(q[3] == 3);
        CHECK(q[4] == 2);
        CHECK(q[5] == 0);
    }
    SUBCASE("zero groups, padding of K to 32, general scales hit ±127") {
        // k = 70: group 0 all zero, group 1 has max 1.0, group 2 has 6 values + padding.
        std::vector<float> x(70, 0.0f);
        x[32] = 1.0f;
        x[33] = -0.5f;
        for (int i = 64; i < 70; ++i) x[size_t(i)] = -0.1f * float(i - 63);
        std::vector<int8_t> q(96, int8_t(99));
        float s[3];
        ref::quantize_row_q8(x.data(), 70, q.data(), s);
        CHECK(s[0] == 0.0f);
        for (int i = 0; i < 32; ++i) CHECK(q[size_t(i)] == 0);
        CHECK(s[1] == 1.0f / 127.0f);
        CHECK(q[32] == 127);
        CHECK(q[33] == -64);  // -63.5 (approximately) rounds away
        for (int i = 34; i < 64; ++i) CHECK(q[size_t(i)] == 0);
        CHECK(s[2] == 0.6f / 127.0f);
        CHECK(q[69] == -127);
        CHECK(q[64] == int8_t(-std::lround(0.1f / (0.6f / 127.0f))));
        for (int i = 70; i < 96; ++i) CHECK(q[size_t(i)] == 0);  // padding
        float back[70];
        ref::dequantize_row_q8(q.data(), s, 70, back);
        CHECK(back[32] == 1.0f / 127.0f * 127.0f);
        CHECK(back[0] == 0.0f);
        CHECK(back[69] == doctest::Approx(-0.6f).epsilon(1e-6));
    }
    SUBCASE("weight scales are IEEE halves; q uses the rounded scale") {
        // 1/127 = 0.00787401... rounds to the half 2^-7 · (1 + 8/1024) = 0.00787353515625.
        float x[32] = {};
        x[0] = 1.0f;
        x[1] = -0.5f;   // -0.5 / 0.00787353515625 = -63.504 -> -64
        x[2] = 0.3f;    // 38.1023 -> 38
        int8_t q[32];
        float s;
        ref::quantize_weight_row_q8(x, 32, q, &s);
        CHECK(s == 0.00787353515625f);
        CHECK(q[0] == 127);  // 127.0078 clamps
        CHECK(q[1] == -64);
        CHECK(q[2] == 38);
        // Scales above the largest half (65504) saturate instead of becoming inf.
        x[0] = 127.0f * 70000.0f;
        x[1] = -127.0f * 35000.0f;  // -4445000 / 65504 = -67.858 -> -68
        ref::quantize_weight_row_q8(x, 32, q, &s);
        CHECK(s == 65504.0f);
        CHECK(q[0] == 127);
        CHECK(q[1] == -68);
    }
    SUBCASE("k = 1") {
        float x = -3.0f, s;
        int8_t q[32];
        ref::quantize_row_q8(&x, 1, q, &s);
        CHECK(s == 3.0f / 127.0f);
        CHECK(q[0] == -127);
        for (int i = 1; i < 32; ++i) CHECK(q[i] == 0);
    }
}

TEST_CASE("q8 sizes") {
    CHECK(packed_bytes(WeightType::q8, 16, 32) == 544);  // 512 B of int8 + 16 f16 scales
    CHECK(packed_bytes(WeightType::q8, 17, 33) == 2 * 2 * 544);
    CHECK(packed_bytes(WeightType::q8, 0, 32) == 0);
    CHECK(q8_act_row_bytes(32) == 64);         // 32 + 5 · 4 = 52 -> 64
    CHECK(q8_act_row_bytes(2048) == 64 * 52);  // 64 groups · 52 bytes
    CHECK(q8_act_row_bytes(100) % 64 == 0);
    CHECK(matmul_scratch_bytes(WeightType::q8, 3, 100) == 3 * q8_act_row_bytes(100, 16));
    CHECK(matmul_scratch_bytes(WeightType::q8, 0, 100) == 0);
    CHECK_THROWS_AS(pack_weights(WeightType::q8, SrcType::f32, nullptr, 40, 32, 8, 40, nullptr),
                    Error);
}

TEST_CASE("q8 packing: layout, pack -> unpack round trip, f16/bf16 sources, split ranges") {
    std::mt19937 rng(7);
    for (int n : {1, 15, 16, 17, 40}) {
        for (int k : {1, 31, 32, 33, 100}) {
            CAPTURE(n);
            CAPTURE(k);
            const std::vector<float> src = random_values(size_t(n) * size_t(k), rng);
            Q8Matrix m = make_matrix(src, n, k);
            const int kp = k_pad_of(k), n_groups = kp / kQ8Group;
            // The documented layout, byte by byte.
            const auto* bytes = reinterpret_cast<const uint8_t*>(m.w.data);
            const int n_panels = (n + 15) / 16;
            for (int p = 0; p < n_panels; ++p)
                for (int g = 0; g < n_groups; ++g) {
                    const uint8_t* blk = bytes + (size_t(p) * size_t(n_groups) + size_t(g)) * 544;
                    for (int r = 0; r < 16; ++r) {
                        const int row = p * 16 + r;
                        uint16_t sc;
                        std::memcpy(&sc, blk + 512 + 2 * r, 2);
                        CHECK(f16_to_f32(sc) ==
                              (row < n ? m.s[size_t(row) * size_t(n_groups) + size_t(g)] : 0.0f));
                        for (int i = 0; i < 32; ++i) {
                            const int qv = row < n ? m.q[size_t(row) * size_t(kp) +
                                                         size_t(g * 32 + i)]
                                                   : 0;
                            CHECK(int(blk[(i / 4) * 64 + r * 4 + i % 4]) == qv + 128);
                        }
                    }
                }
            // unpack_row == dequantize(reference) × scale
            std::vector<float> out(static_cast<size_t>(k)), expect(static_cast<size_t>(k));
            for (int r = 0; r < n; ++r) {
                unpack_row(m.w, r, 2.0f, out.data());
                ref::dequantize_row_q8(m.q.data() + size_t(r) * size_t(kp),
                                       m.s.data() + size_t(r) * size_t(n_groups), k,
                                       expect.data());
                for (int i = 0; i < k; ++i) CHECK(out[size_t(i)] == expect[size_t(i)] * 2.0f);
            }
            // f16 and bf16 sources pack like their f32 values; split ranges like one call.
            std::vector<uint16_t> h(src.size()), b(src.size());
            std::vector<float> hf(src.size()), bf(src.size());
            for (size_t i = 0; i < src.size(); ++i) {
                h[i] = f32_to_f16(src[i]);
                hf[i] = f16_to_f32(h[i]);
                b[i] = f32_to_bf16(src[i]);
                bf[i] = bf16_to_f32(b[i]);
            }
            const size_t nb = m.w.bytes;
            Buffer b1(nb + 64), b2(nb + 64), b3(nb + 64), b4(nb + 64);
            pack_weights(WeightType::q8, SrcType::f16, h.data(), n, k, 0, n, b1.data());
            pack_weights(WeightType::q8, SrcType::f32, hf.data(), n, k, 0, n, b2.data());
            CHECK(std::memcmp(b1.data(), b2.data(), nb) == 0);
            pack_weights(WeightType::q8, SrcType::bf16, b.data(), n, k, 0, n, b3.data());
            pack_weights(WeightType::q8, SrcType::f32, bf.data(), n, k, 0, n, b4.data());
            CHECK(std::memcmp(b3.data(), b4.data(), nb) == 0);
            if (n > 16) {  // disjoint panel-aligned ranges, packed concurrently
                Buffer parts(nb + 64);
                std::thread tail([&] {
                    pack_weights(WeightType::q8, SrcType::f32, src.data(), n, k, 16, n,
                                 parts.data());
                });
                pack_weights(WeightType::q8, SrcType::f32, src.data(), n, k, 0, 16, parts.data());
                tail.join();
                CHECK(std::memcmp(parts.data(), m.w.data, nb) == 0);
            }
        }
    }
}

TEST_CASE("q8 quantize_act equals the reference on every target, 8- and 16-bit") {
    std::mt19937 rng(11);
    for (Target t : runnable_targets()) {
        const KernelTable& kt = table_for(t);
        for (int bits : {8, 16})
        // 600 and 1056: 19 and 33 groups (the SIMD rows take a vector's lanes of groups at a time).
        for (int k : {1, 31, 32, 33, 64, 100, 600, 1056}) {
            CAPTURE(target_name(t));
            CAPTURE(bits);
            CAPTURE(k);
            const int m = 4, kp = k_pad_of(k), n_groups = kp / kQ8Group, planes = bits / 8;
            const size_t ldx = size_t(k) + 3;
            std::vector<float> x = random_values(size_t(m) * ldx + 1, rng);
            for (int i = 0; i < std::min(k, 32); ++i) x[1 + ldx + size_t(i)] = 0.0f;  // zero group
            // Row 2, group 0: scale exactly 1 and ties (j + 0.5) that must round away from 0
            // (8-bit; their 16-bit second plane is ±128, clamped to ±127).
            x[1 + 2 * ldx] = 127.0f;
            for (int i = 1; i < std::min(k, 32); ++i)
                x[1 + 2 * ldx + size_t(i)] = float(i - 16) + 0.5f;
            // Row 3, group 0: scale 1 and second-plane ties (j + 1/512 steps).
            x[1 + 3 * ldx] = -127.0f;
            for (int i = 1; i < std::min(k, 32); ++i)
                x[1 + 3 * ldx + size_t(i)] = float(i) + float(2 * i - 31) / 512.0f;
            // Later groups: a zero group (17) and groups with an infinity (18) and a NaN (19).
            if (k >= 20 * 32) {
                for (int i = 0; i < 32; ++i) x[1 + 17 * 32 + size_t(i)] = 0.0f;
                x[1 + 18 * 32 + 5] = INFINITY;
                x[1 + ldx + 19 * 32 + 7] = NAN;
            }
            const size_t row = q8_act_row_bytes(k, bits);
            CHECK(row == size_t(align64(size_t(kp * planes + 20 * n_groups))));
            Buffer dst(m * row);
            kt.quantize_act(x.data() + 1, ldx, m, k, bits, dst.data());  // misaligned rows
            for (int r = 0; r < m; ++r) {
                std::vector<int32_t> q(static_cast<size_t>(kp));
                std::vector<float> s(static_cast<size_t>(n_groups));
                ref::quantize_row_act(x.data() + 1 + size_t(r) * ldx, k, bits, q.data(), s.data());
                const std::byte* d = dst.data() + size_t(r) * row;
                const auto* q1 = reinterpret_cast<const int8_t*>(d);
                int bad = 0;
                for (int i = 0; i < kp; ++i) {
                    const int got = bits == 8 ? q1[i] : 256 * q1[i] + q1[kp + i];
                    if (got != q[size_t(i)] && bad++ < 3) FAIL_CHECK("row ", r, " k ", i, ": ", got, " != ", q[size_t(i)]);
                }
                const size_t scale_off = size_t(kp * planes);
                CHECK(std::memcmp(d + scale_off, s.data(), 4 * size_t(n_groups)) == 0);
                for (int g = 0; g < n_groups; ++g) {
                    int32_t sum = 0, lo = 0, corr, corr_lo, corr_hi;
                    float neg_xsum;
                    for (int i = 0; i < 32; ++i) sum += q[size_t(g * 32 + i)], lo += i < 16 ? q[size_t(g * 32 + i)] : 0;
                    std::memcpy(&corr, d + scale_off + 4 * n_groups + 4 * g, 4);
                    std::memcpy(&corr_lo, d + scale_off + 8 * n_groups + 4 * g, 4);
                    std::memcpy(&corr_hi, d + scale_off + 12 * n_groups + 4 * g, 4);
                    std::memcpy(&neg_xsum, d + scale_off + 16 * n_groups + 4 * g, 4);
                    CHECK(corr == -128 * sum);
                    CHECK(corr_lo == -128 * lo);
                    CHECK(corr_hi == -128 * (sum - lo));
                    // The reference's min-term factor, bit for bit (ref::matmul_affine).
                    CHECK(neg_xsum == -(s[size_t(g)] * float(sum)));
                }
            }
        }
    }
}

TEST_CASE("16-bit activations: hand-computed values") {
    // Scale 1 (max 127): x = 3.25 is q1 = 3, q2 = 64; -0.75 rounds to q1 = -1,
    // residual 0.25 -> q2 = 64; 0.001953125 = 1/512 is a second-plane tie,
    // away from zero -> 1; 5.5 is an 8-bit tie (q1 = 6, residual -0.5 ->
    // q2 = -128, clamped to -127). The stored scale is 1/256.
    std::vector<float> x(32, 0.0f);
    x[0] = 127.0f, x[1] = 3.25f, x[2] = -0.75f, x[3] = 1.0f / 512.0f, x[4] = 5.5f;
    std::vector<int32_t> q(32);
    float s = 0;
    ref::quantize_row_act(x.data(), 32, 16, q.data(), &s);
    CHECK(s == 1.0f / 256.0f);
    CHECK(q[0] == 127 * 256);
    CHECK(q[1] == 3 * 256 + 64);
    CHECK(q[2] == -256 + 64);
    CHECK(q[3] == 1);
    CHECK(q[4] == 6 * 256 - 127);
    CHECK(q[5] == 0);
    ref::quantize_row_act(x.data(), 32, 8, q.data(), &s);
    CHECK(s == 1.0f);
    CHECK(q[1] == 3);
    CHECK(q[4] == 6);
}

TEST_CASE("q8 reference matmul equals exact integer arithmetic") {
    // Power-of-two scales and small values: every fp32 operation is exact, so
    // the reference must equal a double computation from the integers.
    std::mt19937 rng(3);
    const int m = 3, n = 5, k = 100, kp = 128, n_groups = 4;
    const std::vector<float> w = exact_values(n, k, rng), x = exact_values(m, k, rng);
    Q8Matrix mat = make_matrix(w, n, k);
    std::vector<float> y(static_cast<size_t>(m * n));
    ref::matmul_q8(mat.q.data(), mat.s.data(), n, k, x.data(), size_t(k), m, y.data(), size_t(n));
    for (int r = 0; r < m; ++r)
        for (int c = 0; c < n; ++c) {
            double expect = 0;
            for (int i = 0; i < k; ++i)  // the exact dequantized values are the inputs
                expect += double(x[size_t(r * k + i)]) * double(w[size_t(c * k + i)]);
            CHECK(double(y[size_t(r * n + c)]) == expect);
        }
    (void)kp;
    (void)n_groups;
}

namespace {

// Runs kt's matmul on a strided, misaligned x and y and compares with the
// reference; exact: bitwise equality, else |diff| <= tol · Σ|x̂·ŵ|.
void check_matmul(const KernelTable& kt, int m, int n, int k, int n_threads, bool exact,
                  std::mt19937& rng, int act_bits = 8) {
    CAPTURE(target_name(kt.target));
    CAPTURE(act_bits);
    CAPTURE(m);
    CAPTURE(n);
    CAPTURE(k);
    CAPTURE(n_threads);
    const std::vector<float> w = exact ? exact_values(n, k, rng)
                                       : random_values(size_t(n) * size_t(k), rng);
    Q8Matrix mat = make_matrix(w, n, k);
    mat.w.act_bits = act_bits;
    const size_t ldx = size_t(k) + 5, ldy = size_t(n) + 3;
    std::vector<float> xbuf(size_t(m) * ldx + 1, 0.0f);
    {
        const std::vector<float> xv = exact ? exact_values(m, k, rng)
                                            : random_values(size_t(m) * size_t(k), rng);
        for (int r = 0; r < m; ++r)
            std::memcpy(xbuf.data() + 1 + size_t(r) * ldx, xv.data() + size_t(r) * size_t(k),
                        sizeof(float) * size_t(k));
    }
    const float* x = xbuf.data() + 1;  // misaligned
    const float kGuard = -12345.0f;
    std::vector<float> ybuf(size_t(m) * ldy + 1, kGuard), yref(size_t(m) * size_t(n));
    float* y = ybuf.data() + 1;
    Buffer scratch(std::max<size_t>(matmul_scratch_bytes(WeightType::q8, m, k), 64));
    kt.matmul_q8(mat.w, x, ldx, m, y, ldy, scratch.data(), n_threads);
    ref::matmul_q8(mat.q.data(), mat.s.data(), n, k, x, ldx, m, yref.data(), size_t(n), act_bits);
    const int kp = k_pad_of(k);
    std::vector<int32_t> xq(static_cast<size_t>(kp));
    std::vector<float> xs(static_cast<size_t>(kp / 32));
    int bad = 0;
    for (int r = 0; r < m; ++r) {
        ref::quantize_row_act(x + size_t(r) * ldx, k, act_bits, xq.data(), xs.data());
        for (int c = 0; c < n; ++c) {
            const float got = y[size_t(r) * ldy + size_t(c)];
            const float want = yref[size_t(r) * size_t(n) + size_t(c)];
            bool ok;
            if (exact) {
                ok = got == want;
            } else {
                double mag = 0;
                for (int i = 0; i < kp; ++i)
                    mag += std::fabs(double(xq[size_t(i)]) * xs[size_t(i / 32)] *
                                     mat.q[size_t(c) * size_t(kp) + size_t(i)] *
                                     mat.s[size_t(c) * size_t(kp / 32) + size_t(i / 32)]);
                ok = std::fabs(double(got) - double(want)) <= 1e-6 * mag + 1e-30;
            }
            if (!ok && bad++ < 5) FAIL_CHECK("row ", r, " col ", c, ": ", got, " != ", want);
        }
        for (size_t c = size_t(n); c < ldy && r + 1 < m; ++c)  // gaps between rows untouched
            if (y[size_t(r) * ldy + c] != kGuard && bad++ < 5) FAIL_CHECK("wrote past n");
    }
    CHECK(ybuf[0] == kGuard);
    CHECK(bad == 0);
}

}  // namespace

TEST_CASE("q8 matmul equals the reference exactly on every target (exact fp32 sums)") {
    std::mt19937 rng(5);
    for (Target t : runnable_targets())
        for (int m : {0, 1, 2, 3, 5, 6, 7, 13, 16, 17})
            for (int n : {1, 15, 16, 17, 33, 48})
                for (int k : {1, 31, 32, 33, 64, 100})
                    for (int threads : {1, 2}) check_matmul(table_for(t), m, n, k, threads, true, rng);
    for (Target t : runnable_targets())
        for (int threads : {1, 2}) {
            check_matmul(table_for(t), 64, 33, 100, threads, true, rng);
            check_matmul(table_for(t), 100, 17, 33, threads, true, rng);  // rows split
            check_matmul(table_for(t), 29, 200, 64, threads, true, rng);  // panels split
            // 19 and 66 groups: avx512-amx's 16-row tiles run K in chunks of
            // 64 groups, the sums kept in y between chunks; 13 panels are
            // 4 cache blocks of 2 pairs at k = 2100.
            check_matmul(table_for(t), 37, 40, 600, threads, true, rng);
            check_matmul(table_for(t), 37, 200, 2100, threads, true, rng);
            // 16-31 rows: avx512-amx streams each panel whole through one
            // 16-row tile (prefetching ahead in it) and the rows after it on
            // VNNI; 19 groups reach past the prefetch distance.
            check_matmul(table_for(t), 16, 200, 600, threads, true, rng);
            check_matmul(table_for(t), 24, 70, 600, threads, true, rng);
            // 16-bit activations (AMX targets run them on VNNI).
            for (int m : {1, 6, 17, 37})
                for (int k : {1, 33, 100, 600}) check_matmul(table_for(t), m, 40, k, threads, true, rng, 16);
        }
}

TEST_CASE("q8 matmul matches the reference on random data on every target") {
    std::mt19937 rng(9);
    for (Target t : runnable_targets()) {
        for (int m : {1, 2, 5, 12, 64})
            for (int n : {17, 33, 80})
                for (int k : {33, 100, 256})
                    for (int threads : {1, 2})
                        check_matmul(table_for(t), m, n, k, threads, false, rng);
        check_matmul(table_for(t), 70, 130, 300, 2, false, rng);  // both thread splits, tails
        check_matmul(table_for(t), 40, 16, 64, 2, false, rng);    // one panel: rows split
        for (int m : {1, 5, 17})
            for (int k : {33, 100, 256}) check_matmul(table_for(t), m, 33, k, 2, false, rng, 16);
        check_matmul(table_for(t), 70, 130, 300, 2, false, rng, 16);
    }
}

namespace {

// The q8 panel bytes the reference gives for rows [0, rows) of src (row stride
// ld, already decoded to floats): ref::quantize_weight_row_q8 per row, then the
// documented [groups][8][16 rows][4] + f16 scale[16] layout.
std::vector<uint8_t> ref_q8_panel(const float* src, size_t ld, int rows, int k) {
    const int kp = k_pad_of(k), n_groups = kp / kQ8Group;
    std::vector<uint8_t> out(size_t(n_groups) * 544, 0);
    std::vector<int8_t> q(static_cast<size_t>(kp));
    std::vector<float> s(static_cast<size_t>(n_groups));
    for (int r = 0; r < 16; ++r) {
        std::fill(q.begin(), q.end(), int8_t(0));
        std::fill(s.begin(), s.end(), 0.0f);
        if (r < rows) ref::quantize_weight_row_q8(src + size_t(r) * ld, k, q.data(), s.data());
        for (int g = 0; g < n_groups; ++g) {
            uint8_t* blk = out.data() + size_t(g) * 544;
            const uint16_t h = f32_to_f16(s[size_t(g)]);
            std::memcpy(blk + 512 + 2 * r, &h, 2);
            for (int i = 0; i < 32; ++i)
                blk[(i / 4) * 64 + r * 4 + i % 4] = uint8_t(int(q[size_t(g * 32 + i)]) + 128);
        }
    }
    return out;
}

// Rows that exercise the rounding: exact ties (±(j + 0.5)·scale with scale a
// power of two), all-zero groups, single zeros, tiny (subnormal-scale) groups
// and plain random values.
std::vector<float> q8_edge_rows(int rows, int k, std::mt19937& rng) {
    std::vector<float> v(size_t(rows) * size_t(k));
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_int_distribution<int> kind(0, 4), tie(-126, 126), expo(-6, 3), coin(0, 1);
    for (int r = 0; r < rows; ++r)
        for (int g0 = 0; g0 < k; g0 += kQ8Group) {
            const int len = std::min(kQ8Group, k - g0);
            float* x = v.data() + size_t(r) * size_t(k) + size_t(g0);
            const int what = kind(rng);
            const float scale = std::ldexp(1.0f, expo(rng));
            for (int i = 0; i < len; ++i) {
                switch (what) {
                    case 0:
                        x[i] = 0.0f;
                        break;
                    case 1:
                        x[i] = (float(tie(rng)) + (coin(rng) ? 0.5f : -0.5f)) * scale;
                        break;
                    case 2:
                        x[i] = normal(rng) * 1e-39f;
                        break;  // subnormal values
                    default:
                        x[i] = coin(rng) && i % 7 == 0 ? 0.0f : normal(rng);
                        break;
                }
            }
            if (what == 1) x[std::min(len - 1, 3)] = (coin(rng) ? 127.0f : -127.0f) * scale;
        }
    return v;
}

}  // namespace

TEST_CASE("q8 pack_panel equals the reference quantizer on every target") {
    std::mt19937 rng(23);
    for (Target t : runnable_targets()) {
        const KernelTable& kt = table_for(t);
        REQUIRE(bool(kt.pack_panel));
        for (int k : {1, 5, 31, 32, 33, 64, 255, 256, 257, 600}) {
            for (int rows : {0, 1, 7, 15, 16}) {
                const std::string target = target_name(t);
                CAPTURE(target);
                CAPTURE(k);
                CAPTURE(rows);
                const size_t ld = size_t(k) + size_t(rows % 3);  // row stride > k too
                std::vector<float> src = q8_edge_rows(std::max(rows, 1), int(ld), rng);
                const int n_groups = k_pad_of(k) / kQ8Group;
                const size_t bytes = size_t(n_groups) * 544;
                // Sources decoded the way the packer decodes them.
                std::vector<uint16_t> h(src.size()), b(src.size());
                std::vector<float> hf(src.size()), bf(src.size());
                for (size_t i = 0; i < src.size(); ++i) {
                    h[i] = f32_to_f16(src[i]);
                    hf[i] = f16_to_f32(h[i]);
                    b[i] = f32_to_bf16(src[i]);
                    bf[i] = bf16_to_f32(b[i]);
                }
                struct Case {
                    SrcType st;
                    const void* data;
                    const std::vector<float>* decoded;
                };
                for (const Case& c :
                     {Case{SrcType::f32, src.data(), &src}, Case{SrcType::f16, h.data(), &hf},
                      Case{SrcType::bf16, b.data(), &bf}}) {
                    CAPTURE(int(c.st));
                    const std::vector<uint8_t> expect =
                        ref_q8_panel(c.decoded->data(), ld, rows, k);
                    // Misaligned destination, pre-filled with garbage: every byte must be written.
                    std::vector<std::byte> dst(bytes + 1, std::byte{0x5a});
                    kt.pack_panel(WeightType::q8, c.st, c.data, ld, rows, k, dst.data() + 1);
                    CHECK(std::memcmp(dst.data() + 1, expect.data(), bytes) == 0);
                }
            }
        }
    }
}

TEST_CASE("q8 pack_panel: misaligned f32 source, inf and NaN as the reference") {
    std::mt19937 rng(29);
    for (Target t : runnable_targets()) {
        const std::string target = target_name(t);
        CAPTURE(target);
        const int k = 100, rows = 16;
        std::vector<float> storage(size_t(rows) * k + 1);
        float* src = storage.data() + 1;  // 4-byte but not 64-byte aligned
        const std::vector<float> v = random_values(size_t(rows) * k, rng);
        std::copy(v.begin(), v.end(), src);
        src[3] = INFINITY;
        src[k + 40] = -INFINITY;
        src[2 * k + 70] = NAN;
        const std::vector<uint8_t> expect = ref_q8_panel(src, size_t(k), rows, k);
        std::vector<std::byte> dst(expect.size());
        table_for(t).pack_panel(WeightType::q8, SrcType::f32, src, size_t(k), rows, k, dst.data());
        CHECK(std::memcmp(dst.data(), expect.data(), expect.size()) == 0);
    }
}
