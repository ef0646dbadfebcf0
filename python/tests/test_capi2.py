"""C API 2 through Python, on stories260K: batch() and chat() with a
conversation against `staticlm batch`, log-probabilities against `staticlm
generate --logprobs`, the logits callback against Session logits, score()
against a NumPy log-softmax over Session logits."""

from __future__ import annotations

import json
import re
import subprocess

import numpy as np
import pytest

import staticlm
from conftest import THREADS

pytestmark = pytest.mark.skipif(staticlm.API_VERSION < 2, reason="the library has C API 1 (no batch/score/state)")

REQUESTS = [
    {"id": "a", "prompt": "Once upon a time", "n_predict": 20, "temperature": 0},
    {"id": 7, "prompt": "The cat", "n_predict": 20, "logprobs": 2, "meta": {"k": [1, 2]}},
    {"id": "chat", "messages": [{"role": "system", "content": "Be nice"}, {"role": "user", "content": "Hello"}],
     "n_predict": 12},
    {"id": "turns", "messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello."},
                                 {"role": "user", "content": "Tell me a story"}], "n_predict": 16, "temperature": 0},
    {"id": "mc", "prompt": "Lily was", "choices": [" happy", " sad", " a"]},
    {"id": "sc", "prompt": "Once upon a time, there ", "score": ["was", "is a"]},
    {"id": "st", "prompt": "Once upon a time", "n_predict": 40, "stop": [" named", "zzz"], "seed": 5},
    {"id": "empty", "prompt": "", "n_predict": 8, "top_k": 5},
    {"id": "bad", "prompt": "x", "top_p": 2},
    {"id": "unknown", "prompt": "x", "colour": "red"},
    {"id": "both", "prompt": "x", "messages": [{"role": "user", "content": "y"}]},
    {"id": "scoregen", "prompt": "x", "score": ["y"], "n_predict": 3},
    {"id": "long", "prompt": " ".join(["dog"] * 80), "n_predict": 4},
]


def cli_batch(cli: str, model_dir, tmp_path, requests: list[dict], *args: str) -> dict[str, dict]:
    src, dst = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in requests))
    r = subprocess.run([cli, "batch", "-m", str(model_dir), "--input", str(src), "--output", str(dst), "--quiet",
                        "-t", str(THREADS), *args], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    out = {}
    for line in dst.read_text().splitlines():
        j = json.loads(line)
        out[str(j["id"])] = j
    return out


def comparable(result: dict) -> dict:
    """A result without what differs by design: timing, the line number, the marker,
    and the "line N:" / "request I:" prefix of error messages."""
    r = {k: v for k, v in result.items() if k not in ("timing", "line", "staticlm_batch")}
    if "error" in r:
        message = re.sub(r"^(line|request) \d+: ", "", r["error"]["message"])
        r["error"] = {"kind": r["error"]["kind"], "message": message}
    return r


def as_float32(x):
    if isinstance(x, float):
        return float(np.float32(x))
    if isinstance(x, list):
        return [as_float32(v) for v in x]
    if isinstance(x, dict):
        return {k: as_float32(v) for k, v in x.items()}
    return x


def test_batch_results_equal_the_cli(stories_q8, stories_dir, cli, tmp_path):
    want = cli_batch(cli, stories_dir, tmp_path, REQUESTS, "--max-seq", "64")
    got = stories_q8.batch(REQUESTS, slots=4, max_seq=64, threads=THREADS)
    assert [r["id"] for r in got] == [r["id"] for r in REQUESTS]  # input order
    for r in got:
        w = want[str(r["id"])]
        g, w = comparable(r), comparable(w)
        # Token log-probabilities are float32 (the CLI prints the shortest text of the float).
        if "logprobs" in w:
            g["logprobs"], w["logprobs"] = as_float32(g["logprobs"]), as_float32(w["logprobs"])
        assert g == w, r["id"]
    kinds = {r["id"]: r.get("error", {}).get("kind") for r in got}
    assert kinds["bad"] == kinds["unknown"] == kinds["both"] == kinds["scoregen"] == "input"
    assert kinds["long"] == "capacity"
    assert got[1]["meta"] == {"k": [1, 2]} and len(got[1]["logprobs"]) == 20


def test_chat_with_a_conversation_is_the_batch_request(stories_q8, stories_dir, cli, tmp_path):
    turns = next(r for r in REQUESTS if r["id"] == "turns")
    want = cli_batch(cli, stories_dir, tmp_path, [turns])["turns"]
    g = stories_q8.chat_result(turns["messages"], n_predict=16, temperature=0)
    assert g.text == want["text"] and g.tokens == want["tokens"]
    with pytest.raises(TypeError, match="on_text"):
        stories_q8.chat(turns["messages"], on_text=print)


def test_batch_does_not_depend_on_slots_and_refuses_duplicate_ids(stories_q8):
    reqs = [{"id": i, "prompt": p, "n_predict": 16} for i, p in enumerate(["Once", "The dog", "Lily", "A big"])]
    one = stories_q8.batch(reqs, slots=1, threads=THREADS)
    four = stories_q8.batch(reqs, slots=4, threads=THREADS)
    assert [r["text"] for r in one] == [r["text"] for r in four]
    assert [r["seed"] for r in one] == [r["seed"] for r in four]
    with pytest.raises(ValueError, match="duplicate id"):
        stories_q8.batch([{"id": 1, "prompt": "a"}, {"id": "1", "prompt": "b"}])


def test_generate_logprobs_equal_the_cli(stories_q8, stories_dir, cli):
    r = subprocess.run([cli, "generate", "-m", str(stories_dir), "-p", "Once upon a time", "-n", "12", "--temp",
                        "0", "--logprobs", "3", "-t", str(THREADS)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    want = [json.loads(line) for line in r.stdout.splitlines()]
    g = stories_q8.generate_result("Once upon a time", n_predict=12, temperature=0, logprobs=3)
    assert g.tokens == [w["token"] for w in want]
    assert g.text == "".join(w["text"] for w in want)
    for mine, theirs in zip(g.logprobs, want):
        theirs = {k: v for k, v in theirs.items() if k != "text"}
        assert as_float32(mine) == as_float32(theirs)


def test_on_logits_sees_the_sampled_from_logits(stories):
    prompt = stories.tokenize("Once upon a time")
    seen = []
    g = stories.generate_result(prompt, n_predict=6, temperature=0, max_seq=64,
                                on_logits=lambda t, logits: seen.append((t, logits.copy())))
    assert [t for t, _ in seen] == g.tokens
    assert all(int(np.argmax(lg)) == t for t, lg in seen)
    with stories.session(64) as s:  # the same settings as generate's session
        assert np.array_equal(seen[0][1], s.prefill(prompt))
        assert np.array_equal(seen[1][1], s.decode(g.tokens[0]))


def log_softmax(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    m = x.max()
    return x - m - np.log(np.exp(x - m).sum())


def test_score_equals_numpy_log_softmax_over_session_logits(stories):
    prompt = stories.tokenize("Once upon a time")
    conts = [[432, 383, 286], stories.tokenize(" a dog", add_special=False)]
    with stories.session(64, kv="f32", all_logits=True) as s:
        scores = s.score(prompt, conts)
        assert s.pos == len(prompt)  # left holding the prompt
    for cont, sc in zip(conts, scores):
        with stories.session(64, kv="f32") as t:
            logits = t.prefill(prompt, copy=True)
            total, greedy = 0.0, True
            for tok in cont:
                total += log_softmax(logits)[tok]
                greedy = greedy and int(np.argmax(logits)) == tok
                logits = t.decode(tok, copy=True)
        assert sc.tokens == len(cont)
        assert sc.logprob == pytest.approx(total, abs=1e-4)  # the split invariant's budget
        assert sc.greedy == greedy
    assert scores[0].greedy  # ", there was" is the greedy continuation
    text = stories.score("Once upon a time", [", there was", " a dog"])
    assert [c.text for c in text] == [", there was", " a dog"]
    assert text[0].logprob > text[1].logprob
    with pytest.raises(staticlm.StaticlmError):
        with stories.session(64) as s:
            s.score(prompt, conts)  # no all_logits
