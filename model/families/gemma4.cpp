// The Gemma 4 family: Gemma4ForCausalLM and the text decoder of
// Gemma4ForConditionalGeneration (transformers 5.24 models/gemma4): layer
// types, per-layer head dims and RoPE, KV sharing, double-wide MLP,
// per-layer inputs, layer scalars; the Gemma 4 chat template.
#include <cmath>
#include <optional>

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

// llama.cpp's gemma4 architecture: per-layer arrays (head_count_kv and
// feed_forward_length may be arrays, attention.sliding_window_pattern is one
// BOOL per layer, true = sliding), key_length / key_length_swa for full and
// sliding heads, shared_kv_layers, per-layer inputs of
// embedding_length_per_layer_input; full layers' proportional RoPE arrives as
// rope_freqs.weight divisors (1e30 switches a frequency off). A full layer
// without attn_v.weight reads V from K (attention_k_eq_v). Norms are stored
// as they are (Gemma 4 multiplies by w).
ModelConfig parse_gguf_gemma4(const GgufFile& f) {
    using detail::kMaxDim, detail::kMaxHeads, detail::kMaxLayers, detail::kMaxVocab;
    const std::string p = "gemma4.";
    auto uint_key = [&](const std::string& key, uint64_t lo, uint64_t hi, std::optional<uint64_t> fallback = {}) {
        if (!f.find(key) && fallback) return int(*fallback);
        const uint64_t v = f.get_uint(key, hi);
        if (v < lo)
            throw Error(ErrorKind::format, f.key_where(key) + " = " + std::to_string(v) + " is below " + std::to_string(lo));
        return int(v);
    };
    // A scalar for every layer, or an array of one value per layer.
    auto per_layer = [&](const std::string& key, int n_layers, uint64_t lo, uint64_t hi, std::optional<uint64_t> fallback) {
        const GgufValue* v = f.find(key);
        if (!v || v->type != GgufType::array) return std::vector<int>(size_t(n_layers), uint_key(key, lo, hi, fallback));
        std::vector<int64_t> a;
        if (v->elem_type == GgufType::boolean)
            for (uint64_t i = 0; i < v->count; ++i) a.push_back(int64_t(v->elems[i] != std::byte{0}));
        else
            a = f.get_int_array(key);
        if (a.size() != size_t(n_layers))
            throw Error(ErrorKind::format, f.key_where(key) + " has " + std::to_string(a.size()) + " entries for " +
                                               std::to_string(n_layers) + " layers");
        std::vector<int> out;
        for (size_t il = 0; il < a.size(); ++il) {
            if (a[il] < int64_t(lo) || uint64_t(a[il]) > hi)
                throw Error(ErrorKind::format, f.key_where(key) + ": entry " + std::to_string(il) + " = " +
                                                   std::to_string(a[il]) + " is out of range");
            out.push_back(int(a[il]));
        }
        return out;
    };
    auto real = [&](const std::string& key, double fallback, double lo, double hi) {
        const double v = f.find(key) ? f.get_float(key) : fallback;
        if (!(v >= lo && v <= hi))
            throw Error(ErrorKind::format, f.key_where(key) + " = " + std::to_string(v) + " is out of range");
        return v;
    };

    GgufModelInfo m;
    m.architecture = "gemma4";
    m.n_layers = uint_key(p + "block_count", 1, kMaxLayers);
    m.hidden = uint_key(p + "embedding_length", 1, kMaxDim);
    m.n_heads = uint_key(p + "attention.head_count", 1, kMaxHeads);
    m.head_dim = uint_key(p + "attention.key_length", 2, kMaxDim);
    m.n_kv_heads = m.n_heads;
    m.ffn = 1;
    m.rms_eps = real(p + "attention.layer_norm_rms_epsilon", -1, 1e-30, 0.999999);
    m.context = f.find(p + "context_length") ? int64_t(f.get_uint(p + "context_length", uint64_t{1} << 31)) : 0;
    m.rope_theta = real(p + "rope.freq_base", 1e6, 1.0, kFloatMax);
    const GgufTensor& emb = f.tensor("token_embd.weight");
    if (emb.n_dims != 2 || emb.ne[0] != m.hidden || emb.ne[1] < 1 || uint64_t(emb.ne[1]) > kMaxVocab)
        throw Error(ErrorKind::model, "wrong shape of " + emb.where() + ": expected [" + std::to_string(m.hidden) +
                                          ", vocab], got " + emb.shape_string());
    m.vocab = int(emb.ne[1]);
    if (f.find("tokenizer.ggml.tokens") && f.get_array_count("tokenizer.ggml.tokens") != uint64_t(m.vocab))
        throw Error(ErrorKind::model, emb.where() + " has " + std::to_string(m.vocab) +
                                          " rows but tokenizer.ggml.tokens has " +
                                          std::to_string(f.get_array_count("tokenizer.ggml.tokens")) + " entries");
    ModelConfig c = gguf_base_config(f, m);
    const int L = c.n_layers;
    c.activation = Activation::gelu_tanh;
    c.embed_scale = std::sqrt(float(c.hidden));
    c.final_softcap = float(real(p + "final_logit_softcapping", 0.0, 0.0, kFloatMax));

    const std::vector<int> kv = per_layer(p + "attention.head_count_kv", L, 1, kMaxHeads, uint64_t(m.n_heads));
    const std::vector<int> ffn = per_layer(p + "feed_forward_length", L, 1, kMaxDim, std::nullopt);
    const std::vector<int> sliding = per_layer(p + "attention.sliding_window_pattern", L, 0, 1, std::nullopt);
    const int hd_full = m.head_dim;
    const int hd_swa = uint_key(p + "attention.key_length_swa", 2, kMaxDim, uint64_t(hd_full));
    for (const auto& [key, want] : {std::pair{p + "attention.value_length", hd_full},
                                    {p + "attention.value_length_swa", hd_swa},
                                    {p + "rope.dimension_count", hd_full},
                                    {p + "rope.dimension_count_swa", hd_swa}})
        if (f.find(key) && f.get_uint(key, kMaxDim) != uint64_t(want))
            throw Error(ErrorKind::unsupported, f.key_where(key) + " = " + std::to_string(f.get_uint(key)) +
                                                    " differs from the head size " + std::to_string(want));
    const int window = uint_key(p + "attention.sliding_window", 1, INT32_MAX);
    const int n_shared = uint_key(p + "attention.shared_kv_layers", 0, uint64_t(L - 1), 0);
    c.per_layer_dim = uint_key(p + "embedding_length_per_layer_input", 0, kMaxDim, 0);
    if (int64_t(c.per_layer_dim) * L > INT32_MAX / 2)
        throw Error(ErrorKind::format, f.key_where(p + "embedding_length_per_layer_input") + " x layers is too large");
    if (c.per_layer_dim > 0) {
        const GgufTensor& ple = f.tensor("per_layer_token_embd.weight");
        if (ple.n_dims != 2 || ple.ne[1] < 1 || uint64_t(ple.ne[1]) > kMaxVocab)
            throw Error(ErrorKind::model, "wrong shape of " + ple.where() + ": got " + ple.shape_string());
        c.per_layer_vocab = int(ple.ne[1]);
    }
    const double theta_swa = real(p + "rope.freq_base_swa", 1e4, 1.0, kFloatMax);
    std::vector<float> inv_full = rope_inv_freq_default(hd_full, m.rope_theta);
    if (const GgufTensor* t = f.find_tensor("rope_freqs.weight")) {
        if (t->n_dims != 1 || t->ne[0] != hd_full / 2)
            throw Error(ErrorKind::model, "wrong shape of " + t->where() + ": expected [" +
                                              std::to_string(hd_full / 2) + "], got " + t->shape_string());
        const std::vector<float> div = gguf_read_f32(*t);
        for (size_t i = 0; i < inv_full.size(); ++i) {
            if (!(div[i] > 0) || !std::isfinite(div[i]))
                throw Error(ErrorKind::format, "value " + std::to_string(div[i]) + " at index " + std::to_string(i) +
                                                   " of " + t->where() + " is not a positive frequency divisor");
            inv_full[i] /= div[i];
        }
    }
    const std::vector<float> inv_swa = rope_inv_freq_default(hd_swa, theta_swa);

    const int first_shared = L - n_shared;
    for (int il = 0; il < L; ++il) {
        LayerConfig& lc = c.layers[size_t(il)];
        const bool s = sliding[size_t(il)] != 0;
        const std::string where = "layer " + std::to_string(il) + " of " + f.path().string();
        lc.attention = s ? AttentionType::sliding : AttentionType::full;
        lc.head_dim = s ? hd_swa : hd_full;
        lc.n_kv_heads = kv[size_t(il)];
        if (m.n_heads % lc.n_kv_heads || int64_t(m.n_heads) * lc.head_dim > int64_t(kMaxDim))
            throw Error(ErrorKind::format, where + ": " + std::to_string(m.n_heads) + " heads of " +
                                               std::to_string(lc.head_dim) + " with " +
                                               std::to_string(lc.n_kv_heads) + " KV heads");
        if (lc.head_dim % 2) throw Error(ErrorKind::format, where + ": odd head size " + std::to_string(lc.head_dim));
        lc.window = s ? window : 0;
        lc.ffn_dim = ffn[size_t(il)];
        lc.attn_scale = 1.0f;
        lc.inv_freq = s ? inv_swa : inv_full;
        lc.qk_norm = true;
        lc.v_norm = true;
        lc.sandwich_norms = true;
        lc.layer_scalar = true;
        lc.kv_source = il;
        if (il >= first_shared) {
            // The last non-shared layer of the same type (as transformers).
            lc.kv_source = -1;
            for (int src = first_shared - 1; src >= 0 && lc.kv_source < 0; --src)
                if ((sliding[size_t(src)] != 0) == s) lc.kv_source = src;
            if (lc.kv_source < 0)
                throw Error(ErrorKind::format, f.key_where(p + "attention.shared_kv_layers") +
                                                   " leaves no layer of the same type for " + where);
            const LayerConfig& src = c.layers[size_t(lc.kv_source)];
            if (src.head_dim != lc.head_dim || src.n_kv_heads != lc.n_kv_heads)
                throw Error(ErrorKind::format, where + " shares K/V with layer " + std::to_string(lc.kv_source) +
                                                   " of a different head shape");
        }
        lc.k_eq_v = !s && lc.kv_source == il && !f.find_tensor("blk." + std::to_string(il) + ".attn_v.weight");
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

// Gemma 4 E2B's shape (staticlm bench --synthetic gemma-4-e2b): every 5th layer full.
constexpr std::string_view kGemma4E2b = R"({
  "architectures": ["Gemma4ForConditionalGeneration"], "model_type": "gemma4",
  "text_config": {
    "model_type": "gemma4_text", "hidden_size": 1536, "num_hidden_layers": 35,
    "num_attention_heads": 8, "num_key_value_heads": 1, "head_dim": 256,
    "global_head_dim": 512, "intermediate_size": 6144, "vocab_size": 262144,
    "sliding_window": 512, "num_kv_shared_layers": 20, "use_double_wide_mlp": true,
    "hidden_size_per_layer_input": 256, "vocab_size_per_layer_input": 262144,
    "final_logit_softcapping": 30.0, "rms_norm_eps": 1e-06, "tie_word_embeddings": true,
    "max_position_embeddings": 131072, "hidden_activation": "gelu_pytorch_tanh",
    "layer_types": ["sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention", "full_attention",
      "sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention", "full_attention",
      "sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention", "full_attention",
      "sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention", "full_attention",
      "sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention", "full_attention",
      "sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention", "full_attention",
      "sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention", "full_attention"],
    "rope_parameters": {
      "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
      "full_attention": {"rope_type": "proportional", "rope_theta": 1000000.0,
                         "partial_rotary_factor": 0.25}},
    "bos_token_id": 2, "eos_token_id": [1, 106], "pad_token_id": 0
  }
})";

constexpr SyntheticShape kSynthetic[] = {{"gemma-4-e2b", kGemma4E2b}};

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
    .parse_gguf = parse_gguf_gemma4,
    .hf_layouts = kLayouts,
    .hf_name = hf_tensor_name,
    .ignored = kIgnored,
    .chat = &kGemma4Chat,
    .synthetic = kSynthetic,
};

}  // namespace staticlm
