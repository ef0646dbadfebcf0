/* The C API's saved state and abort, from C against libstaticlm.so: an abort
 * callback stops prefill, append and generation (also when another thread
 * asks), slm_pos says what stayed, the session goes on bit for bit; a state
 * saved to a buffer or a file restores into another session with the same
 * continuation; bad states and arguments are errors that change nothing.
 * usage: test_c_state SOURCE_DIR  (exit 0 ok, 1 failures) */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "staticlm/staticlm.h"

#include "check.h"

enum { V_MAX = 4096, N = 24 };

/* Stops at its `stop_at`-th call (1-based); counts calls. */
struct countdown {
    int calls, stop_at;
};
static int count_abort(void* user) {
    struct countdown* c = user;
    return ++c->calls >= c->stop_at;
}

/* Another thread's abort: the callback announces the call is running, then
 * waits (a bounded spin) until the other thread sets the flag. */
struct cross {
    atomic_int running, stop;
};
static int cross_abort(void* user) {
    struct cross* c = user;
    atomic_store(&c->running, 1);
    for (long i = 0; i < 2000000000L && !atomic_load(&c->stop); ++i) {
    }
    return atomic_load(&c->stop);
}
static void* aborter(void* arg) {
    struct cross* c = arg;
    while (!atomic_load(&c->running)) {
    }
    atomic_store(&c->stop, 1);
    return NULL;
}

static slm_session* new_session(slm_model* model, int max_seq) {
    static const int prefill[] = {8}, append[] = {4};
    slm_session_params sp = slm_session_default_params();
    sp.max_seq = max_seq;
    sp.prefill_buckets = prefill;
    sp.n_prefill_buckets = 1;
    sp.append_buckets = append;
    sp.n_append_buckets = 1;
    sp.threads = 1;
    slm_session* s = NULL;
    CHECK(slm_session_create(model, &sp, &s) == SLM_OK);
    return s;
}

static int same_logits(const float* a, const float* b, int vocab) {
    return a && b && memcmp(a, b, (size_t)vocab * sizeof(float)) == 0;
}

int main(int argc, char** argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: test_c_state SOURCE_DIR\n");
        return 2;
    }
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/tests/fixtures/llama-tied", argv[1]);
    slm_model_params mp = slm_model_default_params();
    mp.weights = SLM_WEIGHTS_F32;
    mp.load_tokenizer = 0;
    mp.threads = 1;
    slm_model* model = NULL;
    if (slm_model_load(dir, &mp, &model) != SLM_OK) {
        fprintf(stderr, "cannot load %s: %s\n", dir, slm_last_error());
        return 1;
    }
    const int vocab = slm_model_vocab(model);
    CHECK(vocab > 0 && vocab <= V_MAX);
    int32_t ids[N];
    for (int i = 0; i < N; ++i) ids[i] = (int32_t)((i * 7919 + 11) % vocab);
    const float* la = NULL;
    const float* lb = NULL;

    /* Abort a prefill of 20 tokens (blocks of 8) at the 2nd block: 8 stay. */
    slm_session* a = new_session(model, 32);
    slm_session* b = new_session(model, 32);
    struct countdown cd = {0, 0};
    cd.stop_at = 1000;
    CHECK(slm_session_set_abort(a, count_abort, &cd) == SLM_OK);
    CHECK(slm_prefill(a, ids, 8, NULL) == SLM_OK);
    const int asks_per_block = cd.calls - 1; /* layers, plus 1 for the head of the last block */
    CHECK(asks_per_block >= 1);
    cd.calls = 0;
    cd.stop_at = asks_per_block + 1; /* the first ask of the 2nd block */
    CHECK_ERR(slm_prefill(a, ids, 20, &la), SLM_ERR_ABORTED, "pos 8");
    CHECK(slm_pos(a) == 8);
    CHECK(slm_session_set_abort(a, NULL, NULL) == SLM_OK);
    CHECK(slm_append(a, ids + 8, 12, &la) == SLM_OK);
    CHECK(slm_prefill(b, ids, 8, NULL) == SLM_OK);
    CHECK(slm_append(b, ids + 8, 12, &lb) == SLM_OK);
    CHECK(slm_pos(a) == 20 && same_logits(la, lb, vocab));

    /* Another thread aborts a decode. */
    struct cross cr;
    atomic_init(&cr.running, 0);
    atomic_init(&cr.stop, 0);
    pthread_t t;
    CHECK(slm_session_set_abort(a, cross_abort, &cr) == SLM_OK);
    CHECK(pthread_create(&t, NULL, aborter, &cr) == 0);
    CHECK_ERR(slm_decode(a, ids[20], &la), SLM_ERR_ABORTED, "aborted");
    pthread_join(t, NULL);
    CHECK(slm_pos(a) == 20);
    CHECK(slm_session_set_abort(a, NULL, NULL) == SLM_OK);

    /* Abort during generation: the prompt's block and 2 decode steps finish. */
    slm_session* g = new_session(model, 32);
    slm_sampler_params greedy = slm_sampler_default_params();
    greedy.temperature = 0.0f;
    slm_generate_params gp = slm_generate_default_params();
    gp.sampler = &greedy;
    gp.max_tokens = 10;
    const int32_t never = -1; /* no EOS stop: the steps are counted */
    gp.stop_ids = &never;
    gp.n_stop_ids = 1;
    cd.calls = 0;
    cd.stop_at = 1000;
    CHECK(slm_session_set_abort(g, count_abort, &cd) == SLM_OK);
    CHECK(slm_prefill(g, ids, 4, NULL) ==
          SLM_OK); /* one block of 8 with the head: asks_per_block + 1 */
    CHECK(cd.calls == asks_per_block + 1);
    CHECK(slm_reset(g) == SLM_OK);
    cd.calls = 0;
    cd.stop_at = 3 * (asks_per_block + 1) + 1;
    CHECK_ERR(slm_generate(g, ids, 4, &gp, NULL), SLM_ERR_ABORTED, "aborted");
    CHECK(slm_pos(g) == 6);

    /* Saved state through a buffer: b continues as a does. */
    size_t size = 0;
    CHECK(slm_session_state_size(a, &size) == SLM_OK && size > 0);
    unsigned char* buf = malloc(size);
    size_t written = 0;
    CHECK_ERR(slm_session_save(a, buf, size - 1, &written), SLM_ERR_CAPACITY, "needs");
    CHECK(slm_session_save(a, buf, size, &written) == SLM_OK && written == size);
    CHECK(slm_session_load(b, buf, size) == SLM_OK);
    CHECK(slm_pos(b) == 20);
    CHECK(slm_decode(a, ids[20], &la) == SLM_OK && slm_decode(b, ids[20], &lb) == SLM_OK);
    CHECK(same_logits(la, lb, vocab));

    /* Bad states change nothing. */
    buf[size / 2] ^= 1;
    CHECK_ERR(slm_session_load(b, buf, size), SLM_ERR_FORMAT, "checksum mismatch");
    CHECK_ERR(slm_session_load(b, buf, 10), SLM_ERR_FORMAT, "truncated");
    CHECK(slm_pos(b) == 21);
    slm_session* wide = new_session(model, 64);
    free(buf);
    CHECK(slm_session_state_size(b, &size) == SLM_OK);
    buf = malloc(size);
    CHECK(slm_session_save(b, buf, size, NULL) == SLM_OK);
    CHECK_ERR(slm_session_load(wide, buf, size), SLM_ERR_INPUT, "another capacity");
    CHECK(slm_pos(wide) == 0);
    CHECK_ERR(slm_session_load(b, NULL, 5), SLM_ERR_INPUT, "null");
    CHECK_ERR(slm_session_state_size(b, NULL), SLM_ERR_INPUT, "null");
    free(buf);

    /* Through a file. */
    char file[4200];
    snprintf(file, sizeof file, "/tmp/staticlm_test_c_state_%d.slmstate", (int)getpid());
    CHECK(slm_session_save_file(b, file) == SLM_OK);
    slm_session* c = new_session(model, 32);
    CHECK(slm_session_load_file(c, file) == SLM_OK);
    remove(file);
    CHECK(slm_pos(c) == 21);
    CHECK(slm_decode(b, ids[21], &lb) == SLM_OK && slm_decode(c, ids[21], &la) == SLM_OK);
    CHECK(same_logits(la, lb, vocab));
    CHECK_ERR(slm_session_load_file(c, file), SLM_ERR_IO, "no such file");
    CHECK_ERR(slm_session_load_file(c, "/tmp"), SLM_ERR_IO, "not a regular file");
    CHECK(slm_pos(c) == 22);

    slm_session_free(a);
    slm_session_free(b);
    slm_session_free(c);
    slm_session_free(g);
    slm_session_free(wide);
    slm_model_free(model);
    printf("%d checks, %d failures\n", g_checks, g_fails);
    return g_fails ? 1 : 0;
}
