// q6k's SIMD body (compiled per target): its weight trait for the integer
// skeleton (kernels/simd/matmul_int.hpp, two sub-groups per group) and its
// pack body.
#include "formats/q6k/layout.hpp"
#include "simd/matmul_int.hpp"

namespace staticlm::kernels::STATICLM_NS {

namespace {

// q6k: Q6_K super-blocks (kernels/formats/q6k/layout.hpp). Each group's two halves
// of 16 k have their own scales: the tile runs them as two sub-groups. With
// the biased dot step the operands are n itself and each half's sum starts
// at -32 · its own Σ q_x (corr_lo / 4 and corr_hi / 4, exact), leaving
// Σ (n - 32)·q_x with no shift; plain AVX2 starts at 0 (vec::load_q6).
struct Q6kWeights {
    static constexpr int kSubs = 2;
    static constexpr size_t kBlockBytes = sizeof(Q6kGroup);  // a group; super-blocks add d
    static constexpr int kQuadsPerLoad = 2;
    // 10 groups (4 KiB) ahead: Llama-3.2-1B q6k decode at 2 threads 24.3-24.8
    // tok/s (83-84% of read bandwidth) against 21.7-21.8 (77-78%) with 3 and
    // 23.3-23.6 with 6 (Xeon, 2026-12-02; 16: 22.5-23.2).
    static constexpr size_t kPrefetchBlocks = 10;
    static int32_t acc_init(const std::byte* row, const Q8ActLayout& a, int g, int s) {
        if (!vec::kDotBiased) return 0;
        return load_i32(row + (s == 0 ? a.corr_lo_off : a.corr_hi_off) + 4 * size_t(g)) >> 2;  // exact
    }
    static const std::byte* block(const std::byte* panel, int g) {
        return panel + size_t(g / kQ6kGroups) * sizeof(Q6kSuper) + size_t(g % kQ6kGroups) * sizeof(Q6kGroup);
    }
    static size_t panel_bytes(int n_groups) {
        return size_t((n_groups + kQ6kGroups - 1) / kQ6kGroups) * sizeof(Q6kSuper);
    }
    static void load(const std::byte* blk, int jl, int vp, vec::Q* w) {
        const auto* b = reinterpret_cast<const uint8_t*>(blk);
        vec::load_q6(b + offsetof(Q6kGroup, lo) + 64 * jl + 4 * kL * vp,
                     b + offsetof(Q6kGroup, hi) + 64 * (jl / 2) + 4 * kL * vp, 4 * (jl % 2), w[0], w[1]);
    }
    struct Scales {
        vec::F ws;  // d·sc of kL rows (exact)
    };
    static Scales scales(const std::byte* blk, int g, int s, int vp) {
        const auto* grp = reinterpret_cast<const Q6kGroup*>(blk);
        const auto* sup = reinterpret_cast<const Q6kSuper*>(blk - size_t(g % kQ6kGroups) * sizeof(Q6kGroup));
        return {vec::mul(vec::load(sup->d + kL * vp), vec::load_i8(grp->sc[s] + kL * vp))};
    }
    static vec::F finish(const Scales& s, vec::I acc, const std::byte* row, const Q8ActLayout& a, int g, vec::F f) {
        float x_s;
        std::memcpy(&x_s, row + a.scale_off + 4 * size_t(g), 4);
        return vec::fma(vec::to_float(acc), vec::mul(s.ws, vec::set1(x_s)), f);
    }
};

// q6k panels: each row's super-blocks through the scalar quantize_q6k_super.
void pack_panel_q6k(SrcType st, const void* src, size_t ld, int rows, int k, std::byte* dst) {
    static_assert(kPackTile == kQ6kSuper);
    uint8_t n[kQ6kSuper];
    int8_t sc[kQ6kSuper / kQ6kSub];
    // Units zeroed: padding rows keep scales 0.
    walk_panel<kQ6kSuper, sizeof(Q6kSuper), true>(
        st, src, ld, rows, k, dst, [&](int r, const float* x, std::byte* super, int) {
            if (!x) return;
            uint16_t d;
            quantize_q6k_super(x, n, sc, &d);
            detail::store_q6k_super(super, r, n, sc, d);
        });
}

}  // namespace

FormatKernels q6k_kernels(const CpuFeatures& cpu) { return int_kernels<Q6kWeights>(cpu, pack_panel_q6k); }

}  // namespace staticlm::kernels::STATICLM_NS
