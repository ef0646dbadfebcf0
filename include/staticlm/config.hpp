// ModelConfig and per-layer LayerConfig: plain data filled once from a
// checkpoint's config.json (and generation/tokenizer configs). The forward
// pass reads these fields; it never tests an architecture name.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace staticlm {

enum class AttentionType { full, sliding };
enum class Activation { silu, gelu_tanh };

struct LayerConfig {
    AttentionType attention = AttentionType::full;
    int n_heads = 0;
    int n_kv_heads = 0;
    int head_dim = 0;
    int window = 0;       // sliding: W (sees p-W+1 .. p); full: 0
    int kv_source = 0;    // layer whose K/V this layer reads; == own index when it owns K/V
    int ffn_dim = 0;
    float attn_scale = 1.0f;       // 1/sqrt(head_dim) for Llama, 1.0 for Gemma 4
    std::vector<float> inv_freq;   // [head_dim/2]; zeros pass dims through
    // LongRoPE (Phi-3): a second set used when the sequence can grow past
    // rope_long_after positions (the session's capacity), as llama.cpp decides
    // by its context size; empty otherwise.
    std::vector<float> inv_freq_long;
    int rope_long_after = 0;
    // Partial rotary embeddings in transformers' rotate-half layout (Phi-3):
    // the first rotary_dims dims of each head rotate in pairs (i, i + rotary_dims/2).
    // The loader permutes q/k rows so that these pairs are the kernel's (j, j + head_dim/2)
    // and the other dims pairs of frequency 0. 0: head_dim.
    int rotary_dims = 0;
    // A RoPE attention factor (LongRoPE, YaRN) multiplies cos and sin, so the
    // rotated dims of q and k. With every dim rotated it is folded into
    // attn_scale (squared); with partial rotary the rotated dims of q and k are
    // multiplied by it after RoPE. 1: none.
    float rope_scale = 1.0f;
    bool qk_norm = false;          // RMSNorm(q), RMSNorm(k) per head with weights
    bool v_norm = false;           // RMSNorm(v) per head without weight
    bool k_eq_v = false;           // no v_proj: V is the raw k_proj output (Gemma 4 attention_k_eq_v)
    bool qkv_bias = false;         // q/k/v projections add a bias vector (Qwen2)
    bool sandwich_norms = false;   // post-attention and pre/post-FFN norms (Gemma)
    bool layer_scalar = false;     // a [1] layer_scalar tensor scales the residual after the layer (Gemma 4)
};

// Sampling settings a checkpoint recommends in generation_config.json; a key
// the file lacks stays unset. (suggested_sampling() in generate.hpp applies them.)
struct GenerationConfig {
    std::optional<bool> do_sample;
    std::optional<float> temperature;
    std::optional<int> top_k;
    std::optional<float> top_p;
    std::optional<float> min_p;
    std::optional<float> repetition_penalty;
};

struct ModelConfig {
    std::string architecture;  // as in config.json, for display
    std::string family;        // the family that read it ("llama", "gemma4": model/families/), for display
    int hidden = 0;
    int vocab = 0;
    int n_layers = 0;
    float rms_eps = 1e-5f;
    float norm_weight_offset = 0.0f; // RMSNorm multiplies by (offset + w): 1 for Gemma 1-3, added at load
    Activation activation = Activation::silu;
    float embed_scale = 1.0f;        // multiplies E[ids] (sqrt(H) for Gemma)
    float final_softcap = 0.0f;      // 0: none
    // Fused projections in the checkpoint (Phi-3): one tensor holds q, k and v
    // rows (qkv_proj), one gate and up (gate_up_proj); split at load.
    bool fused_qkv = false;
    bool fused_gate_up = false;
    float residual_scale = 1.0f;     // multiplies each attention and FFN output before its residual add (Granite)
    float logits_divisor = 1.0f;     // the logits are divided by it, before the softcap (Granite logits_scaling)
    bool tie_embeddings = false;     // the output head is the embedding (no lm_head.weight)
    int max_position = 0;            // max_position_embeddings, informational

    // Gemma 4 per-layer inputs (PLE); 0 when absent.
    int per_layer_dim = 0;           // D = hidden_size_per_layer_input
    int per_layer_vocab = 0;         // vocab_size_per_layer_input

    // Special tokens (from config.json, generation_config.json, tokenizer_config.json).
    int bos_id = -1;
    std::vector<int> eos_ids;
    int pad_id = -1;
    bool add_bos = true;
    GenerationConfig generation;

    std::vector<LayerConfig> layers;
};

}  // namespace staticlm
