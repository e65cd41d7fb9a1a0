"""The eager computation and the verdict at their doors: a value beyond fp16's range is named as fp16's overflow
(exit 2, one line), as bf16 is beyond its own; a kernel's result that is not real numbers is refused, never cast
(a verdict never passes what it did not read)."""

from __future__ import annotations

import json

import numpy as np
import pytest

import attncli
from attncli.cli import app

X = [[1, 0, 1, 0], [0, 2, 0, 2], [1, 1, 1, 1]]
W = {"query": [[1, 0, 1], [1, 0, 0], [0, 0, 1], [0, 1, 1]], "key": [[0, 0, 1], [1, 1, 0], [0, 1, 0], [1, 1, 0]],
     "value": [[0, 2, 0], [0, 3, 0], [1, 0, 3], [1, 1, 0]]}


def _doc(tmp_path, gradient: float) -> str:
    path = tmp_path / "doc.json"
    path.write_text(json.dumps({"inputs": X, "weights": W, "gradient": [[gradient] * 3] * 3}))
    return str(path)


def _one_line_error(result, *parts: str) -> str:
    assert result.exit_code == 2, result.output
    assert result.stdout == "" and result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    for part in parts:
        assert part in result.stderr, result.stderr
    return result.stderr


@pytest.mark.parametrize("form", [[], ["--format", "json"], ["--only", "dV"]])
def test_a_gradient_beyond_fp16s_range_is_named_as_fp16s_overflow(runner, tmp_path, form):
    doc = _doc(tmp_path, 1e6)  # the case: an internal error (exit 70) in JSON, inf and NaN in tables
    out = tmp_path / "out.json"
    _one_line_error(runner.invoke(app, ["compute", doc, "--emulate", "fp16", *form]),
                    "Error: --emulate: grad_head_outputs (the gradient dO) overflows fp16's range (±65504) at head 1,"
                    " row 1, column 1 (1e+06)")
    assert not out.exists()


def test_the_same_gradient_in_bf16_is_computed_and_rounded_to_bf16(runner, tmp_path):
    """bf16 has float32's range: 1e6 is held (as 999424, the nearest bf16), and the result is bf16 numbers."""
    result = runner.invoke(app, ["compute", _doc(tmp_path, 1e6), "--emulate", "bf16", "--format", "json"])
    assert result.exit_code == 0, result.output
    d_v = np.array(json.loads(result.stdout)["grad_values"])
    weights = attncli.compute(_doc(tmp_path, 1e6)).weights[0]
    expected = weights.sum(axis=0)[:, None] * 999424.0 * np.ones((1, 3))  # dV_j = Σ_i A_ij dO_i, dO rounded
    assert np.allclose(d_v[0], expected, rtol=2 ** -7)  # within bf16's rounding of A and of the product
    assert np.all((d_v.astype(np.float32).view(np.uint32) & 0xFFFF) == 0)


def test_an_overflow_made_inside_the_computation_is_named_where_it_happens(runner, tmp_path):
    """dO of 60000 is an fp16 number, but dV = Aᵀ·dO sums three of them: beyond 65504 for the keys most attended."""
    doc = _doc(tmp_path, 60000.0)
    weights = attncli.compute(doc).weights[0]
    column = int(np.argmax(weights.sum(axis=0) * 60000 > 65504))  # the first key whose dV overflows (row-major)
    _one_line_error(runner.invoke(app, ["compute", doc, "--emulate", "fp16"]),
                    f"grad_values overflows fp16's range (±65504) at head 1, row {column + 1}, column 1")
    assert runner.invoke(app, ["compute", doc, "--emulate", "fp16", "--only", "A"]).exit_code == 2  # (one pass)


def test_check_against_in_fp16_names_the_overflow_at_dtype(runner, tmp_path):
    doc = _doc(tmp_path, 1e6)
    trace = attncli.compute(doc)
    np.savez(tmp_path / "k.npz", head_outputs=trace.head_outputs, grad_values=trace.gradients["grad_values"])
    _one_line_error(runner.invoke(app, ["check", doc, "--against", str(tmp_path / "k.npz"), "--dtype", "fp16"]),
                    "Error: --dtype: grad_head_outputs (the gradient dO) overflows fp16's range")


@pytest.mark.parametrize("kind", [".npz", ".npy"])
@pytest.mark.parametrize("bad, said", [(1e9j, "holds complex numbers (complex128)"),
                                       ("bool", "holds True/False values (bool)"), ("text", "holds text")])
def test_a_result_that_is_not_real_numbers_is_refused_not_cast(runner, tmp_path, kind, bad, said):
    """head_outputs + 1e9j was judged within budget: numpy's cast had dropped the imaginary part."""
    doc = _doc(tmp_path, 1.0)
    heads = attncli.compute(doc).head_outputs
    array = {"bool": heads > 0, "text": heads.astype(str)}[bad] if isinstance(bad, str) else heads + bad
    path = tmp_path / f"head_outputs{kind}"
    np.savez(path, head_outputs=array) if kind == ".npz" else np.save(path, array)
    stderr = _one_line_error(runner.invoke(app, ["check", doc, "--against", str(path), "--dtype", "bf16"]), said)
    assert f"head_outputs{kind}: head_outputs: " in stderr


def test_a_real_result_with_nan_is_still_judged_not_refused(runner, tmp_path):
    doc = _doc(tmp_path, 1.0)
    heads = attncli.compute(doc).head_outputs.copy()
    heads[0, 1, 2] = np.nan  # a kernel's bug: judged outside the budget (exit 1), never waved through
    np.savez(tmp_path / "k.npz", head_outputs=heads)
    result = runner.invoke(app, ["check", doc, "--against", str(tmp_path / "k.npz"), "--dtype", "bf16"])
    assert result.exit_code == 1, result.output
