// The Llama family: LlamaForCausalLM (Llama 2, 3, 3.1, 3.2; llama2.c
// conversions), its config.json keys and defaults (transformers 5.24
// models/llama), and the Llama 3 chat template.
#include <algorithm>
#include <cmath>

#include "model/config.hpp"
#include "model/config_reader.hpp"
#include "model/family.hpp"
#include "model/gguf.hpp"
#include "llama_like.hpp"

namespace staticlm {

namespace {

using detail::ConfigReader;
using detail::json;
using detail::kFloatMax;
using detail::Range;

const Range kTheta{1, kFloatMax, true, false};  // (1, FLT_MAX]: used as float

// The RoPE of a Llama-like config: transformers 5 `rope_parameters`, or the
// older top-level `rope_theta` + `rope_scaling`. Sets every layer's inv_freq
// and, for YaRN, folds the attention factor into the attention scale.
void read_llama_rope(const ConfigReader& r, ModelConfig& c) {
    const int head_dim = c.layers.front().head_dim;
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
    double attention_factor = 1.0;
    if (type == "linear") {
        const float factor = r.object(key).real("factor", std::nullopt, Range{1, kFloatMax});
        for (float& f : inv) f /= factor;
    } else if (type == "llama3") {
        // The llama3 rescaling runs in double (rope_apply_llama3): checked in double.
        const ConfigReader p = r.object(key);
        const double factor = p.number("factor", std::nullopt, Range{1, kFloatMax});
        const double low = p.number("low_freq_factor", std::nullopt, Range{0, kFloatMax, true, false});
        const double high = p.number("high_freq_factor", std::nullopt, Range{0, kFloatMax, true, false});
        const double orig = p.number("original_max_position_embeddings", std::nullopt, Range{1, 2147483647.0});
        if (!(high > low)) p.fail(ErrorKind::format, "high_freq_factor", "must be > low_freq_factor");
        rope_apply_llama3(inv, factor, low, high, orig);
    } else if (type == "yarn") {
        const ConfigReader p = r.object(key);
        Yarn y;
        y.factor = p.number("factor", std::nullopt, Range{1, kFloatMax});
        // transformers falls back to max_position_embeddings.
        y.original_max_position = p.number("original_max_position_embeddings", double(c.max_position),
                                           Range{1, 2147483647.0});
        y.beta_fast = p.number("beta_fast", 32.0, Range{0, kFloatMax, true, false});
        y.beta_slow = p.number("beta_slow", 1.0, Range{0, kFloatMax, true, false});
        y.attention_factor = p.number("attention_factor", 0.0, Range{0, kFloatMax});
        y.truncate = p.boolean("truncate", true);
        if (p.has("mscale") || p.has("mscale_all_dim"))
            p.fail(ErrorKind::unsupported, "mscale", "(DeepSeek's YaRN variant) is not supported");
        attention_factor = rope_apply_yarn(inv, head_dim, theta, y);
        if (!std::isfinite(float(attention_factor * attention_factor)))
            p.fail(ErrorKind::format, "attention_factor", "gives a non-finite attention scale");
    } else if (type != "default") {
        throw Error(ErrorKind::unsupported, "unsupported rope_scaling type '" + type + "' in " + r.file +
                                                " (supported: default, linear, llama3, yarn)");
    }
    for (LayerConfig& lc : c.layers) {
        lc.inv_freq = inv;
        lc.attn_scale = float(attention_factor * attention_factor / std::sqrt(double(lc.head_dim)));
    }
}

}  // namespace

double rope_apply_yarn(std::vector<float>& inv, int head_dim, double theta, const Yarn& y) {
    // fp32 as transformers: pos_freqs = theta^(2i/d), extrapolated 1/pos_freqs,
    // interpolated 1/(factor·pos_freqs), mixed by a ramp over i in [low, high].
    const int half = head_dim / 2;
    auto correction_dim = [&](double rotations) {
        return head_dim * std::log(y.original_max_position / (rotations * 2 * M_PI)) / (2 * std::log(theta));
    };
    double low = correction_dim(y.beta_fast), high = correction_dim(y.beta_slow);
    if (y.truncate) {
        low = std::floor(low);
        high = std::ceil(high);
    }
    low = std::max(low, 0.0);
    high = std::min(high, double(head_dim - 1));
    if (low == high) high += 0.001;  // a zero-width ramp
    const float flo = float(low), fhi = float(high), ffactor = float(y.factor);
    for (int i = 0; i < half; ++i) {
        const float pos = std::pow(float(theta), float(2 * i) / float(head_dim));
        const float extra = 1.0f / pos, inter = 1.0f / (ffactor * pos);
        const float ramp = std::clamp((float(i) - flo) / (fhi - flo), 0.0f, 1.0f);
        const float keep = 1.0f - ramp;  // the extrapolation's share
        inv[size_t(i)] = inter * (1.0f - keep) + extra * keep;
    }
    if (y.attention_factor > 0) return y.attention_factor;
    return y.factor <= 1 ? 1.0 : 0.1 * std::log(y.factor) + 1.0;
}

ModelConfig parse_llama_like(const ConfigReader& r, bool read_rope) {
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
    c.layers.assign(size_t(c.n_layers), lc);
    for (int il = 0; il < c.n_layers; ++il) c.layers[size_t(il)].kv_source = il;
    if (read_rope) read_llama_rope(r, c);
    return c;
}

void set_sliding_layers(const ConfigReader& r, ModelConfig& c, int window, bool (*slides)(int, int), int arg) {
    if (window <= 0) return;
    std::vector<bool> sliding(size_t(c.n_layers));
    if (r.has("layer_types")) {
        const json& types = r.j["layer_types"];
        if (!types.is_array() || types.size() != size_t(c.n_layers))
            r.fail(ErrorKind::format, "layer_types", "must list one type per layer (" + std::to_string(c.n_layers) + ")");
        for (size_t il = 0; il < types.size(); ++il) {
            const std::string t = types[il].is_string() ? types[il].get<std::string>() : "";
            if (t != "full_attention" && t != "sliding_attention")
                r.fail(ErrorKind::unsupported, "layer_types",
                       "entry " + std::to_string(il) + " is not \"full_attention\" or \"sliding_attention\"");
            sliding[il] = t == "sliding_attention";
        }
    } else {
        for (int il = 0; il < c.n_layers; ++il) sliding[size_t(il)] = slides(il, arg);
    }
    for (int il = 0; il < c.n_layers; ++il)
        if (sliding[size_t(il)]) {
            c.layers[size_t(il)].attention = AttentionType::sliding;
            c.layers[size_t(il)].window = window;
        }
}

// llama.cpp's Llama-like architectures: rope.dimension_count must be the head
// size; Llama 3 scaling arrives as rope_freqs.weight (per-frequency divisors,
// as llama.cpp applies them), linear and YaRN scaling as rope.scaling.*.
ModelConfig parse_llama_like_gguf(const GgufFile& f, bool read_rope) {
    const GgufModelInfo info = read_gguf_model_info(f);
    ModelConfig c = gguf_base_config(f, info);
    c.activation = Activation::silu;
    if (!read_rope) return c;
    const std::string p = info.architecture + ".";
    if (f.find(p + "rope.dimension_count") &&
        f.get_uint(p + "rope.dimension_count", uint64_t(INT32_MAX)) != uint64_t(info.head_dim))
        throw Error(ErrorKind::unsupported, f.key_where(p + "rope.dimension_count") + " = " +
                                                std::to_string(f.get_uint(p + "rope.dimension_count")) +
                                                ": partial rotary embeddings are not supported (head size " +
                                                std::to_string(info.head_dim) + ")");
    // A float key in [lo, hi] (it is used in double precision).
    auto real_key = [&](const std::string& key, double lo, double hi) {
        const double v = f.get_float(key);
        if (!(v >= lo && v <= hi))
            throw Error(ErrorKind::format, f.key_where(key) + " = " + std::to_string(v) + " is outside [" +
                                               std::to_string(lo) + ", " + std::to_string(hi) + "]");
        return v;
    };
    std::vector<float> inv = rope_inv_freq_default(info.head_dim, info.rope_theta);
    double attention_factor = 1.0;
    if (f.find(p + "rope.scaling.type")) {
        const std::string_view type = f.get_string(p + "rope.scaling.type");
        if (type == "linear") {
            const double factor = real_key(p + "rope.scaling.factor", 1, double(kFloatMax));
            for (float& x : inv) x = float(x / factor);
        } else if (type == "yarn") {
            Yarn y;
            y.factor = real_key(p + "rope.scaling.factor", 1, double(kFloatMax));
            const std::string orig = p + "rope.scaling.original_context_length";
            y.original_max_position = double(f.get_uint(orig, uint64_t(INT32_MAX)));
            if (y.original_max_position < 1)
                throw Error(ErrorKind::format, f.key_where(orig) + " = 0 is not a context length");
            if (f.find(p + "rope.scaling.yarn_beta_fast"))
                y.beta_fast = real_key(p + "rope.scaling.yarn_beta_fast", 1e-30, double(kFloatMax));
            if (f.find(p + "rope.scaling.yarn_beta_slow"))
                y.beta_slow = real_key(p + "rope.scaling.yarn_beta_slow", 1e-30, double(kFloatMax));
            attention_factor = rope_apply_yarn(inv, info.head_dim, info.rope_theta, y);
        } else if (type != "none" && type != "llama3") {  // llama3: rope_freqs.weight
            throw Error(ErrorKind::unsupported, f.key_where(p + "rope.scaling.type") + " = '" + std::string(type) +
                                                    "' is not supported (none, linear, yarn, llama3)");
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
    for (LayerConfig& lc : c.layers) {
        lc.inv_freq = inv;
        lc.attn_scale = float(attention_factor * attention_factor / std::sqrt(double(lc.head_dim)));
    }
    return c;
}

namespace {

ModelConfig parse_llama(const ConfigReader& r, const ConfigReader&) { return parse_llama_like(r); }
ModelConfig parse_llama_gguf(const GgufFile& f) { return parse_llama_like_gguf(f); }

// Built-in shapes (staticlm bench --synthetic): Llama 3.2 1B; Qwen3-0.6B's
// matrices in a Llama decoder (no q/k norms), to compare a family's overhead at
// equal bytes per token; a tiny one for tests.
constexpr std::string_view kLlama32_1b = R"({
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

constexpr std::string_view kQwen3_06bLlama = R"({
  "architectures": ["LlamaForCausalLM"], "model_type": "llama",
  "hidden_size": 1024, "num_hidden_layers": 28, "num_attention_heads": 16,
  "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 3072,
  "vocab_size": 151936, "rms_norm_eps": 1e-06, "max_position_embeddings": 40960,
  "rope_theta": 1000000.0, "tie_word_embeddings": true,
  "bos_token_id": 151643, "eos_token_id": 151645
})";

constexpr std::string_view kTinyLlama = R"({
  "architectures": ["LlamaForCausalLM"], "model_type": "llama",
  "hidden_size": 256, "num_hidden_layers": 4, "num_attention_heads": 8,
  "num_key_value_heads": 2, "intermediate_size": 768, "vocab_size": 1024,
  "rms_norm_eps": 1e-05, "max_position_embeddings": 2048, "rope_theta": 10000.0,
  "tie_word_embeddings": false, "bos_token_id": 1, "eos_token_id": 2
})";

constexpr SyntheticShape kSynthetic[] = {
    {"llama-3.2-1b", kLlama32_1b}, {"qwen3-0.6b-as-llama", kQwen3_06bLlama}, {"tiny-llama", kTinyLlama}};

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
    .parse_gguf = parse_llama_gguf,
    .gguf_qk_interleaved = true,
    .hf_layouts = kLayouts,
    .hf_name = hf_tensor_name,
    .ignored = {},
    .chat = &kLlama3Chat,
    .synthetic = kSynthetic,
};

const FamilyDescriptor& llama2c_family() { return kLlamaFamily; }

}  // namespace staticlm
