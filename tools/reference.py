#!/usr/bin/env python3
"""Reference side of `staticlm verify --dump` and `staticlm perplexity`, computed by
Hugging Face transformers in fp32 with eager attention.

  reference.py dump --model DIR --reference FILE --out DIR2
      runs the reference file's input_ids and writes the named intermediates of
      model/graph.cpp (embed, per_layer_inputs, attn_norm, q, k, v, attn, attn_out,
      ffn_norm, ffn_out, h, final_norm, logits) in the format of `staticlm verify --dump`.
  reference.py compare A B [--threshold PCT]
      compares two dump directories (A = engine, B = reference) tensor by tensor in
      forward order and names the first layer/op whose PEIR exceeds the threshold.
  reference.py perplexity --model DIR --file F --ctx N [--write-expected JSON]
      the same windows and scoring as `staticlm perplexity` (tokens = BOS + SentencePiece ids).

Run with /opt/slm-py/bin/python (pinned torch 2.9.1, transformers 5.24.0).
"""
import argparse
import json
import math
import os
import sys

import numpy as np

# The names and order of model/graph.cpp's DumpSink calls within one layer.
LAYER_ORDER = ["attn_norm", "q", "k", "v", "attn", "attn_out", "ffn_norm", "ffn_out", "h"]


def require_pinned():
    import torch
    import transformers
    assert torch.__version__.split("+")[0] == "2.9.1", torch.__version__
    assert transformers.__version__ == "5.24.0", transformers.__version__


def load_hf(model_dir):
    import torch
    import transformers
    with open(os.path.join(model_dir, "config.json")) as f:
        arch = json.load(f)["architectures"][0]
    cls = getattr(transformers, arch)
    return cls.from_pretrained(model_dir, attn_implementation="eager", dtype=torch.float32).eval()


def text_model(model):
    """The module holding embed_tokens / layers / norm (LlamaModel, Gemma4TextModel)."""
    for m in model.modules():
        if hasattr(m, "embed_tokens") and hasattr(m, "layers") and hasattr(m, "norm"):
            return m
    raise SystemExit("reference.py: cannot find the decoder stack in " + type(model).__name__)


class Recorder:
    def __init__(self):
        self.tensors = {}  # (name, layer) -> np.ndarray [T][cols]
        self.order = []
        self.layer = -1
        self.rope_calls = 0

    def put(self, name, layer, t):
        t = t.detach().to("cpu").float()
        t = t.reshape(-1, t.shape[-1]) if t.dim() <= 2 else t
        arr = t.numpy().astype(np.float32)
        key = (name, layer)
        if key not in self.tensors:
            self.order.append(key)
        self.tensors[key] = arr


def rows_of(t, heads_first):
    """[B, H, T, hd] (heads_first) or [B, T, H, hd] -> [T, H*hd]."""
    if heads_first:
        t = t.transpose(1, 2)
    return t.reshape(t.shape[1], -1)


def install_hooks(model, rec):
    import importlib
    tm = text_model(model)
    gemma = "gemma" in type(tm).__name__.lower()
    handles = []
    first = lambda out: out[0] if isinstance(out, tuple) else out

    handles.append(tm.embed_tokens.register_forward_hook(
        lambda m, i, o: rec.put("embed", -1, first(o)[0])))
    if gemma and getattr(tm, "hidden_size_per_layer_input", 0):
        orig = tm.project_per_layer_inputs

        def project(*args, **kwargs):
            out = orig(*args, **kwargs)  # [B, T, L, D]
            rec.put("per_layer_inputs", -1, out[0].reshape(out.shape[1], -1))
            return out
        tm.project_per_layer_inputs = project

    # q and k after norm + RoPE are only visible inside attention: wrap the module's
    # apply_rotary_pos_emb (Llama: (q, k) in [B, H, T, hd]; Gemma 4: one tensor per
    # call, q then k, in [B, T, H, hd]).
    mod = importlib.import_module(type(tm.layers[0].self_attn).__module__)
    orig_rope = mod.apply_rotary_pos_emb

    def rope(*args, **kwargs):
        out = orig_rope(*args, **kwargs)
        if isinstance(out, tuple):
            rec.put("q", rec.layer, rows_of(out[0][0:1], True))
            rec.put("k", rec.layer, rows_of(out[1][0:1], True))
        else:
            name = "q" if rec.rope_calls == 0 else "k"
            rec.put(name, rec.layer, rows_of(out[0:1], False))
        rec.rope_calls += 1
        return out
    mod.apply_rotary_pos_emb = rope

    for il, layer in enumerate(tm.layers):
        def pre(m, args, il=il):
            rec.layer = il
            rec.rope_calls = 0
        handles.append(layer.register_forward_pre_hook(pre))
        handles.append(layer.register_forward_hook(
            lambda m, i, o, il=il: rec.put("h", il, first(o)[0])))
        handles.append(layer.input_layernorm.register_forward_hook(
            lambda m, i, o, il=il: rec.put("attn_norm", il, o[0])))
        att = layer.self_attn
        if gemma:
            if getattr(att, "v_norm", None) is not None:  # V after v_norm ([B, T, H, hd])
                handles.append(att.v_norm.register_forward_hook(
                    lambda m, i, o, il=il: rec.put("v", il, rows_of(o[0:1], False))))
            handles.append(layer.post_attention_layernorm.register_forward_hook(
                lambda m, i, o, il=il: rec.put("attn_out", il, o[0])))
            handles.append(layer.pre_feedforward_layernorm.register_forward_hook(
                lambda m, i, o, il=il: rec.put("ffn_norm", il, o[0])))
            handles.append(layer.post_feedforward_layernorm.register_forward_hook(
                lambda m, i, o, il=il: rec.put("ffn_out", il, o[0])))
        else:
            handles.append(att.v_proj.register_forward_hook(
                lambda m, i, o, il=il: rec.put("v", il, o[0])))
            handles.append(att.o_proj.register_forward_hook(
                lambda m, i, o, il=il: rec.put("attn_out", il, o[0])))
            handles.append(layer.post_attention_layernorm.register_forward_hook(
                lambda m, i, o, il=il: rec.put("ffn_norm", il, o[0])))
            handles.append(layer.mlp.register_forward_hook(
                lambda m, i, o, il=il: rec.put("ffn_out", il, o[0])))
        handles.append(att.o_proj.register_forward_pre_hook(
            lambda m, args, il=il: rec.put("attn", il, args[0][0])))
    handles.append(tm.norm.register_forward_hook(
        lambda m, i, o: rec.put("final_norm", -1, o[0])))
    return handles


def file_name(name, layer):
    return f"{name}.f32" if layer < 0 else f"{name}.{layer}.f32"


def cmd_dump(args):
    require_pinned()
    import torch
    from safetensors.numpy import load_file
    torch.set_num_threads(1)
    ref = load_file(args.reference)
    ids = torch.tensor(ref["input_ids"], dtype=torch.long)[None]
    model = load_hf(args.model)
    rec = Recorder()
    install_hooks(model, rec)
    with torch.no_grad():
        out = model(ids, use_cache=False)
    rec.put("logits", -1, out.logits[0])
    err = float(np.abs(rec.tensors[("logits", -1)] - ref["logits"]).max())
    os.makedirs(args.out, exist_ok=True)
    index = []
    for name, layer in rec.order:
        arr = np.ascontiguousarray(rec.tensors[(name, layer)], dtype="<f4")
        fn = file_name(name, layer)
        arr.tofile(os.path.join(args.out, fn))
        index.append({"name": name, "layer": layer, "shape": list(arr.shape), "file": fn})
    with open(os.path.join(args.out, "index.json"), "w") as f:
        json.dump({"producer": "transformers", "input_ids": ref["input_ids"].tolist(),
                   "tensors": index}, f, indent=1)
    print(f"dump: {len(index)} tensors written to {args.out}; "
          f"max|logits - reference file| = {err:.3e}")


def read_dump(d):
    with open(os.path.join(d, "index.json")) as f:
        idx = json.load(f)
    out = {}
    for t in idx["tensors"]:
        arr = np.fromfile(os.path.join(d, t["file"]), dtype="<f4").reshape(t["shape"])
        out[(t["name"], t["layer"])] = arr
    return idx, out


def peir(x, r):
    """RUNTIME.md: max|x - r| / (max(r) - min(r)), the interval from the reference."""
    diff = float(np.abs(x.astype(np.float64) - r.astype(np.float64)).max())
    rng = float(r.max()) - float(r.min())
    return diff / (rng if rng > 0 else 1.0), diff


def cmd_compare(args):
    ia, a = read_dump(args.a)
    _, b = read_dump(args.b)
    threshold = args.threshold / 100.0
    keys = [(t["name"], t["layer"]) for t in ia["tensors"]]
    first_bad = None
    print(f"{'tensor':<22} {'shape':>12} {'max|diff|':>12} {'PEIR':>11}")
    for key in keys:
        name, layer = key
        label = name if layer < 0 else f"{name}[{layer}]"
        if key not in b:
            print(f"{label:<22} {'':>12} {'(no reference)':>24}")
            continue
        x, r = a[key], b[key]
        if x.shape != r.shape:
            print(f"{label:<22} shape {list(x.shape)} vs {list(r.shape)}: MISMATCH")
            first_bad = first_bad or label
            continue
        p, d = peir(x, r)
        bad = not (p <= threshold)
        print(f"{label:<22} {str(list(x.shape)):>12} {d:12.4e} {p * 100:10.5f}%{'  <--' if bad else ''}")
        if bad and first_bad is None:
            first_bad = label
    if first_bad:
        print(f"first tensor over {args.threshold}% PEIR: {first_bad}")
        return 1
    print(f"all tensors within {args.threshold}% PEIR")
    return 0


def tokenize(model_dir, text):
    import sentencepiece as spm
    sp = spm.SentencePieceProcessor(model_file=os.path.join(model_dir, "tokenizer.model"))
    return [sp.bos_id()] + sp.encode(text)


def cmd_perplexity(args):
    require_pinned()
    import torch
    torch.set_num_threads(1)
    with open(args.file, encoding="utf-8") as f:
        text = f.read()
    ids = tokenize(args.model, text)
    model = load_hf(args.model)
    total, scored, windows = 0.0, 0, 0
    for start in range(0, len(ids) - 1, args.ctx):
        w = ids[start:start + args.ctx]
        with torch.no_grad():
            logits = model(torch.tensor(w)[None], use_cache=False).logits[0].double()
        logp = torch.log_softmax(logits[:-1], dim=-1)
        total -= float(logp.gather(1, torch.tensor(w[1:])[:, None]).sum())
        scored += len(w) - 1
        windows += 1
    mean = total / scored
    res = {"file": os.path.basename(args.file), "ctx": args.ctx, "tokens": len(ids),
           "windows": windows, "scored": scored, "mean_nll": mean, "perplexity": math.exp(mean),
           "generator": "tools/reference.py perplexity (torch 2.9.1, transformers 5.24.0, fp32 eager)"}
    print(json.dumps(res, indent=1))
    if args.write_expected:
        with open(args.write_expected, "w") as f:
            json.dump(res, f, indent=1)
            f.write("\n")
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("dump", help="dump transformers intermediates")
    d.add_argument("--model", required=True)
    d.add_argument("--reference", required=True)
    d.add_argument("--out", required=True)
    c = sub.add_parser("compare", help="compare two dump directories")
    c.add_argument("a", help="engine dump (staticlm verify --dump)")
    c.add_argument("b", help="reference dump (reference.py dump)")
    c.add_argument("--threshold", type=float, default=0.01, help="PEIR in percent (default 0.01)")
    q = sub.add_parser("perplexity", help="perplexity as staticlm perplexity computes it")
    q.add_argument("--model", required=True)
    q.add_argument("--file", required=True)
    q.add_argument("--ctx", type=int, default=512)
    q.add_argument("--write-expected")
    args = p.parse_args()
    return {"dump": cmd_dump, "compare": cmd_compare, "perplexity": cmd_perplexity}[args.cmd](args) or 0


if __name__ == "__main__":
    sys.exit(main())
