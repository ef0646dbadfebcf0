// The batched static runtime: S sequence slots, each with its own KV cache,
// position and ring state, all allocated at creation. A decode step runs up to
// S sequences as one M-row matmul per weight (weights read once for M tokens)
// with attention per sequence over its own cache; prompts are prefilled with
// the bucket rule of RUNTIME.md. BatchGenerator adds sampling and continuous
// batching (submit / step / collect). Neither allocates after construction.
//
// Each row is computed with the calls of a one-row decode of its sequence
// alone, so a sequence's logits equal those of a Session running it alone
// (bit for bit with q8 weights; see docs/BATCH.md for float weights).
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>

#include "staticlm/constrain.hpp"
#include "staticlm/generate.hpp"
#include "staticlm/session.hpp"

namespace staticlm {

class Model;
class PrefixPool;

// Rows a decode step holds for drafted tokens beyond one per slot, at most
// (speculation: BatchSessionOptions::max_draft).
constexpr int kMaxDraftRows = 64;

struct BatchSessionOptions {
    int slots = 16;           // S: sequences held (and decoded) at once
    SessionOptions session;   // per slot: max_seq, buckets, KV type, ring; threads for all
    // Prompt-lookup speculation (BatchGenerator::submit): the most tokens one
    // slot drafts per step, 0..kMaxDraft (0: none). A decode step then holds
    // S + draft_rows() rows (their logits [rows][vocab] are the step's).
    int max_draft = 0;
    int draft_rows() const {
        return max_draft <= 0 ? 0 : std::min(slots * max_draft, std::max(max_draft, kMaxDraftRows));
    }
};

class BatchSession {
public:
    BatchSession(std::shared_ptr<const Model> model, const BatchSessionOptions& options);
    ~BatchSession();
    BatchSession(BatchSession&&) noexcept;
    BatchSession& operator=(BatchSession&&) noexcept;
    BatchSession(const BatchSession&) = delete;
    BatchSession& operator=(const BatchSession&) = delete;

    // Session::prefill / append / decode of one slot (RUNTIME.md), on its cache.
    std::span<const float> prefill(int slot, std::span<const int> tokens);
    std::span<const float> append(int slot, std::span<const int> tokens);
    // One prefill step of the slot: the next (Q, t) step of the bucket plan
    // of `rest` (the prompt tokens not yet processed) at the slot's position,
    // with the prefill buckets. Returns t. Running steps until the prompt is
    // consumed is prefill(slot, prompt) from position 0; other slots may
    // decode in between. The slot's logits are those of the step's last row.
    int prefill_step(int slot, std::span<const int> rest);
    // One step of n = slots.size() rows (distinct slots, 1 <= n <= S): row i
    // appends tokens[i] to slots[i]. Each slot's logits(slot) is its row.
    void decode(std::span<const int> slots, std::span<const int> tokens);
    // One step of runs (speculation's verification): slots[i] appends its
    // counts[i] >= 1 tokens, which follow each other in `tokens` (sum of
    // counts <= max_rows()); every row is computed as a one-row decode of its
    // sequence, after the rows before it in its run. row_logits(r) is row r's
    // ([vocab], until the next call), logits(slot) the last of its run. A run
    // is at most the largest prefill or append bucket (so it can be rewound).
    void decode_runs(std::span<const int> slots, std::span<const int> counts, std::span<const int> tokens);
    std::span<const float> row_logits(int row) const;
    int max_rows() const;  // S + options().draft_rows()
    void reset(int slot);
    void rewind(int slot, int n);
    // Session::save_prefix / load_prefix of one slot (prefix_pool.hpp).
    void save_prefix(int slot, PrefixPool& pool, int entry);
    void load_prefix(int slot, const PrefixPool& pool, int entry, int n);

    int slots() const;
    int pos(int slot) const;
    int max_seq() const;
    int vocab() const;
    int threads() const;
    // Logits of the slot's last token ([vocab]), valid until its next call.
    std::span<const float> logits(int slot) const;
    const Model& model() const;
    const BatchSessionOptions& options() const;
    size_t cache_bytes() const;      // all slots
    size_t workspace_bytes() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// Continuous batching with per-sequence sampling on a BatchSession. Each
// sequence gets exactly what generate() gives it alone (token ids, stop ids,
// max_tokens, capacity; stop strings are text and the caller's: see stop()).
class BatchGenerator {
public:
    // prefill_budget: prompt tokens (bucket rows) prefilled per step before
    // the decode rows; 0 = the largest prefill bucket.
    BatchGenerator(std::shared_ptr<const Model> model, const BatchSessionOptions& options,
                   int prefill_budget = 0);
    ~BatchGenerator();
    BatchGenerator(const BatchGenerator&) = delete;
    BatchGenerator& operator=(const BatchGenerator&) = delete;

    int capacity() const;  // S
    int active() const;    // slots in use (finished but not released included)

    // Starts a sequence in a free slot and returns the slot. The prompt and
    // stop ids are copied into the slot's buffers. Throws Error: capacity (no
    // free slot, prompt longer than max_seq), input (empty, bad ids), config
    // (sampling options, max_tokens < 0, more than kMaxStopIds stop ids).
    // logprobs: as GenerateOptions::logprobs (-1 off, else 0..kMaxLogprobs
    // alternatives), the values of generate() alone bit for bit.
    // constraint: as GenerateOptions::constraint (held until release()).
    // speculation: as GenerateOptions::speculation (drafts from the slot's
    // prompt + output, verified in its run of one decode_runs step, the
    // rejected tail rewound); max_draft at most the options' max_draft
    // (Error(config) otherwise). Greedy output and log-probabilities are
    // those without it bit for bit; sampled output has the same distribution.
    static constexpr int kMaxStopIds = 16;
    int submit(uint64_t tag, std::span<const int> prompt, const SamplingOptions& sampling,
               int max_tokens, std::span<const int> stop_ids, int logprobs = -1,
               std::shared_ptr<const Constraint> constraint = nullptr, const SpeculationOptions& speculation = {});
    // Right after submit(): the slot's first n prompt tokens are taken from a
    // filled prefix pool entry instead of being prefilled (their K/V are
    // copied; n < the prompt's length, so the first token is sampled from a
    // computed row). The prompt tokens stay the sampler's history.
    void start_after_prefix(int slot, const PrefixPool& pool, int entry, int n);
    // Prefills waiting prompts (up to the budget; a prompt's first token is
    // sampled when its prefill completes), then decodes one token for every
    // other running sequence. Each sequence gains one token per step, or
    // with speculation up to max_draft + 1 (its drafted tokens accepted and
    // one more). Returns how many sequences finished in this step.
    int step();

    bool in_use(int slot) const;
    bool finished(int slot) const;
    uint64_t tag(int slot) const;
    std::span<const int> prompt(int slot) const;
    std::span<const int> generated(int slot) const;
    // With logprobs >= 0: each generated token's log-probability, and the
    // alternatives of the last generated one; step_top_logprobs: those of
    // every token the last step added ([n][top_n], in order), so a caller
    // that reads them after every step sees every token's.
    std::span<const float> logprobs(int slot) const;
    std::span<const TokenLogprob> last_top_logprobs(int slot) const;
    std::span<const TokenLogprob> step_top_logprobs(int slot) const;
    StopReason reason(int slot) const;  // valid once finished
    // With a constraint: the output so far is a complete value.
    bool complete(int slot) const;
    const GenerateStats& stats(int slot) const;
    // Ends a running sequence (or changes the reason of one that finished in
    // the last step by length or capacity) with `reason`, keeping its tokens:
    // a caller that found a stop string in the text after the last token.
    // keep >= 0: only the first `keep` generated tokens stay (a stop string
    // completed by a token before the last of a speculative step; keep must
    // not drop tokens of earlier steps), whatever the slot's state.
    void stop(int slot, StopReason reason, int keep = -1);
    // Frees a finished slot for submit().
    void release(int slot);

    BatchSession& session();

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace staticlm
