// Attention benchmarks on an f16 static cache: decode (one query row, GB/s of
// K/V read vs read bandwidth) and a prefill block of kPrefillRows rows (GOPS vs
// the fp32 FMA peak) at contexts 512, 2048, 8192; the same on a q8 cache
// (names ending /q8; GB/s of the q8 bytes read) for head_dim 64, 128 and 256;
// long-context decode at 4096 and 16384 for head_dim 64 and 128, f16 and q8.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "bench_common.hpp"

namespace staticlm::bench {
namespace {

// Head layouts: Llama-3.2-1B (32 q / 8 kv × 64), Gemma-4-E2B sliding layers
// (8 / 1 × 256) and global layers (8 / 1 × 512).
struct Heads {
    int head_dim, n_heads, n_kv_heads;
};
constexpr Heads kHeads[] = {{64, 32, 8}, {256, 8, 1}, {512, 8, 1}};
// q8 against f16 at the head widths of Llama (64), Qwen/Llama-8B (128) and Gemma 3 (256).
constexpr Heads kQ8Heads[] = {{64, 32, 8}, {128, 32, 8}, {256, 8, 1}};
constexpr int kContexts[] = {512, 2048, 8192};
constexpr int kLongContexts[] = {4096, 16384};
constexpr int kPrefillRows = 128;  // one mid-size prefill bucket

struct Case {
    Heads h;
    int ctx;  // positions in the cache; the block ends at position ctx - 1
    int t;    // query rows
    KvType kv = KvType::f16;
};

// K/V bytes of one cache (K and V) of ctx positions.
size_t kv_bytes(const Case& c) {
    return 2 * size_t(c.h.n_kv_heads) * size_t(c.ctx) * kernels::kv_row_bytes(c.kv, c.h.head_dim);
}

// K/V copies of the current size, kept across the calls Google Benchmark makes
// of one benchmark (filling 256 MiB each time would dominate the run).
struct KvSet {
    size_t bytes = 0;
    int copies = 0;
    KvType kv = KvType::f16;
    Buffer buf;  // copies × align64(bytes): K [n_kv_heads][ctx][head_dim] then V, f16
};
KvSet g_kv;

const Buffer& kv_copies(size_t bytes, int copies, KvType kv, int head_dim) {
    if (g_kv.bytes == bytes && g_kv.copies == copies && g_kv.kv == kv) return g_kv.buf;
    g_kv = KvSet{};
    g_kv.bytes = bytes;
    g_kv.copies = copies;
    g_kv.kv = kv;
    const size_t stride = align64(bytes);
    g_kv.buf = Buffer(stride * size_t(copies));
    // Deterministic in the size; values are what matters, not which seed.
    if (kv == KvType::q8) {
        const size_t row = kernels::kv_row_bytes(kv, head_dim);
        std::vector<float> x(static_cast<size_t>(head_dim));
        for (size_t r = 0; r < bytes / row; ++r) {
            fill_f32(x.data(), x.size(), 11 + r, 1.0f);
            kernels::quantize_kv_row_q8(x.data(), head_dim, g_kv.buf.data() + r * row);
        }
    } else {
        fill_f16(g_kv.buf.as<uint16_t>(), bytes / 2, 11 + bytes, 1.0f);
    }
    for (int i = 1; i < copies; ++i)
        std::memcpy(g_kv.buf.data() + size_t(i) * stride, g_kv.buf.data(), bytes);
    return g_kv.buf;
}

void bm_attention(benchmark::State& st, Case c) {
    release_matmul_weights();
    const kernels::KernelTable& kt = kernels::table();
    const int threads = options().threads;
    const size_t half = kv_bytes(c) / 2;  // K or V: [n_kv_heads][ctx] rows
    // Decode reads the whole cache once per token, as a layer does between
    // other layers' weights: rotate copies so K/V come from memory, not LLC.
    const int copies = c.t == 1 ? rotation_copies(2 * half) : 1;
    const size_t stride = align64(2 * half);
    const Buffer& cache = kv_copies(2 * half, copies, c.kv, c.h.head_dim);
    const size_t row = size_t(c.h.n_heads) * size_t(c.h.head_dim);
    Buffer q(size_t(c.t) * row * 4);    // [t][n_heads][head_dim]
    Buffer out(size_t(c.t) * row * 4);  // [t][n_heads][head_dim]
    fill_f32(q.as<float>(), size_t(c.t) * row, 13, 1.0f);
    Buffer scratch(kernels::attention_scratch_bytes(c.t, c.h.n_heads, c.h.head_dim, threads));

    kernels::AttentionArgs a;
    a.q = q.as<float>();
    a.ldq = row;
    a.kv_type = c.kv;
    a.n_slots = c.ctx;
    a.out = out.as<float>();
    a.ldo = row;
    a.t = c.t;
    a.pos0 = c.ctx - c.t;
    a.n_heads = c.h.n_heads;
    a.n_kv_heads = c.h.n_kv_heads;
    a.head_dim = c.h.head_dim;
    a.window = 0;
    a.scale = 1.0f / std::sqrt(float(c.h.head_dim));

    int copy = 0;
    CallTimer timer;
    for (auto _ : st) {
        a.k = cache.data() + size_t(copy) * stride;
        a.v = cache.data() + size_t(copy) * stride + half;
        timer.start();
        kt.attention(a, scratch.data(), threads);
        benchmark::ClobberMemory();
        timer.stop();
        if (++copy == copies) copy = 0;
    }
    const double seconds = timer.seconds(options().mean);
    if (timer.calls() == 0 || seconds <= 0) return;
    if (c.t == 1) {
        const double gbs = double(2 * half) / seconds * 1e-9;
        set_figure(st, "GB/s", gbs, "ratio_bw", ceilings().read_gb_per_s);
    } else {
        // q·k and p·v: 2 flops each per head, visible position and dim (row i sees pos0+i+1).
        double visible = 0;
        for (int i = 0; i < c.t; ++i) visible += double(a.pos0 + i + 1);
        const double ops = 4.0 * c.h.n_heads * c.h.head_dim * visible;
        set_figure(st, "GOPS", ops / seconds * 1e-9, "ratio_peak",
                   ceilings().fp32_gflops);
    }
}

void add(const Case& c) {
    const std::string name = std::string(c.t == 1 ? "attn_decode" : "attn_prefill") + "/hd" +
                             std::to_string(c.h.head_dim) + "/q" + std::to_string(c.h.n_heads) +
                             "kv" + std::to_string(c.h.n_kv_heads) + "/ctx" +
                             std::to_string(c.ctx) + (c.t == 1 ? "" : "/t" + std::to_string(c.t)) +
                             (c.kv == KvType::q8 ? "/q8" : "");
    benchmark::RegisterBenchmark(name.c_str(), bm_attention, c)->UseRealTime();
}

}  // namespace

void release_kv_copies() { g_kv = KvSet{}; }

void register_kv_q8_lab();

void register_attention(const Options& opts) {
    if (opts.quick) {
        add({kHeads[0], 512, 1});
        add({kHeads[0], 512, 16});
        return;
    }
    for (int t : {1, kPrefillRows})
        for (const Heads& h : kHeads)
            for (int ctx : kContexts) add({h, ctx, t});
    for (int t : {1, kPrefillRows})
        for (const Heads& h : kQ8Heads)
            for (int ctx : kContexts) {
                if (h.head_dim == 128) add({h, ctx, t});  // f16 at 128 (64 and 256 are above)
                add({h, ctx, t, KvType::q8});
            }
    // Long-context decode (the depth rows of `staticlm bench --depth`): Llama
    // (64) and Qwen/Llama-8B (128) heads, f16 and q8 caches.
    for (int ctx : kLongContexts)
        for (const Heads& h : {kQ8Heads[0], kQ8Heads[1]})
            for (KvType kv : {KvType::f16, KvType::q8}) add({h, ctx, 1, kv});
    register_kv_q8_lab();
}

}  // namespace staticlm::bench

// ---------------------------------------------------------------------------
// Kernel lab: Q·K over a q8 cache, two ways, on AVX-512 VNNI (decode shape:
// one kv head, kLabHeads query heads, kLabKeys keys). "dequant" is what
// kernels/simd/attention.cpp does (int8 -> fp32 · scale, fp32 FMAs with fp32
// queries); "vnni" quantizes each query to int8 per 32 values once and takes
// vpdpbusd on (k + 128) bytes, the bias removed exactly by starting each lane
// at -128 · Σ of its 4 query bytes, then one fp32 FMA per 64 values with
// the lane's sK · sQ. Not in the library: the figures decide (docs/PERFORMANCE.md).
// ---------------------------------------------------------------------------
namespace staticlm::bench {
namespace {

constexpr int kLabHeads = 8;
constexpr int kLabKeys = 4096;

#define LAB_TARGET __attribute__((target("avx2,fma,avx512f,avx512bw,avx512dq,avx512vnni")))

struct LabData {
    int d = 0;
    std::vector<std::byte> k;            // [kLabKeys] q8 rows
    std::vector<float> q;                // [kLabHeads][d]
    std::vector<int8_t> qq;              // [kLabHeads][d]
    std::vector<float> qs;               // [kLabHeads][d / 32] query scales
    std::vector<float> s_dequant, s_vnni;  // [kLabHeads][kLabKeys]
};

LabData make_lab(int d) {
    LabData L;
    L.d = d;
    const size_t row = kernels::kv_row_bytes(KvType::q8, d);
    L.k.resize(row * kLabKeys);
    std::vector<float> x(static_cast<size_t>(d));
    for (int j = 0; j < kLabKeys; ++j) {
        fill_f32(x.data(), x.size(), 100 + uint64_t(j), 1.0f);
        kernels::quantize_kv_row_q8(x.data(), d, L.k.data() + size_t(j) * row);
    }
    L.q.resize(size_t(kLabHeads) * d);
    fill_f32(L.q.data(), L.q.size(), 7, 1.0f);
    L.qq.resize(L.q.size());
    L.qs.resize(size_t(kLabHeads) * (d / 32));
    std::vector<std::byte> qrow(kernels::kv_row_bytes(KvType::q8, d));
    for (int h = 0; h < kLabHeads; ++h) {
        kernels::quantize_kv_row_q8(L.q.data() + size_t(h) * d, d, qrow.data());
        std::memcpy(L.qq.data() + size_t(h) * d, qrow.data(), size_t(d));
        std::memcpy(L.qs.data() + size_t(h) * (d / 32), qrow.data() + d, size_t(d / 32) * 4);
    }
    L.s_dequant.assign(size_t(kLabHeads) * kLabKeys, 0.0f);
    L.s_vnni.assign(size_t(kLabHeads) * kLabKeys, 0.0f);
    return L;
}

// The maskz forms avoid GCC 12's false -Wmaybe-uninitialized (see vec.hpp).
LAB_TARGET inline float lab_hsum(__m512 v) {
    const __m256 a = _mm256_add_ps(_mm512_maskz_extractf32x8_ps(__mmask8(0xff), v, 0), _mm512_maskz_extractf32x8_ps(__mmask8(0xff), v, 1));
    __m128 b = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    b = _mm_add_ps(b, _mm_movehl_ps(b, b));
    b = _mm_add_ss(b, _mm_movehdup_ps(b));
    return _mm_cvtss_f32(b);
}

LAB_TARGET void lab_dequant(LabData& L) {
    const int d = L.d;
    const size_t row = kernels::kv_row_bytes(KvType::q8, d);
    for (int j = 0; j < kLabKeys; ++j) {
        const auto* k = reinterpret_cast<const int8_t*>(L.k.data() + size_t(j) * row);
        __m512 acc[kLabHeads];
        for (int h = 0; h < kLabHeads; ++h) acc[h] = _mm512_setzero_ps();
        for (int e = 0; e < d; e += 16) {
            float s;
            std::memcpy(&s, k + d + (e / 32) * 4, 4);
            const __m512 kv = _mm512_mul_ps(
                _mm512_maskz_cvtepi32_ps(__mmask16(0xffff), _mm512_maskz_cvtepi8_epi32(__mmask16(0xffff), _mm_loadu_si128(reinterpret_cast<const __m128i*>(k + e)))),
                _mm512_set1_ps(s));
            for (int h = 0; h < kLabHeads; ++h)
                acc[h] = _mm512_fmadd_ps(_mm512_loadu_ps(L.q.data() + size_t(h) * d + e), kv, acc[h]);
        }
        for (int h = 0; h < kLabHeads; ++h) L.s_dequant[size_t(h) * kLabKeys + j] = lab_hsum(acc[h]);
    }
}

LAB_TARGET void lab_vnni(LabData& L) {
    const int d = L.d, nc = d / 64;
    const size_t row = kernels::kv_row_bytes(KvType::q8, d);
    // Per head and 64-value chunk: the bias start (-128 · Σ of each lane's 4
    // query bytes) and the query scale of each lane (lanes 0-7 block 2c, 8-15 block 2c+1).
    __m512i bias[kLabHeads][8], qv[kLabHeads][8];
    __m512 qsv[kLabHeads][8];
    for (int h = 0; h < kLabHeads; ++h)
        for (int c = 0; c < nc; ++c) {
            const int8_t* q = L.qq.data() + size_t(h) * d + c * 64;
            qv[h][c] = _mm512_loadu_si512(q);
            alignas(64) int32_t b[16];
            for (int l = 0; l < 16; ++l) b[l] = -128 * (q[4 * l] + q[4 * l + 1] + q[4 * l + 2] + q[4 * l + 3]);
            bias[h][c] = _mm512_load_si512(b);
            const float* s = L.qs.data() + size_t(h) * (d / 32) + 2 * c;
            qsv[h][c] = _mm512_insertf32x8(_mm512_set1_ps(s[0]), _mm256_set1_ps(s[1]), 1);
        }
    const __m512i flip = _mm512_set1_epi8(char(0x80));
    for (int j = 0; j < kLabKeys; ++j) {
        const auto* k = reinterpret_cast<const int8_t*>(L.k.data() + size_t(j) * row);
        __m512 acc[kLabHeads];
        for (int h = 0; h < kLabHeads; ++h) acc[h] = _mm512_setzero_ps();
        for (int c = 0; c < nc; ++c) {
            const __m512i kb = _mm512_xor_si512(_mm512_loadu_si512(k + c * 64), flip);  // k + 128
            float s0, s1;
            std::memcpy(&s0, k + d + (2 * c) * 4, 4);
            std::memcpy(&s1, k + d + (2 * c + 1) * 4, 4);
            const __m512 ks = _mm512_insertf32x8(_mm512_set1_ps(s0), _mm256_set1_ps(s1), 1);
            for (int h = 0; h < kLabHeads; ++h) {
                const __m512i dot = _mm512_dpbusd_epi32(bias[h][c], kb, qv[h][c]);
                acc[h] = _mm512_fmadd_ps(_mm512_maskz_cvtepi32_ps(__mmask16(0xffff), dot), _mm512_mul_ps(ks, qsv[h][c]), acc[h]);
            }
        }
        for (int h = 0; h < kLabHeads; ++h) L.s_vnni[size_t(h) * kLabKeys + j] = lab_hsum(acc[h]);
    }
}

void bm_lab(benchmark::State& st, int d, bool vnni) {
    LabData L = make_lab(d);
    // Check once that both give the scores (within the query's int8 rounding).
    lab_dequant(L);
    lab_vnni(L);
    double worst = 0;
    for (size_t i = 0; i < L.s_vnni.size(); ++i)
        worst = std::max(worst, std::fabs(double(L.s_vnni[i]) - double(L.s_dequant[i])));
    CallTimer timer;
    for (auto _ : st) {
        timer.start();
        if (vnni)
            lab_vnni(L);
        else
            lab_dequant(L);
        benchmark::ClobberMemory();
        timer.stop();
    }
    const double seconds = timer.seconds(options().mean);
    if (timer.calls() == 0 || seconds <= 0) return;
    st.counters["ns_per_key"] = seconds / kLabKeys * 1e9;
    st.counters["max_diff"] = worst;
}

}  // namespace

void register_kv_q8_lab() {
    if (!kernels::target_supported(kernels::Target::avx512)) return;
    for (int d : {64, 128, 256})
        for (bool vnni : {false, true}) {
            const std::string name = std::string("kvq8_qk/") + (vnni ? "vnni" : "dequant") + "/hd" + std::to_string(d);
            benchmark::RegisterBenchmark(name.c_str(), bm_lab, d, vnni)->UseRealTime();
        }
}

}  // namespace staticlm::bench
