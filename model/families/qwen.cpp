// The Qwen families: Qwen2ForCausalLM (Qwen2, Qwen2.5, DeepSeek-R1-Distill-Qwen)
// and Qwen3ForCausalLM (dense Qwen3), as transformers 5.24 models/qwen2 and
// models/qwen3 define them: Llama's decoder with q/k/v biases (Qwen2) or
// per-head q/k RMSNorm (Qwen3), optional sliding-window layers, no BOS; their
// GGUF forms (llama.cpp's qwen2 and qwen3 architectures); the ChatML
// templates, Qwen3's with the thinking switch.
#include "llama_like.hpp"
#include "model/config.hpp"
#include "model/config_reader.hpp"
#include "model/family.hpp"
#include "model/gguf.hpp"

namespace staticlm {

namespace {

using detail::ConfigReader;

// Qwen2Config / Qwen3Config: `sliding_window` counts only with
// `use_sliding_window`, and then slides the layers from `max_window_layers` on
// (unless `layer_types` lists them).
void read_qwen_window(const ConfigReader& r, ModelConfig& c) {
    if (!r.boolean("use_sliding_window", false)) return;
    const int window = int(r.integer("sliding_window", 4096, 1, INT32_MAX));
    const int from = int(r.integer("max_window_layers", 28, 0, INT32_MAX));
    set_sliding_layers(r, c, window, [](int il, int first) { return il >= first; }, from);
}

ModelConfig parse_qwen2(const ConfigReader& r, const ConfigReader&) {
    ModelConfig c = parse_llama_like(r);
    c.add_bos = false;  // Qwen's tokenizer adds no BOS
    for (LayerConfig& lc : c.layers) lc.qkv_bias = true;
    read_qwen_window(r, c);
    return c;
}

ModelConfig parse_qwen3(const ConfigReader& r, const ConfigReader&) {
    ModelConfig c = parse_llama_like(r);
    c.add_bos = false;
    for (LayerConfig& lc : c.layers) lc.qk_norm = true;
    read_qwen_window(r, c);
    return c;
}

// llama.cpp writes neither a window nor a BOS rule of its own for these
// architectures; the tokenizer keys say whether to add BOS (the converter
// writes add_bos_token false for Qwen).
ModelConfig parse_qwen2_gguf(const GgufFile& f) {
    ModelConfig c = parse_llama_like_gguf(f);
    if (!f.find("tokenizer.ggml.add_bos_token")) c.add_bos = false;
    for (LayerConfig& lc : c.layers) lc.qkv_bias = true;
    return c;
}

ModelConfig parse_qwen3_gguf(const GgufFile& f) {
    ModelConfig c = parse_llama_like_gguf(f);
    if (!f.find("tokenizer.ggml.add_bos_token")) c.add_bos = false;
    for (LayerConfig& lc : c.layers) lc.qk_norm = true;
    return c;
}

// Qwen3-0.6B's shape (staticlm bench --synthetic qwen3-0.6b): head_dim 128 != 1024 / 16, tied.
constexpr std::string_view kQwen3_06b = R"({
  "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3",
  "hidden_size": 1024, "num_hidden_layers": 28, "num_attention_heads": 16,
  "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 3072,
  "vocab_size": 151936, "rms_norm_eps": 1e-06, "max_position_embeddings": 40960,
  "rope_theta": 1000000.0, "tie_word_embeddings": true, "attention_bias": false,
  "use_sliding_window": false, "max_window_layers": 28,
  "bos_token_id": 151643, "eos_token_id": 151645
})";

constexpr SyntheticShape kQwen3Synthetic[] = {{"qwen3-0.6b", kQwen3_06b}};

constexpr ConfigForm kQwen2Forms[] = {
    {.architecture = "Qwen2ForCausalLM", .model_type = "qwen2", .nested = false, .tie_default = false},
};
constexpr ConfigForm kQwen3Forms[] = {
    {.architecture = "Qwen3ForCausalLM", .model_type = "qwen3", .nested = false, .tie_default = false},
};
constexpr std::string_view kQwen2Gguf[] = {"qwen2"};
constexpr std::string_view kQwen3Gguf[] = {"qwen3"};
constexpr TensorLayout kLayouts[] = {{"model.", "lm_head.weight"}};

}  // namespace

// ChatML as Qwen2.5's template writes it: a system turn always, with Qwen's
// default text when the conversation has none.
const ChatTemplate kQwen2Chat{
    .name = "qwen2",
    .marker = "You are Qwen, created by Alibaba Cloud",
    .system = "<|im_start|>system\n{content}<|im_end|>\n",
    .always_system = true,
    .default_system = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.",
    .user = "<|im_start|>user\n{content}<|im_end|>\n",
    .assistant = "<|im_start|>assistant\n",
    .end_of_turn = "<|im_end|>",
    .after_turn = "\n",
    .generation_prompt = "<|im_start|>assistant\n",
    .stop_tokens = {"<|im_end|>", "<|endoftext|>"},
};

// Qwen3's: no default system turn; enable_thinking = false opens the reply
// with an empty thought block; earlier replies lose their reasoning.
const ChatTemplate kQwen3Chat{
    .name = "qwen3",
    .marker = "<|im_start|>",
    .system = "<|im_start|>system\n{content}<|im_end|>\n",
    .user = "<|im_start|>user\n{content}<|im_end|>\n",
    .assistant = "<|im_start|>assistant\n",
    .end_of_turn = "<|im_end|>",
    .after_turn = "\n",
    .generation_prompt = "<|im_start|>assistant\n",
    .no_thinking = "<think>\n\n</think>\n\n",
    .think_open = "<think>",
    .think_close = "</think>",
    .stop_tokens = {"<|im_end|>", "<|endoftext|>"},
};

extern const FamilyDescriptor kQwen2Family;  // listed in families.cpp
const FamilyDescriptor kQwen2Family{
    .name = "qwen2",
    .forms = kQwen2Forms,
    .gguf_architectures = kQwen2Gguf,
    .parse = parse_qwen2,
    .parse_gguf = parse_qwen2_gguf,
    .hf_layouts = kLayouts,
    .hf_name = hf_tensor_name,
    .ignored = {},
    .chat = &kQwen2Chat,
};

extern const FamilyDescriptor kQwen3Family;  // listed in families.cpp
const FamilyDescriptor kQwen3Family{
    .name = "qwen3",
    .forms = kQwen3Forms,
    .gguf_architectures = kQwen3Gguf,
    .parse = parse_qwen3,
    .parse_gguf = parse_qwen3_gguf,
    .hf_layouts = kLayouts,
    .hf_name = hf_tensor_name,
    .ignored = {},
    .chat = &kQwen3Chat,
    .synthetic = kQwen3Synthetic,
};

}  // namespace staticlm
