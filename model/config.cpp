// config.json readers for Llama and Gemma 4 (text), plus the special-token
// additions from generation_config.json and tokenizer_config.json. Defaults
// and key names follow transformers 5.24 (models/llama, models/gemma4).
#include "model/config.hpp"

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "staticlm/error.hpp"

namespace staticlm {

namespace {

using json = nlohmann::json;

// Limits that keep every product we form (rows × cols, L × D) inside int and
// reject absurd values before any allocation.
constexpr int64_t kMaxDim = int64_t{1} << 20;     // hidden, ffn, head_dim
constexpr int64_t kMaxVocab = int64_t{1} << 24;
constexpr int64_t kMaxLayers = 4096;
constexpr int64_t kMaxHeads = 4096;

struct Reader {
    const json& j;
    const std::string& file;
    std::string prefix;  // "text_config." for nested configs

    [[noreturn]] void fail(ErrorKind kind, const std::string& key, const std::string& what) const {
        throw Error(kind, file + ": '" + prefix + key + "' " + what);
    }
    bool has(const std::string& key) const { return j.contains(key) && !j[key].is_null(); }

    int64_t integer(const std::string& key, int64_t def, int64_t lo, int64_t hi,
                    bool required = false) const {
        if (!has(key)) {
            if (required) fail(ErrorKind::format, key, "is missing");
            return def;
        }
        const json& v = j[key];
        if (!v.is_number_integer()) fail(ErrorKind::format, key, "must be an integer");
        if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX))
            fail(ErrorKind::format, key, "is out of range");
        const int64_t x = v.get<int64_t>();
        if (x < lo || x > hi)
            fail(ErrorKind::format, key, "= " + std::to_string(x) + " is outside [" +
                                             std::to_string(lo) + ", " + std::to_string(hi) + "]");
        return x;
    }
    double number(const std::string& key, double def) const {
        if (!has(key)) return def;
        if (!j[key].is_number()) fail(ErrorKind::format, key, "must be a number");
        const double x = j[key].get<double>();
        if (!std::isfinite(x)) fail(ErrorKind::format, key, "must be finite");
        return x;
    }
    bool boolean(const std::string& key, bool def) const {
        if (!has(key)) return def;
        if (!j[key].is_boolean()) fail(ErrorKind::format, key, "must be true or false");
        return j[key].get<bool>();
    }
    std::string string(const std::string& key, const std::string& def) const {
        if (!has(key)) return def;
        if (!j[key].is_string()) fail(ErrorKind::format, key, "must be a string");
        return j[key].get<std::string>();
    }
    // An int, a list of ints, or null.
    std::vector<int> id_list(const std::string& key) const {
        std::vector<int> out;
        if (!has(key)) return out;
        auto one = [&](const json& v) {
            if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= kMaxVocab)
                fail(ErrorKind::format, key, "must be a token id or a list of token ids");
            out.push_back(int(v.get<int64_t>()));
        };
        if (j[key].is_array())
            for (const json& v : j[key]) one(v);
        else
            one(j[key]);
        return out;
    }
};

void add_unique(std::vector<int>& ids, const std::vector<int>& more) {
    for (int id : more) {
        bool seen = false;
        for (int x : ids) seen |= x == id;
        if (!seen) ids.push_back(id);
    }
}

json parse_json(const std::string& text, const std::string& file) {
    json j = json::parse(text, nullptr, false);
    if (j.is_discarded()) throw Error(ErrorKind::format, file + ": invalid JSON");
    if (!j.is_object()) throw Error(ErrorKind::format, file + ": not a JSON object");
    return j;
}

std::string read_text(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(ErrorKind::io, path.string() + ": cannot open");
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// The rope parameters of a Llama config: transformers 5 `rope_parameters`, or
// the older top-level `rope_theta` + `rope_scaling`.
std::vector<float> llama_inv_freq(const Reader& r, int head_dim) {
    const json* params = nullptr;
    std::string key;
    if (r.has("rope_parameters")) {
        key = "rope_parameters";
    } else if (r.has("rope_scaling")) {
        key = "rope_scaling";
    }
    if (!key.empty()) {
        params = &r.j[key];
        if (!params->is_object()) r.fail(ErrorKind::format, key, "must be an object");
    }
    double theta = r.number("rope_theta", 10000.0);
    std::string type = "default";
    if (params) {
        const Reader p{*params, r.file, r.prefix + key + "."};
        theta = p.number("rope_theta", theta);
        type = p.string("rope_type", p.string("type", "default"));
        if (p.number("partial_rotary_factor", 1.0) != 1.0)
            p.fail(ErrorKind::unsupported, "partial_rotary_factor", "other than 1 is not supported for Llama");
    }
    if (!(theta > 1.0)) r.fail(ErrorKind::format, "rope_theta", "must be > 1");
    std::vector<float> inv = rope_inv_freq_default(head_dim, theta);
    if (type == "default") return inv;
    if (type != "llama3")
        throw Error(ErrorKind::unsupported,
                    "unsupported rope_scaling type '" + type + "' in " + r.file +
                        " (supported: default, llama3)");
    const Reader p{*params, r.file, r.prefix + key + "."};
    const double factor = p.number("factor", 0.0);
    const double low = p.number("low_freq_factor", 0.0);
    const double high = p.number("high_freq_factor", 0.0);
    const double orig = p.number("original_max_position_embeddings", 0.0);
    if (!(factor > 0)) p.fail(ErrorKind::format, "factor", "must be > 0 for llama3");
    if (!(low > 0)) p.fail(ErrorKind::format, "low_freq_factor", "must be > 0 for llama3");
    if (!(high > low)) p.fail(ErrorKind::format, "high_freq_factor", "must be > low_freq_factor");
    if (!(orig > 0)) p.fail(ErrorKind::format, "original_max_position_embeddings", "must be > 0");
    rope_apply_llama3(inv, factor, low, high, orig);
    return inv;
}

ModelConfig parse_llama(const json& j, const std::string& file, const std::string& arch) {
    const Reader r{j, file, ""};
    ModelConfig c;
    c.architecture = arch;
    c.family = "llama";
    c.hidden = int(r.integer("hidden_size", 0, 1, kMaxDim, true));
    c.n_layers = int(r.integer("num_hidden_layers", 0, 1, kMaxLayers, true));
    const int n_heads = int(r.integer("num_attention_heads", 0, 1, kMaxHeads, true));
    const int n_kv = int(r.integer("num_key_value_heads", n_heads, 1, kMaxHeads));
    if (n_heads % n_kv != 0)
        r.fail(ErrorKind::format, "num_attention_heads",
               "= " + std::to_string(n_heads) + " is not a multiple of num_key_value_heads = " +
                   std::to_string(n_kv));
    if (!r.has("head_dim") && c.hidden % n_heads != 0)
        r.fail(ErrorKind::format, "hidden_size", "is not a multiple of num_attention_heads");
    const int head_dim = int(r.integer("head_dim", c.hidden / n_heads, 2, kMaxDim));
    if (head_dim % 2) r.fail(ErrorKind::format, "head_dim", "must be even (RoPE pairs)");
    if (int64_t(n_heads) * head_dim > kMaxDim)
        r.fail(ErrorKind::format, "num_attention_heads", "× head_dim is too large");
    const int ffn = int(r.integer("intermediate_size", 0, 1, kMaxDim, true));
    c.vocab = int(r.integer("vocab_size", 0, 1, kMaxVocab, true));
    c.rms_eps = float(r.number("rms_norm_eps", 1e-6));
    if (!(c.rms_eps > 0)) r.fail(ErrorKind::format, "rms_norm_eps", "must be > 0");
    c.max_position = int(r.integer("max_position_embeddings", 2048, 1, INT32_MAX));
    c.tie_embeddings = r.boolean("tie_word_embeddings", false);
    const std::string act = r.string("hidden_act", "silu");
    if (act != "silu") r.fail(ErrorKind::unsupported, "hidden_act", "= '" + act + "' is not supported (silu)");
    if (r.boolean("attention_bias", false))
        r.fail(ErrorKind::unsupported, "attention_bias", "= true is not supported");
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

// Gemma 4 RoPE of one layer type: "default" or "proportional".
std::vector<float> gemma_inv_freq(const Reader& r, const std::string& type, int head_dim) {
    const bool full = type == "full_attention";
    std::string rope_type = full ? "proportional" : "default";
    double theta = full ? 1e6 : 1e4;
    double partial = full ? 0.25 : 1.0;
    double factor = 1.0;
    if (r.has("rope_parameters")) {
        const json& rp = r.j["rope_parameters"];
        if (!rp.is_object()) r.fail(ErrorKind::format, "rope_parameters", "must be an object");
        if (rp.contains(type)) {
            const Reader p{rp[type], r.file, r.prefix + "rope_parameters." + type + "."};
            if (!rp[type].is_object()) r.fail(ErrorKind::format, "rope_parameters." + type, "must be an object");
            rope_type = p.string("rope_type", "default");
            theta = p.number("rope_theta", theta);
            partial = p.number("partial_rotary_factor", 1.0);
            factor = p.number("factor", 1.0);
            if (!(theta > 1.0)) p.fail(ErrorKind::format, "rope_theta", "must be > 1");
            if (!(partial > 0 && partial <= 1))
                p.fail(ErrorKind::format, "partial_rotary_factor", "must be in (0, 1]");
            if (!(factor > 0)) p.fail(ErrorKind::format, "factor", "must be > 0");
        }
    }
    std::vector<float> inv(size_t(head_dim / 2), 0.0f);
    if (rope_type == "default") {
        if (partial != 1.0 || factor != 1.0)
            throw Error(ErrorKind::unsupported, r.file + ": rope_parameters." + type +
                                                    ": default RoPE with partial_rotary_factor or "
                                                    "factor is not supported");
        return rope_inv_freq_default(head_dim, theta);
    }
    if (rope_type != "proportional")
        throw Error(ErrorKind::unsupported, "unsupported rope type '" + rope_type + "' for " + type +
                                                " in " + r.file + " (supported: default, proportional)");
    // n_rot pairs rotate with the exponent over the full head_dim; the rest pass through.
    const int n_rot = int(partial * head_dim / 2);  // as transformers: int(f * d // 2)
    const std::vector<float> base = rope_inv_freq_default(head_dim, theta);
    for (int i = 0; i < n_rot && i < head_dim / 2; ++i) inv[size_t(i)] = base[size_t(i)] / float(factor);
    return inv;
}

ModelConfig parse_gemma4(const json& t, const std::string& file, const std::string& prefix,
                         const std::string& arch, const json& top) {
    const Reader r{t, file, prefix};
    ModelConfig c;
    c.architecture = arch;
    c.family = "gemma4";
    c.hidden = int(r.integer("hidden_size", 2304, 1, kMaxDim));
    c.n_layers = int(r.integer("num_hidden_layers", 30, 1, kMaxLayers));
    const int n_heads = int(r.integer("num_attention_heads", 8, 1, kMaxHeads));
    const int n_kv = int(r.integer("num_key_value_heads", 4, 1, kMaxHeads));
    const int head_dim = int(r.integer("head_dim", 256, 2, kMaxDim));
    const int ffn = int(r.integer("intermediate_size", 9216, 1, kMaxDim));
    c.vocab = int(r.integer("vocab_size", 262144, 1, kMaxVocab));
    c.rms_eps = float(r.number("rms_norm_eps", 1e-6));
    if (!(c.rms_eps > 0)) r.fail(ErrorKind::format, "rms_norm_eps", "must be > 0");
    c.max_position = int(r.integer("max_position_embeddings", 131072, 1, INT32_MAX));
    const Reader top_r{top, file, ""};
    c.tie_embeddings = r.boolean("tie_word_embeddings", top_r.boolean("tie_word_embeddings", true));
    const int window = int(r.integer("sliding_window", 512, 1, INT32_MAX));
    const int n_shared = int(r.integer("num_kv_shared_layers", 0, 0, INT32_MAX));
    if (n_shared >= c.n_layers)
        r.fail(ErrorKind::format, "num_kv_shared_layers",
               "= " + std::to_string(n_shared) + " must be less than num_hidden_layers = " +
                   std::to_string(c.n_layers));
    const bool double_wide = r.boolean("use_double_wide_mlp", false);
    c.per_layer_dim = int(r.integer("hidden_size_per_layer_input", 256, 0, kMaxDim));
    c.per_layer_vocab = c.per_layer_dim ? int(r.integer("vocab_size_per_layer_input", 262144, 1, kMaxVocab)) : 0;
    if (int64_t(c.per_layer_dim) * c.n_layers > INT32_MAX / 2)
        r.fail(ErrorKind::format, "hidden_size_per_layer_input", "× num_hidden_layers is too large");
    c.final_softcap = float(r.number("final_logit_softcapping", 0.0));
    if (c.final_softcap < 0) r.fail(ErrorKind::format, "final_logit_softcapping", "must be >= 0");
    const std::string act = r.string("hidden_activation", "gelu_pytorch_tanh");
    if (act != "gelu_pytorch_tanh")
        r.fail(ErrorKind::unsupported, "hidden_activation", "= '" + act + "' is not supported (gelu_pytorch_tanh)");
    c.activation = Activation::gelu_tanh;
    // attention_k_eq_v: full layers have no v_proj; V is the raw k_proj output.
    const bool k_eq_v = r.boolean("attention_k_eq_v", false);
    if (r.boolean("enable_moe_block", false))
        r.fail(ErrorKind::unsupported, "enable_moe_block", "= true is not supported");
    if (r.boolean("attention_bias", false))
        r.fail(ErrorKind::unsupported, "attention_bias", "= true is not supported");
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
        for (int il = 0; il < c.n_layers; ++il)
            types.push_back((il + 1) % 6 ? "sliding_attention" : "full_attention");
    }
    for (size_t il = 0; il < types.size(); ++il)
        if (types[il] != "sliding_attention" && types[il] != "full_attention")
            r.fail(ErrorKind::unsupported, "layer_types",
                   "[" + std::to_string(il) + "] = '" + types[il] + "' is not supported");
    types.back() = "full_attention";

    // Full layers' head_dim / kv heads: per_layer_config (as transformers 5.24
    // saves it) or global_head_dim / num_global_key_value_heads (as released).
    std::vector<int> layer_hd(size_t(c.n_layers), head_dim), layer_kv(size_t(c.n_layers), n_kv);
    if (r.has("per_layer_config")) {
        const json& plc = t["per_layer_config"];
        if (!plc.is_object()) r.fail(ErrorKind::format, "per_layer_config", "must be an object");
        for (auto it = plc.begin(); it != plc.end(); ++it) {
            char* end = nullptr;
            const long il = std::strtol(it.key().c_str(), &end, 10);
            if (it.key().empty() || *end || il < 0 || il >= c.n_layers)
                r.fail(ErrorKind::format, "per_layer_config", "key '" + it.key() + "' is not a layer index");
            if (!it.value().is_object())
                r.fail(ErrorKind::format, "per_layer_config." + it.key(), "must be an object");
            const Reader p{it.value(), file, prefix + "per_layer_config." + it.key() + "."};
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
                   "= " + std::to_string(n_heads) + " is not a multiple of the " +
                       std::to_string(lc.n_kv_heads) + " KV heads of " + where);
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
                       where + " shares K/V with layer " + std::to_string(lc.kv_source) +
                           " of a different head shape");
        }
        lc.ffn_dim = (double_wide && il >= first_shared) ? 2 * ffn : ffn;
        lc.attn_scale = 1.0f;
        lc.inv_freq = gemma_inv_freq(r, type, lc.head_dim);
        lc.qk_norm = true;
        lc.v_norm = true;
        lc.sandwich_norms = true;
    }
    return c;
}

bool contains(const json& j, const char* key, const std::string& value) {
    if (!j.contains(key)) return false;
    const json& v = j[key];
    if (v.is_string()) return v.get<std::string>() == value;
    if (v.is_array())
        for (const json& e : v)
            if (e.is_string() && e.get<std::string>() == value) return true;
    return false;
}

}  // namespace

std::vector<float> rope_inv_freq_default(int head_dim, double theta) {
    // fp32 like transformers: 1 / theta ** (float(2i) / d).
    std::vector<float> inv(size_t(head_dim / 2));
    for (int i = 0; i < head_dim / 2; ++i) {
        const float e = float(2 * i) / float(head_dim);
        inv[size_t(i)] = 1.0f / std::pow(float(theta), e);
    }
    return inv;
}

void rope_apply_llama3(std::vector<float>& inv_freq, double factor, double low_freq_factor,
                       double high_freq_factor, double original_max_position) {
    const double low_wavelen = original_max_position / low_freq_factor;
    const double high_wavelen = original_max_position / high_freq_factor;
    for (float& f : inv_freq) {
        const double wavelen = 2.0 * M_PI / double(f);
        if (wavelen < high_wavelen) continue;
        if (wavelen > low_wavelen) {
            f = float(double(f) / factor);
            continue;
        }
        const double s = (original_max_position / wavelen - low_freq_factor) /
                         (high_freq_factor - low_freq_factor);
        f = float((1.0 - s) * double(f) / factor + s * double(f));
    }
}

ModelConfig parse_model_config(const std::string& config_json, const std::string& file_name) {
    const json j = parse_json(config_json, file_name);
    std::string arch;
    if (j.contains("architectures") && j["architectures"].is_array() && !j["architectures"].empty() &&
        j["architectures"][0].is_string())
        arch = j["architectures"][0].get<std::string>();
    const std::string model_type =
        j.contains("model_type") && j["model_type"].is_string() ? j["model_type"].get<std::string>() : "";

    if (contains(j, "architectures", "LlamaForCausalLM") || (arch.empty() && model_type == "llama"))
        return parse_llama(j, file_name, arch.empty() ? "LlamaForCausalLM" : arch);
    if (contains(j, "architectures", "Gemma4ForConditionalGeneration") ||
        (arch.empty() && model_type == "gemma4")) {
        if (!j.contains("text_config") || !j["text_config"].is_object())
            throw Error(ErrorKind::format, file_name + ": 'text_config' is missing");
        return parse_gemma4(j["text_config"], file_name, "text_config.",
                            arch.empty() ? "Gemma4ForConditionalGeneration" : arch, j);
    }
    if (contains(j, "architectures", "Gemma4ForCausalLM") || (arch.empty() && model_type == "gemma4_text"))
        return parse_gemma4(j, file_name, "", arch.empty() ? "Gemma4ForCausalLM" : arch, j);
    throw Error(ErrorKind::unsupported,
                file_name + ": unsupported architecture '" + (arch.empty() ? "(none)" : arch) +
                    "' / model_type '" + (model_type.empty() ? "(none)" : model_type) +
                    "' (supported: LlamaForCausalLM, Gemma4ForConditionalGeneration, Gemma4ForCausalLM)");
}

// The sampling settings of generation_config.json (absent keys stay unset).
GenerationConfig read_generation_settings(const Reader& r) {
    GenerationConfig g;
    auto in_range = [&](const char* key, double lo, double hi, bool lo_open) -> std::optional<float> {
        if (!r.has(key)) return std::nullopt;
        const double x = r.number(key, 0);
        if (x > hi || x < lo || (lo_open && x == lo))
            r.fail(ErrorKind::format, key, "= " + std::to_string(x) + " is outside " + (lo_open ? "(" : "[") +
                                               std::to_string(lo) + ", " + std::to_string(hi) + "]");
        return float(x);
    };
    if (r.has("do_sample")) g.do_sample = r.boolean("do_sample", true);
    g.temperature = in_range("temperature", 0.0, 1e6, false);
    g.top_p = in_range("top_p", 0.0, 1.0, true);
    g.min_p = in_range("min_p", 0.0, 1.0, false);
    g.repetition_penalty = in_range("repetition_penalty", 1e-3, 1e3, false);
    if (r.has("top_k")) g.top_k = int(r.integer("top_k", 0, 0, kMaxVocab));
    return g;
}

ModelConfig read_model_config(const std::filesystem::path& dir) {
    namespace fs = std::filesystem;
    if (!fs::is_directory(dir)) {
        const std::string ext = dir.extension().string();
        if (fs::is_regular_file(dir) && (ext == ".safetensors" || ext == ".json"))
            throw Error(ErrorKind::io, dir.string() + ": is a file; give the model directory that holds it (" +
                                           (dir.has_parent_path() ? dir.parent_path().string() : std::string(".")) +
                                           ", with config.json and the tokenizer files)");
        if (ext == ".gguf")
            throw Error(ErrorKind::unsupported, dir.string() + ": GGUF files are not supported by this build; give a "
                                                "Hugging Face model directory (config.json, model.safetensors, tokenizer)");
        if (fs::exists(dir))
            throw Error(ErrorKind::io, dir.string() + ": not a model directory (give the directory that holds "
                                           "config.json and model.safetensors, or a llama2.c .bin file)");
        throw Error(ErrorKind::io, dir.string() + ": model directory not found");
    }
    const fs::path config_path = dir / "config.json";
    if (!fs::exists(config_path)) throw Error(ErrorKind::io, config_path.string() + ": not found");
    ModelConfig c = parse_model_config(read_text(config_path), config_path.string());

    const fs::path gen_path = dir / "generation_config.json";
    if (fs::exists(gen_path)) {
        const json g = parse_json(read_text(gen_path), gen_path.string());
        const std::string name = gen_path.string();
        const Reader r{g, name, ""};
        add_unique(c.eos_ids, r.id_list("eos_token_id"));
        if (c.bos_id < 0) {
            const std::vector<int> bos = r.id_list("bos_token_id");
            if (!bos.empty()) c.bos_id = bos[0];
        }
        c.generation = read_generation_settings(r);
    }
    const fs::path tok_path = dir / "tokenizer_config.json";
    if (fs::exists(tok_path)) {
        const json tc = parse_json(read_text(tok_path), tok_path.string());
        const std::string name = tok_path.string();
        const Reader r{tc, name, ""};
        c.add_bos = r.boolean("add_bos_token", c.add_bos);
    }
    return c;
}

}  // namespace staticlm
