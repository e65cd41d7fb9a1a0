"""Random documents for the explain truth test: each draws its sizes and a random mix of the format's stages.

``documents(count, seed)`` yields ``(name, document)``: sizes from 1 token up, one to four heads (grouped-query
heads too), numbers of every size (tiny, ordinary, huge, whole numbers that tie), masks of every form, the three
score biases, positional encodings, RoPE (styles, parts, scalings, attention factors, given positions), the norms
(pre, post, qk, add & norm), the residual and its scale, biases, soft-capping, clip_qkv, the query temperature,
sinks, the output gate, multi-head latent attention, additive scores, the three normalisations, cross-attention,
left-out weights, Chinese tokens and a gradient where the format allows one. Nothing here imports attncli.
"""

from __future__ import annotations

import numpy as np

ZH_TOKENS = "我想吃酸菜鱼今天很好"


def _numbers(rng: np.random.Generator, size: float, whole: bool, *shape: int) -> list:
    if whole:
        return rng.integers(-2, 3, size=shape).astype(float).tolist()
    return np.round(rng.normal(0, size, shape), 3).tolist()


def _tokens(rng: np.random.Generator, n: int, prefix: str) -> list[str] | None:
    kind = rng.integers(0, 3)
    if kind == 0:
        return None
    if kind == 1:
        return [f"{prefix}{i}" for i in range(n)]
    return [ZH_TOKENS[i % len(ZH_TOKENS)] + ("" if i < len(ZH_TOKENS) else str(i)) for i in range(n)]


def document(rng: np.random.Generator) -> dict:
    """One document; what it holds is drawn from ``rng``."""
    if rng.random() < 0.08:
        return _latent(rng)
    n = int(rng.integers(1, 7))
    h = int(rng.choice([1, 1, 2, 4]))
    g = int(rng.choice([d for d in (1, 2, 4) if h % d == 0])) if h > 1 and rng.random() < 0.4 else h
    rope = rng.random() < 0.3
    d_k = int(rng.choice([2, 4])) if rope else int(rng.integers(1, 5))
    d_v, d_model = int(rng.integers(1, 5)), int(rng.integers(1, 7))
    size = float(rng.choice([0.05, 0.5, 1.0, 1.0, 2.0, 8.0, 40.0]))
    whole = rng.random() < 0.25
    r = lambda *shape, s=1.0: _numbers(rng, size * s, whole, *shape)  # noqa: E731
    doc: dict = {"inputs": r(n, d_model), "heads": h}
    cross, m, d_src = _sequences(doc, rng, r, n, d_model)
    if g != h:
        doc["kv_heads"] = g
    additive, block_end = _weights(doc, rng, r, (h, g, d_k, d_v, d_model, d_src), rope)
    _bias(doc, rng, r, h, g, d_k, d_v, d_model)
    _scale(doc, rng, additive)
    _mask(doc, rng, n, m)
    _score_bias(doc, rng, h, n, m, size)
    if rng.random() < 0.12:
        doc["positional"] = "sinusoidal" if rng.random() < 0.5 else r(n, d_model)
    if rope:
        _rope(doc, rng, d_k, n, m, cross)
    normalize = "softmax"
    if not additive and rng.random() < 0.1:
        normalize = str(rng.choice(["sum", "none"]))
        doc["normalize"] = normalize
    _stages(doc, rng, r, h, d_k, d_model, normalize, block_end)
    if normalize == "softmax" and not additive and rng.random() < 0.5:
        end = d_model if "output" in doc["weights"] else h * d_v
        doc["gradient"] = _numbers(rng, 1.0, False, n, end)
    return doc


def _sequences(doc, rng, r, n: int, d_model: int) -> tuple[bool, int, int]:
    """The tokens, and a context (cross-attention) or none: (cross, m, d_ctx)."""
    if (tokens := _tokens(rng, n, "t")) is not None:
        doc["tokens"] = tokens
    cross = rng.random() < 0.2
    m, d_src = n, d_model
    if cross:
        m, d_src = int(rng.integers(1, 7)), int(rng.integers(1, 6))
        doc["context"] = r(m, d_src)
        if (tokens := _tokens(rng, m, "c")) is not None:
            doc["context_tokens"] = tokens
    return cross, m, d_src


def _weights(doc, rng, r, sizes: tuple, rope: bool) -> tuple[bool, bool]:
    """W_Q, W_K, W_V (some left out), W_O, the additive score's, the gate's: (additive, a block end to come)."""
    h, g, d_k, d_v, d_model, d_src = sizes
    additive = not rope and rng.random() < 0.1
    weights: dict = {}
    for key, rows, cols in (("query", d_model, h * d_k), ("key", d_src, g * d_k), ("value", d_src, g * d_v)):
        if rows != cols or rng.random() < 0.8:  # a left-out weight is the identity: only where it fits
            weights[key] = r(rows, cols, s=float(rng.choice([0.3, 1.0])))
    block_end = rng.random() < 0.3
    if h > 1 or rng.random() < 0.3 or block_end:
        weights["output"] = r(h * d_v, d_model, s=0.5)
    if additive:
        d_a = int(rng.integers(1, 4))
        weights.update(w1=r(d_k, d_a), w2=r(d_k, d_a), v=r(d_a))
        doc["score"] = "additive"
    if rng.random() < 0.15:
        weights["gate"] = r(d_model, h * d_v)
    doc["weights"] = weights
    return additive, block_end


def _scale(doc, rng, additive: bool) -> None:
    choice = int(rng.integers(0, 4))
    if choice == 1:
        doc["scale"] = "none"
    elif choice == 2:
        doc["scale"] = float(rng.choice([0.5, 2.0, 0.1]))
    elif choice == 3 and additive:
        doc["scale"] = "sqrt"


def _bias(doc, rng, r, h, g, d_k, d_v, d_model) -> None:
    if rng.random() < 0.25:
        bias = {"query": r(h * d_k), "key": r(g * d_k), "value": r(g * d_v)}
        if "output" in doc["weights"]:
            bias["output"] = r(d_model)
        if "gate" in doc["weights"] and rng.random() < 0.5:
            bias["gate"] = r(h * d_v)
        doc["bias"] = {key: value for key, value in bias.items() if rng.random() < 0.7} or {"query": r(h * d_k)}


def _mask(doc, rng, n, m) -> None:
    kind = int(rng.integers(0, 6))
    if kind == 1:
        doc["mask"] = "causal"
    elif kind == 2:
        allowed = rng.random((n, m)) < 0.6
        if rng.random() < 0.7:
            allowed[np.arange(n), np.arange(n) % m] = True
        doc["mask"] = allowed.astype(int).tolist()
    elif kind == 3:
        parts: dict = {}
        if rng.random() < 0.6:
            parts["causal"] = str(rng.choice(["upper_left", "lower_right"])) if n != m else True
        if rng.random() < 0.5:
            parts["window"] = int(rng.integers(1, 4))
        if rng.random() < 0.3:
            parts["chunk"] = int(rng.integers(1, 4))
        if rng.random() < 0.4:
            keys = (rng.random(m) < 0.7).astype(int)
            keys[0] = 1
            parts["keys"] = keys.tolist()
        doc["mask"] = parts or {"causal": True}


def _score_bias(doc, rng, h, n, m, size) -> None:
    bias: dict = {}
    if rng.random() < 0.15:
        matrix = np.round(rng.normal(0, size, (n, m)), 3).astype(object)
        if rng.random() < 0.3:
            matrix[0, -1] = "-inf"
        bias["matrix"] = matrix.tolist()
    if rng.random() < 0.12:
        bias["alibi"] = True if rng.random() < 0.5 else {"slopes": np.round(rng.uniform(0.1, 2.0, h), 3).tolist()}
    if rng.random() < 0.08:
        buckets = int(rng.integers(4, 9))
        bias["relative"] = {"table": np.round(rng.normal(0, 1, (buckets, h)), 3).tolist(), "buckets": buckets,
                            "max_distance": int(rng.integers(buckets + 1, 20)),
                            "bidirectional": bool(rng.random() < 0.6)}
    if bias:
        doc["score_bias"] = bias


def _rope(doc, rng, d_k, n, m, cross) -> None:
    dims = int(rng.choice([d for d in (2, 4) if d <= d_k]))
    rope: dict = {"dims": dims, "style": str(rng.choice(["half", "interleaved", "interleaved_halves"]))}
    if rng.random() < 0.3:
        rope["part"] = "last"
    kind = int(rng.integers(0, 4))
    if kind == 1:
        rope["frequencies"] = np.round(rng.uniform(0.05, 2.0, dims // 2), 3).tolist()
    elif kind == 2:
        rope["base"] = float(rng.choice([10.0, 100.0, 10000.0]))
    elif kind == 3 and dims >= 4:
        kind_ = str(rng.choice(["linear", "dynamic", "llama3", "yarn", "longrope"]))
        scaling: dict = {"type": kind_, "factor": float(rng.choice([2.0, 4.0]))}
        if kind_ != "linear":
            scaling["original_max_position_embeddings"] = int(rng.choice([2, 4, 16]))
        if kind_ == "longrope":
            scaling["short_factor"] = np.round(rng.uniform(1, 2, dims // 2), 3).tolist()
            scaling["long_factor"] = np.round(rng.uniform(1, 4, dims // 2), 3).tolist()
        rope["scaling"] = scaling
    if rng.random() < 0.2:
        rope["attention_factor"] = float(np.round(rng.uniform(0.7, 1.4), 3))
    doc["rope"] = rope
    if rng.random() < 0.3:
        doc["positions"] = np.round(rng.uniform(0, 20, n), 1).tolist()
        if cross:
            doc["context_positions"] = np.round(rng.uniform(0, 20, m), 1).tolist()


def _norm(rng, width: int) -> dict:
    kind = str(rng.choice(["rms", "layer"]))
    norm: dict = {"kind": kind}
    if rng.random() < 0.5:
        norm["gamma"] = np.round(rng.uniform(0.5, 1.5, width), 3).tolist()
    if kind == "layer" and rng.random() < 0.5:
        norm["beta"] = np.round(rng.normal(0, 0.5, width), 3).tolist()
    return norm


def _stages(doc, rng, r, h, d_k, d_model, normalize, block_end) -> None:
    if rng.random() < 0.2:
        doc["pre_norm"] = _norm(rng, d_model)
    if block_end:
        _block_end(doc, rng, r, d_model)
    if rng.random() < 0.15 and doc.get("score") != "additive":
        _qk_norm(doc, rng, d_k)
    if rng.random() < 0.12:
        doc["softcap"] = float(rng.choice([0.5, 2.0, 30.0]))
    if rng.random() < 0.08:
        doc["clip_qkv"] = float(rng.choice([0.5, 1.0, 4.0]))
    if rng.random() < 0.08:
        doc["query_temperature"] = {"floor_scale": float(rng.choice([1.0, 2.0])), "attn_scale": 0.4}
    if normalize == "softmax" and rng.random() < 0.12:
        doc["sinks"] = np.round(rng.normal(0, 2, h), 3).tolist()


def _block_end(doc, rng, r, d_model: int) -> None:
    """add_norm, or the residual (scaled or not, with post_norm or not)."""
    kind = int(rng.integers(0, 3))
    if kind == 0:
        doc["add_norm"] = True if rng.random() < 0.5 else {"gamma": r(d_model), "beta": r(d_model)}
        return
    doc["residual"] = True if kind == 1 else {"scale": float(rng.choice([0.5, 2.0]))}
    if rng.random() < 0.4:
        doc["post_norm"] = _norm(rng, d_model)


def _qk_norm(doc, rng, d_k: int) -> None:
    norm = _norm(rng, d_k)
    norm["scope"] = str(rng.choice(["head", "projection"]))
    if norm["scope"] == "projection":
        norm.pop("gamma", None), norm.pop("beta", None)
    else:
        for key in ("gamma", "beta"):
            if key in norm:
                norm[key] = {"query": norm[key], "key": norm[key]}
    if "rope" in doc and rng.random() < 0.5:
        norm["after_rope"] = True
    doc["qk_norm"] = norm


def _latent(rng: np.random.Generator) -> dict:
    """Multi-head latent attention: W_DKV, W_UKV, kv_norm, a rotated last part (and sometimes W_DQ, W_UQ)."""
    n, h, d_model = int(rng.integers(2, 6)), int(rng.choice([1, 2])), int(rng.integers(2, 6))
    r_kv, d_r, nope, d_v = int(rng.integers(1, 4)), 2, int(rng.integers(1, 3)), int(rng.integers(1, 3))
    r = lambda *shape: np.round(rng.normal(0, 1, shape), 3).tolist()  # noqa: E731
    weights = {"kv_down": r(d_model, r_kv + d_r), "kv_up": r(r_kv, h * (nope + d_v)), "output": r(h * d_v, d_model)}
    latent: dict = {"kv_norm": {"kind": "rms", "gamma": np.round(rng.uniform(0.5, 1.5, r_kv), 3).tolist()}}
    if rng.random() < 0.5:
        r_q = int(rng.integers(1, 4))
        weights.update(query_down=r(d_model, r_q), query_up=r(r_q, h * (nope + d_r)))
        latent["query_norm"] = {"kind": "rms"}
    else:
        weights["query"] = r(d_model, h * (nope + d_r))
    doc = {"inputs": r(n, d_model), "heads": h, "latent": latent, "weights": weights,
           "rope": {"dims": d_r, "part": "last", "style": str(rng.choice(["half", "interleaved"])), "base": 100.0}}
    if rng.random() < 0.5:
        doc["mask"] = "causal"
    if rng.random() < 0.5:
        doc["gradient"] = r(n, d_model)
    return doc


def crafted() -> dict[str, dict]:
    """The cases a random draw seldom makes, where a sentence is true or false by a hair."""
    eye = np.eye(3).tolist()
    return {
        # q₁·k₂ = 0 but q₂·k₁ = 0.000001: "the numbers differ" must print them apart
        "differ_by_a_hair": {"inputs": eye, "scale": "none",
                             "weights": {"query": eye, "key": [[1, 0, 0], [1e-6, 1, 0], [0, 0, 1]]}},
        # the two largest weights tie: the backward step's key is one of two
        "top_two_tie": {"inputs": [[1, 0], [1, 0], [0, 1]], "gradient": [[1, 2], [0, 1], [1, 0]]},
        # tiny scores: the √d_k division changes no weight as printed, and the scale changes the gradient little
        "tiny_scores": {"inputs": (0.01 * np.arange(12).reshape(3, 4) / 11).tolist(),
                        "gradient": {"random": "normal", "seed": 3}},
        # large equal scores: a flat row either way, though the scores are not small
        "large_and_equal": {"inputs": [[10, 0], [10, 0]], "scale": 0.5, "gradient": [[1, 0], [0, 1]]},
        # the largest score a millionth below 0: "negative" must show it
        "just_negative": {"inputs": [[0, 0], [0, 0]], "score_bias": {"matrix": [[-1e-6, -2e-6], [-1e-6, -3e-6]]}},
        # a sink and saturated weights, a causal cache
        "sink_saturated": {"inputs": [[5, 0], [0, 5], [5, 5]], "scale": "none", "sinks": [3.0],
                           "mask": {"causal": "lower_right"}, "gradient": {"random": "normal", "seed": 1}},
        **{f"rope_{kind}": _scaled_rope(kind) for kind in ("linear", "dynamic", "llama3", "yarn", "longrope")},
    }


def _scaled_rope(kind: str) -> dict:
    """Four tokens far along (positions up to 5000) with d_k = 8 turned under ``kind``'s scaling, L = 4096."""
    rng = np.random.default_rng(len(kind))
    scaling: dict = {"type": kind, "factor": 4.0}
    if kind != "linear":
        scaling["original_max_position_embeddings"] = 4096
    if kind == "longrope":
        scaling.update(short_factor=[1.0, 1.5, 2.0, 3.0], long_factor=[1.0, 2.0, 4.0, 8.0])
    return {"inputs": np.round(rng.normal(size=(4, 8)), 3).tolist(), "positions": [0, 7, 4000, 5000],
            "rope": {"dims": 8, "scaling": scaling}, "mask": "causal"}


def documents(count: int, seed: int = 44):
    """The crafted documents, then random ones up to ``count`` (name, document): the same for the same seed."""
    rng = np.random.default_rng(seed)
    made = list(crafted().items())[:count]
    yield from made
    for k in range(count - len(made)):
        yield f"doc{k:03d}", document(rng)
