"""``attncli.merge`` (split-KV partials into the whole) and ``attncli.assert_close`` (the low-precision verdict).

The verdict is ``attncli check --against --dtype``'s, on the same functions: the truth is the float64 reference,
the eager computation is :func:`attncli.core.emulate.eager` (FlashAttention-2's reference in that dtype) on each
sequence, and :func:`attncli.core.verdict.finding` gives the budget, 2 × the eager error + 2 units in the last
place of the dtype at the quantity's magnitude.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from attncli.core.emulate import eager
from attncli.core.reference import Sequence, additive, allowed_block
from attncli.core.verdict import Finding, finding
from attncli.kernel_arrays import ArgumentError, floats, is_tensor, returned, shape_text
from attncli.kernels import Reference

DTYPES = {"bfloat16": "bf16", "bf16": "bf16", "float16": "fp16", "fp16": "fp16", "half": "fp16",
          "float32": "fp32", "fp32": "fp32", "float": "fp32"}
EAGER_KEYS = {"out": "head_outputs", "lse": "lse", "dq": "grad_kernel_queries", "dk": "grad_kernel_keys",
              "dv": "grad_values"}


def merge(outs, lses, *, layout: str | None = None):
    """(out, lse) of the whole from split-KV partials, each (out_i, lse_i) the reference on one split of the keys.

    lse = ln Σ_i e^{lse_i}, out = Σ_i e^{lse_i − lse}·out_i (FlashAttention's combine); an empty split is
    (0, −inf), and a query no split gives a key gets (0, −inf).  lse is the natural log, (…, h, s) beside out
    (…, s, h, d) as in "bshd" and "thd", or (b, h, s) beside (b, h, s, d) as in "bhsd": the shapes tell which,
    and where they fit both (as many heads as rows) ``layout`` does ("bshd" when not given).
    """
    torch_out = any(is_tensor(x) for x in (*outs, *lses))
    for name, given in (("outs", outs), ("lses", lses)):
        if not isinstance(given, (list, tuple)):
            raise TypeError(f"{name} must be a list of arrays or tensors (one per split), not {type(given).__name__}")
    outs = [floats(f"outs[{i}]", o, (3, 4)) for i, o in enumerate(outs)]  # (…, s, h, d) or (b, h, s, d)
    lses = [floats(f"lses[{i}]", x, (2, 3), finite=False) for i, x in enumerate(lses)]
    if not outs or len(outs) != len(lses):
        raise ArgumentError("kernel_verdict.merge_takes_many_lses_outs", count=len(outs), count_2=len(lses))
    o0, x0 = outs[0], lses[0]
    swapped = (*o0.shape[:-3], o0.shape[-2], o0.shape[-3]) if o0.ndim >= 3 else None  # "bshd", "thd"
    if layout is None:  # what the shapes say; "bshd" where they fit both (as many heads as rows)
        layout = "bhsd" if x0.shape == o0.shape[:-1] and x0.shape != swapped else "bshd"
    heads_last = layout != "bhsd"
    for i, (o, x) in enumerate(zip(outs, lses)):
        expected = swapped if heads_last and o.ndim >= 3 else o0.shape[:-1]
        if x.shape != expected or o.shape != o0.shape:
            raise ArgumentError("kernel_verdict.outs_lses_each_lse_must", i=i, o_shape=shape_text(o.shape), i_2=i,
                                x_shape=shape_text(x.shape), expected_shape=shape_text(expected),
                                outs_shape=shape_text(outs[0].shape))
    lse = np.stack(lses)  # (splits, …, h, s)
    top = lse.max(axis=0)
    top = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        total = np.log(np.exp(lse - top).sum(axis=0)) + top  # ln Σ e^{lse_i}, −inf where every split is empty
    share = np.exp(lse - np.where(np.isfinite(total), total, 0.0))  # (splits, …, h, s)
    share = np.where(np.isneginf(lse), 0.0, share)
    if heads_last:
        share = np.swapaxes(share, -1, -2)  # (splits, …, s, h)
    out = np.einsum("i...,i...d->...d", share, np.stack(outs))
    return returned(out, torch_out), returned(total, torch_out)


def dtype_name(dtype: Any) -> str:
    name = str(dtype).removeprefix("torch.").removeprefix("numpy.")
    if name not in DTYPES:
        raise ArgumentError("kernel_verdict.dtype_but_must_one_bfloat16", dtype=dtype)
    return DTYPES[name]


def assert_close(r, *, dtype: Any = "bfloat16", out=None, lse=None, dq=None, dk=None, dv=None) -> dict[str, Finding]:
    """Each given result of a kernel within the verdict's budget of ``r`` (what :func:`attncli.reference` returned),
    or an ``AssertionError`` naming the quantity, its worst cell (batch, head, row, column), both values and the
    budget.  Results are numpy arrays or torch tensors in the layout ``r`` was called with (lse in its base).
    Returns each quantity's :class:`~attncli.core.verdict.Finding`.
    """
    if not isinstance(r, Reference):
        raise TypeError(f"r must be what attncli.reference returned, not {type(r).__name__}")
    short = dtype_name(dtype)
    given = {key: x for key, x in (("out", out), ("lse", lse), ("dq", dq), ("dk", dk), ("dv", dv)) if x is not None}
    if not given:  # a verdict never passes what it did not read
        raise ArgumentError("kernel_verdict.assert_close_was_given_no_result")
    problem = r.problem
    base = 1.0 if r.lse_base == "e" else math.log(2.0)
    found: dict[str, Finding] = {}
    eager_of = _eager(problem, short, any(key.startswith("d") for key in given)) if given else {}
    for key, x in given.items():
        truth = problem.truth[key]
        if truth is None:
            raise ArgumentError("kernel_verdict.this_reference_has_no_computed", key=key, key_2=key)
        got = floats(key, x, finite=None)
        if got.shape != truth.shape:
            raise ArgumentError("kernel_verdict.but_reference_s_layout", key=key, got_shape=shape_text(got.shape),
                                truth_shape=shape_text(truth.shape), layout=r.layout)
        divisor = base if key == "lse" else 1.0  # lse in r's base
        f = finding(key, truth / divisor, got, eager_of[key] / divisor, short)
        found[key] = f
        if not f.within:
            raise AssertionError(_message(f, problem, short))
    return found


def _message(f: Finding, problem, dtype: str) -> str:
    where = problem.keyed if f.key in ("dk", "dv") else problem.layout
    b, h, row, column = where.cell(f.worst, f.key)
    cell = f"batch {b}, head {h}, {'key' if f.key in ('dk', 'dv') else 'row'} {row}"
    cell += "" if column is None else f", column {column}"
    return (f"{f.key} is outside the {dtype} budget at {cell} (counting from 0): reference {f.truth!r}, got "
            f"{f.got!r}; error {f.largest:.3g} > budget {f.budget:.3g} (2 × the eager {dtype} error {f.eager:.3g} "
            f"+ 2 units in the last place)")


class _EagerSpec:
    """What :func:`attncli.core.emulate.eager` reads of a Spec, for one sequence of a reference call."""

    score, normalize, query_positions, key_positions = "dot", "softmax", None, None

    def __init__(self, rules, bias: np.ndarray | None, allowed: np.ndarray | None) -> None:
        self.scale, self.softcap, self.sinks, self.allowed = rules.scale, rules.softcap, rules.sinks, allowed
        self.score_bias = None if bias is None else _Bias(bias)


class _Bias:
    def __init__(self, full: np.ndarray) -> None:
        self._full = full

    def full(self, heads: int, p_q, p_k) -> np.ndarray:
        return self._full


def _eager(problem, dtype: str, grads: bool) -> dict[str, np.ndarray]:
    """The eager computation in ``dtype`` of every sequence, in the reference's layout (out, lse, dq, dk, dv)."""
    made = {key: None if a is None else np.zeros_like(a) for key, a in problem.truth.items()}
    for s in problem.sequences:
        _eager_sequence(problem, s, dtype, grads, made)
    return made


def _eager_sequence(problem, s: Sequence, dtype: str, grads: bool, made: dict[str, np.ndarray]) -> None:
    rules, mods = problem.rules, problem.mods
    n, h = s.q.shape[:2]
    m = s.k.shape[0]
    if n == 0 or m == 0:  # no score at all: out 0 (already), lse −inf or the sink's, as the truth
        problem.layout.lse(made["lse"], s.index)[...] = problem.layout.lse(problem.truth["lse"], s.index)
        return
    every = slice(0, h)
    bias = additive(rules, s, every, 0, n, 0, m)
    allowed = allowed_block(rules, s, every, 0, n, 0, m, mods)
    if allowed is not None:
        allowed = np.broadcast_to(allowed, (h, n, m))
    if bias is not None:
        bias = np.broadcast_to(bias, (h, n, m))
    modify = None
    if rules.score_mod is not None:
        def modify(z32: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            z = z32.astype(np.float64)
            slope = mods.scores_back(z, np.ones_like(z), s.index, every, 0, n, 0, m)
            return mods.scores(z, s.index, every, 0, n, 0, m).astype(np.float32), slope.astype(np.float32)
    keep = None if s.keep is None else (np.broadcast_to(s.keep, (h, n, m)), rules.p)
    spec = _EagerSpec(rules, bias, allowed)
    tr = (lambda a: a.transpose(1, 0, 2))  # noqa: E731  (rows, heads, dim) <-> (heads, rows, dim)
    d_o = None if not grads or s.d_o is None else tr(s.d_o)
    e = eager(spec, tr(s.q), tr(s.k), tr(s.v), d_o, dtype, modify=modify, keep=keep)
    i = s.index
    problem.layout.rows(made["out"], i)[...] = tr(e["head_outputs"])
    problem.layout.lse(made["lse"], i)[...] = e["lse"]
    if d_o is not None:
        problem.layout.rows(made["dq"], i)[...] = tr(e["grad_kernel_queries"])
        if made["dk"] is not None:
            problem.keyed.rows(made["dk"], i)[:m] = tr(e["grad_kernel_keys"])
            problem.keyed.rows(made["dv"], i)[:m] = tr(e["grad_values"])
