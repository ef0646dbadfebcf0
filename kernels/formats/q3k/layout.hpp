// Layout of the q3k format (kernels/formats/q3k/: format.cpp, simd.cpp).
//
// q3k is GGUF's Q3_K kept as it is: super-blocks of 256 k per row with an
// IEEE-half scale d, a 6-bit scale sc in [0, 63] per sub-block of 16 k and
// 3-bit values n = q + 4 in [0, 7] (Q3_K's 2 low bits and its hmask bit):
//   w = (d · (sc - 32)) · (n - 4)
// (d · (sc - 32) is exact in fp32: 11 × 6 bits). 110 bytes per row and
// super-block, 3.4375 bits per weight: the file's own size.
//
// Activations are q8's activation rows. As q6k, each group of 32 k is two
// sub-blocks with their own scales and the tile runs each half as its own
// small group: the dot steps take the bytes 32·n (vpdpbusd's unsigned
// operand; plain AVX2: n + 124 = q + 128), the half's sum starts at -128 · Σ
// q_x over its 16 activations, which leaves 32 · Σ (n - 4)·q_x, shifted back
// by 5 (vec::load_q3, vec::q3_dot); then
//   y += float(Σ (n - 4)·q_x) · ((d·(sc - 32)) · x_s)
// per half, in k order (ref::matmul_q3k is the specification).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/kernels.hpp"
#include "kernels/memory.hpp"

namespace staticlm::kernels {

constexpr int kQ3kSuper = 256;                    // k per super-block
constexpr int kQ3kGroups = kQ3kSuper / kQ8Group;  // groups of 32 per super-block
constexpr int kQ3kSub = 16;                       // k per scale

// One group of 32 k for the 16 rows of a panel (192 bytes, 3 bits a weight):
//  - lo: bits 0-1 of n; byte lo[u][r][c] holds, for quads j = 4u .. 4u + 3
//    (k = 4j + c), bits 2(j - 4u) .. 2(j - 4u) + 1: one 64-byte row serves
//    four quads (two load steps);
//  - hi: bit 2 of n, q5's bit plane: one 64-bit word per quad j, bit 4r + c
//    for row r, k = 4j + c (the quad's dot operand's byte mask).
struct Q3kGroup {
    uint8_t lo[kQ8Group / 16][kPanelRows][4];
    uint8_t hi[kQ8Group / 4][8];
};
static_assert(sizeof(Q3kGroup) == 192 && offsetof(Q3kGroup, hi) == 128);

// 256 k × 16 rows: 8 groups, then the 16 scales of each row in 6 bits, then
// each row's d (1760 bytes = 16 × Q3_K's 110):
//  - sc_lo[g][r]: bits 0-3 of sub-block 2g's sc in the low nibble, of
//    sub-block 2g + 1's in the high nibble;
//  - sc_hi[u][r]: bits 4-5 of sub-block 4u + i's sc in bits 2i, 2i + 1.
// A panel is ceil(k / 256) super-blocks in k order (k is padded with zero
// weights: n = 4, sc = 32).
struct Q3kSuper {
    Q3kGroup g[kQ3kGroups];
    uint8_t sc_lo[kQ3kGroups][kPanelRows];
    uint8_t sc_hi[kQ3kGroups / 2][kPanelRows];
    uint16_t d[kPanelRows];  // IEEE half
};
static_assert(sizeof(Q3kSuper) == 1760 && offsetof(Q3kSuper, sc_lo) == 1536 && offsetof(Q3kSuper, sc_hi) == 1664 &&
                  offsetof(Q3kSuper, d) == 1728,
              "a q3k super-block is 8 groups of 192 bytes, 192 bytes of 6-bit scales, then 16 half scales");

// Quantizes one row's super-block of 256 floats (zeros where k is padded):
// n[256] in [0, 7], sc[16] in [0, 63], d (a half). Per sub-block of 16 the
// scale is max / -4 (the largest |x| at q = -4); d = (the scale of largest
// magnitude) / -32 as a half, sc = round(scale / d) + 32 clamped to [0, 63],
// n = round(x / (d·(sc - 32))) + 4 clamped to [0, 7] (round to nearest,
// Q3_K's plain rule). A sub-block with a non-finite value quantizes to 0.
void quantize_q3k_super(const float* x, uint8_t* n, uint8_t* sc, uint16_t* d);

// Packs rows [n0, n1) of an [n][k] matrix given as GGUF Q3_K blocks (k / 256
// blocks per row, row n0 first) into q3k panels at dst (packed_bytes(q3k, n,
// k) bytes): values, scales and d as they are. k must be a multiple of 256 and
// the rows whole panels (or end at n); else Error(input).
void pack_q3k_ggml(const void* blocks, int n, int k, int n0, int n1, std::byte* dst);

namespace ref {
// The weights of a float row as the kernels' packing makes them
// (quantize_q3k_super per super-block, k padded with zeros to k_pad, a
// multiple of 256): values q = n - 4 [k_pad] and ws = d·(sc - 32) per
// sub-block of 16 [k_pad / 16].
void quantize_weight_row_q3k(const float* x, int k, int8_t* q, float* ws);
// The scalar reference: a q3k matmul is ref::matmul_q6k of those values and
// scales (per half-group of 16, in k order: y += (x_s · ws) · float(Σ q·q_x)).
// wq [n][k_pad], ws [n][k_pad / 16].
void matmul_q3k(const int8_t* wq, const float* ws, int n, int k, const float* x, size_t ldx, int m, float* y,
                size_t ldy, int act_bits = 8);
}  // namespace ref

namespace detail {
// Writes row r of a super-block: n[256] (0..7), sc[16] (0..63), d (a half).
void store_q3k_super(std::byte* super, int r, const uint8_t* n, const uint8_t* sc, uint16_t d);
}  // namespace detail

}  // namespace staticlm::kernels
