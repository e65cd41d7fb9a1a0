"""``compute --only``'s help: every key and formula name of the stage list, written out here because the command
line starts without numpy (the stage list imports it).  Made by :func:`written` from
:data:`attncli.core.stages.QUANTITIES`; after a change to the stage list, write it again with

    python -m attncli.cli.only_help

(tests/test_help_examples.py fails, naming that command, while this text and the stage list differ).
"""

from __future__ import annotations

import re

ONLY_HELP = (
    'Keep just this key (repeatable): inputs, positional, normalized_inputs, context, latent_queries, latent_kv, '
    'queries, keys, values, normalized_queries, normalized_keys, normalized_values, queries_rotated, keys_rotated, '
    'rope_frequencies, rope_attention_factor, query_temperature, index_queries, index_keys, index_head_weights, '
    'index_scores, index_selected, index_mask, index_ties, absorbed_queries, scores, score_bias, scaled_scores, '
    'weights, sink_weights, lse, index_dropped_weight, max_logits, max_logit_cells, qk_clip_gamma, '
    'qk_clip_max_logits, head_outputs, differential_lambda, differential_weights, differential_head_outputs, '
    'normalized_head_outputs, gate, gated_head_outputs, output, normalized_output, residual, normalized; shown only'
    ' when named: weight_query_down, bias_query_down, weight_query_up, weight_kv_down, bias_kv_down, weight_kv_up, '
    'weight_query, bias_query, weight_key, bias_key, weight_value, bias_value, kernel_queries, kernel_keys, '
    'qk_clip_weight_query, qk_clip_bias_query, qk_clip_weight_key, qk_clip_bias_key, differential_lambda_q1, '
    'differential_lambda_k1, differential_lambda_q2, differential_lambda_k2, weight_gate, bias_gate, weight_output,'
    ' bias_output. With gradient: (the backward pass): grad_normalized, grad_residual, grad_normalized_output, '
    'grad_output, grad_gated_head_outputs, grad_gate, grad_head_outputs, grad_normalized_head_outputs, '
    'grad_differential_head_outputs, grad_differential_weights, grad_differential_lambda, grad_weights, delta, '
    'grad_scaled_scores, grad_scores, grad_queries_rotated, grad_keys_rotated, grad_normalized_queries, '
    'grad_normalized_keys, grad_normalized_values, grad_queries, grad_keys, grad_values, grad_latent_queries, '
    'grad_latent_kv, grad_normalized_inputs, grad_inputs, grad_context, grad_weight_query, grad_bias_query, '
    'grad_weight_key, grad_bias_key, grad_weight_value, grad_bias_value, grad_weight_output, grad_bias_output, '
    'grad_weight_gate, grad_bias_gate, grad_weight_query_down, grad_bias_query_down, grad_weight_query_up, '
    'grad_bias_query_up, grad_weight_kv_down, grad_bias_kv_down, grad_weight_kv_up, grad_bias_kv_up, '
    'grad_pre_norm_gamma, grad_pre_norm_beta, grad_post_norm_gamma, grad_post_norm_beta, grad_add_norm_gamma, '
    'grad_add_norm_beta, grad_qk_norm_gamma_query, grad_qk_norm_gamma_key, grad_qk_norm_beta_query, '
    'grad_qk_norm_beta_key, grad_latent_query_norm_gamma, grad_latent_kv_norm_gamma, grad_differential_lambda_q1, '
    'grad_differential_lambda_k1, grad_differential_lambda_q2, grad_differential_lambda_k2, grad_sinks; shown only '
    "when named: grad_kernel_queries, grad_kernel_keys. Or the formula's name, in any case: X, P, X̂, C, W_DQ, "
    "b_DQ, c_Q, W_UQ, W_DKV, b_DKV, c_KV, W_UKV, Q, K, V, W_Q, b_Q, W_K, b_K, W_V, b_V, Q̂, K̂, V̂, Q′ (or Q'), K′ "
    "(or K'), f, a_rope, τ, q_I, k_I, w_I, I, kept, M_I, ties, Q_abs, S, B, Z, A, σ, LSE, A_dropped, S_max, γ, "
    'S_max_new, W_Q_clip, b_Q_clip, W_K_clip, b_K_clip, H, λ_q1, λ_k1, λ_q2, λ_k2, λ, W, O, Ô, W_G, b_G, G, H ⊙ G, '
    "W_O, b_O, Y, R, N; the gradients dN, dR, dY, dG, dH, dÔ, dO, dW, dλ, dA, D, dZ, dS, dQ′ (or dQ'), dK′ (or "
    "dK'), dQ̂, dK̂, dV̂, dQ, dK, dV, dc_Q, dc_KV, dX̂, dX, dC, dW_Q, db_Q, dW_K, db_K, dW_V, db_V, dW_O, db_O, "
    'dW_G, db_G, dW_DQ, db_DQ, dW_UQ, db_UQ, dW_DKV, db_DKV, dW_UKV, db_UKV, d_sinks. A linear: document: inputs, '
    'projected_queries, projected_keys, projected_values, queries, keys, values, normalized_queries, '
    'normalized_keys, beta, g, slopes, initial_state, u, intra, inter, state, final_state, head_outputs, gate, '
    'gated_head_outputs, output, grad_head_outputs, grad_queries, grad_keys, grad_values, grad_beta, grad_g, '
    "grad_slopes, grad_initial_state; shown only when named: chunk_states, decayed_scores; the formulas' names, as "
    'written: X, q, k, v, q̂, Qhat, k̂, Khat, β, S₀, S0, S, S_n, o, y, Y, do, dq, dk, dv, dβ, dg, dS₀, s, ds.'
)


def written() -> str:
    """The help, from the stage list: the keys in the result's order, those shown only when named, then the
    gradients', then the formulas' names."""
    from attncli.core.gradient_keys import GRADIENT_KEYS
    from attncli.core.stages import QUANTITIES

    forward = [q for key, q in QUANTITIES.items() if key not in GRADIENT_KEYS]
    backward = [q for key, q in QUANTITIES.items() if key in GRADIENT_KEYS]

    def keys(quantities, parameter: bool) -> str:
        return ", ".join(q.key for q in quantities if q.parameter == parameter)

    def symbols(quantities) -> str:
        return ", ".join(f"{q.symbol} (or {q.symbol.replace('′', chr(39))})" if "′" in q.symbol else q.symbol
                         for q in quantities if q.symbol)
    return (f"Keep just this key (repeatable): {keys(forward, False)}; shown only when named: {keys(forward, True)}. "
            f"With gradient: (the backward pass): {keys(backward, False)}; shown only when named: "
            f"{keys(backward, True)}. Or the formula's name, in any case: {symbols(forward)}; the gradients "
            f"{symbols(backward)}. {_linear()}")


def _linear() -> str:
    """The sentence of a linear: document's keys (docs/format.md Part 4: attncli.core.linear's, in the JSON's order)
    and its formulas' names (matched as written: y and Y are two quantities)."""
    from attncli.core.linear import KEYS, ON_REQUEST
    from attncli.outputs.linear import SYMBOLS

    return (f"A linear: document: {', '.join(key for key in KEYS if key not in ON_REQUEST)}; shown only when named: "
            f"{', '.join(ON_REQUEST)}; the formulas' names, as written: {', '.join(SYMBOLS)}.")


# the lists of :func:`written`'s sentence, by name (for the help in another language: attncli.cli.help_zh); compiled
# where it is used (re keeps it): only the Chinese --help reads it, and compiling it at import was paid by every start
PARTS = (r"Keep just this key \(repeatable\): (?P<forward>.+?); shown only when named: "
         r"(?P<forward_named>.+?)\. With gradient: \(the backward pass\): (?P<backward>.+?); "
         r"shown only when named: "
         r"(?P<backward_named>.+?)\. Or the formula's name, in any case: (?P<symbols>.+?); the gradients "
         r"(?P<gradient_symbols>.+?)\. A linear: document: (?P<linear>.+?); shown only when named: "
         r"(?P<linear_named>.+?); the formulas' names, as written: (?P<linear_symbols>.+)\.\Z")


def parts(text: str = ONLY_HELP) -> dict[str, str]:
    """The lists :func:`written` names in ``text``, by name: forward, forward_named, backward, backward_named, symbols,
    gradient_symbols, and a linear: document's linear, linear_named, linear_symbols.

    >>> parts()["forward"].split(", ")[:3], parts()["gradient_symbols"].split(", ")[-1]
    (['inputs', 'positional', 'normalized_inputs'], 'd_sinks')
    >>> parts()["linear_named"]
    'chunk_states, decayed_scores'
    """
    return re.compile(PARTS, re.S).fullmatch(text).groupdict()


def _write() -> None:
    """This file again, with :data:`ONLY_HELP` as :func:`written` makes it."""
    import textwrap
    from pathlib import Path

    path = Path(__file__)
    lines = textwrap.wrap(written(), 110, break_on_hyphens=False, drop_whitespace=False)
    constant = "ONLY_HELP = (\n" + "".join(f"    {line!r}\n" for line in lines) + ")\n"
    text = path.read_text(encoding="utf-8")
    start = text.index("ONLY_HELP = ")
    end = text.index("\n\n\ndef written")
    path.write_text(text[:start] + constant.rstrip("\n") + text[end:], encoding="utf-8")


if __name__ == "__main__":
    _write()
