/* The C API contract, from C, linked against libstaticlm.so (so a symbol the
 * shared library fails to export does not link): versions, params structs,
 * errors, callbacks, busy sessions, streaming detokenization, sampling,
 * generation stop reasons and chat.
 * usage: test_c_api SOURCE_DIR  (exit 0 ok, 1 failures; the tokenizer part
 * is skipped with a message when ../shared/data is absent) */
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "staticlm/staticlm.h"

#include "check.h"

static char g_path[8192];
static const char* path(const char* src, const char* rel) {
    if (strlen(src) + strlen(rel) + 2 > sizeof g_path) {
        fprintf(stderr, "path too long: %s\n", src);
        exit(2);
    }
    strcpy(g_path, src);
    strcat(g_path, "/");
    strcat(g_path, rel);
    return g_path;
}

/* --- callbacks --- */
static int g_progress_calls = 0;
static float g_progress_last = -1.0f;
static int progress_ok(float p, void* user) {
    (void)user;
    if (p < 0.0f || p > 1.0f) ++g_fails;
    ++g_progress_calls;
    g_progress_last = p;
    return 1;
}
static int progress_cancel(float p, void* user) {
    (void)p;
    (void)user;
    return 0;
}
static char g_log[1024];
static void log_fn(slm_log_level level, const char* msg, void* user) {
    (void)user;
    if (level == SLM_LOG_INFO && !g_log[0]) snprintf(g_log, sizeof g_log, "%s", msg);
}

struct reenter {
    slm_session* s;
    slm_status got;
    int calls;
};
/* Enters the session it is generating on: must be refused with SLM_ERR_BUSY. */
static int reenter_fn(int32_t token, const char* text, size_t len, void* user) {
    (void)text;
    (void)len;
    struct reenter* r = user;
    if (token >= 0 && r->calls++ == 0) r->got = slm_decode(r->s, token, NULL);
    return 1;
}
static int stop_after_3(int32_t token, const char* text, size_t len, void* user) {
    (void)text;
    (void)len;
    int* n = user;
    return token < 0 || ++*n < 3;
}
struct text_acc {
    char buf[4096];
    size_t len;
};
static int collect(int32_t token, const char* text, size_t len, void* user) {
    (void)token;
    struct text_acc* a = user;
    if (a->len + len < sizeof a->buf) {
        memcpy(a->buf + a->len, text, len);
        a->len += len;
        a->buf[a->len] = 0;
    }
    return 1;
}

/* Two threads decoding on one session: every call either succeeds or is refused
 * as busy; the position counts exactly the successes. */
struct racer {
    slm_session* s;
    int ok, busy, other;
};
static void* race(void* arg) {
    struct racer* r = arg;
    for (int i = 0; i < 150; ++i) {
        const slm_status st = slm_decode(r->s, 3, NULL);
        if (st == SLM_OK)
            ++r->ok;
        else if (st == SLM_ERR_BUSY)
            ++r->busy;
        else
            ++r->other;
    }
    return NULL;
}

static void test_fixture(const char* src) {
    const char* dir = path(src, "tests/fixtures/llama-tied");
    char fixture[4096];
    snprintf(fixture, sizeof fixture, "%s", dir);

    CHECK(strcmp(slm_version(), SLM_VERSION_STRING) == 0);
    CHECK(slm_api_version() == SLM_API_VERSION);
    CHECK(strcmp(slm_status_name(SLM_ERR_BUSY), "busy") == 0);
    CHECK(slm_max_threads() >= 4);

    slm_model* model = NULL;
    slm_model_params mp = slm_model_default_params();
    CHECK(mp.size == sizeof mp && mp.weights == SLM_WEIGHTS_Q8 && mp.load_tokenizer == 1);
    mp.load_tokenizer = 0;
    mp.threads = 1;

    /* weights = 99 is an error, not q8 */
    mp.weights = (slm_weights)99;
    CHECK_ERR(slm_model_load(fixture, &mp, &model), SLM_ERR_CONFIG, "weights 99");
    CHECK(model == NULL);
    mp.weights = SLM_WEIGHTS_F32;
    /* a params struct of another size */
    mp.size = sizeof mp - 16;
    CHECK_ERR(slm_model_load(fixture, &mp, &model), SLM_ERR_CONFIG, "slm_model_params.size");
    mp.size = sizeof mp;
    /* thread counts are bounded */
    mp.threads = slm_max_threads() + 1;
    CHECK_ERR(slm_model_load(fixture, &mp, &model), SLM_ERR_CONFIG, "at most");
    mp.threads = 1000000;
    CHECK_ERR(slm_model_load(fixture, &mp, &model), SLM_ERR_CONFIG, "threads 1000000");
    mp.threads = 1;
    /* the progress callback can cancel */
    mp.progress = progress_cancel;
    CHECK_ERR(slm_model_load(fixture, &mp, &model), SLM_ERR_ABORTED, "cancelled");
    CHECK(model == NULL);
    /* a file where a directory is expected; a GGUF file that is missing, one
     * with a tensor type staticlm does not read, and one that loads */
    CHECK_ERR(slm_model_load(path(src, "tests/fixtures/llama-tied/model.safetensors"), &mp, &model), SLM_ERR_IO,
              "give the model directory");
    CHECK_ERR(slm_model_load("/nonexistent/model.gguf", &mp, &model), SLM_ERR_IO, "/nonexistent/model.gguf");
    CHECK_ERR(slm_model_load(path(src, "tests/fixtures/gguf/unsupported_type.gguf"), &mp, &model),
              SLM_ERR_UNSUPPORTED, "unsupported_type.gguf");

    mp.progress = progress_ok;
    CHECK(slm_model_load(path(src, "tests/fixtures/gguf/llama-tied.gguf"), &mp, &model) == SLM_OK);
    CHECK(model != NULL && slm_model_vocab(model) > 0);
    slm_model_free(model);
    model = NULL;

    /* SLM_WEIGHTS_NATIVE: a Q4_0 file keeps its blocks (q4), so its logits
     * equal those of SLM_WEIGHTS_Q4, bit for bit; a Q5_0 file's (q5) those of
     * SLM_WEIGHTS_Q5 and of SLM_WEIGHTS_Q8 (which holds 5-bit values exactly). */
    CHECK(slm_weights_from_name("native") == SLM_WEIGHTS_NATIVE);
    CHECK(strcmp(slm_weights_name(SLM_WEIGHTS_NATIVE), "native") == 0);
    CHECK(slm_weights_from_name("q5") == SLM_WEIGHTS_Q5);
    CHECK(slm_weights_from_name("q4k") == SLM_WEIGHTS_Q4K && slm_weights_from_name("q6k") == SLM_WEIGHTS_Q6K);
    CHECK(strcmp(slm_weights_name(SLM_WEIGHTS_Q6K), "q6k") == 0);
    CHECK(slm_weights_from_name("q5k") == SLM_WEIGHTS_Q5K);
    CHECK(slm_weights_from_name("q4a") == SLM_WEIGHTS_Q4A && slm_weights_from_name("q5a") == SLM_WEIGHTS_Q5A);
    {
        const char* files[2] = {"tests/fixtures/gguf/llama-tied.q4_0.gguf", "tests/fixtures/gguf/llama-tied.q5_0.gguf"};
        const slm_weights kinds[2][3] = {{SLM_WEIGHTS_NATIVE, SLM_WEIGHTS_Q4, SLM_WEIGHTS_Q4},
                                         {SLM_WEIGHTS_NATIVE, SLM_WEIGHTS_Q5, SLM_WEIGHTS_Q8}};
        const slm_weights saved = mp.weights;
        for (int f = 0; f < 2; ++f) {
            float first[3][8];
            for (int i = 0; i < 3; ++i) {
                slm_model* m = NULL;
                slm_session* s = NULL;
                const float* logits = NULL;
                const int32_t ids[3] = {1, 5, 9};
                mp.weights = kinds[f][i];
                CHECK(slm_model_load(path(src, files[f]), &mp, &m) == SLM_OK);
                if (!m) return;
                CHECK(slm_session_create(m, NULL, &s) == SLM_OK);
                CHECK(s && slm_prefill(s, ids, 3, &logits) == SLM_OK && logits);
                if (logits) memcpy(first[i], logits, sizeof first[i]);
                slm_session_free(s);
                slm_model_free(m);
            }
            CHECK(memcmp(first[0], first[1], sizeof first[0]) == 0);
            CHECK(memcmp(first[0], first[2], sizeof first[0]) == 0);
        }
        mp.weights = saved;
    }
    /* act_bits 16: the Q5_0 twin's native logits come within a sixteenth of
     * the 8-bit activations' distance to the f32 path (the same weights,
     * float activations); act_bits other than 8 and 16 is a config error. */
    {
        const char* q50 = path(src, "tests/fixtures/gguf/llama-tied.q5_0.gguf");
        const slm_weights kinds[3] = {SLM_WEIGHTS_F32, SLM_WEIGHTS_NATIVE, SLM_WEIGHTS_NATIVE};
        const int bits[3] = {8, 8, 16};
        float out[3][256];
        const slm_weights saved = mp.weights;
        for (int i = 0; i < 3; ++i) {
            slm_model* m = NULL;
            slm_session* s = NULL;
            const float* logits = NULL;
            const int32_t ids[3] = {1, 5, 9};
            mp.weights = kinds[i];
            mp.act_bits = bits[i];
            CHECK(slm_model_load(q50, &mp, &m) == SLM_OK);
            if (!m) return;
            CHECK(slm_model_vocab(m) == 256);
            CHECK(slm_session_create(m, NULL, &s) == SLM_OK);
            CHECK(s && slm_prefill(s, ids, 3, &logits) == SLM_OK && logits);
            if (logits) memcpy(out[i], logits, sizeof out[i]);
            slm_session_free(s);
            slm_model_free(m);
        }
        float err8 = 0, err16 = 0;
        for (int v = 0; v < 256; ++v) {
            const float d8 = out[1][v] - out[0][v], d16 = out[2][v] - out[0][v];
            if (d8 > err8 || -d8 > err8) err8 = d8 > 0 ? d8 : -d8;
            if (d16 > err16 || -d16 > err16) err16 = d16 > 0 ? d16 : -d16;
        }
        CHECK(err8 > 0 && err16 < err8 / 16);
        mp.act_bits = 7;
        slm_model* m = NULL;
        CHECK_ERR(slm_model_load(q50, &mp, &m), SLM_ERR_CONFIG, "act_bits 7");
        CHECK(m == NULL);
        /* A caller built before act_bits existed passes the shorter size: 8 bits. */
        mp.size = offsetof(slm_model_params, act_bits);
        CHECK(slm_model_load(q50, &mp, &m) == SLM_OK);
        slm_model_free(m);
        m = NULL;
        mp.size = sizeof mp;
        mp.act_bits = 8;
        mp.weights = saved;
    }
    mp.log = log_fn;
    CHECK(slm_model_load(fixture, &mp, &model) == SLM_OK);
    if (!model) return;
    CHECK(g_progress_calls > 0 && g_progress_last == 1.0f);
    CHECK(strstr(g_log, "loaded") != NULL && strstr(g_log, "f32") != NULL);
    CHECK(slm_model_vocab(model) == 256);
    CHECK(slm_model_context_length(model) == 512);
    CHECK(slm_model_bos(model) == 1);
    CHECK(slm_model_eos(model) == 2);
    int32_t eos[4];
    CHECK(slm_model_eos_ids(model, eos, 4) == 1 && eos[0] == 2);
    CHECK(slm_model_is_eos(model, 2) && !slm_model_is_eos(model, 3));
    CHECK(strcmp(slm_model_chat_format(model), "plain") == 0);
    CHECK(slm_tokenize(model, "hi", 1, NULL, 0) == -1); /* no tokenizer loaded */

    /* Session defaults: max_seq = min(2048, 512); max_seq 256 with default buckets works. */
    slm_session* s = NULL;
    slm_session_params sp = slm_session_default_params();
    sp.threads = 1;
    CHECK(slm_session_create(model, &sp, &s) == SLM_OK);
    CHECK(slm_max_seq(s) == 512);
    slm_session_free(s);
    s = NULL;
    sp.max_seq = 256;
    CHECK(slm_session_create(model, &sp, &s) == SLM_OK);
    CHECK(slm_max_seq(s) == 256);
    slm_session_free(s);
    sp.max_seq = 16;
    sp.kv = (slm_kv)5;
    CHECK_ERR(slm_session_create(model, &sp, &s), SLM_ERR_CONFIG, "kv 5");
    sp.kv = SLM_KV_Q8; /* the q8 cache runs through the C API as well */
    CHECK(slm_session_create(model, &sp, &s) == SLM_OK);
    {
        const int32_t three[] = {1, 17, 200};
        const float* l = NULL;
        CHECK(slm_prefill(s, three, 3, &l) == SLM_OK && l != NULL && slm_pos(s) == 3);
    }
    slm_session_free(s);
    s = NULL;
    sp.kv = SLM_KV_F32;
    sp.threads = 1000000;
    CHECK_ERR(slm_session_create(model, &sp, &s), SLM_ERR_CONFIG, "at most");
    sp.threads = 1;
    CHECK(slm_session_create(model, &sp, &s) == SLM_OK);

    const int32_t prompt[] = {1, 17, 200, 3, 99};
    const float* logits = NULL;
    CHECK(slm_prefill(s, prompt, 5, &logits) == SLM_OK && logits != NULL);
    CHECK(slm_pos(s) == 5);
    CHECK_ERR(slm_decode(s, 256, NULL), SLM_ERR_INPUT, "invalid token id 256");
    CHECK(slm_pos(s) == 5);

    /* Sampler: a temperature whose reciprocal overflows is greedy. */
    int best = 0;
    for (int i = 1; i < 256; ++i)
        if (logits[i] > logits[best]) best = i;
    slm_sampler* sampler = NULL;
    slm_sampler_params smp = slm_sampler_default_params();
    CHECK(smp.size == sizeof smp && smp.temperature > 0.7f && smp.top_k == 40);
    smp.temperature = 1e-40f;
    CHECK(slm_sampler_create(model, &smp, &sampler) == SLM_OK);
    int32_t tok = -1;
    for (int i = 0; i < 3; ++i) {
        CHECK(slm_sampler_sample(sampler, logits, prompt, 5, &tok) == SLM_OK);
        CHECK(tok == best);
    }
    slm_sampler_free(sampler);
    smp.temperature = 1.0f;
    smp.top_p = 0.0f;
    CHECK_ERR(slm_sampler_create(model, &smp, &sampler), SLM_ERR_CONFIG, "top_p");
    smp.top_p = 0.95f;
    smp.repeat_penalty = 1.0f / 0.0f;
    CHECK_ERR(slm_sampler_create(model, &smp, &sampler), SLM_ERR_CONFIG, "repetition_penalty");

    /* Generation: the callback re-entering its session is refused, nothing corrupts. */
    slm_sampler_params greedy = slm_sampler_default_params();
    greedy.temperature = 0.0f;
    slm_generate_params gp = slm_generate_default_params();
    gp.sampler = &greedy;
    gp.max_tokens = 4;
    struct reenter re = {s, SLM_OK, 0};
    gp.on_token = reenter_fn;
    gp.user_data = &re;
    slm_generate_result r = {.size = sizeof r};
    CHECK(slm_reset(s) == SLM_OK);
    CHECK(slm_generate(s, prompt, 5, &gp, &r) == SLM_OK);
    CHECK(re.got == SLM_ERR_BUSY);
    CHECK(r.stop_reason == SLM_STOP_MAX_TOKENS || r.stop_reason == SLM_STOP_EOS);
    CHECK(slm_pos(s) == 5 + r.n_generated - 1);

    /* -1: until a stop id or the session is full; stop ids none the model samples. */
    const int32_t never[] = {-7};
    gp.on_token = NULL;
    gp.max_tokens = -1;
    gp.stop_ids = never;
    gp.n_stop_ids = 1;
    CHECK(slm_reset(s) == SLM_OK);
    CHECK(slm_generate(s, prompt, 5, &gp, &r) == SLM_OK);
    CHECK(r.stop_reason == SLM_STOP_CAPACITY);
    CHECK(slm_pos(s) == 16);
    CHECK(r.n_generated == 12);
    /* the token callback stops the generation */
    int count = 0;
    gp.on_token = stop_after_3;
    gp.user_data = &count;
    CHECK(slm_reset(s) == SLM_OK);
    CHECK(slm_generate(s, prompt, 5, &gp, &r) == SLM_OK);
    CHECK(r.stop_reason == SLM_STOP_ABORTED && r.n_generated == 3);
    r.size = 3;
    CHECK_ERR(slm_generate(s, prompt, 1, &gp, &r), SLM_ERR_CONFIG, "slm_generate_result.size");

    /* Two threads on one session: refusals, never a corrupted position. */
    CHECK(slm_reset(s) == SLM_OK);
    CHECK(slm_prefill(s, prompt, 1, NULL) == SLM_OK);
    slm_session* big = NULL;
    sp.max_seq = 512;
    CHECK(slm_session_create(model, &sp, &big) == SLM_OK);
    CHECK(slm_prefill(big, prompt, 1, NULL) == SLM_OK);
    struct racer a = {big, 0, 0, 0}, b = {big, 0, 0, 0};
    pthread_t ta, tb;
    pthread_create(&ta, NULL, race, &a);
    pthread_create(&tb, NULL, race, &b);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    CHECK(a.other == 0 && b.other == 0);
    CHECK(slm_pos(big) == 1 + a.ok + b.ok);
    printf("two threads on one session: %d ok, %d refused as busy\n", a.ok + b.ok, a.busy + b.busy);
    slm_session_free(big);

    /* A model freed before its session: the session keeps the weights. */
    slm_model_free(model);
    CHECK(slm_decode(s, 3, &logits) == SLM_OK && logits != NULL);
    slm_session_free(s);
}

static void test_tokenizer(const char* src) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/../shared/data/stories260K-hf", src);
    FILE* probe = fopen(path(dir, "config.json"), "r");
    if (!probe) {
        printf("SKIPPED tokenizer part: %s is absent\n", dir);
        return;
    }
    fclose(probe);
    slm_model* model = NULL;
    slm_model_params mp = slm_model_default_params();
    mp.weights = SLM_WEIGHTS_F32;
    mp.threads = 2;
    CHECK(slm_model_load(dir, &mp, &model) == SLM_OK);
    if (!model) return;
    int32_t ids[64];
    const int n = slm_tokenize(model, "Once upon a time", 0, ids, 64);
    CHECK(n == 4 && ids[0] == 403 && ids[1] == 407 && ids[2] == 261 && ids[3] == 378);
    CHECK(slm_tokenize(model, "Once upon a time", 1, NULL, 0) == 5);
    char text[256];
    CHECK(slm_detokenize(model, ids, 4, text, sizeof text) == 16 && strcmp(text, "Once upon a time") == 0);
    CHECK(slm_detokenize(model, ids + 1, 1, text, sizeof text) == 4); /* "upon": its space is dropped */
    CHECK(slm_token_to_piece(model, 407, text, sizeof text) > 0 && strcmp(text, "\xE2\x96\x81upon") == 0);
    CHECK(slm_token_to_piece(model, 100000, text, sizeof text) == -1);

    /* Streaming: one id at a time keeps the spaces. */
    slm_detokenizer* d = NULL;
    CHECK(slm_detokenizer_create(model, &d) == SLM_OK);
    char stream[256] = "";
    size_t used = 0;
    for (int i = 0; i < n; ++i) {
        const char* t = NULL;
        size_t len = 0;
        CHECK(slm_detokenizer_push(d, ids[i], &t, &len) == SLM_OK);
        memcpy(stream + used, t, len);
        used += len;
    }
    const char* t = NULL;
    size_t len = 0;
    CHECK(slm_detokenizer_flush(d, &t, &len) == SLM_OK);
    memcpy(stream + used, t, len);
    used += len;
    stream[used] = 0;
    CHECK(strcmp(stream, "Once upon a time") == 0);
    slm_detokenizer_free(d);

    /* Generation streams the same text slm_detokenize gives for all the ids. */
    slm_session* s = NULL;
    slm_session_params sp = slm_session_default_params();
    sp.threads = 2;
    CHECK(slm_session_create(model, &sp, &s) == SLM_OK);
    CHECK(slm_max_seq(s) == 512);
    int32_t prompt[64];
    const int np = slm_tokenize(model, "Once upon a time", 1, prompt, 64);
    slm_sampler_params greedy = slm_sampler_default_params();
    greedy.temperature = 0.0f;
    slm_generate_params gp = slm_generate_default_params();
    gp.sampler = &greedy;
    gp.max_tokens = 30;
    struct text_acc acc = {{0}, 0};
    gp.on_token = collect;
    gp.user_data = &acc;
    slm_generate_result r = {.size = sizeof r};
    CHECK(slm_generate(s, prompt, (size_t)np, &gp, &r) == SLM_OK);
    CHECK(strncmp(acc.buf, ", there was a little girl named Lily.", 37) == 0);
    if (strncmp(acc.buf, ", there was a little girl named Lily.", 37) != 0) fprintf(stderr, "  got '%s'\n", acc.buf);

    /* Chat: the plain template, and a reply on the session. */
    const slm_chat_message msgs[] = {{"user", "Once upon a time"}};
    CHECK(slm_chat_apply_template(model, msgs, 1, 1, text, sizeof text) == 16);
    const slm_chat_message bad[] = {{"robot", "beep"}};
    CHECK(slm_chat_apply_template(model, bad, 1, 1, text, sizeof text) == -1);
    CHECK(strstr(slm_last_error(), "robot") != NULL);
    CHECK(slm_reset(s) == SLM_OK);
    slm_chat* chat = NULL;
    CHECK(slm_chat_create(s, NULL, &chat) == SLM_OK);
    acc.len = 0;
    acc.buf[0] = 0;
    CHECK(slm_chat_reply(chat, "Once upon a time", &gp, &r) == SLM_OK);
    CHECK(strncmp(acc.buf, ", there was a little girl named Lily.", 37) == 0);
    CHECK(slm_chat_reply(chat, "The dog ran", &gp, &r) == SLM_OK);
    slm_chat_free(chat);
    slm_session_free(s);
    slm_model_free(model);
}

int main(int argc, char** argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s SOURCE_DIR\n", argv[0]);
        return 2;
    }
    test_fixture(argv[1]);
    test_tokenizer(argv[1]);
    printf("c api: %d checks, %d failed\n", g_checks, g_fails);
    return g_fails ? 1 : 0;
}
