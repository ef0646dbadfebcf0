// Layout of the q2k format (kernels/formats/q2k/: format.cpp, simd.cpp):
// GGUF's Q2_K kept as it is. Super-blocks of 256 k per row with an IEEE-half
// scale d and min dmin, and per sub-block of 16 k a 4-bit scale sc and a
// 4-bit min m (one byte, sc | m << 4, as in the file); values n in [0, 3]:
//   w = (d · sc) · n - (dmin · m)
// (d · sc and dmin · m are exact in fp32: 11 × 4 bits). 2.625 bits per
// weight, the file's own 84 bytes per 256.
//
// Activations are q8's activation rows. The values are 2-bit planes (one
// 64-byte row holds four quads of 16 rows); vec::load_q2 turns them into dot
// operands whose sum from 0 is Σ n·q_x on every target, per sub-block of 16
// (the tile's two sub-groups per group of 32, as q6k). The epilogue per
// sub-block is q4k's with the sub-block's own activation sum (the activation
// rows keep the first 16's, corr_lo, next to the group's):
//   y += float(Σ n·q_x) · ((d·sc) · x_s) + (dmin·m) · (-(x_s · float(Σ q_x)))
// (ref::matmul_q2k is the specification).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/kernels.hpp"
#include "kernels/memory.hpp"

namespace staticlm::kernels {

constexpr int kQ2kSuper = 256;                    // k per super-block
constexpr int kQ2kGroups = kQ2kSuper / kQ8Group;  // groups of 32 per super-block
constexpr int kQ2kSub = 16;                       // k per scale and min

// One group of 32 k for the 16 rows of a panel:
//  - q: the values; byte q[u][r][c] holds row r's n of quads j = 4u .. 4u + 3
//    (k = 4j + c) in bits 2(j - 4u), 2(j - 4u) + 1: row u is sub-block u, and
//    one 64-byte row serves the four quads of a sub-block (two load steps);
//  - sm: per sub-block and row the file's byte, scale | min << 4.
struct Q2kGroup {
    uint8_t q[kQ8Group / kQ2kSub][kPanelRows][4];
    uint8_t sm[kQ8Group / kQ2kSub][kPanelRows];
};
static_assert(sizeof(Q2kGroup) == 160 && offsetof(Q2kGroup, sm) == 128);

// 256 k × 16 rows: 8 groups, then each row's d and dmin. A panel is
// ceil(k / 256) super-blocks in k order (k is padded with zero weights).
struct Q2kSuper {
    Q2kGroup g[kQ2kGroups];
    uint16_t d[kPanelRows];     // IEEE half
    uint16_t dmin[kPanelRows];  // IEEE half
};
static_assert(sizeof(Q2kSuper) == 1344 && offsetof(Q2kSuper, d) == 1280 && offsetof(Q2kSuper, dmin) == 1312,
              "a q2k super-block is 8 groups of 160 bytes, then 16 half scales and 16 half mins: 2.625 bits");

// Quantizes one row's super-block of 256 floats (zeros where k is padded):
// n[256] in [0, 3], sm[16] (scale | min << 4, each in [0, 15]), d and dmin as
// IEEE halves. Per sub-block of 16 the range [min(0, lo), hi] is split into 3
// steps (scale (hi - min) / 3, min as -min ≥ 0); the 16 scales and mins are
// rounded to 4 bits of the super-block's largest (d = max scale / 15 as a
// half, sc = round(scale / d)), and n = round((x + dmin·m) / (d·sc))
// clamped. A sub-block with a non-finite value quantizes to 0. Round to
// nearest only: not llama.cpp's search (not a quality quantizer).
void quantize_q2k_super(const float* x, uint8_t* n, uint8_t* sm, uint16_t* d, uint16_t* dmin);

// Packs rows [n0, n1) of an [n][k] matrix given as GGUF Q2_K blocks (k / 256
// blocks per row, row n0 first) into q2k panels at dst (packed_bytes(q2k, n,
// k) bytes): values, scale bytes, d and dmin as they are. k must be a
// multiple of 256 and the rows whole panels (or end at n); else Error(input).
void pack_q2k_ggml(const void* blocks, int n, int k, int n0, int n1, std::byte* dst);

namespace ref {
// The weights of a float row as the kernels' packing makes them:
// quantize_q2k_super per super-block (k padded with zeros to k_pad, a
// multiple of 256): n [k_pad], and per sub-block of 16 ws = d·sc and
// wm = dmin·m [k_pad / 16].
void quantize_weight_row_q2k(const float* x, int k, uint8_t* n, float* ws, float* wm);
// The scalar reference: y[m][n] = x[m][k] · Wᵀ with W given as n [rows][k_pad]
// and ws, wm [rows][k_pad / 16]. x rows as for ref::matmul_q8; per sub-block
// of 16, in k order, in fp32 (products then sums: no FMA):
//   y += (x_s · ws) · float(Σ n·q_x);  y += wm · -(x_s · float(Σ q_x))
// (x_s the scale of the sub-block's group of 32).
void matmul_q2k(const uint8_t* wn, const float* ws, const float* wm, int rows, int k, const float* x, size_t ldx,
                int m, float* y, size_t ldy, int act_bits = 8);
}  // namespace ref

namespace detail {
// Writes row r of a super-block: n[256], sm[16], d, dmin (halves).
void store_q2k_super(std::byte* super, int r, const uint8_t* n, const uint8_t* sm, uint16_t d, uint16_t dmin);
}  // namespace detail

}  // namespace staticlm::kernels
