// The list of model families (adding one: docs/FAMILIES.md), the Hugging Face
// tensor names that Llama-style families share, and the plain chat template.
#include <string>

#include "model/family.hpp"

namespace staticlm {

// Defined in model/families/<name>.cpp.
extern const FamilyDescriptor kLlamaFamily;
extern const FamilyDescriptor kGemma3Family;
extern const FamilyDescriptor kGemma4Family;
extern const FamilyDescriptor kQwen2Family;
extern const FamilyDescriptor kQwen3Family;
extern const FamilyDescriptor kMistralFamily;
extern const FamilyDescriptor kSmolLM3Family;
extern const FamilyDescriptor kGraniteFamily;
extern const FamilyDescriptor kPhi3Family;

namespace {

// Matched in this order against config.json (the first form that fits wins).
// SmolLM3 comes before Qwen3 for chat-template detection: its template also
// holds Qwen3's marker <|im_start|>.
constexpr const FamilyDescriptor* kFamilies[] = {&kLlamaFamily,   &kGemma3Family,  &kGemma4Family,
                                                 &kQwen2Family,   &kSmolLM3Family, &kQwen3Family,
                                                 &kMistralFamily, &kGraniteFamily, &kPhi3Family};

}  // namespace

std::span<const FamilyDescriptor* const> families() { return kFamilies; }

const FamilyDescriptor* find_family(std::string_view name) {
    for (const FamilyDescriptor* f : kFamilies)
        if (f->name == name) return f;
    return nullptr;
}

const FamilyDescriptor* find_gguf_family(std::string_view architecture) {
    for (const FamilyDescriptor* f : kFamilies)
        if (f->parse_gguf)
            for (std::string_view a : f->gguf_architectures)
                if (a == architecture) return f;
    return nullptr;
}

std::string gguf_architectures_known() {
    std::string known;
    for (const FamilyDescriptor* f : kFamilies)
        if (f->parse_gguf)
            for (std::string_view a : f->gguf_architectures) known += (known.empty() ? "" : ", ") + std::string(a);
    return known;
}

// Plain text: no markers; the chat adds the tokenizer's BOS id, a system text
// is a paragraph, and turns after the first are separated by a newline.
const ChatTemplate kPlainChat{
    .name = "plain",
    .bos_from_tokenizer = true,
    .system = "{content}\n\n",
    .user = "{content}",
    .user_separator = "\n",
};

std::string hf_tensor_name(WeightRole role, int layer, const LayerConfig* lc, const TensorLayout& layout) {
    const std::string p(layout.decoder);
    const std::string lp = p + "layers." + std::to_string(layer) + ".";
    // Sandwich-norm layers (Gemma) name the pre-FFN norm pre_feedforward_layernorm and
    // use post_attention_layernorm for the attention output; Llama's pre-FFN norm
    // is post_attention_layernorm.
    const bool sandwich = lc && lc->sandwich_norms;
    switch (role) {
        case WeightRole::embed: return p + "embed_tokens.weight";
        case WeightRole::final_norm: return p + "norm.weight";
        case WeightRole::lm_head: return std::string(layout.head);
        case WeightRole::embed_per_layer: return p + "embed_tokens_per_layer.weight";
        case WeightRole::per_layer_model_proj: return p + "per_layer_model_projection.weight";
        case WeightRole::per_layer_proj_norm: return p + "per_layer_projection_norm.weight";
        case WeightRole::attn_norm: return lp + "input_layernorm.weight";
        case WeightRole::q: return lp + "self_attn.q_proj.weight";
        case WeightRole::k: return lp + "self_attn.k_proj.weight";
        case WeightRole::v: return lp + "self_attn.v_proj.weight";
        case WeightRole::o: return lp + "self_attn.o_proj.weight";
        case WeightRole::q_norm: return lp + "self_attn.q_norm.weight";
        case WeightRole::k_norm: return lp + "self_attn.k_norm.weight";
        case WeightRole::q_bias: return lp + "self_attn.q_proj.bias";
        case WeightRole::k_bias: return lp + "self_attn.k_proj.bias";
        case WeightRole::v_bias: return lp + "self_attn.v_proj.bias";
        case WeightRole::post_attn_norm: return lp + "post_attention_layernorm.weight";
        case WeightRole::ffn_norm:
            return lp + (sandwich ? "pre_feedforward_layernorm.weight" : "post_attention_layernorm.weight");
        case WeightRole::post_ffn_norm: return lp + "post_feedforward_layernorm.weight";
        case WeightRole::gate: return lp + "mlp.gate_proj.weight";
        case WeightRole::up: return lp + "mlp.up_proj.weight";
        case WeightRole::down: return lp + "mlp.down_proj.weight";
        case WeightRole::ple_gate: return lp + "per_layer_input_gate.weight";
        case WeightRole::ple_proj: return lp + "per_layer_projection.weight";
        case WeightRole::ple_post_norm: return lp + "post_per_layer_input_norm.weight";
        case WeightRole::layer_scalar: return lp + "layer_scalar";
        case WeightRole::qkv: return lp + "self_attn.qkv_proj.weight";
        case WeightRole::gate_up: return lp + "mlp.gate_up_proj.weight";
    }
    return {};
}

std::string gguf_tensor_name(WeightRole role, int layer, const LayerConfig*, const TensorLayout&) {
    // ffn_norm is the norm in front of the FFN with or without sandwich norms.
    const std::string b = "blk." + std::to_string(layer) + ".";
    switch (role) {
        case WeightRole::embed: return "token_embd.weight";
        case WeightRole::final_norm: return "output_norm.weight";
        case WeightRole::lm_head: return "output.weight";
        case WeightRole::embed_per_layer: return "per_layer_token_embd.weight";
        case WeightRole::per_layer_model_proj: return "per_layer_model_proj.weight";
        case WeightRole::per_layer_proj_norm: return "per_layer_proj_norm.weight";
        case WeightRole::attn_norm: return b + "attn_norm.weight";
        case WeightRole::q: return b + "attn_q.weight";
        case WeightRole::k: return b + "attn_k.weight";
        case WeightRole::v: return b + "attn_v.weight";
        case WeightRole::o: return b + "attn_output.weight";
        case WeightRole::q_norm: return b + "attn_q_norm.weight";
        case WeightRole::k_norm: return b + "attn_k_norm.weight";
        case WeightRole::q_bias: return b + "attn_q.bias";
        case WeightRole::k_bias: return b + "attn_k.bias";
        case WeightRole::v_bias: return b + "attn_v.bias";
        case WeightRole::post_attn_norm: return b + "post_attention_norm.weight";
        case WeightRole::ffn_norm: return b + "ffn_norm.weight";
        case WeightRole::post_ffn_norm: return b + "post_ffw_norm.weight";
        case WeightRole::gate: return b + "ffn_gate.weight";
        case WeightRole::up: return b + "ffn_up.weight";
        case WeightRole::down: return b + "ffn_down.weight";
        case WeightRole::ple_gate: return b + "inp_gate.weight";
        case WeightRole::ple_proj: return b + "proj.weight";
        case WeightRole::ple_post_norm: return b + "post_norm.weight";
        case WeightRole::layer_scalar: return b + "layer_output_scale.weight";
        case WeightRole::qkv: return b + "attn_qkv.weight";
        case WeightRole::gate_up: return b + "ffn_up.weight";  // llama.cpp keeps Phi-3's fused gate+up as ffn_up
    }
    return {};
}

}  // namespace staticlm
