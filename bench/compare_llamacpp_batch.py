#!/usr/bin/env python3
"""Batched decode, llama.cpp and staticlm side by side, in one run.

For each batch size B: B sequences of CTX prompt tokens each, then TG steps that
decode one token of every sequence together (llama.cpp: one llama_decode of a
B-token llama_batch, one seq_id per sequence, non-unified KV cells; staticlm:
`staticlm bench --batch`, one M = B matmul per weight). Reports aggregate tok/s
(B·TG / time) and the speed-up over B = 1 of each engine, and staticlm's prefill
of one PP-token sequence through Session and BatchSession ("prefill unchanged").
The GGUF twin is the one of bench/compare_llamacpp.py (same shapes, Q8_0/F16).

  /opt/slm-py/bin/python bench/compare_llamacpp_batch.py                   # llama-3.2-1b q8, B 1,4,16,32
  /opt/slm-py/bin/python bench/compare_llamacpp_batch.py --quick           # tiny-llama, seconds

The machine is shared: the engines alternate for --rounds rounds and the table
gives medians; staticlm also reports tokens per CPU-second.
"""
import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare_llamacpp as base  # noqa: E402


class LlamaCppBatch:
    """One GGUF in llama.cpp with a context of B sequences (low-level API)."""

    def __init__(self, path, vocab, threads, batch, ctx, tg):
        from llama_cpp import llama_cpp as C
        from llama_cpp import _logger
        _logger.set_verbose(False)  # llama.cpp's load and context logs off (errors stay)
        self.C = C
        C.llama_backend_init()
        mp = C.llama_model_default_params()
        self.model = C.llama_model_load_from_file(path.encode(), mp)
        if not self.model:
            raise SystemExit(f"llama.cpp could not load {path}")
        cp = C.llama_context_default_params()
        cp.n_seq_max = batch
        cp.n_ctx = batch * (ctx + tg + 16)
        cp.n_batch = max(ctx, batch)
        cp.n_ubatch = max(ctx, batch)
        cp.n_threads = threads
        cp.n_threads_batch = threads
        cp.kv_unified = False  # each sequence attends only to its own cells
        self.ctx = C.llama_init_from_model(self.model, cp)
        if not self.ctx:
            raise SystemExit("llama.cpp could not create the context")
        self.batch = C.llama_batch_init(max(ctx, batch), 0, batch)
        self.B, self.n_ctx, self.tg, self.vocab = batch, ctx, tg, vocab

    def _submit(self, rows):  # rows: (token, pos, seq, want_logits)
        b = self.batch
        for i, (tok, pos, seq, logits) in enumerate(rows):
            b.token[i] = tok
            b.pos[i] = pos
            b.n_seq_id[i] = 1
            b.seq_id[i][0] = seq
            b.logits[i] = 1 if logits else 0
        b.n_tokens = len(rows)
        if self.C.llama_decode(self.ctx, b) != 0:
            raise SystemExit("llama_decode failed")

    def _argmax(self, i):
        import numpy as np
        p = self.C.llama_get_logits_ith(self.ctx, i)
        return int(np.argmax(np.ctypeslib.as_array(p, shape=(self.vocab,))))

    def run(self):
        """Prefills B sequences, then times TG batched steps; returns aggregate tok/s."""
        C = self.C
        C.llama_memory_clear(C.llama_get_memory(self.ctx), True)
        nxt = []
        for s in range(self.B):
            toks = base.prompt_ids(self.n_ctx + 7919 * s, self.vocab)[-self.n_ctx:]
            self._submit([(t, p, s, p == self.n_ctx - 1) for p, t in enumerate(toks)])
            nxt.append(self._argmax(self.n_ctx - 1))
        t0 = time.perf_counter()
        for i in range(self.tg):
            self._submit([(nxt[s], self.n_ctx + i, s, True) for s in range(self.B)])
            nxt = [self._argmax(s) for s in range(self.B)]
        C.llama_synchronize(self.ctx)
        return self.B * self.tg / (time.perf_counter() - t0)

    def close(self):
        C = self.C
        C.llama_batch_free(self.batch)
        C.llama_free(self.ctx)
        C.llama_model_free(self.model)


def bench_staticlm(binary, shape, weights, threads, batches, ctx, tg, pp, reps):
    cmd = [binary, "bench", "--synthetic", shape, "--weights", weights, "--threads", str(threads),
           "--batch", ",".join(map(str, batches)), "--batch-ctx", str(ctx), "--tg", str(tg), "--pp", str(pp),
           "--reps", str(reps), "--json"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shape", default=None, choices=sorted(base.SHAPES))
    ap.add_argument("--weights", default="q8", choices=["q8", "f16"])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", default="1,4,16,32")
    ap.add_argument("--ctx", type=int, default=64, help="prompt tokens per sequence")
    ap.add_argument("--tg", type=int, default=16, help="batched decode steps timed")
    ap.add_argument("--pp", type=int, default=512, help="staticlm's one-sequence prefill check")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="tiny-llama")
    ap.add_argument("--staticlm", default=os.path.join(os.path.dirname(__file__), "..", "build", "tools", "staticlm"))
    ap.add_argument("--workdir", default="/tmp/staticlm-gguf")
    a = ap.parse_args()
    shape = a.shape or ("tiny-llama" if a.quick else "llama-3.2-1b")
    batches = [int(b) for b in a.batch.split(",")]
    import llama_cpp
    base.check_pinned()
    os.makedirs(a.workdir, exist_ok=True)
    gtype = "Q8_0" if a.weights == "q8" else "F16"
    path = os.path.join(a.workdir, f"{shape}-{gtype}.gguf")
    if not os.path.exists(path):
        base.write_gguf(path + ".tmp", shape, a.weights)
        os.replace(path + ".tmp", path)
    vocab = base.SHAPES[shape]["vocab"]
    llama = {b: [] for b in batches}
    ours = {b: [] for b in batches}
    ours_cpu = {b: [] for b in batches}
    pp_session, pp_batch = [], []
    for r in range(a.rounds):
        for b in batches:
            eng = LlamaCppBatch(path, vocab, a.threads, b, a.ctx, a.tg)
            llama[b].append(eng.run())
            eng.close()
        s = bench_staticlm(a.staticlm, shape, a.weights, a.threads, batches, a.ctx, a.tg, a.pp, 1)
        pp_session.append(s["prefill"]["session_tok_per_s"])
        pp_batch.append(s["prefill"]["batch_session_tok_per_s"])
        for row in s["decode"]:
            ours[row["batch"]].append(row["tok_per_s"])
            ours_cpu[row["batch"]].append(row["tok_per_cpu_s"])
        print(f"round {r + 1}/{a.rounds}: " + " | ".join(
            f"B={b}: llama.cpp {llama[b][-1]:.1f} staticlm {ours[b][-1]:.1f}" for b in batches),
            file=sys.stderr, flush=True)
    med = base.median
    b0 = batches[0]
    print(f"# {time.strftime('%Y-%m-%d %H:%M')}, {shape} {a.weights}/{gtype}, {a.threads} threads, context {a.ctx}, "
          f"{a.tg} steps, median of {a.rounds} rounds; llama-cpp-python {llama_cpp.__version__}, "
          f"staticlm target {s['target']}")
    print(f"# staticlm prefill pp{a.pp}: Session {med(pp_session):.1f} tok/s, BatchSession {med(pp_batch):.1f} tok/s")
    print("| batch | llama.cpp tok/s | × B=%d | staticlm tok/s | × B=%d | staticlm tok/CPU-s | × B=%d | staticlm / llama.cpp |"
          % (b0, b0, b0))
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for b in batches:
        print(f"| {b} | {med(llama[b]):.1f} | {med(llama[b]) / med(llama[b0]):.2f} | {med(ours[b]):.1f} | "
              f"{med(ours[b]) / med(ours[b0]):.2f} | {med(ours_cpu[b]):.1f} | "
              f"{med(ours_cpu[b]) / med(ours_cpu[b0]):.2f} | {med(ours[b]) / med(llama[b]):.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
