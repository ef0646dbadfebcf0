// Sampling and the generation loop on top of a Session: greedy, temperature,
// top-k, top-p, min-p, repetition penalty, seed; stop ids and stop strings;
// streaming text; timing stats. Buffers are made once; sampling allocates nothing.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace staticlm {

class Session;
class Tokenizer;

struct SamplingOptions {
    float temperature = 0.0f;  // <= 0: greedy (argmax)
    int top_k = 0;             // 0: off
    float top_p = 1.0f;        // 1: off
    float min_p = 0.0f;        // 0: off
    float repetition_penalty = 1.0f;  // 1: off (HF rule: divide positive logits, multiply negative)
    int repetition_window = 64;       // how many recent tokens the penalty looks at
    uint64_t seed = 0;
};

class Sampler {
public:
    Sampler(int vocab, const SamplingOptions& options);
    // Picks the next token from logits [vocab]; `recent` feeds the repetition penalty.
    int sample(std::span<const float> logits, std::span<const int> recent);
    // Starts over with new options (as a new Sampler of the same vocabulary; no allocation).
    void reset(const SamplingOptions& options);
    const SamplingOptions& options() const { return options_; }

private:
    SamplingOptions options_;
    uint64_t state_;
    std::vector<float> work_;     // [vocab] adjusted logits
    std::vector<int> order_;      // [vocab] candidate indices
    std::vector<float> probs_;    // [vocab]
    std::vector<int> seen_;       // [vocab] last step a token got the penalty
    int step_ = 0;
};

struct GenerateOptions {
    SamplingOptions sampling;
    int max_tokens = 256;
    std::vector<int> stop_ids;              // empty: the model's EOS ids
    std::vector<std::string> stop_strings;  // generation ends before these (text not emitted)
};

struct GenerateStats {
    int prompt_tokens = 0;
    int generated_tokens = 0;
    double prefill_seconds = 0;   // the prompt's prefill/append
    double first_token_seconds = 0;  // time to first token (prefill + first sample)
    double decode_seconds = 0;    // all later decode steps
    double prefill_tok_per_s() const { return prefill_seconds > 0 ? prompt_tokens / prefill_seconds : 0; }
    double decode_tok_per_s() const {
        return decode_seconds > 0 && generated_tokens > 1 ? (generated_tokens - 1) / decode_seconds : 0;
    }
};

enum class StopReason { eos, stop_string, max_tokens, capacity };

struct GenerateResult {
    std::vector<int> tokens;  // generated ids (the stop id included when it ended on one)
    std::string text;         // generated text (stop string excluded)
    StopReason reason = StopReason::max_tokens;
    GenerateStats stats;
};

// Streaming callback: receives each newly completed piece of valid UTF-8.
struct TextSink {
    void (*fn)(void* ctx, std::string_view text) = nullptr;
    void* ctx = nullptr;
};

// Appends `prompt` to the session (prefill when the session is at position 0,
// else append) and generates. The last sampled token is left *in the cache*
// only if it was followed by another step; the result's `tokens` say what was
// generated and `session.pos()` what the cache holds.
GenerateResult generate(Session& session, const Tokenizer* tokenizer, std::span<const int> prompt,
                        const GenerateOptions& options, TextSink sink = {});

}  // namespace staticlm
