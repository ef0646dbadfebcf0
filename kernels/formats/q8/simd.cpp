// q8's SIMD body (compiled per target): its weight trait for the integer
// skeleton (kernels/simd/matmul_int.hpp; on avx512_amx also the AMX tile) and
// its pack body, round to nearest per group of 32 with a half scale.
#include "simd/matmul_int.hpp"

namespace staticlm::kernels::STATICLM_NS {

namespace {

struct Q8Weights : HalfScaleGroups<Q8Weights> {
    static constexpr size_t kBlockBytes = sizeof(Q8Block);
    static constexpr size_t kQOff = offsetof(Q8Block, q);
    static constexpr size_t kScaleOff = offsetof(Q8Block, scale);
    static constexpr int kQuadsPerLoad = 1;
    static constexpr bool kBTileInPlace = true;  // q is an AMX B tile as it lies
    // Two blocks (1 KiB) ahead in each stream: Llama-3.2-1B q8 decode at 2
    // threads 23.0-23.8 against 22.0-23.2 tok/s without, 94.5-97% of the read
    // bandwidth against 89-92% (Xeon, five alternated rounds; six blocks:
    // 22.9-23.5).
    static constexpr size_t kPrefetchBlocks = 2;
    static void load(const std::byte* blk, int jl, int vp, vec::Q* w) {
        w[0] = vec::load_q(reinterpret_cast<const uint8_t*>(blk + kQOff + 64 * jl + 4 * kL * vp));
    }
    static vec::I dot(vec::I acc) { return acc; }
};

// The weight scale as stored: rounded to IEEE half (finite: capped at 65504).
inline float half_scale(float s) { return f16_to_f32(f32_to_f16(std::min(s, 65504.0f))); }

// Weight group: 32 bytes q + 128; returns the scale (a value a half holds exactly).
inline float quantize_weight_group(const float* x, uint8_t* qb) {
    const float s = half_scale(group_absmax(x) / 127.0f);
    if (s == 0.0f) {
        std::memset(qb, 128, kQ8Group);
        return s;
    }
    const vec::F sv = vec::set1(s);
    for (int h = 0; h < kGroupVecs; ++h)
        vec::store_bytes(qb + h * kL,
                         vec::iadd(quantize_lanes(vec::load(x + h * kL), sv), vec::iset1(128)));
    return s;
}

void pack_panel_q8(SrcType st, const void* src, size_t ld, int rows, int k, std::byte* dst) {
    alignas(64) uint8_t qb[kQ8Group];
    walk_panel<kQ8Group, Q8Weights::kBlockBytes, false>(
        st, src, ld, rows, k, dst, [&](int r, const float* x, std::byte* blocks, int n_groups) {
            for (int g = 0; g < n_groups; ++g) {
                std::byte* block = blocks + size_t(g) * Q8Weights::kBlockBytes;
                float sc = 0.0f;
                if (x)
                    sc = quantize_weight_group(x + g * kQ8Group, qb);
                else
                    std::memset(qb, 128, kQ8Group);  // padding row: q = 0
                const uint16_t h = f32_to_f16(sc);   // exact: sc is a half already
                std::memcpy(block + Q8Weights::kScaleOff + size_t(r) * 2, &h, 2);
                for (int j = 0; j < kQuads; ++j)  // q[k/4][16 rows][4]
                    std::memcpy(block + Q8Weights::kQOff + size_t(j * kPanelRows + r) * 4, qb + 4 * j, 4);
            }
        });
}

}  // namespace

FormatKernels q8_kernels(const CpuFeatures& cpu) { return int_kernels<Q8Weights>(cpu, pack_panel_q8); }

}  // namespace staticlm::kernels::STATICLM_NS
