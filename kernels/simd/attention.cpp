// Attention of a block of query rows over a static (full or ring) KV cache,
// compiled once per target against the vector layer (kernels/simd/vec.hpp).
// Work item: one kv head × up to 16 query lanes (query head × row pairs).
// Keys go in tiles on a grid of absolute positions with an online softmax
// (running max and sum per lane). A tile every lane of the item sees whole (all
// of decode; in prefill, every tile below the item's first row) is read once
// straight from the cache: each K/V row is converted once and used by blocks
// of up to 8 lanes whose scores and outputs stay in registers. Only the tiles
// on a prefill block's diagonal, and sliding windows, stage K/V as fp32.
// Numerical contract: fp32 throughout. q is multiplied by scale first (one
// fp32 rounding); scores are fp32 FMA dot products (per vector lane, then a
// pairwise horizontal sum); per tile the running max m, sum l and output
// accumulator are rescaled by exp(m_old - m_new); exp is vec::exp (xsimd's,
// ~1 ulp); out = acc / l. Both tile paths do a lane's operations in the same
// order, so a row gives the same bits decoded or prefilled. f16 K/V convert
// exactly (F16C / AVX-512 where compiled); a q8 value converts to fp32 as
// q · scale (one rounding), and the arithmetic after that is the float path's.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "kernels/simd/schedule.hpp"
#include "kernels/simd/simd.hpp"
#include "kernels/simd/vec.hpp"

#include "kernels/attention_internal.hpp"

namespace staticlm::kernels::STATICLM_NS {

namespace {

using vec::F;
constexpr int kW = vec::kLanes;
static_assert(detail::kAttnVector % kW == 0, "padding must be a multiple of the vector width");
constexpr float kNegInf = -std::numeric_limits<float>::infinity();
using detail::kAttnMaxLanes;
// Most threads one item's key range is split over (bounds merge_lane's stack array).
constexpr int kMaxSplit = 64;

// Scale of the q8 block holding element e of a row of n values.
inline float q8_scale(const int8_t* row, int n, int e) {
    float s;
    std::memcpy(&s, row + n + size_t(e / kKvQ8Block) * sizeof(float), sizeof(float));
    return s;
}
static_assert(kKvQ8Block % kW == 0, "a vector chunk of a q8 row lies in one block");

// One cache row (n elements) as fp32, zero padded to d_pad, in chunks of kW:
// chunk ci (elements ci·kW ..) goes to dst + ci·stride (stride kW: a plain row).
void load_row(const void* src, KvType type, int n, int d_pad, float* dst, size_t stride) {
    const float* sf = static_cast<const float*>(src);
    const uint16_t* sh = static_cast<const uint16_t*>(src);
    const int8_t* sq = static_cast<const int8_t*>(src);
    int e = 0;
    for (; e + kW <= n; e += kW) {
        float* out = dst + size_t(e / kW) * stride;
        if (type == KvType::f32)
            vec::store(out, vec::load(sf + e));
        else if (type == KvType::f16)
            vec::store(out, vec::load(sh + e));
        else
            vec::store(out, vec::mul(vec::load_i8(sq + e), vec::set1(q8_scale(sq, n, e))));
    }
    for (; e < d_pad; ++e) {
        const float x = e >= n                ? 0.0f
                        : type == KvType::f32 ? sf[e]
                        : type == KvType::f16 ? f16_to_f32(sh[e])
                                              : float(sq[e]) * q8_scale(sq, n, e);
        dst[size_t(e / kW) * stride + size_t(e % kW)] = x;
    }
}

// s[0..kW) = q · k_j for the kW keys of one K sub-block, stored chunk-major
// ([d_pad/kW][kW keys][kW]) so that every load is a constant offset from one
// pointer; kW independent accumulators also hide the FMA latency.
inline void score_block(const float* q, const float* kt, int d_pad, float* s) {
    F acc[kW];
    for (int j = 0; j < kW; ++j) acc[j] = vec::zero();
    for (int c = 0; c < d_pad; c += kW, kt += kW * kW) {
        const F qv = vec::load(q + c);
        for (int j = 0; j < kW; ++j) acc[j] = vec::fma(qv, vec::load(kt + j * kW), acc[j]);
    }
    // out[j] = Σ of the lanes of acc[j]: one transpose-and-add tree for kW keys.
    vec::hsum_rows(acc, s);
}

// acc[c .. c + NV·kW) += Σ_{j0 <= j < j1} p[j] · v_j[c ..]: NV accumulators stay
// in registers across the keys (NV = 8 fits the 16 AVX2 registers).
template <int NV>
inline void pv_block(float* acc, const float* vt, int d_pad, const float* p, int j0, int j1, int c) {
    F a[NV];
    for (int v = 0; v < NV; ++v) a[v] = vec::load(acc + c + v * kW);
    for (int j = j0; j < j1; ++j) {
        const F pj = vec::set1(p[j]);
        const float* row = vt + size_t(j) * d_pad + c;
        for (int v = 0; v < NV; ++v) a[v] = vec::fma(pj, vec::load(row + v * kW), a[v]);
    }
    for (int v = 0; v < NV; ++v) vec::store(acc + c + v * kW, a[v]);
}

void pv(float* acc, const float* vt, int d_pad, const float* p, int j0, int j1) {
    int c = 0;
    for (; c + 8 * kW <= d_pad; c += 8 * kW) pv_block<8>(acc, vt, d_pad, p, j0, j1, c);
    const int rest = (d_pad - c) / kW;
    if (rest & 4) pv_block<4>(acc, vt, d_pad, p, j0, j1, c), c += 4 * kW;
    if (rest & 2) pv_block<2>(acc, vt, d_pad, p, j0, j1, c), c += 2 * kW;
    if (rest & 1) pv_block<1>(acc, vt, d_pad, p, j0, j1, c);
}

// The online-softmax step of one lane over the scores of a tile, s[0 .. nv·kW)
// (keys the lane does not see are -inf): the running max and sum ml = {m, l}
// advance, s becomes the weights exp(s - m_new), and the factor that rescales
// the lane's accumulator is returned (0 on the lane's first tile, m = -inf).
// Both paths take this step, so a lane's weights do not depend on the path.
float softmax_tile(float* s, int nv, float* ml) {
    F mx = vec::load(s);
    for (int v = 1; v < nv; ++v) mx = vec::max(mx, vec::load(s + v * kW));
    const float m_new = std::max(ml[0], vec::hmax(mx));  // finite: the tile has a visible key
    const F mv = vec::set1(m_new);
    F sum = vec::zero();
    for (int v = 0; v < nv; ++v) {
        const F e = vec::exp(vec::sub(vec::load(s + v * kW), mv));
        vec::store(s + v * kW, e);
        sum = vec::add(sum, e);
    }
    const float corr = std::exp(ml[0] - m_new);
    ml[1] = ml[1] * corr + vec::hsum(sum);
    ml[0] = m_new;
    return corr;
}

// Shapes and scratch of one call. Lanes of kv head g are numbered
// l = i·group + (h mod group) (query row major), so a work item's lanes are
// consecutive rows and its key range is the union of theirs.
struct Ctx {
    const AttentionArgs* a = nullptr;
    int group = 0;        // query heads per kv head
    int lanes_per_g = 0;  // group · t
    int item_lanes = 0;   // lanes per work item (<= kAttnMaxLanes)
    int chunks = 0;       // work items per kv head
    int n_items = 0;
    int d_pad = 0;
    int tile = 0;
    int stile = 0;  // keys per tile of the shared-range path
    detail::AttnScratchLayout lay;
    float* scratch = nullptr;  // [n_threads][lay.floats]

    float* thread_scratch(int tid) const { return scratch + size_t(tid) * lay.floats; }
};

struct Item {
    int g = 0;
    int n = 0;                     // lanes
    int row[kAttnMaxLanes] = {};   // query row i
    int head[kAttnMaxLanes] = {};  // query head h
    int lo[kAttnMaxLanes] = {};    // first visible position
    int hi[kAttnMaxLanes] = {};    // last visible position (= pos0 + i)
};

Item make_item(const Ctx& c, int idx) {
    const AttentionArgs& a = *c.a;
    Item it;
    it.g = idx / c.chunks;
    const int lane0 = (idx % c.chunks) * c.item_lanes;
    it.n = std::min(c.item_lanes, c.lanes_per_g - lane0);
    for (int r = 0; r < it.n; ++r) {
        const int l = lane0 + r;
        it.row[r] = l / c.group;
        it.head[r] = it.g * c.group + l % c.group;
        it.hi[r] = a.pos0 + it.row[r];
        it.lo[r] = a.window > 0 ? std::max(0, it.hi[r] - a.window + 1) : 0;
    }
    return it;
}

void init_lanes(const Ctx& c, const Item& it, float* ts) {
    const AttentionArgs& a = *c.a;
    const int d = a.head_dim;
    for (int r = 0; r < it.n; ++r) {
        const float* q = a.q + size_t(it.row[r]) * a.ldq + size_t(it.head[r]) * d;
        float* qs = ts + c.lay.qs + size_t(r) * c.d_pad;
        for (int e = 0; e < d; ++e) qs[e] = q[e] * a.scale;
        for (int e = d; e < c.d_pad; ++e) qs[e] = 0.0f;
        std::fill_n(ts + c.lay.acc + size_t(r) * c.d_pad, c.d_pad, 0.0f);
        ts[c.lay.ml + 2 * r] = kNegInf;
        ts[c.lay.ml + 2 * r + 1] = 0.0f;
    }
}

// Runs the item's lanes over cache positions [kbeg, kend), updating their
// running max, sum and accumulator in ts.
void process_keys(const Ctx& c, const Item& it, float* ts, int kbeg, int kend) {
    const AttentionArgs& a = *c.a;
    const int d = a.head_dim, d_pad = c.d_pad, tile = c.tile;
    const size_t kv_base = size_t(it.g) * size_t(a.n_slots);
    const size_t row_bytes = kv_row_bytes(a.kv_type, d);
    const auto* kc = static_cast<const std::byte*>(a.k);
    const auto* vc = static_cast<const std::byte*>(a.v);
    float* kt = ts + c.lay.kt;
    float* vt = ts + c.lay.vt;
    // Tiles sit on a grid of absolute positions (keys before kbeg are loaded
    // and masked), so a key lands in the same vector lane whichever rows share
    // the item: a decode row and the same row inside a prefill block (whose
    // item starts at its first row's window) sum in the same order.
    for (int kb = kbeg - kbeg % tile; kb < kend; kb += tile) {
        const int nk = std::min(tile, kend - kb);
        int slot = kb % a.n_slots;
        for (int j = 0; j < nk; ++j) {
            const size_t off = (kv_base + size_t(slot)) * row_bytes;
            load_row(kc + off, a.kv_type, d, d_pad, kt + size_t(j / kW) * kW * d_pad + (j % kW) * kW,
                     size_t(kW) * kW);
            load_row(vc + off, a.kv_type, d, d_pad, vt + size_t(j) * d_pad, kW);
            if (++slot == a.n_slots) slot = 0;
        }
        const int n_sb = (nk + kW - 1) / kW;
        for (int r = 0; r < it.n; ++r) {
            const int jlo = std::max(it.lo[r] - kb, 0);
            const int jhi = std::min(it.hi[r] - kb, nk - 1);
            if (jlo > jhi) continue;  // no visible key of this lane in the tile
            float* s = ts + c.lay.pt + size_t(r) * tile;
            const float* q = ts + c.lay.qs + size_t(r) * d_pad;
            for (int sb = 0; sb < n_sb; ++sb)
                score_block(q, kt + size_t(sb) * kW * d_pad, d_pad, s + sb * kW);
            // Keys outside the lane's window, and stale rows past nk, weigh 0.
            if (jlo > 0 || jhi < n_sb * kW - 1)
                for (int j = 0; j < n_sb * kW; ++j)
                    if (j < jlo || j > jhi) s[j] = kNegInf;
            float* acc = ts + c.lay.acc + size_t(r) * d_pad;
            const float corr = softmax_tile(s, n_sb, ts + c.lay.ml + 2 * r);
            if (corr != 1.0f) {
                const F cv = vec::set1(corr);
                for (int e = 0; e < d_pad; e += kW) vec::store(acc + e, vec::mul(vec::load(acc + e), cv));
            }
            pv(acc, vt, d_pad, s, jlo, jhi + 1);
        }
    }
}

// ---- Shared key range (decode): every lane of the item sees the same keys. ----
// Nothing is staged: each K row is converted once and dotted with all the
// lanes' queries, each V row chunk is converted once and accumulated into all
// the lanes' outputs held in registers, and the max/exp/rescale runs once per
// lane per attn_shared_tile_keys keys.

// Output registers of one pv_tile call: AVX-512 has 32 registers (16 kept for
// V chunks and broadcasts), AVX2/SSE 16 (8 kept). NG heads × NC chunks ≤ this,
// and ≥ 8 independent FMA chains cover the FMA latency (4) × 2 pipes.
constexpr int kAccRegs = kW == 16 ? 16 : 8;
// Most lanes one score/pv block serves (8 accumulators + K chunk + q fit AVX2).
constexpr int kMaxBlockHeads = 8;

// Elements e .. e + kW of a row of d values (e + kW <= d).
inline F load_kv(const float* row, int e, int) { return vec::load(row + e); }
inline F load_kv(const uint16_t* row, int e, int) { return vec::load(row + e); }
inline F load_kv(const int8_t* row, int e, int d) {
    return vec::mul(vec::load_i8(row + e), vec::set1(q8_scale(row, d, e)));
}
inline float to_f32(const float* row, int e, int) { return row[e]; }
inline float to_f32(const uint16_t* row, int e, int) { return f16_to_f32(row[e]); }
inline float to_f32(const int8_t* row, int e, int d) { return float(row[e]) * q8_scale(row, d, e); }
// Row elements in T units from one row to the next (q8: values and scales).
template <class T>
constexpr size_t row_len(int d) {
    return kv_row_bytes(std::is_same_v<T, float> ? KvType::f32 : std::is_same_v<T, uint16_t> ? KvType::f16 : KvType::q8, d) /
           sizeof(T);
}
// Elements e .. d - 1 (fewer than kW), zero filled: a row's tail when
// head_dim % kW != 0 (never read past the row: the last row may end the cache).
template <class T>
inline F load_kv_part(const T* row, int e, int d) {
    alignas(64) float tmp[kW] = {};
    for (int i = 0; i < d - e; ++i) tmp[i] = to_f32(row, e + i, d);
    return vec::load(tmp);
}

// Partial dot products of NH lanes with KJ consecutive keys (rows row_len apart),
// one vector per (lane, key), stored to red[h][jj + key]: KJ keys share each
// q load and give NH·KJ independent FMA chains.
template <int NH, int KJ, class T>
inline void score_keys(const float* q, int d_pad, const T* k, int d, float* red, int jj) {
    const int d_full = d / kW * kW;
    const size_t ld = row_len<T>(d);
    F acc[KJ][NH];
    for (int j = 0; j < KJ; ++j)
        for (int h = 0; h < NH; ++h) acc[j][h] = vec::zero();
    int e = 0;
    for (; e < d_full; e += kW) {
        F kv[KJ];
        for (int j = 0; j < KJ; ++j) kv[j] = load_kv(k + size_t(j) * ld, e, d);
        for (int h = 0; h < NH; ++h) {
            const F qv = vec::load(q + size_t(h) * d_pad + e);
            for (int j = 0; j < KJ; ++j) acc[j][h] = vec::fma(qv, kv[j], acc[j][h]);
        }
    }
    if (e < d) {
        for (int j = 0; j < KJ; ++j) {
            const F kv = load_kv_part(k + size_t(j) * ld, e, d);
            for (int h = 0; h < NH; ++h) acc[j][h] = vec::fma(vec::load(q + size_t(h) * d_pad + e), kv, acc[j][h]);
        }
    }
    for (int j = 0; j < KJ; ++j)
        for (int h = 0; h < NH; ++h) vec::store(red + (h * kW + jj + j) * kW, acc[j][h]);
}

// s[h][j] = q_h · k_j for NH lanes and keys j < nk of a tile (rows row_len<T>(d) apart).
// q: [NH][d_pad] scaled queries (stride d_pad); s: [NH][stile]; red: [NH][kW][kW].
// Partial sums are parked in red and every kW keys reduced by hsum_rows;
// entries nk .. round_up(nk, kW) are left stale. With prefetch (the item's
// first lane block), each group of keys scored together first prefetches its
// own V rows (pv_tile reads them after the whole tile is scored, and with wide
// heads in several passes of row strides that the hardware prefetchers do not
// follow) and the K rows kPrefetchKeys ahead, up to `ahead` keys from the
// tile's first (the keys of this call's range, [kb, kend), that follow
// contiguously). K and V then come in as one steady stream instead of two that
// restart every tile, a few rows per group rather than a burst per kW keys.
//
// Measured (Xeon model 207 VM, avx512-vnni, 2 threads, `bench_kernels
// --benchmark_filter='^attn_decode/hd(64|128)/q32kv8/ctx16384'`, alternated
// with the build before, which prefetched V only when a lane block's pv_tile
// needed several passes: there, for 4-lane items, head_dim > 64, 2026-12-04):
// d64 f16 14.3 -> 18.3 GB/s, q8 10.8 -> 14.6; d128 f16 15.3 -> 18.3, q8 12.2
// -> 13.9; 32 or 64 keys ahead was no better than 16 (d64 q8 12.2 and 11.7).
// Spreading the prefetches over the groups instead of a burst of 2 × kW rows
// at each kW keys (Xeon VM with AMX, the same rows with --mean and K/V
// rotated through about 1 GiB, three alternated rounds, 2026-12-05): d64 f16
// 21.2-21.9 -> 24.6-24.9 GB/s, q8 15.7-18.1 -> 16.9-19.5; d128 f16 19.9-20.7
// -> 23.8-24.5, q8 17.8-18.0 -> 21.4-21.5. 4, 8 or 32 keys ahead, other
// hints and a second (L2) level: no better (docs/PERFORMANCE.md).
constexpr int kPrefetchKeys = 16;

// One cache line into L1. Inline asm on x86-64: at -O3 GCC 12 deleted the
// whole loop of prefetch_rows when it was written with __builtin_prefetch and
// an early return (a loop with no other effect), which silently lost the
// gain measured above.
inline void prefetch_line(const char* p) {
#if defined(__x86_64__)
    asm volatile("prefetcht0 %0" : : "m"(*p));
#else
    __builtin_prefetch(p, 0, 3);
#endif
}

// Prefetches rows [r0, r1) of a cache (rows ld elements apart) into L1.
template <class T>
inline void prefetch_rows(const T* base, size_t ld, int r0, int r1) {
    if (r0 >= r1) return;
    const char* b0 = reinterpret_cast<const char*>(base + size_t(r0) * ld);
    const size_t bytes = size_t(r1 - r0) * ld * sizeof(T);
    for (size_t b = 0; b < bytes; b += 64) prefetch_line(b0 + b);
}

// Before scoring keys [j, j + n): their V rows and the K rows kPrefetchKeys
// further on, both clipped to the `ahead` contiguous keys.
template <class T>
inline void prefetch_keys(const T* k, const T* v, size_t ld, int j, int n, int ahead) {
    prefetch_rows(k, ld, j + kPrefetchKeys, std::min(ahead, j + kPrefetchKeys + n));
    prefetch_rows(v, ld, j, std::min(ahead, j + n));
}

template <int NH, class T>
void score_tile(const float* q, int d_pad, const T* k, const T* v, int d, int nk, float* s,
                int stile, float* red, bool prefetch, int ahead) {
    constexpr int kKeys = std::min(4, kAccRegs / NH);
    const size_t ld = row_len<T>(d);
    for (int j0 = 0; j0 < nk; j0 += kW) {
        const int nj = std::min(kW, nk - j0);
        const T* kr = k + size_t(j0) * ld;
        int jj = 0;
        for (; jj + kKeys <= nj; jj += kKeys) {
            if (prefetch) prefetch_keys(k, v, ld, j0 + jj, kKeys, ahead);
            score_keys<NH, kKeys>(q, d_pad, kr + size_t(jj) * ld, d, red, jj);
        }
        for (; jj < nj; ++jj) {
            if (prefetch) prefetch_keys(k, v, ld, j0 + jj, 1, ahead);
            score_keys<NH, 1>(q, d_pad, kr + size_t(jj) * ld, d, red, jj);
        }
        for (int h = 0; h < NH; ++h) {
            F rows[kW];
            for (int i = 0; i < kW; ++i) rows[i] = vec::load(red + (h * kW + i) * kW);
            vec::hsum_rows(rows, s + size_t(h) * stile + j0);
        }
    }
}

// acc[h][e0 .. e0 + NC·kW) = corr[h] · acc[h][..] + Σ_{j < nk} p[h][j] · v_j[..] for
// NG lanes: V chunks converted once, NG × NC accumulators in registers.
// acc: [NG][d_pad]; p: [NG][stile]; v rows row_len<T>(d) apart; kPart: one chunk of the
// row's last d - e0 < kW elements.
template <int NG, int NC, bool kPart, class T>
void pv_tile(float* acc, int d_pad, const float* p, int stile, const float* corr, const T* v,
             int d, int nk, int e0) {
    F a[NG][NC];
    for (int h = 0; h < NG; ++h) {
        const F cv = vec::set1(corr[h]);
        for (int c = 0; c < NC; ++c) a[h][c] = vec::mul(vec::load(acc + size_t(h) * d_pad + e0 + c * kW), cv);
    }
    const T* vr = v;
    const size_t ld = row_len<T>(d);
    // One V chunk live at a time: converting all NC first spilled on AVX2 (NG 1, NC 8).
    for (int j = 0; j < nk; ++j, vr += ld) {
        for (int c = 0; c < NC; ++c) {
            const F vv = kPart ? load_kv_part(vr, e0, d) : load_kv(vr, e0 + c * kW, d);
            for (int h = 0; h < NG; ++h)
                a[h][c] = vec::fma(vec::set1(p[size_t(h) * stile + j]), vv, a[h][c]);
        }
    }
    for (int h = 0; h < NG; ++h)
        for (int c = 0; c < NC; ++c) vec::store(acc + size_t(h) * d_pad + e0 + c * kW, a[h][c]);
}

// pv_tile over all of head_dim for NG lanes: chunks of kAccRegs / NG vectors,
// then the remainder by powers of two, then a partial chunk.
template <int NG, int NC, class T>
void pv_rest(float* acc, int d_pad, const float* p, int stile, const float* corr, const T* v,
             int d, int nk, int& e0, int rest) {
    if constexpr (NC >= 1) {
        if (rest & NC) {
            pv_tile<NG, NC, false>(acc, d_pad, p, stile, corr, v, d, nk, e0);
            e0 += NC * kW;
        }
        pv_rest<NG, NC / 2>(acc, d_pad, p, stile, corr, v, d, nk, e0, rest);
    }
}

template <int NG, class T>
void pv_heads(float* acc, int d_pad, const float* p, int stile, const float* corr, const T* v,
              int d, int nk) {
    constexpr int kNC = kAccRegs / NG;
    const int n_full = d / kW;
    int e0 = 0;
    for (; e0 + kNC * kW <= n_full * kW; e0 += kNC * kW)
        pv_tile<NG, kNC, false>(acc, d_pad, p, stile, corr, v, d, nk, e0);
    pv_rest<NG, kNC / 2>(acc, d_pad, p, stile, corr, v, d, nk, e0, n_full - e0 / kW);
    if (e0 < d) pv_tile<NG, 1, true>(acc, d_pad, p, stile, corr, v, d, nk, e0);
}

// Lanes are taken in blocks of 8, 4, 2, 1 (fixed register counts per block).
template <class Fn>
void for_lane_blocks(int n, Fn&& fn) {
    for (int h0 = 0; h0 < n;) {
        const int left = n - h0;
        const int nh = left >= 8 ? 8 : left >= 4 ? 4 : left >= 2 ? 2 : 1;
        fn(h0, nh);
        h0 += nh;
    }
}

template <class T>
void process_shared(const Ctx& c, const Item& it, float* ts, int kbeg, int kend) {
    static_assert(kMaxBlockHeads == 8, "for_lane_blocks takes blocks of at most 8 lanes");
    const AttentionArgs& a = *c.a;
    const int d = a.head_dim, d_pad = c.d_pad, stile = c.stile, n = it.n;
    const size_t ld = row_len<T>(d);
    const T* kc = static_cast<const T*>(a.k) + size_t(it.g) * size_t(a.n_slots) * ld;
    const T* vc = static_cast<const T*>(a.v) + size_t(it.g) * size_t(a.n_slots) * ld;
    const float* qs = ts + c.lay.qs;  // [lanes][d_pad]
    float* acc = ts + c.lay.acc;      // [lanes][d_pad]
    float* ps = ts + c.lay.ps;        // [lanes][stile]
    float* red = ts + c.lay.red;      // [8][kW][kW]
    float* ml = ts + c.lay.ml;        // [lanes][2]
    float corr[kAttnMaxLanes];
    for (int kb = kbeg; kb < kend;) {
        // A tile never wraps around the ring, so its rows are contiguous, and
        // so are the `ahead` keys of the item from its first on.
        const int slot = kb % a.n_slots;
        const int ahead = std::min(kend - kb, a.n_slots - slot);
        const int nk = std::min(stile, ahead);
        const T* kt = kc + size_t(slot) * ld;
        const T* vt = vc + size_t(slot) * ld;
        for_lane_blocks(n, [&](int h0, int nh) {
            const float* q = qs + size_t(h0) * d_pad;
            float* s = ps + size_t(h0) * stile;
            switch (nh) {
                case 8: score_tile<8>(q, d_pad, kt, vt, d, nk, s, stile, red, h0 == 0, ahead); break;
                case 4: score_tile<4>(q, d_pad, kt, vt, d, nk, s, stile, red, h0 == 0, ahead); break;
                case 2: score_tile<2>(q, d_pad, kt, vt, d, nk, s, stile, red, h0 == 0, ahead); break;
                default: score_tile<1>(q, d_pad, kt, vt, d, nk, s, stile, red, h0 == 0, ahead); break;
            }
        });
        const int nv = (nk + kW - 1) / kW;
        for (int r = 0; r < n; ++r) {
            float* s = ps + size_t(r) * stile;
            for (int j = nk; j < nv * kW; ++j) s[j] = kNegInf;
            corr[r] = softmax_tile(s, nv, ml + 2 * r);
        }
        for_lane_blocks(n, [&](int h0, int nh) {
            float* o = acc + size_t(h0) * d_pad;
            const float* p = ps + size_t(h0) * stile;
            switch (nh) {
                case 8: pv_heads<8>(o, d_pad, p, stile, corr + h0, vt, d, nk); break;
                case 4: pv_heads<4>(o, d_pad, p, stile, corr + h0, vt, d, nk); break;
                case 2: pv_heads<2>(o, d_pad, p, stile, corr + h0, vt, d, nk); break;
                default: pv_heads<1>(o, d_pad, p, stile, corr + h0, vt, d, nk); break;
            }
        });
        kb += nk;
    }
}

// Runs the item's lanes over cache positions [kbeg, kend).
void process_item(const Ctx& c, const Item& it, float* ts, int kbeg, int kend) {
    // The shared-range path tiles keys from position 0 like prefill items do,
    // so decode and prefill give identical rows under full attention. Sliding
    // windows start their tiles at each row's window start (prefill) and wrap
    // in ring caches: they keep the staged path, which matches prefill exactly.
    if (c.a->window > 0) {
        process_keys(c, it, ts, kbeg, kend);
        return;
    }
    // Full attention: every lane sees the keys up to its first row's position
    // hi[0], so the tiles wholly below it take the shared-range path (K/V read
    // straight from the cache, lanes register-blocked); a decode block (all
    // rows alike) runs there whole, a prefill block only its diagonal tiles
    // through the staged path. Both paths do a lane's fp32 operations in the
    // same order per tile, so where the boundary falls does not change a bit.
    const int split = it.hi[0] == it.hi[it.n - 1]
                          ? kend
                          : std::clamp((it.hi[0] + 1) / c.tile * c.tile, kbeg, kend);
    if (split > kbeg) {
        if (c.a->kv_type == KvType::f16)
            process_shared<uint16_t>(c, it, ts, kbeg, split);
        else if (c.a->kv_type == KvType::q8)
            process_shared<int8_t>(c, it, ts, kbeg, split);
        else
            process_shared<float>(c, it, ts, kbeg, split);
    }
    if (split < kend) process_keys(c, it, ts, split, kend);
}

void write_out(const Ctx& c, const Item& it, const float* ts) {
    const AttentionArgs& a = *c.a;
    const int d = a.head_dim;
    for (int r = 0; r < it.n; ++r) {
        const float* acc = ts + c.lay.acc + size_t(r) * c.d_pad;
        const float inv = 1.0f / ts[c.lay.ml + 2 * r + 1];
        float* o = a.out + size_t(it.row[r]) * a.ldo + size_t(it.head[r]) * d;
        for (int e = 0; e < d; ++e) o[e] = acc[e] * inv;
    }
}

// Lane r of item `idx` from n_split partial results held by the threads
// idx·n_split .. idx·n_split + n_split - 1 (standard log-sum-exp merge).
void merge_lane(const Ctx& c, int idx, int r, int n_split) {
    const AttentionArgs& a = *c.a;
    const Item it = make_item(c, idx);
    float m_all = kNegInf;
    for (int s = 0; s < n_split; ++s)
        m_all = std::max(m_all, c.thread_scratch(idx * n_split + s)[c.lay.ml + 2 * r]);
    float w[kMaxSplit];
    float l_all = 0.0f;
    for (int s = 0; s < n_split; ++s) {
        const float* ts = c.thread_scratch(idx * n_split + s);
        w[s] = std::exp(ts[c.lay.ml + 2 * r] - m_all);  // 0 for an empty part
        l_all += ts[c.lay.ml + 2 * r + 1] * w[s];
    }
    const int d = a.head_dim;
    float* o = a.out + size_t(it.row[r]) * a.ldo + size_t(it.head[r]) * d;
    for (int e = 0; e < d; ++e) o[e] = 0.0f;
    for (int s = 0; s < n_split; ++s) {
        if (w[s] == 0.0f) continue;
        const float* acc = c.thread_scratch(idx * n_split + s) + c.lay.acc + size_t(r) * c.d_pad;
        const float ws = w[s] / l_all;
        for (int e = 0; e < d; ++e) o[e] += acc[e] * ws;
    }
}

// The body of the parallel region. nt is the thread count asked for (the
// layout of items and key splits follows from it, so the result does not
// depend on how many threads the pool gave: team.size() may be smaller);
// `items` hands out the work items one at a time.
void run(const Ctx& c, int nt, const Team& team, IndexQueue& items) {
    if (nt <= 1 || c.n_items >= nt) {
        for (long i; items.next(i);) {
            const int idx = int(i);
            float* ts = c.thread_scratch(team.tid());
            const Item it = make_item(c, idx);
            init_lanes(c, it, ts);
            process_item(c, it, ts, it.lo[0], it.hi[it.n - 1] + 1);
            write_out(c, it, ts);
        }
        return;
    }
    // Fewer lanes than threads (decode of one query head per kv head on many
    // threads): each item's key range is split over n_split threads, and the
    // partial (max, sum, acc) are merged after a barrier. The merge reorders
    // the sums, so such rows are not bit-identical to the same rows prefilled;
    // attention() avoids this path whenever there are enough lanes.
    const int n_split = std::min(nt / c.n_items, kMaxSplit);
    // Part tid of the nt parts, each team thread taking every size()-th.
    for (int tid = team.tid(); tid < c.n_items * n_split; tid += team.size()) {
        const int idx = tid / n_split, part = tid % n_split;
        float* ts = c.thread_scratch(tid);
        const Item it = make_item(c, idx);
        init_lanes(c, it, ts);
        const int kbeg = it.lo[0], kend = it.hi[it.n - 1] + 1;
        const int k0 = kbeg - kbeg % c.tile;  // parts start on the tile grid
        const int per = ((kend - k0 + n_split - 1) / n_split + c.tile - 1) / c.tile * c.tile;
        const int b = std::max(kbeg, k0 + part * per), e = std::min(kend, k0 + (part + 1) * per);
        if (b < e) process_item(c, it, ts, b, e);
    }
    team.barrier();
    const int total = c.n_items * c.item_lanes;
    int x0, x1;
    detail::split(total, team.size(), team.tid(), x0, x1);
    for (int x = x0; x < x1; ++x) {
        const int idx = x / c.item_lanes, r = x % c.item_lanes;
        if (r < make_item(c, idx).n) merge_lane(c, idx, r, n_split);
    }
}

}  // namespace

void attention(const AttentionArgs& args, std::byte* scratch, int n_threads) {
    detail::check_attention_args(args);
    if (args.t == 0) return;
    Ctx c;
    c.a = &args;
    c.group = args.n_heads / args.n_kv_heads;
    c.lanes_per_g = c.group * args.t;
    // The item layout (detail::attn_items): lanes split over items, never keys,
    // unless there are fewer items than threads.
    const int nt = std::max(1, n_threads);
    const detail::AttnItems items_layout = detail::attn_items(args.t, args.n_heads, args.n_kv_heads, nt);
    c.item_lanes = items_layout.item_lanes;
    c.chunks = items_layout.chunks;
    c.n_items = items_layout.n_items;
    c.d_pad = detail::attn_padded_dim(args.head_dim);
    c.tile = detail::attn_tile_keys(args.head_dim);
    c.stile = detail::attn_shared_tile_keys(args.head_dim);
    c.lay = detail::attn_scratch_layout(args.head_dim);
    c.scratch = reinterpret_cast<float*>(scratch);
    IndexQueue items(c.n_items);
    parallel(nt, [&](const Team& team) { run(c, nt, team, items); });
}

}  // namespace staticlm::kernels::STATICLM_NS
