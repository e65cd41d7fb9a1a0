"""A batch of sequences (``layout:``): Q, K and V given directly with a batch axis, or packed, split into one
document per sequence (docs/format.md, "A batch of sequences").

    layout: bshd          queries (b, n, h, d_k), keys (b, m, g, d_k), values (b, m, g, d_v)   FlashAttention's
    layout: bhsd          queries (b, h, n, d_k), keys (b, g, m, d_k), values (b, g, m, d_v)   SDPA's
    layout: thd           queries (total_q, h, d_k), keys and values (total_k, g, d) with
                          cu_seqlens_q: [0, n_1, n_1 + n_2, …] and cu_seqlens_k (cu_seqlens: both)

Each sequence is computed as its own document with ``queries``, ``keys`` and ``values`` given per head (h × n × d):
its positions start at 0, and every other key of the document (mask, scale, softcap, score_bias's alibi, rope,
sinks …) applies to each sequence as written.  A ``gradient`` (dO) is given in the layout of the queries, with d_v.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from attncli.core.errors import AttnError, shape_str
from attncli.inputs.document import Document
from attncli.inputs.matrices import AXES, read_value

LAYOUTS = {"bshd": "batch × seqlen × heads × dim", "bhsd": "batch × heads × seqlen × dim",
           "thd": "total tokens × heads × dim"}
PACKED = ("cu_seqlens_q", "cu_seqlens_k", "cu_seqlens")
MAX_SEQUENCES = 4096  # (a stated limit, as for layers: a batch is computed sequence by sequence)
PER_SEQUENCE_ONLY = ("tokens", "context_tokens", "positions", "context_positions")


def sequences(doc: Document) -> list[Document]:
    """One document per sequence of the batch ``doc``, each named ``batch[i]`` of the document in messages."""
    data = doc.data
    layout = data["layout"]
    if not isinstance(layout, str) or layout not in LAYOUTS:  # (a mapping or a list is no layout: not hashable)
        raise AttnError("batch.expected_one",
                        "layout", layout=layout, layouts=', '.join(LAYOUTS), values='; '.join(LAYOUTS.values()))
    for key in ("queries", "keys", "values"):
        if data.get(key) is None:
            raise AttnError("batch.needs_queries_keys_values_given",
                            "layout")
    _for_every_sequence(data)
    if layout != "thd":
        for key in PACKED:
            if data.get(key) is not None:
                raise AttnError("batch.goes_layout_thd_packed_sequences", key)
    gradient = data.get("gradient")
    if isinstance(gradient, dict) and "random" in gradient:
        raise AttnError("batch.layout_give_do_array_queries",
                        "gradient")
    arrays = {}
    token = AXES.set(4 if layout != "thd" else 3)
    try:
        for key in ("queries", "keys", "values", "gradient"):
            if data.get(key) is not None:
                try:
                    arrays[key] = read_value(data[key], doc.folder)
                except AttnError as e:
                    raise (e.at(key) if e.where is None else e) from None
    finally:
        AXES.reset(token)
    split = _packed(data, arrays) if layout == "thd" else _batched(layout, arrays)
    rest = {k: v for k, v in data.items() if k not in ("layout", *PACKED, *arrays)}
    return [Document({**rest, **parts}, f"{doc.name} batch[{i}]", doc.folder) for i, parts in enumerate(split)]


def _for_every_sequence(data: dict[str, Any]) -> None:
    """The keys sized for one sequence, which a batch of sequences of any length cannot take."""
    for key in PER_SEQUENCE_ONLY:
        if data.get(key) is not None:
            raise AttnError("batch.cannot_given_whole_batch_each", key)
    mask = data.get("mask")
    if isinstance(mask, dict) and (mask.get("matrix") is not None or mask.get("keys") is not None) or \
            not isinstance(mask, (dict, str, type(None))):
        raise AttnError("batch.layout_takes_causal_window_chunk", "mask")
    bias = data.get("score_bias")
    if isinstance(bias, dict) and bias.get("matrix") is not None:
        raise AttnError("batch.layout_takes_alibi_relative_not",
                        "score_bias.matrix")


def _batched(layout: str, arrays: dict[str, np.ndarray]) -> list[dict[str, np.ndarray]]:
    """bshd / bhsd: sequence i's arrays per head, (h, rows, d)."""
    for key, a in arrays.items():
        if a.ndim != 4:
            raise AttnError("batch.layout_takes_axes", key, a_shape=shape_str(a.shape), layout=layout,
                            layouts=LAYOUTS[layout])
    counts = {key: a.shape[0] for key, a in arrays.items()}
    if len(set(counts.values())) != 1:
        raise AttnError("batch.queries_keys_values_gradient_need", "layout",
                        value=", ".join(f"{k} {c}" for k, c in counts.items()))
    _limit(counts["queries"])
    per_head = (lambda a: a.transpose(1, 0, 2)) if layout == "bshd" else (lambda a: a)
    return [{key: np.ascontiguousarray(per_head(a[i])) for key, a in arrays.items()}
            for i in range(counts["queries"])]


def _packed(data: dict[str, Any], arrays: dict[str, np.ndarray]) -> list[dict[str, np.ndarray]]:
    """thd: the rows between consecutive cumulative lengths, per head (h, rows, d)."""
    for key, a in arrays.items():
        if a.ndim != 3:
            raise AttnError("batch.layout_thd_takes_axes", key, a_shape=shape_str(a.shape), layouts=LAYOUTS['thd'])
    both = data.get("cu_seqlens")
    if both is not None and (data.get("cu_seqlens_q") is not None or data.get("cu_seqlens_k") is not None):
        raise AttnError("batch.gives_lengths_both_queries_keys",
                        "cu_seqlens")
    cu_q = _cumulative(both if both is not None else data.get("cu_seqlens_q"),
                       "cu_seqlens" if both is not None else "cu_seqlens_q", arrays["queries"].shape[0], "queries")
    cu_k = _cumulative(both if both is not None else data.get("cu_seqlens_k", data.get("cu_seqlens_q")),
                       "cu_seqlens" if both is not None else "cu_seqlens_k", arrays["keys"].shape[0], "keys")
    if len(cu_q) != len(cu_k):
        raise AttnError("batch.has_sequences_but_cu_seqlens_q_has", "cu_seqlens_k", count=len(cu_k) - 1,
                        count_2=len(cu_q) - 1)
    if arrays["values"].shape[0] != arrays["keys"].shape[0]:
        raise AttnError("batch.have_rows_but_keys", "values", shape=arrays['values'].shape[0],
                        shape_2=arrays['keys'].shape[0])
    if "gradient" in arrays and arrays["gradient"].shape[0] != arrays["queries"].shape[0]:
        raise AttnError("batch.has_rows_but_queries",
                        "gradient", shape=arrays['gradient'].shape[0], shape_2=arrays['queries'].shape[0])
    _limit(len(cu_q) - 1)
    rows = {"queries": cu_q, "keys": cu_k, "values": cu_k, "gradient": cu_q}
    return [{key: np.ascontiguousarray(a[rows[key][i]:rows[key][i + 1]].transpose(1, 0, 2))
             for key, a in arrays.items()} for i in range(len(cu_q) - 1)]


def _cumulative(value: Any, where: str, total: int, of: str) -> list[int]:
    if value is None:
        raise AttnError("batch.needs_cu_seqlens_q_cu_seqlens_where_each", "layout")
    if not isinstance(value, list) or not all(isinstance(x, int) and not isinstance(x, bool) for x in value):
        raise AttnError("batch.expected_list_whole_numbers_then", where)
    if len(value) < 2 or value[0] != 0 or value[-1] != total or any(b <= a for a, b in zip(value, value[1:])):
        raise AttnError("batch.must_start_grow_every_sequence", where, total=total, of=of)
    return value


def _limit(count: int) -> None:
    if count > MAX_SEQUENCES:
        raise AttnError("batch.holds_sequences_most_computed_one", "layout", count=count, max_sequences=MAX_SEQUENCES)


KERNEL_ROWS = {"head_outputs": "q", "grad_kernel_queries": "q", "grad_kernel_keys": "k", "grad_values": "k"}


def result_parts(data: dict[str, Any], key: str, array: np.ndarray, count: int) -> list[np.ndarray]:
    """A kernel's result for the batch ``data`` (check --against), in the batch's layout, as each sequence's array
    in attncli's shapes: (h, rows, d) for outputs and gradients, (h, n) for lse, (h, n, m) for weights."""
    layout = data["layout"]
    if layout == "thd":
        if key == "weights":
            raise AttnError("batch.packed_sequences_have_no_one", key)
        cu = data.get("cu_seqlens") or (data["cu_seqlens_q"] if KERNEL_ROWS.get(key, "q") == "q" else
                                        data.get("cu_seqlens_k", data["cu_seqlens_q"]))
        if key == "lse":
            _expect(array.ndim == 2 and array.shape[1] == cu[-1], key, array, f"h × {cu[-1]} (heads × total tokens)")
            return [array[:, cu[i]:cu[i + 1]] for i in range(count)]
        _expect(array.ndim == 3 and array.shape[0] == cu[-1], key, array, f"{cu[-1]} × h × d ({LAYOUTS['thd']})")
        return [array[cu[i]:cu[i + 1]].transpose(1, 0, 2) for i in range(count)]
    if key in ("lse", "weights"):
        axes = 3 if key == "lse" else 4
        _expect(array.ndim == axes and array.shape[0] == count, key, array,
                f"{count} × h × n" + (" × m" if key == "weights" else "") + " (batch first, then heads)")
        return [array[i] for i in range(count)]
    _expect(array.ndim == 4 and array.shape[0] == count, key, array, f"{count} × … ({LAYOUTS[layout]})")
    return [array[i].transpose(1, 0, 2) if layout == "bshd" else array[i] for i in range(count)]


def _expect(ok: bool, key: str, array: np.ndarray, shape: str) -> None:
    if not ok:
        raise AttnError("batch.batch_s_layout_gives", key, array_shape=shape_str(array.shape), shape=shape)
