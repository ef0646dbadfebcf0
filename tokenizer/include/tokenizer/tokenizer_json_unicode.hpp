// UTF-8 and Unicode helpers for the tokenizer.json pipeline: strict UTF-8
// decoding with U+FFFD for invalid input, NFC, the L/N/whitespace classes the
// pre-tokenizer regexes use, and hand-written splitters for the regexes
// staticlm supports (Llama 3, Qwen2, GPT-2, o200k and Tekken), equivalent to
// Oniguruma's matching.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace staticlm::tokjson {

struct CodepointRange {
    uint32_t first, last;  // inclusive
};
extern const CodepointRange kLetterRanges[];
extern const size_t kLetterRanges_count;
extern const CodepointRange kNumberRanges[];
extern const size_t kNumberRanges_count;

// The case classes of the o200k / Tekken regexes: kCaseUpper for
// [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}], kCaseLower for [\p{Ll}\p{Lm}\p{Lo}\p{M}]
// (Lm, Lo and marks have both). Code points in no range have neither.
constexpr uint8_t kCaseUpper = 1, kCaseLower = 2;
struct CaseClassRange {
    uint32_t first, last;  // inclusive
    uint8_t flags;
};
extern const CaseClassRange kCaseClassRanges[];
extern const size_t kCaseClassRanges_count;

// NFC's data (Unicode Character Database, canonical mappings only).
struct CombiningClassRange {
    uint32_t first, last;  // inclusive
    uint32_t ccc;          // canonical combining class, never 0 here
};
struct CanonicalPair {
    uint32_t cp, first, second;  // cp ≡ first second (second 0: a singleton)
};
struct CompositionPair {
    uint32_t first, second, composite;
};
extern const CombiningClassRange kCombiningClassRanges[];
extern const size_t kCombiningClassRanges_count;
extern const CanonicalPair kDecompositions[];  // by cp; Hangul syllables are computed
extern const size_t kDecompositions_count;
extern const CompositionPair kCompositions[];  // by (first, second); primary composites
extern const size_t kCompositions_count;
// Code points that can make a text not NFC: combining class above 0, or NFC
// quick check No / Maybe. A text without them is its own NFC.
extern const CodepointRange kNfcUnstableRanges[];
extern const size_t kNfcUnstableRanges_count;

// The classes a regex like [^\s\p{L}\p{N}] needs. \s is Oniguruma's Unicode
// \s (White_Space: U+0009..000D, 0020, 0085, Zs, Zl, Zp); kNewline (\r, \n)
// is part of \s but kept apart because the Llama 3 regex names it.
enum class CharClass : uint8_t { kOther, kLetter, kNumber, kSpace, kNewline };

CharClass char_class(uint32_t cp);
bool is_letter(uint32_t cp);
bool is_number(uint32_t cp);
bool is_space(uint32_t cp);
uint8_t case_class(uint32_t cp);  // kCaseUpper | kCaseLower bits

// Appends the UTF-8 encoding of `cp` to `out`.
void append_utf8(std::string& out, uint32_t cp);

// Replaces every maximal invalid subpart of `text` with U+FFFD (the rule of
// Python's bytes.decode("utf-8", "replace") and Rust's from_utf8_lossy).
// Returns true and leaves `out` untouched when `text` is already valid.
bool sanitize_utf8(std::string_view text, std::string& out);

// Length of the longest prefix of `bytes` that does not end inside a UTF-8
// sequence that could still be completed by more bytes.
size_t complete_utf8_prefix(std::string_view bytes);

// Decodes well-formed UTF-8 (as produced by sanitize_utf8) into code points and
// their byte offsets; offsets has one more entry (the end).
void decode_utf8(std::string_view text, std::vector<uint32_t>& cps, std::vector<uint32_t>& offsets);

// Unicode Normalization Form C of valid UTF-8 `s`, in place (what the
// `tokenizers` NFC normalizer does).
void nfc(std::string& s);

// kO200k: GPT-4o's o200k_base (Phi-4-mini; GGUF pre gpt-4o). kTekken: Mistral
// Nemo / Ministral's (GGUF pre tekken). Both split words at case changes.
enum class SplitRegex { kLlama3, kQwen2, kGpt2, kO200k, kTekken };

// Recognizes the regex text of a Split / ByteLevel pre-tokenizer; false when
// it is not one staticlm implements.
bool known_split_regex(std::string_view pattern, SplitRegex& which);

// The byte ranges [begin, end) of `text` matched by the regex, in order. Every
// byte of `text` is covered by exactly one match (both regexes match any
// character), so Isolated splitting is just these ranges.
// Scratch vectors are reused between calls.
struct SplitScratch {
    std::vector<uint32_t> cps, offsets;
    std::vector<CharClass> classes;
    std::vector<uint8_t> cases;  // kO200k, kTekken
};
void split_regex(SplitRegex which, std::string_view text, SplitScratch& scratch,
                 std::vector<std::pair<uint32_t, uint32_t>>& matches);

}  // namespace staticlm::tokjson
