"""Trace -> the JSON of docs/format.md (strict, full precision), and ``.npz``/``.npy`` arrays."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, BinaryIO

import numpy as np

from attncli.core.errors import AttnError, quoted, unknown_key
from attncli.core.stages import QUANTITIES
from attncli.core.trace import Trace
from attncli.outputs.files import Streamed

ALWAYS = ("tokens", "context_tokens", "heads", "kv_heads", "d_k", "d_v", "scale")
# Every array of the result, from the stage list (attncli.core.stages), in the order they are computed.
ARRAYS = tuple(key for key, q in QUANTITIES.items() if not q.parameter)  # the JSON of docs/format.md, in its order
# The projection matrices: written only when --only names them (the default output is the contract's, unchanged).
# JSON key -> the Spec field; per head (head axis first) like the queries, keys and values they make.
PROJECTIONS = {key: q.source for key, q in QUANTITIES.items() if q.parameter}
ORDER = tuple(QUANTITIES)  # as computed: a stage's matrices, then what it makes
KEYS = ALWAYS + ORDER
# --only also takes the names of the formulas (docs/format.md): any case, with or without the underscore, ' for ′.
ALIASES = {**{q.symbol: key for key, q in QUANTITIES.items() if q.symbol}, "Xhat": "normalized_inputs",
           "Qhat": "normalized_queries", "Khat": "normalized_keys",
           "gamma": "qk_clip_gamma",
           "Vhat": "normalized_values"}
NEEDS = {key: q.needs for key, q in QUANTITIES.items() if q.needs}  # the keys only some documents have, and why
OPTIONAL = tuple(NEEDS)
# what a document of queries, keys and values given directly has no X (nor C) for: the key -> what is missing
WITHOUT_QKV = {"inputs": "X", "context": "C", "grad_inputs": "X", "grad_context": "C",
               "grad_normalized_inputs": "X (nor X̂)"}
# −inf (kept in .npz) is null in JSON: a masked cell, a row with no key, a head with no allowed cell
NULL_AT_MINUS_INF = tuple(key for key, q in QUANTITIES.items() if q.null_at_minus_inf)


def _folded(name: str) -> str:
    return name.replace("_", "").replace("'", "′").strip().casefold()


_BY_SYMBOL = {_folded(symbol): key for symbol, key in ALIASES.items()}


def key_of(name: str) -> str | None:
    """A JSON key, or a formula's name for one (``W_Q``, ``wq``, ``A``, ``Q'``), -> the JSON key; None if neither.

    >>> key_of("weights"), key_of("A"), key_of("w_q"), key_of("Q'"), key_of("Weights")
    ('weights', 'weights', 'weight_query', 'queries_rotated', None)
    """
    return name if name in KEYS else _BY_SYMBOL.get(_folded(name))


def check_only(only: list[str] | None) -> list[str] | None:
    """Validate ``--only`` keys (or formula names) -> the arrays to keep (``[]``: only the always-present keys),
    or None for all."""
    if not only:
        return None
    keys = set()
    for name in only:
        key = key_of(name)
        if key is None:
            close = unknown_key(name, (*ORDER, *ALIASES))
            if "did you mean" in close.said("en"):
                raise close.at("--only")
            raise AttnError("serialize.unknown_key_expected_key_json", "--only", name=quoted(name))
        keys.add(key)
    return [key for key in ORDER if key in keys]


def check_present(trace: Trace, only: list[str] | None) -> None:
    """Every array ``only`` names exists for this document (``bias_query`` needs a ``bias.query``), else an error."""
    for _ in kept(trace, only if only else []):
        pass


def array_of(trace: Trace, key: str) -> np.ndarray | None:
    """The array behind a JSON key (``context`` is None for self-attention; ``bias_query`` None without one)."""
    source = QUANTITIES[key].source
    if source in ("inputs", "context") and trace.spec.given_qkv is not None:
        return None  # Q, K and V given directly: there is no X, nor C
    return trace.spec.given(source) if source else getattr(trace, key)


def kept(trace: Trace, only: list[str] | None) -> Iterator[tuple[str, np.ndarray]]:
    """(key, array) for each array to write, in the contract's order (docs/format.md);
    a key asked for but absent is an error."""
    for key in ARRAYS if only is None else only:
        array = array_of(trace, key)
        if array is None:
            if only and trace.spec.given_qkv is not None and key in WITHOUT_QKV:
                raise AttnError("serialize.not_result_whose_queries_keys", "--only", key=key,
                                without_qkv=WITHOUT_QKV[key])
            if only and key in OPTIONAL:
                raise AttnError("checks.needs_document", "--only", key=key, needs=NEEDS[key])
            if only and key not in OPTIONAL:
                raise AttnError("serialize.was_not_kept_this_computation", "--only", key=key)
            continue  # optional, or left out of a computation block by block: never emitted
        yield key, array


def to_dict(trace: Trace, only: list[str] | None = None, native: bool = False) -> dict[str, Any]:
    """The JSON object as Python values, keys in the contract's order (docs/format.md).

    ``native`` keeps the arrays as C-ordered float64 arrays for orjson, a masked
    scaled score as NaN (which orjson writes as ``null``).
    """
    spec = trace.spec
    result: dict[str, Any] = {
        "tokens": spec.tokens,
        "context_tokens": spec.context_tokens,
        "heads": spec.heads,
        "kv_heads": spec.kv_heads,
        "d_k": spec.d_k,
        "d_v": spec.d_v,
        "scale": spec.scale,
    }
    if trace.emulated is not None:  # compute --emulate: not the float64 truth (an extension, docs/format.md)
        result["emulate"] = trace.emulated
    for key, array in kept(trace, only):
        if key in NULL_AT_MINUS_INF:  # a −inf cell masks its key / ln 0 of a row with no key: null
            array = np.where(np.isneginf(array), np.nan, array)
        if native:
            if not np.isfinite(array).all() and key not in NULL_AT_MINUS_INF:  # never a silent null (overflow is
                # checked for)
                raise ValueError(f"{key} holds a value that is not finite")
            result[key] = np.array(array, dtype=np.int64 if array.dtype.kind in "iub" else np.float64, order="C")
            if array.ndim == 0:  # one number (rope_attention_factor): orjson writes no 0-d array
                result[key] = float(result[key])
            if key == "scaled_scores" and spec.allowed is not None:
                result[key][~spec.allowed] = np.nan
        elif key == "scaled_scores" and spec.allowed is not None:
            cells = array.astype(object)
            cells[~spec.allowed] = None  # masked: no score at all
            result[key] = cells.tolist()
        elif key in NULL_AT_MINUS_INF:
            cells = array.astype(object)
            cells[np.isnan(array)] = None
            result[key] = cells.tolist()
        else:
            result[key] = array.tolist()
    return result


def to_json(trace: Trace, only: list[str] | None = None) -> bytes:
    """Strict JSON (one object, one line, every float round-trips exactly) as UTF-8 bytes,
    written by orjson from the arrays.

    orjson writes large arrays many times faster than ``json`` through ``tolist()`` (see benchmarks/README.md,
    JSON); both write the shortest text that reads back as the same float64.
    """
    try:
        import orjson
    except ImportError:
        import json

        data = (json.dumps(to_dict(trace, only), ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8")
    else:
        arrays = to_dict(trace, only, native=True)
        _check_text_fits(arrays)
        data = orjson.dumps(arrays, option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_APPEND_NEWLINE)
    labels = (*trace.spec.tokens, *trace.spec.context_tokens)
    return escape_controls(data) if any(_RAW_CONTROL.search(label) for label in labels) else data


# "-1.2345678901234567e-100," and a bracket: 28 bytes at most, in orjson's buffer of up to twice the text
JSON_NUMBER_BYTES = 56


def _check_text_fits(data: dict[str, Any]) -> None:
    """The last word before orjson writes: its buffer must fit (orjson ends the process when an allocation fails).

    :func:`attncli.plan.plan` has estimated this before computing; here the arrays exist and are counted.
    """
    from attncli.core.memory import ensure_fits

    numbers = sum(value.size for value in data.values() if isinstance(value, np.ndarray))
    labels = sum(len(label) + 1 for key in ("tokens", "context_tokens") for label in data[key])
    ensure_fits(JSON_NUMBER_BYTES * numbers + 12 * labels, "writing this result as JSON", "--format json",
                "; keep fewer matrices with --only, or write them to a .npz file with -o")


_RAW_CONTROL = re.compile("[\x7f-\x9f]")  # JSON escapes U+0000–U+001F, but may leave DEL and the C1 controls raw
_RAW_CONTROL_UTF8 = rb"\x7f|\xc2[\x80-\x9f]"  # (compiled where it is used, re keeping it: a label with one)


def escape_controls(data: bytes) -> bytes:
    r"""UTF-8 JSON with DEL and the C1 controls as ``\u`` escapes:
    the same strings, but a terminal showing it acts on none.

    They can only be inside strings, where an escape means the same character.

    >>> escape_controls('["a\x9b1m"]'.encode())
    b'["a\\u009b1m"]'
    """
    return re.sub(_RAW_CONTROL_UTF8, lambda m: b"\\u%04x" % ord(m.group().decode("utf-8")), data)


def to_binary(trace: Trace, only: list[str] | None, suffix: str) -> Streamed:
    """``.npz``: every kept array by its JSON key; ``.npy``: the one array ``--only`` names.

    A masked scaled score is -inf (JSON's null), as ``masked_fill(~mask, -inf)`` leaves it in PyTorch.
    Both are written into the file (:class:`~attncli.outputs.files.Streamed`: the ``.npz`` array by array, the
    ``.npy`` block by block), never whole in memory: beside the arrays themselves they need a few megabytes.
    """
    arrays = dict(kept(trace, only))
    if "scaled_scores" in arrays and trace.spec.allowed is not None:
        arrays["scaled_scores"] = np.where(trace.spec.allowed, arrays["scaled_scores"], -np.inf)
    return binary(arrays, trace.spec.scale, suffix)


def binary(arrays: dict[str, np.ndarray], scale: float, suffix: str) -> Streamed:
    """``.npz``: ``arrays`` by their keys, and ``scale``; ``.npy``: the one array ``arrays`` holds."""
    if suffix == ".npy":
        if len(arrays) != 1:
            raise AttnError("compute.npy_file_holds_one_array", "--output")
        array = next(iter(arrays.values()))
        return Streamed(lambda file: write_npy(file, array))
    scale = np.float64(scale)
    return Streamed(lambda file: np.savez(file, **arrays, scale=scale))


NPY_BLOCK = 16 << 20  # bytes of a non-contiguous array copied out at a time


def write_npy(file: BinaryIO, array: np.ndarray) -> None:
    """What ``np.save`` writes for ``array``, byte for byte, straight into ``file``: the header, then the numbers
    in np.save's order; a contiguous array as it is in memory (no copy), another a block of rows at a time.
    """
    described = np.lib.format.header_data_from_array_1_0(array)
    np.lib.format.write_array_header_1_0(file, described)
    numbers = array.T if described["fortran_order"] else array  # C-ordered either way, as np.save writes them
    if numbers.flags.c_contiguous or numbers.size == 0:  # (a 0-d array is contiguous)
        file.write(np.ascontiguousarray(numbers).data)
        return
    rows = max(1, NPY_BLOCK // max(1, numbers[0].nbytes))  # a block of rows of the first axis
    for lo in range(0, numbers.shape[0], rows):
        file.write(np.ascontiguousarray(numbers[lo:lo + rows]).data)
