// q5's SIMD body (compiled per target): its weight trait for the integer
// skeleton (kernels/simd/matmul_int.hpp) and its pack body.
#include "formats/q5/layout.hpp"
#include "simd/matmul_int.hpp"

namespace staticlm::kernels::STATICLM_NS {

namespace {

struct Q5Weights : HalfScaleGroups<Q5Weights> {
    static constexpr size_t kBlockBytes = sizeof(Q5Block);
    static constexpr size_t kQOff = offsetof(Q5Block, lo);
    static constexpr size_t kHiOff = offsetof(Q5Block, hi);
    static constexpr size_t kScaleOff = offsetof(Q5Block, scale);
    static constexpr int kQuadsPerLoad = 2;
    static constexpr size_t kPrefetchBlocks = 3;  // about 1 KiB, as q8 and q4
    static_assert(kL % 2 == 0, "a vector's bits are whole bytes of the bit plane");
    static void load(const std::byte* blk, int jl, int vp, vec::Q* w) {
        const auto* b = reinterpret_cast<const uint8_t*>(blk);
        const uint8_t* bits = b + kHiOff + size_t(kL / 2 * vp);  // 4·kL bits per vector
        vec::load_q5(b + kQOff + 64 * jl + 4 * kL * vp, bits + 16 * jl, bits + 16 * jl + 8, w[0], w[1]);
    }
    static vec::I dot(vec::I acc) { return vec::q5_dot(acc); }
};

}  // namespace

FormatKernels q5_kernels(const CpuFeatures& cpu) {
    return int_kernels<Q5Weights>(
        cpu, pack_panel_low_bit<sizeof(Q5Block), quantize_q5_group, detail::store_q5_group>);
}

}  // namespace staticlm::kernels::STATICLM_NS
