"""Lightning attention (docs/format.md Part 4, ``kind: lightning``) against transformers' MiniMaxLightningAttention
(models/minimax), built from a tiny config with random weights (never downloaded).

The module makes its slopes and decays in float32 (whatever its dtype) and its RMSNorm casts to float32: as it is,
it is matched within 1e-5 of the largest entry; with its decays recomputed in float64 from float64 slopes (its own
``decay_factors``) and its norm's float32 cast left out, its own block code is matched within 1e-12. The gradients
are torch.autograd's through a float64 transcription of the direct sum.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hf_modules import T, randomize

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
    err = np.abs(mine - theirs).max() / (np.abs(theirs).max() or 1.0)  # (an exact 0, e.g. ds with one token)
    assert err <= tol, f"{what}: {err:.3g} of the largest entry"


def computed(linear: dict, **top):
    return run(read_linear(Document({**top, "linear": linear}, "<test>", Path("."))), keep_state=True)


def minimax_layer(torch, seed: int, heads: int, d: int, layer: int, layers: int, block: int):
    import transformers
    from transformers.models.minimax.modeling_minimax import MiniMaxLightningAttention

    cfg = transformers.MiniMaxConfig(vocab_size=16, intermediate_size=32, hidden_size=16, num_attention_heads=heads,
                                     num_key_value_heads=heads, head_dim=d, num_hidden_layers=layers, block_size=block,
                                     layer_types=["linear_attention"] * layers)
    module = MiniMaxLightningAttention(cfg, layer)
    buffers = {name: b.clone() for name, b in module.named_buffers()}
    randomize(module, seed, std=0.4)
    for name, b in buffers.items():  # (randomize draws the parameters only; the buffers as made, in float64)
        getattr(module, name).copy_(b.double())
    return module


def split_qkv(module, heads: int, d: int) -> dict:
    """qkv_proj's [q₀ | k₀ | v₀ | q₁ | …] (d columns each) as three matrices, as docs/format.md Part 4 says."""
    w = T(module.qkv_proj).reshape(16, heads, 3, d)
    return {name: w[:, :, i].reshape(16, heads * d) for i, name in enumerate(("query", "key", "value"))}


def document(module, heads: int, d: int, layer: int, layers: int, block: int) -> dict:
    return dict(kind="lightning", heads=heads, slopes=dict(layer=layer, layers=layers), chunk=block,
                weights=dict(**split_qkv(module, heads, d), gate=T(module.output_gate), output=T(module.out_proj)),
                norm=dict(gamma=module.norm.weight.detach().numpy(), eps=module.norm.variance_epsilon))


def exact_slopes(torch, heads: int, layer: int, layers: int):
    """get_slope_rate's formula, in float64 (h, 1, 1)."""
    base = 1 / (2 ** (8 / heads))
    rate = base ** torch.arange(1, heads + 1, dtype=torch.float64)
    return (rate * (1 - layer / (layers - 1 + 1e-5) + 1e-5))[:, None, None]


def float64_norm(torch, monkeypatch, module) -> None:
    monkeypatch.setattr(type(module.norm), "forward", lambda self, x: self.weight * x * torch.rsqrt(
        x.pow(2).mean(-1, keepdim=True) + self.variance_epsilon))


def transcription(torch, module, x, heads: int, d: int, slopes):
    """MiniMax's layer in float64, the direct sum o_i = Σ_{j≤i} e^{−s(i−j)}(q_i·k_j)v_j instead of its blocks."""
    import torch.nn.functional as F

    n = x.shape[1]
    qkv = F.silu(module.qkv_proj(x)).reshape(1, n, heads, 3 * d).transpose(1, 2)
    q, k, v = torch.split(qkv, d, dim=3)
    i = torch.arange(n, dtype=torch.float64)
    distance = i[:, None] - i[None, :]
    decay = torch.where(distance >= 0, torch.exp(-slopes * distance.clamp(min=0)), torch.zeros(()))
    o = ((q @ k.transpose(-1, -2)) * decay) @ v  # (1, h, n, d)
    o = o.transpose(1, 2).reshape(1, n, heads * d)
    y = module.norm.weight * o * torch.rsqrt(o.pow(2).mean(-1, keepdim=True) + module.norm.variance_epsilon)
    return module.out_proj(torch.sigmoid(module.output_gate(x)) * y), o


@pytest.mark.parametrize("heads, d, n, layer, layers, block", [(4, 4, 21, 1, 3, 8), (2, 8, 5, 0, 2, 256),
                                                               (3, 2, 16, 2, 4, 4)])
def test_lightning_layer_is_minimax(torch, hf, monkeypatch, heads, d, n, layer, layers, block):
    module = minimax_layer(torch, 3 + n, heads, d, layer, layers, block)
    x = torch.randn(1, n, 16, dtype=torch.float64, generator=torch.Generator().manual_seed(n))
    trace = computed(document(module, heads, d, layer, layers, block), inputs=x[0].numpy())
    with torch.no_grad():
        close(trace["output"], module(x, None, None)[0][0], 1e-5, "output against MiniMaxLightningAttention "
              "(decays and norm in float32)")
        slopes = exact_slopes(torch, heads, layer, layers)
        close(trace["slopes"], slopes[:, 0, 0], 1e-15, "slopes against get_slope_rate's formula in float64")
        assert np.allclose(trace["slopes"], module.slope_rate[:, 0, 0].numpy(), rtol=1e-7, atol=0)  # (its float32)
        module.slope_rate.copy_(slopes)
        for name, decay in zip(("query_decay", "key_decay", "diagonal_decay"), module.decay_factors(slopes)):
            getattr(module, name).copy_(decay)
        float64_norm(torch, monkeypatch, module)
        theirs, state = module(x, None, None)
        close(trace["output"], theirs[0], 1e-12, "output against its block code in float64")
        out, o = transcription(torch, module, x, heads, d, slopes)
    close(trace["output"], out[0], 1e-12, "output against the float64 direct sum")
    close(trace["head_outputs"].transpose(1, 0, 2).reshape(n, -1), o[0], 1e-12, "head_outputs, the direct sum")
    close(trace["state"][:, -1], trace["final_state"], 1e-12, "the recurrence's last state against the blocks'")
    pad = -n % block  # (transformers' state after its last, shorter block decays it by e^{−s·B}: compare inside)
    if pad == 0:
        close(trace["final_state"], state[0], 1e-12, "final_state against the module's attn_weights_inter")


@pytest.mark.parametrize("heads, n, with_s0", [(2, 9, True), (1, 1, False), (3, 14, True)])
def test_lightning_gradients_are_torch_autograds(torch, heads, n, with_s0):
    gen = torch.Generator().manual_seed(n)
    rand = lambda *shape: torch.randn(*shape, dtype=torch.float64, generator=gen)  # noqa: E731
    q, k, v, s0 = rand(heads, n, 4), rand(heads, n, 4), rand(heads, n, 3), rand(heads, 4, 3)
    s = rand(heads).abs() * 0.5 + 0.05
    leaves = [t.clone().requires_grad_() for t in (q, k, v, s, s0)]
    seed = rand(heads, n, 3)
    doc = dict(kind="lightning", queries=q.numpy(), keys=k.numpy(), values=v.numpy(), slopes=s.tolist(), chunk=4,
               gradient=seed.numpy(), **({"initial_state": s0.numpy()} if with_s0 else {}))
    trace = computed(doc)
    lq, lk, lv, ls, ls0 = leaves
    i = torch.arange(n, dtype=torch.float64)
    distance = (i[:, None] - i[None, :])
    decay = torch.where(distance >= 0, torch.exp(-ls[:, None, None] * distance.clamp(min=0)), torch.zeros(()))
    o = ((lq @ lk.transpose(-1, -2)) * decay) @ lv
    if with_s0:
        o = o + torch.exp(-ls[:, None] * (i + 1))[:, :, None] * (lq @ ls0)
    (o * seed).sum().backward()
    close(trace["head_outputs"], o.detach(), 1e-12, "head_outputs against the direct sum")
    for key, leaf in (("grad_queries", lq), ("grad_keys", lk), ("grad_values", lv), ("grad_slopes", ls)):
        close(trace[key], leaf.grad, 1e-12, key)
    if with_s0:
        close(trace["grad_initial_state"], ls0.grad, 1e-12, "grad_initial_state")
    else:
        assert "grad_initial_state" not in trace
