// Sampling and the generation loop on top of a Session: greedy, temperature,
// top-k, top-p, min-p, repetition penalty, seed; stop ids and stop strings;
// streaming text; timing stats. Buffers are made once; sampling allocates nothing.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace staticlm {

class Constraint;
class Session;
class Tokenizer;
struct ModelConfig;

// Below this temperature sampling is greedy: 1/T would overflow float (and
// any T this small picks the argmax anyway, up to exact ties).
constexpr float kGreedyTemperature = 1e-6f;
// repetition_penalty is accepted in [kMinRepetitionPenalty, kMaxRepetitionPenalty]:
// outside, dividing or multiplying logits by it can overflow to inf.
constexpr float kMinRepetitionPenalty = 1e-3f;
constexpr float kMaxRepetitionPenalty = 1e3f;

struct SamplingOptions {
    float temperature = 0.0f;  // < kGreedyTemperature (0, negative): greedy (argmax)
    int top_k = 0;             // 0: off
    float top_p = 1.0f;        // in (0, 1]; 1: off
    float min_p = 0.0f;        // in [0, 1]; 0: off
    float repetition_penalty = 1.0f;  // 1: off (HF rule: divide positive logits, multiply negative)
    int repetition_window = 64;       // how many recent tokens the penalty looks at (>= 0)
    uint64_t seed = 0;
};

class Sampler {
public:
    Sampler(int vocab, const SamplingOptions& options);
    // Picks the next token from logits [vocab]; `recent` feeds the repetition penalty.
    // `allowed` (a token mask, bit t of word t/64; empty: all) sets the logits
    // of every other token to -inf before any transform.
    int sample(std::span<const float> logits, std::span<const int> recent, std::span<const uint64_t> allowed = {});
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

// The sampling settings staticlm suggests for a model when the caller gives
// none (the CLI's defaults): temperature 0.8, top_k 40, top_p 0.95, min_p 0.05,
// repetition_penalty 1, seed 42 — each replaced by the model's
// generation_config.json value when it has one ("do_sample": false means greedy).
SamplingOptions suggested_sampling(const ModelConfig& config);

// Called once per generated token with the text that token completes (may be
// empty: incomplete UTF-8 and text that may start a stop string are held
// back), and once with token -1 for text still held at the end. Returning
// false stops generation (StopReason::aborted).
struct TokenSink {
    bool (*fn)(void* ctx, int token, std::string_view text) = nullptr;
    void* ctx = nullptr;
};

// Log-probabilities of generated tokens: at most this many alternatives per token.
constexpr int kMaxLogprobs = 20;

struct TokenLogprob {
    int token = -1;
    float logprob = 0.0f;  // natural log
};

// The log-probability of `token` under `logits` [vocab] — the model's output as
// forward() returns it (after final softcapping), before any sampling
// transform (temperature, top-k/p, min-p, penalties) — and the top.size() most
// likely tokens, best first (equal logits: the lower id first). Computed as
// logit - (max + log(sum exp(logit - max))) with the sum in double, in one
// fixed order, so equal logits give bit-identical results. Allocates nothing.
float token_logprob(std::span<const float> logits, int token, std::span<TokenLogprob> top = {});

struct GenerateOptions {
    SamplingOptions sampling;
    int max_tokens = 256;                   // -1: until a stop id, a stop string or the capacity
    std::vector<int> stop_ids;              // empty: the model's EOS ids
    std::vector<std::string> stop_strings;  // generation ends before these (text not emitted)
    TokenSink on_token;                     // optional
    // -1: off; 0: each generated token's log-probability (token_logprob);
    // 1..kMaxLogprobs: also that many most likely alternatives per token.
    int logprobs = -1;
    // Constrained output (include/staticlm/constrain.hpp): each step samples
    // only tokens the constraint allows, a stop id only once the value is
    // complete. Log-probabilities stay the model's (unmasked). Needs a stop id.
    std::shared_ptr<const Constraint> constraint;
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

enum class StopReason {
    eos,          // a stop id (the model's EOS ids by default) was sampled
    stop_string,  // a stop string appeared in the text
    max_tokens,   // max_tokens were generated
    capacity,     // the session is full (pos == max_seq)
    aborted,      // the TokenSink returned false
};
const char* stop_reason_name(StopReason reason);

struct GenerateResult {
    std::vector<int> tokens;  // generated ids (the stop id included when it ended on one)
    std::string text;         // generated text (stop string excluded)
    StopReason reason = StopReason::max_tokens;
    GenerateStats stats;
    // With options.logprobs >= 0 (reserved up front: no allocation per token):
    std::vector<float> logprobs;             // [tokens.size()] each token's log-probability
    int top_n = 0;                           // options.logprobs (0 when off)
    std::vector<TokenLogprob> top_logprobs;  // [tokens.size()][top_n], best first
    // With options.constraint: whether the output is a complete value (false
    // when it ended on max_tokens or the capacity inside one).
    bool complete = false;
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
