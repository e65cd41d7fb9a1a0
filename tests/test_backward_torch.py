"""Every grad_* key and delta against torch.autograd in float64, on the independent torch forward of
backward_reference.py: each feature alone, every pair of features together, and random sets of them."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest
from backward_reference import FEATURES, document, leaves, torch_forward

import attncli
from attncli.core.gradient_keys import GRADIENT_KEYS

PAIRS = list(itertools.combinations(FEATURES, 2))
RANDOM_SETS = [frozenset(random.Random(seed).sample(FEATURES, random.Random(seed + 1000).randint(3, 9)))
               for seed in range(40)]


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


def close(mine: np.ndarray, theirs: np.ndarray, key: str) -> None:
    assert mine.shape == theirs.shape, f"{key}: {mine.shape} against {theirs.shape}"
    assert np.abs(mine - theirs).max() <= 1e-10 * (1.0 + np.abs(theirs).max()), key


def references(torch, doc: dict) -> dict[str, np.ndarray]:
    """Each gradient's value from autograd, by its JSON key."""
    leaf = leaves(torch, doc)
    kept = torch_forward(torch, doc, leaf)
    (torch.tensor(doc["gradient"], dtype=torch.float64) * kept["last"]).sum().backward()
    grads = {f"grad_{key}": t.grad.numpy() for key, t in {**kept, **leaf}.items()
             if key not in ("last", "lse") and t.grad is not None}
    grads["delta"] = (kept["head_outputs"].grad * kept["head_outputs"]).sum(-1).detach().numpy()
    return grads


def check(torch, features: set[str], seed: int) -> set[str]:
    doc = document(set(features), seed)
    trace = attncli.compute(doc)
    expected = references(torch, doc)
    mine = trace.gradients
    for key, value in expected.items():
        assert key in mine, f"{key} missing with {sorted(features)}"
        close(mine[key], value, f"{key} with {sorted(features)}")
    assert set(mine) <= set(GRADIENT_KEYS)
    return set(expected)


@pytest.mark.parametrize("feature", FEATURES)
def test_each_feature(torch, feature):
    found = check(torch, {feature}, 0)
    assert {"grad_queries", "grad_keys", "grad_values", "grad_inputs", "grad_weights", "delta"} <= found


@pytest.mark.parametrize("pair", PAIRS, ids=["+".join(p) for p in PAIRS])
def test_every_pair(torch, pair):
    check(torch, set(pair), hash(pair) % 1000)


@pytest.mark.parametrize("features", RANDOM_SETS, ids=["+".join(sorted(f)) for f in RANDOM_SETS])
def test_random_sets(torch, features):
    check(torch, set(features), len(features))


def test_every_gradient_key_is_checked_somewhere(torch):
    """Across a few documents with everything, autograd gives every key the contract lists (the kernel's view too),
    so none of them goes untested."""
    seen = set()
    for seed in range(12):  # the norms' kinds (rms or layer: β) are drawn: enough documents to see both
        extra = ({"add_norm"}, {"residual", "post_norm"}, {"context"})[seed % 3]
        base = set(FEATURES) - {"add_norm", "residual", "post_norm", "context"} | extra
        seen |= check(torch, base, seed)
    latent = {key for key in GRADIENT_KEYS if "latent" in key or "_down" in key or "_up" in key}
    differential = {key for key in GRADIENT_KEYS if "differential" in key or key == "grad_normalized_head_outputs"}
    # the latent stage's: tests/test_latent_backward_torch.py; the differential stage's: tests/test_differential.py
    assert set(GRADIENT_KEYS) - seen == latent | differential


DIRECT = ("causal", "mask_matrix", "window", "bias_matrix", "alibi", "softcap", "rope", "gqa", "qk_norm", "clip",
          "sinks", "temperature", "context")
DIRECT_SETS = [frozenset(random.Random(seed).sample(DIRECT, random.Random(seed + 500).randint(1, 7)))
               for seed in range(24)]


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


@pytest.mark.parametrize("features", DIRECT_SETS, ids=["+".join(sorted(f)) for f in DIRECT_SETS])
def test_qkv_given_directly(torch, features):
    from backward_reference import leaves as all_leaves
    from backward_reference import torch_direct

    for flat in (False, True):
        doc = direct_document(set(features), len(features), flat)
        trace = attncli.compute(doc)
        leaf = {key: value for key, value in all_leaves(torch, {"inputs": [[0.0]], "weights": {}, **doc}).items()
                if key.startswith(("qk_norm", "sinks"))}
        h, g = doc["heads"], doc["kv_heads"]
        for key, heads in (("queries", h), ("keys", g), ("values", g)):
            array = np.array(doc[key])
            array = array.reshape(len(array), heads, -1).transpose(1, 0, 2) if flat else array
            leaf[f"given_{key}"] = torch.tensor(array, requires_grad=True)
        kept = torch_direct(torch, doc, leaf)
        seed = torch.tensor(np.array(doc["gradient"]).transpose(1, 0, 2).reshape(kept["last"].shape))
        (seed * kept["last"]).sum().backward()
        expected = {f"grad_{key}": t.grad.numpy() for key, t in {**kept, **leaf}.items()
                    if key not in ("last", "lse") and not key.startswith("given_") and t.grad is not None}
        assert set(expected) - set(trace.gradients) == set()
        for key, value in expected.items():
            close(trace.gradients[key], value, f"{key} with {sorted(features)}")
        assert "grad_inputs" not in trace.gradients and trace.spec.given_qkv is not None
        assert np.abs(trace.lse - kept["lse"].detach().numpy()).max() <= 1e-12 * (1 + np.abs(trace.lse).max())


def test_a_per_head_gamma_gradient_is_a_table_of_one_row_a_head(torch, runner, tmp_path):
    """qk_norm with a γ a head (h × d_k): its gradient's table has one row a head, each autograd's (it stopped
    compute with an internal error: the table's rows were taken from a one-axis shape)."""
    import json

    from attncli.cli.main import app

    doc = document({"qk_norm"}, 2)
    assert np.shape(doc["qk_norm"]["gamma"]["query"]) == (4, 4)  # (seed 2 draws a γ a head)
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(doc))
    result = runner.invoke(app, ["compute", str(path), "--only", "grad_qk_norm_gamma_query", "--precision", "6"])
    assert result.exit_code == 0, result.output
    rows = [line.split("│")[1:-1] for line in result.output.splitlines() if line.startswith("│ head")]
    assert [r[0].strip() for r in rows] == ["head 1", "head 2", "head 3", "head 4"]
    shown = np.array([[float(x) for x in r[1:]] for r in rows])
    expected = references(torch, doc)["grad_qk_norm_gamma_query"]
    assert np.abs(shown - expected).max() <= 1e-6 * (1.0 + np.abs(expected).max())
