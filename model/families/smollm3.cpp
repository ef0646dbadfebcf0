// The SmolLM3 family: SmolLM3ForCausalLM as transformers 5.24 models/smollm3
// defines it: Llama's decoder in which some layers skip RoPE (NoPE layers: in
// staticlm, zero frequencies), optionally with sliding windows; its GGUF form
// (llama.cpp's smollm3 architecture); the ChatML template with the
// /think | /no_think reasoning mode.
#include <algorithm>
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

// A layer without RoPE: zero frequencies pass q and k through, and the scale
// is 1/sqrt(head_dim) without YaRN's attention factor (transformers applies
// that factor to cos/sin, which NoPE layers never use).
void drop_rope(LayerConfig& lc) {
    std::fill(lc.inv_freq.begin(), lc.inv_freq.end(), 0.0f);
    lc.attn_scale = float(1.0 / std::sqrt(double(lc.head_dim)));
}

// SmolLM3Config (configuration_smollm3.py): `no_rope_layers[i]` is 1 when
// layer i USES RoPE and 0 for a NoPE layer (despite the name); without it,
// every `no_rope_layer_interval`-th layer (default 4: layers 3, 7, ...) is
// NoPE. `layer_types`, when absent, slides exactly the NoPE layers if
// `use_sliding_window` and `sliding_window` are set. rope_theta defaults to
// 2e6 (SmolLM3Config.default_theta).
ModelConfig parse_smollm3(const ConfigReader& r, const ConfigReader&) {
    ModelConfig c;
    if (r.has("rope_theta")) {
        c = parse_llama_like(r);
    } else {
        json with_theta = r.j;
        with_theta["rope_theta"] = 2000000.0;
        c = parse_llama_like(ConfigReader{with_theta, r.file, r.prefix});
    }
    const int n = c.n_layers;
    std::vector<bool> rope(size_t(n), true);
    if (r.has("no_rope_layers")) {
        const json& list = r.j["no_rope_layers"];
        if (!list.is_array() || list.size() < size_t(n))
            r.fail(ErrorKind::format, "no_rope_layers",
                   "must list 1 (RoPE) or 0 (no RoPE) for each of the " + std::to_string(n) + " layers");
        for (int il = 0; il < n; ++il) {
            const json& e = list[size_t(il)];
            if (!(e.is_number_integer() || e.is_boolean()) || (e.is_number_integer() && e.get<int64_t>() != 0 &&
                                                               e.get<int64_t>() != 1))
                r.fail(ErrorKind::format, "no_rope_layers", "entry " + std::to_string(il) + " is not 0 or 1");
            rope[size_t(il)] = e.is_boolean() ? e.get<bool>() : e.get<int64_t>() == 1;
        }
    } else {
        const int interval = int(r.integer("no_rope_layer_interval", 4, 1, INT32_MAX));
        for (int il = 0; il < n; ++il) rope[size_t(il)] = (il + 1) % interval != 0;
    }
    for (int il = 0; il < n; ++il)
        if (!rope[size_t(il)]) drop_rope(c.layers[size_t(il)]);

    const int window = r.has("sliding_window") ? int(r.integer("sliding_window", 0, 1, INT32_MAX)) : 0;
    if (r.has("layer_types")) {
        set_sliding_layers(r, c, window, [](int, int) { return false; }, 0);
    } else if (r.boolean("use_sliding_window", false) && window > 0) {
        for (int il = 0; il < n; ++il)
            if (!rope[size_t(il)]) {
                c.layers[size_t(il)].attention = AttentionType::sliding;
                c.layers[size_t(il)].window = window;
            }
    }
    return c;
}

// llama.cpp's smollm3: the converter writes Llama's keys only (no NoPE list);
// llama.cpp hard-codes n_no_rope_layer_step = 4, RoPE on layer il iff
// (il + 1) % 4 != 0, and no window. q/k rows are interleaved as for Llama.
ModelConfig parse_smollm3_gguf(const GgufFile& f) {
    ModelConfig c = parse_llama_like_gguf(f);
    for (int il = 0; il < c.n_layers; ++il)
        if ((il + 1) % 4 == 0) drop_rope(c.layers[size_t(il)]);
    return c;
}

constexpr ConfigForm kForms[] = {
    {.architecture = "SmolLM3ForCausalLM", .model_type = "smollm3", .nested = false, .tie_default = true},
};
constexpr std::string_view kGguf[] = {"smollm3"};
constexpr TensorLayout kLayouts[] = {{"model.", "lm_head.weight"}};

}  // namespace

// HuggingFaceTB/SmolLM3-3B's template in its default mode (enable_thinking,
// no tools): a metadata system turn that is always there and, as in the
// original, not closed by <|im_end|> when there are no tools; the default
// instructions of the /think mode when no system text is given. What the
// fields cannot express: the date format (%d %B %Y: pass ChatOptions::date
// as "03 December 2026"), "Reasoning Mode: /no_think" and the /no_think
// default instructions when thinking is off (no_thinking only adds the empty
// thought block to the generation prompt), the empty thought block the
// /no_think mode puts in front of earlier replies, the /think and /no_think
// flags inside a system text, and /system_override.
const ChatTemplate kSmolLM3Chat{
    .name = "smollm3",
    .marker = "Knowledge Cutoff Date: June 2025",
    .system = "<|im_start|>system\n## Metadata\n\nKnowledge Cutoff Date: June 2025\nToday Date: {date}\n"
              "Reasoning Mode: /think\n\n## Custom Instructions\n\n{content}\n\n",
    .always_system = true,
    .default_system =
        "You are a helpful AI assistant named SmolLM, trained by Hugging Face. Your role as an assistant involves "
        "thoroughly exploring questions through a systematic thinking process before providing the final precise "
        "and accurate solutions. This requires engaging in a comprehensive cycle of analysis, summarizing, "
        "exploration, reassessment, reflection, backtracking, and iteration to develop well-considered thinking "
        "process. Please structure your response into two main sections: Thought and Solution using the specified "
        "format: <think> Thought section </think> Solution section. In the Thought section, detail your reasoning "
        "process in steps. Each step should include detailed considerations such as analysing questions, "
        "summarizing relevant findings, brainstorming new ideas, verifying the accuracy of the current steps, "
        "refining any errors, and revisiting previous steps. In the Solution section, based on various attempts, "
        "explorations, and reflections from the Thought section, systematically present the final solution that "
        "you deem correct. The Solution section should be logical, accurate, and concise and detail necessary "
        "steps needed to reach the conclusion.",
    .user = "<|im_start|>user\n{content}<|im_end|>\n",
    .assistant = "<|im_start|>assistant\n",
    .end_of_turn = "<|im_end|>",
    .after_turn = "\n",
    .generation_prompt = "<|im_start|>assistant\n",
    .no_thinking = "<think>\n\n</think>\n",
    .stop_tokens = {"<|im_end|>", "<|end_of_text|>"},
};

extern const FamilyDescriptor kSmolLM3Family;  // listed in families.cpp
const FamilyDescriptor kSmolLM3Family{
    .name = "smollm3",
    .forms = kForms,
    .gguf_architectures = kGguf,
    .parse = parse_smollm3,
    .parse_gguf = parse_smollm3_gguf,
    .gguf_qk_interleaved = true,
    .hf_layouts = kLayouts,
    .hf_name = hf_tensor_name,
    .ignored = {},
    .chat = &kSmolLM3Chat,
};

}  // namespace staticlm
