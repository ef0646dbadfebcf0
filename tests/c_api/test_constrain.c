/* C API 3 from C on stories260K: constrained output (a hand-checked schema and
 * grammar through slm_generate_constrained and a batch, their tokens equal to
 * `staticlm generate --json-schema`'s, "length" inside unfinished JSON, bad
 * schemas and grammars naming the construct as the CLI does, one constraint
 * used by four threads at once, NULL / freed /
 * other-model constraints refused) and a batch's prefix pool (the same tokens
 * and log-probabilities with the pool on, off and too small, and the prompt
 * rows it saved).
 * usage: test_c_constrain SOURCE_DIR STATICLM_EXE  (exit 0 ok, 1 failures;
 * skipped with a message when ../shared/data is absent) */
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "staticlm/staticlm.h"

#include "check.h"

enum { kMaxGen = 96, kMaxSeq = 256 };

static char g_dir[4096], g_exe[4096], g_tmp[4096];

/* The schema and the outputs it allows, written out by hand: a label of the
 * enum and a boolean, members in the schema's order, compact. */
static const char kSchema[] =
    "{\"type\":\"object\",\"properties\":{\"label\":{\"enum\":[\"happy\",\"sad\",\"scared\"]},"
    "\"ok\":{\"type\":\"boolean\"}},\"required\":[\"label\",\"ok\"]}";
static int schema_valid(const char* text) {
    const char* labels[3] = {"happy", "sad", "scared"};
    const char* oks[2] = {"true", "false"};
    char want[64];
    for (int l = 0; l < 3; ++l)
        for (int o = 0; o < 2; ++o) {
            snprintf(want, sizeof want, "{\"label\":\"%s\",\"ok\":%s}", labels[l], oks[o]);
            if (strcmp(text, want) == 0) return 1;
        }
    return 0;
}

static slm_session* new_session(slm_model* model) {
    slm_session_params sp = slm_session_default_params();
    sp.max_seq = kMaxSeq;
    sp.threads = 1;
    slm_session* s = NULL;
    CHECK(slm_session_create(model, &sp, &s) == SLM_OK);
    return s;
}

/* Collects a generation's tokens and text through on_token. */
struct acc {
    int n;
    int32_t tokens[kMaxGen];
    char text[1024];
    size_t len;
};
static int acc_fn(int32_t token, const char* text, size_t len, void* user) {
    struct acc* a = user;
    if (token >= 0 && a->n < kMaxGen) a->tokens[a->n++] = token;
    if (len && a->len + len < sizeof a->text) {
        memcpy(a->text + a->len, text, len);
        a->len += len;
        a->text[a->len] = 0;
    }
    return 1;
}

/* Greedy constrained generation of prompt on a fresh session. */
static slm_status generate_c(slm_model* model, const slm_constraint* c, const char* prompt, int max_tokens,
                             struct acc* out, slm_generate_result* res, int* complete) {
    memset(out, 0, sizeof *out);
    int32_t ids[kMaxSeq];
    const int n = slm_tokenize(model, prompt, 1, ids, kMaxSeq);
    CHECK(n > 0 && n < kMaxSeq);
    slm_session* s = new_session(model);
    slm_sampler_params sp = slm_sampler_default_params();
    sp.temperature = 0;
    slm_generate_params gp = slm_generate_default_params();
    gp.sampler = &sp;
    gp.max_tokens = max_tokens;
    gp.on_token = acc_fn;
    gp.user_data = out;
    res->size = sizeof *res;
    const slm_status st = slm_generate_constrained(s, ids, (size_t)n, &gp, c, res, complete);
    slm_session_free(s);
    return st;
}

/* `staticlm generate --json-schema FILE --temp 0 --logprobs 0`: the token ids
 * of its JSON lines; -1 when it fails. */
static int cli_tokens(const char* prompt, const char* schema, int max_tokens, int32_t* tokens, int cap) {
    char path[4200], cmd[16384];
    snprintf(path, sizeof path, "%s/schema.json", g_tmp);
    FILE* f = fopen(path, "w");
    if (!f) return -1;
    fputs(schema, f);
    fclose(f);
    snprintf(cmd, sizeof cmd,
             "'%s' generate -m '%s' -p '%s' --json-schema '%s' --temp 0 -n %d -c %d -t 1 --weights f32 "
             "--logprobs 0 2>/dev/null",
             g_exe, g_dir, prompt, path, max_tokens, kMaxSeq);
    FILE* p = popen(cmd, "r");
    if (!p) return -1;
    int n = 0;
    char line[8192];
    while (fgets(line, sizeof line, p)) {
        const char* at = strstr(line, "{\"token\":");
        if (at && n < cap) tokens[n++] = (int32_t)atoi(at + 9);
    }
    return pclose(p) == 0 ? n : -1;
}

/* The message `staticlm generate --json-schema` prints for a bad schema. */
static int cli_error(const char* schema, char* message, size_t cap) {
    char path[4200], cmd[16384];
    snprintf(path, sizeof path, "%s/bad.json", g_tmp);
    FILE* f = fopen(path, "w");
    if (!f) return -1;
    fputs(schema, f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "'%s' generate -m '%s' -p x --json-schema '%s' -n 4 -t 1 2>&1 >/dev/null", g_exe,
             g_dir, path);
    FILE* p = popen(cmd, "r");
    if (!p) return -1;
    const size_t n = fread(message, 1, cap - 1, p);
    message[n] = 0;
    pclose(p);
    return 0;
}

static void test_generate(slm_model* model) {
    slm_constraint* schema = NULL;
    CHECK(slm_constraint_json_schema(model, kSchema, strlen(kSchema), &schema) == SLM_OK && schema);
    const char* prompts[3] = {"Once upon a time", "Lily was sad because", "The dog saw a big"};
    for (int i = 0; i < 3; ++i) {
        struct acc a;
        slm_generate_result r;
        int complete = -1;
        CHECK(generate_c(model, schema, prompts[i], 64, &a, &r, &complete) == SLM_OK);
        CHECK(schema_valid(a.text));
        if (!schema_valid(a.text)) fprintf(stderr, "  output: %s\n", a.text);
        CHECK(complete == 1 && r.stop_reason == SLM_STOP_EOS);
        /* The CLI's tokens for the same request, the EOS id included. */
        int32_t want[kMaxGen];
        const int n = cli_tokens(prompts[i], kSchema, 64, want, kMaxGen);
        CHECK(n == a.n);
        CHECK(n == a.n && memcmp(want, a.tokens, sizeof(int32_t) * (size_t)(n > 0 ? n : 0)) == 0);
    }
    /* max_tokens inside the object: "length", incomplete. */
    struct acc a;
    slm_generate_result r;
    int complete = -1;
    CHECK(generate_c(model, schema, prompts[0], 3, &a, &r, &complete) == SLM_OK);
    CHECK(r.stop_reason == SLM_STOP_MAX_TOKENS && complete == 0 && a.n == 3 && a.text[0] == '{');

    /* A grammar: one of two words. */
    const char gbnf[] = "root ::= answer \"!\"\nanswer ::= \"yes\" | \"no\"\n";
    slm_constraint* g = NULL;
    CHECK(slm_constraint_grammar(model, gbnf, strlen(gbnf), &g) == SLM_OK && g);
    CHECK(generate_c(model, g, "Did the cat run?", 16, &a, &r, &complete) == SLM_OK);
    CHECK((strcmp(a.text, "yes!") == 0 || strcmp(a.text, "no!") == 0) && complete == 1);

    /* Refused: NULL, freed, another model's; a double free is ignored. */
    CHECK_ERR(generate_c(model, NULL, prompts[0], 8, &a, &r, &complete), SLM_ERR_INPUT, "constraint is NULL");
    slm_constraint_free(g);
    CHECK_ERR(generate_c(model, g, prompts[0], 8, &a, &r, &complete), SLM_ERR_INPUT,
              "not a live slm_constraint");
    slm_constraint_free(g);
    slm_constraint_free(NULL);
    slm_model* other = NULL;
    slm_model_params mp = slm_model_default_params();
    mp.weights = SLM_WEIGHTS_F32;
    mp.threads = 1;
    CHECK(slm_model_load(g_dir, &mp, &other) == SLM_OK);
    if (other) {
        CHECK_ERR(generate_c(other, schema, prompts[0], 8, &a, &r, &complete), SLM_ERR_INPUT, "another model");
        slm_model_free(other);
    }
    slm_constraint_free(schema);
}

/* One constraint used by four threads at once, each on its own session: each
 * gets the tokens it gets alone. */
struct thread_job {
    slm_model* model;
    const slm_constraint* c;
    const char* prompt;
    struct acc out;
    slm_status status;
    int complete;
};
static void* thread_main(void* arg) {
    struct thread_job* j = arg;
    slm_generate_result r;
    j->status = generate_c(j->model, j->c, j->prompt, 64, &j->out, &r, &j->complete);
    return NULL;
}

static void test_threads(slm_model* model) {
    slm_constraint* c = NULL;
    CHECK(slm_constraint_json_schema(model, kSchema, strlen(kSchema), &c) == SLM_OK);
    const char* prompts[4] = {"Once upon a time", "Lily was sad because", "The dog saw a big", "Tom"};
    static struct thread_job jobs[4], alone[4];
    pthread_t threads[4];
    for (int i = 0; i < 4; ++i) {
        alone[i] = (struct thread_job){model, c, prompts[i], {0}, SLM_OK, 0};
        thread_main(&alone[i]);
        jobs[i] = (struct thread_job){model, c, prompts[i], {0}, SLM_OK, 0};
    }
    for (int i = 0; i < 4; ++i) CHECK(pthread_create(&threads[i], NULL, thread_main, &jobs[i]) == 0);
    for (int i = 0; i < 4; ++i) pthread_join(threads[i], NULL);
    for (int i = 0; i < 4; ++i) {
        CHECK(jobs[i].status == SLM_OK && jobs[i].complete == 1 && schema_valid(jobs[i].out.text));
        CHECK(jobs[i].out.n == alone[i].out.n &&
              memcmp(jobs[i].out.tokens, alone[i].out.tokens, sizeof(int32_t) * (size_t)alone[i].out.n) == 0);
    }
    slm_constraint_free(c);
}

/* Bad schemas and grammars: the status and the construct named, and for
 * schemas exactly the message the CLI prints. */
static void test_bad(slm_model* model) {
    struct {
        const char* text;
        int grammar;
        slm_status status;
        const char* needle;
    } rows[] = {
        {"{\"type\":\"object\",\"properties\":{\"age\":{\"type\":\"integer\",\"minimum\":0}}}", 0,
         SLM_ERR_UNSUPPORTED, "'minimum' at $.properties.age"},
        {"{\"type\":\"string\",\"pattern\":\"a+\"}", 0, SLM_ERR_UNSUPPORTED, "'pattern'"},
        {"{\"$ref\":\"#/$defs/a\",\"$defs\":{\"a\":{\"type\":\"array\",\"items\":{\"$ref\":\"#/$defs/a\"}}}}", 0,
         SLM_ERR_UNSUPPORTED, "recursive"},
        {"{\"type\":\"object\",\"properties\":", 0, SLM_ERR_FORMAT, "json_schema"},
        {"{\"type\":\"string\",\"maxLength\":5000}", 0, SLM_ERR_UNSUPPORTED, "maxLength 5000 is above the limit"},
        {"root ::= greeting\n", 1, SLM_ERR_UNSUPPORTED, "greeting"},
        {"start ::= \"a\"\n", 1, SLM_ERR_UNSUPPORTED, "root"},
        {"root ::= \"a\n", 1, SLM_ERR_UNSUPPORTED, "unterminated string literal at byte 12"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; ++i) {
        slm_constraint* c = (slm_constraint*)&rows[i]; /* must come back NULL */
        const size_t len = strlen(rows[i].text);
        const slm_status st = rows[i].grammar ? slm_constraint_grammar(model, rows[i].text, len, &c)
                                              : slm_constraint_json_schema(model, rows[i].text, len, &c);
        CHECK(st == rows[i].status && c == NULL && strstr(slm_last_error(), rows[i].needle));
        if (st != rows[i].status || !strstr(slm_last_error(), rows[i].needle))
            fprintf(stderr, "  row %zu: got %s: %s\n", i, slm_status_name(st), slm_last_error());
        if (!rows[i].grammar && st != SLM_OK) {
            char mine[2048], cli[4096];
            snprintf(mine, sizeof mine, "%s", slm_last_error());
            CHECK(cli_error(rows[i].text, cli, sizeof cli) == 0 && strstr(cli, mine) != NULL);
        }
    }
    slm_constraint* c = NULL;
    CHECK_ERR(slm_constraint_json_schema(NULL, kSchema, strlen(kSchema), &c), SLM_ERR_INPUT, "null argument");
    CHECK_ERR(slm_constraint_json_schema(model, NULL, 4, &c), SLM_ERR_INPUT, "null argument");
    CHECK_ERR(slm_constraint_grammar(model, "root ::= \"a\"", 12, NULL), SLM_ERR_INPUT, "null argument");
    /* text is len bytes: what follows is not read. */
    CHECK(slm_constraint_grammar(model, "root ::= \"a\"GARBAGE", 12, &c) == SLM_OK && c);
    slm_constraint_free(c);
}

/* A batch's requests: even ones start with the first sentences, odd ones
 * with the second. */
enum { kReq = 10 };
static const char* const kShared[2] = {
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the sunshine. "
    "One day, she saw a big tree in the park. ",
    "The little dog Max ran to the river every morning. He liked to splash in the cold water with his "
    "friends. One morning, he found a shiny stone. "};
static const char* const kEndings[kReq] = {"She", "The tree", "Lily wanted", "A bird", "Her mom",
                                           "She", "They", "The sun", "One", "Lily"};

struct outcome {
    int n;
    int32_t tokens[kMaxGen];
    float logprobs[kMaxGen];
    int complete;
    slm_stop_reason reason;
};

/* Runs the kReq requests (every third constrained by c, odd ones sampled)
 * through a batch of 3 slots: pool_tokens < 0 no pool, else a pool of that
 * many tokens (0: max_seq). */
static void run_batch(slm_model* model, const slm_constraint* c, int pool_tokens, struct outcome* out,
                      slm_batch_counters* counters) {
    slm_batch_params bp = slm_batch_default_params();
    bp.slots = 3;
    bp.max_seq = kMaxSeq;
    bp.threads = 1;
    bp.prefill_budget = 64;
    slm_batch* b = NULL;
    if (pool_tokens < 0) {
        CHECK(slm_batch_create(model, &bp, &b) == SLM_OK);
    } else {
        slm_batch_prefix_params pp = slm_batch_default_prefix_params();
        CHECK(pp.size == sizeof pp && pp.pool_tokens == -1 && pp.min_tokens == 32);
        pp.pool_tokens = pool_tokens == 0 ? -1 : pool_tokens;
        pp.min_tokens = 16;
        CHECK(slm_batch_create_with_prefix(model, &bp, &pp, &b) == SLM_OK);
    }
    if (!b) return;
    slm_sampler_params sp[kReq];
    char text[kReq][512];
    int next = 0, done = 0;
    while (done < kReq) {
        while (next < kReq && slm_batch_running(b) < slm_batch_slots(b)) {
            snprintf(text[next], sizeof text[next], "%s%s", kShared[next % 2], kEndings[next]);
            sp[next] = slm_sampler_default_params();
            sp[next].temperature = next % 2 ? 0.9f : 0.0f;
            sp[next].seed = 1000 + (uint64_t)next;
            slm_batch_request r = slm_batch_default_request();
            r.text = text[next];
            r.sampler = &sp[next];
            r.max_tokens = next % 3 == 0 ? 48 : 24;
            r.logprobs = 0;
            r.tag = (uint64_t)next;
            const slm_status st = next % 3 == 0 ? slm_batch_submit_constrained(b, &r, c, NULL)
                                                : slm_batch_submit(b, &r, NULL);
            CHECK(st == SLM_OK);
            ++next;
        }
        int n_finished = 0;
        CHECK(slm_batch_step(b, &n_finished) == SLM_OK);
        slm_batch_result res;
        res.size = sizeof res;
        int got = 0;
        while (slm_batch_collect(b, &res, &got) == SLM_OK && got) {
            struct outcome* o = &out[res.tag];
            o->n = res.n_tokens < kMaxGen ? res.n_tokens : kMaxGen;
            memcpy(o->tokens, res.tokens, sizeof(int32_t) * (size_t)o->n);
            memcpy(o->logprobs, res.logprobs, sizeof(float) * (size_t)o->n);
            o->complete = slm_batch_collected_complete(b);
            o->reason = res.stop_reason;
            if (res.tag % 3 == 0) CHECK(schema_valid(res.text) == (o->complete == 1));
            ++done;
        }
    }
    counters->size = sizeof *counters;
    CHECK(slm_batch_get_counters(b, counters) == SLM_OK);
    slm_batch_free(b);
}

static void test_pool(slm_model* model) {
    slm_constraint* c = NULL;
    CHECK(slm_constraint_json_schema(model, kSchema, strlen(kSchema), &c) == SLM_OK);
    static struct outcome off[kReq], on[kReq], small[kReq];
    slm_batch_counters c_off, c_on, c_small;
    run_batch(model, c, -1, off, &c_off);
    run_batch(model, c, 0, on, &c_on);
    /* A pool of 48 tokens holds one run (of 48) at a time: each request pushes
     * out the other sentences' run and computes its own again. */
    run_batch(model, c, 48, small, &c_small);
    slm_constraint_free(c); /* the batches are gone; a running request would keep it alive */
    for (int i = 0; i < kReq; ++i) {
        CHECK(off[i].n > 0 && off[i].n == on[i].n && off[i].n == small[i].n);
        CHECK(memcmp(off[i].tokens, on[i].tokens, sizeof(int32_t) * (size_t)off[i].n) == 0);
        CHECK(memcmp(off[i].logprobs, on[i].logprobs, sizeof(float) * (size_t)off[i].n) == 0);
        CHECK(memcmp(off[i].tokens, small[i].tokens, sizeof(int32_t) * (size_t)off[i].n) == 0);
        CHECK(memcmp(off[i].logprobs, small[i].logprobs, sizeof(float) * (size_t)off[i].n) == 0);
        CHECK(off[i].reason == on[i].reason && off[i].complete == on[i].complete);
        CHECK(off[i].complete == (i % 3 == 0 ? 1 : -1));
    }
    /* Without a pool every prompt row is computed; with one each group's
     * sentences are computed once (into the pool, by its first request) and
     * copied into the other four requests. */
    int32_t ids[kMaxSeq];
    const int n0 = slm_tokenize(model, kShared[0], 1, ids, kMaxSeq);
    const int n1 = slm_tokenize(model, kShared[1], 1, ids, kMaxSeq);
    const int n_shared = n0 < n1 ? n0 : n1;
    printf("prompt rows: %lld without the pool; %lld with it (%lld copied, %lld runs computed); "
           "%lld with 48 tokens (%lld runs)\n",
           (long long)c_off.prompt_positions, (long long)c_on.prompt_positions,
           (long long)c_on.shared_positions, (long long)c_on.prefixes, (long long)c_small.prompt_positions,
           (long long)c_small.prefixes);
    CHECK(n_shared > 48);
    CHECK(c_off.shared_positions == 0 && c_off.prefixes == 0 && c_off.pool_tokens == 0);
    CHECK(c_on.pool_tokens == kMaxSeq && c_on.prefixes == 2);
    CHECK(c_on.prompt_positions <= c_off.prompt_positions - (long long)(kReq - 2) * (n_shared - 4));
    CHECK(c_small.pool_tokens == 48 && c_small.prefixes == kReq && c_small.shared_positions == 48 * kReq &&
          c_small.prompt_positions == c_off.prompt_positions);

    /* Bad settings. */
    slm_batch_params bp = slm_batch_default_params();
    bp.slots = 2;
    bp.max_seq = kMaxSeq;
    slm_batch_prefix_params pp = slm_batch_default_prefix_params();
    slm_batch* b = NULL;
    pp.min_tokens = 0;
    CHECK_ERR(slm_batch_create_with_prefix(model, &bp, &pp, &b), SLM_ERR_CONFIG, "min_tokens must be >= 1");
    pp = slm_batch_default_prefix_params();
    pp.pool_tokens = -2;
    CHECK_ERR(slm_batch_create_with_prefix(model, &bp, &pp, &b), SLM_ERR_CONFIG, "pool_tokens");
    pp = slm_batch_default_prefix_params();
    pp.size = 8;
    CHECK_ERR(slm_batch_create_with_prefix(model, &bp, &pp, &b), SLM_ERR_CONFIG, "slm_batch_prefix_params.size");
    pp = slm_batch_default_prefix_params();
    pp.pool_tokens = 1 << 30;
    CHECK_ERR(slm_batch_create_with_prefix(model, &bp, &pp, &b), SLM_ERR_CAPACITY, "prefix pool");
    CHECK(b == NULL);
    slm_batch_counters counters;
    counters.size = 4;
    CHECK(slm_batch_create_with_prefix(model, &bp, NULL, &b) == SLM_OK && b);
    CHECK_ERR(slm_batch_get_counters(b, &counters), SLM_ERR_CONFIG, "slm_batch_counters.size");
    CHECK(slm_batch_collected_complete(b) == -1 && slm_batch_collected_complete(NULL) == -1);
    slm_batch_request r = slm_batch_default_request();
    r.text = "hello";
    CHECK_ERR(slm_batch_submit_constrained(b, &r, NULL, NULL), SLM_ERR_INPUT, "constraint is NULL");
    CHECK(slm_batch_running(b) == 0);
    /* A constraint freed while a request uses it: the request keeps it and
     * finishes with a valid value; later submits refuse the pointer. */
    slm_constraint* c2 = NULL;
    CHECK(slm_constraint_json_schema(model, kSchema, strlen(kSchema), &c2) == SLM_OK);
    slm_sampler_params sp = slm_sampler_default_params();
    sp.temperature = 0;
    r.text = "Once upon a time";
    r.sampler = &sp;
    r.max_tokens = 64;
    CHECK(slm_batch_submit_constrained(b, &r, c2, NULL) == SLM_OK);
    slm_constraint_free(c2);
    CHECK_ERR(slm_batch_submit_constrained(b, &r, c2, NULL), SLM_ERR_INPUT, "not a live slm_constraint");
    CHECK(slm_batch_running(b) == 1);
    slm_batch_result res;
    res.size = sizeof res;
    int got = 0;
    for (int i = 0; i < 100 && !got; ++i) {
        CHECK(slm_batch_step(b, NULL) == SLM_OK);
        CHECK(slm_batch_collect(b, &res, &got) == SLM_OK);
    }
    CHECK(got && schema_valid(res.text) && slm_batch_collected_complete(b) == 1);
    slm_batch_free(b);
}

int main(int argc, char** argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: test_c_constrain SOURCE_DIR STATICLM_EXE\n");
        return 2;
    }
    CHECK(slm_api_version() >= 3 && slm_api_version() == SLM_API_VERSION);
    snprintf(g_dir, sizeof g_dir, "%s/../shared/data/stories260K-hf/config.json", argv[1]);
    FILE* probe = fopen(g_dir, "r");
    if (!probe) {
        printf("SKIPPED: %s is absent\n", g_dir);
        return 0;
    }
    fclose(probe);
    snprintf(g_dir, sizeof g_dir, "%s/../shared/data/stories260K-hf", argv[1]);
    snprintf(g_exe, sizeof g_exe, "%s", argv[2]);
    snprintf(g_tmp, sizeof g_tmp, "%s/staticlm-c-constrain-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(g_tmp)) {
        fprintf(stderr, "mkdtemp %s failed\n", g_tmp);
        return 1;
    }
    slm_model* model = NULL;
    slm_model_params mp = slm_model_default_params();
    mp.weights = SLM_WEIGHTS_F32;
    mp.threads = 1;
    CHECK(slm_model_load(g_dir, &mp, &model) == SLM_OK);
    if (model) {
        test_generate(model);
        test_threads(model);
        test_bad(model);
        test_pool(model);
        slm_model_free(model);
    }
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_tmp);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", g_tmp);
    printf("%d checks, %d failed\n", g_checks, g_fails);
    return g_fails != 0;
}
