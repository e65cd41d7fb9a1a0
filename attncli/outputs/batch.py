"""A batch's result (``layout:``): ``{"layout": …, "batch": [sequence 1's JSON, …]}``, each exactly the JSON of a
document giving that sequence's Q, K and V; in ``.npz``, each sequence's arrays prefixed ``batch[i].``."""

from __future__ import annotations

import json

import numpy as np

from attncli.core.trace import Trace
from attncli.outputs.files import Streamed
from attncli.outputs.serialize import escape_controls, to_json
from attncli.outputs.stacked import prefixed_arrays


def batch_to_json(traces: list[Trace], layout: str, only: list[str] | None = None) -> bytes:
    """``jq '.batch[1]'`` is what the second sequence's own document prints (``--only`` keeps the same keys)."""
    sequences = b",".join(to_json(trace, only).rstrip(b"\n") for trace in traces)
    return escape_controls(b'{"layout":' + json.dumps(layout).encode() + b',"batch":[' + sequences + b"]}\n")


def batch_to_npz(traces: list[Trace], only: list[str] | None = None) -> Streamed:
    """Every kept array of sequence i (from 0) as ``batch[i].KEY`` (``batch[i].scale`` its scale)."""
    arrays = prefixed_arrays(traces, only, "batch")
    return Streamed(lambda file: np.savez(file, **arrays))
