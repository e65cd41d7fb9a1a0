"""The attention's backward pass without n × m matrices, as FlashAttention-2 does it: D first, then tile by tile.

    D = rowsum(dH ⊙ H)                                   (h, n): once, before any tile
    for each key/value head, each of its query heads, each block of queries and each tile of keys:
        Z = scale·Q_b·K_tᵀ (→ c·tanh(Z / c)) + B         recomputed from Q, K (the kernel's view) …
        P = exp(Z − lse_b)                                … and lse: P is A's tile, masked cells 0
        dZ = P ⊙ (dH_b·V_tᵀ − D_b)
        dS = scale·dZ (· (1 − tanh²))
        dQ_b += dS·K_t     dK_t += dSᵀ·Q_b     dV_t += Pᵀ·dH_b

lse (h, n) from the forward holds each row's normaliser, the sink's term included, so P needs no row sums.
The row terms are folded into the products as one more column (no pass of their own over the tile):
Z − lse = [scale·Q_b, −lse_b]·[K_t, 1]ᵀ (without a soft cap, which comes between) and dA − D = [dH_b, −D_b]·[V_t, 1]ᵀ.
A job is one key/value head: it alone writes its dK and dV and its query heads' dQ, so jobs run in parallel
without sharing a sum.  Memory: the gradients of Q, K and V and one tile of each intermediate per thread.
The result equals :mod:`attncli.core.gradients`' steps on the full matrices to rounding
(tests/test_backward_stream.py).
"""

from __future__ import annotations

import threading

import numpy as np

from attncli.core.backward import sink_back
from attncli.core.scores import kv_head_of
from attncli.core.spec import Spec
from attncli.core.stage import Arrays
from attncli.core.threads import run_parallel, stopped
from attncli.core.tiles import blocks
from attncli.core.vnorm import mixed, mixed_key

ROWS, KEYS = 256, 512  # a tile of queries × keys: 1 MiB of float64, a few of them per thread


def attention_backward(spec: Spec, a: Arrays, d: Arrays, threads: int | None = None) -> Arrays:
    """The gradients the attention stages (scores … H = A·V) pass back, from dH = ``d["head_outputs"]``: those of
    the kernel's view (dQ, dK), of V, of the sinks, and ``delta`` (D)."""
    d_h = d["head_outputs"]  # (h, n, d_v)
    q, k, v = a["kernel_queries"], a["kernel_keys"], mixed(a, spec)  # V, or V̂ with v_norm
    delta = np.einsum("hnd,hnd->hn", d_h, a["head_outputs"])  # D first (h, n)
    out = {"kernel_queries": _side_by_side(q.shape), "kernel_keys": _side_by_side(k.shape),
           mixed_key(spec): _side_by_side(v.shape)}
    job = _Job(spec, q, k, v, d_h, a["lse"], delta, out)
    run_parallel(job, list(range(spec.kv_heads)), None, threads)
    out["delta"] = delta
    if spec.sinks is not None:
        out["sinks"] = sink_back(a["sink_weights"], delta)
    return out


def _side_by_side(shape: tuple[int, ...]) -> np.ndarray:
    """Zeros of (h, n, d) stored as (n, h·d), the heads side by side as the projections lay them out: their
    backward (:func:`attncli.core.backward.project_back`) reads the gradient without a copy of it."""
    h, n, d = shape
    return np.zeros((n, h * d)).reshape(n, h, d).transpose(1, 0, 2)


class _Job:
    """One key/value head's share of the backward pass (see the module's docstring).

    The scale is folded in once: Z from scale·Q_b, and dQ, dK summed from dZ (through the cap's 1 − tanh²) and
    multiplied by the scale when the job ends.  Each thread reuses its own tiles (no allocation per tile)."""

    def __init__(self, spec: Spec, q, k, v, d_h, lse, delta, out: Arrays) -> None:
        self.spec, self.q, self.k, self.v, self.d_h, self.delta = spec, q, k, v, d_h, delta
        self.lse = np.where(np.isneginf(lse), np.inf, lse)  # a row with no key: exp(z − ∞) = 0, no weight at all
        self.dq, self.dk, self.dv = out["kernel_queries"], out["kernel_keys"], out[mixed_key(spec)]
        self.kv = kv_head_of(spec.heads, spec.kv_heads)
        self.p_q, self.p_k = spec.query_positions, spec.key_positions
        self.local = threading.local()

    def tiles(self) -> _Tiles:
        w = getattr(self.local, "w", None)
        if w is None:
            w = self.local.w = _Tiles(self.spec.m, self.spec.d_k, self.spec.d_v)
        return w

    @np.errstate(over="ignore", invalid="ignore", under="ignore")
    def __call__(self, j: int) -> None:
        spec, w = self.spec, self.tiles()
        d_k, d_v = spec.d_k, spec.d_v
        np.copyto(w.k[:, :d_k], self.k[j])  # [K, 1] and [V, 1] of this key/value head (m, d + 1)
        np.copyto(w.v[:, :d_v], self.v[j])
        heads = [int(h) for h in np.flatnonzero(self.kv == j)]
        for h in heads:
            for lo, hi in blocks(spec.n, ROWS):
                if stopped():  # Ctrl-C or an error in another job: the rest is not wanted
                    return
                b = hi - lo
                np.multiply(self.q[h, lo:hi], spec.scale, out=w.q[:b, :d_k])  # [scale·Q_b, −lse_b], once per block
                np.negative(self.lse[h, lo:hi], out=w.q[:b, d_k])
                np.copyto(w.dh[:b, :d_v], self.d_h[h, lo:hi])  # [dH_b, −D_b]
                np.negative(self.delta[h, lo:hi], out=w.dh[:b, d_v])
                start, stop = (0, spec.m) if spec.mask is None else spec.mask.key_span(lo, hi)
                for s0, s1 in blocks(stop - start, KEYS):
                    self.tile(h, j, lo, hi, start + s0, start + s1, w)
        for h in heads:
            self.dq[h] *= spec.scale  # dS = scale·dZ: dQ = dS·K, dK = dSᵀ·Q
        self.dk[j] *= spec.scale

    def tile(self, h: int, j: int, lo: int, hi: int, s0: int, s1: int, w: _Tiles) -> None:
        """One tile's share of dQ, dK and dV: queries lo … hi − 1 of head h, keys s0 … s1 − 1 of head j."""
        spec = self.spec
        allowed = None if spec.mask is None else spec.mask.block(lo, hi, s0, s1, head=h)
        if allowed is not None and not allowed.any():
            return
        b, t = hi - lo, s1 - s0
        k_t, d_hb = w.k[s0:s1, : spec.d_k], self.d_h[h, lo:hi]
        z, d_z, cap = (w.cells[i][: b * t].reshape(b, t) for i in range(3))
        p = self.weights(h, lo, hi, s0, s1, w, z, cap)  # A's tile
        if allowed is not None:
            np.copyto(p, 0.0, where=~allowed)
        np.matmul(w.dh[:b], w.v[s0:s1].T, out=d_z)  # dA − D = [dH_b, −D_b]·[V_t, 1]ᵀ
        d_z *= p  # dZ = P ⊙ (dA − D)
        if spec.softcap is not None:  # through the cap: × (1 − tanh²)
            np.multiply(cap, cap, out=cap)
            np.subtract(1.0, cap, out=cap)
            d_z *= cap
        self.dq[h, lo:hi] += np.matmul(d_z, k_t, out=w.dq[:b])
        self.dk[j, s0:s1] += np.matmul(d_z.T, self.q[h, lo:hi], out=w.dk[:t])
        self.dv[j, s0:s1] += np.matmul(p.T, d_hb, out=w.dv[:t])

    def weights(self, h: int, lo: int, hi: int, s0: int, s1: int, w: _Tiles, z: np.ndarray,
                cap: np.ndarray) -> np.ndarray:
        """P = exp(Z − lse) of the tile into ``z`` (the cap's tanh left in ``cap``)."""
        spec, b = self.spec, hi - lo
        if spec.softcap is None:
            np.matmul(w.q[:b], w.k[s0:s1].T, out=z)  # Z − lse = [scale·Q_b, −lse_b]·[K_t, 1]ᵀ (b, t)
        else:
            np.matmul(w.q[:b, : spec.d_k], w.k[s0:s1, : spec.d_k].T, out=z)  # scale·Q_b·K_tᵀ
            np.divide(z, spec.softcap, out=cap)
            np.tanh(cap, out=cap)
            np.multiply(cap, spec.softcap, out=z)
            z -= self.lse[h, lo:hi, None]
        if spec.score_bias is not None:
            z += spec.score_bias.block(spec.heads, self.p_q, self.p_k, lo, hi, s0, s1, head=h)
        return np.exp(z, out=z)


class _Tiles:
    """One thread's tiles: Z (then P), dA (then dZ), the cap's tanh, the products' rows, and the row terms' columns:
    [scale·Q_b, −lse_b], [dH_b, −D_b], and [K, 1], [V, 1] of the job's key/value head."""

    def __init__(self, m: int, d_k: int, d_v: int) -> None:
        self.cells = [np.empty(ROWS * KEYS) for _ in range(3)]
        self.q, self.dh = np.empty((ROWS, d_k + 1)), np.empty((ROWS, d_v + 1))
        self.k, self.v = np.ones((m, d_k + 1)), np.ones((m, d_v + 1))
        self.dq, self.dk, self.dv = np.empty((ROWS, d_k)), np.empty((KEYS, d_k)), np.empty((KEYS, d_v))
