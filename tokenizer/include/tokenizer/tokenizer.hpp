// Loading tokenizers from model directories (the interface is public:
// include/staticlm/tokenizer.hpp).
#pragma once

#include <array>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "staticlm/tokenizer.hpp"

namespace staticlm {

std::unique_ptr<Tokenizer> load_sentencepiece(const std::filesystem::path& model_file,
                                              const std::filesystem::path& tokenizer_config);
// Throws Error(input) naming `what` and the byte offset of the first invalid
// UTF-8 sequence in `text` (overlong forms, surrogates and code points above
// U+10FFFF are invalid too). Every Tokenizer::encode calls it first.
void check_utf8(std::string_view text, const std::string& what);

// The letters on both sides of a cut (ASCII only).
inline bool ascii_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

// Where a long text may be cut so that its ids are the ids of the pieces, in
// order: at a space between two ASCII letters, the first not in bad_before
// (letters that end some token or piece followed by the space's image). The
// tokenizer decides whether its pipeline makes such cuts exact (`enabled`) and
// whether the space starts the next chunk or is re-created there (drop_space:
// SentencePiece's dummy prefix, tokenizer.json's Prepend normalizer).
struct ChunkRule {
    bool enabled = false;
    bool drop_space = false;
    std::array<bool, 256> bad_before{};
    // The last cut in [lo, hi), or npos.
    size_t find_cut(std::string_view text, size_t lo, size_t hi) const;
    // The first cut at or after lo, or npos.
    size_t find_cut_after(std::string_view text, size_t lo) const;
    // Marks the byte before every occurrence of `space` after the start of `token`.
    void forbid_before(std::string_view token, std::string_view space);
};
// Encodes chunk (first: the text's start, gets the leading specials; last: its
// end, gets the trailing ones) appending to out.
using EncodeChunk =
    std::function<void(std::string_view chunk, bool first, bool last, std::vector<int>& out)>;
// The chunk loop of Tokenizer::encode_limited.
std::vector<int> encode_chunks(std::string_view text, size_t max_tokens, size_t chunk_bytes,
                               const ChunkRule& rule, const EncodeChunk& encode);

std::unique_ptr<Tokenizer> load_tokenizer_json(const std::filesystem::path& json_file,
                                               const std::filesystem::path& tokenizer_config);

}  // namespace staticlm
