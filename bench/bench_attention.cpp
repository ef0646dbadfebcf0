// Attention benchmarks on an f16 static cache: decode (one query row, GB/s of
// K/V read vs read bandwidth) and a prefill block of kPrefillRows rows (GOPS vs
// the fp32 FMA peak) at contexts 512, 2048, 8192; the same on a q8 cache
// (names ending /q8; GB/s of the q8 bytes read) for head_dim 64, 128 and 256.
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
}

}  // namespace staticlm::bench
