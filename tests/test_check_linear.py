"""check on a linear: document (teach/check/linear.py): the recurrence's slips (core/variants/linear.py) named from
the learner's numbers.

Each learner's answer is worked here in numpy by a loop written for this test (no attncli code): Gated DeltaNet on
examples/linear/gated_delta.yaml's q, k, v, β, g (l2-normalised q and k, q scaled by 1/√d_k), lightning attention on
the q, k, v of examples/linear/lightning.yaml as compute writes them, with transformers' slopes written out here.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import yaml
from conftest import ROOT

from attncli.cli import app

DELTA = ROOT / "examples" / "linear" / "gated_delta.yaml"
LIGHTNING = ROOT / "examples" / "linear" / "lightning.yaml"


def delta_rule(after=False, beta_on=True, subtract=True, transposed=False, scaled=True, l2=True):
    """o (n, d_v) of the one head of gated_delta.yaml, one part done another way."""
    block = yaml.safe_load(DELTA.read_text())["linear"]
    q, k, v = (np.array(block[key][0], float) for key in ("queries", "keys", "values"))
    beta, g = np.array(block["beta"][0]), np.array(block["g"][0])
    if l2:
        q = q / np.sqrt((q * q).sum(-1, keepdims=True) + 1e-6)
        k = k / np.sqrt((k * k).sum(-1, keepdims=True) + 1e-6)
    q = q * (1 / math.sqrt(2) if scaled else 1.0)
    s, out = np.zeros((2, 2)), []
    for t in range(len(q)):
        if not after:
            s = math.exp(g[t]) * s
        u = (beta[t] if beta_on else 1.0) * (v[t] - (s.T @ k[t] if subtract else 0.0))
        s = s + np.outer(k[t], u)
        if after:
            s = math.exp(g[t]) * s
        out.append(s @ q[t] if transposed else s.T @ q[t])
    return np.array(out)


DELTA_SLIPS = {
    "the state was decayed after the update": delta_rule(after=True),
    "β was left out": delta_rule(beta_on=False),
    "the delta rule's correction was left out": delta_rule(subtract=False),
    "the state was read transposed": delta_rule(transposed=True),
    "the queries were not scaled": delta_rule(scaled=False),
    "q and k were not l2-normalised": delta_rule(l2=False),
}


def _check(runner, tmp_path, source, answer: dict, *options):
    doc = yaml.safe_load(source.read_text())
    doc["answer"] = answer
    path = tmp_path / "homework.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return runner.invoke(app, ["check", str(path), *options], env={"COLUMNS": "200"}), path


def _rounded(array: np.ndarray) -> list:
    return np.round(array, 4).tolist()


def test_the_right_delta_rule_is_correct(runner, tmp_path):
    result, _ = _check(runner, tmp_path, DELTA, {"head_outputs": _rounded(delta_rule())})
    assert result.exit_code == 0 and "correct" in result.stdout


@pytest.mark.parametrize("slip", sorted(DELTA_SLIPS))
def test_each_delta_rule_slip_is_named(runner, tmp_path, slip):
    result, path = _check(runner, tmp_path, DELTA, {"head_outputs": _rounded(DELTA_SLIPS[slip])})
    assert result.exit_code == 1
    hints = [line for line in result.stdout.splitlines() if "hint:" in line]
    assert len(hints) == 1 and slip in hints[0], result.stdout
    assert not any(other in hints[0] for other in DELTA_SLIPS if other != slip)
    assert f"attncli explain {path}" in result.stdout


def test_one_token_of_the_delta_rule_is_checked_and_the_slip_named_in_chinese(runner, tmp_path):
    """query: 3 ("sat"): its row only; the state decayed after the update (only its row given) named in Chinese."""
    row = DELTA_SLIPS["the state was decayed after the update"][2]
    result, path = _check(runner, tmp_path, DELTA, {"query": 3, "head_outputs": _rounded(row)}, "--lang", "zh")
    assert result.exit_code == 1 and "状态在更新之后才衰减" in result.stdout
    assert f"attncli explain {path} --query 3" in result.stdout
    right, _ = _check(runner, tmp_path, DELTA, {"query": "sat", "head_outputs": _rounded(delta_rule()[2])})
    assert right.exit_code == 0


def test_a_number_no_slip_gives_is_said_so_and_json_marks_it(runner, tmp_path):
    wrong = delta_rule()
    wrong[1, 0] += 1.0
    result, _ = _check(runner, tmp_path, DELTA, {"head_outputs": _rounded(wrong)})
    assert result.exit_code == 1 and "No known slip of the recurrence" in result.stdout
    as_json, _ = _check(runner, tmp_path, DELTA, {"head_outputs": _rounded(wrong)}, "--format", "json")
    found = json.loads(as_json.stdout)["findings"]
    assert [f["ok"] for f in found] == [False] and found[0]["expected"] == pytest.approx(delta_rule()[1, 0], abs=1e-9)


def test_lightning_slips_are_named(runner, tmp_path):
    """o_t = Σ_{j≤t} e^{−s(t−j)} (q_t·k_j) v_j per head, against the decay made a growth (e^{+s})."""
    computed = runner.invoke(app, ["compute", str(LIGHTNING), "--only", "queries", "--only", "keys", "--only",
                                   "values", "--format", "json"])
    arrays = json.loads(computed.stdout)
    q, k, v = (np.array(arrays[key]) for key in ("queries", "keys", "values"))  # (2, 6, 2)
    slopes = (1 / 2 ** (8 / 2)) ** np.arange(1, 3) * (1 - 0 / (4 - 1 + 1e-5) + 1e-5)  # layer 0 of 4

    def direct(sign: float) -> np.ndarray:
        n = q.shape[1]
        t, j = np.arange(n)[:, None], np.arange(n)[None, :]
        decay = np.where(j <= t, np.exp(sign * slopes[:, None, None] * (t - j)), 0.0)  # (h, n, n)
        return (np.einsum("hid,hjd->hij", q, k) * decay) @ v

    right, _ = _check(runner, tmp_path, LIGHTNING, {"head_outputs": _rounded(direct(-1.0))})
    assert right.exit_code == 0
    result, _ = _check(runner, tmp_path, LIGHTNING, {"head": 2, "head_outputs": _rounded(direct(1.0)[1])})
    assert result.exit_code == 1 and "the decay grew the state" in result.stdout
    after = direct(-1.0) * np.exp(-slopes)[:, None, None]  # S ← e^(−s)·(S + k·vᵀ): every term one decay more
    result, _ = _check(runner, tmp_path, LIGHTNING, {"head_outputs": _rounded(after)})
    assert result.exit_code == 1 and "the new token was decayed too" in result.stdout


def test_a_bad_answer_is_one_line_naming_the_key(runner, tmp_path):
    result, _ = _check(runner, tmp_path, DELTA, {"scores": [[1, 2]]})
    assert result.exit_code == 2 and result.output.count("\n") == 1 and "answer" in result.stderr
    assert "'scores' is not an array of this layer" in result.stderr
    softmax_option, _ = _check(runner, tmp_path, DELTA, {"u": [[1, 0.5]]}, "--scale", "none")
    assert softmax_option.exit_code == 2 and "--scale" in softmax_option.stderr


def delta_states() -> np.ndarray:
    """S after each token (n, d_k, d_v) of gated_delta.yaml's one head, by the same loop as delta_rule's."""
    block = yaml.safe_load(DELTA.read_text())["linear"]
    k, v = (np.array(block[key][0], float) for key in ("keys", "values"))
    beta, g = np.array(block["beta"][0]), np.array(block["g"][0])
    k = k / np.sqrt((k * k).sum(-1, keepdims=True) + 1e-6)
    s, states = np.zeros((2, 2)), []
    for t in range(len(k)):
        s = math.exp(g[t]) * s
        s = s + np.outer(k[t], beta[t] * (v[t] - s.T @ k[t]))
        states.append(s)
    return np.array(states)


@pytest.mark.parametrize("lang, final, state, one", [
    ("en", "wrong at row 1, column 2:", "token 4 ('on'), row 2, column 1", "wrong at row 2, column 1:"),
    ("zh", "错在第 1 行，第 2 列：", "第 4 个词元（'on'），第 2 行，第 1 列", "错在第 2 行，第 1 列："),
])
def test_a_states_wrong_cell_names_its_token_and_its_key_row(runner, tmp_path, lang, final, state, one):
    """A state's rows are its d_k key numbers, not tokens: the final state written transposed is wrong at row 1,
    column 2 (no token named); in the state after every token, token 4's row 2 (the token named as such)."""
    states = delta_states()
    transposed, _ = _check(runner, tmp_path, DELTA, {"final_state": _rounded(states[-1].T)}, "--lang", lang)
    assert transposed.exit_code == 1 and final in transposed.stdout, transposed.stdout
    assert "'the'" not in transposed.stdout
    wrong = states.copy()
    wrong[3, 1, 0] += 0.1
    result, _ = _check(runner, tmp_path, DELTA, {"state": _rounded(wrong)}, "--lang", lang, "--format", "json")
    assert [f["where"] for f in json.loads(result.stdout)["findings"]] == [state]
    one_token, _ = _check(runner, tmp_path, DELTA, {"query": 4, "state": _rounded(wrong[3])}, "--lang", lang)
    assert one in one_token.stdout and "'on'" not in one_token.stdout, one_token.stdout


def test_the_note_when_no_slip_fits_gives_this_kinds_recurrence_only(runner, tmp_path):
    """A delta-rule document is not told lightning's recurrence, nor a lightning one the delta rule's."""
    wrong = delta_rule()
    wrong[1, 0] += 1.0
    delta, _ = _check(runner, tmp_path, DELTA, {"head_outputs": _rounded(wrong)})
    assert "u = β(v − Sᵀk)" in delta.stdout and "e^(−s)" not in delta.stdout and "lightning" not in delta.stdout
    for lang in ("en", "zh"):
        nines = {"head": 1, "head_outputs": [[9.0, 9.0] for _ in range(6)]}
        lightning, _ = _check(runner, tmp_path, LIGHTNING, nines, "--lang", lang)
        assert lightning.exit_code == 1 and "S ← e^(−s)·S + k·vᵀ" in lightning.stdout, lightning.stdout
        assert "β" not in lightning.stdout and "e^g" not in lightning.stdout


@pytest.mark.parametrize("lang, says", [("en", "the document's scale: 0.5 before o = Sᵀq"),
                                        ("zh", "文档给的 scale: 0.5")])
def test_queries_left_unscaled_name_the_documents_own_scale(runner, tmp_path, lang, says):
    """With scale: 0.5 the queries are multiplied by 0.5, not 1/√d_k: the hint says the document's number."""
    doc = yaml.safe_load(DELTA.read_text())
    doc["linear"]["scale"] = 0.5
    source = tmp_path / "scaled.yaml"
    source.write_text(yaml.safe_dump(doc, sort_keys=False))
    unscaled = delta_rule(scaled=False)  # o is linear in q: the right one is 0.5 times this
    right, _ = _check(runner, tmp_path, source, {"head_outputs": _rounded(0.5 * unscaled)})
    assert right.exit_code == 0, right.stdout
    result, _ = _check(runner, tmp_path, source, {"head_outputs": _rounded(unscaled)}, "--lang", lang)
    assert result.exit_code == 1 and says in result.stdout.replace("\n      ", " "), result.stdout
    assert "1.414" not in result.stdout


def test_the_pointer_to_explain_in_chinese_quotes_the_step(runner, tmp_path):
    result, _ = _check(runner, tmp_path, DELTA, {"head_outputs": _rounded(DELTA_SLIPS["β was left out"])}, "--lang",
                       "zh")
    assert "重读“delta 规则”那一步：" in result.stdout.replace("\n", ""), result.stdout


@pytest.mark.parametrize("lang, swapped, other_token, other_head", [
    ("en", "rows and columns swapped: the state is d_k × d_v",
     "these are the numbers of token 3 (“sat”), not of token 2", "these are the numbers of head 1, not of head 2"),
    ("zh", "行和列对调了：状态是 d_k × d_v", "这是词元 3（“sat”）的数字，不是词元 2 的",
     "这是第 1 个头的数字，不是第 2 个头的"),
])
def test_numbers_no_slip_gives_but_that_are_right_elsewhere_are_said_so(runner, tmp_path, lang, swapped,
                                                                          other_token, other_head):
    """The final state written transposed (its rows are key numbers: not 'one row per token'), token 3's output
    given for query: 2, and lightning's head 1 given for head: 2: each named, and no 'no known slip' note."""
    states, o = delta_states(), delta_rule()
    transposed, _ = _check(runner, tmp_path, DELTA, {"final_state": _rounded(states[-1].T)}, "--lang", lang)
    assert swapped in transposed.stdout and "token" not in transposed.stdout.split("d_k × d_v")[1], transposed.stdout
    row, _ = _check(runner, tmp_path, DELTA, {"query": 2, "head_outputs": _rounded(o[2])}, "--lang", lang,
                    "--format", "json")
    report = json.loads(row.stdout)
    assert other_token in report["findings"][0]["hint"] and report["notes"] == [], report
    computed = json.loads(runner.invoke(app, ["compute", str(LIGHTNING), "--format", "json"]).stdout)
    first_head = np.array(computed["head_outputs"])[0]
    head, _ = _check(runner, tmp_path, LIGHTNING, {"head": 2, "head_outputs": _rounded(first_head)}, "--lang", lang)
    assert head.exit_code == 1 and other_head in head.stdout, head.stdout


@pytest.mark.parametrize("lang, match, closest", [
    ("en", "one row given without query:, so it was compared with every row: it is row 3 ('sat').",
     "matches no row, so it was compared with the closest, row 3 ('sat')."),
    ("zh", "所以与每一行都比较过，它就是第 3 行（'sat'）。", "最接近的"),
])
def test_one_tokens_row_without_query_is_compared_with_every_row(runner, tmp_path, lang, match, closest):
    """As the softmax check does (docs/tutorial.md): token 3's output alone is found as row 3; the same row with the
    delta rule's correction left out is compared with the closest row and the slip named, pointing to --query 3."""
    right, _ = _check(runner, tmp_path, DELTA, {"head_outputs": _rounded(delta_rule()[2])}, "--lang", lang)
    assert right.exit_code == 0 and match in right.stdout.replace("\n  ", " ").replace(" （", "（"), right.stdout
    slip = DELTA_SLIPS["the delta rule's correction was left out"][2]
    wrong, path = _check(runner, tmp_path, DELTA, {"head_outputs": _rounded(slip)}, "--lang", lang)
    assert wrong.exit_code == 1 and closest in wrong.stdout.replace("\n  ", " "), wrong.stdout
    assert ("delta rule's correction was left out" if lang == "en" else "漏掉了 delta 规则的修正") in wrong.stdout
    assert f"attncli explain {path} --query 3" in wrong.stdout


@pytest.mark.parametrize("lang, one, two", [
    ("en", "answer.head: 2 is out of range: there is one head, head 1",
     "answer.head: 3 is out of range: heads are 1 and 2"),
    ("zh", "answer.head: 2 超出范围：只有一个头，即头 1", "answer.head: 3 超出范围：头的编号是 1 和 2"),
])
def test_an_answers_head_out_of_range_names_the_heads_as_people_count(runner, tmp_path, lang, one, two):
    """Not 'heads are 1 to 1' (gated_delta.yaml has one head, lightning.yaml two)."""
    alone, _ = _check(runner, tmp_path, DELTA, {"head": 2, "u": [[1, 0.5]]}, "--lang", lang)
    assert alone.exit_code == 2 and one in alone.stderr, alone.stderr
    pair, _ = _check(runner, tmp_path, LIGHTNING, {"head": 3, "final_state": [[1, 2], [3, 4]]}, "--lang", lang)
    assert pair.exit_code == 2 and two in pair.stderr, pair.stderr
