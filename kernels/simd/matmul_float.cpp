// Float-weight matmuls y[m][n] = x[m][k] · Wᵀ on the 16-row panels of kernels.hpp
// (f32, f16, bf16), compiled once per target: AVX-512 (+ an AVX512-BF16 body
// picked at run time), AVX2 (256-bit) and a generic xsimd body.
//
// Numerical contract:
//  - f32 / f16 / bf16 (convert path): every weight is converted exactly to fp32,
//    products x·w and sums are fp32 FMAs, one accumulator per output summed in
//    k order: y = fma(x[k-1], w[k-1], ... fma(x[0], w[0], 0)). Every tile shape
//    and thread split computes that same sum, so a row's result does not depend
//    on M, on its place in the tiles or on the thread count (the batched
//    runtime needs this: a row decoded among M rows equals the row alone).
//  - bf16 with vdpbf16ps (AVX512-BF16 CPUs): x is first rounded to bf16 (round
//    to nearest even, denormals flushed by the instruction), so each product
//    carries a relative error up to 2^-9 from x; products of bf16 pairs are
//    exact and accumulated in fp32 (two per instruction, round to nearest even).
#include <algorithm>
#include <array>
#include <cstring>
#include <utility>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "kernels/formats_internal.hpp"
#include "kernels/simd/simd.hpp"

namespace staticlm::kernels::STATICLM_NS {

namespace {

// ---------------------------------------------------------------------------
// Vector layer: V holds kLanes floats; a 16-row panel row is kVecPerPanel Vs.
// ---------------------------------------------------------------------------

#if defined(__AVX512F__) && defined(__AVX512BW__)
#define STATICLM_FLOAT_512 1
using V = __m512;
constexpr int kLanes = 16;
inline V vzero() { return _mm512_setzero_ps(); }
inline V vset1(float v) { return _mm512_set1_ps(v); }
inline V vfma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
inline V vadd(V a, V b) { return _mm512_add_ps(a, b); }
inline V vload(const float* p) { return _mm512_loadu_ps(p); }
// The maskz forms with a full mask compile to the plain instructions and avoid
// GCC 12's false -Wmaybe-uninitialized on _mm512_undefined_*() inside the
// unmasked intrinsics.
inline V vload(const uint16_t* p) {  // IEEE half
    return _mm512_maskz_cvtph_ps(__mmask16(0xffff),
                                 _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
// bf16 pairs [rows][2]: the even k is the low half of each 32-bit lane.
inline V vload_bf16(const uint16_t* p, bool odd) {
    const __m512i v = _mm512_loadu_si512(p);
    return _mm512_castsi512_ps(odd ? _mm512_and_si512(v, _mm512_set1_epi32(int(0xffff0000u)))
                                   : _mm512_maskz_slli_epi32(__mmask16(0xffff), v, 16));
}
inline void vstore(float* p, V v) { _mm512_storeu_ps(p, v); }
inline void vstore_part(float* p, V v, int n) {
    _mm512_mask_storeu_ps(p, __mmask16((1u << n) - 1), v);
}

#elif defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
using V = __m256;
constexpr int kLanes = 8;
inline V vzero() { return _mm256_setzero_ps(); }
inline V vset1(float v) { return _mm256_set1_ps(v); }
inline V vfma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
inline V vadd(V a, V b) { return _mm256_add_ps(a, b); }
inline V vload(const float* p) { return _mm256_loadu_ps(p); }
inline V vload(const uint16_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
inline V vload_bf16(const uint16_t* p, bool odd) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    return _mm256_castsi256_ps(odd ? _mm256_and_si256(v, _mm256_set1_epi32(int(0xffff0000u)))
                                   : _mm256_slli_epi32(v, 16));
}
inline void vstore(float* p, V v) { _mm256_storeu_ps(p, v); }
inline void vstore_part(float* p, V v, int n) {
    alignas(32) float tmp[kLanes];
    _mm256_store_ps(tmp, v);
    std::memcpy(p, tmp, size_t(n) * sizeof(float));
}

#else
using V = xsimd::batch<float, Arch>;
constexpr int kLanes = int(V::size);
inline V vzero() { return V(0.0f); }
inline V vset1(float v) { return V(v); }
inline V vfma(V a, V b, V c) { return xsimd::fma(a, b, c); }
inline V vadd(V a, V b) { return a + b; }
inline V vload(const float* p) { return V::load_unaligned(p); }
// Branch-free half -> float: shift the exponent/mantissa into place and rescale
// by 2^112 (exact, also for subnormals); inf/NaN get the full exponent back.
inline V vload(const uint16_t* p) {
    alignas(64) float tmp[kLanes];
    for (int i = 0; i < kLanes; ++i) {
        const uint32_t h = p[i];
        const uint32_t em = (h & 0x7fffu) << 13;
        float f;
        std::memcpy(&f, &em, 4);
        f *= 5.192296858534828e33f;  // 2^112
        uint32_t bits;
        std::memcpy(&bits, &f, 4);
        if ((h & 0x7c00u) == 0x7c00u) bits = 0x7f800000u | em;
        bits |= (h & 0x8000u) << 16;
        std::memcpy(&tmp[i], &bits, 4);
    }
    return V::load_aligned(tmp);
}
inline V vload_bf16(const uint16_t* p, bool odd) {
    alignas(64) float tmp[kLanes];
    for (int i = 0; i < kLanes; ++i) {
        const uint32_t bits = uint32_t(p[2 * i + (odd ? 1 : 0)]) << 16;
        std::memcpy(&tmp[i], &bits, 4);
    }
    return V::load_aligned(tmp);
}
inline void vstore(float* p, V v) { v.store_unaligned(p); }
inline void vstore_part(float* p, V v, int n) {
    alignas(64) float tmp[kLanes];
    v.store_aligned(tmp);
    std::memcpy(p, tmp, size_t(n) * sizeof(float));
}
#endif

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
#if defined(STATICLM_FLOAT_512)
constexpr int kMR = 12;
constexpr int kNP = 2;
#elif defined(__AVX2__)
constexpr int kMR = 6;
constexpr int kNP = 1;
#else
constexpr int kMR = 2;
constexpr int kNP = 1;
#endif
constexpr int kMinAcc = 8;
constexpr int kWidePanels = std::max(kNP, (kMinAcc + kVecPerPanel - 1) / kVecPerPanel);

// Cache blocking: an n-tile holds about kTileWeightBytes of packed weights
// (kept in L2 while every m micro-block of the tile streams over it); an m-tile
// is kMTileBlocks micro-blocks of x rows.
constexpr size_t kTileWeightBytes = 384 * 1024;
constexpr int kMTileBlocks = 8;
// Below this many multiply-adds a matmul runs on the calling thread: waking a
// team costs more than the work.
constexpr double kMinParallelMacs = 1 << 16;

int team_size(int n_threads, int n_tiles, int m, int n, int k) {
    const double macs = double(m) * double(n) * double(k);
    if (n_threads <= 1 || n_tiles <= 1 || macs < kMinParallelMacs) return 1;
    return std::min(n_threads, n_tiles);
}

enum class Fmt { f32, f16, bf16 };

template <Fmt F>
using Elem = std::conditional_t<F == Fmt::f32, float, uint16_t>;

// Weight vector v (0 .. kVecPerPanel-1) of panel row kk.
template <Fmt F>
inline V load_w(const Elem<F>* panel, int kk, int v) {
    if constexpr (F == Fmt::bf16)
        return vload_bf16(panel + size_t(kk / 2) * (2 * kPanelRows) + v * (2 * kLanes), kk & 1);
    else
        return vload(panel + size_t(kk) * kPanelRows + v * kLanes);
}

// Stores the kNP·16 outputs of one x row; only the first `cols` exist.
template <int NV>
inline void store_row(float* y, const V* acc, int cols) {
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) {
        const int c = v * kLanes;
        if (c + kLanes <= cols)
            vstore(y + c, acc[v]);
        else if (c < cols)
            vstore_part(y + c, acc[v], cols - c);
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
            for (int v = 0; v < NV; ++v) acc[u][r][v] = vzero();

    auto step = [&](int kk, V(&a)[MR][NV]) __attribute__((always_inline)) {
        V wv[NV];
#pragma GCC unroll 64
        for (int v = 0; v < NV; ++v)
            wv[v] = load_w<F>(wp + size_t(v / kVecPerPanel) * panel_elems, kk, v % kVecPerPanel);
#pragma GCC unroll 64
        for (int r = 0; r < MR; ++r) {
            const V xb = vset1(x[size_t(r) * ldx + kk]);
#pragma GCC unroll 64
            for (int v = 0; v < NV; ++v) a[r][v] = vfma(xb, wv[v], a[r][v]);
        }
    };

    const int k_main = k - k % kStep;
    for (int kk = 0; kk < k_main; kk += kStep) {
#pragma GCC unroll 8
        for (int u = 0; u < kStep; ++u) step(kk + u, acc[u % KU]);
    }
    for (int kk = k_main; kk < k; ++kk) step(kk, acc[0]);

#pragma GCC unroll 64
    for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 64
        for (int v = 0; v < NV; ++v)
#pragma GCC unroll 8
            for (int u = 1; u < KU; ++u) acc[0][r][v] = vadd(acc[0][r][v], acc[u][r][v]);
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
// each) × m-tiles of mc rows, numbered n-major so that a static split gives each
// thread a contiguous range of weight panels (decode) or of tiles (prefill).
struct Tiling {
    int n_panels, n_blocks, nc, n_tiles, mc, m_tiles;
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
              const Wide& wide, const std::byte* wdata, size_t panel_bytes, size_t panel_elems,
              const XAt& x_at, size_t ldx, int k, float* y, size_t ldy) {
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

template <Fmt F>
void matmul_impl(const PackedMatrix& w, const float* x, size_t ldx, int m, float* y, size_t ldy,
                 int n_threads) {
    if (m <= 0 || w.n <= 0) return;
    static constexpr auto kTiles = make_tiles<F>(std::make_index_sequence<kNP>{});
    static constexpr auto kWide = make_wide<F>(std::make_index_sequence<kWidePanels>{});
    const int kp = F == Fmt::bf16 ? padded_k(WeightType::bf16, w.k) : w.k;
    const size_t panel_elems = size_t(kp) * kPanelRows;
    const size_t panel_bytes = panel_elems * sizeof(Elem<F>);
    const Tiling tl(m, w.n, panel_bytes, kMR, kNP);
    const int n_tiles = tl.count();
    [[maybe_unused]] const int team = team_size(n_threads, n_tiles, m, w.n, w.k);
    auto x_at = [x, ldx](int i) { return x + size_t(i) * ldx; };
#pragma omp parallel for schedule(static) num_threads(team) if (team > 1)
    for (int t = 0; t < n_tiles; ++t)
        run_tile(tl, t, m, w.n, kMR, kNP, kTiles, kWide, w.data, panel_bytes, panel_elems, x_at, ldx,
                 w.k, y, ldy);
}

// ---------------------------------------------------------------------------
// AVX512-BF16: vdpbf16ps multiplies 16 lanes of (even k, odd k) bf16 pairs and
// adds both products to an fp32 lane, so a panel row pair [16][2] is one
// operand and x needs the same pairs: x is rounded to bf16 into scratch first.
// Same register tile as the fp32 AVX-512 body (12 × 2 panels, 24 accumulators).
// ---------------------------------------------------------------------------
#if defined(STATICLM_FLOAT_512)
#define STATICLM_BF16_TARGET __attribute__((target("avx512bf16")))

// One k pair j of the tile: acc[r][p] += xq[r][2j..2j+1] · panel p pair j.
// (A function, not a lambda: a lambda would not inherit the target attribute.)
template <int MR, int NP>
STATICLM_BF16_TARGET __attribute__((always_inline)) inline void dpbf16_step(const uint16_t* wp,
                                                                            size_t panel_elems,
                                                                            const uint16_t* xq,
                                                                            size_t ldq, int j,
                                                                            __m512 (&a)[MR][NP]) {
    __m512i wv[NP];
#pragma GCC unroll 64
    for (int p = 0; p < NP; ++p)
        wv[p] = _mm512_loadu_si512(wp + size_t(p) * panel_elems + size_t(j) * 2 * kPanelRows);
#pragma GCC unroll 64
    for (int r = 0; r < MR; ++r) {
        uint32_t pair;
        std::memcpy(&pair, xq + size_t(r) * ldq + 2 * size_t(j), 4);
        const __m512i xb = _mm512_set1_epi32(int(pair));
#pragma GCC unroll 64
        for (int p = 0; p < NP; ++p)
            a[r][p] = _mm512_dpbf16_ps(a[r][p], (__m512bh)xb, (__m512bh)wv[p]);
    }
}

// y[MR][cols] = xq[MR][kp] · Wᵀ; xq rows are bf16, ldq uint16 apart.
template <int MR, int NP>
STATICLM_BF16_TARGET void tile_dpbf16(const void* w, size_t panel_elems, const uint16_t* xq,
                                      size_t ldq, int k, float* y, size_t ldy, int cols) {
    constexpr int KU = 1;  // pairs summed in k order, as the convert path (row invariance)
    const uint16_t* wp = static_cast<const uint16_t*>(w);
    const int n_pairs = (k + 1) / 2;
    __m512 acc[KU][MR][NP];
#pragma GCC unroll 64
    for (int u = 0; u < KU; ++u)
#pragma GCC unroll 64
        for (int r = 0; r < MR; ++r)
#pragma GCC unroll 64
            for (int p = 0; p < NP; ++p) acc[u][r][p] = _mm512_setzero_ps();

    const int j_main = n_pairs - n_pairs % KU;
    for (int j = 0; j < j_main; j += KU) {
#pragma GCC unroll 8
        for (int u = 0; u < KU; ++u) dpbf16_step<MR, NP>(wp, panel_elems, xq, ldq, j + u, acc[u]);
    }
    for (int j = j_main; j < n_pairs; ++j) dpbf16_step<MR, NP>(wp, panel_elems, xq, ldq, j, acc[0]);

#pragma GCC unroll 64
    for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 64
        for (int p = 0; p < NP; ++p)
#pragma GCC unroll 8
            for (int u = 1; u < KU; ++u) acc[0][r][p] = _mm512_add_ps(acc[0][r][p], acc[u][r][p]);
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

// Row of x -> bf16 pairs, round to nearest even; the row is zero-padded to a
// whole number of 32-element chunks (within the 64-byte-aligned row stride).
STATICLM_BF16_TARGET void x_to_bf16(const float* x, int k, uint16_t* xq) {
    for (int c = 0; c < k; c += 32) {
        const int left = k - c;
        const __mmask16 lo = left >= 16 ? __mmask16(0xffff) : __mmask16((1u << left) - 1);
        const __mmask16 hi = left >= 32  ? __mmask16(0xffff)
                             : left > 16 ? __mmask16((1u << (left - 16)) - 1)
                                         : __mmask16(0);
        const __m512 a = _mm512_maskz_loadu_ps(lo, x + c);
        const __m512 b = _mm512_maskz_loadu_ps(hi, x + c + 16);
        _mm512_storeu_si512(xq + c, (__m512i)_mm512_cvtne2ps_pbh(b, a));
    }
}

void matmul_bf16_dp(const PackedMatrix& w, const float* x, size_t ldx, int m, float* y, size_t ldy,
                    std::byte* scratch, int n_threads) {
    if (m <= 0 || w.n <= 0) return;
    static constexpr auto kTiles = make_tiles_dpbf16(std::make_index_sequence<kNP>{});
    static constexpr auto kWide = make_wide_dpbf16(std::make_index_sequence<kWidePanels>{});
    const int kp = padded_k(WeightType::bf16, w.k);
    const size_t panel_elems = size_t(kp) * kPanelRows;
    const size_t panel_bytes = panel_elems * sizeof(uint16_t);
    const size_t ldq = detail::bf16_act_row_bytes(w.k) / sizeof(uint16_t);
    uint16_t* xq = reinterpret_cast<uint16_t*>(scratch);  // [m][ldq] bf16
    const Tiling tl(m, w.n, panel_bytes, kMR, kNP);
    const int n_tiles = tl.count();
    [[maybe_unused]] const int team = team_size(n_threads, n_tiles, m, w.n, w.k);
    auto x_at = [xq, ldq](int i) { return xq + size_t(i) * ldq; };
#pragma omp parallel num_threads(team) if (team > 1)
    {
#pragma omp for schedule(static)
        for (int i = 0; i < m; ++i) x_to_bf16(x + size_t(i) * ldx, w.k, xq + size_t(i) * ldq);
#pragma omp for schedule(static)
        for (int t = 0; t < n_tiles; ++t)
            run_tile(tl, t, m, w.n, kMR, kNP, kTiles, kWide, w.data, panel_bytes, panel_elems, x_at, ldq,
                     w.k, y, ldy);
    }
}
#endif

}  // namespace

void matmul_f32(const PackedMatrix& w, const float* x, size_t ldx, int m, float* y, size_t ldy,
                std::byte* /*scratch*/, int n_threads) {
    matmul_impl<Fmt::f32>(w, x, ldx, m, y, ldy, n_threads);
}

void matmul_f16(const PackedMatrix& w, const float* x, size_t ldx, int m, float* y, size_t ldy,
                std::byte* /*scratch*/, int n_threads) {
    matmul_impl<Fmt::f16>(w, x, ldx, m, y, ldy, n_threads);
}

void matmul_bf16(const PackedMatrix& w, const float* x, size_t ldx, int m, float* y, size_t ldy,
                 std::byte* /*scratch*/, int n_threads) {
    matmul_impl<Fmt::bf16>(w, x, ldx, m, y, ldy, n_threads);
}

MatmulFn matmul_bf16_for(const CpuFeatures& cpu) {
#if defined(STATICLM_FLOAT_512)
    if (cpu.avx512_bf16) return matmul_bf16_dp;
#endif
    (void)cpu;
    return matmul_bf16;
}

}  // namespace staticlm::kernels::STATICLM_NS
