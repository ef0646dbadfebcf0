// Scalar references: the specification every SIMD kernel is tested against.
// Plain loops, row-major unpacked inputs, no threads. Each section is
// implemented in the ref_*.cpp file it names; a weight format's own reference
// (its row quantizer, and its matmul where no shared one fits) is declared in
// its kernels/formats/<name>/layout.hpp.
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
// The weight variant: scales rounded to IEEE half first (formats/q8/layout.hpp), q
// computed with the rounded scale; scale[] holds the rounded values as floats.
void quantize_weight_row_q8(const float* x, int k, int8_t* q, float* scale);
// The row quantizers of the symmetric group formats (q4, q5: their
// quantize_weight_row_<name> in kernels/formats/<name>/): quantize per group
// of 32 (k padded with zeros) returns the group's scale, an IEEE-half value,
// and writes its 32 q; scale[] gets the scales as floats. Such a format's
// matmul is matmul_q8 of these q and scales.
void quantize_symmetric_row(float (*quantize)(const float*, int8_t*), const float* x, int k, int8_t* q,
                            float* scale);
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
// The affine formats unpacked for matmul_affine: values wn [n][k_pad], per
// row and group of 32 a scale ws and a min wm [n][k_pad/32]. x rows as for
// matmul_q8; per group, in order, in fp32 (products then sums: no FMA):
//   y += (x_scale · ws) · float(Σ wn·q_x);  y += wm · -(x_scale · float(Σ q_x))
// The row quantizers of the formats (quantize_weight_row_<name> in
// kernels/formats/<name>/) are these over the format's own quantizer:
// q4k, q5k per super-block of 256 (type's padded k): ws = d·sc, wm = dmin·m;
void quantize_affine_k_row(void (*quantize)(const float*, uint8_t*, uint8_t*, uint8_t*, uint16_t*, uint16_t*),
                           WeightType type, const float* x, int k, uint8_t* wn, float* ws, float* wm);
// q4a, q5a per group of 32: ws = d, wm = -m.
void quantize_affine_g_row(void (*quantize)(const float*, uint8_t*, uint16_t*, uint16_t*), const float* x, int k,
                           uint8_t* wn, float* ws, float* wm);
// k_pad: padded_k(type, k) of the format (256 for q4k and q5k, 32 for q4a, q5a).
void matmul_affine(const uint8_t* wn, const float* ws, const float* wm, int n, int k, int k_pad, const float* x,
                   size_t ldx, int m, float* y, size_t ldy, int act_bits = 8);
// matmul_affine with q4k's padding (q5k's is the same).
void matmul_q4k(const uint8_t* wn, const float* ws, const float* wm, int n, int k, const float* x, size_t ldx,
                int m, float* y, size_t ldy, int act_bits = 8);

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
