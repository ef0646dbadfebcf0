// Tokenizers described by GGUF metadata (tokenizer.ggml.*). The model layer
// reads the arrays out of the file (model/gguf_vocab.cpp); this library turns
// them into the tokenizer.json BPE engine's tables, so both sources share one
// encoder and decoder.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "staticlm/tokenizer.hpp"

namespace staticlm {

// llama.cpp's token types (tokenizer.ggml.token_type).
enum class GgufTokenType : int32_t {
    undefined = 0, normal = 1, unknown = 2, control = 3, user_defined = 4, unused = 5, byte = 6,
};

// The tokenizer.ggml.* values of one file. Strings are views that only need
// to live during load_gguf_tokenizer().
struct GgufVocab {
    std::string source;  // the file, for messages
    std::string model;   // tokenizer.ggml.model: "llama", "gemma4" or "gpt2"
    std::string pre;     // tokenizer.ggml.pre ("" when absent)
    std::vector<std::string_view> tokens;
    std::vector<float> scores;          // empty when absent
    std::vector<int32_t> token_types;   // empty when absent (all normal)
    std::vector<std::string_view> merges;
    bool has_merges = false;
    int bos_id = -1, eos_id = -1, unk_id = -1, pad_id = -1;
    int add_bos = -1, add_eos = -1, add_space_prefix = -1;  // -1: key absent
};

// Builds the tokenizer; throws Error(format) naming the source and the key
// for inconsistent arrays, Error(unsupported) for models or pre-tokenizers
// staticlm does not implement.
//  - "llama": pieces with scores. Merges are derived as Hugging Face's
//    SentencePiece converter does (every split of a piece into two pieces,
//    ranked by the merged piece's score, then ids), so the ids equal the
//    converted tokenizer.json's; byte fallback through <0xNN> pieces; a
//    leading "▁" when add_space_prefix.
//  - "gemma4": the same pieces with ranked merges (Gemma 4's tokenizer.json
//    BPE), no space prefix by default.
//  - "gpt2": byte-level BPE with ranked merges; the split rules chosen by
//    tokenizer.ggml.pre (llama-bpe, llama3, llama-v3, smaug-bpe: Llama 3's,
//    ignore_merges; qwen2, deepseek-r1-qwen: NFC and Qwen2's; starcoder,
//    refact, smollm: each digit apart, then GPT-2's; gpt-4o: o200k's; tekken:
//    Tekken's, ignore_merges; gpt-2: GPT-2's). Any other value is
//    Error(unsupported) naming it.
// Control, user-defined and unknown tokens match whole in the text (like
// tokenizer.json's added tokens); control and unknown tokens are dropped by
// decode().
std::unique_ptr<Tokenizer> load_gguf_tokenizer(const GgufVocab& vocab);

}  // namespace staticlm
