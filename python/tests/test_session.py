"""Session on stories260K: logits against llama2.c's reference, greedy text
against llama2.c's expected output, the split invariant, the no-copy logits
view, rewind/reset, and errors that leave the session as it was."""

from __future__ import annotations

import numpy as np
import pytest

import staticlm
from conftest import THREADS, peir


def reference_session(model: staticlm.Model) -> staticlm.Session:
    # The C test's settings (tests/runtime/test_stories.cpp): f32 KV, small buckets.
    return model.session(64, kv="f32", prefill_buckets=[8], append_buckets=[4], threads=THREADS)


def test_prefill_logits_match_llama2c_reference(stories, stories_reference):
    ref = stories_reference["prompt_once_upon_a_time"]
    ids = ref["ids_with_bos"]
    want = np.array(ref["last_position_logits_f64"], dtype=np.float64)
    assert stories.tokenize("Once upon a time") == ids
    with reference_session(stories) as s:
        logits = s.prefill(ids)
        assert logits.shape == (stories.vocab,) == want.shape
        assert logits.dtype == np.float32
        # f32 weights: the C test's budget (PEIR <= 1e-4, docs/RUNTIME.md's metric) and the same top-1.
        assert peir(logits, want) <= 1e-4
        assert int(np.argmax(logits)) == int(np.argmax(want))
        assert s.pos == len(ids)


def test_greedy_from_bos_reproduces_llama2c_text(stories, stories_reference, stories_expected_text):
    expected_ids = stories_reference["greedy_from_bos"]["token_ids"]
    with stories.session(512, threads=THREADS) as s:
        g = s.generate_result([stories.bos], n_predict=200, temperature=0, ignore_eos=True)
    assert g.tokens == expected_ids[1:]
    assert g.text == stories_expected_text
    assert g.stop_reason == staticlm.StopReason.MAX_TOKENS
    assert g.prompt_tokens == 1


def test_manual_decode_loop_equals_generate(stories):
    # argmax over the logits views, token by token, is greedy generation.
    prompt = stories.tokenize("Once upon a time")
    with reference_session(stories) as s:
        logits = s.prefill(prompt)
        ids = []
        for _ in range(12):
            ids.append(int(np.argmax(logits)))
            logits = s.decode(ids[-1])
        want = stories.generate_result(prompt, n_predict=12, temperature=0).tokens
    assert ids == want


def test_split_prefill_append_decode_is_invariant(stories):
    ids = stories.tokenize("Once upon a time there was a big dog who liked to run")
    with reference_session(stories) as whole, reference_session(stories) as split:
        full = whole.prefill(ids, copy=True)
        split.prefill(ids[:3])
        split.append(ids[3:-1])
        last = split.decode(ids[-1])
        assert split.pos == whole.pos == len(ids)
        assert peir(last, full) <= 1e-5  # docs/RUNTIME.md: the invariant
        assert int(np.argmax(last)) == int(np.argmax(full))


def test_logits_are_a_read_only_view_of_the_library_buffer(stories):
    ids = stories.tokenize("Once upon a time")
    with reference_session(stories) as s:
        first = s.prefill(ids)
        kept = first.copy()
        mine = s.decode(ids[-1], copy=True)
        second = s.decode(432)
        # Same buffer, no copy: the earlier view now shows the newer logits.
        assert first.ctypes.data == second.ctypes.data
        assert np.shares_memory(first, second)
        assert not first.flags.writeable
        with pytest.raises(ValueError):
            first[0] = 1.0
        assert np.array_equal(first, second)
        assert not np.array_equal(first, kept)
        # copy=True is the caller's own array.
        assert mine.flags.writeable and not np.shares_memory(mine, second)


def test_a_view_outlives_the_closed_session(stories):
    ids = stories.tokenize("Once upon a time")
    with reference_session(stories) as s:
        logits = s.prefill(ids)
        want = logits.copy()
    del s
    # The session is closed; its memory stays until the view is gone, so new
    # sessions (which would reuse freed memory) do not change what it shows.
    others = [reference_session(stories) for _ in range(4)]
    for o in others:
        o.prefill([1, 261, 262, 263])
    assert np.array_equal(logits, want)


def test_rewind_then_decode_gives_the_same_logits(stories):
    ids = stories.tokenize("Once upon a time there was")
    with reference_session(stories) as s:
        s.prefill(ids)
        assert s.pos == len(ids)
        s.rewind(2)
        assert s.pos == len(ids) - 2
        again = s.decode(ids[-2])
        with reference_session(stories) as t:
            want = t.prefill(ids[:-1])
            assert peir(again, want) <= 1e-5
        s.reset()
        assert s.pos == 0
        assert s.max_seq == 64


def test_failed_calls_raise_with_status_and_leave_the_session(stories):
    ids = stories.tokenize("Once upon a time")
    with stories.session(8, threads=THREADS) as s:
        s.prefill(ids)
        with pytest.raises(staticlm.InputError) as e:
            s.decode(stories.vocab)  # one past the vocabulary
        assert e.value.status == staticlm.Status.INPUT and e.value.status_name == "input"
        assert str(stories.vocab) in e.value.message
        with pytest.raises(staticlm.CapacityError) as e:
            s.append([300] * 4)  # 5 + 4 > max_seq 8
        assert e.value.status_name == "capacity"
        with pytest.raises(staticlm.InputError):
            s.rewind(6)
        with pytest.raises(staticlm.InputError, match="empty"):
            s.append([])
        assert s.pos == len(ids)  # every failure left the cache as it was
        s.decode(432)
        assert s.pos == len(ids) + 1


def test_bad_arguments_are_python_errors(stories):
    with pytest.raises(ValueError, match="kv"):
        stories.session(kv="q4")
    with pytest.raises(staticlm.ConfigError, match="max_seq"):
        stories.session(-1)
    with pytest.raises(TypeError):
        stories.session(8).prefill("Once")  # text must be tokenized first
    with pytest.raises(ValueError, match="int32"):
        stories.session(8).prefill([2**40])
    with pytest.raises(ValueError, match="seed"):
        stories.generate("Once", n_predict=1, seed=-1)
    with pytest.raises(staticlm.ConfigError, match="top_p"):
        stories.generate("Once", n_predict=1, top_p=1.5)


def test_closed_objects_refuse_calls(stories_dir):
    m = staticlm.Model(stories_dir, weights="f32", threads=THREADS)
    s = m.session(16)
    m.close()
    s.prefill([1])  # the session keeps the model's weights alive
    with pytest.raises(ValueError, match="closed"):
        m.tokenize("x")
    s.close()
    with pytest.raises(ValueError, match="closed"):
        s.decode(1)
