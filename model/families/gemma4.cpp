// The Gemma 4 family: Gemma4ForCausalLM and the text decoder of
// Gemma4ForConditionalGeneration (transformers 5.24 models/gemma4): layer
// types, per-layer head dims and RoPE, KV sharing, double-wide MLP,
// per-layer inputs, layer scalars; the Gemma 4 chat template.
#include <cmath>

#include "model/config.hpp"
#include "model/config_reader.hpp"
#include "model/family.hpp"

namespace staticlm {

namespace {

using detail::ConfigReader;
using detail::json;
using detail::kFloatMax;
using detail::Range;

// RoPE of one layer type: "default" or "proportional".
std::vector<float> gemma_inv_freq(const ConfigReader& r, const std::string& type, int head_dim) {
    const bool full = type == "full_attention";
    std::string rope_type = full ? "proportional" : "default";
    float theta = full ? 1e6f : 1e4f;
    double partial = full ? 0.25 : 1.0;
    float factor = 1.0f;
    if (r.has("rope_parameters")) {
        const ConfigReader rp = r.object("rope_parameters");
        if (rp.j.contains(type)) {
            const ConfigReader p = rp.object(type);
            rope_type = p.string("rope_type", "default");
            theta = p.real("rope_theta", double(theta), Range{1, kFloatMax, true, false});
            partial = p.number("partial_rotary_factor", 1.0, Range{0, 1, true, false});
            factor = p.real("factor", 1.0, Range{1, kFloatMax});
        }
    }
    std::vector<float> inv(size_t(head_dim / 2), 0.0f);
    if (rope_type == "default") {
        if (partial != 1.0 || factor != 1.0f)
            throw Error(ErrorKind::unsupported, r.file + ": rope_parameters." + type +
                                                    ": default RoPE with partial_rotary_factor or "
                                                    "factor is not supported");
        return rope_inv_freq_default(head_dim, theta);
    }
    if (rope_type != "proportional")
        throw Error(ErrorKind::unsupported, "unsupported rope type '" + rope_type + "' for " + type + " in " +
                                                r.file + " (supported: default, proportional)");
    // n_rot pairs rotate with the exponent over the full head_dim; the rest pass through.
    const int n_rot = int(partial * head_dim / 2);  // as transformers: int(f * d // 2)
    const std::vector<float> base = rope_inv_freq_default(head_dim, theta);
    for (int i = 0; i < n_rot && i < head_dim / 2; ++i) inv[size_t(i)] = base[size_t(i)] / factor;
    return inv;
}

// A per_layer_config key: a layer index written in plain decimal digits.
int layer_index(const std::string& key, int n_layers) {
    if (key.empty() || key.size() > 9) return -1;
    for (char ch : key)
        if (ch < '0' || ch > '9') return -1;
    const int il = std::stoi(key);
    return il < n_layers ? il : -1;
}

ModelConfig parse_gemma4(const ConfigReader& r, const ConfigReader&) {
    using detail::kMaxDim, detail::kMaxHeads, detail::kMaxLayers, detail::kMaxVocab;
    const json& t = r.j;
    ModelConfig c;
    c.hidden = int(r.integer("hidden_size", 2304, 1, kMaxDim));
    c.n_layers = int(r.integer("num_hidden_layers", 30, 1, kMaxLayers));
    const int n_heads = int(r.integer("num_attention_heads", 8, 1, kMaxHeads));
    const int n_kv = int(r.integer("num_key_value_heads", 4, 1, kMaxHeads));
    const int head_dim = int(r.integer("head_dim", 256, 2, kMaxDim));
    const int ffn = int(r.integer("intermediate_size", 9216, 1, kMaxDim));
    c.vocab = int(r.integer("vocab_size", 262144, 1, kMaxVocab));
    c.rms_eps = r.real("rms_norm_eps", 1e-6, Range{0, 1, true, false});
    c.max_position = int(r.integer("max_position_embeddings", 131072, 2, INT32_MAX));
    const int window = int(r.integer("sliding_window", 512, 1, INT32_MAX));
    const int n_shared = int(r.integer("num_kv_shared_layers", 0, 0, INT32_MAX));
    if (n_shared >= c.n_layers)
        r.fail(ErrorKind::format, "num_kv_shared_layers",
               "= " + std::to_string(n_shared) + " must be less than num_hidden_layers = " + std::to_string(c.n_layers));
    const bool double_wide = r.boolean("use_double_wide_mlp", false);
    c.per_layer_dim = int(r.integer("hidden_size_per_layer_input", 256, 0, kMaxDim));
    c.per_layer_vocab = c.per_layer_dim ? int(r.integer("vocab_size_per_layer_input", 262144, 1, kMaxVocab)) : 0;
    if (int64_t(c.per_layer_dim) * c.n_layers > INT32_MAX / 2)
        r.fail(ErrorKind::format, "hidden_size_per_layer_input", "× num_hidden_layers is too large");
    c.final_softcap = r.real("final_logit_softcapping", 0.0, Range{0, kFloatMax});  // 0: off
    const std::string act = r.string("hidden_activation", "gelu_pytorch_tanh");
    if (act != "gelu_pytorch_tanh")
        r.fail(ErrorKind::unsupported, "hidden_activation", "= '" + act + "' is not supported (gelu_pytorch_tanh)");
    c.activation = Activation::gelu_tanh;
    // attention_k_eq_v: full layers have no v_proj; V is the raw k_proj output.
    const bool k_eq_v = r.boolean("attention_k_eq_v", false);
    if (r.boolean("enable_moe_block", false)) r.fail(ErrorKind::unsupported, "enable_moe_block", "= true is not supported");
    if (r.boolean("attention_bias", false)) r.fail(ErrorKind::unsupported, "attention_bias", "= true is not supported");
    if (r.string("use_bidirectional_attention", "") == "all")
        r.fail(ErrorKind::unsupported, "use_bidirectional_attention", "= 'all' is not supported");
    c.embed_scale = std::sqrt(float(c.hidden));
    const std::vector<int> bos = r.id_list("bos_token_id");
    c.bos_id = bos.empty() ? 2 : bos[0];
    c.eos_ids = r.has("eos_token_id") ? r.id_list("eos_token_id") : std::vector<int>{1};
    const std::vector<int> pad = r.id_list("pad_token_id");
    c.pad_id = pad.empty() ? 0 : pad[0];
    c.add_bos = true;

    // Layer types (transformers: default 5 sliding : 1 full, last forced to full).
    std::vector<std::string> types;
    if (r.has("layer_types")) {
        if (!t["layer_types"].is_array()) r.fail(ErrorKind::format, "layer_types", "must be a list");
        for (const json& v : t["layer_types"]) {
            if (!v.is_string()) r.fail(ErrorKind::format, "layer_types", "must be a list of strings");
            types.push_back(v.get<std::string>());
        }
        if (types.size() != size_t(c.n_layers))
            r.fail(ErrorKind::format, "layer_types",
                   "has " + std::to_string(types.size()) + " entries but num_hidden_layers = " +
                       std::to_string(c.n_layers));
    } else {
        for (int il = 0; il < c.n_layers; ++il) types.push_back((il + 1) % 6 ? "sliding_attention" : "full_attention");
    }
    for (size_t il = 0; il < types.size(); ++il)
        if (types[il] != "sliding_attention" && types[il] != "full_attention")
            r.fail(ErrorKind::unsupported, "layer_types", "[" + std::to_string(il) + "] = '" + types[il] + "' is not supported");
    types.back() = "full_attention";

    // Full layers' head_dim / kv heads: per_layer_config (as transformers 5.24
    // saves it) or global_head_dim / num_global_key_value_heads (as released).
    std::vector<int> layer_hd(size_t(c.n_layers), head_dim), layer_kv(size_t(c.n_layers), n_kv);
    if (r.has("per_layer_config")) {
        const ConfigReader plc = r.object("per_layer_config");
        for (auto it = plc.j.begin(); it != plc.j.end(); ++it) {
            const int il = layer_index(it.key(), c.n_layers);
            if (il < 0) r.fail(ErrorKind::format, "per_layer_config", "key '" + it.key() + "' is not a layer index");
            const ConfigReader p = plc.object(it.key());
            for (auto kv = it.value().begin(); kv != it.value().end(); ++kv)
                if (kv.key() != "head_dim" && kv.key() != "num_key_value_heads")
                    p.fail(ErrorKind::unsupported, kv.key(), "is not supported per layer");
            layer_hd[size_t(il)] = int(p.integer("head_dim", head_dim, 2, kMaxDim));
            layer_kv[size_t(il)] = int(p.integer("num_key_value_heads", n_kv, 1, kMaxHeads));
        }
    } else {
        const int ghd = int(r.integer("global_head_dim", 512, 2, kMaxDim));
        // transformers (5.24) applies num_global_key_value_heads only when
        // attention_k_eq_v is true (the field defaults to false).
        const int gkv = k_eq_v ? int(r.integer("num_global_key_value_heads", n_kv, 1, kMaxHeads)) : n_kv;
        for (int il = 0; il < c.n_layers; ++il)
            if (types[size_t(il)] == "full_attention") {
                layer_hd[size_t(il)] = ghd;
                layer_kv[size_t(il)] = gkv;
            }
    }

    const int first_shared = c.n_layers - n_shared;
    c.layers.resize(size_t(c.n_layers));
    for (int il = 0; il < c.n_layers; ++il) {
        LayerConfig& lc = c.layers[size_t(il)];
        const std::string& type = types[size_t(il)];
        lc.attention = type == "sliding_attention" ? AttentionType::sliding : AttentionType::full;
        lc.n_heads = n_heads;
        lc.n_kv_heads = layer_kv[size_t(il)];
        lc.k_eq_v = k_eq_v && lc.attention == AttentionType::full;
        lc.head_dim = layer_hd[size_t(il)];
        const std::string where = "layer " + std::to_string(il);
        if (lc.head_dim % 2) r.fail(ErrorKind::format, "head_dim", "of " + where + " must be even");
        if (n_heads % lc.n_kv_heads)
            r.fail(ErrorKind::format, "num_attention_heads",
                   "= " + std::to_string(n_heads) + " is not a multiple of the " + std::to_string(lc.n_kv_heads) +
                       " KV heads of " + where);
        if (int64_t(n_heads) * lc.head_dim > kMaxDim)
            r.fail(ErrorKind::format, "num_attention_heads", "× head_dim is too large");
        lc.window = lc.attention == AttentionType::sliding ? window : 0;
        lc.kv_source = il;
        if (il >= first_shared) {
            // The last non-shared layer of the same type.
            lc.kv_source = -1;
            for (int src = first_shared - 1; src >= 0; --src)
                if (types[size_t(src)] == type) {
                    lc.kv_source = src;
                    break;
                }
            if (lc.kv_source < 0)
                r.fail(ErrorKind::format, "num_kv_shared_layers",
                       "leaves no non-shared " + type + " layer for " + where + " to read K/V from");
            const LayerConfig& src = c.layers[size_t(lc.kv_source)];
            if (src.head_dim != lc.head_dim || src.n_kv_heads != lc.n_kv_heads)
                r.fail(ErrorKind::format, "num_kv_shared_layers",
                       where + " shares K/V with layer " + std::to_string(lc.kv_source) + " of a different head shape");
        }
        lc.ffn_dim = (double_wide && il >= first_shared) ? 2 * ffn : ffn;
        lc.attn_scale = 1.0f;
        lc.inv_freq = gemma_inv_freq(r, type, lc.head_dim);
        lc.qk_norm = true;
        lc.v_norm = true;
        lc.sandwich_norms = true;
        lc.layer_scalar = true;
    }
    return c;
}

constexpr ConfigForm kForms[] = {
    {.architecture = "Gemma4ForConditionalGeneration", .model_type = "gemma4", .nested = true, .tie_default = true},
    {.architecture = "Gemma4ForCausalLM", .model_type = "gemma4_text", .nested = false, .tie_default = true},
};
constexpr std::string_view kGguf[] = {"gemma4"};
// Multimodal checkpoints keep the decoder under model.language_model.
constexpr TensorLayout kLayouts[] = {{"model.language_model.", "lm_head.weight"}, {"model.", "lm_head.weight"}};
constexpr IgnoredTensors kIgnored[] = {
    {"model.vision_tower.", "vision tower"},
    {"model.audio_tower.", "audio tower"},
    {"model.embed_vision.", "vision embedding"},
    {"model.embed_audio.", "audio embedding"},
};

}  // namespace

// The template of the released checkpoints with thinking off (its default):
// the generation prompt opens the model turn with an empty thought channel;
// history turns are rendered without it (the template strips thinking).
const ChatTemplate kGemma4Chat{
    .name = "gemma4",
    .marker = "<|turn>",
    .bos = "<bos>",
    .system = "<|turn>system\n{content}<turn|>\n",
    .user = "<|turn>user\n{content}<turn|>\n",
    .assistant = "<|turn>model\n",
    .end_of_turn = "<turn|>",
    .after_turn = "\n",
    .generation_prompt = "<|turn>model\n<|channel>thought\n<channel|>",
    .trim = true,
    .stop_tokens = {"<turn|>", "<eos>"},
};

extern const FamilyDescriptor kGemma4Family;  // listed in families.cpp
const FamilyDescriptor kGemma4Family{
    .name = "gemma4",
    .forms = kForms,
    .gguf_architectures = kGguf,
    .parse = parse_gemma4,
    .parse_gguf = nullptr,
    .hf_layouts = kLayouts,
    .hf_name = hf_tensor_name,
    .ignored = kIgnored,
    .chat = &kGemma4Chat,
};

}  // namespace staticlm
