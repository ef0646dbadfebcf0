"""Plain value types shared by the modules: stop reasons, a generation's result,
chat messages, and the checks that keep Python values inside the C types."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Mapping, Sequence, Tuple, Union

INT32_MAX = 2**31 - 1
UINT64_MAX = 2**64 - 1
# KV cache types by name: their slm_kv numbers.
KV_TYPES = {"f16": 0, "f32": 1, "q8": 2}


class StopReason(enum.IntEnum):
    """Why generation ended (slm_stop_reason)."""

    EOS = 0         # a stop id (by default the model's EOS ids) was sampled
    STRING = 1      # a stop string appeared (it is not part of the text)
    MAX_TOKENS = 2  # n_predict tokens were generated
    CAPACITY = 3    # the session is full (pos == max_seq)
    ABORTED = 4     # the caller stopped it (a callback, a closed stream)


@dataclass
class Generation:
    """One generation's result.

    Attributes:
        text: the generated text (a stop string is cut off).
        tokens: the sampled ids, the stop id included when generation ended on one.
        stop_reason: why it ended.
        prompt_tokens: ids of the prompt that was appended.
        prefill_seconds, first_token_seconds, decode_seconds: timings as the C API reports them.
        logprobs: with logprobs=N, per generated token {"token", "piece", "logprob", "top"}
            as `staticlm generate --logprobs N` prints them ("top" only for N >= 1).
        complete: with json_schema / grammar, whether the text is a complete value
            (False: it stopped inside one, e.g. at n_predict: incomplete JSON); None otherwise.
        speculation: with speculate="ngram:N" (C API 4), {"draft_steps", "drafted_tokens",
            "accepted_tokens"}; None otherwise.
    """

    text: str
    tokens: list[int] = field(default_factory=list)
    stop_reason: StopReason = StopReason.MAX_TOKENS
    prompt_tokens: int = 0
    prefill_seconds: float = 0.0
    first_token_seconds: float = 0.0
    decode_seconds: float = 0.0
    logprobs: list[dict] | None = None
    complete: bool | None = None
    speculation: dict | None = None


@dataclass
class Score:
    """One continuation's score (lm-eval-harness loglikelihood; BATCH.md's "scores").

    Attributes:
        text: the continuation as given.
        logprob: the sum of its tokens' log-probabilities given the prompt (natural log).
        tokens: its token count.
        greedy: whether greedy decoding would produce exactly those tokens.
    """

    text: str
    logprob: float
    tokens: int
    greedy: bool


# A chat message: {"role": ..., "content": ...} or (role, content).
Message = Union[Mapping[str, str], Tuple[str, str]]


def message_pair(m: Message, index: int) -> tuple[str, str]:
    if isinstance(m, Mapping):
        try:
            role, content = m["role"], m["content"]
        except KeyError as e:
            raise ValueError(f"message {index} has no {e.args[0]!r} key") from None
    elif isinstance(m, (tuple, list)) and len(m) == 2:
        role, content = m
    else:
        raise TypeError(f"message {index} must be a {{'role', 'content'}} mapping or a (role, content) pair")
    if not isinstance(role, str) or not isinstance(content, str):
        raise TypeError(f"message {index}: role and content must be str")
    return role, content


def cstr(s: str, what: str) -> bytes:
    """UTF-8 bytes for a C string; a NUL would silently cut it, so it is refused."""
    if not isinstance(s, str):
        raise TypeError(f"{what} must be str, got {type(s).__name__}")
    b = s.encode("utf-8", "surrogatepass")
    if b"\0" in b:
        raise ValueError(f"{what} contains a NUL character at index {s.index(chr(0))}")
    return b


def check_int(value: object, what: str, lo: int, hi: int) -> int:
    """An int in [lo, hi] (ctypes would truncate anything else silently)."""
    if isinstance(value, bool) or not isinstance(value, int):
        try:
            import numpy as np  # numpy integers are accepted

            if isinstance(value, np.integer):
                value = int(value)
            else:
                raise TypeError
        except TypeError:
            raise TypeError(f"{what} must be an int, got {type(value).__name__}") from None
    if not lo <= value <= hi:  # type: ignore[operator]
        raise ValueError(f"{what} must be in [{lo}, {hi}], got {value}")
    return int(value)  # type: ignore[arg-type]


def check_float(value: object, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        try:
            return float(value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            raise TypeError(f"{what} must be a number, got {type(value).__name__}") from None
    return float(value)


def as_strings(value: str | Sequence[str] | None, what: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    out = list(value)
    for i, s in enumerate(out):
        if not isinstance(s, str):
            raise TypeError(f"{what}[{i}] must be str, got {type(s).__name__}")
    return out
