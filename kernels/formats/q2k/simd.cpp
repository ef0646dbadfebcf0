// q2k's SIMD body (compiled per target): its weight trait for the integer
// skeleton (kernels/simd/matmul_int.hpp, two sub-groups of 16 per group, as
// q6k) and its pack body (quantize_q2k_super, the same bits on every target).
#include "formats/q2k/layout.hpp"
#include "simd/matmul_int.hpp"

namespace staticlm::kernels::STATICLM_NS {

namespace {

// q2k: Q2_K super-blocks (kernels/formats/q2k/layout.hpp). Each sub-block of
// 16 has its own scale and min: the tile runs a group's halves as two
// sub-groups. vec::load_q2's operands sum to Σ n·q_x from 0 on every target,
// so a sub-group starts at 0; its epilogue is q4k's with the sub-block's own
// Σ q_x (from corr_lo for the first 16, corr_hi for the second).
struct Q2kWeights {
    static constexpr int kSubs = 2;
    static constexpr size_t kBlockBytes = sizeof(Q2kGroup);  // a group; super-blocks add d and dmin
    static constexpr int kQuadsPerLoad = 2;
    // 16 groups (2.5 KiB) ahead in each one-row stream; not tuned (q6k measured
    // 4 KiB best; the machine was too loaded to tell these apart).
    static constexpr size_t kPrefetchBlocks = 16;
    static int32_t acc_init(const std::byte*, const Q8ActLayout&, int, int) { return 0; }
    static const std::byte* block(const std::byte* panel, int g) {
        return panel + size_t(g / kQ2kGroups) * sizeof(Q2kSuper) + size_t(g % kQ2kGroups) * sizeof(Q2kGroup);
    }
    static size_t panel_bytes(int n_groups) {
        return size_t((n_groups + kQ2kGroups - 1) / kQ2kGroups) * sizeof(Q2kSuper);
    }
    // Load step jl (quads 2jl, 2jl + 1) reads row jl / 2 of q, bits 4(jl % 2) .. 4(jl % 2) + 3.
    static void load(const std::byte* blk, int jl, int vp, vec::Q* w) {
        vec::load_q2(reinterpret_cast<const uint8_t*>(blk) + offsetof(Q2kGroup, q) + 64 * (jl / 2) + 4 * kL * vp,
                     4 * (jl % 2), w[0], w[1]);
    }
    struct Scales {
        vec::F ws, wm;  // d·sc and dmin·m of kL rows (exact)
        int sub;        // 0: k 0-15 of the group, 1: k 16-31
    };
    static Scales scales(const std::byte* blk, int g, int s, int vp) {
        const auto* grp = reinterpret_cast<const Q2kGroup*>(blk);
        const auto* sup = reinterpret_cast<const Q2kSuper*>(blk - size_t(g % kQ2kGroups) * sizeof(Q2kGroup));
        // The byte sc | m << 4.
        vec::F sc, m;
        vec::load_nibbles(grp->sm[s] + kL * vp, sc, m);
        return {vec::mul(vec::load(sup->d + kL * vp), sc), vec::mul(vec::load(sup->dmin + kL * vp), m), s};
    }
    static vec::F finish(const Scales& s, vec::I acc, const std::byte* row, const Q8ActLayout& a, int g, vec::F f) {
        float x_s;
        std::memcpy(&x_s, row + a.scale_off + 4 * size_t(g), 4);
        // The half's Σ q_x from its corr = -128 · Σ q_x (a shift: exact on multiples of 128).
        const int32_t sum_x = -(load_i32(row + (s.sub == 0 ? a.corr_lo_off : a.corr_hi_off) + 4 * size_t(g)) >> 7);
        f = vec::fma(vec::to_float(acc), vec::mul(s.ws, vec::set1(x_s)), f);
        return vec::fma(s.wm, vec::set1(-(x_s * float(sum_x))), f);
    }
};

// q2k panels: each row's super-blocks through the scalar quantize_q2k_super.
void pack_panel_q2k(SrcType st, const void* src, size_t ld, int rows, int k, std::byte* dst) {
    static_assert(kPackTile == kQ2kSuper);
    uint8_t n[kQ2kSuper], sm[kQ2kSuper / kQ2kSub];
    // Units zeroed: padding rows keep n = 0, scales 0.
    walk_panel<kQ2kSuper, sizeof(Q2kSuper), true>(
        st, src, ld, rows, k, dst, [&](int r, const float* x, std::byte* super, int) {
            if (!x) return;
            uint16_t d, dmin;
            quantize_q2k_super(x, n, sm, &d, &dmin);
            detail::store_q2k_super(super, r, n, sm, d, dmin);
        });
}

}  // namespace

FormatKernels q2k_kernels(const CpuFeatures& cpu) { return int_kernels<Q2kWeights>(cpu, pack_panel_q2k); }

}  // namespace staticlm::kernels::STATICLM_NS
