// STUB: to be written (see the kernel issue). Compiles so the tree builds.
#include "kernels/simd/simd.hpp"

namespace staticlm::kernels::STATICLM_NS {

void matmul_f16(const PackedMatrix& /*w*/, const float* /*x*/, size_t /*ldx*/, int /*m*/, float* /*y*/, size_t /*ldy*/, std::byte* /*scratch*/, int /*n_threads*/) { }
void matmul_bf16(const PackedMatrix& /*w*/, const float* /*x*/, size_t /*ldx*/, int /*m*/, float* /*y*/, size_t /*ldy*/, std::byte* /*scratch*/, int /*n_threads*/) { }
void matmul_f32(const PackedMatrix& /*w*/, const float* /*x*/, size_t /*ldx*/, int /*m*/, float* /*y*/, size_t /*ldy*/, std::byte* /*scratch*/, int /*n_threads*/) { }

}  // namespace staticlm::kernels::STATICLM_NS
