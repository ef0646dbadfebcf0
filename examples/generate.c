/* The staticlm C API in one page: load a model, tokenize a prompt, generate
 * a continuation and stream it to stdout.
 *
 *   cc generate.c -o generate $(pkg-config --cflags --libs staticlm)
 *   ./generate MODEL_DIR "Once upon a time" [N_TOKENS]
 */
#include <stdio.h>
#include <stdlib.h>

#include <staticlm/staticlm.h>

static int print_text(int32_t token, const char* text, size_t len, void* user_data) {
    (void)token;
    (void)user_data;
    fwrite(text, 1, len, stdout);
    fflush(stdout);
    return 1; /* non-zero: go on; 0 would stop the generation */
}

int main(int argc, char** argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s MODEL_DIR PROMPT [N_TOKENS]\n", argv[0]);
        return 2;
    }
    slm_model* model = NULL;
    slm_session* session = NULL;
    int32_t ids[1024];
    int n = 0, rc = 1;

    slm_model_params mp = slm_model_default_params();
    mp.weights = SLM_WEIGHTS_F32;
    if (slm_model_load(argv[1], &mp, &model) != SLM_OK) goto done;
    /* Defaults: max_seq = min(2048, the model's context), buckets derived from it. */
    if (slm_session_create(model, NULL, &session) != SLM_OK) goto done;

    n = slm_tokenize(model, argv[2], 1, ids, 1024);
    if (n < 0 || n > 1024) goto done;

    slm_sampler_params sp = slm_sampler_default_params();
    sp.temperature = 0.0f; /* greedy */
    slm_generate_params gp = slm_generate_default_params();
    gp.sampler = &sp;
    gp.max_tokens = argc > 3 ? atoi(argv[3]) : 64;
    gp.on_token = print_text;
    slm_generate_result result = {.size = sizeof result};
    if (slm_generate(session, ids, (size_t)n, &gp, &result) != SLM_OK) goto done;
    fprintf(stderr, "\n[staticlm %s: %d tokens, stop reason %d]\n", slm_version(), result.n_generated,
            (int)result.stop_reason);
    rc = 0;
done:
    if (rc) fprintf(stderr, "error: %s\n", slm_last_error());
    slm_session_free(session);
    slm_model_free(model);
    return rc;
}
