#!/usr/bin/env python3
"""llama.cpp and staticlm side by side on the same synthetic shapes, in one run.

Writes GGUF files of a built-in synthetic shape (random weights of the same shapes and
types as `staticlm bench --synthetic NAME`: Q8_0 for q8, F16 for f16, Q4_0 with the
vocabulary matrix in Q8_0 for q4 (as staticlm's q4 keeps it); q4km is the F16 file
quantized by llama.cpp's own `llama-quantize ... Q4_K_M` (its mix of Q4_K and Q6_K),
which staticlm runs with `--weights native`. The values differ from staticlm's
synthetic ones, which does not matter for speed.) llama.cpp is the one the pinned
llama-cpp-python sdist vendors, built from source by bench/llamacpp.py (or
LLAMA_CPP_BIN=folder of a build); its `llama-bench` measures pp (one prompt of PP
tokens) and tg (TG single-token steps) after `-d DEPTH` tokens in the cache, with
flash attention and `--load-mode none`; `staticlm bench --json --depth` measures the
same at the same thread count. The two alternate for --rounds rounds (default 5); the
ratio column is the median of the per-round ratios, so slow drifts of the shared
machine's bandwidth cancel out.

  /opt/slm-py/bin/python bench/compare_llamacpp.py                       # llama-3.2-1b, q8 and f16, pp512 tg128
  /opt/slm-py/bin/python bench/compare_llamacpp.py --quick               # tiny-llama, pp128 tg32, seconds
  /opt/slm-py/bin/python bench/compare_llamacpp.py --weights q4km --depth 0,4096

Needs `pip install gguf==0.19.0` in the venv and cmake (see docs/PERFORMANCE.md).
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

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import llamacpp  # noqa: E402

# The shapes of model/synthetic.cpp (tied embeddings both).
SHAPES = {
    "llama-3.2-1b": dict(hidden=2048, layers=16, heads=32, kv_heads=8, head_dim=64, ffn=8192,
                         vocab=128256, rope_theta=500000.0, ctx=131072, tied=True),
    "tiny-llama": dict(hidden=256, layers=4, heads=8, kv_heads=2, head_dim=32, ffn=768,
                       vocab=1024, rope_theta=10000.0, ctx=2048, tied=False),
}
QK8_0 = 32  # Q8_0 block: one f16 scale + 32 int8
PINNED = {"gguf": "0.19.0"}


def installed_version(pkg):
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


def bench_staticlm(binary, model_args, threads, pp, tg, depths, reps):
    """`staticlm bench --json`: one object per depth."""
    cmd = [binary, "bench", *model_args, "--threads", str(threads), "--pp", str(pp), "--tg", str(tg),
           "--reps", str(reps), "--depth", ",".join(map(str, depths)), "--json"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    runs = [json.loads(line) for line in out.strip().splitlines() if line.startswith("{")]
    return {r.get("depth", 0): r for r in runs}


def median(v):
    v = sorted(v)
    n = len(v)
    return v[n // 2] if n % 2 else 0.5 * (v[n // 2 - 1] + v[n // 2])


# --weights W: (GGUF type written or made, how staticlm reads it)
WEIGHTS = {"q8": ("Q8_0", ["--weights", "q8"]), "f16": ("F16", ["--weights", "f16"]),
           "q4": ("Q4_0", ["--weights", "q4"]), "q4km": ("Q4_K_M", ["--weights", "native"])}


def gguf_for(workdir, shape, wt, bins, threads):
    """The GGUF twin of shape in weights wt (written once, reused)."""
    gtype = WEIGHTS[wt][0]
    path = os.path.join(workdir, f"{shape}-{gtype}.gguf")
    if os.path.exists(path):
        return path
    if wt == "q4km":  # llama.cpp's own recipe over the F16 twin
        src = gguf_for(workdir, shape, "f16", bins, threads)
        t0 = time.perf_counter()
        llamacpp.quantize(bins, src, path, "Q4_K_M", threads)
        print(f"llama-quantize wrote {path} in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
        return path
    t0 = time.perf_counter()
    write_gguf(path + ".tmp", shape, wt)
    os.replace(path + ".tmp", path)
    print(f"wrote {path} in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shape", default=None, choices=sorted(SHAPES))
    ap.add_argument("--weights", default="q8,f16", help="comma list of " + ", ".join(WEIGHTS))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--pp", type=int, default=None)
    ap.add_argument("--tg", type=int, default=None)
    ap.add_argument("--depth", default="0", help="comma list of cache depths (llama-bench -d, staticlm --depth)")
    ap.add_argument("--rounds", type=int, default=5, help="interleaved llama.cpp/staticlm rounds")
    ap.add_argument("--quick", action="store_true", help="tiny-llama, pp128, tg32")
    ap.add_argument("--staticlm", default=os.path.join(os.path.dirname(__file__), "..", "build", "tools", "staticlm"))
    ap.add_argument("--workdir", default="/tmp/staticlm-gguf")
    ap.add_argument("--llama-cpp-dir", default="/tmp/staticlm-llamacpp",
                    help="where llama.cpp's source is fetched and built (LLAMA_CPP_BIN overrides)")
    ap.add_argument("--json", action="store_true", help="also print the rows as JSON")
    a = ap.parse_args()
    shape = a.shape or ("tiny-llama" if a.quick else "llama-3.2-1b")
    pp = a.pp or (128 if a.quick else 512)
    tg = a.tg or (32 if a.quick else 128)
    depths = [int(d) for d in a.depth.split(",")]
    check_pinned()
    bins = llamacpp.tools(a.llama_cpp_dir)
    os.makedirs(a.workdir, exist_ok=True)
    rows = []
    for wt in a.weights.split(","):
        if wt not in WEIGHTS:
            raise SystemExit(f"--weights: {wt} (one of {', '.join(WEIGHTS)})")
        path = gguf_for(a.workdir, shape, wt, bins, a.threads)
        gtype, read_as = WEIGHTS[wt]
        model_args = ["-m", path, *read_as] if wt == "q4km" else ["--synthetic", shape, *read_as]
        # Interleaved rounds (llama.cpp, then staticlm, R times): the machine is
        # shared and its memory bandwidth drifts, so each round's ratio compares
        # runs a few seconds apart and the table reports the median ratio.
        runs = {d: {"lpp": [], "ltg": [], "spp": [], "stg": []} for d in depths}
        for r in range(a.rounds):
            for d in depths:
                l = llamacpp.bench(bins, path, a.threads, pp=pp, tg=tg, depth=d)
                runs[d]["lpp"].append(l["pp"])
                runs[d]["ltg"].append(l["tg"])
            st = bench_staticlm(a.staticlm, model_args, a.threads, pp, tg, depths, 1)
            for d in depths:
                s = st[d]
                runs[d]["spp"].append(s["prefill"]["tok_per_s"])
                runs[d]["stg"].append(s["decode"]["tok_per_s"])
                x = runs[d]
                print(f"round {r + 1}/{a.rounds} {wt} d{d}: llama.cpp {gtype} pp{pp} {x['lpp'][-1]:.2f} "
                      f"tg{tg} {x['ltg'][-1]:.2f} | staticlm pp{pp} {x['spp'][-1]:.2f} tg{tg} {x['stg'][-1]:.2f} "
                      "tok/s", file=sys.stderr, flush=True)
        for d in depths:
            x = runs[d]
            for test, l, st_ in ((f"pp{pp}", x["lpp"], x["spp"]), (f"tg{tg}", x["ltg"], x["stg"])):
                (lm, lsd), (sm, ssd) = mean_sd(l), mean_sd(st_)
                ratios = [y / v for v, y in zip(l, st_)]
                rows.append(dict(shape=shape, weights=f"{wt}/{gtype}", depth=d, test=test, llamacpp=lm,
                                 llamacpp_sd=lsd, staticlm=sm, staticlm_sd=ssd, ratio=median(ratios),
                                 ratio_min=min(ratios), ratio_max=max(ratios)))
        machine, target = s["machine"], s["target"]
    print(f"# {time.strftime('%Y-%m-%d')}, {a.threads} threads, llama.cpp {llamacpp.version(bins)} "
          f"(llama-cpp-python {llamacpp.SDIST[1]} sdist, -fa 1 --load-mode none), gguf {installed_version('gguf')}, "
          f"staticlm target {target}; machine read {machine['read_gb_per_s']:.1f} GB/s")
    print(f"| shape | weights (staticlm/llama.cpp) | depth | test | llama.cpp tok/s | staticlm tok/s "
          f"| ratio (median of {a.rounds} rounds) | range |")
    print("|---|---|---:|---|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['shape']} | {r['weights']} | {r['depth']} | {r['test']} | {r['llamacpp']:.2f} ± "
              f"{r['llamacpp_sd']:.2f} | {r['staticlm']:.2f} ± {r['staticlm_sd']:.2f} | {r['ratio']:.2f}× | "
              f"{r['ratio_min']:.2f}–{r['ratio_max']:.2f} |")
    if a.json:
        print(json.dumps(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
