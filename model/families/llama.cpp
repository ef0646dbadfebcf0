// The Llama family: LlamaForCausalLM (Llama 2, 3, 3.1, 3.2; llama2.c
// conversions), its config.json keys and defaults (transformers 5.24
// models/llama), and the Llama 3 chat template.
#include <cmath>

#include "model/config.hpp"
#include "model/config_reader.hpp"
#include "model/family.hpp"
#include "model/gguf.hpp"

namespace staticlm {

namespace {

using detail::ConfigReader;
using detail::json;
using detail::kFloatMax;
using detail::Range;

const Range kTheta{1, kFloatMax, true, false};  // (1, FLT_MAX]: used as float

// transformers 5 `rope_parameters`, or the older top-level `rope_theta` + `rope_scaling`.
std::vector<float> llama_inv_freq(const ConfigReader& r, int head_dim) {
    std::string key;
    if (r.has("rope_parameters"))
        key = "rope_parameters";
    else if (r.has("rope_scaling"))
        key = "rope_scaling";
    float theta = r.real("rope_theta", 10000.0, kTheta);
    std::string type = "default";
    if (!key.empty()) {
        const ConfigReader p = r.object(key);
        theta = p.real("rope_theta", double(theta), kTheta);
        type = p.string("rope_type", p.string("type", "default"));
        if (p.number("partial_rotary_factor", 1.0) != 1.0)
            p.fail(ErrorKind::unsupported, "partial_rotary_factor", "other than 1 is not supported for Llama");
    }
    std::vector<float> inv = rope_inv_freq_default(head_dim, theta);
    if (type == "default") return inv;
    if (type != "llama3")
        throw Error(ErrorKind::unsupported,
                    "unsupported rope_scaling type '" + type + "' in " + r.file + " (supported: default, llama3)");
    // The llama3 rescaling runs in double (rope_apply_llama3): checked in double.
    const ConfigReader p = r.object(key);
    const double factor = p.number("factor", std::nullopt, Range{1, kFloatMax});
    const double low = p.number("low_freq_factor", std::nullopt, Range{0, kFloatMax, true, false});
    const double high = p.number("high_freq_factor", std::nullopt, Range{0, kFloatMax, true, false});
    const double orig = p.number("original_max_position_embeddings", std::nullopt, Range{1, 2147483647.0});
    if (!(high > low)) p.fail(ErrorKind::format, "high_freq_factor", "must be > low_freq_factor");
    rope_apply_llama3(inv, factor, low, high, orig);
    return inv;
}

ModelConfig parse_llama(const ConfigReader& r, const ConfigReader&) {
    using detail::kMaxDim, detail::kMaxHeads, detail::kMaxLayers, detail::kMaxVocab;
    ModelConfig c;
    c.hidden = int(r.integer("hidden_size", 0, 1, kMaxDim, true));
    c.n_layers = int(r.integer("num_hidden_layers", 0, 1, kMaxLayers, true));
    const int n_heads = int(r.integer("num_attention_heads", 0, 1, kMaxHeads, true));
    const int n_kv = int(r.integer("num_key_value_heads", n_heads, 1, kMaxHeads));
    if (n_heads % n_kv != 0)
        r.fail(ErrorKind::format, "num_attention_heads",
               "= " + std::to_string(n_heads) + " is not a multiple of num_key_value_heads = " + std::to_string(n_kv));
    if (!r.has("head_dim") && c.hidden % n_heads != 0)
        r.fail(ErrorKind::format, "hidden_size", "is not a multiple of num_attention_heads");
    const int head_dim = int(r.integer("head_dim", c.hidden / n_heads, 2, kMaxDim));
    if (head_dim % 2) r.fail(ErrorKind::format, "head_dim", "must be even (RoPE pairs)");
    if (int64_t(n_heads) * head_dim > kMaxDim) r.fail(ErrorKind::format, "num_attention_heads", "× head_dim is too large");
    const int ffn = int(r.integer("intermediate_size", 0, 1, kMaxDim, true));
    c.vocab = int(r.integer("vocab_size", 0, 1, kMaxVocab, true));
    c.rms_eps = r.real("rms_norm_eps", 1e-6, Range{0, 1, true, false});
    c.max_position = int(r.integer("max_position_embeddings", 2048, 2, INT32_MAX));
    const std::string act = r.string("hidden_act", "silu");
    if (act != "silu") r.fail(ErrorKind::unsupported, "hidden_act", "= '" + act + "' is not supported (silu)");
    if (r.boolean("attention_bias", false)) r.fail(ErrorKind::unsupported, "attention_bias", "= true is not supported");
    if (r.boolean("mlp_bias", false)) r.fail(ErrorKind::unsupported, "mlp_bias", "= true is not supported");
    c.activation = Activation::silu;
    c.embed_scale = 1.0f;
    const std::vector<int> bos = r.id_list("bos_token_id");
    c.bos_id = bos.empty() ? -1 : bos[0];
    c.eos_ids = r.id_list("eos_token_id");
    const std::vector<int> pad = r.id_list("pad_token_id");
    c.pad_id = pad.empty() ? -1 : pad[0];
    c.add_bos = true;

    LayerConfig lc;
    lc.attention = AttentionType::full;
    lc.n_heads = n_heads;
    lc.n_kv_heads = n_kv;
    lc.head_dim = head_dim;
    lc.window = 0;
    lc.ffn_dim = ffn;
    lc.attn_scale = float(1.0 / std::sqrt(double(head_dim)));
    lc.inv_freq = llama_inv_freq(r, head_dim);
    c.layers.assign(size_t(c.n_layers), lc);
    for (int il = 0; il < c.n_layers; ++il) c.layers[size_t(il)].kv_source = il;
    return c;
}

// llama.cpp's llama architecture: rope.dimension_count must be the head size;
// Llama 3 scaling arrives as rope_freqs.weight (per-frequency divisors, as
// llama.cpp applies them), older linear scaling as rope.scaling.*.
ModelConfig parse_gguf_llama(const GgufFile& f) {
    const GgufModelInfo info = read_gguf_model_info(f);
    ModelConfig c = gguf_base_config(f, info);
    c.activation = Activation::silu;
    if (f.find("llama.rope.dimension_count") &&
        f.get_uint("llama.rope.dimension_count", uint64_t(INT32_MAX)) != uint64_t(info.head_dim))
        throw Error(ErrorKind::unsupported, f.key_where("llama.rope.dimension_count") + " = " +
                                                std::to_string(f.get_uint("llama.rope.dimension_count")) +
                                                ": partial rotary embeddings are not supported (head size " +
                                                std::to_string(info.head_dim) + ")");
    std::vector<float> inv = rope_inv_freq_default(info.head_dim, info.rope_theta);
    if (f.find("llama.rope.scaling.type")) {
        const std::string_view type = f.get_string("llama.rope.scaling.type");
        if (type == "linear") {
            const double factor = f.get_float("llama.rope.scaling.factor");
            if (!(factor >= 1 && factor <= double(kFloatMax)))
                throw Error(ErrorKind::format, f.key_where("llama.rope.scaling.factor") + " = " +
                                                   std::to_string(factor) + " is outside [1, FLT_MAX]");
            for (float& x : inv) x = float(x / factor);
        } else if (type != "none" && type != "llama3") {  // llama3: rope_freqs.weight
            throw Error(ErrorKind::unsupported, f.key_where("llama.rope.scaling.type") + " = '" + std::string(type) +
                                                    "' is not supported (none, linear, llama3)");
        }
    }
    if (const GgufTensor* t = f.find_tensor("rope_freqs.weight")) {
        const std::vector<float> div = gguf_read_f32(*t);  // shape checked: head_dim / 2
        for (size_t i = 0; i < inv.size(); ++i) {
            if (!(div[i] > 0) || !std::isfinite(div[i]))
                throw Error(ErrorKind::format, "value " + std::to_string(div[i]) + " at index " + std::to_string(i) +
                                                   " of " + t->where() + " is not a positive frequency divisor");
            inv[i] /= div[i];
        }
    }
    for (LayerConfig& lc : c.layers) lc.inv_freq = inv;
    return c;
}

constexpr ConfigForm kForms[] = {
    {.architecture = "LlamaForCausalLM", .model_type = "llama", .nested = false, .tie_default = false},
};
constexpr std::string_view kGguf[] = {"llama"};
constexpr TensorLayout kLayouts[] = {{"model.", "lm_head.weight"}};

}  // namespace

// Llama 3.1/3.2 (the 3.0 template has no system block and is not this one).
// The system block is always there, dated by ChatOptions::date.
const ChatTemplate kLlama3Chat{
    .name = "llama3",
    .marker = "<|start_header_id|>",
    .bos = "<|begin_of_text|>",
    .system = "<|start_header_id|>system<|end_header_id|>\n\n"
              "Cutting Knowledge Date: December 2023\nToday Date: {date}\n\n{content}<|eot_id|>",
    .always_system = true,
    .user = "<|start_header_id|>user<|end_header_id|>\n\n{content}<|eot_id|>",
    .assistant = "<|start_header_id|>assistant<|end_header_id|>\n\n",
    .end_of_turn = "<|eot_id|>",
    .generation_prompt = "<|start_header_id|>assistant<|end_header_id|>\n\n",
    .trim = true,
    .stop_tokens = {"<|eot_id|>", "<|eom_id|>", "<|end_of_text|>"},
};

extern const FamilyDescriptor kLlamaFamily;  // listed in families.cpp
const FamilyDescriptor kLlamaFamily{
    .name = "llama",
    .forms = kForms,
    .gguf_architectures = kGguf,
    .parse = parse_llama,
    .parse_gguf = parse_gguf_llama,
    .gguf_qk_interleaved = true,
    .hf_layouts = kLayouts,
    .hf_name = hf_tensor_name,
    .ignored = {},
    .chat = &kLlama3Chat,
};

}  // namespace staticlm
