/* The C API of staticlm, version 3: load a model, run sessions (prefill /
 * append / decode over a static KV cache), tokenize and detokenize, sample,
 * generate with a streaming callback (log-probabilities and logits on
 * request), constrain the output to a JSON Schema or a GBNF grammar, score
 * continuations, render chat templates, run batched sessions (many requests
 * decoded together, shared prompt prefixes computed once), abort a running
 * call, and save and restore a session's state.
 *
 * Contract (docs/EMBEDDING.md says the same at length):
 * - Errors. Calls that can fail return an slm_status (SLM_OK = 0); calls that
 *   return a count return -1. Either way slm_last_error() then holds a message
 *   naming the file, value or limit involved (per thread, valid until the next
 *   staticlm call on that thread). No call aborts or throws on bad input.
 * - Parameters. Every *_params struct starts with `size`; get one from its
 *   *_default_params() call and change the fields you need. A library reads
 *   only the `size` bytes it is given, so programs built against this header
 *   keep working with later libraries that add fields. NULL means defaults.
 * - Versions. SLM_API_VERSION N only adds to N - 1: new functions, and fields
 *   appended at the end of structs (an older `size` reads with the new fields
 *   at their defaults). Nothing is removed or changed, so the soname stays
 *   libstaticlm.so.1 and a program built against an older library runs
 *   against a newer one. Symbols carry the version that added them
 *   (STATICLM_1, STATICLM_2, STATICLM_3); a *_default_params() whose struct grew gets a
 *   new version and keeps the old one, since it writes the struct into the
 *   caller's memory (docs/EMBEDDING.md, "ABI policy").
 * - Ownership. *_create / slm_model_load allocate, the matching *_free
 *   releases (NULL is ignored). Sessions, batches, samplers and detokenizers
 *   keep their model's weights and tokenizer alive, so a model may be freed
 *   first. A chat uses its session: free the chat before the session. Strings
 *   passed in are copied when needed; pointers returned (logits, text,
 *   results) stay valid until the next call on the same object.
 * - Threads. What may be shared:
 *   * A model (slm_model) is immutable after loading: any number of threads
 *     may use it at once for everything that takes a model (tokenize,
 *     detokenize, pieces, chat templates, creating sessions, batches,
 *     samplers and detokenizers), also while sessions made from it run.
 *     Only slm_model_free must not race with another call on the model.
 *   * A session, batch, chat, sampler or detokenizer is used by one thread at
 *     a time; different objects are independent, so N threads with N
 *     sessions of one model run in parallel. Moving an object to another
 *     thread between calls is fine. For sessions and batches this is
 *     enforced: a call that enters one while another call on it is running
 *     (another thread, or a callback of that session) returns SLM_ERR_BUSY
 *     and changes nothing. Samplers and detokenizers are not checked. The
 *     query calls (slm_pos, slm_max_seq, slm_batch_running, ...) read without
 *     the check: call them from the thread that owns the object.
 *   * slm_last_error() is per thread. Callbacks (progress, log, on_token,
 *     on_token_info, a session's abort callback) run on the thread that made
 *     the call, before it returns; an abort callback may read a flag that
 *     another thread sets, which is how another thread stops a call;
 *     a log callback of a model may be called from every thread that uses the
 *     model or its sessions, so it must be thread-safe itself.
 *   * The library's worker threads (threads > 1) run library code only: no
 *     callback is ever called from them.
 * - Thread counts are 0 (all CPUs) or 1 .. slm_max_threads() (4 x the CPUs the
 *   process may run on). */
#ifndef STATICLM_STATICLM_H
#define STATICLM_STATICLM_H

#include <stddef.h>
#include <stdint.h>

#include "staticlm/weight_formats.h"

#define SLM_VERSION_MAJOR 0
#define SLM_VERSION_MINOR 1
#define SLM_VERSION_PATCH 0
#define SLM_VERSION_STRING "0.1.0"
/* The C API's own version: 2 adds batched sessions, log-probabilities and
 * logits in generation, and scoring to 1; 3 adds constrained output (JSON
 * Schema, GBNF) and a batch's prefix pool. Every function and struct layout
 * of an older version stays valid (libstaticlm.so.1). */
#define SLM_API_VERSION 4

#if defined(_WIN32)
#define SLM_API
#elif defined(__GNUC__)
#define SLM_API __attribute__((visibility("default")))
#else
#define SLM_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- basics */

typedef enum slm_status {
    SLM_OK = 0,
    SLM_ERR_IO = 1,          /* a file or directory cannot be read */
    SLM_ERR_FORMAT = 2,      /* a file is malformed */
    SLM_ERR_UNSUPPORTED = 3, /* a valid file asks for something staticlm does not do */
    SLM_ERR_MODEL = 4,       /* tensors missing or misshaped; non-finite logits */
    SLM_ERR_CONFIG = 5,      /* invalid settings (params out of range) */
    SLM_ERR_INPUT = 6,       /* invalid input: NULL, empty, token id out of range, bad UTF-8 */
    SLM_ERR_CAPACITY = 7,    /* the session's max_seq would be exceeded */
    SLM_ERR_BUSY = 8,        /* the session is in use by another call */
    SLM_ERR_ABORTED = 9,     /* a callback asked to stop (model loading, a session's abort callback) */
    SLM_ERR_INTERNAL = 100   /* anything else (out of memory, a bug) */
} slm_status;

/* "0.1.0": the library's version (compare with SLM_VERSION_STRING). */
SLM_API const char* slm_version(void);
/* The library's SLM_API_VERSION. */
SLM_API int slm_api_version(void);
/* "ok", "io", "format", ... "internal". */
SLM_API const char* slm_status_name(slm_status status);
/* The message of the last failed call on this thread ("" after a success). */
SLM_API const char* slm_last_error(void);
/* The largest thread count accepted: 4 x the CPUs this process may run on. */
SLM_API int slm_max_threads(void);

typedef enum slm_log_level { SLM_LOG_ERROR = 0, SLM_LOG_WARN = 1, SLM_LOG_INFO = 2 } slm_log_level;
/* Receives one line (no trailing newline). */
typedef void (*slm_log_fn)(slm_log_level level, const char* message, void* user_data);
/* Loading progress in [0, 1]; return non-zero to go on, 0 to cancel the load
 * (slm_model_load then returns SLM_ERR_ABORTED). */
typedef int (*slm_progress_fn)(float progress, void* user_data);

/* ---------------------------------------------------------------- models */

typedef struct slm_model slm_model;

/* SLM_WEIGHTS_Q8 = 0, SLM_WEIGHTS_F16 = 1, ...: one value per line of
 * staticlm/weight_formats.h (number, name, this suffix, what it is). */
#define SLM_WEIGHTS_VALUE_(number, name, suffix, what) SLM_WEIGHTS_##suffix = number,
typedef enum slm_weights {
    STATICLM_WEIGHT_FORMAT_LIST(SLM_WEIGHTS_VALUE_)
    /* Each matrix in the format nearest the one its file stores: F32, F16,
     * BF16 as they are, a GGUF block type in the format that holds it bit for
     * bit (Q8_0 as q8, Q4_K as q4k, ...: docs/FORMATS.md lists them), a type
     * no format holds as q8 (as `--weights native`, the CLI's default for a
     * .gguf file). */
    SLM_WEIGHTS_NATIVE = 255
} slm_weights;
#undef SLM_WEIGHTS_VALUE_

typedef struct slm_model_params {
    size_t size;               /* sizeof(slm_model_params) */
    slm_weights weights;       /* SLM_WEIGHTS_Q8; converted at load */
    int threads;               /* 0: all CPUs */
    int load_tokenizer;        /* 1; 0: no tokenizer (ids only) */
    int prefer_tokenizer_json; /* 0: tokenizer.model when both exist */
    slm_progress_fn progress;  /* NULL: none */
    void* progress_user_data;
    slm_log_fn log;            /* NULL: silent. Used by this model and its sessions. */
    void* log_user_data;
    int act_bits;              /* 8; 16: the integer formats' activations as two int8
                                  planes, 2^8 times finer (slower prefill). The last
                                  field added: a size that ends before it loads at 8. */
} slm_model_params;

SLM_API slm_model_params slm_model_default_params(void);
/* path: a Hugging Face model directory (config.json, *.safetensors, tokenizer
 * files) or a llama2.c .bin file. params: NULL for the defaults. */
SLM_API slm_status slm_model_load(const char* path, const slm_model_params* params, slm_model** out);
SLM_API void slm_model_free(slm_model* model);

SLM_API int slm_model_vocab(const slm_model* model);
/* The trained context (max_position_embeddings); 0 when the model does not say. */
SLM_API int slm_model_context_length(const slm_model* model);
/* The BOS id, or -1. Whether slm_tokenize(add_special = 1) prepends it: slm_model_add_bos. */
SLM_API int slm_model_bos(const slm_model* model);
SLM_API int slm_model_add_bos(const slm_model* model);
/* The first EOS id, or -1; all of them through slm_model_eos_ids (returns the count). */
SLM_API int slm_model_eos(const slm_model* model);
SLM_API int slm_model_eos_ids(const slm_model* model, int32_t* ids, int cap);
SLM_API int slm_model_is_eos(const slm_model* model, int32_t token);
/* The name of the chat template slm_chat_* use ("llama3", "gemma4", ..., "plain"). */
SLM_API const char* slm_model_chat_format(const slm_model* model);

/* ---------------------------------------------------------------- tokens */

/* Writes up to cap ids of text (NUL-terminated UTF-8); returns the number of
 * ids (which may exceed cap: call again with a larger buffer), or -1.
 * add_special: prepend BOS when the model's tokenizer config says so. */
SLM_API int slm_tokenize(const slm_model* model, const char* text, int add_special, int32_t* ids, int cap);
/* Writes the text of a whole id sequence, NUL-terminated, into text (up to cap
 * bytes); returns its length without the NUL (may exceed cap - 1), or -1.
 * Decoding ids one at a time with this call loses the spaces SentencePiece
 * pieces carry: stream with slm_detokenizer instead. */
SLM_API int slm_detokenize(const slm_model* model, const int32_t* ids, int n, char* text, int cap);
/* The vocabulary piece of a token as the tokenizer stores it ("▁upon",
 * "Ġupon", "<0x0A>", "<|eot_id|>"), NUL-terminated; returns its length or -1.
 * For display and debugging: it is not the token's text. */
SLM_API int slm_token_to_piece(const slm_model* model, int32_t token, char* piece, int cap);

/* Streaming detokenization: push ids one at a time, get the text each one
 * completes — valid UTF-8 only (incomplete byte sequences are held back),
 * spaces as the whole sequence's decode has them. */
typedef struct slm_detokenizer slm_detokenizer;
SLM_API slm_status slm_detokenizer_create(const slm_model* model, slm_detokenizer** out);
/* *text / *len: the newly completed text (not NUL-terminated; may be empty),
 * valid until the next call on this detokenizer. */
SLM_API slm_status slm_detokenizer_push(slm_detokenizer* d, int32_t token, const char** text, size_t* len);
/* Whatever is still held back (an incomplete sequence becomes U+FFFD); then
 * the detokenizer starts afresh. */
SLM_API slm_status slm_detokenizer_flush(slm_detokenizer* d, const char** text, size_t* len);
SLM_API void slm_detokenizer_free(slm_detokenizer* d);

/* -------------------------------------------------------------- sessions */

typedef struct slm_session slm_session;

/* SLM_KV_Q8 (C API 3): int8 values with an fp32 scale per 32 values of a
 * head's row, 56% of an f16 cache at head_dim 64 and 256. A C API 2 library
 * refuses it (SLM_ERR_CONFIG naming the value). */
typedef enum slm_kv { SLM_KV_F16 = 0, SLM_KV_F32 = 1, SLM_KV_Q8 = 2 } slm_kv;

typedef struct slm_session_params {
    size_t size;                /* sizeof(slm_session_params) */
    int max_seq;                /* 0: min(2048, the model's context length) */
    const int* prefill_buckets; /* NULL: 64, 128, 256, 512 up to max_seq (and max_seq) */
    size_t n_prefill_buckets;
    const int* append_buckets;  /* NULL: 16, 32, 64 up to max_seq (and max_seq) */
    size_t n_append_buckets;
    slm_kv kv;                  /* SLM_KV_F16 */
    int threads;                /* 0: all CPUs */
    int ring_sliding;           /* 0; 1: sliding-window layers keep window + bucket slots */
    /* C API 2 (C API 1's size, 64, reads as 0 and 0). Two ints, so that the
     * struct grows to 72 bytes: one would fit in C API 1's tail padding, and
     * the two layouts would have the same size. */
    int all_logits;             /* 0; 1: keep every row's logits (slm_score needs it) */
    int reserved;               /* 0 */
} slm_session_params;

SLM_API slm_session_params slm_session_default_params(void);
/* Allocates everything the session will ever use (KV cache, workspace). */
SLM_API slm_status slm_session_create(slm_model* model, const slm_session_params* params, slm_session** out);
SLM_API void slm_session_free(slm_session* session);

/* Weight formats by name (the names of staticlm/weight_formats.h, and
 * "native"): the slm_weights value, or -1 for a name that is none; and back ("?" for a value
 * that is none). */
SLM_API int slm_weights_from_name(const char* name);
SLM_API const char* slm_weights_name(slm_weights weights);

/* Each runs tokens through the model and points *logits (may be NULL) at the
 * [vocab] logits of the last token, valid until the next call on the session.
 * prefill = reset + append. On error the session is as it was. */
SLM_API slm_status slm_prefill(slm_session* s, const int32_t* tokens, size_t n, const float** logits);
SLM_API slm_status slm_append(slm_session* s, const int32_t* tokens, size_t n, const float** logits);
SLM_API slm_status slm_decode(slm_session* s, int32_t token, const float** logits);
/* Forgets the last n tokens. */
SLM_API slm_status slm_rewind(slm_session* s, int n);
SLM_API slm_status slm_reset(slm_session* s);
/* Tokens in the cache (the next position), and the capacity; -1 for NULL. */
SLM_API int slm_pos(const slm_session* s);
SLM_API int slm_max_seq(const slm_session* s);

/* ------------------------------------------------- saved state and abort */

/* Asked between layers, on the thread running a call on the session; return
 * non-zero to stop the call. It may read a flag that another thread sets; it
 * must not call into the session. */
typedef int (*slm_abort_fn)(void* user_data);
/* Sets (fn != NULL) or clears the abort callback of later calls on s. A call
 * it stops (slm_prefill, slm_append, slm_decode, slm_generate, slm_chat_reply)
 * returns SLM_ERR_ABORTED within one layer's time. Unlike other errors it
 * keeps what it completed: the blocks (buckets) that finished stay in the
 * cache and slm_pos() counts them; the interrupted block is discarded and no
 * logits are returned. The session stays valid: append the rest to go on.
 * (slm_chat_reply instead rewinds to where its turn began.) */
SLM_API slm_status slm_session_set_abort(slm_session* s, slm_abort_fn fn, void* user_data);

/* Saved state: the session's tokens, their K/V (positions < slm_pos only),
 * its last logits, and the model's identity, with a checksum (format in
 * docs/EMBEDDING.md). It restores into a session of the same model (config,
 * weight format, weights), KV type, max_seq and ring_sliding; anything else,
 * a truncated or altered state, is an error naming what differs, and the
 * session is left as it was. After a restore, the same calls give
 * bit-identical logits (with the same buckets and threads). */
/* The bytes slm_session_save writes now (grows with slm_pos). */
SLM_API slm_status slm_session_state_size(slm_session* s, size_t* size);
/* Writes the state into buf (cap bytes; SLM_ERR_CAPACITY when smaller than
 * slm_session_state_size); *written (may be NULL) gets its size. */
SLM_API slm_status slm_session_save(slm_session* s, void* buf, size_t cap, size_t* written);
SLM_API slm_status slm_session_load(slm_session* s, const void* buf, size_t size);
/* The same through a file; loading takes a regular file no larger than the
 * largest state of the session (its state at pos = max_seq). */
SLM_API slm_status slm_session_save_file(slm_session* s, const char* path);
SLM_API slm_status slm_session_load_file(slm_session* s, const char* path);

/* -------------------------------------------------------------- sampling */

typedef struct slm_sampler_params {
    size_t size;          /* sizeof(slm_sampler_params) */
    float temperature;    /* 0.8; below 1e-6 (0, negative): greedy */
    int top_k;            /* 40; 0: off */
    float top_p;          /* 0.95; in (0, 1], 1: off */
    float min_p;          /* 0.05; in [0, 1], 0: off */
    float repeat_penalty; /* 1.0 (off); in [0.001, 1000] */
    int repeat_last_n;    /* 64: tokens the penalty looks back at */
    uint64_t seed;        /* 42 */
} slm_sampler_params;

/* The values above. */
SLM_API slm_sampler_params slm_sampler_default_params(void);
/* The values above, replaced by the model's generation_config.json where it
 * has them ("do_sample": false means greedy). */
SLM_API slm_sampler_params slm_model_sampler_params(const slm_model* model);

/* For callers with their own decode loop. */
typedef struct slm_sampler slm_sampler;
SLM_API slm_status slm_sampler_create(const slm_model* model, const slm_sampler_params* params, slm_sampler** out);
/* Picks a token from [vocab] logits; recent (may be NULL) feeds the repeat penalty. */
SLM_API slm_status slm_sampler_sample(slm_sampler* sampler, const float* logits, const int32_t* recent,
                                      size_t n_recent, int32_t* token);
SLM_API void slm_sampler_free(slm_sampler* sampler);

/* ------------------------------------------------------------ generation */

typedef enum slm_stop_reason {
    SLM_STOP_EOS = 0,        /* a stop id (by default the model's EOS ids) was sampled */
    SLM_STOP_STRING = 1,     /* a stop string appeared (it is not part of the text) */
    SLM_STOP_MAX_TOKENS = 2, /* max_tokens tokens were generated */
    SLM_STOP_CAPACITY = 3,   /* the session is full (pos == max_seq) */
    SLM_STOP_ABORTED = 4     /* the token callback returned 0 */
} slm_stop_reason;

/* Called for each generated token with the text it completes (len may be 0:
 * incomplete UTF-8 and possible starts of a stop string are held back), and
 * once with token -1 for text still held at the end. Return non-zero to go
 * on, 0 to stop (SLM_STOP_ABORTED). text is not NUL-terminated. */
typedef int (*slm_token_fn)(int32_t token, const char* text, size_t len, void* user_data);

/* A token and its log-probability (natural log) under the model's logits. */
typedef struct slm_token_logprob {
    int32_t token;
    float logprob;
} slm_token_logprob;

/* What slm_token_info_fn receives for each generated token (C API 2). Later
 * versions only append fields; size is the library's sizeof. */
typedef struct slm_token_info {
    size_t size;
    int32_t token;       /* -1: the text still held back at the end (then no logits) */
    const char* text;    /* as slm_token_fn's: not NUL-terminated, len may be 0 */
    size_t len;
    /* With logprobs >= 0: log-softmax of logits at token (before temperature,
     * top-k/p, min-p and penalties; the values slm_batch and `staticlm
     * generate --logprobs` give); NAN otherwise and for token -1. */
    float logprob;
    int n_top;                     /* logprobs (0 when off, and for token -1) */
    const slm_token_logprob* top;  /* [n_top] the most likely tokens, best first, ties: lower id */
    const float* logits;           /* [n_vocab] the logits token was sampled from; NULL for -1 */
    int n_vocab;
} slm_token_info;
/* info and everything it points to are valid during the call only. Return
 * non-zero to go on, 0 to stop (SLM_STOP_ABORTED), as slm_token_fn. */
typedef int (*slm_token_info_fn)(const slm_token_info* info, void* user_data);

typedef struct slm_generate_params {
    size_t size;                       /* sizeof(slm_generate_params) */
    const slm_sampler_params* sampler; /* NULL: slm_model_sampler_params(model) */
    int max_tokens;                    /* 256; -1: until a stop or the session is full */
    const int32_t* stop_ids;           /* NULL: the model's EOS ids */
    size_t n_stop_ids;
    const char* const* stop_strings;   /* NULL: none */
    size_t n_stop_strings;
    slm_token_fn on_token;             /* NULL: none */
    void* user_data;
    /* C API 2 (a size that ends before here reads as NULL, -1): */
    slm_token_info_fn on_token_info;   /* NULL: none; at most one of on_token, on_token_info */
    int logprobs;                      /* -1: off; 0: info->logprob; 1..20: also that many info->top */
} slm_generate_params;

typedef struct slm_generate_result {
    size_t size; /* set to sizeof(slm_generate_result) before the call */
    slm_stop_reason stop_reason;
    int n_prompt_tokens;
    int n_generated;           /* tokens sampled, the stop id included */
    double prefill_seconds;    /* the prompt's prefill or append */
    double first_token_seconds;
    double decode_seconds;     /* every later step */
} slm_generate_result;

SLM_API slm_generate_params slm_generate_default_params(void);
/* Appends the prompt (prefill when the session is empty), then samples and
 * decodes until a stop. The last sampled token is in the cache only if another
 * step followed it: slm_pos says what the cache holds. result may be NULL. */
SLM_API slm_status slm_generate(slm_session* s, const int32_t* prompt, size_t n_prompt,
                                const slm_generate_params* params, slm_generate_result* result);

/* ---------------------------------------------------------------- scoring */

/* One continuation's score (C API 2; this layout never changes). */
typedef struct slm_score_result {
    double logprob; /* the sum of its tokens' log-probabilities (natural log) */
    int n_tokens;
    int is_greedy;  /* 1: every token is the argmax of its logits (ties: the lowest id) */
} slm_score_result;

/* lm-eval-harness "loglikelihood": prefills prompt (the session is reset) and
 * scores each continuation after it (continuations[i] has n_tokens[i] ids),
 * writing results[0 .. n - 1]. The session must be created with all_logits = 1;
 * the prompt and each continuation but its last id must fit in max_seq. The
 * session is left holding the prompt. */
SLM_API slm_status slm_score(slm_session* s, const int32_t* prompt, size_t n_prompt,
                             const int32_t* const* continuations, const size_t* n_tokens, size_t n,
                             slm_score_result* results);
/* The same from text, with lm-eval-harness's boundary rule (docs/BATCH.md,
 * "Scoring"): white space ending the prompt moves to the front of each
 * continuation; the prompt starts with BOS as slm_tokenize(add_special = 1);
 * a continuation's ids are those of prompt + continuation after the prompt's. */
SLM_API slm_status slm_score_text(slm_session* s, const char* prompt, const char* const* continuations, size_t n,
                                  slm_score_result* results);

/* ------------------------------------------------------- batched sessions */

/* Many requests decoded together (C API 2): S slots, each a sequence with its
 * own KV cache; a step prefills waiting prompts (up to prefill_budget tokens)
 * and decodes one token for every other running request, reading the weights
 * once for all of them. Each request's tokens, text, stop reason and
 * log-probabilities are those slm_generate gives it alone on a session of the
 * same max_seq and kv, bit for bit (docs/BATCH.md). Everything is allocated at
 * creation. */
typedef struct slm_batch slm_batch;

typedef struct slm_batch_params {
    size_t size;        /* sizeof(slm_batch_params) */
    int slots;          /* 16: requests in flight at once (S >= 1) */
    int max_seq;        /* 0: min(2048, the model's context length); per slot */
    slm_kv kv;          /* SLM_KV_F16 */
    int threads;        /* 0: all CPUs */
    int prefill_budget; /* 0: the largest prefill bucket; prompt tokens prefilled per step */
} slm_batch_params;

struct slm_chat_message;

/* The prompt is one of tokens, text and messages. */
typedef struct slm_batch_request {
    size_t size;                       /* sizeof(slm_batch_request) */
    const int32_t* tokens;             /* the prompt's ids (n_tokens of them), or NULL */
    size_t n_tokens;
    const char* text;                  /* or text, tokenized as slm_tokenize(add_special = 1); "" is BOS alone */
    const slm_sampler_params* sampler; /* NULL: slm_model_sampler_params(model); its seed is this request's */
    int max_tokens;                    /* 256; -1: until a stop or the slot is full */
    const int32_t* stop_ids;           /* NULL: the model's EOS ids (with messages: and the chat
                                          template's end-of-turn tokens, as slm_chat_reply); at most 16 */
    size_t n_stop_ids;
    const char* const* stop_strings;   /* NULL: none */
    size_t n_stop_strings;
    int logprobs;                      /* -1: off; 0: each token's; 1..20: also that many alternatives */
    uint64_t tag;                      /* the caller's, returned with the result */
    /* or a conversation, rendered with the model's chat template and the
     * generation prompt, its ids as a chat's first reply makes them */
    const struct slm_chat_message* messages;
    size_t n_messages;
} slm_batch_request;

/* A finished request. Pointers stay valid until the next call on the batch. */
typedef struct slm_batch_result {
    size_t size;                  /* set to sizeof(slm_batch_result) before the call */
    uint64_t id;                  /* slm_batch_submit's */
    uint64_t tag;                 /* the request's */
    slm_stop_reason stop_reason;  /* SLM_STOP_ABORTED: cancelled */
    int n_prompt_tokens;
    int n_tokens;                 /* generated, the stop id included */
    const int32_t* tokens;        /* [n_tokens] */
    const char* text;             /* NUL-terminated (stop string excluded); text_len bytes */
    size_t text_len;
    int n_top;                    /* the request's logprobs (0 when -1 or 0) */
    const float* logprobs;        /* [n_tokens] with logprobs >= 0, else NULL */
    const slm_token_logprob* top; /* [n_tokens][n_top], best first */
    double prefill_seconds;
    double first_token_seconds;   /* submit to first token */
    double decode_seconds;
} slm_batch_result;

SLM_API slm_batch_params slm_batch_default_params(void);
SLM_API slm_batch_request slm_batch_default_request(void);
SLM_API slm_status slm_batch_create(slm_model* model, const slm_batch_params* params, slm_batch** out);
SLM_API void slm_batch_free(slm_batch* b);
/* Starts a request in a free slot; *id (may be NULL) identifies it (1, 2, ...).
 * SLM_ERR_CAPACITY when every slot holds a running request (step until one
 * finishes) or the prompt exceeds max_seq; bad settings are SLM_ERR_CONFIG or
 * SLM_ERR_INPUT, checked here. A failed submit changes nothing. */
SLM_API slm_status slm_batch_submit(slm_batch* b, const slm_batch_request* request, uint64_t* id);
/* One step; *n_finished (may be NULL): requests it finished, now waiting to be
 * collected (their slots are free again). Unlike the other calls, a step that
 * fails (SLM_ERR_MODEL: logits that are not finite) may leave the running
 * requests part-way through it: cancel them, or free the batch. */
SLM_API slm_status slm_batch_step(slm_batch* b, int* n_finished);
/* Takes the oldest finished request into *result and sets *got to 1, or sets
 * *got to 0 when none is waiting. */
SLM_API slm_status slm_batch_collect(slm_batch* b, slm_batch_result* result, int* got);
/* Ends a running request now: it becomes a finished one (SLM_STOP_ABORTED,
 * with what it generated) for slm_batch_collect. SLM_ERR_INPUT for an id that
 * is not running (unknown, finished or collected). */
SLM_API slm_status slm_batch_cancel(slm_batch* b, uint64_t id);
/* Slots (S), running requests, and finished requests not yet collected; -1 for NULL. */
SLM_API int slm_batch_slots(const slm_batch* b);
SLM_API int slm_batch_running(const slm_batch* b);
SLM_API int slm_batch_finished(const slm_batch* b);

/* ------------------------------------------- constrained output (C API 3) */

/* A JSON Schema (the subset docs/BATCH.md lists) or a GBNF grammar (root rule
 * "root") compiled once for a model's vocabulary into a token automaton. It
 * is immutable: any number of generations and batch requests, on any threads,
 * use one at once. Each generation or request keeps what it uses alive, so
 * freeing a constraint while a batch request uses it is safe. It serves the
 * sessions and batches of the model it was made with (the same slm_model);
 * others refuse it. */
typedef struct slm_constraint slm_constraint;

/* text: len bytes (no NUL needed). Compile errors carry the library's kind
 * and message, which names the keyword or construct and where it stands
 * (exactly what `staticlm generate --json-schema` prints):
 * SLM_ERR_UNSUPPORTED for a keyword outside the subset ("json_schema:
 * unsupported keyword 'minimum' at $.properties.age"), a recursive $ref, a
 * count above its limit (maxLength 1024, nesting 32), a GBNF syntax error or
 * an undefined rule (naming the rule, or the byte); SLM_ERR_FORMAT for a
 * schema that is not JSON; SLM_ERR_CAPACITY for an automaton beyond 65536
 * states or 256 MiB of masks. The model needs its tokenizer. */
SLM_API slm_status slm_constraint_json_schema(const slm_model* model, const char* text, size_t len,
                                              slm_constraint** out);
SLM_API slm_status slm_constraint_grammar(const slm_model* model, const char* text, size_t len,
                                          slm_constraint** out);
/* NULL is ignored. Afterwards the pointer is refused (SLM_ERR_INPUT) by every
 * call that takes a constraint, until the allocator hands it out again. */
SLM_API void slm_constraint_free(slm_constraint* constraint);

/* slm_generate with the output constrained: each step samples only tokens the
 * constraint allows (a stop id only once the value is complete, so the
 * generation needs a stop id: the model's EOS ids by default); sampling,
 * stop strings and callbacks are as slm_generate's, and log-probabilities
 * stay the model's (unmasked). JSON comes out compact (no white space).
 * *complete (may be NULL): 1 when the output is a complete value, 0 when the
 * generation stopped inside one (SLM_STOP_MAX_TOKENS: "length" with
 * incomplete JSON, SLM_STOP_CAPACITY, a stop string, an abort). */
SLM_API slm_status slm_generate_constrained(slm_session* s, const int32_t* prompt, size_t n_prompt,
                                            const slm_generate_params* params, const slm_constraint* constraint,
                                            slm_generate_result* result, int* complete);

/* slm_batch_submit with the request's output constrained, as
 * slm_generate_constrained's; the request keeps the constraint alive. */
SLM_API slm_status slm_batch_submit_constrained(slm_batch* b, const slm_batch_request* request,
                                                const slm_constraint* constraint, uint64_t* id);
/* Of the result the last slm_batch_collect returned: 1 a complete value, 0 a
 * constrained request that stopped inside one (incomplete JSON), -1 an
 * unconstrained request, nothing collected, or NULL. */
SLM_API int slm_batch_collected_complete(const slm_batch* b);

/* ------------------------------------------- a batch's prefix pool (C API 3) */

/* Requests that start with the same run of tokens (a system prompt, a few-shot
 * block) compute its K/V once: the pool keeps runs that earlier requests
 * computed, and a request whose prompt starts with at least min_tokens of one
 * copies them into its slot and computes only the rest. Results are
 * bit-identical with the pool on and off: a run is shared only where every row
 * is computed exactly as without it (docs/BATCH.md, "Shared prefixes"). A
 * request that shares no run becomes one (its prompt less its last token); a
 * full pool gives up its least recently used runs. Everything is allocated at
 * creation. */
typedef struct slm_batch_prefix_params {
    size_t size;     /* sizeof(slm_batch_prefix_params) */
    int pool_tokens; /* -1: max_seq; 0: no pool; else positions of K/V the pool holds */
    int min_tokens;  /* 32: the shortest run worth sharing (>= 1) */
} slm_batch_prefix_params;

SLM_API slm_batch_prefix_params slm_batch_default_prefix_params(void);
/* slm_batch_create with a prefix pool (prefix NULL: the defaults above). The
 * slots' caches and the pool must fit in this machine's memory
 * (SLM_ERR_CAPACITY naming the pool otherwise, before anything is allocated). */
SLM_API slm_status slm_batch_create_with_prefix(slm_model* model, const slm_batch_params* params,
                                                const slm_batch_prefix_params* prefix, slm_batch** out);

/* A batch's prompt work since it was made, in token positions. */
typedef struct slm_batch_counters {
    size_t size;              /* set to sizeof(slm_batch_counters) before the call */
    int64_t prompt_positions; /* prompt rows computed (the pool's runs included) */
    int64_t shared_positions; /* prompt rows copied from the pool instead */
    int64_t prefixes;         /* runs computed into the pool */
    int pool_tokens;          /* the pool's size (0: none) */
} slm_batch_counters;
SLM_API slm_status slm_batch_get_counters(const slm_batch* b, slm_batch_counters* counters);

/* --------------------------------- prompt-lookup speculation (C API 4) */

/* Extraction and rewrite jobs copy runs of the prompt into the answer. With
 * speculation, a step drafts up to max_draft tokens from the text itself (the
 * tokens that followed the most recent earlier occurrence of its last n
 * tokens, n from max_ngram down to min_ngram) and verifies them in one pass,
 * so a copied run costs about one pass per max_draft tokens. Greedy output,
 * log-probabilities and stop reasons are those without speculation, bit for
 * bit; sampled output keeps its distribution (the standard acceptance rule)
 * but draws another random stream, so a seed gives other text than without
 * speculation. docs/RUNTIME.md, "Speculative decoding". */
typedef struct slm_speculation_params {
    size_t size;   /* sizeof(slm_speculation_params) */
    int max_draft; /* 8: most tokens drafted per step, 1..64; 0: off */
    int max_ngram; /* 3: the longest suffix matched, 1..16 */
    int min_ngram; /* 1: the shortest suffix that may propose a draft, 1..max_ngram */
} slm_speculation_params;

/* What speculation did in one generation or batch request. */
typedef struct slm_speculation_stats {
    size_t size;         /* set to sizeof(slm_speculation_stats) before the call */
    int draft_steps;     /* verification passes that held a draft */
    int drafted_tokens;
    int accepted_tokens; /* of drafted_tokens */
} slm_speculation_stats;

SLM_API slm_speculation_params slm_speculation_default_params(void);
/* "ngram" (max_draft 8) or "ngram:N" (N in 1..64), as `staticlm generate
 * --spec` takes it, into *out (max_ngram 3, min_ngram 1); "off" or "" sets
 * max_draft 0. SLM_ERR_CONFIG naming the text otherwise. */
SLM_API slm_status slm_speculation_parse(const char* text, slm_speculation_params* out);

/* slm_generate (constraint NULL) or slm_generate_constrained with prompt-lookup
 * speculation (spec NULL or max_draft 0: none). The session must be created
 * with all_logits = 1 (drafts are verified on every row's logits; the buffer
 * holds 65 rows). *stats and *complete may be NULL. */
SLM_API slm_status slm_generate_speculative(slm_session* s, const int32_t* prompt, size_t n_prompt,
                                            const slm_generate_params* params, const slm_constraint* constraint,
                                            const slm_speculation_params* spec, slm_generate_result* result,
                                            int* complete, slm_speculation_stats* stats);

/* slm_batch_create_with_prefix (prefix NULL: no prefix pool) whose requests
 * all draft with spec: each request drafts from its own prompt and output,
 * and its run is verified in the step's one pass with every other row. A
 * step then holds slots + min(slots x max_draft, max(max_draft, 64)) rows. */
SLM_API slm_status slm_batch_create_speculative(slm_model* model, const slm_batch_params* params,
                                                const slm_batch_prefix_params* prefix,
                                                const slm_speculation_params* spec, slm_batch** out);
/* Of the result the last slm_batch_collect returned (zeros without speculation). */
SLM_API slm_status slm_batch_collected_speculation(const slm_batch* b, slm_speculation_stats* stats);

/* ------------------------------------------------------------------ chat */

typedef struct slm_chat_message {
    const char* role; /* "system", "user" or "assistant" */
    const char* content;
} slm_chat_message;

/* The conversation as the model's chat template renders it (as transformers'
 * apply_chat_template), NUL-terminated; returns its length or -1. The text
 * holds the template's own BOS text where it has one: tokenize it with
 * add_special = 0. */
SLM_API int slm_chat_apply_template(const slm_model* model, const slm_chat_message* messages, size_t n,
                                    int add_generation_prompt, char* text, int cap);

/* A multi-turn chat on one session: each reply appends only the tokens the
 * cache lacks. The session must outlive the chat and not be used otherwise
 * while the chat lives. system may be NULL. */
typedef struct slm_chat slm_chat;
SLM_API slm_status slm_chat_create(slm_session* session, const char* system, slm_chat** out);
/* Renders the user turn, appends it, generates the reply (streamed through
 * params->on_token). */
SLM_API slm_status slm_chat_reply(slm_chat* chat, const char* user, const slm_generate_params* params,
                                  slm_generate_result* result);
SLM_API void slm_chat_free(slm_chat* chat);

#ifdef __cplusplus
}
#endif

#endif /* STATICLM_STATICLM_H */
