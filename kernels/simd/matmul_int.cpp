// quantize_act (KernelTable::quantize_act): the integer formats' activation
// rows, as the skeleton's matmuls quantize them (kernels/simd/matmul_int.hpp).
#include "simd/matmul_int.hpp"

namespace staticlm::kernels::STATICLM_NS {

void quantize_act(const float* x, size_t ldx, int m, int k, int act_bits, std::byte* dst) {
    const Q8ActLayout a = q8_act_layout(k, act_planes(act_bits));
    for (int r = 0; r < m; ++r) quantize_row(x + size_t(r) * ldx, a, dst + size_t(r) * a.stride);
}

}  // namespace staticlm::kernels::STATICLM_NS
