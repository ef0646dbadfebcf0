// The batch job loop (read and check the input, skip what the output holds,
// tokenize, feed an engine, write one line per result) and the sequential
// engine that runs one request at a time through generate().
#include <algorithm>
#include <chrono>
#include <optional>

#include "model/model.hpp"
#include "staticlm/batch.hpp"
#include "staticlm/batch_session.hpp"
#include "staticlm/chat_template.hpp"
#include "staticlm/model.hpp"
#include "staticlm/tokenizer.hpp"
#include "internal.hpp"

namespace staticlm {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Scoring requests of both engines: one Session with the engine's options and
// all_logits, made at the first scoring request, so scores do not depend on
// the engine, the batch or the other requests.
class Scorer {
public:
    Scorer(std::shared_ptr<const Model> model, const SessionOptions& options) : model_(std::move(model)), options_(options) {
        options_.all_logits = true;
    }

    EngineOutcome run(const EngineRequest& r, Clock::time_point submitted) {
        EngineOutcome out;
        out.tag = r.tag;
        try {
            if (!session_) session_.emplace(model_, options_);
            out.scores = score_continuations(*session_, r.prompt, r.score);
            out.result.stats.prompt_tokens = int(r.prompt.size());
        } catch (const Error& e) {
            out.failed = true;
            out.error_kind = e.kind();
            out.error = e.what();
        }
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
        : session_(model, options), tokenizer_(session_.model().tokenizer()), scorer_(model, options) {}

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
            finished.push_back(scorer_.run(r, submitted_));
            return;
        }
        EngineOutcome out;
        out.tag = r.tag;
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
    std::optional<EngineRequest> pending_;
    Clock::time_point submitted_;
};


// Continuous batching on a BatchGenerator: token ids, stop ids, max_tokens and
// capacity are the generator's; the text, stop strings and results are built
// here after each step, exactly as generate() builds them.
class BatchedEngine final : public BatchEngine {
public:
    BatchedEngine(std::shared_ptr<const Model> model, const BatchSessionOptions& options, int prefill_budget)
        : gen_(model, options, prefill_budget), tokenizer_(model->tokenizer()), eos_(model->config().eos_ids),
          scorer_(model, options.session) {
        texts_.resize(size_t(gen_.capacity()));
        if (tokenizer_)
            for (Text& t : texts_) t.stream = std::make_unique<StreamDecoder>(*tokenizer_);
    }

    int capacity() const override { return gen_.capacity(); }
    int active() const override { return gen_.active() + int(scored_.size()); }

    void submit(EngineRequest r) override {
        const auto t0 = Clock::now();
        if (!r.score.empty()) {  // scored at once, on the scorer's own session
            scored_.push_back(scorer_.run(r, t0));
            return;
        }
        for (const std::string& s : r.options.stop_strings)
            if (s.empty()) throw Error(ErrorKind::config, "empty stop string");
        const std::vector<int>& stop_ids = r.options.stop_ids.empty() ? eos_ : r.options.stop_ids;
        const int slot =
            gen_.submit(r.tag, r.prompt, r.options.sampling, r.options.max_tokens, stop_ids, r.options.logprobs);
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
                // A step adds at most one token: its alternatives are the last ones.
                const std::span<const TokenLogprob> top = gen_.last_top_logprobs(slot);
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
                    gen_.stop(slot, StopReason::stop_string);
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
            o.result.top_logprobs = std::move(t.top);
            t.top = {};
        }
        o.result.reason = gen_.reason(slot);
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

std::unique_ptr<BatchEngine> make_batched_engine(std::shared_ptr<const Model> model,
                                                 const BatchSessionOptions& options, int prefill_budget) {
    return std::make_unique<BatchedEngine>(std::move(model), options, prefill_budget);
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
    j.writer.emplace(j.options.output, j.options.sync, j.options.limits.max_line_bytes);
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
    auto report = [&] {
        p.seconds = seconds_since(t0);
        if (j.options.progress) j.options.progress(p);
    };
    auto write = [&](const BatchResult& r) {
        j.writer->append(format_result_line(r, tok));
        ++p.done;
        p.errors += r.finish == FinishReason::error;
        p.generated_tokens += long(r.tokens.size());
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

    std::vector<int> prompt_tokens(j.requests.size(), 0);
    std::vector<EngineOutcome> finished;
    size_t next = 0;
    while (true) {
        while (engine.active() < engine.capacity() && next < j.pending.size()) {
            const size_t idx = j.pending[next++];
            const BatchRequest& q = j.requests[idx];
            if (q.failed) {
                write_error(q, q.error_kind, q.error);
                continue;
            }
            EngineRequest er;
            er.tag = idx;
            er.options = q.options;
            if (q.score.empty() && q.chat && er.options.stop_ids.empty()) {
                // As Chat::reply: the model's EOS ids and the template's end-of-turn tokens.
                er.options.stop_ids = model.config().eos_ids;
                for (std::string_view st : j.options.chat_format.chat_template().stop_tokens) {
                    const int id = st.empty() ? -1 : tok->token_id(st);
                    if (id >= 0 && std::find(er.options.stop_ids.begin(), er.options.stop_ids.end(), id) ==
                                       er.options.stop_ids.end())
                        er.options.stop_ids.push_back(id);
                }
            }
            try {
                if (!q.score.empty()) {  // scoring: the prompt, and the continuations' ids after it
                    ScoreIds ids = score_ids(*tok, q.prompt, q.score);
                    er.prompt = std::move(ids.prompt);
                    er.score = std::move(ids.continuations);
                } else {
                    er.prompt = request_ids(q, model, *tok, j.options.chat_format, j.options.chat);
                }
            } catch (const Error& e) {
                write_error(q, e.kind(), "line " + std::to_string(q.line) + ": " + e.what());
                continue;
            }
            prompt_tokens[idx] = int(er.prompt.size());
            try {
                engine.submit(std::move(er));
            } catch (const Error& e) {
                write_error(q, e.kind(), e.what());
            }
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
            write(r);
        }
    }
    j.writer->sync();
    return summary;
}

}  // namespace staticlm
