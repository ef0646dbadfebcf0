"""Model: a loaded model (immutable, shareable between threads) with its
tokenizer and chat template, plus the one-call generate / stream / chat that
run on a fresh session each time. Sampler and Detokenizer serve callers with
their own decode loop."""

from __future__ import annotations

import ctypes
import logging
from ctypes import POINTER, byref, c_char, c_int32, c_size_t, c_void_p
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Mapping, Sequence, Union

import numpy as np

from . import _lib
from ._handle import CHandle
from ._errors import check, check_count
from ._generate import sampler_params
from ._types import INT32_MAX, Message, Score, check_int, cstr, message_pair

if TYPE_CHECKING:
    from ._constrain import Constraint
    from ._session import Chat, Session, TextStream
    from ._types import Generation

LogCallback = Callable[[int, str], None]
ProgressCallback = Callable[[float], Union[bool, None]]
# A prompt: text, or token ids (a sequence of ints or a 1-D integer array).
Prompt = Union[str, Sequence[int], np.ndarray]

_logger = logging.getLogger("staticlm")
_LOG_LEVELS = {0: logging.ERROR, 1: logging.WARNING, 2: logging.INFO}


def weights_names() -> list[str]:
    """The weight format names Model accepts ("q8", "f16", ..., "native")."""
    names = []
    for value in list(range(64)) + [255]:
        name = _lib.lib.slm_weights_name(value).decode()
        if name != "?":
            names.append(name)
    return names


def _weights_value(weights: str | int | None, path: str) -> int:
    if weights is None:  # as the CLI: native for a GGUF file, q8 otherwise
        return 255 if path.endswith(".gguf") else 0
    if isinstance(weights, str):
        v = _lib.lib.slm_weights_from_name(cstr(weights, "weights"))
        if v < 0:
            raise ValueError(f"weights {weights!r} is not a weight format (known: {', '.join(weights_names())})")
        return int(v)
    return int(weights)  # the library checks the number


def token_array(tokens: Iterable[int] | np.ndarray, what: str = "tokens") -> np.ndarray:
    """Token ids as a contiguous int32 array (values outside int32 are refused, not wrapped)."""
    if isinstance(tokens, np.ndarray):
        if tokens.ndim != 1:
            raise ValueError(f"{what} must be one-dimensional, got shape {tokens.shape}")
        if tokens.dtype.kind not in "iu":
            raise TypeError(f"{what} must hold integers, got dtype {tokens.dtype}")
        if tokens.size and (tokens.min() < -(2**31) or tokens.max() > INT32_MAX):
            raise ValueError(f"{what} holds a value outside int32")
        return np.ascontiguousarray(tokens, dtype=np.int32)
    if isinstance(tokens, (str, bytes)):
        raise TypeError(f"{what} must be a sequence of ints, not {type(tokens).__name__} (tokenize text first)")
    values = list(tokens)
    for i, t in enumerate(values):
        if isinstance(t, bool) or not isinstance(t, (int, np.integer)):
            raise TypeError(f"{what}[{i}] must be an int, got {type(t).__name__}")
        if not -(2**31) <= int(t) <= INT32_MAX:
            raise ValueError(f"{what}[{i}] = {t} is outside int32")
    return np.array(values, dtype=np.int32)


def ids_pointer(arr: np.ndarray) -> ctypes._Pointer:  # type: ignore[name-defined]
    return arr.ctypes.data_as(POINTER(c_int32))


class Model(CHandle):
    """A loaded model: weights, tokenizer, chat template.

    Args:
        path: a Hugging Face model directory, a GGUF file or a llama2.c .bin file.
        weights: the weight format to convert to at load ("q8", "f16", "bf16", "f32",
            "q4", "q5", "q4k", "q5k", "q6k", "q4a", "q5a") or "native" (each matrix in
            the format nearest the one its file stores). None: as the `staticlm` CLI,
            "native" for a .gguf file and "q8" otherwise.
        threads: 0 for all CPUs; also the default of this model's sessions.
        act_bits: 8, or 16 for finer activations in the integer formats.
        load_tokenizer: False loads no tokenizer (ids only).
        prefer_tokenizer_json: read tokenizer.json even when tokenizer.model exists.
        progress: called with the loaded fraction in [0, 1]; returning False cancels
            the load (AbortedError). An exception it raises cancels and is re-raised.
        log: a callable(level, line) (0 error, 1 warning, 2 info) or True for the
            Python logger "staticlm"; used by the model and its sessions.

    A model is immutable: any number of threads may use it at once. It is freed
    by close(), by leaving a ``with`` block, or when garbage-collected; sessions
    made from it keep what they need alive.
    """

    def __init__(self, path: str | Path, weights: str | int | None = None, threads: int = 0, *,
                 act_bits: int = 8, load_tokenizer: bool = True, prefer_tokenizer_json: bool = False,
                 progress: ProgressCallback | None = None, log: LogCallback | bool | None = None) -> None:
        self._handle: int | None = None
        path_str = str(Path(path))
        self.path: str = path_str
        self.threads: int = check_int_arg(threads, "threads")
        p = _lib.model_params()
        p.weights = _weights_value(weights, path_str)
        p.threads = self.threads
        p.act_bits = check_int_arg(act_bits, "act_bits")
        p.load_tokenizer = 1 if load_tokenizer else 0
        p.prefer_tokenizer_json = 1 if prefer_tokenizer_json else 0

        progress_error: list[BaseException] = []
        if progress is not None:
            def on_progress(fraction: float, user: object) -> int:
                try:
                    return 0 if progress(float(fraction)) is False else 1
                except BaseException as e:  # noqa: BLE001 (re-raised below)
                    progress_error.append(e)
                    return 0
            on_progress._staticlm_sink = progress_error.append  # type: ignore[attr-defined]
            self._progress_fn = _lib.PROGRESS_FN(on_progress)
            p.progress = self._progress_fn
        if log is True:
            def log_to_logging(level: int, line: str) -> None:
                _logger.log(_LOG_LEVELS.get(level, logging.INFO), "%s", line)
            log = log_to_logging
        if log:
            sink = log

            def on_log(level: int, message: bytes, user: object) -> None:
                try:
                    sink(int(level), (message or b"").decode("utf-8", "replace"))
                except Exception:  # noqa: BLE001 (a log line must not break the call that logs it)
                    _logger.exception("staticlm: the log callback raised")
            # Kept on the model; sessions keep the model object alive, so the
            # function outlives every call that may log through it.
            self._log_fn = _lib.LOG_FN(on_log)
            p.log = self._log_fn

        handle = c_void_p()
        status = _lib.lib.slm_model_load(cstr(path_str, "path"), byref(p), byref(handle))
        if progress_error:
            raise progress_error[0]
        check(status)
        self._handle = handle.value
        lib = _lib.lib
        self.vocab: int = lib.slm_model_vocab(self._handle)
        self.context_length: int = lib.slm_model_context_length(self._handle)
        bos = lib.slm_model_bos(self._handle)
        eos = lib.slm_model_eos(self._handle)
        self.bos: int | None = bos if bos >= 0 else None
        self.eos: int | None = eos if eos >= 0 else None
        self.add_bos: bool = lib.slm_model_add_bos(self._handle) == 1
        n = lib.slm_model_eos_ids(self._handle, None, 0)
        ids = (c_int32 * max(1, n))()
        lib.slm_model_eos_ids(self._handle, ids, n)
        self.eos_ids: list[int] = list(ids[:n])
        self.chat_format: str = lib.slm_model_chat_format(self._handle).decode()
        self.has_tokenizer: bool = bool(load_tokenizer)

    # ------------------------------------------------------------ lifetime

    # handle, close() (frees the model; sessions made from it keep working),
    # `with` and collection: CHandle.
    _what = "model"
    _free = "slm_model_free"

    def __repr__(self) -> str:
        state = "closed" if self._handle is None else f"vocab={self.vocab}, chat_format={self.chat_format!r}"
        return f"staticlm.Model({self.path!r}, {state})"

    # ------------------------------------------------------------ tokens

    def is_eos(self, token: int) -> bool:
        """Whether token is one of the model's EOS ids."""
        return bool(_lib.lib.slm_model_is_eos(self.handle, check_int_arg(token, "token")))

    def tokenize(self, text: str, add_special: bool = True) -> list[int]:
        """The ids of text; add_special prepends BOS when the tokenizer config says so."""
        b = cstr(text, "text")
        cap = len(b) + 8
        while True:
            ids = (c_int32 * cap)()
            n = check_count(_lib.lib.slm_tokenize(self.handle, b, 1 if add_special else 0, ids, cap))
            if n <= cap:
                return list(ids[:n])
            cap = n

    def detokenize(self, tokens: Iterable[int] | np.ndarray) -> str:
        """The text of a whole id sequence (spaces as SentencePiece decodes them)."""
        arr = token_array(tokens)
        cap = 4 * len(arr) + 64
        while True:
            buf = ctypes.create_string_buffer(cap)
            n = check_count(_lib.lib.slm_detokenize(self.handle, ids_pointer(arr), len(arr), buf, cap))
            if n < cap:
                return buf.raw[:n].decode("utf-8", "replace")
            cap = n + 1

    def token_to_piece(self, token: int) -> str:
        """The vocabulary piece of a token ("▁upon", "<0x0A>"), for display: not its text."""
        t = check_int_arg(token, "token")
        cap = 64
        while True:
            buf = ctypes.create_string_buffer(cap)
            n = check_count(_lib.lib.slm_token_to_piece(self.handle, t, buf, cap))
            if n < cap:
                return buf.raw[:n].decode("utf-8", "replace")
            cap = n + 1

    def apply_chat_template(self, messages: Sequence[Message], add_generation_prompt: bool = True) -> str:
        """The conversation rendered with the model's chat template, as transformers'
        apply_chat_template. The text holds the template's own BOS text: tokenize it
        with add_special=False."""
        pairs = [message_pair(m, i) for i, m in enumerate(messages)]
        encoded = [(cstr(r, f"messages[{i}].role"), cstr(c, f"messages[{i}].content"))
                   for i, (r, c) in enumerate(pairs)]
        arr = (_lib.ChatMessage * max(1, len(encoded)))()
        for i, (r, c) in enumerate(encoded):
            arr[i].role = r
            arr[i].content = c
        cap = sum(len(r) + len(c) for r, c in encoded) + 1024
        while True:
            buf = ctypes.create_string_buffer(cap)
            n = check_count(_lib.lib.slm_chat_apply_template(self.handle, arr, len(encoded),
                                                             1 if add_generation_prompt else 0, buf, cap))
            if n < cap:
                return buf.raw[:n].decode("utf-8", "replace")
            cap = n + 1

    def prompt_tokens(self, prompt: Prompt) -> np.ndarray:
        """A prompt as `staticlm generate` takes it: text gets BOS as the tokenizer
        config says, an empty text is BOS alone; ids are used as given."""
        if isinstance(prompt, str):
            ids = self.tokenize(prompt, add_special=True)
            if not ids:
                if self.bos is None:
                    raise ValueError("empty prompt and the model has no BOS token")
                ids = [self.bos]
            return np.array(ids, dtype=np.int32)
        return token_array(prompt, "prompt")

    def chat_prompt(self, messages: str | Sequence[Message], system: str | None = None) -> np.ndarray:
        """The ids of a chat request: the messages (a str is one user turn, system an
        optional system turn first) rendered with the generation prompt."""
        if isinstance(messages, str):
            messages = [{"role": "user", "content": messages}]
        msgs = list(messages)
        if system is not None:
            msgs.insert(0, {"role": "system", "content": system})
        text = self.apply_chat_template(msgs, add_generation_prompt=True)
        # Templates carry their own BOS text, except plain text, to which the
        # chat adds the tokenizer's BOS id (add_bos), as `staticlm chat` does.
        ids = self.tokenize(text, add_special=self.chat_format == "plain")
        if not ids:
            if self.bos is None:
                raise ValueError("empty chat prompt and the model has no BOS token")
            ids = [self.bos]
        return np.array(ids, dtype=np.int32)

    # ------------------------------------------------------------ sessions and generation

    def sampling_defaults(self) -> dict[str, float | int]:
        """The sampling this model suggests (its generation_config.json over the
        library's defaults): what generate() uses for the values not given."""
        p = _lib.sampler_params(self.handle)
        return {"temperature": p.temperature, "top_k": p.top_k, "top_p": p.top_p, "min_p": p.min_p,
                "repeat_penalty": p.repeat_penalty, "repeat_last_n": p.repeat_last_n, "seed": p.seed}

    def session(self, max_seq: int = 0, *, kv: str = "f16", threads: int | None = None,
                prefill_buckets: Sequence[int] | None = None, append_buckets: Sequence[int] | None = None,
                ring_sliding: bool = False, all_logits: bool = False, interruptible: bool = True) -> Session:
        """A new Session on this model (see Session)."""
        from ._session import Session
        return Session(self, max_seq, kv=kv, threads=threads, prefill_buckets=prefill_buckets,
                       append_buckets=append_buckets, ring_sliding=ring_sliding, all_logits=all_logits,
                       interruptible=interruptible)

    def score(self, prompt: str, continuations: Sequence[str], *, max_seq: int = 0) -> list[Score]:
        """lm-eval-harness loglikelihood: for each continuation of prompt, the sum of
        its tokens' log-probabilities, their count and whether greedy decoding gives
        them, with BATCH.md's tokenization boundary rule (C API 2; on a fresh session
        of max_seq tokens with all_logits)."""
        with self.session(max_seq, all_logits=True) as s:
            return s.score_text(prompt, continuations)

    def constraint(self, *, json_schema: object = None, grammar: str | None = None) -> Constraint:
        """A JSON Schema (a dict or its JSON text) or a GBNF grammar compiled once for
        this model, for generate(constraint=...) (C API 3)."""
        from ._constrain import Constraint
        return Constraint(self, json_schema=json_schema, grammar=grammar)

    def batch(self, requests: Sequence[Mapping[str, object]], *, slots: int = 16, max_seq: int = 0,
              kv: str = "f16", threads: int | None = None, seed: int = 42, prefix_pool: int = 0,
              prefix_min: int = 32, speculate: str | None = None, **defaults: object) -> list[dict]:
        """Runs requests (dicts with the fields of a `staticlm batch` JSONL line) on a
        batched session of `slots` sequences and returns one result dict per request,
        in input order, with the fields of the JSONL results (docs/BATCH.md): "id",
        "finish_reason", "text", "tokens", "prompt_tokens", "seed", "timing", "logprobs",
        "scores", "choice", "error", "meta", "digest". seed is the command's --seed (requests
        without "seed" derive theirs from it and their id); defaults are its flags
        n_predict, temperature, top_k, top_p, min_p, repetition_penalty and stop.
        A bad request becomes an error result; duplicate ids raise ValueError before
        anything runs. Needs C API 2. "json_schema" / "grammar" requests (C API 3) get
        "complete" as the command writes it; each distinct schema is compiled once.
        prefix_pool (C API 3): token positions of a prefix pool (-1: max_seq; 0: none),
        so that requests starting with the same prefix_min or more tokens compute them
        once; the results are the same with and without it. speculate (C API 4): the
        command's --spec, "ngram" or "ngram:N": every request drafts up to N tokens a
        step from its own prompt and output (greedy results are the same as without).
        python/README.md lists what differs from the command."""
        from ._batch import run_batch
        return run_batch(self, requests, slots=slots, max_seq=max_seq, kv=kv, threads=threads, seed=seed,
                         defaults=defaults, prefix_pool=prefix_pool, prefix_min=prefix_min, speculate=speculate)

    def generate(self, prompt: Prompt, n_predict: int = 256, *, max_seq: int = 0,
                 **options: object) -> str:
        """Continues prompt on a fresh session and returns the generated text.

        prompt: text (BOS added as `staticlm generate` adds it) or token ids.
        n_predict: tokens to generate at most; -1 until a stop or the session is full.
        max_seq: the session's capacity (0: min(2048, the model's context)).
        options: temperature, top_k, top_p, min_p, repeat_penalty, repeat_last_n, seed
            (None or absent: the model's suggested values), stop (str or list of str),
            stop_ids, ignore_eos, on_text (callable(token, text) -> False to stop);
            json_schema (a dict or its JSON text), grammar (GBNF text) or constraint
            (a Constraint, compiled once for many calls) to constrain the output
            (C API 3; docs/BATCH.md has the subset; Generation.complete says whether
            the value was finished); speculate="ngram" or "ngram:N" for prompt-lookup
            speculation drafting up to N tokens (C API 4; the session then keeps every
            row's logits; greedy output is the same as without, Generation.speculation
            counts what was drafted and accepted).
        """
        return self.generate_result(prompt, n_predict, max_seq=max_seq, **options).text

    def generate_result(self, prompt: Prompt, n_predict: int = 256, *, max_seq: int = 0,
                        **options: object) -> Generation:
        """As generate(), returning the Generation (text, tokens, stop reason, timings)."""
        with self.session(max_seq, all_logits=_speculates(options)) as s:
            return s.generate_result(prompt, n_predict, **options)  # type: ignore[arg-type]

    def stream(self, prompt: Prompt, n_predict: int = 256, *, max_seq: int = 0,
               **options: object) -> TextStream:
        """As generate(), yielding the text piece by piece as it is generated (see TextStream)."""
        s = self.session(max_seq, all_logits=_speculates(options))
        return s.stream(prompt, n_predict, _owned_session=True, **options)  # type: ignore[arg-type]

    def chat(self, messages: str | Sequence[Message], n_predict: int = 512, *, system: str | None = None,
             max_seq: int = 0, **options: object) -> str:
        """One chat reply to messages (a str is one user turn; system, when given, a
        system turn first), as `staticlm chat` and `staticlm batch` make it: rendered
        with the model's chat template and the generation prompt, ending at EOS or the
        template's end-of-turn tokens. Options as generate(). For a conversation that
        keeps its cache, use start_chat()."""
        return self.chat_result(messages, n_predict, system=system, max_seq=max_seq, **options).text

    def chat_result(self, messages: str | Sequence[Message], n_predict: int = 512, *, system: str | None = None,
                    max_seq: int = 0, **options: object) -> Generation:
        """As chat(), returning the Generation.

        A system turn (optional) and one user turn run as the first reply of a Chat
        (slm_chat_reply, so on_text works); a longer conversation runs as a one-request
        batch with messages (C API 2; sampling, n_predict, stop and logprobs only)."""
        msgs = [("user", messages)] if isinstance(messages, str) else [message_pair(m, i)
                                                                        for i, m in enumerate(messages)]
        if system is not None:
            msgs.insert(0, ("system", system))
        if not msgs:
            raise ValueError("messages is empty")
        roles = [r for r, _ in msgs]
        if roles in (["user"], ["system", "user"]):
            from ._session import Chat
            with self.session(max_seq) as s:
                chat = Chat(s, system=msgs[0][1] if len(msgs) == 2 else None)
                try:
                    return chat.reply_result(msgs[-1][1], n_predict, **options)
                finally:
                    chat.close()
        from ._batch import generate_messages
        return generate_messages(self, msgs, n_predict, max_seq=max_seq, options=options)

    def start_chat(self, system: str | None = None, *, max_seq: int = 0, **session_options: object) -> Chat:
        """A multi-turn Chat on a new session of this model."""
        from ._session import Chat
        return Chat(self.session(max_seq, **session_options), system=system)  # type: ignore[arg-type]


def check_int_arg(value: object, what: str) -> int:
    return check_int(value, what, -(2**31), INT32_MAX)


class Sampler:
    """Picks tokens from logits, for callers with their own decode loop.

    Sampling values not given are the model's suggested ones (Model.sampling_defaults()).
    """

    def __init__(self, model: Model, *, temperature: float | None = None, top_k: int | None = None,
                 top_p: float | None = None, min_p: float | None = None, repeat_penalty: float | None = None,
                 repeat_last_n: int | None = None, seed: int | None = None) -> None:
        self._handle: int | None = None
        self._model = model
        self._vocab = model.vocab
        p = sampler_params(model.handle, temperature=temperature, top_k=top_k, top_p=top_p, min_p=min_p,
                           repeat_penalty=repeat_penalty, repeat_last_n=repeat_last_n, seed=seed)
        handle = c_void_p()
        check(_lib.lib.slm_sampler_create(model.handle, byref(p), byref(handle)))
        self._handle = handle.value

    def sample(self, logits: np.ndarray, recent: Sequence[int] | np.ndarray | None = None) -> int:
        """A token id from [vocab] logits; recent ids feed the repetition penalty."""
        if self._handle is None:
            raise ValueError("the sampler is closed")
        arr = np.ascontiguousarray(logits, dtype=np.float32)
        if arr.shape != (self._vocab,):
            raise ValueError(f"logits must have shape ({self._vocab},), got {arr.shape}")
        rec = token_array(recent if recent is not None else [], "recent")
        out = c_int32()
        check(_lib.lib.slm_sampler_sample(self._handle, arr.ctypes.data_as(POINTER(ctypes.c_float)),
                                          ids_pointer(rec) if len(rec) else None, len(rec), byref(out)))
        return int(out.value)

    def close(self) -> None:
        if self._handle is not None:
            _lib.lib.slm_sampler_free(self._handle)
            self._handle = None

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001
            pass


class Detokenizer:
    """Streaming detokenization: push ids one at a time and get the text each
    completes (valid UTF-8 only; spaces as the whole sequence's decode has them)."""

    def __init__(self, model: Model) -> None:
        self._handle: int | None = None
        self._model = model
        handle = c_void_p()
        check(_lib.lib.slm_detokenizer_create(model.handle, byref(handle)))
        self._handle = handle.value

    def _text_call(self, fn: Callable[..., int], *args: object) -> str:
        if self._handle is None:
            raise ValueError("the detokenizer is closed")
        ptr = POINTER(c_char)()
        n = c_size_t()
        check(fn(self._handle, *args, byref(ptr), byref(n)))
        return _lib.text(ptr, n.value).decode("utf-8", "replace")

    def push(self, token: int) -> str:
        """The text this token completes (may be "")."""
        return self._text_call(_lib.lib.slm_detokenizer_push, check_int_arg(token, "token"))

    def flush(self) -> str:
        """Whatever is held back (an incomplete sequence becomes U+FFFD); then it starts afresh."""
        return self._text_call(_lib.lib.slm_detokenizer_flush)

    def close(self) -> None:
        if self._handle is not None:
            _lib.lib.slm_detokenizer_free(self._handle)
            self._handle = None

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001
            pass


def _speculates(options: Mapping[str, object]) -> bool:
    """Whether generate options ask for speculation (the session then needs all_logits)."""
    v = options.get("speculate")
    return v is not None and v != "off"
