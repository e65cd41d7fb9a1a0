"""Issue 31: `attncli check` names the slips inside one stage's arithmetic and the shapes of heads combined wrongly.

Every wrong answer is worked out here in plain numpy, as a learner would make the slip (never with attncli's slip
models): the maximum taken down the columns, the exponentials divided by the whole matrix's sum, the scale on the
weights or on the output, the scores used as weights, softmax twice, the weights written as the scores, a bias
subtracted or added before the scale (ALiBi's distance reversed), an RMSNorm or LayerNorm done wrong (axis, d − 1,
ε, the root, the other norm, γ), one head's output given as the output, the heads added, stacked, or put side by
side without W_O. Also: the tutorial's rounded weights get the same verdict as its output, the closing line never
contradicts the hints, and a slip found points to the step to read.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import answer_checked as check

ILLUSTRATED = {
    "tokens": ["Input 1", "Input 2", "Input 3"],
    "inputs": [[1, 0, 1, 0], [0, 2, 0, 2], [1, 1, 1, 1]],
    "weights": {"query": [[1, 0, 1], [1, 0, 0], [0, 0, 1], [0, 1, 1]],
                "key": [[0, 0, 1], [1, 1, 0], [0, 1, 0], [1, 1, 0]],
                "value": [[0, 2, 0], [0, 3, 0], [1, 0, 3], [1, 1, 0]]},
}
R = np.random.default_rng(311)
X = R.integers(-2, 3, (4, 4)).astype(float)
W_Q, W_K, W_V = ((R.integers(-3, 4, (4, 4)) / 2) for _ in range(3))
W_O = R.integers(-3, 4, (4, 3)) / 2  # h·d_v = 4 → d_out = 3: the heads side by side have another shape
BIAS = (R.integers(-4, 5, (4, 4)) / 4)
TWO_HEADS = {"inputs": X.tolist(), "heads": 2, "weights": {"query": W_Q.tolist(), "key": W_K.tolist(),
                                                           "value": W_V.tolist(), "output": W_O.tolist()}}


def softmax(z: np.ndarray, allowed: np.ndarray | None = None) -> np.ndarray:
    ok = np.ones(z.shape, bool) if allowed is None else allowed
    e = np.where(ok, np.exp(np.where(ok, z, -np.inf) - np.where(ok, z, -np.inf).max(axis=-1, keepdims=True)), 0.0)
    return e / e.sum(axis=-1, keepdims=True)


def illustrated():
    x = np.array(ILLUSTRATED["inputs"], float)
    w = {k: np.array(v, float) for k, v in ILLUSTRATED["weights"].items()}
    q, k, v = x @ w["query"], x @ w["key"], x @ w["value"]
    return q @ k.T, v, 1 / np.sqrt(3)  # S, V, c


def named(found: dict) -> list[str]:
    return [s["name"] for s in found["slips"]]


def rounded(a: np.ndarray) -> list:
    return np.round(a, 4).tolist()


def softmax_cases():
    s, v, c = illustrated()
    z = c * s
    column = np.exp(z - z.max(axis=0, keepdims=True))
    yield "max_column", column / column.sum(axis=1, keepdims=True), None
    yield "sum_whole", np.exp(z) / np.exp(z).sum(), None
    yield "scale_on_weights", c * softmax(s), None
    yield "scale_on_output", softmax(s), c * softmax(s) @ v
    yield "scores_as_weights", z, None
    yield "softmax_twice", softmax(softmax(z)), None


@pytest.mark.parametrize("slip, weights, output", list(softmax_cases()), ids=[c[0] for c in softmax_cases()])
def test_softmax_arithmetic_and_weights_confused_with_scores(runner, tmp_path, slip, weights, output):
    s, v, c = illustrated()
    output = weights @ v if output is None else output
    found = check(runner, tmp_path, {**ILLUSTRATED, "scale": "sqrt"}, {"weights": rounded(weights),
                                                                       "output": rounded(output)})
    assert named(found)[0] == slip, found
    assert found["findings"][0]["hint"] and found["findings"][1]["hint"]


def test_the_weights_written_as_the_scores(runner, tmp_path):
    s, v, c = illustrated()
    found = check(runner, tmp_path, {**ILLUSTRATED, "scale": "sqrt"}, {"scores": rounded(softmax(c * s))})
    assert named(found) == ["weights_as_scores"]


@pytest.mark.parametrize("slip", ["bias_subtracted", "bias_before_scale"])
def test_a_bias_subtracted_or_added_before_the_scale(runner, tmp_path, slip):
    s, v, c = illustrated()
    b = BIAS[:3, :3]
    z = c * s - b if slip == "bias_subtracted" else c * (s + b)
    doc = {**ILLUSTRATED, "scale": "sqrt", "score_bias": {"matrix": b.tolist()}}
    found = check(runner, tmp_path, doc, {"scaled_scores": rounded(z), "weights": rounded(softmax(z))})
    assert named(found)[0] == slip, found


def test_alibi_with_the_distance_the_other_way_round(runner, tmp_path):
    s, v, c = illustrated()
    i, j = np.indices(s.shape)
    causal = j <= i
    z = c * s + 0.5 * (i - j)  # slope·(p_i − p_j)
    doc = {**ILLUSTRATED, "scale": "sqrt", "mask": "causal", "score_bias": {"alibi": {"slopes": [0.5]}}}
    found = check(runner, tmp_path, doc, {"weights": rounded(softmax(z, causal))})
    assert named(found)[0] == "alibi_reversed", found


def rms(x, gamma, eps, axis=-1, ddof=0):
    return gamma * x / np.sqrt((x * x).sum(axis=axis, keepdims=True) / (x.shape[axis] - ddof) + eps)


def layer(x, gamma, beta, eps, axis=-1, ddof=0, root=True):
    spread = x.var(axis=axis, keepdims=True, ddof=ddof) + eps
    return gamma * (x - x.mean(axis=axis, keepdims=True)) / (np.sqrt(spread) if root else spread) + beta


GAMMA = np.array([1.5, 0.5, 1.0, 2.0])
NORMS = {
    "norm_axis": lambda x: rms(x, GAMMA, 0.25, axis=0),
    "norm_ddof": lambda x: rms(x, GAMMA, 0.25, ddof=1),
    "norm_eps_left_out": lambda x: rms(x, GAMMA, 0.0),
    "norm_eps_outside": lambda x: GAMMA * x / (np.sqrt((x * x).mean(axis=-1, keepdims=True)) + 0.25),
    "norm_other": lambda x: layer(x, GAMMA, 0.0, 0.25),
    "norm_gamma_left_out": lambda x: rms(x, 1.0, 0.25),
}


@pytest.mark.parametrize("slip", sorted(NORMS))
def test_an_rms_norm_before_the_projections_done_wrong(runner, tmp_path, slip):
    doc = {**ILLUSTRATED, "inputs": X[:3].tolist(), "pre_norm": {"kind": "rms", "gamma": GAMMA.tolist(), "eps": 0.25}}
    found = check(runner, tmp_path, doc, {"normalized_inputs": rounded(NORMS[slip](X[:3]))})
    assert named(found)[0] == slip, found
    assert "pre_norm" in found["findings"][0]["hint"] or slip == "norm_other"


@pytest.mark.parametrize("slip", ["norm_ddof", "norm_no_root", "norm_axis"])
def test_add_and_norm_done_wrong(runner, tmp_path, slip):
    s, v, c = illustrated()
    x = np.array(ILLUSTRATED["inputs"], float)
    w_o = np.array([[1, 0, 0, 1], [0, 1, 1, 0], [1, 1, 0, 0]], float)  # d_v = 3 → d_model = 4
    r = x + softmax(s) @ v @ w_o
    wrong = {"norm_ddof": layer(r, 1.0, 0.0, 1e-5, ddof=1), "norm_no_root": layer(r, 1.0, 0.0, 1e-5, root=False),
             "norm_axis": layer(r, 1.0, 0.0, 1e-5, axis=0)}[slip]
    doc = {**ILLUSTRATED, "scale": "none", "add_norm": True,
           "weights": {**ILLUSTRATED["weights"], "output": w_o.tolist()}}
    found = check(runner, tmp_path, doc, {"residual": rounded(r), "normalized": rounded(wrong)})
    assert named(found)[0] == slip, found


def heads():
    """The two heads' outputs (2, n, 2), from plain numpy: head i takes columns 2i, 2i + 1 of each weight."""
    out = []
    for h in range(2):
        cols = slice(2 * h, 2 * h + 2)
        q, k, v = X @ W_Q[:, cols], X @ W_K[:, cols], X @ W_V[:, cols]
        out.append(softmax(q @ k.T / np.sqrt(2)) @ v)
    return np.stack(out)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_heads_combined_wrongly_are_named_on_the_wrong_shape(runner, tmp_path, lang):
    h = heads()
    words = {"en": ("head 1's output alone", "added up", "averaged", "stacked one under another", "W_O was left out"),
             "zh": ("第 1 个头的输出", "相加", "取平均", "上下叠在一起", "漏掉了输出投影 W_O")}[lang]
    concat = np.concatenate(list(h), axis=1)
    for output, said in zip((h[0], h.sum(axis=0), h.mean(axis=0), h.reshape(-1, 2), concat), words):
        found = check(runner, tmp_path, TWO_HEADS, {"output": rounded(output)}, "--lang", lang)
        finding = found["findings"][0]
        assert finding["problem"] and said in finding["hint"], (said, finding)
    found = check(runner, tmp_path, TWO_HEADS, {"output": rounded(h[0])})
    assert found["findings"][0]["problem"] == "has shape 4 × 2, but output here has shape 4 × 3"


def test_the_tutorials_rounded_numbers_get_one_verdict_and_a_pointer(runner, tmp_path):
    found = check(runner, tmp_path, {**ILLUSTRATED, "scale": "none"},
                  {"query": 1, "weights": [0.0, 0.5, 0.5], "output": [2.0, 7.0, 1.5]})
    hints = [f["hint"] for f in found["findings"]]
    assert hints[0] == hints[1] and "rounded too early" in hints[0]
    assert not any("No known slip" in note for note in found["notes"])
    path = tmp_path / "hw.yaml"
    assert f"attncli explain {path} --step 5 --query 1" in found["notes"][-1]
    # weights near one-hot are not "rounded to halves" unless they are exactly
    s, v, c = illustrated()
    found = check(runner, tmp_path, {**ILLUSTRATED, "scale": "none"}, {"query": 2, "weights": [0.0001, 0.9999, 0.0]})
    assert "rounded" not in (found["findings"][0]["hint"] or "")


def test_the_closing_line_agrees_with_the_hints(runner, tmp_path):
    """A wrong k₂ that no slip explains, and scores and weights worked on correctly from it."""
    x = np.array(ILLUSTRATED["inputs"], float)
    w = {k: np.array(v, float) for k, v in ILLUSTRATED["weights"].items()}
    q, k = x @ w["query"], x @ w["key"]
    k[1, 2] = 7.0  # a slip in one cell of k₂
    s = q @ k.T
    found = check(runner, tmp_path, {**ILLUSTRATED, "scale": "none"},
                  {"keys": k.tolist(), "scores": s.tolist(), "weights": rounded(softmax(s))})
    hints = [f["hint"] for f in found["findings"]]
    assert hints[0] is None and "fixing keys is enough" in hints[1] and "is enough" in hints[2], hints
    closing = found["notes"][0]
    assert "What you gave for scores, weights follows from it correctly" in closing
    assert "None of the other" not in closing
