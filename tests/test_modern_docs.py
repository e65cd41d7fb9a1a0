"""Today's attention as documented: the two examples, `attncli init`'s new switches, and what is not built yet.

examples/llama_style.yaml and examples/rope.yaml are recomputed here with plain numpy (the head split, the
grouping of key/value heads, RMSNorm, the rotation, the mask and the residual written out again, sharing no
maths with attncli); rope.yaml's hand-worked numbers, quoted in its comments and the README, are checked too.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import EXAMPLES, ROOT, pages_text

from attncli.cli import app
from attncli.inputs.initialisers import random_matrix

README = pages_text()  # the README and the guides its sections moved to
FORMAT = (ROOT / "docs" / "format.md").read_text(encoding="utf-8")
ENTRY_POINT = Path(sys.executable).parent / "attncli"


def compute(runner, path: Path | str, *args: str, stdin: str | None = None) -> dict:
    result = runner.invoke(app, ["compute", str(path), "--format", "json", *args], input=stdin)
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    return json.loads(result.stdout)


def shapes(data: dict) -> dict[str, tuple[int, ...]]:
    return {key: np.shape(value) for key, value in data.items() if isinstance(value, list) and key not in
            ("tokens", "context_tokens")}


# ---------------------------------------------------------------- examples/llama_style.yaml


def test_llama_style_has_the_documented_keys_and_shapes(runner):
    data = compute(runner, EXAMPLES / "llama_style.yaml")
    assert (data["heads"], data["kv_heads"], data["d_k"], data["d_v"], data["scale"]) == (8, 2, 4, 4, 0.5)
    assert data["tokens"] == ["the", "llama", "ate", "some", "green", "grass"]
    assert shapes(data) == {
        "inputs": (6, 16), "normalized_inputs": (6, 16),
        "queries": (8, 6, 4), "keys": (2, 6, 4), "values": (2, 6, 4),
        "queries_rotated": (8, 6, 4), "keys_rotated": (2, 6, 4), "rope_frequencies": (2,),
        "scores": (8, 6, 6), "scaled_scores": (8, 6, 6), "weights": (8, 6, 6), "lse": (8, 6),
        "head_outputs": (8, 6, 4), "output": (6, 16), "residual": (6, 16),
    }
    weights = np.array(data["weights"])
    assert np.all(np.triu(weights, 1) == 0) and np.allclose(weights.sum(axis=-1), 1.0, atol=1e-12)
    assert all(data["scaled_scores"][h][0][1:] == [None] * 5 for h in range(8))  # causal: masked is null


def _rms_norm(x: np.ndarray, gamma: np.ndarray, eps: float) -> np.ndarray:
    return np.array([[g * v / math.sqrt(sum(u * u for u in row) / len(row) + eps) for g, v in zip(gamma, row)]
                     for row in x])


def _rotate_half(x: np.ndarray, position: float, base: float) -> np.ndarray:
    """One row of one head, written pair by pair: dimension i with i + d/2, turned by position · base^(−2i/d)."""
    d = len(x)
    out = list(x)
    for i in range(d // 2):
        angle = position * base ** (-2 * i / d)
        a, b = x[i], x[i + d // 2]
        out[i], out[i + d // 2] = a * math.cos(angle) - b * math.sin(angle), b * math.cos(angle) + a * math.sin(angle)
    return np.array(out)


def test_llama_style_matches_a_plain_numpy_decoder_block(runner):
    doc = yaml.safe_load((EXAMPLES / "llama_style.yaml").read_text(encoding="utf-8"))
    m = {name: random_matrix(doc["weights"][name], None) for name in ("query", "key", "value", "output")}
    x = random_matrix(doc["inputs"], None)
    gamma = random_matrix(doc["pre_norm"]["gamma"], None).reshape(-1)
    h, g, d = 8, 2, 4
    x_hat = _rms_norm(x, gamma, 1e-5)
    q = [x_hat @ m["query"][:, i * d:(i + 1) * d] for i in range(h)]
    k = [x_hat @ m["key"][:, j * d:(j + 1) * d] for j in range(g)]
    v = [x_hat @ m["value"][:, j * d:(j + 1) * d] for j in range(g)]
    q_rot = [np.array([_rotate_half(row, p, 10000.0) for p, row in enumerate(qi)]) for qi in q]
    k_rot = [np.array([_rotate_half(row, p, 10000.0) for p, row in enumerate(kj)]) for kj in k]
    heads = []
    for i in range(h):
        j = i // (h // g)  # query heads 0-3 read key/value head 0, heads 4-7 head 1
        s = q_rot[i] @ k_rot[j].T / math.sqrt(d)
        s[np.triu_indices(6, 1)] = -np.inf
        a = np.exp(s - s.max(axis=1, keepdims=True))
        heads.append((a / a.sum(axis=1, keepdims=True)) @ v[j])
    y = np.concatenate(heads, axis=1) @ m["output"]
    data = compute(runner, EXAMPLES / "llama_style.yaml")
    for key, expected in (("normalized_inputs", x_hat), ("queries", q), ("keys", k), ("values", v),
                          ("queries_rotated", q_rot), ("keys_rotated", k_rot), ("head_outputs", heads),
                          ("output", y), ("residual", x + y)):
        np.testing.assert_allclose(np.array(data[key]), np.array(expected), rtol=1e-12, atol=1e-12, err_msg=key)


# ---------------------------------------------------------------- examples/rope.yaml


def test_rope_example_by_hand(runner):
    data = compute(runner, EXAMPLES / "rope.yaml")
    x = [1.0, 1.0, 2.0, 0.0]
    # style half: dimensions 1 & 3 are a pair turning 1 rad per position, 2 & 4 one turning 0.01 rad
    rotated = []
    for p in (0, 1, 2):
        a1, b1 = x[0] * math.cos(p) - x[2] * math.sin(p), x[2] * math.cos(p) + x[0] * math.sin(p)
        a2, b2 = (x[1] * math.cos(0.01 * p) - x[3] * math.sin(0.01 * p),
                  x[3] * math.cos(0.01 * p) + x[1] * math.sin(0.01 * p))
        rotated.append([a1, a2, b1, b2])
    rotated = np.array(rotated)
    np.testing.assert_allclose(data["queries_rotated"][0], rotated, rtol=0, atol=1e-14)
    np.testing.assert_allclose(data["keys_rotated"][0], rotated, rtol=0, atol=1e-14)
    assert data["queries"][0] == [x, x, x] and data["values"][0] == [x, x, x]  # projections and values unturned
    # the score depends on the distance only: 5·cos(i − j) + 1·cos(0.01·(i − j))
    expected = np.array([[5 * math.cos(i - j) + math.cos(0.01 * (i - j)) for j in range(3)] for i in range(3)])
    np.testing.assert_allclose(data["scores"][0], expected, rtol=0, atol=1e-13)
    assert data["scale"] == 1.0 and data["scaled_scores"] == data["scores"]
    e = np.exp(expected)
    np.testing.assert_allclose(data["weights"][0], e / e.sum(axis=1, keepdims=True), rtol=0, atol=1e-14)
    np.testing.assert_allclose(data["output"], [x, x, x], rtol=0, atol=1e-14)  # equal value rows: any weights give x
    # the numbers the comments and the README quote, at the precision quoted
    assert [round(v, 4) for v in data["queries_rotated"][0][1]] == [-1.1426, 1.0, 1.9221, 0.01]
    assert round(data["queries_rotated"][0][1][1], 5) == 0.99995
    assert [round(v, 4) for v in data["scores"][0][0]] == [6.0, 3.7015, -1.0809]


def test_rope_numbers_quoted_in_the_example_and_readme():
    comments = (EXAMPLES / "rope.yaml").read_text(encoding="utf-8")
    for text in (comments, README):
        for number in ("−1.1426", "1.9221", "0.99995", "3.7015", "−1.0809"):
            assert number in text, number


def test_the_readme_shows_llama_style_as_it_is():
    section = README.split("## Today's attention: grouped-query heads, rotary positions, pre-norm", 1)[1]
    shown = yaml.safe_load(re.search(r"```yaml\n(.*?)```", section, re.S).group(1))
    assert shown == yaml.safe_load((EXAMPLES / "llama_style.yaml").read_text(encoding="utf-8"))


def test_both_examples_are_listed_in_the_readme():
    table = README.split("## The examples", 1)[1].split("\n## ", 1)[0]
    for name in ("llama_style.yaml", "rope.yaml"):
        assert f"| `examples/{name}` |" in table


# ---------------------------------------------------------------- the README's section on today's attention


def test_readme_maps_every_new_key_to_its_pytorch_name():
    section = README.split("## Today's attention: grouped-query heads, rotary positions, pre-norm", 1)[1]
    section = section.split("\n## ", 1)[0]
    keys = ("kv_heads", "rope", "rope.base", "rope.dims", "rope.style", "rope.frequencies", "positions",
            "context_positions", "pre_norm", "post_norm", "residual", "softcap")
    rows = {cell for line in section.splitlines() if line.startswith("| `")
            for cell in re.findall(r"`([\w.]+)(?::[^`]*)?`", line.split("|")[1])}
    assert set(keys) <= rows
    for name in ("num_key_value_heads", "rope_theta", "partial_rotary_factor", "rotary_pct", "rotate_half",
                 "inv_freq", "rope_scaling", "attn_logit_softcapping", "query_pre_attn_scalar", "input_layernorm",
                 "post_attention_layernorm", "RoFormer", "GPT-J", "GPT-NeoX"):
        assert name in section, name


# ---------------------------------------------------------------- attncli init --kv-heads, --rope, --pre-norm

INIT = [
    # (options, h, g, d_k, rope, pre_norm)
    (["--heads", "4", "--d-model", "8", "--kv-heads", "2"], 4, 2, 2, False, None),
    (["--heads", "2", "--kv-heads", "1", "--mask", "causal"], 2, 1, 2, False, None),
    (["--rope"], 1, 1, 4, True, None),
    (["--pre-norm", "rms"], 1, 1, 4, False, "rms"),
    (["--pre-norm", "layer", "--d-v", "3"], 1, 1, 4, False, "layer"),  # 1·3 ≠ 4: W_O maps back to d_model
    (["--n", "6", "--d-model", "16", "--heads", "8", "--kv-heads", "2", "--rope", "--pre-norm", "rms", "--mask",
      "causal"],
     8, 2, 2, True, "rms"),
    (["--n", "2", "--context", "3", "--heads", "2", "--kv-heads", "1", "--rope", "--pre-norm", "layer"], 2, 1, 2, True,
     "layer"),
]


@pytest.mark.parametrize("inline", [False, True])
@pytest.mark.parametrize("options, h, g, d_k, rope, pre_norm", INIT)
def test_init_switches_write_documents_that_compute(runner, options, h, g, d_k, rope, pre_norm, inline):
    written = runner.invoke(app, ["init", *options, *(["--inline"] if inline else [])])
    assert written.exit_code == 0, written.output
    doc = yaml.safe_load(written.stdout)
    assert doc.get("kv_heads") == (g if "--kv-heads" in options else None)
    assert doc.get("rope") == ({"base": 10000, "style": "half"} if rope else None)
    assert doc.get("pre_norm", {}).get("kind") == pre_norm
    assert doc.get("residual") is (True if pre_norm else None)
    data = compute(runner, "-", stdin=written.stdout)
    n, m = len(data["tokens"]), len(data["context_tokens"])
    assert (data["heads"], data["kv_heads"], data["d_k"]) == (h, g, d_k)
    assert np.shape(data["keys"]) == (g, m, d_k) and np.shape(data["queries"]) == (h, n, d_k)
    assert ("queries_rotated" in data, "keys_rotated" in data) == (rope, rope)
    assert ("normalized_inputs" in data, "residual" in data) == (pre_norm is not None, pre_norm is not None)
    if pre_norm:
        np.testing.assert_allclose(data["residual"], np.add(data["inputs"], data["output"]), rtol=0, atol=1e-12)
    if rope:  # the first query sits at position 0: not turned; the next ones are
        assert data["queries_rotated"][0][0] == data["queries"][0][0]
        assert n == 1 or data["queries_rotated"][0][1] != data["queries"][0][1]
    if "--kv-heads" in options and not inline:
        width = int(options[options.index("--d-model") + 1]) if "--d-model" in options else 4
        assert re.search(rf"  key: +\{{random: \w+, seed: \d+, shape: \[{width}, {g * d_k}\]\}} "
                         r"+# d_(model|ctx) × g·d_k", written.stdout)


def test_init_without_the_switches_writes_none_of_the_new_keys(runner):
    written = runner.invoke(app, ["init", "--heads", "2"])
    assert written.exit_code == 0
    doc = yaml.safe_load(written.stdout)
    assert not {"kv_heads", "rope", "pre_norm", "residual", "positions"} & set(doc)
    assert "today's models" not in written.stdout


@pytest.mark.parametrize("options, message", [
    (["--heads", "4", "--kv-heads", "3"], "Error: --kv-heads: 3 does not divide --heads 4"),
    (["--heads", "2", "--kv-heads", "4"], "Error: --kv-heads: 4 does not divide --heads 2"),
    (["--kv-heads", "2"], "Error: --kv-heads: 2 does not divide --heads 1"),
    (["--d-model", "6", "--heads", "2", "--rope"], "Error: --rope: turns pairs of dimensions, so each head needs an "
                                                    "even width, but d_k = 3"),
    (["--d-k", "5", "--rope"], "Error: --rope:"),
])
def test_init_refuses_bad_combinations(runner, tmp_path, options, message):
    out = tmp_path / "doc.yaml"
    result = runner.invoke(app, ["init", *options, "-o", str(out)])
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.startswith(message) and result.stderr.count("\n") == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert not out.exists()


@pytest.mark.parametrize("options, message", [
    (["--kv-heads", "0"], "Error: Invalid value for '--kv-heads': 0 is not in the range x>=1"),
    (["--pre-norm", "batch"], "Error: Invalid value for '--pre-norm': 'batch' is not one of 'rms', 'layer'"),
    (["--rope", "yes"], "Error: Got unexpected extra argument(s) (yes)"),
])
@pytest.mark.slow
def test_init_option_parser_refusals_are_one_line(tmp_path, options, message):
    """What the option parser refuses goes through the entry point's one-line error too (a real process)."""
    out = tmp_path / "doc.yaml"
    command = [str(ENTRY_POINT)] if ENTRY_POINT.exists() else [sys.executable, "-m", "attncli"]
    result = subprocess.run([*command, "init", *options, "-o", str(out)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith(message) and result.stderr.count("\n") == 1, result.stderr
    assert not out.exists()


def test_init_help_shows_the_switches(runner):
    text = runner.invoke(app, ["init", "--help"], env={"COLUMNS": "200"}).stdout
    for switch in ("--kv-heads", "--rope", "--pre-norm"):
        assert switch in text
    assert "attncli init --d-model 8 --heads 4 --kv-heads 2 --rope --pre-norm rms" in text
