"""The layouts of :func:`attncli.reference`: which rows of q, k, v (and of every output) are which sequence's.

    bshd  (batch, seqlen, heads, dim)       FlashAttention's (flash_attn_func), the default
    bhsd  (batch, heads, seqlen, dim)       PyTorch's scaled_dot_product_attention and flex_attention
    thd   (total tokens, heads, dim)        packed sequences, cu_seqlens_q / cu_seqlens_k (flash_attn_varlen_func)

Every sequence is seen as views (rows, heads, dim) into the caller's arrays, so nothing is copied; a paged cache
is gathered (``k_cache[block_table[b]]`` flattened, its first ``cache_seqlens[b]`` keys).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attncli.kernel_arrays import ArgumentError, floats, integers, shape_text

LAYOUTS = ("bshd", "bhsd", "thd")
NAMES = {"bshd": "batch × seqlen × heads × dim", "bhsd": "batch × heads × seqlen × dim",
         "thd": "total tokens × heads × dim"}


@dataclass
class Layout:
    """Where sequence i's rows are, in one layout (``cu``: the cumulative lengths of packed sequences)."""

    name: str
    cu: np.ndarray | None = None  # (batch + 1,) with thd

    def rows(self, a: np.ndarray, i: int) -> np.ndarray:
        """Sequence i of ``a`` as (rows, heads, dim), a view."""
        if self.name == "bshd":
            return a[i]
        if self.name == "bhsd":
            return a[i].transpose(1, 0, 2)
        return a[self.cu[i]:self.cu[i + 1]]

    def lse(self, a: np.ndarray, i: int) -> np.ndarray:
        """Sequence i of lse ((batch, h, s_q), or (h, total_q) with thd) as (h, rows)."""
        return a[:, self.cu[i]:self.cu[i + 1]] if self.name == "thd" else a[i]

    def cell(self, index: tuple[int, ...], key: str) -> tuple[int, int, int, int | None]:
        """(batch, head, row, column) of a cell of an output in this layout (column None for lse)."""
        if key == "lse":
            if self.name == "thd":
                h, t = index
                b = int(np.searchsorted(self.cu, t, side="right")) - 1
                return b, h, t - int(self.cu[b]), None
            return index[0], index[1], index[2], None
        if self.name == "thd":
            t, h, c = index
            b = int(np.searchsorted(self.cu, t, side="right")) - 1
            return b, h, t - int(self.cu[b]), c
        if self.name == "bshd":
            return index[0], index[2], index[1], index[3]
        return index[0], index[1], index[2], index[3]


def sizes(layout: str, a: np.ndarray) -> tuple[int, int, int, int]:
    """(batch, rows, heads, dim) of an array in a 4-axis layout."""
    b, x, y, d = a.shape
    return (b, x, y, d) if layout == "bshd" else (b, y, x, d)


def misfit(layout: str, q: np.ndarray, k: np.ndarray, v: np.ndarray) -> str | None:
    """Why q, k and v do not fit ``layout`` (bshd or bhsd), or None."""
    bq, n, h, d_k = sizes(layout, q)
    bk, m, g, d_k2 = sizes(layout, k)
    bv, m2, g2, _ = sizes(layout, v)
    if not bq == bk == bv:
        return f"batch sizes {bq}, {bk}, {bv} differ"
    if g != g2 or m != m2:
        return f"k has {g} heads × {m} keys but v has {g2} × {m2}"
    if d_k != d_k2:
        return f"q's head dim is {d_k} but k's is {d_k2}"
    if g == 0 or h % g:
        return f"q has {h} heads and k {g}: the key/value heads must divide the query heads"
    return None


def check_4d(layout: str, q: np.ndarray, k: np.ndarray, v: np.ndarray) -> None:
    """q, k, v fit ``layout``, or an error naming the shapes and, where the other layout fits, that one."""
    reason = misfit(layout, q, k, v)
    if reason is None:
        return
    other = "bhsd" if layout == "bshd" else "bshd"
    hint = f"; read as {other!r} ({NAMES[other]}) they fit: pass layout={other!r}" if misfit(other, q, k, v) is None \
        else ""
    raise ArgumentError("kernel_layouts.q_k_v_layout", q_shape=shape_text(q.shape), k_shape=shape_text(k.shape),
                        v_shape=shape_text(v.shape), layout=layout, names=NAMES[layout], reason=reason, hint=hint)


def check_thd(q: np.ndarray, k: np.ndarray, v: np.ndarray, cu_q: np.ndarray, cu_k: np.ndarray) -> None:
    """Packed q (total_q, h, d_k), k (total_k, g, d_k), v (total_k, g, d_v) and their cumulative lengths."""
    for name, a in (("q", q), ("k", k), ("v", v)):
        if a.ndim != 3:
            raise ArgumentError("kernel_layouts.but_layout_thd_takes_axes", name=name, a_shape=shape_text(a.shape),
                                names=NAMES['thd'])
    if k.shape[:2] != v.shape[:2] or q.shape[2] != k.shape[2] or k.shape[1] == 0 or q.shape[1] % k.shape[1]:
        raise ArgumentError("kernel_layouts.q_k_v_layout_thd", q_shape=shape_text(q.shape), k_shape=shape_text(k.shape),
                            v_shape=shape_text(v.shape), names=NAMES['thd'])
    for name, cu, total in (("cu_seqlens_q", cu_q, q.shape[0]), ("cu_seqlens_k", cu_k, k.shape[0])):
        if len(cu) < 2 or cu[0] != 0 or cu[-1] != total or (np.diff(cu) < 0).any():
            raise ArgumentError("kernel_layouts.must_start_never_decrease_end", name=name,
                                cu_shape=shape_text(cu.shape), tolist=cu.tolist()[:8], total=total,
                                value='q' if name[-1] == 'q' else 'k')
    if len(cu_q) != len(cu_k):
        raise ArgumentError("kernel_layouts.cu_seqlens_q_but_cu_seqlens_k_one_entry", cu_q_shape=shape_text(cu_q.shape),
                            cu_k_shape=shape_text(cu_k.shape))


def gathered(name: str, cache: np.ndarray, table: np.ndarray | None, lengths: np.ndarray, i: int) -> np.ndarray:
    """Sequence i's keys (or values) from a cache: (cache_seqlens[i], g, d)."""
    if table is None:
        return cache[i, : lengths[i]]
    pages = table[i]
    if (pages >= cache.shape[0]).any():
        raise ArgumentError("kernel_layouts.block_table_names_page_but_pages", i=i, max=int(pages.max()), name=name,
                            cache_shape=shape_text(cache.shape), shape=cache.shape[0])
    return cache[pages].reshape(-1, *cache.shape[2:])[: lengths[i]]


def cached(layout, q, k, v, k_cache, v_cache, table, lengths):
    """Keys and values gathered from a (paged) cache, the new k and v appended."""
    if layout == "thd":
        raise ArgumentError("kernel_layouts.k_cache_takes_layout_bshd_bhsd")
    k_cache, v_cache = floats("k_cache", k_cache, (4,)), floats("v_cache", v_cache, (4,))
    b, _, h, d_k = sizes(layout, q)
    g = k_cache.shape[2]
    if k_cache.shape[:3] != v_cache.shape[:3] or k_cache.shape[3] != d_k or g == 0 or h % g:
        raise ArgumentError("kernel_layouts.q_k_cache_v_cache_caches_pages", q_shape=shape_text(q.shape), layout=layout,
                            k_cache_shape=shape_text(k_cache.shape), v_cache_shape=shape_text(v_cache.shape))
    if table is not None:
        table = integers("block_table", table, 2)
        same_count("block_table", table, b)
        capacity = table.shape[1] * k_cache.shape[1]
    else:
        if k_cache.shape[0] != b:
            raise ArgumentError("kernel_layouts.k_cache_without_block_table_first_axis",
                                k_cache_shape=shape_text(k_cache.shape), b=b)
        capacity = k_cache.shape[1]
    lengths = np.full(b, capacity) if lengths is None else integers("cache_seqlens", lengths)
    if len(lengths) == 1 and b > 1:
        lengths = np.full(b, lengths[0])
    same_count("cache_seqlens", lengths, b)
    if (lengths > capacity).any():
        raise ArgumentError("kernel_layouts.cache_seqlens_holds_but_cache_holds", max=int(lengths.max()),
                            capacity=capacity)
    keys = [gathered("k_cache", k_cache, table, lengths, i) for i in range(b)]
    values = [gathered("v_cache", v_cache, table, lengths, i) for i in range(b)]
    if k is not None or v is not None:
        k, v = floats("k", k, (4,)), floats("v", v, (4,))
        where = Layout(layout)
        b_k, m_k, g_k, _ = sizes(layout, k)
        if (b_k, g_k) != (b, g) or sizes(layout, v)[:3] != (b_k, m_k, g_k) or k.shape[-1] != d_k:
            raise ArgumentError("kernel_layouts.k_v_beside_k_cache_new", k_shape=shape_text(k.shape),
                                v_shape=shape_text(v.shape), k_cache_shape=shape_text(k_cache.shape), b=b, g=g, d_k=d_k,
                                layout=layout)
        keys = [np.concatenate([c, where.rows(k, i)]) for i, c in enumerate(keys)]
        values = [np.concatenate([c, where.rows(v, i)]) for i, c in enumerate(values)]
    where = Layout(layout)
    return where, where, [where.rows(q, i) for i in range(b)], keys, values, g


def same_count(name: str, a: np.ndarray, count: int) -> None:
    if len(a) != count:
        raise ArgumentError("kernel_layouts.but_there_sequences", name=name, a_shape=shape_text(a.shape), count=count)
