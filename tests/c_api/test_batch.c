/* C API 2 from C: batched sessions against solo slm_generate runs (tokens,
 * log-probabilities, texts, stop strings, cancel), the token-info callback
 * against logits and log-softmax computed here from slm_prefill/slm_decode,
 * slm_score against the same, older struct sizes, and bad input.
 * usage: test_c_batch SOURCE_DIR  (exit 0 ok, 1 failures; the text part is
 * skipped with a message when ../shared/data is absent) */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "staticlm/staticlm.h"

#include "check.h"

enum { kMaxGen = 64, kTop = 3, kVocab = 256 };

/* What on_token_info saw in one solo generation. */
struct trace {
    int n;
    int32_t tokens[kMaxGen];
    float logprobs[kMaxGen];
    slm_token_logprob top[kMaxGen][kTop];
    float logits[kMaxGen][kVocab]; /* the fixture's vocabulary */
    int vocab_ok, sorted_ok, end_calls;
    char text[2048];
    size_t len;
};

static int trace_fn(const slm_token_info* info, void* user) {
    struct trace* t = user;
    if (info->len && t->len + info->len < sizeof t->text) {
        memcpy(t->text + t->len, info->text, info->len);
        t->len += info->len;
        t->text[t->len] = 0;
    }
    if (info->token < 0) {
        ++t->end_calls;
        return 1;
    }
    if (t->n >= kMaxGen) return 0;
    t->tokens[t->n] = info->token;
    t->logprobs[t->n] = info->logprob;
    for (int i = 0; i < info->n_top && i < kTop; ++i) t->top[t->n][i] = info->top[i];
    for (int i = 1; i < info->n_top; ++i)
        if (info->top[i].logprob > info->top[i - 1].logprob) t->sorted_ok = 0;
    if (info->n_vocab == kVocab && info->logits)
        memcpy(t->logits[t->n], info->logits, sizeof t->logits[0]);
    else
        t->vocab_ok = 0;
    ++t->n;
    return 1;
}

/* log-softmax of logits at token, in double, written out here. */
static double log_softmax(const float* logits, int vocab, int token) {
    float max = logits[0];
    for (int i = 1; i < vocab; ++i)
        if (logits[i] > max) max = logits[i];
    double sum = 0;
    for (int i = 0; i < vocab; ++i) sum += exp((double)logits[i] - max);
    return (double)logits[token] - ((double)max + log(sum));
}

static int argmax(const float* logits, int vocab) {
    int best = 0;
    for (int i = 1; i < vocab; ++i)
        if (logits[i] > logits[best]) best = i;
    return best;
}

/* Six prompts of ids, greedy and sampled, through a batch of 4 slots with a
 * small prefill budget, against slm_generate alone: the same tokens, and the
 * same log-probabilities bit for bit; the callback's logits are those of the
 * v1 calls; its log-probabilities those computed here. */
static void test_fixture(const char* src) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/tests/fixtures/llama-tied", src);
    slm_model* model = NULL;
    slm_model_params mp = slm_model_default_params();
    mp.weights = SLM_WEIGHTS_Q8;
    mp.threads = 1;
    mp.load_tokenizer = 0;
    CHECK(slm_model_load(dir, &mp, &model) == SLM_OK);
    if (!model) return;
    CHECK(slm_api_version() == SLM_API_VERSION && SLM_API_VERSION >= 2);

    enum { kReq = 6 };
    const int32_t prompts[kReq][40] = {{1, 17, 200, 3, 99},
                                       {1, 5},
                                       {1, 9, 9, 9, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53},
                                       {1},
                                       {1, 250, 7},
                                       {1, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 60, 61, 62, 63, 64, 65, 66,
                                        67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81}};
    const size_t n_prompt[kReq] = {5, 2, 18, 1, 3, 33};
    const int max_tokens[kReq] = {12, 20, 7, 30, 1, 15};
    const float temps[kReq] = {0.0f, 0.9f, 0.0f, 1.2f, 0.7f, 0.8f};
    const int32_t never[1] = {-5}; /* runs to max_tokens */
    slm_sampler_params sp[kReq];
    static struct trace solo[kReq];
    memset(solo, 0, sizeof solo);

    slm_session_params ssp = slm_session_default_params();
    ssp.max_seq = 64;
    ssp.threads = 1;
    slm_session* s = NULL;
    CHECK(slm_session_create(model, &ssp, &s) == SLM_OK);
    slm_session* manual = NULL;
    CHECK(slm_session_create(model, &ssp, &manual) == SLM_OK);
    if (!s || !manual) return;
    for (int i = 0; i < kReq; ++i) {
        sp[i] = slm_sampler_default_params();
        sp[i].temperature = temps[i];
        sp[i].seed = 1000u + (unsigned)i;
        slm_generate_params gp = slm_generate_default_params();
        CHECK(gp.logprobs == -1 && gp.on_token_info == NULL);
        gp.sampler = &sp[i];
        gp.max_tokens = max_tokens[i];
        gp.stop_ids = never;
        gp.n_stop_ids = 1;
        gp.on_token_info = trace_fn;
        gp.user_data = &solo[i];
        gp.logprobs = kTop;
        solo[i].vocab_ok = solo[i].sorted_ok = 1;
        slm_generate_result r = {.size = sizeof r};
        CHECK(slm_reset(s) == SLM_OK);
        CHECK(slm_generate(s, prompts[i], n_prompt[i], &gp, &r) == SLM_OK);
        CHECK(r.n_generated == max_tokens[i] && r.stop_reason == SLM_STOP_MAX_TOKENS);
        CHECK(solo[i].n == max_tokens[i] && solo[i].vocab_ok && solo[i].sorted_ok);
        /* The logits of each token: those of prefill + decode of the tokens before it. */
        const float* logits = NULL;
        CHECK(slm_prefill(manual, prompts[i], n_prompt[i], &logits) == SLM_OK);
        for (int k = 0; k < solo[i].n && logits; ++k) {
            CHECK(memcmp(logits, solo[i].logits[k], sizeof solo[i].logits[k]) == 0);
            const double want = log_softmax(logits, kVocab, solo[i].tokens[k]);
            CHECK(fabs(want - solo[i].logprobs[k]) <= 1e-5 * (1 + fabs(want)));
            CHECK(solo[i].top[k][0].token == argmax(logits, kVocab));
            if (temps[i] == 0.0f) CHECK(solo[i].tokens[k] == argmax(logits, kVocab));
            if (k + 1 < solo[i].n) CHECK(slm_decode(manual, solo[i].tokens[k], &logits) == SLM_OK);
        }
    }
    /* The sampled requests do not all follow the argmax (so the seeds matter). */
    int differs = 0;
    for (int k = 0; k < solo[3].n; ++k) differs += solo[3].tokens[k] != argmax(solo[3].logits[k], kVocab);
    CHECK(differs > 0);

    slm_batch_params bp = slm_batch_default_params();
    CHECK(bp.slots == 16 && bp.size == sizeof bp);
    bp.slots = 4;
    bp.max_seq = 64;
    bp.threads = 1;
    bp.prefill_budget = 16;
    slm_batch* b = NULL;
    CHECK(slm_batch_create(model, &bp, &b) == SLM_OK);
    if (!b) return;
    CHECK(slm_batch_slots(b) == 4 && slm_batch_running(b) == 0 && slm_batch_finished(b) == 0);
    uint64_t ids[kReq] = {0};
    int submitted = 0, collected = 0, steps = 0, seen[kReq] = {0};
    while (collected < kReq && steps < 500) {
        while (submitted < kReq) {
            slm_batch_request rq = slm_batch_default_request();
            rq.tokens = prompts[submitted];
            rq.n_tokens = n_prompt[submitted];
            rq.sampler = &sp[submitted];
            rq.max_tokens = max_tokens[submitted];
            rq.stop_ids = never;
            rq.n_stop_ids = 1;
            rq.logprobs = kTop;
            rq.tag = 100u + (unsigned)submitted;
            const slm_status st = slm_batch_submit(b, &rq, &ids[submitted]);
            if (st == SLM_ERR_CAPACITY) {
                CHECK(slm_batch_running(b) == 4 && strstr(slm_last_error(), "4 slots") != NULL);
                break;
            }
            CHECK(st == SLM_OK && ids[submitted] == (uint64_t)submitted + 1);
            ++submitted;
        }
        int fin = -1;
        CHECK(slm_batch_step(b, &fin) == SLM_OK);
        ++steps;
        CHECK(fin >= 0 && slm_batch_finished(b) >= fin);
        slm_batch_result r = {.size = sizeof r};
        int got = 0;
        while (slm_batch_collect(b, &r, &got) == SLM_OK && got) {
            const int i = (int)(r.tag - 100u);
            CHECK(i >= 0 && i < kReq && r.id == ids[i] && !seen[i]);
            if (i < 0 || i >= kReq) break;
            seen[i] = 1;
            ++collected;
            CHECK(r.stop_reason == SLM_STOP_MAX_TOKENS && r.n_tokens == solo[i].n);
            CHECK(r.n_prompt_tokens == (int)n_prompt[i] && r.n_top == kTop);
            CHECK(r.text && r.text_len == 0); /* no tokenizer */
            CHECK(r.tokens && memcmp(r.tokens, solo[i].tokens, sizeof(int32_t) * (size_t)r.n_tokens) == 0);
            CHECK(r.logprobs && memcmp(r.logprobs, solo[i].logprobs, sizeof(float) * (size_t)r.n_tokens) == 0);
            for (int k = 0; k < r.n_tokens && r.top; ++k)
                CHECK(memcmp(r.top + k * kTop, solo[i].top[k], sizeof solo[i].top[k]) == 0);
        }
    }
    CHECK(collected == kReq && slm_batch_running(b) == 0 && slm_batch_finished(b) == 0);
    printf("fixture: %d requests in %d steps of a 4-slot batch equal slm_generate alone\n", collected, steps);

    /* Cancel: a running request ends with what it generated, a prefix of the solo run. */
    slm_batch_request rq = slm_batch_default_request();
    rq.tokens = prompts[3];
    rq.n_tokens = n_prompt[3];
    rq.sampler = &sp[3];
    rq.max_tokens = max_tokens[3];
    rq.stop_ids = never;
    rq.n_stop_ids = 1;
    rq.tag = 7;
    uint64_t id = 0;
    CHECK(slm_batch_submit(b, &rq, &id) == SLM_OK && id == kReq + 1);
    for (int i = 0; i < 5; ++i) CHECK(slm_batch_step(b, NULL) == SLM_OK);
    CHECK(slm_batch_cancel(b, id) == SLM_OK);
    CHECK(slm_batch_running(b) == 0 && slm_batch_finished(b) == 1);
    CHECK_ERR(slm_batch_cancel(b, id), SLM_ERR_INPUT, "it finished");
    CHECK_ERR(slm_batch_cancel(b, 999), SLM_ERR_INPUT, "request 999 is not running");
    slm_batch_result r = {.size = sizeof r};
    int got = 0;
    CHECK(slm_batch_collect(b, &r, &got) == SLM_OK && got == 1);
    CHECK(r.id == id && r.tag == 7 && r.stop_reason == SLM_STOP_ABORTED && r.n_tokens == 5);
    CHECK(r.logprobs == NULL && r.top == NULL && r.n_top == 0);
    CHECK(memcmp(r.tokens, solo[3].tokens, sizeof(int32_t) * 5) == 0);
    CHECK(slm_batch_collect(b, &r, &got) == SLM_OK && got == 0);

    /* Bad input: each refused with its reason; the batch unchanged and usable. */
    rq.tag = 8;
    rq.max_tokens = -2;
    CHECK_ERR(slm_batch_submit(b, &rq, &id), SLM_ERR_CONFIG, "max_tokens must be >= 0");
    rq.max_tokens = 4;
    rq.logprobs = 21;
    CHECK_ERR(slm_batch_submit(b, &rq, &id), SLM_ERR_CONFIG, "logprobs");
    rq.logprobs = -1;
    const int32_t bad_ids[2] = {1, kVocab};
    rq.tokens = bad_ids;
    rq.n_tokens = 2;
    CHECK_ERR(slm_batch_submit(b, &rq, &id), SLM_ERR_INPUT, "invalid token id 256 at index 1");
    static int32_t long_prompt[65];
    for (int i = 0; i < 65; ++i) long_prompt[i] = 1;
    rq.tokens = long_prompt;
    rq.n_tokens = 65;
    CHECK_ERR(slm_batch_submit(b, &rq, &id), SLM_ERR_CAPACITY, "K=64");
    rq.tokens = prompts[0];
    rq.n_tokens = 0;
    CHECK_ERR(slm_batch_submit(b, &rq, &id), SLM_ERR_INPUT, "empty input");
    rq.n_tokens = n_prompt[0];
    rq.text = "hello";
    CHECK_ERR(slm_batch_submit(b, &rq, &id), SLM_ERR_INPUT, "set one of tokens, text and messages (2 are set)");
    rq.tokens = NULL;
    CHECK_ERR(slm_batch_submit(b, &rq, &id), SLM_ERR_CONFIG, "without a tokenizer");
    rq.text = NULL;
    CHECK_ERR(slm_batch_submit(b, &rq, &id), SLM_ERR_INPUT, "(0 are set)");
    rq.tokens = prompts[0];
    int32_t many[17];
    for (int i = 0; i < 17; ++i) many[i] = 200 + i;
    rq.stop_ids = many;
    rq.n_stop_ids = 17;
    CHECK_ERR(slm_batch_submit(b, &rq, &id), SLM_ERR_CONFIG, "at most 16 stop ids");
    rq.n_stop_ids = 1;
    const char* empty_stop[1] = {""};
    rq.stop_strings = empty_stop;
    rq.n_stop_strings = 1;
    CHECK_ERR(slm_batch_submit(b, &rq, &id), SLM_ERR_CONFIG, "empty stop string");
    rq.stop_strings = NULL;
    rq.n_stop_strings = 0;
    slm_sampler_params bad_sp = sp[0];
    bad_sp.top_p = 0.0f;
    rq.sampler = &bad_sp;
    CHECK_ERR(slm_batch_submit(b, &rq, &id), SLM_ERR_CONFIG, "top_p");
    rq.sampler = &sp[0];
    rq.size = sizeof rq - 8;
    CHECK_ERR(slm_batch_submit(b, &rq, &id), SLM_ERR_CONFIG, "slm_batch_request.size");
    rq.size = sizeof rq;
    CHECK(slm_batch_running(b) == 0 && slm_batch_finished(b) == 0);
    r.size = 8;
    CHECK_ERR(slm_batch_collect(b, &r, &got), SLM_ERR_CONFIG, "slm_batch_result.size");
    r.size = sizeof r;
    CHECK(slm_batch_submit(b, &rq, &id) == SLM_OK && id == kReq + 2); /* ids of refused requests are not used */
    while (slm_batch_finished(b) == 0) CHECK(slm_batch_step(b, NULL) == SLM_OK);
    CHECK(slm_batch_collect(b, &r, &got) == SLM_OK && got == 1 && r.id == id && r.n_tokens == 4);
    CHECK(memcmp(r.tokens, solo[0].tokens, sizeof(int32_t) * 4) == 0);
    slm_batch_free(b);
    bp.slots = 0;
    CHECK_ERR(slm_batch_create(model, &bp, &b), SLM_ERR_CONFIG, "slots must be >= 1");
    bp.slots = 2;
    bp.kv = (slm_kv)3;
    CHECK_ERR(slm_batch_create(model, &bp, &b), SLM_ERR_CONFIG, "kv 3");
    bp.kv = SLM_KV_F16;
    bp.prefill_budget = -1;
    CHECK_ERR(slm_batch_create(model, &bp, &b), SLM_ERR_CONFIG, "prefill_budget");
    CHECK(b == NULL);

    /* Generation params: both callbacks, logprobs out of range; a v1-sized
     * struct (before on_token_info) reads with the new fields off. */
    slm_generate_params gp = slm_generate_default_params();
    gp.sampler = &sp[0];
    gp.max_tokens = 3;
    gp.on_token_info = trace_fn;
    gp.logprobs = 21;
    static struct trace t;
    memset(&t, 0, sizeof t);
    gp.user_data = &t;
    CHECK_ERR(slm_generate(s, prompts[0], n_prompt[0], &gp, NULL), SLM_ERR_CONFIG, "logprobs must be -1");
    gp.logprobs = -1;
    CHECK(slm_reset(s) == SLM_OK);
    CHECK(slm_generate(s, prompts[0], n_prompt[0], &gp, NULL) == SLM_OK);
    CHECK(t.n == 3 && isnan(t.logprobs[0]) && memcmp(t.tokens, solo[0].tokens, 3 * sizeof(int32_t)) == 0);
    gp.size = offsetof(slm_generate_params, on_token_info);
    t.n = 0;
    CHECK(slm_reset(s) == SLM_OK);
    CHECK(slm_generate(s, prompts[0], n_prompt[0], &gp, NULL) == SLM_OK && t.n == 0);
    gp.size = sizeof gp;
    slm_session_free(manual);
    slm_session_free(s);

    /* Scoring: a session without all_logits is refused; with it, the sums are
     * those of the log-softmax of prefill + decode logits computed here. */
    CHECK(slm_session_create(model, &ssp, &s) == SLM_OK);
    const int32_t sprompt[3] = {1, 17, 200};
    const int32_t c0[4] = {3, 99, 4, 5}, c1[1] = {77};
    const int32_t* conts[2] = {c0, c1};
    const size_t n_conts[2] = {4, 1};
    slm_score_result sr[2];
    CHECK_ERR(slm_score(s, sprompt, 3, conts, n_conts, 2, sr), SLM_ERR_CONFIG, "all_logits");
    slm_session_free(s);
    ssp.all_logits = 1;
    CHECK(slm_session_create(model, &ssp, &s) == SLM_OK);
    CHECK(slm_score(s, sprompt, 3, conts, n_conts, 2, sr) == SLM_OK);
    CHECK(slm_pos(s) == 3);
    ssp.all_logits = 0;
    CHECK(slm_session_create(model, &ssp, &manual) == SLM_OK);
    for (int c = 0; c < 2; ++c) {
        const float* logits = NULL;
        double sum = 0;
        int greedy = 1;
        CHECK(slm_prefill(manual, sprompt, 3, &logits) == SLM_OK);
        for (size_t k = 0; k < n_conts[c] && logits; ++k) {
            sum += log_softmax(logits, kVocab, conts[c][k]);
            greedy = greedy && argmax(logits, kVocab) == conts[c][k];
            if (k + 1 < n_conts[c]) CHECK(slm_decode(manual, conts[c][k], &logits) == SLM_OK);
        }
        CHECK(sr[c].n_tokens == (int)n_conts[c] && sr[c].is_greedy == greedy);
        CHECK(fabs(sr[c].logprob - sum) <= 1e-4 * (1 + fabs(sum)));
    }
    slm_session_free(manual);
    /* A C API 1 program's session params (its sizeof) read as all_logits = 0. */
    struct v1_session_params {
        size_t size;
        int max_seq;
        const int* prefill_buckets;
        size_t n_prefill_buckets;
        const int* append_buckets;
        size_t n_append_buckets;
        slm_kv kv;
        int threads;
        int ring_sliding;
    };
    CHECK(sizeof(struct v1_session_params) < sizeof(slm_session_params));
    ssp.reserved = 1;
    CHECK_ERR(slm_session_create(model, &ssp, &manual), SLM_ERR_CONFIG, "reserved must be 0");
    ssp.reserved = 0;
    ssp.all_logits = 1;
    ssp.size = sizeof(struct v1_session_params);
    CHECK(slm_session_create(model, &ssp, &manual) == SLM_OK);
    CHECK_ERR(slm_score(manual, sprompt, 3, conts, n_conts, 2, sr), SLM_ERR_CONFIG, "all_logits");
    slm_session_free(manual);
    slm_session_free(s);
    slm_model_free(model);
}

struct text_acc {
    char buf[4096];
    size_t len;
};
static int collect_text(int32_t token, const char* text, size_t len, void* user) {
    (void)token;
    struct text_acc* a = user;
    if (a->len + len < sizeof a->buf) {
        memcpy(a->buf + a->len, text, len);
        a->len += len;
        a->buf[a->len] = 0;
    }
    return 1;
}

/* Text prompts with stop strings on stories260K: the batch's texts and stop
 * reasons are slm_generate's; slm_score_text picks the likely continuation. */
static void test_text(const char* src) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/../shared/data/stories260K-hf/config.json", src);
    FILE* probe = fopen(dir, "r");
    if (!probe) {
        printf("SKIPPED text part: %s is absent\n", dir);
        return;
    }
    fclose(probe);
    snprintf(dir, sizeof dir, "%s/../shared/data/stories260K-hf", src);
    slm_model* model = NULL;
    slm_model_params mp = slm_model_default_params();
    mp.weights = SLM_WEIGHTS_F32;
    mp.threads = 2;
    CHECK(slm_model_load(dir, &mp, &model) == SLM_OK);
    if (!model) return;
    enum { kReq = 5 };
    const char* prompts[kReq] = {"Once upon a time", "The dog", "", "Lily and Ben went to the park.", "Tom"};
    const char* stops[2] = {"park", "."};
    const size_t n_stops[kReq] = {1, 2, 0, 1, 2};
    const float temps[kReq] = {0.0f, 0.8f, 0.8f, 0.0f, 1.0f};
    slm_sampler_params sp[kReq];
    struct text_acc want[kReq];
    slm_generate_result wr[kReq];
    slm_session* s = NULL;
    slm_session_params ssp = slm_session_default_params();
    ssp.max_seq = 128;
    ssp.threads = 2;
    CHECK(slm_session_create(model, &ssp, &s) == SLM_OK);
    if (!s) return;
    int by_string = 0;
    for (int i = 0; i < kReq; ++i) {
        sp[i] = slm_sampler_default_params();
        sp[i].temperature = temps[i];
        sp[i].seed = 7u * (unsigned)i + 1u;
        int32_t ids[128];
        int n = slm_tokenize(model, prompts[i], 1, ids, 128);
        CHECK(n > 0 && n < 128);
        slm_generate_params gp = slm_generate_default_params();
        gp.sampler = &sp[i];
        gp.max_tokens = 60;
        gp.stop_strings = n_stops[i] ? stops : NULL;
        gp.n_stop_strings = n_stops[i];
        gp.on_token = collect_text;
        want[i].len = 0;
        want[i].buf[0] = 0;
        gp.user_data = &want[i];
        wr[i].size = sizeof wr[i];
        CHECK(slm_reset(s) == SLM_OK);
        CHECK(slm_generate(s, ids, (size_t)n, &gp, &wr[i]) == SLM_OK);
        by_string += wr[i].stop_reason == SLM_STOP_STRING;
    }
    CHECK(by_string >= 2); /* the stop strings are exercised */
    /* on_token_info streams the same text as on_token, stop strings included. */
    for (int i = 0; i < kReq; ++i) {
        static struct trace t;
        memset(&t, 0, sizeof t);
        int32_t ids[128];
        const int n = slm_tokenize(model, prompts[i], 1, ids, 128);
        slm_generate_params gp = slm_generate_default_params();
        gp.sampler = &sp[i];
        gp.max_tokens = 60;
        gp.stop_strings = n_stops[i] ? stops : NULL;
        gp.n_stop_strings = n_stops[i];
        gp.on_token_info = trace_fn;
        gp.user_data = &t;
        gp.logprobs = 0;
        CHECK(slm_reset(s) == SLM_OK);
        CHECK(n > 0 && slm_generate(s, ids, (size_t)n, &gp, NULL) == SLM_OK);
        CHECK(t.len == want[i].len && strcmp(t.text, want[i].buf) == 0);
        CHECK(t.n == wr[i].n_generated && t.logprobs[0] <= 0.0f);
    }
    CHECK(strncmp(want[0].buf, ", there was a little girl named Lily.", 37) == 0);

    slm_batch_params bp = slm_batch_default_params();
    bp.slots = 3;
    bp.max_seq = 128;
    bp.threads = 2;
    slm_batch* b = NULL;
    CHECK(slm_batch_create(model, &bp, &b) == SLM_OK);
    if (!b) return;
    int submitted = 0, collected = 0;
    for (int steps = 0; collected < kReq && steps < 1000; ++steps) {
        while (submitted < kReq && slm_batch_running(b) < slm_batch_slots(b)) {
            slm_batch_request rq = slm_batch_default_request();
            rq.text = prompts[submitted];
            rq.sampler = &sp[submitted];
            rq.max_tokens = 60;
            rq.stop_strings = n_stops[submitted] ? stops : NULL;
            rq.n_stop_strings = n_stops[submitted];
            rq.tag = (uint64_t)submitted;
            CHECK(slm_batch_submit(b, &rq, NULL) == SLM_OK);
            ++submitted;
        }
        CHECK(slm_batch_step(b, NULL) == SLM_OK);
        slm_batch_result r = {.size = sizeof r};
        int got = 0;
        while (slm_batch_collect(b, &r, &got) == SLM_OK && got) {
            const int i = (int)r.tag;
            ++collected;
            CHECK(i >= 0 && i < kReq);
            if (i < 0 || i >= kReq) break;
            CHECK(r.stop_reason == wr[i].stop_reason && r.n_tokens == wr[i].n_generated);
            CHECK(r.text_len == want[i].len && strcmp(r.text, want[i].buf) == 0);
            if (strcmp(r.text, want[i].buf) != 0)
                fprintf(stderr, "  request %d: batch '%s', alone '%s'\n", i, r.text, want[i].buf);
        }
    }
    CHECK(collected == kReq);

    /* A conversation: the reply slm_chat_reply gives on a fresh session. */
    const slm_chat_message msgs[1] = {{"user", "Once upon a time"}};
    slm_sampler_params greedy = slm_sampler_default_params();
    greedy.temperature = 0.0f;
    slm_batch_request rq = slm_batch_default_request();
    rq.messages = msgs;
    rq.n_messages = 1;
    rq.sampler = &greedy;
    rq.max_tokens = 30;
    CHECK(slm_batch_submit(b, &rq, NULL) == SLM_OK);
    while (slm_batch_finished(b) == 0) CHECK(slm_batch_step(b, NULL) == SLM_OK);
    slm_batch_result cr = {.size = sizeof cr};
    int got = 0;
    CHECK(slm_batch_collect(b, &cr, &got) == SLM_OK && got == 1);
    struct text_acc reply = {{0}, 0};
    slm_generate_params gp = slm_generate_default_params();
    gp.sampler = &greedy;
    gp.max_tokens = 30;
    gp.on_token = collect_text;
    gp.user_data = &reply;
    slm_chat* chat = NULL;
    CHECK(slm_reset(s) == SLM_OK && slm_chat_create(s, NULL, &chat) == SLM_OK);
    slm_generate_result gr = {.size = sizeof gr};
    CHECK(slm_chat_reply(chat, "Once upon a time", &gp, &gr) == SLM_OK);
    CHECK(gr.n_prompt_tokens == cr.n_prompt_tokens && gr.n_generated == cr.n_tokens);
    CHECK(strcmp(cr.text, reply.buf) == 0 && strncmp(reply.buf, ", there was a little girl named Lily.", 37) == 0);
    slm_chat_free(chat);
    const slm_chat_message bad_msgs[1] = {{"robot", "beep"}};
    rq.messages = bad_msgs;
    CHECK_ERR(slm_batch_submit(b, &rq, NULL), SLM_ERR_INPUT, "robot");
    CHECK(slm_batch_running(b) == 0);
    slm_batch_free(b);
    slm_session_free(s);

    /* Scoring text: "a little girl" after this prompt is the greedy
     * continuation (the golden text above); an unlikely one is not. */
    ssp.all_logits = 1;
    CHECK(slm_session_create(model, &ssp, &s) == SLM_OK);
    const char* conts[2] = {", there was a little girl", " purple elephant"};
    slm_score_result sr[2];
    CHECK(slm_score_text(s, "Once upon a time", conts, 2, sr) == SLM_OK);
    CHECK(sr[0].is_greedy == 1 && sr[1].is_greedy == 0 && sr[0].logprob > sr[1].logprob);
    CHECK(sr[0].n_tokens >= 4 && sr[0].logprob < 0);
    const char* empty[1] = {""};
    CHECK_ERR(slm_score_text(s, "Once", empty, 1, sr), SLM_ERR_INPUT, "continuation 0 is an empty string");
    slm_session_free(s);
    slm_model_free(model);
}

int main(int argc, char** argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s SOURCE_DIR\n", argv[0]);
        return 2;
    }
    test_fixture(argv[1]);
    test_text(argv[1]);
    printf("c api batch: %d checks, %d failed\n", g_checks, g_fails);
    return g_fails ? 1 : 0;
}
