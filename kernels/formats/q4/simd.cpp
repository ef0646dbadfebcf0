// q4's SIMD body (compiled per target): its weight trait for the integer
// skeleton (kernels/simd/matmul_int.hpp) and its pack body
// (quantize_q4_group per group, the same bits on every target).
#include "formats/q4/layout.hpp"
#include "simd/matmul_int.hpp"

namespace staticlm::kernels::STATICLM_NS {

namespace {

struct Q4Weights : HalfScaleGroups<Q4Weights> {
    static constexpr size_t kBlockBytes = sizeof(Q4Block);
    static constexpr size_t kQOff = offsetof(Q4Block, q);
    static constexpr size_t kScaleOff = offsetof(Q4Block, scale);
    static constexpr int kQuadsPerLoad = 2;
    // Decode consumes q4 bytes twice as fast: a software prefetch 16 blocks
    // ahead took a one-row K = 2048, N = 8192 q4 matmul from 0.51-0.76 to
    // 0.38-0.44 ms on two threads (bench_kernels, a Xeon without AMX); on
    // the AMX Xeon 4 blocks (1.1 KiB) beat 16: Llama-3.2-1B q4 decode 36.5-37.7
    // against 36.1-36.5 tok/s on 2 threads (92-94% of read bandwidth), 19.6
    // against 19.1-19.4 on 1 (alternated); 8 blocks in between.
    static constexpr size_t kPrefetchBlocks = 4;
    static void load(const std::byte* blk, int jl, int vp, vec::Q* w) {
        vec::load_q4(reinterpret_cast<const uint8_t*>(blk + kQOff + 64 * jl + 4 * kL * vp), w[0], w[1]);
    }
    static vec::I dot(vec::I acc) { return vec::q4_dot(acc); }
};

}  // namespace

FormatKernels q4_kernels(const CpuFeatures& cpu) {
    return int_kernels<Q4Weights>(
        cpu, pack_panel_low_bit<sizeof(Q4Block), quantize_q4_group, detail::store_q4_group>);
}

}  // namespace staticlm::kernels::STATICLM_NS
