// Layout of the q4k format (kernels/formats/q4k/format.cpp, kernels/simd/matmul_int.hpp).
//
// q4k is GGUF's Q4_K kept as it is: super-blocks of 256 k per row, each with
// an IEEE-half scale d and min dmin, and per group of 32 k a 6-bit scale sc
// and 6-bit min m; the weights are nibbles n in [0, 15] and
//   w = (d · sc) · n - (dmin · m)
// (d · sc and dmin · m are exact in fp32: 11 × 6 bits). 4.625 bits per weight
// against the file's 4.5 (the 6-bit fields take a byte each here).
//
// Activations are q8's activation rows; the nibbles are q4's, taken as the
// bytes n (vec::load_u4: vpdpbusd's unsigned operand), each group's sum
// starting at 0, which leaves Σ n·q_x with no shift (plain AVX2 takes
// n + 120 and adds 8 · Σ q_x back). The group's epilogue adds the min term
// from the activation row's neg_xsum = -(x_s · float(Σ q_x)):
//   y = fma(float(Σ n·q_x), (d·sc) · x_s, y); y = fma(dmin·m, neg_xsum, y)
// (fused on SIMD targets; ref::matmul_q4k is the specification).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/kernels.hpp"
#include "kernels/memory.hpp"

namespace staticlm::kernels {

constexpr int kQ4kSuper = 256;                       // k per super-block
constexpr int kQ4kGroups = kQ4kSuper / kQ8Group;     // groups per super-block

// One group of 32 k for the 16 rows of a panel: the nibbles laid out as
// Q4Block::q (byte q[t][r][c]: row r's k = 8t + c in its low nibble, k = 8t +
// 4 + c in its high one), then each row's 6-bit scale and min as bytes.
struct Q4kGroup {
    uint8_t q[kQ8Group / 8][kPanelRows][4];  // n in [0, 15]
    uint8_t sc[kPanelRows];
    uint8_t m[kPanelRows];
};
static_assert(sizeof(Q4kGroup) == 288 && offsetof(Q4kGroup, sc) == 256 && offsetof(Q4kGroup, m) == 272);

// 256 k × 16 rows: 8 groups, then each row's d and dmin. A panel is
// ceil(k / 256) super-blocks in k order (k is padded with zero weights).
struct Q4kSuper {
    Q4kGroup g[kQ4kGroups];
    uint16_t d[kPanelRows];     // IEEE half
    uint16_t dmin[kPanelRows];  // IEEE half
};
static_assert(sizeof(Q4kSuper) == 2368 && offsetof(Q4kSuper, d) == 2304 && offsetof(Q4kSuper, dmin) == 2336,
              "a q4k super-block is 8 groups of 288 bytes, then 16 half scales and 16 half mins");

// Quantizes one row's super-block of 256 floats (zeros where k is padded):
// n[256] in [0, 15], sc[8] and m[8] in [0, 63], d and dmin as IEEE halves.
// Per group the range [min(0, lo), hi] is split into 15 steps (scale
// (hi - min) / 15, min as -min ≥ 0); the 8 scales and mins are then rounded
// to 6 bits of the super-block's largest (d = max scale / 63 as a half, sc =
// round(scale / d)), and n = round((x + dmin·m) / (d·sc)) clamped. A group
// with a non-finite value quantizes to 0.
void quantize_q4k_super(const float* x, uint8_t* n, uint8_t* sc, uint8_t* m, uint16_t* d, uint16_t* dmin);

namespace detail {
// Writes row r of a super-block: n[256], sc[8], m[8], d, dmin (halves).
void store_q4k_super(std::byte* super, int r, const uint8_t* n, const uint8_t* sc, const uint8_t* m, uint16_t d,
                     uint16_t dmin);
}  // namespace detail

// q4k from GGUF Q4_K fields (kernels::ggml_q4k_fields): rows [n0, n1) given
// as nibbles q [n1 - n0][k] in [0, 15], 6-bit sc and m [n1 - n0][k / 32],
// halves d and dmin [n1 - n0][k / 256]; k a multiple of 256; else Error(input).
// Same row-range rules as pack_weights.
void pack_q4k_quants(const uint8_t* q, const uint8_t* sc, const uint8_t* m, const uint16_t* d, const uint16_t* dmin,
                     int n, int k, int n0, int n1, std::byte* dst);

// The fields of n elements of GGUF Q4_K blocks at src (n a multiple of 256),
// unpacked for pack_q4k_quants: nibbles q[n], 6-bit sc[n / 32] and m[n / 32],
// halves d[n / 256] and dmin[n / 256]; dequantize_ggml gives exactly
// (half(d) · sc) · q - half(dmin) · m.
void ggml_q4k_fields(const void* src, int64_t n, uint8_t* q, uint8_t* sc, uint8_t* m, uint16_t* d, uint16_t* dmin);

namespace ref {
// q4k weights unpacked for ref::matmul_q4k: nibbles wn [k_pad] (k padded to
// 256), per group of 32 the scale ws = d·sc and min wm = dmin·m [k_pad/32]
// (ref::quantize_affine_k_row over quantize_q4k_super).
void quantize_weight_row_q4k(const float* x, int k, uint8_t* wn, float* ws, float* wm);
}  // namespace ref

}  // namespace staticlm::kernels
