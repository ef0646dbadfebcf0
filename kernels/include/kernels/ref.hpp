// Scalar references: the specification every SIMD kernel is tested against.
// Plain loops, row-major unpacked inputs, no threads. Each section is
// implemented in the ref_*.cpp file it names.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/kernels.hpp"

namespace staticlm::kernels::ref {

// ---- ref_matmul_q8.cpp ------------------------------------------------------
// Quantizes x[k] per group of kQ8Group (see kernels/formats/q8/layout.hpp): q gets
// padded_k(q8, k) values (zero padding), scale one float per group.
void quantize_row_q8(const float* x, int k, int8_t* q, float* scale);
// The activations of an integer-format matmul at act_bits 8 (quantize_row_q8)
// or 16 (kernels/formats/q8/layout.hpp: q = 256·q1 + q2, scale = s / 256 per group),
// as int32 values: what the matmuls below multiply the weights by.
void quantize_row_act(const float* x, int k, int act_bits, int32_t* q, float* scale);
// The weight variant: scales rounded to IEEE half first (see formats/q8.hpp), q
// computed with the rounded scale; scale[] holds the rounded values as floats.
void quantize_weight_row_q8(const float* x, int k, int8_t* q, float* scale);
// q4 weights (kernels/formats/q4/layout.hpp): quantize_q4_group per group of 32 (k
// padded with zeros); q in [-8, 7], scale[] the half values as floats. A q4
// matmul is matmul_q8 of these q and scales.
void quantize_weight_row_q4(const float* x, int k, int8_t* q, float* scale);
// q5 weights (kernels/formats/q5/layout.hpp) the same way with quantize_q5_group: q
// in [-16, 15]; a q5 matmul is matmul_q8 of these q and scales.
void quantize_weight_row_q5(const float* x, int k, int8_t* q, float* scale);
// out[k] = q[i] * scale[i / kQ8Group].
void dequantize_row_q8(const int8_t* q, const float* scale, int k, float* out);
// y[m][n] = x[m][k] · Wᵀ with W given quantized and row-major: wq [n][k_pad],
// wscale [n][k_pad/32] (from quantize_weight_row_q8). x rows are quantized
// with quantize_row_q8; each group dot is exact int32, groups are summed in
// order in fp32:
//   y += (x_scale · w_scale) · float(dot)   (a product, then a sum: no FMA).
// act_bits (8 or 16) selects quantize_row_act's activations, here and below.
void matmul_q8(const int8_t* wq, const float* wscale, int n, int k, const float* x, size_t ldx,
               int m, float* y, size_t ldy, int act_bits = 8);
// q4k weights (kernels/formats/q4k/layout.hpp) unpacked: nibbles wn [n][k_pad] (k
// padded to 256), per row and group of 32 the scale ws = d·sc and min
// wm = dmin·m [n][k_pad/32] (from quantize_weight_row_q4k). x rows as for
// matmul_q8; per group, in order, in fp32 (products then sums: no FMA):
//   y += (x_scale · ws) · float(Σ wn·q_x);  y += wm · -(x_scale · float(Σ q_x))
void quantize_weight_row_q4k(const float* x, int k, uint8_t* wn, float* ws, float* wm);
// q5k the same way (wn in [0, 31]); matmul_q4k is its matmul too.
void quantize_weight_row_q5k(const float* x, int k, uint8_t* wn, float* ws, float* wm);
// q4a / q5a (kernels/formats/q4a/layout.hpp) for matmul_q4k: k padded to 32,
// ws = d and wm = -m per group.
void quantize_weight_row_q4a(const float* x, int k, uint8_t* wn, float* ws, float* wm);
void quantize_weight_row_q5a(const float* x, int k, uint8_t* wn, float* ws, float* wm);
void matmul_q4k(const uint8_t* wn, const float* ws, const float* wm, int n, int k, const float* x, size_t ldx,
                int m, float* y, size_t ldy, int act_bits = 8);
// The same with weight rows k_pad long (q4a, q5a: k padded to 32).
void matmul_affine(const uint8_t* wn, const float* ws, const float* wm, int n, int k, int k_pad, const float* x,
                   size_t ldx, int m, float* y, size_t ldy, int act_bits = 8);
// q6k weights (kernels/formats/q6k/layout.hpp) unpacked: values q = n - 32 [n][k_pad]
// (k padded to 256), per row and half-group of 16 the scale ws = d·sc
// [n][k_pad/16] (from quantize_weight_row_q6k). x rows as for matmul_q8; per
// half-group of 16, in order, in fp32 (a product, then a sum):
//   y += (x_scale · ws) · float(Σ q·q_x)   (x_scale of the half's group of 32)
void quantize_weight_row_q6k(const float* x, int k, int8_t* q, float* ws);
void matmul_q6k(const int8_t* wq, const float* ws, int n, int k, const float* x, size_t ldx, int m, float* y,
                size_t ldy, int act_bits = 8);

// ---- ref_matmul_float.cpp ---------------------------------------------------
// y[m][n] = x[m][k] · Wᵀ with W row-major [n][k] (f32, IEEE half or bf16
// elements); fp32 products accumulated in double, rounded once to float.
void matmul_f32(const float* w, int n, int k, const float* x, size_t ldx, int m, float* y,
                size_t ldy);
void matmul_f16(const uint16_t* w, int n, int k, const float* x, size_t ldx, int m, float* y,
                size_t ldy);
void matmul_bf16(const uint16_t* w, int n, int k, const float* x, size_t ldx, int m, float* y,
                 size_t ldy);

// ---- ref_elementwise.cpp ----------------------------------------------------
void rmsnorm(const float* x, size_t ldx, int m, int n, const float* w, float eps, float* y,
             size_t ldy);
void add(float* y, const float* x, size_t n);
void scale(float* y, size_t n, float s);
void rope(float* x, size_t ldx, int t, int n_heads, int head_dim, int pos0, const float* inv_freq);
void silu_mul(const float* gate, const float* up, size_t n, float* out);
void gelu_tanh_mul(const float* gate, const float* up, size_t n, float* out);
void softcap(float* x, size_t n, float cap);
int argmax(const float* x, int n);
void top_k(const float* x, int n, int k, int* idx, float* val);

// ---- ref_attention.cpp ------------------------------------------------------
// Two-pass softmax over the visible positions, double accumulation.
void attention(const AttentionArgs& args);

}  // namespace staticlm::kernels::ref
