// The shared decoder block graph of every family: embeddings, optional
// per-layer inputs, attention with optional q/k/v norms and KV sharing, gated
// FFN, optional sandwich norms, tied or untied head with optional softcap.
#include "model/graph.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <exception>

#include "kernels/parallel.hpp"

namespace staticlm {

namespace {

struct Dims {
    int hd_max = 0, heads_max = 0, nh_max = 0, nkv_max = 0, ffn_max = 0;
};

Dims max_dims(const ModelConfig& c) {
    Dims d;
    for (const LayerConfig& l : c.layers) {
        d.hd_max = std::max(d.hd_max, l.head_dim);
        d.heads_max = std::max(d.heads_max, l.n_heads);
        d.nh_max = std::max(d.nh_max, l.n_heads * l.head_dim);
        d.nkv_max = std::max(d.nkv_max, l.n_kv_heads * l.head_dim);
        d.ffn_max = std::max(d.ffn_max, l.ffn_dim);
    }
    d.ffn_max = std::max(d.ffn_max, c.per_layer_dim);
    return d;
}

// Carves 64-byte-aligned pieces out of one arena; the first pass only counts.
struct Carver {
    std::byte* base = nullptr;
    size_t used = 0;
    template <class T>
    T* take(size_t count) {
        T* p = base ? reinterpret_cast<T*>(base + used) : nullptr;
        used += align64(count * sizeof(T));
        return p;
    }
};

}  // namespace

Workspace::Workspace(const ModelConfig& c, std::span<const WeightType> weights, int q_max, int n_threads,
                     int logits_rows)
    : q_max_(q_max), logits_rows_(std::clamp(logits_rows, 1, std::max(q_max, 1))) {
    const Dims d = max_dims(c);
    const size_t q = size_t(q_max);
    const size_t h = size_t(c.hidden);
    const size_t n_ple = size_t(c.n_layers) * size_t(c.per_layer_dim);
    ld_q = size_t(d.nh_max);
    ld_kv = size_t(d.nkv_max);
    ld_ffn = size_t(d.ffn_max);
    ld_ple = n_ple;

    // Largest matmul scratch over the matrices a block multiplies (K = input width).
    size_t mm = 0;
    for (int k : {c.hidden, d.nh_max, d.ffn_max, c.per_layer_dim})
        for (WeightType w : weights)
            if (k > 0) mm = std::max(mm, kernels::matmul_scratch_bytes(w, q_max, k));
    const size_t att = kernels::attention_scratch_bytes(q_max, d.heads_max, d.hd_max, n_threads);

    auto carve = [&](Carver& cv) {
        x = cv.take<float>(q * h);
        xn = cv.take<float>(q * h);
        tmp = cv.take<float>(q * h);
        this->q = cv.take<float>(q * ld_q);
        k = cv.take<float>(q * ld_kv);
        v = cv.take<float>(q * ld_kv);
        attn = cv.take<float>(q * ld_q);
        gate = cv.take<float>(q * ld_ffn);
        up = cv.take<float>(q * ld_ffn);
        ple = n_ple ? cv.take<float>(q * n_ple) : nullptr;
        ple_tmp = n_ple ? cv.take<float>(q * n_ple) : nullptr;
        logits = cv.take<float>(size_t(logits_rows_) * size_t(c.vocab));
        matmul_scratch = cv.take<std::byte>(mm);
        attn_scratch = cv.take<std::byte>(att);
    };
    Carver count;
    carve(count);
    arena_ = Buffer(count.used);
    Carver real{arena_.data(), 0};
    carve(real);
}

std::vector<KvLayerSpec> kv_layer_specs(const ModelConfig& config) {
    std::vector<KvLayerSpec> specs;
    specs.reserve(config.layers.size());
    for (const LayerConfig& l : config.layers)
        specs.push_back({l.n_kv_heads, l.head_dim, l.kv_source, l.window});
    return specs;
}

namespace {

// The fused matmul of products that read the same rows, or one call per
// product when --weights native left them in different formats.
void matmul_fused(const kernels::KernelTable& kt, const kernels::MatmulOut* outs, int n, const float* x,
                  size_t ldx, int m, std::byte* scratch, int n_threads) {
    for (int i = 1; i < n; ++i)
        if (outs[i].w->type != outs[0].w->type) {
            for (int j = 0; j < n; ++j) kernels::matmul_many(kt, outs + j, 1, x, ldx, m, scratch, n_threads);
            return;
        }
    kernels::matmul_many(kt, outs, n, x, ldx, m, scratch, n_threads);
}

// Gemma 4 per-layer inputs: PLI[t][L][D] = (RMSNorm((X0·Wpmpᵀ)·H^-½) + Epl[ids]·√D) · 2^-½.
void per_layer_inputs(const Model& model, const kernels::KernelTable& kt, Workspace& ws,
                      const ForwardArgs& a) {
    const ModelConfig& c = model.config();
    const ModelWeights& w = model.weights();
    const int d = c.per_layer_dim;
    const int n = c.n_layers * d;
    const float tok_scale = std::sqrt(float(d));
    for (int i = 0; i < a.t; ++i)
        kernels::unpack_row(w.embed_per_layer, a.tokens[i], tok_scale, ws.ple + size_t(i) * ws.ld_ple);
    kernels::matmul(kt, w.per_layer_model_proj, ws.x, size_t(c.hidden), a.t, ws.ple_tmp, ws.ld_ple,
                    ws.matmul_scratch, a.n_threads);
    kt.scale(ws.ple_tmp, size_t(a.t) * ws.ld_ple, 1.0f / std::sqrt(float(c.hidden)));
    kt.rmsnorm(ws.ple_tmp, size_t(d), a.t * c.n_layers, d, w.per_layer_proj_norm, c.rms_eps,
               ws.ple_tmp, size_t(d));
    kt.add(ws.ple, ws.ple_tmp, size_t(a.t) * size_t(n));
    kt.scale(ws.ple, size_t(a.t) * size_t(n), float(1.0 / std::sqrt(2.0)));
    if (a.dump) a.dump("per_layer_inputs", -1, ws.ple, a.t, n, ws.ld_ple);
}

// The attention prologue that the solo and batched paths share, from the
// normed rows ws.xn: q (and k, v for a layer that owns its K/V) in one fused
// call, the projection biases, the q/k/v norms. RoPE and the cache store
// follow per block or per row.
void project_qkv(const Model& model, const kernels::KernelTable& kt, Workspace& ws, const ForwardArgs& a, int il) {
    const ModelConfig& c = model.config();
    const LayerConfig& lc = c.layers[size_t(il)];
    const LayerWeights& lw = model.weights().layers[size_t(il)];
    const int t = a.t, hd = lc.head_dim;
    const size_t h = size_t(c.hidden);
    const size_t ldq = size_t(lc.n_heads) * size_t(hd);
    const size_t ldkv = size_t(lc.n_kv_heads) * size_t(hd);
    const bool owns = lc.kv_source == il;

    // Layers that reuse another layer's K/V project q only; k_eq_v layers have no v.
    const kernels::MatmulOut qkv[3] = {{&lw.q, ws.q, ldq}, {&lw.k, ws.k, ldkv}, {&lw.v, ws.v, ldkv}};
    const int n_proj = !owns ? 1 : lc.k_eq_v ? 2 : 3;
    matmul_fused(kt, qkv, n_proj, ws.xn, h, t, ws.matmul_scratch, a.n_threads);
    if (lc.qkv_bias) {
        const float* bias[3] = {lw.q_bias, lw.k_bias, lw.v_bias};
        for (int j = 0; j < n_proj; ++j)
            for (int i = 0; i < t; ++i) kt.add(qkv[j].y + size_t(i) * qkv[j].ldy, bias[j], qkv[j].ldy);
    }
    if (lc.qk_norm) kt.rmsnorm(ws.q, size_t(hd), t * lc.n_heads, hd, lw.q_norm, c.rms_eps, ws.q, size_t(hd));
    if (!owns) return;
    if (lc.k_eq_v) std::memcpy(ws.v, ws.k, size_t(t) * ldkv * sizeof(float));
    const int rows = t * lc.n_kv_heads;
    if (lc.qk_norm) kt.rmsnorm(ws.k, size_t(hd), rows, hd, lw.k_norm, c.rms_eps, ws.k, size_t(hd));
    if (lc.v_norm) kt.rmsnorm(ws.v, size_t(hd), rows, hd, nullptr, c.rms_eps, ws.v, size_t(hd));
}

// The RoPE frequencies of a layer in a sequence whose cache holds `cache`:
// LongRoPE's long set when the sequence can grow past rope_long_after
// positions (llama.cpp's rule, by context size), else the one set.
const float* rope_freqs(const LayerConfig& lc, const StaticKVCache& cache) {
    const bool long_set = !lc.inv_freq_long.empty() && cache.max_seq() > lc.rope_long_after;
    return long_set ? lc.inv_freq_long.data() : lc.inv_freq.data();
}

// LayerConfig::rope_scale on the rotated dims of `rows` rows of n_heads heads
// (partial rotary: pairs j < rotary_dims/2 of each half of a head).
void scale_rotated(const kernels::KernelTable& kt, const LayerConfig& lc, float* x, size_t ld, int rows, int n_heads) {
    if (lc.rope_scale == 1.0f) return;
    const int hd = lc.head_dim, rh = (lc.rotary_dims ? lc.rotary_dims : hd) / 2;
    for (int r = 0; r < rows; ++r)
        for (int h = 0; h < n_heads; ++h) {
            float* head = x + size_t(r) * ld + size_t(h) * size_t(hd);
            kt.scale(head, size_t(rh), lc.rope_scale);
            kt.scale(head + hd / 2, size_t(rh), lc.rope_scale);
        }
}

// The attention arguments of `t` query rows at ws.q + row * ldq from
// position pos0 over layer il's cache view, output at `out`.
kernels::AttentionArgs attention_args(const LayerConfig& lc, const KvView& kv, const float* q, float* out, int t,
                                      int pos0) {
    const size_t ldq = size_t(lc.n_heads) * size_t(lc.head_dim);
    kernels::AttentionArgs aa;
    aa.q = q;
    aa.ldq = ldq;
    aa.k = kv.k;
    aa.v = kv.v;
    aa.kv_type = kv.type;
    aa.n_slots = kv.n_slots;
    aa.out = out;
    aa.ldo = ldq;
    aa.t = t;
    aa.pos0 = pos0;
    aa.n_heads = lc.n_heads;
    aa.n_kv_heads = lc.n_kv_heads;
    aa.head_dim = lc.head_dim;
    aa.window = lc.window;
    aa.scale = lc.attn_scale;
    return aa;
}

// A block's output in ws.tmp into the residual stream: its sandwich norm
// (post_norm, null without), the dump, the residual multiplier, the add.
void add_block_output(const ModelConfig& c, const kernels::KernelTable& kt, Workspace& ws, const ForwardArgs& a,
                      int il, const float* post_norm, const char* name) {
    const int t = a.t;
    const size_t h = size_t(c.hidden);
    if (post_norm) kt.rmsnorm(ws.tmp, h, t, c.hidden, post_norm, c.rms_eps, ws.tmp, h);
    if (a.dump) a.dump(name, il, ws.tmp, t, c.hidden, h);
    if (c.residual_scale != 1.0f) kt.scale(ws.tmp, size_t(t) * h, c.residual_scale);
    kt.add(ws.x, ws.tmp, size_t(t) * h);
}

// The attention output projection, then add_block_output.
void attention_epilogue(const Model& model, const kernels::KernelTable& kt, Workspace& ws, const ForwardArgs& a,
                        int il) {
    const ModelConfig& c = model.config();
    const LayerConfig& lc = c.layers[size_t(il)];
    const LayerWeights& lw = model.weights().layers[size_t(il)];
    const int t = a.t;
    const size_t h = size_t(c.hidden);
    kernels::matmul(kt, lw.o, ws.attn, size_t(lc.n_heads) * size_t(lc.head_dim), t, ws.tmp, h, ws.matmul_scratch,
                    a.n_threads);
    add_block_output(c, kt, ws, a, il, lc.sandwich_norms ? lw.post_attn_norm : nullptr, "attn_out");
}

// Attention of rows that are independent sequences (ForwardArgs::seqs): the
// projections run on all rows at once, RoPE, the K/V store and attention run
// per row with that row's position and cache — the calls of a one-row decode.
void attention_rows(const Model& model, const kernels::KernelTable& kt, Workspace& ws,
                    const ForwardArgs& a, int il) {
    const LayerConfig& lc = model.config().layers[size_t(il)];
    const int t = a.t, hd = lc.head_dim;
    const size_t ldq = size_t(lc.n_heads) * size_t(hd);
    const size_t ldkv = size_t(lc.n_kv_heads) * size_t(hd);
    const bool owns = lc.kv_source == il;

    project_qkv(model, kt, ws, a, il);
    // Row i: RoPE at its position and its K/V into its cache; then attention
    // over that cache, with `threads` threads and attention scratch `scratch`.
    // Several rows may be one sequence at consecutive positions (a run of
    // BatchSession::decode_runs): a row then reads the K/V of the rows before
    // it, so every store precedes the attention of a later row, and no row
    // reads a later one (attention stops at the row's own position).
    auto store = [&](int i) {
        const int pos = a.seqs->pos[i];
        StaticKVCache& cache = *a.seqs->caches[i];
        float* q = ws.q + size_t(i) * ldq;
        const float* inv = rope_freqs(lc, cache);
        kt.rope(q, ldq, 1, lc.n_heads, hd, pos, inv);
        scale_rotated(kt, lc, q, ldq, 1, lc.n_heads);
        if (owns) {
            float* k = ws.k + size_t(i) * ldkv;
            kt.rope(k, ldkv, 1, lc.n_kv_heads, hd, pos, inv);
            scale_rotated(kt, lc, k, ldkv, 1, lc.n_kv_heads);
            cache.store(kt, il, pos, 1, k, ws.v + size_t(i) * ldkv, ldkv);
        }
    };
    auto attend = [&](int i, std::byte* scratch, int threads) {
        const int pos = a.seqs->pos[i];
        StaticKVCache& cache = *a.seqs->caches[i];
        kt.attention(attention_args(lc, cache.view(il), ws.q + size_t(i) * ldq, ws.attn + size_t(i) * ldq, 1, pos),
                     scratch, threads);
    };
    // A one-row attention gives the same bits on one thread as on n_threads
    // unless it has fewer query heads than threads (then the kernel splits the
    // keys): in that case each row runs as the solo decode does, with all the
    // threads; otherwise one parallel region serves all rows, a thread per row.
    const int nt = std::max(1, a.n_threads);
    if (t == 1 || nt == 1 || lc.n_heads < nt) {
        for (int i = 0; i < t; ++i) {
            store(i);
            attend(i, ws.attn_scratch, nt);
        }
    } else {
        for (int i = 0; i < t; ++i) store(i);
        const size_t per_thread = kernels::attention_scratch_bytes(1, lc.n_heads, hd, 1);
        kernels::parallel_for(nt, t, [&](int i, const kernels::Team& team) {
            attend(i, ws.attn_scratch + size_t(team.tid()) * per_thread, 1);
        });
    }
    attention_epilogue(model, kt, ws, a, il);
}

void attention_block(const Model& model, const kernels::KernelTable& kt, StaticKVCache& cache,
                     Workspace& ws, const ForwardArgs& a, int il) {
    const ModelConfig& c = model.config();
    const LayerConfig& lc = c.layers[size_t(il)];
    const LayerWeights& lw = model.weights().layers[size_t(il)];
    const int t = a.t, hd = lc.head_dim;
    const size_t h = size_t(c.hidden);
    const size_t ldq = size_t(lc.n_heads) * size_t(hd);
    const size_t ldkv = size_t(lc.n_kv_heads) * size_t(hd);

    kt.rmsnorm(ws.x, h, t, c.hidden, lw.attn_norm, c.rms_eps, ws.xn, h);
    if (a.dump) a.dump("attn_norm", il, ws.xn, t, c.hidden, h);
    if (a.seqs) {
        attention_rows(model, kt, ws, a, il);
        return;
    }

    project_qkv(model, kt, ws, a, il);
    const float* inv = rope_freqs(lc, cache);
    kt.rope(ws.q, ldq, t, lc.n_heads, hd, a.pos0, inv);
    scale_rotated(kt, lc, ws.q, ldq, t, lc.n_heads);
    if (a.dump) a.dump("q", il, ws.q, t, int(ldq), ldq);
    if (lc.kv_source == il) {
        kt.rope(ws.k, ldkv, t, lc.n_kv_heads, hd, a.pos0, inv);
        scale_rotated(kt, lc, ws.k, ldkv, t, lc.n_kv_heads);
        if (a.dump) {
            a.dump("k", il, ws.k, t, int(ldkv), ldkv);
            a.dump("v", il, ws.v, t, int(ldkv), ldkv);
        }
        cache.store(kt, il, a.pos0, t, ws.k, ws.v, ldkv);
    }
    kt.attention(attention_args(lc, cache.view(il), ws.q, ws.attn, t, a.pos0), ws.attn_scratch, a.n_threads);
    if (a.dump) a.dump("attn", il, ws.attn, t, int(ldq), ldq);
    attention_epilogue(model, kt, ws, a, il);
}

void ffn_block(const Model& model, const kernels::KernelTable& kt, Workspace& ws,
               const ForwardArgs& a, int il) {
    const ModelConfig& c = model.config();
    const LayerConfig& lc = c.layers[size_t(il)];
    const LayerWeights& lw = model.weights().layers[size_t(il)];
    const int t = a.t, f = lc.ffn_dim;
    const size_t h = size_t(c.hidden);

    kt.rmsnorm(ws.x, h, t, c.hidden, lw.ffn_norm, c.rms_eps, ws.xn, h);
    if (a.dump) a.dump("ffn_norm", il, ws.xn, t, c.hidden, h);
    const kernels::MatmulOut gate_up[2] = {{&lw.gate, ws.gate, size_t(f)}, {&lw.up, ws.up, size_t(f)}};
    matmul_fused(kt, gate_up, 2, ws.xn, h, t, ws.matmul_scratch, a.n_threads);
    const auto act = c.activation == Activation::silu ? kt.silu_mul : kt.gelu_tanh_mul;
    act(ws.gate, ws.up, size_t(t) * size_t(f), ws.gate);
    kernels::matmul(kt, lw.down, ws.gate, size_t(f), t, ws.tmp, h, ws.matmul_scratch, a.n_threads);
    add_block_output(c, kt, ws, a, il, lc.sandwich_norms ? lw.post_ffn_norm : nullptr, "ffn_out");
}

void per_layer_input_block(const Model& model, const kernels::KernelTable& kt, Workspace& ws,
                           const ForwardArgs& a, int il) {
    const ModelConfig& c = model.config();
    const LayerWeights& lw = model.weights().layers[size_t(il)];
    const int t = a.t, d = c.per_layer_dim;
    const size_t h = size_t(c.hidden);
    kernels::matmul(kt, lw.ple_gate, ws.x, h, t, ws.gate, size_t(d), ws.matmul_scratch, a.n_threads);
    for (int i = 0; i < t; ++i) {
        float* g = ws.gate + size_t(i) * size_t(d);
        kt.gelu_tanh_mul(g, ws.ple + size_t(i) * ws.ld_ple + size_t(il) * size_t(d), size_t(d), g);
    }
    kernels::matmul(kt, lw.ple_proj, ws.gate, size_t(d), t, ws.tmp, h, ws.matmul_scratch, a.n_threads);
    kt.rmsnorm(ws.tmp, h, t, c.hidden, lw.ple_post_norm, c.rms_eps, ws.tmp, h);
    kt.add(ws.x, ws.tmp, size_t(t) * h);
}

}  // namespace

bool forward(const Model& model, const kernels::KernelTable& kt, StaticKVCache& cache,
             Workspace& ws, const ForwardArgs& a) {
    const ModelConfig& c = model.config();
    const ModelWeights& w = model.weights();
    const size_t h = size_t(c.hidden);

    for (int i = 0; i < a.t; ++i)
        kernels::unpack_row(w.embed, a.tokens[i], c.embed_scale, ws.x + size_t(i) * h);
    if (a.dump) a.dump("embed", -1, ws.x, a.t, c.hidden, h);
    if (c.per_layer_dim > 0) per_layer_inputs(model, kt, ws, a);

    for (int il = 0; il < c.n_layers; ++il) {
        if (a.stop()) return false;
        attention_block(model, kt, cache, ws, a, il);
        ffn_block(model, kt, ws, a, il);
        if (c.per_layer_dim > 0) per_layer_input_block(model, kt, ws, a, il);
        const float s = w.layers[size_t(il)].layer_scalar;
        if (s != 1.0f) kt.scale(ws.x, size_t(a.t) * h, s);
        if (a.dump) a.dump("h", il, ws.x, a.t, c.hidden, h);
    }

    if (a.logits == ForwardArgs::Logits::none) return true;
    if (a.stop()) return false;
    const bool all = a.logits == ForwardArgs::Logits::all;
    const int rows = all ? a.t : 1;
    const float* src = all ? ws.x : ws.x + size_t(a.t - 1) * h;
    kt.rmsnorm(src, h, rows, c.hidden, w.final_norm, c.rms_eps, ws.xn, h);
    if (a.dump) a.dump("final_norm", -1, ws.xn, rows, c.hidden, h);
    const size_t v = size_t(c.vocab);
    // The head in pieces of at most logits_rows rows ([logits_rows][V] is
    // all the room there is; the caller takes each piece in on_rows), or in
    // one piece into the caller's logits_out.
    float* const out = a.logits_out ? a.logits_out : ws.logits;
    const int piece = a.logits_out ? rows : std::min(rows, ws.logits_rows());
    if (piece < rows && !a.on_rows.fn) return false;  // a caller's mistake: every Session path sets it
    for (int r0 = 0; r0 < rows; r0 += piece) {
        const int n = std::min(piece, rows - r0);
        kernels::matmul(kt, w.lm_head, ws.xn + size_t(r0) * h, h, n, out, v, ws.matmul_scratch, a.n_threads);
        if (c.logits_divisor != 1.0f) kt.scale(out, size_t(n) * v, 1.0f / c.logits_divisor);
        if (c.final_softcap > 0.0f) kt.softcap(out, size_t(n) * v, c.final_softcap);
        if (a.dump) a.dump("logits", -1, out, n, c.vocab, v);
        if (a.on_rows.fn && !a.on_rows.fn(a.on_rows.ctx, r0, n)) return false;
    }
    return true;
}

}  // namespace staticlm
