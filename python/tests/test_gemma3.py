"""The real Gemma 3 270M GGUF (tools/get_model.sh): the issue's acceptance
command prints what `staticlm generate` prints, and a NumPy argmax loop over
Session logits is greedy generation."""

from __future__ import annotations

import subprocess
import sys

import numpy as np

from conftest import THREADS


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

