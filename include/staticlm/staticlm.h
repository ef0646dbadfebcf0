/* The C API of staticlm: opaque handles over Model and Session. Every call
 * that can fail returns a status (0 = ok) and leaves a message readable with
 * slm_last_error() (per thread). No call aborts on bad input. */
#ifndef STATICLM_STATICLM_H
#define STATICLM_STATICLM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct slm_model slm_model;
typedef struct slm_session slm_session;

typedef enum { SLM_WEIGHTS_Q8 = 0, SLM_WEIGHTS_F16 = 1, SLM_WEIGHTS_BF16 = 2, SLM_WEIGHTS_F32 = 3 } slm_weights;
typedef enum { SLM_KV_F16 = 0, SLM_KV_F32 = 1 } slm_kv;

/* Status codes: 0 ok, otherwise 1 + staticlm::ErrorKind (io, format, unsupported,
 * model, config, input, capacity), or 100 for any other failure. */
typedef int slm_status;

const char* slm_last_error(void);

/* Weight formats by name ("q8", "f16", "bf16", "f32"): the slm_weights value,
 * or -1 for a name that is none; and back ("?" for a value that is none). */
int slm_weights_from_name(const char* name);
const char* slm_weights_name(slm_weights weights);

slm_status slm_model_load(const char* dir, slm_weights weights, int threads, slm_model** out);
void slm_model_free(slm_model* model);
int slm_model_vocab(const slm_model* model);

typedef struct {
    int max_seq;
    const int* prefill_buckets;
    int n_prefill_buckets;
    const int* append_buckets;
    int n_append_buckets;
    slm_kv kv;
    int threads; /* 0: all cores */
} slm_session_options;

/* Fills the defaults of SessionOptions (max_seq 2048, buckets 64..512 / 16..64, f16 KV). */
void slm_session_options_default(slm_session_options* options);
slm_status slm_session_create(slm_model* model, const slm_session_options* options,
                              slm_session** out);
void slm_session_free(slm_session* session);

/* Each returns a pointer to the logits of the last token ([vocab] floats, valid
 * until the next call on this session) through logits (may be NULL). */
slm_status slm_prefill(slm_session* s, const int32_t* tokens, size_t n, const float** logits);
slm_status slm_append(slm_session* s, const int32_t* tokens, size_t n, const float** logits);
slm_status slm_decode(slm_session* s, int32_t token, const float** logits);
slm_status slm_rewind(slm_session* s, int n);
void slm_reset(slm_session* s);
int slm_pos(const slm_session* s);

/* Tokenizer of the model: writes up to cap ids, returns the count needed (or -1 on error). */
int slm_tokenize(const slm_model* model, const char* text, int add_special, int32_t* ids, int cap);
/* Writes the text of ids as a NUL-terminated string (up to cap bytes), returns
 * the length needed without the NUL (or -1 on error). */
int slm_detokenize(const slm_model* model, const int32_t* ids, int n, char* text, int cap);

#ifdef __cplusplus
}
#endif

#endif /* STATICLM_STATICLM_H */
