// Layout of the q6k format (kernels/formats/q6k/format.cpp, kernels/simd/matmul_int.hpp).
//
// q6k is GGUF's Q6_K kept as it is: super-blocks of 256 k per row with an
// IEEE-half scale d, a signed 8-bit scale sc per sub-block of 16 k, and 6-bit
// values n in [0, 63]:
//   w = (d · sc) · (n - 32)
// (d · sc is exact in fp32: 11 × 8 bits). 6.5625 bits per weight, the file's.
//
// Activations are q8's activation rows. Each group of 32 k is two sub-blocks
// with their own scales, so the tile runs each half as its own small group:
// the dot steps take the bytes n themselves (vpdpbusd's unsigned operand;
// plain AVX2: n + 96 = (n - 32) + 128), the half's sum starts at -32 · Σ q_x
// over its 16 activations (the activation rows keep -128 · that sum per half,
// corr_lo and corr_hi, so the start is a shift), which leaves
// Σ (n - 32)·q_x with no shift back; then
//   y += float(Σ (n - 32)·q_x) · ((d·sc) · x_s)
// per half, in k order (ref::matmul_q6k is the specification).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/kernels.hpp"
#include "kernels/memory.hpp"

namespace staticlm::kernels {

constexpr int kQ6kSuper = 256;                    // k per super-block
constexpr int kQ6kGroups = kQ6kSuper / kQ8Group;  // groups of 32 per super-block
constexpr int kQ6kSub = 16;                       // k per scale

// One group of 32 k for the 16 rows of a panel:
//  - lo: the low 4 bits of n, laid out as Q4Block::q (byte lo[t][r][c]: row
//    r's k = 8t + c in its low nibble, k = 8t + 4 + c in its high one);
//  - hi: bits 4-5 of n; byte hi[u][r][c] holds, for quads j = 4u .. 4u + 3
//    (k = 4j + c), bits 2(j - 4u) .. 2(j - 4u) + 1: one 64-byte row serves
//    the two load steps of the nibble rows lo[2u] and lo[2u + 1];
//  - sc: the scales of k 0-15 and 16-31 of each row.
struct Q6kGroup {
    uint8_t lo[kQ8Group / 8][kPanelRows][4];
    uint8_t hi[kQ8Group / 16][kPanelRows][4];
    int8_t sc[kQ8Group / kQ6kSub][kPanelRows];
};
static_assert(sizeof(Q6kGroup) == 416 && offsetof(Q6kGroup, hi) == 256 && offsetof(Q6kGroup, sc) == 384);

// 256 k × 16 rows: 8 groups, then each row's d. A panel is ceil(k / 256)
// super-blocks in k order (k is padded with zero weights).
struct Q6kSuper {
    Q6kGroup g[kQ6kGroups];
    uint16_t d[kPanelRows];  // IEEE half
};
static_assert(sizeof(Q6kSuper) == 3360 && offsetof(Q6kSuper, d) == 3328,
              "a q6k super-block is 8 groups of 416 bytes, then 16 half scales");

// Quantizes one row's super-block of 256 floats (zeros where k is padded):
// n[256] in [0, 63], sc[16], d (a half). Per sub-block of 16 the scale is
// max / -32 (the largest |x| at -32, Q6_K's rule); d = the largest |scale| /
// 127 as a half, sc = round(scale / d), n = round(x / (d·sc)) + 32 clamped. A
// sub-block with a non-finite value quantizes to 0.
void quantize_q6k_super(const float* x, uint8_t* n, int8_t* sc, uint16_t* d);

namespace detail {
// Writes row r of a super-block: n[256], sc[16], d (a half).
void store_q6k_super(std::byte* super, int r, const uint8_t* n, const int8_t* sc, uint16_t d);
}  // namespace detail

// q6k from GGUF Q6_K fields (kernels::ggml_q6k_fields): rows [n0, n1) given
// as n q [n1 - n0][k] in [0, 63], signed scales sc [n1 - n0][k / 16], halves
// d [n1 - n0][k / 256]; k a multiple of 256; else Error(input). Same
// row-range rules as pack_weights.
void pack_q6k_quants(const uint8_t* q, const int8_t* sc, const uint16_t* d, int n, int k, int n0, int n1,
                     std::byte* dst);

// The fields of n elements of GGUF Q6_K blocks at src (n a multiple of 256),
// unpacked for pack_q6k_quants: 6-bit q[n] in [0, 63] (the value is q - 32),
// signed scales sc[n / 16], halves d[n / 256]; dequantize_ggml gives exactly
// (half(d) · sc) · (q - 32).
void ggml_q6k_fields(const void* src, int64_t n, uint8_t* q, int8_t* sc, uint16_t* d);

namespace ref {
// q6k weights unpacked: values q = n - 32 [n][k_pad] (k padded to 256), per
// row and half-group of 16 the scale ws = d·sc [n][k_pad/16] (from
// quantize_weight_row_q6k). x rows as for ref::matmul_q8; per half-group of
// 16, in order, in fp32 (a product, then a sum):
//   y += (x_scale · ws) · float(Σ q·q_x)   (x_scale of the half's group of 32)
void quantize_weight_row_q6k(const float* x, int k, int8_t* q, float* ws);
void matmul_q6k(const int8_t* wq, const float* ws, int n, int k, const float* x, size_t ldx, int m, float* y,
                size_t ldy, int act_bits = 8);
}  // namespace ref

}  // namespace staticlm::kernels
