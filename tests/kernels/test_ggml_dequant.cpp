// ggml block layouts and dequantizers (kernels/ggml_dequant.cpp) on blocks
// built by hand, so each layout rule can be read off a test: which bit or
// nibble holds which element, and how scales and mins combine. The bit-exact
// comparison with gguf-py on random blocks is tests/model/test_gguf.cpp.
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "formats/q8/layout.hpp"
#include "kernels/ggml_blocks.hpp"
#include "kernels/kernels.hpp"
#include "staticlm/error.hpp"

using namespace staticlm::kernels;

namespace {

template <class Block>
std::vector<float> decode(GgmlType type, const Block& b, int n) {
    std::vector<float> y(size_t(n), -999.0f);
    REQUIRE(dequantize_ggml(type, &b, y.data(), n));
    return y;
}

const uint16_t kOne = 0x3C00, kHalf = 0x3800, kTwo = 0x4000, kMinusOne = 0xBC00;  // f16

}  // namespace

TEST_CASE("ggml type table: names, block sizes, unknown and retired ids") {
    CHECK(std::string(ggml_type_name(GgmlType::q4_k)) == "Q4_K");
    CHECK(ggml_type_info(GgmlType::q6_k)->block_bytes == int(sizeof(BlockQ6_K)));
    CHECK(ggml_type_info(GgmlType::q5_0)->block_bytes == int(sizeof(BlockQ5_0)));
    CHECK(ggml_type_info(GgmlType::q2_k)->block_elems == 256);
    CHECK(ggml_type_info(4) == nullptr);   // Q4_2, retired
    CHECK(ggml_type_info(31) == nullptr);  // Q4_0_4_4, retired
    CHECK(ggml_type_info(1000) == nullptr);
    CHECK_FALSE(ggml_type_info(GgmlType::iq2_xxs)->dequantizable);
    float y[256];
    CHECK_FALSE(dequantize_ggml(GgmlType::iq2_xxs, y, y, 256));
}

TEST_CASE("Q8_0 and Q4_0/Q4_1: element j in the low nibble, j + 16 in the high one") {
    BlockQ8_0 b8{};
    b8.d = kHalf;
    for (int j = 0; j < 32; ++j) b8.qs[j] = int8_t(j - 16);
    const auto y8 = decode(GgmlType::q8_0, b8, 32);
    for (int j = 0; j < 32; ++j) CHECK(y8[size_t(j)] == 0.5f * float(j - 16));

    BlockQ4_0 b4{};
    b4.d = kTwo;
    b4.qs[0] = 0xF0;  // element 0: 0 - 8, element 16: 15 - 8
    b4.qs[3] = 0x39;  // element 3: 9 - 8, element 19: 3 - 8
    const auto y4 = decode(GgmlType::q4_0, b4, 32);
    CHECK(y4[0] == -16.0f);
    CHECK(y4[16] == 14.0f);
    CHECK(y4[3] == 2.0f);
    CHECK(y4[19] == -10.0f);
    CHECK(y4[1] == 2.0f * -8.0f);  // qs 0 -> 0 - 8

    BlockQ4_1 b41{};
    b41.d = kHalf;
    b41.m = kMinusOne;
    b41.qs[1] = 0x42;  // element 1: 2, element 17: 4
    const auto y41 = decode(GgmlType::q4_1, b41, 32);
    CHECK(y41[1] == 0.5f * 2 - 1);
    CHECK(y41[17] == 0.5f * 4 - 1);
    CHECK(y41[0] == -1.0f);
}

TEST_CASE("Q5_0/Q5_1: bit j of qh is element j's fifth bit") {
    BlockQ5_0 b{};
    b.d = kOne;
    const uint32_t qh = (1u << 2) | (1u << 18);  // elements 2 and 18
    std::memcpy(b.qh, &qh, 4);
    b.qs[2] = 0x11;  // elements 2 and 18 have low bits 1
    const auto y = decode(GgmlType::q5_0, b, 32);
    CHECK(y[2] == float(16 + 1 - 16));
    CHECK(y[18] == float(16 + 1 - 16));
    CHECK(y[0] == -16.0f);
    CHECK(y[31] == -16.0f);

    BlockQ5_1 c{};
    c.d = kTwo;
    c.m = kOne;
    std::memcpy(c.qh, &qh, 4);
    c.qs[2] = 0xF0;  // element 2: 0 | 16, element 18: 15 | 16
    const auto z = decode(GgmlType::q5_1, c, 32);
    CHECK(z[2] == 2.0f * 16 + 1);
    CHECK(z[18] == 2.0f * 31 + 1);
}

TEST_CASE("Q4_K: 6-bit scales and mins of sub-blocks 0-3 and 4-7, (d*sc)*q - dmin*m") {
    BlockQ4_K b{};
    b.d = kOne;
    b.dmin = kHalf;
    // sub-block 1: scale 3, min 2; sub-block 5: scale 0x25 = 37 (low 4 bits in
    // scales[9], high 2 in scales[1] bits 6-7), min 0x13 = 19 (scales[9] high
    // nibble, scales[5] bits 6-7).
    b.scales[1] = uint8_t(3 | (0x2 << 6));
    b.scales[5] = uint8_t(2 | (0x1 << 6));
    b.scales[9] = uint8_t(0x5 | (0x3 << 4));
    uint8_t sc, mn;
    k4_scale_min(5, b.scales, sc, mn);
    CHECK(sc == 37);
    CHECK(mn == 19);
    b.qs[0] = 0x0A;   // chunk 0: element 0 = 10 (sub-block 0), element 32 = 0 (sub-block 1)
    b.qs[64] = 0x70;  // chunk 2: element 128 = 0 (sub-block 4), element 160 = 7 (sub-block 5)
    const auto y = decode(GgmlType::q4_k, b, 256);
    CHECK(y[0] == 0.0f);             // sub-block 0: scale 0, min 0
    CHECK(y[32] == 3.0f * 0 - 1.0f);  // sub-block 1: 0.5 * 2 = 1
    CHECK(y[160] == 37.0f * 7 - 9.5f);
}

TEST_CASE("Q6_K: ql nibbles and qh bit pairs per quarter, int8 scales per 16") {
    BlockQ6_K b{};
    b.d = kHalf;
    for (int k = 0; k < 16; ++k) b.scales[k] = int8_t(k - 8);
    // element 32 + 5 (quarter g=1 of half n=0): low nibble of ql[37], bits 2-3 of qh[5]
    b.ql[37] = 0x0C;
    b.qh[5] = 0x2 << 2;
    // element 128 + 64 + 1 (n=1, g=2): high nibble of ql[64 + 1], bits 4-5 of qh[32 + 1]
    b.ql[65] = 0x30;
    b.qh[33] = 0x3 << 4;
    const auto y = decode(GgmlType::q6_k, b, 256);
    CHECK(y[37] == (0.5f * float(2 - 8)) * float((12 | (2 << 4)) - 32));   // sub-block 2
    CHECK(y[193] == (0.5f * float(12 - 8)) * float((3 | (3 << 4)) - 32));  // sub-block 12
    CHECK(y[0] == (0.5f * -8.0f) * -32.0f);
}

TEST_CASE("Q2_K/Q3_K: element 128n + 32s + i in bits 2s of qs[32n + i]; Q3_K's hmask") {
    BlockQ2_K b{};
    b.d = kOne;
    b.dmin = kOne;
    b.scales[3] = uint8_t(5 | (2 << 4));  // sub-block 3 = elements 48..63 (n 0, s 1, i >= 16)
    b.qs[20] = uint8_t(3 << 2);           // element 32 + 20 = 52
    const auto y = decode(GgmlType::q2_k, b, 256);
    CHECK(y[52] == 5.0f * 3 - 2.0f);
    CHECK(y[48] == 5.0f * 0 - 2.0f);

    BlockQ3_K c{};
    c.d = kOne;
    // all 16 scales 32 + 1 = 33 (6-bit): low nibbles 1, high bits 2 -> packed
    for (int k = 0; k < 8; ++k) c.scales[k] = 0x11;
    for (int k = 8; k < 12; ++k) c.scales[k] = 0xAA;
    c.qs[40] = uint8_t(2 << 4);  // element 128 + 64 + 8 = 200 (n 1, s 2, i 8): low bits 2
    c.hmask[8] = uint8_t(1 << 6);  // bit 4n + s = 6: no -4
    const auto z = decode(GgmlType::q3_k, c, 256);
    CHECK(z[200] == 1.0f * 2);
    CHECK(z[0] == 1.0f * -4);  // low bits 0, hmask bit clear
}

TEST_CASE("Q8_0/Q5_0/Q4_0 into q8 without rounding: ggml_to_q8_quants + pack_q8_quants") {
    // 37 rows (a partial last panel) of 96 elements (3 blocks), random bytes
    // with finite scales: every unpacked value equals dequantize_ggml's.
    const int n = 37, k = 96;
    uint32_t seed = 12345;
    auto next = [&] { return seed = seed * 1664525u + 1013904223u; };
    for (GgmlType type : {GgmlType::q8_0, GgmlType::q5_0, GgmlType::q4_0}) {
        const GgmlTypeInfo& info = *ggml_type_info(type);
        const size_t row_bytes = size_t(k / info.block_elems) * size_t(info.block_bytes);
        std::vector<uint8_t> bytes(size_t(n) * row_bytes);
        for (uint8_t& b : bytes) b = uint8_t(next() >> 24);
        for (size_t blk = 0; blk < bytes.size() / size_t(info.block_bytes); ++blk) {
            uint8_t* p = bytes.data() + blk * size_t(info.block_bytes);
            const uint16_t d = uint16_t(0x2000 + (next() >> 20) % 0x3000);  // finite, both signs below
            std::memcpy(p, &d, 2);
            if (blk % 3 == 0) p[1] |= 0x80;
            if (type == GgmlType::q8_0)
                for (int j = 2; j < 34; ++j)
                    if (p[j] == 0x80) p[j] = 0x81;  // -128 is outside q8's range (checked below)
        }
        std::vector<float> want(size_t(n) * k);
        REQUIRE(dequantize_ggml(type, bytes.data(), want.data(), int64_t(want.size())));
        std::vector<int8_t> q(size_t(n) * k);
        std::vector<uint16_t> scales(size_t(n) * k / 32);
        REQUIRE(ggml_to_q8_quants(type, bytes.data(), q.data(), scales.data(), int64_t(q.size())));
        std::vector<std::byte> packed(packed_bytes(staticlm::WeightType::q8, n, k));
        // Two calls: rows [0, 16) and [16, 37), each given only its own rows.
        pack_q8_quants(q.data(), scales.data(), n, k, 0, 16, packed.data());
        pack_q8_quants(q.data() + 16 * k, scales.data() + 16 * k / 32, n, k, 16, n, packed.data());
        const PackedMatrix m{staticlm::WeightType::q8, n, k, packed.data(), packed.size()};
        int exact = 0;
        std::vector<float> row(static_cast<size_t>(k));
        for (int r = 0; r < n; ++r) {
            unpack_row(m, r, 1.0f, row.data());
            for (int i = 0; i < k; ++i) exact += row[size_t(i)] == want[size_t(r) * k + size_t(i)];
        }
        CHECK_MESSAGE(exact == n * k, ggml_type_name(type));
    }
    CHECK_FALSE(ggml_to_q8_quants(GgmlType::q4_k, nullptr, nullptr, nullptr, 256));
    // -128 (possible in a Q8_0 file, never written by ggml) becomes -127.
    BlockQ8_0 b{};
    b.d = kOne;
    b.qs[0] = -128;
    int8_t q[32];
    uint16_t s;
    REQUIRE(ggml_to_q8_quants(GgmlType::q8_0, &b, q, &s, 32));
    std::vector<std::byte> packed(packed_bytes(staticlm::WeightType::q8, 1, 32));
    pack_q8_quants(q, &s, 1, 32, 0, 1, packed.data());
    float row[32];
    unpack_row(PackedMatrix{staticlm::WeightType::q8, 1, 32, packed.data(), packed.size()}, 0, 1.0f, row);
    CHECK(row[0] == -127.0f);
    CHECK_THROWS_AS(pack_q8_quants(q, &s, 1, 40, 0, 1, packed.data()), staticlm::Error);
}
