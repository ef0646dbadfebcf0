// BatchSession (S slots over the shared graph: a Sequence per slot, one
// prefill workspace, one decode workspace of S rows) and BatchGenerator
// (continuous batching with per-slot samplers). Everything is made in the
// constructors.
#include "staticlm/batch_session.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "kernels/parallel.hpp"
#include "model/graph.hpp"
#include "model/model.hpp"
#include "staticlm/error.hpp"
#include "sequence.hpp"

namespace staticlm {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

}  // namespace

// ---------------------------------------------------------------------------
// BatchSession
// ---------------------------------------------------------------------------

struct BatchSession::Impl {
    std::shared_ptr<const Model> model;
    BatchSessionOptions options;
    SequenceRules rules;                // buckets, threads, kernels, checks: as a Session's
    std::vector<Sequence> seqs;         // [S]
    Workspace ws_prefill;               // blocks up to the largest bucket, logits of one row
    Workspace ws_decode;                // R = S + draft rows, logits of every row
    int max_rows = 0;                   // R
    int last_rows = 0;                  // rows of the last decode step (row_logits)
    // The last decode step's first slot when its rows were one token each of
    // consecutive slots: the head wrote row r's logits straight into slot
    // direct_first + r's (no copy); -1: rows in ws_decode, copied per slot.
    int direct_first = -1;
    std::vector<float> logits;          // [S][vocab]: each slot's last logits
    std::vector<int> row_pos;           // [R] positions of a decode step's rows
    std::vector<StaticKVCache*> row_caches;  // [R]
    std::vector<char> row_seen;         // [S] duplicate-slot check
    std::vector<int> ones;              // [S] of 1: decode()'s run lengths

    void check_slot(int slot) const {
        if (slot < 0 || slot >= options.slots)
            throw Error(ErrorKind::input, "slot " + std::to_string(slot) + " outside 0.." +
                                              std::to_string(options.slots - 1));
    }
    Sequence& at(int slot) {
        check_slot(slot);
        return seqs[size_t(slot)];
    }

    float* slot_logits(int slot) { return logits.data() + size_t(slot) * size_t(rules.vocab); }

    // One bucket step of `rest` at the slot's position; returns the rows consumed.
    int run_step(int slot, std::span<const int> rest, const std::vector<int>& buckets) {
        Sequence& q = seqs[size_t(slot)];
        const int P = q.pos;
        const Step st = bucket_step(buckets, P, int(rest.size()), rules.max_seq);
        const bool last = st.t == int(rest.size());
        ForwardArgs a;
        a.tokens = rest.data();
        a.t = st.t;
        a.pos0 = P;
        a.n_threads = rules.threads;
        a.logits = last ? ForwardArgs::Logits::last : ForwardArgs::Logits::none;
        forward(*model, *rules.kt, q.cache, ws_prefill, a);
        if (last) std::memcpy(slot_logits(slot), ws_prefill.logits, size_t(rules.vocab) * sizeof(float));
        q.wrote(P, P + st.t);
        q.pos = P + st.t;
        return st.t;
    }

    std::span<const float> run(int slot, std::span<const int> tokens, int P,
                               const std::vector<int>& buckets) {
        Sequence& q = at(slot);
        rules.validate(tokens, P);
        q.pos = P;
        if (P == 0) q.high_water = 0;
        size_t done = 0;
        while (done < tokens.size()) done += size_t(run_step(slot, tokens.subspan(done), buckets));
        return {slot_logits(slot), size_t(rules.vocab)};
    }
};

BatchSession::BatchSession(std::shared_ptr<const Model> model, const BatchSessionOptions& options)
    : impl_(std::make_unique<Impl>()) {
    Impl& s = *impl_;
    if (!model) throw Error(ErrorKind::config, "batch session needs a model");
    if (options.slots < 1)
        throw Error(ErrorKind::config, "invalid configuration: slots must be >= 1, got " +
                                           std::to_string(options.slots));
    if (options.max_draft < 0 || options.max_draft > kMaxDraft)
        throw Error(ErrorKind::config, "invalid configuration: max_draft must be in 0.." + std::to_string(kMaxDraft) +
                                           " (0: no speculation), got " + std::to_string(options.max_draft));
    s.rules = SequenceRules(*model, options.session);
    s.max_rows = options.slots + options.draft_rows();
    s.model = std::move(model);
    s.options = options;
    const SequenceRules& r = s.rules;
    const size_t S = size_t(options.slots);
    check_memory(double(r.cache_bytes_needed()) * double(S),  // double: no overflow
                 std::to_string(S) + " slots of max_seq " + std::to_string(r.max_seq) + " need",
                 "slots or max_seq");
    try {
        s.seqs.reserve(S);
        for (size_t i = 0; i < S; ++i) s.seqs.emplace_back(r);
        const ModelConfig& c = s.model->config();
        s.ws_prefill = Workspace(c, s.model->matrix_types(), r.q_max, r.threads, 1);
        s.ws_decode = Workspace(c, s.model->matrix_types(), s.max_rows, r.threads, s.max_rows);
        s.logits.assign(S * size_t(r.vocab), 0.0f);
    } catch (const std::bad_alloc&) {
        throw Error(ErrorKind::capacity, "out of memory allocating " + std::to_string(S) +
                                             " slots of max_seq " + std::to_string(r.max_seq) +
                                             " (lower slots or max_seq)");
    }
    s.row_pos.assign(size_t(s.max_rows), 0);
    s.row_caches.assign(size_t(s.max_rows), nullptr);
    s.row_seen.assign(S, 0);
    s.ones.assign(S, 1);
}

BatchSession::~BatchSession() = default;
BatchSession::BatchSession(BatchSession&&) noexcept = default;
BatchSession& BatchSession::operator=(BatchSession&&) noexcept = default;

std::span<const float> BatchSession::prefill(int slot, std::span<const int> tokens) {
    return impl_->run(slot, tokens, 0, impl_->rules.prefill_buckets);
}

std::span<const float> BatchSession::append(int slot, std::span<const int> tokens) {
    return impl_->run(slot, tokens, impl_->at(slot).pos, impl_->rules.append_buckets);
}

int BatchSession::prefill_step(int slot, std::span<const int> rest) {
    Impl& s = *impl_;
    s.rules.validate(rest, s.at(slot).pos);
    return s.run_step(slot, rest, s.rules.prefill_buckets);
}

void BatchSession::decode(std::span<const int> slots, std::span<const int> tokens) {
    Impl& s = *impl_;
    const int n = int(slots.size());
    if (n < 1 || n > s.options.slots || tokens.size() != slots.size())
        throw Error(ErrorKind::input, "decode needs 1.." + std::to_string(s.options.slots) +
                                          " rows with one token per slot, got " + std::to_string(n) +
                                          " slots and " + std::to_string(tokens.size()) + " tokens");
    decode_runs(slots, std::span<const int>(s.ones.data(), size_t(n)), tokens);  // runs of one token
}

void BatchSession::decode_runs(std::span<const int> slots, std::span<const int> counts, std::span<const int> tokens) {
    Impl& s = *impl_;
    const int n = int(slots.size());
    if (n < 1 || n > s.options.slots || counts.size() != slots.size())
        throw Error(ErrorKind::input, "decode_runs needs 1.." + std::to_string(s.options.slots) +
                                          " runs with one count per slot, got " + std::to_string(n) + " slots and " +
                                          std::to_string(counts.size()) + " counts");
    long total = 0;
    for (int c : counts) {
        if (c < 1 || c > s.rules.q_max)
            throw Error(ErrorKind::input, "a run of decode_runs holds 1.." + std::to_string(s.rules.q_max) +
                                              " tokens (the largest bucket), got " + std::to_string(c));
        total += c;
    }
    if (total != long(tokens.size()) || total > s.max_rows)
        throw Error(ErrorKind::input, "decode_runs got " + std::to_string(tokens.size()) + " tokens for runs of " +
                                          std::to_string(total) + " rows (at most " + std::to_string(s.max_rows) +
                                          " rows: slots + draft rows)");
    std::fill(s.row_seen.begin(), s.row_seen.end(), 0);
    size_t r = 0;
    for (int i = 0; i < n; ++i) {
        const int slot = slots[size_t(i)];
        Sequence& q = s.at(slot);
        if (s.row_seen[size_t(slot)])
            throw Error(ErrorKind::input, "slot " + std::to_string(slot) + " appears twice in one decode step");
        s.row_seen[size_t(slot)] = 1;
        const int c = counts[size_t(i)];
        s.rules.validate(tokens.subspan(r, size_t(c)), q.pos);
        for (int j = 0; j < c; ++j, ++r) {
            s.row_pos[r] = q.pos + j;
            s.row_caches[r] = &q.cache;
        }
    }
    SequenceRows rows;
    rows.pos = s.row_pos.data();
    rows.caches = s.row_caches.data();
    ForwardArgs a;
    a.tokens = tokens.data();
    a.t = int(total);
    a.seqs = &rows;
    a.n_threads = s.rules.threads;
    a.logits = ForwardArgs::Logits::all;
    bool direct = total == n;
    for (int i = 1; i < n && direct; ++i) direct = slots[size_t(i)] == slots[0] + i;
    s.direct_first = direct ? slots[0] : -1;
    if (direct) a.logits_out = s.slot_logits(slots[0]);
    forward(*s.model, *s.rules.kt, s.seqs[size_t(slots[0])].cache, s.ws_decode, a);
    const size_t vocab = size_t(s.rules.vocab);
    r = 0;
    for (int i = 0; i < n; ++i) {
        const int slot = slots[size_t(i)];
        const int c = counts[size_t(i)];
        Sequence& q = s.seqs[size_t(slot)];
        r += size_t(c);
        if (!direct) std::memcpy(s.slot_logits(slot), s.ws_decode.logits + (r - 1) * vocab, vocab * sizeof(float));
        q.wrote(q.pos, q.pos + c);
        q.pos += c;
    }
    s.last_rows = int(total);
}

std::span<const float> BatchSession::row_logits(int row) const {
    const Impl& s = *impl_;
    if (row < 0 || row >= s.last_rows)
        throw Error(ErrorKind::input, "row " + std::to_string(row) + " outside the last decode step's 0.." +
                                          std::to_string(s.last_rows - 1));
    const float* base = s.direct_first >= 0 ? s.logits.data() + size_t(s.direct_first) * size_t(s.rules.vocab)
                                            : s.ws_decode.logits;
    return {base + size_t(row) * size_t(s.rules.vocab), size_t(s.rules.vocab)};
}

int BatchSession::max_rows() const { return impl_->max_rows; }

void BatchSession::reset(int slot) { impl_->at(slot).reset(); }
void BatchSession::rewind(int slot, int n) { impl_->at(slot).rewind(n); }

void BatchSession::save_prefix(int slot, PrefixPool& pool, int entry) {
    impl_->at(slot).save_prefix(pool, entry);
}

void BatchSession::load_prefix(int slot, const PrefixPool& pool, int entry, int n) {
    impl_->at(slot).load_prefix(pool, entry, n);
}

int BatchSession::slots() const { return impl_->options.slots; }
int BatchSession::pos(int slot) const { return impl_->at(slot).pos; }
int BatchSession::max_seq() const { return impl_->rules.max_seq; }
int BatchSession::vocab() const { return impl_->rules.vocab; }
int BatchSession::threads() const { return impl_->rules.threads; }
std::span<const float> BatchSession::logits(int slot) const {
    impl_->check_slot(slot);
    return {impl_->slot_logits(slot), size_t(impl_->rules.vocab)};
}
const Model& BatchSession::model() const { return *impl_->model; }
const BatchSessionOptions& BatchSession::options() const { return impl_->options; }
size_t BatchSession::cache_bytes() const {
    size_t n = 0;
    for (const Sequence& q : impl_->seqs) n += q.cache.bytes();
    return n;
}
size_t BatchSession::workspace_bytes() const {
    return impl_->ws_prefill.bytes() + impl_->ws_decode.bytes() + impl_->logits.size() * sizeof(float);
}

// ---------------------------------------------------------------------------
// BatchGenerator
// ---------------------------------------------------------------------------

namespace {

// The most decode steps in a row without drafting after rejected drafts (as generate()'s).
constexpr int kMaxCooldown = 16;

struct Slot {
    enum class State { free, prefilling, decoding, finished } state = State::free;
    uint64_t tag = 0;
    uint64_t order = 0;         // submission order: prompts are prefilled first come, first served
    std::vector<int> tokens;    // [max_seq + 1]: prompt, then generated (the last not yet in the cache)
    int n_prompt = 0, n_prefilled = 0, n_gen = 0, max_tokens = 0;
    std::array<int, BatchGenerator::kMaxStopIds> stop_ids{};
    int n_stop = 0;
    Sampler sampler;
    int top_n = -1;                 // logprobs: -1 off
    std::vector<float> logprobs;    // [max_seq + 1] of the generated tokens
    // Of the tokens the last step added (n_step of them):
    std::vector<TokenLogprob> step_top;  // [kMaxDraft + 1][kMaxLogprobs] their alternatives
    std::array<bool, kMaxDraft + 1> step_complete{};  // the constraint's complete() after each
    int n_step = 0;
    std::shared_ptr<const Constraint> constraint;
    ConstraintCursor cursor;    // mask buffer [vocab / 64] made here
    bool complete = false;      // the cursor's, or where a stop(keep) cut the output
    bool complete_before = false;  // complete before the last step
    StopReason reason = StopReason::max_tokens;
    GenerateStats stats;
    Clock::time_point t_submit, t_first;
    uint64_t finished_step = 0; // the step() that finished it
    bool fresh = false;         // got its first token in this step: decodes from the next one
    // Speculation (submit's) and its draft control, as generate()'s.
    SpeculationOptions spec;
    int budget = 0, cool = 0, skip = 0;

    Slot(int vocab, int max_seq)
        : tokens(size_t(max_seq) + 1), sampler(vocab, SamplingOptions{}), logprobs(size_t(max_seq) + 1),
          step_top(size_t(kMaxDraft + 1) * size_t(kMaxLogprobs)), cursor(vocab) {}
};

}  // namespace

struct BatchGenerator::Impl {
    BatchSession session;
    std::vector<Slot> slots;
    int prefill_budget = 0;
    int largest_append = 1;
    uint64_t next_order = 0;
    uint64_t step_count = 0;
    std::vector<int> rows, counts;  // [S] a decode step's slots and their run lengths
    std::vector<int> row_tokens;    // [max_rows] the runs: last token, then the draft
    std::vector<int> first_row;     // [S] where each run starts

    Impl(std::shared_ptr<const Model> model, const BatchSessionOptions& options)
        : session(std::move(model), options) {}

    Slot& at(int slot) {
        if (slot < 0 || slot >= int(slots.size()))
            throw Error(ErrorKind::input, "slot " + std::to_string(slot) + " outside 0.." +
                                              std::to_string(slots.size() - 1));
        return slots[size_t(slot)];
    }

    void finish(Slot& s, StopReason reason) {
        s.state = Slot::State::finished;
        s.reason = reason;
        s.stats.generated_tokens = s.n_gen;
        if (s.n_gen > 0) s.stats.decode_seconds = seconds_since(s.t_first);
        s.finished_step = step_count;
    }

    // The slot's next token from `logits` (touches only the slot's state):
    // sampled, or with draft >= 0 the verification of that drafted token
    // (Sampler::sample_draft).
    int pick(int slot, std::span<const float> logits, int draft) {
        Slot& s = slots[size_t(slot)];
        const std::span<const int> recent(s.tokens.data(), size_t(s.n_prompt + s.n_gen));
        const std::span<const uint64_t> allowed =
            s.cursor.active() ? s.cursor.mask(std::span<const int>(s.stop_ids.data(), size_t(s.n_stop)))
                              : std::span<const uint64_t>();
        const int id = draft >= 0 ? s.sampler.sample_draft(logits, recent, allowed, draft)
                                  : s.sampler.sample(logits, recent, allowed);
        s.cursor.advance(id);
        if (s.top_n >= 0)
            s.logprobs[size_t(s.n_gen)] = token_logprob(
                logits, id, std::span<TokenLogprob>(s.step_top.data() + size_t(s.n_step) * size_t(s.top_n),
                                                    size_t(s.top_n)));
        return id;
    }

    // Appends a picked token, with the stop rules of generate(); `pos` is
    // where the slot's cache would stand after this token without
    // speculation (the token itself not in it). True when it finished.
    bool record(int slot, int id, int pos) {
        Slot& s = slots[size_t(slot)];
        if (s.n_gen == 0) {
            s.stats.first_token_seconds = seconds_since(s.t_submit);
            s.t_first = Clock::now();
        }
        s.tokens[size_t(s.n_prompt + s.n_gen)] = id;
        ++s.n_gen;
        s.complete = s.cursor.complete();
        s.step_complete[size_t(s.n_step)] = s.complete;
        ++s.n_step;
        if (std::find(s.stop_ids.begin(), s.stop_ids.begin() + s.n_stop, id) != s.stop_ids.begin() + s.n_stop)
            finish(s, StopReason::eos);
        else if (s.n_gen == s.max_tokens)
            finish(s, StopReason::max_tokens);
        else if (pos >= session.max_seq())
            finish(s, StopReason::capacity);
        return s.state == Slot::State::finished;
    }

    // How many tokens the slot drafts into `out` this step (room: at most
    // out.size()), with generate()'s draft control.
    int draft(Slot& s, int pos, std::span<int> out) {
        if (s.spec.max_draft <= 0) return 0;
        if (s.skip > 0) {
            --s.skip;
            return 0;
        }
        // The output still allowed, the cache, one append block (a ring can then rewind all of it).
        const int room = std::min({s.budget, int(out.size()), s.max_tokens - s.n_gen - 1,
                                   session.max_seq() - pos - 1, largest_append - 1});
        if (room <= 0) return 0;
        const std::span<const int> history(s.tokens.data(), size_t(s.n_prompt + s.n_gen));
        return ngram_draft(history, s.spec, out.first(size_t(room)));
    }

    // Samples the slot's run of the last decode_runs step (k drafted tokens
    // from row `row0`): the draft stands while the sampler agrees, the first
    // disagreement is the sampler's own token; the drafted tokens after the
    // last one recorded are rewound. Touches only the slot's state.
    void verify(int slot, int row0, int k) {
        Slot& s = slots[size_t(slot)];
        const int before = session.pos(slot) - (k + 1);  // the cache before the run
        int j = 0;
        for (;; ++j) {
            const int proposed = j < k ? row_tokens[size_t(row0 + j + 1)] : -1;
            const int id = pick(slot, session.row_logits(row0 + j), proposed);
            const bool accepted = proposed >= 0 && id == proposed;
            if (accepted) ++s.stats.accepted_tokens;
            if (record(slot, id, before + j + 1) || !accepted) break;
        }
        if (k > j) session.rewind(slot, k - j);
        if (k == 0) return;
        // j: drafted tokens accepted (unless it ended on one: then unused).
        ++s.stats.draft_steps;
        s.stats.drafted_tokens += k;
        s.cool = j == 0 ? std::min(s.cool > 0 ? 2 * s.cool : 1, kMaxCooldown) : 0;
        s.skip = s.cool;
        s.budget = j == k ? std::min(2 * s.budget, s.spec.max_draft) : j + 1;
    }
};

BatchGenerator::BatchGenerator(std::shared_ptr<const Model> model, const BatchSessionOptions& options,
                               int prefill_budget)
    : impl_(std::make_unique<Impl>(std::move(model), options)) {
    Impl& g = *impl_;
    const int vocab = g.session.vocab();
    g.slots.reserve(size_t(options.slots));
    for (int i = 0; i < options.slots; ++i) g.slots.emplace_back(vocab, options.session.max_seq);
    if (prefill_budget < 0)
        throw Error(ErrorKind::config, "prefill_budget must be >= 0, got " + std::to_string(prefill_budget));
    int largest = 1;
    for (int b : options.session.prefill_buckets) largest = std::max(largest, b);
    g.prefill_budget = prefill_budget > 0 ? prefill_budget : largest;
    for (int b : options.session.append_buckets) g.largest_append = std::max(g.largest_append, std::min(b, g.session.max_seq()));
    g.rows.assign(size_t(options.slots), 0);
    g.counts.assign(size_t(options.slots), 0);
    g.first_row.assign(size_t(options.slots), 0);
    g.row_tokens.assign(size_t(g.session.max_rows()), 0);
}

BatchGenerator::~BatchGenerator() = default;

int BatchGenerator::capacity() const { return int(impl_->slots.size()); }

int BatchGenerator::active() const {
    int n = 0;
    for (const Slot& s : impl_->slots) n += s.state != Slot::State::free;
    return n;
}

int BatchGenerator::submit(uint64_t tag, std::span<const int> prompt, const SamplingOptions& sampling,
                           int max_tokens, std::span<const int> stop_ids, int logprobs,
                           std::shared_ptr<const Constraint> constraint, const SpeculationOptions& speculation) {
    Impl& g = *impl_;
    int slot = -1;
    for (size_t i = 0; i < g.slots.size() && slot < 0; ++i)
        if (g.slots[i].state == Slot::State::free) slot = int(i);
    if (slot < 0)
        throw Error(ErrorKind::capacity, "all " + std::to_string(g.slots.size()) + " slots are in use");
    // Checked in the order generate() checks them, with the same messages.
    if (max_tokens < 0) throw Error(ErrorKind::config, "max_tokens must be >= 0");
    if (stop_ids.size() > size_t(kMaxStopIds))
        throw Error(ErrorKind::config, "at most " + std::to_string(kMaxStopIds) + " stop ids, got " +
                                           std::to_string(stop_ids.size()));
    if (logprobs < -1 || logprobs > kMaxLogprobs || logprobs > g.session.vocab())
        throw Error(ErrorKind::config, "logprobs must be -1 (off) or in 0.." + std::to_string(kMaxLogprobs) +
                                           ", got " + std::to_string(logprobs));
    check_speculation_options(speculation);
    const int most = g.session.options().max_draft;
    if (speculation.max_draft > most)
        throw Error(ErrorKind::config, "speculation max_draft " + std::to_string(speculation.max_draft) +
                                           " is more than the batch's max_draft " + std::to_string(most) +
                                           " (the draft rows are sized when the batch is made)");
    if (constraint && stop_ids.empty())
        throw Error(ErrorKind::config, "a constrained generation needs a stop id (EOS)");
    Slot& s = g.slots[size_t(slot)];
    s.sampler.reset(sampling);
    s.top_n = logprobs;
    check_tokens(prompt, 0, g.session.vocab(), g.session.max_seq());
    s.cursor.start(constraint.get());
    s.constraint = std::move(constraint);
    s.complete = false;
    std::copy(prompt.begin(), prompt.end(), s.tokens.begin());
    std::copy(stop_ids.begin(), stop_ids.end(), s.stop_ids.begin());
    s.n_stop = int(stop_ids.size());
    s.tag = tag;
    s.order = g.next_order++;
    s.n_prompt = int(prompt.size());
    s.n_prefilled = 0;
    s.n_gen = 0;
    s.n_step = 0;
    s.max_tokens = max_tokens;
    s.reason = StopReason::max_tokens;
    s.stats = GenerateStats{};
    s.stats.prompt_tokens = s.n_prompt;
    s.t_submit = Clock::now();
    s.fresh = false;
    s.spec = speculation;
    s.budget = speculation.max_draft;
    s.cool = s.skip = 0;
    s.state = Slot::State::prefilling;
    g.session.reset(slot);
    return slot;
}

void BatchGenerator::start_after_prefix(int slot, const PrefixPool& pool, int entry, int n) {
    Impl& g = *impl_;
    Slot& s = g.at(slot);
    if (s.state != Slot::State::prefilling || s.n_prefilled != 0)
        throw Error(ErrorKind::input, "slot " + std::to_string(slot) + " is not a freshly submitted sequence");
    if (n < 1 || n >= s.n_prompt)
        throw Error(ErrorKind::input, "a prefix of " + std::to_string(n) + " tokens must leave some of the " +
                                          std::to_string(s.n_prompt) + " prompt tokens to prefill");
    g.session.load_prefix(slot, pool, entry, n);
    s.n_prefilled = n;
}

int BatchGenerator::step() {
    Impl& g = *impl_;
    ++g.step_count;
    for (Slot& s : g.slots)
        if (s.state == Slot::State::decoding || s.state == Slot::State::prefilling) {
            s.n_step = 0;
            s.complete_before = s.complete;
        }
    // Prompts first, oldest first, up to the budget of rows.
    int budget = g.prefill_budget;
    while (budget > 0) {
        int slot = -1;
        for (size_t i = 0; i < g.slots.size(); ++i)
            if (g.slots[i].state == Slot::State::prefilling &&
                (slot < 0 || g.slots[i].order < g.slots[size_t(slot)].order))
                slot = int(i);
        if (slot < 0) break;
        Slot& s = g.slots[size_t(slot)];
        const auto t0 = Clock::now();
        const std::span<const int> rest(s.tokens.data() + s.n_prefilled, size_t(s.n_prompt - s.n_prefilled));
        const int t = g.session.prefill_step(slot, rest);
        s.stats.prefill_seconds += seconds_since(t0);
        s.n_prefilled += t;
        budget -= t;
        if (s.n_prefilled < s.n_prompt) continue;
        s.state = Slot::State::decoding;
        s.fresh = true;
        if (s.max_tokens == 0)
            g.finish(s, StopReason::max_tokens);
        else
            g.record(slot, g.pick(slot, g.session.logits(slot), -1), g.session.pos(slot));
    }
    // One run for every running sequence that already had its first token:
    // its last token, then what it drafts (draft rows shared first come,
    // first served).
    int n = 0, total = 0, draft_left = g.session.options().draft_rows();
    for (size_t i = 0; i < g.slots.size(); ++i) {
        Slot& s = g.slots[i];
        if (s.state == Slot::State::decoding && !s.fresh) {
            g.row_tokens[size_t(total)] = s.tokens[size_t(s.n_prompt + s.n_gen - 1)];
            const int k = g.draft(s, g.session.pos(int(i)),
                                  std::span<int>(g.row_tokens.data() + total + 1, size_t(draft_left)));
            draft_left -= k;
            g.rows[size_t(n)] = int(i);
            g.counts[size_t(n)] = k + 1;
            g.first_row[size_t(n)] = total;
            total += k + 1;
            ++n;
        }
        s.fresh = false;
    }
    if (n > 0) {
        g.session.decode_runs(std::span<const int>(g.rows.data(), size_t(n)),
                              std::span<const int>(g.counts.data(), size_t(n)),
                              std::span<const int>(g.row_tokens.data(), size_t(total)));
        // Runs are verified independently (each slot has its own sampler and
        // cache): in parallel when there are enough of them to pay for waking the team.
        kernels::parallel_for(n >= 4 ? g.session.threads() : 1, n, [&](int i, const kernels::Team&) {
            g.verify(g.rows[size_t(i)], g.first_row[size_t(i)], g.counts[size_t(i)] - 1);
        });
    }
    int finished = 0;
    for (const Slot& s : g.slots) finished += s.state == Slot::State::finished && s.finished_step == g.step_count;
    return finished;
}

bool BatchGenerator::in_use(int slot) const { return impl_->at(slot).state != Slot::State::free; }
bool BatchGenerator::finished(int slot) const { return impl_->at(slot).state == Slot::State::finished; }
uint64_t BatchGenerator::tag(int slot) const { return impl_->at(slot).tag; }
std::span<const int> BatchGenerator::prompt(int slot) const {
    const Slot& s = impl_->at(slot);
    return {s.tokens.data(), size_t(s.n_prompt)};
}
std::span<const int> BatchGenerator::generated(int slot) const {
    const Slot& s = impl_->at(slot);
    return {s.tokens.data() + s.n_prompt, size_t(s.n_gen)};
}
std::span<const float> BatchGenerator::logprobs(int slot) const {
    const Slot& s = impl_->at(slot);
    return {s.logprobs.data(), s.top_n >= 0 ? size_t(s.n_gen) : 0};
}
std::span<const TokenLogprob> BatchGenerator::last_top_logprobs(int slot) const {
    const Slot& s = impl_->at(slot);
    if (s.top_n <= 0 || s.n_gen == 0 || s.n_step == 0) return {};
    return {s.step_top.data() + size_t(s.n_step - 1) * size_t(s.top_n), size_t(s.top_n)};
}
std::span<const TokenLogprob> BatchGenerator::step_top_logprobs(int slot) const {
    const Slot& s = impl_->at(slot);
    if (s.top_n <= 0) return {};
    return {s.step_top.data(), size_t(s.n_step) * size_t(s.top_n)};
}
StopReason BatchGenerator::reason(int slot) const { return impl_->at(slot).reason; }
bool BatchGenerator::complete(int slot) const { return impl_->at(slot).complete; }
const GenerateStats& BatchGenerator::stats(int slot) const { return impl_->at(slot).stats; }

void BatchGenerator::stop(int slot, StopReason reason, int keep) {
    Impl& g = *impl_;
    Slot& s = g.at(slot);
    if (keep >= 0 && keep < s.n_gen && s.state != Slot::State::free) {
        const int cut = s.n_gen - keep;  // tokens of the last step dropped
        if (cut > s.n_step || s.state == Slot::State::prefilling)
            throw Error(ErrorKind::input, "slot " + std::to_string(slot) + ": cannot keep " + std::to_string(keep) +
                                              " of " + std::to_string(s.n_gen) +
                                              " tokens (only the last step's can be dropped)");
        s.n_step -= cut;
        s.n_gen = keep;
        s.complete = s.n_step > 0 ? s.step_complete[size_t(s.n_step - 1)] : s.complete_before;
        g.finish(s, reason);
        return;
    }
    if (s.state == Slot::State::prefilling || s.state == Slot::State::decoding) {
        g.finish(s, reason);
    } else if (s.state == Slot::State::finished && s.reason != StopReason::eos) {
        s.reason = reason;
    } else {
        throw Error(ErrorKind::input, "slot " + std::to_string(slot) + " holds no sequence to stop");
    }
}

void BatchGenerator::release(int slot) {
    Slot& s = impl_->at(slot);
    if (s.state != Slot::State::finished)
        throw Error(ErrorKind::input, "slot " + std::to_string(slot) + " has not finished");
    s.state = Slot::State::free;
    s.cursor.start(nullptr);
    s.constraint.reset();
}

BatchSession& BatchGenerator::session() { return impl_->session; }

}  // namespace staticlm
