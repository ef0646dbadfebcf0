#!/usr/bin/env python3
"""llama.cpp and staticlm side by side on the same synthetic shapes, in one run.

Writes GGUF files of a built-in synthetic shape (random weights of the same shapes and
types as `staticlm bench --synthetic NAME`: Q8_0 for q8, F16 for f16, Q4_0 with the
vocabulary matrix in Q8_0 for q4 (as staticlm's q4 keeps it); the values differ, which does
not matter for speed), runs llama.cpp through llama-cpp-python (pp = one
prompt of PP tokens from an empty context, tg = TG single-token steps, like llama-bench)
and `staticlm bench --json` at the same thread count, and prints both tok/s and the ratio.
The two run alternately for --rounds rounds (default 5); the ratio column is the median of
the per-round ratios, so slow drifts of the shared machine's bandwidth cancel out.

  /opt/slm-py/bin/python bench/compare_llamacpp.py            # llama-3.2-1b, q8 and f16, pp512 tg128
  /opt/slm-py/bin/python bench/compare_llamacpp.py --quick    # tiny-llama, pp128 tg32, seconds
  /opt/slm-py/bin/python bench/compare_llamacpp.py --weights q4  # Q4_0

Needs `pip install gguf llama-cpp-python` in the venv (see docs/PERFORMANCE.md).
GGUF files are cached in --workdir (default /tmp/staticlm-gguf) and reused.
"""
import argparse
import importlib.metadata
import json
import os
import subprocess
import sys
import time

import numpy as np

# The shapes of model/synthetic.cpp (tied embeddings both).
SHAPES = {
    "llama-3.2-1b": dict(hidden=2048, layers=16, heads=32, kv_heads=8, head_dim=64, ffn=8192,
                         vocab=128256, rope_theta=500000.0, ctx=131072, tied=True),
    "tiny-llama": dict(hidden=256, layers=4, heads=8, kv_heads=2, head_dim=32, ffn=768,
                       vocab=1024, rope_theta=10000.0, ctx=2048, tied=False),
}
QK8_0 = 32  # Q8_0 block: one f16 scale + 32 int8
PINNED = {"gguf": "0.19.0", "llama_cpp_python": "0.3.36"}


def installed_version(pkg):
    if pkg == "llama_cpp_python":
        import llama_cpp
        return llama_cpp.__version__
    try:
        return importlib.metadata.version(pkg)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def check_pinned():
    for pkg, want in PINNED.items():
        got = installed_version(pkg)
        if got != want:
            print(f"warning: {pkg} {got} is installed, the figures in docs/PERFORMANCE.md were made with {want}",
                  file=sys.stderr)


def pool(kind, rng, n=1 << 24):
    """A block of random bytes/values that tensors are tiled from (speed only needs shapes)."""
    if kind in ("q8", "q4"):
        q = rng.integers(-127, 128, size=n, dtype=np.int8).view(np.uint8)
        return q
    return (rng.standard_normal(n, dtype=np.float32) * 0.02).astype(np.float16)


def blocks_bytes(rows, cols, qpool, scale, qbytes):
    """[rows][cols] as ggml blocks of 32 values: an f16 scale then qbytes bytes of quants
    (Q8_0: 32, Q4_0: 16 bytes of nibbles) tiled from qpool."""
    assert cols % QK8_0 == 0, cols
    nb = cols // QK8_0
    blocks = np.empty((rows, nb, 2 + qbytes), dtype=np.uint8)
    blocks[:, :, 0:2] = np.frombuffer(np.float16(scale).tobytes(), dtype=np.uint8)
    blocks[:, :, 2:] = np.resize(qpool, (rows, nb, qbytes))
    return blocks.reshape(rows, nb * (2 + qbytes))


def write_gguf(path, shape_name, weights):
    import gguf
    s = SHAPES[shape_name]
    rng = np.random.default_rng(1)
    p = pool(weights, rng)
    Q = gguf.GGMLQuantizationType
    qtype = {"q8": Q.Q8_0, "q4": Q.Q4_0}.get(weights)
    w = gguf.GGUFWriter(path, "llama")
    w.add_name(f"staticlm-synthetic-{shape_name}")
    w.add_context_length(s["ctx"])
    w.add_embedding_length(s["hidden"])
    w.add_block_count(s["layers"])
    w.add_feed_forward_length(s["ffn"])
    w.add_head_count(s["heads"])
    w.add_head_count_kv(s["kv_heads"])
    w.add_key_length(s["head_dim"])
    w.add_value_length(s["head_dim"])
    w.add_rope_dimension_count(s["head_dim"])
    w.add_rope_freq_base(s["rope_theta"])
    w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(s["vocab"])
    w.add_file_type({"q8": gguf.LlamaFileType.MOSTLY_Q8_0, "q4": gguf.LlamaFileType.MOSTLY_Q4_0}.get(
        weights, gguf.LlamaFileType.MOSTLY_F16))
    # A SentencePiece-style vocabulary of the right size (llama.cpp needs one to load).
    n_special = 3
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{i:02X}>" for i in range(256)]
    tokens += [f"t{i}" for i in range(s["vocab"] - len(tokens))]
    types = [2, 3, 3] + [6] * 256 + [1] * (s["vocab"] - 256 - n_special)
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores([0.0] * s["vocab"])
    w.add_token_types(types)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)

    def mat(name, rows, cols, vocab=False):  # numpy [rows][cols] = GGUF ne = (cols, rows)
        if qtype == Q.Q4_0 and not vocab:
            w.add_tensor(name, blocks_bytes(rows, cols, p, 0.02 / 8, 16), raw_dtype=qtype)
        elif qtype is not None:  # Q8_0, and q4's vocabulary matrices
            w.add_tensor(name, blocks_bytes(rows, cols, p, 0.02 / 127, 32), raw_dtype=Q.Q8_0)
        else:
            w.add_tensor(name, np.resize(p, (rows, cols)))

    def norm(name, n):
        w.add_tensor(name, np.ones(n, dtype=np.float32))

    H, F, hd = s["hidden"], s["ffn"], s["head_dim"]
    mat("token_embd.weight", s["vocab"], H, vocab=True)
    for i in range(s["layers"]):
        norm(f"blk.{i}.attn_norm.weight", H)
        mat(f"blk.{i}.attn_q.weight", s["heads"] * hd, H)
        mat(f"blk.{i}.attn_k.weight", s["kv_heads"] * hd, H)
        mat(f"blk.{i}.attn_v.weight", s["kv_heads"] * hd, H)
        mat(f"blk.{i}.attn_output.weight", H, s["heads"] * hd)
        norm(f"blk.{i}.ffn_norm.weight", H)
        mat(f"blk.{i}.ffn_gate.weight", F, H)
        mat(f"blk.{i}.ffn_up.weight", F, H)
        mat(f"blk.{i}.ffn_down.weight", H, F)
    norm("output_norm.weight", H)
    if not s["tied"]:
        mat("output.weight", s["vocab"], H, vocab=True)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def prompt_ids(n, vocab):
    # The same ids as `staticlm bench` (bench_cmd.cpp), kept clear of the special ids.
    return [max(3, (i * 2654435761) % vocab) for i in range(n)]


def mean_sd(v):
    m = sum(v) / len(v)
    sd = (sum((x - m) ** 2 for x in v) / (len(v) - 1)) ** 0.5 if len(v) > 1 else 0.0
    return m, sd


class LlamaCpp:
    """One GGUF loaded in llama.cpp; run() measures one pp and one tg like llama-bench."""

    def __init__(self, path, vocab, threads, pp, tg):
        from llama_cpp import Llama
        self.llm = Llama(model_path=path, n_ctx=pp + tg + 16, n_batch=pp, n_ubatch=pp,
                         n_threads=threads, n_threads_batch=threads, verbose=False)
        self.toks = prompt_ids(pp, vocab)
        self.pp, self.tg = pp, tg
        self.llm.eval(self.toks[:16])  # warm-up

    def run(self):
        llm = self.llm
        llm.reset()
        t0 = time.perf_counter()
        llm.eval(self.toks)
        pp = self.pp / (time.perf_counter() - t0)
        llm.reset()
        tok = self.toks[0]
        t0 = time.perf_counter()
        for _ in range(self.tg):
            llm.eval([tok])
        return pp, self.tg / (time.perf_counter() - t0)

    def close(self):
        del self.llm


def bench_staticlm(binary, shape, weights, threads, pp, tg, reps):
    cmd = [binary, "bench", "--synthetic", shape, "--weights", weights, "--threads", str(threads),
           "--pp", str(pp), "--tg", str(tg), "--reps", str(reps), "--json"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def median(v):
    v = sorted(v)
    n = len(v)
    return v[n // 2] if n % 2 else 0.5 * (v[n // 2 - 1] + v[n // 2])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shape", default=None, choices=sorted(SHAPES))
    ap.add_argument("--weights", default="q8,f16", help="comma list of q8, f16, q4")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--pp", type=int, default=None)
    ap.add_argument("--tg", type=int, default=None)
    ap.add_argument("--rounds", type=int, default=5, help="interleaved llama.cpp/staticlm rounds")
    ap.add_argument("--quick", action="store_true", help="tiny-llama, pp128, tg32")
    ap.add_argument("--staticlm", default=os.path.join(os.path.dirname(__file__), "..", "build", "tools", "staticlm"))
    ap.add_argument("--workdir", default="/tmp/staticlm-gguf")
    ap.add_argument("--json", action="store_true", help="also print the rows as JSON")
    a = ap.parse_args()
    shape = a.shape or ("tiny-llama" if a.quick else "llama-3.2-1b")
    pp = a.pp or (128 if a.quick else 512)
    tg = a.tg or (32 if a.quick else 128)
    import llama_cpp
    check_pinned()
    os.makedirs(a.workdir, exist_ok=True)
    rows = []
    for wt in a.weights.split(","):
        if wt not in ("q8", "f16", "q4"):
            raise SystemExit(f"--weights: {wt} (only q8, f16 and q4 have a llama.cpp twin here)")
        gtype = {"q8": "Q8_0", "q4": "Q4_0"}.get(wt, "F16")
        path = os.path.join(a.workdir, f"{shape}-{gtype}.gguf")
        if not os.path.exists(path):
            t0 = time.perf_counter()
            write_gguf(path + ".tmp", shape, wt)
            os.replace(path + ".tmp", path)
            print(f"wrote {path} in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
        # Interleaved rounds (llama.cpp, then staticlm, R times): the machine is
        # shared and its memory bandwidth drifts, so each round's ratio compares
        # runs a few seconds apart and the table reports the median ratio.
        llama = LlamaCpp(path, SHAPES[shape]["vocab"], a.threads, pp, tg)
        lpp, ltg, spp, stg = [], [], [], []
        for r in range(a.rounds):
            p_, t_ = llama.run()
            lpp.append(p_)
            ltg.append(t_)
            s = bench_staticlm(a.staticlm, shape, wt, a.threads, pp, tg, 1)
            spp.append(s["prefill"]["tok_per_s"])
            stg.append(s["decode"]["tok_per_s"])
            print(f"round {r + 1}/{a.rounds} {wt}: llama.cpp {gtype} pp{pp} {p_:.2f} tg{tg} {t_:.2f} | "
                  f"staticlm pp{pp} {spp[-1]:.2f} tg{tg} {stg[-1]:.2f} tok/s", file=sys.stderr, flush=True)
        llama.close()
        for test, l, st in ((f"pp{pp}", lpp, spp), (f"tg{tg}", ltg, stg)):
            (lm, lsd), (sm, ssd) = mean_sd(l), mean_sd(st)
            rows.append(dict(shape=shape, weights=f"{wt}/{gtype}", test=test, llamacpp=lm, llamacpp_sd=lsd,
                             staticlm=sm, staticlm_sd=ssd,
                             ratio=median([y / x for x, y in zip(l, st)]),
                             ratio_min=min(y / x for x, y in zip(l, st)),
                             ratio_max=max(y / x for x, y in zip(l, st))))
        machine = s["machine"]
    print(f"# {time.strftime('%Y-%m-%d')}, {a.threads} threads, llama-cpp-python {llama_cpp.__version__}, "
          f"gguf {installed_version('gguf')}, staticlm target {s['target']}; "
          f"machine read {machine['read_gb_per_s']:.1f} GB/s")
    print(f"| shape | weights (staticlm/llama.cpp) | test | llama.cpp tok/s | staticlm tok/s "
          f"| ratio (median of {a.rounds} rounds) | range |")
    print("|---|---|---|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['shape']} | {r['weights']} | {r['test']} | {r['llamacpp']:.2f} ± {r['llamacpp_sd']:.2f} | "
              f"{r['staticlm']:.2f} ± {r['staticlm_sd']:.2f} | {r['ratio']:.2f}× | "
              f"{r['ratio_min']:.2f}–{r['ratio_max']:.2f} |")
    if a.json:
        print(json.dumps(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
