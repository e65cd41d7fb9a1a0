"""`attncli check` on the answers a slip list could not judge: an overflow (e^800 = inf, inf / inf = NaN) named as
one, inf and NaN read as numbers, a zero query's right weights never blamed, two fitting slips told apart by the
cheapest test, and a stack's layer fed the stack's own inputs.  Every wrong answer is worked out here in numpy.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import answer_checked as check


def softmax(z: np.ndarray, ok: np.ndarray | None = None, axis: int = -1) -> np.ndarray:
    ok = np.ones(z.shape, bool) if ok is None else np.broadcast_to(ok, z.shape)
    zz = np.where(ok, z, -np.inf)
    e = np.where(ok, np.exp(zz - zz.max(axis=axis, keepdims=True)), 0.0)
    return e / e.sum(axis=axis, keepdims=True)


def r4(a) -> list:
    return np.round(np.asarray(a, float), 4).tolist()


# ---------------------------------------------------------------- overflow: inf and NaN are answers

HUGE = {"inputs": [[20, 20], [20, 19.9]], "scale": "none"}  # S = X·Xᵀ ≈ 800: e^800 is inf in float64


@pytest.mark.parametrize("lang, said", [("en", "e^z overflowed"), ("zh", "e^z 溢出了")])
def test_an_overflow_is_named_as_overflow_and_the_advice_is_not_the_step_that_broke(runner, tmp_path, lang, said):
    x = np.array(HUGE["inputs"])
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.exp(x @ x.T)  # the maximum not subtracted: inf everywhere
        a = e / e.sum(axis=1, keepdims=True)  # inf / inf = NaN
    assert np.isnan(a).all()
    found = check(runner, tmp_path, HUGE, {"weights": a.tolist(), "output": (a @ x).tolist()}, "--lang", lang)
    assert [s["name"] for s in found["slips"]] == ["softmax_overflow"]
    hint = found["slips"][0]["hint"]
    assert said in hint and "or none" not in hint and "干脆不减" not in hint


def test_inf_and_nan_written_as_text_or_yaml_are_numbers(runner, tmp_path):
    x = np.array(HUGE["inputs"])
    for cells in (["nan", "nan"], [".nan", "NaN"], [float("nan"), "nan"]):
        found = check(runner, tmp_path, HUGE, {"query": 1, "weights": cells})
        assert [s["name"] for s in found["slips"]] == ["softmax_overflow"], cells
        assert found["findings"][0]["given"] is None  # strict JSON: NaN is null there
    s = x @ x.T
    found = check(runner, tmp_path, HUGE, {"query": 2, "scores": ["inf", float(s[1, 1])]})
    assert not found["findings"][0]["ok"] and found["findings"][0]["cell"] == [1]


def test_a_zero_querys_uniform_weights_are_right_and_never_blamed(runner, tmp_path):
    """Query 1 is all zeros: its weights are uniform, and right; the other rows are wrong in no known way."""
    x = np.array([[0.0, 0.0, 0.0], [1.0, 2.0, 0.0], [2.0, 0.0, 1.0]])
    a = softmax(x @ x.T / np.sqrt(3))
    a[1:] = a[1:, ::-1]  # rows 2 and 3 written backwards
    found = check(runner, tmp_path, {"inputs": x.tolist()}, {"weights": r4(a)})
    assert found["slips"] == [] and "sum_whole" not in str(found)
    assert "No known slip explains weights" in found["notes"][0]


# ---------------------------------------------------------------- a stack: layer 2 fed the stack's own inputs


def test_layer_2_fed_the_raw_inputs_is_named(runner, tmp_path):
    import json

    import yaml

    from attncli.cli import app

    doc = yaml.safe_load(open("examples/stacked/two_layers.yaml", encoding="utf-8"))
    x = np.array(doc["inputs"], float)
    w = {k: np.array(v, float) for k, v in doc["layers"][1]["weights"].items()}
    q, k, v = x @ w["query"], x @ w["key"], x @ w["value"]  # layer 2 from X, not from layer 1's result
    ok = np.tril(np.ones((3, 3), bool))
    a = softmax(q @ k.T / np.sqrt(2), ok)
    doc["layers"][1]["answer"] = {"weights": r4(a), "output": r4(a @ v)}
    path = tmp_path / "stack.yaml"
    path.write_text(yaml.safe_dump(doc))
    result = runner.invoke(app, ["check", str(path), "--layer", "2", "--format", "json"])
    assert result.exit_code == 1, result.output
    found = json.loads(result.stdout)
    assert [s["name"] for s in found["slips"]] == ["layer_raw_inputs"], found
    assert "layer 2 was fed the stack's own inputs X" in found["slips"][0]["hint"]


def test_two_slips_that_fit_are_both_said_with_the_cheapest_test(runner, tmp_path):
    """On the illustrated example Q·Kᵀ is symmetric: softmax down the columns gives Aᵀ, so its output is Aᵀ·V's too;
    the weights tell the two apart, and the note says where and what each gives."""
    x = np.array([[1, 0, 1, 0], [0, 2, 0, 2], [1, 1, 1, 1]], float)
    wq = np.array([[1, 0, 1], [1, 0, 0], [0, 0, 1], [0, 1, 1]], float)
    wk = np.array([[0, 0, 1], [1, 1, 0], [0, 1, 0], [1, 1, 0]], float)
    wv = np.array([[0, 2, 0], [0, 3, 0], [1, 0, 3], [1, 1, 0]], float)
    doc = {"inputs": x.tolist(), "weights": {"query": wq.tolist(), "key": wk.tolist(), "value": wv.tolist()}}
    s = (x @ wq) @ (x @ wk).T / np.sqrt(3)
    columns = softmax(s, axis=0)
    found = check(runner, tmp_path, doc, {"output": r4(columns @ (x @ wv))})
    assert [e["name"] for e in found["slips"]] == ["softmax_axis", "weights_column"]
    test = next(note for note in found["notes"] if note.startswith("Two slips give the numbers you wrote"))
    right = softmax(s)
    cell = next((i, j) for i in range(3) for j in range(3) if abs(columns[i, j] - right[i, j]) > 0.01)
    assert f"work out weights at row {cell[0] + 1} ('x{cell[0] + 1}'), column {cell[1] + 1}" in test
    assert f"it is {columns[cell]:.6g} with the first (softmax_axis), {right[cell]:.6g} with the second" in test
