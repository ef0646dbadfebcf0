"""Generation on stories260K: texts equal the staticlm CLI's (greedy, sampled,
stop strings, chat), streaming equals the one-call text, callbacks' exceptions
and stops, busy sessions, and sessions in parallel threads."""

from __future__ import annotations

import subprocess
import threading

import pytest

import staticlm
from conftest import THREADS


def run_cli(cli: str, *args: str, stdin: str | None = None) -> str:
    r = subprocess.run([cli, *args], input=stdin, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_greedy_text_equals_the_cli(stories_q8, stories_dir, cli):
    want = run_cli(cli, "generate", "-m", str(stories_dir), "-p", "Once upon a time", "-n", "40", "--temp", "0",
                   "-t", str(THREADS))
    assert stories_q8.generate("Once upon a time", n_predict=40, temperature=0) == want


def test_sampled_text_equals_the_cli_with_the_same_seed(stories_q8, stories_dir, cli):
    want = run_cli(cli, "generate", "-m", str(stories_dir), "-p", "Once upon a time", "-n", "40", "--seed", "7",
                   "--top-k", "20", "-t", str(THREADS))
    got = stories_q8.generate("Once upon a time", n_predict=40, seed=7, top_k=20)
    assert got == want
    assert got != stories_q8.generate("Once upon a time", n_predict=40, seed=8, top_k=20)


def test_stop_string_cuts_the_text(stories, stories_expected_text):
    # The greedy text from BOS is llama2.c's; a stop string ends it just before.
    stop = " named"
    g = stories.generate_result("", n_predict=200, temperature=0, stop=[stop], ignore_eos=True)
    assert g.text == stories_expected_text[:stories_expected_text.index(stop)]
    assert g.stop_reason == staticlm.StopReason.STRING


def test_stream_pieces_join_to_the_generated_text(stories):
    for opts in ({"temperature": 0}, {"seed": 3}):
        want = stories.generate("Once upon a time", n_predict=30, **opts)
        stream = stories.stream("Once upon a time", n_predict=30, **opts)
        pieces = list(stream)
        assert len(pieces) > 5
        assert "".join(pieces) == want
        assert stream.result is not None and stream.result.text == want
        assert stream.result.stop_reason == staticlm.StopReason.MAX_TOKENS


def test_closing_a_stream_stops_generation_and_frees_the_session(stories):
    with stories.session(128, threads=THREADS) as s:
        stream = s.stream("Once upon a time", n_predict=100, temperature=0)
        first = next(stream)
        stream.close()
        assert first
        assert stream.result.stop_reason == staticlm.StopReason.ABORTED
        assert len(stream.result.tokens) < 100
        assert list(stream) == []
        # The session is free again and continues from what the cache holds.
        pos = s.pos
        s.decode(432)
        assert s.pos == pos + 1


def test_stream_errors_are_raised_by_next(stories):
    long_prompt = " ".join(["dog"] * 40)
    with stories.session(16, threads=THREADS) as s:
        stream = s.stream(long_prompt, n_predict=4)
        with pytest.raises(staticlm.CapacityError):
            next(stream)
        assert s.pos == 0
    with pytest.raises(TypeError):
        stories.stream("x", on_text=print)


def test_callback_exception_stops_generation_and_is_raised(stories):
    seen = []

    def on_text(token: int, text: str) -> None:
        seen.append(token)
        raise KeyError("from the callback")
    with stories.session(64, threads=THREADS) as s:
        with pytest.raises(KeyError, match="from the callback"):
            s.generate("Once upon a time", n_predict=20, temperature=0, on_text=on_text)
        assert len(seen) == 1  # stopped at the first token
        assert s.pos == 5      # the prompt; the sampled token was never decoded


def test_callback_returning_false_aborts(stories):
    pieces = []

    def on_text(token: int, text: str) -> bool:
        pieces.append(text)
        return len(pieces) < 3
    g = stories.generate_result("Once upon a time", n_predict=20, temperature=0, on_text=on_text)
    assert g.stop_reason == staticlm.StopReason.ABORTED
    assert len(g.tokens) == 3
    assert g.text == "".join(pieces)


def test_a_session_in_use_is_busy(stories):
    with stories.session(64, threads=THREADS) as s:
        with pytest.raises(staticlm.BusyError) as e:
            s.generate("Once upon a time", n_predict=5, on_text=lambda t, p: s.decode(1))
        assert e.value.status_name == "busy"
        s.decode(1)  # free again


def test_sessions_in_parallel_threads_share_one_model(stories):
    prompts = ["Once upon a time", "The cat", "Lily and Ben", "One day"]
    want = [stories.generate(p, n_predict=24, temperature=0) for p in prompts]
    got: list[str | None] = [None] * len(prompts)
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            with stories.session(64, threads=1) as s:
                got[i] = s.generate(prompts[i], n_predict=24, temperature=0)
        except BaseException as e:  # noqa: BLE001
            errors.append(e)
    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(prompts))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert got == want


def test_session_continues_with_text_without_bos(stories):
    with stories.session(64, threads=THREADS) as s:
        s.prefill(stories.tokenize("Once upon a time"))
        g = s.generate_result(", there was", n_predict=5, temperature=0)
        assert g.prompt_tokens == len(stories.tokenize(", there was", add_special=False))
    ids = stories.tokenize("Once upon a time") + stories.tokenize(", there was", add_special=False)
    assert g.text == stories.generate(ids, n_predict=5, temperature=0)


def test_chat_replies_equal_the_cli_chat(stories_q8, stories_dir, cli):
    turns = ["Hello there", "Tell me more"]
    out = run_cli(cli, "chat", "-m", str(stories_dir), "-n", "12", "--temp", "0", "--system", "Be nice", "-t",
                  str(THREADS), stdin="".join(t + "\n" for t in turns))
    chat = stories_q8.start_chat("Be nice")
    replies = [chat.reply(t, n_predict=12, temperature=0) for t in turns]
    assert out == "".join(r + "\n" for r in replies)
    assert chat.session.pos > 0
    # A streamed reply of a fresh chat is the same text.
    chat2 = stories_q8.start_chat("Be nice")
    assert "".join(chat2.stream(turns[0], n_predict=12, temperature=0)) == replies[0]


def test_one_shot_chat_equals_the_cli_chat_first_reply(stories_q8, stories_dir, cli):
    out = run_cli(cli, "chat", "-m", str(stories_dir), "-n", "16", "--temp", "0", "-t", str(THREADS),
                  stdin="Hello there\n")
    assert stories_q8.chat("Hello there", n_predict=16, temperature=0) + "\n" == out
    msgs = [{"role": "user", "content": "Hello there"}]
    assert stories_q8.chat(msgs, n_predict=16, temperature=0) + "\n" == out
    out = run_cli(cli, "chat", "-m", str(stories_dir), "-n", "16", "--temp", "0", "-t", str(THREADS), "--system",
                  "Be nice", stdin="Hello there\n")
    assert stories_q8.chat("Hello there", n_predict=16, temperature=0, system="Be nice") + "\n" == out
