// q4a's SIMD body (compiled per target): the skeleton's affine group trait
// (kernels/simd/matmul_int.hpp) on its layout, and its pack body.
#include "formats/q4a/layout.hpp"
#include "simd/matmul_int.hpp"

namespace staticlm::kernels::STATICLM_NS {

namespace {

using Q4aWeights = AffineGroups<Q4aBlock, 8>;

}  // namespace

FormatKernels q4a_kernels(const CpuFeatures& cpu) {
    return int_kernels<Q4aWeights>(
        cpu, pack_panel_affine_g<sizeof(Q4aBlock), quantize_q4a_group, detail::store_q4a_group>);
}

}  // namespace staticlm::kernels::STATICLM_NS
