"""Properties the maths must have for any numbers, checked with hypothesis on the whole document path.

Each example is a document (inputs, optional context, weights, heads, mask, scale) read by
attncli exactly as a user's file would be; the properties compare its Trace with itself
under permutations and shifts, and with the naive loop of tests/reference.py.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference import max_abs_diff, naive_attention

from attncli.core.attention import softmax
from attncli.core.pipeline import attend
from attncli.inputs.builder import build_spec
from attncli.inputs.document import Document

pytestmark = pytest.mark.slow  # fuzz, property and subprocess suites: `pytest -m 'not slow'` skips them

SETTINGS = settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
number = st.floats(min_value=-3, max_value=3, allow_nan=False, allow_infinity=False, width=64)


def matrix(draw, rows: int, cols: int) -> list[list[float]]:
    return [[draw(number) for _ in range(cols)] for _ in range(rows)]


@st.composite
def documents(draw, masked: bool = True, cross: bool = True) -> dict:
    """A random but valid document: 1–3 heads, optional cross-attention, biases, W_O, scale, mask."""
    heads = draw(st.integers(1, 3))
    n, d_model = draw(st.integers(1, 5)), draw(st.integers(1, 4))
    d_k, d_v = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    doc: dict = {"inputs": matrix(draw, n, d_model), "heads": heads}
    m, d_ctx = n, d_model
    if cross and draw(st.booleans()):
        m, d_ctx = draw(st.integers(1, 5)), draw(st.integers(1, 4))
        doc["context"] = matrix(draw, m, d_ctx)
    doc["weights"] = {
        "query": matrix(draw, d_model, heads * d_k),
        "key": matrix(draw, d_ctx, heads * d_k),
        "value": matrix(draw, d_ctx, heads * d_v),
    }
    if draw(st.booleans()):
        doc["weights"]["output"] = matrix(draw, heads * d_v, draw(st.integers(1, 3)))
    if draw(st.booleans()):
        doc["bias"] = {"query": [draw(number) for _ in range(heads * d_k)],
                       "value": [draw(number) for _ in range(heads * d_v)]}
    doc["scale"] = draw(st.sampled_from(["sqrt", "none", 0.5, 2.0]))
    if masked and draw(st.booleans()):
        doc["mask"] = [[draw(st.integers(0, 1)) for _ in range(m)] for _ in range(n)]
    return doc


def trace_of(doc: dict):
    return attend(build_spec(Document(doc, "doc.yaml", Path("."))))


def allowed(doc: dict, trace) -> np.ndarray:
    return np.ones((trace.spec.n, trace.spec.m), bool) if "mask" not in doc else np.array(doc["mask"], bool)


@SETTINGS
@given(documents())
def test_weights_are_a_distribution_over_the_keys_a_query_may_see(doc):
    trace = trace_of(doc)
    may = allowed(doc, trace)
    assert (trace.weights >= 0).all()
    assert (trace.weights[:, ~may] == 0).all()  # masked entries exactly 0
    sums = trace.weights.sum(axis=-1)  # (h, n)
    expected = np.where(may.any(axis=1), 1.0, 0.0)  # a query that may see nothing gets zero weights
    assert np.allclose(sums, expected[None, :], rtol=0, atol=1e-12)


@SETTINGS
@given(documents())
def test_agrees_with_the_naive_loop(doc):
    trace = trace_of(doc)
    w = doc["weights"]
    naive = naive_attention(
        doc["inputs"], w["query"], w["key"], w["value"], heads=doc["heads"], context=doc.get("context"),
        bias=doc.get("bias"), output=w.get("output"), scale=doc["scale"], mask=doc.get("mask"),
    )
    for key in ("queries", "keys", "values", "scores", "weights", "head_outputs", "output"):
        assert max_abs_diff(getattr(trace, key).tolist(), naive[key]) < 1e-9, key


@SETTINGS
@given(st.data())
def test_softmax_ignores_a_constant_added_to_a_row(data):
    n, m = data.draw(st.integers(1, 5)), data.draw(st.integers(1, 6))
    z = np.array(matrix(data.draw, n, m)) * 10
    shift = np.array([data.draw(st.floats(-500, 500)) for _ in range(n)])[:, None]
    may = np.array([[data.draw(st.booleans()) for _ in range(m)] for _ in range(n)])
    assert np.allclose(softmax(z + shift, may), softmax(z, may), rtol=0, atol=1e-12)
    assert np.allclose(softmax(z + shift), softmax(z), rtol=0, atol=1e-12)


@SETTINGS
@given(documents(), st.randoms(use_true_random=False))
def test_permuting_the_queries_permutes_every_query_row(doc, random):
    trace = trace_of(doc)
    order = list(range(trace.spec.n))
    random.shuffle(order)
    # the keys and values stay where they were: from the context, or from the unpermuted inputs
    moved = dict(doc, inputs=[doc["inputs"][i] for i in order], context=doc.get("context", doc["inputs"]))
    if "mask" in doc:
        moved["mask"] = [doc["mask"][i] for i in order]
    other = trace_of(moved)
    for key in ("queries", "scores", "weights", "head_outputs"):
        assert np.allclose(getattr(other, key), getattr(trace, key)[:, order], rtol=0, atol=1e-12), key
    assert np.allclose(other.output, trace.output[order], rtol=0, atol=1e-12)
    assert np.array_equal(other.keys, trace.keys) and np.array_equal(other.values, trace.values)


@SETTINGS
@given(documents(), st.randoms(use_true_random=False))
def test_permuting_keys_with_their_values_leaves_the_output_alone(doc, random):
    trace = trace_of(doc)
    m = trace.spec.m
    order = list(range(m))
    random.shuffle(order)
    moved = dict(doc)
    if "context" in doc:
        moved["context"] = [doc["context"][j] for j in order]
    else:  # self-attention: the keys are the inputs, so permute them as context of the same inputs
        moved["context"] = [doc["inputs"][j] for j in order]
    if "mask" in doc:
        moved["mask"] = [[row[j] for j in order] for row in doc["mask"]]
    other = trace_of(moved)
    assert np.allclose(other.weights, trace.weights[:, :, order], rtol=0, atol=1e-12)
    assert np.allclose(other.output, trace.output, rtol=0, atol=1e-11)
    assert np.allclose(other.head_outputs, trace.head_outputs, rtol=0, atol=1e-11)


@SETTINGS
@given(documents(masked=False, cross=False))
def test_causal_mask_matches_a_written_out_lower_triangle(doc):
    n = len(doc["inputs"])
    written = dict(doc, mask=[[1 if j <= i else 0 for j in range(n)] for i in range(n)])
    causal = trace_of(dict(doc, mask="causal"))
    assert np.array_equal(causal.weights, trace_of(written).weights)
    assert (np.triu(causal.weights[0], k=1) == 0).all()
    assert np.allclose(causal.weights[:, 0, 0], 1.0)  # the first query sees only itself
