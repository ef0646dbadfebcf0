// q4k's SIMD body (compiled per target): the skeleton's affine super-block
// trait (kernels/simd/matmul_int.hpp) on its layout, and its pack body.
#include "formats/q4k/layout.hpp"
#include "simd/matmul_int.hpp"

namespace staticlm::kernels::STATICLM_NS {

namespace {

using Q4kWeights = AffineSuperGroups<Q4kGroup, Q4kSuper, 8>;

}  // namespace

FormatKernels q4k_kernels(const CpuFeatures& cpu) {
    return int_kernels<Q4kWeights>(
        cpu, pack_panel_affine_k<sizeof(Q4kSuper), quantize_q4k_super, detail::store_q4k_super>);
}

}  // namespace staticlm::kernels::STATICLM_NS
