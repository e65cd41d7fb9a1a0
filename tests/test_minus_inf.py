"""Reading with −inf allowed (``minus_inf=True``: score_bias.matrix, PyTorch's float attn_mask).

Every reader takes −inf as it is written there: YAML's ``-.inf`` (and ``-inf``, ``-Infinity``, which YAML reads as
text), the string ``"-inf"`` in a JSON list, a ``-inf`` cell of a CSV/TSV/TXT file, −inf in a .npy file or a numpy
array, and the fast path of large inline matrices.  +inf and NaN stay errors naming the cell; without minus_inf
every −inf is refused exactly as before.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from attncli.core.errors import AttnError
from attncli.inputs import fastmatrix
from attncli.inputs.builder import _Builder
from attncli.inputs.document import _parse_yaml_events, parse_text
from attncli.inputs.matrices import read_value

NEG = -math.inf


def read(value, tmp_path=None, **options):
    return read_value(value, tmp_path, **options)


def error(value, tmp_path=None, **options) -> str:
    with pytest.raises(AttnError) as info:
        read_value(value, tmp_path, **options)
    return str(info.value)


# ---------------------------------------------------------------- inline YAML and JSON


@pytest.mark.parametrize("spelling", ["-.inf", "-.Inf", "-.INF", "-inf", "-Inf", "-INF", "-Infinity", "'-inf'",
                                      '"-inf"', '"-Infinity"'])
def test_every_yaml_spelling_of_minus_inf(spelling):
    data = parse_text(f"m: [[0.5, {spelling}], [{spelling}, -2]]\n", "doc.yaml")
    values = read(data["m"], minus_inf=True)
    assert values.dtype == np.float64
    assert values[0, 0] == 0.5 and values[1, 1] == -2
    assert values[0, 1] == NEG and values[1, 0] == NEG


def test_the_json_string_minus_inf():
    data = parse_text('{"m": [[0, "-inf"], ["-Infinity", 1.5]], "v": [0, "-inf"]}', "doc.json", json_only=True)
    assert np.array_equal(read(data["m"], minus_inf=True), [[0, NEG], [NEG, 1.5]])
    assert np.array_equal(read(data["v"], minus_inf=True), [0, NEG])
    assert np.array_equal(read([[[0, "-inf"]], [["-inf", 0]]], minus_inf=True), [[[0, NEG]], [[NEG, 0]]])


@pytest.mark.parametrize("text, message", [
    ("[[0, .inf]]", "row 1, column 2: inf is not allowed here: -inf masks a key, but NaN and +inf are errors"),
    ("[[0, 1], [+.inf, 0]]", "row 2, column 1: inf is not allowed here"),
    ("[[.nan, 0]]", "row 1, column 1: nan is not allowed here: -inf masks a key"),
    ("[[0, inf]]", "row 1, column 2: the string 'inf' is not a number"),
    ("[[0, +inf]]", "row 1, column 2: the string '+inf' is not a number"),
    ("[[0, -infinite]]", "row 1, column 2: the string '-infinite' is not a number"),
    ("[[0, -1e999]]", "row 1, column 2: -1e999 is too large for float64"),
    ("[[0, nan]]", "row 1, column 2: the string 'nan' is not a number"),
    ("[[0, true]]", "row 1, column 2: true is not a number (booleans belong only in a mask)"),
])
def test_plus_inf_and_nan_stay_errors_naming_the_cell(text, message):
    assert message in error(parse_text(f"m: {text}\n", "doc.yaml")["m"], minus_inf=True)


@pytest.mark.parametrize("spelling, message", [
    ("-.inf", "row 1, column 2: -inf is not a finite number (NaN and infinities are not allowed)"),
    ("-inf", "row 1, column 2: the string '-inf' is not a number"),
    ("'-inf'", "row 1, column 2: the string '-inf' is not a number"),
    ("-Infinity", "row 1, column 2: the string '-Infinity' is not a number"),
])
def test_without_minus_inf_nothing_changes(spelling, message):
    assert error(parse_text(f"m: [[0, {spelling}]]\n", "doc.yaml")["m"]) == message


def test_a_mask_still_refuses_minus_inf():
    assert "is not a mask value" in error([[1, NEG]], boolean=True)
    with pytest.raises(AssertionError):  # a mask is 0/1, a bias a number: never both
        read([[1, 0]], boolean=True, minus_inf=True)


# ---------------------------------------------------------------- text files


@pytest.mark.parametrize("suffix, separator", [(".csv", ","), (".tsv", "\t"), (".txt", " ")])
def test_text_file_cells(tmp_path, suffix, separator):
    rows = [["0", "-inf", "1.5"], ["-Inf", "-INFINITY", "-.inf"], ["# a comment"], ["2", "-infinity", "0"]]
    (tmp_path / f"b{suffix}").write_text("\n".join(separator.join(row) for row in rows) + "\n")
    values = read(f"b{suffix}", tmp_path, minus_inf=True)
    assert np.array_equal(values, [[0, NEG, 1.5], [NEG, NEG, NEG], [2, NEG, 0]])


@pytest.mark.parametrize("cell, message", [
    ("inf", "b.csv: line 2, column 2: inf is not allowed here: -inf masks a key, but NaN and +inf are errors"),
    ("+inf", "b.csv: line 2, column 2: +inf is not allowed here"),
    ("nan", "b.csv: line 2, column 2: nan is not allowed here"),
    ("-nan", "b.csv: line 2, column 2: -nan is not allowed here"),
    ("1e999", "b.csv: line 2, column 2: 1e999 is too large for float64"),
    ("-1e999", "b.csv: line 2, column 2: -1e999 is too large for float64"),
    ("--inf", "b.csv: line 2, column 2: '--inf' is not a number"),
    ("-inff", "b.csv: line 2, column 2: '-inff' is not a number"),
])
def test_text_file_errors(tmp_path, cell, message):
    (tmp_path / "b.csv").write_text(f"0,-inf\n1,{cell}\n")
    assert error("b.csv", tmp_path, minus_inf=True).startswith(message)


@pytest.mark.parametrize("cell, message", [
    ("-inf", "b.csv: line 1, column 2: -inf is not a finite number (NaN and infinities are not allowed)"),
    ("-.inf", "b.csv: line 1, column 2: '-.inf' is not a number"),
])
def test_text_file_without_minus_inf_as_before(tmp_path, cell, message):
    (tmp_path / "b.csv").write_text(f"0,{cell}\n")
    assert error("b.csv", tmp_path).startswith(message)


# ---------------------------------------------------------------- .npy and numpy arrays


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16])
def test_npy_minus_inf(tmp_path, dtype):
    array = np.array([[0.25, -np.inf], [-np.inf, -3]], dtype=dtype)
    np.save(tmp_path / "b.npy", array)
    values = read("b.npy", tmp_path, minus_inf=True)
    assert values.dtype == np.float64 and np.array_equal(values, array.astype(np.float64))
    assert error("b.npy", tmp_path) == "b.npy: row 1, column 2: -inf is not a finite number"


@pytest.mark.parametrize("cell, message", [
    (np.inf, "b.npy: row 2, column 1: inf is not allowed here: -inf masks a key, but NaN and +inf are errors"),
    (np.nan, "b.npy: row 2, column 1: nan is not allowed here"),
])
def test_npy_plus_inf_and_nan(tmp_path, cell, message):
    np.save(tmp_path / "b.npy", np.array([[0, -np.inf], [cell, 0]]))
    assert error("b.npy", tmp_path, minus_inf=True).startswith(message)


def test_a_numpy_array_from_the_python_api():
    array = np.array([[0, -np.inf, 1]], dtype=np.float32)
    assert np.array_equal(read(array, minus_inf=True), [[0, NEG, 1]])
    assert "row 1, column 3: nan is not allowed here" in error(np.array([[0, -np.inf, np.nan]]), minus_inf=True)
    assert error(array) == "row 1, column 2: -inf is not a finite number"


@pytest.mark.skipif(np.finfo(np.longdouble).max <= np.finfo(np.float64).max, reason="long double is float64 here")
def test_a_long_double_beyond_float64_is_no_minus_inf():
    array = np.array([[0, -np.inf], [np.longdouble("-1e4000"), 0]], dtype=np.longdouble)
    assert "row 2, column 1" in error(array, minus_inf=True) and "too large for float64" in error(array, minus_inf=True)


# ---------------------------------------------------------------- the fast path of large inline matrices


def bias_text(n: int = 150, spelling: str = "-.inf") -> tuple[str, np.ndarray]:
    rng = np.random.default_rng(0)
    values = np.round(rng.normal(size=(n, n)), 6)
    values[np.triu_indices(n, 1)] = NEG
    rows = ", ".join("[" + ", ".join(spelling if v == NEG else repr(float(v)) for v in row) + "]" for row in values)
    return f"inputs: [[1]]\nbias: [{rows}]\n", values


def test_a_large_bias_matrix_takes_the_fast_path():
    text, values = bias_text()
    assert len(text) > fastmatrix.MIN_CHARS
    assert len(fastmatrix.lift(text)[1]) == 1  # lifted: not read number by number
    data = parse_text(text, "doc.yaml")
    assert isinstance(data["bias"], fastmatrix.FastMatrix)
    assert np.array_equal(read(data["bias"], minus_inf=True), values)


@pytest.mark.parametrize("spelling", ["-.Inf", "-.INF"])
def test_the_fast_path_reads_every_yaml_spelling(spelling):
    text, values = bias_text(spelling=spelling)
    data = parse_text(text, "doc.yaml")
    assert isinstance(data["bias"], fastmatrix.FastMatrix)
    assert np.array_equal(read(data["bias"], minus_inf=True), values)


def test_the_fast_path_names_a_minus_inf_as_the_careful_one():
    text, _ = bias_text()
    fast = error(parse_text(text, "doc.yaml")["bias"])
    careful = error(_parse_yaml_events(text, "doc.yaml")["bias"])  # the YAML parser alone
    assert fast == careful == "row 1, column 2: -inf is not a finite number (NaN and infinities are not allowed)"
    assert error(parse_text(text, "doc.yaml")["bias"], boolean=True) == error(
        _parse_yaml_events(text, "doc.yaml")["bias"], boolean=True)


@pytest.mark.parametrize("cell, message", [
    ("-1e999", "row 3, column 2: -1e999 is too large for float64"),
    ("1e999", "row 3, column 2: 1e999 is too large for float64"),
    (".inf", "row 3, column 2: inf is not allowed here"),
    ("+.inf", "row 3, column 2: inf is not allowed here"),
    (".nan", "row 3, column 2: nan is not allowed here"),
    ("-inf", None),  # text to YAML, but minus_inf reads it: the careful path does
])
def test_the_fast_path_leaves_other_cells_to_the_careful_path(cell, message):
    text, values = bias_text()
    text = text.replace(repr(float(values[2, 1])), cell, 1)
    data = parse_text(text, "doc.yaml")
    assert not isinstance(data["bias"], fastmatrix.FastMatrix)
    if message is None:
        values[2, 1] = NEG
        assert np.array_equal(read(data["bias"], minus_inf=True), values)
    else:
        assert message in error(data["bias"], minus_inf=True)


def test_the_fast_path_still_reads_plain_numbers_as_before():
    text, values = bias_text()
    text = text.replace("-.inf", "0")
    values[values == NEG] = 0
    data = parse_text(text, "doc.yaml")
    assert isinstance(data["bias"], fastmatrix.FastMatrix)
    assert np.array_equal(read(data["bias"]), values)


# ---------------------------------------------------------------- the builder passes it through


def test_the_builder_reads_with_minus_inf(tmp_path):
    np.save(tmp_path / "b.npy", np.array([[0, -np.inf]]))
    builder = _Builder({"inputs": [[1, 0]]}, tmp_path)
    assert np.array_equal(builder.read("score_bias.matrix", [[0, "-inf"]], minus_inf=True), [[0, NEG]])
    assert np.array_equal(builder.read("b", "b.npy", minus_inf=True), [[0, NEG]])
    assert (tmp_path / "b.npy").resolve() in builder.files
    with pytest.raises(AttnError, match=r"^score: row 1, column 2: the string '-inf' is not a number$"):
        builder.read("score", [[0, "-inf"]])
