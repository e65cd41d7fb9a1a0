"""Properties of today's attention (kv_heads, rope, positions, pre_norm, softcap) for any numbers, with hypothesis.

Each example is a document of numpy arrays (structure drawn by hypothesis, the numbers from a seeded generator)
computed by ``attncli.compute`` as an engineer's own test would; the properties compare the Trace with itself
under a change that must not matter, with an equivalent document, or with a naive loop written here.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import attncli

pytestmark = pytest.mark.slow  # fuzz, property and subprocess suites: `pytest -m 'not slow'` skips them

SETTINGS = settings(max_examples=50, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
TOL = 1e-9


@st.composite
def documents(draw, rope: bool = True) -> dict:
    """A valid grouped-query document with rope: h = g·groups heads, even d_k, partial dims, positions, maybe a
    context (with context_positions), biases, W_O, a mask and a scale."""
    kv_heads, groups = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    heads, d_k, d_v = kv_heads * groups, 2 * draw(st.integers(1, 4)), draw(st.integers(1, 3))
    n, d_model = draw(st.integers(1, 6)), draw(st.integers(1, 6))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    doc: dict = {"inputs": rng.normal(size=(n, d_model)), "heads": heads, "kv_heads": kv_heads,
                 "positions": np.array(draw(st.lists(st.integers(0, 4096), min_size=n, max_size=n)), dtype=float)}
    m, d_ctx = n, d_model
    if draw(st.booleans()):
        m, d_ctx = draw(st.integers(1, 6)), draw(st.integers(1, 6))
        doc["context"] = rng.normal(size=(m, d_ctx))
        doc["context_positions"] = np.array(draw(st.lists(st.integers(0, 4096), min_size=m, max_size=m)), dtype=float)
    doc["weights"] = {"query": rng.normal(size=(d_model, heads * d_k)), "key": rng.normal(size=(d_ctx, kv_heads * d_k)),
                      "value": rng.normal(size=(d_ctx, kv_heads * d_v))}
    if draw(st.booleans()):
        doc["weights"]["output"] = rng.normal(size=(heads * d_v, draw(st.integers(1, 4))))
    if draw(st.booleans()):
        doc["bias"] = {"query": rng.normal(size=heads * d_k), "key": rng.normal(size=kv_heads * d_k),
                       "value": rng.normal(size=kv_heads * d_v)}
    if rope:
        doc["rope"] = {"dims": 2 * draw(st.integers(1, d_k // 2)),
                       "style": draw(st.sampled_from(["half", "interleaved"])),
                       "base": draw(st.sampled_from([10.0, 10000.0, 500000.0]))}
    doc["scale"] = draw(st.sampled_from(["sqrt", "none", 0.5]))
    if draw(st.booleans()):
        allowed = rng.random((n, m)) < 0.6
        allowed[:, 0] = True  # every query sees a key: no warnings
        doc["mask"] = allowed
    return doc


def allowed_of(doc: dict, trace) -> np.ndarray:
    mask = doc.get("mask")
    return np.ones(trace.weights.shape[1:], dtype=bool) if mask is None else np.asarray(mask, dtype=bool)


def max_diff(a: np.ndarray, b: np.ndarray) -> float:
    assert a.shape == b.shape, (a.shape, b.shape)
    return float(np.abs(a - b).max(initial=0.0))


def pairs(x: np.ndarray, dims: int, style: str) -> tuple[np.ndarray, np.ndarray]:
    """The two members of each rotated pair of x (…, d): (…, dims/2) each."""
    if style == "half":
        return x[..., : dims // 2], x[..., dims // 2 : dims]
    return x[..., 0:dims:2], x[..., 1:dims:2]


@SETTINGS
@given(documents())
def test_rope_preserves_the_norm_of_each_pair_and_vector(doc):
    trace = attncli.compute(doc)
    dims, style = doc["rope"]["dims"], doc["rope"]["style"]
    for before, after in ((trace.queries, trace.queries_rotated), (trace.keys, trace.keys_rotated)):
        scale = 1.0 + np.abs(before).max()
        assert max_diff(np.hypot(*pairs(after, dims, style)), np.hypot(*pairs(before, dims, style))) < TOL * scale
        assert max_diff(np.linalg.norm(after, axis=-1), np.linalg.norm(before, axis=-1)) < TOL * scale
        assert np.array_equal(after[..., dims:], before[..., dims:])  # the unrotated dimensions pass unchanged


@SETTINGS
@given(documents(), st.integers(-4096, 4096))
def test_rope_scores_depend_only_on_position_differences(doc, shift):
    trace = attncli.compute(doc)
    moved = dict(doc, positions=doc["positions"] + shift)  # without a context the keys follow `positions`
    if "context_positions" in doc:
        moved["context_positions"] = doc["context_positions"] + shift
    shifted = attncli.compute(moved)
    scale = 1.0 + np.abs(trace.scores).max()
    assert max_diff(shifted.scores, trace.scores) < TOL * scale
    assert max_diff(shifted.weights, trace.weights) < TOL
    assert max_diff(shifted.queries, trace.queries) == 0.0  # positions only turn Q and K, after the projections


def repeated_document(doc: dict) -> dict:
    """The same attention written as plain multi-head: each key/value weight block (and bias) repeated h/g times."""
    heads, kv_heads = doc["heads"], doc["kv_heads"]
    groups = heads // kv_heads

    def repeat(w: np.ndarray) -> np.ndarray:  # (rows, g·d) -> (rows, h·d): block i // groups for head i
        return np.repeat(w.reshape(w.shape[0], kv_heads, -1), groups, axis=1).reshape(w.shape[0], -1)

    weights = dict(doc["weights"], key=repeat(doc["weights"]["key"]), value=repeat(doc["weights"]["value"]))
    out = dict(doc, weights=weights)
    del out["kv_heads"]
    if "bias" in doc:
        out["bias"] = dict(doc["bias"], key=repeat(doc["bias"]["key"][None])[0],
                           value=repeat(doc["bias"]["value"][None])[0])
    return out


COMPARED = ("queries", "queries_rotated", "scores", "weights", "head_outputs", "output")


@SETTINGS
@given(documents())
def test_kv_heads_equals_multi_head_with_repeated_key_value_blocks(doc):
    grouped, plain = attncli.compute(doc), attncli.compute(repeated_document(doc))
    groups = doc["heads"] // doc["kv_heads"]
    assert grouped.keys.shape[0] == doc["kv_heads"] and plain.keys.shape[0] == doc["heads"]
    for key in COMPARED:
        assert max_diff(getattr(grouped, key), getattr(plain, key)) < TOL, key
    for key in ("keys", "values", "keys_rotated"):  # query head i uses key/value head i // (h / g)
        assert max_diff(np.repeat(getattr(grouped, key), groups, axis=0), getattr(plain, key)) < TOL, key
    allowed = allowed_of(doc, grouped)
    assert max_diff(grouped.scaled_scores[:, allowed], plain.scaled_scores[:, allowed]) < TOL


@SETTINGS
@given(documents())
def test_kv_heads_equal_to_heads_is_plain_multi_head(doc):
    plain_doc = repeated_document(doc)  # h key/value heads, no kv_heads
    plain, explicit = attncli.compute(plain_doc), attncli.compute(dict(plain_doc, kv_heads=doc["heads"]))
    assert explicit.spec.kv_heads == plain.spec.kv_heads == doc["heads"]
    for key in (*COMPARED, "keys", "values", "keys_rotated", "scaled_scores"):
        assert np.array_equal(getattr(explicit, key), getattr(plain, key), equal_nan=True), key


@SETTINGS
@given(documents(), st.sampled_from([0.5, 2.0, 30.0]), st.sampled_from([1.0, 10.0]))
def test_softcap_bounds_the_scaled_scores(doc, cap, spread):
    doc = dict(doc, inputs=doc["inputs"] * spread, softcap=cap)  # spread: scores far beyond the cap too
    trace = attncli.compute(doc)
    allowed = allowed_of(doc, trace)
    z = trace.scaled_scores[:, allowed]
    assert np.all(np.abs(z) <= cap)  # c·tanh(z/c) is strictly inside (−c, c), up to tanh rounding to ±1
    uncapped = attncli.compute(dict(doc, softcap=None)).scaled_scores[:, allowed]
    assert np.all(np.abs(z)[np.abs(uncapped) < 15 * cap] < cap)  # where tanh(z/c) < 1 in float64, strictly inside
    assert max_diff(z, cap * np.tanh(uncapped / cap)) < TOL * cap
    assert np.all(np.sign(z) == np.sign(uncapped))  # monotone: the order of the keys is kept


def naive_rms(x: np.ndarray, gamma: np.ndarray, eps: float) -> np.ndarray:
    out = np.empty_like(x)
    for i, row in enumerate(x):
        rms = math.sqrt(sum(float(v) * float(v) for v in row) / len(row) + eps)
        for j, v in enumerate(row):
            out[i, j] = gamma[j] * v / rms
    return out


@SETTINGS
@given(documents(rope=False), st.sampled_from([1e-6, 1e-5, 0.5]), st.integers(0, 2**32 - 1), st.booleans())
def test_rms_pre_norm_equals_a_naive_loop(doc, eps, seed, residual):
    rng = np.random.default_rng(seed)
    x = doc["inputs"] * rng.choice([1e-3, 1.0, 1e3])
    gamma = rng.normal(size=x.shape[1])
    doc = dict(doc, inputs=x, pre_norm={"kind": "rms", "gamma": gamma, "eps": eps})
    if residual:  # R = X₀ + Y needs W_O back to d_model
        w_o = rng.normal(size=(doc["weights"]["value"].shape[1] // doc["kv_heads"] * doc["heads"], x.shape[1]))
        doc.update(weights=dict(doc["weights"], output=w_o), residual=True)
    trace = attncli.compute(doc)
    x_hat = naive_rms(x, gamma, eps)
    assert max_diff(trace.normalized_inputs, x_hat) < TOL * (1 + np.abs(x_hat).max())
    q = (x_hat @ doc["weights"]["query"]).reshape(len(x), doc["heads"], -1).transpose(1, 0, 2)
    q = q + (doc["bias"]["query"].reshape(doc["heads"], 1, -1) if "bias" in doc else 0)
    assert max_diff(trace.queries, q) < TOL * (1 + np.abs(q).max())  # the projections see X̂
    if "context" not in doc:  # keys and values come from X̂ too; a context is used as given
        plain = attncli.compute(dict(doc, inputs=x_hat, pre_norm=None, residual=False))
        assert max_diff(trace.values, plain.values) < TOL
    else:
        assert np.array_equal(trace.values, attncli.compute(dict(doc, pre_norm=None, residual=False)).values)
    if doc.get("residual"):
        assert max_diff(trace.residual, x + trace.output) == 0.0  # R = X₀ + Y with the un-normalised X₀


def test_numpy_arrays_for_mask_and_positional():
    """The Python API takes numpy arrays anywhere a matrix goes, also for mask and positional (which are words too)."""
    x = np.arange(6.0).reshape(3, 2) / 6
    allowed = np.tril(np.ones((3, 3), dtype=bool))
    trace = attncli.compute({"inputs": x, "mask": allowed, "positional": np.ones((3, 2))})
    words = attncli.compute({"inputs": x.tolist(), "mask": "causal", "positional": np.ones((3, 2)).tolist()})
    assert np.array_equal(trace.weights, words.weights) and trace.weights[0, 0, 1] == 0.0
