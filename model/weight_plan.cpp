// Tensor names/shapes per family and the shared arena layout (see weight_plan.hpp).
#include "model/weight_plan.hpp"

#include <algorithm>
#include <string>

#include "staticlm/error.hpp"

#if STATICLM_OPENMP
#include <omp.h>
#endif

namespace staticlm::detail {

namespace {

void add_matrix(std::vector<WeightEntry>& p, std::string name, int n, int k, PackedMatrix* m) {
    WeightEntry e;
    e.kind = WeightEntry::Kind::matrix;
    e.name = std::move(name);
    e.n = n;
    e.k = k;
    e.matrix = m;
    p.push_back(std::move(e));
}

void add_vector(std::vector<WeightEntry>& p, std::string name, int n, const float** v) {
    WeightEntry e;
    e.kind = WeightEntry::Kind::vector;
    e.name = std::move(name);
    e.n = n;
    e.vector = v;
    p.push_back(std::move(e));
}

}  // namespace

std::vector<WeightEntry> plan_weights(const ModelConfig& c, ModelWeights& w, const std::string& prefix,
                                      bool with_lm_head) {
    std::vector<WeightEntry> p;
    const int H = c.hidden;
    w.layers.assign(c.layers.size(), LayerWeights{});
    add_matrix(p, prefix + "embed_tokens.weight", c.vocab, H, &w.embed);
    add_vector(p, prefix + "norm.weight", H, &w.final_norm);
    if (with_lm_head) add_matrix(p, "lm_head.weight", c.vocab, H, &w.lm_head);
    const bool gemma = c.family == "gemma4";
    const int L = c.n_layers, D = c.per_layer_dim;
    if (gemma && D > 0) {
        add_matrix(p, prefix + "embed_tokens_per_layer.weight", c.per_layer_vocab, L * D, &w.embed_per_layer);
        add_matrix(p, prefix + "per_layer_model_projection.weight", L * D, H, &w.per_layer_model_proj);
        add_vector(p, prefix + "per_layer_projection_norm.weight", D, &w.per_layer_proj_norm);
    }
    for (int il = 0; il < L; ++il) {
        const LayerConfig& lc = c.layers[size_t(il)];
        LayerWeights& lw = w.layers[size_t(il)];
        const std::string lp = prefix + "layers." + std::to_string(il) + ".";
        const int q_dim = lc.n_heads * lc.head_dim, kv_dim = lc.n_kv_heads * lc.head_dim;
        const bool owns_kv = lc.kv_source == il;
        add_vector(p, lp + "input_layernorm.weight", H, &lw.attn_norm);
        add_matrix(p, lp + "self_attn.q_proj.weight", q_dim, H, &lw.q);
        if (owns_kv) {
            add_matrix(p, lp + "self_attn.k_proj.weight", kv_dim, H, &lw.k);
            if (!lc.k_eq_v) add_matrix(p, lp + "self_attn.v_proj.weight", kv_dim, H, &lw.v);
        }
        add_matrix(p, lp + "self_attn.o_proj.weight", H, q_dim, &lw.o);
        if (lc.qk_norm) {
            add_vector(p, lp + "self_attn.q_norm.weight", lc.head_dim, &lw.q_norm);
            if (owns_kv) add_vector(p, lp + "self_attn.k_norm.weight", lc.head_dim, &lw.k_norm);
        }
        add_matrix(p, lp + "mlp.gate_proj.weight", lc.ffn_dim, H, &lw.gate);
        add_matrix(p, lp + "mlp.up_proj.weight", lc.ffn_dim, H, &lw.up);
        add_matrix(p, lp + "mlp.down_proj.weight", H, lc.ffn_dim, &lw.down);
        if (gemma) {
            add_vector(p, lp + "post_attention_layernorm.weight", H, &lw.post_attn_norm);
            add_vector(p, lp + "pre_feedforward_layernorm.weight", H, &lw.ffn_norm);
            add_vector(p, lp + "post_feedforward_layernorm.weight", H, &lw.post_ffn_norm);
            if (D > 0) {
                add_matrix(p, lp + "per_layer_input_gate.weight", D, H, &lw.ple_gate);
                add_matrix(p, lp + "per_layer_projection.weight", H, D, &lw.ple_proj);
                add_vector(p, lp + "post_per_layer_input_norm.weight", H, &lw.ple_post_norm);
            }
            WeightEntry e;
            e.kind = WeightEntry::Kind::scalar;
            e.name = lp + "layer_scalar";
            e.n = 1;
            e.scalar = &lw.layer_scalar;
            p.push_back(std::move(e));
        } else {
            add_vector(p, lp + "post_attention_layernorm.weight", H, &lw.ffn_norm);
        }
    }
    return p;
}

Buffer layout_arena(std::vector<WeightEntry>& plan, WeightType type) {
    size_t total = 0;
    for (WeightEntry& e : plan) {
        if (e.kind == WeightEntry::Kind::scalar) continue;
        e.bytes = e.kind == WeightEntry::Kind::matrix ? kernels::packed_bytes(type, e.n, e.k)
                                                      : size_t(e.n) * sizeof(float);
        e.offset = total;
        total = align64(total + e.bytes);
    }
    Buffer arena(total);
    for (WeightEntry& e : plan) {
        if (e.kind == WeightEntry::Kind::matrix) {
            e.matrix->type = type;
            e.matrix->n = e.n;
            e.matrix->k = e.k;
            e.matrix->data = arena.data() ? arena.data() + e.offset : nullptr;
            e.matrix->bytes = e.bytes;
        } else if (e.kind == WeightEntry::Kind::vector) {
            *e.vector = arena.data() ? arena.as<float>(e.offset) : nullptr;
        }
    }
    return arena;
}

void finish_weights(ModelWeights& w, bool lm_head_loaded) {
    if (!lm_head_loaded) w.lm_head = w.embed;
}

void check_threads(int threads, const char* what) {
    if (threads < 0)
        throw Error(ErrorKind::config, std::string("invalid ") + what + ": threads must be >= 0 (0 = all cores), got " +
                                           std::to_string(threads));
    if (threads > max_threads())
        throw Error(ErrorKind::config,
                    std::string("invalid ") + what + ": threads " + std::to_string(threads) + " is more than " +
                        std::to_string(kMaxThreadsPerCpu) + " x the " + std::to_string(available_cpus()) +
                        " CPUs this process may use (at most " + std::to_string(max_threads()) + ")");
}

int resolve_threads(int threads) {
#if STATICLM_OPENMP
    return threads > 0 ? threads : omp_get_max_threads();
#else
    (void)threads;
    return 1;
#endif
}

int chunk_rows(int k, size_t elem_bytes) {
    // ~1 MiB of source per task: big enough to amortize scheduling, small
    // enough for progress updates and load balance.
    const size_t row_bytes = std::max<size_t>(1, size_t(k) * elem_bytes);
    size_t rows = (size_t{1} << 20) / row_bytes;
    rows = std::max<size_t>(kernels::kPanelRows, rows / kernels::kPanelRows * kernels::kPanelRows);
    return int(std::min<size_t>(rows, size_t{1} << 20));
}

}  // namespace staticlm::detail
