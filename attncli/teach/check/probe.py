"""check's cheap tests of a candidate's output, before the output projection is computed in full.

Each is a *necessary* condition of :func:`attncli.teach.check.search.fits` on the given output: a candidate it
rejects cannot fit; one it lets through is computed in full and decided by ``fits`` alone.  So the search names
exactly what it would name without them (``tests/test_check_search_exhaustive.py`` compares the two).

- the sketch, for the right output step: k random columns of W_O (see :func:`gate`);
- the rows, for an output step done a wrong way (W_O left out, W_Oᵀ, the heads' order …): that step on one
  answered row of every per-query array (H, G, H ⊙ G …: :func:`one_row`).  Y's row i reads those arrays' row i
  alone, Y_i = concat(H₁ᵢ … H_hᵢ)·W_O + b_O, in the right step and in each of its variants (the test checks each
  declared one on its own rows): one row costs 1/n of the product.  A step that cannot run on one row, or gives
  another shape, is not rejected here.
"""

from __future__ import annotations

import numpy as np

from attncli.core.errors import AttnError
from attncli.core.stages import QUANTITIES
from attncli.teach.check.answer import Answer, Given, select

FAILED = (AttnError, ArithmeticError, ValueError, TypeError, IndexError, KeyError, AttributeError)  # cannot run
QUERY_AXIS = {key: q.row_axis for key, q in QUANTITIES.items() if q.rows == "query"}  # H, G, H ⊙ G …: a row per query


def gate(spec, givens: list[Given], answer: Answer, tol: float, rows: bool = False, k: int = 4):
    """``gate(stage, a, step)``, called before each stage with the changed step (None: the right one): False when
    the output cannot be the given one.  None when no output is given as a whole matrix or as the query's row.

    The sketch: |Y − Y′| ≤ t in every cell implies |(Y − Y′)·p| ≤ t·‖p‖₁ for any p, so k random columns p of P give
    k numbers per row, from concat(H)·(W_O·P), to compare first.  ``rows``: a changed output step is tried on one
    row first (else it is not gated)."""
    g = next((g for g in givens if g.key == "output"), None)
    if g is None or g.rows or not np.isfinite(g.values).all():
        return None
    index = select(np.arange(spec.n), "output", answer, spec) if answer.query is not None else slice(None)
    picked = np.arange(spec.n)[index]  # the answered rows: () or (n,)
    d_out = g.values.shape[-1] if g.values.ndim else 0
    if g.values.shape != picked.shape + (d_out,):
        return None  # (an answer of another shape)
    sketch = _sketch(spec, g, index, tol, k) if spec.w_o is not None and spec.w_g is None else None
    row = _row(g, picked, tol) if rows else None

    def test(stage: str, a: dict, step=None) -> bool:
        if stage != "output" or a.get("head_outputs") is None:
            return True
        if step is None:
            return sketch is None or sketch(a)
        return row is None or row(a, step, spec)
    return test


def _sketch(spec, g: Given, index, tol: float, k: int):
    if g.values.shape[-1] != spec.w_o.shape[1]:
        return None  # (an answer of another width)
    p = np.random.default_rng(0).standard_normal((spec.w_o.shape[1], k))  # (d_out, k)
    w_p, b_p = spec.w_o @ p, (0.0 if spec.b_o is None else spec.b_o @ p)  # (h·d_v, k), (k,)
    bound = g.slack(tol) * np.abs(p).sum(axis=0) * (1 + 1e-9) + 1e-9  # (k,)
    target = g.values @ p  # (n, k) or (k,)

    def within(a: dict) -> bool:
        h = a["head_outputs"]  # (h, n, d_v)
        if h.ndim != 3 or h.shape[0] * h.shape[2] != w_p.shape[0]:
            return True  # (heads of another width: the output stage itself says it cannot run)
        sketch = h.transpose(1, 0, 2).reshape(spec.n, -1)[index] @ w_p + b_p  # (n, k) or (k,)
        with np.errstate(invalid="ignore"):
            return bool(np.all(np.abs(sketch - target) <= bound))
    return within


def _row(g: Given, picked: np.ndarray, tol: float):
    """The changed output step on the last answered row (in a causal document, the row that sees every key)."""
    at = picked.size - 1 if picked.ndim else 0  # the row's place in the answer
    row = int(picked.reshape(-1)[at])  # its place in Y
    values = g.values.reshape(-1, g.values.shape[-1])[at:at + 1]  # (1, d_out)
    one = Given("output", values, _row_of(g.nullable, at, values.shape), False,
                None if g.nulls is None else _row_of(g.nulls, at, values.shape))
    slack = g.slack(tol)  # (the whole answer's decimals)

    def fits_row(a: dict, step, spec) -> bool:
        try:
            y = step(spec, one_row(a, row, spec)).get("output")  # (1, d_out)
        except FAILED:  # (what one row cannot do, the full step is left to say)
            return True
        if not isinstance(y, np.ndarray) or y.shape != values.shape:
            return True
        return cells_match(one, y, slack)
    return fits_row


def cells_match(g: Given, part: np.ndarray, tol: float) -> bool:
    """Every cell of ``part`` gives the learner's number within ``tol`` (inf, NaN as themselves; a null where a
    blank is an answer)."""
    nullable = g.nullable if g.nullable.shape == part.shape else np.zeros(part.shape, dtype=bool)
    values, null = g.values, g.null
    with np.errstate(invalid="ignore"):
        close = np.abs(values - part) <= tol + 8 * np.spacing(np.abs(np.where(np.isfinite(part), part, 0.0)))
        same_special = (values == part) | (np.isnan(values) & np.isnan(part) & ~null)
    return bool(np.all((null & nullable) | (~null & (close | same_special))))


def one_row(a: dict, i: int, spec) -> dict:
    """The arrays with every per-query one cut to query ``i``'s row (its axis kept, of length 1); the others whole."""
    part = dict(a)
    for key, axis in QUERY_AXIS.items():
        x = a.get(key)
        if isinstance(x, np.ndarray) and x.ndim > axis and x.shape[axis] == spec.n:
            part[key] = x[(slice(None),) * axis + (slice(i, i + 1),)]
    return part


def _row_of(x: np.ndarray, at: int, shape: tuple) -> np.ndarray:
    return x.reshape(-1, shape[-1])[at:at + 1] if x.size % max(shape[-1], 1) == 0 and x.ndim else np.zeros(shape, bool)
