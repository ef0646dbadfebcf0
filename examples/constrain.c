/* Constrained output and a batch's prefix pool with the staticlm C API (3):
 * a JSON Schema compiled once and used by a generation and by batch requests;
 * the decode speed of the same prompt with and without the schema; 16
 * classification requests that share a long instruction prefix run through a
 * batch with and without a prefix pool (the tokens must be equal; the prompt
 * rows each computed are printed).
 *
 *   cc constrain.c -o constrain $(pkg-config --cflags --libs staticlm)
 *   ./constrain [MODEL [THREADS]]   (default ../shared/data/stories260K-hf, all CPUs)
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <staticlm/staticlm.h>

enum { kRequests = 16, kMaxTokens = 48, kDecode = 96 };

/* Tokens of one free and one constrained run use the same greedy sampler. */
static const char kStorySchema[] =
    "{\"type\":\"object\",\"properties\":{\"title\":{\"type\":\"string\",\"maxLength\":40},"
    "\"story\":{\"type\":\"string\",\"minLength\":300,\"maxLength\":400}},\"required\":[\"title\",\"story\"]}";
static const char kLabelSchema[] =
    "{\"type\":\"object\",\"properties\":{\"label\":{\"enum\":[\"positive\",\"negative\",\"neutral\"]},"
    "\"confident\":{\"type\":\"boolean\"}},\"required\":[\"label\",\"confident\"]}";
static const char kInstruction[] =
    "You are a careful assistant that labels the feeling of short sentences. Read the sentence, decide whether "
    "the person who wrote it feels good, bad or neither, and answer with a JSON object that names the label "
    "and says whether you are confident. Sentences about games, friends, sunshine and gifts are usually "
    "positive; sentences about rain, losing things, being hurt or being alone are usually negative; plain "
    "facts are neutral.\nSentence: ";
static const char* const kSentences[8] = {
    "I played in the park with my best friend.", "My red ball is lost and I cannot find it.",
    "The bus comes at nine.",                     "We ate cake at the party and sang songs.",
    "It rained all day and I stayed inside alone.", "The cat has four legs.",
    "Mom gave me a new book for my birthday.",    "I fell off my bike and my knee hurts."};

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int fail(const char* what) {
    fprintf(stderr, "%s: %s\n", what, slm_last_error());
    return 1;
}

/* Greedy decode of up to kDecode tokens of prompt on s (reset first); with c constrained. */
static int decode_speed(slm_model* model, slm_session* s, const slm_constraint* c, double* tok_s, int* n,
                        int* complete) {
    int32_t ids[256];
    const int n_ids = slm_tokenize(model, "Once upon a time", 1, ids, 256);
    if (n_ids <= 0 || slm_reset(s) != SLM_OK) return fail("tokenize/reset");
    slm_sampler_params sp = slm_sampler_default_params();
    sp.temperature = 0;
    slm_generate_params gp = slm_generate_default_params();
    gp.sampler = &sp;
    gp.max_tokens = kDecode;
    slm_generate_result r = {.size = sizeof r};
    const slm_status st = c ? slm_generate_constrained(s, ids, (size_t)n_ids, &gp, c, &r, complete)
                            : slm_generate(s, ids, (size_t)n_ids, &gp, &r);
    if (st != SLM_OK) return fail("generate");
    *n = r.n_generated;
    *tok_s = r.decode_seconds > 0 ? (r.n_generated - 1) / r.decode_seconds : 0;
    return 0;
}

/* The classification requests through a batch; pool_tokens < 0: no pool. */
static int classify(slm_model* model, const slm_constraint* c, int threads, int pool_tokens,
                    int32_t tokens[kRequests][kMaxTokens], int n_tokens[kRequests], slm_batch_counters* counters,
                    double* seconds) {
    slm_batch_params bp = slm_batch_default_params();
    bp.slots = 8;
    bp.max_seq = 512;
    bp.threads = threads;
    slm_batch* b = NULL;
    slm_status st;
    if (pool_tokens < 0) {
        st = slm_batch_create(model, &bp, &b);
    } else {
        slm_batch_prefix_params pp = slm_batch_default_prefix_params();
        pp.pool_tokens = pool_tokens;
        st = slm_batch_create_with_prefix(model, &bp, &pp, &b);
    }
    if (st != SLM_OK) return fail("batch");
    static char text[kRequests][2048];
    slm_sampler_params sp = slm_sampler_default_params();
    sp.temperature = 0;
    const double t0 = now();
    int next = 0, done = 0;
    while (done < kRequests) {
        while (next < kRequests && slm_batch_running(b) < slm_batch_slots(b)) {
            snprintf(text[next], sizeof text[next], "%s%s\nAnswer: ", kInstruction, kSentences[next % 8]);
            slm_batch_request rq = slm_batch_default_request();
            rq.text = text[next];
            rq.sampler = &sp;
            rq.max_tokens = kMaxTokens;
            rq.tag = (uint64_t)next++;
            if (slm_batch_submit_constrained(b, &rq, c, NULL) != SLM_OK) return fail("submit");
        }
        if (slm_batch_step(b, NULL) != SLM_OK) return fail("step");
        slm_batch_result r = {.size = sizeof r};
        int got = 0;
        while (slm_batch_collect(b, &r, &got) == SLM_OK && got) {
            n_tokens[r.tag] = r.n_tokens < kMaxTokens ? r.n_tokens : kMaxTokens;
            memcpy(tokens[r.tag], r.tokens, sizeof(int32_t) * (size_t)n_tokens[r.tag]);
            if (pool_tokens < 0 && r.tag < 4)
                printf("  %-45s %s%s\n", kSentences[r.tag % 8], r.text,
                       slm_batch_collected_complete(b) == 1 ? "" : "  (incomplete JSON)");
            ++done;
        }
    }
    *seconds = now() - t0;
    counters->size = sizeof *counters;
    slm_batch_get_counters(b, counters);
    slm_batch_free(b);
    return 0;
}

int main(int argc, char** argv) {
    const char* path = argc > 1 ? argv[1] : "../shared/data/stories260K-hf";
    const int threads = argc > 2 ? atoi(argv[2]) : 0;
    slm_model_params mp = slm_model_default_params();
    mp.threads = threads;
    mp.weights = SLM_WEIGHTS_NATIVE;
    slm_model* model = NULL;
    if (slm_model_load(path, &mp, &model) != SLM_OK) return fail(path);

    double t0 = now();
    slm_constraint* story = NULL;
    slm_constraint* label = NULL;
    if (slm_constraint_json_schema(model, kStorySchema, strlen(kStorySchema), &story) != SLM_OK)
        return fail("story schema");
    const double t_first = now() - t0; /* includes the vocabulary's trie, made once per model */
    t0 = now();
    if (slm_constraint_json_schema(model, kLabelSchema, strlen(kLabelSchema), &label) != SLM_OK)
        return fail("label schema");
    printf("compiled the story schema in %.3f s (with the vocabulary), the label schema in %.3f s\n", t_first,
           now() - t0);

    slm_session_params ssp = slm_session_default_params();
    ssp.max_seq = 512;
    ssp.threads = threads;
    slm_session* s = NULL;
    if (slm_session_create(model, &ssp, &s) != SLM_OK) return fail("session");
    double free_tps = 0, c_tps = 0;
    int n_free = 0, n_c = 0, complete = 0;
    for (int round = 0; round < 2; ++round) /* the first warms caches and threads */
        if (decode_speed(model, s, NULL, &free_tps, &n_free, NULL) ||
            decode_speed(model, s, story, &c_tps, &n_c, &complete))
            return 1;
    printf("decode: %.1f tok/s free (%d tokens), %.1f tok/s with the schema (%d tokens, %s): %.2fx the free speed\n",
           free_tps, n_free, c_tps, n_c, complete ? "complete" : "incomplete JSON",
           free_tps > 0 ? c_tps / free_tps : 0.0);
    slm_session_free(s);

    static int32_t off[kRequests][kMaxTokens], on[kRequests][kMaxTokens];
    int n_off[kRequests], n_on[kRequests];
    slm_batch_counters c_off, c_on;
    double s_off = 0, s_on = 0;
    printf("classification, %d requests sharing an instruction:\n", kRequests);
    if (classify(model, label, threads, -1, off, n_off, &c_off, &s_off) ||
        classify(model, label, threads, 512, on, n_on, &c_on, &s_on))
        return 1;
    int same = 0;
    for (int i = 0; i < kRequests; ++i)
        same += n_off[i] == n_on[i] && memcmp(off[i], on[i], sizeof(int32_t) * (size_t)n_off[i]) == 0;
    printf("prefix pool: %d/%d requests with equal tokens; prompt rows computed %lld without, %lld with "
           "(%lld copied, %lld prefixes); %.2f s without, %.2f s with\n",
           same, kRequests, (long long)c_off.prompt_positions, (long long)c_on.prompt_positions,
           (long long)c_on.shared_positions, (long long)c_on.prefixes, s_off, s_on);
    slm_constraint_free(story);
    slm_constraint_free(label);
    slm_model_free(model);
    return same == kRequests ? 0 : 1;
}
