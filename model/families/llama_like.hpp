// Llama's readers, shared by the families whose decoder is Llama's with a few
// changes (Qwen2, Qwen3, Mistral, SmolLM3, Granite, Phi-3): each calls these and then sets what it
// changes (q/k norms, biases, windows, the BOS rule). Defined in
// model/families/llama.cpp. Internal to model/families/.
#pragma once

#include "model/config_reader.hpp"
#include "model/gguf.hpp"
#include "staticlm/config.hpp"

namespace staticlm {

// config.json (transformers 5.24 LlamaConfig keys and defaults): sizes, heads,
// head_dim (explicit, or hidden / heads), RoPE (`rope_parameters`, or
// `rope_theta` + `rope_scaling`: default, linear, llama3, yarn), rms_norm_eps,
// silu, special tokens; every layer full attention over its own K/V, with the
// attention scale 1/sqrt(head_dim) (times YaRN's attention factor squared).
// attention_bias / mlp_bias true are refused: a family with biases sets them
// itself.
// read_rope false: inv_freq and the attention scale are left for the caller
// (a family with its own RoPE keys, Phi-3).
ModelConfig parse_llama_like(const detail::ConfigReader& r, bool read_rope = true);

// Sliding-window layers of size `window` (> 0): the layers config.json's
// `layer_types` marks "sliding_attention" when it has that key (one entry per
// layer, "full_attention" or "sliding_attention"), else those for which
// `slides(layer)` is true. window 0 leaves every layer full.
void set_sliding_layers(const detail::ConfigReader& r, ModelConfig& c, int window, bool (*slides)(int layer, int arg),
                        int arg);

// The GGUF form (llama.cpp's converter) of a Llama-like architecture: the
// shared keys under general.architecture's prefix (read_gguf_model_info),
// RoPE from <arch>.rope.freq_base and <arch>.rope.scaling.* (none, linear,
// yarn, llama3 via rope_freqs.weight), silu. Partial rotary dimensions are
// refused.
ModelConfig parse_llama_like_gguf(const GgufFile& f, bool read_rope = true);

// YaRN as transformers 5.24 computes it (_compute_yarn_parameters): inv_freq
// blends extrapolated and interpolated frequencies by a ramp over the
// dimensions whose rotations at `original_max_position` lie between beta_slow
// and beta_fast; cos and sin are multiplied by the returned attention factor
// (0.1 ln(factor) + 1 unless given), which scales q·k by its square.
struct Yarn {
    double factor = 1, original_max_position = 0, beta_fast = 32, beta_slow = 1;
    double attention_factor = 0;  // 0: 0.1 ln(factor) + 1
    bool truncate = true;         // correction range rounded outwards to whole dimensions
};
// Returns the attention factor; `inv_freq` (default RoPE of `theta`, head_dim / 2 entries) is rescaled.
double rope_apply_yarn(std::vector<float>& inv_freq, int head_dim, double theta, const Yarn& yarn);

}  // namespace staticlm
