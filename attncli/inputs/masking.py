"""The document's ``mask`` and ``score_bias``, read and checked against the sizes (Part 2 of the contract).

    mask: causal                          # upper-left, also when n ≠ m (PyTorch's is_causal)
    mask: {causal: lower_right, window: 4, keys: [1, 1, 0], matrix: …, convention: block}
    mask: {causal: true, chunk: 8192}     # Llama 4's chunked layers: only the keys of the query's chunk (Part 3)
    score_bias: {matrix: …, alibi: true, relative: {table, buckets, max_distance, bidirectional}}

A score bias's −inf cells mask their keys: they become one more part of the :class:`Mask`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from attncli.core.bias import Relative, ScoreBias, alibi_slopes
from attncli.core.errors import AttnError, describe, shape_str, shorten
from attncli.core.masks import CAUSAL_KINDS, Mask
from attncli.inputs.archives import is_archive
from attncli.inputs.matrices import FILE_KINDS
from attncli.inputs.source import MatrixSource
from attncli.inputs.values import head_count, mapping_of

MASK_PARTS = ("causal", "window", "keys", "matrix", "convention", "chunk")
CONVENTIONS = ("allow", "block")
BIAS_PARTS = ("matrix", "alibi", "relative")
RELATIVE_KEYS = ("table", "buckets", "max_distance", "bidirectional")
MASK_WORDS = ("none", "causal")


def read_mask(builder: MatrixSource, value: Any, n: int, m: int, h: int) -> tuple[Mask | None, str]:
    """``mask:`` as a Mask (None: every key allowed) and how the document gave it: none, causal, matrix or parts."""
    word = value if isinstance(value, str) else None  # a numpy array (Python API) is never compared with a word
    if value is None or word == "none":
        return None, "none"
    if word == "causal":
        return Mask(n, m, causal="upper_left"), "causal"
    if isinstance(value, bool):
        raise AttnError("masking.expected_none_causal_matrix_file", "mask")
    if isinstance(value, dict) and not is_archive(value):
        return _parts(builder, value, n, m, h), "parts"
    if isinstance(value, str) and value == "":
        raise AttnError("masking.empty_file_name_give_none", "mask")
    if isinstance(value, str) and Path(value).suffix.lower() not in FILE_KINDS:
        import difflib

        close = difflib.get_close_matches(Path(value).name.lower()[:100], MASK_WORDS, n=1, cutoff=0.6)
        hint = f"did you mean '{close[0]}'?" if close else "a file name ends in " + ", ".join(FILE_KINDS)
        raise AttnError("masking.not_none_causal_matrix_matrix", "mask", value=shorten(value), hint=hint)
    return Mask(n, m, matrix=_boolean_matrix(builder, "mask", value, n, m, h)), "matrix"


def _parts(builder: MatrixSource, value: dict[str, Any], n: int, m: int, h: int) -> Mask:
    if "random" in value:
        raise AttnError("masking.mask_cannot_random_give_causal", "mask")
    value = mapping_of(value, "mask", MASK_PARTS)
    # (`in` would compare arrays)
    if all(value.get(part) is None or value.get(part) is False for part in (*MASK_PARTS[:4], "chunk")):
        raise AttnError("masking.gives_none_causal_window_keys", "mask")
    convention = value.get("convention", "allow")
    if convention not in CONVENTIONS:
        raise AttnError("masking.not_allow_may_attend_block", "mask.convention", convention=describe(convention))
    causal = value.get("causal")
    if causal is True:
        causal = "upper_left"
    elif causal is False:
        causal = None
    elif causal is not None and causal not in CAUSAL_KINDS:
        raise AttnError("masking.not_true_upper_left_lower_right", "mask.causal", causal=describe(causal))
    window = value.get("window")
    if window is not None:
        window = head_count(window, "mask.window", "is more than 2^31 keys (a window of m keys allows every key)")
    chunk = head_count(value.get("chunk"), "mask.chunk", "is more than 2^31 keys (a chunk of m keys allows every key)")
    keys = None
    if value.get("keys") is not None:
        keys = builder.read("mask.keys", value["keys"], (m,), boolean=True)
        keys = keys.reshape(-1) if keys.ndim == 2 and keys.shape[0] == 1 else keys
        if keys.shape != (m,):
            given = f"has {keys.shape[0]} flags" if keys.ndim == 1 else f"is {shape_str(keys.shape)}"
            raise AttnError("masking.but_there_keys_one_flag", "mask.keys", given=given, m=m)
    matrix = None
    if value.get("matrix") is not None:
        matrix = _boolean_matrix(builder, "mask.matrix", value["matrix"], n, m, h)
    if convention == "block":  # 1/true = masked: flip to our 1 = may attend
        keys = None if keys is None else ~keys
        matrix = None if matrix is None else ~matrix
    return Mask(n, m, causal=causal, window=window, keys=keys, matrix=matrix, chunk=chunk)


def _boolean_matrix(builder: MatrixSource, key: str, value: Any, n: int, m: int, h: int) -> np.ndarray:
    try:
        mask = builder.read(key, value, boolean=True)
    except AttnError as e:
        raise _float_mask_hint(builder, key, value, e) from None
    if mask.ndim == 1 and n == 1:
        mask = mask.reshape(1, -1)
    if mask.shape != (n, m) and mask.shape != (h, n, m):
        per_head = f" or {h}×{n}×{m} (one per head)" if h > 1 else ""
        raise AttnError("masking.but_needs_queries_keys", key, mask_shape=shape_str(mask.shape), n=n, m=m,
                        per_head=per_head)
    return mask


def _float_mask_hint(builder: MatrixSource, key: str, value: Any, error: AttnError) -> AttnError:
    """A mask of 0 and −inf (PyTorch's float attn_mask) read as a boolean fails: say where it belongs."""
    try:
        floats = builder.read(f"{key} (as a score bias)", value, minus_inf=True)
    except AttnError:
        return error
    if np.isneginf(floats).any() and np.all((floats == 0) | np.isneginf(floats)):
        return AttnError("masking.holds_inf_that_float_mask", key)
    return error


def read_score_bias(builder: MatrixSource, value: Any, n: int, m: int, h: int, positions: tuple[np.ndarray, np.ndarray]
                    ) -> ScoreBias | None:
    """``score_bias:`` as a ScoreBias, or None.  ``positions``: the queries' and keys' (n,), (m,)."""
    if value is None or value is False:
        return None
    value = mapping_of(value, "score_bias", BIAS_PARTS, "a mapping with any of matrix, alibi, relative")
    matrix = None
    if value.get("matrix") is not None:
        matrix = builder.read("score_bias.matrix", value["matrix"], (n, m), minus_inf=True)
        if matrix.ndim == 1 and n == 1:
            matrix = matrix.reshape(1, -1)
        if matrix.shape != (n, m) and matrix.shape != (h, n, m):
            per_head = f" or {h}×{n}×{m} (one per head)" if h > 1 else ""
            raise AttnError("masking.but_needs_queries_keys",
                            "score_bias.matrix", mask_shape=shape_str(matrix.shape), n=n, m=m, per_head=per_head)
    slopes = _alibi(builder, value.get("alibi"), h)
    relative = _relative(builder, value.get("relative"), h, positions)
    if matrix is None and slopes is None and relative is None:
        return None
    return ScoreBias(matrix, slopes, relative)


def _alibi(builder: MatrixSource, value: Any, h: int) -> np.ndarray | None:
    if value is None or value is False:
        return None
    if value is True:
        return alibi_slopes(h)
    value = mapping_of(value, "score_bias.alibi", ("slopes",), "true, or a mapping with slopes (one per head)")
    if value.get("slopes") is None:
        return alibi_slopes(h)
    slopes = builder.read("score_bias.alibi.slopes", value["slopes"], (h,))
    slopes = slopes.reshape(-1) if slopes.ndim == 2 and 1 in slopes.shape else slopes
    if slopes.shape != (h,):
        raise AttnError("masking.but_there_query_heads_one",
                        "score_bias.alibi.slopes", slopes_shape=shape_str(slopes.shape), h=h)
    return np.ascontiguousarray(slopes)


def _relative(builder: MatrixSource, value: Any, h: int, positions: tuple[np.ndarray, np.ndarray]) -> Relative | None:
    if value is None or value is False:
        return None
    key = "score_bias.relative"
    value = mapping_of(value, key, RELATIVE_KEYS,
                       "a mapping with table and any of buckets, max_distance, bidirectional")
    buckets = _count(value.get("buckets", 32), f"{key}.buckets", "buckets are more than 2^31 (T5 uses 32)")
    max_distance = _count(value.get("max_distance", 128), f"{key}.max_distance", "is more than 2^31 (T5 uses 128)")
    bidirectional = value.get("bidirectional", True)
    if not isinstance(bidirectional, bool):
        raise AttnError("masking.not_true_encoder_false_decoder",
                        f"{key}.bidirectional", bidirectional=describe(bidirectional))
    exact = (buckets // 2 if bidirectional else buckets) // 2  # distances below this have a bucket each
    if exact < 1 or max_distance <= exact:
        raise AttnError("masking.buckets_max_distance_leave_no_logarithmic", key, buckets=buckets,
                        max_distance=max_distance)
    if value.get("table") is None:
        raise AttnError("masking.required_buckets_heads_t5_s", f"{key}.table")
    table = builder.read(f"{key}.table", value["table"], (buckets, h))
    if table.ndim == 1 and h == 1:
        table = table.reshape(-1, 1)
    if table.shape != (buckets, h):
        raise AttnError("masking.but_needs_buckets_heads", f"{key}.table", table_shape=shape_str(table.shape),
                        buckets=buckets, h=h)
    for name, p in zip(("positions", "context_positions"), positions, strict=True):
        if not np.array_equal(p, np.round(p)):
            raise AttnError("masking.t5_s_buckets_need_whole", key, name=name, p=p[p != np.round(p)][0])
    return Relative(table, buckets, max_distance, bidirectional)


def _count(value: Any, key: str, too_large: str) -> int:
    """A whole number ≥ 1 that has a default: ``null`` is refused like any other non-number (not read as omitted)."""
    count = head_count(value, key, too_large)
    if count is None:
        raise AttnError("masking.not_whole_number", key, value=describe(value))
    return count


def with_bias_mask(mask: Mask | None, bias: ScoreBias | None, n: int, m: int) -> Mask | None:
    """The mask with the score bias's −inf cells masked too (one more part)."""
    if bias is None or bias.matrix is None or not np.isneginf(bias.matrix).any():
        return mask
    finite = ~np.isneginf(bias.matrix)  # (n, m) or (h, n, m)
    if mask is None:
        return Mask(n, m, matrix=finite)
    matrix = finite if mask.matrix is None else mask.matrix & finite
    return Mask(n, m, mask.causal, mask.window, mask.keys, matrix, mask.chunk)
