"""Large inline YAML matrices take the fast path and give exactly the numbers and messages of the careful one."""

from __future__ import annotations

import json

import numpy as np
import pytest

from attncli.cli import app
from attncli.inputs import fastmatrix
from attncli.inputs.document import parse_text

SPELLINGS = ["1", "-0", "1e-3", "2E+2", ".5", "-.25", "1.", "+3", "-1.5e1", "0.1"]  # all YAML 1.2 core numbers


def spelled_matrix(rows: int = 300, cols: int = 24, seed: int = 0) -> tuple[list[list[str]], np.ndarray]:
    """Cells as written in a document, and the numbers they mean (read by Python's float, not by attncli)."""
    rng = np.random.default_rng(seed)
    cells = [[repr(float(x)) for x in rng.normal(size=cols)] for _ in range(rows)]
    for k, spelling in enumerate(SPELLINGS):
        cells[k][k % cols] = spelling
    return cells, np.array([[float(c) for c in row] for row in cells])


def flow(cells: list[list[str]]) -> str:
    return "[" + ",\n  ".join("[" + ", ".join(row) + "]" for row in cells) + "]"


def compute_json(runner, tmp_path, text: str, *args: str):
    doc = tmp_path / "doc.yaml"
    doc.write_text(text)
    return runner.invoke(app, ["compute", str(doc), "--format", "json", *args])


def test_a_large_matrix_is_lifted_and_exact():
    cells, expected = spelled_matrix()
    text = f"inputs: {flow(cells)}\nscale: none\n"
    assert len(text) > fastmatrix.MIN_CHARS
    lifted, arrays = fastmatrix.lift(text)
    assert len(arrays) == 1 and len(lifted) < 400
    assert lifted.count("\n") == text.count("\n")  # line numbers of what follows are kept
    data = parse_text(text, "doc.yaml")
    assert isinstance(data["inputs"], fastmatrix.FastMatrix) and len(data["inputs"]) == 300
    assert np.array_equal(data["inputs"].array, expected)
    assert data["scale"] == "none"


def test_compute_reads_the_same_numbers(runner, tmp_path):
    cells, expected = spelled_matrix(rows=40, cols=200)
    result = compute_json(runner, tmp_path, f"inputs: {flow(cells)}\n", "--only", "inputs")
    assert result.exit_code == 0, result.stderr
    assert np.array_equal(np.array(json.loads(result.stdout)["inputs"]), expected)


def test_json_style_keys_and_weights_are_lifted(runner, tmp_path):
    cells, x = spelled_matrix(rows=20, cols=300)
    w_cells, w = spelled_matrix(rows=300, cols=4, seed=1)
    text = f'{{"inputs": {flow(cells)},\n "weights": {{"query": {flow(w_cells)}, "key": {flow(w_cells)}}}}}\n'
    text = text.replace('"inputs"', "inputs", 1)  # not JSON: the YAML flow reader must take it
    lifted, arrays = fastmatrix.lift(text)
    assert len(arrays) == 3
    result = compute_json(runner, tmp_path, text, "--only", "queries", "--scale", "none")
    assert result.exit_code == 0, result.stderr
    assert np.allclose(np.array(json.loads(result.stdout)["queries"])[0], x @ w, rtol=1e-13, atol=1e-12)


@pytest.mark.parametrize(
    "bad, message",
    [
        ("yes", "inputs: row 7, column 3: the string 'yes' is not a number"),
        (".nan", "inputs: row 7, column 3"),
        ("1" * 400, "inputs: row 7, column 3"),
        ("1_000", "inputs: row 7, column 3: the string"),
    ],
)
def test_a_bad_cell_is_named_as_on_the_careful_path(runner, tmp_path, bad, message):
    cells, _ = spelled_matrix()
    cells[6][2] = bad
    result = compute_json(runner, tmp_path, f"inputs: {flow(cells)}\n")
    assert result.exit_code == 2 and result.stdout == "" and "Traceback" not in result.stderr
    assert message in result.stderr


def test_ragged_rows_are_named(runner, tmp_path):
    cells, _ = spelled_matrix()
    cells[9] = cells[9][:-1]
    result = compute_json(runner, tmp_path, f"inputs: {flow(cells)}\n")
    assert result.exit_code == 2 and "inputs: row 10 has 23 entries but the first has 24" in result.stderr


def test_an_error_after_the_matrix_names_its_real_line(runner, tmp_path):
    cells, _ = spelled_matrix()
    text = f"inputs: {flow(cells)}\nscale: none\nscale: sqrt\n"
    line = text.count("\n")  # the duplicate key is on the last line
    result = compute_json(runner, tmp_path, text)
    assert result.exit_code == 2 and f"line {line}" in result.stderr and "scale" in result.stderr


def test_a_matrix_in_a_comment_or_a_string_is_left_alone(runner, tmp_path):
    cells, _ = spelled_matrix()
    one_line = flow(cells).replace("\n", " ")
    text = f"# old: {one_line}\ninputs: [[1, 0], [0, 1]]\nnote: 'x: {one_line}'\n"
    assert fastmatrix.lift(text)[1]  # both look like matrices to the quick scan …
    data = parse_text(text, "doc.yaml")  # … but neither came back as a value: read the careful way
    assert data["inputs"] == [[1, 0], [0, 1]]
    assert data["note"] == f"x: {one_line}"


@pytest.mark.parametrize("cell", ['"1"', "'2'", "abc"])
def test_a_string_cell_in_a_large_matrix_is_named_not_read(runner, tmp_path, cell):
    """A quoted number or a word in a 25,000-character matrix: the careful path names it; nothing takes its place."""
    cells, _ = spelled_matrix(rows=400)
    cells[123][5] = cell
    text = f"inputs: {flow(cells)}\n"
    assert len(text) > 25_000
    result = compute_json(runner, tmp_path, text)
    assert result.exit_code == 2 and result.stdout == ""
    assert "inputs: row 124, column 6: the string" in result.stderr and result.stderr.count("\n") == 1


def test_a_string_that_is_a_placeholder_stays_a_string(monkeypatch):
    """Even a document that holds the very placeholder the fast path uses (its random part fixed here) reads right:
    the token stays the string written, the matrix the numbers written."""
    import secrets

    monkeypatch.setattr(secrets, "token_hex", lambda n: "0" * (2 * n))
    cells, expected = spelled_matrix()
    placeholder = "attncli-matrix-" + "0" * 16 + "-0"
    data = parse_text(f"tokens: [{placeholder}, b]\ninputs: {flow(cells)}\n", "doc.yaml")
    assert data["tokens"] == [placeholder, "b"]
    assert np.array_equal(np.array(data["inputs"], dtype=float), expected)


def test_a_large_matrix_inside_a_multiline_string_stays_text(runner, tmp_path):
    cells, _ = spelled_matrix()
    text = f'inputs: [[1, 0], [0, 1]]\nnote: "x: {flow(cells)}"\n'
    data = parse_text(text, "doc.yaml")
    assert data["inputs"] == [[1, 0], [0, 1]]
    assert isinstance(data["note"], str) and data["note"].startswith("x: [[") and "attncli-matrix" not in data["note"]


def test_a_large_mask_of_zeros_and_ones(runner, tmp_path):
    n = 120
    causal = np.tril(np.ones((n, n)))
    mask = flow([[str(int(v)) for v in row] for row in causal])
    inputs = flow([[str(i % 7), str(i % 5)] for i in range(n)])
    result = compute_json(runner, tmp_path, f"inputs: {inputs}\nmask: {mask}\n", "--only", "weights")
    assert result.exit_code == 0, result.stderr
    weights = np.array(json.loads(result.stdout)["weights"])[0]
    assert np.array_equal(weights == 0, causal == 0)
    bad = mask.replace("0", "2", 1)
    result = compute_json(runner, tmp_path, f"inputs: {inputs}\nmask: {bad}\n")
    assert result.exit_code == 2 and "mask" in result.stderr and "row 1" in result.stderr
