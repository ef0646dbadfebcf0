// The q3k format (GGUF Q3_K kept as it is, kernels/formats/q3k/): the
// documented layout through the GGUF repack (blocks written here from ggml's
// definition), the quantizer on hand-computed super-blocks, and every runnable
// target's matmul against the scalar reference (ref::matmul_q3k): exactly
// where the fp32 sums are exact, else within 1e-5 of Σ|x·w|; odd n, k tails,
// m from 1, one and two threads, 8- and 16-bit activations.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "formats/q3k/layout.hpp"
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

constexpr int kSuper = 256, kSub = 16, kGroup = 32;
constexpr size_t kSuperBytes = 1760, kGroupBytes = 192;

// Q3_K fields of [n][k] weights: n = q + 4 in [0, 7] per element, sc in
// [0, 63] per 16 (w uses sc - 32), d per 256.
struct Fields {
    int rows, k;
    std::vector<uint8_t> n, sc;
    std::vector<uint16_t> d;
};

// Random fields; exact = true: d a power of two and |sc - 32| <= 8, so that
// every product and sum of the matmul is exact in fp32.
Fields random_fields(int rows, int k, bool exact, std::mt19937& rng) {
    Fields f{rows, k, {}, {}, {}};
    std::uniform_int_distribution<int> three(0, 7), scale(exact ? 24 : 0, exact ? 40 : 63), expo(-10, -7);
    std::uniform_real_distribution<float> u(0.0001f, 0.01f);
    std::uniform_int_distribution<int> sign(0, 1);
    f.n.resize(size_t(rows) * size_t(k));
    f.sc.resize(size_t(rows) * size_t(k / kSub));
    f.d.resize(size_t(rows) * size_t(k / kSuper));
    for (auto& v : f.n) v = uint8_t(three(rng));
    for (auto& v : f.sc) v = uint8_t(scale(rng));
    for (auto& v : f.d) v = f32_to_f16((exact ? std::ldexp(1.0f, expo(rng)) : u(rng)) * (sign(rng) ? 1.0f : -1.0f));
    return f;
}

// The fields as GGUF Q3_K blocks, written from ggml's block_q3_K: element
// 128h + 32t + l has its low 2 bits at bits 2t of qs[32h + l] and bit 2 at bit
// 4h + t of hmask[l]; scale i's low nibble is the low (i < 8) or high nibble
// of scales[i % 8], its bits 4-5 are bits 2(i / 4) of scales[8 + i % 4].
std::vector<BlockQ3_K> to_blocks(const Fields& f) {
    const int ns = f.k / kSuper;
    std::vector<BlockQ3_K> out(size_t(f.rows) * size_t(ns));
    for (int r = 0; r < f.rows; ++r)
        for (int s = 0; s < ns; ++s) {
            BlockQ3_K& b = out[size_t(r) * size_t(ns) + size_t(s)];
            std::memset(&b, 0, sizeof b);
            const uint8_t* n = f.n.data() + size_t(r) * size_t(f.k) + size_t(s) * kSuper;
            for (int e = 0; e < kSuper; ++e) {
                const int h = e / 128, t = (e % 128) / 32, l = e % 32;
                b.qs[32 * h + l] = uint8_t(b.qs[32 * h + l] | ((n[e] & 3) << (2 * t)));
                b.hmask[l] = uint8_t(b.hmask[l] | ((n[e] >> 2) << (4 * h + t)));
            }
            const uint8_t* sc = f.sc.data() + size_t(r) * size_t(f.k / kSub) + size_t(s) * 16;
            for (int i = 0; i < 16; ++i) {
                b.scales[i % 8] = uint8_t(b.scales[i % 8] | ((sc[i] & 15) << (i < 8 ? 0 : 4)));
                b.scales[8 + i % 4] = uint8_t(b.scales[8 + i % 4] | ((sc[i] >> 4) << (2 * (i / 4))));
            }
            b.d = f.d[size_t(r) * size_t(ns) + size_t(s)];
        }
    return out;
}

// As the reference takes them: q = n - 4 [rows][k] and d·(sc - 32) per 16.
void ref_fields(const Fields& f, std::vector<int8_t>& wq, std::vector<float>& ws) {
    wq.resize(f.n.size());
    for (size_t i = 0; i < f.n.size(); ++i) wq[i] = int8_t(f.n[i] - 4);
    ws.resize(f.sc.size());
    for (int r = 0; r < f.rows; ++r)
        for (int h = 0; h < f.k / kSub; ++h) {
            const size_t i = size_t(r) * size_t(f.k / kSub) + size_t(h);
            ws[i] = f16_to_f32(f.d[size_t(r) * size_t(f.k / kSuper) + size_t(h / 16)]) * float(f.sc[i] - 32);
        }
}

PackedMatrix pack_fields(const Fields& f, Buffer& buf) {
    const std::vector<BlockQ3_K> blocks = to_blocks(f);
    buf = Buffer(std::max<size_t>(packed_bytes(WeightType::q3k, f.rows, f.k), 64));
    pack_q3k_ggml(blocks.data(), f.rows, f.k, 0, f.rows, buf.data());
    return {WeightType::q3k, f.rows, f.k, buf.data(), packed_bytes(WeightType::q3k, f.rows, f.k)};
}

// The matmul checks' reference (format_matmul_harness.hpp): ref::matmul_q3k of
// q = n - 4 [n][k_pad] and ws [n][k_pad / 16].
const harness::SignedRef kRef{WeightType::q3k, kSub, ref::quantize_weight_row_q3k, ref::matmul_q3k};

// Exact random fields [n][k] packed through their GGUF blocks, and the
// reference's view of them.
struct ExactCase {
    Buffer buf;
    PackedMatrix w;
    std::vector<int8_t> wq;
    std::vector<float> ws;
};
ExactCase exact_case(int n, int k, std::mt19937& rng) {
    ExactCase c;
    const Fields f = random_fields(n, k, true, rng);
    c.w = pack_fields(f, c.buf);
    ref_fields(f, c.wq, c.ws);
    return c;
}

}  // namespace

TEST_CASE("q3k: the format's traits are Q3_K's 110 bytes per 256 weights") {
    const WeightTypeInfo& info = weight_type_info(WeightType::q3k);
    CHECK(std::string(info.name) == "q3k");
    CHECK(info.bytes_per_weight == 110.0 / 256);  // 3.4375 bits
    CHECK(parse_weight_type("q3k") == WeightType::q3k);
    CHECK(format_info(WeightType::q3k).k_align == kSuper);
    CHECK(packed_bytes(WeightType::q3k, 17, 300) == 2 * 2 * kSuperBytes);  // 2 panels × 2 super-blocks
    CHECK(vocab_weight_type(WeightType::q3k) == WeightType::q8);
    CHECK(gguf_native_type(GgmlType::q3_k) == WeightType::q3k);
}

TEST_CASE("q3k repack of GGUF Q3_K blocks: the documented layout, unpack_row, row ranges, bad shapes refused") {
    std::mt19937 rng(41);
    const int n = 20, k = 512;
    const Fields f = random_fields(n, k, false, rng);
    const std::vector<BlockQ3_K> blocks = to_blocks(f);
    Buffer buf(packed_bytes(WeightType::q3k, n, k));
    REQUIRE(buf.size() == 2 * 2 * kSuperBytes);
    std::memset(buf.data(), 0xAB, buf.size());
    pack_q3k_ggml(blocks.data(), n, k, 0, 16, buf.data());                  // panel 0
    pack_q3k_ggml(blocks.data() + 16 * 2, n, k, 16, n, buf.data());        // panel 1, rows 16-19
    const auto* bytes = reinterpret_cast<const uint8_t*>(buf.data());
    int bad = 0;
    for (int r = 0; r < 32; ++r) {
        const int rr = r % 16;
        for (int s = 0; s < 2; ++s) {
            const uint8_t* sup = bytes + size_t(r / 16) * 2 * kSuperBytes + size_t(s) * kSuperBytes;
            uint16_t d;
            std::memcpy(&d, sup + 1728 + 2 * rr, 2);
            if (d != (r < n ? f.d[size_t(r) * 2 + size_t(s)] : 0) && bad++ < 5) FAIL_CHECK("d r ", r);
            for (int h = 0; h < 16; ++h) {
                const int lo = (sup[1536 + 16 * (h / 2) + rr] >> (4 * (h % 2))) & 15;
                const int hi = (sup[1664 + 16 * (h / 4) + rr] >> (2 * (h % 4))) & 3;
                const int want = r < n ? f.sc[size_t(r) * size_t(k / kSub) + size_t(s * 16 + h)] : 0;
                if ((lo | (hi << 4)) != want && bad++ < 5) FAIL_CHECK("sc r ", r, " h ", h);
            }
            for (int g = 0; g < 8; ++g) {
                const uint8_t* grp = sup + size_t(g) * kGroupBytes;
                for (int j = 0; j < kGroup; ++j) {
                    const int quad = j / 4, c = j % 4, bit = 4 * rr + c;
                    const int lo = (grp[(quad / 4) * 64 + rr * 4 + c] >> (2 * (quad % 4))) & 3;
                    const int hi = (grp[128 + 8 * quad + bit / 8] >> (bit % 8)) & 1;
                    const int want = r < n ? f.n[size_t(r) * k + size_t((s * 8 + g) * kGroup + j)] : 0;
                    if ((lo | (hi << 2)) != want && bad++ < 5) FAIL_CHECK("n r ", r, " k ", (s * 8 + g) * kGroup + j);
                }
            }
        }
    }
    // unpack_row against ggml's dequantizer (kernels/ggml_dequant.cpp) and the fields.
    const PackedMatrix w{WeightType::q3k, n, k, buf.data(), buf.size()};
    std::vector<int8_t> wq;
    std::vector<float> ws;
    ref_fields(f, wq, ws);
    std::vector<float> row(static_cast<size_t>(k)), want(static_cast<size_t>(k));
    for (int r = 0; r < n; ++r) {
        unpack_row(w, r, 1.0f, row.data());
        REQUIRE(dequantize_ggml(GgmlType::q3_k, blocks.data() + size_t(r) * 2, want.data(), k));
        for (int i = 0; i < k; ++i) {
            const float v = ws[size_t(r) * size_t(k / kSub) + size_t(i / kSub)] * float(wq[size_t(r) * k + size_t(i)]);
            if ((row[size_t(i)] != want[size_t(i)] || row[size_t(i)] != v) && bad++ < 5)
                FAIL_CHECK("unpack r ", r, " i ", i);
        }
    }
    CHECK(bad == 0);
    CHECK_THROWS_WITH_AS(pack_q3k_ggml(blocks.data(), n, 288, 0, 16, buf.data()),
                         "pack_q3k_ggml: k = 288 is not whole super-blocks of 256", Error);
    CHECK_THROWS_AS(pack_q3k_ggml(blocks.data(), n, k, 8, 16, buf.data()), Error);   // not a panel start
    CHECK_THROWS_AS(pack_q3k_ggml(blocks.data(), n, k, 0, 17, buf.data()), Error);   // ends inside a panel
}

TEST_CASE("q3k: a hand-made Q3_K block") {
    // Element 0: q = 3 (low bits 3, hmask bit set); element 1: q = -4 (low bits
    // 0, bit clear); element 130 (h = 1, t = 0, l = 2): q = -1 (low bits 3, bit
    // clear). Scale 0 = 63 (31), scale 8 = 0 (-32): scales[0] = 0x0F,
    // scales[8] bits 0-1 = 3 (scale 0's bits 4-5), bits 4-5 = 0 (scale 8's).
    BlockQ3_K b;
    std::memset(&b, 0, sizeof b);
    std::memset(b.hmask, 0xFF, sizeof b.hmask);
    b.qs[0] = 0x03;
    b.hmask[1] = 0xFE;  // element 1's bit (l = 1, 4h + t = 0) clear
    b.qs[32 + 2] = 0x03;
    b.hmask[2] = 0xEF;  // element 130's bit (l = 2, 4h + t = 4) clear
    b.scales[0] = 0x0F;
    b.scales[8] = 0x03;  // every other scale 0 (-32)
    b.d = f32_to_f16(0.5f);
    Buffer buf(packed_bytes(WeightType::q3k, 1, kSuper));
    pack_q3k_ggml(&b, 1, kSuper, 0, 1, buf.data());
    const PackedMatrix w{WeightType::q3k, 1, kSuper, buf.data(), buf.size()};
    std::vector<float> row(kSuper);
    unpack_row(w, 0, 1.0f, row.data());
    CHECK(row[0] == 0.5f * 31 * 3);
    CHECK(row[1] == 0.5f * 31 * -4);
    CHECK(row[2] == 0.0f);                   // q = 0 (low bits 0, bit set)
    CHECK(row[130] == 0.5f * -32 * -1);      // sub-block 8
    CHECK(row[16] == 0.0f);                  // sub-block 1: scale -32, q = 0
}

TEST_CASE("q3k quantizer: a hand-computed super-block, zeros, a non-finite sub-block, error within the step") {
    float x[kSuper] = {};
    uint8_t n[kSuper], sc[16];
    uint16_t d;
    quantize_q3k_super(x, n, sc, &d);
    CHECK(f16_to_f32(d) == 0.0f);
    for (int i = 0; i < kSuper; ++i) CHECK(int(n[i]) == 4);  // q = 0
    for (int h = 0; h < 16; ++h) CHECK(int(sc[h]) == 32);
    // Sub-block 0 holds q · 1.0 with -4 its largest |x|: its scale is 1 = the
    // largest, so d = 1 / -32 and sc - 32 = -32; sub-block 3 holds q · 0.25:
    // sc - 32 = round(0.25 / (1 / -32)) = -8.
    const int q0[16] = {-4, 3, 2, 1, 0, -1, -2, -3, 3, 3, -4, 0, 0, 1, 2, -1};
    for (int i = 0; i < 16; ++i) x[i] = float(q0[i]), x[48 + i] = 0.25f * float(q0[i]);
    quantize_q3k_super(x, n, sc, &d);
    CHECK(f16_to_f32(d) == -0.03125f);
    CHECK(int(sc[0]) == 0);
    CHECK(int(sc[3]) == 24);
    CHECK(int(sc[1]) == 32);
    for (int i = 0; i < 16; ++i) {
        CHECK(int(n[i]) == q0[i] + 4);
        CHECK(int(n[48 + i]) == q0[i] + 4);
    }
    std::mt19937 rng(4);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    double err2 = 0, step2 = 0;
    for (int trial = 0; trial < 200; ++trial) {
        for (float& v : x) v = normal(rng) * 0.02f;
        if (trial == 0) x[20] = NAN;  // sub-block 1 becomes zeros
        quantize_q3k_super(x, n, sc, &d);
        for (int h = 0; h < 16; ++h) {
            const float ws = f16_to_f32(d) * float(sc[h] - 32);
            if (trial == 0 && h == 1) {
                for (int i = 16; i < 32; ++i) CHECK(int(n[i]) == 4);
                continue;
            }
            for (int i = h * kSub; i < h * kSub + kSub; ++i) {
                REQUIRE(n[i] <= 7);
                const double e = double(x[i]) - double(ws) * (int(n[i]) - 4);
                err2 += e * e;
                step2 += double(ws) * ws;
            }
        }
    }
    // Round to nearest leaves at most half a step (RMS about 0.29 of a step
    // for smooth data); the +4 side clamps at 3, a step further.
    MESSAGE("q3k quantizer RMS error / RMS step: ", std::sqrt(err2 / step2));
    CHECK(std::sqrt(err2 / step2) < 0.4);
}

TEST_CASE("q3k matmul equals the reference exactly on every target (exact fp32 sums)") {
    std::mt19937 rng(43);
    for_each_target([&](const KernelTable& kt) {
        for (const int k : {256, 768})
            for (const int n : {1, 16, 33}) {
                const ExactCase c = exact_case(n, k, rng);
                for (const int m : {0, 1, 2, 6, 7, 13, 40})
                    for (const int threads : {1, 2})
                        harness::check_signed(kt, kRef, c.w, c.wq, c.ws, m, threads, true, rng);
                for (const int m : {1, 3, 7}) harness::check_signed(kt, kRef, c.w, c.wq, c.ws, m, 2, true, rng, 16);
            }
        // Rows split (few panels, many rows) and panels split.
        for (const auto& [n, k, m] : {std::tuple{17, 256, 100}, std::tuple{200, 512, 29}}) {
            const ExactCase c = exact_case(n, k, rng);
            for (const int threads : {1, 2}) harness::check_signed(kt, kRef, c.w, c.wq, c.ws, m, threads, true, rng);
        }
    });
}

TEST_CASE("q3k matmul matches the reference on random data on every target (float sources, padded k)") {
    std::mt19937 rng(47);
    for_each_target([&](const KernelTable& kt) {
        for (const int k : {1, 33, 300, 512})
            for (const int n : {17, 48}) harness::check_signed_from_floats(kt, kRef, n, k, rng);
    });
}
