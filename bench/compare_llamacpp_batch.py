#!/usr/bin/env python3
"""Batched decode, llama.cpp and staticlm side by side, in one run.

For each batch size B: B sequences of CTX prompt tokens each, then TG steps that
decode one token of every sequence together (llama.cpp: its llama-batched-bench, one
llama_decode of a B-token batch, one sequence id each, non-unified KV cells; staticlm:
`staticlm bench --batch`, one M = B matmul per weight). Reports aggregate tok/s
(B·TG / time) and the speed-up over B = 1 of each engine, and staticlm's prefill
of one PP-token sequence through Session and BatchSession ("prefill unchanged").
The GGUF twin is the one of bench/compare_llamacpp.py (same shapes; Q8_0, F16, Q4_0
or llama-quantize's Q4_K_M); llama.cpp is built from the pinned sdist's source by
bench/llamacpp.py.

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
import llamacpp  # noqa: E402


def bench_llamacpp(bins, path, threads, batches, ctx, tg):
    """llama-batched-bench: B sequences of ctx prompt tokens each, then tg steps decoding
    one token of every sequence per llama_decode; aggregate tg tok/s per B."""
    cmd = [bins["llama-batched-bench"], "-m", path, "-c", str(max(batches) * (ctx + tg + 16)),
           "-b", "2048", "-ub", "512", "-npp", str(ctx), "-ntg", str(tg), "-npl", ",".join(map(str, batches)),
           "-t", str(threads), "-tb", str(threads), "-fa", "on", "-no-kvu", "--output-format", "jsonl"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{r.stderr[-2000:]}")
    out = {}
    for line in (r.stdout + "\n" + r.stderr).splitlines():
        if line.startswith("{") and '"speed_tg"' in line:
            rec = json.loads(line)
            out[rec["pl"]] = rec["speed_tg"]
    missing = [b for b in batches if b not in out]
    if missing:
        raise SystemExit(f"llama-batched-bench reported no row for B = {missing}")
    return out


def bench_staticlm(binary, model_args, threads, batches, ctx, tg, pp, reps):
    cmd = [binary, "bench", *model_args, "--threads", str(threads),
           "--batch", ",".join(map(str, batches)), "--batch-ctx", str(ctx), "--tg", str(tg), "--pp", str(pp),
           "--reps", str(reps), "--json"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shape", default=None, choices=sorted(base.SHAPES))
    ap.add_argument("--weights", default="q8", choices=sorted(base.WEIGHTS))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", default="1,4,16,32")
    ap.add_argument("--ctx", type=int, default=64, help="prompt tokens per sequence")
    ap.add_argument("--tg", type=int, default=16, help="batched decode steps timed")
    ap.add_argument("--pp", type=int, default=512, help="staticlm's one-sequence prefill check")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="tiny-llama")
    ap.add_argument("--staticlm", default=os.path.join(os.path.dirname(__file__), "..", "build", "tools", "staticlm"))
    ap.add_argument("--workdir", default="/tmp/staticlm-gguf")
    ap.add_argument("--llama-cpp-dir", default="/tmp/staticlm-llamacpp",
                    help="where llama.cpp's source is fetched and built (LLAMA_CPP_BIN overrides)")
    a = ap.parse_args()
    shape = a.shape or ("tiny-llama" if a.quick else "llama-3.2-1b")
    batches = [int(b) for b in a.batch.split(",")]
    base.check_pinned()
    bins = llamacpp.tools(a.llama_cpp_dir)
    os.makedirs(a.workdir, exist_ok=True)
    gtype = base.WEIGHTS[a.weights][0]
    path = base.gguf_for(a.workdir, shape, a.weights, bins, a.threads)
    read_as = base.WEIGHTS[a.weights][1]
    model_args = ["-m", path, *read_as] if a.weights == "q4km" else ["--synthetic", shape, *read_as]
    llama = {b: [] for b in batches}
    ours = {b: [] for b in batches}
    ours_cpu = {b: [] for b in batches}
    pp_session, pp_batch = [], []
    for r in range(a.rounds):
        for b, tps in bench_llamacpp(bins, path, a.threads, batches, a.ctx, a.tg).items():
            llama[b].append(tps)
        s = bench_staticlm(a.staticlm, model_args, a.threads, batches, a.ctx, a.tg, a.pp, 1)
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
          f"{a.tg} steps, median of {a.rounds} rounds; llama.cpp {llamacpp.version(bins)} (llama-batched-bench, "
          f"llama-cpp-python {llamacpp.SDIST[1]} sdist, -fa on, -no-kvu), "
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
