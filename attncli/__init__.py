"""attncli: see every number of self-attention, in a terminal, as JSON, or from Python.

The command line (``attncli compute FILE``) and this small API share one path:
a document is read (:mod:`attncli.inputs`), checked into a :class:`Spec`, and
computed once into a :class:`Trace` (:mod:`attncli.core`) whose arrays carry the
names of the JSON keys.  For an engineer's own tests::

    >>> import attncli
    >>> trace = attncli.compute("examples/illustrated.yaml")          # doctest: +SKIP
    >>> trace = attncli.compute({"inputs": [[1, 0], [0, 1]], "scale": "none"})
    >>> trace.weights.shape, round(float(trace.weights[0, 0, 0]), 4)
    ((1, 2, 2), 0.7311)
    >>> out, weights = attncli.attention(trace.queries, trace.keys, trace.values, scale=1.0)
    >>> bool((out == trace.head_outputs).all())
    True

Importing ``attncli`` loads numpy only when it is used; no YAML, Rich or Typer.
"""

from __future__ import annotations

from collections.abc import Mapping
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any

# the one place the version is written (pyproject.toml reads it; CHANGELOG.md says what it brought)
__version__ = "0.2.0"
__all__ = ["AttnError", "Reference", "Spec", "Trace", "assert_close", "attention", "compute", "load", "merge",
           "reference", "show", "to_dict", "__version__"]
_KERNELS = {"reference": "attncli.kernels", "Reference": "attncli.kernels", "merge": "attncli.kernel_verdict",
            "assert_close": "attncli.kernel_verdict"}  # a kernel's float64 truth (docs/kernels.md), imported when used

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from attncli.core.errors import AttnError
    from attncli.core.spec import Spec
    from attncli.core.trace import Trace


def load(document: str | PathLike | dict[str, Any], **overrides: Any) -> Spec:
    """A document checked into a :class:`Spec`: a path (YAML or JSON, ``"-"`` for standard input) or a mapping.

    A mapping holds what a document holds; its matrices may also be numpy arrays, and
    relative file names are taken from the working directory.  ``overrides`` replace
    top-level keys as the command line's options do (``scale="none"``, ``mask="causal"``).
    Raises :class:`AttnError` with the message the command line would print.
    """
    from attncli.inputs.builder import build_spec
    from attncli.inputs.document import Document, read_document

    if isinstance(document, Mapping):
        doc = Document(_plain(document), "<dict>", Path.cwd())
    elif isinstance(document, (str, PathLike)):
        doc = read_document(str(document))
    else:
        raise TypeError(f"expected a path or a mapping, not {type(document).__name__}")
    return build_spec(doc, overrides or None)


def _plain(mapping: Mapping) -> dict[str, Any]:
    """The mapping with numpy scalars (``np.True_``, ``np.int64(4)``, the entries of ``list(array)``) as the Python
    values a document would hold, in nested mappings and lists too, and an array inside a list as its nested list;
    an array given as a whole value is left as it is (it is read as a .npy file's data is)."""
    import numpy as np

    def plain(value: Any, listed: bool = False) -> Any:
        if isinstance(value, np.generic):
            return value.item()
        if isinstance(value, Mapping):
            return _plain(value)
        if isinstance(value, list):  # a row of Python values is kept as it is: a large matrix is not walked twice
            return value if set(map(type, value)) <= {float, int, bool, str} else [plain(e, True) for e in value]
        return value.tolist() if listed and isinstance(value, np.ndarray) else value

    return {key: plain(value) for key, value in mapping.items()}


def compute(document: str | PathLike | dict[str, Any] | Spec, **overrides: Any) -> Trace:
    """Every intermediate of a document's attention: ``trace.queries``, ``trace.weights``, ``trace.output`` …

    ``document`` is what :func:`load` takes, or a :class:`Spec` it made.  The arrays are
    float64 numpy arrays with the shapes of the JSON contract (per-head arrays head-first).  In a notebook the
    result shows as the explorable page of ``attncli page`` (:mod:`attncli.notebook`); :func:`show` opens it.
    """
    from attncli.core.pipeline import attend
    from attncli.core.spec import Spec
    from attncli.notebook import result

    if isinstance(document, Spec):
        if overrides:
            raise TypeError("compute(spec) takes no overrides: pass them to attncli.load(document, ...)")
        return result(attend(document))
    return result(attend(load(document, **overrides)))


def show(trace: Trace, title: str = "attncli", lang: str = "en") -> Path:
    """Open the explorable page of ``trace`` (what :func:`compute` returned) in the default browser, from a
    script, in ``lang`` (en or zh); returns the temporary .html file it wrote.  In a notebook, the result itself
    shows the page."""
    from attncli.notebook import show as _show

    return _show(trace, title, lang)


def attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, *, scale: float | None = None,
              allowed: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """softmax(scale·Q·Kᵀ)·V on arrays: (output (…, n, d_v), weights (…, n, m)).

    ``scale`` defaults to 1/√d_k; ``allowed`` (n, m), True = may attend.  A query with no
    allowed key gets zero weights and a zero output, as PyTorch's scaled_dot_product_attention.
    K and V may have fewer heads than Q (grouped-query attention, as ``enable_gqa=True``): query head i
    reads key/value head i // (h / g).  Shapes that do not fit raise :class:`AttnError` naming them.
    """
    import numpy as np

    from attncli.core.attention import attention as _attention

    q, k, v = (np.asarray(a, dtype=float) for a in (q, k, v))
    _check_shapes(q, k, v, allowed)
    return _attention(q, k, v, scale=scale, allowed=None if allowed is None else np.asarray(allowed, dtype=bool))


def _check_shapes(q: np.ndarray, k: np.ndarray, v: np.ndarray, allowed: Any) -> None:
    """q (…, h, n, d_k), k (…, g, m, d_k), v (…, g, m, d_v): what attention() can take, or an AttnError saying why."""
    import numpy as np

    from attncli.core.errors import AttnError

    def shape(a: np.ndarray) -> str:
        return " × ".join(map(str, a.shape)) or "a number"

    if min(q.ndim, k.ndim, v.ndim) < 2:
        raise AttnError(f"q, k and v need at least 2 axes (rows × width); got {shape(q)}, {shape(k)}, {shape(v)}")
    if q.shape[-1] != k.shape[-1]:
        raise AttnError(f"q is {shape(q)} but k is {shape(k)}: queries and keys need the same width d_k")
    if k.shape[:-1] != v.shape[:-1]:
        raise AttnError(f"k is {shape(k)} but v is {shape(v)}: keys and values need the same leading axes and rows")
    if q.ndim >= 3 and k.ndim >= 3 and k.shape[-3] != q.shape[-3]:
        if k.shape[-3] == 0 or q.shape[-3] % k.shape[-3]:
            raise AttnError(f"q has {q.shape[-3]} heads but k and v have {k.shape[-3]}: grouped-query attention needs "
                            "the key/value heads to divide the query heads")
    if allowed is not None and np.shape(allowed) != (q.shape[-2], k.shape[-2]):
        raise AttnError(f"allowed is {' × '.join(map(str, np.shape(allowed)))} but q and k give "
                        f"{q.shape[-2]} queries × {k.shape[-2]} keys")


def to_dict(trace: Trace, only: list[str] | None = None) -> dict[str, Any]:
    """The JSON object of ``attncli compute --format json`` as Python values (numpy arrays, keys in order).

    A masked scaled score is NaN here (``null`` in JSON).
    """
    from attncli.outputs.serialize import check_only
    from attncli.outputs.serialize import to_dict as _to_dict

    return _to_dict(trace, check_only(only), native=True)


def __dir__() -> list[str]:
    return sorted(__all__)


def __getattr__(name: str) -> Any:
    """``attncli.Trace``, ``attncli.Spec``, ``attncli.AttnError`` and the kernel engineer's ``attncli.reference``,
    ``attncli.merge``, ``attncli.assert_close`` (:mod:`attncli.kernels`), imported when first used."""
    if name in _KERNELS:
        import importlib

        return getattr(importlib.import_module(_KERNELS[name]), name)
    if name == "Trace":
        from attncli.core.trace import Trace

        return Trace
    if name == "Spec":
        from attncli.core.spec import Spec

        return Spec
    if name == "AttnError":
        from attncli.core.errors import AttnError

        return AttnError
    raise AttributeError(f"module 'attncli' has no attribute {name!r}")
