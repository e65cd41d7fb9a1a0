"""The Python API (``import attncli``): the same numbers as the naive reference, the same errors as the CLI."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from reference import max_abs_diff, naive_attention

import attncli

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "illustrated.yaml"

ILLUSTRATED = {  # the walkthrough's numbers: Input 1 … 3, W_Q, W_K, W_V
    "inputs": [[1, 0, 1, 0], [0, 2, 0, 2], [1, 1, 1, 1]],
    "query": [[1, 0, 1], [1, 0, 0], [0, 0, 1], [0, 1, 1]],
    "key": [[0, 0, 1], [1, 1, 0], [0, 1, 0], [1, 1, 0]],
    "value": [[0, 2, 0], [0, 3, 0], [1, 0, 3], [1, 1, 0]],
}


def test_compute_a_mapping_with_numpy_arrays_matches_the_reference():
    rng = np.random.default_rng(0)
    x, c = rng.normal(size=(3, 4)), rng.normal(size=(5, 2))
    w_q, w_k, w_v, w_o = (rng.normal(size=(4, 6)), rng.normal(size=(2, 6)),
                          rng.normal(size=(2, 4)), rng.normal(size=(4, 3)))
    trace = attncli.compute({"inputs": x, "context": c, "heads": 2,
                             "weights": {"query": w_q, "key": w_k, "value": w_v, "output": w_o}})
    ref = naive_attention(x.tolist(), w_q.tolist(), w_k.tolist(), w_v.tolist(), heads=2, context=c.tolist(),
                          output=w_o.tolist())
    for key in ("queries", "keys", "values", "scores", "weights", "head_outputs", "output"):
        assert max_abs_diff(getattr(trace, key).tolist(), ref[key]) < 1e-12, key


def test_numpy_scalars_among_the_settings_read_as_python_values():
    """np.True_, np.int64 and np.float64 where a document holds true, 2 and 0.5 (a NumPy user's values)."""
    rng = np.random.default_rng(1)
    x, w = rng.normal(size=(5, 4)), {c: rng.normal(size=(4, 4)) for c in ("query", "key", "value")}
    plain = {"inputs": x, "weights": w, "heads": 2, "scale": 0.5, "mask": {"causal": True, "window": 3},
             "score_bias": {"alibi": True}}
    numpy = {"inputs": x, "weights": w, "heads": np.int64(2), "scale": np.float64(0.5),
             "mask": {"causal": np.True_, "window": np.int32(3)}, "score_bias": {"alibi": np.True_}}
    expected, got = attncli.compute(plain), attncli.compute(numpy)
    assert got.spec.heads == 2 and isinstance(got.spec.heads, int)
    for key in ("scaled_scores", "weights", "output"):
        assert np.array_equal(getattr(got, key), getattr(expected, key), equal_nan=True), key
    assert got.weights[0, 0, 1] == 0 and got.weights[0, 1, 1] > 0  # the causal mask was read


def test_compute_a_path_with_overrides_gives_the_walkthrough():
    trace = attncli.compute(EXAMPLE, scale="sqrt")
    ref = naive_attention(ILLUSTRATED["inputs"], ILLUSTRATED["query"], ILLUSTRATED["key"], ILLUSTRATED["value"],
                          scale="sqrt")
    assert trace.spec.scale == pytest.approx(1 / np.sqrt(3))
    assert max_abs_diff(trace.weights.tolist(), ref["weights"]) < 1e-12
    assert max_abs_diff(attncli.compute(EXAMPLE).weights[0, 0].tolist(),
                        [0.0633789, 0.4683105, 0.4683105]) < 1e-6  # the walkthrough: scale none


def test_attention_on_arrays_is_the_formula():
    rng = np.random.default_rng(1)
    q, k, v = rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 5, 4)), rng.normal(size=(2, 5, 2))
    allowed = rng.random((3, 5)) < 0.6
    allowed[1] = False  # a query that may attend to nothing: zero weights, zero output
    out, weights = attncli.attention(q, k, v, allowed=allowed)
    for h in range(2):
        for i in range(3):
            z = [q[h, i] @ k[h, j] / 2.0 if allowed[i, j] else None for j in range(5)]
            e = [np.exp(s) if s is not None else 0.0 for s in z]
            a = [x / sum(e) if sum(e) else 0.0 for x in e]
            assert max_abs_diff(weights[h, i].tolist(), a) < 1e-12
            assert max_abs_diff(out[h, i].tolist(), (np.array(a) @ v[h]).tolist()) < 1e-12
    assert not out[:, 1].any()


def test_to_dict_has_the_json_keys_and_marks_masked_scores():
    trace = attncli.compute({"inputs": [[1, 0], [0, 1]], "mask": "causal"})
    data = attncli.to_dict(trace)
    assert list(data)[:7] == ["tokens", "context_tokens", "heads", "kv_heads", "d_k", "d_v", "scale"]
    assert np.isnan(data["scaled_scores"][0, 0, 1]) and data["weights"][0, 0, 1] == 0.0
    assert list(attncli.to_dict(trace, only=["output"])) == ["tokens", "context_tokens", "heads", "kv_heads", "d_k",
                                                             "d_v", "scale", "output"]


@pytest.mark.parametrize("document, message", [
    ({"inputs": np.array(["a", "b"])}, "<dict>: inputs: holds text; expected a matrix of numbers"),
    ({"inputs": np.array([[1.0, np.inf]])}, "<dict>: inputs: row 1, column 2: inf is not a finite number"),
    ({"inputs": [[1, 2]], "wieghts": {}}, "<dict>: unknown key 'wieghts' (did you mean 'weights'?)"),
])
def test_errors_are_attn_errors_with_the_cli_message(document, message):
    with pytest.raises(attncli.AttnError) as caught:
        attncli.compute(document)
    assert str(caught.value) == message


def test_import_attncli_is_light():
    code = "import sys, attncli; print(sorted(m for m in ('yaml', 'rich', 'typer', 'numpy') if m in sys.modules))"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          timeout=600).stdout.strip() == "[]"


def test_an_omitted_weight_is_not_multiplied():
    """The identity's blocks are taken, not multiplied: a NaN stays in its own column (x·I would spread it over the
    row, NaN·0 being NaN), and −0.0 becomes +0.0 as x·I makes it; a weight that only looks alike is multiplied."""
    from attncli.core.attention import project

    x = np.array([[-0.0, 1.5, 2.0, -3.0], [4.0, -0.0, 0.25, 1.0]])
    eye = np.eye(4).reshape(4, 2, 2).transpose(1, 0, 2)  # 2 heads of the identity's columns: (h, d_in, d)
    y = project(x, eye, np.array([[0.0, 0.0], [1.0, 1.0]]))
    assert y.shape == (2, 2, 2) and np.array_equal(y[0], x[:, :2]) and np.array_equal(y[1], x[:, 2:] + 1.0)
    plain = project(x, eye)
    assert (not np.signbit(plain[plain == 0]).any()
            and np.array_equal(plain, (x @ np.eye(4)).reshape(2, 2, 2).transpose(1, 0, 2)))
    with np.errstate(invalid="ignore"):
        spread = project(np.array([[np.nan, 1.0, 2.0, 3.0]]), eye)
    # no product ran
    assert np.isnan(spread[0, 0, 0]) and spread[0, 0, 1] == 1.0 and spread[1, 0].tolist() == [2.0, 3.0]
    almost = eye.copy()
    almost[0, 3, 1] = 0.5
    naive = [[sum(x[i][t] * almost[h][t][j] for t in range(4)) for j in range(2)] for h in range(2) for i in range(2)]
    assert np.allclose(project(x, almost).reshape(4, 2), naive, rtol=0, atol=1e-15)


def test_attention_takes_grouped_query_heads_as_enable_gqa_does():
    """K/V with fewer heads than Q: query head i reads K/V head i // (h/g), checked by a loop over heads."""
    rng = np.random.default_rng(3)
    q, k, v = rng.normal(size=(2, 6, 4, 3)), rng.normal(size=(2, 2, 5, 3)), rng.normal(size=(2, 2, 5, 2))
    out, weights = attncli.attention(q, k, v)
    assert out.shape == (2, 6, 4, 2) and weights.shape == (2, 6, 4, 5)
    for b in range(2):
        for i in range(6):
            kv = i // 3
            s = q[b, i] @ k[b, kv].T / np.sqrt(3)
            a = np.exp(s - s.max(axis=1, keepdims=True))
            a /= a.sum(axis=1, keepdims=True)
            assert np.abs(weights[b, i] - a).max() < 1e-15 and np.abs(out[b, i] - a @ v[b, kv]).max() < 1e-14


@pytest.mark.parametrize("k_shape, v_shape, words", [
    ((6, 5, 2), (6, 5, 2), "same width d_k"),
    ((4, 5, 3), (4, 5, 2), "divide the query heads"),
    ((2, 5, 3), (2, 4, 2), "same leading axes and rows"),
])
def test_attention_names_shapes_that_do_not_fit(k_shape, v_shape, words):
    with pytest.raises(attncli.AttnError, match=words):
        attncli.attention(np.ones((6, 4, 3)), np.ones(k_shape), np.ones(v_shape))
    with pytest.raises(attncli.AttnError, match="allowed is 3 × 3 but q and k give 4 queries × 5 keys"):
        attncli.attention(np.ones((2, 4, 3)), np.ones((2, 5, 3)), np.ones((2, 5, 2)), allowed=np.ones((3, 3), bool))
