"""The backward pass as a user meets it: a hand-worked example, JSON, --only, .npz, tables, heat maps of dA and dZ,
and the refusals (one line, exit 2, nothing written)."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

import attncli
from attncli.cli import app

HAND = {"inputs": [[0, 0]], "context": [[1, 0], [0, 1]], "scale": "none", "weights": {"value": [[1], [3]]},
        "gradient": [[1]]}


def test_a_hand_worked_example():
    """z = (0, 0): a = (½, ½); dA = dH·Vᵀ = (1, 3), D = 2, dZ = a ⊙ (dA − D) = (−½, ½); dQ = dZ·K = (−½, ½), dK = 0
    (Q = 0), dV = aᵀ·dH = (½, ½); dC = dK·W_Kᵀ + dV·W_Vᵀ = ((½, 3/2), (½, 3/2))."""
    g = attncli.compute(HAND).gradients
    assert g["grad_weights"].tolist() == [[[1.0, 3.0]]]
    assert g["delta"].tolist() == [[2.0]]
    assert g["grad_scaled_scores"].tolist() == [[[-0.5, 0.5]]]
    assert g["grad_queries"].tolist() == [[[-0.5, 0.5]]]
    assert g["grad_keys"].tolist() == [[[0.0, 0.0], [0.0, 0.0]]]
    assert g["grad_values"].tolist() == [[[0.5], [0.5]]]
    assert g["grad_inputs"].tolist() == [[-0.5, 0.5]]
    assert g["grad_context"].tolist() == [[0.5, 1.5], [0.5, 1.5]]
    assert g["grad_weight_value"].tolist() == [[0.5], [0.5]]  # Cᵀ·dV
    assert "grad_weight_query" not in g and "grad_weight_key" not in g  # identities the document did not give


def _doc(tmp_path, **extra) -> str:
    rng = np.random.default_rng(0)
    doc = {"inputs": rng.normal(size=(4, 4)).tolist(), "heads": 2, "mask": "causal",
           "weights": {"query": rng.normal(size=(4, 4)).tolist(), "output": rng.normal(size=(4, 4)).tolist()},
           "bias": {"query": [0.1, 0.2, 0.3, 0.4]}, "gradient": {"random": "normal", "seed": 3}, **extra}
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(doc))
    return str(path)


def test_json_only_and_npz_carry_the_gradients(runner, tmp_path):
    path = _doc(tmp_path)
    trace = attncli.compute(path)
    full = json.loads(runner.invoke(app, ["compute", path, "--format", "json"]).stdout)
    for key in ("grad_output", "grad_head_outputs", "grad_weights", "delta", "grad_scaled_scores", "grad_scores",
                "grad_queries", "grad_keys", "grad_values", "grad_inputs", "grad_weight_query", "grad_bias_query",
                "grad_weight_output"):
        assert np.array_equal(np.array(full[key]), trace.gradients[key]), key
    assert "grad_kernel_queries" not in full and "grad_bias_key" not in full
    assert np.array_equal(np.array(full["grad_output"]), attncli.load(path).gradient)  # the seed itself
    only = json.loads(runner.invoke(app, ["compute", path, "--format", "json", "--only", "dK", "--only",
                                          "grad_kernel_queries"]).stdout)
    assert set(only) - {"tokens", "context_tokens", "heads", "kv_heads", "d_k", "d_v", "scale"} == {
        "grad_keys", "grad_kernel_queries"}
    kernel = np.array(only["grad_kernel_queries"])  # no rope: Q is the kernel's; streamed (no n × m key asked for)
    assert np.abs(kernel - trace.grad_queries).max() <= 1e-12 * np.abs(trace.grad_queries).max()
    result = runner.invoke(app, ["compute", path, "-o", str(tmp_path / "g.npz")])
    assert result.exit_code == 0, result.output
    with np.load(tmp_path / "g.npz") as npz:
        assert np.array_equal(npz["grad_scaled_scores"], trace.grad_scaled_scores)
        assert np.array_equal(npz["delta"], trace.delta)


def test_tables_and_heat_maps_of_dA_and_dZ(runner, tmp_path):
    path = _doc(tmp_path)
    tables = runner.invoke(app, ["compute", path, "--only", "delta", "--only", "dZ"], env={"COLUMNS": "120"})
    assert tables.exit_code == 0 and "D = rowsum(dH ⊙ H)" in tables.stdout and "dZ = A ⊙ (dA − D)" in tables.stdout
    for of, title in (("grad_weights", "dA = dH·Vᵀ"), ("grad_scaled_scores", "dZ = A ⊙ (dA − D)")):
        drawn = runner.invoke(app, ["heatmap", path, "--of", of], env={"COLUMNS": "120", "NO_COLOR": "1"})
        assert drawn.exit_code == 0 and title in drawn.stdout and "╱╱" in drawn.stdout  # the causal mask hatched


@pytest.mark.parametrize("extra, where", [
    ({"normalize": "sum"}, "gradient: needs normalize: softmax"),
    ({"normalize": "none"}, "gradient: needs normalize: softmax"),
    ({"score": "additive", "weights": {"w1": [[1, 0], [0, 1]], "w2": [[1, 0], [0, 1]], "v": [1, 1]}},
     "gradient: needs dot-product scores"),
    ({"gradient": [[1, 2, 3]]}, "gradient: is 1×3 but the block's last quantity, output, is 4×4"),
    ({"residual": True, "gradient": [[1, 2]]}, "the block's last quantity, residual, is 4×4"),
])
def test_refusals_are_one_line_and_exit_2(runner, tmp_path, extra, where):
    path = _doc(tmp_path, **extra)
    result = runner.invoke(app, ["compute", path, "--format", "json"])
    assert result.exit_code == 2 and result.stdout == ""
    assert where in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_gradients_and_their_heat_maps_need_a_gradient(runner, tmp_path):
    path = tmp_path / "plain.yaml"
    path.write_text("inputs: [[1, 0], [0, 1]]\n")
    asked = runner.invoke(app, ["compute", str(path), "--only", "grad_queries"])
    assert asked.exit_code == 2 and "'grad_queries' needs gradient:" in asked.stderr
    drawn = runner.invoke(app, ["heatmap", str(path), "--of", "grad_weights"])
    assert drawn.exit_code == 2 and "needs gradient:" in drawn.stderr
    assert attncli.compute(str(path)).gradients == {}  # and without one, no backward pass at all


QKV = {"queries": [[[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]], "keys": [[[1.0, 0.0], [0.0, 1.0]]],
       "values": [[[1.0], [3.0]]]}


def test_qkv_given_directly_as_a_kernel_has_them(runner, tmp_path):
    path = tmp_path / "qkv.json"
    path.write_text(json.dumps({**QKV, "scale": "none", "gradient": [[[1.0], [1.0], [0.0]]]}))
    result = json.loads(runner.invoke(app, ["compute", str(path), "--format", "json"]).stdout)
    assert "inputs" not in result and "context" not in result and "grad_inputs" not in result
    assert result["tokens"] == ["q1", "q2", "q3"] and result["context_tokens"] == ["k1", "k2"]
    e = np.exp(1.0)
    assert np.allclose(result["output"], [[(e + 3) / (e + 1)], [(1 + 3 * e) / (1 + e)], [2.0]], rtol=1e-15)
    assert result["grad_output"] == [[1.0], [1.0], [0.0]]  # dO per head, its heads side by side
    a = np.array(result["weights"])[0]
    assert np.allclose(result["grad_values"], [[[a[0, 0] + a[1, 0]], [a[0, 1] + a[1, 1]]]], rtol=1e-15)


@pytest.mark.parametrize("extra, message", [
    ({"inputs": [[1.0, 2.0]]}, "inputs: cannot be used with queries, keys and values given directly"),
    ({"bias": {"output": [1.0]}}, "bias: cannot be used with queries, keys and values given directly"),
    ({"residual": True}, "residual: cannot be used with queries"),
    ({"heads": 2}, "queries: is 3-D with 1 head but heads is 2"),
    ({"keys": None}, "keys: is required with queries and values"),
    ({"values": [[[1.0], [3.0], [4.0]]]}, "values: have 3 rows but there are 2 keys"),
])
def test_qkv_refusals(runner, tmp_path, extra, message):
    path = tmp_path / "qkv.json"
    path.write_text(json.dumps({**QKV, **extra}))
    result = runner.invoke(app, ["compute", str(path)])
    assert result.exit_code == 2 and message in result.stderr and result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1


NOT_IN = "is not in a result whose queries, keys and values are given directly: there is no"


@pytest.mark.parametrize("only, message", [
    ("grad_inputs", f"'grad_inputs' {NOT_IN} X"), ("dC", f"'grad_context' {NOT_IN} C"),
    ("inputs", f"'inputs' {NOT_IN} X"),
])
def test_qkv_gradients_of_x_say_there_is_no_x(runner, tmp_path, only, message):
    """Not "needs gradient:" for a document that has one."""
    path = tmp_path / "qkv.json"
    path.write_text(json.dumps({**QKV, "gradient": [[[1.0], [1.0], [0.0]]]}))
    result = runner.invoke(app, ["compute", str(path), "--only", only, "-o", str(tmp_path / "out.npz")])
    assert result.exit_code == 2 and message in result.stderr and result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1 and not (tmp_path / "out.npz").exists()


def test_qkv_gradient_of_the_wrong_shape_names_both_forms(runner, tmp_path):
    path = tmp_path / "qkv.json"
    path.write_text(json.dumps({**QKV, "gradient": [[1.0, 2.0]]}))
    result = runner.invoke(app, ["compute", str(path)])
    assert result.exit_code == 2 and result.stdout == "" and len(result.stderr.strip().splitlines()) == 1
    assert ("gradient: is 1×2 but the block's last quantity, output, is 3×1 (the gradient is dL/d(output): it has "
            "that shape, or 1×3×1 per head (h × n × d_v, a kernel's dO))") in result.stderr


def test_explain_step_backward_writes_one_cell_of_dz(runner):
    """The line a·(dA − D) = dZ holds for the numbers it shows, D is dh·h, in both languages."""
    from conftest import EXAMPLES

    doc = str(EXAMPLES / "backward" / "grads.yaml")
    trace = attncli.compute(doc)
    for lang in ("en", "zh"):
        result = runner.invoke(app, ["explain", doc, "--step", "backward", "--query", "4", "--lang", lang,
                                     "--precision", "6"], env={"COLUMNS": "200"})
        assert result.exit_code == 0, result.output
        line = next(x for x in result.stdout.splitlines() if "dZ = a·(dA − D)" in x)
        a, d_a, d, d_z = (float(v) for v in re.findall(r"-?\d+\.\d+", line.split("=", 2)[2]))
        assert abs(a * (d_a - d) - d_z) < 1e-5
        j = int(np.argmax(trace.weights[0, 3]))  # the key the query weighs most
        assert abs(d - trace.delta[0, 3]) < 1e-6 and abs(d_z - trace.grad_scaled_scores[0, 3, j]) < 1e-6
        assert ("√d_k" in result.stdout) and (("n × m" in result.stdout) if lang == "en" else "按块" in result.stdout)
    plain = runner.invoke(app, ["explain", str(EXAMPLES / "causal.yaml"), "--step", "backward"])
    assert plain.exit_code == 2 and "'backward' needs gradient:" in plain.stderr


def test_explain_step_backward_defaults_to_a_query_that_sees_two_keys(runner):
    """Without --query, a causal document's first query (one key, a = 1, dZ = 0) is passed over for the first that
    sees two keys, and the step says why; D > 0 is written without brackets; the dZ table names its head."""
    from conftest import EXAMPLES

    doc = str(EXAMPLES / "backward" / "grads.yaml")  # causal, 2 heads
    trace = attncli.compute(doc)
    result = runner.invoke(app, ["explain", doc, "--step", "backward"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "No --query was given" in out and "“The”" in out and "query 2, “cat”" in out
    assert "Gradient of the scaled scores of head 1  dZ" in out
    line = next(x for x in out.splitlines() if "dZ = a·(dA − D)" in x)
    assert line.strip().startswith("cat, ")
    d = float(trace.delta[0, 1])
    assert d > 0 and f"− {d:.4f})" in line and "((" not in line  # D positive: no brackets
    j = int(np.argmax(np.where(trace.spec.allowed[0, 1], trace.weights[0, 1], -1)))
    assert abs(float(line.rsplit("=", 1)[1]) - trace.grad_scaled_scores[0, 1, j]) < 1e-4
    sat = next(x for x in out.splitlines() if "Σ a(1 − a)" in x and "scale 1" in x)
    a = trace.weights[0, 1, :2]  # the two keys "cat" sees
    assert f"Σ a(1 − a) = {float(np.sum(a * (1 - a))):.4f}" in sat and "max a = 1," not in sat
    header = json.loads(runner.invoke(app, ["explain", doc, "--step", "backward", "-f", "json"]).stdout)
    assert (header["query"], header["token"]) == (2, "cat")
    zh = runner.invoke(app, ["explain", doc, "--step", "backward", "--lang", "zh"], env={"COLUMNS": "200"}).stdout
    assert "没有给出 --query" in zh and "第 1 个头缩放后得分的梯度" in zh
    asked = runner.invoke(app, ["explain", doc, "--step", "backward", "--query", "1"], env={"COLUMNS": "200"}).stdout
    assert "No --query" not in asked and any(x.strip().startswith("The, The: dZ") for x in asked.splitlines())
    single = runner.invoke(app, ["explain", str(EXAMPLES / "backward" / "grads.yaml"), "--step", "backward",
                                 "--heads", "1"], env={"COLUMNS": "200"}).stdout
    assert "Gradient of the scaled scores  dZ" in single


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_explain_step_backward_says_sqrt_dk_only_when_the_scale_is_it(runner, tmp_path, lang):
    """The scale's paragraph credits dividing by √d_k only when the document's scale is 1/√d_k; a scale of its own
    (2 here, sharper rows: its Σ a(1 − a) is below the unscaled one's) is named as such, with 1/√d_k's value."""
    doc = tmp_path / "scale.yaml"
    doc.write_text("inputs: [[1, 0, 1, 0], [0, 2, 0, 2], [1, 1, 1, 1]]\nweights:\n"
                   "  query: [[1, 0, 1], [1, 0, 0], [0, 0, 1], [0, 1, 1]]\n"
                   "  key: [[0, 0, 1], [1, 1, 0], [0, 1, 0], [1, 1, 0]]\n"
                   "  value: [[0, 2, 0], [0, 3, 0], [1, 0, 3], [1, 1, 0]]\n"
                   "gradient: {random: normal, seed: 1}\n")
    default = runner.invoke(app, ["explain", str(doc), "--step", "backward", "--lang", lang], env={"COLUMNS": "400"})
    doc.write_text(doc.read_text() + "scale: 2\n")
    own = runner.invoke(app, ["explain", str(doc), "--step", "backward", "--lang", lang], env={"COLUMNS": "400"})
    assert default.exit_code == 0 and own.exit_code == 0, (default.output, own.output)
    sqrt = "除以 √d_k" if lang == "zh" else "dividing by √d_k"
    default_text, own_text = (" ".join(r.stdout.split()) for r in (default, own))  # (paragraphs wrap)
    assert sqrt in default_text and sqrt not in own_text
    assert "1/√d_k = 0.5774" in own_text and "1/√d_k = " not in default_text
    sat = next(x for x in own.stdout.splitlines() if "scale 2: max a" in x)
    with_scale, without = (float(v) for v in re.findall(r"Σ a\(1 − a\) = (-?\d+\.\d+)", sat))
    assert with_scale < without  # (the sentence's "sharpens them and lets less" holds for these numbers)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_explain_step_backward_says_when_the_scale_changes_little(runner, tmp_path, lang):
    """grads.yaml's small scores: Σ a(1 − a) with and without the scale within 5 % of each other, so the paragraph
    says the scale changes little (and why), not that it matters; with scale 2 on bigger scores it matters."""
    from conftest import EXAMPLES

    doc = str(EXAMPLES / "backward" / "grads.yaml")
    s = attncli.compute(doc).scores[0, 1, :2]  # "cat" (the query followed), the two keys it sees, unscaled

    def sums(z):
        a = np.exp(z - z.max()) / np.exp(z - z.max()).sum()
        return float(np.sum(a * (1 - a)))
    scaled, plain = sums(s / np.sqrt(2)), sums(s)  # d_k = 2 per head
    assert abs(scaled - plain) < 0.05 * min(scaled, plain)
    little = runner.invoke(app, ["explain", doc, "--step", "backward", "--lang", lang], env={"COLUMNS": "400"})
    text = " ".join(little.stdout.split())
    said, matters = (("缩放的影响很小", "缩放在这里同样重要") if lang == "zh"
                     else ("Here the scale changes little", "The scale matters here too"))
    assert little.exit_code == 0 and said in text and matters not in text
    assert f"{scaled:.4f}" in text and f"{plain:.4f}" in text and f"{np.abs(s).max():.4f}" in text
    path = tmp_path / "scale.yaml"
    path.write_text("inputs: [[1, 0, 1, 0], [0, 2, 0, 2], [1, 1, 1, 1]]\nweights:\n"
                    "  query: [[1, 0, 1], [1, 0, 0], [0, 0, 1], [0, 1, 1]]\n"
                    "  key: [[0, 0, 1], [1, 1, 0], [0, 1, 0], [1, 1, 0]]\n"
                    "  value: [[0, 2, 0], [0, 3, 0], [1, 0, 3], [1, 1, 0]]\n"
                    "gradient: {random: normal, seed: 1}\nscale: 2\n")
    # query 1 = [1, 0, 1, 0]: q = [1, 0, 2]; keys [0, 1, 1], [4, 4, 0], [2, 3, 1]: scores [2, 4, 4]
    big = sums(2 * np.array([2.0, 4, 4])), sums(np.array([2.0, 4, 4]))
    assert abs(big[0] - big[1]) > 0.05 * min(big)
    mattered = runner.invoke(app, ["explain", str(path), "--step", "backward", "--lang", lang],
                             env={"COLUMNS": "400"})
    text = " ".join(mattered.stdout.split())
    assert mattered.exit_code == 0 and matters in text and said not in text and f"{big[0]:.4f}" in text
