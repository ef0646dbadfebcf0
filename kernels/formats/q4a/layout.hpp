// Layout of the q4a format (kernels/formats/q4a/; q5a, its 5-bit
// sibling, is kernels/formats/q5a/).
//
// q4a and q5a are GGUF's Q4_1 and Q5_1 kept as they are: per row and group of
// 32 k an IEEE-half scale d and offset m, unsigned values n in [0, 15]
// (q5a: [0, 31]), w = d · n + m. 5 and 6 bits per weight, the files' own.
// The operands are q4's (q5a: q5's) nibbles as the bytes n (vec::load_u4,
// load_u5), which leave Σ n·q_x (plain AVX2:
// Σ (n - 8)·q_x, Σ (n - 16)·q_x, and the epilogue adds 8 (16) · Σ q_x back);
// the group's epilogue adds the offset term:
//   y += float(Σ n·q_x) · (d · x_s) + m · (x_s · float(Σ q_x))
// (AffineOps in kernels/simd/matmul_int.hpp; ref::matmul_q4k with ws = d,
// wm = -m is the specification).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/kernels.hpp"
#include "kernels/memory.hpp"

namespace staticlm::kernels {

// One group of 32 k for the 16 rows of a panel: nibbles as Q4Block::q, then
// each row's d and m; a panel is ceil(k / 32) blocks in k order.
struct Q4aBlock {
    uint8_t q[kQ8Group / 8][kPanelRows][4];
    uint16_t d[kPanelRows];  // IEEE half
    uint16_t m[kPanelRows];  // IEEE half
};
static_assert(sizeof(Q4aBlock) == 320 && offsetof(Q4aBlock, d) == 256 && offsetof(Q4aBlock, m) == 288);

void quantize_q4a_group(const float* x, uint8_t* n, uint16_t* d, uint16_t* m);

namespace detail {
void store_q4a_group(std::byte* block, int r, const uint8_t* n, uint16_t d, uint16_t m);
}  // namespace detail

// q4a from GGUF Q4_1 fields (kernels::ggml_q41_fields): rows [n0, n1) given
// as q [n1 - n0][k] in [0, 15], halves d and m [n1 - n0][k / 32]; k a
// multiple of 32; else Error(input). Same row-range rules as pack_weights.
void pack_q4a_quants(const uint8_t* q, const uint16_t* d, const uint16_t* m, int n, int k, int n0, int n1,
                     std::byte* dst);

namespace ref {
// q4a weights unpacked for ref::matmul_affine (k_pad = padded_k(q4a, k), k
// padded to 32): wn in [0, 15], per group ws = d and wm = -m
// (ref::quantize_affine_g_row over quantize_q4a_group).
void quantize_weight_row_q4a(const float* x, int k, uint8_t* wn, float* ws, float* wm);
}  // namespace ref

}  // namespace staticlm::kernels
