// Model::synthetic (deterministic random weights in the same arena layout as
// Model::load) and the built-in configs, written as config.json text so they
// go through the same parser and checks as real checkpoints.
#include "model/synthetic.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <vector>

#include "model/model.hpp"
#include "model/weight_plan.hpp"
#include "staticlm/error.hpp"

namespace staticlm {

namespace {


uint64_t splitmix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

// Row `row` of entry `entry`: uniform in ±sqrt(3)/sqrt(k) (std 1/sqrt(fan_in)),
// a pure function of (seed, entry, row, col) so any thread order gives the
// same weights: a per-row 64-bit key, then kernels' uniform_row (a
// counter-based hash per element, vectorized per target).
void fill_row(uint64_t seed, size_t entry, int row, int k, float* out) {
    const uint64_t key = splitmix64(seed ^ splitmix64((uint64_t(entry) << 32) | uint32_t(row)));
    kernels::table().uniform_row(key, k, std::sqrt(3.0f / float(std::max(k, 1))), out);
}

constexpr const char* kLlama32_1b = R"({
  "architectures": ["LlamaForCausalLM"], "model_type": "llama",
  "hidden_size": 2048, "num_hidden_layers": 16, "num_attention_heads": 32,
  "num_key_value_heads": 8, "head_dim": 64, "intermediate_size": 8192,
  "vocab_size": 128256, "rms_norm_eps": 1e-05, "max_position_embeddings": 131072,
  "rope_theta": 500000.0,
  "rope_scaling": {"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0,
                   "high_freq_factor": 4.0, "original_max_position_embeddings": 8192},
  "tie_word_embeddings": true, "bos_token_id": 128000,
  "eos_token_id": [128001, 128008, 128009]
})";

constexpr const char* kGemma4E2b = R"({
  "architectures": ["Gemma4ForConditionalGeneration"], "model_type": "gemma4",
  "text_config": {
    "model_type": "gemma4_text", "hidden_size": 1536, "num_hidden_layers": 35,
    "num_attention_heads": 8, "num_key_value_heads": 1, "head_dim": 256,
    "global_head_dim": 512, "intermediate_size": 6144, "vocab_size": 262144,
    "sliding_window": 512, "num_kv_shared_layers": 20, "use_double_wide_mlp": true,
    "hidden_size_per_layer_input": 256, "vocab_size_per_layer_input": 262144,
    "final_logit_softcapping": 30.0, "rms_norm_eps": 1e-06, "tie_word_embeddings": true,
    "max_position_embeddings": 131072, "hidden_activation": "gelu_pytorch_tanh",
    "layer_types": [%LAYER_TYPES%],
    "rope_parameters": {
      "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
      "full_attention": {"rope_type": "proportional", "rope_theta": 1000000.0,
                         "partial_rotary_factor": 0.25}},
    "bos_token_id": 2, "eos_token_id": [1, 106], "pad_token_id": 0
  }
})";

// Qwen3-0.6B's shape: head_dim 128 != 1024 / 16, q/k norms, tied.
constexpr const char* kQwen3_06b = R"({
  "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3",
  "hidden_size": 1024, "num_hidden_layers": 28, "num_attention_heads": 16,
  "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 3072,
  "vocab_size": 151936, "rms_norm_eps": 1e-06, "max_position_embeddings": 40960,
  "rope_theta": 1000000.0, "tie_word_embeddings": true, "attention_bias": false,
  "use_sliding_window": false, "max_window_layers": 28,
  "bos_token_id": 151643, "eos_token_id": 151645
})";

// The same matrices in a Llama decoder (no q/k norms): the Qwen3 shape's
// family overhead at equal bytes per token (staticlm bench).
constexpr const char* kQwen3_06bLlama = R"({
  "architectures": ["LlamaForCausalLM"], "model_type": "llama",
  "hidden_size": 1024, "num_hidden_layers": 28, "num_attention_heads": 16,
  "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 3072,
  "vocab_size": 151936, "rms_norm_eps": 1e-06, "max_position_embeddings": 40960,
  "rope_theta": 1000000.0, "tie_word_embeddings": true,
  "bos_token_id": 151643, "eos_token_id": 151645
})";

constexpr const char* kTinyLlama = R"({
  "architectures": ["LlamaForCausalLM"], "model_type": "llama",
  "hidden_size": 256, "num_hidden_layers": 4, "num_attention_heads": 8,
  "num_key_value_heads": 2, "intermediate_size": 768, "vocab_size": 1024,
  "rms_norm_eps": 1e-05, "max_position_embeddings": 2048, "rope_theta": 10000.0,
  "tie_word_embeddings": false, "bos_token_id": 1, "eos_token_id": 2
})";

}  // namespace

std::vector<std::string> builtin_config_names() {
    return {"llama-3.2-1b", "gemma-4-e2b", "qwen3-0.6b", "qwen3-0.6b-as-llama", "tiny-llama"};
}

ModelConfig builtin_config(const std::string& name) {
    if (name == "llama-3.2-1b") return parse_model_config(kLlama32_1b, "builtin:llama-3.2-1b");
    if (name == "tiny-llama") return parse_model_config(kTinyLlama, "builtin:tiny-llama");
    if (name == "qwen3-0.6b") return parse_model_config(kQwen3_06b, "builtin:qwen3-0.6b");
    if (name == "qwen3-0.6b-as-llama") return parse_model_config(kQwen3_06bLlama, "builtin:qwen3-0.6b-as-llama");
    if (name == "gemma-4-e2b") {
        std::string types;
        for (int il = 0; il < 35; ++il)
            types += std::string(il ? ", " : "") + ((il % 5 == 4) ? "\"full_attention\"" : "\"sliding_attention\"");
        std::string text = kGemma4E2b;
        text.replace(text.find("%LAYER_TYPES%"), 13, types);
        return parse_model_config(text, "builtin:gemma-4-e2b");
    }
    std::string known;
    for (const std::string& n : builtin_config_names()) known += (known.empty() ? "" : ", ") + n;
    throw Error(ErrorKind::config, "unknown built-in model '" + name + "' (known: " + known + ")");
}

std::shared_ptr<const Model> Model::synthetic(const ModelConfig& config, WeightType weights, uint64_t seed,
                                              int threads, int act_bits) {
    detail::check_act_bits(act_bits);
    const auto t_start = std::chrono::steady_clock::now();
    auto model = std::make_shared<Model>();
    model->config_ = config;
    model->weight_type_ = weights;
    std::vector<WeightEntry> plan = detail::plan_weights(model->config_, model->weights_, detail::TensorNaming{});
    model->arena_ = detail::layout_arena(plan, weights);

    struct Task {
        size_t entry;
        int n0, n1;
    };
    std::vector<Task> tasks;
    for (size_t i = 0; i < plan.size(); ++i) {
        WeightEntry& e = plan[i];
        if (e.kind == WeightEntry::Kind::scalar) {
            *e.scalar = 1.0f;
        } else if (e.kind == WeightEntry::Kind::vector) {
            std::fill_n(const_cast<float*>(*e.vector), e.n, e.norm ? 1.0f : 0.0f);  // norms 1, biases 0
        } else {
            const int rows = detail::chunk_rows(e.k, sizeof(float));
            for (int n0 = 0; n0 < e.n; n0 += rows) tasks.push_back({i, n0, std::min(e.n, n0 + rows)});
        }
    }
    detail::check_threads(threads, "load options");
    const int n_threads = detail::resolve_threads(threads);
    const long n_tasks = long(tasks.size());
    // Each task packs its rows as a sub-matrix into its panels: every layout
    // of kernels/formats/ is panel-major, so rows [n0, n1) with n0 % 16 == 0 start
    // at panel n0/16. Checked once here against packed_bytes.
    for (size_t i = 0; i < plan.size(); ++i) {
        const WeightEntry& e = plan[i];
        if (e.kind != WeightEntry::Kind::matrix) continue;
        const size_t panel = kernels::packed_bytes(e.matrix->type, kernels::kPanelRows, e.k);
        const size_t n_panels = size_t(e.n + kernels::kPanelRows - 1) / kernels::kPanelRows;
        if (panel * n_panels != e.bytes)
            throw Error(ErrorKind::model, "packed layout of " + e.name + " is not panel-major");
    }
    // One panel of rows at a time: the f32 rows ([16][k], at most 512 KiB)
    // are packed while still in L2, and each arena page is written once.
    using Rows = std::vector<float>;
    detail::run_tasks_in_order<Rows>(n_threads, n_tasks, [&](long ti, const kernels::Team&, Rows& buf) {
        const Task& task = tasks[size_t(ti)];
        const WeightEntry& e = plan[task.entry];
        buf.resize(size_t(kernels::kPanelRows) * size_t(e.k));
        const size_t panel = kernels::packed_bytes(e.matrix->type, kernels::kPanelRows, e.k);
        for (int p0 = task.n0; p0 < task.n1; p0 += kernels::kPanelRows) {
            const int rows = std::min(kernels::kPanelRows, task.n1 - p0);
            for (int r = 0; r < rows; ++r)
                fill_row(seed, task.entry, p0 + r, e.k, buf.data() + size_t(r) * size_t(e.k));
            std::byte* dst = e.matrix->data + size_t(p0 / kernels::kPanelRows) * panel;
            kernels::pack_weights(e.matrix->type, SrcType::f32, buf.data(), rows, e.k, 0, rows, dst);
        }
    });
    detail::finish_weights(*model, std::move(plan), act_bits);
    model->load_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
    return model;
}

}  // namespace staticlm
