"""`attncli check` names the slip: each slip a teacher sees, made by a learner's computation written here.

Every wrong answer is computed in this file with plain numpy (:func:`learner`, with one switch per
slip), never by attncli's slip models, on three documents: the illustrated example, a multi-head
document with biases and an output projection, and a cross-attention document (a slip that cannot
happen on a document, such as K·Qᵀ when n ≠ m, is left out there).  Most answers give a later
quantity than the slip's step (a slip of step 3 named from the output), rounded as a learner rounds.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
import yaml

from attncli.cli import app

ILLUSTRATED = {
    "tokens": ["Input 1", "Input 2", "Input 3"],
    "inputs": [[1, 0, 1, 0], [0, 2, 0, 2], [1, 1, 1, 1]],
    "weights": {"query": [[1, 0, 1], [1, 0, 0], [0, 0, 1], [0, 1, 1]],
                "key": [[0, 0, 1], [1, 1, 0], [0, 1, 0], [1, 1, 0]],
                "value": [[0, 2, 0], [0, 3, 0], [1, 0, 3], [1, 1, 0]]},
    "scale": "none",
}
R = np.random.default_rng(19)
MULTI = {  # two heads of 3, every bias, a square W_O: d_model 6 (≠ d_k² = 9)
    "tokens": "we learn attention",
    "inputs": R.integers(-2, 3, (3, 6)).tolist(),
    "heads": 2,
    "weights": {name: (R.integers(-4, 5, (6, 6)) / 2).tolist() for name in ("query", "key", "value", "output")},
    "bias": {name: (R.integers(-3, 4, 6) / 4).tolist() for name in ("query", "key", "value", "output")},
}
CROSS = {  # two queries over a context of three, d_model 3, d_ctx 4, d_k = d_v = 3, a value bias
    "tokens": ["I", "am"], "context_tokens": ["我", "是", "学生"],
    "inputs": [[1, 0, 2], [0, 1, 1]],
    "context": [[1, 0, 0, 1], [0, 2, 1, 0], [1, 1, 0, 1]],
    "weights": {"query": [[1, 0, 1], [0, 1, 0], [1, 1, 0]], "key": [[1, 0, 0], [0, 1, 1], [1, 0, 1], [0, 1, 0]],
                "value": [[1, 0, 2], [0, 1, 0], [1, 1, 0], [2, 0, 1]]},
    "bias": {"value": [0.5, 0, -0.5]},
}
DOCS = {"illustrated": ILLUSTRATED, "multi": MULTI, "cross": CROSS}
CROSS_MASK = [[1, 1, 0], [1, 0, 1]]


def learner(doc: dict, scale=None, not_transposed=False, k_q=False, axis=False, not_divided=False, by_sum=False,
            mask=None, mask_zero=False, mask_after=False, rounding=None, times_keys=False, left_out=None,
            column=False, no_w_o=False, keep_b_o=False, no_bias=(), w_x=(), interleaved=False,
            from_inputs=False) -> dict:
    """Attention as a learner works it out, with the slips switched on: every quantity, per head first."""
    x = np.array(doc["inputs"], dtype=float)
    c = x if "context" not in doc or from_inputs else np.array(doc["context"], dtype=float)
    h = doc.get("heads", 1)
    w = {name: np.array(value, dtype=float) for name, value in doc["weights"].items()}
    b = {name: np.array(value, dtype=float) for name, value in doc.get("bias", {}).items() if name not in no_bias}
    for name in w_x:
        w[name] = w[name].T  # W·x: the matrix used as PyTorch stores it
    heads = [head_projections(x, c, w, b, i, h, interleaved) for i in range(h)]
    d_k = heads[0][0].shape[1]
    factor = {"none": 1.0, "sqrt": 1 / np.sqrt(d_k)}.get(doc.get("scale", "sqrt"), doc.get("scale"))
    factor = factor if scale is None else scale
    n, m = x.shape[0], heads[0][1].shape[0]
    allowed = document_mask(doc, n, m) if mask is None else mask
    out = {key: [] for key in ("queries", "keys", "values", "scores", "scaled_scores", "weights", "head_outputs")}
    for q, k, v in heads:
        s = q @ k if not_transposed else (k @ q.T if k_q else q @ k.T)
        z = factor * s
        a = learner_softmax(z, allowed, axis, not_divided, by_sum, mask_zero, mask_after)
        used = a if rounding is None else np.round(a / rounding) * rounding
        if times_keys:
            y = used @ k
        elif column:
            y = used.T @ v
        else:
            y = sum(used[:, j:j + 1] * v[j] for j in range(m) if j != left_out)
        for key, value in zip(out, (q, k, v, s, z, a, y)):
            out[key].append(value)
    concat = np.hstack(out["head_outputs"])
    if "output" in w and not no_w_o:
        output = concat @ w["output"] + b.get("output", 0.0)
    else:
        output = concat + (b.get("output", 0.0) if keep_b_o or "output" not in w else 0.0)
    return {**{key: np.array(value) for key, value in out.items()}, "output": output}


def head_projections(x: np.ndarray, c: np.ndarray, w: dict, b: dict, i: int, h: int,
                     interleaved: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Head i's Q, K and V: its block of the weights' columns (or every h-th column, interleaved), plus its bias."""

    def cut(name):
        full = w[name]
        d = full.shape[1] // h
        return full[:, i::h] if interleaved else full[:, i * d:(i + 1) * d]

    def bias(name):
        if name not in b:
            return 0.0
        d = b[name].shape[0] // h
        return b[name][i::h] if interleaved else b[name][i * d:(i + 1) * d]

    return x @ cut("query") + bias("query"), c @ cut("key") + bias("key"), c @ cut("value") + bias("value")


def document_mask(doc: dict, n: int, m: int) -> np.ndarray:
    """The document's mask as n × m booleans (True: the key may be attended to)."""
    if doc.get("mask") == "causal":
        return np.tril(np.ones((n, m), dtype=bool))
    if isinstance(doc.get("mask"), list):
        return np.array(doc["mask"], dtype=bool)
    return np.ones((n, m), dtype=bool)


def learner_softmax(z: np.ndarray, allowed: np.ndarray, axis=False, not_divided=False, by_sum=False,
                    mask_zero=False, mask_after=False) -> np.ndarray:
    """The weights from the scaled scores, with a softmax slip: down the columns, not divided, divided by the sum,
    masked scores as 0, or the mask after the softmax; without one, the softmax of each row's allowed keys."""
    if axis:
        e = np.where(allowed, np.exp(z - z.max(axis=0)), 0.0)
        return e / e.sum(axis=0)
    if not_divided:
        return np.where(allowed, np.exp(z), 0.0)
    if by_sum:
        return np.where(allowed, z, 0.0) / np.where(allowed, z, 0.0).sum(axis=1, keepdims=True)
    if mask_zero or mask_after:
        zz = np.where(allowed, z, 0.0) if mask_zero else z
        e = np.exp(zz - zz.max(axis=1, keepdims=True))
        a = e / e.sum(axis=1, keepdims=True)
        return np.where(allowed, a, 0.0) if mask_after else a
    e = np.where(allowed, np.exp(z - np.where(allowed, z, -np.inf).max(axis=1, keepdims=True)), 0.0)
    total = e.sum(axis=1, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)


def run(runner, tmp_path, doc: dict, answer: dict, *args) -> tuple[int, dict]:
    path = tmp_path / "hw.yaml"
    path.write_text(yaml.safe_dump({**doc, "answer": answer}, allow_unicode=True))
    result = runner.invoke(app, ["check", str(path), "--format", "json", *args])
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, json.loads(result.stdout)


def given(numbers: dict, keys: tuple[str, ...], decimals: int = 4, query: int | None = None,
          head: int | None = None) -> dict:
    """The learner's answer: these keys, rounded; one head's (given head, counting from 1), one query's row."""
    answer = {} if query is None else {"query": query}
    if head is not None:
        answer["head"] = head
    for key in keys:
        value = numbers[key]
        if key != "output" and value.ndim == 3 and (head is not None or value.shape[0] == 1):
            value = value[(head or 1) - 1]
        if query is not None:
            value = value[..., query - 1, :] if value.ndim == 3 else value[query - 1]
        answer[key] = np.round(value, decimals).tolist()
    return answer


SQRT, CAUSAL = {"scale": "sqrt"}, {"mask": "causal"}
# (slip, document, changes to it, the learner's switches, the keys answered, options: query / head / decimals)
CASES = [
    ("scale_left_out", "illustrated", SQRT, {"scale": 1.0}, ("output",), {}),
    ("scale_left_out", "multi", {}, {"scale": 1.0}, ("weights",), {"head": 2}),
    ("scale_left_out", "cross", {}, {"scale": 1.0}, ("output",), {"query": 2}),
    ("scale_added", "illustrated", {}, {"scale": 1 / np.sqrt(3)}, ("weights", "output"), {}),
    ("scale_added", "multi", {"scale": "none"}, {"scale": 1 / np.sqrt(3)}, ("output",), {}),
    ("scale_added", "cross", {"scale": "none"}, {"scale": 1 / np.sqrt(3)}, ("output",), {"decimals": 2}),
    ("scale_twice_dk", "illustrated", SQRT, {"scale": 1 / 3}, ("scaled_scores",), {}),
    ("scale_twice_dk", "multi", {}, {"scale": 1 / 3}, ("output",), {}),
    ("scale_twice_dk", "cross", {}, {"scale": 1 / 3}, ("weights",), {}),
    ("scale_twice", "illustrated", {"scale": 0.5}, {"scale": 0.25}, ("weights",), {}),
    ("scale_inverted", "illustrated", SQRT, {"scale": np.sqrt(3)}, ("scaled_scores",), {"query": 1}),
    ("scale_inverted", "multi", {}, {"scale": np.sqrt(3)}, ("head_outputs",), {"head": 1}),
    ("scale_inverted", "cross", {}, {"scale": np.sqrt(3)}, ("scaled_scores", "weights"), {}),
    ("scale_d_model", "illustrated", SQRT, {"scale": 1 / 2}, ("output",), {}),
    ("scale_d_model", "multi", {}, {"scale": 1 / np.sqrt(6)}, ("output",), {}),
    ("not_transposed", "illustrated", {}, {"not_transposed": True}, ("weights", "output"), {}),
    ("not_transposed", "multi", {}, {"not_transposed": True}, ("output",), {}),
    ("not_transposed", "cross", {}, {"not_transposed": True}, ("output",), {}),
    ("scores_transposed", "multi", {}, {"k_q": True}, ("output",), {}),
    ("scores_transposed", "multi", {}, {"k_q": True}, ("scores",), {"head": 2, "query": 1}),
    ("softmax_axis", "illustrated", {}, {"axis": True}, ("weights",), {}),
    ("softmax_axis", "multi", {}, {"axis": True}, ("output",), {}),
    ("softmax_axis", "cross", {}, {"axis": True}, ("weights",), {}),
    ("not_divided", "illustrated", {}, {"not_divided": True}, ("output",), {"decimals": 2}),
    ("not_divided", "multi", {}, {"not_divided": True}, ("weights",), {"head": 1}),
    ("not_divided", "cross", {}, {"not_divided": True}, ("output",), {}),
    ("not_divided", "multi", CAUSAL, {"not_divided": True, "rounding": 0.1}, ("output",), {"decimals": 2}),  # ~1e12
    ("sum_not_softmax", "illustrated", {}, {"by_sum": True}, ("weights",), {"query": 2}),
    ("sum_not_softmax", "multi", {"scale": "none"}, {"by_sum": True}, ("weights",), {"head": 1}),
    ("sum_not_softmax", "cross", {}, {"by_sum": True}, ("output",), {}),
    ("mask_ignored", "illustrated", CAUSAL, {"mask": np.ones((3, 3), dtype=bool)}, ("output",), {}),
    ("mask_ignored", "multi", CAUSAL, {"mask": np.ones((3, 3), dtype=bool)}, ("output",), {}),
    ("mask_ignored", "cross", {"mask": CROSS_MASK}, {"mask": np.ones((2, 3), dtype=bool)}, ("output",), {}),
    ("mask_zero", "illustrated", CAUSAL, {"mask_zero": True}, ("weights",), {}),
    ("mask_zero", "multi", CAUSAL, {"mask_zero": True}, ("output",), {}),
    ("mask_zero", "cross", {"mask": CROSS_MASK}, {"mask_zero": True}, ("output",), {}),
    ("mask_after", "illustrated", CAUSAL, {"mask_after": True}, ("output",), {}),
    ("mask_after", "multi", CAUSAL, {"mask_after": True}, ("output",), {}),
    ("mask_after", "cross", {"mask": CROSS_MASK}, {"mask_after": True}, ("weights",), {}),
    ("causal_strict", "illustrated", CAUSAL, {"mask": np.tril(np.ones((3, 3), dtype=bool), -1)}, ("weights",), {}),
    ("causal_strict", "multi", CAUSAL, {"mask": np.tril(np.ones((3, 3), dtype=bool), -1)}, ("output",), {}),
    ("causal_future", "illustrated", CAUSAL, {"mask": np.triu(np.ones((3, 3), dtype=bool))}, ("output",), {}),
    ("causal_future", "multi", CAUSAL, {"mask": np.triu(np.ones((3, 3), dtype=bool))}, ("weights",), {"head": 2}),
    ("rounded_half", "illustrated", {}, {"rounding": 0.5}, ("output",), {"query": 1}),
    ("rounded_1", "illustrated", {}, {"rounding": 0.1}, ("output",), {}),
    ("rounded_2", "multi", {}, {"rounding": 0.01}, ("output",), {}),
    ("rounded_1", "cross", {}, {"rounding": 0.1}, ("output",), {}),
    ("times_keys", "illustrated", {}, {"times_keys": True}, ("output",), {}),
    ("times_keys", "multi", {}, {"times_keys": True}, ("output",), {}),
    ("times_keys", "cross", {}, {"times_keys": True}, ("output",), {"query": 1}),
    ("left_out_one", "illustrated", {}, {"left_out": 2}, ("output",), {}),
    ("left_out_one", "multi", {}, {"left_out": 0}, ("output",), {}),
    ("left_out_one", "cross", {}, {"left_out": 1}, ("output",), {"query": 2}),
    ("weights_column", "multi", {}, {"column": True}, ("output",), {}),
    ("w_o_left_out", "multi", {}, {"no_w_o": True}, ("output",), {}),
    ("w_o_left_out_b_o_kept", "multi", {}, {"no_w_o": True, "keep_b_o": True}, ("output",), {}),
    ("biases_left_out", "multi", {}, {"no_bias": ("query", "key", "value", "output")}, ("output",), {}),
    ("biases_left_out", "multi", {}, {"no_bias": ("query", "key", "value")}, ("output",), {}),
    ("bias_left_out", "multi", {}, {"no_bias": ("value",)}, ("output",), {}),
    ("bias_left_out", "multi", {}, {"no_bias": ("key",)}, ("scores",), {"head": 1}),
    ("bias_left_out", "cross", {}, {"no_bias": ("value",)}, ("output",), {}),
    ("weights_as_wx", "multi", {}, {"w_x": ("query",)}, ("output",), {}),
    ("weights_as_wx", "multi", {}, {"w_x": ("query", "key", "value", "output")}, ("output",), {}),
    ("weights_as_wx", "cross", {}, {"w_x": ("query",)}, ("weights",), {}),
    ("heads_split", "multi", {}, {"interleaved": True}, ("output",), {}),
]


@pytest.mark.parametrize("slip, doc, changes, switches, keys, options", CASES,
                         ids=[f"{c[0]}-{c[1]}-{'-'.join(c[4])}-{i}" for i, c in enumerate(CASES)])
def test_each_slip_is_named_from_the_quantities_given(runner, tmp_path, slip, doc, changes, switches, keys, options):
    document = {**DOCS[doc], **changes}
    answer = given(learner(document, **switches), keys, **options)
    code, found = run(runner, tmp_path, document, answer)
    assert code == 1, found
    assert found["slips"] and found["slips"][0]["name"] == slip, (found["slips"], found["notes"])
    wrong = [f for f in found["findings"] if not f["ok"]]
    assert wrong and all(f["hint"] == found["slips"][0]["hint"] for f in wrong), wrong
    assert sorted(found["slips"][0]["keys"]) == sorted(f["key"] for f in wrong)


def test_the_slips_cover_the_three_documents():
    """Each slip is tested on every document where it can happen at all (see the module's docstring)."""
    where = {}
    for slip, doc, *_ in CASES:
        where.setdefault(slip, set()).add(doc)
    cannot = {"scale_twice": {"multi", "cross"}, "scale_d_model": {"cross"},  # a number scale; d_model = d_k
              "scores_transposed": {"illustrated", "cross"},  # Q·Kᵀ is symmetric there; n ≠ m
              "weights_column": {"illustrated", "cross"}, "causal_strict": {"cross"},
              "causal_future": {"cross"}, "rounded_half": {"multi", "cross"}, "rounded_1": {"multi"},
              "rounded_2": {"illustrated", "cross"},  # one rounding per document is enough
              "w_o_left_out": {"illustrated", "cross"}, "w_o_left_out_b_o_kept": {"illustrated", "cross"},
              "biases_left_out": {"illustrated", "cross"}, "bias_left_out": {"illustrated"},
              "weights_as_wx": {"illustrated"}, "heads_split": {"illustrated", "cross"}}  # no W_O, bias, square W
    for slip, docs in where.items():
        assert docs | cannot.get(slip, set()) == set(DOCS), slip


def test_on_the_illustrated_example_a_column_of_weights_is_softmax_down_the_columns(runner, tmp_path):
    """There Q·Kᵀ is symmetric, so softmax down each column gives Aᵀ: both slips give the same output, both are said."""
    doc = {**ILLUSTRATED, "scale": "sqrt"}
    code, found = run(runner, tmp_path, doc, given(learner(doc, column=True), ("output",)))
    assert found["findings"][0]["hint"] == (
        "softmax ran down the columns (over queries); it runs along each row, over the keys; or, giving the same "
        "numbers: the weights were read down a column (Aᵀ·V): output i mixes the values with row i of the weights, "
        "the weights of query i")


def test_keys_and_values_made_from_the_inputs_in_cross_attention(runner, tmp_path):
    doc = {**CROSS, "inputs": [[1, 0, 2, 1], [0, 1, 1, 0], [2, 1, 0, 1]], "tokens": ["I", "am", "here"],
           "weights": {**CROSS["weights"], "query": [[1, 0, 1], [0, 1, 0], [1, 1, 0], [0, 0, 1]]}}
    answer = given(learner(doc, from_inputs=True), ("output",))
    code, found = run(runner, tmp_path, doc, answer)
    assert code == 1 and found["slips"][0]["name"] == "keys_from_inputs"


@pytest.mark.parametrize("doc", ["illustrated", "multi", "cross"])
def test_a_slip_in_step_3_is_named_from_the_weights_and_the_output_only(runner, tmp_path, doc):
    """The issue's example: a learner who forgot to transpose K gives only the weights and the output."""
    numbers = learner(DOCS[doc], not_transposed=True)
    code, found = run(runner, tmp_path, DOCS[doc], given(numbers, ("weights", "output"), decimals=2))
    assert code == 1 and [s["name"] for s in found["slips"]] == ["not_transposed"]
    assert [f["hint"] is not None for f in found["findings"]] == [True, True]


def test_the_text_gives_the_sentence_once_then_the_same_slip(runner, tmp_path):
    doc = {**ILLUSTRATED, "answer": given(learner(ILLUSTRATED, not_transposed=True), ("weights", "output"))}
    (tmp_path / "hw.yaml").write_text(yaml.safe_dump(doc, allow_unicode=True))
    text = runner.invoke(app, ["check", str(tmp_path / "hw.yaml")], env={"COLUMNS": "200"}).stdout
    assert text.count("K was not transposed: the scores are Q·Kᵀ") == 1
    assert "hint: the same slip as weights above" in text
    zh = runner.invoke(app, ["check", str(tmp_path / "hw.yaml"), "--lang", "zh"], env={"COLUMNS": "200"}).stdout
    assert "提示：K 没有转置：得分是 Q·Kᵀ" in zh and "提示：与上面 weights 的失误相同" in zh


# ---------------------------------------------------------------- when no slip fits, and the rows


def test_no_slip_fits_the_first_wrong_quantity_and_the_right_ones_are_named(runner, tmp_path):
    right = learner(ILLUSTRATED)
    answer = given(right, ("scores", "weights", "output"))
    answer["weights"][1][2] = 0.3  # a slip of the pen, no model
    answer["output"][0][0] = 5.0
    code, found = run(runner, tmp_path, ILLUSTRATED, answer)
    assert code == 1 and found["slips"] == []
    assert found["notes"] == ["No known slip explains weights (step 5), the first wrong quantity: work it out again "
                              "from there. Right: scores."]
    answer["scores"][0][0] = 7
    code, found = run(runner, tmp_path, ILLUSTRATED, answer, "--lang", "zh")
    assert found["notes"] == ["没有已知的失误能解释 scores（步骤 4），它是第一个出错的量：请从这里重新计算。"
                              "给出的其他量也都不对。"]
    # nothing else given
    code, found = run(runner, tmp_path, ILLUSTRATED, {"output": [[9, 9, 9], [9, 9, 9], [9, 9, 9]]})
    assert found["notes"] == ["No known slip explains output (step 7): work it out again step by step, or give the "
                              "quantities before it too, so that the first wrong one can be found."]


def test_numbers_that_follow_from_the_learners_own_wrong_scores(runner, tmp_path):
    s = learner(ILLUSTRATED)["scores"][0]
    s[0, 0] = 3.0  # one dot product miscounted (2 is right) …
    e = np.exp(s - s.max(axis=1, keepdims=True))
    weights = e / e.sum(axis=1, keepdims=True)  # … and softmax done right on it
    answer = {"scores": s.tolist(), "weights": np.round(weights, 4).tolist()}
    code, found = run(runner, tmp_path, ILLUSTRATED, answer)
    scores, weights = found["findings"]
    assert scores["where"] == "row 1 ('Input 1'), column 1" and scores["hint"] is None
    assert weights["hint"] == ("this is what follows from your own scores when the rest is done right: fixing "
                              "scores is enough")
    assert found["notes"][0].startswith("No known slip explains scores (step 4)")


def test_a_row_of_another_query_or_head(runner, tmp_path):
    right = learner(MULTI)
    answer = {"query": 1, "head": 2, "weights": np.round(right["weights"][1, 2], 4).tolist()}  # query 3's row
    code, found = run(runner, tmp_path, MULTI, answer)
    assert found["findings"][0]["hint"] == ("these are the numbers of query 3 (“attention”), not of query 1: check "
                                            "which row you worked on, or write query: 3")
    answer = {"query": 2, "head": 2, "weights": np.round(right["weights"][0, 1], 4).tolist()}  # head 1's
    code, found = run(runner, tmp_path, MULTI, answer)
    assert found["findings"][0]["hint"].startswith("these are the numbers of head 1, not of head 2")


def test_one_row_without_query_is_compared_with_every_row(runner, tmp_path):
    right = learner(ILLUSTRATED)
    code, found = run(runner, tmp_path, ILLUSTRATED, {"output": np.round(right["output"][2], 2).tolist()})
    assert code == 0 and found["findings"][0]["ok"]
    assert found["notes"] == ["output: one row given without query:, so it was compared with every row: it is row 3 "
                              "('Input 3')."]
    code, found = run(runner, tmp_path, MULTI, {"scores": np.round(right_multi_scores(), 3).tolist()})
    assert code == 0 and "head 2, row 2 ('learn')" in found["notes"][0]
    slipped = learner(ILLUSTRATED, left_out=1)["output"][0]  # a slip on row 1, no query: given
    code, found = run(runner, tmp_path, ILLUSTRATED, {"output": np.round(slipped, 4).tolist()})
    assert code == 1 and found["slips"][0]["name"] == "left_out_one"
    assert found["findings"][0]["where"] == "row 1 ('Input 1'), column 1"
    assert "compared with the closest, row 1 ('Input 1')" in found["notes"][0]
    zh = run(runner, tmp_path, ILLUSTRATED, {"output": np.round(right["output"][1], 2).tolist()}, "--lang", "zh")[1]
    assert zh["notes"] == ["output：只给了一行，又没有写 query:，所以与每一行都比较过，它就是第 2 行（'Input 2'）。"]


def right_multi_scores():
    return learner(MULTI)["scores"][1, 1]


def test_a_one_row_answer_still_names_a_shape_as_written_as_a_matrix(runner, tmp_path):
    """[[…]] is a matrix as written: a wrong shape stays a wrong shape (only a flat row is compared with every row)."""
    code, found = run(runner, tmp_path, ILLUSTRATED, {"output": [[1.94, 6.68, 1.6]]})
    assert code == 1 and found["findings"][0]["problem"] == "has shape 1 × 3, but output here has shape 3 × 3"


# ---------------------------------------------------------------- several slips fit; the sentences


def test_the_slip_explaining_the_most_numbers_is_named(runner, tmp_path):
    """Weights rounded to halves give [2.0, 7.0, 1.5]; so do weights rounded to 1 decimal with a₁·v₁ left out.
    The single slip is named, not the pair; and of two single slips the one that explains more numbers."""
    code, found = run(runner, tmp_path, ILLUSTRATED,
                      {"query": 1, "weights": [0.06, 0.47, 0.47], "output": [2.0, 7.0, 1.5]})
    assert [s["name"] for s in found["slips"]] == ["rounded_half"]
    # scale left out explains the scaled scores, the weights and the output; the scores as given (scale² would
    # explain the scaled scores alone) stay right
    doc = {**ILLUSTRATED, "scale": "sqrt"}
    answer = given(learner(doc, scale=1.0), ("scores", "scaled_scores", "weights", "output"))
    code, found = run(runner, tmp_path, doc, answer)
    assert ([(s["name"], s["keys"]) for s in found["slips"]]
            == [("scale_left_out", ["scaled_scores", "weights", "output"])])


def test_two_slips_with_the_same_numbers_are_both_said(runner, tmp_path):
    """Q = K = V = X = I: the masked score is 0, so ignoring the mask and setting masked scores to 0 give the same
    weights; both are said.  Two roundings giving the same numbers are one slip, said once."""
    doc = {"inputs": [[1, 0], [0, 1]], "mask": "causal", "scale": "none"}
    code, found = run(runner, tmp_path, doc, {"weights": [[0.73, 0.27], [0.27, 0.73]]})
    assert found["findings"][0]["hint"] == (
        "the mask was left out: the masked keys get weight 0, so leave them out of the softmax; or, giving the same "
        "numbers: the masked scores were set to 0 instead of −∞, so each still took a share e⁰ = 1: leave the masked "
        "keys out of the softmax altogether")
    code, found = run(runner, tmp_path, ILLUSTRATED, {"query": 2, "output": [2.0, 8.0, 0.0]})  # weights [0, 1, 0]
    assert found["findings"][0]["hint"] == ("the weights were rounded too early (to 0, 0.5 or 1): "
                                            "keep full precision until the end")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_slip_has_one_sentence_in_both_languages(lang):
    from attncli.teach.texts import texts

    en, other = texts("en")["slips"], texts(lang)["slips"]
    assert set(en) == set(other)
    names = {case[0] for case in CASES} | {"keys_from_inputs", "or_same"}
    from attncli.core import variants
    from attncli.teach.check import arith as check_arith
    from attncli.teach.check import indexer as check_indexer
    from attncli.teach.check import latent as check_latent
    from attncli.teach.check import max_logits as check_max_logits
    from attncli.teach.check import modern as check_modern
    from attncli.teach.check import naming, slips
    from attncli.teach.check import norm_stages as check_norm_stages
    from attncli.teach.check import qknorm as check_qknorm

    declared = sorted(Path(variants.__file__).parent.glob("*.py"))  # the stages' variants (core/variants/*.py)
    source = "".join(open(module.__file__, encoding="utf-8").read()
                     for module in (slips, check_modern, check_qknorm, check_arith, check_latent,
                                    check_norm_stages, check_indexer, check_max_logits, naming))
    source += "".join(path.read_text(encoding="utf-8") for path in declared)
    assert set(re.findall(r'"([a-z_0-9]+)"', source)) >= set(en) - {"or_same"}  # every sentence belongs to a slip
    assert names <= set(en)
    for name, sentence in other.items():
        assert set(re.findall(r"{(\w+)}", sentence)) == set(re.findall(r"{(\w+)}", en[name])), name
        if lang == "zh":
            assert re.search(r"[\u4e00-\u9fff]", sentence) and sentence != en[name], name
        else:
            assert ": " in sentence or "; " in sentence, name  # what was done: what to do instead


def test_heads_put_side_by_side_in_the_wrong_order(runner, tmp_path):
    numbers = learner(MULTI)
    flipped = np.hstack(numbers["head_outputs"][::-1]) @ np.array(MULTI["weights"]["output"]) + MULTI["bias"]["output"]
    code, found = run(runner, tmp_path, MULTI, {"output": np.round(flipped, 4).tolist()})
    assert found["slips"][0]["name"] == "heads_order"


# ---------------------------------------------------------------- today's attention: the slips added for issue 19


def modern_check(runner, tmp_path, answer: dict, **changes) -> dict:
    from modern_reference import document

    return run(runner, tmp_path, json.loads(json.dumps(document(**changes))), answer)[1]


def test_rope_turned_the_wrong_way_and_only_the_queries_turned(runner, tmp_path):
    from modern_reference import reference, rope

    ref = reference()
    backwards = rope(ref["q"], -np.arange(4.0))  # each pair turned by −φ
    found = modern_check(runner, tmp_path, {"head": 2, "queries_rotated": np.round(backwards[1], 4).tolist()})
    assert found["slips"][0]["name"] == "rope_reversed"
    s = ref["qr"][2] @ ref["k"][1].T  # head 3 (K/V head 2): the keys left unturned
    found = modern_check(runner, tmp_path, {"head": 3, "scores": np.round(s, 4).tolist()})
    assert found["slips"][0]["name"] == "rope_queries_only"
    found = modern_check(runner, tmp_path, {"head": 1, "queries": np.round(ref["qr"][0], 4).tolist()})
    assert found["slips"][0]["name"] == "rope_as_projected"


def test_query_heads_given_the_wrong_key_value_group(runner, tmp_path):
    from modern_reference import W_O, reference, softmax_rows

    ref = reference()
    # head i with K/V head i mod 2
    z = np.stack([5 * np.tanh(ref["qr"][i] @ ref["kr"][i % 2].T / 2 / 5) for i in range(4)])
    a = softmax_rows(z, np.tril(np.ones((4, 4), bool)))
    y = np.concatenate([a[i] @ ref["v"][i % 2] for i in range(4)], axis=1) @ W_O
    found = modern_check(runner, tmp_path, {"output": np.round(y, 4).tolist()})
    assert found["slips"][0]["name"] == "kv_group"
    assert "head i uses key/value head i // 2" in found["slips"][0]["hint"]


@pytest.mark.parametrize("doc", ["multi", "cross", "modern"])
def test_residual_left_out(runner, tmp_path, doc):
    if doc == "modern":
        from modern_reference import reference

        found = modern_check(runner, tmp_path, {"residual": np.round(reference()["y"], 4).tolist()})
    else:
        document = {**DOCS[doc], "residual": True}
        code, found = run(runner, tmp_path, document, {"residual": np.round(learner(document)["output"], 4).tolist()})
    assert found["slips"][0]["name"] == "residual_left_out"


def test_the_keys_instead_of_the_values_with_d_k_not_d_v_is_named_on_the_wrong_shape(runner, tmp_path):
    """examples/cross_attention.yaml: d_k = 3, d_v = 2, so A·K has the wrong shape; the slip is still named."""
    doc = yaml.safe_load(open("examples/cross_attention.yaml", encoding="utf-8"))
    numbers = learner(doc, times_keys=True)
    code, found = run(runner, tmp_path, doc, {"head_outputs": np.round(numbers["head_outputs"][0], 3).tolist()})
    (finding,) = found["findings"]
    assert finding["problem"] == "has shape 2 × 3, but head_outputs here has shape 2 × 2"
    assert finding["hint"].startswith("the weights multiplied the keys instead of the values")


def test_two_heads_divided_by_2_is_d_k_and_also_the_root_of_d_model(runner, tmp_path):
    doc = yaml.safe_load(open("examples/two_heads.yaml", encoding="utf-8"))
    code, found = run(runner, tmp_path, doc, given(learner(doc, scale=0.5), ("output",)))
    assert found["slips"][0]["name"] == "scale_twice_dk_model"
    assert found["slips"][0]["hint"] == ("the scores were divided by 2, which is d_k (the scale applied twice) and "
                                         "also √d_model = √4 (the width of the inputs): "
                                         "divide every score by √d_k = √2, one head's width")


def test_other_ways_an_answer_goes_wrong(runner, tmp_path):
    doc = {**ILLUSTRATED, "scale": "sqrt", "mask": "causal"}
    masked = learner(doc)
    z = [[v if j <= i else "-.inf" for j, v in enumerate(row)]
         for i, row in enumerate(np.round(masked["scaled_scores"][0], 3).tolist())]
    path = tmp_path / "hw.yaml"
    path.write_text(yaml.safe_dump({**doc, "answer": {"scaled_scores": z}}).replace("'-.inf'", "-.inf"))
    assert runner.invoke(app, ["check", str(path)]).exit_code == 0  # −inf in a masked cell, as PyTorch writes it
    z21 = round(float(masked["scaled_scores"][0][1][0]), 3)
    code, found = run(runner, tmp_path, doc, {"query": 2, "scaled_scores": [z21, float("-inf"), None]})
    assert found["findings"][0]["given"] is None and "(or −inf)" in found["findings"][0]["hint"]
    code, found = run(runner, tmp_path, ILLUSTRATED, {"output": np.round(learner(ILLUSTRATED)["output"], 1).tolist()})
    assert found["findings"][0]["hint"] == ("these are right as far as the decimals you wrote go, but the tolerance "
                                            "0.005 asks for more: keep more decimals, or check with --tol 0.05")
    weights = np.round(learner(MULTI)["weights"][0], 4)  # (on the illustrated example Aᵀ is softmax down the columns)
    code, found = run(runner, tmp_path, MULTI, {"head": 1, "weights": weights.T.tolist()})
    assert found["findings"][0]["hint"].startswith("these are the right numbers with rows and columns swapped")


def test_check_in_chinese_every_sentence(runner, tmp_path):
    """--lang zh: every hint, note, problem and cell name is Chinese
    (the answer's keys and the formulas stay as written)."""
    answers = [(ILLUSTRATED, given(learner(ILLUSTRATED, not_transposed=True), ("weights", "output"))),
               ({**ILLUSTRATED, "scale": "sqrt"},
                given(learner({**ILLUSTRATED, "scale": "sqrt"}, scale=1.0), ("output",))),
               (MULTI, given(learner(MULTI, no_bias=("value",)), ("output",))),
               (CROSS, given(learner(CROSS, left_out=1), ("output",), query=2)),
               (ILLUSTRATED, {"output": [9, 9, 9]}), (ILLUSTRATED, {"scores": [[1, 2], [3, 4]]}),
               (ILLUSTRATED, {"query": 1, "weights": [0.06, None, 0.47]})]
    for doc, answer in answers:
        code, found = run(runner, tmp_path, doc, answer, "--lang", "zh")
        assert code == 1 and found["lang"] == "zh"
        sentences = [f[k] for f in found["findings"] for k in ("hint", "problem", "where") if f[k]] + found["notes"]
        assert sentences, found
        for sentence in sentences:
            assert re.search(r"[\u4e00-\u9fff]", sentence), sentence
            words = sentence.split("attncli explain")[0]  # (the pointer's command names the file)
            assert not re.search(r"\b(?:the|was|were|and|of)\b", words), sentence
        path = tmp_path / "hw.yaml"
        text = runner.invoke(app, ["check", str(path), "--lang", "zh"], env={"COLUMNS": "60"}).stdout
        assert "hint" not in text and "wrong" not in text and "correct" not in text and "步骤" in text


def test_a_number_in_a_masked_cell_is_said_to_have_none(runner, tmp_path):
    doc = {**ILLUSTRATED, "mask": "causal"}
    code, found = run(runner, tmp_path, doc, {"query": 2, "scaled_scores": [4, 16, 0]})  # 0 where key 3 is masked
    assert code == 1
    assert found["findings"][0]["hint"].startswith("the unmasked cells are right; a masked key's scaled score")


def test_the_heads_side_by_side_given_as_head_outputs(runner, tmp_path):
    concat = np.hstack(learner(MULTI)["head_outputs"])  # (3, 6): what W_O multiplies
    code, found = run(runner, tmp_path, MULTI, {"head_outputs": np.round(concat, 3).tolist()})
    assert found["findings"][0]["problem"] == "has shape 3 × 6, but head_outputs here has shape 2 × 3 × 3"
    assert found["findings"][0]["hint"].startswith("these are the heads side by side")
