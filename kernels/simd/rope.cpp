// STUB: to be written (see the kernel issue). Compiles so the tree builds.
#include "kernels/simd/simd.hpp"

namespace staticlm::kernels::STATICLM_NS {

void rope(float* /*x*/, size_t /*ldx*/, int /*t*/, int /*n_heads*/, int /*head_dim*/, int /*pos0*/, const float* /*inv_freq*/) { }

}  // namespace staticlm::kernels::STATICLM_NS
