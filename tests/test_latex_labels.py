"""Issue 32: compute --format latex / -o x.tex writes each matrix with its tokens as real labels beside it (a label
column of the rows' tokens, a header row of the keys for scores and weights), escaped for TeX's text mode.

The structure is read back here by hand; where pdflatex or tectonic is installed, a slow test sets the file.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import numpy as np
import pytest
from conftest import EXAMPLES

from attncli.cli import app
from attncli.outputs.latex_labels import label_pt

SPECIAL = ["a_b", "x & y", "50%", "#1", "$5", "{z}", "~t", "^c", "\\back", "p<q>|r"]
# what \text{} sets for each escape: read back, a label must give the token it came from
UNESCAPE = [(r"\textbackslash{}", "\\"), (r"\textasciitilde{}", "~"), (r"\textasciicircum{}", "^"),
            (r"\textless{}", "<"), (r"\textgreater{}", ">"), (r"\textbar{}", "|"), ("-{}", "-")]


def latex(runner, *args) -> str:
    result = runner.invoke(app, ["compute", *map(str, args), "--format", "latex"])
    assert result.exit_code == 0, result.output
    return result.stdout


def special_doc(tmp_path, tokens=SPECIAL):
    n = len(tokens)
    rng = np.random.default_rng(5)
    doc = {"tokens": tokens, "inputs": rng.normal(size=(n, 2)).round(2).tolist(),
           "weights": {"query": [[1, 0], [0, 1]], "key": [[1, 0], [0, 1]], "value": [[1, 0], [0, 1]]}}
    path = tmp_path / "special.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path, np.array(doc["inputs"])


def arrays(text: str) -> list[tuple[str, list[str]]]:
    """Each labelled matrix: its column spec and its lines."""
    return [(spec, body.split("\n")) for spec, body in
            re.findall(r"\\begin\{array\}\{([^}]*)\}\n(.*?)\n\\end\{array\}", text, re.S)]


def untext(cell: str) -> str:
    """The token a ``\\text{…}`` label sets, every escape undone; fails on a special character left raw."""
    inner = re.fullmatch(r"\\text\{(.*)\}", cell.strip()).group(1)
    for escape, char in UNESCAPE:
        inner = inner.replace(escape, "\x00" + char)
    inner = re.sub(r"\\([_&%#${}])", "\x00\\1", inner)
    raw = re.sub("\x00.", "", inner, flags=re.S)
    assert not re.search(r"[\\_&%#${}~^<>|]", raw), cell  # nothing LaTeX reads as markup, unescaped
    return inner.replace("\x00", "")


def cells(line: str) -> list[str]:
    return [c.strip() for c in re.split(r"(?<!\\)&", line.removesuffix(r" \\ \hline").removesuffix(" \\\\"))]


def test_weights_carry_the_query_tokens_beside_and_the_key_tokens_above(runner):
    text = latex(runner, EXAMPLES / "illustrated.yaml", "--only", "weights", "-p", "2")
    assert (r"A = \operatorname{softmax}\left(S\right) = \begin{array}{l|rrr}" "\n"
            r" & \text{Input 1} & \text{Input 2} & \text{Input 3} \\ \hline" "\n"
            r"\text{Input 1} & 0.06 & 0.47 & 0.47 \\" "\n"
            r"\text{Input 2} & 0.00 & 0.98 & 0.02 \\" "\n"
            r"\text{Input 3} & 0.00 & 0.88 & 0.12" "\n"
            r"\end{array}") in text
    assert "% Weights: A = softmax(S) (3 × 3); rows: Input 1, Input 2, Input 3; columns: Input 1" in text  # as before
    assert "CJK" not in text


def test_special_characters_in_tokens_are_escaped_and_read_back(runner, tmp_path):
    path, inputs = special_doc(tmp_path)
    text = latex(runner, path, "--only", "X", "--only", "weights", "-p", "3", "--full")
    (x_spec, x_lines), *weight_blocks = arrays(text)
    # X: a label column and its two dimensions (no header: its columns are not tokens); weights: keys above, in
    # blocks of columns that fit the page, each with the label column again
    assert x_spec == "l|rr" and all(spec.startswith("l|r") for spec, _ in weight_blocks)
    assert [untext(cells(line)[0]) for line in x_lines] == SPECIAL
    header = [untext(c) for _, lines in weight_blocks for c in cells(lines[0])[1:]]
    assert header == SPECIAL and all(cells(lines[0])[0] == "" for _, lines in weight_blocks)
    for _, lines in weight_blocks:
        assert [untext(cells(line)[0]) for line in lines[1:]] == SPECIAL
    # one & per column: every line has the label cell and one cell per column; each line but the last ends with \\
    for spec, lines in [(x_spec, x_lines), *weight_blocks]:
        assert all(len(cells(line)) == len(spec) - 1 for line in lines)
        assert all(line.endswith((" \\\\", r" \\ \hline")) for line in lines[:-1]) and not lines[-1].endswith("\\")
        assert sum(r"\hline" in line for line in lines) == (spec != x_spec)
    shown = np.array([[float(c) for c in cells(line)[1:]] for line in x_lines])
    np.testing.assert_allclose(shown, inputs, rtol=0, atol=5e-4)  # the numbers beside their labels, in order
    weights = np.hstack([[[float(c) for c in cells(line)[1:]] for line in lines[1:]] for _, lines in weight_blocks])
    scores = inputs @ inputs.T / np.sqrt(2)  # W_Q = W_K = I
    expected = np.exp(scores - scores.max(axis=1, keepdims=True))
    np.testing.assert_allclose(weights, expected / expected.sum(axis=1, keepdims=True), rtol=0, atol=5e-4)


def test_projections_without_tokens_stay_bmatrix(runner):
    text = latex(runner, EXAMPLES / "illustrated.yaml", "--only", "W_Q", "-p", "0")
    assert "W_Q = \\begin{bmatrix}\n" in text and r"\text{" not in text and "array" not in text


def test_cjk_tokens_are_noted_once_at_the_top(runner):
    text = latex(runner, EXAMPLES / "cross_attention.yaml", "--only", "scaled_scores", "--only", "weights")
    assert text.startswith("% The labels hold Chinese, Japanese or Korean characters: compile with xelatex and\n"
                           "% \\usepackage{xeCJK}")
    assert text.count("xeCJK") == 1
    assert r" & \text{我} & \text{是} & \text{学生} \\ \hline" in text and "\\text{am} & " in text


def test_a_summary_left_out_row_and_column_are_dots_in_the_labels_too(runner, tmp_path):
    tokens = [f"w{i}" for i in range(1, 21)]
    path, _ = special_doc(tmp_path, tokens)
    (spec, lines), = arrays(latex(runner, path, "--only", "weights", "-p", "2"))
    header = cells(lines[0])
    assert r"\cdots" in header and r"\vdots" in [cells(line)[0] for line in lines]
    assert len(set(map(len, map(cells, lines)))) == 1 and len(header) == len(spec) - 1


def test_label_widths_are_never_below_what_tex_sets():
    """cmr10 at 10 pt, from its metrics: I 3.61, n 5.56, p 5.56, u 5.56, t 3.89, space 3.33, 1 5.00; m 8.33 …"""
    assert label_pt("Input 1") >= 32.51
    assert label_pt("mmmm") >= 4 * 8.33 and label_pt("WWW") >= 3 * 10.28
    assert label_pt("学生") >= 20.0


@pytest.mark.slow
@pytest.mark.skipif(not (shutil.which("pdflatex") or shutil.which("tectonic")), reason="no pdflatex or tectonic")
def test_a_labelled_file_compiles(runner, tmp_path):
    path, _ = special_doc(tmp_path)
    out = tmp_path / "x.tex"
    result = runner.invoke(app, ["compute", str(path), "-o", str(out)])
    assert result.exit_code == 0, result.output
    body = out.read_text(encoding="utf-8") + latex(runner, EXAMPLES / "causal.yaml", "--mask", "causal")
    (tmp_path / "doc.tex").write_text("\\documentclass{article}\n\\usepackage{amsmath}\n\\begin{document}\n"
                                      + body + "\n\\end{document}\n", encoding="utf-8")
    command = (["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "doc.tex"] if shutil.which("pdflatex")
               else ["tectonic", "--keep-logs", "doc.tex"])
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    log = (tmp_path / "doc.log").read_text(encoding="utf-8", errors="replace")
    assert done.returncode == 0, log[-2000:]
    assert "Overfull \\hbox" not in log, re.findall(r"Overfull \\hbox.*", log)


def test_a_small_matrix_keeps_every_column_and_puts_its_formula_above(runner):
    """The teacher's BERT head: a 6 × 6 weights matrix beside its formula was too wide and lost two columns
    (我, 想, …, 菜, 鱼); shown whole, it now keeps them all and its formula takes a line of its own."""
    text = latex(runner, EXAMPLES / "bert_base.yaml", "--head", "1", "--only", "weights")
    assert "A^{(1)} = \\operatorname{softmax}\\left(\\frac{S^{(1)}}{\\sqrt{64}}\\right)\n\\end{equation*}" in text
    (spec, lines), = arrays(text)
    assert spec == "l|rrrrrr" and [untext(c) for c in cells(lines[0])[1:]] == list("我想吃酸菜鱼")
    assert r"\cdots" not in text and "columns: 我, 想, 吃, 酸, 菜, 鱼" in text
