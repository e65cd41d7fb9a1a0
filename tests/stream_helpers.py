"""Streamed against full attention: random documents, and the comparisons the stream tests share.

Imported by name (pyproject's ``pythonpath = ["tests"]``); test modules never import each other.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from attncli.core.errors import AttnError
from attncli.core.pipeline import attend
from attncli.core.stream import attend_streamed
from attncli.inputs.builder import build_spec
from attncli.inputs.document import Document

KEPT = ("queries", "keys", "values", "queries_rotated", "keys_rotated", "normalized_queries", "normalized_keys",
        "kernel_queries", "kernel_keys", "head_outputs", "output", "lse", "sink_weights")
TOL = 1e-12


def spec_of(data: dict):
    return build_spec(Document(data, "doc", Path(".")))


def document(seed: int, n: int = 41, m: int | None = None, heads: int = 4, kv_heads: int | None = None,
             d_k: int = 4, d_v: int = 3, spread: float = 1.0, **extra) -> dict:
    """A random document (inputs scaled by ``spread``: large ones need the row maximum), plus ``extra`` keys."""
    rng = np.random.default_rng(seed)
    d_model, g = 8, kv_heads or heads
    data = {
        "inputs": (spread * rng.normal(size=(n, d_model))).tolist(),
        "heads": heads,
        "weights": {"query": rng.normal(size=(d_model, heads * d_k)).tolist(),
                    "key": rng.normal(size=(d_model if m is None else 5, g * d_k)).tolist(),
                    "value": rng.normal(size=(d_model if m is None else 5, g * d_v)).tolist()},
    }
    if kv_heads is not None:
        data["kv_heads"] = kv_heads
    if m is not None:
        data["context"] = (spread * rng.normal(size=(m, 5))).tolist()
    data.update(extra)
    return data


def assert_same(spec, threads: int = 2) -> None:
    """attend_streamed equals attend on every array it keeps, to 1e-12 of the array's largest entry."""
    assert_equal_traces(attend(spec), attend_streamed(spec, threads=threads))


def same_error(spec, threads: int | None = 2) -> str:
    """The message attend refuses ``spec`` with, which attend_streamed must give word for word."""
    with pytest.raises(AttnError) as full:
        attend(spec)
    with pytest.raises(AttnError) as streamed:
        attend_streamed(spec, threads=threads)
    assert str(streamed.value) == str(full.value)
    return str(full.value)


def assert_equal_traces(full, streamed) -> None:
    """Every array a streamed Trace keeps equals the full one's, to 1e-12 of the array's largest entry (inputs of up
    to 20σ, and `normalize: sum` of a row near 0, give large numbers), and the same queries are left without keys."""
    for key in KEPT:
        a, b = getattr(full, key), getattr(streamed, key)
        assert (a is None) == (b is None), key
        if a is not None:  # lse is −inf for a query with no key: in the same places
            assert a.shape == b.shape and np.array_equal(np.isneginf(a), np.isneginf(b)), key
            a, b = a[np.isfinite(a)], b[np.isfinite(a)]
            assert np.abs(a - b).max(initial=0.0) <= TOL * max(1.0, np.abs(a).max(initial=0.0)), key
    assert streamed.empty_queries == full.empty_queries
