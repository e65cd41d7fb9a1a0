"""Q, K and V given directly (Part 3): ``queries``, ``keys``, ``values`` instead of ``inputs`` and ``weights``.

    queries: q.npy        # h × n × d_k (or n × h·d_k): the projections' output, as a kernel receives them
    keys: k.npy           # g × m × d_k (or m × g·d_k)
    values: v.npy         # g × m × d_v (or m × g·d_v)

Every later stage applies as the document says (clip_qkv, qk_norm, rope, the temperature, the scale, soft cap,
bias, mask and sinks); there is no output projection.  The Spec keeps its shape: X is n × 0 (and the keys' source
m × 0 when m ≠ n), each projection weight h × 0 × d, so that every size is known as always, and the projections
stage hands on the given arrays (``Spec.given_qkv``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from attncli.core.errors import AttnError, plural, shape_str
from attncli.core.spec import Spec, positions_of
from attncli.inputs.gradient import read_gradient
from attncli.inputs.layers import read_layers
from attncli.inputs.masking import read_mask, read_score_bias, with_bias_mask
from attncli.inputs.modern import check_grouping, kv_heads_of, read_modern
from attncli.inputs.source import MatrixSource
from attncli.inputs.values import head_count, scale_of, token_labels

GIVEN = ("queries", "keys", "values")
INSTEAD = ("inputs", "context", "weights", "bias", "positional", "pre_norm", "post_norm", "add_norm", "residual")


def is_direct(data: dict[str, Any]) -> bool:
    """Whether the document gives Q, K and V directly (any of them: the others are then required)."""
    return any(data.get(key) is not None for key in GIVEN)


def _check_keys(data: dict[str, Any]) -> None:
    for key in GIVEN:
        if data.get(key) is None:
            others = " and ".join(k for k in GIVEN if k != key)
            raise AttnError("direct.required_q_k_v_given", key, others=others)
    for key in INSTEAD:
        if data.get(key) not in (None, False):
            raise AttnError("direct.cannot_used_queries_keys_values", key)


def _per_head(builder: MatrixSource, key: str, heads: int | None, what: str) -> np.ndarray:
    """A 3-D h × rows × d array as given, or a 2-D rows × h·d one split into ``heads`` (1 unless given)."""
    array = builder.read(key, builder.data[key])
    if array.ndim == 3:
        if heads is not None and array.shape[0] != heads:
            raise AttnError("direct.d_but", key, heads=plural(array.shape[0], 'head'), what=what, heads_2=heads)
        return np.ascontiguousarray(array, dtype=np.float64)
    if array.ndim != 2:
        raise AttnError("direct.expected_h_rows_d_rows", key, array_shape=shape_str(array.shape))
    h = heads or 1
    if array.shape[1] % h:
        raise AttnError("direct.has_columns_which_cannot_split", key, shape=array.shape[1], heads=plural(h, 'head'))
    return np.ascontiguousarray(array.reshape(array.shape[0], h, -1).transpose(1, 0, 2), dtype=np.float64)


def _arrays(builder: MatrixSource) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Q (h, n, d_k), K (g, m, d_k), V (g, m, d_v), their sizes checked against each other."""
    data = builder.data
    q = _per_head(builder, "queries", head_count(data.get("heads"), "heads"), "heads")
    h, kv_heads = q.shape[0], kv_heads_of(data.get("kv_heads"))
    k = _per_head(builder, "keys", kv_heads or (None if np.ndim(builder.read("keys", data["keys"])) == 3 else h),
                  "kv_heads")
    v = _per_head(builder, "values", k.shape[0], "the number of key heads")
    check_grouping(h, k.shape[0])
    if k.shape[2] != q.shape[2]:
        raise AttnError("direct.have_d_k_per_head_but",
                        "keys", shape=k.shape[2], shape_2=q.shape[2])
    if v.shape[1] != k.shape[1]:
        raise AttnError("direct.have_rows_but_there_keys", "values", shape=v.shape[1], shape_2=k.shape[1])
    return q, k, v


def build_direct(builder: MatrixSource) -> Spec:
    """The Spec of a document giving Q, K and V."""
    data = builder.data
    _check_keys(data)
    q, k, v = _arrays(builder)
    (h, n, d_k), (g, m, d_v) = q.shape, v.shape
    fields = read_layers(builder, n, 0, h, d_k, h * d_v)
    modern = read_modern(builder, n, m, 0, d_k, h * d_v, m != n, heads=h, kv_heads=g)
    if m == n and modern["context_positions"] is None:  # the keys are at the queries' positions, as in self-attention
        modern["context_positions"] = modern["positions"]
    fields.update(modern)
    scale, scale_name = scale_of(data.get("scale", "sqrt"), d_k)
    mask, mask_name = read_mask(builder, data.get("mask", "none"), n, m, h)
    positions = positions_of(n, m, fields["positions"], fields["context_positions"], m != n)
    score_bias = read_score_bias(builder, data.get("score_bias"), n, m, h, positions)
    gradient = read_gradient(builder, data.get("gradient"), (n, h * d_v), "output", per_head=(h, n, d_v))
    return Spec(tokens=token_labels(data.get("tokens"), n, "q", "tokens", "queries"),
                context_tokens=token_labels(data.get("context_tokens"), m, "k", "context_tokens", "keys"),
                inputs=np.zeros((n, 0)), context=None if m == n else np.zeros((m, 0)),
                w_q=np.zeros((h, 0, d_k)), w_k=np.zeros((g, 0, d_k)), w_v=np.zeros((g, 0, d_v)),
                b_q=None, b_k=None, b_v=None, w_o=None, b_o=None, scale=scale, scale_name=scale_name,
                mask=with_bias_mask(mask, score_bias, n, m), mask_name=mask_name,
                identity=frozenset(("query", "key", "value")), files=frozenset(getattr(builder, "files", ())),
                score_bias=score_bias, gradient=gradient, given_qkv=(q, k, v), **fields)
