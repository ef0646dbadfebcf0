// The C API (include/staticlm/staticlm.h) over the C++ API: exceptions become
// status codes and a per-thread message, params structs are read up to their
// `size`, and every call on a session holds its busy flag for its whole length.
#include "staticlm/staticlm.h"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "staticlm/chat.hpp"
#include "staticlm/error.hpp"
#include "staticlm/generate.hpp"
#include "staticlm/model.hpp"
#include "staticlm/session.hpp"
#include "staticlm/tokenizer.hpp"

// The C enum is the C++ one by number: formats are converted by value, names
// go through staticlm::parse_weight_type.
static_assert(int(SLM_WEIGHTS_Q8) == int(staticlm::WeightType::q8) &&
              int(SLM_WEIGHTS_F16) == int(staticlm::WeightType::f16) &&
              int(SLM_WEIGHTS_BF16) == int(staticlm::WeightType::bf16) &&
              int(SLM_WEIGHTS_F32) == int(staticlm::WeightType::f32) &&
              int(SLM_WEIGHTS_Q4) == int(staticlm::WeightType::q4) &&
              int(SLM_WEIGHTS_Q5) == int(staticlm::WeightType::q5) &&
              int(SLM_WEIGHTS_Q4K) == int(staticlm::WeightType::q4k) &&
              int(SLM_WEIGHTS_Q6K) == int(staticlm::WeightType::q6k) &&
              int(SLM_WEIGHTS_Q5K) == int(staticlm::WeightType::q5k) &&
              int(SLM_WEIGHTS_Q4A) == int(staticlm::WeightType::q4a) &&
              int(SLM_WEIGHTS_Q5A) == int(staticlm::WeightType::q5a));

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

// Reads a caller's params struct: NULL gives the defaults; otherwise `size`
// must be the size of a layout this library knows (version 1: sizeof(T)).
template <class T>
T read_params(const T* p, const T& defaults, const char* name) {
    if (!p) return defaults;
    if constexpr (std::is_same_v<T, slm_model_params>) {
        // The struct before act_bits was added: its fields, act_bits default.
        if (p->size == offsetof(slm_model_params, act_bits)) {
            T r = defaults;
            std::memcpy(static_cast<void*>(&r), p, p->size);
            r.size = sizeof(T);
            return r;
        }
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
};

struct slm_session {
    std::shared_ptr<const staticlm::Model> model;
    staticlm::Session session;
    staticlm::ChatFormat chat_format;
    LogSink log;
    std::atomic<bool> busy{false};
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

namespace {

// Runs fn with the session's busy flag held; a second entry gets SLM_ERR_BUSY.
template <class Fn>
slm_status with_session(slm_session* s, Fn&& fn) {
    if (!s) return null_arg("session");
    if (s->busy.exchange(true, std::memory_order_acquire))
        return fail(SLM_ERR_BUSY, "session is busy: another call on it is running (use a session from one "
                                  "thread at a time, and not from its own callbacks)");
    const slm_status status = guard(&s->log, fn);
    s->busy.store(false, std::memory_order_release);
    return status;
}

struct GenerateCall {
    staticlm::GenerateOptions options;
    slm_token_fn on_token = nullptr;
    void* user_data = nullptr;

    static bool token(void* ctx, int token, std::string_view text) {
        const auto& c = *static_cast<const GenerateCall*>(ctx);
        return c.on_token(token, text.empty() ? "" : text.data(), text.size(), c.user_data) != 0;
    }
};

GenerateCall generate_call(const staticlm::Model& model, const slm_generate_params* params) {
    const slm_generate_params p = read_params(params, slm_generate_default_params(), "slm_generate_params");
    GenerateCall c;
    c.options.sampling =
        p.sampler ? sampling_from(read_params(p.sampler, slm_sampler_default_params(), "slm_sampler_params"))
                  : staticlm::suggested_sampling(staticlm::model_config(model));
    c.options.max_tokens = p.max_tokens;
    if (p.n_stop_ids && !p.stop_ids) throw Error(ErrorKind::input, "stop_ids is NULL with n_stop_ids > 0");
    if (p.n_stop_ids) c.options.stop_ids.assign(p.stop_ids, p.stop_ids + p.n_stop_ids);
    if (p.n_stop_strings && !p.stop_strings)
        throw Error(ErrorKind::input, "stop_strings is NULL with n_stop_strings > 0");
    for (size_t i = 0; i < p.n_stop_strings; ++i) {
        if (!p.stop_strings[i]) throw Error(ErrorKind::input, "stop_strings[" + std::to_string(i) + "] is NULL");
        c.options.stop_strings.emplace_back(p.stop_strings[i]);
    }
    c.on_token = p.on_token;
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
        std::snprintf(line, sizeof line, "loaded %s: %s, %d layers, vocab %d, %s weights (%.1f MiB) in %.2f s, kernels %s",
                      path, c.architecture.c_str(), c.n_layers, c.vocab,
                      staticlm::model_native_weights(*m->model)
                          ? "native"
                          : staticlm::weight_type_name(staticlm::model_weight_type(*m->model)),
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
        const int context = staticlm::model_config(*model->model).max_position;
        staticlm::SessionOptions so;
        if (p.max_seq < 0)
            throw Error(ErrorKind::config, "max_seq must be >= 0 (0: the default), got " + std::to_string(p.max_seq));
        so.max_seq = p.max_seq > 0 ? p.max_seq : context > 0 ? std::min(2048, context) : 2048;
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
        if (p.kv != SLM_KV_F16 && p.kv != SLM_KV_F32)
            throw Error(ErrorKind::config,
                        "kv " + std::to_string(int(p.kv)) + " is not SLM_KV_F16 (0) or SLM_KV_F32 (1)");
        so.kv = p.kv == SLM_KV_F32 ? staticlm::KvType::f32 : staticlm::KvType::f16;
        so.threads = p.threads;
        so.ring_sliding = p.ring_sliding != 0;
        if (context > 0 && so.max_seq > context)
            model->log(SLM_LOG_WARN, "max_seq " + std::to_string(so.max_seq) +
                                         " exceeds the model's trained context (max_position_embeddings " +
                                         std::to_string(context) + ")");
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
    return p;
}

slm_status slm_generate(slm_session* s, const int32_t* prompt, size_t n_prompt, const slm_generate_params* params,
                        slm_generate_result* result) {
    if (!prompt && n_prompt) return null_arg("prompt");
    return with_session(s, [&] {
        check_result(result);
        GenerateCall call = generate_call(*s->model, params);
        staticlm::GenerateOptions o = call.options;
        if (call.on_token) o.on_token = {GenerateCall::token, &call};
        const staticlm::GenerateResult r = staticlm::generate(s->session, staticlm::model_tokenizer(*s->model),
                                                              std::span<const int>(prompt, n_prompt), o);
        write_result(r, result);
    });
}

// --------------------------------------------------------------------- chat

int slm_chat_apply_template(const slm_model* model, const slm_chat_message* messages, size_t n,
                            int add_generation_prompt, char* text, int cap) {
    if (!model || (!messages && n)) return null_arg("model/messages"), -1;
    int len = -1;
    guard(&model->log, [&] {
        std::vector<staticlm::ChatMessage> m;
        for (size_t i = 0; i < n; ++i) {
            if (!messages[i].role || !messages[i].content)
                throw Error(ErrorKind::input, "message " + std::to_string(i) + " has a NULL role or content");
            m.push_back({messages[i].role, messages[i].content});
        }
        len = copy_out(staticlm::render_chat(model->chat_format, m, {}, add_generation_prompt != 0), text, cap);
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
        if (call.on_token) o.on_token = {GenerateCall::token, &call};
        write_result(chat->chat.reply(user, o), result);
    });
}

void slm_chat_free(slm_chat* chat) { delete chat; }

}  // extern "C"
