"""``attncli init --qk-norm --sinks --gate --query-temperature``: the lines of Part 3's stages in a starter
document (``t``: the starter's texts, :func:`attncli.teach.starter_words.words`)."""

from __future__ import annotations

from attncli.teach.starter_words import comment


def gate_comment(t: dict) -> list[str]:
    """The comment above weights.gate, which the starter writes as its other matrices."""
    return comment(t["gate"], "  ")


def sinks_lines(heads: int, t: dict) -> list[str]:
    return ["", *comment(t["sinks"]), f"sinks: [{', '.join(['0.0'] * heads)}]"]


def temperature_lines(t: dict) -> list[str]:
    return ["", *comment(t["temperature"]), "query_temperature: {floor_scale: 2, attn_scale: 0.1}"]


def qk_norm_lines(kind: str, d_k: int, t: dict) -> list[str]:
    return [
        "",
        *comment(t["qk_norm"]),
        "qk_norm:",
        f"  kind: {kind}",
        f"  # gamma: {{query: [...], key: [...]}}   # {t['qk_gamma'].format(d_k=d_k)}",
    ]
