// Model families as descriptors (docs/FAMILIES.md). A family is one file in
// model/families/ that says which checkpoints it reads, how their config maps
// to ModelConfig/LayerConfig, where its tensors are and which to skip, and its
// chat template. Everything else (the weight plan, the loader, the graph, the
// chat renderer) is shared and driven by config fields, never by family names.
// Internal to model/ (runtime/ reads the chat templates).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "staticlm/chat_template.hpp"
#include "model/weights.hpp"
#include "staticlm/config.hpp"

namespace staticlm {

namespace detail {
struct ConfigReader;
}
class GgufFile;  // model/gguf.hpp

// Where a checkpoint keeps the decoder: the prefix of its tensors and the
// name of the output head. Multimodal checkpoints differ: Gemma 4 saves
// model.language_model.* + lm_head.weight, Gemma 3 language_model.model.* +
// language_model.lm_head.weight.
struct TensorLayout {
    std::string_view decoder = "model.";
    std::string_view head = "lm_head.weight";
};

// The checkpoint name of a role: layer -1 and lc null for model-level roles.
using TensorNameFn = std::string (*)(WeightRole role, int layer, const LayerConfig* lc,
                                     const TensorLayout& layout);

// Hugging Face names of Llama-style decoders (Llama, Gemma 1-4):
// <decoder>layers.N.self_attn.q_proj.weight, ..., and the layout's head.
std::string hf_tensor_name(WeightRole role, int layer, const LayerConfig* lc, const TensorLayout& layout);

// GGUF names (llama.cpp's): token_embd.weight, blk.N.attn_q.weight, ... (the
// layout is not used: GGUF files have one).
std::string gguf_tensor_name(WeightRole role, int layer, const LayerConfig* lc, const TensorLayout& layout);

// One way config.json names a family.
struct ConfigForm {
    std::string_view architecture;  // an entry of "architectures"
    std::string_view model_type;    // the "model_type" that stands for it when "architectures" is absent
    bool nested = false;            // the decoder's keys are in "text_config" (multimodal checkpoints)
    // tie_word_embeddings when config.json does not say. transformers reads the
    // flag from the config of the class it builds, i.e. the top level of
    // config.json for both forms (text_config's own flag is not consulted).
    bool tie_default = false;
};

// Checkpoint tensors that are not part of the text decoder (towers of
// multimodal checkpoints): skipped with one warning per group.
struct IgnoredTensors {
    std::string_view prefix;  // full name prefix: "model.vision_tower."
    std::string_view what;    // "vision tower"
};

// A built-in random-weight shape of a family (staticlm bench/info --synthetic
// NAME): its name and the config.json it is read from.
struct SyntheticShape {
    std::string_view name;
    std::string_view config_json;
};

struct FamilyDescriptor {
    std::string_view name;  // ModelConfig::family, for display and find_family
    std::span<const ConfigForm> forms;
    std::span<const std::string_view> gguf_architectures;  // GGUF general.architecture values
    // config.json → ModelConfig. `decoder` reads the decoder's keys (text_config
    // or the top level), `top` the top level. Fills everything but
    // architecture, family and tie_embeddings, which the caller sets.
    ModelConfig (*parse)(const detail::ConfigReader& decoder, const detail::ConfigReader& top);
    // GGUF metadata → ModelConfig (null: the family reads no GGUF files).
    // Families with uniform layers check the shared keys and every layer
    // tensor with read_gguf_model_info and start from gguf_base_config. Fills
    // everything but architecture, family and tie_embeddings. The norm
    // vectors of a GGUF file are multipliers as stored, so norm_weight_offset
    // stays 0 (llama.cpp's converter adds Gemma 3's 1).
    ModelConfig (*parse_gguf)(const GgufFile& file);
    // llama.cpp's converter interleaved this family's q/k rows for its
    // adjacent-pair RoPE (gguf_llama_qk_row); the loader undoes it.
    bool gguf_qk_interleaved = false;
    // Where the decoder's tensors may be, tried in order: the first layout whose
    // embedding exists is used (the last when none is found).
    std::span<const TensorLayout> hf_layouts;
    TensorNameFn hf_name;
    std::span<const IgnoredTensors> ignored;
    const ChatTemplate* chat;  // null: the family has no chat template of its own
    std::span<const SyntheticShape> synthetic = {};  // built-in shapes (model/synthetic.cpp)
};

// Every family, in the order checkpoints are matched against them
// (model/families/families.cpp).
std::span<const FamilyDescriptor* const> families();
// By ModelConfig::family; null when unknown.
const FamilyDescriptor* find_family(std::string_view name);
// The family that reads GGUF files of this general.architecture; null when none does.
const FamilyDescriptor* find_gguf_family(std::string_view architecture);
// The GGUF architectures some family reads, comma-separated (for errors).
std::string gguf_architectures_known();
// The family llama2.c files belong to (model/llama2c.cpp).
const FamilyDescriptor& llama2c_family();

// Chat templates behind the public ChatFormat names (plain, llama3, gemma4).
extern const ChatTemplate kPlainChat;
extern const ChatTemplate kLlama3Chat;
extern const ChatTemplate kGemma4Chat;

}  // namespace staticlm
