"""The slips of ``max_logits`` and ``qk_clip``, for ``attncli check``'s hints (each the numbers done with one change):

- the largest logit taken before the scale (of S, not of Z = scale·S; taken before the soft cap, it is the
  classic ``softcap_left_out``);
- γ = τ / S_max for every head, not capped at 1 (a head below τ is never scaled up).
"""

from __future__ import annotations

import numpy as np

from attncli.core.max_logits import gammas, largest
from attncli.core.trace import Trace
from attncli.teach.check.slips import arrays_of


def max_logit_slips(trace: Trace, add) -> None:
    """``add(name, make, **words)`` for each slip this document can show (its largest logits are in the trace)."""
    spec = trace.spec
    if trace.max_logits is None or trace.scores is None:
        return
    if spec.scale != 1 and spec.score_bias is None:
        add("max_logit_unscaled", lambda rounding: _with(trace, largest(trace.scores, spec.allowed)[0]))
    if spec.qk_clip is not None and (trace.max_logits < spec.qk_clip).any():
        add("qk_clip_gamma_uncapped",
            lambda rounding: {**arrays_of(trace), "qk_clip_gamma": spec.qk_clip / trace.max_logits},
            tau=f"{spec.qk_clip:g}")


def _with(trace: Trace, top: np.ndarray) -> dict:
    """The trace's answerable arrays with the largest logits (and what QK-Clip makes of them) replaced."""
    made = {**arrays_of(trace), "max_logits": top}
    if trace.spec.qk_clip is not None:
        made["qk_clip_gamma"] = gammas(top, trace.spec.qk_clip)
    return made
