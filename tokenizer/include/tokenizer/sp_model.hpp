// What staticlm checks in a SentencePiece ModelProto before libsentencepiece
// sees it, and what it learns there for cutting long texts into chunks.
// libsentencepiece trusts its model: an empty, NUL-holding or repeated piece
// makes it throw through code that cannot unwind, and a precompiled_charsmap
// whose double-array trie does not fit its blob makes its normalizer read out
// of bounds (SIGSEGV on the first encode). Both are refused here, by name.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace staticlm {

struct SpModelFacts {
    bool bpe = false;  // TrainerSpec.model_type == BPE
    bool add_dummy_prefix = true, remove_extra_whitespaces = true, escape_whitespaces = true;
    bool treat_whitespace_as_suffix = false;
    bool charsmap_touches_ascii = false;   // a charsmap key holds a byte in [0x20, 0x7e]
    std::vector<std::string_view> pieces;  // into the proto
    std::vector<uint8_t> piece_types;      // [pieces]: SentencePiece.Type (kSpPieceNormal when absent)
};
// SentencePiece.Type values the chunk rule looks at.
inline constexpr int32_t kSpPieceNormal = 1, kSpPieceUserDefined = 4;

// Largest precompiled_charsmap accepted (real ones, nmt_nfkc included, are
// about 240 KB); validating one visits each trie node once with 256 probes.
inline constexpr size_t kMaxCharsmapBytes = size_t{8} << 20;

// Throws Error(format) naming `file` and the piece or charsmap when the model
// would make libsentencepiece crash; a proto that does not parse is left to
// the library (it reports a status).
SpModelFacts check_sentencepiece_model(std::string_view proto, const std::string& file);

// Validates one precompiled_charsmap blob (<uint32 trie bytes><double-array
// trie><NUL-terminated replacement strings>) the way the normalizer will walk
// it: every node reachable from the root has all 256 child slots inside the
// array, no path returns to a node (darts-clone shares suffixes, so nodes may
// have several parents, but cycles are garbage), a leaf's value points at a
// NUL-terminated string inside the blob, and no path holds more than the
// normalizer's 32 results. Returns "" when valid, else what is wrong.
// `touches_ascii` is set when a key holds a printable ASCII byte or a space.
std::string check_charsmap(std::string_view blob, bool& touches_ascii);

}  // namespace staticlm
