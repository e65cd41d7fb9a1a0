"""The slips inside one stage's arithmetic, for ``attncli check``'s hints (issue 31).

Built as :mod:`attncli.teach.check.slips` builds the others, the computation done again with one change:

- softmax itself: the maximum taken down each column instead of along the row, every exponential divided by the
  sum of the whole matrix, the scale put on the weights (c·softmax(S)) or on the output instead of the scores;
- weights and scores confused: the scaled scores used as the weights (no softmax), softmax applied twice, the weights
  written where the scores go;
- an additive bias: subtracted instead of added (for ALiBi, the distance taken the other way round), or added before
  the scale instead of after it;
- a normalisation (pre_norm's RMSNorm or LayerNorm, add_norm's LayerNorm; post_norm, qk_norm and latent's norms in
  :mod:`attncli.teach.check.norm_stages`): taken down the columns, the variance divided by d − 1, ε left out or
  added outside the root, the root forgotten, the other norm's formula, γ or β left out.
"""

from __future__ import annotations

import numpy as np

from attncli.core.softmax import softmax
from attncli.core.trace import Trace
from attncli.teach.check.norm_stages import norm_stage_slips, norm_variants
from attncli.teach.check.slips import Slip, allowed_of, arrays_of, by_stage


def arithmetic_slips(trace: Trace) -> list[Slip]:
    """The slips of this kind the document can show, in the order they are preferred."""
    found: list[Slip] = []
    add = lambda name, make, **words: found.append(Slip(name, make, words))  # noqa: E731
    if trace.spec.normalize == "softmax":
        softmax_arithmetic(trace, add)
    confused(trace, add)
    bias_order(trace, add)
    norm_slips(trace, add)
    return found


def masked_softmax(z: np.ndarray, allowed, shift: np.ndarray, total_axes: tuple[int, ...] = (-1,)) -> np.ndarray:
    """e^(z − shift) over the allowed cells, divided by their sum over ``total_axes``: (h, n, m) -> (h, n, m)."""
    ok = np.ones(z.shape, dtype=bool) if allowed is None else np.broadcast_to(allowed, z.shape)
    e = np.where(ok, np.exp(np.where(ok, z - shift, 0.0)), 0.0)
    return e / e.sum(axis=total_axes, keepdims=True)


def softmax_arithmetic(trace: Trace, add) -> None:
    """Where the maximum is taken, what the exponentials are divided by, where the scale goes."""
    spec, z = trace.spec, trace.scaled_scores
    allowed = allowed_of(spec)
    ok = np.ones(z.shape, dtype=bool) if allowed is None else np.broadcast_to(allowed, z.shape)
    if spec.n > 1:
        column_max = np.where(ok, z, -np.inf).max(axis=-2, keepdims=True)  # (h, 1, m): down each column
        column_max = np.where(np.isfinite(column_max), column_max, 0.0)
        add("max_column", by_stage(trace, lambda: {"weights": masked_softmax(z, allowed, column_max)}))
        top = np.where(ok, z, -np.inf).max(axis=(-2, -1), keepdims=True)  # (h, 1, 1): one shift for the matrix
        top = np.where(np.isfinite(top), top, 0.0)
        add("sum_whole", by_stage(trace, lambda: {"weights": masked_softmax(z, allowed, top, (-2, -1))}))
    if spec.scale != 1.0 and spec.softcap is None and spec.score_bias is None:
        c = spec.scale
        unscaled = softmax(z / c, allowed)  # softmax of the scores themselves
        add("scale_on_weights", by_stage(trace, lambda: {"weights": c * unscaled}), c=f"{c:.4g}")
        add("scale_on_output", by_stage(trace, lambda: {"weights": unscaled}, mix=lambda a, v: c * (a @ v)),
            c=f"{c:.4g}")


def confused(trace: Trace, add) -> None:
    """The scores used as weights, softmax applied twice, the weights written where the scores go."""
    spec, z = trace.spec, trace.scaled_scores
    if spec.normalize != "softmax":
        return
    allowed = allowed_of(spec)
    raw = np.where(np.isfinite(z), z, 0.0) if allowed is None else np.where(allowed, z, 0.0)
    add("scores_as_weights", by_stage(trace, lambda: {"weights": raw}))
    add("softmax_twice", by_stage(trace, lambda: {"weights": softmax(trace.weights, allowed)}))
    add("weights_as_scores", lambda rounding: dict(arrays_of(trace), scores=trace.weights,
                                                   scaled_scores=trace.weights))


def bias_order(trace: Trace, add) -> None:
    """The score bias subtracted instead of added, or added before the scale (c·(S + B) instead of c·S + B)."""
    spec = trace.spec
    if trace.score_bias is None:
        return
    b = np.where(np.isfinite(trace.score_bias), trace.score_bias, 0.0)  # (h, n, m); −inf cells are masked anyway
    z = trace.scaled_scores
    alibi = spec.score_bias.slopes is not None and spec.score_bias.matrix is None and spec.score_bias.relative is None
    add("alibi_reversed" if alibi else "bias_subtracted", by_stage(trace, lambda: {"scaled_scores": z - 2 * b}))
    if spec.scale != 1.0 and spec.softcap is None:
        add("bias_before_scale", by_stage(trace, lambda: {"scaled_scores": z + (spec.scale - 1) * b}),
            c=f"{spec.scale:.4g}")


def norm_slips(trace: Trace, add) -> None:
    """pre_norm (X̂ from X) and add_norm (LayerNorm(R)), each done wrong in one way."""
    spec = trace.spec
    names = {"rms": "RMSNorm", "layer": "LayerNorm"}
    if spec.pre_norm is not None and trace.normalized_inputs is not None:
        p = spec.pre_norm
        for name, wrong in norm_variants(spec.embedded, p.kind, p.gamma, p.beta, p.eps).items():
            add(name, by_stage(trace, lambda wrong=wrong: {"normalized_inputs": wrong}), where="pre_norm",
                norm=names[p.kind], other=names["layer" if p.kind == "rms" else "rms"], d=spec.embedded.shape[1],
                eps=f"{p.eps:g}")
    if spec.add_norm is not None and trace.normalized is not None:
        gamma, beta, eps = spec.add_norm
        for name, wrong in norm_variants(trace.residual, "layer", gamma, beta, eps).items():
            add(name, lambda rounding, wrong=wrong: dict(arrays_of(trace), normalized=wrong), where="add_norm",
                norm="LayerNorm", other="RMSNorm", d=trace.residual.shape[1], eps=f"{eps:g}")
    norm_stage_slips(trace, add)  # post_norm, qk_norm, latent's norms
