"""attncli page without a browser: the file is whole and offline, its data says what explain says, its sizes.

(The page in a real browser: tests/test_page_browser.py.)
"""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest
from conftest import EXAMPLES
from typer.testing import CliRunner

import attncli
from attncli.cli import app
from attncli.outputs.blocks import blocks
from attncli.teach.page import page_data, page_html
from attncli.teach.texts import texts


def embedded(html: str) -> dict:
    """The data inside the page, read back as the script reads it."""
    found = re.search(r'<script type="application/json" id="data">(.*?)</script>', html, re.S)
    return json.loads(found.group(1))


def table(data: dict, key: str, head: int | None = 0) -> dict:
    return next(t for t in data["tables"] if t["key"] == key and t["head"] == head)


def marked(data: dict, t: dict, r: int, c: int, lang: str = "en") -> list[list[str]]:
    """The lines a click on shown cell (r, c) marks, step by step, as the page's script finds them."""
    query = t["r"][r] if t["perQuery"] else data["queries"][0]
    head = t["head"] or 0
    steps = [data["steps"][k] for k in data["focus"][lang][f"{head},{query}"]]
    out = []
    for number, lines in zip(t["x"]["s"][r][c], t["x"]["hl"][r][c]):
        step = next(s for s in steps if s[0] == number)
        out.append([data["S"][step[4][k]] for k in lines])
    return out


def test_the_illustrated_page_is_small_and_asks_for_nothing():
    html = page_html(attncli.compute(EXAMPLES / "illustrated.yaml"), "illustrated.yaml")
    assert len(html.encode()) <= 200_000
    lowered = html.lower()
    for fetches in ("http:", "https:", "<link", "<img", "<iframe", "url(", "@import", "fetch(", "xmlhttprequest",
                    "websocket", "src="):
        assert fetches not in lowered, fetches
    assert "default-src 'none'" in html  # and the browser is told to refuse any request


def test_weight_1_2_is_its_exponential_over_the_rows_sum():
    data = page_data(attncli.compute(EXAMPLES / "illustrated.yaml"))
    weights = table(data, "weights")
    assert weights["v"][0][1] == "0.4683"
    e2, e4 = math.exp(2), math.exp(4)  # query 1's scores are 2, 4, 4 (scale: none)
    total = e2 + 2 * e4
    assert marked(data, weights, 0, 1) == [[f"Input 2: exp(4) = {e4:.4f}",
                                           f"Input 2: a = {e4:.4f} / {total:.4f} = {e4 / total:.4f}",
                                           f"Σ = {e2:.4f} + {e4:.4f} + {e4:.4f} = {total:.4f}"]]
    # the query row and the key row of step 3, and the dot product of step 4
    # (each cell written out as its products since issue 31)
    q2 = "Input 2: q₂ = [0, 2, 0, 2] · W_Q = [0·1 + 2·1 + 0·0 + 2·0, 0·0 + 2·0 + 0·0 + 2·1, 0·1 + 2·0 + 0·1 + 2·1]"
    assert marked(data, table(data, "queries"), 1, 2) == [[q2 + " = [2, 2, 2]"]]
    assert marked(data, table(data, "keys"), 2, 0) == [["Input 3: k₃ = [1, 1, 1, 1] · W_K = [1·0 + 1·1 + 1·0 + 1·1, "
                                                         "1·0 + 1·1 + 1·1 + 1·1, 1·1 + 1·0 + 1·0 + 1·0] = [2, 3, 1]"]]
    assert marked(data, table(data, "scores"), 1, 1) == [["Input 2: q₂ · k₂ = 2·4 + 2·4 + 2·0 = 16"]]


def test_a_masked_weight_is_explained_by_the_step_that_names_the_mask():
    trace = attncli.compute(EXAMPLES / "causal.yaml")
    data = page_data(trace)
    weights = table(data, "weights")
    assert not trace.spec.allowed[0, 0, 1] and weights["v"][0][1] == "0.0000"
    assert weights["x"]["s"][0][1] == ["4", "5"]
    step4 = next(data["steps"][k] for k in data["focus"]["zh"]["0,0"] if data["steps"][k][0] == "4")
    causal = texts("zh")["scores"]["mask_causal"].format(q=f"“{trace.spec.tokens[0]}”")
    assert causal in [data["S"][p] for p in step4[3]]
    assert marked(data, weights, 0, 1)[0][0].endswith("→   masked")
    assert weights["x"]["s"][1][0] == ["5"]  # an allowed key: softmax


def test_the_tables_are_computes_head_by_head():
    """Every block of compute, each per-head one with its head (a K/V head's with its group's first head)."""
    for name in ("llama_style.yaml", "two_heads.yaml", "cross_attention.yaml", "rope.yaml"):
        trace = attncli.compute(EXAMPLES / name)
        data = page_data(trace)
        assert [t["title"]["en"] for t in data["tables"]] == [b.heading for b in blocks(trace)]
        for t in data["tables"]:
            if re.match(r"Head \d+ · ", t["title"]["en"]):
                assert t["head"] == int(t["title"]["en"].split()[1]) - 1
            if t["title"]["en"].startswith("K/V head "):
                first = int(re.search(r"query heads (\d+)", t["title"]["en"]).group(1))
                assert t["head"] == first - 1
            assert re.search(r"[\u4e00-\u9fff]", t["title"]["zh"]), t["title"]


def test_every_table_has_a_chinese_title():
    documents = [EXAMPLES / p.name for p in sorted(EXAMPLES.glob("*.yaml")) if p.name != "bert_base.yaml"]  # (slow)
    documents.append({"inputs": [[1, 2], [3, -1]], "positional": "sinusoidal", "heads": 2, "sinks": [0.5, -1],
                      "query_temperature": {"floor_scale": 8192, "attn_scale": 0.1}, "mask": "causal"})
    for document in documents:
        for t in page_data(attncli.compute(document))["tables"]:
            assert re.search(r"[\u4e00-\u9fff]", t["title"]["zh"]), (document, t["title"])


def test_a_large_document_is_cut_with_a_note_and_stays_small():
    n = 300
    rng = np.random.default_rng(0)
    trace = attncli.compute({"inputs": rng.normal(size=(n, 8)), "heads": 2, "mask": "causal"})
    html = page_html(trace)
    data = embedded(html)
    weights = table(data, "weights")
    assert None in weights["r"] and None in weights["c"] and weights["n"] == n
    assert len(weights["r"]) == 25 and weights["v"][12] == ["⋮"] * 25
    assert len(html.encode()) < 2_000_000
    assert data["explained"] == 2 * 24 and len(data["focus"]["en"]) == 2 * 24  # every query shown, both heads


@pytest.mark.slow
def test_the_bert_base_page_is_within_12_mb():
    html = page_html(attncli.compute(EXAMPLES / "bert_base.yaml"), "bert_base.yaml")
    assert len(html.encode()) <= 12_000_000
    data = embedded(html)
    assert data["explained"] == 12 * 6 and len([t for t in data["tables"] if t["key"] == "weights"]) == 12
    assert all(re.search(r"[\u4e00-\u9fff]", t["title"]["zh"]) for t in data["tables"])


def test_a_token_cannot_end_the_script():
    token = "</script><script>alert(1)</script><!--"
    html = page_html(attncli.compute({"tokens": [token, "b"], "inputs": [[1, 0], [0, 1]]}), "a</title>")
    assert html.count("</script>") == 2 and "<!--" not in html.split('id="data">')[1]
    assert embedded(html)["tokens"][0] == token
    assert "<title>a&lt;/title&gt;</title>" in html


def test_the_command_writes_the_page(tmp_path):
    out = tmp_path / "page.html"
    result = CliRunner().invoke(app, ["page", str(EXAMPLES / "illustrated.yaml"), "-o", str(out)])
    assert result.exit_code == 0, result.output
    data = embedded(out.read_text(encoding="utf-8"))
    assert data["title"] == "illustrated.yaml" and table(data, "weights")["v"][0] == ["0.0634", "0.4683", "0.4683"]
    assert data["lang"] == "en"
    result = CliRunner().invoke(app, ["page", str(EXAMPLES / "causal.yaml"), "-o", str(out), "--lang", "zh"])
    assert result.exit_code == 0 and embedded(out.read_text(encoding="utf-8"))["lang"] == "zh"


@pytest.mark.parametrize("name", ["p.txt", "page", "p.svg", "p.html.bak"])
def test_an_output_not_named_html_is_refused_and_nothing_written(tmp_path, name):
    out = tmp_path / name
    result = CliRunner().invoke(app, ["page", str(EXAMPLES / "causal.yaml"), "-o", str(out)])
    assert result.exit_code == 2 and not out.exists() and result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "--output" in lines[0] and ".html or .htm" in lines[0], result.stderr


def test_on_a_terminal_without_o_it_refuses_and_piped_it_writes_the_html(tmp_path):
    """On a terminal (a pseudo-terminal here) one line suggests -o page.html, exit 2; piped, the HTML itself."""
    import os
    import pty
    import select
    import subprocess
    import sys
    from pathlib import Path

    env = dict(os.environ, PYTHONPATH=str(Path(attncli.__file__).parent.parent), COLUMNS="200")
    command = [sys.executable, "-m", "attncli", "page", str(EXAMPLES / "causal.yaml")]
    main, follower = pty.openpty()
    done = subprocess.run(command, stdout=follower, stderr=subprocess.PIPE, env=env, timeout=300)
    os.close(follower)
    shown = b""
    while select.select([main], [], [], 0.2)[0]:
        try:
            chunk = os.read(main, 65536)
        except OSError:
            break
        if not chunk:
            break
        shown += chunk
    os.close(main)
    message = done.stderr.decode().strip().splitlines()
    assert done.returncode == 2 and shown == b"" and len(message) == 1 and "-o page.html" in message[0]
    piped = subprocess.run(command, capture_output=True, env=env, timeout=300)
    assert piped.returncode == 0 and piped.stdout.lstrip().lower().startswith(b"<!doctype html")


def test_a_bad_document_writes_nothing(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("inputs: [[1, 0], [0, 1]]\nweights: {query: [[1, 2, 3]]}\n", encoding="utf-8")
    out = tmp_path / "page.html"
    result = CliRunner().invoke(app, ["page", str(bad), "-o", str(out)])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error:") and "weights.query" in lines[0], result.output
    assert "Traceback" not in result.output and not out.exists()


def test_a_key_past_explains_lines_says_so():
    """explain writes out the first 12 keys of a row; a later key's cell has no line marked, and says why."""
    trace = attncli.compute({"inputs": np.eye(14), "scale": "none"})
    data = page_data(trace)
    scores, weights = table(data, "scores"), table(data, "weights")
    assert scores["x"]["hl"][0][11] == [[0 + 11]] and scores["x"]["hl"][0][12] == [None]
    assert weights["x"]["hl"][0][12] == [None] and weights["x"]["hl"][0][11] != [None]
    assert "12" in data["ui"]["en"]["no_lines"] and "12" in data["ui"]["zh"]["no_lines"]


def test_a_large_document_writes_out_fewer_steps_and_says_which(monkeypatch):
    """Past WORK_CELLS, the first (head, query) pairs only; the other rows' cells send the reader to explain."""
    from attncli.teach.page import worked

    monkeypatch.setattr(worked, "WORK_CELLS", 30 * 30 * 5)
    data = page_data(attncli.compute({"inputs": np.eye(30), "heads": 2}))
    assert data["explained"] == 5 and sorted(data["focus"]["en"]) == [f"0,{i}" for i in range(5)]
    assert data["pathHeads"] == [0] and data["pathQueries"] == [0, 1, 2, 3, 4]
    weights = table(data, "weights")
    assert weights["x"]["s"][4][0] == ["5"] and weights["x"]["s"][5] == [None] * 30
    assert table(data, "weights", 1)["x"] is None
    assert table(data, "keys")["x"]["s"][20][0] == ["3"]  # a key's row: explained with the first query's steps
    assert "{count}" in data["ui"]["en"]["not_worked"] and "{count}" in data["ui"]["zh"]["not_worked"]


def test_the_heat_colours_are_computes_and_heatmaps():
    """Weights shaded by their value (compute's tables); scores from the smallest to the largest unmasked one (one
    head of attncli heatmap --of scores); the other tables plain."""
    trace = attncli.compute(EXAMPLES / "causal.yaml")
    data = page_data(trace)
    below = np.tril(np.ones((trace.spec.n, trace.spec.m), dtype=bool))  # what causal allows
    scores = trace.scores[0][below]
    assert table(data, "weights")["heat"] == [0.0, 1.0]
    assert table(data, "scores")["heat"] == [scores.min(), scores.max()]
    assert table(data, "queries")["heat"] is None and table(data, "inputs", None)["heat"] is None


def test_a_rotated_query_marks_the_pair_explain_turns():
    """rope.yaml: explain turns the pair (1, 3) of query 2 at p = 1 by φ = 1; Q′[2, 1] is its first number."""
    data = page_data(attncli.compute(EXAMPLES / "rope.yaml"))
    rotated = table(data, "queries_rotated")
    lines = marked(data, rotated, 1, 0)[0]
    c, s = math.cos(1.0), math.sin(1.0)
    assert lines[0] == f"(q₁, q₃) = (1, 2)  →  (1·{c:.4f} − 2·{s:.4f}, 2·{c:.4f} + 1·{s:.4f}) = " \
                       f"({c - 2 * s:.4f}, {2 * c + s:.4f})"
    assert rotated["v"][1][0] == f"{c - 2 * s:.4f}" and marked(data, rotated, 1, 1) == [[]]
