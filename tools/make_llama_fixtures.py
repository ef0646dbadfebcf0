#!/usr/bin/env python3
# Makes the tiny random Llama golden fixtures under tests/fixtures/llama-*/:
# a Hugging Face model directory plus reference.safetensors (input_ids, logits, greedy_ids).
# Pinned: torch==2.9.1 transformers==5.24.0 safetensors  (run: /opt/slm-py/bin/python tools/make_llama_fixtures.py)
import json
import math
import os
import shutil
import sys

import numpy as np
import torch
import transformers
from safetensors.numpy import load_file
from safetensors.torch import save_file
from transformers import LlamaConfig, LlamaForCausalLM

assert torch.__version__.split("+")[0] == "2.9.1", torch.__version__
assert transformers.__version__ == "5.24.0", transformers.__version__

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures")
T_PROMPT = 32
G_GREEDY = 16
MIN_MARGIN = 0.02  # greedy top-1 minus top-2 logit; smaller would make id tests fragile

# Each fixture: config kwargs, weight seed, and how config.json is written.
FIXTURES = [
    {
        # GQA (4 q heads / 2 kv), head_dim 16 != 72/4, hidden 72 (not a multiple of 32),
        # llama3 rope scaling on all three branches, untied lm_head. config.json in the
        # legacy `rope_theta` + `rope_scaling` form that real Llama 3.x checkpoints use.
        "name": "llama-gqa-llama3",
        "seed": 1,
        "legacy_rope_keys": True,
        "config": dict(vocab_size=320, hidden_size=72, intermediate_size=136, num_hidden_layers=2,
                       num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                       max_position_embeddings=2048, rms_norm_eps=1e-5, tie_word_embeddings=False,
                       rope_parameters={"rope_type": "llama3", "rope_theta": 10000.0, "factor": 8.0,
                                        "low_freq_factor": 1.0, "high_freq_factor": 8.0,
                                        "original_max_position_embeddings": 1024}),
    },
    {
        # Plain multi-head attention, default RoPE, tied embeddings (no lm_head.weight saved).
        "name": "llama-tied",
        "seed": 2,
        "legacy_rope_keys": False,
        "config": dict(vocab_size=256, hidden_size=64, intermediate_size=160, num_hidden_layers=2,
                       num_attention_heads=4, num_key_value_heads=4,
                       max_position_embeddings=512, rms_norm_eps=1e-6, tie_word_embeddings=True,
                       rope_parameters={"rope_type": "default", "rope_theta": 10000.0}),
    },
    {
        # MQA (5 q heads / 1 kv), head_dim derived (80/5 = 16), 3 layers, untied, llama3
        # scaling written in the transformers-5 `rope_parameters` form, theta 500000.
        "name": "llama-mqa-3layer",
        "seed": 3,
        "legacy_rope_keys": False,
        "drop_head_dim": True,  # config.json without head_dim: readers must derive 80 / 5
        "config": dict(vocab_size=384, hidden_size=80, intermediate_size=192, num_hidden_layers=3,
                       num_attention_heads=5, num_key_value_heads=1,
                       max_position_embeddings=4096, rms_norm_eps=1e-5, tie_word_embeddings=False,
                       rope_parameters={"rope_type": "llama3", "rope_theta": 500000.0, "factor": 32.0,
                                        "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                        "original_max_position_embeddings": 64}),
    },
]


def llama3_branches(cfg):
    """Counts frequencies on the unchanged / interpolated / scaled branches (MODELS.md)."""
    rp = cfg["rope_parameters"]
    d = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
    orig = rp["original_max_position_embeddings"]
    hi_wl, lo_wl = orig / rp["high_freq_factor"], orig / rp["low_freq_factor"]
    counts = [0, 0, 0]
    for i in range(d // 2):
        wl = 2 * math.pi / (rp["rope_theta"] ** (-2 * i / d))
        # keep clear of the branch edges so fp32 vs fp64 cannot flip a branch
        assert abs(wl - hi_wl) > 1e-3 * hi_wl and abs(wl - lo_wl) > 1e-3 * lo_wl, (i, wl)
        counts[0 if wl < hi_wl else 2 if wl > lo_wl else 1] += 1
    return counts


def init_weights(model, seed):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.copy_(1.0 + 0.1 * torch.randn(p.shape, generator=g))
            else:
                p.copy_(0.15 * torch.randn(p.shape, generator=g))


def greedy(model, ids, n):
    """Greedy continuation with the KV cache; returns ids and the smallest top-1/top-2 margin."""
    out = model(ids[None], use_cache=True)
    past, logits = out.past_key_values, out.logits[0, -1]
    res, margin = [], float("inf")
    for _ in range(n):
        top = torch.topk(logits, 2).values
        margin = min(margin, float(top[0] - top[1]))
        nxt = int(torch.argmax(logits))
        res.append(nxt)
        out = model(torch.tensor([[nxt]]), past_key_values=past, use_cache=True)
        past, logits = out.past_key_values, out.logits[0, -1]
    return torch.tensor(res, dtype=torch.int64), margin


def edit_config(path, legacy_rope_keys, drop_head_dim):
    with open(path) as f:
        cfg = json.load(f)
    if legacy_rope_keys:
        legacy_rope(cfg)
    if drop_head_dim:
        assert cfg["head_dim"] == cfg["hidden_size"] // cfg["num_attention_heads"]
        del cfg["head_dim"]
    with open(path, "w") as f:
        json.dump(cfg, f, indent=2, sort_keys=True)
        f.write("\n")


def legacy_rope(cfg):
    """rope_parameters -> rope_theta + rope_scaling, as in real Llama 3.x config.json files."""
    rp = dict(cfg.pop("rope_parameters"))
    cfg["rope_theta"] = rp.pop("rope_theta")
    cfg["rope_scaling"] = rp


def numpy_forward(d, ids):
    """Independent float64 forward pass from the files alone, as MODELS.md describes it (and as
    the C++ loader must read them): checks the fixture files and the description agree."""
    with open(os.path.join(d, "config.json")) as f:
        cfg = json.load(f)
    w = {k: v.astype(np.float64) for k, v in load_file(os.path.join(d, "model.safetensors")).items()}
    H, nh, nkv = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd = cfg.get("head_dim") or H // nh
    rope = cfg.get("rope_scaling") or dict(cfg.get("rope_parameters") or {})
    theta = cfg.get("rope_theta", rope.get("rope_theta"))
    inv = theta ** (-np.arange(0, hd, 2) / hd)
    if rope.get("rope_type", "default") == "llama3":
        orig, lo, hi, fac = (rope["original_max_position_embeddings"], rope["low_freq_factor"],
                             rope["high_freq_factor"], rope["factor"])
        wl = 2 * np.pi / inv
        sm = (orig / wl - lo) / (hi - lo)
        inv = np.where(wl < orig / hi, inv,
                       np.where(wl > orig / lo, inv / fac, (1 - sm) * inv / fac + sm * inv))
    T = len(ids)
    ang = np.arange(T)[:, None] * inv[None, :]
    cos, sin = np.cos(np.concatenate([ang, ang], 1)), np.sin(np.concatenate([ang, ang], 1))

    def rms(x, g):
        return g * x / np.sqrt((x * x).mean(-1, keepdims=True) + cfg["rms_norm_eps"])

    def rot(x):  # [T, heads, hd]
        x1, x2 = x[..., :hd // 2], x[..., hd // 2:]
        return x * cos[:, None] + np.concatenate([-x2, x1], -1) * sin[:, None]

    h = w["model.embed_tokens.weight"][ids]
    for l in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{l}."
        x = rms(h, w[p + "input_layernorm.weight"])
        q = rot((x @ w[p + "self_attn.q_proj.weight"].T).reshape(T, nh, hd))
        k = rot((x @ w[p + "self_attn.k_proj.weight"].T).reshape(T, nkv, hd))
        v = (x @ w[p + "self_attn.v_proj.weight"].T).reshape(T, nkv, hd)
        out = np.zeros((T, nh, hd))
        for head in range(nh):
            kv = head // (nh // nkv)
            sc = q[:, head] @ k[:, kv].T / np.sqrt(hd)
            sc = np.where(np.tril(np.ones((T, T))) > 0, sc, -np.inf)
            pr = np.exp(sc - sc.max(-1, keepdims=True))
            out[:, head] = (pr / pr.sum(-1, keepdims=True)) @ v[:, kv]
        h = h + out.reshape(T, nh * hd) @ w[p + "self_attn.o_proj.weight"].T
        x = rms(h, w[p + "post_attention_layernorm.weight"])
        g = x @ w[p + "mlp.gate_proj.weight"].T
        h = h + (g / (1 + np.exp(-g)) * (x @ w[p + "mlp.up_proj.weight"].T)) @ w[p + "mlp.down_proj.weight"].T
    lm = w.get("lm_head.weight", w["model.embed_tokens.weight"])
    assert ("lm_head.weight" in w) == (not cfg["tie_word_embeddings"])
    return rms(h, w["model.norm.weight"]) @ lm.T


def make(fx):
    torch.manual_seed(fx["seed"])
    cfg_kw = fx["config"]
    if cfg_kw["rope_parameters"]["rope_type"] == "llama3":
        counts = llama3_branches(cfg_kw)
        assert all(c > 0 for c in counts), (fx["name"], counts)
        print(f"{fx['name']}: llama3 branches unchanged/interpolated/scaled = {counts}")
    config = LlamaConfig(**cfg_kw, bos_token_id=1, eos_token_id=2, attn_implementation="eager")
    model = LlamaForCausalLM(config).to(torch.float32).eval()
    init_weights(model, fx["seed"])
    if cfg_kw["tie_word_embeddings"]:
        assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()

    d = os.path.join(ROOT, fx["name"])
    shutil.rmtree(d, ignore_errors=True)
    model.save_pretrained(d, safe_serialization=True)
    edit_config(os.path.join(d, "config.json"), fx["legacy_rope_keys"], fx.get("drop_head_dim", False))

    # The reference comes from the model as reloaded from disk, so the files are what is tested.
    ref_model = LlamaForCausalLM.from_pretrained(d, attn_implementation="eager",
                                                 dtype=torch.float32).eval()
    # Prompts are drawn until every greedy step has a clear winner (deterministic: fixed seeds).
    for attempt in range(50):
        g = torch.Generator().manual_seed(100 + fx["seed"] + 1000 * attempt)
        ids = torch.randint(0, cfg_kw["vocab_size"], (T_PROMPT,), generator=g, dtype=torch.int64)
        with torch.no_grad():
            gids, margin = greedy(ref_model, ids, G_GREEDY)
        if margin > MIN_MARGIN:
            break
    assert margin > MIN_MARGIN, (fx["name"], margin)
    with torch.no_grad():
        logits = ref_model(ids[None], use_cache=False).logits[0].to(torch.float32).contiguous()
        logits_mem = model(ids[None], use_cache=False).logits[0]
        assert torch.equal(logits, logits_mem), "reloaded model differs from the one saved"
        # teacher-forced check of the cached greedy path
        full = ref_model(torch.cat([ids, gids])[None], use_cache=False).logits[0]
        tf = torch.argmax(full[T_PROMPT - 1:-1], dim=-1)
        assert torch.equal(tf, gids), (tf, gids)
        assert torch.allclose(full[:T_PROMPT], logits, atol=1e-5, rtol=1e-5)
    assert len(set(gids.tolist())) >= 4, ("greedy ids too uniform", gids)
    ref64 = numpy_forward(d, ids.numpy())
    np_err = float(np.abs(ref64 - logits.numpy()).max())
    assert np_err < 1e-4, ("numpy forward from the files disagrees", np_err)
    std = float(logits.std(dim=-1).mean())
    assert std > 0.5, ("logits too flat", std)

    save_file({"input_ids": ids.contiguous(), "logits": logits, "greedy_ids": gids.contiguous()},
              os.path.join(d, "reference.safetensors"),
              # one key only: safetensors orders several metadata keys randomly
              metadata={"generator": f"tools/make_llama_fixtures.py torch=={torch.__version__} "
                                     f"transformers=={transformers.__version__} fp32 eager"})
    print(f"{fx['name']}: prompt attempt {attempt} T={T_PROMPT} V={cfg_kw['vocab_size']} greedy={gids.tolist()} "
          f"min_margin={margin:.4f} logit_std={std:.3f} numpy_f64_err={np_err:.1e}")


def main():
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    for fx in FIXTURES:
        make(fx)


if __name__ == "__main__":
    sys.exit(main())
