// q5k's SIMD body (compiled per target): the skeleton's affine super-block
// trait (kernels/simd/matmul_int.hpp) on its layout, and its pack body.
#include "formats/q5k/layout.hpp"
#include "simd/matmul_int.hpp"

namespace staticlm::kernels::STATICLM_NS {

namespace {

using Q5kWeights = AffineSuperGroups<Q5kGroup, Q5kSuper, 16>;

}  // namespace

FormatKernels q5k_kernels(const CpuFeatures& cpu) {
    return int_kernels<Q5kWeights>(
        cpu, pack_panel_affine_k<sizeof(Q5kSuper), quantize_q5k_super, detail::store_q5k_super>);
}

}  // namespace staticlm::kernels::STATICLM_NS
