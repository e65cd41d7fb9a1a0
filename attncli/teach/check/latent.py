"""The slips of ``latent`` (multi-head latent attention), for ``attncli check``'s hints (each the computation again
with one change):

- the rotated part taken at the wrong end of each head (rope.part: first instead of last);
- the shared rotary key left out of the heads' keys (each head's key taken from its own columns of W_UKV alone);
- kv_norm forgotten (the latent used as C·W_DKV gives it);
- DeepSeek V3's YaRN mscale put on the scale once, m instead of m² (with rope.scaling yarn and mscale_all_dim).
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from attncli.core.trace import Trace
from attncli.teach.check.slips import by_spec


def yarn_mscale(trace: Trace) -> float:
    """m = 0.1·mscale_all_dim·ln(factor) + 1, the factor DeepSeek's scale carries squared (1 without one)."""
    rope = trace.spec.rope
    s = None if rope is None else rope.scaling
    if s is None or s.type != "yarn" or not s.mscale_all_dim or s.factor <= 1:
        return 1.0
    return 0.1 * s.mscale_all_dim * math.log(s.factor) + 1.0


def latent_slips(trace: Trace, add) -> None:
    """Add the slips of the document's ``latent`` (none without it)."""
    spec = trace.spec
    lat = spec.latent
    if lat is None:
        return
    add("latent_rope_first", by_spec(trace, rope=replace(spec.rope, part="first")), d_r=lat.d_rope)
    without = lat.kv_down.copy()
    without[:, lat.r_kv:] = 0.0  # no rotary key: every head's key is its k_nope and zeros
    bias = None if lat.kv_down_bias is None else np.concatenate([lat.kv_down_bias[:lat.r_kv], np.zeros(lat.d_rope)])
    add("latent_rope_key_left_out", by_spec(trace, latent=replace(lat, kv_down=without, kv_down_bias=bias)),
        d_r=lat.d_rope)
    add("latent_kv_norm_left_out", by_spec(trace, latent=replace(lat, kv_norm=None)))
    m = yarn_mscale(trace)
    if m != 1.0:
        add("yarn_mscale_once", by_spec(trace, scale=spec.scale / m), m=f"{m:.6g}", m2=f"{m * m:.6g}")
