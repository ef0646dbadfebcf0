"""C API 3 through Python, on stories260K: json_schema / grammar in generate()
and batch() — outputs validated with the jsonschema package (skipped when it is
absent) and by hand, batch results equal to `staticlm batch`'s for the same
lines, "length" with incomplete JSON, bad schemas as the command reports them —
and batch(prefix_pool=...) giving the results it gives without the pool."""

from __future__ import annotations

import json

import pytest

import staticlm
from conftest import THREADS
from test_capi2 import cli_batch, comparable

pytestmark = pytest.mark.skipif(staticlm.API_VERSION < 3, reason="the library has C API < 3 (no constraints)")

LABEL = {"type": "object", "properties": {"label": {"enum": ["happy", "sad", "scared"]},
                                          "ok": {"type": "boolean"}},
         "required": ["label", "ok"]}
PERSON = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 12},
                                           "age": {"type": "integer"},
                                           "pets": {"type": "array", "items": {"enum": ["cat", "dog"]},
                                                    "maxItems": 3}},
          "required": ["name", "age"]}


try:
    import jsonschema
except ImportError:  # the hand-written checks below still run
    jsonschema = None


def validate(value: object, schema: dict) -> None:
    """Validates with the jsonschema package, a validator that is not ours (when installed)."""
    if jsonschema is not None:
        jsonschema.validate(value, schema)


def label_outputs() -> set[str]:
    """LABEL's outputs written out by hand: compact, members in the schema's order."""
    return {f'{{"label":"{l}","ok":{o}}}' for l in ("happy", "sad", "scared") for o in ("true", "false")}


def test_generate_json_schema(stories):
    for prompt in ("Once upon a time", "Lily was sad because"):
        g = stories.generate_result(prompt, 64, temperature=0, json_schema=LABEL)
        assert g.text in label_outputs()
        assert g.complete is True and g.stop_reason == staticlm.StopReason.EOS
        validate(json.loads(g.text), LABEL)
    # Sampled, with a schema given as text and a compiled Constraint reused.
    with stories.constraint(json_schema=json.dumps(PERSON)) as c:
        for seed in range(4):
            g = stories.generate_result("Tom had a", 96, temperature=1.0, seed=seed, constraint=c)
            if g.complete:
                validate(json.loads(g.text), PERSON)
            else:
                assert g.stop_reason == staticlm.StopReason.MAX_TOKENS
    with pytest.raises(ValueError, match="closed"):
        stories.generate_result("x", 4, constraint=c)
    # Unconstrained generations say nothing of completeness.
    assert stories.generate_result("x", 2, temperature=0).complete is None


def test_incomplete_json_and_grammar(stories):
    g = stories.generate_result("Once upon a time", 3, temperature=0, json_schema=LABEL)
    assert g.stop_reason == staticlm.StopReason.MAX_TOKENS and g.complete is False
    assert g.text.startswith("{") and len(g.tokens) == 3
    with pytest.raises(json.JSONDecodeError):
        json.loads(g.text)
    g = stories.generate_result("Did the cat run?", 8, temperature=0, grammar='root ::= ("yes" | "no") "!"\n')
    assert g.text in ("yes!", "no!") and g.complete is True
    # The stream gives the same text.
    assert "".join(stories.stream("Did the cat run?", 8, temperature=0, grammar='root ::= ("yes" | "no") "!"\n')) \
        == g.text


def test_bad_constraints(stories):
    with pytest.raises(staticlm.UnsupportedError, match=r"'minimum' at \$\.properties\.age"):
        stories.generate("x", 4, json_schema={"type": "object",
                                              "properties": {"age": {"type": "integer", "minimum": 0}}})
    with pytest.raises(staticlm.FormatError, match="json_schema"):
        stories.generate("x", 4, json_schema='{"type":')
    with pytest.raises(staticlm.UnsupportedError, match="greeting"):
        stories.generate("x", 4, grammar="root ::= greeting\n")
    with pytest.raises(TypeError, match="not grammar and json_schema"):
        stories.generate("x", 4, json_schema=LABEL, grammar="root ::= \"a\"")
    with pytest.raises(TypeError, match="exactly one"):
        stories.constraint()


def test_batch_json_schema_equals_the_cli(stories_q8, stories_dir, cli, tmp_path):
    requests = [{"id": i, "prompt": p, "json_schema": s, "n_predict": n, "temperature": t}
                for i, (p, s, n, t) in enumerate([
                    ("Once upon a time", LABEL, 64, 0), ("The dog", LABEL, 64, 0.8), ("Lily", PERSON, 80, 0.9),
                    ("Tom", PERSON, 80, 1.0), ("Once upon a time", LABEL, 4, 0)])]
    requests += [{"id": "g", "prompt": "Did it rain?", "grammar": 'root ::= "yes" | "no"', "temperature": 0},
                 {"id": "bad", "prompt": "x", "json_schema": {"type": "string", "pattern": "a+"}},
                 {"id": "both", "prompt": "x", "json_schema": LABEL, "grammar": "root ::= \"a\""},
                 {"id": "notobj", "prompt": "x", "json_schema": [1]},
                 {"id": "plain", "prompt": "The cat", "n_predict": 8, "temperature": 0}]
    want = cli_batch(cli, stories_dir, tmp_path, requests, "--max-seq", "128")
    got = stories_q8.batch(requests, slots=3, max_seq=128, threads=THREADS)
    for r in got:
        assert comparable(r) == comparable(want[str(r["id"])]), r["id"]
    by_id = {str(r["id"]): r for r in got}
    for i in range(4):
        r = by_id[str(i)]
        if r["complete"]:
            validate(json.loads(r["text"]), requests[i]["json_schema"])
    assert by_id["0"]["text"] in label_outputs() and by_id["0"]["complete"] is True
    assert by_id["4"]["finish_reason"] == "length" and by_id["4"]["complete"] is False
    assert by_id["g"]["text"] in ("yes", "no") and by_id["g"]["complete"] is True
    assert "complete" not in by_id["plain"]
    assert by_id["bad"]["error"]["kind"] == "unsupported" and "'pattern'" in by_id["bad"]["error"]["message"]


def test_batch_prefix_pool_changes_nothing(stories, tmp_path):
    shared = ("Once upon a time, there was a little girl named Lily. She loved to play outside in the sunshine. "
              "One day, she saw a big tree in the park. ")
    endings = ["She", "The tree", "Lily wanted", "A bird", "Her mom", "They", "The sun", "One"]
    requests = [{"id": i, "prompt": shared + e, "n_predict": 16, "temperature": 0.9 if i % 2 else 0, "logprobs": 2}
                for i, e in enumerate(endings)]
    requests += [{"id": "js", "prompt": shared + "Lily felt", "json_schema": LABEL, "temperature": 0}]
    off = stories.batch(requests, slots=3, max_seq=128, threads=1)
    for pool in (-1, 40):
        on = stories.batch(requests, slots=3, max_seq=128, threads=1, prefix_pool=pool, prefix_min=16)
        for a, b in zip(off, on):
            assert a["tokens"] == b["tokens"] and a.get("logprobs") == b.get("logprobs"), (pool, a["id"])
            assert a["digest"] == b["digest"]
    with pytest.raises(ValueError, match="prefix_min"):
        stories.batch(requests, prefix_pool=-1, prefix_min=0)


ANY = {"type": "object", "properties": {"id": {"type": "integer"}, "data": {"description": "any value"}},
       "required": ["id", "data"]}


def depth(v: object) -> int:
    """Containers nested in v (0 for a scalar)."""
    if isinstance(v, list):
        return 1 + max((depth(x) for x in v), default=0)
    if isinstance(v, dict):
        return 1 + max((depth(x) for x in v.values()), default=0)
    return 0


def test_any_value_schemas(stories):
    """{} and a property without type take any JSON value (containers nested at most 3 deep in it)."""
    seen = set()
    with stories.constraint(json_schema=ANY) as c, stories.constraint(json_schema={}) as anything:
        for seed in range(12):
            g = stories.generate_result("Once upon a time", 80, temperature=1.2, seed=seed, constraint=c)
            if not g.complete:
                assert g.stop_reason == staticlm.StopReason.MAX_TOKENS
                continue
            v = json.loads(g.text)
            validate(v, ANY)
            assert json.dumps(v, separators=(",", ":"), ensure_ascii=False) == g.text or "\\" in g.text
            assert depth(v["data"]) <= 3
            seen.add(type(v["data"]).__name__)
            g = stories.generate_result("The dog", 40, temperature=1.2, seed=seed, constraint=anything)
            if g.complete:
                v = json.loads(g.text)
                validate(v, {})
                assert depth(v) <= 3
    assert seen, "no complete output in 12 sampled generations"
