// Declarations of the per-target kernel bodies. Each kernels/simd/*.cpp file is
// compiled once per target into namespace staticlm::kernels::<target>;
// table.cpp (also per target) collects them into that target's KernelTable.
#pragma once

#include "kernels/target.hpp"

namespace staticlm::kernels::STATICLM_NS {

// matmul_q8.cpp
void matmul_q8(const PackedMatrix& w, const float* x, size_t ldx, int m, float* y, size_t ldy,
               std::byte* scratch, int n_threads);
void quantize_act(const float* x, size_t ldx, int m, int k, std::byte* dst);

// matmul_float.cpp
void matmul_f16(const PackedMatrix& w, const float* x, size_t ldx, int m, float* y, size_t ldy,
                std::byte* scratch, int n_threads);
void matmul_bf16(const PackedMatrix& w, const float* x, size_t ldx, int m, float* y, size_t ldy,
                 std::byte* scratch, int n_threads);
void matmul_f32(const PackedMatrix& w, const float* x, size_t ldx, int m, float* y, size_t ldy,
                std::byte* scratch, int n_threads);
// The best bf16 body for this CPU (vdpbf16ps where AVX512-BF16 exists).
MatmulFn matmul_bf16_for(const CpuFeatures& cpu);

// norm.cpp
void rmsnorm(const float* x, size_t ldx, int m, int n, const float* w, float eps, float* y,
             size_t ldy);
void add(float* y, const float* x, size_t n);
void scale(float* y, size_t n, float s);

// rope.cpp
void rope(float* x, size_t ldx, int t, int n_heads, int head_dim, int pos0, const float* inv_freq);

// attention.cpp
void attention(const AttentionArgs& args, std::byte* scratch, int n_threads);

// activation.cpp
void silu_mul(const float* gate, const float* up, size_t n, float* out);
void gelu_tanh_mul(const float* gate, const float* up, size_t n, float* out);
void softcap(float* x, size_t n, float cap);
int argmax(const float* x, int n);
void to_f16(const float* x, size_t n, uint16_t* y);
void from_f16(const uint16_t* x, size_t n, float* y);

// pack.cpp
void pack_panel(WeightType type, SrcType src_type, const void* src, size_t ld, int rows, int k,
                std::byte* dst);

void fill_table(KernelTable& table, const CpuFeatures& cpu);

}  // namespace staticlm::kernels::STATICLM_NS
