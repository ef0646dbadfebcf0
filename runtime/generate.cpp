// The generation loop: prompt -> prefill/append, then sample / decode until a
// stop id, a stop string, max_tokens or the session's capacity.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>
#include <optional>

#include "model/model.hpp"
#include "staticlm/constrain.hpp"
#include "staticlm/error.hpp"
#include "internal.hpp"
#include "staticlm/generate.hpp"
#include "staticlm/session.hpp"
#include "staticlm/tokenizer.hpp"

namespace staticlm {

// Holds back text that might be the start of a stop string, so that a stop
// string is never streamed. Returns how many bytes of `text` (from `from`) are safe.
size_t detail::safe_prefix(const std::string& text, size_t from, const std::vector<std::string>& stops) {
    size_t safe = text.size();
    for (const std::string& s : stops) {
        // the longest suffix of text that is a proper prefix of s
        const size_t max_len = std::min(s.size() - 1, text.size() - from);
        for (size_t len = max_len; len > 0; --len)
            if (text.compare(text.size() - len, len, s, 0, len) == 0) {
                safe = std::min(safe, text.size() - len);
                break;
            }
    }
    return safe;
}

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Copies the per-row logits of a verification append into [rows][vocab]
// (a plan may deliver them in several steps).
struct RowSink {
    float* rows = nullptr;
    int pos0 = 0;
    int vocab = 0;
    static void fn(void* ctx, int pos, const float* data, int t, int vocab) {
        auto& s = *static_cast<RowSink*>(ctx);
        std::memcpy(s.rows + size_t(pos - s.pos0) * size_t(s.vocab), data, size_t(t) * size_t(vocab) * sizeof(float));
    }
};

// The most decode steps in a row without drafting after rejected drafts.
constexpr int kMaxCooldown = 16;
static_assert(kLogitsRows >= kMaxDraft + 1, "a verification's rows come in one piece");

int largest_bucket(const std::vector<int>& buckets) {
    int q = 1;
    for (int b : buckets) q = std::max(q, b);
    return q;
}

// Error(config) naming the speculation field out of range, or a session without all_logits.
void check_speculation(const SpeculationOptions& o, const Session& session) {
    check_speculation_options(o);
    if (o.max_draft == 0) return;
    if (!session.options().all_logits)
        throw Error(ErrorKind::config, "speculation (max_draft " + std::to_string(o.max_draft) +
                                           ") needs a session created with all_logits: the draft is verified "
                                           "on every row's logits");
}

}  // namespace

void check_speculation_options(const SpeculationOptions& o) {
    if (o.max_draft < 0 || o.max_draft > kMaxDraft)
        throw Error(ErrorKind::config, "speculation max_draft must be in 0.." + std::to_string(kMaxDraft) +
                                           " (0: off), got " + std::to_string(o.max_draft));
    if (o.max_draft == 0) return;
    if (o.max_ngram < 1 || o.max_ngram > kMaxNgram)
        throw Error(ErrorKind::config, "speculation max_ngram must be in 1.." + std::to_string(kMaxNgram) +
                                           ", got " + std::to_string(o.max_ngram));
    if (o.min_ngram < 1 || o.min_ngram > o.max_ngram)
        throw Error(ErrorKind::config, "speculation min_ngram must be in 1..max_ngram (" +
                                           std::to_string(o.max_ngram) + "), got " + std::to_string(o.min_ngram));
}

const char* stop_reason_name(StopReason reason) {
    switch (reason) {
        case StopReason::eos: return "eos";
        case StopReason::stop_string: return "stop_string";
        case StopReason::max_tokens: return "max_tokens";
        case StopReason::capacity: return "capacity";
        case StopReason::aborted: return "aborted";
    }
    return "?";
}

SamplingOptions suggested_sampling(const ModelConfig& config) {
    SamplingOptions o;
    o.temperature = 0.8f;
    o.top_k = 40;
    o.top_p = 0.95f;
    o.min_p = 0.05f;
    o.repetition_penalty = 1.0f;
    o.seed = 42;
    const GenerationConfig& g = config.generation;
    if (g.temperature) o.temperature = *g.temperature;
    if (g.top_k) o.top_k = *g.top_k;
    if (g.top_p) o.top_p = *g.top_p;
    if (g.min_p) o.min_p = *g.min_p;
    if (g.repetition_penalty) o.repetition_penalty = *g.repetition_penalty;
    if (g.do_sample && !*g.do_sample) o.temperature = 0.0f;
    return o;
}

GenerateResult generate(Session& session, const Tokenizer* tokenizer, std::span<const int> prompt,
                        const GenerateOptions& options, TextSink sink) {
    GenerateResult r;
    const ModelConfig& config = session.model().config();
    const std::vector<int>& stop_ids = options.stop_ids.empty() ? config.eos_ids : options.stop_ids;
    for (const std::string& s : options.stop_strings)
        if (s.empty()) throw Error(ErrorKind::config, "empty stop string");
    if (options.max_tokens < -1)
        throw Error(ErrorKind::config, "max_tokens must be >= 0, or -1 for no limit, got " +
                                           std::to_string(options.max_tokens));
    const int max_tokens = options.max_tokens < 0 ? std::numeric_limits<int>::max() : options.max_tokens;
    if (options.logprobs < -1 || options.logprobs > kMaxLogprobs || options.logprobs > session.vocab())
        throw Error(ErrorKind::config, "logprobs must be -1 (off) or in 0.." + std::to_string(kMaxLogprobs) +
                                           ", got " + std::to_string(options.logprobs));
    const SpeculationOptions& spec = options.speculation;
    check_speculation(spec, session);
    const TokenSink on_token = options.on_token;
    const int vocab = session.vocab();
    Sampler sampler(vocab, options.sampling);
    ConstraintCursor cursor;
    if (options.constraint) {
        if (stop_ids.empty()) throw Error(ErrorKind::config, "a constrained generation needs a stop id (EOS)");
        cursor = ConstraintCursor(vocab);
        cursor.start(options.constraint.get());
    }
    auto mask = [&] { return cursor.active() ? cursor.mask(stop_ids) : std::span<const uint64_t>(); };
    std::optional<StreamDecoder> stream;
    if (tokenizer) stream.emplace(*tokenizer);

    r.stats.prompt_tokens = int(prompt.size());
    const auto t0 = Clock::now();
    std::span<const float> logits =
        session.pos() == 0 ? session.prefill(prompt) : session.append(prompt);
    r.stats.prefill_seconds = seconds_since(t0);
    // Everything the loop grows is reserved here: at most one token per free
    // position plus the last sampled one.
    const size_t most = size_t(std::min<long long>(max_tokens, session.max_seq() - session.pos() + 1LL));
    const bool want_logprobs = options.logprobs >= 0;
    if (want_logprobs) {
        r.top_n = options.logprobs;
        r.logprobs.reserve(most);
        r.top_logprobs.reserve(most * size_t(r.top_n));
    }
    r.tokens.reserve(most);
    std::vector<int> recent;  // the repetition penalty's view: prompt + output
    recent.reserve(prompt.size() + most);
    recent.assign(prompt.begin(), prompt.end());
    // Speculation: the drafts' source (every token of the cache, earlier chat
    // turns included, + output), the verified run [last, draft...] and its
    // logits [max_draft + 1][vocab].
    const bool speculate = spec.max_draft > 0;
    std::vector<int> history, run;
    std::vector<float> rows;
    if (speculate) {
        history.reserve(size_t(session.pos()) + most);
        history.assign(session.tokens().begin(), session.tokens().end());
        run.resize(size_t(spec.max_draft) + 1);
        rows.resize(run.size() * size_t(vocab));
    }

    size_t emitted = 0;  // bytes of r.text already streamed
    // Records token `id` sampled from `lg` and streams its text; true when
    // generation ends with it (r.reason says why).
    auto emit = [&](int id, std::span<const float> lg) -> bool {
        r.tokens.push_back(id);
        recent.push_back(id);
        if (speculate) history.push_back(id);
        if (want_logprobs) {
            const size_t at = r.top_logprobs.size();
            r.top_logprobs.resize(at + size_t(r.top_n));
            r.logprobs.push_back(
                token_logprob(lg, id, std::span<TokenLogprob>(r.top_logprobs.data() + at, size_t(r.top_n))));
        }
        if (std::find(stop_ids.begin(), stop_ids.end(), id) != stop_ids.end()) {
            r.reason = StopReason::eos;
            if (on_token.fn) on_token.fn(on_token.ctx, id, {});
            return true;
        }
        if (!stream) {
            if (on_token.fn && !on_token.fn(on_token.ctx, id, {})) {
                r.reason = StopReason::aborted;
                return true;
            }
            return false;
        }
        r.text += stream->push(id);
        bool stopped = false;
        for (const std::string& s : options.stop_strings) {
            const size_t at = r.text.find(s, emitted > s.size() ? emitted - s.size() : 0);
            if (at != std::string::npos) {
                r.text.resize(at);
                stopped = true;
            }
        }
        const size_t safe = stopped ? r.text.size() : detail::safe_prefix(r.text, emitted, options.stop_strings);
        const std::string_view fresh =
            safe > emitted ? std::string_view(r.text).substr(emitted, safe - emitted) : std::string_view();
        if (sink.fn && !fresh.empty()) sink.fn(sink.ctx, fresh);
        emitted = std::max(emitted, safe);
        if (stopped) {
            r.reason = StopReason::stop_string;
            if (on_token.fn) on_token.fn(on_token.ctx, id, fresh);
            return true;
        }
        if (on_token.fn && !on_token.fn(on_token.ctx, id, fresh)) {
            r.reason = StopReason::aborted;
            return true;
        }
        return false;
    };

    auto t_decode = Clock::now();
    bool done = max_tokens == 0;
    if (!done) {
        const int id = sampler.sample(logits, recent, mask());
        cursor.advance(id);
        r.stats.first_token_seconds = seconds_since(t0);
        t_decode = Clock::now();
        done = emit(id, logits);
    }
    // The last sampled token is not in the cache yet: each step appends it.
    const int largest_append = largest_bucket(session.options().append_buckets);
    // Draft control, so that text with nothing to copy runs at decode speed:
    // after a draft rejected at its first token, the next `cool` steps
    // (1, 2, 4 .. kMaxCooldown, doubling while rejections follow each other)
    // do not draft; the draft length is at most `budget`, which doubles (up
    // to max_draft) after a fully accepted draft and drops to one more than
    // the tokens accepted after a partial one.
    int budget = spec.max_draft, cool = 0, skip = 0;
    while (!done && int(r.tokens.size()) < max_tokens) {
        if (session.pos() >= session.max_seq()) {
            r.reason = StopReason::capacity;
            break;
        }
        int k = 0;  // tokens drafted
        if (speculate && skip > 0) {
            --skip;
        } else if (speculate) {
            // Room for the draft: the output still allowed, the cache, one
            // append block (a ring can then rewind all of it).
            const int room = std::min({budget, max_tokens - int(r.tokens.size()) - 1,
                                       session.max_seq() - session.pos() - 1, largest_append - 1});
            if (room > 0) k = ngram_draft(history, spec, std::span<int>(run.data() + 1, size_t(room)));
            for (int i = 1; i <= k; ++i)
                if (run[size_t(i)] < 0 || run[size_t(i)] >= vocab) k = i - 1;  // positions of a prefix pool: no id
        }
        if (k == 0) {
            logits = session.decode(r.tokens.back());
            const int id = sampler.sample(logits, recent, mask());
            cursor.advance(id);
            done = emit(id, logits);
            continue;
        }
        // Verify: row j of the append holds the logits after run[j]; the
        // drafted run[j + 1] stands while the sampler agrees, and the first
        // disagreement is the sampler's own token. The cache then drops the
        // drafted tokens after the last one emitted.
        run[0] = r.tokens.back();
        const int before = session.pos();
        RowSink rs{rows.data(), before, vocab};
        try {
            session.append(std::span<const int>(run.data(), size_t(k) + 1), LogitsSink{RowSink::fn, &rs});
        } catch (const Error&) {
            // An abort keeps the blocks it completed: no drafted token stays
            // (a decode step that fails keeps nothing either).
            const int n = session.pos() - before;
            if (n > 0 && n <= session.max_rewind()) session.rewind(n);
            throw;
        }
        ++r.stats.draft_steps;
        r.stats.drafted_tokens += k;
        int j = 0;
        for (;; ++j) {
            const std::span<const float> row(rows.data() + size_t(j) * size_t(vocab), size_t(vocab));
            const int proposed = j < k ? run[size_t(j) + 1] : -1;
            const int id = proposed >= 0 ? sampler.sample_draft(row, recent, mask(), proposed)
                                         : sampler.sample(row, recent, mask());
            cursor.advance(id);
            const bool accepted = proposed >= 0 && id == proposed;
            if (accepted) ++r.stats.accepted_tokens;
            done = emit(id, row);
            if (done || !accepted) break;
        }
        if (k > j) session.rewind(k - j);
        // j: drafted tokens accepted (unless it ended on one: then unused).
        cool = j == 0 ? std::min(cool > 0 ? 2 * cool : 1, kMaxCooldown) : 0;
        skip = cool;
        budget = j == k ? std::min(2 * budget, spec.max_draft) : j + 1;
    }
    if (stream && r.reason != StopReason::stop_string) {
        r.text += stream->flush();
        if (r.text.size() > emitted) {
            const std::string_view rest = std::string_view(r.text).substr(emitted);
            if (sink.fn) sink.fn(sink.ctx, rest);
            if (on_token.fn) on_token.fn(on_token.ctx, -1, rest);
        }
    }
    r.complete = cursor.complete();
    r.stats.generated_tokens = int(r.tokens.size());
    if (!r.tokens.empty()) r.stats.decode_seconds = seconds_since(t_decode);
    return r;
}

}  // namespace staticlm
