// Session: the calls of RUNTIME.md on one Sequence (sequence.hpp holds the
// bucket rule and the checks), chunked into steps of the shared graph, with
// the abort and non-finite paths. All buffers are made in the constructor.
#include "staticlm/session.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <new>
#include <string>

#include "model/graph.hpp"
#include "model/model.hpp"
#include "staticlm/error.hpp"
#include "internal.hpp"
#include "session_impl.hpp"

namespace staticlm {

namespace {

// Index of the first non-finite value of data[0, n), or -1.
long first_non_finite(const float* data, size_t n) {
    for (size_t i = 0; i < n; ++i)
        if (!std::isfinite(data[i])) return long(i);
    return -1;
}

// Dump sink that records the first named intermediate holding a non-finite value.
struct NonFiniteFinder {
    std::string name;
    int layer = -2;
    int row = -1;
    static void fn(void* ctx, const char* name, int layer, const float* data, int rows, int cols,
                   size_t ld) {
        auto& f = *static_cast<NonFiniteFinder*>(ctx);
        if (f.layer != -2) return;
        for (int r = 0; r < rows; ++r)
            if (first_non_finite(data + size_t(r) * ld, size_t(cols)) >= 0) {
                f.name = name;
                f.layer = layer;
                f.row = r;
                return;
            }
    }
};

}  // namespace

std::vector<int> default_prefill_buckets(int max_seq) {
    std::vector<int> out;
    for (int b : {64, 128, 256, 512})
        if (b <= max_seq) out.push_back(b);
    if (max_seq >= 1 && max_seq < 512 && (out.empty() || out.back() != max_seq)) out.push_back(max_seq);
    return out;
}

std::vector<int> default_append_buckets(int max_seq) {
    std::vector<int> out;
    for (int b : {16, 32, 64})
        if (b <= max_seq) out.push_back(b);
    if (max_seq >= 1 && max_seq < 64 && (out.empty() || out.back() != max_seq)) out.push_back(max_seq);
    return out;
}

SessionEntry::SessionEntry(std::atomic<bool>& busy) : busy_(busy) {
    if (busy_.exchange(true, std::memory_order_acquire))
        throw Error(ErrorKind::busy,
                    "session is busy: another call on it is running (a session must be used by "
                    "one thread at a time; create one session per thread)");
}

std::span<const float> Session::Impl::run(std::span<const int> tokens, int P, const std::vector<int>& buckets,
                                          LogitsSink sink) {
    rules.validate(tokens, P);
    if (sink && !options.all_logits)
        throw Error(ErrorKind::config,
                    "per-row logits need a session created with all_logits");
    n_steps = plan_into(buckets, P, int(tokens.size()), rules.max_seq, steps.data());
    const int vocab = rules.vocab;
    int done = 0;
    for (size_t s = 0; s < n_steps; ++s) {
        const int t = steps[s].t;
        ForwardArgs a;
        a.tokens = tokens.data() + done;
        a.t = t;
        a.pos0 = P + done;
        a.n_threads = rules.threads;
        a.dump = dump;
        a.stop = stop;
        const bool last = s + 1 == n_steps;
        a.logits = sink ? ForwardArgs::Logits::all
                        : (last ? ForwardArgs::Logits::last : ForwardArgs::Logits::none);
        // Every row's logits come in pieces of ws.logits_rows() rows: each is
        // checked, then given to the sink; the last row is kept.
        struct Rows {
            Impl* self;
            LogitsSink sink;
            int pos0, t;
            bool last;
            int bad_pos = -1;  // the first non-finite row's position
            static bool fn(void* ctx, int row0, int rows) {
                Rows& r = *static_cast<Rows*>(ctx);
                const int vocab = r.self->rules.vocab;
                const long bad = first_non_finite(r.self->ws.logits, size_t(rows) * size_t(vocab));
                if (bad >= 0) {
                    r.bad_pos = r.pos0 + row0 + int(size_t(bad) / size_t(vocab));
                    return false;
                }
                r.sink.fn(r.sink.ctx, r.pos0 + row0, r.self->ws.logits, rows, vocab);
                if (r.last && row0 + rows == r.t)
                    std::memcpy(r.self->last_logits.data(), r.self->ws.logits + size_t(rows - 1) * size_t(vocab),
                                size_t(vocab) * sizeof(float));
                return true;
            }
        } rows_sink{this, sink, a.pos0, t, last};
        if (sink) a.on_rows = RowsSink{Rows::fn, &rows_sink};
        const bool ran = forward(*model, *rules.kt, seq.cache, ws, a);
        int bad_pos = rows_sink.bad_pos;
        if (ran && !sink && a.logits == ForwardArgs::Logits::last && first_non_finite(ws.logits, size_t(vocab)) >= 0)
            bad_pos = a.pos0 + t - 1;
        if (bad_pos >= 0) {
            // Slots from P on may now hold non-finite K/V; pos becomes P
            // (an append's unchanged pos, a prefill's 0: the positions it
            // overwrote are gone), so they are never read. Ring caches lose
            // what they overwrote.
            seq.high_water = std::max(seq.high_water, a.pos0 + t);
            seq.pos = std::min(seq.pos, P);
            throw_non_finite(tokens, P, buckets, bad_pos);
        }
        if (!ran) throw_aborted(P, done, int(tokens.size()), s, a.pos0 + t);
        std::memcpy(this->tokens.data() + a.pos0, a.tokens, size_t(t) * sizeof(int));
        if (last && !sink) std::memcpy(last_logits.data(), ws.logits, size_t(vocab) * sizeof(float));
        done += t;
    }
    seq.wrote(P, P + done);
    seq.pos = P + done;
    return last_logits;
}

// The abort callback stopped step `s` (which would have written positions up
// to `step_end`): the steps before it stay, the interrupted one is discarded.
// Its partial K/V lie at positions >= the new pos, never read; a ring may have
// overwritten older positions with them, which high_water records (a ring
// holds window + Q_max slots, so the window before pos is intact).
void Session::Impl::throw_aborted(int P, int done, int n_tokens, size_t s, int step_end) {
    seq.wrote(P, step_end);
    seq.pos = P + done;
    n_steps = s;
    throw Error(ErrorKind::aborted,
                "aborted by the abort callback: " + std::to_string(done) + " of the call's " +
                    std::to_string(n_tokens) + " tokens were processed, the session now holds " +
                    std::to_string(seq.pos) + " tokens (pos " + std::to_string(seq.pos) + ")");
}

// Runs the failed call again with a dump sink to name the first layer and
// intermediate that went non-finite (the error path only), then throws.
void Session::Impl::throw_non_finite(std::span<const int> tokens, int P, const std::vector<int>& buckets,
                                     int bad_pos) {
    NonFiniteFinder finder;
    n_steps = plan_into(buckets, P, int(tokens.size()), rules.max_seq, steps.data());
    int done = 0;
    for (size_t s = 0; s < n_steps && finder.layer == -2; ++s) {
        ForwardArgs a;
        a.tokens = tokens.data() + done;
        a.t = steps[s].t;
        a.pos0 = P + done;
        a.n_threads = rules.threads;
        a.dump = DumpSink{NonFiniteFinder::fn, &finder};
        a.logits = options.all_logits  ? ForwardArgs::Logits::all
                   : s + 1 == n_steps ? ForwardArgs::Logits::last
                                      : ForwardArgs::Logits::none;
        a.on_rows = RowsSink{[](void*, int, int) { return true; }, nullptr};  // the finder sees every piece
        (void)forward(*model, *rules.kt, seq.cache, ws, a);
        if (finder.layer != -2) finder.row += a.pos0;
        done += a.t;
    }
    n_steps = 0;
    std::string where = "the logits";
    if (finder.layer != -2)
        where = "'" + finder.name + "'" +
                (finder.layer >= 0 ? " of layer " + std::to_string(finder.layer) : std::string()) +
                " at position " + std::to_string(finder.row);
    throw Error(ErrorKind::model,
                "non-finite logits (NaN or inf) at position " + std::to_string(bad_pos) +
                    ": the first non-finite intermediate is " + where +
                    " (the weights are finite: activations overflowed; try f32 or bf16 weights, an "
                    "f32 KV cache, or check the checkpoint)");
}

Session::Session(std::shared_ptr<const Model> model, const SessionOptions& options)
    : impl_(std::make_unique<Impl>()) {
    Impl& s = *impl_;
    if (!model) throw Error(ErrorKind::config, "session needs a model");
    s.rules = SequenceRules(*model, options);
    s.model = std::move(model);
    s.options = options;
    const SequenceRules& r = s.rules;
    // The tokens and steps arrays count too: double, so that nothing overflows.
    check_memory(double(r.cache_bytes_needed()) + double(r.max_seq + 1.0) * (sizeof(Step) + sizeof(int)),
                 "max_seq " + std::to_string(r.max_seq) + " needs", "max_seq");
    try {
        s.seq = Sequence(r);
        s.ws = Workspace(s.model->config(), s.model->matrix_types(), r.q_max, r.threads,
                         options.all_logits ? std::min(r.q_max, kLogitsRows) : 1);
        s.last_logits.assign(size_t(r.vocab), 0.0f);
        s.tokens.assign(size_t(r.max_seq), 0);
        s.steps.resize(size_t(r.max_seq) + 1);
    } catch (const std::bad_alloc&) {
        throw Error(ErrorKind::capacity, "out of memory allocating a session with max_seq " +
                                             std::to_string(r.max_seq) + " (lower max_seq)");
    }
}

Session::~Session() = default;
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;

std::span<const float> Session::prefill(std::span<const int> tokens, LogitsSink sink) {
    SessionEntry entry(impl_->busy);
    return impl_->run(tokens, 0, impl_->rules.prefill_buckets, sink);
}

std::span<const float> Session::append(std::span<const int> tokens, LogitsSink sink) {
    SessionEntry entry(impl_->busy);
    return impl_->run(tokens, impl_->seq.pos, impl_->rules.append_buckets, sink);
}

std::span<const float> Session::decode(int token) {
    SessionEntry entry(impl_->busy);
    return impl_->run(std::span<const int>(&token, 1), impl_->seq.pos, impl_->decode_buckets, {});
}

void Session::rewind(int n) {
    SessionEntry entry(impl_->busy);
    impl_->seq.rewind(n);
}

void Session::reset() {
    SessionEntry entry(impl_->busy);
    impl_->seq.reset();
}

void Session::save_prefix(PrefixPool& pool, int entry) {
    SessionEntry busy(impl_->busy);
    impl_->seq.save_prefix(pool, entry);
}

void Session::load_prefix(const PrefixPool& pool, int entry, int n) {
    SessionEntry busy(impl_->busy);
    impl_->seq.load_prefix(pool, entry, n);
    // A pool keeps K/V, not ids: tokens() says -1 for these positions.
    std::fill_n(impl_->tokens.begin(), n, -1);
    impl_->n_steps = 0;
}

void Session::set_dump(DumpFn fn, void* ctx) { impl_->dump = DumpSink{fn, fn ? ctx : nullptr}; }

void Session::set_abort(AbortFn fn, void* ctx) {
    SessionEntry entry(impl_->busy);
    impl_->stop = StopCheck{fn, fn ? ctx : nullptr};
}

int Session::pos() const { return impl_->seq.pos; }
int Session::max_seq() const { return impl_->options.max_seq; }
int Session::vocab() const { return impl_->model->config().vocab; }
int Session::threads() const { return impl_->rules.threads; }
int Session::max_rewind() const { return impl_->seq.max_rewind(); }
std::span<const float> Session::logits() const { return impl_->last_logits; }
std::span<const int> Session::tokens() const { return {impl_->tokens.data(), size_t(impl_->seq.pos)}; }
std::span<const Step> Session::last_plan() const {
    return {impl_->steps.data(), impl_->n_steps};
}
const Model& Session::model() const { return *impl_->model; }
const SessionOptions& Session::options() const { return impl_->options; }
size_t Session::cache_bytes() const { return impl_->seq.cache.bytes(); }
size_t Session::cache_bytes_per_token() const { return impl_->seq.cache.bytes_per_token(); }
size_t Session::workspace_bytes() const {
    return impl_->ws.bytes() + impl_->last_logits.size() * sizeof(float) +
           impl_->tokens.size() * sizeof(int) + impl_->steps.size() * sizeof(Step);
}

std::vector<Step> Session::plan(std::span<const int> buckets, int P, int T, int K) {
    if (K < 1 || P < 0 || T < 0 || P + T > K)
        throw Error(ErrorKind::capacity, "capacity exceeded: P=" + std::to_string(P) + " + T=" +
                                             std::to_string(T) + " > K=" + std::to_string(K));
    const std::vector<int> sorted = detail::normalize_buckets(
        std::vector<int>(buckets.begin(), buckets.end()), "buckets", K);
    std::vector<Step> out(size_t(T) + 1);
    out.resize(plan_into(sorted, P, T, K, out.data()));
    return out;
}

}  // namespace staticlm
