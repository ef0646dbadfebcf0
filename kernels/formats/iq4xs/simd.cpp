// iq4xs's SIMD body (compiled per target): its weight trait for the integer
// skeleton (kernels/simd/matmul_int.hpp) and its pack body
// (quantize_iq4xs_super per super-block, the same bits on every target).
#include "formats/iq4nl/layout.hpp"
#include "formats/iq4xs/layout.hpp"
#include "simd/matmul_int.hpp"

namespace staticlm::kernels::STATICLM_NS {

namespace {

// IQ4_XS super-blocks (kernels/formats/iq4xs/layout.hpp): iq4nl's load (the
// indices looked up as q8's biased bytes, so the group's sum starts as q8's)
// and q8's epilogue with the group's scale d·sc. Vbmi: the lookup by vpermb
// (vec::load_nl4_vbmi, the same bytes).
template <bool Vbmi>
struct Iq4xsWeights {
    static constexpr int kSubs = 1;
    // Bytes a signed value + 128, sums from corr: the AMX tile's signed B (amx8::kSignedB).
    static constexpr bool kStartsAtCorr = true;
    static constexpr size_t kBlockBytes = sizeof(Iq4xsGroup);  // a group; super-blocks add d
    static constexpr int kQuadsPerLoad = 2;
    static constexpr size_t kPrefetchBlocks = 4;  // as iq4nl: about the same bytes per group
    static int32_t acc_init(const std::byte* row, const Q8ActLayout& a, int g, int /*s*/) {
        return group_acc_init(row, a, g);
    }
    static const std::byte* block(const std::byte* panel, int g) {
        return panel + size_t(g / kIq4xsGroups) * sizeof(Iq4xsSuper) + size_t(g % kIq4xsGroups) * sizeof(Iq4xsGroup);
    }
    static size_t panel_bytes(int n_groups) {
        return size_t((n_groups + kIq4xsGroups - 1) / kIq4xsGroups) * sizeof(Iq4xsSuper);
    }
    static void load(const std::byte* blk, int jl, int vp, vec::Q* w) {
        const auto* q = reinterpret_cast<const uint8_t*>(blk + offsetof(Iq4xsGroup, q) + 64 * jl + 4 * kL * vp);
#if STATICLM_VEC_VBMI
        if constexpr (Vbmi) {
            vec::load_nl4_vbmi(q, kIq4nlBiased.b, w[0], w[1]);
            return;
        }
#endif
        vec::load_nl4(q, kIq4nlBiased.b, w[0], w[1]);
    }
    struct Scales {
        vec::F ws;  // d·sc of kL rows (exact)
    };
    static Scales scales(const std::byte* blk, int g, int /*s*/, int vp) {
        const auto* grp = reinterpret_cast<const Iq4xsGroup*>(blk);
        const auto* sup = reinterpret_cast<const Iq4xsSuper*>(blk - size_t(g % kIq4xsGroups) * sizeof(Iq4xsGroup));
        return {vec::mul(vec::load(sup->d + kL * vp), vec::load_i8(grp->sc + kL * vp))};
    }
    static vec::F finish(const Scales& s, vec::I acc, const std::byte* row, const Q8ActLayout& a, int g, vec::F f) {
        float x_s;
        std::memcpy(&x_s, row + a.scale_off + 4 * size_t(g), 4);
        return vec::fma(vec::to_float(acc), vec::mul(s.ws, vec::set1(x_s)), f);
    }
};

// iq4xs panels: each row's super-blocks through the scalar quantize_iq4xs_super.
void pack_panel_iq4xs(SrcType st, const void* src, size_t ld, int rows, int k, std::byte* dst) {
    static_assert(kPackTile == kIq4xsSuper);
    uint8_t idx[kIq4xsSuper];
    int8_t sc[kIq4xsGroups];
    // Units zeroed: padding rows keep d = 0.
    walk_panel<kIq4xsSuper, sizeof(Iq4xsSuper), true>(
        st, src, ld, rows, k, dst, [&](int r, const float* x, std::byte* super, int) {
            if (!x) return;
            const int first = int((super - dst) / std::ptrdiff_t(sizeof(Iq4xsSuper)));  // the chunk's super-block
            uint16_t d;
            // The tail super-block's padding does not steer its scales.
            quantize_iq4xs_super(x, std::min(kIq4xsSuper, k - first * kIq4xsSuper), idx, sc, &d);
            detail::store_iq4xs_super(super, r, idx, sc, d);
        });
}

}  // namespace

FormatKernels iq4xs_kernels(const CpuFeatures& cpu) {
#if STATICLM_VEC_VBMI
    if (cpu.avx512_vbmi) return int_kernels<Iq4xsWeights<true>>(cpu, pack_panel_iq4xs);
#endif
    return int_kernels<Iq4xsWeights<false>>(cpu, pack_panel_iq4xs);
}

}  // namespace staticlm::kernels::STATICLM_NS
