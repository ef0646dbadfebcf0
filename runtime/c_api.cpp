// The C API (include/staticlm/staticlm.h) over the C++ API: exceptions become
// status codes and a per-thread message, params structs are read up to their
// `size`, and every call on a session or batch holds its busy flag for its
// whole length.
#include "staticlm/staticlm.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <unordered_set>
#include <vector>

#include "staticlm/batch.hpp"
#include "staticlm/batch_session.hpp"
#include "staticlm/chat.hpp"
#include "staticlm/constrain.hpp"
#include "staticlm/error.hpp"
#include "staticlm/generate.hpp"
#include "staticlm/model.hpp"
#include "staticlm/score.hpp"
#include "staticlm/session.hpp"
#include "staticlm/tokenizer.hpp"

// The C enum is the C++ one by number (both from staticlm/weight_formats.h):
// formats are converted by value, names go through staticlm::parse_weight_type.
#define SLM_SAME_NUMBER_(number, name, suffix, ...)                                                    \
    static_assert(int(SLM_WEIGHTS_##suffix) == number && int(staticlm::WeightType::name) == number);
STATICLM_WEIGHT_FORMAT_LIST(SLM_SAME_NUMBER_)
#undef SLM_SAME_NUMBER_

namespace {

using staticlm::Error;
using staticlm::ErrorKind;

static_assert(sizeof(int) == sizeof(int32_t), "token ids are passed as int32_t and used as int");
static_assert(SLM_ERR_IO == 1 + int(ErrorKind::io) && SLM_ERR_CAPACITY == 1 + int(ErrorKind::capacity) &&
                  SLM_ERR_BUSY == 1 + int(ErrorKind::busy) && SLM_ERR_ABORTED == 1 + int(ErrorKind::aborted),
              "slm_status is 1 + ErrorKind");

struct LogSink {
    slm_log_fn fn = nullptr;
    void* user = nullptr;
    void operator()(slm_log_level level, const std::string& message) const {
        if (fn) fn(level, message.c_str(), user);
    }
};

thread_local std::string g_error;

template <class Fn>
slm_status guard(const LogSink* log, Fn&& fn) {
    slm_status status = SLM_OK;
    try {
        fn();
        g_error.clear();
        return SLM_OK;
    } catch (const Error& e) {
        g_error = e.what();
        status = slm_status(1 + int(e.kind()));
    } catch (const std::bad_alloc&) {
        g_error = "out of memory";
        status = SLM_ERR_INTERNAL;
    } catch (const std::exception& e) {
        g_error = e.what();
        status = SLM_ERR_INTERNAL;
    }
    if (log) (*log)(SLM_LOG_ERROR, g_error);
    return status;
}

slm_status fail(slm_status status, std::string message) {
    g_error = std::move(message);
    return status;
}

slm_status null_arg(const char* what) { return fail(SLM_ERR_INPUT, std::string("null argument: ") + what); }

// The layout of T before its last appended fields, as a program built
// against the older header passes it: its sizeof (where the new fields begin,
// rounded up to T's alignment) and the bytes of its fields (up to there; the
// rest was padding, which the new fields may occupy now). {0, 0}: none.
struct OlderLayout {
    size_t size = 0, fields = 0;
};
template <class T>
constexpr OlderLayout older_layout() {
    auto at = [](size_t first_new_field) {
        return OlderLayout{(first_new_field + alignof(T) - 1) / alignof(T) * alignof(T), first_new_field};
    };
    if constexpr (std::is_same_v<T, slm_model_params>) return at(offsetof(slm_model_params, act_bits));
    if constexpr (std::is_same_v<T, slm_session_params>) return at(offsetof(slm_session_params, all_logits));
    if constexpr (std::is_same_v<T, slm_generate_params>) return at(offsetof(slm_generate_params, on_token_info));
    return {};
}
static_assert(older_layout<slm_session_params>().size < sizeof(slm_session_params) &&
                  older_layout<slm_generate_params>().size < sizeof(slm_generate_params) &&
                  older_layout<slm_model_params>().size < sizeof(slm_model_params),
              "a grown struct's size must change, or an older one would be read as the current layout");

// Reads a caller's params struct: NULL gives the defaults; otherwise `size`
// must be the size of a layout this library knows: sizeof(T), or an older
// layout's, whose fields are read and the later ones keep their defaults.
template <class T>
T read_params(const T* p, const T& defaults, const char* name) {
    if (!p) return defaults;
    constexpr OlderLayout older = older_layout<T>();
    if (older.size != 0 && p->size == older.size) {
        T r = defaults;
        std::memcpy(static_cast<void*>(&r), p, older.fields);
        r.size = sizeof(T);
        return r;
    }
    if (p->size != sizeof(T))
        throw Error(ErrorKind::config, std::string(name) + ".size is " + std::to_string(p->size) +
                                           ", this library (C API " + std::to_string(SLM_API_VERSION) +
                                           ") knows " + std::to_string(sizeof(T)) +
                                           ": set it with the *_default_params() call");
    return *p;
}

// The one place a C weights value becomes a WeightType.
// slm_weights values are the WeightType numbers (static_assert above).
staticlm::WeightType weight_type_from_c(int w) {
    if (const std::optional<staticlm::WeightType> t = staticlm::weight_type_from_id(w)) return *t;
    throw Error(ErrorKind::config, "weights " + std::to_string(w) + " is not a weight format (known: " +
                                       staticlm::weight_type_choices() + " = 0.." +
                                       std::to_string(staticlm::weight_types().size() - 1) +
                                       ", native = " + std::to_string(SLM_WEIGHTS_NATIVE) + ")");
}

// Copies s into buf (cap bytes, NUL-terminated when cap > 0); returns s's length.
int copy_out(const std::string& s, char* buf, int cap) {
    if (cap > 0) {
        if (!buf) throw Error(ErrorKind::input, "null output buffer with a capacity of " + std::to_string(cap));
        const size_t k = std::min(size_t(cap - 1), s.size());
        std::memcpy(buf, s.data(), k);
        buf[k] = '\0';
    }
    if (s.size() > size_t(INT32_MAX)) throw Error(ErrorKind::capacity, "text longer than 2^31 bytes");
    return int(s.size());
}

const staticlm::Tokenizer& tokenizer_of(const staticlm::Model& model) {
    const staticlm::Tokenizer* tok = staticlm::model_tokenizer(model);
    if (!tok) throw Error(ErrorKind::config, "the model was loaded without a tokenizer (load_tokenizer = 0)");
    return *tok;
}

slm_sampler_params sampler_params_from(const staticlm::SamplingOptions& o) {
    slm_sampler_params p{};
    p.size = sizeof p;
    p.temperature = o.temperature;
    p.top_k = o.top_k;
    p.top_p = o.top_p;
    p.min_p = o.min_p;
    p.repeat_penalty = o.repetition_penalty;
    p.repeat_last_n = o.repetition_window;
    p.seed = o.seed;
    return p;
}

staticlm::SamplingOptions sampling_from(const slm_sampler_params& p) {
    staticlm::SamplingOptions o;
    o.temperature = p.temperature;
    o.top_k = p.top_k;
    o.top_p = p.top_p;
    o.min_p = p.min_p;
    o.repetition_penalty = p.repeat_penalty;
    o.repetition_window = p.repeat_last_n;
    o.seed = p.seed;
    return o;
}

}  // namespace

struct slm_model {
    std::shared_ptr<const staticlm::Model> model;
    staticlm::ChatFormat chat_format = staticlm::ChatFormat::plain;
    LogSink log;
    // The vocabulary's byte trie for constraints, made at the first one (a
    // model is shared by threads: the mutex guards making it).
    mutable std::mutex vocab_mutex;
    mutable std::shared_ptr<const staticlm::TokenVocabulary> vocab;
};

struct slm_constraint {
    std::shared_ptr<const staticlm::Model> model;  // whose vocabulary it was compiled for
    std::shared_ptr<const staticlm::Constraint> constraint;
};

struct slm_session {
    std::shared_ptr<const staticlm::Model> model;
    staticlm::Session session;
    staticlm::ChatFormat chat_format;
    LogSink log;
    std::atomic<bool> busy{false};
    slm_abort_fn abort_fn = nullptr;  // slm_session_set_abort
    void* abort_user = nullptr;

    static bool ask_abort(void* ctx) {
        const auto* s = static_cast<const slm_session*>(ctx);
        return s->abort_fn(s->abort_user) != 0;
    }
};

struct slm_detokenizer {
    std::shared_ptr<const staticlm::Model> model;  // declared first: outlives the decoder
    staticlm::StreamDecoder decoder;
    std::string flushed;  // what the last flush returned (the decoder is reset after it)
};

struct slm_sampler {
    std::shared_ptr<const staticlm::Model> model;
    staticlm::Sampler sampler;
};

struct slm_chat {
    slm_session* session;
    staticlm::Chat chat;
};

struct slm_batch {
    struct Running {
        uint64_t id = 0, tag = 0;
        bool logprobs = false;     // asked for (logprobs >= 0)
        bool constrained = false;  // slm_batch_submit_constrained
    };
    // A finished request waiting for slm_batch_collect.
    struct Done {
        uint64_t tag = 0;
        bool logprobs = false;
        bool constrained = false;
        staticlm::EngineOutcome outcome;  // outcome.tag is the request's id
    };
    std::shared_ptr<const staticlm::Model> model;
    std::unique_ptr<staticlm::BatchEngine> engine;  // make_batched_engine: `staticlm batch`'s
    staticlm::ChatFormat chat_format;
    LogSink log;
    std::atomic<bool> busy{false};
    uint64_t next_id = 1;
    std::vector<Running> running;          // [<= S]
    std::deque<Done> done;                 // oldest first
    std::vector<staticlm::EngineOutcome> stepped;  // one step's finished requests
    std::optional<staticlm::PrefixPlanner> prefixes;  // with a prefix pool
    int pool_tokens = 0;
    // What the last slm_batch_collect returned points into these.
    Done collected;
    bool has_collected = false;
    staticlm::SpeculationOptions speculation;  // every request's (slm_batch_create_speculative)
    std::vector<slm_token_logprob> collected_top;

    // Moves a finished request from running to done.
    void finish(staticlm::EngineOutcome&& o) {
        const auto it = std::find_if(running.begin(), running.end(), [&](const Running& r) { return r.id == o.tag; });
        if (it == running.end()) throw std::logic_error("batch: a finished request was not running");
        done.push_back({it->tag, it->logprobs, it->constrained, std::move(o)});
        running.erase(it);
    }
};

namespace {

// Runs fn with the object's busy flag held; a second entry gets SLM_ERR_BUSY.
template <class Object, class Fn>
slm_status with_busy(Object* o, const char* what, Fn&& fn) {
    if (!o) return null_arg(what);
    if (o->busy.exchange(true, std::memory_order_acquire))
        return fail(SLM_ERR_BUSY, std::string(what) + " is busy: another call on it is running (use a " + what +
                                      " from one thread at a time, and not from its own callbacks)");
    const slm_status status = guard(&o->log, fn);
    o->busy.store(false, std::memory_order_release);
    return status;
}

template <class Fn>
slm_status with_session(slm_session* s, Fn&& fn) {
    return with_busy(s, "session", fn);
}

// The live constraints: a pointer is read only while slm_constraint_free has
// not released it, so a freed or stray pointer is refused, not dereferenced.
std::mutex g_constraints_mutex;
std::unordered_set<const slm_constraint*> g_constraints;

// The compiled constraint behind c, for a generation on `model`.
std::shared_ptr<const staticlm::Constraint> use_constraint(const slm_constraint* c, const staticlm::Model& model) {
    if (!c)
        throw Error(ErrorKind::input,
                    "constraint is NULL (make one with slm_constraint_json_schema or slm_constraint_grammar)");
    const std::lock_guard lock(g_constraints_mutex);
    if (!g_constraints.count(c))
        throw Error(ErrorKind::input, "constraint is not a live slm_constraint: freed by slm_constraint_free, or "
                                      "not made by slm_constraint_json_schema / slm_constraint_grammar");
    if (c->model.get() != &model)
        throw Error(ErrorKind::input, "the constraint was compiled for another model: make it with the slm_model "
                                      "this session or batch was created from");
    return c->constraint;
}

slm_status make_constraint(const slm_model* model, const char* text, size_t len, slm_constraint** out,
                           bool schema) {
    if (!out) return null_arg("out");
    *out = nullptr;
    if (!model || (!text && len)) return null_arg("model/text");
    return guard(&model->log, [&] {
        std::shared_ptr<const staticlm::TokenVocabulary> vocab;
        {
            const std::lock_guard lock(model->vocab_mutex);
            if (!model->vocab)
                model->vocab = std::make_shared<const staticlm::TokenVocabulary>(tokenizer_of(*model->model));
            vocab = model->vocab;
        }
        const std::string_view t(text ? text : "", len);
        auto c = std::make_unique<slm_constraint>();
        c->model = model->model;
        c->constraint =
            schema ? staticlm::Constraint::json_schema(t, vocab) : staticlm::Constraint::grammar(t, vocab);
        const std::lock_guard lock(g_constraints_mutex);
        g_constraints.insert(c.get());
        *out = c.release();
    });
}

struct GenerateCall {
    staticlm::GenerateOptions options;
    slm_token_fn on_token = nullptr;
    slm_token_info_fn on_token_info = nullptr;
    void* user_data = nullptr;
    int logprobs = -1;  // of on_token_info; options.logprobs stays off
    const staticlm::Session* session = nullptr;  // whose logits() chose the token being reported
    std::array<staticlm::TokenLogprob, staticlm::kMaxLogprobs> top{};
    std::array<slm_token_logprob, staticlm::kMaxLogprobs> c_top{};

    static bool token(void* ctx, int token, std::string_view text) {
        const auto& c = *static_cast<const GenerateCall*>(ctx);
        return c.on_token(token, text.empty() ? "" : text.data(), text.size(), c.user_data) != 0;
    }

    // generate() reports a token right after sampling it, before the decode
    // that follows: the session's logits are those it was sampled from.
    static bool token_info(void* ctx, int token, std::string_view text) {
        auto& c = *static_cast<GenerateCall*>(ctx);
        slm_token_info info{};
        info.size = sizeof info;
        info.token = token;
        info.text = text.empty() ? "" : text.data();
        info.len = text.size();
        info.logprob = NAN;
        if (token >= 0) {
            const std::span<const float> logits = c.session->logits();
            info.logits = logits.data();
            info.n_vocab = int(logits.size());
            if (c.logprobs >= 0) {
                const size_t n = size_t(c.logprobs);
                info.logprob = staticlm::token_logprob(logits, token, std::span(c.top.data(), n));
                for (size_t i = 0; i < n; ++i) c.c_top[i] = {c.top[i].token, c.top[i].logprob};
                info.n_top = c.logprobs;
                info.top = c.c_top.data();
            }
        }
        return c.on_token_info(&info, c.user_data) != 0;
    }

    // The TokenSink of generate() (none when neither callback is set).
    staticlm::TokenSink sink(const staticlm::Session& s) {
        session = &s;
        if (on_token) return {token, this};
        if (on_token_info) return {token_info, this};
        return {};
    }
};

std::vector<std::string> stop_strings(const char* const* strings, size_t n) {
    if (n && !strings) throw Error(ErrorKind::input, "stop_strings is NULL with n_stop_strings > 0");
    std::vector<std::string> out;
    for (size_t i = 0; i < n; ++i) {
        if (!strings[i]) throw Error(ErrorKind::input, "stop_strings[" + std::to_string(i) + "] is NULL");
        out.emplace_back(strings[i]);
    }
    return out;
}

// A text prompt's ids as `staticlm generate` and `staticlm batch` make them:
// BOS when the tokenizer adds it; an empty prompt is BOS alone.
std::vector<int> prompt_ids(const staticlm::Tokenizer& tok, const char* text) {
    std::vector<int> ids = tok.encode(text, /*add_special=*/true);
    if (ids.empty()) {
        if (tok.bos_id() < 0) throw Error(ErrorKind::input, "empty prompt and no BOS token");
        ids.push_back(tok.bos_id());
    }
    return ids;
}

std::vector<staticlm::ChatMessage> chat_messages(const slm_chat_message* messages, size_t n) {
    if (n && !messages) throw Error(ErrorKind::input, "messages is NULL with n_messages > 0");
    std::vector<staticlm::ChatMessage> m;
    for (size_t i = 0; i < n; ++i) {
        if (!messages[i].role || !messages[i].content)
            throw Error(ErrorKind::input, "message " + std::to_string(i) + " has a NULL role or content");
        m.push_back({messages[i].role, messages[i].content});
    }
    return m;
}

// A conversation's ids as a Chat's first turn and `staticlm batch` make them:
// the template's BOS id when it comes from the tokenizer, then the rendered
// text with the generation prompt.
std::vector<int> chat_prompt_ids(const staticlm::Model& model, const staticlm::Tokenizer& tok,
                                 staticlm::ChatFormat format, const std::vector<staticlm::ChatMessage>& messages) {
    std::vector<int> ids;
    if (format.chat_template().bos_from_tokenizer && staticlm::model_config(model).add_bos && tok.bos_id() >= 0)
        ids.push_back(tok.bos_id());
    const std::vector<int> enc =
        tok.encode(staticlm::render_chat(format, messages, {}, /*add_generation_prompt=*/true), false);
    ids.insert(ids.end(), enc.begin(), enc.end());
    return ids;
}

// A chat reply's stop ids (Chat::reply): the model's EOS ids and the
// template's end-of-turn tokens.
std::vector<int> chat_stop_ids(const staticlm::Model& model, const staticlm::Tokenizer& tok,
                               staticlm::ChatFormat format) {
    std::vector<int> ids = staticlm::model_config(model).eos_ids;
    for (std::string_view st : format.chat_template().stop_tokens) {
        const int id = st.empty() ? -1 : tok.token_id(st);
        if (id >= 0 && std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
    }
    return ids;
}

void write_scores(const std::vector<staticlm::ContinuationScore>& scores, slm_score_result* out) {
    for (size_t i = 0; i < scores.size(); ++i)
        out[i] = {scores[i].logprob, scores[i].tokens, scores[i].greedy ? 1 : 0};
}

GenerateCall generate_call(const staticlm::Model& model, const slm_generate_params* params) {
    const slm_generate_params p = read_params(params, slm_generate_default_params(), "slm_generate_params");
    GenerateCall c;
    c.options.sampling =
        p.sampler ? sampling_from(read_params(p.sampler, slm_sampler_default_params(), "slm_sampler_params"))
                  : staticlm::suggested_sampling(staticlm::model_config(model));
    c.options.max_tokens = p.max_tokens;
    if (p.n_stop_ids && !p.stop_ids) throw Error(ErrorKind::input, "stop_ids is NULL with n_stop_ids > 0");
    if (p.n_stop_ids) c.options.stop_ids.assign(p.stop_ids, p.stop_ids + p.n_stop_ids);
    c.options.stop_strings = stop_strings(p.stop_strings, p.n_stop_strings);
    c.on_token = p.on_token;
    c.on_token_info = p.on_token_info;
    if (p.on_token && p.on_token_info)
        throw Error(ErrorKind::config, "slm_generate_params: set on_token or on_token_info, not both");
    if (p.logprobs < -1 || p.logprobs > staticlm::kMaxLogprobs)
        throw Error(ErrorKind::config, "slm_generate_params.logprobs must be -1 (off) or in 0.." +
                                           std::to_string(staticlm::kMaxLogprobs) + ", got " +
                                           std::to_string(p.logprobs));
    if (p.logprobs > staticlm::model_config(model).vocab)
        throw Error(ErrorKind::config, "slm_generate_params.logprobs " + std::to_string(p.logprobs) +
                                           " exceeds the vocabulary of " +
                                           std::to_string(staticlm::model_config(model).vocab));
    c.logprobs = p.logprobs;
    c.user_data = p.user_data;
    return c;
}

void check_result(const slm_generate_result* out) {
    if (out && out->size != sizeof(slm_generate_result))
        throw Error(ErrorKind::config, "slm_generate_result.size is " + std::to_string(out->size) +
                                           ", set it to sizeof(slm_generate_result) (" +
                                           std::to_string(sizeof(slm_generate_result)) + ")");
}

void write_result(const staticlm::GenerateResult& r, slm_generate_result* out) {
    if (!out) return;
    out->stop_reason = slm_stop_reason(int(r.reason));
    out->n_prompt_tokens = r.stats.prompt_tokens;
    out->n_generated = r.stats.generated_tokens;
    out->prefill_seconds = r.stats.prefill_seconds;
    out->first_token_seconds = r.stats.first_token_seconds;
    out->decode_seconds = r.stats.decode_seconds;
}

static_assert(int(staticlm::StopReason::eos) == SLM_STOP_EOS &&
                  int(staticlm::StopReason::stop_string) == SLM_STOP_STRING &&
                  int(staticlm::StopReason::max_tokens) == SLM_STOP_MAX_TOKENS &&
                  int(staticlm::StopReason::capacity) == SLM_STOP_CAPACITY &&
                  int(staticlm::StopReason::aborted) == SLM_STOP_ABORTED,
              "slm_stop_reason mirrors StopReason");

// The options a session (or each slot of a batch) gets from the C fields, with
// the default buckets of max_seq; a warning when max_seq exceeds the context.
staticlm::SessionOptions session_options(const slm_model& model, int max_seq, slm_kv kv, int threads) {
    const int context = staticlm::model_config(*model.model).max_position;
    staticlm::SessionOptions so;
    if (max_seq < 0)
        throw Error(ErrorKind::config, "max_seq must be >= 0 (0: the default), got " + std::to_string(max_seq));
    so.max_seq = max_seq > 0 ? max_seq : context > 0 ? std::min(2048, context) : 2048;
    so.prefill_buckets = staticlm::default_prefill_buckets(so.max_seq);
    so.append_buckets = staticlm::default_append_buckets(so.max_seq);
    if (kv != SLM_KV_F16 && kv != SLM_KV_F32 && kv != SLM_KV_Q8)
        throw Error(ErrorKind::config, "kv " + std::to_string(int(kv)) +
                                           " is not SLM_KV_F16 (0), SLM_KV_F32 (1) or SLM_KV_Q8 (2)");
    // slm_kv's numbers are KvType's.
    so.kv = staticlm::KvType(kv);
    so.threads = threads;
    if (context > 0 && so.max_seq > context)
        model.log(SLM_LOG_WARN, "max_seq " + std::to_string(so.max_seq) +
                                    " exceeds the model's trained context (max_position_embeddings " +
                                    std::to_string(context) + ")");
    return so;
}

// The library's options from slm_speculation_params (NULL: off), checked.
staticlm::SpeculationOptions speculation_from(const slm_speculation_params* spec) {
    staticlm::SpeculationOptions o;
    if (!spec) return o;
    const slm_speculation_params p =
        read_params(spec, slm_speculation_default_params(), "slm_speculation_params");
    o.max_draft = p.max_draft;
    o.max_ngram = p.max_ngram;
    o.min_ngram = p.min_ngram;
    staticlm::check_speculation_options(o);
    return o;
}

void check_stats(const slm_speculation_stats* stats) {
    if (stats && stats->size != sizeof(slm_speculation_stats))
        throw Error(ErrorKind::config, "slm_speculation_stats.size is " + std::to_string(stats->size) +
                                           ", set it to sizeof(slm_speculation_stats) (" +
                                           std::to_string(sizeof(slm_speculation_stats)) + ")");
}

void write_stats(const staticlm::GenerateStats& g, slm_speculation_stats* stats) {
    if (!stats) return;
    stats->draft_steps = g.draft_steps;
    stats->drafted_tokens = g.drafted_tokens;
    stats->accepted_tokens = g.accepted_tokens;
}

// slm_generate, constrained when `constrained` (constraint checked first: a
// refused one leaves the session as it was), with speculation when `spec`.
slm_status run_generate(slm_session* s, const int32_t* prompt, size_t n_prompt, const slm_generate_params* params,
                        bool constrained, const slm_constraint* constraint, slm_generate_result* result,
                        int* complete, const slm_speculation_params* spec = nullptr,
                        slm_speculation_stats* stats = nullptr) {
    if (!prompt && n_prompt) return null_arg("prompt");
    return with_session(s, [&] {
        check_result(result);
        check_stats(stats);
        GenerateCall call = generate_call(*s->model, params);
        staticlm::GenerateOptions o = call.options;
        if (constrained) o.constraint = use_constraint(constraint, *s->model);
        o.speculation = speculation_from(spec);
        o.on_token = call.sink(s->session);
        const staticlm::GenerateResult r = staticlm::generate(s->session, staticlm::model_tokenizer(*s->model),
                                                              std::span<const int>(prompt, n_prompt), o);
        write_result(r, result);
        write_stats(r.stats, stats);
        if (complete) *complete = r.complete ? 1 : 0;
    });
}

// A batch; prefix NULL: no prefix pool; spec NULL: no speculation.
slm_status create_batch(slm_model* model, const slm_batch_params* params, const slm_batch_prefix_params* prefix,
                        slm_batch** out, const slm_speculation_params* spec = nullptr) {
    if (!model || !out) return null_arg("model/out");
    *out = nullptr;
    return guard(&model->log, [&] {
        const slm_batch_params p = read_params(params, slm_batch_default_params(), "slm_batch_params");
        staticlm::BatchSessionOptions o;
        o.slots = p.slots;
        o.session = session_options(*model, p.max_seq, p.kv, p.threads);
        const staticlm::SpeculationOptions so = speculation_from(spec);
        o.max_draft = so.max_draft;
        staticlm::PrefixOptions po;  // pool_tokens 0: none
        int min_tokens = 0;
        if (prefix) {
            const slm_batch_prefix_params pp =
                read_params(prefix, slm_batch_default_prefix_params(), "slm_batch_prefix_params");
            if (pp.pool_tokens < -1)
                throw Error(ErrorKind::config, "slm_batch_prefix_params.pool_tokens must be -1 (max_seq), 0 (no "
                                               "pool) or a token count, got " + std::to_string(pp.pool_tokens));
            if (pp.min_tokens < 1)
                throw Error(ErrorKind::config, "slm_batch_prefix_params.min_tokens must be >= 1, got " +
                                                   std::to_string(pp.min_tokens));
            po.pool_tokens = pp.pool_tokens;
            min_tokens = pp.min_tokens;
        }
        auto b = std::make_unique<slm_batch>();
        b->model = model->model;
        b->log = model->log;
        b->chat_format = model->chat_format;
        b->engine = staticlm::make_batched_engine(model->model, o, p.prefill_budget, po);
        b->speculation = so;
        b->pool_tokens = po.pool_tokens < 0 ? o.session.max_seq : po.pool_tokens;
        if (b->pool_tokens > 0) b->prefixes.emplace(min_tokens);
        b->running.reserve(size_t(p.slots));
        b->stepped.reserve(size_t(p.slots));
        *out = b.release();
    });
}

slm_status submit_request(slm_batch* b, const slm_batch_request* request, bool constrained,
                          const slm_constraint* constraint, uint64_t* id) {
    if (!request) return null_arg("request");
    return with_busy(b, "batch", [&] {
        const slm_batch_request r = read_params(request, slm_batch_default_request(), "slm_batch_request");
        staticlm::EngineRequest er;
        if (int(r.tokens != nullptr) + int(r.text != nullptr) + int(r.messages != nullptr) != 1)
            throw Error(ErrorKind::input, "slm_batch_request: set one of tokens, text and messages (" +
                                              std::to_string(int(r.tokens != nullptr) + int(r.text != nullptr) +
                                                             int(r.messages != nullptr)) +
                                              " are set)");
        if (r.tokens) {
            er.prompt.assign(r.tokens, r.tokens + r.n_tokens);
        } else if (r.text) {
            er.prompt = prompt_ids(tokenizer_of(*b->model), r.text);
        } else {
            const staticlm::Tokenizer& tok = tokenizer_of(*b->model);
            er.prompt = chat_prompt_ids(*b->model, tok, b->chat_format, chat_messages(r.messages, r.n_messages));
            if (!r.stop_ids) er.options.stop_ids = chat_stop_ids(*b->model, tok, b->chat_format);
        }
        staticlm::GenerateOptions& o = er.options;
        o.sampling = r.sampler ? sampling_from(read_params(r.sampler, slm_sampler_default_params(), "slm_sampler_params"))
                               : staticlm::suggested_sampling(staticlm::model_config(*b->model));
        if (r.max_tokens < -1)
            throw Error(ErrorKind::config, "max_tokens must be >= 0, or -1 for no limit, got " +
                                               std::to_string(r.max_tokens));
        o.max_tokens = r.max_tokens < 0 ? INT_MAX : r.max_tokens;  // the slot's capacity ends it first
        if (r.n_stop_ids && !r.stop_ids) throw Error(ErrorKind::input, "stop_ids is NULL with n_stop_ids > 0");
        if (r.stop_ids) o.stop_ids.assign(r.stop_ids, r.stop_ids + r.n_stop_ids);
        o.stop_strings = stop_strings(r.stop_strings, r.n_stop_strings);
        o.logprobs = r.logprobs;
        if (constrained) o.constraint = use_constraint(constraint, *b->model);
        o.speculation = b->speculation;
        er.tag = b->next_id;
        if (b->engine->active() >= b->engine->capacity())
            throw Error(ErrorKind::capacity, "all " + std::to_string(b->engine->capacity()) +
                                                 " slots hold running requests: step until one finishes");
        if (b->prefixes) b->prefixes->plan(er, *b->engine);
        b->engine->submit(std::move(er));  // checks the rest; throws before changing anything
        b->running.push_back({b->next_id, r.tag, r.logprobs >= 0, constrained});
        if (id) *id = b->next_id;
        ++b->next_id;
    });
}

}  // namespace

extern "C" {

// ------------------------------------------------------------------- basics

const char* slm_version(void) { return SLM_VERSION_STRING; }
int slm_api_version(void) { return SLM_API_VERSION; }

const char* slm_status_name(slm_status status) {
    switch (status) {
        case SLM_OK: return "ok";
        case SLM_ERR_INTERNAL: return "internal";
        default: break;
    }
    const int kind = int(status) - 1;
    if (kind >= 0 && kind <= int(ErrorKind::aborted)) return staticlm::error_kind_name(ErrorKind(kind));
    return "unknown";
}

const char* slm_last_error(void) { return g_error.c_str(); }
int slm_max_threads(void) { return staticlm::max_threads(); }

int slm_weights_from_name(const char* name) {
    if (!name) return -1;
    if (std::strcmp(name, "native") == 0) return SLM_WEIGHTS_NATIVE;
    const std::optional<staticlm::WeightType> t = staticlm::parse_weight_type(name);
    return t ? int(*t) : -1;
}

const char* slm_weights_name(slm_weights weights) {
    if (weights == SLM_WEIGHTS_NATIVE) return "native";
    const std::optional<staticlm::WeightType> t = staticlm::weight_type_from_id(int(weights));
    return t ? staticlm::weight_type_name(*t) : "?";
}

// ------------------------------------------------------------------- models

slm_model_params slm_model_default_params(void) {
    slm_model_params p{};
    p.size = sizeof p;
    p.weights = SLM_WEIGHTS_Q8;
    p.threads = 0;
    p.load_tokenizer = 1;
    p.prefer_tokenizer_json = 0;
    p.act_bits = 8;
    return p;
}

slm_status slm_model_load(const char* path, const slm_model_params* params, slm_model** out) {
    if (!path || !out) return null_arg("path/out");
    *out = nullptr;
    LogSink log;
    if (params && params->size == sizeof(slm_model_params)) log = {params->log, params->log_user_data};
    return guard(&log, [&] {
        const slm_model_params p = read_params(params, slm_model_default_params(), "slm_model_params");
        staticlm::LoadOptions o;
        if (p.weights == SLM_WEIGHTS_NATIVE)
            o.native_weights = true;  // o.weights (q8) for the types staticlm has no layout of
        else
            o.weights = weight_type_from_c(int(p.weights));
        o.threads = p.threads;
        o.act_bits = p.act_bits;
        o.load_tokenizer = p.load_tokenizer != 0;
        o.prefer_tokenizer_json = p.prefer_tokenizer_json != 0;
        if (p.progress) {
            const slm_progress_fn fn = p.progress;
            void* user = p.progress_user_data;
            o.progress = [fn, user](uint64_t done, uint64_t total) {
                const float f = total ? float(double(done) / double(total)) : 1.0f;
                if (!fn(f, user)) throw Error(ErrorKind::aborted, "model loading cancelled by the progress callback");
            };
        }
        auto m = std::make_unique<slm_model>();
        m->model = staticlm::load_model(path, o);
        m->log = log;
        m->chat_format = staticlm::detect_chat_format(path);  // a directory's files, a GGUF's metadata
        const staticlm::ModelConfig& c = staticlm::model_config(*m->model);
        char line[512];
        std::snprintf(line, sizeof line, "loaded %s: %s, %d layers, vocab %d, weights %s (%.1f MiB) in %.2f s, kernels %s",
                      path, c.architecture.c_str(), c.n_layers, c.vocab,
                      staticlm::model_weights_label(*m->model).c_str(),
                      double(staticlm::model_weight_bytes(*m->model)) / 1048576.0,
                      staticlm::model_load_seconds(*m->model), staticlm::kernel_target_name().c_str());
        log(SLM_LOG_INFO, line);
        *out = m.release();
    });
}

void slm_model_free(slm_model* model) { delete model; }

int slm_model_vocab(const slm_model* model) {
    return model ? staticlm::model_config(*model->model).vocab : -1;
}

int slm_model_context_length(const slm_model* model) {
    return model ? std::max(0, staticlm::model_config(*model->model).max_position) : -1;
}

int slm_model_bos(const slm_model* model) {
    if (!model) return -1;
    if (const staticlm::Tokenizer* tok = staticlm::model_tokenizer(*model->model); tok && tok->bos_id() >= 0)
        return tok->bos_id();
    return staticlm::model_config(*model->model).bos_id;
}

int slm_model_add_bos(const slm_model* model) {
    return model ? int(staticlm::model_config(*model->model).add_bos) : -1;
}

int slm_model_eos(const slm_model* model) {
    if (!model) return -1;
    const std::vector<int>& eos = staticlm::model_config(*model->model).eos_ids;
    return eos.empty() ? -1 : eos[0];
}

int slm_model_eos_ids(const slm_model* model, int32_t* ids, int cap) {
    if (!model || (!ids && cap > 0)) return null_arg("model/ids"), -1;
    const std::vector<int>& eos = staticlm::model_config(*model->model).eos_ids;
    for (int i = 0; i < cap && i < int(eos.size()); ++i) ids[i] = eos[size_t(i)];
    return int(eos.size());
}

int slm_model_is_eos(const slm_model* model, int32_t token) {
    if (!model) return 0;
    const std::vector<int>& eos = staticlm::model_config(*model->model).eos_ids;
    return std::find(eos.begin(), eos.end(), token) != eos.end();
}

const char* slm_model_chat_format(const slm_model* model) {
    return model ? staticlm::chat_format_name(model->chat_format) : "plain";
}

// ------------------------------------------------------------------- tokens

int slm_tokenize(const slm_model* model, const char* text, int add_special, int32_t* ids, int cap) {
    if (!model || !text) return null_arg("model/text"), -1;
    int n = -1;
    guard(&model->log, [&] {
        if (cap > 0 && !ids) throw Error(ErrorKind::input, "null ids with a capacity of " + std::to_string(cap));
        const std::vector<int> v = tokenizer_of(*model->model).encode(text, add_special != 0);
        for (int i = 0; i < cap && i < int(v.size()); ++i) ids[i] = v[size_t(i)];
        n = int(v.size());
    });
    return n;
}

int slm_detokenize(const slm_model* model, const int32_t* ids, int n, char* text, int cap) {
    if (!model || (!ids && n > 0)) return null_arg("model/ids"), -1;
    int len = -1;
    guard(&model->log, [&] {
        len = copy_out(tokenizer_of(*model->model).decode(std::vector<int>(ids, ids + std::max(n, 0))), text, cap);
    });
    return len;
}

int slm_token_to_piece(const slm_model* model, int32_t token, char* piece, int cap) {
    if (!model) return null_arg("model"), -1;
    int len = -1;
    guard(&model->log, [&] { len = copy_out(tokenizer_of(*model->model).piece(token), piece, cap); });
    return len;
}

slm_status slm_detokenizer_create(const slm_model* model, slm_detokenizer** out) {
    if (!model || !out) return null_arg("model/out");
    *out = nullptr;
    return guard(&model->log, [&] {
        *out = new slm_detokenizer{model->model, staticlm::StreamDecoder(tokenizer_of(*model->model)), {}};
    });
}

slm_status slm_detokenizer_push(slm_detokenizer* d, int32_t token, const char** text, size_t* len) {
    if (!d || !text || !len) return null_arg("detokenizer/text/len");
    return guard(nullptr, [&] {
        const std::string_view t = d->decoder.push(token);
        *text = t.empty() ? "" : t.data();
        *len = t.size();
    });
}

slm_status slm_detokenizer_flush(slm_detokenizer* d, const char** text, size_t* len) {
    if (!d || !text || !len) return null_arg("detokenizer/text/len");
    return guard(nullptr, [&] {
        d->flushed.assign(d->decoder.flush());
        d->decoder.reset();
        *text = d->flushed.c_str();
        *len = d->flushed.size();
    });
}

void slm_detokenizer_free(slm_detokenizer* d) { delete d; }

// ----------------------------------------------------------------- sessions

slm_session_params slm_session_default_params(void) {
    slm_session_params p{};
    p.size = sizeof p;
    p.max_seq = 0;
    p.kv = SLM_KV_F16;
    p.threads = 0;
    p.ring_sliding = 0;
    return p;
}

slm_status slm_session_create(slm_model* model, const slm_session_params* params, slm_session** out) {
    if (!model || !out) return null_arg("model/out");
    *out = nullptr;
    return guard(&model->log, [&] {
        const slm_session_params p = read_params(params, slm_session_default_params(), "slm_session_params");
        staticlm::SessionOptions so = session_options(*model, p.max_seq, p.kv, p.threads);
        if (p.n_prefill_buckets && !p.prefill_buckets)
            throw Error(ErrorKind::input, "prefill_buckets is NULL with n_prefill_buckets > 0");
        if (p.n_append_buckets && !p.append_buckets)
            throw Error(ErrorKind::input, "append_buckets is NULL with n_append_buckets > 0");
        so.prefill_buckets = p.prefill_buckets
                                 ? std::vector<int>(p.prefill_buckets, p.prefill_buckets + p.n_prefill_buckets)
                                 : staticlm::default_prefill_buckets(so.max_seq);
        so.append_buckets = p.append_buckets
                                ? std::vector<int>(p.append_buckets, p.append_buckets + p.n_append_buckets)
                                : staticlm::default_append_buckets(so.max_seq);
        so.ring_sliding = p.ring_sliding != 0;
        so.all_logits = p.all_logits != 0;
        if (p.reserved != 0)
            throw Error(ErrorKind::config, "slm_session_params.reserved must be 0, got " + std::to_string(p.reserved));
        *out = new slm_session{model->model, staticlm::Session(model->model, so), model->chat_format, model->log};
    });
}

void slm_session_free(slm_session* s) { delete s; }

slm_status slm_prefill(slm_session* s, const int32_t* tokens, size_t n, const float** logits) {
    if (!tokens && n) return null_arg("tokens");
    return with_session(s, [&] {
        auto l = s->session.prefill(std::span<const int>(tokens, n));
        if (logits) *logits = l.data();
    });
}

slm_status slm_append(slm_session* s, const int32_t* tokens, size_t n, const float** logits) {
    if (!tokens && n) return null_arg("tokens");
    return with_session(s, [&] {
        auto l = s->session.append(std::span<const int>(tokens, n));
        if (logits) *logits = l.data();
    });
}

slm_status slm_decode(slm_session* s, int32_t token, const float** logits) {
    return with_session(s, [&] {
        auto l = s->session.decode(token);
        if (logits) *logits = l.data();
    });
}

slm_status slm_rewind(slm_session* s, int n) {
    return with_session(s, [&] { s->session.rewind(n); });
}

slm_status slm_reset(slm_session* s) {
    return with_session(s, [&] { s->session.reset(); });
}

int slm_pos(const slm_session* s) { return s ? s->session.pos() : -1; }
int slm_max_seq(const slm_session* s) { return s ? s->session.max_seq() : -1; }

// ---------------------------------------------------- saved state and abort

slm_status slm_session_set_abort(slm_session* s, slm_abort_fn fn, void* user_data) {
    return with_session(s, [&] {
        s->abort_fn = fn;
        s->abort_user = fn ? user_data : nullptr;
        s->session.set_abort(fn ? slm_session::ask_abort : nullptr, s);
    });
}

slm_status slm_session_state_size(slm_session* s, size_t* size) {
    if (!size) return null_arg("size");
    return with_session(s, [&] { *size = s->session.state_bytes(); });
}

slm_status slm_session_save(slm_session* s, void* buf, size_t cap, size_t* written) {
    if (!buf && cap) return null_arg("buf");
    return with_session(s, [&] {
        const size_t n = s->session.save_state(std::span<std::byte>(static_cast<std::byte*>(buf), cap));
        if (written) *written = n;
    });
}

slm_status slm_session_load(slm_session* s, const void* buf, size_t size) {
    if (!buf && size) return null_arg("buf");
    return with_session(s, [&] {
        s->session.load_state(std::span<const std::byte>(static_cast<const std::byte*>(buf), size));
    });
}

slm_status slm_session_save_file(slm_session* s, const char* path) {
    if (!path) return null_arg("path");
    return with_session(s, [&] { s->session.save_state_file(path); });
}

slm_status slm_session_load_file(slm_session* s, const char* path) {
    if (!path) return null_arg("path");
    return with_session(s, [&] { s->session.load_state_file(path); });
}

// ----------------------------------------------------------------- sampling

slm_sampler_params slm_sampler_default_params(void) {
    return sampler_params_from(staticlm::suggested_sampling(staticlm::ModelConfig{}));
}

slm_sampler_params slm_model_sampler_params(const slm_model* model) {
    if (!model) return slm_sampler_default_params();
    return sampler_params_from(staticlm::suggested_sampling(staticlm::model_config(*model->model)));
}

slm_status slm_sampler_create(const slm_model* model, const slm_sampler_params* params, slm_sampler** out) {
    if (!model || !out) return null_arg("model/out");
    *out = nullptr;
    return guard(&model->log, [&] {
        const staticlm::SamplingOptions o =
            params ? sampling_from(read_params(params, slm_sampler_default_params(), "slm_sampler_params"))
                   : staticlm::suggested_sampling(staticlm::model_config(*model->model));
        *out = new slm_sampler{model->model, staticlm::Sampler(staticlm::model_config(*model->model).vocab, o)};
    });
}

slm_status slm_sampler_sample(slm_sampler* sampler, const float* logits, const int32_t* recent, size_t n_recent,
                              int32_t* token) {
    if (!sampler || !logits || !token || (!recent && n_recent)) return null_arg("sampler/logits/token/recent");
    return guard(nullptr, [&] {
        const size_t vocab = size_t(staticlm::model_config(*sampler->model).vocab);
        *token = sampler->sampler.sample(std::span<const float>(logits, vocab),
                                         std::span<const int>(recent, n_recent));
    });
}

void slm_sampler_free(slm_sampler* sampler) { delete sampler; }

// --------------------------------------------------------------- generation

slm_generate_params slm_generate_default_params(void) {
    slm_generate_params p{};
    p.size = sizeof p;
    p.max_tokens = 256;
    p.logprobs = -1;
    return p;
}

slm_status slm_generate(slm_session* s, const int32_t* prompt, size_t n_prompt, const slm_generate_params* params,
                        slm_generate_result* result) {
    return run_generate(s, prompt, n_prompt, params, false, nullptr, result, nullptr);
}

// ------------------------------------------------------ constrained output

slm_status slm_constraint_json_schema(const slm_model* model, const char* text, size_t len, slm_constraint** out) {
    return make_constraint(model, text, len, out, /*schema=*/true);
}

slm_status slm_constraint_grammar(const slm_model* model, const char* text, size_t len, slm_constraint** out) {
    return make_constraint(model, text, len, out, /*schema=*/false);
}

void slm_constraint_free(slm_constraint* constraint) {
    if (!constraint) return;
    {
        const std::lock_guard lock(g_constraints_mutex);
        if (g_constraints.erase(constraint) == 0) return;  // freed already, or not ours
    }
    delete constraint;
}

slm_status slm_generate_constrained(slm_session* s, const int32_t* prompt, size_t n_prompt,
                                    const slm_generate_params* params, const slm_constraint* constraint,
                                    slm_generate_result* result, int* complete) {
    return run_generate(s, prompt, n_prompt, params, true, constraint, result, complete);
}

// ------------------------------------------------------------------ scoring

slm_status slm_score(slm_session* s, const int32_t* prompt, size_t n_prompt, const int32_t* const* continuations,
                     const size_t* n_tokens, size_t n, slm_score_result* results) {
    if ((!prompt && n_prompt) || (n && (!continuations || !n_tokens || !results)))
        return null_arg("prompt/continuations/n_tokens/results");
    return with_session(s, [&] {
        std::vector<std::vector<int>> conts(n);
        for (size_t i = 0; i < n; ++i) {
            if (!continuations[i] && n_tokens[i])
                throw Error(ErrorKind::input, "continuations[" + std::to_string(i) + "] is NULL");
            conts[i].assign(continuations[i], continuations[i] + n_tokens[i]);
        }
        write_scores(staticlm::score_continuations(s->session, std::span<const int>(prompt, n_prompt), conts),
                     results);
    });
}

slm_status slm_score_text(slm_session* s, const char* prompt, const char* const* continuations, size_t n,
                          slm_score_result* results) {
    if (!prompt || (n && (!continuations || !results))) return null_arg("prompt/continuations/results");
    return with_session(s, [&] {
        std::vector<std::string> texts(n);
        for (size_t i = 0; i < n; ++i) {
            if (!continuations[i]) throw Error(ErrorKind::input, "continuations[" + std::to_string(i) + "] is NULL");
            texts[i] = continuations[i];
        }
        const staticlm::ScoreIds ids = staticlm::score_ids(tokenizer_of(*s->model), prompt, texts);
        write_scores(staticlm::score_continuations(s->session, ids.prompt, ids.continuations), results);
    });
}

// ---------------------------------------------------------- batched sessions

slm_batch_params slm_batch_default_params(void) {
    slm_batch_params p{};
    p.size = sizeof p;
    p.slots = 16;
    p.max_seq = 0;
    p.kv = SLM_KV_F16;
    p.threads = 0;
    p.prefill_budget = 0;
    return p;
}

slm_batch_request slm_batch_default_request(void) {
    slm_batch_request r{};
    r.size = sizeof r;
    r.max_tokens = 256;
    r.logprobs = -1;
    return r;
}

slm_status slm_batch_create(slm_model* model, const slm_batch_params* params, slm_batch** out) {
    return create_batch(model, params, nullptr, out);
}

slm_batch_prefix_params slm_batch_default_prefix_params(void) {
    slm_batch_prefix_params p{};
    p.size = sizeof p;
    p.pool_tokens = -1;
    p.min_tokens = 32;
    return p;
}

slm_status slm_batch_create_with_prefix(slm_model* model, const slm_batch_params* params,
                                        const slm_batch_prefix_params* prefix, slm_batch** out) {
    const slm_batch_prefix_params defaults = slm_batch_default_prefix_params();
    return create_batch(model, params, prefix ? prefix : &defaults, out);
}

slm_status slm_batch_get_counters(const slm_batch* b, slm_batch_counters* counters) {
    if (!b || !counters) return null_arg("batch/counters");
    return guard(nullptr, [&] {
        if (counters->size != sizeof(slm_batch_counters))
            throw Error(ErrorKind::config, "slm_batch_counters.size is " + std::to_string(counters->size) +
                                               ", set it to sizeof(slm_batch_counters) (" +
                                               std::to_string(sizeof(slm_batch_counters)) + ")");
        const staticlm::EngineCounters c = b->engine->counters();
        counters->prompt_positions = c.prompt_positions;
        counters->shared_positions = c.shared_positions;
        counters->prefixes = c.prefixes;
        counters->pool_tokens = b->pool_tokens;
    });
}

void slm_batch_free(slm_batch* b) { delete b; }

slm_status slm_batch_submit(slm_batch* b, const slm_batch_request* request, uint64_t* id) {
    return submit_request(b, request, false, nullptr, id);
}

slm_status slm_batch_submit_constrained(slm_batch* b, const slm_batch_request* request,
                                        const slm_constraint* constraint, uint64_t* id) {
    return submit_request(b, request, true, constraint, id);
}

slm_speculation_params slm_speculation_default_params(void) {
    slm_speculation_params p{};
    p.size = sizeof p;
    p.max_draft = 8;
    p.max_ngram = 3;
    p.min_ngram = 1;
    return p;
}

slm_status slm_speculation_parse(const char* text, slm_speculation_params* out) {
    if (!text || !out) return null_arg("text/out");
    return guard(nullptr, [&] {
        if (out->size != sizeof(slm_speculation_params))
            throw Error(ErrorKind::config, "slm_speculation_params.size is " + std::to_string(out->size) +
                                               ", set it to sizeof(slm_speculation_params) (" +
                                               std::to_string(sizeof(slm_speculation_params)) + ")");
        const std::string v = text;
        slm_speculation_params p = slm_speculation_default_params();
        if (v.empty() || v == "off") {
            p.max_draft = 0;
        } else if (v != "ngram") {
            const std::string n = v.rfind("ngram:", 0) == 0 ? v.substr(6) : std::string();
            const bool digits = !n.empty() && n.size() <= 3 && n.find_first_not_of("0123456789") == std::string::npos;
            const int draft = digits ? std::stoi(n) : 0;
            if (draft < 1 || draft > staticlm::kMaxDraft)
                throw Error(ErrorKind::config, "speculation takes ngram or ngram:N with N in 1.." +
                                                   std::to_string(staticlm::kMaxDraft) +
                                                   " (the most tokens drafted per step), or off; got '" +
                                                   v.substr(0, 64) + "'");
            p.max_draft = draft;
        }
        *out = p;
    });
}

slm_status slm_generate_speculative(slm_session* s, const int32_t* prompt, size_t n_prompt,
                                    const slm_generate_params* params, const slm_constraint* constraint,
                                    const slm_speculation_params* spec, slm_generate_result* result, int* complete,
                                    slm_speculation_stats* stats) {
    return run_generate(s, prompt, n_prompt, params, constraint != nullptr, constraint, result, complete, spec,
                        stats);
}

slm_status slm_batch_create_speculative(slm_model* model, const slm_batch_params* params,
                                        const slm_batch_prefix_params* prefix, const slm_speculation_params* spec,
                                        slm_batch** out) {
    return create_batch(model, params, prefix, out, spec);
}

slm_status slm_batch_collected_speculation(const slm_batch* b, slm_speculation_stats* stats) {
    if (!b || !stats) return null_arg("batch/stats");
    return guard(nullptr, [&] {
        check_stats(stats);
        if (b->has_collected) {
            write_stats(b->collected.outcome.result.stats, stats);
        } else {
            stats->draft_steps = stats->drafted_tokens = stats->accepted_tokens = 0;
        }
    });
}

int slm_batch_collected_complete(const slm_batch* b) {
    if (!b || !b->has_collected || !b->collected.constrained) return -1;
    return b->collected.outcome.result.complete ? 1 : 0;
}

slm_status slm_batch_step(slm_batch* b, int* n_finished) {
    if (n_finished) *n_finished = 0;
    return with_busy(b, "batch", [&] {
        b->stepped.clear();
        b->engine->step(b->stepped);
        for (staticlm::EngineOutcome& o : b->stepped) b->finish(std::move(o));
        if (n_finished) *n_finished = int(b->stepped.size());
    });
}

slm_status slm_batch_cancel(slm_batch* b, uint64_t id) {
    return with_busy(b, "batch", [&] {
        staticlm::EngineOutcome o;
        if (!b->engine->cancel(id, o)) {
            const bool done = std::any_of(b->done.begin(), b->done.end(),
                                          [&](const slm_batch::Done& d) { return d.outcome.tag == id; });
            throw Error(ErrorKind::input, "request " + std::to_string(id) + " is not running (" +
                                              (done ? "it finished: collect it" : "unknown or collected") + ")");
        }
        b->finish(std::move(o));
    });
}

slm_status slm_batch_collect(slm_batch* b, slm_batch_result* result, int* got) {
    if (!result || !got) return null_arg("result/got");
    *got = 0;
    return with_busy(b, "batch", [&] {
        if (result->size != sizeof(slm_batch_result))
            throw Error(ErrorKind::config, "slm_batch_result.size is " + std::to_string(result->size) +
                                               ", set it to sizeof(slm_batch_result) (" +
                                               std::to_string(sizeof(slm_batch_result)) + ")");
        if (b->done.empty()) return;
        b->has_collected = true;
        b->collected = std::move(b->done.front());
        b->done.pop_front();
        const staticlm::GenerateResult& g = b->collected.outcome.result;
        b->collected_top.resize(g.top_logprobs.size());
        for (size_t i = 0; i < g.top_logprobs.size(); ++i)
            b->collected_top[i] = {g.top_logprobs[i].token, g.top_logprobs[i].logprob};
        slm_batch_result& r = *result;
        r.id = b->collected.outcome.tag;
        r.tag = b->collected.tag;
        r.stop_reason = slm_stop_reason(int(g.reason));
        r.n_prompt_tokens = g.stats.prompt_tokens;
        r.n_tokens = int(g.tokens.size());
        r.tokens = g.tokens.data();
        r.text = g.text.c_str();
        r.text_len = g.text.size();
        r.n_top = g.top_n;
        r.logprobs = b->collected.logprobs ? g.logprobs.data() : nullptr;
        r.top = g.top_n > 0 ? b->collected_top.data() : nullptr;
        r.prefill_seconds = g.stats.prefill_seconds;
        r.first_token_seconds = g.stats.first_token_seconds;
        r.decode_seconds = g.stats.decode_seconds;
        *got = 1;
    });
}

int slm_batch_slots(const slm_batch* b) { return b ? b->engine->capacity() : -1; }
int slm_batch_running(const slm_batch* b) { return b ? int(b->running.size()) : -1; }
int slm_batch_finished(const slm_batch* b) { return b ? int(b->done.size()) : -1; }

// --------------------------------------------------------------------- chat

int slm_chat_apply_template(const slm_model* model, const slm_chat_message* messages, size_t n,
                            int add_generation_prompt, char* text, int cap) {
    if (!model || (!messages && n)) return null_arg("model/messages"), -1;
    int len = -1;
    guard(&model->log, [&] {
        len = copy_out(staticlm::render_chat(model->chat_format, chat_messages(messages, n), {},
                                             add_generation_prompt != 0),
                       text, cap);
    });
    return len;
}

slm_status slm_chat_create(slm_session* session, const char* system, slm_chat** out) {
    if (!session || !out) return null_arg("session/out");
    *out = nullptr;
    return guard(&session->log, [&] {
        staticlm::ChatOptions co;
        if (system) co.system = system;
        *out = new slm_chat{session, staticlm::Chat(session->session, tokenizer_of(*session->model),
                                                    session->chat_format, co)};
    });
}

slm_status slm_chat_reply(slm_chat* chat, const char* user, const slm_generate_params* params,
                          slm_generate_result* result) {
    if (!chat || !user) return null_arg("chat/user");
    slm_session* s = chat->session;
    return with_session(s, [&] {
        check_result(result);
        GenerateCall call = generate_call(*s->model, params);
        staticlm::GenerateOptions o = call.options;
        o.on_token = call.sink(s->session);
        write_result(chat->chat.reply(user, o), result);
    });
}

void slm_chat_free(slm_chat* chat) { delete chat; }

}  // extern "C"
