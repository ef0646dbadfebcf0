// Constrained decoding: a JSON Schema subset or a GBNF grammar compiled once
// into a byte automaton (a DFA), then into one token mask per automaton state
// that a token boundary can reach, by walking a byte trie of the vocabulary.
// A decode step then costs one state lookup, one mask copy and the token's
// bytes through the DFA; nothing is allocated per step. docs/BATCH.md has the
// schema subset, the output form (compact JSON) and the guarantees.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <map>
#include <vector>

namespace staticlm {

class Tokenizer;

// Every token's bytes as the generated text holds them mid-sequence, and a
// byte trie of them in depth-first order. Tokens that decode to nothing
// (special and control tokens), to invalid UTF-8 repaired as U+FFFD, or to more
// than kMaxTokenBytes bytes are never allowed by a constraint.
class TokenVocabulary {
public:
    static constexpr size_t kMaxTokenBytes = 128;

    explicit TokenVocabulary(const Tokenizer& tokenizer);
    // For tests: token i is bytes[i] ("" = never allowed).
    explicit TokenVocabulary(const std::vector<std::string>& bytes);

    int size() const { return int(offsets_.size()) - 1; }
    std::string_view bytes(int id) const {
        return std::string_view(pool_).substr(offsets_[size_t(id)], offsets_[size_t(id) + 1] - offsets_[size_t(id)]);
    }

    // The trie: node i (preorder; the root is implicit) is reached by byte
    // node_byte[i] at depth node_depth[i] >= 1; its subtree ends before node
    // node_skip[i]; tokens node_tokens[token_begin[i] .. token_begin[i + 1]) end there.
    std::vector<uint8_t> node_byte;
    std::vector<uint16_t> node_depth;
    std::vector<int32_t> node_skip;
    std::vector<int32_t> token_begin;  // [nodes + 1]
    std::vector<int32_t> node_tokens;

private:
    void build(const std::vector<std::string>& bytes);
    std::string pool_;              // all tokens' bytes
    std::vector<uint32_t> offsets_;  // [vocab + 1]
};

// Bounds on what one schema or grammar may compile to.
struct ConstraintLimits {
    int max_depth = 32;               // schema / grammar nesting
    int max_repeat = 1024;            // minLength/maxLength, minItems/maxItems, repetition counts
    int max_nfa_states = 1 << 20;
    int max_dfa_states = 1 << 16;     // the DFA table is 1 KiB per state
    size_t max_mask_bytes = size_t(256) << 20;  // distinct masks, vocab/8 bytes each
};

// A compiled constraint: immutable, shared by every sequence that uses it.
class Constraint {
public:
    // Throws Error(unsupported) naming the keyword or construct and its JSON
    // path ("$.properties.age"), Error(format) for malformed JSON, and
    // Error(capacity) naming the limit a schema exceeds.
    static std::shared_ptr<const Constraint> json_schema(std::string_view schema,
                                                         std::shared_ptr<const TokenVocabulary> vocab,
                                                         const ConstraintLimits& limits = {});
    // A GBNF grammar (root rule "root"); errors name the rule and the byte.
    static std::shared_ptr<const Constraint> grammar(std::string_view gbnf,
                                                     std::shared_ptr<const TokenVocabulary> vocab,
                                                     const ConstraintLimits& limits = {});

    int start() const { return start_; }
    int vocab() const { return vocab_->size(); }
    size_t mask_words() const { return words_; }
    // The state after `token` from `state`, or -1 when the token is not allowed there.
    int next(int state, int token) const;
    // The value is complete in this state (a stop id may end it here).
    bool complete(int state) const { return accept_[size_t(state)] != 0; }
    // Tokens that may follow in `state` (bit t of word t/64): stop ids are not
    // in it unless their bytes are; ConstraintCursor adds them when complete.
    std::span<const uint64_t> allowed(int state) const {
        return {masks_.data() + size_t(mask_of_[size_t(state)]) * words_, words_};
    }

    int dfa_states() const { return int(accept_.size()); }
    int token_states() const { return token_states_; }  // states a token boundary reaches
    int distinct_masks() const { return int(masks_.size() / (words_ ? words_ : 1)); }
    size_t bytes() const;
    double compile_seconds() const { return compile_seconds_; }

    struct Dfa;  // built by the compilers (runtime/constrain_*.cpp)
    Constraint(Dfa dfa, std::shared_ptr<const TokenVocabulary> vocab, const ConstraintLimits& limits,
               const std::string& what);

private:
    std::shared_ptr<const TokenVocabulary> vocab_;
    std::vector<int32_t> next_;     // [states][256], -1: dead
    std::vector<uint8_t> accept_;   // [states]
    std::vector<int32_t> mask_of_;  // [states] index into masks_, -1: no token boundary reaches it
    std::vector<uint64_t> masks_;   // [distinct][words_]
    size_t words_ = 0;
    int start_ = 0;
    int token_states_ = 0;
    double compile_seconds_ = 0;
};

// One sequence's position in a Constraint, with the mask buffer of one step
// (made at construction: start/mask/advance allocate nothing).
class ConstraintCursor {
public:
    ConstraintCursor() = default;
    explicit ConstraintCursor(int vocab);
    void start(const Constraint* constraint);  // nullptr: unconstrained
    bool active() const { return c_ != nullptr; }
    // Tokens allowed next: the state's mask, plus the stop ids when the value
    // is complete (and minus them while it is not).
    std::span<const uint64_t> mask(std::span<const int> stop_ids);
    // Moves past `token`; a stop id or a token outside the mask leaves the state.
    void advance(int token);
    bool complete() const { return c_ && c_->complete(state_); }
    int state() const { return state_; }

private:
    const Constraint* c_ = nullptr;
    int state_ = -1;
    int vocab_ = 0;
    std::vector<uint64_t> buf_;
};

// A job's constraints, each compiled once per distinct text (most requests of
// a job share one schema); the vocabulary is made at the first. A text that
// failed to compile fails again with the same error, without a second try.
class ConstraintCache {
public:
    ConstraintCache(const Tokenizer& tokenizer, ConstraintLimits limits = {});
    ~ConstraintCache();
    std::shared_ptr<const Constraint> json_schema(const std::string& text);
    std::shared_ptr<const Constraint> grammar(const std::string& text);

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// Sets logits[t] = -inf for every t whose bit in `allowed` is clear.
void apply_token_mask(std::span<float> logits, std::span<const uint64_t> allowed);

}  // namespace staticlm
