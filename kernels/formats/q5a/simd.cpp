// q5a's SIMD body (compiled per target): the skeleton's affine group trait
// (kernels/simd/matmul_int.hpp) on its layout, and its pack body.
#include "formats/q5a/layout.hpp"
#include "simd/matmul_int.hpp"

namespace staticlm::kernels::STATICLM_NS {

namespace {

using Q5aWeights = AffineGroups<Q5aBlock, 16>;

}  // namespace

FormatKernels q5a_kernels(const CpuFeatures& cpu) {
    return int_kernels<Q5aWeights>(
        cpu, pack_panel_affine_g<sizeof(Q5aBlock), quantize_q5a_group, detail::store_q5a_group>);
}

}  // namespace staticlm::kernels::STATICLM_NS
