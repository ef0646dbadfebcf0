// Layout of the q5k format (kernels/formats/q5k/format.cpp, kernels/simd/matmul_int.hpp).
//
// q5k is GGUF's Q5_K kept as it is: q4k's super-blocks (kernels/formats/q4k/layout.hpp)
// with a fifth bit per value, n in [0, 31]:
//   w = (d · sc) · n - (dmin · m)
// 5.625 bits per weight against the file's 5.5. The operands are the bytes n
// from q5's nibble and bit planes (vec::load_u5, kernels/formats/q5/layout.hpp),
// which leave Σ n·q_x (plain AVX2: Σ (n - 16)·q_x, with 16 · Σ q_x added back); the
// epilogue is q4k's.
#pragma once

#include <cstddef>
#include <cstdint>

#include "formats/q4k/layout.hpp"

namespace staticlm::kernels {

// One group of 32 k for the 16 rows of a panel: the low 4 bits of n as
// Q4Block::q, bit 4 as Q5Block::hi (one 64-bit word per quad, bit 4r + c for
// row r, k = 4j + c), then each row's 6-bit scale and min as bytes.
struct Q5kGroup {
    uint8_t q[kQ8Group / 8][kPanelRows][4];
    uint8_t hi[kQ8Group / 4][8];
    uint8_t sc[kPanelRows];
    uint8_t m[kPanelRows];
};
static_assert(sizeof(Q5kGroup) == 352 && offsetof(Q5kGroup, hi) == 256 && offsetof(Q5kGroup, sc) == 320);

struct Q5kSuper {
    Q5kGroup g[kQ4kGroups];
    uint16_t d[kPanelRows];     // IEEE half
    uint16_t dmin[kPanelRows];  // IEEE half
};
static_assert(sizeof(Q5kSuper) == 2880 && offsetof(Q5kSuper, d) == 2816,
              "a q5k super-block is 8 groups of 352 bytes, then 16 half scales and 16 half mins");

// quantize_q4k_super's rule with 31 steps: n[256] in [0, 31].
void quantize_q5k_super(const float* x, uint8_t* n, uint8_t* sc, uint8_t* m, uint16_t* d, uint16_t* dmin);

namespace detail {
void store_q5k_super(std::byte* super, int r, const uint8_t* n, const uint8_t* sc, const uint8_t* m, uint16_t d,
                     uint16_t dmin);
}  // namespace detail

// pack_q4k_quants (formats/q4k/layout.hpp) for q5k, from GGUF Q5_K fields
// (kernels::ggml_q5k_fields): q in [0, 31].
void pack_q5k_quants(const uint8_t* q, const uint8_t* sc, const uint8_t* m, const uint16_t* d, const uint16_t* dmin,
                     int n, int k, int n0, int n1, std::byte* dst);

// ggml_q4k_fields (formats/q4k/layout.hpp) for GGUF Q5_K blocks, unpacked for
// pack_q5k_quants: q[n] in [0, 31].
void ggml_q5k_fields(const void* src, int64_t n, uint8_t* q, uint8_t* sc, uint8_t* m, uint16_t* d, uint16_t* dmin);

namespace ref {
// quantize_weight_row_q4k for q5k (over quantize_q5k_super): wn in [0, 31];
// ref::matmul_q4k is its matmul too.
void quantize_weight_row_q5k(const float* x, int k, uint8_t* wn, float* ws, float* wm);
}  // namespace ref

}  // namespace staticlm::kernels
