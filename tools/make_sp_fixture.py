#!/usr/bin/env python3
"""Trains the small SentencePiece model the robustness tests and the fuzz corpus use
(tests/fixtures/sp/tiny_bpe.model): BPE, byte fallback, vocab 512, trained on the
project's own text fixtures, so no shared data file is copied into the repository.

  /opt/slm-py/bin/python tools/make_sp_fixture.py
Pinned: sentencepiece==0.2.3 (asserted).
"""
import glob
import io
import os

import sentencepiece as spm

assert spm.__version__ == "0.2.3", spm.__version__
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
lines = []
for pattern in ["tests/fixtures/perplexity/*.txt", "README.md", "tests/fixtures/README.md"]:
    for path in sorted(glob.glob(os.path.join(root, pattern))):
        with open(path, encoding="utf-8") as f:
            lines += [l.strip() for l in f if l.strip()]
model = io.BytesIO()
spm.SentencePieceTrainer.train(
    sentence_iterator=iter(lines), model_writer=model, model_type="bpe", vocab_size=512,
    byte_fallback=True, character_coverage=1.0, unk_id=0, bos_id=1, eos_id=2, pad_id=-1,
    normalization_rule_name="identity", num_threads=1, hard_vocab_limit=True, minloglevel=2)
out = os.path.join(root, "tests/fixtures/sp/tiny_bpe.model")
with open(out, "wb") as f:
    f.write(model.getvalue())
print(out, len(model.getvalue()), "bytes")
