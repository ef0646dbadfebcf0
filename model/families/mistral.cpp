// The Mistral family: MistralForCausalLM (Mistral 7B, Mistral Nemo,
// Ministral) as transformers 5.24 models/mistral defines it: Llama's decoder
// with an optional sliding window on every layer (`sliding_window`, null for
// none). Its GGUF files are llama.cpp's `llama` architecture (the Llama family
// reads them; llama.cpp keeps no window there). Mistral's [INST] chat template.
#include "llama_like.hpp"
#include "model/config.hpp"
#include "model/config_reader.hpp"
#include "model/family.hpp"

namespace staticlm {

namespace {

using detail::ConfigReader;

ModelConfig parse_mistral(const ConfigReader& r, const ConfigReader&) {
    ModelConfig c = parse_llama_like(r);
    const int window = r.has("sliding_window") ? int(r.integer("sliding_window", 0, 1, INT32_MAX)) : 0;
    set_sliding_layers(r, c, window, [](int, int) { return true; }, 0);
    return c;
}

constexpr ConfigForm kForms[] = {
    {.architecture = "MistralForCausalLM", .model_type = "mistral", .nested = false, .tie_default = false},
};
constexpr TensorLayout kLayouts[] = {{"model.", "lm_head.weight"}};

}  // namespace

// Mistral-7B-Instruct's template: [INST] turns, replies closed by </s>; a
// system text goes in front of the first user message.
const ChatTemplate kMistralChat{
    .name = "mistral",
    .marker = "[INST]",
    .bos = "<s>",
    .system = "{content}\n\n",
    .system_in_first_user = true,
    .user = "[INST] {system}{content} [/INST]",
    .end_of_turn = "</s>",
    .stop_tokens = {"</s>"},
};

extern const FamilyDescriptor kMistralFamily;  // listed in families.cpp
const FamilyDescriptor kMistralFamily{
    .name = "mistral",
    .forms = kForms,
    .gguf_architectures = {},
    .parse = parse_mistral,
    .parse_gguf = nullptr,
    .hf_layouts = kLayouts,
    .hf_name = hf_tensor_name,
    .ignored = {},
    .chat = &kMistralChat,
};

}  // namespace staticlm
