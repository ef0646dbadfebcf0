// Layout of the iq4xs format (kernels/formats/iq4xs/: format.cpp, simd.cpp):
// GGUF's IQ4_XS kept as it is. Per row and super-block of 256 k one IEEE-half
// d, per group of 32 k a 6-bit scale ls, and 4-bit indices i into IQ4_NL's
// table of 16 int8 values (kIq4nlValues, kernels/ggml_blocks.hpp):
//   w = (d · (ls - 32)) · kIq4nlValues[i]
// (d · (ls - 32) is exact in fp32: 11 × 6 bits). Stored here as the signed
// byte sc = ls - 32: 4.3125 bits per weight against the file's 4.25 (1.5%).
//
// Activations are q8's activation rows and the dot step is iq4nl's: the
// indices sit where q4 keeps its nibbles and one byte shuffle per operand
// (vec::load_nl4) makes them the table's value + 128, q8's biased weight
// bytes, so a group's int32 sum starts at -128 · Σ q_x and ends as
// Σ value · q_x exactly. The epilogue is q8's with the group's scale d·sc:
//   y += float(Σ value·q_x) · ((d·sc) · x_s)
// (ref::matmul_iq4xs is the specification).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/ggml_blocks.hpp"
#include "kernels/kernels.hpp"
#include "kernels/memory.hpp"

namespace staticlm::kernels {

constexpr int kIq4xsSuper = 256;                     // k per super-block
constexpr int kIq4xsGroups = kIq4xsSuper / kQ8Group;  // groups of 32 per super-block

// One group of 32 k for the 16 rows of a panel: the indices laid out as
// Iq4nlBlock::q (byte q[t][r][c]: row r's index of k = 8t + c in its low
// nibble, of k = 8t + 4 + c in its high one), then each row's sc = ls - 32.
struct Iq4xsGroup {
    uint8_t q[kQ8Group / 8][kPanelRows][4];
    int8_t sc[kPanelRows];
};
static_assert(sizeof(Iq4xsGroup) == 272 && offsetof(Iq4xsGroup, sc) == 256);

// 256 k × 16 rows: 8 groups, then each row's d. A panel is ceil(k / 256)
// super-blocks in k order (k is padded with zero weights).
struct Iq4xsSuper {
    Iq4xsGroup g[kIq4xsGroups];
    uint16_t d[kPanelRows];  // IEEE half
};
static_assert(sizeof(Iq4xsSuper) == 2208 && offsetof(Iq4xsSuper, d) == 2176,
              "an iq4xs super-block is 8 groups of 272 bytes, then 16 half scales: 4.3125 bits per weight");

// Quantizes one row's super-block of 256 floats, of which the first len
// (1..256) are the row's (the rest padding, which does not steer the scales):
// idx[256] (0..15), sc[8] in [-32, 31], d (a half). Per group the scale s is
// iq4nl's (quantize_iq4nl_group); d = the largest |s| / 32 with the sign that
// gives that group sc = -32, rounded to a half; sc the best, in squared error,
// of round(s / d) and its two neighbours (clamped), each index the nearest
// table value of x / (d·sc). A super-block with a non-finite value, or all
// zero, gets d = 0 (every sc 0, every index 8).
void quantize_iq4xs_super(const float* x, int len, uint8_t* idx, int8_t* sc, uint16_t* d);

// Packs rows [n0, n1) of an [n][k] matrix given as GGUF IQ4_XS blocks (k / 256
// blocks per row, row n0 first) into iq4xs panels at dst (packed_bytes(iq4xs,
// n, k) bytes): indices, scales and d as they are. k must be a multiple of 256
// and the rows whole panels (or end at n); else Error(input).
void pack_iq4xs_ggml(const void* blocks, int n, int k, int n0, int n1, std::byte* dst);

namespace ref {
// The weights of a float row as the kernels' packing makes them:
// quantize_iq4xs_super per 256 (k padded with zeros to k_pad, a multiple of
// 256): idx [k_pad], sc [k_pad / 32], d [k_pad / 256] as IEEE halves.
void quantize_weight_row_iq4xs(const float* x, int k, uint8_t* idx, int8_t* sc, uint16_t* d);
// The scalar reference: an iq4xs matmul is ref::matmul_q8 of the table values
// kIq4nlValues[idx] (int8) and the group scales d·sc (exact floats). idx
// [n][k_pad], sc [n][k_pad / 32], d [n][k_pad / 256], k_pad = k rounded up to 256.
void matmul_iq4xs(const uint8_t* idx, const int8_t* sc, const uint16_t* d, int n, int k, const float* x,
                  size_t ldx, int m, float* y, size_t ldy, int act_bits = 8);
}  // namespace ref

namespace detail {
// Writes row r of a super-block: idx[256] (0..15), sc[8], d (a half).
void store_iq4xs_super(std::byte* super, int r, const uint8_t* idx, const int8_t* sc, uint16_t d);
}  // namespace detail

}  // namespace staticlm::kernels
