"""The page's KV-cache timeline: decode step t, computed from the cache alone, is row t of the full causal
computation.  Its numbers are checked against a numpy softmax of q_t·k_j·scale over the cached keys (j ≤ t, and
j > t − W with a window), recomputed here from the document's Q, K and V."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import EXAMPLES

import attncli
from attncli.teach.page import page_data
from attncli.teach.page.decode import MAX_STEPS


def _by_hand(trace, h: int, t: int, window: int | None):
    q, k, v = trace.kernel_queries[h], trace.kernel_keys[h], trace.values[h]
    cache = [j for j in range(t + 1) if window is None or j > t - window]
    z = np.array([q[t] @ k[j] for j in cache]) * trace.spec.scale
    a = np.exp(z - z.max()) / np.exp(z - z.max()).sum()
    return cache, z, a, a @ v[cache]


@pytest.mark.parametrize(("example", "window"), [("causal.yaml", None), ("sliding_window.yaml", 3)])
def test_each_step_is_a_row_of_the_full_computation(example, window):
    trace = attncli.compute(EXAMPLES / example)
    data = page_data(trace, precision=6)["decode"]
    assert data["n"] == trace.spec.n and data["window"] == window
    for t, step in enumerate(data["heads"][0]):
        cache, z, a, out = _by_hand(trace, 0, t, window)
        assert step["cache"] == cache and step["same"]
        assert [float(x) for x in step["z"]] == pytest.approx(z, abs=1e-6)
        assert [float(x) for x in step["a"]] == pytest.approx(a, abs=1e-6)
        assert [float(x) for x in step["out"]] == pytest.approx(out, abs=1e-6)
    if window:
        assert [len(s["cache"]) for s in data["heads"][0]] == [1, 2, 3, 3, 3, 3, 3, 3]  # the oldest let go


def test_only_a_causal_self_attention_is_decoded():
    assert page_data(attncli.compute(EXAMPLES / "illustrated.yaml"))["decode"] is None
    assert page_data(attncli.compute(EXAMPLES / "cross_attention.yaml"))["decode"] is None
    long = attncli.compute({"inputs": {"random": "normal", "seed": 1, "shape": [40, 4]}, "mask": "causal"})
    data = page_data(long)["decode"]
    assert data["shown"] == MAX_STEPS and len(data["heads"][0]) == MAX_STEPS and data["n"] == 40
