"""attncli page on a linear: document (docs/format.md Part 4) without a browser: the page is written, its cells open
the delta rule's (or lightning's) step with the hand-worked numbers, in English and Chinese, and a token cannot end
its script. (In a real browser: tests/test_page_browser.py.)"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
import yaml
from conftest import EXAMPLES
from typer.testing import CliRunner

from attncli.cli import app

HALF = math.log(0.5)
# tests/test_delta_rule.py's three tokens, worked by hand (one head, d_k = 2, d_v = 1, no l2 norm, no scale):
#   t1: u = 0.5·(2 − 0) = 1, S = [1, 0]ᵀ, o = 1;  t2: S ← ½·S, u = 1·(4 − 0) = 4, S = [0.5, 4], o = 4.5
#   t3 (g = 0): Sᵀk̂ = 0.5, u = 3 − 0.5 = 2.5, S = [3, 4], o = Sᵀ[0, 1] = 4
DELTA = dict(kind="gated_delta", queries=[[[1, 0], [1, 1], [0, 1]]], keys=[[[1, 0], [0, 1], [1, 0]]],
             values=[[[2], [4], [3]]], beta=[[0.5, 1, 1]], g=[[0, HALF, 0]], l2norm=False, scale="none", chunk=2)
# tests/test_lightning.py's: s = ln 2; o = [2, 5, 2]; S after t3 = ½·[1, 4] + [3, 0] = [3.5, 2]
LIGHTNING = dict(kind="lightning", queries=[[[1, 0], [1, 1], [0, 1]]], keys=[[[1, 0], [0, 1], [1, 0]]],
                 values=[[[2], [4], [3]]], slopes=[math.log(2)], chunk=2)


def embedded(html: str) -> dict:
    found = re.search(r'<script type="application/json" id="data">(.*?)</script>', html, re.S)
    return json.loads(found.group(1))


def written(tmp_path: Path, doc: dict, *args: str) -> dict:
    path, out = tmp_path / "doc.yaml", tmp_path / "page.html"
    path.write_text(yaml.safe_dump(doc, allow_unicode=True), encoding="utf-8")
    result = CliRunner().invoke(app, ["page", str(path), "-o", str(out), *args])
    assert result.exit_code == 0, result.output
    return embedded(out.read_text(encoding="utf-8"))


def table(data: dict, key: str) -> dict:
    return next(t for t in data["tables"] if t["key"] == key and t["head"] == 0)


def clicked(data: dict, key: str, r: int, c: int, lang: str = "en") -> tuple[list, list[str], list]:
    """A click on shown cell (r, c) of ``key``'s table, as the page's script finds it: the step, its marked lines
    and the states under them."""
    t = table(data, key)
    query = t["r"][r] if t["perQuery"] else t["query"]
    [number], [marks] = t["x"]["s"][r][c], t["x"]["hl"][r][c]
    step = next(data["steps"][k] for k in data["focus"][lang][f"0,{query}"] if data["steps"][k][0] == number)
    return step, [data["S"][step[4][k]] for k in marks], [None if step[7][k] is None else data["M"][step[7][k]]
                                                          for k in marks]


def test_the_delta_rules_cells_open_their_tokens_step(tmp_path):
    data = written(tmp_path, {"tokens": ["a", "b", "c"], "linear": DELTA})
    assert table(data, "head_outputs")["v"] == [["1.0000"], ["4.5000"], ["4.0000"]]  # as compute writes them
    step, lines, _ = clicked(data, "head_outputs", 2, 0)
    assert data["S"][step[1]].startswith("The delta rule at token 3 (c), value head 1")
    assert lines == ["5. Read out: o = Sᵀq̂ = [4.0000] (q̂ = [0.0000, 1.0000], scaled by 1.0000): the head's output "
                     "at token 3"]
    _, lines, _ = clicked(data, "u", 2, 0)
    assert lines == ["3. Correct: u = β·(v − Sᵀk̂) = 1.0000 · ([3.0000] − [0.5000]) = [2.5000]: only the part the "
                     "state got wrong"]
    step, lines, _ = clicked(data, "u", 1, 0)  # token 2: the state decayed by ½ first, then u = 1·(4 − 0)
    assert lines[0].endswith("= [4.0000]: only the part the state got wrong")
    assert any("(e^g = 0.5000)" in data["S"][k] for k in step[4])
    _, lines, states = clicked(data, "final_state", 1, 0)  # S_n: the last token's step, its state S = [3, 4]
    assert lines == ["S after token 3 (compute's state[0][2])"]
    assert states == [{"rl": ["k1", "k2"], "cl": ["1"], "v": [["3"], ["4"]]}]
    assert table(data, "final_state")["v"] == [["3"], ["4"]]
    v = table(data, "values")  # a number of the document: no step, the page says so (not "run explain")
    assert v["x"]["s"][0][0] == [] and data["ui"]["en"]["given"].startswith("The page works out")


def test_kdas_decay_per_key_channel_is_in_its_step(tmp_path):
    # tests/test_delta_rule.py's kda: g₃ = [0, ln ½]: S ← [0.5, 2]; u = 3 − 0.5 = 2.5; S = [3, 2]; o = Sᵀ[0, 1] = 2
    kda = dict(DELTA, kind="kda", g=[[[0, 0], [HALF, HALF], [0, HALF]]])
    data = written(tmp_path, {"tokens": ["a", "b", "c"], "linear": kda})
    step, lines, _ = clicked(data, "head_outputs", 2, 0)
    assert lines[0].startswith("5. Read out: o = Sᵀq̂ = [2.0000]")
    assert any(data["S"][k].endswith("e^(g_i): [1.0000, 0.5000]") for k in step[4])
    _, _, states = clicked(data, "final_state", 0, 0)
    assert states == [{"rl": ["k1", "k2"], "cl": ["1"], "v": [["3"], ["2"]]}]


def test_the_page_is_in_chinese_too(tmp_path):
    data = written(tmp_path, {"tokens": ["a", "b", "c"], "linear": DELTA}, "--lang", "zh")
    assert data["lang"] == "zh" and data["ui"]["zh"]["title"] == "这层线性注意力的每一个数"
    step, lines, _ = clicked(data, "head_outputs", 2, 0, "zh")
    assert data["S"][step[1]].startswith("delta 规则在词元 3（c）、值头 1")
    assert lines == ["5. 读出：o = Sᵀq̂ = [4.0000]（q̂ = [0.0000, 1.0000]，已乘以 1.0000）：该头在词元 3 的输出"]
    assert any(data["S"][k].startswith("1. 衰减：") for k in step[4])
    assert table(data, "u")["title"]["zh"] == "头 1 · u = β(v − Sᵀk̂)"
    beta = next(t for t in data["tables"] if t["key"] == "beta")  # heads as columns, named in each language
    assert beta["cls"] == {"en": ["Head 1"], "zh": ["头 1"]} and beta["head"] is None


def test_lightnings_output_is_its_sum_and_its_state(tmp_path):
    data = written(tmp_path, {"tokens": ["a", "b", "c"], "linear": LIGHTNING})
    assert [row[0] for row in table(data, "head_outputs")["v"]] == ["2", "5", "2"]
    step, lines, states = clicked(data, "head_outputs", 2, 0)
    assert step[0] == "Σ" and len(lines) == 2
    assert "o = [2.0000]" in lines[0] and lines[1].endswith("Sᵀq = [2.0000]")
    assert states[1] == {"rl": ["k1", "k2"], "cl": ["1"], "v": [["3.5000"], ["2.0000"]]}
    terms = [data["S"][k] for k in step[4] if data["S"][k].startswith("token ")]  # ¼·0·2, ½·1·4, 1·0·3
    assert [t.split(": q·k = ")[1].split(",")[0] for t in terms] == ["0.0000", "1.0000", "0.0000"]
    assert "weight 0.5000" in terms[1] and terms[1].endswith("= [2.0000]")


def test_a_token_cannot_end_the_script(tmp_path):
    token = "</script><script>alert(1)</script><!--"
    path, out = tmp_path / "a<b>&.yaml", tmp_path / "page.html"
    path.write_text(yaml.safe_dump({"tokens": [token, "b", "c"], "linear": DELTA}), encoding="utf-8")
    result = CliRunner().invoke(app, ["page", str(path), "-o", str(out)])
    assert result.exit_code == 0, result.output
    html = out.read_text(encoding="utf-8")
    assert html.count("</script>") == 2 and "<!--" not in html.split('id="data">')[1]
    assert "<title>a&lt;b&gt;&amp;.yaml</title>" in html
    data = embedded(html)
    assert data["tokens"][0] == token and table(data, "u")["rl"][0] == token


def test_the_examples_pages_are_written_and_ask_for_nothing(tmp_path):
    for name in ("gated_delta.yaml", "lightning.yaml"):
        out = tmp_path / "page.html"
        result = CliRunner().invoke(app, ["page", str(EXAMPLES / "linear" / name), "-o", str(out)])
        assert result.exit_code == 0, result.output
        html = out.read_text(encoding="utf-8")
        assert len(html.encode()) <= 200_000 and "default-src 'none'" in html
        assert not any(fetch in html.lower() for fetch in ("http:", "https:", "<link", "<img", "src="))


@pytest.mark.parametrize("option", [["--scale", "2"], ["--heads", "2"]])
def test_softmax_attentions_options_are_refused(tmp_path, option):
    out = tmp_path / "page.html"
    result = CliRunner().invoke(app, ["page", str(EXAMPLES / "linear" / "gated_delta.yaml"), "-o", str(out), *option])
    assert result.exit_code == 2 and not out.exists()
    line = result.stderr.strip()
    assert "\n" not in line and f"{option[0]}: replaces softmax attention's" in line, result.stderr


def test_the_steps_states_are_the_hand_worked_ones_each_written_once(tmp_path):
    data = written(tmp_path, {"tokens": ["a", "b", "c"], "linear": DELTA})
    step, _, _ = clicked(data, "head_outputs", 2, 0)
    states = [data["M"][k]["v"] for k in step[7] if k is not None]
    # before token 3 = after token 2 = [0.5, 4]; decayed by e^0 (the same, written once); k̂·uᵀ = 2.5·[1, 0]; after
    assert states == [[["0.5000"], ["4.0000"]], [["0.5000"], ["4.0000"]], [["2.5000"], ["0.0000"]], [["3"], ["4"]]]
    assert step[7][0] == step[7][1]
    zh = data["steps"][data["focus"]["zh"]["0,2"][0]]
    assert zh[7] == step[7]  # the same states in Chinese, not written again


def test_a_wide_state_is_cut_as_the_tables_are(tmp_path):
    d = 40  # d_k = d_v = 40: the first and last 12 rows and columns, ⋮ and … between
    one = lambda: [[[1.0 if c == i else 0.0 for c in range(d)] for i in range(2)]]  # noqa: E731  (e₁, e₂)
    doc = dict(DELTA, queries=one(), keys=one(), values=one(), beta=[[1, 1]], g=[[0, 0]])
    data = written(tmp_path, {"linear": doc})  # S = e₁e₁ᵀ + e₂e₂ᵀ (u = v − Sᵀk = e₂ at token 2)
    _, _, [state] = clicked(data, "final_state", 0, 0)
    assert len(state["rl"]) == 25 and state["rl"][12] == "⋮" and state["cl"][12] == "…" and state["cl"][-1] == "40"
    assert state["v"][0][0] == "1" and state["v"][1][1] == "1" and state["v"][0][1] == "0"


def test_a_long_document_writes_out_fewer_steps_and_the_rest_say_so(tmp_path, monkeypatch):
    from attncli.teach.page import linear

    monkeypatch.setattr(linear, "WORK_TOKENS", 3)  # 3 tokens: one pair's worth
    data = written(tmp_path, {"tokens": ["a", "b", "c"], "linear": DELTA})
    assert data["explained"] == 1 and list(data["focus"]["en"]) == ["0,0"]
    o = table(data, "head_outputs")
    assert o["x"]["s"][0][0] == ["Δ"] and o["x"]["s"][2][0] is None  # the page's "run attncli explain … --query 3"
