// Layout of the q5 format (kernels/formats/q5/format.cpp, kernels/simd/matmul_int.hpp).
//
// q5 is symmetric 5-bit: one IEEE-half scale per group of kQ8Group consecutive
// k of a row, q in [-16, 15], w = scale · q. GGUF's Q5_0 is exactly this, so
// its blocks repack without rounding and a Q5_0 file keeps its 5.5 bits per
// weight in memory (as q8 it took 8.5). Activations are q8's activation rows,
// so a q5 matmul is the q8 matmul with the weight bytes coming from 5 bits.
//
// The kernels run q8's dot step on n = q + 16 in [0, 31], moved up 3 bits (the
// byte 8·n): the low 4 bits come from a nibble plane laid out as q4's, bit 4
// from a bit plane whose 64 bits per quad are one AVX-512 byte mask (one
// masked add per operand). vpdpbusd multiplies 8·n as its unsigned operand
// with the signed activations and each group's sum starts at -128 · Σ q_x, as
// for q8, which leaves 8 · Σ q·q_x; one arithmetic shift ends it (vec::load_q5
// and vec::q5_dot). Plain AVX2 (maddubs) takes q + 128 = n + 112 instead.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/kernels.hpp"
#include "kernels/memory.hpp"

namespace staticlm::kernels {

// One group of kQ8Group k for the kPanelRows rows of a panel; a panel is
// ceil(k / 32) blocks in k order.
//  - lo: as Q4Block::q, the low 4 bits of n (byte lo[t][r][c]: row r's
//    k = 8t + c in its low nibble, k = 8t + 4 + c in its high one);
//  - hi: bit 4 of n, one 64-bit word per quad j (k = 4j .. 4j + 3), bit
//    4r + c for row r, k = 4j + c: the same order as the 64 bytes of the
//    quad's dot operand, so word j is that operand's byte mask.
struct Q5Block {
    uint8_t lo[kQ8Group / 8][kPanelRows][4];  // low nibbles of n = q + 16
    uint8_t hi[kQ8Group / 4][8];              // bit 4 of n, little-endian words
    uint16_t scale[kPanelRows];               // IEEE half, one per row
};
static_assert(sizeof(Q5Block) == 352 && offsetof(Q5Block, hi) == 256 && offsetof(Q5Block, scale) == 320,
              "the q5 block is 256 bytes of nibbles, 64 of high bits, then 16 half scales");

// Quantizes one group of kQ8Group floats (zeros where k is padded) to q[32] in
// [-16, 15] by round to nearest with the largest |x| at -16 (GGUF Q5_0's rule):
// scale = half(max / -16), q = round-half-away(x / scale) clamped. Returns the
// scale, a value an IEEE half holds exactly (0 for an all-zero group or one
// with a non-finite value: then q = 0).
float quantize_q5_group(const float* x, int8_t* q);

namespace detail {
// Writes row r's q[32] (in [-16, 15]) and its scale (a half value) into a Q5Block.
void store_q5_group(std::byte* block, int r, const int8_t* q, float scale);
}  // namespace detail

// q5 from quants and scales given as pack_q8_quants takes them
// (formats/q8/layout.hpp): q in [-16, 15] (anything else is Error(input)),
// e.g. GGUF Q5_0.
void pack_q5_quants(const int8_t* q, const uint16_t* scales, int n, int k, int n0, int n1, std::byte* dst);

namespace ref {
// q5 weights as packing makes them: quantize_q5_group per group of 32
// (ref::quantize_symmetric_row, k padded with zeros); q in [-16, 15], scale[]
// the half values as floats. A q5 matmul is ref::matmul_q8 of these.
void quantize_weight_row_q5(const float* x, int k, int8_t* q, float* scale);
}  // namespace ref

}  // namespace staticlm::kernels
