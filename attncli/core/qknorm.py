"""Stage: the queries and keys normalised, ``qk_norm`` (Part 3: Qwen3, Gemma 3, OLMo 2/3, Command R+, StableLM 2,
Llama 4).

    RMSNorm    q̂ = γ ⊙ q / √(mean(q²) + ε)
    LayerNorm  q̂ = γ ⊙ (q − mean(q)) / √(var(q) + ε) + β        (biased variance, as torch.nn.LayerNorm)

over each head's d_k numbers (scope head), or over all h·d_k query numbers of a token, and all g·d_k key
numbers, before the split into heads (scope projection: OLMo 2/3); before the rotation (Q̂ = norm(Q),
Q′ = rope(Q̂)) or after it (after_rope, Llama 4: Q̂ = norm(Q′)).  The values are never normalised.
γ and β are the document's (:class:`~attncli.core.norms.QkNorm`): shared by the heads (d_k) or one row per
head (h × d_k), or one per number of the projection (h·d_k); each is read as (h or 1, 1, d_k).

>>> x = np.array([[[3.0, 4.0]], [[1.0, 1.0]]])          # (h, n, d_k): two heads, one token
>>> normalize(x, np.ones(2), None, "rms", "head", 0.0).round(6).tolist()
[[[0.848528, 1.131371]], [[1.0, 1.0]]]
>>> normalize(x, np.ones(4), None, "rms", "projection", 0.0).round(6).tolist()   # one RMS over all 4 numbers
[[[1.154701, 1.539601]], [[0.3849, 0.3849]]]
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np

from attncli.core import backward as b
from attncli.core.attention import check_finite
from attncli.core.errors import AttnError, quoted
from attncli.core.formulas import norm_text
from attncli.core.norms import QkNorm
from attncli.core.spec import Spec
from attncli.core.stage import Arrays, Quantity, Stage
from attncli.core.threads import in_row_blocks

HAT = "\u0302"  # the combining circumflex: Q̂ is "Q" + HAT


def _axes(scope: str) -> tuple[int, ...]:
    return (-1,) if scope == "head" else (0, -1)  # each head's row, or a token's numbers over every head


def mean_square(x: np.ndarray, scope: str) -> np.ndarray:
    """mean(x²) of each head's row (h, n, 1), or of each token's h·d_k numbers (1, n, 1)."""
    if scope == "head":
        return np.einsum("hnd,hnd->hn", x, x)[..., None] / x.shape[-1]  # no x² array: Q can be large
    return np.einsum("hnd,hnd->n", x, x)[None, :, None] / (x.shape[0] * x.shape[-1])


def normalize(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray | None, kind: str, scope: str, eps: float
              ) -> np.ndarray:
    """``kind`` (rms or layer) norm of x (h, n, d_k) over ``scope`` -> (h, n, d_k); γ, β as the document gives them."""
    centred = _centred(x, kind, scope)
    return _scaled(centred, mean_square(centred, scope), gamma, beta, eps)


def _centred(x: np.ndarray, kind: str, scope: str) -> np.ndarray:
    return x - x.mean(axis=_axes(scope), keepdims=True) if kind == "layer" else x  # LayerNorm subtracts the mean


def _scaled(centred: np.ndarray, spread: np.ndarray, gamma: np.ndarray, beta: np.ndarray | None, eps: float
            ) -> np.ndarray:
    d_k = centred.shape[-1]
    inverse, out = 1.0 / np.sqrt(spread + eps), np.empty(np.broadcast_shapes(centred.shape, spread.shape),
                                                            np.result_type(centred, spread))

    def scale(rows: slice) -> None:  # the rows of one block: the same bits as all at once
        np.multiply(centred[:, rows], inverse[:, rows], out=out[:, rows])  # (h, n, d_k)
        out[:, rows] *= gamma.reshape(-1, 1, d_k)  # (h or 1, 1, d_k)
        if beta is not None:
            out[:, rows] += beta.reshape(-1, 1, d_k)

    in_row_blocks(scale, out.shape[1], out.size)  # (on two threads where Q or K is large)
    return out


def normalized(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray | None, norm: QkNorm, name: str,
               labels: list[str], head: str) -> np.ndarray:
    """:func:`normalize`, or an error naming the row whose mean square (or variance) overflows float64."""
    centred = _centred(x, norm.kind, norm.scope)
    spread = mean_square(centred, norm.scope)  # (h or 1, n, 1)
    if not np.isfinite(spread).all():
        h, row = (int(i) for i in np.argwhere(~np.isfinite(spread[..., 0]))[0])
        where = f"{head} {h + 1}, " if norm.scope == "head" else ""
        what = "mean square" if norm.kind == "rms" else "variance"
        raise AttnError("qknorm.overflow_float64_row_row_too", name=name, place=where, row=row + 1,
                        labels=quoted(labels[row]), what=what)
    out = _scaled(centred, spread, gamma, beta, norm.eps)
    check_finite(out, name, labels)
    return out


def _normalized(spec: Spec, q: np.ndarray, k: np.ndarray) -> Arrays:
    norm = spec.qk_norm
    key_head = "head" if spec.kv_heads == spec.heads else "key/value head"
    return {"normalized_queries": normalized(q, norm.gamma_query, norm.beta_query, norm, "normalized queries",
                                             spec.tokens, "head"),
            "normalized_keys": None if spec.shared_kv is not None else  # (kv_from: an earlier layer's keys)
            normalized(k, norm.gamma_key, norm.beta_key, norm, "normalized keys", spec.context_tokens, key_head)}


def before_rope(spec: Spec) -> bool:
    """Whether the document normalises Q and K before the rotation (and rotates Q̂, K̂)."""
    return spec.qk_norm is not None and not spec.qk_norm.after_rope


def normalized_last(spec: Spec) -> bool:
    """Whether Q̂ and K̂ are what the scores see: normalised after the rotation, or with no rotation."""
    return spec.qk_norm is not None and (spec.qk_norm.after_rope or spec.rope is None)


def rope_inputs(spec: Spec, a: Arrays) -> tuple[np.ndarray, np.ndarray]:
    """What the rotation turns: Q̂ and K̂ when they are normalised first, else Q and K."""
    if before_rope(spec):
        return a["normalized_queries"], a["normalized_keys"]
    return a["queries"], a["keys"]


def _last(a: Arrays, what: str) -> np.ndarray:
    return a[what] if a.get(f"{what}_rotated") is None else a[f"{what}_rotated"]


# ---------------------------------------------------------------- the formulas, as tables and LaTeX write them


def _text(sym: str) -> Callable[[Spec], str]:
    def text(spec: Spec) -> str:
        norm = spec.qk_norm
        source = f"{sym}′" if norm.after_rope and spec.rope is not None else sym
        return f"{sym}{HAT} = {norm_text(norm.kind)}_{norm.scope}({source})"
    return text


def _latex(sym: str) -> Callable[[Spec, Callable[[str], str]], str]:
    def latex(spec: Spec, up: Callable[[str], str]) -> str:
        norm = spec.qk_norm
        source = f"{{{up(sym)}}}'" if norm.after_rope and spec.rope is not None else up(sym)
        return rf"\hat {up(sym)} = \operatorname{{{norm_text(norm.kind)}}}_{{\text{{{norm.scope}}}}}({source})"
    return latex


def rotated_from_normalized(q: Quantity, sym: str) -> Quantity:
    """Q′ or K′ as the rotation makes them: ``Q′ = rope(Q̂)`` when Q and K are normalised first."""
    def text(spec: Spec) -> str:
        plain = q.text(spec)
        return plain.replace(f"rope({sym})", f"rope({sym}{HAT})", 1) if before_rope(spec) else plain

    def latex(spec: Spec, up: Callable[[str], str]) -> str:
        plain = q.latex(spec, up)
        return plain.replace(f"({up(sym)})", rf"(\hat {up(sym)})", 1) if before_rope(spec) else plain
    return replace(q, text=text, latex=latex)


def scores_of_normalized(q: Quantity) -> Quantity:
    """S as the scores make it: ``S = Q̂·K̂ᵀ`` when the normalised Q̂ and K̂ are the last stage before them."""
    def text(spec: Spec) -> str:
        if not normalized_last(spec):
            return q.text(spec)
        qk = (f"Q{HAT}" if spec.query_temperature is None else f"(τ ⊙ Q{HAT})", f"K{HAT}")
        return f"S = vᵀ·tanh({qk[0]}·W₁ + {qk[1]}·W₂)" if spec.score == "additive" else f"S = {qk[0]}·{qk[1]}ᵀ"

    def latex(spec: Spec, up: Callable[[str], str]) -> str:
        if not normalized_last(spec):
            return q.latex(spec, up)
        qs, ks = rf"\hat {up('Q')}", rf"{{\hat {up('K')}}}"
        qs = qs if spec.query_temperature is None else rf"(\tau \odot {qs})"
        if spec.score == "additive":
            return rf"{up('S')} = {up('v')}^\top \tanh({qs} W_1 + {ks} W_2)"
        return rf"{up('S')} = {qs} {ks}^\top"
    return replace(q, text=text, latex=latex)


# ---------------------------------------------------------------- the stage backwards (core.pipeline.backward runs it)


def _qk(spec: Spec, a: Arrays, d: Arrays, sources: tuple[str, str]) -> Arrays:
    """qk_norm's gradients, to ``sources`` (the queries and keys it normalised) and to its γ and β."""
    norm = spec.qk_norm
    axes = (-1,) if norm.scope == "head" else (0, -1)
    out: Arrays = {}
    for what, made, source in zip(("query", "key"), ("normalized_queries", "normalized_keys"), sources, strict=True):
        dy = d.get(made)
        if dy is None:
            continue
        gamma, beta = getattr(norm, f"gamma_{what}"), getattr(norm, f"beta_{what}")
        d_k = dy.shape[-1]
        dx, cells = b.norm_back(a[source], dy, gamma.reshape(-1, 1, d_k), norm.kind, norm.eps, axes)
        out[source] = dx
        out[f"qk_norm_gamma_{what}"] = _to_shape(cells, gamma)
        if beta is not None:
            out[f"qk_norm_beta_{what}"] = _to_shape(dy, beta)
    return out


def _to_shape(cells: np.ndarray, param: np.ndarray) -> np.ndarray:
    """Cells (h, n, d_k) summed to a qk_norm parameter's shape: (d_k,), (h, d_k) or (h·d_k,)."""
    per_head = cells.sum(axis=1)  # (h, d_k)
    return per_head.sum(axis=0) if param.size == cells.shape[-1] else per_head.reshape(param.shape)


def _qk_norm_back(spec: Spec, a: Arrays, d: Arrays) -> Arrays:
    return _qk(spec, a, d, ("queries", "keys"))


def _qk_norm_after_rope_back(spec: Spec, a: Arrays, d: Arrays) -> Arrays:
    rotated = spec.rope is not None
    return _qk(spec, a, d, ("queries_rotated", "keys_rotated") if rotated else ("queries", "keys"))


NORMALIZED = (Quantity("normalized_queries", f"Q{HAT}", "Normalised queries", "h n d_k", "qk_norm:", "", False,
                       _text("Q"), _latex("Q"), checkable=True, steps=("qk_norm",)),
              Quantity("normalized_keys", f"K{HAT}", "Normalised keys", "g m d_k", "qk_norm:", "", False,
                       _text("K"), _latex("K"), checkable=True, steps=("qk_norm",)))

# Two places in the list, one of them present: before the rotation (the usual), or after it (after_rope: true).
QK_NORM = Stage("qk_norm", "Q̂, K̂ = qk_norm(Q), qk_norm(K)", ("queries", "keys"), NORMALIZED,
                lambda spec, a: _normalized(spec, a["queries"], a["keys"]), before_rope,
                backward=_qk_norm_back, explained=("qk_norm",))
QK_NORM_AFTER_ROPE = Stage("qk_norm_after_rope", "Q̂, K̂ = qk_norm(Q′), qk_norm(K′)",
                           ("queries", "keys", "queries_rotated", "keys_rotated"), NORMALIZED,
                           lambda spec, a: _normalized(spec, _last(a, "queries"), _last(a, "keys")),
                           lambda spec: spec.qk_norm is not None and spec.qk_norm.after_rope,
                           backward=_qk_norm_after_rope_back)  # (its step is qk_norm's, named where qk_norm
#   usually is: explained= stays on QK_NORM)
