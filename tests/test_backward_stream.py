"""The streamed backward pass (FlashAttention-2's: D first, each tile's weights recomputed from Q, K and lse) gives
the full path's gradients, for every stage, with tiles smaller than the matrices so that every edge is crossed."""

from __future__ import annotations

import random

import numpy as np
import pytest
from backward_reference import FEATURES, document

import attncli
from attncli.core import stream, stream_backward
from attncli.core.pipeline import attend

SETS = [frozenset({f}) for f in FEATURES] + [
    frozenset(random.Random(seed).sample(FEATURES, random.Random(seed + 7).randint(3, 10))) for seed in range(30)]


@pytest.fixture
def small_tiles(monkeypatch):
    monkeypatch.setattr(stream_backward, "ROWS", 2)
    monkeypatch.setattr(stream_backward, "KEYS", 3)


@pytest.mark.parametrize("features", SETS, ids=["+".join(sorted(f)) for f in SETS])
def test_streamed_gradients_equal_the_full_paths(small_tiles, features):
    spec = attncli.load(document(set(features), len(features)))
    full, streamed = attend(spec).gradients, stream.attend_streamed(spec, threads=2).gradients
    matrices = {"grad_weights", "grad_scaled_scores", "grad_scores"}  # the n × m ones: the full path's only
    assert set(full) - matrices == set(streamed) and not matrices & set(streamed)
    for key, value in streamed.items():
        assert np.abs(value - full[key]).max() <= 1e-12 * (1 + np.abs(full[key]).max()), key


def test_a_query_with_no_key_has_no_gradient_streamed_or_not(small_tiles):
    doc = document({"mask_matrix"}, 1)
    doc["mask"]["matrix"][2] = [0] * len(doc["mask"]["matrix"][2])  # query 3 sees nothing
    spec = attncli.load(doc)
    full, streamed = attend(spec).gradients, stream.attend_streamed(spec).gradients
    assert not full["grad_queries"][:, 2].any() and not streamed["grad_queries"][:, 2].any()
    assert np.abs(streamed["grad_keys"] - full["grad_keys"]).max() <= 1e-12 * (1 + np.abs(full["grad_keys"]).max())


def test_only_gradients_compute_block_by_block(runner, tmp_path, monkeypatch):
    """--only dQ asks for no n × m matrix: the plan streams, and the streamed backward writes it."""
    import json

    from attncli.cli import app

    calls = []
    original = stream_backward.attention_backward
    monkeypatch.setattr(stream_backward, "attention_backward", lambda *a, **k: calls.append(1) or original(*a, **k))
    monkeypatch.setattr(stream, "attention_backward", stream_backward.attention_backward)
    path = tmp_path / "doc.json"
    doc = document({"causal", "rope", "sinks"}, 3)
    path.write_text(json.dumps(doc))
    result = runner.invoke(app, ["compute", str(path), "--format", "json", "--only", "dQ"])
    assert result.exit_code == 0, result.output
    assert calls and np.allclose(json.loads(result.stdout)["grad_queries"], attncli.compute(doc).grad_queries,
                                 rtol=1e-12, atol=1e-12)


def test_gradients_not_asked_for_are_let_go(small_tiles):
    """keep (--only's keys): only the gradients it names are kept (dH, dQ′, dK … go once no later step reads
    them), and those are the same to the last bit as when every gradient is kept."""
    spec = attncli.load(document({"causal", "rope", "qk_norm", "pre_norm", "gate"}, 4))
    every = stream.attend_streamed(spec).gradients
    asked = ["output", "grad_queries", "grad_inputs", "grad_weight_key", "delta"]
    kept = stream.attend_streamed(spec, keep=asked).gradients
    assert {"grad_head_outputs", "grad_keys_rotated", "grad_values"} <= set(every)
    assert set(kept) == {"grad_queries", "grad_inputs", "grad_weight_key", "delta"}
    for key, value in kept.items():
        assert np.array_equal(value, every[key]), key
    d_v = every["grad_values"]  # (h, n, d_v) stored as (n, h·d_v): the projections' backward reads it, no copy
    assert np.shares_memory(d_v, d_v.transpose(1, 0, 2).reshape(d_v.shape[1], -1))
