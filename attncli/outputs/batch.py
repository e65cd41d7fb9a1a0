"""A batch's result (``layout:``): ``{"layout": …, "batch": [sequence 1's JSON, …]}``, each exactly the JSON of a
document giving that sequence's Q, K and V; in ``.npz``, each sequence's arrays prefixed ``batch[i].``."""

from __future__ import annotations

import json

import numpy as np

from attncli.core.trace import Trace
from attncli.outputs.files import Streamed
from attncli.outputs.serialize import escape_controls, kept, to_json


def batch_to_json(traces: list[Trace], layout: str, only: list[str] | None = None) -> bytes:
    """``jq '.batch[1]'`` is what the second sequence's own document prints (``--only`` keeps the same keys)."""
    sequences = b",".join(to_json(trace, only).rstrip(b"\n") for trace in traces)
    return escape_controls(b'{"layout":' + json.dumps(layout).encode() + b',"batch":[' + sequences + b"]}\n")


def batch_to_npz(traces: list[Trace], only: list[str] | None = None) -> Streamed:
    """Every kept array of sequence i (from 0) as ``batch[i].KEY`` (``batch[i].scale`` its scale)."""
    arrays: dict[str, np.ndarray] = {}
    for i, trace in enumerate(traces):
        one = dict(kept(trace, only))
        if "scaled_scores" in one and trace.spec.allowed is not None:
            one["scaled_scores"] = np.where(trace.spec.allowed, one["scaled_scores"], -np.inf)
        one["scale"] = np.float64(trace.spec.scale)
        arrays.update({f"batch[{i}].{key}": array for key, array in one.items()})
    return Streamed(lambda file: np.savez(file, **arrays))
