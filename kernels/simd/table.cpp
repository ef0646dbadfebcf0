// Collects one target's kernel bodies into its KernelTable (compiled per target).
#include <array>
#include <string>

#include "kernels/simd/simd.hpp"
#include "staticlm/error.hpp"

namespace staticlm::kernels::STATICLM_NS {

namespace {

std::array<FormatKernels, kNumWeightTypes> format_kernels(const CpuFeatures& cpu) {
    std::array<FormatKernels, kNumWeightTypes> f{};
#define STATICLM_FILL_FORMAT(number, name, ...) f[size_t(WeightType::name)] = name##_kernels(cpu);
    STATICLM_WEIGHT_FORMAT_LIST(STATICLM_FILL_FORMAT)
#undef STATICLM_FILL_FORMAT
    return f;
}

// KernelTable::pack_panel: the format's pack body, found by its type.
void pack_panel(WeightType type, SrcType src_type, const void* src, size_t ld, int rows, int k,
                std::byte* dst) {
    static const std::array<FormatKernels, kNumWeightTypes> kFormats = format_kernels({});
    if (size_t(type) >= kFormats.size())
        throw Error(ErrorKind::unsupported,
                    "pack_panel: unknown weight type number " + std::to_string(int(type)));
    kFormats[size_t(type)].pack_panel(src_type, src, ld, rows, k, dst);
}

}  // namespace

void fill_table(KernelTable& t, const CpuFeatures& cpu) {
    t.target = kTarget;
    t.formats = format_kernels(cpu);
    t.matmul_q8 = t.format(WeightType::q8).matmul;
    t.matmul_f16 = t.format(WeightType::f16).matmul;
    t.matmul_bf16 = t.format(WeightType::bf16).matmul;
    t.matmul_f32 = t.format(WeightType::f32).matmul;
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
    t.uniform_row = uniform_row;
    t.peaks = peak_loops(cpu);
}

}  // namespace staticlm::kernels::STATICLM_NS

#if STATICLM_TARGET == STATICLM_TARGET_AVX512 && defined(STATICLM_AMX)
namespace staticlm::kernels::avx512_amx {

// The avx512 table; q8_kernels and bf16_kernels see cpu.amx_int8/amx_bf16 and
// return their AMX matmuls (dispatch fills the plain avx512 table with both
// false).
void fill_table(KernelTable& t, const CpuFeatures& cpu) {
    avx512::fill_table(t, cpu);
    t.target = Target::avx512_amx;
}

}  // namespace staticlm::kernels::avx512_amx
#endif
