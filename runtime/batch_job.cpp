// The batch job loop (read and check the input, skip what the output holds,
// tokenize, feed an engine, write one line per result) and the sequential
// engine that runs one request at a time through generate().
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <optional>

#include "cache/kv_cache.hpp"
#include "kernels/kernels.hpp"
#include "model/graph.hpp"
#include "model/model.hpp"
#include "staticlm/batch.hpp"
#include "staticlm/batch_session.hpp"
#include "staticlm/chat_template.hpp"
#include "staticlm/constrain.hpp"
#include "staticlm/model.hpp"
#include "staticlm/prefix_pool.hpp"
#include "staticlm/tokenizer.hpp"
#include "internal.hpp"

namespace staticlm {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

// An engine's prefix pool and its rule: which prompt rows are computed exactly
// (every row as in any other split: no attention step whose keys are split
// over threads, kernels::attention_rows_exact), the longest prefix it holds,
// and the work counters.
class PrefixShare {
public:
    PrefixShare(std::shared_ptr<const Model> model, const SessionOptions& so, int threads, int pool_tokens)
        : model_(std::move(model)), so_(so), threads_(threads) {
        prefill_ = detail::normalize_buckets(so.prefill_buckets, "prefill_buckets", so.max_seq);
        append_ = detail::normalize_buckets(so.append_buckets, "append_buckets", so.max_seq);
        if (pool_tokens <= 0) return;
        pool_.emplace(model_, so, pool_tokens);
        limit_ = std::min(pool_tokens, so.max_seq - 1);
        if (so.ring_sliding) {
            // A ring keeps window + Q_max positions: a longer prefix would be
            // overwritten in the slot that computes it before it is saved.
            const int q_max = std::max(prefill_.back(), append_.back());
            for (const LayerConfig& lc : model_->config().layers)
                if (lc.window > 0) limit_ = std::min<int>(limit_, int(std::min<long>(so.max_seq, long(lc.window) + q_max)));
        }
    }

    int limit() const { return limit_; }
    PrefixPool& pool() { return *pool_; }

    bool exact(int P, int T, bool scoring) const {
        if (T <= 0) return true;
        if (P < 0 || P + T > so_.max_seq) return false;
        const std::vector<int>& buckets = P == 0 ? prefill_ : scoring ? append_ : prefill_;
        for (const Step& st : Session::plan(buckets, P, T, so_.max_seq))
            for (const LayerConfig& lc : model_->config().layers)
                if (!kernels::attention_rows_exact(st.t, lc.n_heads, lc.n_kv_heads, threads_)) return false;
        return true;
    }

    // The filled pool entry of a request's prefix, made with fill(entry) (a
    // prefill of the prefix tokens and a save) when it is new; -1 when the
    // request has none, it does not match the prompt, or the pool has no room.
    template <class Fill>
    int acquire(const EngineRequest& r, Fill&& fill) {
        const EnginePrefix& p = r.prefix;
        if (!pool_ || p.use <= 0 || !p.tokens || p.use > int(p.tokens->size()) || p.use >= int(r.prompt.size()) ||
            !std::equal(p.tokens->begin(), p.tokens->begin() + p.use, r.prompt.begin()))
            return -1;
        ++tick_;
        int e = pool_->find(p.key);
        if (e >= 0) {
            touch(p.key);
            return e;
        }
        // A full pool gives up its least recently used entries: a request that
        // names one later computes it again (the same K/V, bit for bit).
        while ((e = pool_->add(p.key, int(p.tokens->size()))) < 0 && !recency_.empty()) {
            const auto lru = std::min_element(recency_.begin(), recency_.end(),
                                              [](const auto& a, const auto& b) { return a.second < b.second; });
            forget(lru->first);
        }
        if (e < 0) return -1;
        try {
            fill(e);
        } catch (...) {
            pool_->remove(e);
            throw;
        }
        touch(p.key);
        counters.prompt_positions += long(p.tokens->size());
        ++counters.prefixes;
        return e;
    }

    // After the request's last use of its prefix: frees the entry when no later request names it.
    void release(const EnginePrefix& p) {
        if (!pool_ || !p.last) return;
        forget(p.key);
    }

    bool held(uint64_t key) const { return pool_ && pool_->find(key) >= 0; }

    EngineCounters counters;

private:
    void touch(uint64_t key) {
        for (auto& [k, t] : recency_)
            if (k == key) {
                t = tick_;
                return;
            }
        recency_.emplace_back(key, tick_);
    }
    void forget(uint64_t key) {
        const int e = pool_->find(key);
        if (e >= 0) pool_->remove(e);
        std::erase_if(recency_, [&](const auto& kt) { return kt.first == key; });
    }

    std::shared_ptr<const Model> model_;
    SessionOptions so_;
    int threads_ = 1;
    std::vector<int> prefill_, append_;
    std::optional<PrefixPool> pool_;
    int limit_ = 0;
    uint64_t tick_ = 0;
    std::vector<std::pair<uint64_t, uint64_t>> recency_;  // (key, last acquire) of the live entries
};

// Scoring requests of both engines: one Session with the engine's options and
// all_logits, made at the first scoring request, so scores do not depend on
// the engine, the batch or the other requests. With a shared prefix the
// prompt is the prefix's K/V from the pool and the rest appended.
class Scorer {
public:
    Scorer(std::shared_ptr<const Model> model, const SessionOptions& options) : model_(std::move(model)), options_(options) {
        options_.all_logits = true;
    }

    EngineOutcome run(const EngineRequest& r, Clock::time_point submitted, PrefixShare& share) {
        EngineOutcome out;
        out.tag = r.tag;
        try {
            if (!session_) session_.emplace(model_, options_);
            Session& s = *session_;
            const int e = share.acquire(r, [&](int entry) {
                s.prefill(*r.prefix.tokens);
                s.save_prefix(share.pool(), entry);
            });
            const long n_prompt = long(r.prompt.size());
            if (e >= 0) {
                const int n = r.prefix.use;
                const std::span<const int> rest = std::span<const int>(r.prompt).subspan(size_t(n));
                out.scores = score_continuations_with(s, r.prompt, r.score, [&] {
                    s.load_prefix(share.pool(), e, n);
                    share.counters.shared_positions += n;
                    share.counters.prompt_positions += n_prompt - n;
                    return s.append(rest);
                });
            } else {
                out.scores = score_continuations_with(s, r.prompt, r.score, [&] {
                    share.counters.prompt_positions += n_prompt;
                    return s.prefill(r.prompt);
                });
            }
            out.result.stats.prompt_tokens = int(r.prompt.size());
        } catch (const Error& e) {
            out.failed = true;
            out.error_kind = e.kind();
            out.error = e.what();
        }
        share.release(r.prefix);
        out.total_seconds = seconds_since(submitted);
        return out;
    }

private:
    std::shared_ptr<const Model> model_;
    SessionOptions options_;
    std::optional<Session> session_;
};

class SequentialEngine final : public BatchEngine {
public:
    SequentialEngine(std::shared_ptr<const Model> model, const SessionOptions& options)
        : session_(model, options), tokenizer_(session_.model().tokenizer()), scorer_(model, options),
          share_(model, options, session_.threads(), 0) {}

    EngineCounters counters() const override { return share_.counters; }

    int capacity() const override { return 1; }
    int active() const override { return pending_ ? 1 : 0; }

    void submit(EngineRequest request) override {
        if (pending_) throw Error(ErrorKind::config, "sequential engine: submit while busy");
        pending_ = std::move(request);
        submitted_ = Clock::now();
    }

    void step(std::vector<EngineOutcome>& finished) override {
        if (!pending_) return;
        EngineRequest r = std::move(*pending_);
        pending_.reset();
        if (!r.score.empty()) {
            finished.push_back(scorer_.run(r, submitted_, share_));
            return;
        }
        EngineOutcome out;
        out.tag = r.tag;
        share_.counters.prompt_positions += long(r.prompt.size());
        try {
            session_.reset();
            out.result = generate(session_, tokenizer_, r.prompt, r.options);
        } catch (const Error& e) {
            out.failed = true;
            out.error_kind = e.kind();
            out.error = e.what();
        }
        out.total_seconds = seconds_since(submitted_);
        finished.push_back(std::move(out));
    }

    bool cancel(uint64_t tag, EngineOutcome& out) override {
        if (!pending_ || pending_->tag != tag || !pending_->score.empty()) return false;
        out = EngineOutcome{};
        out.tag = tag;
        out.result.reason = StopReason::aborted;
        out.result.stats.prompt_tokens = int(pending_->prompt.size());
        out.total_seconds = seconds_since(submitted_);
        pending_.reset();
        return true;
    }

private:
    Session session_;
    const Tokenizer* tokenizer_;
    Scorer scorer_;
    PrefixShare share_;  // no pool: the reference engine shares nothing
    std::optional<EngineRequest> pending_;
    Clock::time_point submitted_;
};


// Continuous batching on a BatchGenerator: token ids, stop ids, max_tokens and
// capacity are the generator's; the text, stop strings and results are built
// here after each step, exactly as generate() builds them.
class BatchedEngine final : public BatchEngine {
public:
    BatchedEngine(std::shared_ptr<const Model> model, const BatchSessionOptions& options, int prefill_budget,
                  int pool_tokens)
        : gen_(model, options, prefill_budget), tokenizer_(model->tokenizer()), eos_(model->config().eos_ids),
          scorer_(model, options.session), share_(model, options.session, gen_.session().threads(), pool_tokens) {
        texts_.resize(size_t(gen_.capacity()));
        if (tokenizer_)
            for (Text& t : texts_) t.stream = std::make_unique<StreamDecoder>(*tokenizer_);
    }

    int capacity() const override { return gen_.capacity(); }
    int active() const override { return gen_.active() + int(scored_.size()); }
    int prefix_limit() const override { return share_.limit(); }
    bool prompt_rows_exact(int P, int T, bool scoring) const override { return share_.exact(P, T, scoring); }
    bool prefix_held(uint64_t key) const override { return share_.held(key); }
    EngineCounters counters() const override { return share_.counters; }

    StepTimes measure_steps() override {
        if (gen_.active() > 0) throw Error(ErrorKind::config, "measure_steps needs an idle engine");
        BatchSession& bs = gen_.session();
        StepTimes st;
        int q = 1;
        for (int b : bs.options().session.prefill_buckets) q = std::max(q, std::min(b, bs.max_seq()));
        const int S = bs.slots();
        const std::vector<int> ids(size_t(std::max(q, S)), std::min(1, bs.vocab() - 1));
        std::vector<int> rows(static_cast<size_t>(S));
        for (int i = 0; i < S; ++i) rows[size_t(i)] = i;
        for (int round = 0; round < 2; ++round) {  // the first warms caches and threads
            auto t0 = Clock::now();
            bs.prefill(0, std::span<const int>(ids.data(), size_t(q)));
            st.prefill_rows = q;
            st.prefill_seconds = seconds_since(t0);
            for (int i = 0; i < S; ++i) bs.reset(i);
            if (bs.max_seq() >= 2) bs.decode(rows, std::span<const int>(ids.data(), size_t(S)));
            t0 = Clock::now();
            bs.decode(rows, std::span<const int>(ids.data(), size_t(S)));
            st.decode_rows = S;
            st.decode_seconds = seconds_since(t0);
            for (int i = 0; i < S; ++i) bs.reset(i);
        }
        return st;
    }

    void submit(EngineRequest r) override {
        const auto t0 = Clock::now();
        if (!r.score.empty()) {  // scored at once, on the scorer's own session
            scored_.push_back(scorer_.run(r, t0, share_));
            return;
        }
        struct Release {  // the prefix entry is freed after its last use, whatever happens
            PrefixShare& share;
            const EnginePrefix& p;
            ~Release() { share.release(p); }
        } release{share_, r.prefix};
        for (const std::string& s : r.options.stop_strings)
            if (s.empty()) throw Error(ErrorKind::config, "empty stop string");
        const std::vector<int>& stop_ids = r.options.stop_ids.empty() ? eos_ : r.options.stop_ids;
        const int slot = gen_.submit(r.tag, r.prompt, r.options.sampling, r.options.max_tokens, stop_ids,
                                     r.options.logprobs, r.options.constraint, r.options.speculation);
        const long n_prompt = long(r.prompt.size());
        try {
            BatchSession& bs = gen_.session();
            const int e = share_.acquire(r, [&](int entry) {
                bs.prefill(slot, *r.prefix.tokens);
                bs.save_prefix(slot, share_.pool(), entry);
            });
            if (e >= 0) {
                gen_.start_after_prefix(slot, share_.pool(), e, r.prefix.use);
                share_.counters.shared_positions += r.prefix.use;
                share_.counters.prompt_positions += n_prompt - r.prefix.use;
            } else {
                share_.counters.prompt_positions += n_prompt;
            }
        } catch (...) {
            gen_.stop(slot, StopReason::aborted);
            gen_.release(slot);
            throw;
        }
        Text& t = texts_[size_t(slot)];
        t.text.clear();
        t.emitted = 0;
        t.seen = 0;
        t.top_n = r.options.logprobs;
        t.top.clear();
        t.stops = std::move(r.options.stop_strings);
        t.submitted = t0;
        if (t.stream) t.stream->reset();
    }

    void step(std::vector<EngineOutcome>& finished) override {
        for (EngineOutcome& o : scored_) finished.push_back(std::move(o));
        scored_.clear();
        if (gen_.active() == 0) return;
        gen_.step();
        for (int slot = 0; slot < gen_.capacity(); ++slot) {
            if (!gen_.in_use(slot)) continue;
            Text& t = texts_[size_t(slot)];
            const std::span<const int> ids = gen_.generated(slot);
            if (t.top_n > 0 && t.top.size() < ids.size() * size_t(t.top_n)) {
                // The alternatives of the tokens this step added (one, or with speculation several).
                const std::span<const TokenLogprob> top = gen_.step_top_logprobs(slot);
                t.top.insert(t.top.end(), top.begin(), top.end());
            }
            while (t.seen < ids.size() && t.stream) {
                const int id = ids[t.seen++];
                // generate() ends on a stop id before the text sees it.
                if (gen_.finished(slot) && gen_.reason(slot) == StopReason::eos && t.seen == ids.size()) break;
                t.text += t.stream->push(id);
                bool stopped = false;
                for (const std::string& s : t.stops) {
                    const size_t at = t.text.find(s, t.emitted > s.size() ? t.emitted - s.size() : 0);
                    if (at != std::string::npos) {
                        t.text.resize(at);
                        stopped = true;
                    }
                }
                const size_t safe = stopped ? t.text.size() : detail::safe_prefix(t.text, t.emitted, t.stops);
                t.emitted = std::max(t.emitted, safe);
                if (stopped) {
                    // A speculative step may have added tokens after this one: they go.
                    gen_.stop(slot, StopReason::stop_string, int(t.seen));
                    break;
                }
            }
            if (gen_.finished(slot)) finished.push_back(take(slot));
        }
    }

    bool cancel(uint64_t tag, EngineOutcome& out) override {
        for (int slot = 0; slot < gen_.capacity(); ++slot)
            if (gen_.in_use(slot) && !gen_.finished(slot) && gen_.tag(slot) == tag) {
                // step() turned every generated id into text already.
                gen_.stop(slot, StopReason::aborted);
                out = take(slot);
                return true;
            }
        return false;
    }

private:
    // The outcome of a finished slot, which is released.
    EngineOutcome take(int slot) {
        Text& t = texts_[size_t(slot)];
        const std::span<const int> ids = gen_.generated(slot);
        EngineOutcome o;
        o.tag = gen_.tag(slot);
        o.result.tokens.assign(ids.begin(), ids.end());
        if (t.top_n >= 0) {
            const std::span<const float> lp = gen_.logprobs(slot);
            o.result.logprobs.assign(lp.begin(), lp.end());
            o.result.top_n = t.top_n;
            t.top.resize(ids.size() * size_t(std::max(t.top_n, 0)));  // a stop string may have cut the step
            o.result.top_logprobs = std::move(t.top);
            t.top = {};
        }
        o.result.reason = gen_.reason(slot);
        o.result.complete = gen_.complete(slot);
        o.result.stats = gen_.stats(slot);
        if (t.stream && o.result.reason != StopReason::stop_string) t.text += t.stream->flush();
        o.result.text = std::move(t.text);
        t.text = std::string();
        o.total_seconds = seconds_since(t.submitted);
        gen_.release(slot);
        return o;
    }

    struct Text {
        std::unique_ptr<StreamDecoder> stream;
        std::string text;
        size_t emitted = 0;
        size_t seen = 0;  // generated ids already turned into text
        std::vector<std::string> stops;
        Clock::time_point submitted;
        int top_n = -1;                 // logprobs
        std::vector<TokenLogprob> top;  // [generated][top_n] so far
    };
    BatchGenerator gen_;
    const Tokenizer* tokenizer_;
    std::vector<int> eos_;
    std::vector<Text> texts_;
    Scorer scorer_;
    PrefixShare share_;
    std::vector<EngineOutcome> scored_;  // scoring outcomes the next step() returns
};

FinishReason finish_of(StopReason reason) {
    switch (reason) {
        case StopReason::eos:
        case StopReason::stop_string: return FinishReason::stop;
        case StopReason::max_tokens: return FinishReason::length;
        case StopReason::capacity: return FinishReason::capacity;
        case StopReason::aborted: return FinishReason::error;  // a batch is not interrupted per request
    }
    return FinishReason::error;
}

// Prompt ids as `staticlm generate` and `staticlm chat` make them: a prompt
// with BOS (an empty one is BOS alone); messages rendered with the chat
// template, BOS as text in the template or its id first (Chat::turn_ids).
std::vector<int> request_ids(const BatchRequest& r, const Model& model, const Tokenizer& tok,
                             ChatFormat format, const ChatOptions& chat) {
    std::vector<int> ids;
    if (r.chat) {
        if (format.chat_template().bos_from_tokenizer && model.config().add_bos && tok.bos_id() >= 0)
            ids.push_back(tok.bos_id());
        ChatOptions o = chat;
        if (r.thinking >= 0) o.thinking = r.thinking == 1;
        const std::vector<int> enc =
            tok.encode(render_chat(format, r.messages, o, /*add_generation_prompt=*/true), false);
        ids.insert(ids.end(), enc.begin(), enc.end());
    } else {
        ids = tok.encode(r.prompt, /*add_special=*/true);
    }
    if (ids.empty()) {
        if (tok.bos_id() < 0) throw Error(ErrorKind::input, "empty prompt and no BOS token");
        ids.push_back(tok.bos_id());
    }
    return ids;
}

}  // namespace

std::unique_ptr<BatchEngine> make_sequential_engine(std::shared_ptr<const Model> model,
                                                    const SessionOptions& session) {
    return std::make_unique<SequentialEngine>(std::move(model), session);
}

BatchMemory batch_memory(const Model& model, const BatchSessionOptions& options, const PrefixOptions& prefix) {
    const SessionOptions& so = options.session;
    if (so.max_seq < 1) throw Error(ErrorKind::config, "max_seq must be >= 1, got " + std::to_string(so.max_seq));
    if (options.slots < 1) throw Error(ErrorKind::config, "slots must be >= 1, got " + std::to_string(options.slots));
    if (prefix.pool_tokens < -1)
        throw Error(ErrorKind::config, "prefix pool must be -1 (max_seq), 0 (off) or a token count, got " +
                                           std::to_string(prefix.pool_tokens));
    const std::vector<int> pb = detail::normalize_buckets(so.prefill_buckets, "prefill_buckets", so.max_seq);
    const std::vector<int> ab = detail::normalize_buckets(so.append_buckets, "append_buckets", so.max_seq);
    const int q_max = std::max(pb.back(), ab.back());
    const std::vector<KvLayerSpec> specs = kv_layer_specs(model.config());
    const uint64_t one = StaticKVCache::bytes_needed(specs, so.max_seq, so.kv, so.ring_sliding, q_max);
    constexpr uint64_t kHuge = UINT64_MAX / 4;  // "more than any machine": sums stay exact below 2^64
    BatchMemory m;
    uint64_t slots_bytes = 0;
    m.slot_caches = __builtin_mul_overflow(one, uint64_t(options.slots), &slots_bytes) ? kHuge : std::min(slots_bytes, kHuge);
    m.scorer_cache = std::min(one, kHuge);
    m.pool_tokens = prefix.pool_tokens < 0 ? so.max_seq : prefix.pool_tokens;
    m.pool = std::min(PrefixPool::bytes_needed(model, so.kv, m.pool_tokens), kHuge);
    m.budget = prefix.memory_budget;
    if (m.budget == 0) {
        const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
        if (pages > 0 && page > 0) m.budget = uint64_t(pages) * uint64_t(page);
    }
    return m;
}

void check_batch_memory(const BatchMemory& m) {
    if (m.budget == 0 || m.total() <= m.budget) return;
    const std::string budget = std::to_string(m.budget) + " bytes (--memory; by default this machine's memory)";
    const std::string caches = std::to_string(m.slot_caches) + " bytes of slot KV caches + " +
                               std::to_string(m.scorer_cache) + " of the scoring session";
    if (m.pool > 0 && m.total() - m.pool <= m.budget)
        throw Error(ErrorKind::capacity,
                    "the prefix pool of " + std::to_string(m.pool_tokens) + " tokens (" + std::to_string(m.pool) +
                        " bytes) does not fit: with " + caches + " the job needs " + std::to_string(m.total()) +
                        " bytes, more than the budget of " + budget + "; lower --prefix-pool (0 turns sharing off)");
    throw Error(ErrorKind::capacity, "the batch does not fit: " + caches + " + " + std::to_string(m.pool) +
                                         " of the prefix pool = " + std::to_string(m.total()) +
                                         " bytes, more than the budget of " + budget +
                                         "; lower --slots, --max-seq or --prefix-pool");
}

std::unique_ptr<BatchEngine> make_batched_engine(std::shared_ptr<const Model> model,
                                                 const BatchSessionOptions& options, int prefill_budget,
                                                 const PrefixOptions& prefix) {
    if (!model) throw Error(ErrorKind::config, "batch engine needs a model");
    const BatchMemory m = batch_memory(*model, options, prefix);
    check_batch_memory(m);
    return std::make_unique<BatchedEngine>(std::move(model), options, prefill_budget, m.pool_tokens);
}

std::unique_ptr<BatchEngine> make_batched_engine(std::shared_ptr<const Model> model,
                                                 const BatchSessionOptions& options, const PrefixOptions& prefix) {
    return make_batched_engine(std::move(model), options, 0, prefix);
}

namespace {

// A pending request ready for the engine: its ids, or the error it ends with.
struct Prepared {
    size_t idx = 0;  // into BatchJob::Impl::requests
    bool error = false;
    ErrorKind kind = ErrorKind::input;
    std::string message;
    EngineRequest er;
};

// Tokenizes every pending request (before any forward pass, so the shared
// prefixes can be found): prompt ids as `staticlm generate` / `chat` make
// them, scoring lines' ids by the boundary rule, chat stop ids.
std::vector<Prepared> prepare(const std::vector<BatchRequest>& requests, const std::vector<size_t>& pending,
                              const Model& model, const Tokenizer& tok, const BatchJobOptions& options) {
    std::vector<Prepared> out(pending.size());
    for (size_t k = 0; k < pending.size(); ++k) {
        Prepared& p = out[k];
        p.idx = pending[k];
        const BatchRequest& q = requests[p.idx];
        if (q.failed) {
            p.error = true;
            p.kind = q.error_kind;
            p.message = q.error;
            continue;
        }
        EngineRequest& er = p.er;
        er.tag = p.idx;
        er.options = q.options;
        if (q.score.empty() && q.chat && er.options.stop_ids.empty()) {
            // As Chat::reply: the model's EOS ids and the template's end-of-turn tokens.
            er.options.stop_ids = model.config().eos_ids;
            for (std::string_view st : options.chat_format.chat_template().stop_tokens) {
                const int id = st.empty() ? -1 : tok.token_id(st);
                if (id >= 0 && std::find(er.options.stop_ids.begin(), er.options.stop_ids.end(), id) ==
                                   er.options.stop_ids.end())
                    er.options.stop_ids.push_back(id);
            }
        }
        try {
            if (!q.score.empty()) {  // scoring: the prompt, and the continuations' ids after it
                ScoreIds ids = score_ids(tok, q.prompt, q.score);
                er.prompt = std::move(ids.prompt);
                er.score = std::move(ids.continuations);
            } else {
                er.prompt = request_ids(q, model, tok, options.chat_format, options.chat);
            }
        } catch (const Error& e) {
            p.error = true;
            p.kind = e.kind();
            p.message = "line " + std::to_string(q.line) + ": " + e.what();
        }
    }
    return out;
}

size_t common_prefix(const std::vector<int>& a, const std::vector<int>& b) {
    const size_t n = std::min(a.size(), b.size());
    size_t i = 0;
    while (i < n && a[i] == b[i]) ++i;
    return i;
}

// Finds the shared prefixes and sets each request's EnginePrefix; returns the
// order to submit in (the requests of a prefix one after another, where its
// first one stood, so that one pool entry at a time is live) and the plan.
//
// The prompts are sorted; a run of neighbours whose common prefix with the
// next is >= min_len is a group, its prefix the shortest of those (capped at
// the engine's limit). A request uses the longest n <= that prefix, with at
// least one prompt token left, for which its rows are computed exactly with
// and without the prefix (BatchEngine::prompt_rows_exact: its whole prompt
// from 0, and the rest from n); a group needs two such requests.
std::vector<size_t> plan_prefixes(std::vector<Prepared>& items, const BatchEngine& engine, int min_len,
                                  uint64_t key_base, BatchJob::Plan& plan) {
    std::vector<size_t> order;
    order.reserve(items.size());
    for (const Prepared& p : items) {
        if (p.error) continue;
        ++plan.requests;
        const long n = long(p.er.prompt.size());
        plan.prompt_positions += n;
        plan.shared_prompt_positions += n;
        if (!p.er.score.empty()) {
            ++plan.scoring;
            for (const std::vector<int>& c : p.er.score) plan.score_positions += long(c.size());
        } else {
            plan.max_new_tokens += std::max(0, p.er.options.max_tokens);
        }
    }
    const int limit = engine.prefix_limit();
    std::vector<long> group(items.size(), -1);
    long n_groups = 0;
    if (limit > 0 && min_len > 0) {
        std::vector<size_t> cand;
        for (size_t i = 0; i < items.size(); ++i)
            if (!items[i].error && items[i].er.prompt.size() > size_t(min_len)) cand.push_back(i);
        std::stable_sort(cand.begin(), cand.end(),
                         [&](size_t a, size_t b) { return items[a].er.prompt < items[b].er.prompt; });
        for (size_t b = 0; b < cand.size();) {
            size_t e = b + 1;
            size_t shared = SIZE_MAX;
            while (e < cand.size()) {
                const size_t l = common_prefix(items[cand[e - 1]].er.prompt, items[cand[e]].er.prompt);
                if (l < size_t(min_len)) break;
                shared = std::min(shared, l);
                ++e;
            }
            const size_t run_begin = b;
            b = e;
            if (e - run_begin < 2) continue;
            const int len = int(std::min(shared, size_t(limit)));
            if (len < min_len) continue;
            std::vector<std::pair<size_t, int>> users;  // (item, n)
            for (size_t k = run_begin; k < e; ++k) {
                const EngineRequest& er = items[cand[k]].er;
                const int N = int(er.prompt.size());
                const bool scoring = !er.score.empty();
                if (!engine.prompt_rows_exact(0, N, scoring)) continue;
                // Shorter prefixes leave a longer rest; a few tries find one whose steps are exact.
                for (int n = std::min(len, N - 1), tries = 0; n >= min_len && tries < 64; --n, ++tries)
                    if (engine.prompt_rows_exact(n, N - n, scoring)) {
                        users.emplace_back(cand[k], n);
                        break;
                    }
            }
            if (users.size() < 2) continue;
            int entry_len = 0;
            for (const auto& u : users) entry_len = std::max(entry_len, u.second);
            if (!engine.prompt_rows_exact(0, entry_len, false)) continue;
            const std::vector<int>& first = items[users.front().first].er.prompt;
            auto tokens = std::make_shared<const std::vector<int>>(first.begin(), first.begin() + entry_len);
            const long key = n_groups++;
            for (const auto& [i, n] : users) {
                items[i].er.prefix.key = key_base + uint64_t(key);
                items[i].er.prefix.tokens = tokens;
                items[i].er.prefix.use = n;
                group[i] = key;
                ++plan.sharing_requests;
                plan.shared_prompt_positions -= n;
            }
            plan.shared_prompt_positions += entry_len;
            plan.longest_prefix = std::max(plan.longest_prefix, entry_len);
            ++plan.prefixes;
        }
    }
    // A group's requests go together, at its first one's place; the last frees the entry.
    std::vector<std::vector<size_t>> members(static_cast<size_t>(n_groups));
    for (size_t i = 0; i < items.size(); ++i)
        if (group[i] >= 0) members[size_t(group[i])].push_back(i);
    for (size_t i = 0; i < items.size(); ++i) {
        if (group[i] < 0) {
            order.push_back(i);
            continue;
        }
        std::vector<size_t>& m = members[size_t(group[i])];
        if (m.empty()) continue;  // already placed
        items[m.back()].er.prefix.last = true;
        order.insert(order.end(), m.begin(), m.end());
        m.clear();
    }
    return order;
}

}  // namespace

PrefixPlanner::PrefixPlanner(int min_len) : min_len_(min_len) {
    if (min_len < 1) throw Error(ErrorKind::config, "the shortest shared prefix must be >= 1 token, got " +
                                                        std::to_string(min_len));
}

void PrefixPlanner::plan(EngineRequest& r, const BatchEngine& engine) {
    r.prefix = EnginePrefix{};
    const int limit = engine.prefix_limit();
    const int N = int(r.prompt.size());
    if (limit <= 0 || !r.score.empty() || N <= min_len_ || !engine.prompt_rows_exact(0, N, false)) return;
    std::erase_if(entries_, [&](const Entry& e) { return !engine.prefix_held(e.key); });
    const Entry* best = nullptr;
    size_t best_len = 0;
    for (const Entry& e : entries_) {
        const size_t n = std::min(e.tokens->size(), r.prompt.size());
        size_t l = 0;
        while (l < n && (*e.tokens)[l] == r.prompt[l]) ++l;
        if (l > best_len) best = &e, best_len = l;
    }
    // The longest n <= len, at least min_len and one token short of the prompt,
    // whose rest is computed exactly (and, for a new entry, the entry too).
    auto exact_n = [&](int len, bool entry) {
        for (int n = std::min(len, N - 1), tries = 0; n >= min_len_ && tries < 64; --n, ++tries)
            if (engine.prompt_rows_exact(n, N - n, false) && (!entry || engine.prompt_rows_exact(0, n, false)))
                return n;
        return 0;
    };
    if (best && best_len >= size_t(min_len_)) {
        if (const int n = exact_n(int(best_len), false)) r.prefix = {best->key, best->tokens, n, false};
        return;
    }
    const int n = exact_n(limit, true);
    if (n == 0) return;
    Entry e{next_key_++, std::make_shared<const std::vector<int>>(r.prompt.begin(), r.prompt.begin() + n)};
    r.prefix = {e.key, e.tokens, n, false};
    entries_.push_back(std::move(e));
}

struct BatchJob::Impl {
    BatchJobOptions options;
    int input_lines = 0;
    std::vector<BatchRequest> requests;  // this shard's, in input order
    std::vector<size_t> pending;         // indices into requests not yet in the output
    std::optional<ResultsWriter> writer;
};

BatchJob::BatchJob(BatchJobOptions options) : impl_(std::make_unique<Impl>()) {
    Impl& j = *impl_;
    j.options = std::move(options);
    const ShardSpec shard = j.options.shard;
    if (shard.count < 1 || shard.index < 0 || shard.index >= shard.count)
        throw Error(ErrorKind::config, "shard " + std::to_string(shard.index) + "/" +
                                           std::to_string(shard.count) + " is out of range");
    std::vector<BatchRequest> all = read_requests(j.options.input, j.options.defaults, j.options.limits);
    j.input_lines = int(all.size());
    for (BatchRequest& r : all)
        if (shard_of_key(r.key, shard.count) == shard.index) j.requests.push_back(std::move(r));
    j.writer.emplace(j.options.output, j.options.sync, j.options.limits.max_line_bytes, j.options.result.format);
    for (size_t i = 0; i < j.requests.size(); ++i)
        if (!j.writer->done(j.requests[i].key)) j.pending.push_back(i);
}

BatchJob::~BatchJob() = default;

int BatchJob::input_lines() const { return impl_->input_lines; }
int BatchJob::shard_requests() const { return int(impl_->requests.size()); }
int BatchJob::pending() const { return int(impl_->pending.size()); }
const std::string& BatchJob::output_path() const { return impl_->writer->path(); }
ShardSpec BatchJob::shard() const { return impl_->options.shard; }
size_t BatchJob::torn_bytes_dropped() const { return impl_->writer->torn_bytes_dropped(); }

BatchJob::Plan BatchJob::plan(const Model& model, const BatchEngine& engine) {
    Impl& j = *impl_;
    const Tokenizer* tok = model.tokenizer();
    if (!tok) throw Error(ErrorKind::config, "batch needs a model with a tokenizer");
    Plan plan;
    const size_t step = size_t(std::max(1, j.options.plan_window));
    for (size_t b = 0; b < j.pending.size(); b += step) {
        const std::vector<size_t> window(j.pending.begin() + std::ptrdiff_t(b),
                                         j.pending.begin() + std::ptrdiff_t(std::min(j.pending.size(), b + step)));
        std::vector<Prepared> items = prepare(j.requests, window, model, *tok, j.options);
        plan_prefixes(items, engine, j.options.prefix_min, uint64_t(plan.prefixes), plan);
    }
    return plan;
}

BatchSummary BatchJob::run(const Model& model, BatchEngine& engine) {
    Impl& j = *impl_;
    const Tokenizer* tok = model.tokenizer();
    if (!tok) throw Error(ErrorKind::config, "batch needs a model with a tokenizer");
    const auto t0 = Clock::now();
    BatchSummary summary;
    summary.input_lines = j.input_lines;
    summary.torn_bytes_dropped = j.writer->torn_bytes_dropped();
    BatchProgress& p = summary.progress;
    p.total = int(j.requests.size());
    p.skipped = p.total - int(j.pending.size());
    std::function<void()> count_work;  // set once the engine's counters are known
    auto report = [&] {
        if (count_work) count_work();
        p.seconds = seconds_since(t0);
        if (j.options.progress) j.options.progress(p);
    };
    auto write = [&](const BatchResult& r) {
        j.writer->append(format_result_line(r, tok, j.options.result));
        ++p.done;
        p.errors += r.finish == FinishReason::error;
        p.generated_tokens += long(r.tokens.size());
        p.drafted_tokens += r.stats.drafted_tokens;
        p.accepted_tokens += r.stats.accepted_tokens;
        report();
    };
    auto write_error = [&](const BatchRequest& q, ErrorKind kind, const std::string& message) {
        BatchResult r;
        r.request = &q;
        r.finish = FinishReason::error;
        r.error_kind = kind;
        r.error = message;
        write(r);
    };
    report();

    std::vector<Prepared> items;
    std::vector<size_t> order;
    size_t window_begin = 0;
    Plan plan;
    // The next window of pending requests, tokenized and planned; false when none is left.
    auto next_window = [&] {
        if (window_begin >= j.pending.size()) return false;
        const size_t end = std::min(j.pending.size(), window_begin + size_t(std::max(1, j.options.plan_window)));
        const std::vector<size_t> window(j.pending.begin() + std::ptrdiff_t(window_begin),
                                         j.pending.begin() + std::ptrdiff_t(end));
        window_begin = end;
        items = prepare(j.requests, window, model, *tok, j.options);
        order = plan_prefixes(items, engine, j.options.prefix_min, uint64_t(plan.prefixes), plan);
        return true;
    };
    const EngineCounters c0 = engine.counters();
    count_work = [&] {
        const EngineCounters c = engine.counters();
        p.prompt_positions = c.prompt_positions - c0.prompt_positions;
        p.shared_positions = c.shared_positions - c0.shared_positions;
        p.prefixes = c.prefixes - c0.prefixes;
    };

    std::vector<int> prompt_tokens(j.requests.size(), 0);
    ConstraintCache constraints(*tok);
    std::vector<EngineOutcome> finished;
    size_t next = 0;
    while (true) {
        while (engine.active() < engine.capacity()) {
            if (next == order.size()) {
                if (!next_window()) break;
                next = 0;
                continue;
            }
            Prepared& it = items[order[next++]];
            const BatchRequest& q = j.requests[it.idx];
            if (it.error) {
                write_error(q, it.kind, it.message);
                continue;
            }
            try {  // compiled at the first line with this schema or grammar
                if (!q.json_schema.empty()) it.er.options.constraint = constraints.json_schema(q.json_schema);
                if (!q.grammar.empty()) it.er.options.constraint = constraints.grammar(q.grammar);
            } catch (const Error& e) {
                write_error(q, e.kind(), "line " + std::to_string(q.line) + ": " + e.what());
                continue;
            }
            prompt_tokens[it.idx] = int(it.er.prompt.size());
            try {
                engine.submit(std::move(it.er));
            } catch (const Error& e) {
                write_error(q, e.kind(), e.what());
            }
            it.er = EngineRequest();  // the ids are the engine's now
        }
        if (engine.active() == 0) break;
        finished.clear();
        engine.step(finished);
        for (EngineOutcome& o : finished) {
            const BatchRequest& q = j.requests[size_t(o.tag)];
            if (o.failed) {
                write_error(q, o.error_kind, o.error);
                continue;
            }
            BatchResult r;
            r.request = &q;
            if (!q.score.empty()) {
                r.finish = FinishReason::scored;
                r.scores = std::move(o.scores);
                r.prompt_tokens = prompt_tokens[size_t(o.tag)];
                r.total_seconds = o.total_seconds;
                write(r);
                continue;
            }
            r.finish = finish_of(o.result.reason);
            r.text = q.hide_thinking ? strip_thinking(j.options.chat_format, o.result.text) : std::move(o.result.text);
            r.tokens = std::move(o.result.tokens);
            r.prompt_tokens = prompt_tokens[size_t(o.tag)];
            r.stats = o.result.stats;
            r.total_seconds = o.total_seconds;
            r.has_logprobs = q.options.logprobs >= 0;
            r.logprobs = std::move(o.result.logprobs);
            r.top_n = o.result.top_n;
            r.top_logprobs = std::move(o.result.top_logprobs);
            if (!q.json_schema.empty() || !q.grammar.empty()) r.complete = o.result.complete ? 1 : 0;
            write(r);
        }
    }
    count_work();
    j.writer->sync();
    return summary;
}

}  // namespace staticlm
