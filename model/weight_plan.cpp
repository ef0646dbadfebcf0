// The weight plan: which weights a config has (from its flags, never from its
// family name), their names and shapes, and the shared arena layout.
#include "model/weight_plan.hpp"

#include <algorithm>
#include <string>

#include "kernels/formats/format.hpp"
#include "staticlm/error.hpp"


namespace staticlm::detail {

namespace {

struct Planner {
    const TensorNaming& names;
    std::vector<WeightEntry>& p;

    WeightEntry& add(WeightEntry::Kind kind, WeightRole role, int layer, const LayerConfig* lc, int n, int k) {
        WeightEntry e;
        e.kind = kind;
        e.role = role;
        e.layer = layer;
        e.name = names(role, layer, lc);
        e.n = n;
        e.k = k;
        p.push_back(std::move(e));
        return p.back();
    }
    // Returns the entry's index (references into the plan move as it grows).
    size_t matrix(WeightRole role, int layer, const LayerConfig* lc, int n, int k, PackedMatrix* m,
                  bool matmul = true) {
        WeightEntry& e = add(WeightEntry::Kind::matrix, role, layer, lc, n, k);
        e.matrix = m;
        e.matmul = matmul;
        return p.size() - 1;
    }
    // Entry i is rows [row0, row0 + n) of the fused tensor named by `fused` (tensor_rows rows).
    void part_of(size_t i, WeightRole fused, int64_t row0, int64_t tensor_rows, const LayerConfig* lc) {
        WeightEntry& e = p[i];
        e.name = names(fused, e.layer, lc);
        e.rows.row0 = row0;
        e.rows.tensor_rows = tensor_rows;
    }
    // An RMSNorm weight (multiplies; gets the config's norm_weight_offset).
    void vector(WeightRole role, int layer, const LayerConfig* lc, int n, const float** v) {
        WeightEntry& e = add(WeightEntry::Kind::vector, role, layer, lc, n, 0);
        e.vector = v;
        e.norm = true;
    }
    // A bias (added as stored).
    void bias(WeightRole role, int layer, const LayerConfig* lc, int n, const float** v) {
        add(WeightEntry::Kind::vector, role, layer, lc, n, 0).vector = v;
    }
    void scalar(WeightRole role, int layer, const LayerConfig* lc, float* s) {
        add(WeightEntry::Kind::scalar, role, layer, lc, 1, 0).scalar = s;
    }
};

}  // namespace

std::vector<WeightEntry> plan_weights(const ModelConfig& c, ModelWeights& w, const TensorNaming& names) {
    std::vector<WeightEntry> p;
    Planner pl{names, p};
    const int H = c.hidden, L = c.n_layers, D = c.per_layer_dim;
    w.layers.assign(c.layers.size(), LayerWeights{});
    // A tied embedding is also the output head: it is multiplied, not only looked up.
    pl.matrix(WeightRole::embed, -1, nullptr, c.vocab, H, &w.embed, /*matmul=*/c.tie_embeddings);
    pl.vector(WeightRole::final_norm, -1, nullptr, H, &w.final_norm);
    if (!c.tie_embeddings) pl.matrix(WeightRole::lm_head, -1, nullptr, c.vocab, H, &w.lm_head);
    if (D > 0) {
        pl.matrix(WeightRole::embed_per_layer, -1, nullptr, c.per_layer_vocab, L * D, &w.embed_per_layer,
                  /*matmul=*/false);
        pl.matrix(WeightRole::per_layer_model_proj, -1, nullptr, L * D, H, &w.per_layer_model_proj);
        pl.vector(WeightRole::per_layer_proj_norm, -1, nullptr, D, &w.per_layer_proj_norm);
    }
    for (int il = 0; il < L; ++il) {
        const LayerConfig& lc = c.layers[size_t(il)];
        LayerWeights& lw = w.layers[size_t(il)];
        const LayerConfig* l = &lc;
        const int q_dim = lc.n_heads * lc.head_dim, kv_dim = lc.n_kv_heads * lc.head_dim;
        const bool owns_kv = lc.kv_source == il;
        pl.vector(WeightRole::attn_norm, il, l, H, &lw.attn_norm);
        constexpr size_t kNone = ~size_t{0};
        size_t qkv[3] = {pl.matrix(WeightRole::q, il, l, q_dim, H, &lw.q), kNone, kNone};
        if (owns_kv) {
            qkv[1] = pl.matrix(WeightRole::k, il, l, kv_dim, H, &lw.k);
            if (!lc.k_eq_v) qkv[2] = pl.matrix(WeightRole::v, il, l, kv_dim, H, &lw.v);
        }
        if (lc.rotary_dims > 0 && lc.rotary_dims < lc.head_dim) {
            // Norm and bias vectors would need the same permutation as the rows.
            if (lc.qk_norm || lc.qkv_bias)
                throw Error(ErrorKind::unsupported, "partial rotary embeddings with q/k norms or biases (layer " +
                                                        std::to_string(il) + ")");
            if (lc.rotary_dims % 2 || lc.head_dim % 2)
                throw Error(ErrorKind::format, "rotary dims " + std::to_string(lc.rotary_dims) + " of head size " +
                                                   std::to_string(lc.head_dim) + " are not even (layer " +
                                                   std::to_string(il) + ")");
            for (size_t i : {qkv[0], qkv[1]})
                if (i != kNone) p[i].rows.head_dim = lc.head_dim, p[i].rows.rotary = lc.rotary_dims;
        }
        if (c.fused_qkv) {
            if (qkv[1] == kNone || qkv[2] == kNone)
                throw Error(ErrorKind::unsupported, "fused q/k/v projections with KV sharing or K = V (layer " +
                                                        std::to_string(il) + ")");
            const int64_t rows = int64_t(q_dim) + 2 * int64_t(kv_dim);
            pl.part_of(qkv[0], WeightRole::qkv, 0, rows, l);
            pl.part_of(qkv[1], WeightRole::qkv, q_dim, rows, l);
            pl.part_of(qkv[2], WeightRole::qkv, int64_t(q_dim) + kv_dim, rows, l);
        }
        if (lc.qkv_bias) {
            pl.bias(WeightRole::q_bias, il, l, q_dim, &lw.q_bias);
            if (owns_kv) {
                pl.bias(WeightRole::k_bias, il, l, kv_dim, &lw.k_bias);
                if (!lc.k_eq_v) pl.bias(WeightRole::v_bias, il, l, kv_dim, &lw.v_bias);
            }
        }
        pl.matrix(WeightRole::o, il, l, H, q_dim, &lw.o);
        if (lc.qk_norm) {
            pl.vector(WeightRole::q_norm, il, l, lc.head_dim, &lw.q_norm);
            if (owns_kv) pl.vector(WeightRole::k_norm, il, l, lc.head_dim, &lw.k_norm);
        }
        const size_t gate = pl.matrix(WeightRole::gate, il, l, lc.ffn_dim, H, &lw.gate);
        const size_t up = pl.matrix(WeightRole::up, il, l, lc.ffn_dim, H, &lw.up);
        if (c.fused_gate_up) {  // gate is the first half (transformers' chunk(2))
            pl.part_of(gate, WeightRole::gate_up, 0, 2 * int64_t(lc.ffn_dim), l);
            pl.part_of(up, WeightRole::gate_up, lc.ffn_dim, 2 * int64_t(lc.ffn_dim), l);
        }
        pl.matrix(WeightRole::down, il, l, H, lc.ffn_dim, &lw.down);
        if (lc.sandwich_norms) {
            pl.vector(WeightRole::post_attn_norm, il, l, H, &lw.post_attn_norm);
            pl.vector(WeightRole::ffn_norm, il, l, H, &lw.ffn_norm);
            pl.vector(WeightRole::post_ffn_norm, il, l, H, &lw.post_ffn_norm);
        } else {
            pl.vector(WeightRole::ffn_norm, il, l, H, &lw.ffn_norm);
        }
        if (D > 0) {
            pl.matrix(WeightRole::ple_gate, il, l, D, H, &lw.ple_gate);
            pl.matrix(WeightRole::ple_proj, il, l, H, D, &lw.ple_proj);
            pl.vector(WeightRole::ple_post_norm, il, l, H, &lw.ple_post_norm);
        }
        if (lc.layer_scalar) pl.scalar(WeightRole::layer_scalar, il, l, &lw.layer_scalar);
    }
    return p;
}

std::vector<std::string> unused_by_design(const ModelConfig& c, const TensorNaming& names) {
    std::vector<std::string> out;
    for (int il = 0; il < c.n_layers; ++il) {
        const LayerConfig& lc = c.layers[size_t(il)];
        if (lc.kv_source == il) continue;
        for (WeightRole r : {WeightRole::k, WeightRole::v, WeightRole::k_norm, WeightRole::k_bias, WeightRole::v_bias})
            out.push_back(names(r, il, &lc));
    }
    return out;
}

WeightType matrix_type(WeightRole role, WeightType type) {
    const bool vocab = role == WeightRole::embed || role == WeightRole::lm_head;
    return vocab ? kernels::vocab_weight_type(type) : type;
}

Buffer layout_arena(std::vector<WeightEntry>& plan, WeightType type, const std::vector<WeightType>* per_entry) {
    auto type_of = [&](const WeightEntry& e) {
        return per_entry ? (*per_entry)[size_t(&e - plan.data())] : matrix_type(e.role, type);
    };
    size_t total = 0;
    for (WeightEntry& e : plan) {
        if (e.kind == WeightEntry::Kind::scalar) continue;
        e.bytes = e.kind == WeightEntry::Kind::matrix ? kernels::packed_bytes(type_of(e), e.n, e.k)
                                                      : size_t(e.n) * sizeof(float);
        e.offset = total;
        total = align64(total + e.bytes);
    }
    Buffer arena(total);
    for (WeightEntry& e : plan) {
        if (e.kind == WeightEntry::Kind::matrix) {
            e.matrix->type = type_of(e);
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

void finish_weights(Model& model, std::vector<WeightEntry> plan, int act_bits) {
    check_act_bits(act_bits);
    model.act_bits_ = act_bits;
    for (WeightEntry& e : plan)
        if (e.kind == WeightEntry::Kind::matrix) e.matrix->act_bits = act_bits;
    if (model.config_.tie_embeddings) model.weights_.lm_head = model.weights_.embed;
    // The formats in use, in format order; the model's type is the one with
    // the most bytes (the only one unless --weights native or q4).
    model.matrix_types_.clear();
    size_t most = 0;
    for (WeightType t : weight_types()) {
        size_t bytes = 0;
        bool used = false;
        for (const WeightEntry& e : plan)
            if (e.kind == WeightEntry::Kind::matrix && e.matrix->type == t) bytes += e.matrix->bytes, used = true;
        if (!used) continue;
        model.matrix_types_.push_back(t);
        if (model.native_weights_ && bytes > most) most = bytes, model.weight_type_ = t;
    }
    model.plan_ = std::move(plan);
}

void check_act_bits(int act_bits) {
    if (act_bits != 8 && act_bits != 16)
        throw Error(ErrorKind::config, "invalid act_bits " + std::to_string(act_bits) + ": 8 or 16");
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

int resolve_threads(int threads) { return threads > 0 ? threads : available_cpus(); }

int chunk_rows(int k, size_t elem_bytes) {
    // ~1 MiB of source per task: big enough to amortize scheduling, small
    // enough for progress updates and load balance.
    const size_t row_bytes = std::max<size_t>(1, size_t(k) * elem_bytes);
    size_t rows = (size_t{1} << 20) / row_bytes;
    rows = std::max<size_t>(kernels::kPanelRows, rows / kernels::kPanelRows * kernels::kPanelRows);
    return int(std::min<size_t>(rows, size_t{1} << 20));
}

}  // namespace staticlm::detail
