"""A stacked document's result (``layers:``): one object per layer, each exactly a one-layer document's JSON, then
the stack's ``output`` (the last layer's last quantity); in ``.npz``, each layer's arrays prefixed ``layers[i].``."""

from __future__ import annotations

import json

import numpy as np

from attncli.core.trace import Trace
from attncli.outputs.files import Streamed
from attncli.outputs.serialize import escape_controls, kept, to_json


def stack_output(traces: list[Trace]) -> np.ndarray:
    """The stack's result (n × d_out): the last layer's normalized, else residual, else output."""
    last = traces[-1]
    return next(q for q in (last.normalized, last.residual, last.output) if q is not None)


def stack_to_json(traces: list[Trace], only: list[str] | None = None) -> bytes:
    """``{"tokens": […], "layers": [layer 1's JSON, …], "output": […]}``: ``jq '.layers[1]'`` is what layer 2's
    one-layer document prints (``--only`` keeps the same keys in each)."""
    tokens = json.dumps(traces[0].spec.tokens, ensure_ascii=False).encode("utf-8")
    layers = b",".join(to_json(trace, only).rstrip(b"\n") for trace in traces)
    output = json.dumps(stack_output(traces).tolist(), allow_nan=False).encode("utf-8")
    return escape_controls(b'{"tokens":' + tokens + b',"layers":[' + layers + b'],"output":' + output + b"}\n")


def stack_to_npz(traces: list[Trace], only: list[str] | None = None) -> Streamed:
    """Every kept array of layer i (from 0) as ``layers[i].KEY`` (``layers[i].scale`` its scale), and ``output``."""
    arrays = prefixed_arrays(traces, only, "layers")
    arrays["output"] = stack_output(traces)
    return Streamed(lambda file: np.savez(file, **arrays))


def prefixed_arrays(traces: list[Trace], only: list[str] | None, prefix: str) -> dict[str, np.ndarray]:
    """Every kept array of result i as ``PREFIX[i].KEY`` (a masked scaled score −inf, ``PREFIX[i].scale`` its
    scale): a stack's layers, a batch's sequences."""
    arrays: dict[str, np.ndarray] = {}
    for i, trace in enumerate(traces):
        one = dict(kept(trace, only))
        if "scaled_scores" in one and trace.spec.allowed is not None:
            one["scaled_scores"] = np.where(trace.spec.allowed, one["scaled_scores"], -np.inf)
        one["scale"] = np.float64(trace.spec.scale)
        arrays.update({f"{prefix}[{i}].{key}": array for key, array in one.items()})
    return arrays
