// BatchSession (S slots over the shared graph: per-slot caches, one prefill
// workspace, one decode workspace of S rows) and BatchGenerator (continuous
// batching with per-slot samplers). Everything is made in the constructors.
#include "staticlm/batch_session.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "cache/kv_cache.hpp"
#include "model/graph.hpp"
#include "model/model.hpp"
#include "model/weight_plan.hpp"
#include "staticlm/error.hpp"
#include "internal.hpp"
#include "prefix_internal.hpp"

namespace staticlm {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}


// The next step of the bucket rule of RUNTIME.md for n tokens at position P
// (the rule has no memory, so running it step by step gives Session::plan).
Step next_step(std::span<const int> sorted, int P, int n, int K) {
    int q = 0;
    for (int b : sorted)
        if (b >= n && P + b <= K) {
            q = b;
            break;
        }
    if (q == 0)
        for (int b : sorted)
            if (P + b <= K) q = b;
    return {q, std::min(q, n)};
}

// Refuses caches larger than the machine's memory before allocating them
// (the cache's own bytes_needed(), times the slots).
void check_caches_fit(std::span<const KvLayerSpec> specs, const BatchSessionOptions& o, int q_max) {
    const SessionOptions& s = o.session;
    const uint64_t one = StaticKVCache::bytes_needed(specs, s.max_seq, s.kv, s.ring_sliding, q_max);
    const double bytes = double(one) * o.slots;  // double: no overflow
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page <= 0) return;
    const double memory = double(pages) * double(page);
    if (bytes > memory)
        throw Error(ErrorKind::capacity,
                    "invalid configuration: " + std::to_string(o.slots) + " slots of max_seq " +
                        std::to_string(s.max_seq) + " need " + std::to_string(uint64_t(std::min(bytes, 1.8e19))) +
                        " bytes of KV cache, more than the " + std::to_string(uint64_t(memory)) +
                        " bytes of memory of this machine (lower slots or max_seq)");
}

}  // namespace

// ---------------------------------------------------------------------------
// BatchSession
// ---------------------------------------------------------------------------

struct BatchSession::Impl {
    std::shared_ptr<const Model> model;
    BatchSessionOptions options;
    const kernels::KernelTable* kt = nullptr;
    std::vector<int> prefill_buckets, append_buckets;
    std::vector<StaticKVCache> caches;  // [S]
    std::vector<int> pos, high_water;   // [S]
    Workspace ws_prefill;               // blocks up to the largest bucket, logits of one row
    Workspace ws_decode;                // S rows, logits of every row
    std::vector<float> logits;          // [S][vocab]: each slot's last logits
    std::vector<int> row_pos;           // [S] positions of a decode step's rows
    std::vector<StaticKVCache*> row_caches;  // [S]
    std::vector<char> row_seen;         // [S] duplicate-slot check
    int threads = 1;
    int vocab = 0;

    void check_slot(int slot) const {
        if (slot < 0 || slot >= options.slots)
            throw Error(ErrorKind::input, "slot " + std::to_string(slot) + " outside 0.." +
                                              std::to_string(options.slots - 1));
    }

    void validate(std::span<const int> tokens, int P) const {
        if (tokens.empty()) throw Error(ErrorKind::input, "empty input: no tokens to process");
        for (size_t i = 0; i < tokens.size(); ++i)
            if (tokens[i] < 0 || tokens[i] >= vocab)
                throw Error(ErrorKind::input, "invalid token id " + std::to_string(tokens[i]) +
                                                  " at index " + std::to_string(i) +
                                                  " (vocab size " + std::to_string(vocab) + ")");
        const long long end = (long long)P + (long long)tokens.size();
        if (end > options.session.max_seq)
            throw Error(ErrorKind::capacity,
                        "capacity exceeded: P=" + std::to_string(P) + " + T=" +
                            std::to_string(tokens.size()) + " > K=" +
                            std::to_string(options.session.max_seq) + " (max_seq)");
    }

    float* slot_logits(int slot) { return logits.data() + size_t(slot) * size_t(vocab); }

    // One bucket step of `rest` at the slot's position; returns the rows consumed.
    int run_step(int slot, std::span<const int> rest, const std::vector<int>& buckets) {
        const int P = pos[size_t(slot)];
        const Step st = next_step(buckets, P, int(rest.size()), options.session.max_seq);
        const bool last = st.t == int(rest.size());
        ForwardArgs a;
        a.tokens = rest.data();
        a.t = st.t;
        a.pos0 = P;
        a.n_threads = threads;
        a.logits = last ? ForwardArgs::Logits::last : ForwardArgs::Logits::none;
        forward(*model, *kt, caches[size_t(slot)], ws_prefill, a);
        if (last) std::memcpy(slot_logits(slot), ws_prefill.logits, size_t(vocab) * sizeof(float));
        pos[size_t(slot)] = P + st.t;
        // As Session: from position 0 every slot before pos was just rewritten.
        high_water[size_t(slot)] = P == 0 ? P + st.t : std::max(high_water[size_t(slot)], P + st.t);
        return st.t;
    }

    std::span<const float> run(int slot, std::span<const int> tokens, int P,
                               const std::vector<int>& buckets) {
        check_slot(slot);
        validate(tokens, P);
        pos[size_t(slot)] = P;
        if (P == 0) high_water[size_t(slot)] = 0;
        size_t done = 0;
        while (done < tokens.size()) done += size_t(run_step(slot, tokens.subspan(done), buckets));
        return {slot_logits(slot), size_t(vocab)};
    }
};

BatchSession::BatchSession(std::shared_ptr<const Model> model, const BatchSessionOptions& options)
    : impl_(std::make_unique<Impl>()) {
    Impl& s = *impl_;
    if (!model) throw Error(ErrorKind::config, "batch session needs a model");
    const SessionOptions& so = options.session;
    if (options.slots < 1)
        throw Error(ErrorKind::config, "invalid configuration: slots must be >= 1, got " +
                                           std::to_string(options.slots));
    if (so.max_seq < 1)
        throw Error(ErrorKind::config, "invalid configuration: max_seq must be >= 1, got " +
                                           std::to_string(so.max_seq));
    detail::check_threads(so.threads, "configuration");
    s.model = std::move(model);
    s.options = options;
    s.prefill_buckets = detail::normalize_buckets(so.prefill_buckets, "prefill_buckets", so.max_seq);
    s.append_buckets = detail::normalize_buckets(so.append_buckets, "append_buckets", so.max_seq);
    s.threads = so.threads == 0 ? available_cpus() : so.threads;
    kernels::reserve_threads(s.threads);  // regions never start a thread
    s.kt = &kernels::table();
    const ModelConfig& c = s.model->config();
    s.vocab = c.vocab;
    const int q_max = std::max(s.prefill_buckets.back(), s.append_buckets.back());
    const std::vector<KvLayerSpec> specs = kv_layer_specs(c);
    check_caches_fit(specs, options, q_max);
    const size_t S = size_t(options.slots);
    try {
        s.caches.reserve(S);
        for (size_t i = 0; i < S; ++i)
            s.caches.emplace_back(specs, so.max_seq, so.kv, so.ring_sliding, q_max);
        s.ws_prefill = Workspace(c, s.model->matrix_types(), q_max, s.threads, false);
        s.ws_decode = Workspace(c, s.model->matrix_types(), options.slots, s.threads, true);
        s.logits.assign(S * size_t(c.vocab), 0.0f);
    } catch (const std::bad_alloc&) {
        throw Error(ErrorKind::capacity, "out of memory allocating " + std::to_string(S) +
                                             " slots of max_seq " + std::to_string(so.max_seq) +
                                             " (lower slots or max_seq)");
    }
    s.pos.assign(S, 0);
    s.high_water.assign(S, 0);
    s.row_pos.assign(S, 0);
    s.row_caches.assign(S, nullptr);
    s.row_seen.assign(S, 0);
}

BatchSession::~BatchSession() = default;
BatchSession::BatchSession(BatchSession&&) noexcept = default;
BatchSession& BatchSession::operator=(BatchSession&&) noexcept = default;

std::span<const float> BatchSession::prefill(int slot, std::span<const int> tokens) {
    return impl_->run(slot, tokens, 0, impl_->prefill_buckets);
}

std::span<const float> BatchSession::append(int slot, std::span<const int> tokens) {
    impl_->check_slot(slot);
    return impl_->run(slot, tokens, impl_->pos[size_t(slot)], impl_->append_buckets);
}

int BatchSession::prefill_step(int slot, std::span<const int> rest) {
    Impl& s = *impl_;
    s.check_slot(slot);
    s.validate(rest, s.pos[size_t(slot)]);
    return s.run_step(slot, rest, s.prefill_buckets);
}

void BatchSession::decode(std::span<const int> slots, std::span<const int> tokens) {
    Impl& s = *impl_;
    const int n = int(slots.size());
    if (n < 1 || n > s.options.slots || tokens.size() != slots.size())
        throw Error(ErrorKind::input, "decode needs 1.." + std::to_string(s.options.slots) +
                                          " rows with one token per slot, got " + std::to_string(n) +
                                          " slots and " + std::to_string(tokens.size()) + " tokens");
    std::fill(s.row_seen.begin(), s.row_seen.end(), 0);
    for (int i = 0; i < n; ++i) {
        const int slot = slots[size_t(i)];
        s.check_slot(slot);
        if (s.row_seen[size_t(slot)])
            throw Error(ErrorKind::input, "slot " + std::to_string(slot) + " appears twice in one decode step");
        s.row_seen[size_t(slot)] = 1;
        s.validate(tokens.subspan(size_t(i), 1), s.pos[size_t(slot)]);
        s.row_pos[size_t(i)] = s.pos[size_t(slot)];
        s.row_caches[size_t(i)] = &s.caches[size_t(slot)];
    }
    SequenceRows rows;
    rows.pos = s.row_pos.data();
    rows.caches = s.row_caches.data();
    ForwardArgs a;
    a.tokens = tokens.data();
    a.t = n;
    a.seqs = &rows;
    a.n_threads = s.threads;
    a.logits = ForwardArgs::Logits::all;
    forward(*s.model, *s.kt, s.caches[size_t(slots[0])], s.ws_decode, a);
    for (int i = 0; i < n; ++i) {
        const size_t slot = size_t(slots[size_t(i)]);
        std::memcpy(s.slot_logits(int(slot)), s.ws_decode.logits + size_t(i) * size_t(s.vocab),
                    size_t(s.vocab) * sizeof(float));
        s.pos[slot] += 1;
        s.high_water[slot] = std::max(s.high_water[slot], s.pos[slot]);
    }
}

void BatchSession::reset(int slot) {
    impl_->check_slot(slot);
    impl_->pos[size_t(slot)] = 0;
    impl_->high_water[size_t(slot)] = 0;
}

void BatchSession::rewind(int slot, int n) {
    Impl& s = *impl_;
    s.check_slot(slot);
    const int p = s.pos[size_t(slot)];
    const int limit = s.caches[size_t(slot)].max_rewind(p, s.high_water[size_t(slot)]);
    if (n < 0 || n > limit)
        throw Error(ErrorKind::input, "cannot rewind " + std::to_string(n) + " tokens: position " +
                                          std::to_string(p) + ", at most " + std::to_string(limit) +
                                          " can be rewound");
    s.pos[size_t(slot)] = p - n;
}

void BatchSession::save_prefix(int slot, PrefixPool& pool, int entry) {
    impl_->check_slot(slot);
    PrefixPoolAccess::save(pool, entry, impl_->caches[size_t(slot)], impl_->pos[size_t(slot)]);
}

void BatchSession::load_prefix(int slot, const PrefixPool& pool, int entry, int n) {
    Impl& s = *impl_;
    s.check_slot(slot);
    PrefixPoolAccess::load(pool, entry, n, s.caches[size_t(slot)]);
    s.pos[size_t(slot)] = n;
    s.high_water[size_t(slot)] = n;
}

int BatchSession::slots() const { return impl_->options.slots; }
int BatchSession::pos(int slot) const {
    impl_->check_slot(slot);
    return impl_->pos[size_t(slot)];
}
int BatchSession::max_seq() const { return impl_->options.session.max_seq; }
int BatchSession::vocab() const { return impl_->vocab; }
int BatchSession::threads() const { return impl_->threads; }
std::span<const float> BatchSession::logits(int slot) const {
    impl_->check_slot(slot);
    return {impl_->logits.data() + size_t(slot) * size_t(impl_->vocab), size_t(impl_->vocab)};
}
const Model& BatchSession::model() const { return *impl_->model; }
const BatchSessionOptions& BatchSession::options() const { return impl_->options; }
size_t BatchSession::cache_bytes() const {
    size_t n = 0;
    for (const StaticKVCache& c : impl_->caches) n += c.bytes();
    return n;
}
size_t BatchSession::workspace_bytes() const {
    return impl_->ws_prefill.bytes() + impl_->ws_decode.bytes() + impl_->logits.size() * sizeof(float);
}

// ---------------------------------------------------------------------------
// BatchGenerator
// ---------------------------------------------------------------------------

namespace {

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
    std::array<TokenLogprob, kMaxLogprobs> last_top{};  // of the last generated token
    std::shared_ptr<const Constraint> constraint;
    ConstraintCursor cursor;    // mask buffer [vocab / 64] made here
    StopReason reason = StopReason::max_tokens;
    GenerateStats stats;
    Clock::time_point t_submit, t_first;
    bool fresh = false;         // got its first token in this step: decodes from the next one

    Slot(int vocab, int max_seq)
        : tokens(size_t(max_seq) + 1), sampler(vocab, SamplingOptions{}), logprobs(size_t(max_seq) + 1),
          cursor(vocab) {}
};

}  // namespace

struct BatchGenerator::Impl {
    BatchSession session;
    std::vector<Slot> slots;
    int prefill_budget = 0;
    uint64_t next_order = 0;
    int finished_now = 0;
    std::vector<int> rows, row_tokens;  // [S]

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
        ++finished_now;
    }

    // The slot's next token from its logits (touches only the slot's sampler).
    int pick(int slot) {
        Slot& s = slots[size_t(slot)];
        const std::span<const int> recent(s.tokens.data(), size_t(s.n_prompt + s.n_gen));
        const std::span<const uint64_t> allowed =
            s.cursor.active() ? s.cursor.mask(std::span<const int>(s.stop_ids.data(), size_t(s.n_stop)))
                              : std::span<const uint64_t>();
        const int id = s.sampler.sample(session.logits(slot), recent, allowed);
        s.cursor.advance(id);
        if (s.top_n >= 0)
            s.logprobs[size_t(s.n_gen)] =
                token_logprob(session.logits(slot), id, std::span<TokenLogprob>(s.last_top.data(), size_t(s.top_n)));
        return id;
    }

    // Appends a sampled token, with the stop rules of generate().
    void record(int slot, int id) {
        Slot& s = slots[size_t(slot)];
        if (s.n_gen == 0) {
            s.stats.first_token_seconds = seconds_since(s.t_submit);
            s.t_first = Clock::now();
        }
        s.tokens[size_t(s.n_prompt + s.n_gen)] = id;
        ++s.n_gen;
        if (std::find(s.stop_ids.begin(), s.stop_ids.begin() + s.n_stop, id) != s.stop_ids.begin() + s.n_stop)
            finish(s, StopReason::eos);
        else if (s.n_gen == s.max_tokens)
            finish(s, StopReason::max_tokens);
        else if (session.pos(slot) >= session.max_seq())
            finish(s, StopReason::capacity);
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
    g.rows.assign(size_t(options.slots), 0);
    g.row_tokens.assign(size_t(options.slots), 0);
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
                           std::shared_ptr<const Constraint> constraint) {
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
    if (constraint && stop_ids.empty())
        throw Error(ErrorKind::config, "a constrained generation needs a stop id (EOS)");
    Slot& s = g.slots[size_t(slot)];
    s.sampler.reset(sampling);
    s.top_n = logprobs;
    const int vocab = g.session.vocab(), K = g.session.max_seq();
    if (prompt.empty()) throw Error(ErrorKind::input, "empty input: no tokens to process");
    for (size_t i = 0; i < prompt.size(); ++i)
        if (prompt[i] < 0 || prompt[i] >= vocab)
            throw Error(ErrorKind::input, "invalid token id " + std::to_string(prompt[i]) + " at index " +
                                              std::to_string(i) + " (vocab size " + std::to_string(vocab) + ")");
    if (prompt.size() > size_t(K))
        throw Error(ErrorKind::capacity, "capacity exceeded: P=0 + T=" + std::to_string(prompt.size()) +
                                             " > K=" + std::to_string(K) + " (max_seq)");
    s.cursor.start(constraint.get());
    s.constraint = std::move(constraint);
    std::copy(prompt.begin(), prompt.end(), s.tokens.begin());
    std::copy(stop_ids.begin(), stop_ids.end(), s.stop_ids.begin());
    s.n_stop = int(stop_ids.size());
    s.tag = tag;
    s.order = g.next_order++;
    s.n_prompt = int(prompt.size());
    s.n_prefilled = 0;
    s.n_gen = 0;
    s.max_tokens = max_tokens;
    s.reason = StopReason::max_tokens;
    s.stats = GenerateStats{};
    s.stats.prompt_tokens = s.n_prompt;
    s.t_submit = Clock::now();
    s.fresh = false;
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
    g.finished_now = 0;
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
            g.record(slot, g.pick(slot));
    }
    // One decode row for every running sequence that already had its first token.
    int n = 0;
    for (size_t i = 0; i < g.slots.size(); ++i) {
        Slot& s = g.slots[i];
        if (s.state == Slot::State::decoding && !s.fresh) {
            g.rows[size_t(n)] = int(i);
            g.row_tokens[size_t(n)] = s.tokens[size_t(s.n_prompt + s.n_gen - 1)];
            ++n;
        }
        s.fresh = false;
    }
    if (n > 0) {
        g.session.decode(std::span<const int>(g.rows.data(), size_t(n)),
                         std::span<const int>(g.row_tokens.data(), size_t(n)));
        // Rows sample independently (each slot has its own sampler): in
        // parallel when there are enough of them to pay for waking the team.
        kernels::parallel_for(n >= 4 ? g.session.threads() : 1, n,
                              [&](int i, const kernels::Team&) { g.row_tokens[size_t(i)] = g.pick(g.rows[size_t(i)]); });
        for (int i = 0; i < n; ++i) g.record(g.rows[size_t(i)], g.row_tokens[size_t(i)]);
    }
    return g.finished_now;
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
    return {s.last_top.data(), s.top_n > 0 && s.n_gen > 0 ? size_t(s.top_n) : 0};
}
StopReason BatchGenerator::reason(int slot) const { return impl_->at(slot).reason; }
bool BatchGenerator::complete(int slot) const { return impl_->at(slot).cursor.complete(); }
const GenerateStats& BatchGenerator::stats(int slot) const { return impl_->at(slot).stats; }

void BatchGenerator::stop(int slot, StopReason reason) {
    Slot& s = impl_->at(slot);
    if (s.state == Slot::State::prefilling || s.state == Slot::State::decoding) {
        impl_->finish(s, reason);
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
