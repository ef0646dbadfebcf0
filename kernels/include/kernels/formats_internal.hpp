// Per-format packing entry points behind kernels::pack_weights/unpack_row
// (formats.cpp switches on the weight type). Not part of the kernel API.
#pragma once

#include "kernels/kernels.hpp"

namespace staticlm::kernels::detail {

// formats_q8.cpp
size_t q8_packed_bytes(int n, int k);
// src_row0: the row that src points at (0 for a whole matrix, n0 for a chunk).
void q8_pack(SrcType src_type, const void* src, int src_row0, int n, int k, int n0, int n1, std::byte* dst);
void q8_unpack_row(const PackedMatrix& w, int row, float scale, float* out);
size_t q8_scratch_bytes(int m, int k);

// formats_float.cpp (f32, f16, bf16 panels)
size_t float_packed_bytes(WeightType type, int n, int k);
void float_pack(WeightType type, SrcType src_type, const void* src, int src_row0, int n, int k, int n0, int n1,
                std::byte* dst);
void float_unpack_row(const PackedMatrix& w, int row, float scale, float* out);
// Row stride of the bf16 copy of x that the vdpbf16ps matmul keeps in scratch:
// padded_k(bf16, k) uint16, rounded up to 64 bytes.
size_t bf16_act_row_bytes(int k);

inline size_t src_elem_bytes(SrcType src_type) { return src_type == SrcType::f32 ? 4 : 2; }

}  // namespace staticlm::kernels::detail
