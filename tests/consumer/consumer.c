/* C consumer of the subproject: the C API with only include/ visible, no
 * -fopenmp in this compile, and a build without SentencePiece.
 * usage: consumer_c FIXTURE_DIR TOKENIZER_JSON_MODEL_DIR [SENTENCEPIECE_MODEL_DIR] */
#ifdef _OPENMP
#error "-fopenmp leaked into a consumer's C compile"
#endif
#include <stdio.h>
#include <string.h>

#include <staticlm/staticlm.h>

static int fails = 0;
#define CHECK(c) \
    do {         \
        if (!(c)) { \
            ++fails; \
            fprintf(stderr, "FAIL line %d: %s (%s)\n", __LINE__, #c, slm_last_error()); \
        } \
    } while (0)

int main(int argc, char** argv) {
    if (argc < 3) return 2;
    slm_model* model = NULL;
    slm_model_params mp = slm_model_default_params();
    mp.weights = SLM_WEIGHTS_F32;
    mp.threads = 1;
    mp.load_tokenizer = 0;
    CHECK(slm_model_load(argv[1], &mp, &model) == SLM_OK);
    slm_session* s = NULL;
    CHECK(slm_session_create(model, NULL, &s) == SLM_OK);
    const int32_t prompt[] = {1, 5, 9};
    slm_sampler_params greedy = slm_sampler_default_params();
    greedy.temperature = 0;
    slm_generate_params gp = slm_generate_default_params();
    gp.sampler = &greedy;
    gp.max_tokens = 8;
    slm_generate_result r = {.size = sizeof r};
    CHECK(slm_generate(s, prompt, 3, &gp, &r) == SLM_OK);
    CHECK(r.n_generated >= 1);
    slm_session_free(s);
    slm_model_free(model);

    /* tokenizer.json works without SentencePiece */
    mp.load_tokenizer = 1;
    CHECK(slm_model_load(argv[2], &mp, &model) == SLM_OK);
    int32_t ids[16];
    CHECK(slm_tokenize(model, "Hello", 0, ids, 16) >= 1);
    slm_model_free(model);
    /* tokenizer.model is a clear error */
    if (argc > 3) {
        model = NULL;
        const slm_status st = slm_model_load(argv[3], &mp, &model);
        CHECK(st == SLM_ERR_UNSUPPORTED);
        CHECK(strstr(slm_last_error(), "without SentencePiece") != NULL);
    }
    printf("consumer_c: %s\n", fails ? "FAILED" : "ok");
    return fails ? 1 : 0;
}
