// Layout of the q5a format: GGUF Q5_1 kept as it is, q4a's block
// (kernels/formats/q4a/layout.hpp, which describes both) with q5's bit plane.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/kernels.hpp"
#include "kernels/memory.hpp"

namespace staticlm::kernels {

// q5a: the same with bit 4 of n as Q5Block::hi.
struct Q5aBlock {
    uint8_t q[kQ8Group / 8][kPanelRows][4];
    uint8_t hi[kQ8Group / 4][8];
    uint16_t d[kPanelRows];
    uint16_t m[kPanelRows];
};
static_assert(sizeof(Q5aBlock) == 384 && offsetof(Q5aBlock, hi) == 256 && offsetof(Q5aBlock, d) == 320 &&
              offsetof(Q5aBlock, m) == 352);

void quantize_q5a_group(const float* x, uint8_t* n, uint16_t* d, uint16_t* m);

namespace detail {
void store_q5a_group(std::byte* block, int r, const uint8_t* n, uint16_t d, uint16_t m);
}  // namespace detail

// pack_q4a_quants (formats/q4a/layout.hpp) for q5a, from GGUF Q5_1 fields
// (kernels::ggml_q41_fields): q in [0, 31].
void pack_q5a_quants(const uint8_t* q, const uint16_t* d, const uint16_t* m, int n, int k, int n0, int n1,
                     std::byte* dst);

namespace ref {
// quantize_weight_row_q4a for q5a (over quantize_q5a_group): wn in [0, 31].
void quantize_weight_row_q5a(const float* x, int k, uint8_t* wn, float* ws, float* wm);
}  // namespace ref

}  // namespace staticlm::kernels
