"""attncli check on today's attention: answers for the new keys, and the classic RoPE slips named.

Every wrong answer is computed here with numpy (tests/modern_reference.py), the way a
learner would have made the slip — never by attncli's own mistake models.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import yaml
from modern_reference import GAMMA, W_O, W_Q, X, document, heads_of, reference, rms_norm, rope

from attncli.cli import app


def check(runner, tmp_path, answer: dict, **changes):
    doc = document(**changes)
    doc["answer"] = answer
    path = tmp_path / "hw.yaml"
    path.write_text(yaml.safe_dump(json.loads(json.dumps(doc)), allow_unicode=True))
    return runner.invoke(app, ["check", str(path)], env={"COLUMNS": "200"})


def rounded(array) -> list:
    return np.round(np.asarray(array, dtype=float), 4).tolist()


def test_right_answers_for_the_new_keys_are_correct_at_their_steps(runner, tmp_path):
    ref = reference()
    answer = {"head": 3, "query": "sat", "normalized_inputs": rounded(ref["x_hat"][2]),
              "queries_rotated": rounded(ref["qr"][2, 2]), "keys_rotated": rounded(ref["kr"][1]),
              "keys": rounded(ref["k"][1]), "scores": rounded(ref["s"][2, 2]), "residual": rounded(ref["r"][2])}
    result = check(runner, tmp_path, answer)
    assert result.exit_code == 0, result.output
    for line in ("step pre_norm  normalized_inputs correct", "step rope  queries_rotated correct",
                 "step rope  keys_rotated  correct", "step 3  keys", "step residual  residual      correct"):
        assert line in result.stdout
    order = [result.stdout.index(key)
             for key in ("normalized_inputs", "keys ", "queries_rotated", "scores", "residual")]
    assert order == sorted(order)  # in the order the document computes them


def test_head_picks_the_kv_head_its_query_head_shares(runner, tmp_path):
    ref = reference()
    assert check(runner, tmp_path, {"head": 4, "values": rounded(ref["v"][1])}).exit_code == 0
    result = check(runner, tmp_path, {"head": 4, "values": rounded(ref["v"][0])})  # K/V head 1 belongs to heads 1–2
    assert result.exit_code == 1 and "step 3  values" in result.stdout


@pytest.mark.parametrize("key, needs", [("queries_rotated", "rope:"), ("normalized_inputs", "pre_norm:"),
                                        ("residual", "add_norm: or residual: true")])
def test_an_answer_for_a_quantity_the_document_lacks_is_an_error(runner, tmp_path, key, needs):
    result = check(runner, tmp_path, {key: [1, 2]}, rope=None, pre_norm=None, residual=None)
    assert result.exit_code == 2 and result.stdout == ""
    assert f"answer.{key}: needs {needs} in the document" in result.stderr


# ---------------------------------------------------------------- the RoPE slips


def test_pairs_taken_interleaved_instead_of_halves(runner, tmp_path):
    slip = reference(style="interleaved")
    result = check(runner, tmp_path, {"head": 2, "queries_rotated": rounded(slip["qr"][1])})
    assert result.exit_code == 1
    assert "step rope  queries_rotated wrong" in result.stdout
    assert "hint: the pairs were taken interleaved (2i, 2i + 1); this document pairs the halves" in result.stdout
    result = check(runner, tmp_path, {"head": 2, "query": 4, "weights": rounded(slip["a"][1, 3])})
    assert "hint: the pairs were taken interleaved" in result.stdout


def test_pairs_taken_as_halves_instead_of_interleaved(runner, tmp_path):
    slip = reference(style="half")  # the learner's: halves; the document: interleaved
    result = check(runner, tmp_path, {"head": 1, "keys_rotated": rounded(slip["kr"][0])},
                   rope={"base": 100, "style": "interleaved"})
    assert result.exit_code == 1
    assert "hint: the pairs were taken as halves (i, i + dims/2); this document pairs neighbours" in result.stdout


def test_positions_counted_from_1(runner, tmp_path):
    x_hat = rms_norm(X, GAMMA)
    q = x_hat @ heads_of(W_Q, 4)[0]
    wrong = rope(q, [1, 2, 3, 4])  # p = 1 … n instead of 0 … n − 1
    result = check(runner, tmp_path, {"head": 1, "queries_rotated": rounded(wrong)})
    assert result.exit_code == 1
    assert "hint: the positions were counted from 1; they count from 0" in result.stdout
    # the scores do not change when every position moves by one: only p − p′ counts
    slip = reference(positions=[1, 2, 3, 4])
    assert check(runner, tmp_path, {"head": 1, "scores": rounded(slip["s"][0])}).exit_code == 0
    # positions written out as 0 … n − 1 are the same slip; positions that start elsewhere are not
    result = check(runner, tmp_path, {"head": 1, "queries_rotated": rounded(wrong)}, positions=[0, 1, 2, 3])
    assert "hint: the positions were counted from 1" in result.stdout
    result = check(runner, tmp_path, {"head": 1, "queries_rotated": rounded(rope(q, [6, 7, 8, 9]))},
                   positions=[5, 6, 7, 8])
    assert result.exit_code == 1 and "hint" not in result.stdout


def test_rotation_forgotten(runner, tmp_path):
    slip = reference(rope_on=False)
    result = check(runner, tmp_path, {"head": 3, "query": 3, "scores": rounded(slip["s"][2, 2])})
    assert result.exit_code == 1
    assert "step 4  scores" in result.stdout and "hint: the rotation was forgotten" in result.stdout
    result = check(runner, tmp_path, {"head": 3, "queries_rotated": rounded(reference()["q"][2])})  # Q copied as Q′
    assert "step rope  queries_rotated wrong" in result.stdout and "hint: the rotation was forgotten" in result.stdout
    result = check(runner, tmp_path, {"output": rounded(slip["y"])})
    assert "hint: the rotation was forgotten" in result.stdout


def test_values_rotated_too(runner, tmp_path):
    slip = reference(rotate_values=True)
    result = check(runner, tmp_path, {"head": 2, "head_outputs": rounded(slip["heads"][1])})
    assert result.exit_code == 1
    assert "step 7  head_outputs" in result.stdout
    assert "hint: the values were rotated too: rope turns only the queries and the keys" in result.stdout
    result = check(runner, tmp_path, {"head": 2, "values": rounded(slip["vr"][0])})
    assert "step 3  values" in result.stdout and "hint: the values were rotated too" in result.stdout
    result = check(runner, tmp_path, {"residual": rounded(slip["r"])})
    assert "step residual  residual" in result.stdout and "hint: the values were rotated too" in result.stdout


# ---------------------------------------------------------------- the soft cap and the pre-norm


def test_soft_cap_left_out(runner, tmp_path):
    slip = reference(cap=None)
    result = check(runner, tmp_path, {"head": 1, "weights": rounded(slip["a"][0])})
    assert result.exit_code == 1
    assert "hint: the soft cap was left out: each scaled score z becomes 5·tanh(z / 5)" in result.stdout
    # masked: null
    z = [[v if j <= i else None for j, v in enumerate(row)] for i, row in enumerate(rounded(slip["z"][0]))]
    result = check(runner, tmp_path, {"head": 1, "scaled_scores": z})
    assert "hint: the soft cap was left out" in result.stdout


def test_scale_left_out_goes_through_the_cap(runner, tmp_path):
    ref = reference()
    unscaled = 5 * np.tanh(ref["s"][0] / 5)  # z = c·tanh(S / c): no 1/√d_k
    result = check(runner, tmp_path, {"head": 1, "query": 4, "scaled_scores": rounded(unscaled[3])})
    assert result.exit_code == 1
    assert "hint: the scale was left out: multiply every score by 1/√4 before softmax" in result.stdout


def test_projections_from_x_instead_of_x_hat(runner, tmp_path):
    q = np.asarray(X) @ heads_of(W_Q, 4)[1]
    result = check(runner, tmp_path, {"head": 2, "queries": rounded(q)})
    assert result.exit_code == 1
    assert "hint: the inputs were not normalised first: with pre_norm the projections multiply X̂" in result.stdout


def test_weights_rounded_too_early_still_found_with_shared_kv_heads(runner, tmp_path):
    ref = reference()
    a = np.round(ref["a"], 1)
    heads = np.stack([a[i] @ ref["v"][i // 2] for i in range(4)])
    y = np.concatenate(list(heads), axis=1) @ W_O
    result = check(runner, tmp_path, {"output": rounded(y)})
    assert result.exit_code == 1 and "hint: the weights were rounded too early" in result.stdout


def test_explain_marks_the_rope_step_where_the_answer_goes_wrong(runner, tmp_path):
    slip = reference(style="interleaved")
    doc = document(answer={"head": 2, "queries_rotated": rounded(slip["qr"][1])})
    path = tmp_path / "hw.yaml"
    path.write_text(yaml.safe_dump(json.loads(json.dumps(doc))))
    result = runner.invoke(app, ["explain", str(path), "--head", "2", "--format", "json"])
    assert result.exit_code == 0, result.output
    notes = {s["step"]: s["notes"] for s in json.loads(result.stdout)["steps"]}
    assert notes["rope"] and "queries_rotated" in notes["rope"][0]
    assert "Hint: the pairs were taken interleaved" in notes["rope"][1]
    assert all(not n for step, n in notes.items() if step != "rope")
