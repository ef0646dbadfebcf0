#pragma once

// The shared integer matmul skeleton (included by each integer format's
// kernels/formats/<name>/simd.cpp, compiled per target against the vector
// layer): activation quantization into q8 activation rows
// (kernels/formats/q8/layout.hpp), the source walk of panel packing, the
// MR × NP tile, the AMX tile, the thread split and matmul_many. A format
// brings its weight trait W (where group g's block is, how a load step of it
// becomes dot operands, the group's scales and epilogue: see HalfScaleGroups
// and AffineOps below, which several formats share) and its pack body, and
// gets its FormatKernels from int_kernels<W>(pack). Everything here is in an
// anonymous namespace: each format's file instantiates the tile for its own W
// alone, so the tile policy inlines as it did when all formats were one file.
//
// Numerical contract: activations are quantized exactly as ref::quantize_row_act
// (8-bit: ref::quantize_row_q8; 16-bit: two int8 planes, kernels/formats/q8/layout.hpp)
// and weights as ref::quantize_weight_row_q8 (IEEE division, round half away
// from zero, clamp with min then max), so every target sees the same int8
// data; the low-bit formats' weights come from target-independent quantizers
// (quantize_q4_group, ...). Inside a group of 32 (q6k: of 16) the dot product
// is exact int32 (vec::dot4). Across groups the sum is fp32 in group order:
// y = fma(float(dot), w_s·x_s, y), q4k adds its min term with a second FMA
// (vec::fma: fused on SIMD targets; a product then a sum on generic, as the
// references). Per output column the arithmetic does not depend on tiles,
// threads or how many matrices share the call.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "formats/q8/layout.hpp"
#include "kernels/simd/amx.hpp"
#include "kernels/simd/schedule.hpp"
#include "kernels/simd/simd.hpp"
#include "kernels/simd/vec.hpp"

namespace staticlm::kernels::STATICLM_NS {

namespace {

constexpr int kL = vec::kLanes;
constexpr int kGroupVecs = kQ8Group / kL;      // vectors per group of 32 floats
constexpr int kVecPerPanel = kPanelRows / kL;  // vectors per 16-row panel
constexpr int kQuads = kQ8Group / 4;           // 4 consecutive k per int32 lane
static_assert(kQ8Group % kL == 0 && kPanelRows % kL == 0);

// The weight side of the tile per format: block geometry and how load step jl
// of a block (per vector vp of a panel: its 4·kL-byte part of 64-byte row jl
// of the block's q) becomes kQuadsPerLoad dot operands, quads in k order, and
// how a group's int32 sum of their dot steps becomes Σ q·x (vec::load_q4 and
// vec::q4_dot say why q4 needs one).
inline int32_t load_i32(const void* p) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return v;
}

// Formats with one IEEE-half scale per row and group, blocks one per group
// (q8, q4, q5): where group g's block is, its scales, and the group's
// epilogue y += float(Σ q·x) · (w_s · x_s).
// A group's int32 sum starts at -128 · Σ q_x (the activations' corr) where the
// dot step multiplies biased bytes, else at 0 (vec::dot4).
inline int32_t group_acc_init(const std::byte* row, const Q8ActLayout& a, int g) {
    return vec::kDotBiased ? load_i32(row + a.corr_off + 4 * size_t(g)) : 0;
}

template <class D>
struct HalfScaleGroups {
    static constexpr int kSubs = 1;
    // Bytes a signed value + 128, sums from corr: on AMX signed B (amx8::kSignedB),
    // or for q8, loaded in place, a start-value product (amx8::kCorrTile).
    static constexpr bool kStartsAtCorr = true;
    static int32_t acc_init(const std::byte* row, const Q8ActLayout& a, int g, int /*s*/) {
        return group_acc_init(row, a, g);
    }
    static const std::byte* block(const std::byte* panel, int g) { return panel + size_t(g) * D::kBlockBytes; }
    static size_t panel_bytes(int n_groups) { return size_t(n_groups) * D::kBlockBytes; }
    struct Scales {
        vec::F ws;
    };
    static Scales scales(const std::byte* blk, int /*g*/, int /*s*/, int vp) {
        return {vec::load(reinterpret_cast<const uint16_t*>(blk + D::kScaleOff) + kL * vp)};
    }
    static vec::F finish(const Scales& s, vec::I acc, const std::byte* row, const Q8ActLayout& a, int g, vec::F f) {
        float x_s;
        std::memcpy(&x_s, row + a.scale_off + 4 * size_t(g), 4);
        return vec::fma(vec::to_float(D::dot(acc)), vec::mul(s.ws, vec::set1(x_s)), f);
    }
};

// The affine formats, w = ws·n - wm per row and group: q4k and q5k (Q4_K /
// Q5_K super-blocks, kernels/formats/q4k/layout.hpp, q5k.hpp; ws = d·sc, wm =
// dmin·m) and q4a and q5a (Q4_1 / Q5_1, kernels/formats/q4a/layout.hpp; ws = d,
// wm = -m). The operands are q4's (kMid = 8) or q5's (kMid = 16) nibbles and
// bit planes as unsigned n (vec::load_u4, load_u5). With the biased dot step
// (vec::kDotBiased) the bytes n are multiplied as they are, so a group's sum
// starts at 0 and is Σ n·x, with no shift; plain AVX2 takes n - kMid + 128
// and leaves Σ (n - kMid)·x, and the epilogue adds kMid·Σ x back (the
// activation group's Σ x is -corr / 128, exact). The wm term takes the activation row's
// neg_xsum = -(x_s · Σ x), so a group's epilogue is
//   y = fma(float(Σ n·x), ws·x_s, y); y = fma(wm, neg_xsum, y)
// with no per-row scalar work. Grp has the nibbles q (and q5's bit plane hi).
template <class Grp, int kMid>
struct AffineOps {
    static_assert(kMid == 8 || kMid == 16);
    static constexpr int kSubs = 1;
    static constexpr size_t kBlockBytes = sizeof(Grp);  // a group (super-blocks add d and dmin)
    static constexpr int kQuadsPerLoad = 2;
    static constexpr size_t kPrefetchBlocks = 4;  // as q4
    static int32_t acc_init(const std::byte*, const Q8ActLayout&, int, int) { return 0; }
    static void load(const std::byte* blk, int jl, int vp, vec::Q* w) {
        const auto* b = reinterpret_cast<const uint8_t*>(blk);
        const uint8_t* q = b + offsetof(Grp, q) + 64 * jl + 4 * kL * vp;
        if constexpr (kMid == 8) {
            vec::load_u4(q, w[0], w[1]);
        } else {
            static_assert(kL % 2 == 0, "a vector's bits are whole bytes of the bit plane");
            const uint8_t* bits = b + offsetof(Grp, hi) + size_t(kL / 2 * vp);
            vec::load_u5(q, bits + 16 * jl, bits + 16 * jl + 8, w[0], w[1]);
        }
    }
    struct Scales {
        vec::F ws, wm;  // of kL rows (exact)
    };
    static vec::F finish(const Scales& s, vec::I acc, const std::byte* row, const Q8ActLayout& a, int g, vec::F f) {
        float x_s, neg_xsum;
        std::memcpy(&x_s, row + a.scale_off + 4 * size_t(g), 4);
        std::memcpy(&neg_xsum, row + a.neg_xsum_off + 4 * size_t(g), 4);
        vec::I nx = acc;
        if constexpr (!vec::kDotBiased) {
            const int32_t sum_x = load_i32(row + a.corr_off + 4 * size_t(g)) / -128;
            nx = vec::iadd(nx, vec::iset1(kMid * sum_x));
        }
        f = vec::fma(vec::to_float(nx), vec::mul(s.ws, vec::set1(x_s)), f);
        return vec::fma(s.wm, vec::set1(neg_xsum), f);
    }
};

template <class Grp, class Sup, int kMid>
struct AffineSuperGroups : AffineOps<Grp, kMid> {
    using typename AffineOps<Grp, kMid>::Scales;
    static constexpr int kQ4kGroups = int(sizeof(Sup::g) / sizeof(Grp));  // groups per super-block
    static const std::byte* block(const std::byte* panel, int g) {
        return panel + size_t(g / kQ4kGroups) * sizeof(Sup) + size_t(g % kQ4kGroups) * sizeof(Grp);
    }
    static size_t panel_bytes(int n_groups) { return size_t((n_groups + kQ4kGroups - 1) / kQ4kGroups) * sizeof(Sup); }
    static Scales scales(const std::byte* blk, int g, int /*s*/, int vp) {
        const auto* grp = reinterpret_cast<const Grp*>(blk);
        const auto* sup = reinterpret_cast<const Sup*>(blk - size_t(g % kQ4kGroups) * sizeof(Grp));
        return {vec::mul(vec::load(sup->d + kL * vp), vec::load_u8(grp->sc + kL * vp)),
                vec::mul(vec::load(sup->dmin + kL * vp), vec::load_u8(grp->m + kL * vp))};
    }
};

template <class Blk, int kMid>
struct AffineGroups : AffineOps<Blk, kMid> {
    using typename AffineOps<Blk, kMid>::Scales;
    static const std::byte* block(const std::byte* panel, int g) { return panel + size_t(g) * sizeof(Blk); }
    static size_t panel_bytes(int n_groups) { return size_t(n_groups) * sizeof(Blk); }
    static Scales scales(const std::byte* blk, int /*g*/, int /*s*/, int vp) {
        const auto* b = reinterpret_cast<const Blk*>(blk);
        return {vec::load(b->d + kL * vp), vec::sub(vec::zero(), vec::load(b->m + kL * vp))};
    }
};

// Tile shapes (rows of x × 16-row panels per inner kernel call), from the
// register file:
//  - 32 registers, one vector per panel (AVX-512): 6 rows × 2 panels keep
//    2·6·2 accumulators (int32 group sums, fp32 totals) + 2 weight vectors +
//    2 temporaries = 28 registers. At 2 vpdpbusd/cycle and a latency of 4-5,
//    ≥ 10 independent chains hide the latency; 12 do. Each weight vector feeds
//    6 dot steps and each broadcast 2: 8 loads per 12 steps against 2-3 load
//    ports. Per group the fp32 epilogue is 3 ops (cvt, mul, fma) per 8 dot
//    steps: that, not the tile shape, bounds GEMM at roughly 70-80% of peak.
//  - 16 registers, two vectors per panel (AVX2): 2 rows × 1 panel = 4 int32 +
//    4 fp32 accumulators + 2 weights + the broadcast, |x| and constants of the
//    dot step. Single-row tiles (decode) take 2 panels, one from each of the
//    thread's two weight streams.
//  - generic (plain int32 lanes): the shape only orders the loops.
constexpr bool kWide = vec::kRegisters >= 32;
constexpr bool kScalarInt = kVecPerPanel > 2;
constexpr int kMr = kWide ? 6 : kScalarInt ? 4 : 2;
constexpr bool kTwoPanelTiles = kWide || kScalarInt;
// 16-bit activations keep a second int32 sum per row and vector: 3 rows × 2
// panels (AVX-512) = 6 + 6 sums + 6 fp32 totals + weights and broadcasts fit
// the 32 registers, where 6 rows spilled; AVX2 keeps 2 rows × 1 panel.
constexpr int kMr2 = kWide ? 3 : std::min(kMr, 2);
// Unrolling all 8 quads of a group lets GCC hoist loads until 16 registers spill.
constexpr int kUnrollQuads = kWide ? 8 : kScalarInt ? 1 : 2;
// The tile's loops over rows, vectors and sub-groups are unrolled to keep the
// accumulators in registers; the generic target's "vectors" are arrays, where
// unrolling only multiplies the code (10 formats × 8 tile shapes: the
// sanitizer build of this file took half an hour with it).
constexpr int kUnrollRows = kScalarInt ? 1 : 8;
constexpr int kUnrollVecs = kScalarInt ? 1 : 16;
constexpr int kUnrollSubs = kScalarInt ? 1 : 2;

// ---------------------------------------------------------------------------
// Quantization of one group of 32 floats (bit-identical to the reference)
// ---------------------------------------------------------------------------

// max |x| of a group (NaN ignored) in each lane: exact in any order, so every
// target gets the reference's scale.
inline vec::F group_absmax_lanes(const float* x) {
    vec::F m = vec::zero();
    for (int h = 0; h < kGroupVecs; ++h) m = vec::max(vec::abs(vec::load(x + h * kL)), m);
    return m;
}
inline float group_absmax(const float* x) { return vec::hmax(group_absmax_lanes(x)); }

// round-half-away(t) clamped to ±127. t - trunc(t) is exact: step away from
// zero when it is at least 0.5 in size. The clamp is min then max as the
// reference (a NaN becomes 127).
inline vec::F round_clamp(vec::F t) {
    vec::F r = vec::trunc(t);
    const vec::Mask away = vec::ge(vec::abs(vec::sub(t, r)), vec::set1(0.5f));
    r = vec::select(away, vec::add(r, vec::sign_one(t)), r);
    return vec::max(vec::min(r, vec::set1(127.0f)), vec::set1(-127.0f));
}

// round-half-away(x / s) clamped to ±127, as int32 lanes.
inline vec::I quantize_lanes(vec::F x, vec::F s) { return vec::to_int(round_clamp(vec::div(x, s))); }

// Activation group: q signed; the sums of q over its first and second 16
// values left in lanes (*lo, *hi: their lanes add up to the sums). s != 0.
// With q2 (16-bit activations, kernels/formats/q8/layout.hpp) also the second plane
// q2 = round-half-away(256 · (x / s - q)), and the sums are of 256·q + q2.
inline void quantize_act_group(const float* x, float s, int8_t* q, int8_t* q2, vec::I* lo, vec::I* hi) {
    static_assert(kGroupVecs % 2 == 0);
    const vec::F sv = vec::set1(s);
    vec::I sum[2] = {vec::iset1(0), vec::iset1(0)};
    for (int h = 0; h < kGroupVecs; ++h) {
        const vec::F t = vec::div(vec::load(x + h * kL), sv);
        const vec::F r = round_clamp(t);
        vec::I qi = vec::to_int(r);
        vec::store_bytes(q + h * kL, qi);
        if (q2) {
            // t - r is exact (r is t rounded, or t's clamp when |t| passes 127)
            // and so is the product by 256.
            const vec::I lo_q = vec::to_int(round_clamp(vec::mul(vec::sub(t, r), vec::set1(256.0f))));
            vec::store_bytes(q2 + h * kL, lo_q);
            qi = vec::iadd(vec::shl8(qi), lo_q);
        }
        sum[h / (kGroupVecs / 2)] = vec::iadd(sum[h / (kGroupVecs / 2)], qi);
    }
    *lo = sum[0];
    *hi = sum[1];
}

// One activation row, kL groups at a time: their maxima and sums are reduced
// across lanes together (vec::hmax_lanes, ihsum_lanes) and their scales take
// one division. A max and two sums per group, each reduced on its own, took
// half of the row's time (AVX-512: 0.58 → 0.34 ns per value, 2026-12-05).
void quantize_row(const float* x, const Q8ActLayout& a, std::byte* dst) {
    auto* q = reinterpret_cast<int8_t*>(dst);
    int8_t* q2 = a.planes == 2 ? q + a.plane_bytes : nullptr;
    auto* scale = reinterpret_cast<float*>(dst + a.scale_off);
    auto* corr = reinterpret_cast<int32_t*>(dst + a.corr_off);
    auto* corr_lo = reinterpret_cast<int32_t*>(dst + a.corr_lo_off);
    auto* corr_hi = reinterpret_cast<int32_t*>(dst + a.corr_hi_off);
    auto* neg_xsum = reinterpret_cast<float*>(dst + a.neg_xsum_off);
    alignas(64) float buf[kQ8Group];
    alignas(64) float s[kL];
    alignas(64) int32_t sum_lo[kL], sum_hi[kL];
    const float* src[kL];
    vec::F m[kL];
    vec::I lo[kL], hi[kL];
    for (int g0 = 0; g0 < a.n_groups; g0 += kL) {
        const int nb = std::min(kL, a.n_groups - g0);
        for (int i = 0; i < kL; ++i) {
            m[i] = vec::zero();
            lo[i] = hi[i] = vec::iset1(0);
            if (i >= nb) continue;
            const int g = g0 + i;
            const int len = std::min(kQ8Group, a.k - g * kQ8Group);
            src[i] = x + size_t(g) * kQ8Group;
            if (len < kQ8Group) {  // the padded tail group (the row's last)
                std::memset(buf, 0, sizeof(buf));
                std::memcpy(buf, src[i], sizeof(float) * size_t(len));
                src[i] = buf;
            }
            m[i] = group_absmax_lanes(src[i]);
        }
        vec::store(s, vec::div(vec::hmax_lanes(m), vec::set1(127.0f)));
        for (int i = 0; i < nb; ++i) {
            const int g = g0 + i;
            int8_t* qg = q + size_t(g) * kQ8Group;
            int8_t* q2g = q2 ? q2 + size_t(g) * kQ8Group : nullptr;
            if (s[i] != 0.0f) {
                quantize_act_group(src[i], s[i], qg, q2g, &lo[i], &hi[i]);
            } else {
                std::memset(qg, 0, kQ8Group);
                if (q2g) std::memset(q2g, 0, kQ8Group);
            }
        }
        vec::istore(sum_lo, vec::ihsum_lanes(lo));
        vec::istore(sum_hi, vec::ihsum_lanes(hi));
        for (int i = 0; i < nb; ++i) {
            const int g = g0 + i;
            const int32_t sum = sum_lo[i] + sum_hi[i];
            scale[g] = q2 ? s[i] * (1.0f / 256.0f) : s[i];
            corr[g] = -128 * sum;
            corr_lo[g] = -128 * sum_lo[i];
            corr_hi[g] = -128 * sum_hi[i];
            neg_xsum[g] = -(scale[g] * float(sum));
        }
    }
}

// ---------------------------------------------------------------------------
// Packing one panel: the source walk and the pack bodies several formats share.
// ---------------------------------------------------------------------------

// The source walk every integer format's packing shares. A panel is units
// of Unit k (a 32-k group block or a 256-k super-block) of UnitBytes each;
// k is walked in chunks of kPackTile (8 groups, one super-block). For each
// chunk (its units zeroed first when ZeroUnits) and r in [0, kPanelRows),
// row(r, x, units, n_units): x is source row r's chunk as floats,
// zero-padded to whole units, or nullptr for a padding row (r >= rows);
// units the chunk's first unit.
template <int Unit, size_t UnitBytes, bool ZeroUnits, class Row>
void walk_panel(SrcType st, const void* src, size_t ld, int rows, int k, std::byte* dst, Row&& row) {
    static_assert(kPackTile % Unit == 0);
    alignas(64) float buf[kPackTile];
    const auto* s = static_cast<const std::byte*>(src);
    const size_t esize = st == SrcType::f32 ? 4 : 2;
    for (int c0 = 0; c0 < k; c0 += kPackTile) {
        const int len = std::min(kPackTile, k - c0);
        const int n_units = (len + Unit - 1) / Unit;
        std::byte* units = dst + size_t(c0 / Unit) * UnitBytes;
        if constexpr (ZeroUnits) std::memset(units, 0, size_t(n_units) * UnitBytes);
        std::fill(buf + len, buf + n_units * Unit, 0.0f);
        for (int r = 0; r < kPanelRows; ++r) {
            if (r < rows) src_to_f32_row(st, s + (size_t(r) * ld + size_t(c0)) * esize, len, buf);
            row(r, r < rows ? static_cast<const float*>(buf) : nullptr, units, n_units);
        }
    }
}

// ---------------------------------------------------------------------------
// Inner kernels: MR activation rows × NP panels, all groups of K.
// ---------------------------------------------------------------------------

struct TileArgs {
    const std::byte* act;  // first activation row of the tile
    const Q8ActLayout* a;
    const std::byte* panel[2];  // group-0 block of each panel
    float* y;                   // y of the first row
    size_t ldy;
    ptrdiff_t y_off[2];  // column offset of each panel's outputs in y
    int cols[2];         // valid output columns of each panel (1..16)
    // Bytes [0, pf_len) at pf[p] (a slice of a panel of the next cache
    // block, run_range) are prefetched into L2 over the tile's groups;
    // pf_len 0: none.
    const std::byte* pf[2];
    size_t pf_len;
    // AMX tiles of formats that unpack (amx8::unpack): the B tiles of groups
    // [g0, g1) of panel[0], unpacked by the caller, group g0 first; null:
    // the tile unpacks each group itself.
    const std::byte* bt;
};

// Group g's share (of n_groups) of a prefetch slice: its cache lines into L2.
inline void prefetch_share(const std::byte* p, size_t len, int g, int n_groups) {
    const size_t b = len * size_t(g + 1) / size_t(n_groups);
    for (size_t o = (len * size_t(g) / size_t(n_groups)) & ~size_t(63); o < b; o += 64)
        __builtin_prefetch(p + o, 0, 2);
}

// The same slice with each group's share worked out once per tile call:
// group g takes the lines [g·step, (g + 1)·step) (the last groups may take
// none). prefetch_share's two 64-bit divisions per group and panel cost the
// 6-row VNNI tile 5%: q8 K 2048 / N 2048 M 512 470-473 → 492-496 GOPS
// (avx512-vnni on the AMX Xeon, one thread, 2026-12-05; M 16 unchanged),
// and the AMX tiles more:
// q8 K 2048 / N 8192 M 16 / 64 / 512 1206-1275 / 1371-1539 / 1324-1441 →
// 1363-1394 / 1620-1633 / 1497-1546 GOPS, K 8192 / N 2048 +4-12% (2 threads,
// two alternated rounds; q4k, bound by its epilogue, unchanged).
// Single-row tiles keep prefetch_share (with the step GCC allocated their
// registers differently and q6k M 1 ran 9% slower from cache).
inline size_t prefetch_step(size_t len, int n_groups) {
    return (len + size_t(n_groups) * 64 - 1) / (size_t(n_groups) * 64) * 64;
}
inline void prefetch_step_share(const std::byte* p, size_t len, size_t step, int g) {
    const size_t b = std::min(len, step * size_t(g + 1));
    for (size_t o = step * size_t(g); o < b; o += 64) __builtin_prefetch(p + o, 0, 2);
}

// P: activation planes (1: 8-bit, 2: 16-bit), a template parameter so that
// the 8-bit tiles keep every register for their own accumulators. 16-bit
// tiles hold two int32 sums per row and vector: at most kMr2 rows.
template <class W, int MR, int NP, int P>
void tile(const TileArgs& t) {
    constexpr int NV = NP * kVecPerPanel;
    constexpr int QL = W::kQuadsPerLoad;
    const Q8ActLayout& a = *t.a;
    const size_t stride = a.stride;
    const size_t pf_step = MR > 1 && t.pf_len ? prefetch_step(t.pf_len, a.n_groups) : 0;
    vec::F f[MR][NV];
#pragma GCC unroll kUnrollVecs
    for (int r = 0; r < MR; ++r)
#pragma GCC unroll kUnrollVecs
        for (int v = 0; v < NV; ++v) f[r][v] = vec::zero();
    for (int g_loop = 0; g_loop < a.n_groups; ++g_loop) {
        // g hidden from the optimizer in tiles of several rows: GCC 12 made
        // each address that moves with g (a row's 8 quads of activations, its
        // scale, its start value: about 40 in a 6-row tile) an induction
        // variable of its own, kept on the stack and bumped there by an
        // `addq` per group (368 instructions per group and tile, 96 of them
        // dot steps; now 264). q8 on avx512-vnni, one thread, K 2048 / N 2048
        // M 16 / 512: 364-370 / 389-401 → 432 / 471-475 GOPS (2026-12-05;
        // with the step share below, M 16 and 64: q4 +15-20%, q4k +18-20%,
        // q5 +11%, q6k unchanged). Single-row tiles keep the plain loop
        // (with it q4 M 1 ran 7% slower from cache).
        int g = g_loop;
        if constexpr (MR > 1) asm("" : "+r"(g));
        const std::byte* blk[NP];
        for (int p = 0; p < NP; ++p) blk[p] = W::block(t.panel[p], g);
        if constexpr (MR == 1 && W::kPrefetchBlocks > 0)
            for (int p = 0; p < NP; ++p)
                for (size_t o = 0; o < W::kBlockBytes; o += 64)
                    __builtin_prefetch(blk[p] + W::kPrefetchBlocks * W::kBlockBytes + o);
        if (t.pf_len)
            for (int p = 0; p < NP; ++p) {
                if constexpr (MR > 1)
                    prefetch_step_share(t.pf[p], t.pf_len, pf_step, g);
                else
                    prefetch_share(t.pf[p], t.pf_len, g, a.n_groups);
            }
        const std::byte* act = t.act;
        // A group's load steps, in W::kSubs runs with their own scales.
        constexpr int kStepsPerSub = kQuads / QL / W::kSubs;
#pragma GCC unroll kUnrollSubs
        for (int s = 0; s < W::kSubs; ++s) {
        // acc[0]: the group's sums from its start value (W::acc_init) on;
        // 16-bit activations add acc[1], the first plane's sums from 0, as
        // shl8(acc[1]) + acc[0] (kernels/formats/q8/layout.hpp).
        vec::I acc[2][MR][NV];
        // The load steps of planes [plane, plane + NPL) into acc[NPL - 1 - p].
        auto steps = [&]<int NPL>(int plane) {
#pragma GCC unroll kUnrollQuads
            for (int jl = s * kStepsPerSub; jl < (s + 1) * kStepsPerSub; ++jl) {
                vec::Q wv[NV][QL];
#pragma GCC unroll kUnrollVecs
                for (int v = 0; v < NV; ++v)
                    W::load(blk[v / kVecPerPanel], jl, v % kVecPerPanel, wv[v]);
#pragma GCC unroll kUnrollSubs
                for (int h = 0; h < QL; ++h) {
                    const int j = jl * QL + h;
#pragma GCC unroll kUnrollRows
                    for (int r = 0; r < MR; ++r)
#pragma GCC unroll kUnrollSubs
                        for (int p = 0; p < NPL; ++p) {
                            const vec::X4 xb = vec::bcast4(reinterpret_cast<const int8_t*>(
                                act + size_t(plane + p) * a.plane_bytes + r * stride) + g * kQ8Group + 4 * j);
#pragma GCC unroll kUnrollVecs
                            for (int v = 0; v < NV; ++v)
                                acc[NPL - 1 - p][r][v] = vec::dot4(acc[NPL - 1 - p][r][v], wv[v][h], xb);
                        }
                }
            }
        };
#pragma GCC unroll kUnrollRows
        for (int r = 0; r < MR; ++r) {
            const vec::I c = vec::iset1(W::acc_init(act + r * stride, a, g, s));
#pragma GCC unroll kUnrollVecs
            for (int v = 0; v < NV; ++v) acc[0][r][v] = c;
        }
        if constexpr (P == 1) {
            steps.template operator()<1>(0);
        } else {
#pragma GCC unroll kUnrollRows
            for (int r = 0; r < MR; ++r)
#pragma GCC unroll kUnrollVecs
                for (int v = 0; v < NV; ++v) acc[1][r][v] = vec::iset1(0);
            // One weight load serves both planes (tiles of at most kMr2 rows).
            steps.template operator()<2>(0);
#pragma GCC unroll kUnrollRows
            for (int r = 0; r < MR; ++r)
#pragma GCC unroll kUnrollVecs
                for (int v = 0; v < NV; ++v) acc[0][r][v] = vec::iadd(vec::shl8(acc[1][r][v]), acc[0][r][v]);
        }
#pragma GCC unroll kUnrollVecs
        for (int v = 0; v < NV; ++v) {
            const typename W::Scales sc = W::scales(blk[v / kVecPerPanel], g, s, v % kVecPerPanel);
#pragma GCC unroll kUnrollRows
            for (int r = 0; r < MR; ++r) f[r][v] = W::finish(sc, acc[0][r][v], act + r * stride, a, g, f[r][v]);
        }
        }
    }
    // The sums leave through a buffer written in one unrolled pass. With the
    // conditional stores below reading f itself, GCC 12 gave f a home on the
    // stack and stored all of it there every group (12 stores per group in
    // the 6 × 2 tile). avx512-vnni on the AMX Xeon, one thread, K 2048 /
    // N 2048 M 512 (2026-12-05, two alternated rounds): q8 459-465 → 472-476
    // GOPS, q4k 405-407 → 412-414, q6k 288-291 → 300-306.
    alignas(64) float done[MR][NV][kL];
#pragma GCC unroll kUnrollVecs
    for (int r = 0; r < MR; ++r)
#pragma GCC unroll kUnrollVecs
        for (int v = 0; v < NV; ++v) vec::store(done[r][v], f[r][v]);
    for (int r = 0; r < MR; ++r)
        for (int p = 0; p < NP; ++p) {
            float* out = t.y + r * t.ldy + t.y_off[p];
            for (int u = 0; u < kVecPerPanel; ++u) {
                const int c = u * kL;
                if (c + kL <= t.cols[p])
                    vec::store(out + c, vec::load(done[r][p * kVecPerPanel + u]));
                else if (c < t.cols[p])
                    vec::store_part(out + c, vec::load(done[r][p * kVecPerPanel + u]), t.cols[p] - c);
            }
        }
}

#if defined(STATICLM_AMX)
// ---------------------------------------------------------------------------
// AMX-INT8 (the avx512_amx table, the integer formats with one scale per
// group of 32 and 8-bit activations; 16-bit activations run on the VNNI
// tile): 16 activation rows × one panel.
// ---------------------------------------------------------------------------
//
// The B operand of a tile dot product is 8 rows of 64 bytes, row j holding
// quad j (4 consecutive k) of each of 16 output columns: exactly the bytes a
// VNNI dot step of a format takes (W::load), unpacked per group, and
// exactly q8's block q as it lies, which is loaded in place. A is 16
// activation rows × the group's 32 int8 (row stride a.stride). tdpbsud (A
// signed, B unsigned) leaves the 16 × 16 int32 sums the VNNI tile
// accumulates; the epilogue starts them at W::acc_init and runs the VNNI
// tile's own W::finish, so the results are bit-identical to the avx512
// table's. Formats whose bytes are a signed value + 128 and whose sums start
// at the activations' corr = -128 · Σ x (W::kStartsAtCorr: q4, q5, iq4nl,
// iq4xs) unpack the bytes xor 0x80, the signed values, and multiply with
// tdpbssd: the same sums with no start value, which saves each row of the
// epilogue a broadcast and an add. q8's bytes are the same kind but its B
// tile is loaded in place: its sums start at corr inside the tiles, with a
// second product of the same A tile and a tile of bytes -128 (tdpbssd,
// tmm7, loaded by configure()): Σ x·(q + 128) + Σ x·(-128) = Σ x·q, the
// same int32 as sum + corr. The second product adds 16 cycles of the tile
// unit per group, which is not what bounds a group (below); the add per row
// and group, on the vector ports, was. Measured on avx512-amx
// (2 threads, alternated with the add, three rounds of bench_kernels): q8
// K 2048 / N 8192 M 16 / 64 / 512 1055-1191 / 1107-1229 / 1042-1160 GOPS
// against 1048-1088 / 1097-1149 / 1038-1092, K 8192 / N 2048 1033-1122 /
// 1032-1132 / 938-1037 against 963-999 / 927-1038 / 865-914; `staticlm
// bench --synthetic llama-3.2-1b --batch 1,16,32` B = 16 231-234 tok/s
// against 219-220, B = 32 260-263 against 249.
// Formats with sub-groups of 16 (q6k,
// q3k, q2k) stay on the VNNI tile: run on AMX as two steps per group, each
// sub-group's B tile the group's with the other's rows zero, q6k ran
// 392-436 GOPS against 449-513 on VNNI (K = 2048, N = 8192, M = 16-512, 2
// threads), its two epilogues per group bounding both. As two K = 16
// products per group (16-byte A and 4-row B tiles, C pairs double-buffered,
// 2026-12-04) q6k ran 562-575 against 614-634, q3k 556-586 against 558-566,
// q2k 404-412 against 529-533 (M = 64 and 512): the per-row epilogue of
// each half (load, start value, convert, scale, FMA; q2k adds its min
// term) costs what the VNNI tile's dot steps cost.
//
// K per tile product is one group because each has its own scales, so each
// product costs a tile store and a 16-row vector epilogue: the tile unit
// idles. q8, K = 2048, N = 8192, M = 512, 2 threads: 1006
// GOPS against 957 for the VNNI body on one Xeon, 915-938 against 586-614 on
// another, 7% of the AMX-INT8 peak. Accumulating in the tiles across K needs
// one scale per row and column (a per-channel format) or bf16 operands (the
// bf16 format's AMX path in matmul_float.cpp).
namespace amx8 {

constexpr int kRows = 16;  // activation rows per tile

// Palette 1: tmm0-2 = C (16 × 16 int32); tmm3, tmm4 = A (16 rows × 32 int8);
// tmm5, tmm6 = B (8 rows × 64 bytes); tmm7 = 8 rows × 64 bytes -128, q8's
// start values (kCorrTile). Step g of the pipeline loads group
// g + 2's operands, starts group g + 1's product, stores group g's result
// and finishes group g - 2 (the vector loads then read a tile store issued
// two steps earlier).
constexpr amx::TileConfig tile_config() {
    amx::TileConfig c;
    for (int i = 0; i < 8; ++i) {
        c.rows[i] = i >= 5 ? 8 : 16;
        c.colsb[i] = i == 3 || i == 4 ? 32 : 64;
    }
    return c;
}
struct alignas(64) MinusTile {
    int8_t b[8 * 64];
};
constexpr MinusTile minus_tile() {
    MinusTile t{};
    for (int8_t& v : t.b) v = -128;
    return t;
}
inline void configure() {
    static constexpr amx::TileConfig kConfig = tile_config();
    static constexpr MinusTile kMinus = minus_tile();
    amx::configure(kConfig);
    SLM_TILE_LOAD(7, kMinus.b, 64);
}

// Groups per tile call of a format loaded in place (q8), and the cache block
// of its row blocks of 32 and more (kBlockBytes below is the VNNI tiles'):
// 64 groups (k = 2048, 16 rows of activations 32 KiB, from L1 and L2) and
// blocks of 150 KiB, against 16 groups (8 KiB, all in L1) and 300 KiB before.
// A tile call restarts the pipeline and reloads and stores its 16 rows of y;
// longer calls and a prefetch of the next block that is nearer keep the
// tiles busier. Measured on avx512-amx, q8, 2 threads, alternated:
// bench_kernels K 2048 / N 2048 M 64 / 512 1169-1198 / 1152-1226 GOPS →
// 1379-1392 / 1387-1389 (the chunk alone: 1381-1402 / 1424-1436), K 2048 /
// N 8192 1313-1364 / 1278-1306 → 1549-1558 / 1440-1521, K 8192 / N 2048
// 1205-1248 / 1100-1162 → 1401-1405 / 1330-1331 (another script: 1133-1155
// / 1039-1113 → 1266-1408 / 1184-1196), M = 16 (one streaming block)
// unchanged; `staticlm bench --synthetic llama-3.2-1b --batch 32`
// 254-275 tok/s → 285-302 (the chunk alone 271-287). 128 groups measured
// like 64; one pair of panels per block like two.
constexpr int kChunkGroups = 64;
constexpr size_t kInPlaceBlockBytes = 150 * 1024;
// From 32 rows on, each chunk of 64 groups of a panel (32 KiB of B tiles) is
// unpacked once, for up to eight 16-row blocks in turn, each of which runs
// the chunk in one tile call. Measured on avx512-amx, q4k, K = 2048 and
// 8192, N = 2048 and 8192, M = 64 and 512 (bench_kernels, 2 threads, three
// alternated rounds, 2026-12-04): 773-857 GOPS at M = 64 against 699-775
// unpacking in every tile, 667-734 against 655-716 at M = 512 (8-group
// chunks for two blocks); 2026-12-05, the same shapes and q5 and iq4xs,
// against 8 groups for two blocks, two rounds: 64 groups for eight blocks
// q4k K 2048 M 64 / 512 985-1080 / 919-960 GOPS against 964-966 / 845-876,
// K 8192 928-1017 / 899-967 against 855-911 / 752-767, q5 and iq4xs
// +5-25%; 64 groups for two blocks no better than 8, 32 for two or four and
// 64 for four in between, 64 for sixteen like eight.
// Each call restarts the tile's pipeline and loads and stores y, which
// 8-group calls paid every 8 groups (as q8's 16-group calls did, kChunkGroups).
constexpr int kUnpackChunkGroups = 64;
constexpr int kUnpackRowBlocks = 8;
// A streaming tile's prefetch distance in its panel, in groups (8.7 KiB of
// q8): 12 to 32 measured alike, 4 slower.
constexpr size_t kStreamAhead = 16;

// A format whose blocks are B tiles as they lie (q8) says kBTileInPlace;
// every other one unpacks its load steps into a B tile per group, as signed
// bytes (tdpbssd) where its sums start at corr. (q8 unpacked that way ran
// 1062-1183 GOPS against 1183-1256 in place at K = 2048, N = 8192, M = 64
// and 512: the unpack cost more than the start values it saved.)
template <class W>
constexpr bool kInPlace = requires { W::kBTileInPlace; };
// Sums that start at the activations' corr (W::kStartsAtCorr): those that
// unpack flip their bytes to signed B (kSignedB); q8, in place, adds corr
// by a second product of each A tile with tmm7 (kCorrTile, see above).
template <class W>
constexpr bool kStartsAtCorr = [] {
    if constexpr (requires { W::kStartsAtCorr; })
        return W::kStartsAtCorr;
    else
        return false;
}();
template <class W>
constexpr bool kSignedB = kStartsAtCorr<W> && !kInPlace<W>;
template <class W>
constexpr bool kCorrTile = kStartsAtCorr<W> && kInPlace<W>;
constexpr size_t kBTileBytes = kQuads * 64;

struct Pipe {
    const TileArgs* t;
    long stride;
    alignas(64) int32_t c[3][kRows * kPanelRows];  // stored C, a ring of 3
    int g0;                                        // the tile's first group
    alignas(64) std::byte b[2][kBTileBytes];       // B tiles unpacked by load(), one per slot
};

// Group g of a panel as a B tile at dst.
template <class W>
inline void unpack(const std::byte* panel, int g, std::byte* dst) {
    static_assert(W::kSubs == 1 && kVecPerPanel == 1, "one 64-byte load step per quad row of the tile");
    constexpr int QL = W::kQuadsPerLoad;
    const std::byte* blk = W::block(panel, g);
    for (int jl = 0; jl < kQuads / QL; ++jl) {
        vec::Q w[QL];
        W::load(blk, jl, 0, w);
        for (int h = 0; h < QL; ++h) {
            if constexpr (kSignedB<W>) w[h] = _mm512_xor_si512(w[h], _mm512_set1_epi8(char(0x80)));
            _mm512_store_si512(dst + 64 * (jl * QL + h), w[h]);
        }
    }
}

// Group g's operands into operand slot S (0-1).
template <class W, int S>
inline void load(Pipe& p, int g) {
    const std::byte* act = p.t->act + size_t(g) * kQ8Group;
    const std::byte* b;
    if constexpr (kInPlace<W>) {
        b = W::block(p.t->panel[0], g) + W::kQOff;
    } else if (p.t->bt) {
        b = p.t->bt + size_t(g - p.g0) * kBTileBytes;
    } else {
        unpack<W>(p.t->panel[0], g, p.b[S]);
        b = p.b[S];
    }
    constexpr long kB = 64;
    if constexpr (S == 0) {
        SLM_TILE_LOAD(3, act, p.stride);
        SLM_TILE_LOAD_M(5, b, kB, 512);
    } else {
        SLM_TILE_LOAD(4, act, p.stride);
        SLM_TILE_LOAD_M(6, b, kB, 512);
    }
}

// The product of operand slot S into C tile C (0-2): signed B (tdpbssd) where
// kSignedB<W>, else unsigned (tdpbsud), and with kCorrTile<W> A times tmm7.
template <class W, int C, int S>
inline void product() {
#define SLM_PRODUCT(c, a, b)                                    \
    if constexpr (kSignedB<W>) {                                \
        SLM_TILE_DPBSSD(c, a, b);                               \
    } else {                                                    \
        SLM_TILE_DPBSUD(c, a, b);                               \
        if constexpr (kCorrTile<W>) SLM_TILE_DPBSSD(c, a, 7);   \
    }
    if constexpr (C == 0) {
        SLM_TILE_ZERO(0);
        if constexpr (S == 0) { SLM_PRODUCT(0, 3, 5) }
        else { SLM_PRODUCT(0, 4, 6) }
    } else if constexpr (C == 1) {
        SLM_TILE_ZERO(1);
        if constexpr (S == 0) { SLM_PRODUCT(1, 3, 5) }
        else { SLM_PRODUCT(1, 4, 6) }
    } else {
        SLM_TILE_ZERO(2);
        if constexpr (S == 0) { SLM_PRODUCT(2, 3, 5) }
        else { SLM_PRODUCT(2, 4, 6) }
    }
#undef SLM_PRODUCT
}

template <int C>
inline void store(int32_t* dst) {
    constexpr long kC = 64;
    if constexpr (C == 0) SLM_TILE_STORE(0, dst, kC, kRows);
    else if constexpr (C == 1) SLM_TILE_STORE(1, dst, kC, kRows);
    else SLM_TILE_STORE(2, dst, kC, kRows);
}

// Row r of group g's epilogue from its stored C: the VNNI tile's start value
// and epilogue (W::acc_init, W::finish) on the same int32 sum.
template <class W>
inline vec::F finish_row(const TileArgs& t, int g, const int32_t* c, const typename W::Scales& sc, int r,
                         vec::F f) {
    const Q8ActLayout& a = *t.a;
    const std::byte* row = t.act + size_t(r) * a.stride;
    const vec::I sum = _mm512_load_si512(c + kPanelRows * r);
    if constexpr (kStartsAtCorr<W>) return W::finish(sc, sum, row, a, g, f);  // started in the tiles
    return W::finish(sc, vec::iadd(sum, vec::iset1(W::acc_init(row, a, g, 0))), row, a, g, f);
}

#define SLM_INLINE __attribute__((always_inline))
#define SLM_AMX_ROWS(X) \
    X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15)

// 16 rows × panel[0] of t over groups [g0, g1), added to y unless `first`,
// prefetching t.pf[0]'s [0, pf_len) over the groups; the tile state must be
// configured. The 16 accumulators are named
// variables: as an array (1 KiB) GCC keeps them in memory, and the extra
// load and store per row and group halved the speed.
template <class W>
void tile(const TileArgs& t, int g0, int g1, bool first) {
    Pipe p;
    p.t = &t;
    p.g0 = g0;
    p.stride = long(t.a->stride);
    const __mmask16 cols = __mmask16((1u << t.cols[0]) - 1);
    float* const y = t.y + t.y_off[0];
    const size_t pf_step = t.pf_len ? prefetch_step(t.pf_len, g1 - g0) : 0;
#define SLM_INIT(r) \
    vec::F f##r = first ? vec::zero() : _mm512_maskz_loadu_ps(cols, y + (r) * t.ldy);
    SLM_AMX_ROWS(SLM_INIT)
#undef SLM_INIT
    auto finish = [&](int g, const int32_t* c) SLM_INLINE {
        const typename W::Scales sc = W::scales(W::block(t.panel[0], g), g, 0, 0);
#define SLM_ROW(r) f##r = finish_row<W>(t, g, c, sc, r, f##r);
        SLM_AMX_ROWS(SLM_ROW)
#undef SLM_ROW
    };
    // Step at group g, g % 6 == P (see TileConfig).
    auto step = [&]<int P>(int g) SLM_INLINE {
        if (g + 2 < g1) load<W, P % 2>(p, g + 2);
        if (g + 1 < g1) product<W, (P + 1) % 3, (P + 1) % 2>();
        if (g < g1) {
            store<P % 3>(p.c[P % 3]);
            if (t.pf_len) prefetch_step_share(t.pf[0], t.pf_len, pf_step, g - g0);
        }
        if (g > g0 + 1) finish(g - 2, p.c[(P + 1) % 3]);
    };
    load<W, 0>(p, g0);
    if (g0 + 1 < g1) load<W, 1>(p, g0 + 1);
    product<W, 0, 0>();
    for (int g = g0;; g += 6) {
        step.template operator()<0>(g);
        if (g + 1 > g1 + 1) break;
        step.template operator()<1>(g + 1);
        if (g + 2 > g1 + 1) break;
        step.template operator()<2>(g + 2);
        if (g + 3 > g1 + 1) break;
        step.template operator()<3>(g + 3);
        if (g + 4 > g1 + 1) break;
        step.template operator()<4>(g + 4);
        if (g + 5 > g1 + 1) break;
        step.template operator()<5>(g + 5);
        if (g + 6 > g1 + 1) break;
    }
#define SLM_STORE(r) _mm512_mask_storeu_ps(y + (r) * t.ldy, cols, f##r);
    SLM_AMX_ROWS(SLM_STORE)
#undef SLM_STORE
}

#undef SLM_AMX_ROWS
#undef SLM_INLINE

}  // namespace amx8
#endif

using TileFn = void (*)(const TileArgs&);
template <class W, int NP, int P, size_t... R>
constexpr std::array<TileFn, sizeof...(R)> tiles_of(std::index_sequence<R...>) {
    return {&tile<W, int(R) + 1, NP, P>...};
}

// Runs rows [0, mr) of a tile (mr <= kMr) on the panels in t.
template <class W, int NP>
void tile_rows(const TileArgs& t, int mr) {
    if constexpr (NP == 2 && !kTwoPanelTiles) {
        if (mr > 1) {  // not enough registers for two panels: one at a time
            TileArgs t1 = t;
            tile_rows<W, 1>(t1, mr);
            t1.panel[0] = t.panel[1];
            t1.pf[0] = t.pf[1];
            t1.y_off[0] = t.y_off[1];
            t1.cols[0] = t.cols[1];
            tile_rows<W, 1>(t1, mr);
        } else if (t.a->planes == 1) {
            tile<W, 1, 2, 1>(t);
        } else {
            tile<W, 1, 2, 2>(t);
        }
    } else {
        static constexpr auto kTiles1 = tiles_of<W, NP, 1>(std::make_index_sequence<kMr>{});
        static constexpr auto kTiles2 = tiles_of<W, NP, 2>(std::make_index_sequence<kMr2>{});
        if (t.a->planes == 1) {
            kTiles1[size_t(mr - 1)](t);
            return;
        }
        const int n2 = (mr + kMr2 - 1) / kMr2;
        for (int q = 0; q < n2; ++q) {  // 16-bit: tiles of kMr2 rows, each a share of the prefetch
            const int r = q * kMr2;
            TileArgs tr = t;
            tr.act = t.act + size_t(r) * t.a->stride;
            tr.y = t.y + size_t(r) * t.ldy;
            const size_t pf0 = t.pf_len * size_t(q) / size_t(n2);
            for (int p = 0; p < 2; ++p) tr.pf[p] = t.pf[p] + pf0;
            tr.pf_len = t.pf_len * size_t(q + 1) / size_t(n2) - pf0;
            kTiles2[size_t(std::min(kMr2, mr - r) - 1)](tr);
        }
    }
}

// Pairs of panels whose weights stay in L2 while one tile of activation rows
// (kMr rows · (k + 8·k/32) bytes, 15 KB at k = 2048) is reused from L1 across
// them: 4 pairs · 2 panels · 36 KB (k = 2048) = 288 KB of a 1 MB L2. Longer
// panels take fewer pairs (one at k = 8192, 278 KB), so that a block and the
// next one, prefetched meanwhile, fit in L2 together.
constexpr int kPairsPerBlock = 4;
constexpr size_t kBlockBytes = 300 * 1024;
inline int pairs_per_block(size_t panel_bytes, size_t block_bytes = kBlockBytes) {
    return int(std::clamp<size_t>(block_bytes / (2 * panel_bytes), 1, kPairsPerBlock));
}

// Activation rows per unit of a row split: AMX tiles take 16.
template <bool Amx>
constexpr int kRowUnit = kMr;
#if defined(STATICLM_AMX)
template <>
constexpr int kRowUnit<true> = amx8::kRows;
#endif

// Panels [p0, p1) × rows [r0, r1) of one matrix. The panel range is walked as
// two independent streams (its first and second half) so that two hardware
// prefetch streams stay busy while weights come from DRAM. With Amx, blocks
// of 16 rows run on the tiles and the rows after the last block on VNNI (the
// same bits either way).

template <class W, bool Amx>
void run_range(const MatmulOut& o, const Q8ActLayout& a, const std::byte* act, int p0, int p1,
               int r0, int r1) {
    const PackedMatrix& w = *o.w;
    const size_t panel_bytes = W::panel_bytes(a.n_groups);
    const int half = (p1 - p0 + 1) / 2;
    auto panel = [&](int pan) { return w.data + size_t(pan) * panel_bytes; };
    // Rows [r0, rv) run on AMX tiles, [rv, r1) on VNNI tiles of at most kMr
    // rows, as even as they split.
    int rv = r0;
    if constexpr (Amx)
        if (a.planes == 1) rv = r0 + (r1 - r0) / kRowUnit<Amx> * kRowUnit<Amx>;
    const int n_rt = (r1 - rv + kMr - 1) / kMr;
#if defined(STATICLM_AMX)
    if constexpr (Amx)
        if (rv > r0) amx8::configure();
#endif
    // One block of 16 rows on AMX (a batched decode step of 16-31
    // sequences) streams: each panel is read once, whole, by its tile, which
    // prefetches kStreamAhead ahead in it; the VNNI rows after the block then
    // find the pair in L2. Measured on avx512-amx, synthetic Llama-3.2-1B,
    // B = 16: 207-216 tok/s streaming against 174-178 with cache blocks,
    // whose next-block prefetch in slices did not keep up with the tiles;
    // at B = 32 (two blocks) the cache blocks stay ahead (229 against 224).
    bool stream = false;
    size_t block_bytes = kBlockBytes;
#if defined(STATICLM_AMX)
    if constexpr (Amx) {
        stream = rv - r0 == kRowUnit<Amx>;
        if (amx8::kInPlace<W> && rv > r0) block_bytes = amx8::kInPlaceBlockBytes;
    }
#endif
    const int block_pairs = stream ? 1 : pairs_per_block(panel_bytes, block_bytes);
    for (int i0 = 0; i0 < half; i0 += block_pairs) {
        const int i1 = std::min(half, i0 + block_pairs);
#if defined(STATICLM_AMX)
        if constexpr (Amx) {
            // The tile of 16 rows from r × panel pan over groups [g0, g1).
            // Streaming, it prefetches ahead in its own panel. Otherwise each
            // 16-row block brings its share of the next cache block's same
            // panel (this chunk's groups of it) into L2, as the VNNI tiles
            // below do. bt: the chunk's B tiles unpacked, or null.
            auto run_tile = [&](int r, int i, int side, int g0, int g1, const std::byte* bt) {
                const int pan = p0 + side + i;
                TileArgs t{};
                t.a = &a;
                t.ldy = o.ldy;
                t.act = act + size_t(r) * a.stride;
                t.y = o.y + size_t(r) * o.ldy;
                t.panel[0] = panel(pan);
                t.y_off[0] = ptrdiff_t(pan) * kPanelRows;
                t.cols[0] = std::min(kPanelRows, w.n - pan * kPanelRows);
                t.bt = bt;
                const int next = p0 + side + i + (i1 - i0);
                if (stream) {
                    t.pf[0] = panel(pan) + amx8::kStreamAhead * W::kBlockBytes;
                    t.pf_len = panel_bytes;
                } else if (i + (i1 - i0) < half && next < p1) {
                    // The chunk's bytes of the next panel (super-block
                    // formats interleave their scales with the groups).
                    const std::byte* c0 = W::block(panel(next), g0);
                    const size_t len = size_t(W::block(panel(next), g1) - c0);
                    const size_t nb = size_t(rv - r0) / amx8::kRows;
                    const size_t jb = size_t(r - r0) / amx8::kRows;
                    t.pf[0] = c0 + len * jb / nb;
                    t.pf_len = len * (jb + 1) / nb - len * jb / nb;
                }
                amx8::tile<W>(t, g0, g1, g0 == 0);
            };
            if (!amx8::kInPlace<W> && !stream) {
                // A format that unpacks: each panel's chunk once for up to
                // eight 16-row blocks (the unpacked 32 KiB stay in L1 and L2
                // while the blocks' activations stream past).
                alignas(64) std::byte bt[amx8::kUnpackChunkGroups * amx8::kBTileBytes];
                constexpr int kSetRows = amx8::kUnpackRowBlocks * amx8::kRows;
                for (int rs = r0; rs < rv; rs += kSetRows) {
                    const int re = std::min(rv, rs + kSetRows);
                    for (int g0 = 0; g0 < a.n_groups; g0 += amx8::kUnpackChunkGroups) {
                        const int g1 = std::min(a.n_groups, g0 + amx8::kUnpackChunkGroups);
                        for (int i = i0; i < i1; ++i)
                            for (const int side : {0, half}) {
                                const int pan = p0 + side + i;
                                if (pan >= p1) continue;
                                for (int g = g0; g < g1; ++g)
                                    amx8::unpack<W>(panel(pan), g, bt + size_t(g - g0) * amx8::kBTileBytes);
                                for (int r = rs; r < re; r += amx8::kRows) run_tile(r, i, side, g0, g1, bt);
                            }
                    }
                }
            } else {
                for (int r = r0; r < rv; r += amx8::kRows) {
                    // Chunks of K outermost: one chunk of these rows'
                    // activations serves every panel of the block before
                    // the next is read; y holds the sums between chunks. A
                    // streaming block is one chunk, all of K.
                    const int chunk = stream ? a.n_groups : amx8::kChunkGroups;
                    for (int g0 = 0; g0 < a.n_groups; g0 += chunk) {
                        const int g1 = std::min(a.n_groups, g0 + chunk);
                        for (int i = i0; i < i1; ++i)
                            for (const int side : {0, half})
                                if (p0 + side + i < p1) run_tile(r, i, side, g0, g1, nullptr);
                    }
                }
            }
        }
#endif
        // Several rows per tile: while this block's panels are multiplied
        // from L2 by every row tile, the next block's come from memory, each
        // (row tile, pair) call prefetching its share of the same pair of the
        // next block. Single rows keep the tile's own prefetch ahead in the
        // stream.
        const bool pf_next = r1 - rv > 1;
        for (int j = 0; j < n_rt; ++j) {
            const int ra = rv + (r1 - rv) * j / n_rt, rb = rv + (r1 - rv) * (j + 1) / n_rt;
            const size_t pf_a = panel_bytes * size_t(j) / size_t(n_rt);
            const size_t pf_b = panel_bytes * size_t(j + 1) / size_t(n_rt);
            for (int i = i0; i < i1; ++i) {
                const int pa = p0 + i, pb = p0 + half + i;
                const int np = pb < p1 ? 2 : 1;
                TileArgs t{};
                t.a = &a;
                t.ldy = o.ldy;
                t.act = act + size_t(ra) * a.stride;
                t.y = o.y + size_t(ra) * o.ldy;
                const int pan[2] = {pa, pb};
                for (int p = 0; p < np; ++p) {
                    t.panel[p] = panel(pan[p]);
                    t.y_off[p] = ptrdiff_t(pan[p]) * kPanelRows;
                    t.cols[p] = std::min(kPanelRows, w.n - pan[p] * kPanelRows);
                }
                const int next = i + (i1 - i0);  // the same pair of the next block
                if (pf_next && next < half) {
                    t.pf[0] = panel(p0 + next) + pf_a;
                    t.pf[1] = p0 + half + next < p1 ? panel(p0 + half + next) + pf_a : t.pf[0];
                    t.pf_len = pf_b - pf_a;
                }
                if (np == 2)
                    tile_rows<W, 2>(t, rb - ra);
                else
                    tile_rows<W, 1>(t, rb - ra);
            }
        }
    }
#if defined(STATICLM_AMX)
    if constexpr (Amx)
        if (rv > r0) amx::release();
#endif
}

template <class W, bool Amx>
void matmul_int_many(const MatmulOut* outs, int n_outs, const float* x, size_t ldx, int m,
                     std::byte* scratch, int n_threads) {
    if (m <= 0) return;
    const Q8ActLayout a = q8_act_layout(outs[0].w->k, act_planes(outs[0].w->act_bits));
    // The panels of all matrices end to end: matrix i owns [seg_end[i-1], seg_end[i]).
    int seg_end[kMaxMatmulOuts];
    int total = 0;
    for (int i = 0; i < n_outs; ++i) {
        total += (std::max(0, outs[i].w->n) + kPanelRows - 1) / kPanelRows;
        seg_end[i] = total;
    }
    if (total == 0) return;
    constexpr int kUnit = kRowUnit<Amx>;
    const int m_tiles = (m + kUnit - 1) / kUnit;
    // No more threads than there are tiles to share.
    n_threads = std::max(1, std::min(n_threads, total * m_tiles));
    // Threads share panels (each take walked as two streams) when there are
    // enough of them; otherwise rows too (prefill of narrow matrices): then a
    // unit is (row part, matrix).
    const int row_parts = total >= 2 * n_threads ? 1 : std::min(n_threads, m_tiles);
    int unit_end[1] = {row_parts * n_outs};
    detail::GuidedRanges ranges(row_parts == 1 ? seg_end : unit_end, row_parts == 1 ? n_outs : 1,
                                row_parts == 1 ? 2 : 1, n_threads);
    parallel(n_threads, [&](const Team& team) {
        int q0, q1;
        detail::split(m, team.size(), team.tid(), q0, q1);
        for (int r = q0; r < q1; ++r)
            quantize_row(x + size_t(r) * ldx, a, scratch + size_t(r) * a.stride);
        team.barrier();
        int seg, b, e;
        while (ranges.next(seg, b, e)) {
            if (row_parts == 1) {
                run_range<W, Amx>(outs[seg], a, scratch, b, e, 0, m);
                continue;
            }
            for (int u = b; u < e; ++u) {
                const MatmulOut& o = outs[u % n_outs];
                int t0, t1;
                detail::split(m_tiles, row_parts, u / n_outs, t0, t1);
                run_range<W, Amx>(o, a, scratch, 0, (o.w->n + kPanelRows - 1) / kPanelRows,
                                  t0 * kUnit, std::min(m, t1 * kUnit));
            }
        }
    });
}

template <class W, bool Amx>
void matmul_int(const PackedMatrix& w, const float* x, size_t ldx, int m, float* y, size_t ldy,
                std::byte* scratch, int n_threads) {
    const MatmulOut o{&w, y, ldy};
    matmul_int_many<W, Amx>(&o, 1, x, ldx, m, scratch, n_threads);
}

// q4 and q5 panels: each row's groups through the scalar quantize_q4_group or
// quantize_q5_group (the same bits on every target), stored by the format.
template <size_t BlockBytes, float (*Quantize)(const float*, int8_t*),
          void (*Store)(std::byte*, int, const int8_t*, float)>
void pack_panel_low_bit(SrcType st, const void* src, size_t ld, int rows, int k, std::byte* dst) {
    int8_t q[kQ8Group];
    walk_panel<kQ8Group, BlockBytes, false>(
        st, src, ld, rows, k, dst, [&](int r, const float* x, std::byte* blocks, int n_groups) {
            for (int g = 0; g < n_groups; ++g) {
                float sc = 0.0f;
                if (x)
                    sc = Quantize(x + g * kQ8Group, q);
                else
                    std::memset(q, 0, sizeof q);  // padding row: q = 0
                Store(blocks + size_t(g) * BlockBytes, r, q, sc);
            }
        });
}

// q4a and q5a panels: each row's groups through the scalar quantize_q4a_group
// / quantize_q5a_group.
template <size_t BlockBytes, void (*Quantize)(const float*, uint8_t*, uint16_t*, uint16_t*),
          void (*Store)(std::byte*, int, const uint8_t*, uint16_t, uint16_t)>
void pack_panel_affine_g(SrcType st, const void* src, size_t ld, int rows, int k, std::byte* dst) {
    uint8_t n[kQ8Group];
    // Units zeroed: padding rows keep n = 0, d = m = 0.
    walk_panel<kQ8Group, BlockBytes, true>(
        st, src, ld, rows, k, dst, [&](int r, const float* x, std::byte* blocks, int n_groups) {
            if (!x) return;
            for (int g = 0; g < n_groups; ++g) {
                uint16_t d, m;
                Quantize(x + g * kQ8Group, n, &d, &m);
                Store(blocks + size_t(g) * BlockBytes, r, n, d, m);
            }
        });
}

// q4k and q5k panels: each row's super-blocks through the scalar
// quantize_q4k_super / quantize_q5k_super.
template <size_t SuperBytes, void (*Quantize)(const float*, uint8_t*, uint8_t*, uint8_t*, uint16_t*, uint16_t*),
          void (*Store)(std::byte*, int, const uint8_t*, const uint8_t*, const uint8_t*, uint16_t, uint16_t)>
void pack_panel_affine_k(SrcType st, const void* src, size_t ld, int rows, int k, std::byte* dst) {
    constexpr int kSuper = 256;  // a Q4_K / Q5_K super-block
    static_assert(kPackTile == kSuper);
    uint8_t n[kSuper], sc[kSuper / kQ8Group], m[kSuper / kQ8Group];
    // Units zeroed: padding rows keep n = 0, scales 0.
    walk_panel<kSuper, SuperBytes, true>(
        st, src, ld, rows, k, dst, [&](int r, const float* x, std::byte* super, int) {
            if (!x) return;
            uint16_t d, dmin;
            Quantize(x, n, sc, m, &d, &dmin);
            Store(super, r, n, sc, m, d, dmin);
        });
}

// A format's FormatKernels: the skeleton's matmuls on its trait W and its
// pack body. On the avx512_amx table, where the CPU has AMX-INT8, 8-bit
// activations of 16 rows and more run on the AMX tile (formats with one
// scale per group of 32: W::kSubs == 1; see amx8).
template <class W>
FormatKernels int_kernels([[maybe_unused]] const CpuFeatures& cpu, FormatPackFn pack) {
#if defined(STATICLM_AMX)
    if constexpr (W::kSubs == 1)
        if (cpu.amx_int8) return {matmul_int<W, true>, matmul_int_many<W, true>, pack};
#endif
    return {matmul_int<W, false>, matmul_int_many<W, false>, pack};
}

}  // namespace

}  // namespace staticlm::kernels::STATICLM_NS
