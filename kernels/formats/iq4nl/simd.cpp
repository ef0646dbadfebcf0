// iq4nl's SIMD body (compiled per target): its weight trait for the integer
// skeleton (kernels/simd/matmul_int.hpp) and its pack body
// (quantize_iq4nl_group per group, the same bits on every target).
#include "formats/iq4nl/layout.hpp"
#include "simd/matmul_int.hpp"

namespace staticlm::kernels::STATICLM_NS {

namespace {

// The nibbles are table indices; one byte shuffle per operand gives the
// table's value + 128, q8's biased bytes, so the sum and the epilogue are q8's.
// Vbmi: the lookup by vpermb (vec::load_nl4_vbmi, the same bytes).
template <bool Vbmi>
struct Iq4nlWeights : HalfScaleGroups<Iq4nlWeights<Vbmi>> {
    static constexpr size_t kBlockBytes = sizeof(Iq4nlBlock);
    static constexpr size_t kQOff = offsetof(Iq4nlBlock, q);
    static constexpr size_t kScaleOff = offsetof(Iq4nlBlock, scale);
    static constexpr int kQuadsPerLoad = 2;
    static constexpr size_t kPrefetchBlocks = 4;  // as q4: the same bytes per group
    static void load(const std::byte* blk, int jl, int vp, vec::Q* w) {
        const auto* q = reinterpret_cast<const uint8_t*>(blk + kQOff + 64 * jl + 4 * kL * vp);
#if STATICLM_VEC_VBMI
        if constexpr (Vbmi) {
            vec::load_nl4_vbmi(q, kIq4nlBiased.b, w[0], w[1]);
            return;
        }
#endif
        vec::load_nl4(q, kIq4nlBiased.b, w[0], w[1]);
    }
    static vec::I dot(vec::I acc) { return acc; }
};

void pack_panel_iq4nl(SrcType st, const void* src, size_t ld, int rows, int k, std::byte* dst) {
    uint8_t idx[kQ8Group];
    walk_panel<kQ8Group, sizeof(Iq4nlBlock), false>(
        st, src, ld, rows, k, dst, [&](int r, const float* x, std::byte* blocks, int n_groups) {
            const int first = int((blocks - dst) / std::ptrdiff_t(sizeof(Iq4nlBlock)));  // group of the chunk
            for (int g = 0; g < n_groups; ++g) {
                float sc = 0.0f;
                if (x)  // the tail group's padding does not steer its scale
                    sc = quantize_iq4nl_group(x + g * kQ8Group, std::min(kQ8Group, k - (first + g) * kQ8Group), idx);
                else
                    std::memset(idx, 8, sizeof idx);  // padding row: the value 1, scale 0
                detail::store_iq4nl_group(blocks + size_t(g) * sizeof(Iq4nlBlock), r, idx, sc);
            }
        });
}

}  // namespace

FormatKernels iq4nl_kernels(const CpuFeatures& cpu) {
#if STATICLM_VEC_VBMI
    if (cpu.avx512_vbmi) return int_kernels<Iq4nlWeights<true>>(cpu, pack_panel_iq4nl);
#endif
    return int_kernels<Iq4nlWeights<false>>(cpu, pack_panel_iq4nl);
}

}  // namespace staticlm::kernels::STATICLM_NS
