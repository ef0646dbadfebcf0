// Hugging Face tokenizer.json (BPE models: byte-level like Llama 3, Metaspace
// with byte fallback like Gemma): the parsed pipeline and the Tokenizer that
// runs it. Internal to model/; callers use load_tokenizer_json().
#pragma once

#include <cstdint>
#include <filesystem>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/tokenizer.hpp"
#include "tokenizer/tokenizer_json_unicode.hpp"

namespace staticlm::tokjson {

// Open-addressing map from strings (kept in an arena) to ids: the vocabulary.
class StringIdMap {
public:
    void reserve(size_t n);
    // Inserts or overwrites; returns the previous id or -1.
    int put(std::string_view key, int id);
    int get(std::string_view key) const { return get(key, hash(key)); }
    // Split lookup for batches: hash, prefetch, then get.
    static uint64_t hash(std::string_view key);
    void prefetch(uint64_t h) const {
        if (!slots_.empty()) __builtin_prefetch(&slots_[h & (slots_.size() - 1)]);
    }
    int get(std::string_view key, uint64_t h) const;
    size_t size() const { return n_; }

private:
    // One cache line holds four slots; a lookup touches its slot and, on a
    // tag match, the key bytes.
    struct Slot {
        uint32_t tag;  // high hash bits; 0 = empty (tags are forced odd)
        int32_t id;
        uint32_t offset, length;  // key bytes in arena_
    };
    void grow();
    std::string arena_;
    std::vector<Slot> slots_;
    size_t n_ = 0;
};

// (left id, right id) -> (rank, merged id).
class MergeMap {
public:
    void reserve(size_t n);
    void put(int left, int right, int rank, int merged);
    void prefetch(int left, int right) const {
        if (!slots_.empty())
            __builtin_prefetch(&slots_[mix(pack(left, right)) & (slots_.size() - 1)]);
    }
    static uint64_t pack(int left, int right) {
        return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) |
               static_cast<uint32_t>(right);
    }
    // Returns false when the pair has no merge.
    bool get(int left, int right, int& rank, int& merged) const {
        if (slots_.empty()) return false;
        const uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) |
                             static_cast<uint32_t>(right);
        size_t mask = slots_.size() - 1;
        for (size_t i = mix(key) & mask;; i = (i + 1) & mask) {
            const Slot& s = slots_[i];
            if (s.key == kEmpty) return false;
            if (s.key == key) {
                rank = s.rank;
                merged = s.merged;
                return true;
            }
        }
    }

private:
    struct Slot {
        uint64_t key;
        int32_t rank, merged;
    };
    static constexpr uint64_t kEmpty = ~0ull;
    static size_t mix(uint64_t k) {
        k = (k ^ (k >> 30)) * 0xbf58476d1ce4e5b9ull;  // splitmix64's finalizer
        k = (k ^ (k >> 27)) * 0x94d049bb133111ebull;
        return static_cast<size_t>(k ^ (k >> 31));
    }
    std::vector<Slot> slots_;
    size_t n_ = 0;
};

// The byte of a byte-fallback piece "<0xAB>", or -1.
int byte_token_value(std::string_view piece);

struct AddedToken {
    int id = -1;
    std::string content;
    bool special = false;
    bool normalized = false;
};

// Exact, leftmost-longest matching of added tokens (a byte trie).
class AddedMatcher {
public:
    void add(std::string_view text, int token_index);
    bool empty() const { return nodes_.size() <= 1; }
    // Longest token starting at text[pos]: its index and length, or -1.
    int match(std::string_view text, size_t pos, size_t& len) const;

private:
    struct Node {
        int token = -1;
        std::vector<std::pair<uint8_t, int>> children;
    };
    std::vector<Node> nodes_{1};
    bool first_byte_[256] = {};
};

enum class NormKind { kReplace, kPrepend, kNfc };
struct NormStep {
    NormKind kind;
    std::string pattern, content;
};

enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };
enum class PrependScheme { kAlways, kFirst, kNever };
// kDigits: tokenizers' Digits (numbers, \p{N}, apart from the rest; each one
// alone when individual_digits, else runs), as a Split.
enum class PreKind { kSplitString, kSplitRegex, kByteLevel, kMetaspace, kDigits };
struct PreStep {
    PreKind kind;
    std::string pattern;  // kSplitString
    SplitRegex regex = SplitRegex::kLlama3;
    SplitBehavior behavior = SplitBehavior::kIsolated;  // kSplit*, kDigits
    bool invert = false;  // kSplit*
    bool add_prefix_space = false, use_regex = false, split = true;
    std::string replacement;  // kMetaspace, as UTF-8
    PrependScheme prepend = PrependScheme::kAlways;
};

enum class DecKind { kByteLevel, kMetaspace, kByteFallback, kFuse, kStrip, kReplace };
struct DecStep {
    DecKind kind;
    std::string pattern, content;  // kReplace; kMetaspace: pattern = replacement; kStrip: content
    size_t start = 0, stop = 0;    // kStrip
    PrependScheme prepend = PrependScheme::kAlways;
};

// One piece of text on its way through the pipeline; `first` marks the piece
// that begins the input (Metaspace's prepend_scheme "first").
struct Piece {
    std::string text;
    bool first = false;
};

class JsonTokenizer final : public Tokenizer {
public:
    std::vector<int> encode(std::string_view text, bool add_special) const override;
    std::string decode(const std::vector<int>& ids) const override;
    int vocab_size() const override { return static_cast<int>(id_to_piece_.size()); }
    int token_id(std::string_view piece) const override;
    std::string piece(int id) const override;
    int bos_id() const override { return bos_id_; }
    int eos_id() const override { return eos_id_; }

    // The text of ids that no later id can change: like decode(), but an
    // unfinished UTF-8 sequence (e.g. the first bytes of a byte-fallback
    // character) at the end is held back instead of becoming U+FFFD.
    std::string decode_stable(const std::vector<int>& ids) const;
    bool is_special(int id) const;

    // Filled by the loader (tokenizer_json_load.cpp).
    std::string file_;  // for error messages
    std::vector<NormStep> normalizer_;
    std::vector<PreStep> pre_;
    std::vector<DecStep> decoder_;
    std::vector<AddedToken> added_;
    AddedMatcher raw_matcher_, normalized_matcher_;
    std::vector<uint8_t> special_flag_;     // [vocab_size]
    std::vector<std::string> id_to_piece_;  // [vocab_size]
    StringIdMap vocab_;                     // model vocab only
    StringIdMap added_ids_;                 // added token content -> id
    MergeMap merges_;
    int unk_id_ = -1;
    bool byte_fallback_ = false, fuse_unk_ = false, ignore_merges_ = false;
    int byte_ids_[256];                         // <0xXX> ids, -1 when absent
    std::vector<int> prefix_ids_, suffix_ids_;  // added by encode(add_special)
    int bos_id_ = -1, eos_id_ = -1;

    // The normalizer, for added tokens declared `normalized`.
    void normalize_for_matching(std::string& s) const { normalize(s); }
    // Decides where encode_limited may cut long texts (by the loader, last).
    void init_chunking();
    const ChunkRule& chunk_rule() const { return chunk_; }

protected:
    std::vector<int> encode_in_chunks(std::string_view text, bool add_special, size_t max_tokens,
                                      size_t chunk_bytes) const override;

private:
    // The ids of text without the specials; `first`: text starts the input.
    void encode_into(std::string_view text, bool first, std::vector<int>& out) const;
    void normalize(std::string& s) const;
    void pre_tokenize(std::vector<Piece>& pieces) const;
    void encode_word(std::string_view word, std::vector<int>& out) const;
    void merge_word(std::string_view word, std::vector<int>& out) const;
    std::string decode_impl(const std::vector<int>& ids, bool stable) const;

    ChunkRule chunk_;
    mutable std::mutex cache_mutex_;
    struct SvHash {
        using is_transparent = void;
        size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
    };
    // word -> ids, for words up to kMaxCachedWord bytes
    mutable std::unordered_map<std::string, std::vector<int>, SvHash, std::equal_to<>> cache_;
};

}  // namespace staticlm::tokjson
