/* The thread-safety contract of staticlm.h, from C: one model shared by many
 * threads, each with its own session (greedy outputs equal the one-thread
 * reference) and its own batch; tokenizing and detokenizing on a shared
 * model meanwhile (stories260K, when ../shared/data has it); a second thread entering a session or batch that is running gets SLM_ERR_BUSY
 * and changes nothing. Sessions use one thread each, so the test exercises
 * the API's sharing rules and not the worker pool. tools/tsan.sh runs it
 * under ThreadSanitizer.
 * usage: test_c_threads SOURCE_DIR  (exit 0 ok, 1 failures) */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "staticlm/staticlm.h"

static int g_fails = 0;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
#define CHECK(cond)                                                                     \
    do {                                                                                \
        if (!(cond)) {                                                                  \
            pthread_mutex_lock(&g_lock);                                                \
            ++g_fails;                                                                  \
            fprintf(stderr, "FAIL %s:%d: %s (%s)\n", __FILE__, __LINE__, #cond, slm_last_error()); \
            pthread_mutex_unlock(&g_lock);                                              \
        }                                                                               \
    } while (0)

enum { kThreads = 8, kGen = 24 };

static slm_model* g_model;
static slm_model* g_text_model; /* stories260K, or NULL */
static const int32_t kPrompts[kThreads][4] = {{1, 17, 200, 3}, {1, 5, 6, 7},   {1, 99, 98, 97}, {1, 40, 41, 42},
                                              {1, 250, 7, 8},  {1, 9, 9, 9},   {1, 60, 61, 62}, {1, 30, 31, 32}};

struct tokens {
    int n;
    int32_t ids[kGen];
};
static int record(int32_t token, const char* text, size_t len, void* user) {
    (void)text;
    (void)len;
    struct tokens* t = user;
    if (token >= 0 && t->n < kGen) t->ids[t->n++] = token;
    return 1;
}

/* Greedy generation of prompt p on a new session of the shared model. */
static void generate(int p, struct tokens* out) {
    slm_session_params sp = slm_session_default_params();
    sp.max_seq = 64;
    sp.threads = 1;
    slm_session* s = NULL;
    CHECK(slm_session_create(g_model, &sp, &s) == SLM_OK);
    if (!s) return;
    slm_sampler_params greedy = slm_sampler_default_params();
    greedy.temperature = 0.0f;
    const int32_t never[1] = {-1};
    slm_generate_params gp = slm_generate_default_params();
    gp.sampler = &greedy;
    gp.max_tokens = kGen;
    gp.stop_ids = never;
    gp.n_stop_ids = 1;
    gp.on_token = record;
    gp.user_data = out;
    out->n = 0;
    CHECK(slm_generate(s, kPrompts[p], 4, &gp, NULL) == SLM_OK);
    slm_session_free(s);
}

/* The same prompts through a 2-slot batch of the shared model. */
static void generate_batch(int first, struct tokens* out) {
    slm_batch_params bp = slm_batch_default_params();
    bp.slots = 2;
    bp.max_seq = 64;
    bp.threads = 1;
    slm_batch* b = NULL;
    CHECK(slm_batch_create(g_model, &bp, &b) == SLM_OK);
    if (!b) return;
    slm_sampler_params greedy = slm_sampler_default_params();
    greedy.temperature = 0.0f;
    const int32_t never[1] = {-1};
    for (int i = 0; i < 2; ++i) {
        slm_batch_request rq = slm_batch_default_request();
        rq.tokens = kPrompts[(first + i) % kThreads];
        rq.n_tokens = 4;
        rq.sampler = &greedy;
        rq.max_tokens = kGen;
        rq.stop_ids = never;
        rq.n_stop_ids = 1;
        rq.tag = (uint64_t)i;
        CHECK(slm_batch_submit(b, &rq, NULL) == SLM_OK);
    }
    int got = 0;
    for (int steps = 0; steps < 200 && slm_batch_finished(b) < 2; ++steps) CHECK(slm_batch_step(b, NULL) == SLM_OK);
    slm_batch_result r = {.size = sizeof r};
    while (slm_batch_collect(b, &r, &got) == SLM_OK && got) {
        out[r.tag].n = r.n_tokens;
        memcpy(out[r.tag].ids, r.tokens, sizeof(int32_t) * (size_t)r.n_tokens);
    }
    slm_batch_free(b);
}

static struct tokens g_want[kThreads];
static struct tokens g_got[kThreads][3];

static void* worker(void* arg) {
    const int i = (int)(size_t)arg;
    generate(i, &g_got[i][0]);
    generate_batch(i, &g_got[i][1]);
    /* The shared model's tokenizer-free calls meanwhile. */
    CHECK(slm_model_vocab(g_model) == 256 && slm_model_eos(g_model) == 2);
    /* Tokenizing and detokenizing on one shared model: the ids and text of
     * test_c_api's tokenizer part, from every thread. */
    for (int k = 0; g_text_model && k < 20; ++k) {
        int32_t ids[16];
        CHECK(slm_tokenize(g_text_model, "Once upon a time", 0, ids, 16) == 4 && ids[0] == 403 && ids[1] == 407 &&
              ids[2] == 261 && ids[3] == 378);
        char text[64];
        CHECK(slm_detokenize(g_text_model, ids, 4, text, sizeof text) == 16 && strcmp(text, "Once upon a time") == 0);
        slm_detokenizer* d = NULL;
        CHECK(slm_detokenizer_create(g_text_model, &d) == SLM_OK);
        const char* piece = NULL;
        size_t len = 0;
        CHECK(d && slm_detokenizer_push(d, ids[0], &piece, &len) == SLM_OK && len == 4 && memcmp(piece, "Once", 4) == 0);
        slm_detokenizer_free(d);
    }
    return NULL;
}

/* A callback that holds the session while the main thread tries to enter it. */
struct hold {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int inside, release;
};
static int hold_fn(int32_t token, const char* text, size_t len, void* user) {
    (void)token;
    (void)text;
    (void)len;
    struct hold* h = user;
    pthread_mutex_lock(&h->mu);
    h->inside = 1;
    pthread_cond_broadcast(&h->cv);
    while (!h->release) pthread_cond_wait(&h->cv, &h->mu);
    pthread_mutex_unlock(&h->mu);
    return 0; /* stop after the first token */
}
struct holder {
    slm_session* s;
    struct hold* h;
    slm_status status;
};
static void* hold_session(void* arg) {
    struct holder* x = arg;
    slm_sampler_params greedy = slm_sampler_default_params();
    greedy.temperature = 0.0f;
    slm_generate_params gp = slm_generate_default_params();
    gp.sampler = &greedy;
    gp.max_tokens = 4;
    gp.on_token = hold_fn;
    gp.user_data = x->h;
    x->status = slm_generate(x->s, kPrompts[0], 4, &gp, NULL);
    return NULL;
}

struct stepper {
    slm_batch* b;
    int ok, busy, other;
};
static void* step_batch(void* arg) {
    struct stepper* x = arg;
    for (int i = 0; i < 10; ++i) {
        const slm_status st = slm_batch_step(x->b, NULL);
        if (st == SLM_OK)
            ++x->ok;
        else if (st == SLM_ERR_BUSY)
            ++x->busy;
        else
            ++x->other;
    }
    return NULL;
}

int main(int argc, char** argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s SOURCE_DIR\n", argv[0]);
        return 2;
    }
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/tests/fixtures/llama-tied", argv[1]);
    slm_model_params mp = slm_model_default_params();
    mp.threads = 1;
    mp.load_tokenizer = 0;
    if (slm_model_load(dir, &mp, &g_model) != SLM_OK) {
        fprintf(stderr, "cannot load %s: %s\n", dir, slm_last_error());
        return 1;
    }
    for (int i = 0; i < kThreads; ++i) generate(i, &g_want[i]);
    char text_dir[4096];
    snprintf(text_dir, sizeof text_dir, "%s/../shared/data/stories260K-hf", argv[1]);
    slm_model_params tp = slm_model_default_params();
    tp.weights = SLM_WEIGHTS_F32;
    tp.threads = 1;
    if (slm_model_load(text_dir, &tp, &g_text_model) != SLM_OK)
        printf("SKIPPED shared tokenizer part: %s does not load (%s)\n", text_dir, slm_last_error());

    pthread_t t[kThreads];
    for (int i = 0; i < kThreads; ++i) CHECK(pthread_create(&t[i], NULL, worker, (void*)(size_t)i) == 0);
    for (int i = 0; i < kThreads; ++i) pthread_join(t[i], NULL);
    for (int i = 0; i < kThreads; ++i) {
        CHECK(g_want[i].n == kGen);
        CHECK(g_got[i][0].n == kGen && memcmp(g_got[i][0].ids, g_want[i].ids, sizeof g_want[i].ids) == 0);
        for (int k = 0; k < 2; ++k) {
            const struct tokens* want = &g_want[(i + k) % kThreads];
            CHECK(g_got[i][1 + k].n == kGen && memcmp(g_got[i][1 + k].ids, want->ids, sizeof want->ids) == 0);
        }
    }
    printf("%d threads on one model: sessions and batches equal the one-thread outputs\n", kThreads);

    /* Two threads on one session: the second is refused while the first
     * runs, and the session is as the first call leaves it. */
    slm_session_params sp = slm_session_default_params();
    sp.max_seq = 64;
    sp.threads = 1;
    slm_session* s = NULL;
    CHECK(slm_session_create(g_model, &sp, &s) == SLM_OK);
    struct hold h = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};
    struct holder x = {s, &h, SLM_ERR_INTERNAL};
    pthread_t th;
    CHECK(pthread_create(&th, NULL, hold_session, &x) == 0);
    pthread_mutex_lock(&h.mu);
    while (!h.inside) pthread_cond_wait(&h.cv, &h.mu);
    pthread_mutex_unlock(&h.mu);
    const float* logits = NULL;
    CHECK(slm_decode(s, 5, &logits) == SLM_ERR_BUSY && strstr(slm_last_error(), "session is busy") != NULL);
    CHECK(slm_reset(s) == SLM_ERR_BUSY && logits == NULL);
    CHECK(slm_prefill(s, kPrompts[1], 4, &logits) == SLM_ERR_BUSY && logits == NULL);
    pthread_mutex_lock(&h.mu);
    h.release = 1;
    pthread_cond_broadcast(&h.cv);
    pthread_mutex_unlock(&h.mu);
    pthread_join(th, NULL);
    CHECK(x.status == SLM_OK);
    CHECK(slm_pos(s) == 4); /* the prompt; the one sampled token was not decoded */
    CHECK(slm_decode(s, g_want[0].ids[0], &logits) == SLM_OK && slm_pos(s) == 5);
    slm_session_free(s);

    /* Two threads stepping one batch: each step runs or is refused as busy;
     * the request gains exactly one token per step that ran. */
    slm_batch* b = NULL;
    slm_batch_params bp = slm_batch_default_params();
    bp.slots = 1;
    bp.max_seq = 64;
    bp.threads = 1;
    CHECK(slm_batch_create(g_model, &bp, &b) == SLM_OK);
    slm_sampler_params greedy = slm_sampler_default_params();
    greedy.temperature = 0.0f;
    const int32_t never[1] = {-1};
    slm_batch_request rq = slm_batch_default_request();
    rq.tokens = kPrompts[0];
    rq.n_tokens = 4;
    rq.sampler = &greedy;
    rq.max_tokens = kGen;
    rq.stop_ids = never;
    rq.n_stop_ids = 1;
    uint64_t id = 0;
    CHECK(slm_batch_submit(b, &rq, &id) == SLM_OK);
    struct stepper a = {b, 0, 0, 0}, c = {b, 0, 0, 0};
    pthread_t ta, tc;
    CHECK(pthread_create(&ta, NULL, step_batch, &a) == 0);
    CHECK(pthread_create(&tc, NULL, step_batch, &c) == 0);
    pthread_join(ta, NULL);
    pthread_join(tc, NULL);
    CHECK(a.other == 0 && c.other == 0);
    const int ran = a.ok + c.ok;
    if (slm_batch_finished(b) == 0) CHECK(slm_batch_cancel(b, id) == SLM_OK);
    slm_batch_result r = {.size = sizeof r};
    int got = 0;
    CHECK(slm_batch_collect(b, &r, &got) == SLM_OK && got == 1);
    CHECK(r.n_tokens == (ran < kGen ? ran : kGen));
    CHECK(memcmp(r.tokens, g_want[0].ids, sizeof(int32_t) * (size_t)r.n_tokens) == 0);
    printf("two threads on one batch: %d steps ran, %d refused as busy\n", ran, a.busy + c.busy);
    printf("threads: %d failures\n", g_fails);
    slm_batch_free(b);
    slm_model_free(g_text_model);
    slm_model_free(g_model);
    return g_fails ? 1 : 0;
}
