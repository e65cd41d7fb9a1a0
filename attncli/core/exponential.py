"""exp of the score tiles: numpy's, or MKL's vectorised one where it is installed and faster (``attncli[fast-exp]``).

On a CPU without AVX-512 numpy computes float64 exp one value at a time (about 5 ns a value on the 2-core EPYC of
docs/speed.md); mkl_umath's exp (Intel's VM library) takes about 2 ns and gives numpy's result or one next to it
(1 ulp at most, measured over 24 million values and the special ones: ±0, ±inf, NaN, overflow, subnormal
results).  Importing it costs about 0.1 s, so it is taken only once a process has enough exponentials to win that
back (:data:`WORTH`, counted over the process's calls), or when something already imported it.  Used only:

- where ``mkl_umath`` can be imported (the optional extra ``fast-exp``; numpy is the fallback everywhere);
- on a CPU without AVX-512F, where numpy's own float64 exp is not vectorised;
- unless ``ATTNCLI_EXP=numpy`` is set.

mkl_umath's loops run on Intel's OpenMP, which would start threads of its own beside attncli's
(:mod:`attncli.core.threads`): it is imported with ``OMP_NUM_THREADS=1``, read when that runtime starts.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

import numpy as np

WORTH = 1 << 25  # exponentials in a process that pay for the import (~0.1 s at ~3 ns a value saved)

_CHOSEN: list[Callable | None] = []  # [mkl_umath.exp or None] once decided
_COUNTED = [0]  # exponentials asked for so far in this process while numpy's exp was used


def exp_for(values: int) -> Callable:
    """The exp for a computation about to take ``values`` exponentials: ``f(z, out=z)`` like np.exp."""
    if _CHOSEN:
        return _CHOSEN[0] or np.exp
    _COUNTED[0] += values
    if _COUNTED[0] < WORTH and "mkl_umath" not in sys.modules:
        return np.exp
    _CHOSEN.append(_vectorised())
    return _CHOSEN[0] or np.exp


def _vectorised() -> Callable | None:
    """mkl_umath.exp where it is wanted, installed and faster than numpy's; else None."""
    if os.environ.get("ATTNCLI_EXP", "").strip().lower() == "numpy" or _numpy_vectorises():
        return None
    before = os.environ.get("OMP_NUM_THREADS")
    os.environ["OMP_NUM_THREADS"] = "1"  # Intel's OpenMP reads it as it starts: no threads beside ours
    try:
        import mkl_umath

        mkl_umath.exp(np.zeros(1 << 12))  # starts the runtime while the variable is set
        return mkl_umath.exp
    except Exception:  # not installed, or a build that does not load here: numpy's exp
        return None
    finally:
        if before is None:
            del os.environ["OMP_NUM_THREADS"]
        else:
            os.environ["OMP_NUM_THREADS"] = before


def _numpy_vectorises() -> bool:
    """Whether numpy's own float64 exp runs on SIMD here (AVX-512F, numpy's dispatch target for it)."""
    try:
        from numpy._core._multiarray_umath import __cpu_features__ as features
    except ImportError:  # numpy 1.x
        from numpy.core._multiarray_umath import __cpu_features__ as features
    return bool(features.get("AVX512F"))
