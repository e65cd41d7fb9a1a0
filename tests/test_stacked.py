"""Stacked layers (``layers:``, issue 31, seed 002): each layer's JSON is a one-layer document's, its inputs the
last quantity of the layer before it. References: tests/reference.py's loops chained by hand, and two stacked
torch.nn.MultiheadAttention + nn.LayerNorm blocks in float64."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import EXAMPLES
from reference import max_abs_diff, reference_document

from attncli.cli import app

RNG = np.random.default_rng(31)


def _m(rows, cols):
    return np.round(RNG.normal(0, 1, (rows, cols)), 3).tolist()


X = _m(3, 4)
FIRST = {"heads": 2, "weights": {"query": _m(4, 4), "key": _m(4, 4), "value": _m(4, 4), "output": _m(4, 4)},
         "bias": {"query": _m(1, 4)[0]}, "add_norm": True}
SECOND = {"weights": {"query": _m(4, 2), "key": _m(4, 2), "value": _m(4, 3), "output": _m(3, 4)}, "mask": "causal",
          "add_norm": {"gamma": [1.0, 2.0, 0.5, 1.5], "beta": [0.1, 0.0, -0.2, 0.3]}}
THIRD = {"weights": {"value": _m(4, 5)}, "scale": 0.5}  # no add_norm: its output (3 × 5) is the stack's


def run(runner, tmp_path, doc, *args, code=0):
    (tmp_path / "doc.json").write_text(json.dumps(doc))
    result = runner.invoke(app, ["compute", str(tmp_path / "doc.json"), *args])
    assert result.exit_code == code, result.output
    return result


def got(runner, tmp_path, doc, *args):
    return json.loads(run(runner, tmp_path, doc, "--format", "json", *args).stdout)


def chained(layers, inputs):
    """tests/reference.py's one-layer answer for each layer, each layer's inputs the last one's result."""
    answers = []
    for layer in layers:
        answer = reference_document({**layer, "inputs": inputs})
        answers.append(answer)
        inputs = answer.get("normalized") or answer.get("residual") or answer["output"]
    return answers, inputs


def test_each_layer_is_the_reference_chained(runner, tmp_path):
    layers = [FIRST, SECOND, THIRD]
    result = got(runner, tmp_path, {"tokens": ["a", "b", "c"], "inputs": X, "layers": layers})
    answers, last = chained(layers, X)
    assert len(result["layers"]) == 3 and result["tokens"] == ["a", "b", "c"]
    for layer, answer in zip(result["layers"], answers):
        for key in ("inputs", "queries", "keys", "values", "scores", "weights", "head_outputs", "output"):
            assert max_abs_diff(layer[key], answer[key]) < 1e-9, key
    assert max_abs_diff(result["layers"][1]["normalized"], answers[1]["normalized"]) < 1e-9
    assert max_abs_diff(result["output"], last) < 1e-9
    assert np.shape(result["output"]) == (3, 5)


def test_a_layer_is_what_its_one_layer_document_gives(runner, tmp_path):
    """jq '.layers[1]' is the JSON of layer 2 written as a one-layer document, number for number."""
    stack = got(runner, tmp_path, {"tokens": "a b c", "inputs": X, "layers": [FIRST, SECOND]})
    alone = got(runner, tmp_path, {"tokens": "a b c", "inputs": stack["layers"][0]["normalized"], **SECOND})
    assert stack["layers"][1] == alone
    chosen = got(runner, tmp_path, {"tokens": "a b c", "inputs": X, "layers": [FIRST, SECOND]}, "--layer", "2")
    assert chosen == alone


@pytest.mark.torch
def test_torch_two_stacked_multihead_attention_blocks(runner, tmp_path):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    d, n = 6, 4
    blocks = [(torch.nn.MultiheadAttention(d, 2, dtype=torch.float64), torch.nn.LayerNorm(d, dtype=torch.float64))
              for _ in range(2)]
    x = torch.randn(n, d, dtype=torch.float64)
    causal = torch.triu(torch.ones(n, n, dtype=torch.bool), 1)  # True = masked, as nn.MultiheadAttention reads it
    h = x
    layers = []
    with torch.no_grad():
        for i, (mha, norm) in enumerate(blocks):
            norm.weight.uniform_(0.5, 1.5)
            norm.bias.uniform_(-0.2, 0.2)
            mask = causal if i == 1 else None
            y, _ = mha(h, h, h, attn_mask=mask, need_weights=False)
            h = norm(h + y)
            w_q, w_k, w_v = (w.T.tolist() for w in mha.in_proj_weight.chunk(3))
            b_q, b_k, b_v = (b.tolist() for b in mha.in_proj_bias.chunk(3))
            layers.append({"heads": 2, "weights": {"query": w_q, "key": w_k, "value": w_v,
                                                   "output": mha.out_proj.weight.T.tolist()},
                           "bias": {"query": b_q, "key": b_k, "value": b_v, "output": mha.out_proj.bias.tolist()},
                           "add_norm": {"gamma": norm.weight.tolist(), "beta": norm.bias.tolist()},
                           **({"mask": "causal"} if i == 1 else {})})
    result = got(runner, tmp_path, {"inputs": x.tolist(), "layers": layers})
    scale = float(h.abs().max())
    assert max_abs_diff(result["output"], h.tolist()) < 1e-12 * max(scale, 1.0)
    assert max_abs_diff(result["layers"][1]["inputs"], result["layers"][0]["normalized"]) == 0


def test_cross_attention_layer_attends_to_its_own_context(runner, tmp_path):
    """A layer's context is used as given (an encoder's output): its queries come from the layer before."""
    context = _m(5, 4)
    cross = {"context": context, "weights": {"query": _m(4, 4), "key": _m(4, 4), "value": _m(4, 4)}, "residual": True}
    result = got(runner, tmp_path, {"inputs": X, "layers": [FIRST, cross]})
    answers, _ = chained([FIRST, {k: v for k, v in cross.items() if k != "residual"}], X)
    assert max_abs_diff(result["layers"][1]["output"], answers[1]["output"]) < 1e-9
    residual = np.array(result["layers"][0]["normalized"]) + np.array(answers[1]["output"])
    assert max_abs_diff(result["output"], residual.tolist()) < 1e-9
    assert np.shape(result["layers"][1]["weights"]) == (1, 3, 5)


def test_npz_keys_are_prefixed_per_layer(runner, tmp_path):
    run(runner, tmp_path, {"inputs": X, "layers": [FIRST, THIRD]}, "-o", str(tmp_path / "out.npz"))
    with np.load(tmp_path / "out.npz") as arrays:
        stack = got(runner, tmp_path, {"inputs": X, "layers": [FIRST, THIRD]})
        assert np.array_equal(arrays["layers[1].weights"], np.array(stack["layers"][1]["weights"]))
        assert arrays["layers[1].scale"] == 0.5
        assert np.array_equal(arrays["output"], np.array(stack["output"]))


def test_only_keeps_the_same_keys_in_every_layer(runner, tmp_path):
    result = got(runner, tmp_path, {"inputs": X, "layers": [FIRST, SECOND]}, "--only", "weights")
    assert all(set(layer) == {"tokens", "context_tokens", "heads", "kv_heads", "d_k", "d_v", "scale", "weights"}
               for layer in result["layers"])
    text = run(runner, tmp_path, {"inputs": X, "layers": [FIRST, SECOND]}, "--only", "weights").stdout
    assert "Layer 1 · Head 2 · Weights" in text and "Layer 2 · Weights" in text


@pytest.mark.parametrize(("doc", "where"), [
    ({"inputs": X, "layers": []}, "layers: is an empty list"),
    ({"inputs": X, "layers": [FIRST, {"inputs": X}]}, "layers[1].inputs:"),
    ({"inputs": X, "weights": {}, "layers": [FIRST]}, "weights: is a key of each layer"),
    ({"inputs": X, "layers": [FIRST, {"gradient": X}]}, "layers[1].gradient:"),
    ({"inputs": X, "layers": [FIRST, {"weights": {"query": _m(3, 2)}}]}, "layers[1]: weights.query:"),
    ({"inputs": X, "layers": [FIRST, {"wieghts": {}}]}, "layers[1]: unknown key 'wieghts' (did you mean 'weights'?)"),
])
def test_a_wrong_stack_is_one_line_naming_the_layer(runner, tmp_path, doc, where):
    result = run(runner, tmp_path, doc, "--format", "json", code=2)
    assert where in result.output and result.stdout == "" and len(result.output.strip().splitlines()) == 1


@pytest.mark.parametrize("command", [["heatmap"], ["explain"], ["check"], ["page"], ["compute", "-f", "markdown"],
                                     ["compute", "--emulate", "bf16"]])
def test_one_layer_commands_refuse_a_stack_without_layer(runner, tmp_path, command):
    (tmp_path / "doc.json").write_text(json.dumps({"inputs": X, "layers": [FIRST, SECOND]}))
    result = runner.invoke(app, [*command, str(tmp_path / "doc.json")])
    assert result.exit_code == 2 and "--layer N" in result.output and "Traceback" not in result.output


@pytest.mark.parametrize("command", [["heatmap"], ["explain", "--step", "7"], ["page", "-o", "p.html"]])
def test_one_layer_commands_take_layer(runner, tmp_path, command, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "doc.json").write_text(json.dumps({"tokens": "a b c", "inputs": X, "layers": [FIRST, SECOND]}))
    assert runner.invoke(app, [*command, "doc.json", "--layer", "2"]).exit_code == 0
    result = runner.invoke(app, [*command, "doc.json", "--layer", "3"])
    assert result.exit_code == 2 and "has 2 layers" in result.output


def test_check_a_layers_answer(runner, tmp_path):
    stack = got(runner, tmp_path, {"inputs": X, "layers": [FIRST, SECOND]})
    weights = np.array(stack["layers"][1]["weights"][0]).round(3).tolist()
    second = {**SECOND, "answer": {"weights": weights}}
    (tmp_path / "doc.json").write_text(json.dumps({"inputs": X, "layers": [FIRST, second]}))
    assert runner.invoke(app, ["check", str(tmp_path / "doc.json"), "--layer", "2"]).exit_code == 0
    second["answer"]["weights"][2] = [1.0, 0.0, 0.0]
    (tmp_path / "doc.json").write_text(json.dumps({"inputs": X, "layers": [FIRST, second]}))
    assert runner.invoke(app, ["check", str(tmp_path / "doc.json"), "--layer", "2"]).exit_code == 1


def test_layer_on_a_one_layer_document_is_refused(runner, tmp_path):
    result = run(runner, tmp_path, {"inputs": X}, "--layer", "1", code=2)
    assert "one-layer document" in result.output


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("file", sorted(EXAMPLES.glob("stacked/*.yaml")), ids=lambda p: p.name)
def test_every_layer_of_every_stacked_example_is_explained(runner, file, lang):
    layers = len(json.loads(runner.invoke(app, ["compute", str(file), "-f", "json"]).stdout)["layers"])
    for layer in range(1, layers + 1):  # (a layer attending with an earlier layer's keys, Gemma 4's, too)
        for step in ["all", *map(str, range(1, 9))]:
            result = runner.invoke(app, ["explain", str(file), "--layer", str(layer), "--step", step, "--lang", lang])
            assert "Traceback" not in result.output, (layer, step, result.output)
            assert result.exit_code == 0, (layer, step, result.output)


def test_only_a_key_one_layer_lacks_names_the_layer(runner, tmp_path):
    result = run(runner, tmp_path, {"inputs": X, "layers": [FIRST, THIRD]}, "--only", "normalized", code=2)
    assert "layers[1], layer 2," in result.output and "add_norm" in result.output and result.stdout == ""


def test_a_query_with_no_key_is_warned_with_its_layer(runner, tmp_path):
    doc = {"inputs": X, "layers": [FIRST, {"mask": [[0, 0, 0], [1, 1, 0], [1, 1, 1]]}]}
    result = run(runner, tmp_path, doc, "--format", "json")
    assert "layers[1] (layer 2): query 1" in result.stderr
    assert json.loads(result.stdout)["layers"][1]["weights"][0][0] == [0, 0, 0]


def test_the_python_api_computes_a_stack_as_the_reference_chained(tmp_path):
    """attncli.compute on a stack: each layer's Trace in order and the stack's output (tests/reference.py's loops
    chained by hand); layer=N: that layer alone, its inputs the layer before's result; a file as a mapping."""
    import attncli

    layers = [FIRST, SECOND, THIRD]
    answers, last = chained(layers, X)
    (tmp_path / "doc.json").write_text(json.dumps({"inputs": X, "layers": layers}))
    for document in ({"inputs": X, "layers": layers}, tmp_path / "doc.json"):
        result = attncli.compute(document)
        assert isinstance(result, list) and len(result) == 3
        for trace, answer in zip(result, answers):
            for key in ("inputs", "queries", "weights", "output"):
                assert max_abs_diff(getattr(trace, key).tolist(), answer[key]) < 1e-9, key
        assert max_abs_diff(result.output.tolist(), last) < 1e-9 and result.output.shape == (3, 5)
    second = attncli.compute({"inputs": X, "layers": layers}, layer=2, only=["weights"])
    assert max_abs_diff(second.weights.tolist(), answers[1]["weights"]) < 1e-9
    assert max_abs_diff(second.inputs.tolist(), answers[0]["normalized"]) < 1e-9


def test_the_python_api_refuses_a_stack_where_it_takes_one_layer():
    import attncli
    from attncli.core.errors import AttnError

    with pytest.raises(AttnError, match="layers: makes a stack of layers"):
        attncli.load({"inputs": X, "layers": [FIRST]})
    with pytest.raises(AttnError, match="emulate: emulates one layer's kernel: choose the layer with --layer N"):
        attncli.compute({"inputs": X, "layers": [FIRST]}, emulate="bf16")
    with pytest.raises(AttnError, match="'normalized' needs add_norm.*layers\\[1\\], layer 2"):
        attncli.compute({"inputs": X, "layers": [FIRST, THIRD]}, only=["normalized"])


def test_scale_option_replaces_every_layers_scale(runner, tmp_path):
    result = got(runner, tmp_path, {"inputs": X, "layers": [FIRST, THIRD]}, "--scale", "none")
    assert [layer["scale"] for layer in result["layers"]] == [1.0, 1.0]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_explain_step_1_of_a_later_layer_says_where_its_inputs_come_from(runner, tmp_path, lang):
    """Layer 2's step 1 says its rows are what layer 1 passed on (its LayerNorm, add_norm), not the document's
    numbers, and shows those rows (tests/reference.py's layer 1 answer); layer 3's, after a layer with add_norm too;
    layer 1's keeps the document's words."""
    (tmp_path / "doc.json").write_text(json.dumps({"inputs": X, "layers": [FIRST, SECOND, THIRD]}))
    answers, _ = chained([FIRST, SECOND, THIRD], X)
    for layer, words in ((1, ("your document", "你文档里写的数字")), (2, ("layer 1 passed on", "第 1 层传下来的")),
                         (3, ("layer 2 passed on", "第 2 层传下来的"))):
        result = runner.invoke(app, ["explain", str(tmp_path / "doc.json"), "--layer", str(layer), "--step", "1",
                                     "--lang", lang, "--precision", "6", "--format", "json"])
        assert result.exit_code == 0, result.output
        step = json.loads(result.stdout)
        text = " ".join(step["text"])
        assert words[lang == "zh"] in text
        assert ("add_norm" in text) == (layer > 1) and ("stack" in text or "堆叠" in text) == (layer > 1)
        shown = np.array(step["numbers"]["inputs"]["values"], dtype=float)
        expected = np.array(X) if layer == 1 else np.array(answers[layer - 2]["normalized"])
        assert np.abs(shown - expected).max() < 1e-9


@pytest.mark.parametrize("doc, where, words", [
    ({"inputs": "secret\nmore", "layers": [{}]}, ": inputs: ", "neither a matrix nor a file name"),
    ({"tokens": ["a"], "inputs": [[1, 0], [0, 1]], "layers": [{}, {}]}, ": tokens: ", "has 1 label"),
    ({"inputs": [[1, 0], [0, 1]], "layers": [{"context": [[1, 0, 0]], "context_tokens": ["z"]}, {}]},
     ": layers[0]: context: ", "has rows of 3 numbers but inputs have 2"),
])
def test_a_stacks_errors_name_the_key_where_the_document_has_it(runner, tmp_path, doc, where, words):
    """tokens and the first layer's inputs are top-level keys: named there, not inside layers[0]; a context whose
    width differs from the inputs' with no weights to bridge them is named, not the weights it does not have."""
    result = run(runner, tmp_path, doc, code=2)
    line = result.stderr
    assert line.count("\n") == 1 and line.startswith("Error: ") and where in line and words in line, line
    assert "secret" not in line or "'secret" in line  # (quoted as a value, shortened, never a file's content)
    assert ("layers[0]" in line) == ("context" in where)
