// The Phi-3 family: Phi3ForCausalLM (Phi-3, Phi-3.5, Phi-4-mini) as
// transformers 5.24 models/phi3 defines it: Llama's decoder with fused
// qkv_proj and gate_up_proj (split at load), partial rotary embeddings in the
// rotate-half layout (q/k rows permuted at load, RowSource), LongRoPE (short
// factors, or long ones when the sequence can grow past
// original_max_position_embeddings, with its attention factor), a sliding
// window on every layer when the config has one; its GGUF form (llama.cpp's
// phi3); the Phi chat template.
#include <cmath>

#include "llama_like.hpp"
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

// What Phi-3's RoPE needs from either file form.
struct Phi3Rope {
    double theta = 10000;
    int rotary = 0;                       // rotated dims of a head (even)
    std::vector<float> short_factor, long_factor;  // LongRoPE: rotary / 2 each, else empty
    int original_max = 0;                 // LongRoPE: original_max_position_embeddings
    double attention_factor = 1;
};

// inv_freq of the kernel's layout (head_dim / 2 pairs): the rotary pairs'
// frequencies 1 / (ext · theta^(2i/rotary)) in fp32 as transformers computes
// them, then zeros (the pairs the passed-through dims land on).
std::vector<float> phi3_inv_freq(const Phi3Rope& r, int head_dim, const std::vector<float>& ext) {
    std::vector<float> inv(size_t(head_dim / 2), 0.0f);
    for (int i = 0; i < r.rotary / 2; ++i) {
        const float shape = float(2 * i) / float(r.rotary);
        const float e = ext.empty() ? 1.0f : ext[size_t(i)];
        inv[size_t(i)] = 1.0f / (e * std::pow(float(r.theta), shape));
    }
    return inv;
}

// The attention factor must give finite scales (original_max_position 1
// makes LongRoPE's ln(original) 0, a huge factor overflows when squared).
void check_attention_factor(double af, const std::string& where) {
    const float squared = float(af * af);
    if (!(af > 0) || !std::isfinite(squared))
        throw Error(ErrorKind::format, where + " gives a RoPE attention factor of " + std::to_string(af) +
                                           ", not a finite positive scale");
}

void apply_phi3_rope(ModelConfig& c, const Phi3Rope& r) {
    for (LayerConfig& lc : c.layers) {
        lc.rotary_dims = r.rotary < lc.head_dim ? r.rotary : 0;
        lc.inv_freq = phi3_inv_freq(r, lc.head_dim, r.short_factor);
        if (!r.long_factor.empty()) {
            lc.inv_freq_long = phi3_inv_freq(r, lc.head_dim, r.long_factor);
            lc.rope_long_after = r.original_max;
        }
        // The factor scales the rotated dims only: folded into the scale when all rotate.
        const bool all = lc.rotary_dims == 0;
        lc.attn_scale = float((all ? r.attention_factor * r.attention_factor : 1.0) / std::sqrt(double(lc.head_dim)));
        lc.rope_scale = all ? 1.0f : float(r.attention_factor);
    }
}

// The rotated dims: int(head_dim · partial_rotary_factor), as transformers.
int rotary_dims(int head_dim, double partial, const std::string& where) {
    const int rot = int(head_dim * partial);
    if (rot < 2 || rot % 2)
        throw Error(ErrorKind::unsupported, where + ": partial_rotary_factor " + std::to_string(partial) + " gives " +
                                                std::to_string(rot) + " rotary dims of " + std::to_string(head_dim) +
                                                " (an even number >= 2 is needed)");
    return rot;
}

// A LongRoPE factor list: rotary / 2 finite positive floats.
std::vector<float> factor_list(const ConfigReader& p, const std::string& key, int rotary) {
    if (!p.has(key)) p.fail(ErrorKind::format, key, "is missing (LongRoPE needs short_factor and long_factor)");
    const json& v = p.j[key];
    if (!v.is_array() || v.size() != size_t(rotary / 2))
        p.fail(ErrorKind::format, key, "must be a list of " + std::to_string(rotary / 2) + " numbers (rotary dims / 2)");
    std::vector<float> out;
    for (size_t i = 0; i < v.size(); ++i) {
        const double d = v[i].is_number() ? v[i].get<double>() : -1.0;
        const float f = float(d);
        if (!(d > 0) || !std::isfinite(f) || !(f > 0))
            p.fail(ErrorKind::format, key, "entry " + std::to_string(i) + " is not a finite positive number");
        out.push_back(f);
    }
    return out;
}

ModelConfig parse_phi3(const ConfigReader& r, const ConfigReader&) {
    ModelConfig c = parse_llama_like(r, /*read_rope=*/false);
    c.fused_qkv = true;
    c.fused_gate_up = true;
    const int head_dim = c.layers.front().head_dim;
    Phi3Rope rope;
    rope.theta = r.real("rope_theta", 10000.0, Range{1, kFloatMax, true, false});
    double partial = r.number("partial_rotary_factor", 1.0, Range{0, 1, true, false});
    std::string key = r.has("rope_parameters") ? "rope_parameters" : r.has("rope_scaling") ? "rope_scaling" : "";
    std::string type = "default";
    if (!key.empty()) {
        const ConfigReader p = r.object(key);
        rope.theta = p.real("rope_theta", rope.theta, Range{1, kFloatMax, true, false});
        partial = p.number("partial_rotary_factor", partial, Range{0, 1, true, false});
        type = p.string("rope_type", p.string("type", "default"));
    }
    rope.rotary = rotary_dims(head_dim, partial, r.file);
    // Phi3Config reads "su" and "yarn" as longrope.
    if (type == "longrope" || type == "su" || type == "yarn") {
        const ConfigReader p = r.object(key);
        const double top_orig = r.number("original_max_position_embeddings", 4096.0, Range{1, 2147483647.0});
        rope.original_max = int(p.number("original_max_position_embeddings", top_orig, Range{1, 2147483647.0}));
        rope.short_factor = factor_list(p, "short_factor", rope.rotary);
        rope.long_factor = factor_list(p, "long_factor", rope.rotary);
        const double factor =
            p.number("factor", double(c.max_position) / rope.original_max, Range{0, kFloatMax, true, false});
        rope.attention_factor =
            p.has("attention_factor")
                ? p.number("attention_factor", 1.0, Range{0, kFloatMax, true, false})
                : factor <= 1 ? 1.0 : std::sqrt(1 + std::log(factor) / std::log(double(rope.original_max)));
        check_attention_factor(rope.attention_factor, r.file + ": " + key + " (original_max_position_embeddings " +
                                                          std::to_string(rope.original_max) + ")");
    } else if (type != "default") {
        throw Error(ErrorKind::unsupported, "unsupported rope type '" + type + "' in " + r.file +
                                                " (Phi-3: default, longrope)");
    }
    apply_phi3_rope(c, rope);
    const int window = r.has("sliding_window") ? int(r.integer("sliding_window", 0, 1, INT32_MAX)) : 0;
    set_sliding_layers(r, c, window, [](int, int) { return true; }, 0);
    return c;
}

// llama.cpp's phi3 architecture: rope.dimension_count is the rotary dims;
// LongRoPE arrives as the tensors rope_factors_short/long.weight with
// rope.scaling.original_context_length and rope.scaling.attn_factor; a window
// as attention.sliding_window.
ModelConfig parse_phi3_gguf(const GgufFile& f) {
    ModelConfig c = parse_llama_like_gguf(f, /*read_rope=*/false);
    c.fused_qkv = true;
    c.fused_gate_up = true;
    const int head_dim = c.layers.front().head_dim;
    if (head_dim % 2)
        throw Error(ErrorKind::format, f.path().string() + ": head size " + std::to_string(head_dim) +
                                           " (phi3.attention.key_length, or embedding_length / head_count) is odd");
    Phi3Rope rope;
    rope.theta = f.find("phi3.rope.freq_base") ? f.get_float("phi3.rope.freq_base") : 10000.0;
    rope.rotary = f.find("phi3.rope.dimension_count") ? int(f.get_uint("phi3.rope.dimension_count", uint64_t(head_dim)))
                                                       : head_dim;
    if (rope.rotary < 2 || rope.rotary % 2)
        throw Error(ErrorKind::format, f.key_where("phi3.rope.dimension_count") + " = " + std::to_string(rope.rotary) +
                                           " is not an even number of dims in [2, " + std::to_string(head_dim) + "]");
    const GgufTensor* shorts = f.find_tensor("rope_factors_short.weight");
    const GgufTensor* longs = f.find_tensor("rope_factors_long.weight");
    if (shorts || longs) {
        for (const GgufTensor* t : {shorts, longs}) {
            if (!t)
                throw Error(ErrorKind::model, f.path().string() + ": LongRoPE needs both rope_factors_short.weight and "
                                                                  "rope_factors_long.weight");
            if (t->n_dims != 1 || t->ne[0] != rope.rotary / 2)
                throw Error(ErrorKind::model, "wrong shape of " + t->where() + ": expected [" +
                                                  std::to_string(rope.rotary / 2) + "], got " + t->shape_string());
        }
        rope.short_factor = gguf_read_f32(*shorts);
        rope.long_factor = gguf_read_f32(*longs);
        for (const auto* list : {&rope.short_factor, &rope.long_factor})
            for (size_t i = 0; i < list->size(); ++i)
                if (!((*list)[i] > 0) || !std::isfinite((*list)[i]))
                    throw Error(ErrorKind::format, "value " + std::to_string((*list)[i]) + " at index " +
                                                       std::to_string(i) + " of " +
                                                       (list == &rope.short_factor ? shorts : longs)->where() +
                                                       " is not a positive factor");
        const std::string orig = "phi3.rope.scaling.original_context_length";
        rope.original_max = int(f.get_uint(orig, uint64_t(INT32_MAX)));
        if (rope.original_max < 1) throw Error(ErrorKind::format, f.key_where(orig) + " = 0 is not a context length");
        const double factor = double(c.max_position) / rope.original_max;
        rope.attention_factor = factor <= 1 ? 1.0 : std::sqrt(1 + std::log(factor) / std::log(double(rope.original_max)));
        if (f.find("phi3.rope.scaling.attn_factor")) {
            const double af = f.get_float("phi3.rope.scaling.attn_factor");
            if (!(af > 0 && af <= double(kFloatMax)))
                throw Error(ErrorKind::format, f.key_where("phi3.rope.scaling.attn_factor") + " = " +
                                                   std::to_string(af) + " is not a positive float");
            rope.attention_factor = af;
        }
        check_attention_factor(rope.attention_factor, f.key_where(orig) + " = " + std::to_string(rope.original_max));
    }
    apply_phi3_rope(c, rope);
    if (f.find("phi3.attention.sliding_window")) {
        const uint64_t w = f.get_uint("phi3.attention.sliding_window", uint64_t(INT32_MAX));
        if (w > 0)
            for (LayerConfig& lc : c.layers) {
                lc.attention = AttentionType::sliding;
                lc.window = int(w);
            }
    }
    return c;
}

constexpr ConfigForm kForms[] = {
    {.architecture = "Phi3ForCausalLM", .model_type = "phi3", .nested = false, .tie_default = false},
};
constexpr std::string_view kGguf[] = {"phi3"};
constexpr TensorLayout kLayouts[] = {{"model.", "lm_head.weight"}};

}  // namespace

// Phi-3 / Phi-4-mini: <|system|>, <|user|>, <|assistant|> turns closed by <|end|>.
const ChatTemplate kPhi3Chat{
    .name = "phi3",
    .marker = "<|end|>",  // not <|assistant|>: Zephyr-style templates (TinyLlama-Chat) have that too
    .system = "<|system|>{content}<|end|>",
    .user = "<|user|>{content}<|end|>",
    .assistant = "<|assistant|>",
    .end_of_turn = "<|end|>",
    .generation_prompt = "<|assistant|>",
    .stop_tokens = {"<|end|>", "<|endoftext|>"},
};

extern const FamilyDescriptor kPhi3Family;  // listed in families.cpp
const FamilyDescriptor kPhi3Family{
    .name = "phi3",
    .forms = kForms,
    .gguf_architectures = kGguf,
    .parse = parse_phi3,
    .parse_gguf = parse_phi3_gguf,
    .hf_layouts = kLayouts,
    .hf_name = hf_tensor_name,
    .ignored = {},
    .chat = &kPhi3Chat,
};

}  // namespace staticlm
