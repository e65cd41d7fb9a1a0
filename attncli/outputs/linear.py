"""A :class:`~attncli.core.linear.LinearTrace` -> the JSON and the ``.npz``/``.npy`` of docs/format.md Part 4,
and the ``--only`` names a ``linear:`` document's result takes."""

from __future__ import annotations

from typing import Any

import numpy as np

from attncli.core.errors import AttnError, quoted, unknown_key
from attncli.core.linear import KEYS, ON_REQUEST, LinearTrace
from attncli.outputs.files import Streamed
from attncli.outputs.serialize import binary

ALWAYS = ("tokens", "kind", "heads", "value_heads", "d_k", "d_v", "scale", "chunk")
# the formulas' names (docs/format.md Part 4), matched as written: y and Y are two quantities
SYMBOLS = {"X": "inputs", "q": "queries", "k": "keys", "v": "values", "q̂": "normalized_queries",
           "Qhat": "normalized_queries", "k̂": "normalized_keys", "Khat": "normalized_keys", "β": "beta",
           "S₀": "initial_state", "S0": "initial_state", "S": "state", "S_n": "final_state", "o": "head_outputs",
           "y": "gated_head_outputs", "Y": "output", "do": "grad_head_outputs", "dq": "grad_queries", "dk": "grad_keys",
           "dv": "grad_values", "dβ": "grad_beta", "dg": "grad_g", "dS₀": "grad_initial_state",
           "s": "slopes", "ds": "grad_slopes"}
NEEDS = {"inputs": "inputs", **{key: "conv (lightning: inputs)" for key in ("projected_queries", "projected_keys",
                                                                           "projected_values")},
         **{key: "kind: lightning" for key in ("slopes", "intra", "inter", "decayed_scores")},
         **{key: "the delta rule (kind: gated_delta or kda)" for key in ("beta", "g", "u", "grad_beta", "grad_g")},
         "normalized_queries": "l2norm", "normalized_keys": "l2norm", "initial_state": "initial_state",
         "gate": "weights.gate", "gated_head_outputs": "norm or weights.gate",
         **{key: "gradient" for key in KEYS if key.startswith("grad_") and key not in ("grad_beta", "grad_g")},
         "grad_initial_state": "gradient and initial_state", "grad_slopes": "gradient (kind: lightning)"}


def key_of(name: str) -> str | None:
    """A JSON key of Part 4, or a formula's name for one, -> the key; None if neither.

    >>> key_of("state"), key_of("S"), key_of("y"), key_of("Y"), key_of("weights")
    ('state', 'state', 'gated_head_outputs', 'output', None)
    """
    return name if name in KEYS else SYMBOLS.get(name)


def linear_only(only: list[str] | None) -> list[str] | None:
    """``--only`` for a linear: document -> its keys in the JSON's order (``[]``: only the always-present values),
    or None for the default result."""
    if not only:
        return None
    keys = set()
    for name in only:
        key = key_of(name)
        if key is None:
            if name in ALWAYS:
                continue
            close = unknown_key(name, (*KEYS, *SYMBOLS))
            if "did you mean" in close.said("en"):
                raise close.at("--only")
            raise AttnError("linear.unknown_key_linear_document_keys",
                            "--only", name=quoted(name), keys=', '.join(KEYS))
        keys.add(key)
    return [key for key in KEYS if key in keys]


def keeps_state(keys: list[str] | None) -> bool:
    """Whether the result holds the state after every token (the default result, or --only state)."""
    return keys is None or "state" in keys


def kept(trace: LinearTrace, keys: list[str] | None) -> dict[str, np.ndarray]:
    """The arrays of the result: every one but those on request, or those ``keys`` names (each must exist)."""
    if keys is None:
        return {key: array for key, array in trace.items() if key not in ON_REQUEST}
    for key in keys:
        if key not in trace:
            raise AttnError("linear.not_this_document_s_result", "--only", key=quoted(key), needs=NEEDS[key])
    return {key: trace[key] for key in keys}


def _values(trace: LinearTrace) -> dict[str, Any]:
    spec = trace.spec
    return {"tokens": spec.tokens, "kind": spec.kind, "heads": spec.heads, "value_heads": spec.value_heads,
            "d_k": spec.d_k, "d_v": spec.d_v, "scale": spec.scale, "chunk": spec.chunk}


def to_json(trace: LinearTrace, keys: list[str] | None) -> bytes:
    """One strict JSON object on one line, every float64 written so that it reads back the same."""
    import orjson

    from attncli.outputs.serialize import JSON_NUMBER_BYTES, escape_controls

    arrays = kept(trace, keys)
    from attncli.core.memory import ensure_fits

    ensure_fits(JSON_NUMBER_BYTES * sum(a.size for a in arrays.values()), "writing this result as JSON",
                "--format json", "; keep fewer matrices with --only, or write them to a .npz file with -o")
    data = {**_values(trace), **{key: np.ascontiguousarray(a, dtype=np.float64) for key, a in arrays.items()}}
    return escape_controls(orjson.dumps(data, option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_APPEND_NEWLINE))


def to_binary(trace: LinearTrace, keys: list[str] | None, suffix: str) -> Streamed:
    """``.npz``: every kept array by its JSON key (and ``scale``); ``.npy``: the one array ``--only`` names."""
    return binary(kept(trace, keys), trace.spec.scale, suffix)


def explained_json(header: dict, steps: list) -> bytes:
    """attncli explain --format json on a linear: document: ``header`` and, per value head, its lines (text, and
    the state they show or None)."""
    import orjson

    data = {**header, "steps": [{"head": j + 1, "lines": [{"text": text, "state": None if m is None else m.tolist()}
                                                            for text, m in lines]} for j, lines in steps]}
    return orjson.dumps(data, option=orjson.OPT_APPEND_NEWLINE)
