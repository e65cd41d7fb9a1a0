"""The gradients the result gains with ``gradient`` (FORMAT.md Part 3), in the contract's order, as quantities.

Each is a :class:`~attncli.core.stage.Quantity` like the forward's: its JSON key, its formula's name (``dQ``),
its title, its shape and its formula, so JSON, tables, ``--only`` and ``.npz`` show it as they show the rest.
The kernel's view (``grad_kernel_queries``, ``grad_kernel_keys``) is written only when asked for, as
``kernel_queries`` is.
"""

from __future__ import annotations

from attncli.core.spec import Spec
from attncli.core.stage import Quantity

NEEDS = "gradient:"


def _scaled_text(spec: Spec) -> str:
    cap = f" ⊙ (1 − tanh²(scale·S / {spec.softcap:g}))" if spec.softcap is not None else ""
    return f"dS = {spec.scale:.6g}·dZ{cap}"


def _g(key: str, symbol: str, title: str, shape: str, text: str, needs: str = "", parameter: bool = False,
       formula=None) -> Quantity:
    """A gradient: ``text`` its formula as tables write it (``formula(spec)`` when it depends on the document)."""
    written = formula or (lambda spec: text)
    latex = text.replace("·", " ").replace("ᵀ", "^\\top").replace("⊙", "\\odot").replace("−", "-")
    return Quantity(key, symbol, title, shape, f"{NEEDS} {needs}".strip(), "", parameter, written,
                    lambda spec, up: latex)


def _weight(name: str, sym: str, shape: str, needs: str, bias: str = "") -> tuple[Quantity, Quantity]:
    """A matrix's gradient and its bias's (``bias``: what the bias's needs add, for one no document can give)."""
    return (_g(f"grad_weight_{name}", f"dW_{sym}", f"Gradient of W_{sym}", shape, f"dW_{sym} = dL/dW_{sym}",
               f"and weights.{name}:"),
            _g(f"grad_bias_{name}", f"db_{sym}", f"Gradient of b_{sym}", shape.split()[-1], f"db_{sym} = dL/db_{sym}",
               f"and bias.{name}:{bias}"))


def _norm(name: str, width: str) -> tuple[Quantity, Quantity]:
    return (_g(f"grad_{name}_gamma", "", f"Gradient of {name}'s γ", width, f"dγ = dL/dγ ({name})", f"and {name}:"),
            _g(f"grad_{name}_beta", "", f"Gradient of {name}'s β", width, f"dβ = dL/dβ ({name})",
               f"and {name}: kind layer"))


GRADIENTS: tuple[Quantity, ...] = (
    _g("grad_normalized", "dN", "Gradient of N", "n d_model", "dN = gradient", "and add_norm:"),
    _g("grad_residual", "dR", "Gradient of R", "n d_model", "dR = dL/dR", "and add_norm: or residual:"),
    _g("grad_normalized_output", "", "Gradient of post_norm(Y)", "n d_out", "d post_norm(Y) = α·dR", "and post_norm:"),
    _g("grad_output", "dY", "Gradient of Y", "n d_out", "dY = dL/dY"),
    _g("grad_gated_head_outputs", "", "Gradient of H ⊙ G", "h n d_v", "d(H ⊙ G) = dY·W_Oᵀ per head",
       "and weights.gate:"),
    _g("grad_gate", "dG", "Gradient of G", "h n d_v", "dG = d(H ⊙ G) ⊙ H", "and weights.gate:"),
    _g("grad_head_outputs", "dH", "Gradient of H", "h n d_v", "dH = dL/dH"),
    _g("grad_normalized_head_outputs", "dÔ", "Gradient of Ô", "p n 2·d_v", "dÔ = dH as pairs", "and differential:"),
    _g("grad_differential_head_outputs", "dO", "Gradient of O", "p n 2·d_v", "dO = RMSNorm's backward of dÔ",
       "and differential:"),
    _g("grad_differential_weights", "dW", "Gradient of W", "p n m", "dW = dO·[V₁ | V₂]ᵀ", "and differential:"),
    _g("grad_differential_lambda", "dλ", "Gradient of λ", "p", "dλ = −Σ dW ⊙ A₂", "and differential:"),
    _g("grad_weights", "dA", "Gradient of A", "h n m", "dA = dH·Vᵀ"),
    _g("delta", "D", "D (FlashAttention's)", "h n", "D = rowsum(dH ⊙ H) = Σ_j a_ij·dA_ij"),
    _g("grad_scaled_scores", "dZ", "Gradient of Z", "h n m", "dZ = A ⊙ (dA − D)"),
    _g("grad_scores", "dS", "Gradient of S", "h n m", "dS = scale·dZ", formula=_scaled_text),
    _g("grad_kernel_queries", "", "Gradient of the kernel's queries", "h n d_k", "dQ_kernel = dS·K", parameter=True),
    _g("grad_kernel_keys", "", "Gradient of the kernel's keys", "g m d_k", "dK_kernel = dSᵀ·Q (summed over the group)",
       parameter=True),
    _g("grad_queries_rotated", "dQ′", "Gradient of Q′", "h n d_k", "dQ′ = dL/dQ′", "and rope:"),
    _g("grad_keys_rotated", "dK′", "Gradient of K′", "g m d_k", "dK′ = dL/dK′", "and rope:"),
    _g("grad_normalized_queries", "dQ̂", "Gradient of Q̂", "h n d_k", "dQ̂ = dL/dQ̂", "and qk_norm:"),
    _g("grad_normalized_keys", "dK̂", "Gradient of K̂", "g m d_k", "dK̂ = dL/dK̂", "and qk_norm:"),
    _g("grad_normalized_values", "dV̂", "Gradient of V̂", "g m d_v", "dV̂ = Aᵀ·dH (summed over the group)",
       "and v_norm:"),
    _g("grad_queries", "dQ", "Gradient of Q", "h n d_k", "dQ = dL/dQ"),
    _g("grad_keys", "dK", "Gradient of K", "g m d_k", "dK = dL/dK (summed over the group)"),
    _g("grad_values", "dV", "Gradient of V", "g m d_v", "dV = Aᵀ·dH (summed over the group)"),
    _g("grad_latent_queries", "dc_Q", "Gradient of c_Q", "n r_q", "dc_Q = dQ·W_UQᵀ", "and weights.query_down:"),
    _g("grad_latent_kv", "dc_KV", "Gradient of c_KV", "m r_kv", "dc_KV = dK_nope·W_UKᵀ + dV·W_UVᵀ", "and latent:"),
    _g("grad_normalized_inputs", "dX̂", "Gradient of X̂", "n d_model", "dX̂ = dL/dX̂", "and pre_norm:"),
    _g("grad_inputs", "dX", "Gradient of X", "n d_model", "dX = dL/dX (every path)"),
    _g("grad_context", "dC", "Gradient of C", "m d_ctx", "dC = dL/dC", "and a context"),
    *_weight("query", "Q", "d_model h·d_k", "weights.query:"),
    *_weight("key", "K", "d_ctx g·d_k", "weights.key:"),
    *_weight("value", "V", "d_ctx g·d_v", "weights.value:"),
    *_weight("output", "O", "h·d_v d_out", "weights.output:"),
    *_weight("gate", "G", "d_model h·d_v", "weights.gate:"),
    *_weight("query_down", "DQ", "d_model r_q", "weights.query_down:"),
    *_weight("query_up", "UQ", "r_q h·d_k", "weights.query_up:", " (latent attention has none)"),
    *_weight("kv_down", "DKV", "d_ctx r_kv+d_r", "weights.kv_down:"),
    *_weight("kv_up", "UKV", "r_kv h·(d_nope+d_v)", "weights.kv_up:", " (latent attention has none)"),
    *_norm("pre_norm", "d_model"),
    *_norm("post_norm", "d_out"),
    *_norm("add_norm", "d_model"),
    _g("grad_qk_norm_gamma_query", "", "Gradient of qk_norm's γ (queries)", "d_k", "dγ_Q = dL/dγ_Q", "and qk_norm:"),
    _g("grad_qk_norm_gamma_key", "", "Gradient of qk_norm's γ (keys)", "d_k", "dγ_K = dL/dγ_K", "and qk_norm:"),
    _g("grad_qk_norm_beta_query", "", "Gradient of qk_norm's β (queries)", "d_k", "dβ_Q = dL/dβ_Q",
       "and qk_norm: kind layer"),
    _g("grad_qk_norm_beta_key", "", "Gradient of qk_norm's β (keys)", "d_k", "dβ_K = dL/dβ_K",
       "and qk_norm: kind layer"),
    _g("grad_latent_query_norm_gamma", "", "Gradient of latent.query_norm's γ", "r_q", "dγ = dL/dγ (query_norm)",
       "and weights.query_down:"),
    _g("grad_latent_kv_norm_gamma", "", "Gradient of latent.kv_norm's γ", "r_kv", "dγ = dL/dγ (kv_norm)",
       "and latent:"),
    _g("grad_differential_lambda_q1", "", "Gradient of λ_q1", "d_λ", "dλ_q1 = dL/dλ_q1", "and differential:"),
    _g("grad_differential_lambda_k1", "", "Gradient of λ_k1", "d_λ", "dλ_k1 = dL/dλ_k1", "and differential:"),
    _g("grad_differential_lambda_q2", "", "Gradient of λ_q2", "d_λ", "dλ_q2 = dL/dλ_q2", "and differential:"),
    _g("grad_differential_lambda_k2", "", "Gradient of λ_k2", "d_λ", "dλ_k2 = dL/dλ_k2", "and differential:"),
    _g("grad_sinks", "d_sinks", "Gradient of the sinks", "h", "ds_h = −Σ_i σ_hi·D_hi", "and sinks:"),
)
GRADIENT_KEYS = tuple(q.key for q in GRADIENTS)


def gradient_key(name: str) -> str:
    """The JSON key of a gradient the backward steps name by what it is the gradient of (``queries`` ->
    ``grad_queries``); ``delta`` is itself."""
    return name if name == "delta" else f"grad_{name}"
