// The Granite family: GraniteForCausalLM (IBM Granite 3.0 - 3.3 dense) as
// transformers 5.24 models/granite defines it: Llama's decoder with four
// multipliers (embeddings, attention scale, each block's output before its
// residual add, logits divided); its GGUF form (llama.cpp's granite
// architecture); the <|start_of_role|> chat template.
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

#include "llama_like.hpp"
#include "model/config.hpp"
#include "model/config_reader.hpp"
#include "model/family.hpp"
#include "model/gguf.hpp"

namespace staticlm {

namespace {

using detail::ConfigReader;
using detail::kFloatMax;
using detail::Range;

constexpr double kFloatMin = 1.1754943508222875e-38;  // FLT_MIN: 1 / it is finite

// The attention scale `scale` instead of 1/sqrt(head_dim), keeping the YaRN
// attention factor that parse_llama_like[_gguf] folded in (transformers and
// llama.cpp apply it to cos/sin, on top of the scale).
void set_attention_scale(ModelConfig& c, double scale) {
    for (LayerConfig& lc : c.layers) {
        double factor2 = double(lc.attn_scale) * std::sqrt(double(lc.head_dim));
        if (std::abs(factor2 - 1.0) < 1e-6) factor2 = 1.0;  // no YaRN: 1 up to the float rounding of 1/sqrt
        lc.attn_scale = float(scale * factor2);
    }
}

// GraniteConfig (configuration_granite.py) and modeling_granite.py:
// inputs_embeds * embedding_multiplier; attention scaling =
// attention_multiplier; hidden = residual + block(x) * residual_multiplier
// after attention and after the MLP; logits = lm_head(norm(h)) /
// logits_scaling. Each defaults to 1 and is used as a float: (0, FLT_MAX]
// (logits_scaling [FLT_MIN, FLT_MAX], as its reciprocal is used).
ModelConfig parse_granite(const ConfigReader& r, const ConfigReader&) {
    ModelConfig c = parse_llama_like(r);
    c.add_bos = false;  // Granite's GPT-2 tokenizer adds no BOS
    const Range positive{0, kFloatMax, true, false};
    c.embed_scale = r.real("embedding_multiplier", 1.0, positive);
    c.residual_scale = r.real("residual_multiplier", 1.0, positive);
    c.logits_divisor = r.real("logits_scaling", 1.0, Range{kFloatMin, kFloatMax});
    // The default attention_multiplier is 1 (not 1/sqrt(head_dim)).
    set_attention_scale(c, double(r.real("attention_multiplier", 1.0, positive)));
    return c;
}

// llama.cpp's granite: granite.embedding_scale, granite.residual_scale,
// granite.attention.scale, granite.logit_scale (the converter's names for the
// four multipliers, written when non-zero); an absent key leaves Llama's
// behaviour (llama.cpp: 0 = off, attention 1/sqrt(head_dim)). Present, each
// must be a finite positive float. granite.rope.scaling.finetuned = false
// turns RoPE off (llama.cpp reads it as a switch that defaults to true).
ModelConfig parse_granite_gguf(const GgufFile& f) {
    ModelConfig c = parse_llama_like_gguf(f);
    if (!f.find("tokenizer.ggml.add_bos_token")) c.add_bos = false;
    auto scale = [&](const std::string& key, double lo) -> std::optional<float> {
        if (!f.find(key)) return std::nullopt;
        const double v = f.get_float(key);
        if (!(v >= lo && v <= kFloatMax) || !(float(v) >= float(lo)))
            throw Error(ErrorKind::format, f.key_where(key) + " = " + std::to_string(v) +
                                               " is not a finite positive scale");
        return float(v);
    };
    if (const auto s = scale("granite.embedding_scale", kFloatMin)) c.embed_scale = *s;
    if (const auto s = scale("granite.residual_scale", kFloatMin)) c.residual_scale = *s;
    if (const auto s = scale("granite.logit_scale", kFloatMin)) c.logits_divisor = *s;
    if (const auto s = scale("granite.attention.scale", kFloatMin)) set_attention_scale(c, double(*s));
    if (f.find("granite.rope.scaling.finetuned") && !f.get_bool("granite.rope.scaling.finetuned"))
        for (LayerConfig& lc : c.layers) std::fill(lc.inv_freq.begin(), lc.inv_freq.end(), 0.0f);
    return c;
}

constexpr ConfigForm kForms[] = {
    {.architecture = "GraniteForCausalLM", .model_type = "granite", .nested = false, .tie_default = false},
};
constexpr std::string_view kGguf[] = {"granite"};
constexpr TensorLayout kLayouts[] = {{"model.", "lm_head.weight"}};

}  // namespace

// ibm-granite/granite-3.3-2b-instruct's template (as Granite 3.0's): every
// message is <|start_of_role|>ROLE<|end_of_role|>CONTENT<|end_of_text|>\n and
// the generation prompt opens an assistant role. Not expressed: the default
// system text of 3.1 - 3.3 when none is given ("Knowledge Cutoff Date: April
// 2024.\nToday's Date: " + strftime_now('%B %d, %Y') + ".\nYou are Granite,
// developed by IBM. You are a helpful AI assistant.", which holds the date,
// and ChatTemplate expands {date} only in its own texts), tools, documents,
// controls and the `thinking` variant.
const ChatTemplate kGraniteChat{
    .name = "granite",
    .marker = "<|start_of_role|>",
    .system = "<|start_of_role|>system<|end_of_role|>{content}<|end_of_text|>\n",
    .user = "<|start_of_role|>user<|end_of_role|>{content}<|end_of_text|>\n",
    .assistant = "<|start_of_role|>assistant<|end_of_role|>",
    .end_of_turn = "<|end_of_text|>",
    .after_turn = "\n",
    .generation_prompt = "<|start_of_role|>assistant<|end_of_role|>",
    .stop_tokens = {"<|end_of_text|>"},
};

extern const FamilyDescriptor kGraniteFamily;  // listed in families.cpp
const FamilyDescriptor kGraniteFamily{
    .name = "granite",
    .forms = kForms,
    .gguf_architectures = kGguf,
    .parse = parse_granite,
    .parse_gguf = parse_granite_gguf,
    .gguf_qk_interleaved = true,
    .hf_layouts = kLayouts,
    .hf_name = hf_tensor_name,
    .ignored = {},
    .chat = &kGraniteChat,
};

}  // namespace staticlm
