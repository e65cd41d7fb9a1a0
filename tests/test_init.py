"""attncli init: the written document always computes, with the sizes asked for."""

from __future__ import annotations

import json

import numpy as np
import pytest
import yaml

from attncli.cli import app
from attncli.inputs.document import parse_text

GRID = [
    # (options, n, m, d_model, heads, d_k, d_v)
    ([], 3, 3, 4, 1, 4, 4),
    (["--tokens", "Evan's dog Riley barks"], 4, 4, 4, 1, 4, 4),
    (["--tokens", "我想吃酸菜鱼", "--d-model", "8", "--heads", "2", "--mask", "causal"], 6, 6, 8, 2, 4, 4),
    (["--n", "5", "--d-model", "6", "--d-k", "3", "--d-v", "2"], 5, 5, 6, 1, 3, 2),
    (["--n", "2", "--context", "3", "--d-model", "5", "--heads", "2", "--d-k", "2"], 2, 3, 5, 2, 2, 2),
    (["--n", "4", "--mask", "causal", "--context", "4", "--seed", "42"], 4, 4, 4, 1, 4, 4),
    (["--tokens", "a", "--d-model", "1", "--seed", str(2**63 - 8)], 1, 1, 1, 1, 1, 1),
    (["--tokens", "yes no null 1e3 'a' #b", "--heads", "4", "--d-model", "8", "--d-v", "3"], 6, 6, 8, 4, 2, 3),
]


def run(runner, *args, stdin=None):
    return runner.invoke(app, [str(a) for a in args], input=stdin)


def init_compute(runner, options):
    doc = run(runner, "init", *options)
    assert doc.exit_code == 0, doc.output
    result = run(runner, "compute", "-", "--format", "json", stdin=doc.stdout)
    assert result.exit_code == 0, result.output
    return doc.stdout, json.loads(result.stdout)


@pytest.mark.parametrize("options, n, m, d_model, heads, d_k, d_v", GRID)
@pytest.mark.parametrize("init", ["xavier", "kaiming", "normal", "uniform"])
@pytest.mark.parametrize("inline", [False, True])
def test_init_round_trips_through_compute(runner, options, n, m, d_model, heads, d_k, d_v, init, inline):
    text, out = init_compute(runner, [*options, "--init", init, *(["--inline"] if inline else [])])
    assert (out["heads"], out["d_k"], out["d_v"]) == (heads, d_k, d_v)
    assert np.array(out["weights"]).shape == (heads, n, m)
    assert np.array(out["head_outputs"]).shape == (heads, n, d_v)
    assert np.array(out["output"]).shape == (n, d_model if heads > 1 else d_v)
    np.testing.assert_allclose(np.array(out["weights"]).sum(axis=-1), 1.0, atol=1e-12)
    if "causal" in options:
        assert np.all(np.triu(np.array(out["weights"]), 1) == 0)
    seed = int(options[options.index("--seed") + 1]) if "--seed" in options else 0
    assert "query:" in text and f"{{random: {init}, seed: {seed + 1}, shape: [{d_model}, {heads * d_k}]}}" in text
    assert f"{{random: normal, seed: {seed}, shape: [{n}, {d_model}]}}" in text  # the inputs
    assert len(out["tokens"]) == n and len(out["context_tokens"]) == m


def test_tokens_read_back_as_written(runner):
    text, out = init_compute(runner, ["--tokens", "yes no null 1e3 'a' #b"])
    assert out["tokens"] == ["yes", "no", "null", "1e3", "'a'", "#b"]
    assert yaml.safe_load(text)["tokens"] == out["tokens"]


@pytest.mark.parametrize("seed", [0, 7, 123456])
def test_inline_numbers_equal_the_random_specs(runner, seed):
    options = ["--n", "3", "--context", "2", "--d-model", "4", "--heads", "2", "--seed", str(seed)]
    spec_text, from_specs = init_compute(runner, options)
    inline_text, from_inline = init_compute(runner, [*options, "--inline"])
    assert isinstance(yaml.safe_load(spec_text)["weights"]["query"], dict)
    assert isinstance(yaml.safe_load(inline_text)["weights"]["query"], list)
    for key in ("inputs", "queries", "keys", "values", "weights", "output"):
        assert from_inline[key] == from_specs[key]  # exact: every float written with its repr
    other = init_compute(runner, [*options[:-1], str(seed + 1)])[1]
    assert other["inputs"] != from_specs["inputs"]


def test_inline_writes_plain_distinct_floats(runner):
    text = run(runner, "init", "--n", "2", "--d-model", "3", "--inline", "--seed", "5").stdout
    written = yaml.safe_load(text)["inputs"]
    assert np.array(written).shape == (2, 3) and all(isinstance(x, float) for row in written for x in row)
    assert len({x for row in written for x in row}) == 6


@pytest.mark.parametrize("args, message", [
    (["--context", "2", "--mask", "causal"], "--mask causal: needs as many keys as queries"),
    (["--d-model", "5", "--heads", "2"], "--heads: d_model 5 is not divisible by 2 heads; give --d-k"),
    (["--tokens", "a b", "--n", "3"], "--n: is 3 but --tokens gives 2 tokens"),
    (["--tokens", "   "], "--tokens: is empty"),
    (["--d-model", "2000", "--n", "2000", "--inline"], "--inline: would write more than"),
    (["--seed", str(2**63 - 7)], "--seed: 9223372036854775801 is too large"),
    (["--n", "3", "--tokens", "a b"], "--n: is 3 but --tokens gives 2 tokens"),
])
def test_option_errors_exit_2(runner, args, message):
    result = run(runner, "init", *args)
    assert result.exit_code == 2 and message in result.stderr and result.stdout == ""


def test_writes_a_file_atomically_and_never_over_itself(runner, tmp_path):
    out = tmp_path / "doc.yaml"
    assert run(runner, "init", "--n", "2", "-o", out).exit_code == 0
    assert run(runner, "compute", out, "--only", "weights").exit_code == 0
    assert [p.name for p in tmp_path.iterdir()] == ["doc.yaml"]
    before = out.read_text()
    bad = run(runner, "init", "--n", "2", "--context", "3", "--mask", "causal", "--force", "-o", out)
    assert bad.exit_code == 2 and out.read_text() == before


@pytest.mark.parametrize("options", [[], ["--inline", "--heads", "2", "--d-model", "4"],
                                     ["--tokens", "我想吃", "--rope", "--pre-norm", "rms", "--kv-heads", "1",
                                      "--heads", "2", "--mask", "causal"], ["--n", "2", "--context", "3", "--inline"]])
def test_a_json_name_gets_a_json_document_with_the_same_numbers(runner, tmp_path, options):
    """init -o doc.json: JSON that attncli (and json.loads) reads, computing exactly what the YAML document does."""
    out = tmp_path / "doc.JSON"
    assert run(runner, "init", *options, "-o", out).exit_code == 0
    text = out.read_text(encoding="utf-8")
    # the same keys and values (YAML 1.2)
    assert json.loads(text) == parse_text(run(runner, "init", *options).stdout, "doc")
    from_json = run(runner, "compute", out, "--format", "json")
    assert from_json.exit_code == 0, from_json.output
    assert json.loads(from_json.stdout) == init_compute(runner, options)[1]


def test_the_commented_optional_lines_compute_when_uncommented(runner):
    text = run(runner, "init", "--n", "3", "--heads", "1").stdout
    uncommented = text.replace("  # output:", "  output:").replace("# bias:", "bias:").replace("#   query:", "  query:")
    result = run(runner, "compute", "-", "--format", "json", stdin=uncommented)
    assert result.exit_code == 0, result.output
    assert np.array(json.loads(result.stdout)["output"]).shape == (3, 4)


def test_help_has_examples(runner):
    for command in ("init", "heatmap"):
        text = run(runner, command, "--help").stdout
        assert "Examples" in text and f"attncli {command}" in text




@pytest.mark.parametrize("inline", [False, True])
def test_init_writes_sinks_a_gate_and_a_query_temperature_that_compute(runner, inline):
    """--sinks, --gate and --query-temperature: the document computes, each stage as FORMAT.md defines it, by hand."""
    options = ["--n", "5", "--d-model", "8", "--heads", "2", "--rope", "--mask", "causal", "--sinks", "--gate",
               "--query-temperature", "--seed", "3", *(["--inline"] if inline else [])]
    text, out = init_compute(runner, options)
    doc = yaml.safe_load(text)
    assert doc["sinks"] == [0.0, 0.0] and doc["query_temperature"] == {"floor_scale": 2, "attn_scale": 0.1}
    tau = [1 + 0.1 * np.log(1 + (p + 1) // 2) for p in range(5)]  # 1, 1 + 0.1·ln 2, …, 1 + 0.1·ln 4
    np.testing.assert_allclose(out["query_temperature"], tau, rtol=1e-15)
    weights, sink = np.array(out["weights"]), np.array(out["sink_weights"])
    np.testing.assert_allclose(weights.sum(-1) + sink, 1.0, rtol=1e-14)  # the sink's share: e^0 / (Σ e^z + e^0)
    assert (sink > 0).all()
    x = np.array(out["inputs"])
    only = run(runner, "compute", "-", "-f", "json", "--only", "weight_gate", stdin=text)
    w_g = np.array(json.loads(only.stdout)["weight_gate"])  # h × d_model × d_v, as the document drew it
    gate = 1 / (1 + np.exp(-np.einsum("nd,hde->hne", x, w_g)))
    np.testing.assert_allclose(out["gate"], gate, rtol=1e-13)
    np.testing.assert_allclose(out["gated_head_outputs"], np.array(out["head_outputs"]) * gate, rtol=1e-13)
    assert "seed: 10, shape: [8, 8]" in text or inline  # the gate takes --seed + 7
