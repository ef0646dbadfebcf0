/* Batched generation with the staticlm C API: 32 requests (sampled, each with
 * its own seed; some with a stop string) run through a batched session of
 * S = 16 slots, through one of S = 1, and one by one with slm_generate. The
 * texts must be equal; the aggregate speeds are printed.
 *
 *   cc batch.c -o batch $(pkg-config --cflags --libs staticlm)
 *   ./batch [MODEL_DIR [THREADS]]   (default ../shared/data/stories260K-hf, all CPUs)
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <staticlm/staticlm.h>

enum { kRequests = 32, kMaxTokens = 96, kTextCap = 8192 };

static const char* const kPrompts[8] = {
    "Once upon a time",  "The little dog", "Lily wanted to", "One day, Tom found",
    "The sun was",       "Mom said",       "In the park",    "Ben and his friend",
};

struct request {
    slm_sampler_params sampler;
    const char* stop; /* NULL: none */
    char want[kTextCap]; /* slm_generate's text */
    size_t want_len;
    char got[kTextCap];  /* the batch's */
    int n_tokens;
};
static struct request g_req[kRequests];

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int append_text(int32_t token, const char* text, size_t len, void* user) {
    (void)token;
    struct request* r = user;
    if (r->want_len + len < kTextCap) {
        memcpy(r->want + r->want_len, text, len);
        r->want_len += len;
        r->want[r->want_len] = 0;
    }
    return 1;
}

/* Every request alone on one session; returns the generated tokens. */
static long run_solo(slm_model* model, int threads, double* seconds) {
    slm_session_params sp = slm_session_default_params();
    sp.threads = threads;
    slm_session* s = NULL;
    if (slm_session_create(model, &sp, &s) != SLM_OK) return -1;
    long tokens = 0;
    const double t0 = now();
    for (int i = 0; i < kRequests; ++i) {
        struct request* r = &g_req[i];
        int32_t ids[256];
        const int n = slm_tokenize(model, kPrompts[i % 8], 1, ids, 256);
        if (n < 0 || n > 256 || slm_reset(s) != SLM_OK) goto fail;
        slm_generate_params gp = slm_generate_default_params();
        gp.sampler = &r->sampler;
        gp.max_tokens = kMaxTokens;
        gp.stop_strings = r->stop ? &r->stop : NULL;
        gp.n_stop_strings = r->stop ? 1 : 0;
        gp.on_token = append_text;
        gp.user_data = r;
        r->want_len = 0;
        r->want[0] = 0;
        slm_generate_result res = {.size = sizeof res};
        if (slm_generate(s, ids, (size_t)n, &gp, &res) != SLM_OK) goto fail;
        r->n_tokens = res.n_generated;
        tokens += res.n_generated;
    }
    *seconds = now() - t0;
    slm_session_free(s);
    return tokens;
fail:
    slm_session_free(s);
    return -1;
}

/* All requests through a batch of `slots`, submitting whenever a slot is free. */
static long run_batch(slm_model* model, int slots, int threads, double* seconds) {
    slm_batch_params bp = slm_batch_default_params();
    bp.slots = slots;
    bp.threads = threads;
    slm_batch* b = NULL;
    if (slm_batch_create(model, &bp, &b) != SLM_OK) return -1;
    long tokens = 0;
    int submitted = 0, collected = 0;
    const double t0 = now();
    while (collected < kRequests) {
        while (submitted < kRequests && slm_batch_running(b) < slm_batch_slots(b)) {
            struct request* r = &g_req[submitted];
            slm_batch_request rq = slm_batch_default_request();
            rq.text = kPrompts[submitted % 8]; /* tokenized as slm_tokenize(add_special = 1) */
            rq.sampler = &r->sampler;
            rq.max_tokens = kMaxTokens;
            rq.stop_strings = r->stop ? &r->stop : NULL;
            rq.n_stop_strings = r->stop ? 1 : 0;
            rq.tag = (uint64_t)submitted;
            if (slm_batch_submit(b, &rq, NULL) != SLM_OK) goto fail;
            ++submitted;
        }
        if (slm_batch_step(b, NULL) != SLM_OK) goto fail;
        slm_batch_result res = {.size = sizeof res};
        int got = 0;
        while (slm_batch_collect(b, &res, &got) == SLM_OK && got) {
            struct request* r = &g_req[res.tag];
            snprintf(r->got, kTextCap, "%s", res.text);
            tokens += res.n_tokens;
            ++collected;
        }
    }
    *seconds = now() - t0;
    slm_batch_free(b);
    return tokens;
fail:
    slm_batch_free(b);
    return -1;
}

/* Counts the requests whose batched text differs from the solo one. */
static int compare(const char* what) {
    int bad = 0;
    for (int i = 0; i < kRequests; ++i)
        if (strcmp(g_req[i].got, g_req[i].want) != 0) {
            if (bad++ < 3)
                fprintf(stderr, "%s: request %d differs:\n  batch '%s'\n  alone '%s'\n", what, i, g_req[i].got,
                        g_req[i].want);
        }
    return bad;
}

int main(int argc, char** argv) {
    const char* path = argc > 1 ? argv[1] : "../shared/data/stories260K-hf";
    const int threads = argc > 2 ? atoi(argv[2]) : 0;
    slm_model* model = NULL;
    slm_model_params mp = slm_model_default_params();
    mp.weights = SLM_WEIGHTS_NATIVE; /* as stored: f32 for stories260K, the GGUF's blocks for a GGUF */
    mp.threads = threads;
    if (slm_model_load(path, &mp, &model) != SLM_OK) {
        fprintf(stderr, "error: %s\n", slm_last_error());
        return 1;
    }
    for (int i = 0; i < kRequests; ++i) {
        g_req[i].sampler = slm_sampler_default_params(); /* temperature 0.8, top-k 40, ... */
        g_req[i].sampler.seed = 1000u + (unsigned)i;     /* each request its own stream */
        g_req[i].stop = i % 4 == 3 ? "." : NULL;
    }
    double t_solo = 0, t1 = 0, t16 = 0;
    const long n_solo = run_solo(model, threads, &t_solo);
    const long n1 = n_solo < 0 ? -1 : run_batch(model, 1, threads, &t1);
    const int bad1 = n1 < 0 ? 0 : compare("S = 1");
    const long n16 = n1 < 0 ? -1 : run_batch(model, 16, threads, &t16);
    const int bad16 = n16 < 0 ? 0 : compare("S = 16");
    if (n_solo < 0 || n1 < 0 || n16 < 0) {
        fprintf(stderr, "error: %s\n", slm_last_error());
        slm_model_free(model);
        return 1;
    }
    printf("%d requests (up to %d tokens, sampled, own seeds, 8 with a stop string), model %s\n", kRequests,
           kMaxTokens, path);
    printf("texts equal to slm_generate alone: S = 1 %d/%d, S = 16 %d/%d\n", kRequests - bad1, kRequests,
           kRequests - bad16, kRequests);
    printf("aggregate generation speed (generated tokens / wall time, prompts included):\n");
    printf("  slm_generate, one by one   %5ld tokens %8.3f s %9.1f tok/s\n", n_solo, t_solo, (double)n_solo / t_solo);
    printf("  batch S = 1                %5ld tokens %8.3f s %9.1f tok/s\n", n1, t1, (double)n1 / t1);
    printf("  batch S = 16               %5ld tokens %8.3f s %9.1f tok/s  (%.2fx S = 1)\n", n16, t16,
           (double)n16 / t16, ((double)n16 / t16) / ((double)n1 / t1));
    slm_model_free(model);
    return bad1 || bad16 || n1 != n_solo || n16 != n_solo ? 1 : 0;
}
