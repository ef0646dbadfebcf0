// The float formats' SIMD body (f32, f16, bf16 panels of
// kernels/formats/float.hpp), compiled per target against the vector layer:
// panel packing and the matmul y[m][n] = x[m][k] · Wᵀ, one or several matrices
// per call, plus an AVX512-BF16 body picked at run time where the layer has it.
//
// Numerical contract:
//  - f32 / f16 / bf16 (convert path): every weight is converted exactly to fp32,
//    products x·w and sums are fp32 FMAs (vec::fma), one accumulator per output
//    summed in k order: y = fma(x[k-1], w[k-1], ... fma(x[0], w[0], 0)). Every
//    tile shape, thread split and fused call computes that same sum, so a row's
//    result does not depend on M, on its place in the tiles, on the thread
//    count or on how many matrices share a call (the batched runtime needs
//    this: a row decoded among M rows equals the row alone).
//  - bf16 with vdpbf16ps (AVX512-BF16 CPUs): x is first rounded to bf16 (round
//    to nearest even, denormals flushed by the instruction), so each product
//    carries a relative error up to 2^-9 from x; products of bf16 pairs are
//    exact and accumulated in fp32 (two per instruction, round to nearest even).
//  - packing rounds to f16 / bf16 exactly as f32_to_f16 / f32_to_bf16.
#include <algorithm>
#include <array>
#include <cstring>
#include <type_traits>
#include <utility>

#include "kernels/formats/float.hpp"
#include "kernels/simd/amx.hpp"
#include "kernels/simd/schedule.hpp"
#include "kernels/simd/simd.hpp"
#include "kernels/simd/vec.hpp"

namespace staticlm::kernels::STATICLM_NS {

namespace {

using V = vec::F;
constexpr int kLanes = vec::kLanes;
constexpr int kVecPerPanel = kPanelRows / kLanes;
static_assert(kVecPerPanel * kLanes == kPanelRows);

// ---------------------------------------------------------------------------
// Register tiles. Each microkernel call computes kMR rows of x against kNP
// panels (kNP·16 outputs) over all of k, with kMR·kNP·kVecPerPanel vector
// accumulators. FMA latency 4 × 2 FMA pipes (Zen 4/5, Intel server cores) needs
// ≥ 8 independent accumulators in flight (kMinAcc). Per k step the tile loads
// kNP·kVecPerPanel weight vectors (each converted once for f16/bf16) and
// broadcasts kMR x values (folded into the FMAs as memory operands), so a tall
// tile amortizes the weight conversions best:
//  - AVX-512, 32 zmm: kMR = 12, kNP = 2 → 24 accumulators + 2 weights + 1
//    broadcast = 27 registers; 2 weight loads/conversions per 24 FMAs.
//  - AVX2, 16 ymm: kMR = 6, kNP = 1 (2 ymm per panel) → 12 accumulators + 2
//    weights + 1 broadcast = 15 registers (the BLIS Haswell 6×16 shape).
//  - generic (SSE2, 16 xmm, no FMA): kMR = 2, kNP = 1 (4 xmm per panel) → 8
//    accumulators + 4 weights + 1 broadcast = 13 registers.
// A lone row (decode) keeps kMinAcc chains in flight with more panels instead
// of splitting k (which would change its rounding): kWidePanels panels of one
// row, e.g. AVX2 4 panels × 2 ymm = 8 accumulators, AVX-512 8 panels × 1 zmm.
// ---------------------------------------------------------------------------
constexpr int kMR = kLanes >= 16 ? 12 : kLanes >= 8 ? 6 : 2;
constexpr int kNP = vec::kRegisters >= 32 && kVecPerPanel == 1 ? 2 : 1;
constexpr int kMinAcc = 8;
constexpr int kWidePanels = std::max(kNP, (kMinAcc + kVecPerPanel - 1) / kVecPerPanel);

// Cache blocking: an n-tile holds about kTileWeightBytes of packed weights
// (kept in L2 while every m micro-block of the tile streams over it); an m-tile
// is kMTileBlocks micro-blocks of x rows.
constexpr size_t kTileWeightBytes = 384 * 1024;
constexpr int kMTileBlocks = 8;
// Decode (one row) of f16 and bf16 prefetches each panel's weights this many
// cache lines ahead: the hardware prefetchers alone left f16 decode at 84-89%
// of the read bandwidth; 8, 16 or 24 lines ahead gave 94-97% (Llama-3.2-1B,
// 2 threads, Xeon: f16 12.8-13.1 against 11.3-12.1 tok/s, vdpbf16ps bf16
// 12.5-13.0 against 11.6-11.7, alternated).
constexpr int kPrefetchLines = 16;
// Below this many multiply-adds a matmul runs on the calling thread: waking a
// team costs more than the work.
constexpr double kMinParallelMacs = 1 << 16;

enum class Fmt { f32, f16, bf16 };

template <Fmt F>
using Elem = std::conditional_t<F == Fmt::f32, float, uint16_t>;

// Elements of one panel (k padded to even for bf16 pairs).
template <Fmt F>
size_t panel_elems(int k) {
    return F == Fmt::bf16 ? size_t(bf16_pairs(k)) * 2 * kPanelRows : size_t(k) * kPanelRows;
}

// Weight vector v (0 .. kVecPerPanel-1) of panel row kk.
template <Fmt F>
inline V load_w(const Elem<F>* panel, int kk, int v) {
    if constexpr (F == Fmt::bf16)
        return vec::load_bf16(panel + size_t(kk / 2) * (2 * kPanelRows) + v * (2 * kLanes), kk & 1);
    else
        return vec::load(panel + size_t(kk) * kPanelRows + v * kLanes);
}

// Stores the kNP·16 outputs of one x row; only the first `cols` exist.
template <int NV>
inline void store_row(float* y, const V* acc, int cols) {
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) {
        const int c = v * kLanes;
        if (c + kLanes <= cols)
            vec::store(y + c, acc[v]);
        else if (c < cols)
            vec::store_part(y + c, acc[v], cols - c);
    }
}

// y[MR][cols] = x[MR][k] · (NP panels starting at w, panel_elems apart)ᵀ.
template <Fmt F, int MR, int NP>
void tile(const void* w, size_t panel_elems, const float* x, size_t ldx, int k, float* y,
          size_t ldy, int cols) {
    constexpr int NV = NP * kVecPerPanel;
    constexpr int KU = 1;  // one accumulator per output: the sum in k order (see the contract)
    // bf16 steps over whole pairs so the half of each 32-bit lane is static.
    constexpr int kStep = F == Fmt::bf16 ? 2 : 1;
    const Elem<F>* wp = static_cast<const Elem<F>*>(w);
    V acc[KU][MR][NV];
#pragma GCC unroll 64
    for (int u = 0; u < KU; ++u)
#pragma GCC unroll 64
        for (int r = 0; r < MR; ++r)
#pragma GCC unroll 64
            for (int v = 0; v < NV; ++v) acc[u][r][v] = vec::zero();

    auto step = [&](int kk, V(&a)[MR][NV]) __attribute__((always_inline)) {
        V wv[NV];
#pragma GCC unroll 64
        for (int v = 0; v < NV; ++v)
            wv[v] = load_w<F>(wp + size_t(v / kVecPerPanel) * panel_elems, kk, v % kVecPerPanel);
#pragma GCC unroll 64
        for (int r = 0; r < MR; ++r) {
            const V xb = vec::set1(x[size_t(r) * ldx + kk]);
#pragma GCC unroll 64
            for (int v = 0; v < NV; ++v) a[r][v] = vec::fma(xb, wv[v], a[r][v]);
        }
    };

    const int k_main = k - k % kStep;
    for (int kk = 0; kk < k_main; kk += kStep) {
        // Decode of 2-byte weights: one line of every panel per line's worth
        // of k (f32 lost 6% with it: the hardware prefetchers keep up there).
        if constexpr (MR == 1 && sizeof(Elem<F>) == 2) {
            constexpr int kPerLine = 64 / int(sizeof(Elem<F>) * kPanelRows);
            if (kk % kPerLine == 0)
#pragma GCC unroll 64
                for (int p = 0; p < NP; ++p)
                    __builtin_prefetch(wp + size_t(p) * panel_elems +
                                       size_t(kk + kPrefetchLines * kPerLine) * kPanelRows);
        }
#pragma GCC unroll 8
        for (int u = 0; u < kStep; ++u) step(kk + u, acc[u % KU]);
    }
    for (int kk = k_main; kk < k; ++kk) step(kk, acc[0]);

#pragma GCC unroll 64
    for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 64
        for (int v = 0; v < NV; ++v)
#pragma GCC unroll 8
            for (int u = 1; u < KU; ++u) acc[0][r][v] = vec::add(acc[0][r][v], acc[u][r][v]);
        store_row<NV>(y + size_t(r) * ldy, acc[0][r], cols);
    }
}

// Microkernels for every (rows, panels) tail shape: kTiles<F>[mr-1][np-1].
using TileFn = void (*)(const void* w, size_t panel_elems, const float* x, size_t ldx, int k,
                        float* y, size_t ldy, int cols);

template <Fmt F, int NP, size_t... R>
constexpr std::array<TileFn, kMR> tiles_for_np(std::index_sequence<R...>) {
    return {&tile<F, int(R) + 1, NP>...};
}
template <Fmt F, size_t... P>
constexpr std::array<std::array<TileFn, kMR>, kNP> make_tiles(std::index_sequence<P...>) {
    return {tiles_for_np<F, int(P) + 1>(std::make_index_sequence<kMR>{})...};
}
// One row × 1 .. kWidePanels panels: kWide<F>[np-1].
template <Fmt F, size_t... P>
constexpr std::array<TileFn, kWidePanels> make_wide(std::index_sequence<P...>) {
    return {&tile<F, 1, int(P) + 1>...};
}

// The split of one matmul into tiles: n-tiles of nc panel blocks (kNP panels
// each) × m-tiles of mc rows, numbered n-major so that consecutive tiles share
// weight panels (prefill) or walk them in order (decode).
struct Tiling {
    int n_panels = 0, n_blocks = 0, nc = 1, n_tiles = 0, mc = 1, m_tiles = 0;
    Tiling() = default;
    Tiling(int m, int n, size_t panel_bytes, int mr, int np) {
        n_panels = (n + kPanelRows - 1) / kPanelRows;
        n_blocks = (n_panels + np - 1) / np;
        const size_t block_bytes = std::max<size_t>(1, panel_bytes * size_t(np));
        nc = int(
            std::clamp<size_t>(kTileWeightBytes / block_bytes, 1, size_t(std::max(1, n_blocks))));
        n_tiles = (n_blocks + nc - 1) / nc;
        mc = mr * kMTileBlocks;
        m_tiles = (m + mc - 1) / mc;
    }
    int count() const { return n_tiles * m_tiles; }
};

// Runs tile t: every micro-block of MR rows sweeps the n-tile's panel blocks
// (a lone row sweeps them kWidePanels panels at a time).
template <class Tiles, class Wide, class XAt>
void run_tile(const Tiling& tl, int t, int m, int n, int mr_max, int np_max, const Tiles& tiles,
              const Wide& wide, const std::byte* wdata, size_t panel_bytes, size_t panel_elems, const XAt& x_at,
              size_t ldx, int k, float* y, size_t ldy) {
    const int nt = t / tl.m_tiles;
    const int mt = t % tl.m_tiles;
    const int b0 = nt * tl.nc;
    const int b1 = std::min(tl.n_blocks, b0 + tl.nc);
    const int i1 = std::min(m, (mt + 1) * tl.mc);
    for (int i = mt * tl.mc; i < i1; i += mr_max) {
        const int mr = std::min(mr_max, i1 - i);
        if (mr == 1) {
            const int p1 = std::min(tl.n_panels, b1 * np_max);
            for (int p = b0 * np_max; p < p1; p += int(wide.size())) {
                const int np = std::min(int(wide.size()), p1 - p);
                const int col = p * kPanelRows;
                wide[size_t(np - 1)](wdata + size_t(p) * panel_bytes, panel_elems, x_at(i), ldx, k,
                                     y + size_t(i) * ldy + col, ldy, std::min(np * kPanelRows, n - col));
            }
            continue;
        }
        for (int b = b0; b < b1; ++b) {
            const int p = b * np_max;
            const int np = std::min(np_max, tl.n_panels - p);
            const int col = p * kPanelRows;
            const int cols = std::min(np * kPanelRows, n - col);
            tiles[np - 1][mr - 1](wdata + size_t(p) * panel_bytes, panel_elems, x_at(i), ldx, k,
                                  y + size_t(i) * ldy + col, ldy, cols);
        }
    }
}

// The tilings of every product of a fused call and their tiles end to end
// (product i owns tiles [seg_end[i-1], seg_end[i])).
struct Plan {
    Tiling tl[kMaxMatmulOuts];
    int seg_end[kMaxMatmulOuts] = {};
    int total = 0;
    double macs = 0;
    Plan(const MatmulOut* outs, int n_outs, int m, size_t panel_bytes, int mr = kMR, int np = kNP) {
        for (int i = 0; i < n_outs; ++i) {
            const int n = std::max(0, outs[i].w->n);
            tl[i] = Tiling(m, n, panel_bytes, mr, np);
            total += tl[i].count();
            seg_end[i] = total;
            macs += double(m) * double(n) * double(outs[i].w->k);
        }
    }
    // Threads worth waking: below kMinParallelMacs the calling thread does it all.
    int team(int n_threads) const {
        if (n_threads <= 1 || total <= 1 || macs < kMinParallelMacs) return 1;
        return std::min(n_threads, total);
    }
};

template <Fmt F>
void matmul_many_impl(const MatmulOut* outs, int n_outs, const float* x, size_t ldx, int m,
                      int n_threads) {
    if (m <= 0) return;
    static constexpr auto kTiles = make_tiles<F>(std::make_index_sequence<kNP>{});
    static constexpr auto kWide = make_wide<F>(std::make_index_sequence<kWidePanels>{});
    const int k = outs[0].w->k;
    const size_t pe = panel_elems<F>(k);
    const size_t panel_bytes = pe * sizeof(Elem<F>);
    const Plan plan(outs, n_outs, m, panel_bytes);
    if (plan.total == 0) return;
    [[maybe_unused]] const int team = plan.team(n_threads);
    detail::GuidedRanges ranges(plan.seg_end, n_outs, 1, team);
    auto x_at = [x, ldx](int i) { return x + size_t(i) * ldx; };
    parallel(team, [&](const Team&) {
        int s, b, e;
        while (ranges.next(s, b, e))
            for (int t = b; t < e; ++t)
                run_tile(plan.tl[s], t, m, outs[s].w->n, kMR, kNP, kTiles, kWide, outs[s].w->data,
                         panel_bytes, pe, x_at, ldx, k, outs[s].y, outs[s].ldy);
    });
}

template <Fmt F>
void matmul_one(const PackedMatrix& w, const float* x, size_t ldx, int m, float* y, size_t ldy,
                std::byte* /*scratch*/, int n_threads) {
    const MatmulOut o{&w, y, ldy};
    matmul_many_impl<F>(&o, 1, x, ldx, m, n_threads);
}

template <Fmt F>
void matmul_many(const MatmulOut* outs, int n_outs, const float* x, size_t ldx, int m,
                 std::byte* /*scratch*/, int n_threads) {
    matmul_many_impl<F>(outs, n_outs, x, ldx, m, n_threads);
}

// ---------------------------------------------------------------------------
// AVX512-BF16: vdpbf16ps multiplies 16 lanes of (even k, odd k) bf16 pairs and
// adds both products to an fp32 lane, so a panel row pair [16][2] is one
// operand and x needs the same pairs: x is rounded to bf16 into scratch first.
// Same register tile as the fp32 body of this target.
// ---------------------------------------------------------------------------
#if STATICLM_VEC_BF16_DOT

// One k pair j of the tile: acc[r][p] += xq[r][2j..2j+1] · panel p pair j.
// (A function, not a lambda: a lambda would not inherit the target attribute.)
template <int MR, int NP>
STATICLM_BF16_DOT __attribute__((always_inline)) inline void dpbf16_step(const uint16_t* wp,
                                                                         size_t panel_elems,
                                                                         const uint16_t* xq,
                                                                         size_t ldq, int j,
                                                                         V (&a)[MR][NP]) {
    vec::I wv[NP];
#pragma GCC unroll 64
    for (int p = 0; p < NP; ++p)
        wv[p] = vec::load_i(wp + size_t(p) * panel_elems + size_t(j) * 2 * kPanelRows);
#pragma GCC unroll 64
    for (int r = 0; r < MR; ++r) {
        uint32_t pair;
        std::memcpy(&pair, xq + size_t(r) * ldq + 2 * size_t(j), 4);
        const vec::I xb = vec::iset1(int32_t(pair));
#pragma GCC unroll 64
        for (int p = 0; p < NP; ++p) a[r][p] = vec::dot_bf16(a[r][p], xb, wv[p]);
    }
}

// y[MR][cols] = xq[MR][kp] · Wᵀ; xq rows are bf16, ldq uint16 apart.
template <int MR, int NP>
STATICLM_BF16_DOT void tile_dpbf16(const void* w, size_t panel_elems, const uint16_t* xq,
                                   size_t ldq, int k, float* y, size_t ldy, int cols) {
    constexpr int KU = 1;  // pairs summed in k order, as the convert path (row invariance)
    const uint16_t* wp = static_cast<const uint16_t*>(w);
    const int n_pairs = bf16_pairs(k);
    V acc[KU][MR][NP];
#pragma GCC unroll 64
    for (int u = 0; u < KU; ++u)
#pragma GCC unroll 64
        for (int r = 0; r < MR; ++r)
#pragma GCC unroll 64
            for (int p = 0; p < NP; ++p) acc[u][r][p] = vec::zero();

    const int j_main = n_pairs - n_pairs % KU;
    for (int j = 0; j < j_main; j += KU) {
        if constexpr (MR == 1)  // decode: a pair step is one line of every panel
#pragma GCC unroll 64
            for (int p = 0; p < NP; ++p)
                __builtin_prefetch(wp + size_t(p) * panel_elems +
                                   size_t(j + kPrefetchLines) * 2 * kPanelRows);
#pragma GCC unroll 8
        for (int u = 0; u < KU; ++u) dpbf16_step<MR, NP>(wp, panel_elems, xq, ldq, j + u, acc[u]);
    }
    for (int j = j_main; j < n_pairs; ++j) dpbf16_step<MR, NP>(wp, panel_elems, xq, ldq, j, acc[0]);

#pragma GCC unroll 64
    for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 64
        for (int p = 0; p < NP; ++p)
#pragma GCC unroll 8
            for (int u = 1; u < KU; ++u) acc[0][r][p] = vec::add(acc[0][r][p], acc[u][r][p]);
        store_row<NP>(y + size_t(r) * ldy, acc[0][r], cols);
    }
}

using TileBf16Fn = void (*)(const void* w, size_t panel_elems, const uint16_t* xq, size_t ldq,
                            int k, float* y, size_t ldy, int cols);
template <int NP, size_t... R>
constexpr std::array<TileBf16Fn, kMR> tiles_dpbf16_for_np(std::index_sequence<R...>) {
    return {&tile_dpbf16<int(R) + 1, NP>...};
}
template <size_t... P>
constexpr std::array<std::array<TileBf16Fn, kMR>, kNP> make_tiles_dpbf16(
    std::index_sequence<P...>) {
    return {tiles_dpbf16_for_np<int(P) + 1>(std::make_index_sequence<kMR>{})...};
}
template <size_t... P>
constexpr std::array<TileBf16Fn, kWidePanels> make_wide_dpbf16(std::index_sequence<P...>) {
    return {&tile_dpbf16<1, int(P) + 1>...};
}

void matmul_many_bf16_dp(const MatmulOut* outs, int n_outs, const float* x, size_t ldx, int m,
                         std::byte* scratch, int n_threads) {
    if (m <= 0) return;
    static constexpr auto kTiles = make_tiles_dpbf16(std::make_index_sequence<kNP>{});
    static constexpr auto kWide = make_wide_dpbf16(std::make_index_sequence<kWidePanels>{});
    const int k = outs[0].w->k;
    const size_t pe = panel_elems<Fmt::bf16>(k);
    const size_t panel_bytes = pe * sizeof(uint16_t);
    const size_t ldq = bf16_act_row_bytes(k) / sizeof(uint16_t);
    uint16_t* xq = reinterpret_cast<uint16_t*>(scratch);  // [m][ldq] bf16
    const Plan plan(outs, n_outs, m, panel_bytes);
    if (plan.total == 0) return;
    [[maybe_unused]] const int team = plan.team(n_threads);
    detail::GuidedRanges ranges(plan.seg_end, n_outs, 1, team);
    auto x_at = [xq, ldq](int i) { return xq + size_t(i) * ldq; };
    parallel(team, [&](const Team& tm) {
        int i0, i1;
        detail::split(m, tm.size(), tm.tid(), i0, i1);
        for (int i = i0; i < i1; ++i) vec::to_bf16_pairs(x + size_t(i) * ldx, k, xq + size_t(i) * ldq);
        tm.barrier();
        int s, b, e;
        while (ranges.next(s, b, e))
            for (int t = b; t < e; ++t)
                run_tile(plan.tl[s], t, m, outs[s].w->n, kMR, kNP, kTiles, kWide, outs[s].w->data,
                         panel_bytes, pe, x_at, ldq, k, outs[s].y, outs[s].ldy);
    });
}

void matmul_bf16_dp(const PackedMatrix& w, const float* x, size_t ldx, int m, float* y, size_t ldy,
                    std::byte* scratch, int n_threads) {
    const MatmulOut o{&w, y, ldy};
    matmul_many_bf16_dp(&o, 1, x, ldx, m, scratch, n_threads);
}

#if defined(STATICLM_AMX)
// ---------------------------------------------------------------------------
// AMX-BF16 (the avx512_amx table): a bf16 panel, [k/2][16][2], is a column of
// B tiles as it lies (16 k pairs × 16 outputs × 2 bf16 = 16 rows of 64 bytes),
// and the bf16 activation rows give A tiles of 16 rows × 32 k, so tdpbf16ps
// accumulates 16 × 16 fp32 outputs over all of K inside the tiles and each
// output tile is stored once. Blocks of 32 rows × 2 panels (tile_2x2: each A
// and B tile feeds two products) while more than 16 rows remain, else 16 rows
// × 1-2 panels (tile: k steps alternate between two A and two pairs of B
// tiles so that a load never waits for the product reading the previous one;
// this is decode's shape). Where k % 32 == 0 every call runs here,
// whatever its row count (the scratch has whole blocks of 16 rows), so a
// row's bits never depend on M; other k run on the vdpbf16ps body.
// Products are those of vdpbf16ps (bf16 pairs, fp32 accumulation, denormals
// flushed) in the tile unit's summation order.
// ---------------------------------------------------------------------------
namespace amx16 {

constexpr int kRows = 16;      // rows of x per tile
constexpr int kStepK = 32;     // k per tile product
constexpr size_t kStepBytes = size_t(kStepK) * kPanelRows * 2;  // one B tile

// Every tile 64 bytes wide and 16 rows high, but for a call of m < 16 rows
// tile()'s C and A tiles (tmm0-3) have m rows: each C row depends on its own
// A row only, so the rows computed do not change, and decode skips 15 rows.
constexpr amx::TileConfig tile_config(int m) {
    amx::TileConfig c;
    for (int i = 0; i < 8; ++i) {
        c.rows[i] = uint8_t(i < 4 ? std::min(m, kRows) : kRows);
        c.colsb[i] = 64;
    }
    return c;
}

// tile()'s k step j in slot S: tmm0, tmm1 = C (panels 0, 1); tmm2, tmm3 = A
// (even, odd step); tmm4, tmm5 = B of panels 0, 1 (even step); tmm6, tmm7
// (odd step).
template <int NP, int S>
inline void step(const std::byte* w, size_t panel_bytes, const uint16_t* xq, size_t ldq_bytes,
                 int j) {
    const uint16_t* a = xq + size_t(j) * kStepK;
    const std::byte* b0 = w + size_t(j) * kStepBytes;
    const std::byte* b1 = b0 + panel_bytes;
    // Weights one step (1 KiB a panel) ahead: bf16 Llama-3.2-1B decode (one
    // row, 2 threads) 13.0-13.7 tok/s = 97-99% of the read bandwidth, against
    // 11.4-11.6 with 4 steps and 10.9-11.0 with none; prefill is the same.
    for (size_t o = 0; o < kStepBytes; o += 64) {
        __builtin_prefetch(b0 + kStepBytes + o);
        if constexpr (NP == 2) __builtin_prefetch(b1 + kStepBytes + o);
    }
    // Tile numbers are literals in the instructions: one expansion per slot.
#define SLM_BF16_STEP(ta, tb0, tb1)           \
    SLM_TILE_LOAD(ta, a, ldq_bytes);          \
    SLM_TILE_LOAD(tb0, b0, 64);               \
    SLM_TILE_DPBF16PS(0, ta, tb0);            \
    if constexpr (NP == 2) {                  \
        SLM_TILE_LOAD(tb1, b1, 64);           \
        SLM_TILE_DPBF16PS(1, ta, tb1);        \
    }
    if constexpr (S == 0) {
        SLM_BF16_STEP(2, 4, 5)
    } else {
        SLM_BF16_STEP(3, 6, 7)
    }
#undef SLM_BF16_STEP
}

// y[rows][cols] = xq[16 rows] · panels [w, w + NP·panel_bytes)ᵀ, the first
// `rows` rows (1..16) and cols <= 16·NP columns.
template <int NP>
void tile(const std::byte* w, size_t panel_bytes, const uint16_t* xq, size_t ldq_bytes, int k,
          float* y, size_t ldy, int rows, int cols) {
    SLM_TILE_ZERO(0);
    if constexpr (NP == 2) SLM_TILE_ZERO(1);
    const int steps = k / kStepK;
    int j = 0;
    for (; j + 2 <= steps; j += 2) {
        step<NP, 0>(w, panel_bytes, xq, ldq_bytes, j);
        step<NP, 1>(w, panel_bytes, xq, ldq_bytes, j + 1);
    }
    if (j < steps) step<NP, 0>(w, panel_bytes, xq, ldq_bytes, j);
    const size_t ldy_bytes = ldy * sizeof(float);
    alignas(64) float buf[kRows * kPanelRows];
    for (int p = 0; p < NP; ++p) {
        const int c = std::min(kPanelRows, cols - p * kPanelRows);
        float* out = y + p * kPanelRows;
        if (c == kPanelRows && rows == kRows) {  // straight into y
            if (p == 0) SLM_TILE_STORE(0, out, ldy_bytes, kRows);
            else SLM_TILE_STORE(1, out, ldy_bytes, kRows);
            continue;
        }
        if (p == 0) SLM_TILE_STORE(0, buf, 64, kRows);
        else SLM_TILE_STORE(1, buf, 64, kRows);
        for (int r = 0; r < rows; ++r)
            std::memcpy(out + size_t(r) * ldy, buf + r * kPanelRows, sizeof(float) * size_t(c));
    }
}


// Stores C tile `t` (rows [r0, r0 + 16) of y, panel p) for `rows` (1..16) rows
// and c columns: straight into y when whole, else through buf.
#define SLM_STORE_C(t)                                                                   \
    do {                                                                                 \
        if (c == kPanelRows && rows == kRows) {                                          \
            SLM_TILE_STORE(t, out, ldy * sizeof(float), kRows);                          \
        } else {                                                                         \
            SLM_TILE_STORE(t, buf, 64, kRows);                                           \
            for (int r = 0; r < rows; ++r)                                               \
                std::memcpy(out + size_t(r) * ldy, buf + r * kPanelRows, sizeof(float) * size_t(c)); \
        }                                                                                \
    } while (0)

// 32 rows × 2 panels (rows2: 1..16 valid rows in the second 16): tmm0-3 =
// C (rows 0-15 × panel 0, × panel 1, rows 16-31 × panel 0, × panel 1),
// tmm4, tmm5 = A of the two row blocks, tmm6, tmm7 = B of the two panels:
// each A and B tile feeds two products.
inline void tile_2x2(const std::byte* w, size_t panel_bytes, const uint16_t* xq, size_t ldq_bytes,
                     int k, float* y, size_t ldy, int rows2, int cols) {
    SLM_TILE_ZERO(0);
    SLM_TILE_ZERO(1);
    SLM_TILE_ZERO(2);
    SLM_TILE_ZERO(3);
    const uint16_t* x1 = xq + ldq_bytes / sizeof(uint16_t) * kRows;
    const int steps = k / kStepK;
    for (int j = 0; j < steps; ++j) {
        const std::byte* b0 = w + size_t(j) * kStepBytes;
        const std::byte* b1 = b0 + panel_bytes;
        for (size_t o = 0; o < kStepBytes; o += 64) {
            __builtin_prefetch(b0 + kStepBytes + o);
            __builtin_prefetch(b1 + kStepBytes + o);
        }
        SLM_TILE_LOAD(4, xq + size_t(j) * kStepK, ldq_bytes);
        SLM_TILE_LOAD(6, b0, 64);
        SLM_TILE_DPBF16PS(0, 4, 6);
        SLM_TILE_LOAD(7, b1, 64);
        SLM_TILE_DPBF16PS(1, 4, 7);
        SLM_TILE_LOAD(5, x1 + size_t(j) * kStepK, ldq_bytes);
        SLM_TILE_DPBF16PS(2, 5, 6);
        SLM_TILE_DPBF16PS(3, 5, 7);
    }
    alignas(64) float buf[kRows * kPanelRows];
    const int c0 = std::min(kPanelRows, cols), c1 = cols - kPanelRows;
    {
        int rows = kRows, c = c0;
        float* out = y;
        SLM_STORE_C(0);
        c = c1;
        out = y + kPanelRows;
        SLM_STORE_C(1);
        rows = rows2;
        c = c0;
        out = y + size_t(kRows) * ldy;
        SLM_STORE_C(2);
        c = c1;
        out = y + size_t(kRows) * ldy + kPanelRows;
        SLM_STORE_C(3);
    }
}
#undef SLM_STORE_C

}  // namespace amx16

void matmul_many_bf16_amx(const MatmulOut* outs, int n_outs, const float* x, size_t ldx, int m,
                          std::byte* scratch, int n_threads) {
    const int k = outs[0].w->k;
    if (k % amx16::kStepK != 0) {
        matmul_many_bf16_dp(outs, n_outs, x, ldx, m, scratch, n_threads);
        return;
    }
    if (m <= 0) return;
    const amx::TileConfig config = amx16::tile_config(m);
    const size_t panel_bytes = panel_elems<Fmt::bf16>(k) * sizeof(uint16_t);
    const size_t ldq = bf16_act_row_bytes(k) / sizeof(uint16_t);
    uint16_t* xq = reinterpret_cast<uint16_t*>(scratch);  // [m rounded up to 16][ldq] bf16
    constexpr int kNpAmx = 2;
    const Plan plan(outs, n_outs, m, panel_bytes, amx16::kRows, kNpAmx);
    if (plan.total == 0) return;
    const int team = plan.team(n_threads);
    detail::GuidedRanges ranges(plan.seg_end, n_outs, 1, team);
    parallel(team, [&](const Team& tm) {
        int i0, i1;
        detail::split(m, tm.size(), tm.tid(), i0, i1);
        // Rows from m to the next multiple of 16 keep whatever the scratch
        // holds: a C row depends on its own A row only, and those rows are
        // never stored.
        for (int i = i0; i < i1; ++i)
            vec::to_bf16_pairs(x + size_t(i) * ldx, k, xq + size_t(i) * ldq);
        tm.barrier();
        amx::configure(config);
        int s, b, e;
        while (ranges.next(s, b, e)) {
            const Tiling& tl = plan.tl[s];
            const MatmulOut& o = outs[s];
            for (int t = b; t < e; ++t) {
                const int nt = t / tl.m_tiles, mt = t % tl.m_tiles;
                const int b0 = nt * tl.nc, b1 = std::min(tl.n_blocks, b0 + tl.nc);
                const int r1 = std::min(m, (mt + 1) * tl.mc);
                // Blocks of 32 rows (2 × 2 tiles) while more than 16 remain.
                for (int r = mt * tl.mc; r < r1;) {
                    const int rows = std::min(2 * amx16::kRows, r1 - r);
                    const uint16_t* a = xq + size_t(r) * ldq;
                    for (int blk = b0; blk < b1; ++blk) {
                        const int p = blk * kNpAmx;
                        const int col = p * kPanelRows;
                        const int cols = std::min(kNpAmx * kPanelRows, o.w->n - col);
                        const std::byte* w = o.w->data + size_t(p) * panel_bytes;
                        float* y = o.y + size_t(r) * o.ldy + col;
                        if (rows > amx16::kRows && cols > kPanelRows) {
                            amx16::tile_2x2(w, panel_bytes, a, ldq * 2, k, y, o.ldy,
                                            rows - amx16::kRows, cols);
                            continue;
                        }
                        for (int h = 0; h < rows; h += amx16::kRows) {
                            const int rh = std::min(amx16::kRows, rows - h);
                            float* yh = y + size_t(h) * o.ldy;
                            const uint16_t* ah = a + size_t(h) * ldq;
                            if (cols > kPanelRows)
                                amx16::tile<2>(w, panel_bytes, ah, ldq * 2, k, yh, o.ldy, rh, cols);
                            else
                                amx16::tile<1>(w, panel_bytes, ah, ldq * 2, k, yh, o.ldy, rh, cols);
                        }
                    }
                    r += rows;
                }
            }
        }
        amx::release();
    });
}

void matmul_bf16_amx(const PackedMatrix& w, const float* x, size_t ldx, int m, float* y, size_t ldy,
                     std::byte* scratch, int n_threads) {
    const MatmulOut o{&w, y, ldy};
    matmul_many_bf16_amx(&o, 1, x, ldx, m, scratch, n_threads);
}
#endif
#endif

// ---------------------------------------------------------------------------
// Packing one panel: source rows converted in column tiles of kPackTile, then
// transposed into the panel, so the tile and the panel steps it feeds stay in L1.
// ---------------------------------------------------------------------------

// tile [16][kPackTile] of T → out [cols][16] (out already offset to the tile's
// first column; any alignment, so elements are stored with memcpy).
template <class T>
void transpose_tile(const T* tile, size_t tile_ld, int cols, std::byte* out) {
    for (int c = 0; c < cols; ++c)
        for (int r = 0; r < kPanelRows; ++r)
            std::memcpy(out + (size_t(c) * kPanelRows + size_t(r)) * sizeof(T),
                        tile + size_t(r) * tile_ld + c, sizeof(T));
}

// n elements of a source row → the panel's element type.
template <Fmt F>
void convert_row(SrcType st, const std::byte* src, int n, float* fbuf, Elem<F>* out) {
    if constexpr (F == Fmt::f32) {
        src_to_f32_row(st, src, n, out);
    } else {
        constexpr SrcType kSame = F == Fmt::f16 ? SrcType::f16 : SrcType::bf16;
        if (st == kSame) {
            std::memcpy(out, src, size_t(n) * 2);
            return;
        }
        const float* f;
        if (st != SrcType::f32) {
            src_to_f32_row(st, src, n, fbuf);
            f = fbuf;
        } else {
            f = aligned_f32_row(src, n, fbuf);
        }
        if constexpr (F == Fmt::f16)
            f32_to_f16_row(f, n, out);
        else
            f32_to_bf16_row(f, n, out);
    }
}

template <Fmt F>
void pack_panel(SrcType st, const void* src, size_t ld, int rows, int k, std::byte* dst) {
    using T = Elem<F>;
    alignas(64) T tile[kPanelRows * kPackTile];  // [16][kPackTile]
    alignas(64) float fbuf[kPackTile];
    const auto* s = static_cast<const std::byte*>(src);
    const size_t esize = st == SrcType::f32 ? 4 : 2;
    for (int c0 = 0; c0 < k; c0 += kPackTile) {
        const int len = std::min(kPackTile, k - c0);
        const int len_even = (len + 1) / 2 * 2;
        for (int r = 0; r < kPanelRows; ++r) {
            T* row = tile + size_t(r) * kPackTile;
            if (r < rows)
                convert_row<F>(st, s + (size_t(r) * ld + size_t(c0)) * esize, len, fbuf, row);
            else
                std::memset(row, 0, size_t(len_even) * sizeof(T));
            if (F == Fmt::bf16 && len_even != len) row[len] = 0;  // k padded to even
        }
        if constexpr (F == Fmt::bf16)  // [k/2][16][2]: a pair along k moves as one uint32
            transpose_tile(reinterpret_cast<const uint32_t*>(tile), kPackTile / 2, len_even / 2,
                           dst + size_t(c0 / 2) * sizeof(Bf16PairStep));
        else  // [k][16]
            transpose_tile(tile, kPackTile, len, dst + size_t(c0) * sizeof(PanelStep<T>));
    }
}

}  // namespace

FormatKernels f32_kernels(const CpuFeatures& /*cpu*/) {
    return {matmul_one<Fmt::f32>, matmul_many<Fmt::f32>, pack_panel<Fmt::f32>};
}

FormatKernels f16_kernels(const CpuFeatures& /*cpu*/) {
    return {matmul_one<Fmt::f16>, matmul_many<Fmt::f16>, pack_panel<Fmt::f16>};
}

// The vdpbf16ps body where the layer and the CPU have it, else the convert path.
FormatKernels bf16_kernels(const CpuFeatures& cpu) {
#if STATICLM_VEC_BF16_DOT
#if defined(STATICLM_AMX)
    if (cpu.amx_int8 && cpu.amx_bf16 && cpu.avx512_bf16)
        return {matmul_bf16_amx, matmul_many_bf16_amx, pack_panel<Fmt::bf16>};
#endif
    if (cpu.avx512_bf16) return {matmul_bf16_dp, matmul_many_bf16_dp, pack_panel<Fmt::bf16>};
#endif
    (void)cpu;
    return {matmul_one<Fmt::bf16>, matmul_many<Fmt::bf16>, pack_panel<Fmt::bf16>};
}

}  // namespace staticlm::kernels::STATICLM_NS
