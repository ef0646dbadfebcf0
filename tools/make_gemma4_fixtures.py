#!/usr/bin/env python3
# Makes the tiny random Gemma 4 golden fixtures under tests/fixtures/gemma4-*/: the same weights
# saved as Gemma4ForCausalLM and as text-only Gemma4ForConditionalGeneration, each with a
# reference.safetensors (input_ids, logits, greedy_ids) and notes.json for the C++ side.
# Pinned: torch==2.9.1 transformers==5.24.0 safetensors  (run: /opt/slm-py/bin/python tools/make_gemma4_fixtures.py)
import json
import os
import shutil
import sys

import numpy as np
import torch
import transformers
from safetensors.numpy import load_file
from safetensors import safe_open
from safetensors.torch import save_file
from transformers import (Gemma4Config, Gemma4ForCausalLM, Gemma4ForConditionalGeneration,
                          Gemma4TextConfig)

assert torch.__version__.split("+")[0] == "2.9.1", torch.__version__
assert transformers.__version__ == "5.24.0", transformers.__version__

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures")
G_GREEDY = 16
MIN_MARGIN = 0.02  # greedy top-1 minus top-2 logit; smaller would make id tests fragile
MIN_DISTINCT = 6  # distinct greedy ids: random tiny models like to repeat one token
SPLIT = (17, 1, 1, 5, 9)  # chunk sizes for the use_cache=True check (rest one token at a time)

S, F = "sliding_attention", "full_attention"

FIXTURES = [
    {
        # Every E2B-style feature: sliding window 6 with T = 40 (several windows), both layer
        # types, KV sharing of both types (layers 3 (sliding) and 4 (full) reuse the K/V of
        # layers 2 and 1: the last non-shared layer of each type), double-wide MLP on the
        # sharing layers, PLE (D = 12), head_dim 16 vs global_head_dim 32, proportional RoPE
        # with partial_rotary_factor 0.25 on full layers (4 of 16 pairs rotate), GQA 4/2,
        # a non-trivial layer_scalar, final softcap 5 (small so that tanh matters).
        "name": "gemma4-e2b-like",
        "seed": 11,
        "T": 40,
        "extra_shared_kv_tensors": True,
        "text": dict(vocab_size=256, vocab_size_per_layer_input=256, hidden_size=80,
                     intermediate_size=64, num_hidden_layers=5, layer_types=[S, F, S, S, F],
                     num_attention_heads=4, num_key_value_heads=2, head_dim=16, global_head_dim=32,
                     sliding_window=6, num_kv_shared_layers=2, use_double_wide_mlp=True,
                     hidden_size_per_layer_input=12, final_logit_softcapping=5.0,
                     rms_norm_eps=1e-6, max_position_embeddings=1024, tie_word_embeddings=True,
                     rope_parameters={S: {"rope_type": "default", "rope_theta": 10000.0},
                                      F: {"rope_type": "proportional", "rope_theta": 1000000.0,
                                          "partial_rotary_factor": 0.25}}),
    },
    {
        # The larger-model variant: no PLE, no KV sharing, attention_k_eq_v (full layers reuse
        # the raw k_proj output as V and have no v_proj) with num_global_key_value_heads 1,
        # window 4, softcap 30, hidden 56.
        "name": "gemma4-keqv",
        "seed": 12,
        "T": 36,
        "extra_shared_kv_tensors": False,
        "text": dict(vocab_size=320, hidden_size=56, intermediate_size=112, num_hidden_layers=4,
                     layer_types=[S, S, F, F], num_attention_heads=4, num_key_value_heads=2,
                     head_dim=8, global_head_dim=24, num_global_key_value_heads=1,
                     attention_k_eq_v=True, sliding_window=4, num_kv_shared_layers=0,
                     use_double_wide_mlp=False, hidden_size_per_layer_input=0,
                     vocab_size_per_layer_input=320, final_logit_softcapping=30.0,
                     rms_norm_eps=1e-6, max_position_embeddings=1024, tie_word_embeddings=True,
                     rope_parameters={S: {"rope_type": "default", "rope_theta": 10000.0},
                                      F: {"rope_type": "proportional", "rope_theta": 1000000.0,
                                          "partial_rotary_factor": 0.25}}),
    },
]


def init_weights(model, seed):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            if name.endswith("norm.weight"):
                p.copy_(1.0 + 0.1 * torch.randn(p.shape, generator=g))
            else:
                p.copy_(0.15 * torch.randn(p.shape, generator=g))
        for name, b in sorted(model.named_buffers()):
            if name.endswith("layer_scalar"):
                b.copy_(0.75 + 0.5 * torch.rand(b.shape, generator=g))


def logits_cached(model, ids):
    """Logits of every position computed with use_cache=True in chunks (SPLIT, then 1 by 1)."""
    out_chunks, past, pos = [], None, 0
    sizes = list(SPLIT) + [1] * len(ids)
    for n in sizes:
        if pos >= len(ids):
            break
        chunk = ids[pos:pos + n]
        out = model(chunk[None], past_key_values=past, use_cache=True)
        past = out.past_key_values
        out_chunks.append(out.logits[0])
        pos += len(chunk)
    return torch.cat(out_chunks)


def greedy(model, ids, n):
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


def add_shared_kv_tensors(path, text_cfg, seed):
    """Adds k/v projections and norms for KV-sharing layers, as some checkpoints carry them:
    readers must skip them (transformers ignores them on load)."""
    with safe_open(path, "pt") as f:
        tensors = {k: f.get_tensor(k) for k in f.keys()}
        meta = f.metadata()
    prefix = next(k for k in tensors if k.endswith("embed_tokens.weight"))[:-len("embed_tokens.weight")]
    g = torch.Generator().manual_seed(seed)
    first = text_cfg.num_hidden_layers - text_cfg.num_kv_shared_layers
    added = []
    for l in range(first, text_cfg.num_hidden_layers):
        d = text_cfg.per_layer_config[l].head_dim
        kv = text_cfg.per_layer_config[l].num_key_value_heads
        for name, shape in (("k_proj.weight", (kv * d, text_cfg.hidden_size)),
                            ("v_proj.weight", (kv * d, text_cfg.hidden_size)),
                            ("k_norm.weight", (d,))):
            key = f"{prefix}layers.{l}.self_attn.{name}"
            assert key not in tensors
            tensors[key] = torch.randn(shape, generator=g) * 100.0  # would wreck logits if used
            added.append(key)
    save_file(tensors, path, metadata=meta)
    return added


def hub_style_config(path, text_kw):
    """transformers 5.24.0 saves per-layer head_dim/kv heads as `per_layer_config`; the released
    Gemma 4 checkpoints say `global_head_dim` (and `num_global_key_value_heads`). Rewrite to the
    released form (the reference is made from the reloaded files, so this is checked)."""
    with open(path) as f:
        cfg = json.load(f)
    text = cfg["text_config"] if "text_config" in cfg else cfg
    text.pop("per_layer_config")
    text["global_head_dim"] = text_kw["global_head_dim"]
    if "num_global_key_value_heads" in text_kw:
        text["num_global_key_value_heads"] = text_kw["num_global_key_value_heads"]
    with open(path, "w") as f:
        json.dump(cfg, f, indent=2, sort_keys=True)
        f.write("\n")


def save_reference(d, ids, logits, gids, margin):
    save_file({"input_ids": ids.contiguous(), "logits": logits.contiguous(),
               "greedy_ids": gids.contiguous()},
              os.path.join(d, "reference.safetensors"),
              # one key only: safetensors orders several metadata keys randomly
              metadata={"generator": f"tools/make_gemma4_fixtures.py torch=={torch.__version__} "
                                     f"transformers=={transformers.__version__} fp32 eager"})


def write_notes(d, fx, text_cfg, cls, extra, margin):
    L = text_cfg.num_hidden_layers
    first = L - text_cfg.num_kv_shared_layers
    modes = text_cfg.kv_sharing_modes
    src = {}
    for l in range(first, L):
        src[l] = max(i for i in range(first) if text_cfg.layer_types[i] == text_cfg.layer_types[l])
    notes = {
        "class": cls,
        "dtype": "float32 (weights, embed scales and all math)",
        "embed_scale": text_cfg.hidden_size ** 0.5,
        "embed_scale_note": "sqrt(hidden_size) applied in the weight dtype (fp32 here; a bf16 "
                            "checkpoint rounds it to bf16)",
        "per_layer_embed_scale": (text_cfg.hidden_size_per_layer_input ** 0.5
                                  if text_cfg.hidden_size_per_layer_input else None),
        "layer_types": text_cfg.layer_types,
        "sliding_window": text_cfg.sliding_window,
        "sliding_window_rule": "query at position p sees keys k with p - sliding_window < k <= p "
                               "(exactly sliding_window keys including itself)",
        "kv_sharing": {str(l): src[l] for l in src},
        "kv_sharing_modes": modes,
        "ffn_width_per_layer": [text_cfg.intermediate_size *
                                (2 if text_cfg.use_double_wide_mlp and modes[l] == "reuse" else 1)
                                for l in range(L)],
        "kv_heads_per_layer": [text_cfg.per_layer_config[l].num_key_value_heads for l in range(L)],
        "head_dim_per_layer": [text_cfg.per_layer_config[l].head_dim for l in range(L)],
        "attention_k_eq_v": text_cfg.attention_k_eq_v,
        "attention_k_eq_v_note": "when true, full (non-sliding) layers have no v_proj: V is the "
                                 "raw k_proj output, then v_norm (no weight); K gets k_norm + RoPE. "
                                 "num_global_key_value_heads applies only in this case (transformers "
                                 "5.24.0 ignores it otherwise)",
        "layer_scalar": "per-layer [1] tensor model.layers.{l}.layer_scalar in the checkpoint "
                        "(random in [0.75, 1.25] here)",
        "final_logit_softcapping": text_cfg.final_logit_softcapping,
        "ignored_tensors_in_checkpoint": extra,
        "greedy_min_margin": margin,
    }
    with open(os.path.join(d, "notes.json"), "w") as f:
        json.dump(notes, f, indent=2)
        f.write("\n")


def numpy_forward(d, ids):
    """Independent float64 forward pass from the files alone, following MODELS.md (Gemma 4):
    checks that the fixture files and that description agree with transformers."""
    with open(os.path.join(d, "config.json")) as f:
        cfg = json.load(f)
    c = cfg.get("text_config", cfg)
    w = {k: v.astype(np.float64) for k, v in load_file(os.path.join(d, "model.safetensors")).items()}
    pre = "model.language_model." if "model.language_model.embed_tokens.weight" in w else "model."
    H, L, nh, D = c["hidden_size"], c["num_hidden_layers"], c["num_attention_heads"], c["hidden_size_per_layer_input"]
    eps, W, T = c["rms_norm_eps"], c["sliding_window"], len(ids)
    types = c["layer_types"]
    first_shared = L - c["num_kv_shared_layers"]

    def rms(x, g=None):
        y = x / np.sqrt((x * x).mean(-1, keepdims=True) + eps)
        return y if g is None else y * g

    def gelu(z):
        return 0.5 * z * (1 + np.tanh(np.sqrt(2 / np.pi) * (z + 0.044715 * z ** 3)))

    def rope_tables(ltype, hd):
        rp = c["rope_parameters"][ltype]
        n_rot = int(rp.get("partial_rotary_factor", 1.0) * hd / 2) if rp["rope_type"] == "proportional" else hd // 2
        inv = np.zeros(hd // 2)
        inv[:n_rot] = rp["rope_theta"] ** (-2 * np.arange(n_rot) / hd)
        ang = np.arange(T)[:, None] * inv[None, :]
        ang = np.concatenate([ang, ang], 1)
        return np.cos(ang), np.sin(ang)

    def rot(x, cs):  # [T, heads, hd]
        hd = x.shape[-1]
        x1, x2 = x[..., :hd // 2], x[..., hd // 2:]
        return x * cs[0][:, None] + np.concatenate([-x2, x1], -1) * cs[1][:, None]

    E = w[pre + "embed_tokens.weight"]
    h = E[ids] * np.sqrt(H)
    if D:
        tok = (w[pre + "embed_tokens_per_layer.weight"][ids] * np.sqrt(D)).reshape(T, L, D)
        ctx = ((h @ w[pre + "per_layer_model_projection.weight"].T) * H ** -0.5).reshape(T, L, D)
        ctx = rms(ctx, w[pre + "per_layer_projection_norm.weight"])
        pli = (ctx + tok) * 2 ** -0.5
    kv_store = {}
    pos = np.arange(T)
    for l in range(L):
        p = f"{pre}layers.{l}."
        full = types[l] == "full_attention"
        hd = c["global_head_dim"] if full else c["head_dim"]
        k_eq_v = c.get("attention_k_eq_v", False) and full
        nkv = c["num_global_key_value_heads"] if (full and k_eq_v and c.get("num_global_key_value_heads")) \
            else c["num_key_value_heads"]
        cs = rope_tables(types[l], hd)
        x = rms(h, w[p + "input_layernorm.weight"])
        q = rot(rms((x @ w[p + "self_attn.q_proj.weight"].T).reshape(T, nh, hd), w[p + "self_attn.q_norm.weight"]), cs)
        if l < first_shared:
            kr = (x @ w[p + "self_attn.k_proj.weight"].T).reshape(T, nkv, hd)
            vr = kr if k_eq_v else (x @ w[p + "self_attn.v_proj.weight"].T).reshape(T, nkv, hd)
            k = rot(rms(kr, w[p + "self_attn.k_norm.weight"]), cs)
            v = rms(vr)
            kv_store[l] = (k, v)
        else:
            src = max(i for i in range(first_shared) if types[i] == types[l])
            k, v = kv_store[src]
        mask = pos[None, :] <= pos[:, None]
        if not full:
            mask &= pos[None, :] > pos[:, None] - W
        out = np.zeros((T, nh, hd))
        for head in range(nh):
            kvh = head // (nh // k.shape[1])
            sc = np.where(mask, q[:, head] @ k[:, kvh].T, -np.inf)  # scaling 1.0
            pr = np.exp(sc - sc.max(-1, keepdims=True))
            out[:, head] = (pr / pr.sum(-1, keepdims=True)) @ v[:, kvh]
        a = out.reshape(T, nh * hd) @ w[p + "self_attn.o_proj.weight"].T
        h = h + rms(a, w[p + "post_attention_layernorm.weight"])
        x = rms(h, w[p + "pre_feedforward_layernorm.weight"])
        m = (gelu(x @ w[p + "mlp.gate_proj.weight"].T) * (x @ w[p + "mlp.up_proj.weight"].T)) @ w[p + "mlp.down_proj.weight"].T
        h = h + rms(m, w[p + "post_feedforward_layernorm.weight"])
        if D:
            g = gelu(h @ w[p + "per_layer_input_gate.weight"].T) * pli[:, l, :]
            h = h + rms(g @ w[p + "per_layer_projection.weight"].T, w[p + "post_per_layer_input_norm.weight"])
        h = h * w[p + "layer_scalar"][0]
    z = rms(h, w[pre + "norm.weight"]) @ E.T
    cap = c.get("final_logit_softcapping")
    return cap * np.tanh(z / cap) if cap else z


def reference(model, fx, vocab):
    T = fx["T"]
    for attempt in range(200):
        g = torch.Generator().manual_seed(100 + fx["seed"] + 1000 * attempt)
        ids = torch.randint(0, vocab, (T,), generator=g, dtype=torch.int64)
        with torch.no_grad():
            gids, margin = greedy(model, ids, G_GREEDY)
        if margin > MIN_MARGIN and len(set(gids.tolist())) >= MIN_DISTINCT:
            break
    assert margin > MIN_MARGIN, (fx["name"], margin)
    with torch.no_grad():
        logits = model(ids[None], use_cache=False).logits[0].to(torch.float32)
        cached = logits_cached(model, ids)
        err = float((cached - logits).abs().max())
        # fp32 summation-order noise is ~1e-5; a wrong window or cache would be O(1)
        assert err < 1e-4, ("use_cache=True differs from use_cache=False", err)
        full = model(torch.cat([ids, gids])[None], use_cache=False).logits[0]
        assert torch.equal(torch.argmax(full[T - 1:-1], dim=-1), gids)
    assert len(set(gids.tolist())) >= MIN_DISTINCT, ("greedy ids too uniform", gids)
    std = float(logits.std(dim=-1).mean())
    assert std > 0.5, ("logits too flat", std)
    return ids, logits, gids, margin, err, std, attempt


def make(fx):
    torch.manual_seed(fx["seed"])
    text_cfg = Gemma4TextConfig(**fx["text"], bos_token_id=2, eos_token_id=1, pad_token_id=0,
                                attn_implementation="eager")
    L = text_cfg.num_hidden_layers
    assert text_cfg.layer_types == fx["text"]["layer_types"]
    if text_cfg.num_kv_shared_layers:
        shared = text_cfg.layer_types[L - text_cfg.num_kv_shared_layers:]
        assert S in shared and F in shared, "KV sharing must cover both layer types"
    causal = Gemma4ForCausalLM(text_cfg).to(torch.float32).eval()
    init_weights(causal, fx["seed"])

    # The same weights as Gemma4ForConditionalGeneration without vision/audio towers.
    cond_cfg = Gemma4Config(text_config=text_cfg.to_dict(), vision_config=None, audio_config=None,
                            attn_implementation="eager")
    cond = Gemma4ForConditionalGeneration(cond_cfg).to(torch.float32).eval()
    sd = {("model.language_model." + k[len("model."):]) if k.startswith("model.") else k: v
          for k, v in causal.state_dict().items()}
    missing, unexpected = cond.load_state_dict(sd, strict=False)
    assert not unexpected and all(k == "lm_head.weight" for k in missing), (missing, unexpected)

    results = {}
    for suffix, model, cls in (("causal", causal, Gemma4ForCausalLM),
                               ("cond", cond, Gemma4ForConditionalGeneration)):
        d = os.path.join(ROOT, f"{fx['name']}-{suffix}")
        shutil.rmtree(d, ignore_errors=True)
        model.save_pretrained(d, safe_serialization=True)
        hub_style_config(os.path.join(d, "config.json"), fx["text"])
        extra = []
        if fx["extra_shared_kv_tensors"] and suffix == "cond":
            extra = add_shared_kv_tensors(os.path.join(d, "model.safetensors"), text_cfg,
                                          fx["seed"] + 50)
        # The reference comes from the model as reloaded from disk, so the files are what is tested.
        ref = cls.from_pretrained(d, attn_implementation="eager", dtype=torch.float32).eval()
        ref_cfg = ref.config.get_text_config()
        for l in range(L):
            for a in ("head_dim", "num_key_value_heads"):
                assert (getattr(ref_cfg.per_layer_config[l], a) ==
                        getattr(text_cfg.per_layer_config[l], a)), (l, a)
        ids, logits, gids, margin, err, std, attempt = reference(ref, fx, text_cfg.vocab_size)
        with torch.no_grad():
            mem = model(ids[None], use_cache=False).logits[0]
        assert torch.equal(mem, logits), "reloaded model differs from the one saved"
        np_err = float(np.abs(numpy_forward(d, ids.numpy()) - logits.numpy()).max())
        assert np_err < 1e-4, ("numpy forward (MODELS.md) from the files disagrees", np_err)
        save_reference(d, ids, logits, gids, margin)
        write_notes(d, fx, text_cfg, cls.__name__, extra, margin)
        results[suffix] = (ids, logits, gids)
        print(f"{fx['name']}-{suffix}: prompt attempt {attempt} T={len(ids)} V={text_cfg.vocab_size} greedy={gids.tolist()} "
              f"min_margin={margin:.4f} cache_err={err:.2e} logit_std={std:.3f} extra={len(extra)} "
              f"numpy_f64_err={np_err:.1e}")
    a, b = results["causal"], results["cond"]
    assert torch.equal(a[0], b[0]) and torch.equal(a[2], b[2])
    assert float((a[1] - b[1]).abs().max()) < 1e-5, "causal and conditional-generation forms differ"


def main():
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    for fx in FIXTURES:
        make(fx)


if __name__ == "__main__":
    sys.exit(main())
