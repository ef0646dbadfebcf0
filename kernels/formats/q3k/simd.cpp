// q3k's SIMD body (compiled per target): its weight trait for the integer
// skeleton (kernels/simd/matmul_int.hpp, two sub-groups per group, as q6k)
// and its pack body.
#include "formats/q3k/layout.hpp"
#include "simd/matmul_int.hpp"

namespace staticlm::kernels::STATICLM_NS {

namespace {

// q3k: Q3_K super-blocks (kernels/formats/q3k/layout.hpp). Each group's two
// halves of 16 k have their own scales: the tile runs them as two sub-groups,
// each starting at -128 · its own Σ q_x (corr_lo, corr_hi).
struct Q3kWeights {
    static constexpr int kSubs = 2;
    static constexpr size_t kBlockBytes = sizeof(Q3kGroup);  // a group; super-blocks add scales and d
    static constexpr int kQuadsPerLoad = 2;
    // About 4 KiB ahead, as q6k's 10 groups of 416 bytes.
    static constexpr size_t kPrefetchBlocks = 20;
    static int32_t acc_init(const std::byte* row, const Q8ActLayout& a, int g, int s) {
        if (!vec::kDotBiased) return 0;
        return load_i32(row + (s == 0 ? a.corr_lo_off : a.corr_hi_off) + 4 * size_t(g));
    }
    static const std::byte* block(const std::byte* panel, int g) {
        return panel + size_t(g / kQ3kGroups) * sizeof(Q3kSuper) + size_t(g % kQ3kGroups) * sizeof(Q3kGroup);
    }
    static size_t panel_bytes(int n_groups) {
        return size_t((n_groups + kQ3kGroups - 1) / kQ3kGroups) * sizeof(Q3kSuper);
    }
    // Load step jl: quads 2jl and 2jl + 1, from 2-bit row jl / 2 (bits 0-3 or
    // 4-7) and those quads' bit-plane words.
    static void load(const std::byte* blk, int jl, int vp, vec::Q* w) {
        static_assert(kL % 2 == 0, "a vector's bits are whole bytes of the bit plane");
        const auto* b = reinterpret_cast<const uint8_t*>(blk);
        const uint8_t* bits = b + offsetof(Q3kGroup, hi) + size_t(kL / 2 * vp);
        vec::load_q3(b + offsetof(Q3kGroup, lo) + 64 * (jl / 2) + 4 * kL * vp, 4 * (jl % 2), bits + 16 * jl,
                     bits + 16 * jl + 8, w[0], w[1]);
    }
    struct Scales {
        vec::F ws;  // d·(sc - 32) of kL rows (exact)
    };
    // The 6-bit scale of sub-block 2g' + s (g' = g % 8): bits 0-3 in nibble s
    // of sc_lo[g'], bits 4-5 at bits 2i, 2i + 1 of sc_hi[g' / 2], i = 2(g' % 2)
    // + s (vec::load_u6, integer lanes; one call per parity of g' keeps its
    // shift counts immediates).
    static Scales scales(const std::byte* blk, int g, int s, int vp) {
        const int gs = g % kQ3kGroups;
        const auto* sup = reinterpret_cast<const Q3kSuper*>(blk - size_t(gs) * sizeof(Q3kGroup));
        const uint8_t* lo = sup->sc_lo[gs] + kL * vp;
        const uint8_t* hi = sup->sc_hi[gs / 2] + kL * vp;
        const vec::F sc = gs % 2 == 0 ? vec::load_u6(lo, 4 * s, hi, 2 * s) : vec::load_u6(lo, 4 * s, hi, 4 + 2 * s);
        return {vec::mul(vec::load(sup->d + kL * vp), vec::sub(sc, vec::set1(32.0f)))};
    }
    static vec::F finish(const Scales& s, vec::I acc, const std::byte* row, const Q8ActLayout& a, int g, vec::F f) {
        float x_s;
        std::memcpy(&x_s, row + a.scale_off + 4 * size_t(g), 4);
        return vec::fma(vec::to_float(vec::q3_dot(acc)), vec::mul(s.ws, vec::set1(x_s)), f);
    }
};

// q3k panels: each row's super-blocks through the scalar quantize_q3k_super.
void pack_panel_q3k(SrcType st, const void* src, size_t ld, int rows, int k, std::byte* dst) {
    static_assert(kPackTile == kQ3kSuper);
    uint8_t n[kQ3kSuper], sc[kQ3kSuper / kQ3kSub];
    // Units zeroed: padding rows keep d = 0.
    walk_panel<kQ3kSuper, sizeof(Q3kSuper), true>(
        st, src, ld, rows, k, dst, [&](int r, const float* x, std::byte* super, int) {
            if (!x) return;
            uint16_t d;
            quantize_q3k_super(x, n, sc, &d);
            detail::store_q3k_super(super, r, n, sc, d);
        });
}

}  // namespace

FormatKernels q3k_kernels(const CpuFeatures& cpu) { return int_kernels<Q3kWeights>(cpu, pack_panel_q3k); }

}  // namespace staticlm::kernels::STATICLM_NS
