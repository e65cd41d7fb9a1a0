"""attncli explain on today's attention: pre_norm, rope and residual steps, the shared K/V head, the soft cap.

Every number is checked against tests/modern_reference.py (numpy written out pair by pair);
documents without the new keys explain exactly as before (tests/golden/explain.json, recorded
before the new steps existed).
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import EXAMPLES
from golden_compare import assert_same_result
from modern_reference import W_K, X, document, heads_of, reference
from test_explain_zh import assert_chinese, zh_steps

from attncli.cli import app

NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:e-?\d+)?")


def write(tmp_path, doc: dict, name: str = "modern.yaml") -> str:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(json.loads(json.dumps(doc)), allow_unicode=True))  # no YAML aliases for shared lists
    return str(path)


def steps_of(runner, path: str, *args) -> dict:
    result = runner.invoke(app, ["explain", path, *args, "--format", "json"])
    assert result.exit_code == 0, result.output
    return {s["step"]: s for s in json.loads(result.stdout)["steps"]}


def table(step: dict, key: str) -> np.ndarray:
    return np.array(step["numbers"][key]["values"], dtype=float)


def last_numbers(line: str, count: int) -> list[float]:
    return [float(x) for x in NUMBER.findall(line)[-count:]]


@pytest.fixture
def modern(tmp_path) -> str:
    return write(tmp_path, document())


# ---------------------------------------------------------------- order, and old documents unchanged


def test_the_steps_come_in_the_contracts_order(runner, modern):
    assert list(steps_of(runner, modern)) == [1, 2, "pre_norm", 3, "rope", 4, 5, 6, 7, 8, "residual"]
    for name in ("pre_norm", "rope", "residual"):
        result = runner.invoke(app, ["explain", modern, "--step", name, "--format", "json"])
        assert result.exit_code == 0 and json.loads(result.stdout)["step"] == name


# the output before the steps of today's attention existed; issue 19's texts (symmetry, scale, z, notation q₁ · k₂,
# the walkthrough's figures) are the last change, pinned here. Text exactly; the numbers of the JSON within rounding
# (golden_compare.py); the illustrated example's table text exactly, as its numbers are sums of small whole numbers.
BEFORE = json.loads((Path(__file__).parent / "golden" / "explain.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("case", sorted(BEFORE))
def test_documents_without_the_new_keys_explain_as_before(runner, case):
    name, kind, lang = case.split("-")
    args = ["explain", str(EXAMPLES / name), "--lang", lang] + (["--format", "json"] if kind == "json" else [])
    result = runner.invoke(app, args, env={"COLUMNS": "100", "NO_COLOR": "1"})
    assert result.exit_code == 0, result.output
    if kind == "table":
        assert result.stdout == BEFORE[case]
    else:
        assert_same_result(json.loads(result.stdout), BEFORE[case], case)


@pytest.mark.parametrize("step, needs", [("rope", "rope:"), ("pre_norm", "pre_norm:"), ("residual", "residual: true")])
def test_a_new_step_the_document_lacks_names_the_key_it_needs(runner, step, needs):
    result = runner.invoke(app, ["explain", str(EXAMPLES / "illustrated.yaml"), "--step", step])
    assert result.exit_code == 2 and result.stdout == ""
    assert f"'{step}' needs {needs} in the document" in result.stderr


def test_with_add_norm_the_residual_step_is_add_norm(runner, tmp_path):
    path = write(tmp_path, document(add_norm=True))
    assert "add_norm" in steps_of(runner, path) and "residual" not in steps_of(runner, path)
    result = runner.invoke(app, ["explain", path, "--step", "residual"])
    assert result.exit_code == 2 and "the residual is part of step add_norm here" in result.stderr


# ---------------------------------------------------------------- pre_norm


def test_pre_norm_writes_out_the_rms_of_the_chosen_row(runner, modern):
    ref = reference()
    step = steps_of(runner, modern, "--query", "cat")["pre_norm"]
    assert step["title"] == "Pre-norm: RMSNorm" and step["formula"] == "X̂ = γ ⊙ X / √(mean(X²) + ε)"
    x = np.array(X[1])
    mean_sq = float((x ** 2).mean())  # (0² + 2² + 0² + 2²) / 4
    assert step["lines"][1] == f"mean(x²) = (0² + 2² + 0² + 2²) / 4 = {mean_sq:g}"
    assert last_numbers(step["lines"][2], 1) == pytest.approx([math.sqrt(mean_sq + 1e-6)], abs=1e-4)
    assert "[1, 0.5000, 2, 1] ⊙" in step["lines"][3]  # γ with its numbers
    assert last_numbers(step["lines"][3], 4) == pytest.approx(ref["x_hat"][1], abs=1e-4)
    assert table(step, "normalized_inputs") == pytest.approx(ref["x_hat"])
    text = " ".join(step["text"])
    assert "RMSNorm" in text and "ε = 1e-06" in text and "the learned gain" in text
    assert "The residual added at the end (step residual) uses X as it was" in text


def test_pre_norm_layer_shows_mean_variance_and_beta(runner, tmp_path):
    path = write(tmp_path, document(pre_norm={"kind": "layer", "beta": [0, 1, 0, 1]}, residual=None))
    step = steps_of(runner, path, "--query", "1")["pre_norm"]
    assert step["title"] == "Pre-norm: LayerNorm"
    x = np.array(X[0])
    assert step["lines"][1] == f"mean = {x.mean():.4f}   var = mean((x − mean)²) = {x.var():.4f}"
    assert "+ [0, 1, 0, 1] =" in step["lines"][3]
    expected = (x - x.mean()) / math.sqrt(x.var() + 1e-5) + np.array([0, 1, 0, 1])
    assert last_numbers(step["lines"][3], 4) == pytest.approx(expected, abs=1e-4)
    assert "The residual added" not in " ".join(step["text"])  # no residual in this document


def test_projections_say_x_hat_and_multiply_its_rows(runner, modern):
    ref = reference()
    steps = steps_of(runner, modern, "--head", "3")
    step = steps[3]
    assert step["formula"] == "Q = X̂·W_Q   K = X̂·W_K   V = X̂·W_V"
    assert all("X·W" not in s["formula"] and "(X + P)·W" not in s["formula"] for s in steps.values())
    assert table(step, "queries") == pytest.approx(ref["q"][2])
    assert table(step, "keys") == pytest.approx(ref["k"][1])  # query head 3 uses K/V head 2
    assert table(step, "values") == pytest.approx(ref["v"][1])
    assert "those of X̂" in " ".join(step["text"])
    assert ("its keys and values are those of K/V head 2, computed once and shared by heads 3 and 4"
            in " ".join(step["text"]))  # (a range of two: "3 and 4", not "3 to 4")


# ---------------------------------------------------------------- grouped-query and multi-query attention


@pytest.mark.parametrize("head, kv", [(1, 0), (2, 0), (3, 1), (4, 1)])
def test_the_weights_step_names_the_shared_kv_head(runner, modern, head, kv):
    step = steps_of(runner, modern, "--head", str(head))[2]
    text = " ".join(step["text"])
    i = head - 1
    assert f"head {head} shown here (i = {i}) therefore uses key/value head {i} // 2 = {i // 2}" in text
    assert f"K/V head {kv + 1} counting from 1, shared by heads {2 * kv + 1} and {2 * kv + 2}" in text
    assert "KV cache" in text and "2 keys and 2 values instead of 4 of each" in text
    assert table(step, "w_k") == pytest.approx(heads_of(W_K, 2)[kv])
    assert step["numbers"]["w_k"]["title"].endswith(f"K/V head {kv + 1} (query heads {2 * kv + 1}–{2 * kv + 2})")
    zh = " ".join({s["step"]: s for s in zh_steps(runner, modern, "--head", str(head))}[2]["text"])
    assert "分组查询注意力" in zh and "KV 缓存" in zh and f"{i} // 2 = {i // 2}" in zh
    assert f"由第 {2 * kv + 1} 和第 {2 * kv + 2} 个头共用" in zh


def test_kv_heads_1_is_called_multi_query_attention(runner, tmp_path):
    w = np.asarray(W_K)[:, :4].tolist()
    path = write(tmp_path, document(kv_heads=1, weights=dict(document()["weights"], key=w, value=w)))
    for head in ("1", "4"):
        step = steps_of(runner, path, "--head", head)[2]
        assert "multi-query attention (MQA)" in " ".join(step["text"])
        assert table(step, "w_k") == pytest.approx(np.asarray(w))
    zh = {s["step"]: s for s in zh_steps(runner, path)}[2]
    assert "多查询注意力" in " ".join(zh["text"])


# ---------------------------------------------------------------- rope


def test_rope_turns_one_pair_of_the_query_and_of_one_key(runner, modern):
    ref = reference()
    step = steps_of(runner, modern, "--head", "3", "--query", "sat")["rope"]
    q_pos, k_pos = 2, 1  # "sat" at 2; the first earlier key that is turned at all: "cat" at 1
    assert step["lines"][0].startswith("sat: q at p = 2:   φ = 2 × 1 = 2   cos φ = -0.4161   sin φ = 0.9093")
    assert step["lines"][1].startswith("(q₁, q₃) = ")  # style half: dimension 1 with dimension 3
    assert last_numbers(step["lines"][1], 2) == pytest.approx(ref["qr"][2, q_pos, [0, 2]], abs=1e-4)
    assert step["lines"][2].startswith("cat: k at p′ = 1:   φ = 1 × 1 = 1   cos φ = 0.5403   sin φ = 0.8415")
    assert last_numbers(step["lines"][3], 2) == pytest.approx(ref["kr"][1, k_pos, [0, 2]], abs=1e-4)
    both = float(ref["qr"][2, q_pos, [0, 2]] @ ref["kr"][1, k_pos, [0, 2]])
    assert last_numbers(step["lines"][4], 1) == pytest.approx([both], abs=1e-4)
    # the same number from the distance alone: q turned by (p − p′)·f against k not turned
    assert step["lines"][5].startswith("(p − p′)·f = (2 − 1) × 1 = 1:   rot(1)·(q₁, q₃) = ")
    assert last_numbers(step["lines"][5], 1) == pytest.approx([both], abs=1e-4)
    assert table(step, "queries_rotated") == pytest.approx(ref["qr"][2])
    assert table(step, "keys_rotated") == pytest.approx(ref["kr"][1])
    assert table(step, "angles") == pytest.approx(np.array([[2, 0.2], [1, 0.1]]))
    text = " ".join(step["text"])
    assert "θ = 100 and dims = 4: f = [1, 0.1]" in text and "rotate_half" in text
    assert "“sat” is at p = 2 and “cat” at p′ = 1" in text
    assert "the score sees the distance p − p′" in text and "The values are not rotated." in text
    zh = " ".join({s["step"]: s for s in zh_steps(runner, modern, "--query", "sat")}["rope"]["text"])
    assert "旋转位置编码" in zh and "距离 p − p′" in zh


def test_rope_interleaved_partial_given_frequencies_and_positions(runner, tmp_path):
    path = write(tmp_path, document(rope={"style": "interleaved", "dims": 2}, positions=[5, 6, 7, 8]))
    step = steps_of(runner, path, "--query", "2")["rope"]
    text = " ".join(step["text"])
    assert "2i and 2i + 1 (counting from 1, the first pair is dimensions 1 and 2)" in text
    assert "Only the first 2 of the 4 numbers of each head are rotated; the other 2 pass unchanged" in text
    assert "for i = 0, with θ = 10000 and dims = 2" in text and "Fast pairs" not in text  # one pair only
    assert "The document sets the positions" in text and "p = 6" in text
    assert step["lines"][1].startswith("(q₁, q₂) = ")
    path = write(tmp_path, document(rope={"frequencies": [0.5, 0.05]}))
    text = " ".join(steps_of(runner, path)["rope"]["text"])
    assert "gives the frequencies itself: f = [0.5, 0.05]" in text and "θ =" not in text


# ---------------------------------------------------------------- scores with rope and the soft cap


def test_scores_use_the_rotated_vectors_and_write_out_the_cap(runner, modern):
    ref = reference()
    steps = steps_of(runner, modern, "--head", "3", "--query", "4")
    step = steps[4]
    assert step["formula"] == "S = Q′·K′ᵀ   z = 5·tanh(S / √4 / 5)"
    assert table(step, "scores") == pytest.approx(ref["s"][2, 3][None, :])
    for j, line in enumerate(step["lines"]):
        s = ref["s"][2, 3, j]
        assert f"→   5·tanh({s / 2:.4f} / 5) = {5 * math.tanh(s / 10):.4f}" in line
        # the tokens as labels, q′ and k′ by number
        assert line.startswith(f"{['the', 'cat', 'sat', 'down'][j]}: q′₄ · k′{'₁₂₃₄'[j]} = ")
        products = [float(a) * float(b)
                    for a, b in re.findall(r"\(?(-?[\d.]+)\)?·\(?(-?[\d.]+)\)?", line.split(" = ")[1])]
        assert sum(products) == pytest.approx(s, abs=1e-3)  # q′·k′, not q·k
    text = " ".join(step["text"])
    assert "rotated query q′ and each rotated key k′" in text and "soft-capped at c = 5" in text
    assert steps[8]["formula"].startswith("H = softmax(5·tanh(1/√d_k · Q′·K′ᵀ / 5))·V")
    assert "Q′·K′ᵀ holds all the scores" in " ".join(steps[8]["text"])
    assert ("4 query heads, each runs steps 3 to 7 with its own W_Q and the W_K and W_V of its group"
            in " ".join(steps[8]["text"]))


def test_scale_none_with_a_cap_does_not_say_unchanged(runner, tmp_path):
    step = steps_of(runner, write(tmp_path, document(scale="none")))[4]
    text = " ".join(step["text"])
    assert "go to softmax unchanged" not in text and "soft-capped at c = 5" in text
    assert step["formula"].endswith("z = 5·tanh(S / 5)")


# ---------------------------------------------------------------- residual and post_norm


def test_the_residual_step_adds_x_to_y(runner, modern):
    ref = reference()
    step = steps_of(runner, modern, "--query", "3")["residual"]
    assert step["formula"] == "R = X + Y"
    assert last_numbers(step["lines"][-1], 4) == pytest.approx(ref["r"][2], abs=1e-4)
    assert table(step, "residual") == pytest.approx(ref["r"])
    text = " ".join(step["text"])
    assert "R = X + Y" in text and "the next layer normalises it again" in text


def test_post_norm_is_worked_out_in_the_residual_and_add_norm_steps(runner, tmp_path):
    path = write(tmp_path, document(post_norm={"kind": "rms", "gamma": [2, 1, 1, 1]}))
    ref = reference()
    y_hat = np.array([2, 1, 1, 1]) * ref["y"] / np.sqrt((ref["y"] ** 2).mean(axis=1, keepdims=True) + 1e-6)
    step = steps_of(runner, path, "--query", "1")["residual"]  # (causal: by default the first query with 2 keys)
    assert step["formula"] == "R = X + RMSNorm(Y)"
    assert "“sandwich” of Gemma 2" in " ".join(step["text"])
    assert table(step, "normalized_output") == pytest.approx(y_hat)
    assert last_numbers(step["lines"][-1], 4) == pytest.approx(np.array(X[0]) + y_hat[0], abs=1e-4)
    post_norm = document(post_norm={"kind": "rms", "gamma": [2, 1, 1, 1]}, add_norm=True)
    add_norm = steps_of(runner, write(tmp_path, post_norm, "an.yaml"))["add_norm"]
    assert add_norm["formula"].startswith("R = X + RMSNorm(Y)   LayerNorm(R)")
    assert any(line.startswith("y\u0302 = γ ⊙ y / ") for line in add_norm["lines"])
    assert "normalised itself (post_norm, RMSNorm)" in " ".join(add_norm["text"])


# ---------------------------------------------------------------- Chinese, --why, heatmap


@pytest.mark.parametrize("changes", [{}, {"kv_heads": 1, "weights": None},
                                     {"rope": {"style": "interleaved", "dims": 2}},
                                     {"pre_norm": {"kind": "layer"}, "post_norm": {"kind": "rms"}, "add_norm": True},
                                     {"context": [[1, 2, 3, 4], [0, 1, 0, 1]], "mask": None, "scale": "none"}],
                         ids=["gqa", "mqa", "interleaved", "layer-post-addnorm", "cross"])
def test_every_new_step_is_chinese(runner, tmp_path, changes):
    doc = document(**changes)
    if "weights" not in doc:
        w = np.asarray(W_K)[:, :4].tolist()
        doc["weights"] = dict(document()["weights"], key=w, value=w)
    steps = zh_steps(runner, write(tmp_path, doc), "--head", "2")
    assert_chinese(steps)
    assert {"rope", "pre_norm"} <= {s["step"] for s in steps}


def test_why_uses_the_shared_kv_head_and_says_what_it_leaves_out(runner, modern):
    ref = reference()
    stages = steps_of(runner, modern, "--why", "--head", "4")
    assert table(stages["c"], "relevance") == pytest.approx(ref["q"][3] @ ref["k"][1].T)  # before any rotation
    assert ("leave out the document's mask, rotary position embedding (rope) and soft cap"
            in " ".join(stages["d"]["text"]))


def test_heatmap_draws_each_query_head_with_the_kv_head_it_uses(runner, modern):
    ref = reference()
    for head in (1, 2, 3, 4):
        result = runner.invoke(app, ["heatmap", modern, "--head", str(head), "--precision", "3"],
                               env={"NO_COLOR": "1", "COLUMNS": "200"})
        assert result.exit_code == 0, result.output
        assert f"head {head} of 4 (K/V head {(head - 1) // 2 + 1} of 2)" in result.stdout
        rows = [line for line in result.stdout.splitlines() if line.startswith(("the ", "cat ", "sat ", "down "))]
        assert len(rows) == 4
        for i, line in enumerate(rows):
            assert [float(x) for x in NUMBER.findall(line)] == pytest.approx(ref["a"][head - 1, i, : i + 1], abs=6e-4)
    result = runner.invoke(app, ["heatmap", modern, "--head", "all"], env={"NO_COLOR": "1", "COLUMNS": "200"})
    assert result.exit_code == 0 and "4 heads sharing 2 K/V heads" in result.stdout
    assert all(f"head {h}" in result.stdout for h in (1, 2, 3, 4))


@pytest.mark.parametrize("lang, says, false_here", [
    ("en", "Every frequency here is 0, so every angle φ = p·0 is 0 and nothing turns",
     "writes each token's position into its query"),
    ("zh", "这里每个频率都是 0，所以每个角度 φ = p·0 都是 0，什么也没有转", "把每个词元的位置写进"),
])
def test_rope_with_every_frequency_0_says_nothing_turns(runner, tmp_path, lang, says, false_here):
    """rope: {frequencies: [0, 0]} (how extract writes Kimi Linear's full attention): Q′ = Q and K′ = K, so the step
    may not say that the position is written into them, nor that the score sees the distance."""
    doc = {"tokens": "a b c", "inputs": [[1, 0, 2, 1], [0, 1, 1, 3], [2, 1, 0, 1]], "scale": "none",
           "rope": {"frequencies": [0, 0]}}
    path = tmp_path / "still.yaml"
    path.write_text(yaml.safe_dump(doc))
    computed = json.loads(runner.invoke(app, ["compute", str(path), "--only", "queries_rotated", "--only",
                                              "keys_rotated", "--format", "json"]).stdout)
    np.testing.assert_array_equal(computed["queries_rotated"][0], doc["inputs"])  # nothing turned (W = identity)
    np.testing.assert_array_equal(computed["keys_rotated"][0], doc["inputs"])
    step = json.loads(runner.invoke(app, ["explain", str(path), "--step", "rope", "--query", "3", "--lang", lang,
                                          "--format", "json"]).stdout)
    text = " ".join(step["text"])
    assert says in text and false_here not in text, text
    assert "Why rotate?" not in text and "为什么要旋转" not in text
