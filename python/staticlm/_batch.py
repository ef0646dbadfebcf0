"""Model.batch: a list of request dicts in, result dicts out, with the fields
and semantics of `staticlm batch`'s JSONL (docs/BATCH.md), run on the C API's
batched session (slm_batch_*: submit, step, collect) and, for scoring
requests, slm_score_text on one extra session with all_logits.

What differs from the command: requests are Python objects (no JSON text, so
no line-length, nesting or malformed-JSON errors), results come back in input
order without "line", a bad request's message starts with "request I:" (its
0-based index) where the command's starts with "line N:", and "enable_thinking" / "hide_thinking" are
refused (the C API has no thinking option). "json_schema" / "grammar" need C API 3
(slm_constraint_*, slm_batch_submit_constrained); each distinct schema or
grammar is compiled once per call. With prefix_pool the batch shares prompt
prefixes as requests come (slm_batch_create_with_prefix), where the command
plans them over the whole file: the results are the same either way."""

from __future__ import annotations

import ctypes
import math
import time
from collections import deque
from ctypes import POINTER, byref, c_char_p, c_int, c_int32, c_uint64, c_void_p
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np

from . import _lib
from ._constrain import Constraint, schema_text
from ._errors import StaticlmError, check
from ._generate import sampler_params
from ._types import KV_TYPES, Generation, StopReason, as_strings, check_int, cstr

if TYPE_CHECKING:
    from ._model import Model

_KNOWN = ("id, prompt, messages, n_predict, temperature, top_k, top_p, min_p, repetition_penalty, seed, stop, "
          "enable_thinking, hide_thinking, logprobs, score, choices, meta, json_schema, grammar")
_SCORING_FIELDS = {"id", "prompt", "messages", "score", "choices", "meta"}
_FINISH = {StopReason.EOS: "stop", StopReason.STRING: "stop", StopReason.MAX_TOKENS: "length",
           StopReason.CAPACITY: "capacity", StopReason.ABORTED: "cancelled"}
_MASK64 = (1 << 64) - 1


def fnv1a64(data: bytes) -> int:
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & _MASK64
    return h


def splitmix64(z: int) -> int:
    z = (z + 0x9E3779B97F4A7C15) & _MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    return z ^ (z >> 31)


def request_seed(base_seed: int, request_id: str) -> int:
    """The seed of a request without "seed": the low 31 bits of
    splitmix64(base_seed ^ fnv1a64(id)), as `staticlm batch` derives it."""
    return splitmix64(base_seed ^ fnv1a64(request_id.encode("utf-8", "surrogatepass"))) & 0x7FFFFFFF


class _Bad(Exception):
    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


def _type_name(v: object) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, (int, float)):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, (list, tuple)):
        return "array"
    if isinstance(v, Mapping):
        return "object"
    return type(v).__name__


def _bad_field(name: str, must: str, v: object) -> _Bad:
    shown = repr(v)
    if len(shown) > 40:
        shown = shown[:37] + "..."
    return _Bad("input", f'field "{name}" must be {must}, got {_type_name(v)} {shown}')


def _int_field(name: str, v: object, lo: int, hi: int) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not lo <= int(v) <= hi:
        raise _bad_field(name, f"an integer in [{lo}, {hi}]", v)
    return int(v)


def _number_field(name: str, v: object, must: str, ok) -> float:  # noqa: ANN001
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
        raise _bad_field(name, must, v)
    d = float(v)
    if not math.isfinite(d) or not ok(d):
        raise _bad_field(name, must, v)
    return d


def _string_field(name: str, v: object) -> str:
    if not isinstance(v, str):
        raise _bad_field(name, "a string", v)
    return v


class _Request:
    """One request, checked as batch_io.cpp's parse_request checks a line."""

    def __init__(self, index: int, raw: object, base_seed: int):
        self.index = index
        self.id: object = None
        self.key = f"#{index}"
        self.meta: object = None
        self.has_meta = False
        self.prompt: str | None = None
        self.messages: list[tuple[str, str]] | None = None
        self.fields: dict[str, object] = {}
        self.score: list[str] | None = None
        self.choices = False
        self.json_schema: str | None = None
        self.grammar: str | None = None
        self.seed = 0
        self.error: _Bad | None = None
        try:
            self._parse(raw, base_seed)
        except _Bad as e:
            self.error = _Bad(e.kind, f"request {index}: {e}")

    def _parse(self, raw: object, base_seed: int) -> None:
        if not isinstance(raw, Mapping):
            raise _Bad("format", f"not an object but {_type_name(raw)}")
        if "meta" in raw:
            self.meta, self.has_meta = raw["meta"], True
        if "id" not in raw:
            raise _Bad("input", 'no "id"')
        rid = raw["id"]
        if isinstance(rid, str):
            if not rid:
                raise _Bad("input", '"id" is an empty string')
            if len(rid.encode("utf-8", "surrogatepass")) > 1024:
                raise _Bad("input", '"id" is longer than 1024 bytes')
            canonical = rid
        elif isinstance(rid, (int, np.integer)) and not isinstance(rid, bool) and -(2**63) <= int(rid) < 2**64:
            canonical = str(int(rid))
        else:
            raise _Bad("input", f'"id" must be a string or an integer, got {_type_name(rid)}')
        self.id, self.key = rid, "=" + canonical

        generation_field = None
        have_seed = False
        for k, v in raw.items():
            if not isinstance(k, str):
                raise _Bad("input", f"field names must be strings, got {k!r}")
            if k not in _SCORING_FIELDS and generation_field is None:
                generation_field = k
            if k in ("id", "meta"):
                continue
            if k == "prompt":
                self.prompt = _string_field(k, v)
            elif k == "messages":
                if not isinstance(v, (list, tuple)) or not v:
                    raise _bad_field(k, "a non-empty array of {role, content}", v)
                msgs = []
                for i, m in enumerate(v):
                    at = f"messages[{i}]"
                    if not isinstance(m, Mapping):
                        raise _bad_field(at, 'an object {"role", "content"}', m)
                    for f in m:
                        if f not in ("role", "content"):
                            raise _Bad("input", f'unknown field "{at}.{f}" (a message has role and content)')
                    if "role" not in m or "content" not in m:
                        raise _Bad("input", f'{at} needs "role" and "content"')
                    role = _string_field(at + ".role", m["role"])
                    content = _string_field(at + ".content", m["content"])
                    if role not in ("system", "user", "assistant"):
                        raise _Bad("input", f'{at}.role must be system, user or assistant, got "{role}"')
                    msgs.append((role, content))
                self.messages = msgs
            elif k == "n_predict":
                self.fields[k] = _int_field(k, v, 0, 1 << 30)
            elif k == "temperature":
                self.fields[k] = _number_field(k, v, "a number >= 0", lambda d: d >= 0)
            elif k == "top_k":
                self.fields[k] = _int_field(k, v, 0, 1 << 30)
            elif k == "top_p":
                self.fields[k] = _number_field(k, v, "a number in (0, 1]", lambda d: 0 < d <= 1)
            elif k == "min_p":
                self.fields[k] = _number_field(k, v, "a number in [0, 1]", lambda d: 0 <= d <= 1)
            elif k == "repetition_penalty":
                self.fields[k] = _number_field(k, v, "a number > 0", lambda d: d > 0)
            elif k == "seed":
                if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not 0 <= int(v) < 2**64:
                    raise _bad_field(k, "an integer in [0, 2^64)", v)
                self.seed, have_seed = int(v), True
            elif k == "stop":
                if isinstance(v, str):
                    stops = [v]
                elif isinstance(v, (list, tuple)):
                    stops = [_string_field(f"stop[{i}]", s) for i, s in enumerate(v)]
                else:
                    raise _bad_field(k, "a string or an array of strings", v)
                if any(not s for s in stops):
                    raise _Bad("input", 'field "stop" holds an empty string')
                self.fields[k] = stops
            elif k in ("enable_thinking", "hide_thinking"):
                raise _Bad("unsupported", f'field "{k}" is not supported by the Python binding (the C API has '
                                          "no thinking option; use `staticlm batch`)")
            elif k in ("json_schema", "grammar") and _lib.api_version < 3:
                raise _Bad("unsupported", f'field "{k}" needs C API 3 (constrained output); '
                                          f"{_lib.library_path()} has C API {_lib.api_version}")
            elif k == "json_schema":
                if not isinstance(v, Mapping):
                    raise _bad_field(k, "a JSON Schema object", v)
                try:  # the text in the request's member order, as the command keeps the line's
                    self.json_schema = schema_text(v)
                except (TypeError, ValueError) as e:
                    raise _Bad("input", f'field "json_schema" is not JSON: {e}') from None
            elif k == "grammar":
                self.grammar = _string_field(k, v)
                if not self.grammar:
                    raise _Bad("input", 'field "grammar" is an empty string')
            elif k == "logprobs":
                self.fields[k] = _int_field(k, v, 0, 20)
            elif k in ("score", "choices"):
                if self.score is not None:
                    raise _Bad("input", 'give "score" or "choices", not both')
                if not isinstance(v, (list, tuple)) or not v:
                    raise _bad_field(k, "a non-empty array of non-empty strings", v)
                conts = [_string_field(f"{k}[{i}]", s) for i, s in enumerate(v)]
                for i, s in enumerate(conts):
                    if not s:
                        raise _Bad("input", f'field "{k}[{i}]" is an empty string')
                self.score, self.choices = conts, k == "choices"
            else:
                raise _Bad("input", f'unknown field "{k}" (known: {_KNOWN})')
        if (self.prompt is None) == (self.messages is None):
            raise _Bad("input", 'give "prompt" or "messages", not both' if self.prompt is not None
                       else 'no "prompt" or "messages"')
        if self.score is not None:
            what = '"choices"' if self.choices else '"score"'
            if self.messages is not None:
                raise _Bad("input", f'{what} goes with "prompt": chat requests are not scored')
            if generation_field is not None:
                raise _Bad("input", f'field "{generation_field}" is for generation; {what} generates nothing')
        if self.json_schema is not None and self.grammar is not None:
            raise _Bad("input", 'give "json_schema" or "grammar", not both')
        if not have_seed:
            self.seed = request_seed(base_seed, canonical)


def _error_result(r: _Request, kind: str, message: str) -> dict:
    out = {"id": r.id, "finish_reason": "error", "error": {"kind": kind, "message": message}}
    if r.has_meta:
        out["meta"] = r.meta
    return out


def run_batch(model: Model, requests: Sequence[Mapping[str, object]], *, slots: int, max_seq: int, kv: str,
              threads: int | None, seed: int, defaults: Mapping[str, object], prefix_pool: int = 0,
              prefix_min: int = 32, speculate: str | None = None) -> list[dict]:
    """See Model.batch. defaults: n_predict, temperature, top_k, top_p, min_p,
    repetition_penalty, stop — the command's flags, used where a request has no value."""
    _lib.require(2, "batch")
    prefix_pool = check_int(prefix_pool, "prefix_pool", -1, 2**31 - 1)
    prefix_min = check_int(prefix_min, "prefix_min", 1, 2**31 - 1)
    if prefix_pool != 0:
        _lib.require(3, "batch(prefix_pool=...)")
    _lib.speculation_params(speculate)  # a bad value is refused before anything runs
    unknown = set(defaults) - {"n_predict", "temperature", "top_k", "top_p", "min_p", "repetition_penalty", "stop"}
    if unknown:
        raise TypeError(f"batch() got unexpected defaults: {', '.join(sorted(unknown))}")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**64:
        raise ValueError(f"seed must be an integer in [0, 2^64), got {seed!r}")
    parsed = [_Request(i, raw, seed) for i, raw in enumerate(requests)]
    seen: dict[str, int] = {}
    for r in parsed:
        if r.key in seen:  # refused up front, as the command does: nothing runs
            raise ValueError(f"duplicate id {r.id!r} in requests {seen[r.key]} and {r.index} (ids must be unique; "
                             "nothing was run)")
        seen[r.key] = r.index

    results: list[dict | None] = [None] * len(parsed)
    gen: deque[_Request] = deque()
    scoring: list[_Request] = []
    for r in parsed:
        if r.error is not None:
            results[r.index] = _error_result(r, r.error.kind, str(r.error))
        elif r.score is not None:
            scoring.append(r)
        else:
            gen.append(r)

    if scoring:
        _run_scoring(model, scoring, results, max_seq=max_seq, kv=kv, threads=threads)
    if gen:
        _run_generation(model, gen, results, slots=slots, max_seq=max_seq, kv=kv, threads=threads,
                        defaults=defaults, prefix_pool=prefix_pool, prefix_min=prefix_min, speculate=speculate)
    out: list[dict] = [res if res is not None else {} for res in results]
    for res in out:
        res["digest"] = digest(res)
    return out


def digest(result: Mapping[str, Any]) -> str:
    """A result's "digest", as `staticlm batch` writes it (docs/BATCH.md): FNV-1a 64,
    as 16 hex digits, of a text that names the output only (token ids and stop
    reason; a scoring's best index, token counts and greedy flags; an error's kind)."""
    reason = result.get("finish_reason")
    if reason == "error":
        text = f"error:{result['error']['kind']}"
    elif reason == "scored":
        scores = result["scores"]
        best = 0
        for i, c in enumerate(scores):
            if c["logprob"] > scores[best]["logprob"]:
                best = i
        text = f"scored:{best}:" + ",".join(f"{c['tokens']}/{1 if c['greedy'] else 0}" for c in scores)
    else:
        text = f"{reason}:" + ",".join(str(t) for t in result.get("tokens", []))
    return f"{fnv1a64(text.encode()):016x}"


def _run_scoring(model: Model, scoring: list[_Request], results: list[dict | None], *, max_seq: int, kv: str,
                 threads: int | None) -> None:
    with model.session(max_seq, kv=kv, threads=threads, all_logits=True) as s:
        for r in scoring:
            t0 = time.perf_counter()
            assert r.prompt is not None and r.score is not None
            try:
                scores = s.score_text(r.prompt, r.score)
            except StaticlmError as e:
                results[r.index] = _error_result(r, e.status_name, e.message)
                continue
            out: dict = {"id": r.id, "finish_reason": "scored",
                         "scores": [{"text": c.text, "logprob": c.logprob, "tokens": c.tokens, "greedy": c.greedy}
                                    for c in scores]}
            if r.choices:
                best = 0
                for i, c in enumerate(scores):
                    if c.logprob > scores[best].logprob:
                        best = i
                out["choice"] = r.score[best]
            out["prompt_tokens"] = s.pos  # slm_score leaves the session holding the prompt
            out["timing"] = {"total_ms": (time.perf_counter() - t0) * 1e3}
            if r.has_meta:
                out["meta"] = r.meta
            results[r.index] = out


class _Submitted:
    """The ctypes objects a submitted request points at (kept until it is collected)."""

    def __init__(self, r: _Request, ids: np.ndarray | None, sampler: _lib.SamplerParams, stops: list[bytes],
                 logprobs: int):
        self.request = r
        self.ids = ids
        # A chat request goes to the library as messages: rendered with the template,
        # and stopping at its end-of-turn tokens too, as `staticlm batch` does.
        msgs = [(cstr(role, "role"), cstr(content, "content")) for role, content in (r.messages or [])]
        self.messages = (_lib.ChatMessage * max(1, len(msgs)))(*[_lib.ChatMessage(a, b) for a, b in msgs])
        self.n_messages = len(msgs)
        self.sampler = sampler
        self.stops = (c_char_p * max(1, len(stops)))(*stops)
        self.n_stops = len(stops)
        self.logprobs = logprobs
        self.constraint: Constraint | None = None
        self.submitted_at = 0.0


def _run_generation(model: Model, pending: deque[_Request], results: list[dict | None], *, slots: int,
                    max_seq: int, kv: str, threads: int | None, defaults: Mapping[str, object],
                    prefix_pool: int = 0, prefix_min: int = 32, speculate: str | None = None) -> None:
    bp = _lib.batch_params()
    bp.slots = slots
    bp.max_seq = max_seq
    bp.kv = KV_TYPES.get(kv, -1)
    if bp.kv < 0:
        raise ValueError(f"kv must be 'f16', 'f32' or 'q8', got {kv!r}")
    if kv == "q8":
        _lib.require(3, "kv='q8'")
    bp.threads = model.threads if threads is None else threads
    handle = c_void_p()
    spec = _lib.speculation_params(speculate)
    if spec is not None:  # C API 4: every request drafts from its own prompt and output
        pp = None
        if prefix_pool != 0:
            pp = _lib.batch_prefix_params()
            pp.pool_tokens = prefix_pool
            pp.min_tokens = prefix_min
        check(_lib.lib.slm_batch_create_speculative(model.handle, byref(bp), byref(pp) if pp is not None else None,
                                                    byref(spec), byref(handle)))
    elif prefix_pool != 0:
        pp = _lib.batch_prefix_params()
        pp.pool_tokens = prefix_pool
        pp.min_tokens = prefix_min
        check(_lib.lib.slm_batch_create_with_prefix(model.handle, byref(bp), byref(pp), byref(handle)))
    else:
        check(_lib.lib.slm_batch_create(model.handle, byref(bp), byref(handle)))
    batch = handle.value
    assert batch is not None
    running: dict[int, _Submitted] = {}
    # Each distinct schema or grammar compiled once: its Constraint, or the error it gave.
    constraints: dict[tuple[str, str], Constraint | StaticlmError] = {}
    try:
        while pending or running:
            while pending and len(running) < slots:
                r = pending.popleft()
                sub = _prepare(model, r, defaults, results)
                if sub is None:
                    continue
                if r.json_schema is not None or r.grammar is not None:
                    key = ("json_schema", r.json_schema) if r.json_schema is not None else ("grammar", r.grammar)
                    if key not in constraints:
                        try:
                            constraints[key] = (Constraint(model, json_schema=r.json_schema) if key[0] == "json_schema"
                                                else Constraint(model, grammar=r.grammar))
                        except StaticlmError as e:
                            constraints[key] = e
                    c = constraints[key]
                    if isinstance(c, StaticlmError):
                        results[r.index] = _error_result(r, c.status_name, f"request {r.index}: {c.message}")
                        continue
                    sub.constraint = c
                req = _lib.batch_request()
                if sub.ids is not None:
                    req.tokens = sub.ids.ctypes.data_as(POINTER(c_int32))
                    req.n_tokens = len(sub.ids)
                else:
                    req.messages = ctypes.cast(sub.messages, c_void_p)
                    req.n_messages = sub.n_messages
                req.sampler = ctypes.pointer(sub.sampler)
                req.max_tokens = int(r.fields.get("n_predict", defaults.get("n_predict", 256)))  # type: ignore
                if sub.n_stops:
                    req.stop_strings = ctypes.cast(sub.stops, POINTER(c_char_p))
                    req.n_stop_strings = sub.n_stops
                req.logprobs = sub.logprobs
                req.tag = r.index
                rid = c_uint64()
                sub.submitted_at = time.perf_counter()
                if sub.constraint is not None:
                    status = _lib.lib.slm_batch_submit_constrained(batch, byref(req), sub.constraint.handle,
                                                                   byref(rid))
                else:
                    status = _lib.lib.slm_batch_submit(batch, byref(req), byref(rid))
                if status != 0:
                    e = _error(status)
                    results[r.index] = _error_result(r, e.status_name, e.message)
                    continue
                running[int(rid.value)] = sub
            if not running:
                continue
            check(_lib.lib.slm_batch_step(batch, None))
            _collect(model, batch, running, results)
    finally:
        _lib.lib.slm_batch_free(batch)
        for c in constraints.values():
            if isinstance(c, Constraint):
                c.close()


def _error(status: int) -> StaticlmError:
    from ._errors import error
    return error(status)


def _prepare(model: Model, r: _Request, defaults: Mapping[str, object],
             results: list[dict | None]) -> _Submitted | None:
    """Prompt ids and settings of a generation request; an error result when they fail."""
    try:
        ids = None if r.messages is not None else model.prompt_tokens(r.prompt or "")
        f = {**{k: v for k, v in defaults.items()}, **r.fields}
        sp = sampler_params(model.handle, temperature=f.get("temperature"), top_k=f.get("top_k"),  # type: ignore
                            top_p=f.get("top_p"), min_p=f.get("min_p"),  # type: ignore[arg-type]
                            repeat_penalty=f.get("repetition_penalty"), seed=r.seed)  # type: ignore[arg-type]
        stops: Any = f.get("stop") or []
        if isinstance(stops, str):
            stops = [stops]
        encoded = [cstr(s, "stop") for s in stops]
        logprobs = int(r.fields.get("logprobs", -1))  # type: ignore[call-overload]
        return _Submitted(r, ids, sp, encoded, logprobs)
    except StaticlmError as e:
        results[r.index] = _error_result(r, e.status_name, e.message)
    except (TypeError, ValueError) as e:
        results[r.index] = _error_result(r, "input", str(e))
    return None


def _collect(model: Model, batch: int, running: dict[int, _Submitted], results: list[dict | None]) -> None:
    while True:
        res = _lib.BatchResult()
        res.size = ctypes.sizeof(_lib.BatchResult)
        got = c_int()
        check(_lib.lib.slm_batch_collect(batch, byref(res), byref(got)))
        if not got.value:
            return
        done = time.perf_counter()
        sub = running.pop(int(res.id))
        r = sub.request
        n = int(res.n_tokens)
        tokens = [int(res.tokens[i]) for i in range(n)]
        out: dict = {"id": r.id, "finish_reason": _FINISH.get(StopReason(res.stop_reason), "stop"),
                     "text": _lib.text(res.text, int(res.text_len)).decode("utf-8", "replace"), "tokens": tokens}
        if sub.logprobs >= 0 and res.logprobs:
            out["logprobs"] = _logprob_entries(model, res, tokens, sub.logprobs)
        out["prompt_tokens"] = int(res.n_prompt_tokens)
        out["seed"] = r.seed
        decode = float(res.decode_seconds)
        steps = max(0, n - 1)
        out["timing"] = {"prefill_ms": float(res.prefill_seconds) * 1e3,
                         "first_token_ms": float(res.first_token_seconds) * 1e3, "decode_ms": decode * 1e3,
                         "total_ms": (done - sub.submitted_at) * 1e3,
                         "decode_tok_per_s": steps / decode if decode > 0 else 0.0}
        if sub.constraint is not None:
            out["complete"] = _lib.lib.slm_batch_collected_complete(batch) == 1
        if r.has_meta:
            out["meta"] = r.meta
        results[r.index] = out


def _logprob_entries(model: Model, res: _lib.BatchResult, tokens: list[int], logprobs: int) -> list[dict]:
    n_top = int(res.n_top)
    entries = []
    for i, token in enumerate(tokens):
        e: dict = {"token": token, "piece": model.token_to_piece(token), "logprob": float(res.logprobs[i])}
        if logprobs > 0:
            e["top"] = [{"token": int(t.token), "piece": model.token_to_piece(int(t.token)),
                         "logprob": float(t.logprob)}
                        for t in (res.top[i * n_top + k] for k in range(n_top))]
        entries.append(e)
    return entries


_MESSAGES_OPTIONS = {"temperature", "top_k", "top_p", "min_p", "repeat_penalty", "repeat_last_n", "seed", "stop",
                     "logprobs"}


def generate_messages(model: Model, messages: list[tuple[str, str]], n_predict: int, *, max_seq: int,
                      options: Mapping[str, object]) -> Generation:
    """One reply to a conversation, run as a one-request batch with messages (the
    library renders them and stops at EOS or the template's end-of-turn tokens)."""
    _lib.require(2, "chat() with more than a system and a user turn")
    extra = set(options) - _MESSAGES_OPTIONS
    if extra:
        raise TypeError(f"chat() with more than a system and a user turn takes no {', '.join(sorted(extra))} "
                        "(it runs as a batch request)")
    sampling = {k: v for k, v in options.items() if k not in ("stop", "logprobs") and v is not None}
    sp = sampler_params(model.handle, **sampling)  # type: ignore[arg-type]
    stops = [cstr(s, f"stop[{i}]") for i, s in enumerate(as_strings(options.get("stop"), "stop"))]  # type: ignore
    lp_value = options.get("logprobs")
    logprobs = -1 if lp_value is None else check_int(lp_value, "logprobs", 0, 20)
    msgs = [_lib.ChatMessage(cstr(r, "role"), cstr(c, "content")) for r, c in messages]
    arr = (_lib.ChatMessage * len(msgs))(*msgs)
    stop_arr = (c_char_p * max(1, len(stops)))(*stops)

    bp = _lib.batch_params()
    bp.slots = 1
    bp.max_seq = max_seq
    bp.threads = model.threads
    handle = c_void_p()
    check(_lib.lib.slm_batch_create(model.handle, byref(bp), byref(handle)))
    batch = handle.value
    assert batch is not None
    try:
        req = _lib.batch_request()
        req.messages = ctypes.cast(arr, c_void_p)
        req.n_messages = len(msgs)
        req.sampler = ctypes.pointer(sp)
        req.max_tokens = check_int(n_predict, "n_predict", -1, 2**31 - 1)
        if stops:
            req.stop_strings = ctypes.cast(stop_arr, POINTER(c_char_p))
            req.n_stop_strings = len(stops)
        req.logprobs = logprobs
        check(_lib.lib.slm_batch_submit(batch, byref(req), None))
        res = _lib.BatchResult()
        res.size = ctypes.sizeof(_lib.BatchResult)
        got = c_int()
        while True:
            check(_lib.lib.slm_batch_step(batch, None))
            check(_lib.lib.slm_batch_collect(batch, byref(res), byref(got)))
            if got.value:
                break
        tokens = [int(res.tokens[i]) for i in range(int(res.n_tokens))]
        return Generation(text=_lib.text(res.text, int(res.text_len)).decode("utf-8", "replace"), tokens=tokens,
                          stop_reason=StopReason(res.stop_reason), prompt_tokens=int(res.n_prompt_tokens),
                          prefill_seconds=float(res.prefill_seconds),
                          first_token_seconds=float(res.first_token_seconds),
                          decode_seconds=float(res.decode_seconds),
                          logprobs=_logprob_entries(model, res, tokens, logprobs) if logprobs >= 0 else None)
    finally:
        _lib.lib.slm_batch_free(batch)
