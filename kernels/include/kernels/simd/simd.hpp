// Declarations of the per-target kernel bodies. Each kernels/simd/*.cpp file is
// compiled once per target into namespace staticlm::kernels::<target>;
// table.cpp (also per target) collects them into that target's KernelTable.
#pragma once

#include "kernels/target.hpp"

namespace staticlm::kernels::STATICLM_NS {

// Each weight format's pack and matmul bodies on this target (the integer
// formats: kernels/formats/<name>/simd.cpp; matmul_float.cpp: f32, f16, bf16).
#define STATICLM_DECLARE_FORMAT_KERNELS(number, name, ...) FormatKernels name##_kernels(const CpuFeatures& cpu);
STATICLM_WEIGHT_FORMAT_LIST(STATICLM_DECLARE_FORMAT_KERNELS)
#undef STATICLM_DECLARE_FORMAT_KERNELS

// matmul_int.hpp
void quantize_act(const float* x, size_t ldx, int m, int k, int act_bits, std::byte* dst);

// convert_rows.cpp: source rows for the packers, converted kPackTile columns at
// a time (16 rows × 256 f32 = 16 KiB, half of a 32-48 KiB L1d).
constexpr int kPackTile = 256;
// n <= kPackTile elements of src_type at any alignment → f32.
void src_to_f32_row(SrcType src_type, const void* src, int n, float* y);
// src itself when 4-byte aligned, else a copy in buf (n <= kPackTile).
const float* aligned_f32_row(const void* src, int n, float* buf);
void f32_to_f16_row(const float* x, int n, uint16_t* y);
void f32_to_bf16_row(const float* x, int n, uint16_t* y);

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

// probe.cpp
PeakLoops peak_loops(const CpuFeatures& cpu);

// random.cpp
void uniform_row(uint64_t key, int n, float amp, float* out);

void fill_table(KernelTable& table, const CpuFeatures& cpu);

}  // namespace staticlm::kernels::STATICLM_NS
