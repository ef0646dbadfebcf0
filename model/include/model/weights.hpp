// The weights of a loaded model: packed matrices (kernels' private layouts)
// and fp32 norm vectors, all inside one anonymous arena owned by Model.
// Optional tensors have data == nullptr.
#pragma once

#include <vector>

#include "kernels/kernels.hpp"

namespace staticlm {

using kernels::PackedMatrix;

struct LayerWeights {
    PackedMatrix q, k, v, o;        // [n_heads*hd][H], [n_kv*hd][H] x2, [H][n_heads*hd]
    PackedMatrix gate, up, down;    // [F][H], [F][H], [H][F]
    const float* attn_norm = nullptr;       // [H] input_layernorm
    const float* ffn_norm = nullptr;        // [H] post_attention_layernorm (Llama) /
                                            //     pre_feedforward_layernorm (Gemma)
    const float* post_attn_norm = nullptr;  // [H] Gemma: post_attention_layernorm
    const float* post_ffn_norm = nullptr;   // [H] Gemma: post_feedforward_layernorm
    const float* q_norm = nullptr;          // [head_dim]
    const float* k_norm = nullptr;          // [head_dim]
    // Gemma 4 per-layer input
    PackedMatrix ple_gate;                  // per_layer_input_gate [D][H]
    PackedMatrix ple_proj;                  // per_layer_projection [H][D]
    const float* ple_post_norm = nullptr;   // post_per_layer_input_norm [H]
    float layer_scalar = 1.0f;
};

struct ModelWeights {
    PackedMatrix embed;                     // [V][H]
    PackedMatrix lm_head;                   // [V][H]; == embed when tied
    const float* final_norm = nullptr;      // [H]
    // Gemma 4 PLE
    PackedMatrix embed_per_layer;           // [V_ple][L*D]
    PackedMatrix per_layer_model_proj;      // [L*D][H]
    const float* per_layer_proj_norm = nullptr;  // [D]
    std::vector<LayerWeights> layers;
};

}  // namespace staticlm
