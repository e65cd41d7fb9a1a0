"""``attncli init --qk-norm --sinks --gate --query-temperature``: the lines of Part 3's stages in a starter
document."""

from __future__ import annotations

GATE_COMMENT = [  # above weights.gate, which the starter writes as its other matrices
    "  # Output gate (Qwen3-Next): G = σ(X̂·W_G), one gate per number of each head's",
    "  # output, and Y = concat(H ⊙ G)·W_O (gate and gated_head_outputs in the JSON).",
]


def sinks_lines(heads: int) -> list[str]:
    return [
        "",
        "# Attention sinks (gpt-oss): one logit s_h per query head joins each row's softmax as",
        "# a key with no value, a_ij = e^z_ij / (Σ_j′ e^z_ij′ + e^s_h): a row then sums to less",
        "# than 1, the rest going nowhere (sink_weights in the JSON).",
        f"sinks: [{', '.join(['0.0'] * heads)}]",
    ]


def temperature_lines() -> list[str]:
    return [
        "",
        "# Llama 4's query temperature: query row i is multiplied, after the rotation, by",
        "# τ_i = 1 + attn_scale·ln(1 + ⌊(p_i + 1) / floor_scale⌋), p_i its position. Llama 4",
        "# has floor_scale: 8192 (τ = 1 up to position 8190); 2 shows it on a few tokens.",
        "query_temperature: {floor_scale: 2, attn_scale: 0.1}",
    ]


def qk_norm_lines(kind: str, d_k: int) -> list[str]:
    return [
        "",
        "# QK-norm: each head's query and key rows normalised before the rotation",
        "# (Qwen3's and Gemma 3's q_norm and k_norm; scope: projection normalises a",
        "# token's whole projection, as OLMo 2; after_rope: true comes after it, as Llama 4).",
        "qk_norm:",
        f"  kind: {kind}",
        f"  # gamma: {{query: [...], key: [...]}}   # d_k = {d_k} numbers each (or one row per head), default ones",
    ]
