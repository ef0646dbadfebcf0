// Layout of the iq4nl format (kernels/formats/iq4nl/: format.cpp, simd.cpp):
// GGUF's IQ4_NL kept as it is. Per row and group of 32 k one IEEE-half scale d
// and 4-bit indices i into a fixed non-linear table of 16 int8 values
// (kIq4nlValues, ggml's kvalues_iq4nl in kernels/ggml_blocks.hpp); w = d · kIq4nlValues[i]. 4.5 bits per
// weight, the file's own size. Activations are q8's activation rows.
//
// The indices sit where q4 keeps its nibbles. The kernels look each nibble up
// in the table of biased bytes value + 128 (one byte shuffle per operand,
// vec::load_nl4), which is q8's weight encoding: vpdpbusd multiplies them as
// its unsigned operand, each group's int32 sum starts at -128 · Σ q_x (the
// activations' corr), so it ends as Σ value·q_x exactly and the epilogue is
// q8's. The values lie in [-127, 113]: plain AVX2's sign trick negates them
// all, so every target runs the same exact dot.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/ggml_blocks.hpp"
#include "kernels/kernels.hpp"
#include "kernels/memory.hpp"

namespace staticlm::kernels {

// The table as the kernels' dot operands: value + 128.
struct Iq4nlBiased {
    alignas(16) uint8_t b[16];
};
inline constexpr Iq4nlBiased kIq4nlBiased = [] {
    Iq4nlBiased t{};
    for (int i = 0; i < 16; ++i) t.b[i] = uint8_t(kIq4nlValues[i] + 128);
    return t;
}();

// One group of kQ8Group k for the kPanelRows rows of a panel; a panel is
// ceil(k / 32) blocks in k order. Byte q[t][r][c] holds row r's index of
// k = 8t + c in its low nibble and of k = 8t + 4 + c in its high nibble (q4's
// order): one 64-byte row q[t] gives the [16 rows][4 k] operands of quads
// 2t and 2t + 1.
struct Iq4nlBlock {
    uint8_t q[kQ8Group / 8][kPanelRows][4];  // two quads of table indices
    uint16_t scale[kPanelRows];              // d, IEEE half, one per row
};
static_assert(sizeof(Iq4nlBlock) == 288 && offsetof(Iq4nlBlock, scale) == 256,
              "the iq4nl block is 256 bytes of indices then 16 half scales: 4.5 bits per weight");

// Quantizes the first len (1..32) of one group of kQ8Group floats to table
// indices idx[32] (index 8, the value 1, past len: padding, which the
// activations' zeros meet); returns the scale, a value an IEEE half holds
// exactly (0 for an all-zero group or one with a non-finite value: then every
// idx is 8). The scale is the better, in squared error over x[0, len), of the
// largest |x| at -127 and the least-squares scale of those indices, each
// rounded to a half; each index is the nearest table value of x / scale (ties
// to the lower value).
float quantize_iq4nl_group(const float* x, int len, uint8_t* idx);

// Packs rows [n0, n1) of an [n][k] matrix given as GGUF IQ4_NL blocks (k / 32
// blocks per row, row n0 first) into iq4nl panels at dst (packed_bytes(iq4nl,
// n, k) bytes): indices and scales as they are. k must be a multiple of 32
// and the rows whole panels (or end at n); else Error(input).
void pack_iq4nl_ggml(const void* blocks, int n, int k, int n0, int n1, std::byte* dst);

namespace ref {
// The weights of a float row as the kernels' packing makes them:
// quantize_iq4nl_group per group of 32 (k padded with zeros to k_pad, a
// multiple of 32): idx [k_pad], d [k_pad / 32] as IEEE halves.
void quantize_weight_row_iq4nl(const float* x, int k, uint8_t* idx, uint16_t* d);
// The scalar reference: an iq4nl matmul is ref::matmul_q8 of the table
// values kIq4nlValues[idx] (int8) and the scales d. idx [n][k_pad],
// d [n][k_pad / 32] as IEEE halves.
void matmul_iq4nl(const uint8_t* idx, const uint16_t* d, int n, int k, const float* x, size_t ldx, int m,
                  float* y, size_t ldy, int act_bits = 8);
}  // namespace ref

namespace detail {
// Writes row r's indices idx[32] (0..15) and its scale (a half value) into an Iq4nlBlock.
void store_iq4nl_group(std::byte* block, int r, const uint8_t* idx, float scale);
}  // namespace detail

}  // namespace staticlm::kernels
