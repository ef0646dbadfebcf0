// The weights of a loaded model: packed matrices (kernels' private layouts)
// and fp32 norm vectors, all inside one anonymous arena owned by Model.
// Optional tensors have data == nullptr.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/kernels.hpp"

namespace staticlm {

using kernels::PackedMatrix;

// What a weight is for. The weight plan (weight_plan.cpp) decides from config
// flags which roles a model has; a family's naming function gives each its
// tensor name (model/family.hpp).
enum class WeightRole : uint8_t {
    // model-level
    embed, final_norm, lm_head, embed_per_layer, per_layer_model_proj, per_layer_proj_norm,
    // per layer
    attn_norm, q, k, v, o, q_norm, k_norm,
    q_bias, k_bias, v_bias,  // added to the q/k/v projections (LayerConfig::qkv_bias)
    post_attn_norm,  // sandwich: norm of the attention output
    ffn_norm,        // the norm in front of the FFN
    post_ffn_norm,   // sandwich: norm of the FFN output
    gate, up, down, ple_gate, ple_proj, ple_post_norm, layer_scalar,
    qkv, gate_up,  // names of fused source tensors (ModelConfig::fused_*): their rows are q/k/v, gate/up
};

// Where a matrix's rows are in its source tensor: row r of the matrix is
// tensor row row0 + source(r). A fused tensor (Phi-3's qkv_proj, gate_up_proj)
// holds several matrices at row offsets. Partial rotary embeddings in the
// rotate-half layout (0 < rotary < head_dim) permute the q/k rows of each
// head: the rotated pairs (i, i + rotary/2) become the pairs (j, j + head_dim/2)
// that the rope kernel turns, and the other dims fill the pairs of frequency 0.
struct RowSource {
    int64_t row0 = 0;
    int64_t tensor_rows = 0;     // rows of the source tensor; 0: the matrix's own
    int head_dim = 0, rotary = 0;
    bool permuted() const { return rotary > 0 && rotary < head_dim; }
    int64_t source(int64_t r) const {
        if (!permuted()) return r;
        const int64_t hd = head_dim, half = hd / 2, rh = rotary / 2, d = r % hd, base = r - d;
        if (d < rh) return base + d;                                   // first rotated half
        if (d >= half && d < half + rh) return base + rh + (d - half);  // second rotated half
        if (d < half) return base + rotary + (d - rh);                 // passed through
        return base + rotary + (half - rh) + (d - half - rh);
    }
};

// One weight of the plan: its role and checkpoint name, its shape and where
// it lands in ModelWeights (and in the arena, once laid out).
struct WeightEntry {
    enum class Kind { matrix, vector, scalar };
    Kind kind = Kind::matrix;
    WeightRole role = WeightRole::embed;
    int layer = -1;                // -1 for model-level weights
    bool matmul = false;           // multiplied in the forward pass (lookup tables are not;
                                   // a tied embedding is also the output head)
    std::string name;              // full tensor name in the checkpoint
    int n = 0;                     // matrix rows / vector length
    int k = 0;                     // matrix columns (0 for vectors)
    PackedMatrix* matrix = nullptr;
    const float** vector = nullptr;
    bool norm = false;             // a vector that multiplies (an RMSNorm weight: gets
                                   // norm_weight_offset at load); biases add

    float* scalar = nullptr;       // [1] tensors (Gemma layer_scalar)
    RowSource rows;                // matrices: where the rows are in the source tensor
    size_t offset = 0;             // into the arena (64-byte aligned)
    size_t bytes = 0;              // in the arena
};

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
    const float* q_bias = nullptr;          // [n_heads*hd] (qkv_bias)
    const float* k_bias = nullptr;          // [n_kv*hd]
    const float* v_bias = nullptr;          // [n_kv*hd]
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
