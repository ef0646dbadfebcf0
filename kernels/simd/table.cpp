// Collects one target's kernel bodies into its KernelTable (compiled per target).
#include "kernels/simd/simd.hpp"

namespace staticlm::kernels::STATICLM_NS {

void fill_table(KernelTable& t, const CpuFeatures& cpu) {
    t.target = kTarget;
    t.matmul_q8 = matmul_q8;
    t.matmul_f16 = matmul_f16;
    t.matmul_bf16 = matmul_bf16_for(cpu);
    t.matmul_f32 = matmul_f32;
    t.quantize_act = quantize_act;
    t.rmsnorm = rmsnorm;
    t.rope = rope;
    t.attention = attention;
    t.silu_mul = silu_mul;
    t.gelu_tanh_mul = gelu_tanh_mul;
    t.softcap = softcap;
    t.add = add;
    t.scale = scale;
    t.argmax = argmax;
    t.to_f16 = to_f16;
    t.from_f16 = from_f16;
    t.pack_panel = pack_panel;
}

}  // namespace staticlm::kernels::STATICLM_NS
