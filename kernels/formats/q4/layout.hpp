// Layouts of the q4 format (kernels/formats/q4/format.cpp, kernels/simd/matmul_int.hpp).
//
// q4 is symmetric 4-bit: one IEEE-half scale per group of kQ8Group consecutive
// k of a row, q in [-8, 7], w = scale · q (GGUF's Q4_0 is exactly this, so its
// blocks repack without rounding). 4.5 bits per weight. Activations are the
// q8 activation rows (int8, fp32 scales), so a q4 matmul is the q8 matmul with
// the weight bytes coming from nibbles.
//
// The kernels run q8's dot step on the nibbles n = q + 8 moved to the high
// half of a byte (16·n: one and, and a shift for the low nibbles): vpdpbusd
// multiplies them as its unsigned operand with the signed activations, each
// group's int32 sum starts at -128 · Σ q_x (the activations' corr[]) as for
// q8, which leaves 16 · Σ q·q_x, and one arithmetic shift per group ends it
// (kernels/simd/vec.hpp, load_q4 and q4_dot).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/kernels.hpp"
#include "kernels/memory.hpp"

namespace staticlm::kernels {

// One group of kQ8Group k for the kPanelRows rows of a panel; a panel is
// ceil(k / 32) blocks in k order. Byte q[t][r][c] holds row r's k = 8t + c in
// its low nibble and k = 8t + 4 + c in its high nibble, each as q + 8. So one
// 64-byte row q[t] gives, after a mask (and a shift), the operands of two
// 512-bit vpdpbusd: the 16 rows × 4 consecutive k of quads 2t and 2t + 1, the
// same [16][4] order as a Q8Block's q[j].
struct Q4Block {
    uint8_t q[kQ8Group / 8][kPanelRows][4];  // two quads of nibbles, q + 8
    uint16_t scale[kPanelRows];              // IEEE half, one per row
};
static_assert(sizeof(Q4Block) == 288 && offsetof(Q4Block, scale) == 256,
              "the q4 block is 256 bytes of nibbles then 16 half scales");

// Quantizes one group of kQ8Group floats (zeros where k is padded) to q[32] in
// [-8, 7]; returns the scale, a value an IEEE half holds exactly (finite, of
// either sign: the largest |x| may take -8; 0 for an all-zero group or one
// with a non-finite value: then q = 0).
//
// The scale minimizes the weighted squared error Σ w_i (x_i - s·q_i)² with
// w_i = x_i² + mean(x²) (large weights matter more, small ones still count)
// over a fixed set of candidates: round-to-nearest with the largest |x| at
// -8 (llama.cpp's Q4_0 rule) and, for divisors d around -8 and +7, the
// least-squares scale of the rounding of x / (max / d). The chosen scale is
// rounded to a half and q recomputed with it (round half away from zero).
float quantize_q4_group(const float* x, int8_t* q);

namespace detail {
// Writes row r's q[32] (in [-8, 7]) and its scale (a half value) into a Q4Block.
void store_q4_group(std::byte* block, int r, const int8_t* q, float scale);
}  // namespace detail

// q4 from quants and scales given as pack_q8_quants takes them
// (formats/q8/layout.hpp): q in [-8, 7] (anything else is Error(input)),
// e.g. GGUF Q4_0.
void pack_q4_quants(const int8_t* q, const uint16_t* scales, int n, int k, int n0, int n1, std::byte* dst);

namespace ref {
// q4 weights as packing makes them: quantize_q4_group per group of 32
// (ref::quantize_symmetric_row, k padded with zeros); q in [-8, 7], scale[]
// the half values as floats. A q4 matmul is ref::matmul_q8 of these.
void quantize_weight_row_q4(const float* x, int k, int8_t* q, float* scale);
}  // namespace ref

}  // namespace staticlm::kernels
