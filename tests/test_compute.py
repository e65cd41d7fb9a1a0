"""Every document feature of FORMAT.md, against the naive loop in tests/reference.py."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import yaml
from conftest import EXAMPLES
from reference import max_abs_diff, naive_attention

from attncli.cli import app

KEYS = ("queries", "keys", "values", "scores", "weights", "head_outputs", "output")


def compute(runner, tmp_path, doc, *args, name="doc.json"):
    path = tmp_path / name
    path.write_text(json.dumps(doc) if name.endswith(".json") else doc, encoding="utf-8")
    result = runner.invoke(app, ["compute", str(path), "--format", "json", *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout), result


def assert_matches(got, want, keys=KEYS, tol=1e-9):
    for key in keys:
        assert max_abs_diff(got[key], want[key]) < tol, key


TWO_BY_FOUR = [[1.0, -0.5, 2.0, 0.0], [0.5, 1.5, -1.0, 1.0], [0.0, 2.0, 0.5, -1.5]]
W = [[0.2, -0.1, 0.4, 0.3], [0.5, 0.1, -0.3, 0.2], [-0.4, 0.3, 0.1, 0.6], [0.1, 0.7, -0.2, -0.5]]
W2 = [[0.3, 0.1, -0.2, 0.5], [-0.1, 0.4, 0.6, 0.0], [0.2, -0.3, 0.1, 0.4], [0.5, 0.2, 0.3, -0.1]]
W3 = [[0.1, 0.2, 0.3, 0.4], [0.0, -0.2, 0.5, 0.1], [0.6, 0.1, -0.4, 0.2], [-0.3, 0.5, 0.2, 0.1]]


@pytest.mark.parametrize("example", ["illustrated", "two_heads", "cross_attention"])
def test_examples_agree_with_naive_loop(runner, tmp_path, example):
    path = EXAMPLES / f"{example}.yaml"
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    result = runner.invoke(app, ["compute", str(path), "--format", "json"])
    assert result.exit_code == 0, result.output
    got = json.loads(result.stdout)
    want = naive_attention(
        raw["inputs"], heads=raw.get("heads", 1), context=raw.get("context"), bias=raw.get("bias"),
        output=raw.get("weights", {}).get("output"), scale=raw.get("scale", "sqrt"), **{
            k: raw["weights"].get(k) for k in ("query", "key", "value")
        },
    )
    assert_matches(got, want)
    assert got["scale"] == pytest.approx(want["scale"], abs=1e-15)


def test_two_heads_split_columns_and_3d_weights_agree(runner, tmp_path):
    doc = {"inputs": TWO_BY_FOUR, "heads": 2, "weights": {"query": W, "key": W2, "value": W3}}
    flat, _ = compute(runner, tmp_path, doc)
    blocks = lambda w: [[row[:2] for row in w], [row[2:] for row in w]]  # noqa: E731
    doc3 = {"inputs": TWO_BY_FOUR, "weights": {"query": blocks(W), "key": blocks(W2), "value": blocks(W3)}}
    split, _ = compute(runner, tmp_path, doc3)
    want = naive_attention(TWO_BY_FOUR, W, W2, W3, heads=2)
    assert flat["heads"] == split["heads"] == 2 and flat["d_k"] == 2
    assert_matches(flat, want)
    assert_matches(split, want)


def test_omitted_weights_are_the_identity(runner, tmp_path):
    got, _ = compute(runner, tmp_path, {"inputs": TWO_BY_FOUR})
    assert got["queries"] == got["keys"] == got["values"] == [TWO_BY_FOUR]
    assert_matches(got, naive_attention(TWO_BY_FOUR))
    assert got["scale"] == 0.5  # 1/sqrt(4)


def test_identity_weights_split_across_heads(runner, tmp_path):
    got, _ = compute(runner, tmp_path, {"inputs": TWO_BY_FOUR, "heads": 2, "weights": {"value": W3}})
    assert got["queries"][1] == [row[2:] for row in TWO_BY_FOUR]
    assert_matches(got, naive_attention(TWO_BY_FOUR, value=W3, heads=2))


def test_biases_and_output_projection(runner, tmp_path):
    bias = {"query": [0.1, -0.2, 0.3, 0.0], "key": [0.0, 0.5, -0.5, 0.2], "value": [1.0, 0.0, -1.0, 0.5],
            "output": [0.25, -0.25, 0.5]}
    w_o = [[0.1, 0.2, 0.3], [0.4, 0.5, 0.6], [-0.1, 0.0, 0.2], [0.3, -0.3, 0.1]]
    doc = {"inputs": TWO_BY_FOUR, "heads": 2, "weights": {"query": W, "key": W2, "value": W3, "output": w_o},
           "bias": bias}
    got, _ = compute(runner, tmp_path, doc)
    assert_matches(got, naive_attention(TWO_BY_FOUR, W, W2, W3, heads=2, bias=bias, output=w_o))
    assert len(got["output"][0]) == 3


def test_value_width_without_shape_follows_the_output_projection(runner, tmp_path):
    """shape may be left out where other matrices fix it: W_O's 4 rows make h·d_v = 4, not d_model = 3."""
    doc = {"inputs": [[1, 0, 1], [0, 1, 0]], "heads": 2,
           "weights": {"query": {"random": "xavier", "shape": [3, 4]}, "key": {"random": "xavier"},
                       "value": {"random": "xavier", "seed": 3}, "output": {"random": "xavier", "shape": [4, 3]}}}
    got, _ = compute(runner, tmp_path, doc, "--only", "values")
    assert got["d_v"] == 2 and np.array(got["values"]).shape == (2, 2, 2)
    w_v = np.random.default_rng(3).uniform(-math.sqrt(6 / 7), math.sqrt(6 / 7), (3, 4))  # xavier: fan_in 3, fan_out 4
    assert np.abs(np.array(got["values"])
                  - (np.array(doc["inputs"]) @ w_v).reshape(2, 2, 2).transpose(1, 0, 2)).max() < 1e-12


def test_output_bias_without_projection_is_added_to_concatenated_heads(runner, tmp_path):
    doc = {"inputs": TWO_BY_FOUR, "heads": 2, "weights": {"value": W3}, "bias": {"output": [1, 2, 3, 4]}}
    got, _ = compute(runner, tmp_path, doc)
    want = naive_attention(TWO_BY_FOUR, value=W3, heads=2, bias={"output": [1, 2, 3, 4]})
    assert_matches(got, want)


@pytest.mark.parametrize("scale, factor", [("sqrt", 0.5), ("none", 1.0), (0.125, 0.125), (3, 3.0)])
def test_scale(runner, tmp_path, scale, factor):
    got, _ = compute(runner, tmp_path, {"inputs": TWO_BY_FOUR, "weights": {"query": W}, "scale": scale})
    assert got["scale"] == factor
    assert_matches(got, naive_attention(TWO_BY_FOUR, W, scale=factor), keys=KEYS + ("scaled_scores",))


def test_mask_matrix_true_false_and_fully_masked_query(runner, tmp_path):
    mask = [[True, False, True], [False, False, False], [1, 1, 0]]
    got, result = compute(runner, tmp_path, {"inputs": TWO_BY_FOUR, "weights": {"key": W2}, "mask": mask})
    want = naive_attention(TWO_BY_FOUR, key=W2, mask=mask)
    assert_matches(got, want)
    assert got["weights"][0][1] == [0.0, 0.0, 0.0] and got["head_outputs"][0][1] == [0.0] * 4
    assert got["weights"][0][0][1] == 0.0 and got["scaled_scores"][0][0][1] is None
    assert got["scaled_scores"][0][2][2] is None
    assert got["scaled_scores"][0][2][0] == pytest.approx(want["scaled_scores"][0][2][0])
    assert "query 2" in result.stderr and "x2" in result.stderr


def test_mask_file_may_say_true_and_false(runner, tmp_path):
    (tmp_path / "m.csv").write_text("true,false,FALSE\nTrue,1,0\n1,true,true\n")
    got, _ = compute(runner, tmp_path, {"inputs": TWO_BY_FOUR, "mask": "m.csv"})
    mask = [[1, 0, 0], [1, 1, 0], [1, 1, 1]]
    assert_matches(got, naive_attention(TWO_BY_FOUR, heads=1, mask=mask))


def test_causal_example_agrees_with_naive_loop(runner, tmp_path):
    got, _ = compute(runner, tmp_path, {"inputs": TWO_BY_FOUR, "weights": {"query": W, "key": W2}, "mask": "causal"})
    assert_matches(got, naive_attention(TWO_BY_FOUR, W, W2, mask="causal"))
    assert got["scaled_scores"][0][0][1:] == [None, None]
    assert got["weights"][0][0] == [1.0, 0.0, 0.0]


def test_cross_attention_shapes(runner, tmp_path):
    context = [[1, 0, 2, 0, 1], [0, 1, 0, 1, 0]]
    w_k = [[1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 0], [0, 1, 1]]
    w_v = [[1, 0], [0, 1], [1, 1], [0, 2], [2, 0]]
    w_q = [row[:3] for row in W]
    doc = {"inputs": TWO_BY_FOUR, "context": context, "context_tokens": "源 文",
           "weights": {"query": w_q, "key": w_k, "value": w_v}}
    got, _ = compute(runner, tmp_path, doc)
    assert (got["d_k"], got["d_v"]) == (3, 2)
    assert got["context_tokens"] == ["源", "文"] and got["tokens"] == ["x1", "x2", "x3"]
    assert got["context"] == context
    assert np.shape(got["weights"]) == (1, 3, 2) and np.shape(got["output"]) == (3, 2)
    assert_matches(got, naive_attention(TWO_BY_FOUR, w_q, w_k, w_v, context=context))


@pytest.mark.parametrize("tokens, labels", [
    ("我想吃", ["我", "想", "吃"]),
    ("the  cat sat", ["the", "cat", "sat"]),
    (["a", 2, True], ["a", "2", "true"]),
    (None, ["x1", "x2", "x3"]),
])
def test_tokens(runner, tmp_path, tokens, labels):
    doc = {"inputs": TWO_BY_FOUR} | ({"tokens": tokens} if tokens is not None else {})
    got, _ = compute(runner, tmp_path, doc)
    assert got["tokens"] == got["context_tokens"] == labels


def test_yaml_numbers_as_in_yaml_12(runner, tmp_path):
    text = "inputs: [[1e-3, 2E+1], [-.5, 0x10]]\nscale: none\n"
    got, _ = compute(runner, tmp_path, text, name="doc.yaml")
    assert got["inputs"] == [[0.001, 20.0], [-0.5, 16.0]]


def test_matrix_files_of_every_kind(runner, tmp_path):
    (tmp_path / "x.csv").write_text("1,-0.5,2,0\n0.5,1.5,-1,1\n\n0,2,0.5,-1.5\n")
    (tmp_path / "q.tsv").write_text("\n".join("\t".join(map(str, r)) for r in W) + "\n")
    (tmp_path / "k.txt").write_text("# keys\n" + "\n".join("  ".join(map(str, r)) for r in W2))
    np.save(tmp_path / "v.npy", np.array([[r[:2] for r in W3], [r[2:] for r in W3]]))  # 3-D: 2 heads
    (tmp_path / "bq_column.csv").write_text("0.1\n0.2\n0.3\n0.4\n")
    (tmp_path / "bk_row.txt").write_text("1 2 3 4\n")
    np.save(tmp_path / "mask.npy", np.array([[1, 1, 0], [1, 1, 1], [0, 1, 1]], dtype=np.int8))
    doc = {"inputs": "x.csv", "weights": {"query": "q.tsv", "key": "k.txt", "value": "v.npy"},
           "bias": {"query": "bq_column.csv", "key": "bk_row.txt"}, "mask": "mask.npy"}
    got, _ = compute(runner, tmp_path, doc)
    mask = [[1, 1, 0], [1, 1, 1], [0, 1, 1]]
    want = naive_attention(TWO_BY_FOUR, W, W2, [[r[:2] for r in W3], [r[2:] for r in W3]], heads=2,
                           bias={"query": [0.1, 0.2, 0.3, 0.4], "key": [1, 2, 3, 4]}, mask=mask)
    assert_matches(got, want)


def test_one_row_and_one_column_files_stay_matrices(runner, tmp_path):
    (tmp_path / "row.csv").write_text("1,2,3\n")
    (tmp_path / "col.csv").write_text("1\n2\n3\n")
    got, _ = compute(runner, tmp_path, {"inputs": "row.csv"})
    assert got["inputs"] == [[1.0, 2.0, 3.0]]
    got, _ = compute(runner, tmp_path, {"inputs": "col.csv"})
    assert got["inputs"] == [[1.0], [2.0], [3.0]] and got["d_k"] == 1 and got["scores"][0][2] == [3.0, 6.0, 9.0]


def test_random_initialisers_follow_torch_init(runner, tmp_path):
    doc = {"inputs": {"random": "normal", "seed": 3, "shape": [2000, 60]},
           "weights": {"query": {"random": "xavier", "seed": 1, "shape": [60, 40]},
                       "key": {"random": "kaiming", "seed": 2},  # shape from inputs and query: 60 × 40
                       "value": {"random": "uniform", "seed": 4, "shape": [60, 30]}}}
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(doc))
    from attncli.inputs.builder import build_spec
    from attncli.inputs.document import read_document

    spec = build_spec(read_document(str(path)))
    x, w_q, w_k, w_v = spec.inputs, spec.w_q[0], spec.w_k[0], spec.w_v[0]
    assert x.shape == (2000, 60) and w_k.shape == (60, 40) and w_v.shape == (60, 30)
    assert abs(x.mean()) < 0.02 and abs(x.std() - 1.0) < 0.02  # normal_: N(0, 1)
    bound = math.sqrt(6 / (60 + 40))  # xavier_uniform_: U(-b, b), b = sqrt(6 / (fan_in + fan_out))
    assert np.abs(w_q).max() <= bound and np.abs(w_q).max() > 0.9 * bound
    assert abs(w_k.std() - math.sqrt(2 / 60)) < 0.1 * math.sqrt(2 / 60)  # kaiming_normal_: std = sqrt(2 / fan_in)
    assert w_v.min() >= 0 and w_v.max() < 1 and abs(w_v.mean() - 0.5) < 0.05  # uniform_: U(0, 1)
    again = build_spec(read_document(str(path)))
    assert np.array_equal(again.w_k, spec.w_k) and np.array_equal(again.inputs, spec.inputs)
    other = dict(doc, inputs={"random": "normal", "seed": 4, "shape": [2000, 60]})
    path.write_text(json.dumps(other))
    assert not np.array_equal(build_spec(read_document(str(path))).inputs, x)


def test_standard_input_and_overrides(runner, tmp_path):
    doc = {"inputs": TWO_BY_FOUR, "weights": {"query": W, "key": W2, "value": W3}, "heads": 1}
    result = runner.invoke(app, ["compute", "-", "--format", "json", "--heads", "2", "--scale", "none",
                                 "--mask", "causal"], input=json.dumps(doc))
    assert result.exit_code == 0, result.output
    got = json.loads(result.stdout)
    assert got["heads"] == 2 and got["scale"] == 1.0
    assert_matches(got, naive_attention(TWO_BY_FOUR, W, W2, W3, heads=2, scale="none", mask="causal"))


def test_only_keeps_the_sizes_and_the_asked_keys(runner, tmp_path):
    got, _ = compute(runner, tmp_path, {"inputs": TWO_BY_FOUR}, "--only", "weights", "--only", "output")
    assert list(got) == ["tokens", "context_tokens", "heads", "kv_heads", "d_k", "d_v", "scale", "weights", "output"]


def test_only_always_present_keys_keeps_just_those(runner, tmp_path):
    got, _ = compute(runner, tmp_path, {"inputs": TWO_BY_FOUR, "tokens": "a b c"},
                     "--only", "tokens", "--only", "scale")
    assert got == {"tokens": ["a", "b", "c"], "context_tokens": ["a", "b", "c"], "heads": 1, "kv_heads": 1, "d_k": 4,
                   "d_v": 4, "scale": 0.5}


def test_output_file_is_the_same_json(runner, tmp_path):
    (tmp_path / "doc.json").write_text(json.dumps({"inputs": TWO_BY_FOUR}))
    out = tmp_path / "result.json"
    result = runner.invoke(app, ["compute", str(tmp_path / "doc.json"), "-f", "json", "-o", str(out)])
    assert result.exit_code == 0 and result.stdout == ""
    assert_matches(json.loads(out.read_text()), naive_attention(TWO_BY_FOUR))


def test_json_is_strict_and_full_precision(runner, tmp_path):
    got, result = compute(runner, tmp_path, {"inputs": [[0.1, 0.2], [1e-300, 3.0]], "mask": [[1, 0], [1, 1]]})
    json.loads(result.stdout, parse_constant=lambda c: pytest.fail(f"non-strict JSON constant {c}"))
    assert got["inputs"] == [[0.1, 0.2], [1e-300, 3.0]]  # floats round-trip exactly
    assert result.stdout.count("\n") == 1 and result.stdout.endswith("}\n")
