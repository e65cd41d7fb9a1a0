"""Fuzz: arbitrary documents and matrix files never get a traceback, only a result or one clean error.

The invariant for every run of ``attncli compute FILE --format json``: exit 0 with strict JSON
on standard output, or exit 2 with exactly one ``Error: …`` line on standard error and
nothing on standard output.  Never exit 70 (an internal error), never a traceback.
"""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from attncli.cli import app

pytestmark = pytest.mark.slow  # fuzz, property and subprocess suites: `pytest -m 'not slow'` skips them

FUZZ = settings(max_examples=300, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


def _no_constant(name: str):
    raise AssertionError(f"non-strict JSON constant {name}")


def assert_clean(result) -> None:
    assert "Traceback" not in result.stderr and "Internal error" not in result.stderr, result.stderr
    assert result.exit_code in (0, 2), (result.exit_code, result.stderr)
    if result.exit_code == 0:
        json.loads(result.stdout, parse_constant=_no_constant)
    else:
        assert result.stdout == ""
        lines = result.stderr.strip("\n").split("\n")
        errors = [line for line in lines if line.startswith("Error: ")]
        assert len(errors) == 1 and lines[-1] == errors[0], result.stderr


def compute(runner, path):
    return runner.invoke(app, ["compute", str(path), "--format", "json"])


# ---------------------------------------------------------------- whole documents

@FUZZ
@given(st.text(max_size=300))
@example("inputs: [[1, 2]]\n")
@example("inputs: &a [[1]]\ncontext: *a\n")
@example("[" * 200)
@example("inputs: !!python/object/apply:os.system ['true']\n")
def test_any_text_as_a_document(runner, tmp_path, text):
    path = tmp_path / "doc.yaml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass") if _encodable(text) else path.write_bytes(b"\xff")
    assert_clean(compute(runner, path))


@FUZZ
@given(st.binary(max_size=300))
def test_any_bytes_as_a_document(runner, tmp_path, raw):
    path = tmp_path / "doc.json"
    path.write_bytes(raw)
    assert_clean(compute(runner, path))


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


# ---------------------------------------------------------------- documents from the grammar

KEYS = ["tokens", "inputs", "context", "context_tokens", "heads", "weights", "bias", "scale", "mask",
        "positional", "score", "normalize", "add_norm", "wieghts"]
scalars = st.one_of(
    st.integers(-3, 5), st.floats(allow_nan=True, allow_infinity=True), st.booleans(), st.none(),
    st.sampled_from(["causal", "none", "sqrt", "sinusoidal", "additive", "sum", "x.csv", "1e999", "yes", ""]),
)
NESTED_KEYS = KEYS + ["query", "key", "value", "output", "random", "seed", "shape", "gamma"]
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                       st.dictionaries(st.sampled_from(NESTED_KEYS), inner,
                                                                       max_size=3)),
                      max_leaves=20)
matrices = st.integers(1, 4).flatmap(lambda cols: st.lists(st.lists(st.integers(-3, 3), min_size=cols, max_size=cols),
                                                           min_size=1, max_size=4))


@FUZZ
@given(st.fixed_dictionaries({"inputs": matrices}, optional={k: values for k in KEYS if k != "inputs"}))
def test_documents_from_the_grammar(runner, tmp_path, doc):
    (tmp_path / "x.csv").write_text("1,0\n0,1\n")
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(doc, allow_nan=True))
    assert_clean(compute(runner, path))


@FUZZ
@given(st.fixed_dictionaries({"inputs": matrices, "weights": st.fixed_dictionaries({}, optional={
    "query": matrices, "key": matrices, "value": matrices, "output": matrices})},
    optional={"heads": st.integers(0, 4), "context": matrices, "mask": matrices, "scale": st.floats(-1e308, 1e308),
              "bias": st.dictionaries(st.sampled_from(["query", "key", "value", "output"]),
                                      st.lists(st.integers(-2, 2), max_size=4))}))
def test_shapes_that_rarely_fit(runner, tmp_path, doc):
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(doc))
    assert_clean(compute(runner, path))


# ---------------------------------------------------------------- matrix files

@FUZZ
@given(st.sampled_from(["csv", "tsv", "txt", "npy"]), st.binary(max_size=400))
def test_any_bytes_as_a_matrix_file(runner, tmp_path, suffix, raw):
    (tmp_path / f"x.{suffix}").write_bytes(raw)
    path = tmp_path / "doc.yaml"
    path.write_text(f"inputs: x.{suffix}\nmask: x.{suffix}\n")
    assert_clean(compute(runner, path))


def npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


VALID_NPY = npy(np.arange(12, dtype=np.float64).reshape(3, 4))


@FUZZ
@given(st.lists(st.tuples(st.integers(0, len(VALID_NPY) - 1), st.integers(0, 255)), max_size=6),
       st.integers(0, len(VALID_NPY)))
@example(flips=[(68, 0)], keep=128)  # found by this test: numpy's tokenizer raised TokenError on the header
def test_a_damaged_npy_file(runner, tmp_path, flips, keep):
    raw = bytearray(VALID_NPY)
    for at, byte in flips:
        raw[at] = byte
    (tmp_path / "x.npy").write_bytes(bytes(raw[:keep] if keep < len(raw) else raw))
    path = tmp_path / "doc.yaml"
    path.write_text("inputs: x.npy\n")
    assert_clean(compute(runner, path))


@pytest.mark.parametrize("dtype", ["<f4", "<i8", "|b1", "<c16", "<U3", ">f8", "<f2", "|u1"])
def test_npy_of_every_common_dtype(runner, tmp_path, dtype):
    (tmp_path / "x.npy").write_bytes(npy(np.ones((2, 2), dtype=dtype)))
    path = tmp_path / "doc.yaml"
    path.write_text("inputs: x.npy\n")
    result = compute(runner, path)
    assert_clean(result)
    if dtype in ("<c16", "<U3"):
        assert result.exit_code == 2 and "x.npy" in result.stderr


# ---------------------------------------------------------------- a large inline matrix with one bad cell

CELLS = ["yes", ".nan", "1e999", "null", "~", "1.2.3", "--1", "0x10", "'1'", "[1]", "{a: 1}", "# c", "1_0", ""]


@settings(max_examples=30, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(0, 199), st.integers(0, 29), st.sampled_from(CELLS))
def test_a_large_inline_matrix_with_one_odd_cell(runner, tmp_path, row, col, cell):
    rows = [[f"{(r * 31 + c) % 17 / 7:.6f}" for c in range(30)] for r in range(200)]
    rows[row][col] = cell
    text = "inputs: [" + ",\n  ".join("[" + ", ".join(r) + "]" for r in rows) + "]\nscale: none\n"
    path = tmp_path / "doc.yaml"
    path.write_text(text)
    result = compute(runner, path)
    assert_clean(result)
    if cell in ("yes", ".nan", "1e999", "null", "~", "1.2.3", "--1", "'1'", "1_0"):
        assert result.exit_code == 2 and f"row {row + 1}, column {col + 1}" in result.stderr
