// The Gemma 3 family: Gemma3ForCausalLM and the text decoder of
// Gemma3ForConditionalGeneration (transformers 5.24 models/gemma3): sliding
// and full layers with their own RoPE, RMSNorm with (1 + w), q/k norms,
// sandwich norms, query_pre_attn_scalar; its GGUF form (llama.cpp's gemma3
// architecture); the Gemma 3 chat template.
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
const Range kFactor{1, kFloatMax};

// One layer type's RoPE: default, or linear (inv_freq / factor).
struct Rope {
    float theta = 10000.0f;
    float factor = 1.0f;
};

std::vector<float> rope_inv_freq(const Rope& rope, int head_dim) {
    std::vector<float> inv = rope_inv_freq_default(head_dim, rope.theta);
    if (rope.factor != 1.0f)
        for (float& f : inv) f /= rope.factor;
    return inv;
}

// A rope object of config.json ({"rope_type": "linear", "factor": 8}):
// default or linear, else unsupported.
float rope_factor(const ConfigReader& p, const std::string& what) {
    const std::string type = p.string("rope_type", p.string("type", "default"));
    if (type == "default") return 1.0f;
    if (type != "linear")
        throw Error(ErrorKind::unsupported, "unsupported rope type '" + type + "' for " + what + " in " + p.file +
                                                " (supported: default, linear)");
    return p.real("factor", std::nullopt, kFactor);
}

ModelConfig parse_gemma3(const ConfigReader& r, const ConfigReader&) {
    using detail::kMaxDim, detail::kMaxHeads, detail::kMaxLayers, detail::kMaxVocab;
    const json& t = r.j;
    ModelConfig c;
    c.hidden = int(r.integer("hidden_size", 2304, 1, kMaxDim));
    c.n_layers = int(r.integer("num_hidden_layers", 26, 1, kMaxLayers));
    const int n_heads = int(r.integer("num_attention_heads", 8, 1, kMaxHeads));
    const int n_kv = int(r.integer("num_key_value_heads", 4, 1, kMaxHeads));
    if (n_heads % n_kv != 0)
        r.fail(ErrorKind::format, "num_attention_heads",
               "= " + std::to_string(n_heads) + " is not a multiple of num_key_value_heads = " + std::to_string(n_kv));
    const int head_dim = int(r.integer("head_dim", 256, 2, kMaxDim));
    if (head_dim % 2) r.fail(ErrorKind::format, "head_dim", "must be even (RoPE pairs)");
    if (int64_t(n_heads) * head_dim > kMaxDim) r.fail(ErrorKind::format, "num_attention_heads", "× head_dim is too large");
    const int ffn = int(r.integer("intermediate_size", 9216, 1, kMaxDim));
    c.vocab = int(r.integer("vocab_size", 262208, 1, kMaxVocab));
    c.rms_eps = r.real("rms_norm_eps", 1e-6, Range{0, 1, true, false});
    c.max_position = int(r.integer("max_position_embeddings", 131072, 2, INT32_MAX));
    const int window = int(r.integer("sliding_window", 4096, 1, INT32_MAX));
    const double scalar = r.number("query_pre_attn_scalar", 256.0, Range{0, kFloatMax, true, false});
    c.final_softcap = r.real("final_logit_softcapping", 0.0, Range{0, kFloatMax});  // null: off
    // transformers' Gemma 3 attention never reads attn_logit_softcapping
    // (released configs have null), so neither does staticlm.
    const std::string act = r.string("hidden_activation", "gelu_pytorch_tanh");
    if (act != "gelu_pytorch_tanh")
        r.fail(ErrorKind::unsupported, "hidden_activation", "= '" + act + "' is not supported (gelu_pytorch_tanh)");
    if (r.boolean("attention_bias", false)) r.fail(ErrorKind::unsupported, "attention_bias", "= true is not supported");
    if (r.boolean("use_bidirectional_attention", false))
        r.fail(ErrorKind::unsupported, "use_bidirectional_attention", "= true is not supported");
    c.activation = Activation::gelu_tanh;
    c.norm_weight_offset = 1.0f;  // Gemma3RMSNorm: (1 + w)
    c.embed_scale = float(std::sqrt(double(c.hidden)));
    const std::vector<int> bos = r.id_list("bos_token_id");
    c.bos_id = bos.empty() ? 2 : bos[0];
    c.eos_ids = r.has("eos_token_id") ? r.id_list("eos_token_id") : std::vector<int>{1};
    const std::vector<int> pad = r.id_list("pad_token_id");
    c.pad_id = pad.empty() ? 0 : pad[0];
    c.add_bos = true;

    // Layer types: layer_types, else every sliding_window_pattern-th layer is
    // full (transformers 5.24 reads "sliding_window_pattern" or the older
    // "_sliding_window_pattern"; default 6). Unlike Gemma 4, the last layer
    // is not forced to be full.
    std::vector<bool> sliding(size_t(c.n_layers));
    if (r.has("layer_types")) {
        if (!t["layer_types"].is_array() || t["layer_types"].size() != size_t(c.n_layers))
            r.fail(ErrorKind::format, "layer_types", "must be a list of num_hidden_layers entries");
        for (size_t il = 0; il < sliding.size(); ++il) {
            const json& v = t["layer_types"][il];
            const std::string type = v.is_string() ? v.get<std::string>() : "";
            if (type != "sliding_attention" && type != "full_attention") {
                std::string what = "[";  // built step by step: gcc 12's -Wrestrict misfires on the + chain
                what += std::to_string(il);
                what += "] = ";
                what += v.dump();
                what += " is not supported";
                r.fail(ErrorKind::unsupported, "layer_types", what);
            }
            sliding[il] = type == "sliding_attention";
        }
    } else {
        const std::string key = r.has("sliding_window_pattern") ? "sliding_window_pattern" : "_sliding_window_pattern";
        const int pattern = int(r.integer(key, 6, 1, INT32_MAX));
        for (int il = 0; il < c.n_layers; ++il) sliding[size_t(il)] = (il + 1) % pattern != 0;
    }

    // RoPE: transformers 5's rope_parameters per layer type, or the released
    // form: rope_theta + rope_scaling for full layers, rope_local_base_freq
    // (default RoPE) for sliding ones.
    Rope full{1e6f, 1.0f}, local{1e4f, 1.0f};
    if (r.has("rope_parameters")) {
        const ConfigReader rp = r.object("rope_parameters");
        for (auto [type, rope] : {std::pair<const char*, Rope*>{"full_attention", &full}, {"sliding_attention", &local}}) {
            if (!rp.has(type)) continue;
            const ConfigReader p = rp.object(type);
            rope->theta = p.real("rope_theta", double(rope->theta), kTheta);
            rope->factor = rope_factor(p, type);
        }
    } else {
        full.theta = r.real("rope_theta", 1e6, kTheta);
        local.theta = r.real("rope_local_base_freq", 1e4, kTheta);
        if (r.has("rope_scaling")) full.factor = rope_factor(r.object("rope_scaling"), "full_attention");
    }

    c.layers.resize(size_t(c.n_layers));
    for (int il = 0; il < c.n_layers; ++il) {
        LayerConfig& lc = c.layers[size_t(il)];
        const bool s = sliding[size_t(il)];
        lc.attention = s ? AttentionType::sliding : AttentionType::full;
        lc.n_heads = n_heads;
        lc.n_kv_heads = n_kv;
        lc.head_dim = head_dim;
        lc.window = s ? window : 0;
        lc.kv_source = il;
        lc.ffn_dim = ffn;
        lc.attn_scale = float(1.0 / std::sqrt(scalar));
        lc.inv_freq = rope_inv_freq(s ? local : full, head_dim);
        lc.qk_norm = true;
        lc.sandwich_norms = true;
    }
    return c;
}

// llama.cpp's gemma3 architecture. Not in the file, as llama.cpp assumes:
// every 6th layer is full (attention.sliding_window_pattern when present),
// sliding layers use rope.freq_base_swa (default 10000) and no scaling,
// full layers rope.freq_base with rope.scaling (linear only); the query
// scale is 1/sqrt(key_length) (query_pre_attn_scalar = head_dim), except for
// the 62-layer 27B (1/sqrt(hidden / heads)). Norm weights are stored as
// 1 + w, so they are used as they are.
ModelConfig parse_gguf_gemma3(const GgufFile& f) {
    const GgufModelInfo info = read_gguf_model_info(f);
    ModelConfig c = gguf_base_config(f, info);
    c.activation = Activation::gelu_tanh;
    c.norm_weight_offset = 0.0f;
    c.embed_scale = float(std::sqrt(double(c.hidden)));
    auto real = [&](const std::string& key, double fallback, double lo, double hi) {
        const double v = f.find(key) ? f.get_float(key) : fallback;
        if (!(v >= lo && v <= hi))
            throw Error(ErrorKind::format, f.key_where(key) + " = " + std::to_string(v) + " is outside [" +
                                               std::to_string(lo) + ", " + std::to_string(hi) + "]");
        return v;
    };
    c.final_softcap = float(real("gemma3.final_logit_softcapping", 0.0, 0.0, kFloatMax));
    const int window = int(f.get_uint("gemma3.attention.sliding_window", uint64_t(INT32_MAX)));
    if (window < 1) throw Error(ErrorKind::format, f.key_where("gemma3.attention.sliding_window") + " = 0");
    const int pattern = f.find("gemma3.attention.sliding_window_pattern")
                            ? int(f.get_uint("gemma3.attention.sliding_window_pattern", uint64_t(INT32_MAX)))
                            : 6;
    if (pattern < 1)
        throw Error(ErrorKind::format, f.key_where("gemma3.attention.sliding_window_pattern") + " = 0");
    Rope full{float(info.rope_theta), 1.0f};
    const Rope local{float(real("gemma3.rope.freq_base_swa", 10000.0, 1.0, kFloatMax)), 1.0f};
    if (f.find("gemma3.rope.scaling.type")) {
        const std::string_view type = f.get_string("gemma3.rope.scaling.type");
        if (type == "linear")
            full.factor = float(real("gemma3.rope.scaling.factor", 1.0, 1.0, kFloatMax));
        else if (type != "none")
            throw Error(ErrorKind::unsupported, f.key_where("gemma3.rope.scaling.type") + " = '" + std::string(type) +
                                                    "' is not supported (none, linear)");
    }
    const double scalar = info.n_layers == 62 ? double(info.hidden) / info.n_heads : double(info.head_dim);
    for (int il = 0; il < c.n_layers; ++il) {
        LayerConfig& lc = c.layers[size_t(il)];
        const bool s = (il + 1) % pattern != 0;
        lc.attention = s ? AttentionType::sliding : AttentionType::full;
        lc.window = s ? window : 0;
        lc.attn_scale = float(1.0 / std::sqrt(scalar));
        lc.inv_freq = rope_inv_freq(s ? local : full, lc.head_dim);
        lc.qk_norm = true;
        lc.sandwich_norms = true;
    }
    return c;
}

constexpr ConfigForm kForms[] = {
    {.architecture = "Gemma3ForConditionalGeneration", .model_type = "gemma3", .nested = true, .tie_default = true},
    {.architecture = "Gemma3ForCausalLM", .model_type = "gemma3_text", .nested = false, .tie_default = true},
};
constexpr std::string_view kGguf[] = {"gemma3"};
// transformers 5.24 saves the multimodal form under the released names.
constexpr TensorLayout kLayouts[] = {{"language_model.model.", "language_model.lm_head.weight"},
                                     {"model.", "lm_head.weight"}};
constexpr IgnoredTensors kIgnored[] = {
    {"vision_tower.", "vision tower"},
    {"multi_modal_projector.", "multimodal projector"},
};

}  // namespace

// Gemma 3's template (google/gemma-3-*-it): the system text opens the first
// user turn; the model's turns are "model".
const ChatTemplate kGemma3Chat{
    .name = "gemma3",
    .marker = "<start_of_turn>",
    .bos = "<bos>",
    .system = "{content}\n\n",
    .system_in_first_user = true,
    .user = "<start_of_turn>user\n{system}{content}<end_of_turn>\n",
    .assistant = "<start_of_turn>model\n",
    .end_of_turn = "<end_of_turn>",
    .after_turn = "\n",
    .generation_prompt = "<start_of_turn>model\n",
    .trim = true,
    .stop_tokens = {"<end_of_turn>", "<eos>"},
};

extern const FamilyDescriptor kGemma3Family;  // listed in families.cpp
const FamilyDescriptor kGemma3Family{
    .name = "gemma3",
    .forms = kForms,
    .gguf_architectures = kGguf,
    .parse = parse_gemma3,
    .parse_gguf = parse_gguf_gemma3,
    .hf_layouts = kLayouts,
    .hf_name = hf_tensor_name,
    .ignored = kIgnored,
    .chat = &kGemma3Chat,
};

}  // namespace staticlm
