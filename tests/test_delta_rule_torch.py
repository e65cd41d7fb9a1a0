"""The delta rule (docs/format.md Part 4) against transformers' own classes and functions, built from tiny configs
with random weights (never downloaded): Qwen3NextGatedDeltaNet and its torch_recurrent_gated_delta_rule /
torch_chunk_gated_delta_rule, KimiLinearDeltaAttention and its recurrent / chunk functions. Their code runs the
rule in float32 (whatever the module's dtype), so they are matched within 1e-5 of the largest entry, and a float64
transcription of the same code (tests/delta_reference.py) within 1e-12.
"""

from __future__ import annotations

from pathlib import Path

import delta_reference as ref
import numpy as np
import pytest
from hf_modules import T, config, randomize

from attncli.core.linear import run
from attncli.inputs.document import Document
from attncli.inputs.linear import read_linear


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


@pytest.fixture(scope="module")
def hf(torch):
    return pytest.importorskip("transformers")


def close(mine: np.ndarray, theirs, tol: float, what: str) -> None:
    theirs = np.asarray(theirs.detach().numpy() if hasattr(theirs, "detach") else theirs, dtype=np.float64)
    assert mine.shape == theirs.shape, what
    err = np.abs(mine - theirs).max() / np.abs(theirs).max()
    assert err <= tol, f"{what}: {err:.3g} of the largest entry"


def computed(linear: dict, **top):
    return run(read_linear(Document({**top, "linear": linear}, "<test>", Path("."))), keep_state=True)


def qwen3_next_layer(torch, seed: int, h_k: int, h_v: int):
    from transformers.models.qwen3_next.modeling_qwen3_next import Qwen3NextGatedDeltaNet

    cfg = config("Qwen3Next", hidden_size=16, num_attention_heads=2, num_key_value_heads=1, head_dim=8,
                 linear_num_key_heads=h_k, linear_num_value_heads=h_v, linear_key_head_dim=8,
                 linear_value_head_dim=6, linear_conv_kernel_dim=4, layer_types=["linear_attention"],
                 rms_norm_eps=1e-6)
    return randomize(Qwen3NextGatedDeltaNet(cfg, 0), seed, std=0.4)


def qwen3_next_document(layer, h_k: int, h_v: int, chunk: int) -> dict:
    """The layer's weights as a linear: block, in_proj_qkvz and in_proj_ba split per query/key head group."""
    d_k, d_v, r = 8, 6, h_v // h_k
    qkvz = T(layer.in_proj_qkvz).reshape(16, h_k, -1)  # per group: [q (d_k) | k (d_k) | v (r·d_v) | z (r·d_v)]
    ba = T(layer.in_proj_ba).reshape(16, h_k, 2 * r)  # per group: [b (r) | a (r)]
    cut = np.cumsum([d_k, d_k, r * d_v])
    q, k, v, z = (part.reshape(16, -1) for part in np.split(qkvz, cut, axis=2))
    weights = dict(query=q, key=k, value=v, gate=z, beta=ba[:, :, :r].reshape(16, h_v),
                   decay=ba[:, :, r:].reshape(16, h_v), output=T(layer.out_proj))
    return dict(kind="gated_delta", heads=h_k, value_heads=h_v, weights=weights, chunk=chunk,
                conv=layer.conv1d.weight.detach().numpy()[:, 0], A_log=layer.A_log.detach().numpy(),
                dt_bias=layer.dt_bias.detach().numpy(),
                norm=dict(gamma=layer.norm.weight.detach().numpy(), eps=layer.norm.variance_epsilon))


def qwen3_next_float64(torch, layer, x, h_k: int, h_v: int):
    """The layer's forward in float64 (transformers' steps, the rule and the norm without their float32 casts)."""
    import torch.nn.functional as F

    d_k, d_v, r = 8, 6, h_v // h_k
    qkvz = layer.in_proj_qkvz(x).view(1, -1, h_k, 2 * d_k + 2 * r * d_v)
    q, k, v, z = torch.split(qkvz, [d_k, d_k, r * d_v, r * d_v], dim=3)
    b, a = torch.split(layer.in_proj_ba(x).view(1, -1, h_k, 2 * r), [r, r], dim=3)
    mixed = ref.conv_silu(torch.cat([t.reshape(1, x.shape[1], -1) for t in (q, k, v)], dim=-1),
                          layer.conv1d.weight[:, 0])
    q, k, v = torch.split(mixed, [h_k * d_k, h_k * d_k, h_v * d_v], dim=-1)
    q, k, v = q.reshape(1, -1, h_k, d_k), k.reshape(1, -1, h_k, d_k), v.reshape(1, -1, h_v, d_v)
    beta = b.reshape(1, -1, h_v).sigmoid()
    g = -layer.A_log.exp() * F.softplus(a.reshape(1, -1, h_v) + layer.dt_bias)
    o, states, final = ref.recurrent(q, k, v, g, beta)
    y = ref.gated_norm(o, z.reshape(1, -1, h_v, d_v), layer.norm.weight, layer.norm.variance_epsilon, F.silu)
    return layer.out_proj(y.reshape(1, x.shape[1], -1)), o, states, final


@pytest.mark.parametrize("h_k, h_v, n, chunk", [(2, 4, 70, 16), (2, 2, 9, 64), (1, 3, 33, 8)])
def test_gated_deltanet_layer_is_qwen3_nexts(torch, hf, h_k, h_v, n, chunk):
    layer = qwen3_next_layer(torch, 1 + n, h_k, h_v)
    x = torch.randn(1, n, 16, dtype=torch.float64, generator=torch.Generator().manual_seed(n))
    trace = computed(qwen3_next_document(layer, h_k, h_v, chunk), inputs=x[0].numpy())
    with torch.no_grad():
        close(trace["output"], layer(x)[0], 1e-5, "output against Qwen3NextGatedDeltaNet (float32 inside)")
        out, o, states, final = qwen3_next_float64(torch, layer, x, h_k, h_v)
    close(trace["output"], out[0], 1e-12, "output against the float64 transcription")
    close(trace["head_outputs"], o[0].transpose(0, 1), 1e-12, "head_outputs")
    close(trace["state"], states[0], 1e-12, "state after every token")
    close(trace["final_state"], final[0], 1e-12, "final_state")


def kimi_layer(torch, seed: int, heads: int):
    from transformers.models.kimi_linear.modeling_kimi_linear import KimiLinearDeltaAttention

    cfg = config("KimiLinear", hidden_size=16, num_attention_heads=2, num_key_value_heads=2, linear_num_heads=heads,
                 linear_head_dim=8, linear_conv_kernel_dim=3, layer_types=["linear_attention"], rms_norm_eps=1e-6)
    return randomize(KimiLinearDeltaAttention(cfg, 0), seed, std=0.4)


@pytest.mark.parametrize("heads, n, chunk", [(2, 70, 16), (1, 5, 64)])
def test_kimi_delta_attention_layer_is_kimi_linears(torch, hf, heads, n, chunk):
    import torch.nn.functional as F

    layer = kimi_layer(torch, 7 + n, heads)
    gate = layer.forget_gate
    doc = dict(kind="kda", heads=heads, chunk=chunk, conv=layer.conv1d.weight.detach().numpy()[:, 0],
               weights=dict(query=T(layer.q_proj), key=T(layer.k_proj), value=T(layer.v_proj), beta=T(layer.b_proj),
                            decay=T(gate.f_a_proj) @ T(gate.f_b_proj), gate=T(layer.g_a_proj) @ T(layer.g_b_proj),
                            output=T(layer.o_proj)),
               A_log=gate.A_log.detach().numpy().reshape(-1), dt_bias=gate.dt_bias.detach().numpy(),
               norm=dict(gamma=layer.o_norm.weight.detach().numpy(), eps=layer.o_norm.variance_epsilon))
    x = torch.randn(1, n, 16, dtype=torch.float64, generator=torch.Generator().manual_seed(n))
    trace = computed(doc, inputs=x[0].numpy())
    with torch.no_grad():
        close(trace["output"], layer(x)[0], 1e-5, "output against KimiLinearDeltaAttention (float32 inside)")
        mixed = ref.conv_silu(torch.cat([layer.q_proj(x), layer.k_proj(x), layer.v_proj(x)], dim=-1),
                              layer.conv1d.weight[:, 0])
        q, k, v = (t.reshape(1, n, heads, 8) for t in torch.split(mixed, [8 * heads] * 3, dim=-1))
        a = gate.f_b_proj(gate.f_a_proj(x)) + gate.dt_bias
        g = -gate.A_log.reshape(1, 1, heads, 1).exp() * F.softplus(a.reshape(1, n, heads, 8))
        o, states, final = ref.recurrent(q, k, v, g, layer.b_proj(x).sigmoid())
        z = layer.g_b_proj(layer.g_a_proj(x)).reshape(1, n, heads, 8)
        y = ref.gated_norm(o, z, layer.o_norm.weight, layer.o_norm.variance_epsilon, torch.sigmoid)
        close(trace["output"], layer.o_proj(y.reshape(1, n, -1))[0], 1e-12, "output against the float64 transcription")
    close(trace["g"], g[0].permute(1, 0, 2), 1e-12, "g, per channel")
    close(trace["state"], states[0], 1e-12, "state after every token")
    close(trace["final_state"], final[0], 1e-12, "final_state")


def kernel_inputs(torch, seed: int, h_k: int, h_v: int, n: int, per_channel: bool):
    """Random q, k, v, g, β and S₀ as transformers' functions take them (1, n, heads, d), float64."""
    gen = torch.Generator().manual_seed(seed)
    rand = lambda *shape: torch.randn(*shape, dtype=torch.float64, generator=gen)  # noqa: E731
    q, k, v = rand(1, n, h_k, 8), rand(1, n, h_k, 8), rand(1, n, h_v, 5)
    g = -rand(1, n, h_v, 8).exp() * 0.3 if per_channel else -rand(1, n, h_v).exp() * 0.3
    return q, k, v, g, rand(1, n, h_v).sigmoid(), rand(1, h_v, 8, 5)


def given_document(kind: str, q, k, v, g, beta, s0, chunk: int) -> dict:
    per_head = lambda t: t[0].transpose(0, 1).numpy()  # noqa: E731  (1, n, h, …) -> h × n × …
    return dict(kind=kind, queries=per_head(q), keys=per_head(k), values=per_head(v), beta=per_head(beta),
                g=per_head(g), initial_state=s0[0].numpy(), chunk=chunk)


@pytest.mark.parametrize("h_k, h_v, n, chunk", [(2, 4, 100, 64), (1, 1, 1, 64), (3, 3, 20, 7)])
def test_given_arrays_are_transformers_gated_delta_rule(torch, hf, h_k, h_v, n, chunk):
    from transformers.models.qwen3_next import modeling_qwen3_next as qwen

    q, k, v, g, beta, s0 = kernel_inputs(torch, n, h_k, h_v, n, per_channel=False)
    trace = computed(given_document("gated_delta", q, k, v, g, beta, s0, chunk))
    args = dict(initial_state=s0, output_final_state=True, use_qk_l2norm_in_kernel=True)
    for name, function in (("recurrent", qwen.torch_recurrent_gated_delta_rule),
                           ("chunk", qwen.torch_chunk_gated_delta_rule)):
        o, final = function(q, k, v, g=g, beta=beta, **args)
        close(trace["head_outputs"], o[0].transpose(0, 1), 1e-5, f"head_outputs against torch_{name}_gated_delta_rule")
        close(trace["final_state"], final[0], 1e-5, f"final_state against torch_{name}_gated_delta_rule")
    o, states, final = ref.recurrent(q, k, v, g, beta, s0)
    close(trace["head_outputs"], o[0].transpose(0, 1), 1e-12, "head_outputs against the float64 transcription")
    close(trace["state"], states[0], 1e-12, "state against the float64 transcription")


@pytest.mark.parametrize("n, chunk", [(70, 64), (3, 2)])
def test_given_arrays_are_transformers_kimi_delta_attention(torch, hf, n, chunk):
    from transformers.models.kimi_linear import modeling_kimi_linear as kimi

    q, k, v, g, beta, s0 = kernel_inputs(torch, 5 + n, 2, 2, n, per_channel=True)
    trace = computed(given_document("kda", q, k, v, g, beta, s0, chunk))
    args = dict(initial_state=s0, output_final_state=True, use_qk_l2norm_in_kernel=True)
    for name, function in (("recurrent", kimi.recurrent_kimi_delta_attention),
                           ("chunk", kimi.chunk_kimi_delta_attention)):
        o, final = function(q, k, v, g=g, beta=beta, **args)
        close(trace["head_outputs"], o[0].transpose(0, 1), 1e-5, f"head_outputs against {name}_kimi_delta_attention")
        close(trace["final_state"], final[0], 1e-5, f"final_state against {name}_kimi_delta_attention")
    o, states, final = ref.recurrent(q, k, v, g, beta, s0)
    close(trace["head_outputs"], o[0].transpose(0, 1), 1e-12, "head_outputs against the float64 transcription")
    close(trace["final_state"], final[0], 1e-12, "final_state against the float64 transcription")


@pytest.mark.parametrize("kind, h_k, h_v, n", [("gated_delta", 2, 4, 13), ("kda", 2, 2, 9), ("gated_delta", 1, 1, 1)])
def test_gradients_are_torch_autograds(torch, kind, h_k, h_v, n):
    """linear.gradient (dL/d head_outputs): every gradient of the given arrays against autograd through the float64
    transcription (the l2 norm, the scale, the repeat of the query/key heads and the recurrence)."""
    leaves = [t.clone().requires_grad_() for t in kernel_inputs(torch, 40 + n, h_k, h_v, n, kind == "kda")]
    q, k, v, g, beta, s0 = leaves
    seed = torch.randn(1, n, h_v, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(n))
    doc = given_document(kind, *(t.detach() for t in leaves), chunk=4)
    trace = computed({**doc, "gradient": seed[0].transpose(0, 1).numpy()})
    o, _, _ = ref.recurrent(q, k, v, g, beta, s0)
    (o * seed).sum().backward()
    per_head = lambda t: t.grad[0].transpose(0, 1)  # noqa: E731
    for key, leaf in (("grad_queries", q), ("grad_keys", k), ("grad_values", v), ("grad_g", g), ("grad_beta", beta)):
        close(trace[key], per_head(leaf), 1e-12, key)
    close(trace["grad_initial_state"], s0.grad[0], 1e-12, "grad_initial_state")
