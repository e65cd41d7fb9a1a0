"""--format markdown, latex and csv: parsed back, they equal independently computed numbers.

The reference is tests/reference.py (plain Python) on the YAML read by PyYAML alone.
"""

from __future__ import annotations

import csv
import io
import re

import numpy as np
import pytest
import yaml
from conftest import EXAMPLES
from reference import naive_attention

from attncli.cli import app

HALF_UNIT = {p: 0.5 * 10**-p + 1e-12 for p in range(8)}  # what rounding to p decimals may change
KEYS = ("queries", "keys", "values", "scores", "scaled_scores", "weights", "head_outputs", "output")


def reference(name: str, **extra) -> dict:
    doc = yaml.safe_load((EXAMPLES / name).read_text())
    w = doc.get("weights", {})
    ref = naive_attention(doc["inputs"], w.get("query"), w.get("key"), w.get("value"), heads=doc.get("heads", 1),
                          bias=doc.get("bias"), output=w.get("output"), scale=doc.get("scale", "sqrt"), **extra)
    return {k: np.array(ref[k], float) for k in KEYS}


def compute(runner, *args) -> str:
    result = runner.invoke(app, ["compute", *map(str, args)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


def parse_markdown(text: str) -> dict[str, list[np.ndarray]]:
    """Heading name -> matrices (masked cells NaN), in order."""
    found: dict[str, list[np.ndarray]] = {}
    for section in text.split("### ")[1:]:
        name = section.split(":")[0].split(" · ")[-1]
        rows = [line for line in section.splitlines() if line.startswith("| ")
                and not line.startswith(("| |", "| ---"))]
        cells = [[np.nan if c == "masked" else float(c) for c in re.split(r" \| ", row.strip("| "))[1:]]
                 for row in rows]
        found.setdefault(name, []).append(np.array(cells))
    return found


@pytest.mark.parametrize("name, extra", [("illustrated.yaml", {}), ("two_heads.yaml", {}),
                                         ("two_heads.yaml", {"mask": "causal"})])
def test_markdown_parses_back_to_the_reference(runner, name, extra):
    args = ["--mask", "causal"] if extra else []
    tables = parse_markdown(compute(runner, EXAMPLES / name, "--format", "markdown", "-p", "3", *args))
    ref = reference(name, **extra)
    names = {"Queries": "queries", "Keys": "keys", "Values": "values", "Scores": "scores",
             "Scaled scores": "scaled_scores", "Weights": "weights", "Head output": "head_outputs"}
    for title, key in names.items():
        assert len(tables[title]) == ref[key].shape[0]
        for shown, expected in zip(tables[title], ref[key]):
            if key == "scaled_scores" and extra:
                assert np.array_equal(np.isnan(shown), np.triu(np.ones_like(expected, bool), 1))
                expected = np.where(np.isnan(shown), np.nan, expected)
            np.testing.assert_allclose(shown, expected, rtol=0, atol=HALF_UNIT[3])
    np.testing.assert_allclose(tables["Output"][0], ref["output"], rtol=0, atol=HALF_UNIT[3])


def test_markdown_has_the_token_labels_and_shapes(runner):
    text = compute(runner, EXAMPLES / "cross_attention.yaml", "--format", "markdown", "--only", "weights")
    assert text.startswith("### Weights: `A = softmax(S / √3)` (2 × 3)\n\n"
                           "| | 我 | 是 | 学生 |\n| --- | ---: | ---: | ---: |\n")


LATEX_MATRIX = r"\\begin\{(?:bmatrix|array\}\{(l\|)?r+)\}\n(.*?)\n\\end\{(?:bmatrix|array)\}"


def parse_latex(text: str) -> list[np.ndarray]:
    """The numbers of each matrix, its labels (a first column of row tokens, a header row of keys) left out."""
    matrices = re.findall(LATEX_MATRIX, text, re.DOTALL)
    return [np.array([[-np.inf if c.strip() == r"-\infty" else float(c)
                       for c in re.split(r"(?<!\\)&", row)[bool(labelled):]]
                      for row in re.sub(r"\A.*\\hline\n", "", body).split(" \\\\\n")])
            for labelled, body in matrices]


def test_latex_parses_back_to_the_reference(runner):
    text = compute(runner, EXAMPLES / "two_heads.yaml", "--format", "latex", "-p", "4", "--mask", "causal",
                   "--only", "scaled_scores", "--only", "weights")
    ref = reference("two_heads.yaml", mask="causal")
    scaled1, weights1, scaled2, weights2 = parse_latex(text)
    masked = np.triu(np.ones((3, 3), bool), 1)
    for shown, expected in ((scaled1, ref["scaled_scores"][0]), (scaled2, ref["scaled_scores"][1])):
        assert np.array_equal(np.isinf(shown), masked)
        np.testing.assert_allclose(shown[~masked], expected[~masked], rtol=0, atol=HALF_UNIT[4])
    np.testing.assert_allclose(weights1, ref["weights"][0], rtol=0, atol=HALF_UNIT[4])
    np.testing.assert_allclose(weights2, ref["weights"][1], rtol=0, atol=HALF_UNIT[4])
    assert ("A^{(2)} = \\operatorname{softmax}\\left(\\frac{S^{(2)}}{\\sqrt{2}}\\right) = \\begin{array}{l|rrr}\n"
            " & \\text{The} & \\text{cat} & \\text{sat} \\\\ \\hline\n"
            "\\text{The} & 1.0000 & 0.0000 & 0.0000 \\\\\n") in text
    assert "% Head 1 · Weights: A = softmax(S / √2) (3 × 3); rows: The, cat, sat; columns: The, cat, sat" in text


def parse_latex_joined(text: str) -> list[np.ndarray]:
    """The matrices of LaTeX output, a matrix written in blocks of columns (issue 18) joined back into one."""
    joined: list[np.ndarray] = []
    for matrix, part in zip(parse_latex(text),
                            re.findall(r"^% [^\n]*\(\d+ × \d+\)(, columns \d+–\d+)?[^\n]*\n(?:\\setcounter[^\n]*\n)?"
                                       r"\\begin\{equation\*\}\n[^\n]*\\begin\{(?:bmatrix|array)\}", text, re.M)):
        if part and not part.startswith(", columns 1–"):
            joined[-1] = np.hstack([joined[-1], matrix])
        else:
            joined.append(matrix)
    return joined


def test_latex_of_wide_matrices_comes_in_blocks_of_columns_that_fit_the_page(runner):
    text = compute(runner, EXAMPLES / "bert_base.yaml", "--format", "latex", "--only", "inputs", "--full", "-p", "1")
    spans = [(int(a), int(b))
             for a, b in re.findall(r"^% Inputs: X \(6 × 768\), columns (\d+)–(\d+) of 768;", text, re.M)]
    assert spans[0][0] == 1 and spans[-1][1] == 768 and all(b + 1 == c for (_, b), (c, _) in zip(spans, spans[1:]))
    blocks = parse_latex(text)
    assert [m.shape[1] for m in blocks] == [b - a + 1 for a, b in spans] and max(b - a + 1 for a, b in spans) <= 10
    assert r"{X}_{\text{cols }1\text{--}8} = \begin{array}{l|rrrrrrrr}" in text  # the tokens in a label column
    (whole,) = parse_latex_joined(text)
    assert whole.shape == (6, 768)
    wide = compute(runner, EXAMPLES / "bert_base.yaml", "--format", "latex", "--only", "inputs", "--full", "-p", "0")
    # whole numbers: more than 10 columns fit; an array (with labels) has no limit on its columns, unlike amsmath's
    assert "MaxMatrixCols" not in wide and max(m.shape[1] for m in parse_latex(wide)) > 10
    # a matrix without tokens (W_Q's rows are X's dimensions) is a bmatrix: more than 10 columns raise the limit
    wide = compute(runner, EXAMPLES / "bert_base.yaml", "--format", "latex", "--only", "W_Q", "--head", "1", "--full",
                   "-p", "0")
    assert r"\setcounter{MaxMatrixCols}{" in wide and r"\begin{array}" not in wide
    for equation in wide.split("\n\n")[1:]:
        (matrix,) = parse_latex(equation)
        limit = re.search(r"MaxMatrixCols\}\{(\d+)\}", equation)
        assert matrix.shape[1] <= (int(limit.group(1)) if limit else 10)


def test_csv_is_exact(runner):
    ref = reference("two_heads.yaml")
    rows = list(csv.reader(io.StringIO(compute(runner, EXAMPLES / "two_heads.yaml", "--format", "csv",
                                               "--only", "weights"))))
    assert rows[0] == ["head", "token", "The", "cat", "sat"]
    assert [r[:2] for r in rows[1:]] == [[h, t] for h in "12" for t in ("The", "cat", "sat")]
    np.testing.assert_allclose(np.array([[float(x) for x in r[2:]] for r in rows[1:]]), ref["weights"].reshape(6, 3),
                               rtol=0, atol=1e-12)
    one = list(csv.reader(io.StringIO(compute(runner, EXAMPLES / "two_heads.yaml", "--format", "csv",
                                              "--only", "output"))))
    assert one[0] == ["token", "1", "2", "3", "4"]
    np.testing.assert_allclose(np.array([[float(x) for x in r[1:]] for r in one[1:]]), ref["output"],
                               rtol=0, atol=1e-12)


def test_csv_masked_cells_are_empty_and_one_head_has_no_head_column(runner):
    text = compute(runner, EXAMPLES / "two_heads.yaml", "--format", "csv", "--only", "scaled_scores", "--head", "2",
                   "--mask", "causal")
    rows = list(csv.reader(io.StringIO(text)))
    ref = reference("two_heads.yaml", mask="causal")["scaled_scores"][1]
    assert rows[0] == ["token", "The", "cat", "sat"]
    assert [r[1:].count("") for r in rows[1:]] == [2, 1, 0]
    assert float(rows[3][3]) == pytest.approx(ref[2, 2], abs=1e-12)


@pytest.mark.parametrize("args, message", [
    (["--format", "csv"], "--format csv: writes one matrix"),
    (["--format", "csv", "--only", "weights", "--only", "output"], "--format csv: writes one matrix"),
    (["--format", "csv", "--only", "output", "--head", "1"], "'output' has no heads"),
    (["--format", "markdown", "--head", "3"], "--head 3 is out of range"),
])
def test_format_errors_exit_2(runner, args, message):
    result = runner.invoke(app, ["compute", str(EXAMPLES / "two_heads.yaml"), *args])
    assert result.exit_code == 2 and message in result.stderr and result.stdout == ""


EXAMPLE_FILES = ["illustrated.yaml", "bert_base.yaml", "cross_attention.yaml", "two_heads.yaml", "causal.yaml",
                 "csv/files.yaml"]
TITLES = {"Inputs": "inputs", "Context": "context", "Queries": "queries", "Keys": "keys", "Values": "values",
          "Scores": "scores", "Scaled scores": "scaled_scores", "Weights": "weights", "Head output": "head_outputs",
          "Output": "output"}


PER_HEAD = ("queries", "keys", "values", "scores", "scaled_scores", "weights", "head_outputs")


def json_matrices(runner, path) -> dict[str, list[np.ndarray]]:
    """The JSON's matrices, a list of one per head for per-head keys (a masked entry NaN)."""
    import json

    data = json.loads(compute(runner, path, "--format", "json"))
    def as_array(value):
        return np.array(value, dtype=float)

    return {key: list(as_array(data[key])) if key in PER_HEAD else [as_array(data[key])]
            for key in TITLES.values() if key in data}


def in_block_order(matrices: dict[str, list[np.ndarray]]) -> list[np.ndarray]:
    """The order of compute's tables: inputs, context, each head's Q K V S Z A H, then the output."""
    heads = len(matrices["weights"])
    found = [*matrices["inputs"], *matrices.get("context", [])]
    found += [matrices[key][h] for h in range(heads) for key in PER_HEAD]
    return found + matrices["output"]


@pytest.mark.parametrize("name", EXAMPLE_FILES)
def test_markdown_and_latex_of_every_example_read_back_as_the_json(runner, name):
    expected = json_matrices(runner, EXAMPLES / name)
    markdown = parse_markdown(compute(runner, EXAMPLES / name, "--format", "markdown", "-p", "6", "--full"))
    latex = parse_latex_joined(compute(runner, EXAMPLES / name, "--format", "latex", "-p", "6", "--full"))
    assert sorted(TITLES[t] for t in markdown) == sorted(expected)
    in_order = in_block_order(expected)
    assert len(latex) == len(in_order)
    for title, key in TITLES.items():
        for shown, want in zip(markdown.get(title, []), expected.get(key, []), strict=True):
            np.testing.assert_allclose(shown, want, rtol=0, atol=HALF_UNIT[6], err_msg=f"{name} {key}")
    for shown, want in zip(latex, in_order):
        want = np.where(np.isnan(want), -np.inf, want)
        np.testing.assert_allclose(shown, want, rtol=0, atol=HALF_UNIT[6], err_msg=name)
