"""A parameter's gradient has the shape in which the document gave the parameter (PyTorch's rule, FORMAT.md Part 3):
a weight given per head (h × d_in × d) gets an h × d_in × d gradient, on every path — the API, JSON, --only, .npz,
the streamed path — checked against central differences of the forward pass (no torch)."""

from __future__ import annotations

import json

import numpy as np
import pytest

import attncli
from attncli.cli import app
from attncli.core import stream

H, G, N, D_IN, D = 2, 1, 3, 4, 3


def _doc(kv_heads: int = G) -> dict:
    rng = np.random.default_rng(4)
    return {"inputs": rng.normal(size=(N, D_IN)).tolist(), "heads": H, "kv_heads": kv_heads,
            "weights": {"query": rng.normal(size=(H, D_IN, D)).tolist(),  # per head
                        "key": rng.normal(size=(kv_heads, D_IN, D)).tolist(),  # per key/value head
                        "value": rng.normal(size=(D_IN, kv_heads * D)).tolist(),  # 2-D: its gradient stays 2-D
                        "gate": rng.normal(size=(H, D_IN, D)).tolist()},  # the output gate, per head
            "gradient": rng.normal(size=(N, H * D)).tolist()}


def _loss(doc: dict) -> float:
    """L = Σ gradient ⊙ output, the quantity whose derivative the backward pass gives."""
    return float(np.sum(np.array(doc["gradient"]) * attncli.compute({**doc, "gradient": None}).output))


def _central(doc: dict, name: str, index: tuple[int, ...], eps: float = 1e-6) -> float:
    up, down = json.loads(json.dumps(doc)), json.loads(json.dumps(doc))
    cell_up, cell_down = up["weights"][name], down["weights"][name]
    for i in index[:-1]:
        cell_up, cell_down = cell_up[i], cell_down[i]
    cell_up[index[-1]] += eps
    cell_down[index[-1]] -= eps
    return (_loss(up) - _loss(down)) / (2 * eps)


@pytest.mark.parametrize("kv_heads", [G, H])
def test_a_per_head_weights_gradient_is_per_head_and_right(kv_heads):
    doc = _doc(kv_heads)
    grads = attncli.compute(doc).gradients
    assert grads["grad_weight_query"].shape == (H, D_IN, D)
    assert grads["grad_weight_key"].shape == (kv_heads, D_IN, D)
    assert grads["grad_weight_gate"].shape == (H, D_IN, D)
    assert grads["grad_weight_value"].shape == (D_IN, kv_heads * D)  # given 2-D
    for name, index in (("query", (1, 2, 0)), ("query", (0, 3, 2)), ("key", (kv_heads - 1, 1, 2)),
                        ("gate", (1, 0, 1)), ("value", (2, kv_heads * D - 1))):
        expected = _central(doc, name, index)
        assert abs(grads[f"grad_weight_{name}"][index] - expected) <= 1e-6 * max(1.0, abs(expected)), (name, index)


def test_every_path_gives_the_per_head_shape(runner, tmp_path):
    doc = _doc()
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(doc))
    truth = attncli.compute(doc).gradients["grad_weight_query"]
    whole = runner.invoke(app, ["compute", str(path), "--format", "json"])
    only = runner.invoke(app, ["compute", str(path), "--format", "json", "--only", "dW_Q"])
    for result in (whole, only):
        assert result.exit_code == 0, result.output
        assert np.allclose(json.loads(result.stdout)["grad_weight_query"], truth, rtol=1e-12, atol=1e-14)
    npz = tmp_path / "out.npz"
    assert runner.invoke(app, ["compute", str(path), "-o", str(npz)]).exit_code == 0
    with np.load(npz) as saved:
        assert saved["grad_weight_query"].shape == (H, D_IN, D)
    streamed = stream.attend_streamed(attncli.load(doc)).gradients["grad_weight_query"]
    assert streamed.shape == (H, D_IN, D) and np.allclose(streamed, truth, rtol=1e-12, atol=1e-14)
    table = runner.invoke(app, ["compute", str(path), "--only", "dW_Q"], env={"COLUMNS": "120"})
    assert table.exit_code == 0 and "Head 2 · Gradient of W_Q" in table.stdout, table.output
