"""One generation call's ctypes plumbing: sampling and stop settings become
slm_sampler_params / slm_generate_params, and the token callback collects the
ids and text, forwards them, and turns a Python exception raised inside it
into a stop whose exception is raised again once the C call has returned."""

from __future__ import annotations

import ctypes
from ctypes import POINTER, byref, c_char_p, c_int32, pointer
from typing import Callable, Optional, Sequence

import numpy as np

from . import _lib
from ._errors import check
from ._types import INT32_MAX, UINT64_MAX, Generation, StopReason, as_strings, check_float, check_int, cstr

# Called with each generated id and the text it completes ("" while text is
# held back); token -1 once at the end for text still held. Return False to stop.
TextCallback = Callable[[int, str], Optional[bool]]
# Called with each generated id and the logits it was sampled from: a NumPy
# view valid during the call only (copy it to keep it). Return False to stop.
LogitsCallback = Callable[[int, np.ndarray], Optional[bool]]


def sampler_params(model_handle: int, *, temperature: float | None = None, top_k: int | None = None,
                   top_p: float | None = None, min_p: float | None = None, repeat_penalty: float | None = None,
                   repeat_last_n: int | None = None, seed: int | None = None) -> _lib.SamplerParams:
    """The model's suggested sampling (generation_config.json over the library's
    defaults) with the given values replacing it; ranges are checked by the library."""
    p = _lib.sampler_params(model_handle)
    if temperature is not None:
        p.temperature = check_float(temperature, "temperature")
    if top_k is not None:
        p.top_k = check_int(top_k, "top_k", 0, INT32_MAX)
    if top_p is not None:
        p.top_p = check_float(top_p, "top_p")
    if min_p is not None:
        p.min_p = check_float(min_p, "min_p")
    if repeat_penalty is not None:
        p.repeat_penalty = check_float(repeat_penalty, "repeat_penalty")
    if repeat_last_n is not None:
        p.repeat_last_n = check_int(repeat_last_n, "repeat_last_n", 0, INT32_MAX)
    if seed is not None:
        p.seed = check_int(seed, "seed", 0, UINT64_MAX)
    return p


class GenerationCall:
    """The ctypes objects of one slm_generate / slm_chat_reply call; they live as long as this object."""

    def __init__(self, model_handle: int, *, n_predict: int = 256, stop: str | Sequence[str] | None = None,
                 stop_ids: Sequence[int] | None = None, ignore_eos: bool = False,
                 on_text: TextCallback | None = None, logprobs: int | None = None,
                 on_logits: LogitsCallback | None = None, piece: Callable[[int], str] | None = None,
                 **sampling: object) -> None:
        self.sampler = sampler_params(model_handle, **sampling)  # type: ignore[arg-type]
        self.params = _lib.generate_params()
        self.params.sampler = pointer(self.sampler)
        self.params.max_tokens = check_int(n_predict, "n_predict", -1, INT32_MAX)

        strings = [cstr(s, f"stop[{i}]") for i, s in enumerate(as_strings(stop, "stop"))]
        self._stop_strings = (c_char_p * max(1, len(strings)))(*strings)
        if strings:
            self.params.stop_strings = ctypes.cast(self._stop_strings, POINTER(c_char_p))
            self.params.n_stop_strings = len(strings)

        if ignore_eos and stop_ids is not None:
            raise ValueError("give stop_ids or ignore_eos, not both")
        ids = [-1] if ignore_eos else [check_int(t, f"stop_ids[{i}]", -1, INT32_MAX)
                                       for i, t in enumerate(stop_ids or [])]
        if stop_ids is not None and not ids:
            raise ValueError("stop_ids is empty: pass None for the model's EOS ids, or ignore_eos=True")
        self._stop_ids = (c_int32 * max(1, len(ids)))(*ids)
        if ids:
            self.params.stop_ids = ctypes.cast(self._stop_ids, POINTER(c_int32))
            self.params.n_stop_ids = len(ids)

        self.on_text = on_text
        self.on_logits = on_logits
        self.piece = piece
        self.tokens: list[int] = []
        self.pieces: list[str] = []
        self.logprobs: list[dict] | None = None
        self.error: BaseException | None = None
        if logprobs is None and on_logits is None:
            self._fn = _lib.TOKEN_FN(self._callback)
            self.params.on_token = self._fn
        else:
            # The token-info callback (C API 2): log-probabilities and logits.
            _lib.require(2, "logprobs / on_logits")
            if logprobs is not None:
                self.params.logprobs = check_int(logprobs, "logprobs", 0, 20)
                self.logprobs = []
            self._info_fn = _lib.TOKEN_INFO_FN(self._info_callback)
            self.params.on_token_info = self._info_fn
        self.result = _lib.GenerateResult()
        self.result.size = ctypes.sizeof(_lib.GenerateResult)

    def _staticlm_sink(self, e: BaseException) -> None:
        """Takes an exception that escaped a callback before its try (see _errors)."""
        if self.error is None:
            self.error = e

    def _callback(self, token: int, text: object, n: int, user: object) -> int:
        # Never let an exception escape into C: ctypes would print it and
        # return an undefined value. Record it, stop, and raise it afterwards.
        try:
            piece = _lib.text(text, n).decode("utf-8", "replace") if n else ""  # type: ignore[arg-type]
            if token >= 0:
                self.tokens.append(token)
            if piece:
                self.pieces.append(piece)
            if self.on_text is not None and self.on_text(token, piece) is False:
                return 0
            return 1
        except BaseException as e:  # noqa: BLE001 (KeyboardInterrupt too: it stops generation)
            self.error = e
            return 0

    def _info_callback(self, info_ptr: object, user: object) -> int:
        try:
            info = info_ptr.contents  # type: ignore[attr-defined]
            token = int(info.token)
            if token >= 0 and self.logprobs is not None:
                self.logprobs.append(self._logprob_entry(token, float(info.logprob),
                                                         [info.top[k] for k in range(info.n_top)]))
            if token >= 0 and self.on_logits is not None and info.logits:
                view = np.ctypeslib.as_array(info.logits, shape=(int(info.n_vocab),))
                view.flags.writeable = False
                if self.on_logits(token, view) is False:
                    return 0
        except BaseException as e:  # noqa: BLE001 (as _callback)
            self.error = e
            return 0
        return self._callback(info.token, info.text, info.len, user)

    def _logprob_entry(self, token: int, logprob: float, top: list) -> dict:
        piece = self.piece or (lambda t: "")
        entry: dict = {"token": token, "piece": piece(token), "logprob": logprob}
        if self.params.logprobs > 0:
            entry["top"] = [{"token": int(t.token), "piece": piece(int(t.token)), "logprob": float(t.logprob)}
                            for t in top]
        return entry

    def run(self, call: Callable[[object, object], int]) -> Generation:
        """call(params_ref, result_ref) makes the C call and returns its status."""
        status = call(byref(self.params), byref(self.result))
        if self.error is not None:
            raise self.error
        check(status)
        r = self.result
        return Generation(text="".join(self.pieces), tokens=self.tokens, stop_reason=StopReason(r.stop_reason),
                          prompt_tokens=r.n_prompt_tokens, prefill_seconds=r.prefill_seconds,
                          first_token_seconds=r.first_token_seconds, decode_seconds=r.decode_seconds,
                          logprobs=self.logprobs)
