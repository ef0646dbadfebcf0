"""Model on stories260K: loading errors, tokens, templates, sampler and
detokenizer, and the package's own checks."""

from __future__ import annotations

import numpy as np
import pytest

import staticlm
from conftest import THREADS


def test_package_facts():
    assert staticlm.API_VERSION >= 1
    assert staticlm.__version__.count(".") == 2
    assert staticlm.max_threads() >= 4
    assert "q8" in staticlm.weights_names() and "native" in staticlm.weights_names()
    assert staticlm.library_path().name == "libstaticlm.so.1"


def test_missing_model_is_an_io_error(tmp_path):
    missing = tmp_path / "nothing-here"
    with pytest.raises(staticlm.IoError) as e:
        staticlm.Model(missing)
    assert e.value.status == staticlm.Status.IO and e.value.status_name == "io"
    assert str(missing) in str(e.value)


def test_malformed_config_is_a_format_error(tmp_path):
    (tmp_path / "config.json").write_text("{ not json")
    (tmp_path / "model.safetensors").write_bytes(b"\0" * 16)
    with pytest.raises(staticlm.FormatError) as e:
        staticlm.Model(tmp_path)
    assert "config.json" in e.value.message


def test_unknown_weights_name_lists_the_known_ones(stories_dir):
    with pytest.raises(ValueError, match="q8"):
        staticlm.Model(stories_dir, weights="q3")
    with pytest.raises(staticlm.ConfigError, match="weights 99"):
        staticlm.Model(stories_dir, weights=99)


def test_model_facts(stories, stories_reference):
    cfg = stories_reference.get("config", {})
    assert stories.vocab == 512 == cfg.get("vocab_size", 512)
    assert stories.bos == 1 and stories.eos == 2 and stories.eos_ids == [2]
    assert stories.add_bos
    assert stories.is_eos(2) and not stories.is_eos(1)
    assert stories.context_length == 512
    assert stories.chat_format == "plain"


def test_tokenize_and_detokenize(stories):
    ids = stories.tokenize("Once upon a time")
    assert ids == [1, 403, 407, 261, 378]  # reference.json, from sentencepiece
    assert stories.tokenize("Once upon a time", add_special=False) == ids[1:]
    assert stories.detokenize(ids) == "Once upon a time"
    assert stories.token_to_piece(403) == "▁Once"
    with pytest.raises(ValueError, match="NUL"):
        stories.tokenize("a\0b")
    with pytest.raises(staticlm.InputError, match="UTF-8"):
        stories.tokenize("lone \udc80 surrogate")


def test_detokenizer_streams_the_whole_decode(stories, stories_reference):
    ids = stories_reference["greedy_from_bos"]["token_ids"][1:60]
    d = staticlm.Detokenizer(stories)
    pieces = "".join(d.push(t) for t in ids) + d.flush()
    assert pieces == stories.detokenize(ids)


def test_sampler_greedy_is_argmax_and_seeds_repeat(stories):
    with stories.session(16, threads=THREADS) as s:
        logits = s.prefill(stories.tokenize("Once upon a time"), copy=True)
    assert staticlm.Sampler(stories, temperature=0).sample(logits) == int(np.argmax(logits))
    a = [staticlm.Sampler(stories, temperature=1.0, top_k=0, top_p=1.0, min_p=0.0, seed=5).sample(logits)
         for _ in range(3)]
    assert len(set(a)) == 1
    with pytest.raises(ValueError, match="shape"):
        staticlm.Sampler(stories).sample(logits[:10])


def test_chat_template_renders_as_the_library_does(stories):
    # stories260K has no template: plain text.
    text = stories.apply_chat_template([{"role": "user", "content": "Hi"}])
    assert text == "Hi"
    with pytest.raises(staticlm.InputError, match="role"):
        stories.apply_chat_template([("wizard", "Hi")])
    with pytest.raises(TypeError):
        stories.apply_chat_template(["Hi"])


def test_progress_and_log_callbacks(stories_dir):
    seen: list[float] = []
    lines: list[tuple[int, str]] = []
    staticlm.Model(stories_dir, weights="f32", threads=THREADS, progress=seen.append,
                   log=lambda level, line: lines.append((level, line)))
    assert seen and seen[-1] == pytest.approx(1.0) and all(0.0 <= f <= 1.0 for f in seen)
    assert any(level == 2 and "loaded" in line for level, line in lines)


def test_progress_can_cancel_and_its_exception_propagates(stories_dir):
    with pytest.raises(staticlm.AbortedError):
        staticlm.Model(stories_dir, progress=lambda f: False)

    def boom(fraction: float) -> None:
        raise RuntimeError("from progress")
    with pytest.raises(RuntimeError, match="from progress"):
        staticlm.Model(stories_dir, progress=boom)
