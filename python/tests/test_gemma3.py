"""The real Gemma 3 270M GGUF (tools/get_model.sh): the issue's acceptance
command prints what `staticlm generate` prints, a NumPy argmax loop over
Session logits is greedy generation, and Ctrl-C stops a long prefill."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from conftest import THREADS
from staticlm import _lib


def test_python_one_liner_prints_the_cli_text(gemma_path, cli):
    cli_out = subprocess.run([cli, "generate", "-m", str(gemma_path), "-p", "The ocean is", "-n", "16", "--temp",
                              "0"], capture_output=True, text=True, timeout=600)
    assert cli_out.returncode == 0, cli_out.stderr
    code = (f"import staticlm; m = staticlm.Model({str(gemma_path)!r}); "
            "print(m.generate('The ocean is', n_predict=16, temperature=0))")
    py_out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert py_out.returncode == 0, py_out.stderr
    assert len(cli_out.stdout) > 16
    assert py_out.stdout == cli_out.stdout + "\n"  # print() adds the newline


def test_argmax_over_session_logits_is_greedy_generation(gemma):
    prompt = gemma.tokenize("The ocean is")
    want = gemma.generate_result(prompt, n_predict=8, temperature=0)
    with gemma.session(64, threads=THREADS) as s:
        logits = s.prefill(prompt)
        assert logits.shape == (gemma.vocab,) == (262144,)
        ids = []
        for _ in range(8):
            ids.append(int(np.argmax(logits)))
            if gemma.is_eos(ids[-1]):
                break
            logits = s.decode(ids[-1])
    assert ids == want.tokens
    assert gemma.detokenize(ids) == want.text


CHILD = r"""
import sys, time, staticlm
m = staticlm.Model(sys.argv[1], threads=2)
s = m.session(1024)
words = m.tokenize("The ocean is deep and", add_special=False)
ids = [m.bos] + [words[i % len(words)] for i in range(1000)]
print("ready", flush=True)
t0 = time.perf_counter()
try:
    while True:  # prefills again until interrupted: the signal cannot come after the last one
        s.prefill(ids)
        t0 = time.perf_counter()
except KeyboardInterrupt:
    print("interrupted", time.perf_counter() - t0, s.pos, flush=True)
    pos = s.pos
    s.append(ids[pos:pos + 8] if pos else ids[:8])  # the session goes on
    print("continued", s.pos, flush=True)
"""


@pytest.mark.skipif(not _lib.has_state, reason="the library lacks slm_session_set_abort")
def test_ctrl_c_stops_a_long_prefill_within_a_layer(gemma_path):
    p = subprocess.Popen([sys.executable, "-c", CHILD, str(gemma_path)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "ready"
        time.sleep(0.5)  # inside a 1001-token prefill (about a second each on 2 cores)
        sent = time.perf_counter()
        p.send_signal(signal.SIGINT)
        line = p.stdout.readline().split()
        delay = time.perf_counter() - sent
        rest = p.stdout.readline().split()
        p.wait(timeout=120)
    finally:
        p.kill()
    assert line and line[0] == "interrupted", (line, p.stderr.read())
    assert int(line[2]) < 1001
    assert rest and rest[0] == "continued"
    print(f"SIGINT to KeyboardInterrupt: {delay * 1e3:.0f} ms")
    assert delay < 2.0  # one layer is milliseconds; the margin is for a loaded machine
