// Layouts of the q8 format (kernels/formats/q8/format.cpp, kernels/simd/matmul_int.hpp).
//
// q8 is symmetric int8 with one scale per group of kQ8Group consecutive k of a
// row: scale = max|x| / 127, q = round-half-away(x / scale) clamped to ±127, an
// all-zero group has scale 0 and q = 0; k is padded with zeros to whole groups.
// Weights keep their scale as an IEEE half (scale = f16(min(max|x| / 127,
// 65504)), q computed with that rounded scale): 1.0625 bytes per weight, as
// llama.cpp's Q8_0. Activations, quantized per matmul call, keep fp32 scales.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/kernels.hpp"
#include "kernels/memory.hpp"

namespace staticlm::kernels {

// One group of kQ8Group k for the kPanelRows rows of a panel; a panel is
// ceil(k / 32) blocks in k order. Weights are stored as w + 128, so that
// vpdpbusd takes them as its unsigned operand and the activations as the
// signed one; the bias is removed by starting each group's int32 sum at
// -128 · Σ q_x (the activations' corr[]). One 64-byte row of q is 16 rows × 4
// consecutive k, the operand of one 512-bit vpdpbusd. Every other block starts
// 32 bytes into a cache line: loads that cross lines cost less than the 6% more
// bytes fp32 scales would.
struct Q8Block {
    uint8_t q[kQ8Group / 4][kPanelRows][4];  // w + 128
    uint16_t scale[kPanelRows];              // IEEE half, one per row
};
static_assert(sizeof(Q8Block) == 544 && offsetof(Q8Block, scale) == 512,
              "the q8 block is 512 bytes of biased int8 then 16 half scales");

constexpr int q8_groups(int k) { return (k + kQ8Group - 1) / kQ8Group; }

// A quantized activation row: int8 q[k_pad] (signed), float scale[G],
// int32 corr[G] = -128 · Σ q of the group, int32 corr_lo[G] and corr_hi[G] =
// -128 · Σ q of the group's first and last 16 (the sub-blocks of q6k, q3k, q2k), float
// neg_xsum[G] = -(scale · float(Σ q)), the group's -Σ x as its quantized
// values give it (the min term of the affine formats, q4k's epilogue); rows
// are `stride` bytes apart (a multiple of 64).
//
// 16-bit activations (PackedMatrix::act_bits = 16) add a second plane
// q2[k_pad] after q: with t = x / s (s = max|x| / 127, as above), q1 = the
// 8-bit q of t and q2 = round-half-away(256 · (t - q1)) clamped to ±127, so
// x ≈ (s / 256) · (256·q1 + q2), an error of at most s/512 where 8 bits
// leave s/2. scale[] holds s / 256, corr[] / corr_lo[] / corr_hi[] are
// -128 · Σ and neg_xsum[] is -(scale · Σ) of the 16-bit values 256·q1 + q2. A group's dot is the int32 sum over q1,
// shifted left by 8, plus corr, plus the sum over q2: the exact Σ w·(256·q1
// + q2) (|that| < 2^28 for every format's weight bytes), so the epilogues
// are 8-bit's unchanged.
struct Q8ActLayout {
    int k = 0;
    int n_groups = 0;
    int planes = 1;          // 1 (8-bit) or 2 (16-bit)
    size_t plane_bytes = 0;  // q2 starts here (k_pad)
    size_t stride = 0;
    size_t scale_off = 0;  // float scale[n_groups]
    size_t corr_off = 0;   // int32 corr[n_groups]
    size_t corr_lo_off = 0;  // int32 corr_lo[n_groups]
    size_t corr_hi_off = 0;  // int32 corr_hi[n_groups]
    size_t neg_xsum_off = 0;  // float neg_xsum[n_groups]
};

constexpr Q8ActLayout q8_act_layout(int k, int planes = 1) {
    Q8ActLayout a;
    a.k = k;
    a.n_groups = q8_groups(k);
    a.planes = planes;
    const size_t k_pad = size_t(a.n_groups) * kQ8Group;
    a.plane_bytes = k_pad;
    a.scale_off = k_pad * size_t(planes);
    a.corr_off = a.scale_off + sizeof(float) * size_t(a.n_groups);
    a.corr_lo_off = a.corr_off + sizeof(int32_t) * size_t(a.n_groups);
    a.corr_hi_off = a.corr_lo_off + sizeof(int32_t) * size_t(a.n_groups);
    a.neg_xsum_off = a.corr_hi_off + sizeof(int32_t) * size_t(a.n_groups);
    a.stride = align64(a.neg_xsum_off + sizeof(float) * size_t(a.n_groups));
    return a;
}
static_assert(q8_act_layout(32).stride == 64 && q8_act_layout(2048).stride == 64 * 52);
static_assert(q8_act_layout(2048, 2).stride == 64 * 84);

// Activation planes for PackedMatrix::act_bits (8 or 16).
constexpr int act_planes(int act_bits) { return act_bits == 16 ? 2 : 1; }

// Matmul scratch of the integer formats: m activation rows, sized for 16-bit
// activations (act_bits is a property of the matrix, not of the scratch).
constexpr size_t q8_act_scratch_bytes(int m, int k) {
    return m <= 0 ? 0 : size_t(m) * q8_act_layout(k, 2).stride;
}

// q8 from quants that are already 8-bit with IEEE-half scales per group of 32
// (GGUF Q8_0/Q5_0/Q4_0 blocks, kernels::ggml_to_q8_quants): rows [n0, n1)
// given as q [n1 - n0][k] and scales [n1 - n0][k / 32]; k a multiple of 32.
// Stored as given (no rounding); -128 becomes -127 (the format's range).
// Same row-range rules as pack_weights.
void pack_q8_quants(const int8_t* q, const uint16_t* scales, int n, int k, int n0, int n1, std::byte* dst);

}  // namespace staticlm::kernels
