"""attncli.core.exponential: numpy's exp unless the optional vectorised one (attncli[fast-exp], mkl_umath) is
installed, wanted and worth its import; that one within 1 ulp of numpy's everywhere, special values equal."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

from attncli.core import exponential
from attncli.core.stream import attend_streamed
from attncli.inputs.builder import build_spec
from attncli.inputs.document import Document

HAVE_MKL = importlib.util.find_spec("mkl_umath") is not None
needs_mkl = pytest.mark.skipif(not HAVE_MKL, reason="mkl_umath (attncli[fast-exp]) is not installed")


@pytest.fixture
def fresh(monkeypatch):
    """exponential's choice undone before and after the test (it is made once a process)."""
    monkeypatch.setattr(exponential, "_CHOSEN", [])
    monkeypatch.setattr(exponential, "_COUNTED", [0])
    monkeypatch.delenv("ATTNCLI_EXP", raising=False)
    return exponential


def test_numpy_when_the_package_cannot_be_imported(fresh, monkeypatch):
    monkeypatch.setitem(sys.modules, "mkl_umath", None)  # import mkl_umath raises ImportError
    monkeypatch.setattr(fresh, "_numpy_vectorises", lambda: False)
    assert fresh.exp_for(fresh.WORTH) is np.exp
    assert fresh.exp_for(fresh.WORTH) is np.exp  # decided once


def test_numpy_when_asked(fresh, monkeypatch):
    monkeypatch.setenv("ATTNCLI_EXP", "numpy")
    assert fresh.exp_for(10 * fresh.WORTH) is np.exp


def test_numpy_until_the_import_pays(fresh, monkeypatch):
    monkeypatch.delitem(sys.modules, "mkl_umath", raising=False)
    asked = []
    monkeypatch.setattr(fresh, "_vectorised", lambda: asked.append(1) or None)
    assert fresh.exp_for(fresh.WORTH // 2) is np.exp
    assert not asked  # too few exponentials so far: not even looked for
    assert fresh.exp_for(fresh.WORTH // 2) is np.exp
    assert asked == [1]  # the process's total reached WORTH: decided (here: nothing found)


def test_numpy_where_numpy_vectorises(fresh, monkeypatch):
    monkeypatch.setattr(fresh, "_numpy_vectorises", lambda: True)
    assert fresh.exp_for(fresh.WORTH) is np.exp


@needs_mkl
def test_vectorised_exp_within_one_ulp_of_numpy(fresh, monkeypatch):
    monkeypatch.setattr(fresh, "_numpy_vectorises", lambda: False)
    exp = fresh.exp_for(fresh.WORTH)
    assert exp is not np.exp
    special = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 709.78, 709.79, 710.0, 1000.0, -708.39,
                        -708.4, -720.0, -744.4, -745.13, -745.14, -746.0, -800.0, 1e-300, -1e-300, 5e-324, -5e-324,
                        1e-16, -1e-16, 2.0**-30, -(2.0**-60), np.log(2.0), -np.log(2.0), 60.0, -60.0])
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(exp(special), np.exp(special))  # NaN where NaN, inf, 0, subnormals alike
    rng = np.random.default_rng(0)
    for lo, hi in [(-745.2, 709.7), (-60.0, 60.0), (-1.0, 1.0), (-40.0, 0.0), (-1e-5, 1e-5), (-745.2, -708.0)]:
        x = rng.uniform(lo, hi, 1_000_000)
        with np.errstate(under="ignore"):
            ours, numpy = exp(x), np.exp(x)
        ulp = np.spacing(np.maximum(ours, numpy))
        assert np.all(np.abs(ours - numpy) <= ulp), (lo, hi)
    out = np.empty((300, 151))
    strided = rng.uniform(-10.0, 0.0, (300, 301))[:, ::2]
    assert exp(strided, out=out) is out
    assert np.all(np.abs(out - np.exp(strided)) <= np.spacing(np.exp(strided)))


@needs_mkl
@pytest.mark.parametrize("n, d, heads", [(512, 256, 4), (512, 768, 12)])
def test_streamed_output_with_the_vectorised_exp(fresh, monkeypatch, n, d, heads):
    # BERT-base's shape (tiles of 512 × 512): mkl_umath's exp in place took some values' exp twice there
    rng = np.random.default_rng(3)
    x = rng.normal(size=(n, d))
    w = {c: rng.normal(0.0, d**-0.5, (d, d)) for c in "qkv"}
    document = {"inputs": x, "heads": heads, "weights": {"query": w["q"], "key": w["k"], "value": w["v"]}}
    spec = build_spec(Document(document, "doc", Path(".")))
    monkeypatch.setenv("ATTNCLI_EXP", "numpy")
    with_numpy = attend_streamed(spec).output
    monkeypatch.setattr(fresh, "_CHOSEN", [])
    monkeypatch.delenv("ATTNCLI_EXP")
    monkeypatch.setattr(fresh, "_numpy_vectorises", lambda: False)
    assert fresh.exp_for(fresh.WORTH) is not np.exp
    with_mkl = attend_streamed(spec).output
    q, k, v = (x @ w[c] for c in "qkv")  # a naive softmax in numpy as the reference for both
    d_k = d // heads
    parts = []
    for h in range(heads):
        cols = slice(h * d_k, (h + 1) * d_k)
        z = q[:, cols] @ k[:, cols].T / np.sqrt(d_k)
        a = np.exp(z - z.max(axis=1, keepdims=True))
        parts.append((a / a.sum(axis=1, keepdims=True)) @ v[:, cols])
    want = np.concatenate(parts, axis=1)
    scale = np.abs(want).max()
    assert np.abs(with_numpy - want).max() <= 1e-13 * scale
    assert np.abs(with_mkl - want).max() <= 1e-13 * scale
    assert np.abs(with_mkl - with_numpy).max() <= 1e-14 * scale
