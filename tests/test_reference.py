"""attncli.reference on numpy arrays: hand-worked numbers, the contract's compute on the same arrays, and the
consistency a kernel engineer relies on (each packed sequence run alone = packed; paged = unpaged; merged
splits = whole), within 1e-12 of the largest entry; the empty-row rule; bad arguments named with their shapes."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest

import attncli
from attncli.kernel_arrays import ArgumentError

TOL = 1e-12
KEYS = ("out", "lse", "dq", "dk", "dv")


def close(got, want) -> None:
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape
    inf = np.isneginf(want)
    assert (np.isneginf(got) == inf).all()
    scale = max(float(np.abs(want[~inf]).max(initial=0.0)), 1e-300)
    assert float(np.abs(got[~inf] - want[~inf]).max(initial=0.0)) <= TOL * scale


def normal(rng, *shape):
    return rng.normal(size=shape)


def test_hand_worked_causal_lse_and_output():
    """q = k = v = 1 (d = 4): every score is 4/√4 = 2, query i sees i + 1 keys: lse = 2 + ln(i + 1), out = 1."""
    q = np.ones((1, 3, 2, 4))
    r = attncli.reference(q, q, q, causal=True)
    close(r.lse[0, 1], [2.0, 2.0 + math.log(2), 2.0 + math.log(3)])
    close(r.out, np.ones((1, 3, 2, 4)))
    r2 = attncli.reference(q, q, q, causal=True, lse_base=2)
    close(r2.lse, r.lse / math.log(2))


def test_the_same_as_compute_on_a_document():
    """A kernel document (Q, K, V given, causal, soft cap, sinks, dO) through attncli.compute, the contract's path."""
    rng = np.random.default_rng(0)
    q, k, v, d_o = normal(rng, 4, 6, 8), normal(rng, 2, 6, 8), normal(rng, 2, 6, 5), normal(rng, 4, 6, 5)
    sinks = normal(rng, 4)
    trace = attncli.compute({"queries": q, "keys": k, "values": v, "mask": "causal", "softcap": 3.0,
                             "sinks": sinks.tolist(), "gradient": d_o})
    t = lambda x: x.transpose(1, 0, 2)[None]  # noqa: E731  (h, n, d) -> (1, n, h, d)
    r = attncli.reference(t(q), t(k), t(v), causal=True, softcap=3.0, sinks=sinks, dout=t(d_o))
    close(r.out, t(trace.head_outputs))
    close(r.lse[0], trace.lse)
    close(r.dq, t(trace.grad_kernel_queries))
    close(r.dk, t(trace.grad_kernel_keys))
    close(r.dv, t(trace.grad_values))
    close(r.dsinks, trace.gradients["grad_sinks"])


def _varlen(rng, lengths_q, lengths_k, h=4, g=2, d_k=5, d_v=3):
    cu_q, cu_k = np.concatenate([[0], np.cumsum(lengths_q)]), np.concatenate([[0], np.cumsum(lengths_k)])
    return (normal(rng, cu_q[-1], h, d_k), normal(rng, cu_k[-1], g, d_k), normal(rng, cu_k[-1], g, d_v),
            normal(rng, cu_q[-1], h, d_v), cu_q, cu_k)


@pytest.mark.parametrize("options", [{}, {"causal": True}, {"causal": "upper_left", "window": (2, -1)},
                                     {"window": (3, 1), "softcap": 2.0, "alibi_slopes": [0.5, 0.25, 0.1, 0.0]}])
def test_each_packed_sequence_run_alone_is_the_packed_one(options):
    rng = np.random.default_rng(1)
    lengths_q, lengths_k = [3, 1, 5, 0], [4, 6, 5, 2]
    q, k, v, d_o, cu_q, cu_k = _varlen(rng, lengths_q, lengths_k)
    sinks = normal(rng, 4)
    r = attncli.reference(q, k, v, layout="thd", cu_seqlens_q=cu_q, cu_seqlens_k=cu_k, max_seqlen_q=5,
                          max_seqlen_k=6, dout=d_o, sinks=sinks, **options)
    assert r.lse.shape == (4, cu_q[-1])
    d_sinks = 0.0
    for i in range(4):
        rows, keys = slice(cu_q[i], cu_q[i + 1]), slice(cu_k[i], cu_k[i + 1])
        alone = attncli.reference(q[None, rows], k[None, keys], v[None, keys], dout=d_o[None, rows], sinks=sinks,
                                  **options)
        close(r.out[rows], alone.out[0])
        close(r.lse[:, rows], alone.lse[0])
        close(r.dq[rows], alone.dq[0])
        close(r.dk[keys], alone.dk[0])
        close(r.dv[keys], alone.dv[0])
        d_sinks = d_sinks + alone.dsinks
    close(r.dsinks, d_sinks)


def test_seqused_k_is_the_shorter_keys():
    rng = np.random.default_rng(2)
    q, k, v, d_o = normal(rng, 2, 4, 2, 3), normal(rng, 2, 7, 2, 3), normal(rng, 2, 7, 2, 3), normal(rng, 2, 4, 2, 3)
    r = attncli.reference(q, k, v, causal=True, seqused_k=np.array([5, 7]), dout=d_o)
    alone = attncli.reference(q[:1], k[:1, :5], v[:1, :5], causal=True, dout=d_o[:1])
    for key in KEYS:
        close(getattr(r, key)[:1, :5] if key in ("dk", "dv") else getattr(r, key)[:1], getattr(alone, key))
    assert (r.dk[0, 5:] == 0).all()


@pytest.mark.parametrize("layout", ["bshd", "bhsd"])
def test_paged_is_unpaged(layout):
    rng = np.random.default_rng(3)
    b, n, h, g, d_k, d_v, page, pages = 3, 4, 4, 2, 5, 3, 4, 3
    k_cache, v_cache = normal(rng, 12, page, g, d_k), normal(rng, 12, page, g, d_v)
    table = rng.permutation(12)[: b * pages].reshape(b, pages)
    lengths = np.array([9, 12, 4])
    q = normal(rng, b, n, h, d_k)
    d_o = normal(rng, b, n, h, d_v)
    if layout == "bhsd":
        q, d_o = q.transpose(0, 2, 1, 3), d_o.transpose(0, 2, 1, 3)
    k_new, v_new = normal(rng, b, 2, g, d_k), normal(rng, b, 2, g, d_v)  # appended after each cache
    if layout == "bhsd":
        k_new, v_new = k_new.transpose(0, 2, 1, 3), v_new.transpose(0, 2, 1, 3)
    r = attncli.reference(q, k_new, v_new, k_cache=k_cache, v_cache=v_cache, block_table=table,
                          cache_seqlens=lengths, causal=True, layout=layout, dout=d_o)
    assert r.dk is None and r.dv is None
    for i in range(b):
        keys = k_cache[table[i]].reshape(-1, g, d_k)[: lengths[i]]
        values = v_cache[table[i]].reshape(-1, g, d_v)[: lengths[i]]
        new_k, new_v = (x[i].transpose(1, 0, 2) if layout == "bhsd" else x[i] for x in (k_new, v_new))
        keys, values = np.concatenate([keys, new_k]), np.concatenate([values, new_v])
        if layout == "bhsd":
            keys, values = keys.transpose(1, 0, 2), values.transpose(1, 0, 2)
        alone = attncli.reference(q[i:i + 1], keys[None], values[None], causal=True, layout=layout,
                                  dout=d_o[i:i + 1])
        for key in ("out", "lse", "dq"):
            close(getattr(r, key)[i:i + 1], getattr(alone, key))


def test_a_cache_without_a_block_table_is_per_sequence():
    rng = np.random.default_rng(6)
    q, k_cache, v_cache = normal(rng, 2, 3, 2, 4), normal(rng, 2, 8, 1, 4), normal(rng, 2, 8, 1, 2)
    r = attncli.reference(q, k_cache=k_cache, v_cache=v_cache, cache_seqlens=[5, 8], window=(2, 0))
    for i, length in enumerate((5, 8)):
        alone = attncli.reference(q[i:i + 1], k_cache[i:i + 1, :length], v_cache[i:i + 1, :length], window=(2, 0))
        close(r.out[i:i + 1], alone.out)
        close(r.lse[i:i + 1], alone.lse)


def test_merged_splits_are_the_whole():
    """Each split's partial is the reference on that split's keys (one split empty: (0, −inf))."""
    rng = np.random.default_rng(4)
    q, k, v = normal(rng, 2, 5, 4, 3), normal(rng, 2, 11, 2, 3), normal(rng, 2, 11, 2, 6)
    allowed = rng.random((2, 4, 5, 11)) < 0.7
    whole = attncli.reference(q, k, v, attn_mask=allowed, softcap=4.0)
    outs, lses = [], []
    for lo, hi in ((0, 4), (4, 4), (4, 9), (9, 11)):
        part = attncli.reference(q, k[:, lo:hi], v[:, lo:hi], attn_mask=allowed[..., lo:hi], softcap=4.0)
        outs.append(part.out)
        lses.append(part.lse)
    out, lse = attncli.merge(outs, lses)
    close(out, whole.out)
    close(lse, whole.lse)
    bhsd = [o.transpose(0, 2, 1, 3) for o in outs]  # (b, h, s, d) beside lse (b, h, s): SDPA's layout
    out, lse = attncli.merge(bhsd, lses)
    close(out, whole.out.transpose(0, 2, 1, 3))
    close(lse, whole.lse)


def test_a_query_with_no_key_gets_zero_and_minus_infinity_or_the_sink():
    q = np.ones((1, 3, 1, 2))
    mask = np.array([True, False, True])[None, None, :, None]  # query 1 sees no key
    r = attncli.reference(q, q, q, attn_mask=mask, dout=np.ones((1, 3, 1, 2)))
    assert r.lse[0, 0, 1] == -np.inf and (r.out[0, 1] == 0).all() and (r.dq[0, 1] == 0).all()
    s = attncli.reference(q, q, q, attn_mask=mask, sinks=[0.5])
    assert s.lse[0, 0, 1] == 0.5 and (s.out[0, 1] == 0).all()
    w = attncli.reference(q, q, q, window=(0, 0), causal=True, layout="bshd")  # only the diagonal
    close(w.out, q)


def test_additive_and_boolean_masks_broadcast():
    rng = np.random.default_rng(5)
    q, k, v = normal(rng, 2, 3, 2, 4), normal(rng, 2, 5, 2, 4), normal(rng, 2, 5, 2, 4)
    bias = normal(rng, 3, 5)
    bias[1, 2] = -np.inf
    r = attncli.reference(q, k, v, attn_mask=bias)
    z = np.einsum("bihd,bjhd->bhij", q, k) / 2.0 + bias
    lse = np.log(np.exp(z).sum(-1))
    close(r.lse, lse)
    keep = rng.random((2, 1, 3, 5)) < 0.6
    as_flags = attncli.reference(q, k, v, attn_mask=keep)
    as_bias = attncli.reference(q, k, v, attn_mask=np.where(keep, 0.0, -np.inf))
    close(as_flags.out, as_bias.out)
    close(as_flags.lse, as_bias.lse)


def test_a_bhsd_array_given_as_bshd_is_refused_naming_the_layout_that_fits():
    q, k = np.zeros((2, 8, 5, 4)), np.zeros((2, 2, 7, 4))  # (b, h, s, d) with 8 query heads, 2 key heads
    with pytest.raises(attncli.AttnError, match=r"2 × 8 × 5 × 4.*layout='bhsd'"):
        attncli.reference(q, k, k)
    with pytest.raises(ValueError, match="dropout_mask"):
        attncli.reference(q, k, k, layout="bhsd", dropout_p=0.1)
    with pytest.raises(ValueError, match=r"dout is 1 × 2"):
        attncli.reference(q, k, k, layout="bhsd", dout=np.zeros((1, 2)))
    with pytest.raises(ArgumentError, match="causal"):
        attncli.reference(q, k, k, layout="bhsd", causal="diagonal")
    with pytest.raises(TypeError, match="complex"):
        attncli.reference(q + 1j, k, k, layout="bhsd")
    with pytest.raises(TypeError, match="bool"):
        attncli.reference(q > 0, k, k, layout="bhsd")
    with pytest.raises(ArgumentError, match=r"sinks is 3 long but q has 8 heads"):
        attncli.reference(q, k, k, layout="bhsd", sinks=[1.0, 2.0, 3.0])
    with pytest.raises(ArgumentError, match=r"attn_mask is 3 × 3.*2 × 8 × 5 × 7"):
        attncli.reference(q, k, k, layout="bhsd", attn_mask=np.ones((3, 3), dtype=bool))


def test_import_attncli_imports_no_torch_yaml_rich_or_typer():
    code = ("import sys, attncli, numpy as np; r = attncli.reference(np.ones((1, 2, 1, 2)), np.ones((1, 2, 1, 2)), "
            "np.ones((1, 2, 1, 2)), dout=np.ones((1, 2, 1, 2))); attncli.merge([r.out], [r.lse]); "
            "print(sorted(m for m in ('torch', 'yaml', 'rich', 'typer') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert done.stdout.strip() == "[]"


def naive(q, k, v, scale, causal, window, softcap, slopes, sinks):
    """The readings of the docstring, one query and one key at a time ("bshd", one batch element)."""
    n, h, _ = q.shape
    m, g, d_v = v.shape
    out, lse = np.zeros((n, h, d_v)), np.zeros((h, n))
    off = 0 if causal == "upper_left" else m - n
    left, right = window
    right = 0 if causal else right
    for head in range(h):
        kv = head // (h // g)
        for i in range(n):
            z = {}
            for j in range(m):
                if (left >= 0 and j < i + off - left) or (right >= 0 and j > i + off + right):
                    continue
                score = scale * float(q[i, head] @ k[j, kv])
                score = softcap * math.tanh(score / softcap) if softcap else score
                z[j] = score - slopes[head] * abs(i + m - n - j)
            terms = [math.exp(x) for x in z.values()] + ([math.exp(sinks[head])] if sinks is not None else [])
            total = sum(terms)
            lse[head, i] = math.log(total) if total > 0 else -math.inf
            for j, x in z.items():
                out[i, head] += math.exp(x) / total * v[j, kv]
    return out, lse


@pytest.mark.parametrize("seed", range(6))
def test_the_readings_one_cell_at_a_time(seed):
    """Causal alignments, the window's bounds, soft cap, ALiBi and sinks against a loop over queries and keys."""
    rng = np.random.default_rng(30 + seed)
    n, m, g = int(rng.integers(1, 7)), int(rng.integers(1, 9)), int(rng.integers(1, 3))
    h = g * int(rng.integers(1, 3))
    q, k, v = normal(rng, 1, n, h, 3), normal(rng, 1, m, g, 3), normal(rng, 1, m, g, 2)
    causal = (False, True, "upper_left")[seed % 3]
    window = (int(rng.integers(-1, 4)), int(rng.integers(-1, 4)))
    softcap = (0.0, 2.5)[seed % 2]
    slopes = rng.uniform(0, 1, h)
    sinks = normal(rng, h) if seed >= 3 else None
    r = attncli.reference(q, k, v, scale=0.7, causal=causal, window=window, softcap=softcap, alibi_slopes=slopes,
                          sinks=sinks)
    out, lse = naive(q[0], k[0], v[0], 0.7, causal, window, softcap, slopes, sinks)
    close(r.out[0], out)
    close(r.lse[0], lse)
