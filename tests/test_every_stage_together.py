"""Every Part 3 stage at once, in the contract's order, against a loop written from FORMAT.md alone.

clip_qkv → rope (YaRN: its frequencies and factor are checked against Hugging Face elsewhere, taken from the JSON
here) → qk_norm after the rotation → query temperature → scores → causal chunked mask → softmax with sinks → H → gate
→ output → residual with a scale; with the full and the streamed computation.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import attncli
from attncli.core import stream
from attncli.core.pipeline import attend

N, D_MODEL, H, G, D = 7, 8, 4, 2, 4
C, CHUNK, ALPHA, EPS = 3.0, 3, 0.5, 1e-6
SINKS = [0.5, -1.0, 2.0, 0.0]
FLOOR, ATTN_SCALE = 2.0, 0.3


def document(seed: int) -> dict:
    rng = np.random.default_rng(seed)
    m = lambda *shape: rng.normal(size=shape).tolist()  # noqa: E731
    return {"inputs": m(N, D_MODEL), "heads": H, "kv_heads": G,
            "weights": {"query": m(D_MODEL, H * D), "key": m(D_MODEL, G * D), "value": m(D_MODEL, G * D),
                        "output": m(H * D, D_MODEL), "gate": m(D_MODEL, H * D)},
            "bias": {"gate": m(H * D)},
            "mask": {"causal": True, "chunk": CHUNK},
            "rope": {"scaling": {"type": "yarn", "factor": 4, "original_max_position_embeddings": 4}},
            "qk_norm": {"kind": "rms", "after_rope": True, "gamma": {"query": m(D), "key": m(D)}},
            "query_temperature": {"floor_scale": FLOOR, "attn_scale": ATTN_SCALE},
            "sinks": SINKS, "clip_qkv": C, "residual": {"scale": ALPHA}}


def loop(doc: dict, frequencies: list[float], factor: float) -> dict[str, np.ndarray]:
    """The layer token by token, head by head, in the order of FORMAT.md Part 3."""
    x = np.array(doc["inputs"])
    w = {k: np.array(v) for k, v in doc["weights"].items()}
    clamp = lambda v: min(max(v, -C), C)  # noqa: E731
    rows = lambda name, width: [[clamp(float(x[i] @ w[name][:, j])) for j in range(width)] for i in range(N)]  # noqa: E731
    q, k, v = np.array(rows("query", H * D)), np.array(rows("key", G * D)), np.array(rows("value", G * D))

    def turn(vec: np.ndarray, p: int) -> np.ndarray:  # pairs (i, i + D/2), cos and sin times the factor
        out = vec.copy()
        for i, f in enumerate(frequencies):
            c, s = math.cos(p * f) * factor, math.sin(p * f) * factor
            a, b = vec[i], vec[i + D // 2]
            out[i], out[i + D // 2] = a * c - b * s, b * c + a * s
        return out

    def rms(vec: np.ndarray, gamma: list[float]) -> np.ndarray:
        return np.array(gamma) * vec / math.sqrt(sum(t * t for t in vec) / len(vec) + EPS)

    gq, gk = doc["qk_norm"]["gamma"]["query"], doc["qk_norm"]["gamma"]["key"]
    gate_w, gate_b = w["gate"], np.array(doc["bias"]["gate"])
    heads = np.zeros((N, H * D))
    for h in range(H):
        kv = h // (H // G)
        for i in range(N):
            tau = 1 + ATTN_SCALE * math.log(1 + math.floor((i + 1) / FLOOR))
            qi = tau * rms(turn(q[i, h * D:(h + 1) * D], i), gq)
            keys = [j for j in range(N) if j <= i and j // CHUNK == i // CHUNK]
            z = {j: float(qi @ rms(turn(k[j, kv * D:(kv + 1) * D], j), gk)) / math.sqrt(D) for j in keys}
            top = max([*z.values(), SINKS[h]])
            total = sum(math.exp(t - top) for t in z.values()) + math.exp(SINKS[h] - top)
            out = sum(math.exp(z[j] - top) / total * v[j, kv * D:(kv + 1) * D] for j in keys)
            gate = [1 / (1 + math.exp(-(float(x[i] @ gate_w[:, h * D + t]) + gate_b[h * D + t]))) for t in range(D)]
            heads[i, h * D:(h + 1) * D] = out * np.array(gate)
    y = heads @ w["output"]
    return {"output": y, "residual": x + ALPHA * y}


@pytest.mark.parametrize("seed", range(3))
def test_every_part3_stage_together_equals_the_loop(seed):
    doc = document(seed)
    trace = attncli.compute(doc)
    expected = loop(doc, trace.rope_frequencies.tolist(), float(trace.rope_attention_factor))
    assert float(trace.rope_attention_factor) > 1  # YaRN's factor, on cos and sin
    for key in ("output", "residual"):
        want = expected[key]
        np.testing.assert_allclose(getattr(trace, key), want, rtol=0, atol=1e-12 * np.abs(want).max())


@pytest.mark.parametrize("cells", [None, 256])
def test_every_part3_stage_together_streams(monkeypatch, cells):
    spec = attncli.load(document(5))
    full = attend(spec)
    monkeypatch.setattr(stream, "BLOCK_CELLS", cells)
    streamed = stream.attend_streamed(spec, threads=2)
    for key in ("head_outputs", "gated_head_outputs", "output", "residual", "lse", "sink_weights"):
        want = getattr(full, key)
        np.testing.assert_allclose(getattr(streamed, key), want, rtol=0, atol=1e-12 * np.abs(want).max())
