// The generation loop: prompt -> prefill/append, then sample / decode until a
// stop id, a stop string, max_tokens or the session's capacity.
#include <algorithm>
#include <chrono>
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


}  // namespace

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
    const TokenSink on_token = options.on_token;
    Sampler sampler(session.vocab(), options.sampling);
    ConstraintCursor cursor;
    if (options.constraint) {
        if (stop_ids.empty()) throw Error(ErrorKind::config, "a constrained generation needs a stop id (EOS)");
        cursor = ConstraintCursor(session.vocab());
        cursor.start(options.constraint.get());
    }
    std::optional<StreamDecoder> stream;
    if (tokenizer) stream.emplace(*tokenizer);

    r.stats.prompt_tokens = int(prompt.size());
    const auto t0 = Clock::now();
    std::span<const float> logits =
        session.pos() == 0 ? session.prefill(prompt) : session.append(prompt);
    r.stats.prefill_seconds = seconds_since(t0);
    const bool want_logprobs = options.logprobs >= 0;
    if (want_logprobs) {
        // At most one token per free position plus the last sampled one.
        const size_t most = size_t(std::min<long long>(max_tokens, session.max_seq() - session.pos() + 1LL));
        r.top_n = options.logprobs;
        r.logprobs.reserve(most);
        r.top_logprobs.reserve(most * size_t(r.top_n));
    }

    std::vector<int> recent(prompt.begin(), prompt.end());
    size_t emitted = 0;  // bytes of r.text already streamed
    auto t_decode = Clock::now();
    for (int i = 0; i < max_tokens; ++i) {
        if (i > 0) {
            if (session.pos() >= session.max_seq()) {
                r.reason = StopReason::capacity;
                break;
            }
            logits = session.decode(r.tokens.back());
        }
        const int id = sampler.sample(logits, recent, cursor.active() ? cursor.mask(stop_ids) : std::span<const uint64_t>());
        cursor.advance(id);
        if (i == 0) {
            r.stats.first_token_seconds = seconds_since(t0);
            t_decode = Clock::now();
        }
        r.tokens.push_back(id);
        recent.push_back(id);
        if (want_logprobs) {
            const size_t at = r.top_logprobs.size();
            r.top_logprobs.resize(at + size_t(r.top_n));
            r.logprobs.push_back(
                token_logprob(logits, id, std::span<TokenLogprob>(r.top_logprobs.data() + at, size_t(r.top_n))));
        }
        if (std::find(stop_ids.begin(), stop_ids.end(), id) != stop_ids.end()) {
            r.reason = StopReason::eos;
            if (on_token.fn) on_token.fn(on_token.ctx, id, {});
            break;
        }
        if (!stream) {
            if (on_token.fn && !on_token.fn(on_token.ctx, id, {})) {
                r.reason = StopReason::aborted;
                break;
            }
            continue;
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
            break;
        }
        if (on_token.fn && !on_token.fn(on_token.ctx, id, fresh)) {
            r.reason = StopReason::aborted;
            break;
        }
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
