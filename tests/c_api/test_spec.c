/* C API 4 from C on stories260K: prompt-lookup speculation. Greedy
 * slm_generate_speculative gives slm_generate's tokens, text and stop reason
 * (constrained too), with drafts accepted; a batch made with
 * slm_batch_create_speculative gives a plain batch's tokens and
 * log-probabilities bit for bit at 1 and 4 slots; "ngram:N" parses as the
 * CLI's --spec; bad settings are refused with messages naming them. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "staticlm/staticlm.h"

#include "check.h"

enum { kReq = 8, kMaxGen = 96, kTop = 2 };

static const char* const kPrompts[kReq] = {
    "Lily saw a big dog. Lily saw a big cat. Lily saw a big",
    "Once upon a time",
    "Tom had a red ball. Tom had a red ball. Tom had a red",
    "The sun was",
    "One day, a little boy went to the park. One day, a little boy went to the",
    "Mom said",
    "Sam and Sue played. Sam and Sue played. Sam and",
    "The cat",
};

struct result {
    int n;
    int32_t tokens[kMaxGen];
    float logprobs[kMaxGen];
    slm_token_logprob top[kMaxGen * kTop];
    slm_stop_reason reason;
    char text[4096];
    slm_speculation_stats stats;
};

/* Every request through a batch of `slots` slots (spec NULL: a plain batch). */
static void run_batch(slm_model* model, int slots, const slm_speculation_params* spec, struct result* out) {
    slm_batch_params bp = slm_batch_default_params();
    bp.slots = slots;
    bp.max_seq = 160;
    bp.threads = 2;
    slm_batch* b = NULL;
    CHECK((spec ? slm_batch_create_speculative(model, &bp, NULL, spec, &b) : slm_batch_create(model, &bp, &b)) ==
          SLM_OK);
    if (!b) return;
    slm_sampler_params sp = slm_sampler_default_params();
    sp.temperature = 0.0f;
    int submitted = 0, collected = 0;
    while (collected < kReq) {
        while (submitted < kReq && slm_batch_running(b) < slots) {
            slm_batch_request r = slm_batch_default_request();
            r.text = kPrompts[submitted];
            r.sampler = &sp;
            r.max_tokens = 40 + 7 * submitted;
            r.logprobs = kTop;
            r.tag = (uint64_t)submitted;
            CHECK(slm_batch_submit(b, &r, NULL) == SLM_OK);
            ++submitted;
        }
        CHECK(slm_batch_step(b, NULL) == SLM_OK);
        for (;;) {
            slm_batch_result res = {.size = sizeof res};
            int got = 0;
            CHECK(slm_batch_collect(b, &res, &got) == SLM_OK);
            if (!got) break;
            struct result* o = &out[res.tag];
            o->n = res.n_tokens < kMaxGen ? res.n_tokens : kMaxGen;
            memcpy(o->tokens, res.tokens, sizeof(int32_t) * (size_t)o->n);
            memcpy(o->logprobs, res.logprobs, sizeof(float) * (size_t)o->n);
            CHECK(res.n_top == kTop);
            memcpy(o->top, res.top, sizeof(slm_token_logprob) * (size_t)(o->n * kTop));
            o->reason = res.stop_reason;
            snprintf(o->text, sizeof o->text, "%s", res.text);
            o->stats.size = sizeof o->stats;
            CHECK(slm_batch_collected_speculation(b, &o->stats) == SLM_OK);
            ++collected;
        }
    }
    slm_batch_free(b);
}

static void test_batch(slm_model* model) {
    static struct result plain[kReq], spec1[kReq], spec4[kReq];
    memset(plain, 0, sizeof plain);
    run_batch(model, 4, NULL, plain);
    slm_speculation_params sp = slm_speculation_default_params();
    CHECK(slm_speculation_parse("ngram:6", &sp) == SLM_OK && sp.max_draft == 6);
    for (int k = 0; k < 2; ++k) {
        struct result* got = k == 0 ? spec1 : spec4;
        memset(got, 0, sizeof spec1);
        run_batch(model, k == 0 ? 1 : 4, &sp, got);
        int accepted = 0;
        for (int i = 0; i < kReq; ++i) {
            CHECK(got[i].n == plain[i].n && got[i].n > 0);
            CHECK(memcmp(got[i].tokens, plain[i].tokens, sizeof(int32_t) * (size_t)plain[i].n) == 0);
            CHECK(memcmp(got[i].logprobs, plain[i].logprobs, sizeof(float) * (size_t)plain[i].n) == 0);
            CHECK(memcmp(got[i].top, plain[i].top, sizeof(slm_token_logprob) * (size_t)(plain[i].n * kTop)) == 0);
            CHECK(got[i].reason == plain[i].reason);
            CHECK(strcmp(got[i].text, plain[i].text) == 0);
            CHECK(got[i].stats.accepted_tokens <= got[i].stats.drafted_tokens);
            CHECK(plain[i].stats.drafted_tokens == 0);
            accepted += got[i].stats.accepted_tokens;
        }
        CHECK(accepted > 40);
    }
}

static void test_generate(slm_model* model) {
    slm_session_params ssp = slm_session_default_params();
    ssp.max_seq = 200;
    ssp.threads = 2;
    slm_session* plain = NULL;
    CHECK(slm_session_create(model, &ssp, &plain) == SLM_OK);
    ssp.all_logits = 1;
    slm_session* spec = NULL;
    CHECK(slm_session_create(model, &ssp, &spec) == SLM_OK);
    if (!plain || !spec) return;
    slm_sampler_params greedy = slm_sampler_default_params();
    greedy.temperature = 0.0f;
    slm_speculation_params sp = slm_speculation_default_params();
    CHECK(sp.size == sizeof sp && sp.max_draft == 8 && sp.max_ngram == 3 && sp.min_ngram == 1);
    int accepted = 0;
    for (int i = 0; i < kReq; ++i) {
        int32_t ids[256];
        const int n = slm_tokenize(model, kPrompts[i], 1, ids, 256);
        CHECK(n > 0);
        slm_generate_params gp = slm_generate_default_params();
        gp.sampler = &greedy;
        gp.max_tokens = 60;
        slm_generate_result want = {.size = sizeof want}, got = {.size = sizeof got};
        slm_speculation_stats st = {.size = sizeof st};
        CHECK(slm_reset(plain) == SLM_OK && slm_reset(spec) == SLM_OK);
        CHECK(slm_generate(plain, ids, (size_t)n, &gp, &want) == SLM_OK);
        CHECK(slm_generate_speculative(spec, ids, (size_t)n, &gp, NULL, &sp, &got, NULL, &st) == SLM_OK);
        CHECK(got.n_generated == want.n_generated && got.stop_reason == want.stop_reason);
        CHECK(slm_pos(spec) == slm_pos(plain));
        CHECK(st.accepted_tokens <= st.drafted_tokens && st.draft_steps <= st.drafted_tokens);
        accepted += st.accepted_tokens;
    }
    CHECK(accepted > 40);

    /* Constrained: the same JSON with and without speculation. */
    slm_constraint* c = NULL;
    const char* schema = "{\"type\":\"array\",\"items\":{\"type\":\"integer\"},\"maxItems\":5}";
    CHECK(slm_constraint_json_schema(model, schema, strlen(schema), &c) == SLM_OK);
    if (c) {
        int32_t ids[64];
        const int n = slm_tokenize(model, "[1, 2, 1, 2", 1, ids, 64);
        slm_generate_params gp = slm_generate_default_params();
        gp.sampler = &greedy;
        gp.max_tokens = 40;
        slm_generate_result want = {.size = sizeof want}, got = {.size = sizeof got};
        int cw = -1, cg = -1;
        CHECK(slm_reset(plain) == SLM_OK && slm_reset(spec) == SLM_OK);
        CHECK(slm_generate_constrained(plain, ids, (size_t)n, &gp, c, &want, &cw) == SLM_OK);
        CHECK(slm_generate_speculative(spec, ids, (size_t)n, &gp, c, &sp, &got, &cg, NULL) == SLM_OK);
        CHECK(got.n_generated == want.n_generated && cg == cw);
        slm_constraint_free(c);
    }

    /* Errors: a session without all_logits, bad fields, bad sizes. */
    int32_t one[1] = {1};
    CHECK_ERR(slm_generate_speculative(plain, one, 1, NULL, NULL, &sp, NULL, NULL, NULL), SLM_ERR_CONFIG,
              "needs a session created with all_logits");
    slm_speculation_params bad = sp;
    bad.max_draft = 65;
    CHECK_ERR(slm_generate_speculative(spec, one, 1, NULL, NULL, &bad, NULL, NULL, NULL), SLM_ERR_CONFIG,
              "max_draft must be in 0..64");
    bad = sp;
    bad.min_ngram = 4;
    CHECK_ERR(slm_generate_speculative(spec, one, 1, NULL, NULL, &bad, NULL, NULL, NULL), SLM_ERR_CONFIG,
              "min_ngram must be in 1..max_ngram (3), got 4");
    bad = sp;
    bad.size = 8;
    CHECK_ERR(slm_generate_speculative(spec, one, 1, NULL, NULL, &bad, NULL, NULL, NULL), SLM_ERR_CONFIG,
              "slm_speculation_params.size is 8");
    slm_speculation_stats st = {.size = 4};
    CHECK_ERR(slm_generate_speculative(spec, one, 1, NULL, NULL, &sp, NULL, NULL, &st), SLM_ERR_CONFIG,
              "slm_speculation_stats.size is 4");
    slm_session_free(plain);
    slm_session_free(spec);

    slm_batch_params bp = slm_batch_default_params();
    bp.slots = 2;
    bp.max_seq = 64;
    slm_batch* b = NULL;
    bad = sp;
    bad.max_draft = -1;
    CHECK_ERR(slm_batch_create_speculative(model, &bp, NULL, &bad, &b), SLM_ERR_CONFIG, "max_draft must be in 0..64");
    CHECK(b == NULL);
}

static void test_parse(void) {
    slm_speculation_params p = slm_speculation_default_params();
    CHECK(slm_speculation_parse("ngram", &p) == SLM_OK && p.max_draft == 8);
    CHECK(slm_speculation_parse("ngram:1", &p) == SLM_OK && p.max_draft == 1);
    CHECK(slm_speculation_parse("ngram:64", &p) == SLM_OK && p.max_draft == 64 && p.max_ngram == 3);
    CHECK(slm_speculation_parse("off", &p) == SLM_OK && p.max_draft == 0);
    const char* bad[] = {"ngram:0", "ngram:65", "ngram:", "ngram:x", "ngram:-3", "lookup", "ngram:0008"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
        char want[64];
        snprintf(want, sizeof want, "got '%s'", bad[i]);
        CHECK_ERR(slm_speculation_parse(bad[i], &p), SLM_ERR_CONFIG, want);
    }
    CHECK(slm_speculation_parse(NULL, &p) == SLM_ERR_INPUT);
}

int main(int argc, char** argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: test_c_spec SOURCE_DIR\n");
        return 2;
    }
    CHECK(slm_api_version() == 4 && SLM_API_VERSION == 4);
    test_parse();
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/../shared/data/stories260K-hf/config.json", argv[1]);
    FILE* probe = fopen(dir, "r");
    if (!probe) {
        printf("SKIPPED: %s is absent\n", dir);
        return g_fails != 0;
    }
    fclose(probe);
    snprintf(dir, sizeof dir, "%s/../shared/data/stories260K-hf", argv[1]);
    slm_model* model = NULL;
    slm_model_params mp = slm_model_default_params();
    mp.weights = SLM_WEIGHTS_Q8;
    mp.threads = 2;
    CHECK(slm_model_load(dir, &mp, &model) == SLM_OK);
    if (model) {
        test_generate(model);
        test_batch(model);
        slm_model_free(model);
    }
    printf("%d checks, %d failed\n", g_checks, g_fails);
    return g_fails != 0;
}
