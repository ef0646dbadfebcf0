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
    // Picks the next token from logits [vocab] (fewer values: an input
    // error); `recent` feeds the repetition penalty.
    // `allowed` (a token mask, bit t of word t/64; empty: all) sets the logits
    // of every other token to -inf before any transform.
    int sample(std::span<const float> logits, std::span<const int> recent, std::span<const uint64_t> allowed = {});
    // Verifies a drafted token (speculative decoding): the same distribution
    // as sample(), computed the same way, but a token drawn as
    // speculative_pick() does, so `draft` comes back with its probability
    // under that distribution (greedy: the argmax, whatever the draft).
    // The result equals `draft` exactly when the draft is accepted. Draws
    // two numbers from the seed's stream per sampled call (sample() draws one).
    int sample_draft(std::span<const float> logits, std::span<const int> recent, std::span<const uint64_t> allowed,
                     int draft);
    // Starts over with new options (as a new Sampler of the same vocabulary; no allocation).
    void reset(const SamplingOptions& options);
    const SamplingOptions& options() const { return options_; }

private:
    // The transforms of sample(): -1 and the candidates order_[0, n) with
    // unnormalised probabilities probs_[0, n), or the greedy token.
    int candidates(std::span<const float> logits, std::span<const int> recent, std::span<const uint64_t> allowed,
                   int& n);
    double uniform();  // [0, 1) from the seed's stream

    SamplingOptions options_;
    uint64_t state_;
    std::vector<float> work_;     // [vocab] adjusted logits
    std::vector<int> order_;      // [vocab] candidate indices
    std::vector<float> probs_;    // [vocab]
    std::vector<int> seen_;       // [vocab] last step a token got the penalty
    int step_ = 0;
};

// Speculative sampling with a point-mass draft: the target distribution is
// weights[i] / sum(weights) over the tokens ids[i] (weights >= 0, in a fixed
// order). The draft token is kept when u_accept * sum < its weight (so with
// its probability p(draft); 0 when it is not among ids); otherwise the
// result is drawn with u_resample from the other tokens, renormalised
// (p(x) / (1 - p(draft))). Either way the result is distributed as the
// target: p(draft) + 0 for the draft, (1 - p(draft)) p(x) / (1 - p(draft))
// for any other x. u_accept and u_resample lie in [0, 1). Allocates nothing.
int speculative_pick(std::span<const float> weights, std::span<const int> ids, int draft, double u_accept,
                     double u_resample);

// Prompt-lookup speculative decoding (docs/RUNTIME.md "Speculative decoding").
constexpr int kMaxDraft = 64;   // largest max_draft
constexpr int kMaxNgram = 16;   // largest max_ngram
struct SpeculationOptions {
    int max_draft = 0;  // N: most tokens drafted per step (0: off; 1..kMaxDraft)
    int max_ngram = 3;  // the longest suffix matched (1..kMaxNgram)
    int min_ngram = 1;  // the shortest suffix that may propose a draft (1..max_ngram)
};

// Error(config) naming a field out of range (max_draft 0..kMaxDraft; with
// max_draft > 0, max_ngram 1..kMaxNgram and min_ngram 1..max_ngram).
void check_speculation_options(const SpeculationOptions& options);

// Drafts up to out.size() tokens for what follows `history` (prompt + text so
// far): the most recent earlier occurrence of its last n tokens, for the
// largest n in [min_ngram, max_ngram] that occurs, proposes the tokens that
// followed it; a continuation that reaches the end of the history goes on
// through the draft itself (a repeating pattern keeps repeating). Returns the
// number of tokens written (0: no match). O(history x max_ngram), allocates nothing.
int ngram_draft(std::span<const int> history, const SpeculationOptions& options, std::span<int> out);

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
    // Prompt-lookup speculation (max_draft > 0): drafts are verified in one
    // Session::append with every row's logits (the session needs all_logits).
    // Greedy output is the output without it; sampled output has the same
    // distribution from a different random stream (sample_draft).
    SpeculationOptions speculation;
};

struct GenerateStats {
    int prompt_tokens = 0;
    int generated_tokens = 0;
    double prefill_seconds = 0;   // the prompt's prefill/append
    double first_token_seconds = 0;  // time to first token (prefill + first sample)
    double decode_seconds = 0;    // all later decode steps
    // Speculation (GenerateOptions::speculation): verification appends run,
    // tokens drafted, and drafted tokens accepted.
    int draft_steps = 0;
    int drafted_tokens = 0;
    int accepted_tokens = 0;
    double acceptance_rate() const { return drafted_tokens > 0 ? double(accepted_tokens) / drafted_tokens : 0; }
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
