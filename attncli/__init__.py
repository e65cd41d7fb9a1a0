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

# the one place the version is written (pyproject.toml reads it; CHANGELOG.md says what it brought)
__version__ = "0.2.0"
__all__ = ["AttnError", "Reference", "Spec", "Trace", "assert_close", "attention", "compute", "load", "merge",
           "reference", "set_language", "show", "to_dict", "__version__"]
_KERNELS = {"reference": "attncli.kernels", "Reference": "attncli.kernels", "merge": "attncli.kernel_verdict",
            "assert_close": "attncli.kernel_verdict"}  # a kernel's float64 truth (docs/kernels.md), imported when used

TYPE_CHECKING = False  # (not typing's: `attncli` imports nothing at first, so Ctrl-C at start-up meets the command
if TYPE_CHECKING:  # line's own guard in attncli.cli, and an API user's `import attncli` costs nothing)
    from collections.abc import Mapping
    from os import PathLike
    from pathlib import Path
    from typing import Any

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

    return build_spec(_document(document), overrides or None)


def _document(document: str | PathLike | Mapping) -> Any:
    """The :class:`attncli.inputs.document.Document` of a path or a mapping, read once."""
    from collections.abc import Mapping
    from os import PathLike
    from pathlib import Path

    from attncli.inputs.document import Document, read_document

    if isinstance(document, Mapping):
        return Document(_plain(document), "<dict>", Path.cwd())
    if isinstance(document, (str, PathLike)):
        return read_document(str(document))
    raise TypeError(f"document: expected a path or a mapping, not {_type_name(document)}")


def _plain(mapping: Mapping) -> dict[str, Any]:
    """The mapping with numpy scalars (``np.True_``, ``np.int64(4)``, the entries of ``list(array)``) as the Python
    values a document would hold, in nested mappings and lists too, and an array inside a list as its nested list;
    an array given as a whole value is left as it is (it is read as a .npy file's data is).  A mapping or list that
    holds itself (``d["weights"] = d``) is an AttnError naming the key where it comes round, not a RecursionError."""
    return _plain_value(mapping, "", frozenset(), False)


def _plain_value(value: Any, where: str, inside: frozenset, listed: bool) -> Any:
    """:func:`_plain` of one value at ``where`` (a key path), ``inside`` the ids of the mappings and lists around it."""
    from collections.abc import Mapping

    import numpy as np

    from attncli.core.errors import AttnError

    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (Mapping, list)):
        if id(value) in inside:
            raise AttnError("attncli.holds_itself_mapping_list_that", where).at("<dict>")
        if isinstance(value, list) and set(map(type, value)) <= {float, int, bool, str}:
            return value  # a row of Python values is kept as it is: a large matrix is not walked twice
        inside = inside | {id(value)}
        if isinstance(value, list):
            return [_plain_value(e, f"{where}[{i}]", inside, True) for i, e in enumerate(value)]
        return {key: _plain_value(e, f"{where}.{key}" if where else str(key), inside, False)
                for key, e in value.items()}
    return value.tolist() if listed and isinstance(value, np.ndarray) else value


def compute(document: str | PathLike | dict[str, Any] | Spec, *, layer: int | None = None,
            only: list[str] | None = None, emulate: str | None = None, **overrides: Any) -> Trace | list[Trace]:
    """Every intermediate of a document's attention: ``trace.queries``, ``trace.weights``, ``trace.output`` …

    ``document`` is what :func:`load` takes, or a :class:`Spec` it made.  The arrays are
    float64 numpy arrays with the shapes of the JSON contract (per-head arrays head-first).  In a notebook the
    result shows as the explorable page of ``attncli page`` (:mod:`attncli.notebook`); :func:`show` opens it.

    What comes back, by the document (the command line's ``attncli compute`` computes the same, the same way):

    - a one-layer document: its Trace;
    - a stack of layers (``layers:``, docs/layers.md): a :class:`~attncli.computation.Layers`, the list of each
      layer's Trace in order (``result[0]`` is layer 1's; each layer's ``inputs`` are the one before's result), whose
      ``result.output`` is the stack's output (n × d_model: the last layer's ``normalized``, else ``residual``,
      else ``output``) — as a ``torch.nn.Sequential`` of attention layers gives it;
    - ``layer=N`` (from 1) on a stack: layer N's Trace alone, the layers before it computed for its inputs;
    - a batch of sequences (``layout:``): the list of each sequence's Trace.

    ``only`` (the JSON's keys or the formulas' names, as ``--only``): compute only what they need, block by block
    when the n × m matrices are not wanted; ``emulate`` (``"bf16"``, ``"fp16"``, ``"fp32"``): the eager
    computation in that precision instead (``compute --emulate``).  ``overrides`` replace top-level keys, as in
    :func:`load`.
    """
    from attncli.computation import Layers, of_spec
    from attncli.computation import compute as computed
    from attncli.core.spec import Spec
    from attncli.notebook import result
    from attncli.outputs.serialize import check_only

    keys = check_only(_names(only, "only"))
    if emulate is not None and emulate not in ("bf16", "fp16", "fp32"):
        raise ValueError(f"emulate: expected 'bf16', 'fp16' or 'fp32' (the eager computation's precision), not "
                         f"{emulate!r}")
    if isinstance(document, Spec):
        if overrides or layer is not None:
            raise TypeError("compute(spec) takes no overrides or layer: pass them to attncli.load(document, ...)")
        return result(of_spec(document, keys, emulate))
    if layer is not None and (isinstance(layer, bool) or not isinstance(layer, int)):
        raise TypeError(f"layer: expected a whole number (the layer, counting from 1), not {_type_name(layer)}")
    done = computed(_document(document), layer=layer, only=keys, overrides=overrides or None, emulate=emulate,
                    streams=keys is not None, placed=False)  # (refused before its n × m matrices when too big)
    traces = [result(trace) for trace in done.traces]
    return Layers(traces) if done.form == "layers" else traces if done.form == "batch" else traces[0]


def _names(only: Any, name: str) -> list[str] | None:
    """``only`` if it is None or a list of key names, else a TypeError naming ``name``."""
    if only is not None and (isinstance(only, (str, bytes)) or not all(isinstance(key, str) for key in only)):
        raise TypeError(f"{name}: expected a list of key names (['weights']), not {_type_name(only)}")
    return None if only is None else list(only)


def show(trace: Trace, title: str = "attncli", lang: str = "en") -> Path:
    """Open the explorable page of ``trace`` (what :func:`compute` returned) in the default browser, from a
    script, in ``lang`` (en or zh); returns the temporary .html file it wrote.  In a notebook, the result itself
    shows the page."""
    from attncli.notebook import show as _show

    return _show(_a_trace(trace, "trace"), title, lang)


def attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, *, scale: float | None = None,
              allowed: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """softmax(scale·Q·Kᵀ)·V on arrays: (output (…, n, d_v), weights (…, n, m)).

    ``scale`` defaults to 1/√d_k; ``allowed`` (n, m), True = may attend.  A query with no
    allowed key gets zero weights and a zero output, as PyTorch's scaled_dot_product_attention.
    K and V may have fewer heads than Q (grouped-query attention, as ``enable_gqa=True``): query head i
    reads key/value head i // (h / g).  Shapes that do not fit raise :class:`AttnError` naming them.
    """
    import numpy as np

    from attncli.core import arguments
    from attncli.core.attention import attention as _attention

    q, k, v = (arguments.real_array(a, name, min_ndim=2) for a, name in ((q, "q"), (k, "k"), (v, "v")))
    mask = None if allowed is None else arguments.mask_array(allowed, "allowed")
    _check_shapes(q, k, v, mask)
    scale = None if scale is None else arguments.number(scale, "scale")
    arguments.ensure_room("the weights", (*_leading(q, k), q.shape[-2], k.shape[-2]), copies=3)
    with np.errstate(over="ignore", invalid="ignore"):
        out, weights = _attention(q, k, v, scale=scale, allowed=mask)
    if not (np.isfinite(out).all() and np.isfinite(weights).all()):
        from attncli.core.errors import AttnError

        raise AttnError("attncli.overflow_float64_q_k_weights", "q, k, v")
    return out, weights


def _leading(q: np.ndarray, k: np.ndarray) -> tuple[int, ...]:
    """The leading (batch, head) axes of the result, or an AttnError when q's and k's do not broadcast."""
    import numpy as np

    from attncli.core.arguments import shape_text
    from attncli.core.errors import AttnError

    try:
        return np.broadcast_shapes(q.shape[:-3], k.shape[:-3]) + q.shape[-3:-2]
    except ValueError:
        raise AttnError("attncli.q_but_k_their_leading", q_shape=shape_text(q.shape),
                        k_shape=shape_text(k.shape)) from None


def _check_shapes(q: np.ndarray, k: np.ndarray, v: np.ndarray, allowed: np.ndarray | None) -> None:
    """q (…, h, n, d_k), k (…, g, m, d_k), v (…, g, m, d_v): what attention() can take, or an AttnError saying why."""
    from attncli.core.arguments import shape_text as shape
    from attncli.core.errors import AttnError

    if q.shape[-1] != k.shape[-1]:
        raise AttnError("attncli.q_but_k_queries_keys", shape=shape(q.shape), shape_2=shape(k.shape))
    if k.shape[:-1] != v.shape[:-1]:
        raise AttnError("attncli.k_but_v_keys_values", shape=shape(k.shape), shape_2=shape(v.shape))
    if q.ndim >= 3 and k.ndim >= 3 and k.shape[-3] != q.shape[-3]:
        if q.shape[-3] % k.shape[-3]:
            raise AttnError("attncli.q_has_heads_but_k", shape=q.shape[-3], shape_2=k.shape[-3])
    if allowed is not None and allowed.shape != (q.shape[-2], k.shape[-2]):
        raise AttnError("attncli.allowed_but_q_k_give", shape=shape(allowed.shape), shape_2=q.shape[-2],
                        shape_3=k.shape[-2])


def to_dict(trace: Trace, only: list[str] | None = None) -> dict[str, Any]:
    """The JSON object of ``attncli compute --format json`` as Python values (numpy arrays, keys in order).

    A masked scaled score is NaN here (``null`` in JSON).
    """
    from attncli.outputs.serialize import check_only
    from attncli.outputs.serialize import to_dict as _to_dict

    return _to_dict(_a_trace(trace, "trace"), check_only(_names(only, "only")), native=True)


def _a_trace(value: Any, name: str) -> Trace:
    """``value`` if it is a :class:`Trace` (what :func:`compute` returns), else a TypeError naming ``name``."""
    from attncli.core.trace import Trace

    if not isinstance(value, Trace):
        raise TypeError(f"{name}: expected what attncli.compute returns (a Trace), not {_type_name(value)}")
    return value


def _type_name(value: Any) -> str:
    from attncli.core.arguments import type_name

    return type_name(value)



def set_language(lang: str | None) -> None:
    """Raise every later :class:`AttnError` in ``lang``: ``"en"`` or ``"zh"``, as the command line's ``--lang``;
    None: as the environment says (``ATTNCLI_LANG``, else a ``zh_*`` locale), the default.

    >>> attncli.set_language("zh")                                        # doctest: +SKIP
    >>> attncli.compute({"inputs": [[1, 2], [3]]})                        # doctest: +SKIP
    AttnError: inputs: 第 2 行有 1 个元素，但第一行有 2 个（各行长短不一）
    """
    from attncli.core.messages import LANGUAGES
    from attncli.core.messages import set_language as chosen

    if lang is not None and not (isinstance(lang, str) and lang in LANGUAGES):
        from attncli.core.errors import AttnError, describe

        raise AttnError("messages.unknown_language", "lang", lang=describe(lang), languages=", ".join(LANGUAGES))
    chosen(lang)


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
