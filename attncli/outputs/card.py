"""The conventions card: one document's attention written as the arguments of six kernel libraries.

A kernel library receives Q, K and V as attncli's ``kernel_queries``, ``kernel_keys`` and ``values`` (h × n × d_k,
g × m × d_k, g × m × d_v) and applies the rest itself: the scale, the soft cap, a bias, the mask, the sinks.  Each
library writes the same rule in its own way, and the bugs its users report are those conventions:

    rule (attncli)               SDPA          FlexAttention     FlashAttention  JAX           FlashInfer
    causal j ≤ i (upper_left)    is_causal     kv_idx <= q_idx   if n = m        is_causal     if n = m
    causal j ≤ i + m − n         a mask        an offset         causal=True     a mask        causal=True
    window W, causal: j > i′ − W a mask        mask_mod          (W − 1, 0)      (W − 1, 0)    window_left=W−1
    window W: |i − j| < W        a mask        mask_mod          (W − 1, W − 1)  (W − 1, W − 1) custom_mask
    soft cap c·tanh(z / c)       none          score_mod         softcap         none          logits_soft_cap
    lse                          not returned  natural log       natural log     not returned  base 2

:func:`card` reads a :class:`~attncli.core.spec.Spec` and returns plain data (lists of code lines, argument
mappings, sentence ids); the views render it and the JSON writes it.  The torch lines run as printed
(tests/test_card.py runs them against attncli's own numbers); FlashAttention, JAX and FlashInfer are checked by a
small numpy reading of their documented semantics.
"""

from __future__ import annotations

from attncli.core.spec import Spec
from attncli.outputs.card_code import flash, flashinfer, flex, hf, jax, sdpa, setup
from attncli.outputs.card_facts import Card, facts_of


def card(spec: Spec) -> Card:
    """The conventions card of ``spec``: the setup, then one entry per library."""
    f = facts_of(spec)
    export = ["kernel_queries", "kernel_keys", "values"]
    export += ["scaled_scores"] * f.matrix + ["score_bias"] * f.bias_from_file
    facts = {"heads": f.h, "kv_heads": f.g, "n": f.n, "m": f.m, "scale": f.scale, "causal": f.causal,
             "window": f.window, "chunk": f.chunk, "key_padding": f.keys is not None, "mask_matrix": f.matrix,
             "softcap": f.softcap, "alibi_slopes": f.slopes, "bias_matrix": f.bias_from_file, "sinks": f.sinks,
             "empty_queries": list(f.empty)}
    return Card(export, setup(f), [sdpa(f), flex(f), flash(f), hf(f), jax(f), flashinfer(f)], facts)


def export_command(c: Card, path: str) -> str:
    """The command that writes the arrays the setup reads, for the document at ``path``."""
    import shlex

    return f"attncli compute {shlex.quote(path)} -o kernel.npz " + " ".join(f"--only {k}" for k in c.export)


def card_json(c: Card, path: str, language: str = "en") -> bytes:
    import orjson

    return orjson.dumps(card_dict(c, path, language), option=orjson.OPT_INDENT_2) + b"\n"


def card_dict(c: Card, path: str, language: str = "en") -> dict:
    """The card as JSON: the facts, the setup and one object per library (docs/kernels.md, "Conventions card")."""
    from attncli.outputs.card_words import sentence

    def said(items: list[tuple[str, dict]]) -> list[dict]:
        return [{"id": key, "text": sentence(language, key, **fields)} for key, fields in items]

    return {"facts": c.facts, "command": export_command(c, path), "setup": c.setup,
            "libraries": [{"library": e.key, "name": e.library, "equivalent": bool(e.code), "code": e.code,
                           "arguments": e.arguments, "lse_base": e.lse, "lse_shape": e.lse_shape,
                           "missing": said(e.missing), "notes": said(e.notes)} for e in c.entries]}
