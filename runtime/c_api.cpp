// The C API (include/staticlm/staticlm.h): exceptions become status codes and
// a per-thread message.
#include "staticlm/staticlm.h"

#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "staticlm/error.hpp"
#include "staticlm/model.hpp"
#include "staticlm/session.hpp"

struct slm_model {
    std::shared_ptr<const staticlm::Model> model;
};
struct slm_session {
    staticlm::Session session;
};

// The C enum is the C++ one by number: formats are converted by value, names
// go through staticlm::parse_weight_type.
static_assert(int(SLM_WEIGHTS_Q8) == int(staticlm::WeightType::q8) &&
              int(SLM_WEIGHTS_F16) == int(staticlm::WeightType::f16) &&
              int(SLM_WEIGHTS_BF16) == int(staticlm::WeightType::bf16) &&
              int(SLM_WEIGHTS_F32) == int(staticlm::WeightType::f32));

namespace {

thread_local std::string g_error;

template <class Fn>
slm_status guard(Fn&& fn) {
    try {
        fn();
        g_error.clear();
        return 0;
    } catch (const staticlm::Error& e) {
        g_error = e.what();
        return 1 + int(e.kind());
    } catch (const std::exception& e) {
        g_error = e.what();
        return 100;
    }
}

slm_status null_arg(const char* what) {
    g_error = std::string("null argument: ") + what;
    return 1 + int(staticlm::ErrorKind::input);
}

}  // namespace

extern "C" {

const char* slm_last_error(void) { return g_error.c_str(); }

int slm_weights_from_name(const char* name) {
    if (!name) return -1;
    const std::optional<staticlm::WeightType> t = staticlm::parse_weight_type(name);
    return t ? int(*t) : -1;
}

const char* slm_weights_name(slm_weights weights) {
    const std::optional<staticlm::WeightType> t = staticlm::weight_type_from_id(int(weights));
    return t ? staticlm::weight_type_name(*t) : "?";
}

slm_status slm_model_load(const char* dir, slm_weights weights, int threads, slm_model** out) {
    if (!dir || !out) return null_arg("dir/out");
    return guard([&] {
        staticlm::LoadOptions o;
        // slm_weights values are the WeightType numbers (checked below).
        const std::optional<staticlm::WeightType> type = staticlm::weight_type_from_id(int(weights));
        if (!type)
            throw staticlm::Error(staticlm::ErrorKind::config,
                                  "unknown weight type " + std::to_string(int(weights)) + " (known: " +
                                      staticlm::weight_type_choices() + " = 0.." +
                                      std::to_string(staticlm::weight_types().size() - 1) + ")");
        o.weights = *type;
        o.threads = threads;
        auto m = std::make_unique<slm_model>();
        m->model = staticlm::load_model(dir, o);
        *out = m.release();
    });
}

void slm_model_free(slm_model* model) { delete model; }

int slm_model_vocab(const slm_model* model) {
    return model ? staticlm::model_config(*model->model).vocab : -1;
}

void slm_session_options_default(slm_session_options* o) {
    static const int prefill[] = {64, 128, 256, 512};
    static const int append[] = {16, 32, 64};
    o->max_seq = 2048;
    o->prefill_buckets = prefill;
    o->n_prefill_buckets = 4;
    o->append_buckets = append;
    o->n_append_buckets = 3;
    o->kv = SLM_KV_F16;
    o->threads = 0;
}

slm_status slm_session_create(slm_model* model, const slm_session_options* o, slm_session** out) {
    if (!model || !o || !out) return null_arg("model/options/out");
    return guard([&] {
        staticlm::SessionOptions so;
        so.max_seq = o->max_seq;
        so.prefill_buckets.assign(o->prefill_buckets, o->prefill_buckets + std::max(o->n_prefill_buckets, 0));
        so.append_buckets.assign(o->append_buckets, o->append_buckets + std::max(o->n_append_buckets, 0));
        so.kv = o->kv == SLM_KV_F32 ? staticlm::KvType::f32 : staticlm::KvType::f16;
        so.threads = o->threads;
        *out = new slm_session{staticlm::Session(model->model, so)};
    });
}

void slm_session_free(slm_session* s) { delete s; }

slm_status slm_prefill(slm_session* s, const int32_t* tokens, size_t n, const float** logits) {
    if (!s || (!tokens && n)) return null_arg("session/tokens");
    return guard([&] {
        auto l = s->session.prefill(std::span<const int>(tokens, n));
        if (logits) *logits = l.data();
    });
}

slm_status slm_append(slm_session* s, const int32_t* tokens, size_t n, const float** logits) {
    if (!s || (!tokens && n)) return null_arg("session/tokens");
    return guard([&] {
        auto l = s->session.append(std::span<const int>(tokens, n));
        if (logits) *logits = l.data();
    });
}

slm_status slm_decode(slm_session* s, int32_t token, const float** logits) {
    if (!s) return null_arg("session");
    return guard([&] {
        auto l = s->session.decode(token);
        if (logits) *logits = l.data();
    });
}

slm_status slm_rewind(slm_session* s, int n) {
    if (!s) return null_arg("session");
    return guard([&] { s->session.rewind(n); });
}

void slm_reset(slm_session* s) {
    if (s) s->session.reset();
}

int slm_pos(const slm_session* s) { return s ? s->session.pos() : -1; }

int slm_tokenize(const slm_model* model, const char* text, int add_special, int32_t* ids, int cap) {
    if (!model || !text) return null_arg("model/text"), -1;
    const staticlm::Tokenizer* tok = staticlm::model_tokenizer(*model->model);
    if (!tok) return (g_error = "model has no tokenizer"), -1;
    int n = -1;
    guard([&] {
        const std::vector<int> v = tok->encode(text, add_special != 0);
        n = int(v.size());
        for (int i = 0; i < n && i < cap; ++i) ids[i] = v[size_t(i)];
    });
    return n;
}

int slm_detokenize(const slm_model* model, const int32_t* ids, int n, char* text, int cap) {
    if (!model || (!ids && n > 0)) return null_arg("model/ids"), -1;
    const staticlm::Tokenizer* tok = staticlm::model_tokenizer(*model->model);
    if (!tok) return (g_error = "model has no tokenizer"), -1;
    int len = -1;
    guard([&] {
        const std::string s = tok->decode(std::vector<int>(ids, ids + std::max(n, 0)));
        len = int(s.size());
        if (cap > 0) {
            const size_t k = std::min(size_t(cap - 1), s.size());
            std::memcpy(text, s.data(), k);
            text[k] = '\0';
        }
    });
    return len;
}

}  // extern "C"
