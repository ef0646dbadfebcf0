"""Session (a static KV cache: prefill / append / decode / rewind, logits as
NumPy views of the library's buffer), generation on it, the streaming
TextStream (a worker thread running the C call, its token callback feeding a
bounded queue the iterator reads), and Chat (multi-turn on one session)."""

from __future__ import annotations

import ctypes
import queue
import threading
import os
from ctypes import POINTER, byref, c_char_p, c_float, c_int, c_int32, c_size_t, c_void_p
from typing import Any, Callable, Iterator, Sequence, Union

import numpy as np

from . import _lib
from ._handle import CHandle, Closeable
from ._constrain import Constraint, pop_constraint
from ._errors import check
from ._generate import GenerationCall, TextCallback
from ._model import Model, check_int_arg, ids_pointer, token_array
from ._types import KV_TYPES, Generation, Score, cstr

StateSource = Union[bytes, bytearray, memoryview, str, "os.PathLike[str]"]



class _Owned:
    """Frees a session when the last of its holders is gone: the Session, and every
    logits view taken from it (so a view used after close() never reads freed memory)."""

    __slots__ = ("ptr",)

    def __init__(self, ptr: int) -> None:
        self.ptr: int | None = ptr

    def __del__(self) -> None:
        if self.ptr is not None:
            try:
                _lib.lib.slm_session_free(self.ptr)
            except Exception:  # noqa: BLE001 (interpreter shutdown)
                pass
            self.ptr = None


def _buckets(values: Sequence[int] | None, what: str) -> ctypes.Array | None:
    if values is None:
        return None
    vs = [check_int_arg(v, f"{what}[{i}]") for i, v in enumerate(values)]
    return (c_int * max(1, len(vs)))(*vs) if vs else (c_int * 1)()


class Session(Closeable):
    """A sequence being run through a model, over a KV cache allocated once.

    Args:
        model: the Model.
        max_seq: the capacity in tokens; 0 is min(2048, the model's context length).
        kv: "f16", "f32" or "q8" KV cache (q8: int8 with a scale per 32 values, ~56% of f16).
        threads: None for the model's thread count, 0 for all CPUs.
        prefill_buckets, append_buckets: block sizes (None: derived from max_seq).
        ring_sliding: sliding-window layers keep window + bucket slots.
        all_logits: keep every row's logits (score() needs it; C API 2).
        interruptible: let Ctrl-C (and abort()) stop a call between layers (C API 2):
            the library asks a small Python callback between layers, which runs
            pending signal handlers; a KeyboardInterrupt then stops the call and
            is raised again when it returns.

    prefill / append / decode return the last token's logits as a float32 NumPy
    array of shape (vocab,) that **views the library's buffer without a copy**:
    it is read-only and valid only until the next call on this session (the next
    call overwrites it). Pass copy=True to get an array of your own. A session is
    used by one thread at a time: a call while another runs (another thread, a
    stream still generating) raises BusyError. A failed call leaves the session
    as it was, except that a call stopped by abort() or Ctrl-C keeps the
    prefill blocks it completed (pos says what the cache holds).
    """

    def __init__(self, model: Model, max_seq: int = 0, *, kv: str = "f16", threads: int | None = None,
                 prefill_buckets: Sequence[int] | None = None, append_buckets: Sequence[int] | None = None,
                 ring_sliding: bool = False, all_logits: bool = False, interruptible: bool = True) -> None:
        self._handle: int | None = None
        self._abort_flag = threading.Event()
        self._abort_error: BaseException | None = None
        self._model = model  # keeps the model's callbacks alive while the session may log
        self.vocab: int = model.vocab
        p = _lib.session_params()
        p.max_seq = check_int_arg(max_seq, "max_seq")
        if kv not in KV_TYPES:
            raise ValueError(f"kv must be 'f16', 'f32' or 'q8', got {kv!r}")
        if kv == "q8":
            _lib.require(3, "kv='q8'")
        p.kv = KV_TYPES[kv]
        p.threads = model.threads if threads is None else check_int_arg(threads, "threads")
        p.ring_sliding = 1 if ring_sliding else 0
        if all_logits:
            _lib.require(2, "all_logits")
            p.all_logits = 1
        self._prefill_buckets = _buckets(prefill_buckets, "prefill_buckets")
        self._append_buckets = _buckets(append_buckets, "append_buckets")
        if self._prefill_buckets is not None:
            p.prefill_buckets = ctypes.cast(self._prefill_buckets, POINTER(c_int))
            p.n_prefill_buckets = len(prefill_buckets or [])
        if self._append_buckets is not None:
            p.append_buckets = ctypes.cast(self._append_buckets, POINTER(c_int))
            p.n_append_buckets = len(append_buckets or [])
        handle = c_void_p()
        check(_lib.lib.slm_session_create(model.handle, byref(p), byref(handle)))
        self._handle = handle.value
        self._owned: _Owned | None = _Owned(handle.value) if handle.value else None
        if interruptible and _lib.has_state:
            flag = self._abort_flag
            box: list[BaseException] = []
            self._abort_box = box

            def ask_abort(user: object) -> int:
                # Runs on the calling thread between layers; Python runs pending
                # signal handlers here, so Ctrl-C raises KeyboardInterrupt now.
                try:
                    return 1 if flag.is_set() else 0
                except BaseException as e:  # noqa: BLE001 (raised again after the call)
                    box.append(e)
                    return 1
            ask_abort._staticlm_sink = box.append  # type: ignore[attr-defined]
            self._abort_fn = _lib.ABORT_FN(ask_abort)
            check(_lib.lib.slm_session_set_abort(self._handle, self._abort_fn, None))

    # ------------------------------------------------------------ lifetime

    @property
    def model(self) -> Model:
        return self._model

    @property
    def handle(self) -> int:
        """The slm_session* (for ctypes users); ValueError once closed."""
        if self._handle is None:
            raise ValueError("the session is closed")
        return self._handle

    def close(self) -> None:
        """Ends the session: later calls raise ValueError. Its memory (KV cache) is
        freed now, or when the last logits view taken from it is gone."""
        self._handle = None
        self._owned = None

    def __repr__(self) -> str:
        if self._handle is None:
            return "staticlm.Session(closed)"
        return f"staticlm.Session(pos={self.pos}, max_seq={self.max_seq})"

    # ------------------------------------------------------------ state

    @property
    def pos(self) -> int:
        """Tokens in the cache: the position of the next token."""
        return int(_lib.lib.slm_pos(self.handle))

    @property
    def max_seq(self) -> int:
        """The capacity in tokens."""
        return int(_lib.lib.slm_max_seq(self.handle))

    def _check(self, status: int) -> None:
        """check() for calls the abort callback may stop: a KeyboardInterrupt caught
        there is raised instead of AbortedError; abort()'s flag is cleared."""
        box = getattr(self, "_abort_box", None)
        self._abort_flag.clear()
        if box:
            e = box.pop()
            box.clear()
            raise e
        check(status)

    def abort(self) -> None:
        """Stops the call running on this session (from another thread), within one
        layer's time: it raises AbortedError and keeps the blocks it completed. A
        stop asked between calls stops the next one. Needs interruptible=True."""
        if getattr(self, "_abort_fn", None) is None:
            raise RuntimeError("abort() needs a session created with interruptible=True and a library with "
                               "slm_session_set_abort")
        self._abort_flag.set()

    def _logits(self, ptr: ctypes._Pointer, copy: bool) -> np.ndarray:  # type: ignore[name-defined]
        buf = (c_float * self.vocab).from_address(ctypes.cast(ptr, c_void_p).value or 0)
        buf._staticlm_owned = self._owned  # type: ignore[attr-defined]  # the view keeps the memory alive
        arr = np.frombuffer(buf, dtype=np.float32)  # type: ignore[call-overload]
        if copy:
            return arr.copy()
        arr.flags.writeable = False
        return arr

    def prefill(self, tokens: Sequence[int] | np.ndarray, copy: bool = False) -> np.ndarray:
        """reset() + append(tokens): the last token's logits (see the class note on their lifetime)."""
        arr = token_array(tokens)
        out = POINTER(c_float)()
        self._check(_lib.lib.slm_prefill(self.handle, ids_pointer(arr), len(arr), byref(out)))
        return self._logits(out, copy)

    def append(self, tokens: Sequence[int] | np.ndarray, copy: bool = False) -> np.ndarray:
        """Runs tokens after those in the cache: the last token's logits."""
        arr = token_array(tokens)
        out = POINTER(c_float)()
        self._check(_lib.lib.slm_append(self.handle, ids_pointer(arr), len(arr), byref(out)))
        return self._logits(out, copy)

    def decode(self, token: int, copy: bool = False) -> np.ndarray:
        """Runs one token: its logits."""
        out = POINTER(c_float)()
        self._check(_lib.lib.slm_decode(self.handle, check_int_arg(token, "token"), byref(out)))
        return self._logits(out, copy)

    def rewind(self, n: int = 1) -> None:
        """Forgets the last n tokens."""
        check(_lib.lib.slm_rewind(self.handle, check_int_arg(n, "n")))

    def reset(self) -> None:
        """Empties the cache."""
        check(_lib.lib.slm_reset(self.handle))

    # ------------------------------------------------------------ generation

    def _prompt(self, prompt: str | Sequence[int] | np.ndarray) -> np.ndarray:
        # Text on an empty session is a prompt as `staticlm generate` takes it
        # (BOS first); text after other tokens is a continuation (no BOS).
        if isinstance(prompt, str) and self.pos > 0:
            return np.array(self._model.tokenize(prompt, add_special=False), dtype=np.int32)
        return self._model.prompt_tokens(prompt)

    def _generation(self, prompt: str | Sequence[int] | np.ndarray, n_predict: int, on_text: TextCallback | None,
                    options: dict[str, object]) -> tuple[GenerationCall, np.ndarray]:
        ids = self._prompt(prompt)
        user_cb: Any = options.pop("on_text", None)
        if user_cb is not None and on_text is not None:
            raise TypeError("on_text is not taken by stream(): iterate the stream instead")
        call = self._call(n_predict, on_text or user_cb, options)
        return call, ids

    def _run(self, call: GenerationCall, ids: np.ndarray, constraint: Constraint | None = None,
             spec: _lib.SpeculationParams | None = None) -> Generation:
        handle = self.handle
        if spec is not None:  # C API 4
            complete = ctypes.c_int(0)
            stats = _lib.SpeculationStats(size=ctypes.sizeof(_lib.SpeculationStats))
            c = constraint.handle if constraint is not None else None
            g = self._run_call(call, lambda params, result: _lib.lib.slm_generate_speculative(
                handle, ids_pointer(ids), len(ids), params, c, ctypes.byref(spec), result, ctypes.byref(complete),
                ctypes.byref(stats)))
            if constraint is not None:
                g.complete = bool(complete.value)
            g.speculation = {"draft_steps": stats.draft_steps, "drafted_tokens": stats.drafted_tokens,
                             "accepted_tokens": stats.accepted_tokens}
            return g
        if constraint is None:
            return self._run_call(call, lambda params, result: _lib.lib.slm_generate(handle, ids_pointer(ids),
                                                                                     len(ids), params, result))
        complete = ctypes.c_int(0)
        c = constraint.handle
        g = self._run_call(call, lambda params, result: _lib.lib.slm_generate_constrained(
            handle, ids_pointer(ids), len(ids), params, c, result, ctypes.byref(complete)))
        g.complete = bool(complete.value)
        return g

    def _call(self, n_predict: int, on_text: TextCallback | None, options: dict[str, object]) -> GenerationCall:
        m = self._model
        return GenerationCall(m.handle, piece=m.token_to_piece, n_predict=n_predict, on_text=on_text,
                              **options)  # type: ignore[arg-type]

    def _run_call(self, call: GenerationCall, fn: Callable[[object, object], int]) -> Generation:
        try:
            return call.run(fn)
        except BaseException:
            self._check(0)  # a KeyboardInterrupt the abort callback caught comes first
            raise
        finally:
            self._abort_flag.clear()

    def generate(self, prompt: str | Sequence[int] | np.ndarray, n_predict: int = 256, **options: object) -> str:
        """Appends prompt (a prefill when the session is empty), samples and decodes
        until a stop, and returns the text. Options as Model.generate. The last
        sampled token is in the cache only if another step followed it: pos says
        what the cache holds."""
        return self.generate_result(prompt, n_predict, **options).text

    def generate_result(self, prompt: str | Sequence[int] | np.ndarray, n_predict: int = 256,
                        **options: object) -> Generation:
        """As generate(), returning the Generation (text, tokens, stop reason, timings;
        complete with json_schema / grammar)."""
        opts = dict(options)
        spec = _lib.speculation_params(opts.pop("speculate", None))
        given = opts.get("constraint")
        constraint = pop_constraint(self._model, opts)
        try:
            call, ids = self._generation(prompt, n_predict, None, opts)
            return self._run(call, ids, constraint, spec)
        finally:
            if constraint is not None and constraint is not given:  # compiled for this call
                constraint.close()

    def stream(self, prompt: str | Sequence[int] | np.ndarray, n_predict: int = 256, *,
               _owned_session: bool = False, **options: object) -> TextStream:
        """As generate(), but returns a TextStream yielding the text as it is generated."""
        try:
            opts = dict(options)
            if "on_text" in opts:
                raise TypeError("stream() takes no on_text: iterate the stream instead")
            spec = _lib.speculation_params(opts.pop("speculate", None))
            constraint = pop_constraint(self._model, opts)
            ids = self._prompt(prompt)
            self._call(n_predict, None, dict(opts))  # check the options now
        except BaseException:
            if _owned_session:
                self.close()
            raise

        def start(on_text: TextCallback) -> Generation:
            call = self._call(n_predict, on_text, dict(opts))
            return self._run(call, ids, constraint, spec)
        return TextStream(start, on_close=self.close if _owned_session else None)


    # ------------------------------------------------------------ scoring (C API 2)

    def score(self, prompt: Sequence[int] | np.ndarray,
              continuations: Sequence[Sequence[int] | np.ndarray]) -> list[Score]:
        """lm-eval-harness loglikelihood over ids: prefills prompt (the cache is reset)
        and scores each continuation after it. Needs all_logits=True. The session is
        left holding the prompt. Score.text is "" (ids have no text here)."""
        _lib.require(2, "score")
        p = token_array(prompt, "prompt")
        conts = [token_array(c, f"continuations[{i}]") for i, c in enumerate(continuations)]
        n = len(conts)
        ptrs = (POINTER(c_int32) * max(1, n))(*[ids_pointer(c) for c in conts])
        lens = (c_size_t * max(1, n))(*[len(c) for c in conts])
        out = (_lib.ScoreResult * max(1, n))()
        self._check(_lib.lib.slm_score(self.handle, ids_pointer(p), len(p), ptrs, lens, n, out))
        return [Score("", float(out[i].logprob), int(out[i].n_tokens), bool(out[i].is_greedy)) for i in range(n)]

    def score_text(self, prompt: str, continuations: Sequence[str]) -> list[Score]:
        """As score(), from text with lm-eval-harness's boundary rule (docs/BATCH.md):
        white space ending the prompt moves to the front of each continuation, and a
        continuation's ids are those of prompt + continuation after the prompt's."""
        _lib.require(2, "score")
        texts = list(continuations)
        enc = [cstr(c, f"continuations[{i}]") for i, c in enumerate(texts)]
        arr = (c_char_p * max(1, len(enc)))(*enc)
        out = (_lib.ScoreResult * max(1, len(enc)))()
        self._check(_lib.lib.slm_score_text(self.handle, cstr(prompt, "prompt"), arr, len(enc), out))
        return [Score(texts[i], float(out[i].logprob), int(out[i].n_tokens), bool(out[i].is_greedy))
                for i in range(len(enc))]

    # ------------------------------------------------------------ saved state (C API 2)

    def save(self, path: str | os.PathLike[str] | None = None) -> bytes | None:
        """Saves the session (its tokens, their K/V, its last logits and the model's
        identity, with a checksum): to the file at path, or returned as bytes when
        path is None. load() restores it into a session of the same model, weights,
        KV type, max_seq and ring setting; continuing gives bit-identical logits."""
        _lib.require_state("save")
        if path is not None:
            check(_lib.lib.slm_session_save_file(self.handle, cstr(os.fspath(path), "path")))
            return None
        size = c_size_t()
        check(_lib.lib.slm_session_state_size(self.handle, byref(size)))
        buf = ctypes.create_string_buffer(max(1, size.value))
        written = c_size_t()
        check(_lib.lib.slm_session_save(self.handle, buf, size.value, byref(written)))
        return buf.raw[:written.value]

    def load(self, source: StateSource) -> None:
        """Restores a state saved by save(): bytes, or the path of a file. A state of
        another model, weight format, KV type or capacity, or a truncated or altered
        one, raises (naming what differs) and leaves the session as it was."""
        _lib.require_state("load")
        if isinstance(source, (bytes, bytearray, memoryview)):
            data = bytes(source)
            buf = ctypes.create_string_buffer(data, max(1, len(data)))
            check(_lib.lib.slm_session_load(self.handle, buf, len(data)))
        else:
            check(_lib.lib.slm_session_load_file(self.handle, cstr(os.fspath(source), "path")))


_DONE = object()


class TextStream(Closeable, Iterator[str]):
    """An iterator over a generation's text pieces as they are produced.

    The C call runs on a worker thread started by the first next(); its token
    callback hands each piece to a bounded queue (so generation waits for a slow
    reader). An exception in the C call (CapacityError, ...) is raised by next().
    close() — also called by leaving a ``with`` block, by breaking out of a for
    loop whose stream is then collected, and by __del__ — stops generation after
    the current token (stop reason ABORTED) and waits for the worker. After the
    last piece, ``result`` holds the Generation.
    """

    def __init__(self, start: Callable[[TextCallback], Generation], on_close: Callable[[], None] | None = None,
                 max_pending: int = 64) -> None:
        self._start: Callable[[TextCallback], Generation] | None = start
        self._on_close = on_close
        self._queue: queue.Queue[object] = queue.Queue(maxsize=max_pending)
        self._cancel = threading.Event()
        self._thread: threading.Thread | None = None
        self._outcome: dict[str, object] = {}
        self._finished = False
        self.result: Generation | None = None

    def __iter__(self) -> TextStream:
        return self

    def _launch(self) -> None:
        start, q, cancel, outcome = self._start, self._queue, self._cancel, self._outcome
        self._start = None
        assert start is not None

        def put(item: object) -> bool:
            while True:
                try:
                    q.put(item, timeout=0.05)
                    return True
                except queue.Full:
                    if cancel.is_set():
                        return False

        def on_text(token: int, piece: str) -> bool:
            if cancel.is_set():
                return False
            return put(piece) if piece else True

        def work() -> None:  # refers to the queue and flags only, never to the TextStream
            try:
                outcome["result"] = start(on_text)
            except BaseException as e:  # noqa: BLE001 (handed to the reader)
                outcome["error"] = e
            finally:
                put(_DONE)

        self._thread = threading.Thread(target=work, name="staticlm-stream", daemon=True)
        self._thread.start()

    def __next__(self) -> str:
        if self._finished:
            raise StopIteration
        if self._thread is None:
            if self._start is None:
                raise StopIteration  # closed before it started
            self._launch()
        try:
            item = self._queue.get()
        except BaseException:  # Ctrl-C while waiting: stop generating, not only reading
            self.close()
            raise
        if item is not _DONE:
            return item  # type: ignore[return-value]
        self._finish()
        if "error" in self._outcome:
            raise self._outcome["error"]  # type: ignore[misc]
        raise StopIteration

    def _finish(self) -> None:
        self._finished = True
        if self._thread is not None:
            self._thread.join()
        self.result = self._outcome.get("result")  # type: ignore[assignment]
        if self._on_close is not None:
            on_close, self._on_close = self._on_close, None
            on_close()

    def close(self) -> None:
        """Stops generation (after the current token) and frees what the stream owns."""
        if self._finished:
            return
        self._cancel.set()
        self._start = None
        if self._thread is not None:
            while self._thread.is_alive():
                try:
                    self._queue.get(timeout=0.05)
                except queue.Empty:
                    pass
        self._finish()

    def text(self) -> str:
        """Reads the rest of the stream and returns it joined."""
        return "".join(self)



class Chat(CHandle):
    """A multi-turn chat on one session: each reply appends only the tokens the
    cache lacks. The chat owns its session's use: do not call the session
    otherwise while the chat is open.

    Args:
        session: the Session (Model.start_chat() makes one).
        system: an optional system prompt.

    close() frees the chat; the session stays usable.
    """

    _what = "chat"
    _free = "slm_chat_free"

    def __init__(self, session: Session, system: str | None = None) -> None:
        self._handle: int | None = None
        self._session = session
        handle = c_void_p()
        check(_lib.lib.slm_chat_create(session.handle, None if system is None else cstr(system, "system"),
                                       byref(handle)))
        self._handle = handle.value

    @property
    def session(self) -> Session:
        return self._session

    def _call(self, user: str, n_predict: int, on_text: TextCallback | None,
              options: dict[str, object]) -> Generation:
        text = cstr(user, "user")
        user_cb: Any = options.pop("on_text", None)
        call = self._session._call(n_predict, on_text or user_cb, options)
        handle = self.handle
        return self._session._run_call(call, lambda params, result: _lib.lib.slm_chat_reply(handle, text, params,
                                                                                             result))

    def reply(self, user: str, n_predict: int = 512, **options: object) -> str:
        """Renders the user turn, appends it and returns the generated reply.
        Options as Model.generate (sampling, stop, on_text)."""
        return self._call(user, n_predict, None, dict(options)).text

    def reply_result(self, user: str, n_predict: int = 512, **options: object) -> Generation:
        """As reply(), returning the Generation."""
        return self._call(user, n_predict, None, dict(options))

    def stream(self, user: str, n_predict: int = 512, **options: object) -> TextStream:
        """As reply(), yielding the reply's text as it is generated."""
        if "on_text" in options:
            raise TypeError("stream() takes no on_text: iterate the stream instead")
        cstr(user, "user")
        self._session._call(n_predict, None, dict(options))  # check the options now
        opts = dict(options)
        return TextStream(lambda on_text: self._call(user, n_predict, on_text, opts))

