"""Every sentence of explain's delta-rule step is true of its document (docs/format.md Part 4): 30 random linear:
documents given directly (gated_delta and kda, the l2 norm on and off, the three scales, an initial state or none),
every token of every value head, in English and in Chinese.

The state is worked again here, token by token from the format's formulas (S ← e^g·S, then S ← S + k̂·uᵀ with
u = β·(v − Sᵀk̂), o = Sᵀ(scale·q̂)), and each number a sentence prints (e^g, Sᵀk̂, β, v, u, k̂, o, q̂, the scale) and
each state it shows (before, decayed, k̂·uᵀ, after) must be that one's, at the decimals printed; the correction's
arithmetic must hold from its printed numbers alone.
"""

from __future__ import annotations

import re

import numpy as np
from explain_arithmetic import value
from explain_facts_checks import shown

from attncli import _document
from attncli.core.linear import run
from attncli.inputs.linear import read_linear
from attncli.teach.explain.delta import delta_step

NUMBER = r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?"
VECTOR = rf"\[(?:{NUMBER})(?:, {NUMBER})*\]"


def linear_document(rng: np.random.Generator) -> dict:
    kind = str(rng.choice(["gated_delta", "kda"]))
    h_k = int(rng.choice([1, 2]))
    h_v = h_k * int(rng.choice([1, 2])) if kind == "gated_delta" else h_k
    n, d_k, d_v = int(rng.integers(1, 5)), int(rng.integers(1, 4)), int(rng.integers(1, 4))
    g_shape = (h_v, n, d_k) if kind == "kda" else (h_v, n)
    linear = {"kind": kind, "heads": h_k, "value_heads": h_v, "queries": rng.normal(size=(h_k, n, d_k)).round(3),
              "keys": rng.normal(size=(h_k, n, d_k)).round(3), "values": rng.normal(size=(h_v, n, d_v)).round(3),
              "beta": rng.uniform(0, 1, (h_v, n)).round(3), "g": -rng.uniform(0, 2, g_shape).round(3),
              "l2norm": bool(rng.random() < 0.7), "scale": ["sqrt", "none", 0.5][int(rng.integers(3))]}
    if rng.random() < 0.3:
        linear["initial_state"] = rng.normal(size=(h_v, d_k, d_v)).round(3)
    return {"linear": {key: v.tolist() if isinstance(v, np.ndarray) else v for key, v in linear.items()}}


def states(doc: dict, j: int) -> list[dict]:
    """Value head j's numbers at each token, from the formulas alone."""
    lin = {key: np.asarray(v, dtype=float) if isinstance(v, list) else v for key, v in doc["linear"].items()}
    i = j // (lin["value_heads"] // lin["heads"])
    q, k = lin["queries"][i], lin["keys"][i]
    if lin["l2norm"]:  # x / √(Σx² + 1e-6), as transformers' l2norm
        q, k = (x / np.sqrt((x * x).sum(axis=-1, keepdims=True) + 1e-6) for x in (q, k))
    d_k, d_v = q.shape[1], lin["values"].shape[2]
    scale = {"sqrt": 1 / np.sqrt(d_k), "none": 1.0}.get(lin["scale"], lin["scale"])
    s = lin["initial_state"][j] if "initial_state" in lin else np.zeros((d_k, d_v))
    out = []
    for t in range(q.shape[0]):
        e = np.exp(lin["g"][j, t])
        decayed = (e[:, None] if e.ndim else e) * s
        read = decayed.T @ k[t]
        u = lin["beta"][j, t] * (lin["values"][j, t] - read)
        after = decayed + np.outer(k[t], u)
        out.append({"before": s, "decay": e, "decayed": decayed, "read": read, "u": u, "outer": np.outer(k[t], u),
                    "after": after, "o": after.T @ (scale * q[t]), "k": k[t], "q": q[t], "scale": scale,
                    "beta": lin["beta"][j, t], "v": lin["values"][j, t]})
        s = after
    return out


def vectors(text: str) -> list[str]:
    return [v[1:-1] for v in re.findall(VECTOR, text)]


def same(text: str, want, what: str) -> None:
    parts, want = text.split(", "), np.atleast_1d(want)
    assert len(parts) == len(want), (what, text, want)
    for part, x in zip(parts, want):
        shown(part, float(x), what)


def check_item(key: str, text: str, matrix, want: dict) -> int:
    """The facts of one sentence (and its state): how many were checked."""
    found = vectors(text)
    if key in ("before", "first", "decay", "decay_kda", "outer", "after"):
        name = {"first": "before", "decay_kda": "decayed", "decay": "decayed"}.get(key, key)
        assert matrix is not None and np.allclose(matrix, want[name], rtol=1e-9, atol=1e-12), (key, matrix)
    if key == "decay_kda":
        same(found[0], want["decay"], text)
    elif key == "decay":
        shown(re.search(rf"e\^g = ({NUMBER})", text)[1], float(want["decay"]), text)
    elif key == "read":
        same(found[0], want["read"], text)
    elif key == "correct":
        beta = re.search(rf"= ({NUMBER}) · \(", text)[1]
        shown(beta, want["beta"], text)
        same(found[0], want["v"], text)
        same(found[1], want["read"], text)
        same(found[2], want["u"], text)
        left = value(f"{beta} · ([{found[0]}] − [{found[1]}])")
        assert left is not None and left.meets(value(f"[{found[2]}]")), text  # β·(v − Sᵀk̂) = u as printed
    elif key == "write":
        same(found[0], want["k"], text)
    elif key == "out":
        same(found[0], want["o"], text)
        same(found[1], want["q"], text)
        shown(re.search(rf"(?:by|乘以) ({NUMBER})", text)[1], want["scale"], text)
    else:
        return 0
    return 1


def test_every_sentence_of_the_delta_rule_step_is_true():
    rng = np.random.default_rng(43)
    checked = 0
    for _ in range(30):
        doc = linear_document(rng)
        trace = run(read_linear(_document(doc)), keep_state=False)
        for j in range(doc["linear"]["value_heads"]):
            worked = states(doc, j)
            for t, want in enumerate(worked):
                assert np.allclose(trace["head_outputs"][j, t], want["o"], rtol=1e-9, atol=1e-12)
                for lang in ("en", "zh"):
                    p = int(rng.choice([2, 4, 6]))
                    items = delta_step(trace, t, j, lang, p)
                    decay = "decay_kda" if doc["linear"]["kind"] == "kda" else "decay"
                    keys = ["title", "before" if t else "first", decay, "read", "correct", "write", "outer",
                            "after", "out"]
                    assert len(items) == len(keys), items
                    for key, (text, matrix) in zip(keys, items):
                        checked += check_item(key, text, matrix, want)
    assert checked > 1000
