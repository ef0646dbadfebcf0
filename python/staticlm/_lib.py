"""ctypes declarations of the C API (include/staticlm/staticlm.h) and the loader.

The library is libstaticlm.so.1 next to this file (the wheel puts it there),
or the file named by the environment variable STATICLM_LIBRARY. Struct
layouts mirror the header. A later C API only appends struct fields and reads
an older `size` with the new fields at their defaults, so this binding sends
its own sizes; at load time each *_default_params() call must report at least
the size declared here, else the library is refused with a message instead of
having memory misread.
"""

from __future__ import annotations

import ctypes
import os
from ctypes import (CFUNCTYPE, POINTER, Structure, c_char, c_char_p, c_double, c_float, c_int, c_int32, c_int64,
                    c_size_t, c_uint64, c_void_p)
from pathlib import Path
from typing import Any

LIBRARY_NAME = "libstaticlm.so.1"
API_VERSION = 1  # the oldest SLM_API_VERSION with every function declared here

# ------------------------------------------------------------------ types

c_status = c_int
LOG_FN = CFUNCTYPE(None, c_int, c_char_p, c_void_p)
PROGRESS_FN = CFUNCTYPE(c_int, c_float, c_void_p)
TOKEN_FN = CFUNCTYPE(c_int, c_int32, POINTER(c_char), c_size_t, c_void_p)
ABORT_FN = CFUNCTYPE(c_int, c_void_p)


class TokenLogprob(Structure):
    _fields_ = [("token", c_int32), ("logprob", c_float)]


class TokenInfo(Structure):
    _fields_ = [
        ("size", c_size_t),
        ("token", c_int32),
        ("text", POINTER(c_char)),
        ("len", c_size_t),
        ("logprob", c_float),
        ("n_top", c_int),
        ("top", POINTER(TokenLogprob)),
        ("logits", POINTER(c_float)),
        ("n_vocab", c_int),
    ]


TOKEN_INFO_FN = CFUNCTYPE(c_int, POINTER(TokenInfo), c_void_p)


class ModelParams(Structure):
    _fields_ = [
        ("size", c_size_t),
        ("weights", c_int),
        ("threads", c_int),
        ("load_tokenizer", c_int),
        ("prefer_tokenizer_json", c_int),
        ("progress", PROGRESS_FN),
        ("progress_user_data", c_void_p),
        ("log", LOG_FN),
        ("log_user_data", c_void_p),
        ("act_bits", c_int),
    ]


class SessionParams(Structure):
    _fields_ = [
        ("size", c_size_t),
        ("max_seq", c_int),
        ("prefill_buckets", POINTER(c_int)),
        ("n_prefill_buckets", c_size_t),
        ("append_buckets", POINTER(c_int)),
        ("n_append_buckets", c_size_t),
        ("kv", c_int),
        ("threads", c_int),
        ("ring_sliding", c_int),
        ("all_logits", c_int),  # C API 2
        ("reserved", c_int),    # C API 2
    ]


class SamplerParams(Structure):
    _fields_ = [
        ("size", c_size_t),
        ("temperature", c_float),
        ("top_k", c_int),
        ("top_p", c_float),
        ("min_p", c_float),
        ("repeat_penalty", c_float),
        ("repeat_last_n", c_int),
        ("seed", c_uint64),
    ]


class GenerateParams(Structure):
    _fields_ = [
        ("size", c_size_t),
        ("sampler", POINTER(SamplerParams)),
        ("max_tokens", c_int),
        ("stop_ids", POINTER(c_int32)),
        ("n_stop_ids", c_size_t),
        ("stop_strings", POINTER(c_char_p)),
        ("n_stop_strings", c_size_t),
        ("on_token", TOKEN_FN),
        ("user_data", c_void_p),
        ("on_token_info", TOKEN_INFO_FN),  # C API 2
        ("logprobs", c_int),               # C API 2
    ]


class GenerateResult(Structure):
    _fields_ = [
        ("size", c_size_t),
        ("stop_reason", c_int),
        ("n_prompt_tokens", c_int),
        ("n_generated", c_int),
        ("prefill_seconds", c_double),
        ("first_token_seconds", c_double),
        ("decode_seconds", c_double),
    ]


class ScoreResult(Structure):
    _fields_ = [("logprob", c_double), ("n_tokens", c_int), ("is_greedy", c_int)]


class BatchParams(Structure):
    _fields_ = [
        ("size", c_size_t),
        ("slots", c_int),
        ("max_seq", c_int),
        ("kv", c_int),
        ("threads", c_int),
        ("prefill_budget", c_int),
    ]


class BatchRequest(Structure):
    _fields_ = [
        ("size", c_size_t),
        ("tokens", POINTER(c_int32)),
        ("n_tokens", c_size_t),
        ("text", c_char_p),
        ("sampler", POINTER(SamplerParams)),
        ("max_tokens", c_int),
        ("stop_ids", POINTER(c_int32)),
        ("n_stop_ids", c_size_t),
        ("stop_strings", POINTER(c_char_p)),
        ("n_stop_strings", c_size_t),
        ("logprobs", c_int),
        ("tag", c_uint64),
        ("messages", c_void_p),  # const slm_chat_message*
        ("n_messages", c_size_t),
    ]


class BatchResult(Structure):
    _fields_ = [
        ("size", c_size_t),
        ("id", c_uint64),
        ("tag", c_uint64),
        ("stop_reason", c_int),
        ("n_prompt_tokens", c_int),
        ("n_tokens", c_int),
        ("tokens", POINTER(c_int32)),
        ("text", POINTER(c_char)),
        ("text_len", c_size_t),
        ("n_top", c_int),
        ("logprobs", POINTER(c_float)),
        ("top", POINTER(TokenLogprob)),
        ("prefill_seconds", c_double),
        ("first_token_seconds", c_double),
        ("decode_seconds", c_double),
    ]


class ChatMessage(Structure):
    _fields_ = [("role", c_char_p), ("content", c_char_p)]


class BatchPrefixParams(Structure):  # C API 3
    _fields_ = [("size", c_size_t), ("pool_tokens", c_int), ("min_tokens", c_int)]


class SpeculationParams(Structure):  # C API 4
    _fields_ = [("size", c_size_t), ("max_draft", c_int), ("max_ngram", c_int), ("min_ngram", c_int)]


class SpeculationStats(Structure):  # C API 4
    _fields_ = [("size", c_size_t), ("draft_steps", c_int), ("drafted_tokens", c_int), ("accepted_tokens", c_int)]


class BatchCounters(Structure):  # C API 3
    _fields_ = [
        ("size", c_size_t),
        ("prompt_positions", c_int64),
        ("shared_positions", c_int64),
        ("prefixes", c_int64),
        ("pool_tokens", c_int),
    ]


def _padded(struct: type) -> type:
    """A return type with room to spare, so a library whose struct grew cannot
    write past the buffer ctypes hands it before the size check runs (a params
    struct larger than 16 bytes is returned through memory). One of 16 bytes or
    less (slm_batch_prefix_params) comes back in registers: it is its own type
    (a C API that grew it past 16 bytes would give its call a new version)."""
    if ctypes.sizeof(struct) <= 16:
        return struct
    return type(f"_Padded{struct.__name__}", (Structure,), {"_fields_": [("v", struct), ("_spare", c_char * 256)]})


def _value(returned: Any) -> Any:
    """The struct a *_default_params() call returned (see _padded)."""
    return getattr(returned, "v", returned)


# (name, restype, argtypes)
_FUNCTIONS = [
    ("slm_version", c_char_p, []),
    ("slm_api_version", c_int, []),
    ("slm_status_name", c_char_p, [c_status]),
    ("slm_last_error", c_char_p, []),
    ("slm_max_threads", c_int, []),
    ("slm_model_load", c_status, [c_char_p, POINTER(ModelParams), POINTER(c_void_p)]),
    ("slm_model_free", None, [c_void_p]),
    ("slm_model_vocab", c_int, [c_void_p]),
    ("slm_model_context_length", c_int, [c_void_p]),
    ("slm_model_bos", c_int, [c_void_p]),
    ("slm_model_add_bos", c_int, [c_void_p]),
    ("slm_model_eos", c_int, [c_void_p]),
    ("slm_model_eos_ids", c_int, [c_void_p, POINTER(c_int32), c_int]),
    ("slm_model_is_eos", c_int, [c_void_p, c_int32]),
    ("slm_model_chat_format", c_char_p, [c_void_p]),
    ("slm_tokenize", c_int, [c_void_p, c_char_p, c_int, POINTER(c_int32), c_int]),
    ("slm_detokenize", c_int, [c_void_p, POINTER(c_int32), c_int, POINTER(c_char), c_int]),
    ("slm_token_to_piece", c_int, [c_void_p, c_int32, POINTER(c_char), c_int]),
    ("slm_detokenizer_create", c_status, [c_void_p, POINTER(c_void_p)]),
    ("slm_detokenizer_push", c_status, [c_void_p, c_int32, POINTER(POINTER(c_char)), POINTER(c_size_t)]),
    ("slm_detokenizer_flush", c_status, [c_void_p, POINTER(POINTER(c_char)), POINTER(c_size_t)]),
    ("slm_detokenizer_free", None, [c_void_p]),
    ("slm_session_create", c_status, [c_void_p, POINTER(SessionParams), POINTER(c_void_p)]),
    ("slm_session_free", None, [c_void_p]),
    ("slm_weights_from_name", c_int, [c_char_p]),
    ("slm_weights_name", c_char_p, [c_int]),
    ("slm_prefill", c_status, [c_void_p, POINTER(c_int32), c_size_t, POINTER(POINTER(c_float))]),
    ("slm_append", c_status, [c_void_p, POINTER(c_int32), c_size_t, POINTER(POINTER(c_float))]),
    ("slm_decode", c_status, [c_void_p, c_int32, POINTER(POINTER(c_float))]),
    ("slm_rewind", c_status, [c_void_p, c_int]),
    ("slm_reset", c_status, [c_void_p]),
    ("slm_pos", c_int, [c_void_p]),
    ("slm_max_seq", c_int, [c_void_p]),
    ("slm_sampler_create", c_status, [c_void_p, POINTER(SamplerParams), POINTER(c_void_p)]),
    ("slm_sampler_sample", c_status, [c_void_p, POINTER(c_float), POINTER(c_int32), c_size_t, POINTER(c_int32)]),
    ("slm_sampler_free", None, [c_void_p]),
    ("slm_generate", c_status, [c_void_p, POINTER(c_int32), c_size_t, POINTER(GenerateParams),
                                POINTER(GenerateResult)]),
    ("slm_chat_apply_template", c_int, [c_void_p, POINTER(ChatMessage), c_size_t, c_int, POINTER(c_char), c_int]),
    ("slm_chat_create", c_status, [c_void_p, c_char_p, POINTER(c_void_p)]),
    ("slm_chat_reply", c_status, [c_void_p, c_char_p, POINTER(GenerateParams), POINTER(GenerateResult)]),
    ("slm_chat_free", None, [c_void_p]),
]

# C API 2: scoring, batched sessions, saved state and abort.
_FUNCTIONS_2 = [
    ("slm_score", c_status, [c_void_p, POINTER(c_int32), c_size_t, POINTER(POINTER(c_int32)), POINTER(c_size_t),
                             c_size_t, POINTER(ScoreResult)]),
    ("slm_score_text", c_status, [c_void_p, c_char_p, POINTER(c_char_p), c_size_t, POINTER(ScoreResult)]),
    ("slm_batch_create", c_status, [c_void_p, POINTER(BatchParams), POINTER(c_void_p)]),
    ("slm_batch_free", None, [c_void_p]),
    ("slm_batch_submit", c_status, [c_void_p, POINTER(BatchRequest), POINTER(c_uint64)]),
    ("slm_batch_step", c_status, [c_void_p, POINTER(c_int)]),
    ("slm_batch_collect", c_status, [c_void_p, POINTER(BatchResult), POINTER(c_int)]),
    ("slm_batch_cancel", c_status, [c_void_p, c_uint64]),
    ("slm_batch_slots", c_int, [c_void_p]),
    ("slm_batch_running", c_int, [c_void_p]),
    ("slm_batch_finished", c_int, [c_void_p]),
]
# Saved state and abort: C API 2 too, in libraries that have them.
_FUNCTIONS_STATE = [
    ("slm_session_set_abort", c_status, [c_void_p, ABORT_FN, c_void_p]),
    ("slm_session_state_size", c_status, [c_void_p, POINTER(c_size_t)]),
    ("slm_session_save", c_status, [c_void_p, c_void_p, c_size_t, POINTER(c_size_t)]),
    ("slm_session_load", c_status, [c_void_p, c_void_p, c_size_t]),
    ("slm_session_save_file", c_status, [c_void_p, c_char_p]),
    ("slm_session_load_file", c_status, [c_void_p, c_char_p]),
]

# C API 3: constrained output, a batch's prefix pool.
_FUNCTIONS_3 = [
    ("slm_constraint_json_schema", c_status, [c_void_p, c_char_p, c_size_t, POINTER(c_void_p)]),
    ("slm_constraint_grammar", c_status, [c_void_p, c_char_p, c_size_t, POINTER(c_void_p)]),
    ("slm_constraint_free", None, [c_void_p]),
    ("slm_generate_constrained", c_status, [c_void_p, POINTER(c_int32), c_size_t, POINTER(GenerateParams),
                                            c_void_p, POINTER(GenerateResult), POINTER(c_int)]),
    ("slm_batch_submit_constrained", c_status, [c_void_p, POINTER(BatchRequest), c_void_p, POINTER(c_uint64)]),
    ("slm_batch_collected_complete", c_int, [c_void_p]),
    ("slm_batch_create_with_prefix", c_status, [c_void_p, POINTER(BatchParams), POINTER(BatchPrefixParams),
                                                POINTER(c_void_p)]),
    ("slm_batch_get_counters", c_status, [c_void_p, POINTER(BatchCounters)]),
]

# C API 4: prompt-lookup speculation.
_FUNCTIONS_4 = [
    ("slm_speculation_parse", c_status, [c_char_p, POINTER(SpeculationParams)]),
    ("slm_generate_speculative", c_status, [c_void_p, POINTER(c_int32), c_size_t, POINTER(GenerateParams),
                                            c_void_p, POINTER(SpeculationParams), POINTER(GenerateResult),
                                            POINTER(c_int), POINTER(SpeculationStats)]),
    ("slm_batch_create_speculative", c_status, [c_void_p, POINTER(BatchParams), POINTER(BatchPrefixParams),
                                                POINTER(SpeculationParams), POINTER(c_void_p)]),
    ("slm_batch_collected_speculation", c_status, [c_void_p, POINTER(SpeculationStats)]),
]

# *_default_params() calls and the struct each returns.
_DEFAULTS: list[tuple[str, type, list[Any]]] = [
    ("slm_model_default_params", ModelParams, []),
    ("slm_session_default_params", SessionParams, []),
    ("slm_sampler_default_params", SamplerParams, []),
    ("slm_model_sampler_params", SamplerParams, [c_void_p]),
    ("slm_generate_default_params", GenerateParams, []),
]
_DEFAULTS_2: list[tuple[str, type, list[Any]]] = [
    ("slm_batch_default_params", BatchParams, []),
    ("slm_batch_default_request", BatchRequest, []),
]
_DEFAULTS_3: list[tuple[str, type, list[Any]]] = [
    ("slm_batch_default_prefix_params", BatchPrefixParams, []),
]
_DEFAULTS_4: list[tuple[str, type, list[Any]]] = [
    ("slm_speculation_default_params", SpeculationParams, []),
]


def library_path() -> Path:
    """The file this package loads: $STATICLM_LIBRARY, else libstaticlm.so.1 beside this module."""
    env = os.environ.get("STATICLM_LIBRARY")
    if env:
        return Path(env)
    return Path(__file__).resolve().parent / LIBRARY_NAME


def _load() -> ctypes.CDLL:
    path = library_path()
    if not path.is_file():
        how = ("STATICLM_LIBRARY names it" if os.environ.get("STATICLM_LIBRARY")
               else "install the package with `pip install ./python`, or set STATICLM_LIBRARY")
        raise ImportError(f"staticlm: {path} not found ({how})")
    try:
        lib = ctypes.CDLL(str(path))
    except OSError as e:
        raise ImportError(f"staticlm: cannot load {path}: {e}") from e
    for name, restype, argtypes in _FUNCTIONS:
        try:
            fn = getattr(lib, name)
        except AttributeError as e:
            raise ImportError(f"staticlm: {path} lacks {name}: the library is older than this package") from e
        fn.restype = restype
        fn.argtypes = argtypes
    api = lib.slm_api_version()
    if api < API_VERSION:
        raise ImportError(f"staticlm: {path} has C API version {api}, this package needs {API_VERSION} or later")
    defaults = list(_DEFAULTS)
    if api >= 2:
        for name, restype, argtypes in _FUNCTIONS_2:
            fn = getattr(lib, name, None)
            if fn is None:
                raise ImportError(f"staticlm: {path} has C API {api} but lacks {name}")
            fn.restype = restype
            fn.argtypes = argtypes
        defaults += _DEFAULTS_2
        for name, restype, argtypes in _FUNCTIONS_STATE:
            fn = getattr(lib, name, None)
            if fn is not None:
                fn.restype = restype
                fn.argtypes = argtypes
    if api >= 3:
        for name, restype, argtypes in _FUNCTIONS_3:
            fn = getattr(lib, name, None)
            if fn is None:
                raise ImportError(f"staticlm: {path} has C API {api} but lacks {name}")
            fn.restype = restype
            fn.argtypes = argtypes
        defaults += _DEFAULTS_3
    if api >= 4:
        for name, restype, argtypes in _FUNCTIONS_4:
            fn = getattr(lib, name, None)
            if fn is None:
                raise ImportError(f"staticlm: {path} has C API {api} but lacks {name}")
            fn.restype = restype
            fn.argtypes = argtypes
        defaults += _DEFAULTS_4
    for name, struct, argtypes in defaults:
        fn = getattr(lib, name)
        fn.restype = _padded(struct)
        fn.argtypes = argtypes
    return lib


lib = _load()
api_version: int = int(lib.slm_api_version())


has_state: bool = api_version >= 2 and all(hasattr(lib, name) for name, _, _ in _FUNCTIONS_STATE)


def require(version: int, what: str) -> None:
    """Refuses a feature the loaded library's C API does not have."""
    if api_version < version:
        raise RuntimeError(f"{what} needs C API {version}; {library_path()} has C API {api_version}")


def require_state(what: str) -> None:
    if not has_state:
        raise RuntimeError(f"{what} needs slm_session_save/load and slm_session_set_abort, which "
                           f"{library_path()} lacks")


def _size_of(struct: type) -> int:
    """This binding's size of a struct as the loaded library knows it: the C API 1
    layout (before the fields C API 2 appended) for a C API 1 library."""
    if api_version < 2:
        fields: dict[type, Any] = {SessionParams: SessionParams.all_logits,
                                   GenerateParams: GenerateParams.on_token_info}
        first_v2 = fields.get(struct)
        if first_v2 is not None:  # the C API 1 sizeof: up to that field, rounded up to the alignment
            align = ctypes.alignment(struct)
            return (first_v2.offset + align - 1) // align * align
    return ctypes.sizeof(struct)


def check_struct_sizes() -> None:
    """Refuses a library whose params structs are smaller than declared here."""
    checks = [("slm_model_default_params", ModelParams), ("slm_session_default_params", SessionParams),
              ("slm_sampler_default_params", SamplerParams), ("slm_generate_default_params", GenerateParams)]
    if api_version >= 2:
        checks += [("slm_batch_default_params", BatchParams), ("slm_batch_default_request", BatchRequest)]
    if api_version >= 3:
        checks += [("slm_batch_default_prefix_params", BatchPrefixParams)]
    if api_version >= 4:
        checks += [("slm_speculation_default_params", SpeculationParams)]
    for name, struct in checks:
        got, ours = _value(getattr(lib, name)()).size, _size_of(struct)
        if got < ours or got > ctypes.sizeof(struct) + 256:
            raise ImportError(f"staticlm: {library_path()}: {name}() reports a {got}-byte struct, this package "
                              f"declares {ours}: the library and the package are out of step")


check_struct_sizes()


def _ours(padded: Any) -> Any:
    """The defaults as this binding's struct, with this binding's size."""
    v = _value(padded)
    v.size = _size_of(type(v))
    return v


def model_params() -> ModelParams:
    return _ours(lib.slm_model_default_params())


def session_params() -> SessionParams:
    return _ours(lib.slm_session_default_params())


def sampler_params(model: int | None = None) -> SamplerParams:
    if model is None:
        return _ours(lib.slm_sampler_default_params())
    return _ours(lib.slm_model_sampler_params(model))


def generate_params() -> GenerateParams:
    p = _ours(lib.slm_generate_default_params())
    if api_version < 2:
        p.logprobs = -1  # not in the C API 1 layout: never sent
    return p


def batch_params() -> BatchParams:
    return _ours(lib.slm_batch_default_params())


def batch_request() -> BatchRequest:
    return _ours(lib.slm_batch_default_request())


def batch_prefix_params() -> BatchPrefixParams:
    return _ours(lib.slm_batch_default_prefix_params())


def text(ptr: ctypes._Pointer | None, n: int) -> bytes:  # type: ignore[name-defined]
    """n bytes at a char pointer (not NUL-terminated) as bytes."""
    if n == 0 or not ptr:
        return b""
    return ctypes.string_at(ptr, n)


def speculation_params(speculate: object) -> SpeculationParams | None:
    """speculate="ngram" or "ngram:N" (as `staticlm generate --spec`) as C API 4
    params; None or "off": None. ValueError naming the value otherwise."""
    if speculate is None or speculate == "off":
        return None
    if not isinstance(speculate, str):
        raise TypeError(f"speculate must be a str such as 'ngram:3', got {type(speculate).__name__}")
    require(4, "speculate")
    p = _ours(lib.slm_speculation_default_params())
    if lib.slm_speculation_parse(speculate.encode(), ctypes.byref(p)) != 0:
        raise ValueError(lib.slm_last_error().decode(errors="replace"))
    return p if p.max_draft > 0 else None
