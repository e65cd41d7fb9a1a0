"""Documents with any set of stages, and the same layer written again in PyTorch from FORMAT.md alone (float64).

:func:`document` builds a document from a set of feature names (random numbers, seeded); :func:`torch_forward`
computes it with torch operations on leaf tensors, keeping every intermediate, so that autograd gives every
gradient the backward pass names.  Nothing here imports attncli.
"""

from __future__ import annotations

import math

import numpy as np

N, M, D_MODEL, D_CTX, H, D_K, D_V = 5, 6, 6, 5, 4, 4, 3
FEATURES = ("causal", "mask_matrix", "window", "bias_matrix", "alibi", "softcap", "rope", "gqa", "qk_norm",
            "pre_norm", "residual", "post_norm", "add_norm", "gate", "clip", "sinks", "temperature", "positional",
            "context", "biases",
            "v_norm")


def document(features: set[str], seed: int) -> dict:
    """A document with ``features`` (names of FEATURES), its choices and numbers drawn from ``seed``."""
    rng = np.random.default_rng(seed)
    r = lambda *shape, s=1.0: (s * rng.normal(size=shape)).tolist()  # noqa: E731
    g = 2 if "gqa" in features else H
    m = M if "context" in features else N
    d_src = D_CTX if "context" in features else D_MODEL
    doc = {"inputs": r(N, D_MODEL), "heads": H, "kv_heads": g,
           "weights": {"query": r(D_MODEL, H * D_K, s=0.7), "key": r(d_src, g * D_K, s=0.7),
                       "value": r(d_src, g * D_V), "output": r(H * D_V, D_MODEL, s=0.5)},
           "gradient": r(N, D_MODEL)}
    if "context" in features:
        doc["context"] = r(M, D_CTX)
    _mask(doc, features, rng, m)
    for feature in sorted(features):
        if feature in _ADD:
            _ADD[feature](doc, rng, r, g, features)
    return doc


def direct_document(features: set[str], seed: int, flat: bool) -> dict:
    """A document of backward_reference's with Q, K and V given instead of X and the weights (as computed from
    them, before any clip), and dO per head (h × n × d_v) as its gradient; ``flat``: Q, K, V as n × h·d."""
    doc = document(features, seed)
    x, w = np.array(doc.pop("inputs")), {key: np.array(value) for key, value in doc.pop("weights").items()}
    c = np.array(doc.pop("context")) if "context" in doc else x
    h, g = doc["heads"], doc["kv_heads"]
    qkv = {"queries": (x @ w["query"], h), "keys": (c @ w["key"], g), "values": (c @ w["value"], g)}
    for key, (array, heads) in qkv.items():
        doc[key] = (array if flat else array.reshape(len(array), heads, -1).transpose(1, 0, 2)).tolist()
    doc.pop("gradient")
    doc.pop("bias", None)
    n, d_v = len(x), w["value"].shape[1] // g
    doc["gradient"] = np.random.default_rng(seed).normal(size=(h, n, d_v)).tolist()
    return doc


def _mask(doc: dict, features: set[str], rng, m: int) -> None:
    mask = {}
    if "causal" in features:
        mask["causal"] = True
    if "window" in features:
        mask["window"] = 3
    if "mask_matrix" in features:
        allowed = rng.random((N, m)) < 0.6
        allowed[np.arange(N), np.arange(N) % m] = True  # every query keeps a key (its own column)
        mask["matrix"] = allowed.astype(int).tolist()
    if mask:
        doc["mask"] = mask
    if "bias_matrix" in features:
        doc.setdefault("score_bias", {})["matrix"] = (rng.normal(size=(H, N, m))).tolist()


def _rope_doc(doc, rng, r, g, features):
    dims = int(rng.choice([2, 4]))
    doc["rope"] = {"dims": dims, "style": str(rng.choice(["half", "interleaved", "interleaved_halves"])),
                   "part": str(rng.choice(["first", "last"])), "frequencies": np.abs(r(dims // 2)).tolist(),
                   "attention_factor": float(rng.uniform(0.8, 1.3))}


def _qk_norm_doc(doc, rng, r, g, features):
    scope, kind = str(rng.choice(["head", "projection"])), str(rng.choice(["rms", "layer"]))
    widths = ((H * D_K,), (g * D_K,)) if scope == "projection" else (
        ((D_K,), (D_K,)) if rng.random() < 0.5 else ((H, D_K), (g, D_K)))
    norm = {"kind": kind, "scope": scope, "after_rope": bool(rng.random() < 0.5),
            "gamma": {"query": r(*widths[0]), "key": r(*widths[1])}}
    if kind == "layer":
        norm["beta"] = {"query": r(*widths[0]), "key": r(*widths[1])}
    doc["qk_norm"] = norm


def _row_norm(rng, r) -> dict:
    kind = str(rng.choice(["rms", "layer"]))
    return {"kind": kind, "gamma": r(D_MODEL), **({"beta": r(D_MODEL)} if kind == "layer" else {})}


def _block_end(doc, rng, r, g, features):
    """add_norm, else residual (scaled), with post_norm or not: once, whichever of them the features name."""
    if "add_norm" in features:
        doc["add_norm"] = {"gamma": r(D_MODEL), "beta": r(D_MODEL)}
        return
    doc["residual"] = {"scale": float(rng.uniform(0.3, 2.0))}
    if "post_norm" in features:
        doc["post_norm"] = _row_norm(rng, r)


def _gate_doc(doc, rng, r, g, features):
    doc["weights"]["gate"] = r(D_MODEL, H * D_V)
    doc.setdefault("bias", {})["gate"] = r(H * D_V)


def _biases(doc, rng, r, g, features):
    doc.setdefault("bias", {}).update(query=r(H * D_K), key=r(g * D_K), value=r(g * D_V), output=r(D_MODEL))


_ADD = {
    "alibi": lambda doc, rng, r, g, f: doc.setdefault("score_bias", {}).update(alibi={"slopes": np.abs(r(H)).tolist()}),
    "softcap": lambda doc, rng, r, g, f: doc.update(softcap=float(rng.uniform(0.5, 3.0))),
    "rope": _rope_doc, "qk_norm": _qk_norm_doc,
    "pre_norm": lambda doc, rng, r, g, f: doc.update(pre_norm=_row_norm(rng, r)),
    "add_norm": _block_end, "residual": _block_end, "post_norm": _block_end,
    "gate": _gate_doc, "clip": lambda doc, rng, r, g, f: doc.update(clip_qkv=0.8),
    "sinks": lambda doc, rng, r, g, f: doc.update(sinks=r(H)),
    "temperature": lambda doc, rng, r, g, f: doc.update(query_temperature={"floor_scale": 2.0, "attn_scale": 0.4}),
    "positional": lambda doc, rng, r, g, f: doc.update(positional=r(N, D_MODEL)),
    "biases": _biases,
    "v_norm": lambda doc, rng, r, g, f: doc.update(v_norm={"eps": 1e-6}),
}


def _norm(torch, x, gamma, beta, kind, eps, dims=(-1,)):
    if kind == "layer":
        x = x - x.mean(dim=dims, keepdim=True)
    y = x / torch.sqrt((x * x).mean(dim=dims, keepdim=True) + eps)
    y = y * gamma
    return y + beta if beta is not None else y


def _rope(torch, x, positions, rope):
    """Pairs turned by p·f (times a), members read and written as FORMAT.md's styles say; a new tensor."""
    dims, d = rope["dims"], x.shape[-1]
    lo = 0 if rope.get("part", "first") == "first" else d - dims
    style = rope.get("style", "half")
    pairs_read = ([(lo + i, lo + i + dims // 2) for i in range(dims // 2)] if style == "half"
                  else [(lo + 2 * i, lo + 2 * i + 1) for i in range(dims // 2)])
    pairs_written = ([(lo + 2 * i, lo + 2 * i + 1) for i in range(dims // 2)] if style == "interleaved"
                     else [(lo + i, lo + i + dims // 2) for i in range(dims // 2)])
    columns = [x[..., j] for j in range(d)]
    out = list(columns)
    factor = rope.get("attention_factor", 1.0)
    for (i, j), (k, k2), f in zip(pairs_read, pairs_written, rope["frequencies"], strict=True):
        angle = positions * f
        c, s = torch.cos(angle) * factor, torch.sin(angle) * factor
        a, b = columns[i], columns[j]
        out[k], out[k2] = a * c - b * s, b * c + a * s
    return torch.stack(out, dim=-1)


def leaves(torch, doc: dict) -> dict:
    """Every matrix of the document a gradient is taken of, as a float64 leaf tensor (by the grad key's name)."""
    t = lambda v: torch.tensor(np.array(v, dtype=np.float64), requires_grad=True)  # noqa: E731
    out = {"inputs": t(doc["inputs"])}
    if "context" in doc:
        out["context"] = t(doc["context"])
    for name, value in doc["weights"].items():
        out[f"weight_{name}"] = t(value)
    for name, value in doc.get("bias", {}).items():
        out[f"bias_{name}"] = t(value)
    for norm in ("pre_norm", "post_norm", "add_norm"):
        for p in ("gamma", "beta"):
            if norm in doc and p in doc[norm]:
                out[f"{norm}_{p}"] = t(doc[norm][p])
    if "qk_norm" in doc:
        for p in ("gamma", "beta"):
            for what in ("query", "key"):
                if p in doc["qk_norm"]:
                    out[f"qk_norm_{p}_{what}"] = t(doc["qk_norm"][p][what])
    if "sinks" in doc:
        out["sinks"] = t(doc["sinks"])
    return out


def _heads(x, h):  # (n, h·d) -> (h, n, d)
    return x.reshape(x.shape[0], h, -1).transpose(0, 1)


def _qk_norm(torch, x, heads, leaf, what, norm):
    """qk_norm of (h, n, d) queries or keys, over each head's row or over a token's h·d numbers."""
    gamma, beta = leaf[f"qk_norm_gamma_{what}"], leaf.get(f"qk_norm_beta_{what}")
    eps = 1e-6 if norm["kind"] == "rms" else 1e-5
    if norm.get("scope", "head") == "projection":
        flat = x.transpose(0, 1).reshape(x.shape[1], -1)  # (n, h·d)
        return _heads(_norm(torch, flat, gamma, beta, norm["kind"], eps), heads)
    shape = (-1, 1, x.shape[-1])
    return _norm(torch, x, gamma.reshape(shape), None if beta is None else beta.reshape(shape), norm["kind"], eps)


def torch_forward(torch, doc: dict, leaf: dict) -> dict:
    """The layer in torch, every intermediate kept (retain_grad), by its JSON key; ``last``: the block's end."""
    kept = {}

    def keep(key, x):
        x.retain_grad()
        kept[key] = x
        return x

    x0 = leaf["inputs"] + (torch.tensor(doc["positional"], dtype=torch.float64) if "positional" in doc else 0)
    x = x0
    if "pre_norm" in doc:
        x = keep("normalized_inputs", _named_norm(torch, x0, leaf, doc, "pre_norm"))
    q, k, v, p_q, p_k = _qk(torch, doc, leaf, x, keep)
    heads = attend(torch, doc, leaf, q, k, v, p_q, p_k, kept, keep)
    if "gate" in doc["weights"]:
        gate = keep("gate", torch.sigmoid(_heads(_linear(leaf, x, "gate"), doc["heads"])))
        heads = keep("gated_head_outputs", heads * gate)
    n = q.shape[1]
    y = keep("output", heads.transpose(0, 1).reshape(n, -1) @ leaf["weight_output"] + leaf.get("bias_output", 0))
    kept["last"] = _end(torch, doc, leaf, x0, y, keep)
    return kept


def _linear(leaf, src, name):
    return src @ leaf[f"weight_{name}"] + leaf.get(f"bias_{name}", 0)


def _named_norm(torch, x, leaf, doc, name):
    p = doc[name]
    eps = 1e-6 if p["kind"] == "rms" else 1e-5
    return _norm(torch, x, leaf[f"{name}_gamma"], leaf.get(f"{name}_beta"), p["kind"], eps)


def _qk(torch, doc, leaf, x, keep):
    """Q, K, V (after the clip), and Q and K as the scores see them; the positions."""
    h, g = doc["heads"], doc.get("kv_heads", doc["heads"])
    c = leaf.get("context", x)
    q, k, v = (_heads(_linear(leaf, src, name), heads)
               for src, name, heads in ((x, "query", h), (c, "key", g), (c, "value", g)))
    return after_projections(torch, doc, leaf, q, k, v, keep)


def after_projections(torch, doc, leaf, q, k, v, keep):
    """From Q, K, V (h, n, d_k), (g, m, d_k), (g, m, d_v): the clip, qk_norm, rope, the temperature."""
    h, g = q.shape[0], k.shape[0]
    if "clip_qkv" in doc:
        q, k, v = (torch.clamp(t, -doc["clip_qkv"], doc["clip_qkv"]) for t in (q, k, v))
    q, k, v = keep("queries", q), keep("keys", k), keep("values", v)
    if "v_norm" in doc:  # Gemma 4: V / √(mean(V²) + ε), no γ
        v = keep("normalized_values", v / torch.sqrt((v * v).mean(dim=-1, keepdim=True) + doc["v_norm"]["eps"]))
    p_q = torch.arange(q.shape[1], dtype=torch.float64)
    same = "context" not in doc and k.shape[1] == q.shape[1]  # the keys at the queries' positions
    p_k = p_q if same else torch.arange(k.shape[1], dtype=torch.float64)
    norm = doc.get("qk_norm")
    if norm and not norm.get("after_rope"):
        q = keep("normalized_queries", _qk_norm(torch, q, h, leaf, "query", norm))
        k = keep("normalized_keys", _qk_norm(torch, k, g, leaf, "key", norm))
    if "rope" in doc:
        q = keep("queries_rotated", _rope(torch, q, p_q, doc["rope"]))
        k = keep("keys_rotated", _rope(torch, k, p_k, doc["rope"]))
    if norm and norm.get("after_rope"):
        q = keep("normalized_queries", _qk_norm(torch, q, h, leaf, "query", norm))
        k = keep("normalized_keys", _qk_norm(torch, k, g, leaf, "key", norm))
    if "query_temperature" in doc:
        t = doc["query_temperature"]
        q = q * (1 + t["attn_scale"] * torch.log(1 + torch.floor((p_q + 1) / t["floor_scale"])))[None, :, None]
    return keep("kernel_queries", q), keep("kernel_keys", k), v, p_q, p_k


def attend(torch, doc, leaf, q, k, v, p_q, p_k, kept, keep):
    """Scores to H: the scale, cap, bias, mask, softmax (with sinks) and A·V."""
    z = keep("scaled_scores", _scaled(torch, doc, keep("scores", _scores(q, k, doc)), p_q, p_k))
    a, kept["lse"] = _softmax(torch, doc, leaf, z)
    return keep("head_outputs", keep("weights", a) @ v.repeat_interleave(q.shape[0] // k.shape[0], dim=0))


def torch_direct(torch, doc: dict, leaf: dict) -> dict:
    """A document giving Q, K and V (leaf["queries"] …, before the clip): output = the heads concatenated."""
    kept = {}

    def keep(key, x):
        x.retain_grad()
        kept[key] = x
        return x

    q, k, v, p_q, p_k = after_projections(torch, doc, leaf, leaf["given_queries"], leaf["given_keys"],
                                          leaf["given_values"], keep)
    heads = attend(torch, doc, leaf, q, k, v, p_q, p_k, kept, keep)
    kept["last"] = keep("output", heads.transpose(0, 1).reshape(q.shape[1], -1))
    return kept


def _scores(q, k, doc):
    return q @ k.repeat_interleave(q.shape[0] // k.shape[0], dim=0).transpose(1, 2)


def _scaled(torch, doc, s, p_q, p_k):
    z = s * doc.get("scale", 1 / math.sqrt(D_K))
    if "softcap" in doc:
        z = doc["softcap"] * torch.tanh(z / doc["softcap"])
    bias = doc.get("score_bias", {})
    if "matrix" in bias:
        z = z + torch.tensor(bias["matrix"], dtype=torch.float64)
    if "alibi" in bias:
        slopes = torch.tensor(bias["alibi"]["slopes"], dtype=torch.float64)
        z = z + slopes[:, None, None] * (p_k[None, :] - p_q[:, None])
    return z


def _softmax(torch, doc, leaf, z):
    """The weights over the allowed keys (with the sink's term), and lse."""
    h, n, m = z.shape
    mask = doc.get("mask", {})
    i, j = torch.arange(n)[:, None], torch.arange(m)[None, :]
    allowed = torch.ones(h, n, m, dtype=torch.bool)
    if mask.get("causal"):
        allowed = allowed & (j <= i)
    if "window" in mask:
        allowed = allowed & ((i - j < mask["window"]) if mask.get("causal") else ((i - j).abs() < mask["window"]))
    if "matrix" in mask:
        allowed = allowed & torch.tensor(mask["matrix"], dtype=torch.bool)
    zm = torch.where(allowed, z, torch.tensor(-math.inf, dtype=torch.float64))
    if "sinks" in doc:
        zm_all = torch.cat([zm, leaf["sinks"][:, None, None].expand(h, n, 1)], dim=-1)
    else:
        zm_all = zm
    lse = torch.logsumexp(zm_all, dim=-1)
    return torch.exp(zm - lse[..., None]), lse


def _end(torch, doc, leaf, x0, y, keep):
    """post_norm, the scaled residual, add_norm: the block's last quantity."""
    residual = doc.get("residual")
    alpha = residual["scale"] if isinstance(residual, dict) else 1.0
    if "post_norm" in doc:
        y = keep("normalized_output", _named_norm(torch, y, leaf, doc, "post_norm"))
    if not residual and "add_norm" not in doc:
        return y
    last = keep("residual", x0 + alpha * y)
    if "add_norm" in doc:
        last = keep("normalized", _norm(torch, last, leaf["add_norm_gamma"], leaf["add_norm_beta"], "layer", 1e-5))
    return last
