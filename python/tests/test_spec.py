"""Prompt-lookup speculation from Python (C API 4): speculate="ngram[:N]" on
generate, stream and batch gives the greedy output of the same call without it
(text, tokens, stop reason), with drafted tokens accepted on text that repeats;
bad values are refused with the library's message."""

from __future__ import annotations

import pytest

import staticlm

pytestmark = pytest.mark.skipif(staticlm.API_VERSION < 4, reason="the library has C API < 4 (no speculation)")

COPY = "Lily saw a big dog. Lily saw a big cat. Lily saw a big dog. Lily saw a big"
PROMPTS = [COPY, "Once upon a time", "Tom had a red ball. Tom had a red ball. Tom had a", "The sun was"]


def test_generate_and_stream_are_the_same_with_speculation(stories_q8):
    accepted = 0
    for prompt in PROMPTS:
        want = stories_q8.generate_result(prompt, 60, temperature=0)
        got = stories_q8.generate_result(prompt, 60, temperature=0, speculate="ngram:6")
        assert got.text == want.text
        assert got.tokens == want.tokens
        assert got.stop_reason == want.stop_reason
        assert want.speculation is None
        assert got.speculation is not None
        assert 0 <= got.speculation["accepted_tokens"] <= got.speculation["drafted_tokens"]
        accepted += got.speculation["accepted_tokens"]
        streamed = "".join(stories_q8.stream(prompt, 60, temperature=0, speculate="ngram"))
        assert streamed == want.text
    assert accepted > 20


def test_session_speculation_needs_all_logits(stories_q8):
    with stories_q8.session(128, all_logits=True) as s:
        want = stories_q8.generate_result(COPY, 40, temperature=0)
        got = s.generate_result(COPY, 40, temperature=0, speculate="ngram:4")
        assert got.tokens == want.tokens
    with stories_q8.session(128) as s:
        with pytest.raises(staticlm.ConfigError, match="needs a session created with all_logits"):
            s.generate(COPY, 10, speculate="ngram:4")


def test_batch_is_the_same_with_speculation(stories_q8):
    requests = [{"id": f"r{i}", "prompt": p, "n_predict": 50, "temperature": 0, "logprobs": 2}
                for i, p in enumerate(PROMPTS * 2)]
    want = stories_q8.batch(requests, slots=4)
    for slots in (1, 4):
        got = stories_q8.batch(requests, slots=slots, speculate="ngram:5")
        assert [r["text"] for r in got] == [r["text"] for r in want]
        assert [r["tokens"] for r in got] == [r["tokens"] for r in want]
        assert [r["logprobs"] for r in got] == [r["logprobs"] for r in want]
        assert [r["finish_reason"] for r in got] == [r["finish_reason"] for r in want]


@pytest.mark.parametrize("bad", ["ngram:0", "ngram:65", "lookup", "ngram:x"])
def test_bad_speculate_values_are_refused(stories_q8, bad):
    with pytest.raises(ValueError, match=f"got '{bad}'"):
        stories_q8.generate("Lily", 5, speculate=bad)
    with pytest.raises(ValueError, match=f"got '{bad}'"):
        stories_q8.batch([{"id": "a", "prompt": "Lily"}], speculate=bad)
    with pytest.raises(TypeError, match="speculate must be a str"):
        stories_q8.generate("Lily", 5, speculate=3)
