"""``attncli.reference``: a kernel's float64 truth in one call (FlashAttention's, SDPA's and FlexAttention's arguments).

The readings are in :func:`reference`'s docstring; the computation is :mod:`attncli.core.reference`'s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from attncli.core.reference import Rules, Sequence, attend_all
from attncli.kernel_arrays import (
    ArgumentError,
    broadcast,
    flags,
    floats,
    integers,
    is_tensor,
    number,
    returned,
    shape_text,
)
from attncli.kernel_layouts import LAYOUTS, NAMES, Layout, cached, check_4d, check_thd, same_count, sizes
from attncli.kernel_mods import Mods

CAUSAL = {True: "bottom_right", "bottom_right": "bottom_right", "lower_right": "bottom_right",
          "upper_left": "upper_left", False: None, None: None}


@dataclass
class Reference:
    """What :func:`reference` computed: numpy float64 arrays, or torch float64 tensors when tensors were given;
    None where not asked for."""

    out: Any
    lse: Any
    weights: Any = None
    dq: Any = None
    dk: Any = None
    dv: Any = None
    dsinks: Any = None
    layout: str = "bshd"
    lse_base: str = "e"
    problem: Any = field(default=None, repr=False)  # the call, for assert_close (attncli.kernel_verdict)


@dataclass
class Problem:
    rules: Rules
    layout: Layout  # the queries' (out, lse, dq)
    keyed: Layout  # the keys' (dk, dv)
    sequences: list[Sequence]
    kv_heads: int
    mods: Mods
    truth: dict[str, np.ndarray]  # out, lse (natural log), dq, dk, dv as computed


def reference(q, k=None, v=None, *, layout: str = "bshd", scale: float | None = None, causal: bool | str = False,
              window: tuple[int, int] = (-1, -1), softcap: float = 0.0, alibi_slopes=None, sinks=None,
              attn_mask=None, score_mod=None, mask_mod=None, cu_seqlens_q=None, cu_seqlens_k=None,
              max_seqlen_q: int | None = None, max_seqlen_k: int | None = None, seqused_k=None, k_cache=None,
              v_cache=None, block_table=None, cache_seqlens=None, dropout_p: float = 0.0, dropout_mask=None,
              dout=None, lse_base: str | int = "e", return_weights: bool = False,
              threads: int | None = None) -> Reference:
    """The float64 attention of q, k, v (and with ``dout`` its backward pass), as a kernel computes it.

    The readings (FlashAttention's where it has one), for query i and key j of a sequence of s_q queries, s_k keys:

        Z = scale·q·kᵀ  → c·tanh(Z / c) (softcap)  → − slope_h·|i + s_k − s_q − j| (alibi_slopes)
          → + attn_mask (additive)  → score_mod(Z, b, h, q_idx, kv_idx)
        masks, all of which must allow a key: a boolean attn_mask (True = attend), mask_mod, causal, window, seqused_k
        causal=True or "bottom_right": j ≤ i + s_k − s_q (FlashAttention's);  "upper_left": j ≤ i (SDPA's is_causal)
        window=(left, right): i + s_k − s_q − left ≤ j ≤ i + s_k − s_q + right, −1 unbounded; causal makes right 0
        a_ij = e^{z_ij} / (Σ_j e^{z_ij} (+ e^{σ_h}, sinks))        lse_i = ln(Σ_j e^{z_ij} (+ e^{σ_h}))
        out = (A ⊙ keep)·V / (1 − p) with dropout_mask (True = kept); ``weights`` are A before dropout

    A query with no allowed key: out 0 and lse −inf, or with sinks lse = σ_h (the sink takes the whole row), and no
    gradient.  (FlashAttention-2 writes out 0 and lse +inf there; FlexAttention out 0 and lse −inf.)

    Inputs: numpy arrays or torch tensors (any float dtype, any device; torch float64 tensors come back when a tensor
    is given).  layout "bshd" (batch, seqlen, heads, dim: FlashAttention's, the default), "bhsd" (SDPA's and
    FlexAttention's), "thd" (packed tokens, heads, dim with cu_seqlens_q / cu_seqlens_k; positions restart in each
    sequence); fewer key/value heads than query heads is grouped-query attention; d_v may differ from d_k.
    score_mod and mask_mod get broadcast index arrays (b 0-d, h (G, 1, 1), q_idx (1, rows, 1), kv_idx (1, 1, keys))
    and the scores (G, rows, keys), as tensors when the inputs are tensors (:mod:`attncli.kernel_mods`).

    Shapes: out as q in the layout given (d_v wide); lse (b, h, s_q) for "bshd" and "bhsd", (h, total_q) for "thd",
    as flash_attn_varlen_func; weights (b, h, s_q, s_k) (with "thd": the longest sequences', zero beyond each);
    dq, dk, dv as q, k, v; dsinks (h,).  Paged KV: sequence b's keys are ``k_cache[block_table[b]]`` flattened, its
    first ``cache_seqlens[b]``, then ``k`` if given (appended, as flash_attn_with_kvcache does); with a cache, ``dq``
    only.  attn_mask and dropout_mask broadcast to (b, h, s_q, s_k) (with "thd" and a cache: the longest sequences').

    >>> import numpy as np, attncli
    >>> q = k = v = np.ones((1, 3, 2, 4))                      # (batch, seqlen, heads, dim)
    >>> r = attncli.reference(q, k, v, causal=True)
    >>> r.out.shape, r.lse.shape, [round(float(x), 4) for x in r.lse[0, 0]]
    ((1, 3, 2, 4), (1, 2, 3), [2.0, 2.6931, 3.0986])
    """
    torch_out = any(is_tensor(x) for x in (q, k, v, k_cache, v_cache, dout))
    if cu_seqlens_q is not None and layout == "bshd" and np.ndim(q) == 3:
        layout = "thd"  # flash_attn_varlen_func's call: 3-axis q with cumulative lengths is packed, never bshd
    if layout not in LAYOUTS:
        raise ArgumentError("kernels.layout_but_must_one", layout=layout, layouts=', '.join(LAYOUTS))
    q = _queries(layout, q)
    where, keyed, queries, keys, values, g = _sequences(layout, q, k, v, cu_seqlens_q, cu_seqlens_k, k_cache, v_cache,
                                                 block_table, cache_seqlens)
    h, d_k, d_v = q.shape[-2 if layout != "bhsd" else 1], q.shape[-1], values[0].shape[-1] if values else 0
    m_max = max((len(x) for x in keys), default=0)  # the masks' and weights' s_k: the keys as given
    keys, values = _used(seqused_k, keys, values)
    n_max = max((len(x) for x in queries), default=0)
    longest = max((len(x) for x in keys), default=0)
    for name, given, real in (("max_seqlen_q", max_seqlen_q, n_max), ("max_seqlen_k", max_seqlen_k, longest)):
        if given is not None and number(name, given) < real:
            raise ArgumentError("kernels.but_longest_sequence_has", name=name, given=given, real=real)
    rules = _rules(h, len(queries), d_k, scale, causal, window, softcap, alibi_slopes, sinks, dropout_p,
                   score_mod, mask_mod, return_weights)
    full = (len(queries), h, n_max, m_max)
    bias, allowed = _attn_mask(attn_mask, full)
    keep = None
    if dropout_mask is not None:
        keep = broadcast("dropout_mask", flags("dropout_mask", dropout_mask), full, "batch × heads × s_q × s_k")
    elif rules.p > 0:
        raise ArgumentError("kernels.dropout_p_but_no_dropout_mask_given", p=rules.p)
    out_shape = (*q.shape[:-1], d_v)
    d_o = None if dout is None else floats("dout", dout, (len(out_shape),))
    if d_o is not None and d_o.shape != out_shape:
        raise ArgumentError("kernels.dout_but_out", d_o_shape=shape_text(d_o.shape),
                            out_shape_shape=shape_text(out_shape))
    arrays = _outputs(layout, q, k, v, d_o, out_shape, h, full, return_weights, k_cache is not None)
    out, lse, weights, dq, dk, dv = arrays
    sequences = [_sequence(i, where, keyed, q_i, k_i, v_i, d_o, bias, allowed, keep, arrays)
                 for i, (q_i, k_i, v_i) in enumerate(zip(queries, keys, values))]
    mods = Mods(score_mod, mask_mod, torch_out)
    attend_all(rules, sequences, g, mods, threads)
    d_sinks = None
    if d_o is not None and rules.sinks is not None:
        d_sinks = np.sum([s.d_sinks for s in sequences], axis=0) if sequences else np.zeros(h)
    truth = {"out": out, "lse": lse.copy(), "dq": dq, "dk": dk, "dv": dv}
    base = _base(lse_base)
    if base == 2:
        lse /= math.log(2.0)  # FlashInfer's log2
    problem = Problem(rules, where, keyed, sequences, g, mods, truth)
    return Reference(*(returned(a, torch_out) for a in (out, lse, weights, dq, dk, dv, d_sinks)), layout=layout,
                     lse_base="e" if base == "e" else "2", problem=problem)


def _queries(layout: str, q) -> np.ndarray:
    q = floats("q", q)
    if q.ndim != (3 if layout == "thd" else 4):
        hint = "; packed tokens (total, heads, dim) are layout='thd' with cu_seqlens_q and cu_seqlens_k" \
            if q.ndim == 3 else ""
        raise ArgumentError("kernels.q_but_layout_takes_axes", q_shape=shape_text(q.shape), layout=layout,
                            names=NAMES[layout], value=3 if layout == 'thd' else 4, hint=hint)
    return q


def _used(seqused_k, keys: list, values: list) -> tuple[list, list]:
    """The first seqused_k[b] keys and values of each sequence (all of them without seqused_k)."""
    if seqused_k is None:
        return keys, values
    used = integers("seqused_k", seqused_k)
    same_count("seqused_k", used, len(keys))
    if (used > [len(x) for x in keys]).any():
        raise ArgumentError("kernels.seqused_k_but_sequences_have_keys", tolist=used.tolist()[:8],
                            value=[len(x) for x in keys][:8])
    return [x[:u] for x, u in zip(keys, used)], [x[:u] for x, u in zip(values, used)]


def _outputs(layout, q, k, v, d_o, out_shape, h, full, return_weights, paged) -> tuple:
    """(out, lse, weights, dq, dk, dv) to be filled, in the layout (None where not asked for)."""
    grads = d_o is not None
    lse = np.empty((h, q.shape[0]) if layout == "thd" else (q.shape[0], h, sizes(layout, q)[1]))
    return (np.empty(out_shape), lse, np.zeros(full) if return_weights else None,
            np.empty_like(q) if grads else None, np.zeros_like(k) if grads and not paged else None,
            np.zeros_like(v) if grads and not paged else None)


def _sequence(i, where, keyed, q_i, k_i, v_i, d_o, bias, allowed, keep, arrays) -> Sequence:
    """Sequence i: its inputs and its views of every output."""
    out, lse, weights, dq, dk, dv = arrays
    n, m = len(q_i), len(k_i)

    def part(a):
        return None if a is None else a[i, :, :n, :m]

    return Sequence(i, q_i, k_i, v_i, where.rows(out, i), where.lse(lse, i), None if d_o is None else
                    where.rows(d_o, i), part(bias), part(allowed), part(keep), part(weights),
                    None if dq is None else where.rows(dq, i), None if dk is None else keyed.rows(dk, i)[:m],
                    None if dv is None else keyed.rows(dv, i)[:m])


def _sequences(layout, q, k, v, cu_q, cu_k, k_cache, v_cache, table, lengths):
    """(the queries' Layout, the keys', the queries, keys and values of each sequence as (rows, heads, dim), key/value
    heads)."""
    if k_cache is not None:
        return cached(layout, q, k, v, k_cache, v_cache, table, lengths)
    if k is None or v is None:
        raise ArgumentError("kernels.k_v_needed_k_cache_v_cache")
    k, v = floats("k", k, (q.ndim,)), floats("v", v, (q.ndim,))
    if layout == "thd":
        if cu_q is None or cu_k is None:
            raise ArgumentError("kernels.layout_thd_needs_cu_seqlens_q_cu_seqlens_k")
        cu_q, cu_k = integers("cu_seqlens_q", cu_q), integers("cu_seqlens_k", cu_k)
        check_thd(q, k, v, cu_q, cu_k)
        where = Layout("thd", cu_q)
        count, g = len(cu_q) - 1, k.shape[1]
        keyed = Layout("thd", cu_k)
        return where, keyed, [where.rows(q, i) for i in range(count)], [keyed.rows(k, i) for i in range(count)], \
            [keyed.rows(v, i) for i in range(count)], g
    if cu_q is not None or cu_k is not None:
        raise ArgumentError("kernels.cu_seqlens_q_cu_seqlens_k_layout_thd_axes", layout=layout)
    check_4d(layout, q, k, v)
    where = Layout(layout)
    rows = [[where.rows(a, i) for i in range(q.shape[0])] for a in (q, k, v)]
    return where, where, rows[0], rows[1], rows[2], sizes(layout, k)[2]


def _rules(h, batch, d_k, scale, causal, window, softcap, alibi, sinks, dropout_p, score_mod, mask_mod,
           weights) -> Rules:
    try:
        kind = CAUSAL[causal]
    except (KeyError, TypeError):
        raise ArgumentError("kernels.causal_but_must_true_bottom_right", causal=causal
                            ) from None
    window = (-1, -1) if window is None else window
    if not isinstance(window, (tuple, list)) or len(window) != 2 or not all(
            isinstance(w, (int, np.integer)) and not isinstance(w, bool) and w >= -1 for w in window):
        raise ArgumentError("kernels.window_but_must_left_right", window=window)
    cap = 0.0 if softcap is None else number("softcap", softcap, 0.0)
    slopes = None
    if alibi is not None:
        slopes = floats("alibi_slopes", alibi, (1, 2))
        slopes = slopes.reshape(1, -1) if slopes.ndim == 1 else slopes
        if slopes.shape[1] != h or slopes.shape[0] not in (1, batch):
            raise ArgumentError("kernels.alibi_slopes_but_needs_one_slope", slopes_shape=shape_text(slopes.shape), h=h,
                                batch=batch, h_2=h)
    logits = None
    if sinks is not None:
        logits = floats("sinks", sinks, (1,))
        if logits.shape != (h,):
            raise ArgumentError("kernels.sinks_long_but_q_has", shape=logits.shape[0], h=h)
    for name, f in (("score_mod", score_mod), ("mask_mod", mask_mod)):
        if f is not None and not callable(f):
            raise TypeError(f"{name} must be a callable, not {type(f).__name__}")
    return Rules(1.0 / math.sqrt(d_k) if scale is None else number("scale", scale), cap or None, slopes,
                 kind, (int(window[0]), int(window[1])), logits, score_mod, mask_mod,
                 number("dropout_p", dropout_p, 0.0, 1.0), weights)


def _attn_mask(mask, full: tuple[int, ...]) -> tuple[np.ndarray | None, np.ndarray | None]:
    """(additive bias, boolean allowed), one of them, broadcast (a view) to (b, h, s_q, s_k)."""
    if mask is None:
        return None, None
    dtype = mask.dtype if hasattr(mask, "dtype") else np.asarray(mask).dtype
    what = "batch × heads × s_q × s_k"
    if str(dtype).endswith("bool"):
        return None, broadcast("attn_mask", flags("attn_mask", mask), full, what)
    return broadcast("attn_mask", floats("attn_mask", mask, finite=False), full, what), None


def _base(lse_base) -> str | int:
    if lse_base in ("e", None):
        return "e"
    if lse_base in (2, 2.0, "2"):
        return 2
    raise ArgumentError("kernels.lse_base_but_must_e_flashattention", lse_base=lse_base)
