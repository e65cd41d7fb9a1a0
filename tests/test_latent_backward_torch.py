"""The backward pass through ``latent`` against torch.autograd on Hugging Face's DeepseekV2Attention and
DeepseekV3Attention in float64: every gradient the latent stage adds (c_Q, c_KV, the down and up projections,
their biases, the norms' γ), and dX, dQ, dK, dV, dW_O, with and without a causal mask, q LoRA on and off.

The modules are tiny, built from configs with random weights (nothing is downloaded), patched to float64 as
tests/test_latent_torch.py does (its Recorder).  L = Σ gradient ⊙ o_proj's output, differentiated by autograd; the
intermediates' gradients are taken from forward hooks that keep them (``retain_grad``).  Each gradient agrees with
attncli to 1e-12 of its largest number, on the full and on the streamed path.
"""

from __future__ import annotations

import numpy as np
import pytest

import attncli

torch = pytest.importorskip("torch", minversion="2.5")
pytest.importorskip("transformers", minversion="5.23")
pytest.importorskip("transformers.models.deepseek_v3.modeling_deepseek_v3")
from test_latent_torch import (  # noqa: E402
    HEADS,
    KV_RANK,
    NOPE,
    V_DIM,
    Recorder,
    deepseek,
    document,
    frequencies_and_factor,
    position_embeddings,
    rope_of,
    yarn_scale,
)
from test_modern_torch import F64, hf_mask  # noqa: E402
from test_rope_scaling_torch import hf64  # noqa: E402, F401 (a fixture)

from attncli.core.gradient_keys import GRADIENT_KEYS  # noqa: E402
from attncli.core.stream import attend_streamed  # noqa: E402

pytestmark = pytest.mark.torch
TOL = 1e-12  # of the largest number of each gradient
LATENT_KEYS = {key for key in GRADIENT_KEYS if "latent" in key or "_down" in key or "_up" in key}
CASES = [  # version, q LoRA, causal, rope_interleave, YaRN, attention_bias
    (2, False, True, True, False, False), (2, True, False, True, False, True), (2, True, True, True, True, False),
    (3, False, False, True, False, False), (3, True, True, True, False, True), (3, False, True, False, True, False),
    (3, True, False, False, False, False), (3, True, True, True, True, True)]


def grad_of(linear, bias: bool = False) -> np.ndarray:
    """nn.Linear's weight gradient in attncli's d_in × d_out (its bias's with ``bias``)."""
    return (linear.bias.grad if bias else linear.weight.grad.T).numpy().copy()


def autograd(monkeypatch, attn, x: np.ndarray, seed: np.ndarray, tables, mask) -> dict[str, np.ndarray]:
    """Every gradient autograd gives of L = Σ seed ⊙ attn(x), by attncli's key."""
    Recorder(monkeypatch, attn)  # float64 norms, softmax and (V2) rotation
    kept = {}
    hooks = {"latent_kv": attn.kv_a_layernorm, "kv_down": attn.kv_a_proj_with_mqa, "kv_up": attn.kv_b_proj,
             "queries": attn.q_proj or attn.q_b_proj}
    if attn.q_a_layernorm is not None:
        hooks["latent_queries"] = attn.q_a_layernorm

    def keep(name: str, output) -> None:  # (a hook returning None leaves the output as it is)
        output.retain_grad()
        kept[name] = output

    for name, layer in hooks.items():
        layer.register_forward_hook(lambda _m, _i, o, name=name: keep(name, o))
    x_t = torch.tensor(x[None], dtype=F64, requires_grad=True)
    out, _ = attn(x_t, position_embeddings=tables, attention_mask=mask)
    (torch.tensor(seed[None], dtype=F64) * out).sum().backward()
    n = x.shape[0]
    kv = kept["kv_up"].grad[0].reshape(n, HEADS, NOPE + V_DIM).permute(1, 0, 2)  # (h, m, d_nope + d_v)
    got = {"grad_inputs": x_t.grad[0], "grad_latent_kv": kept["latent_kv"].grad[0],
           "grad_queries": kept["queries"].grad[0].reshape(n, HEADS, -1).permute(1, 0, 2),
           "grad_values": kv[..., NOPE:], "keys_nope": kv[..., :NOPE], "k_r": kept["kv_down"].grad[0, :, KV_RANK:],
           "grad_weight_kv_down": grad_of(attn.kv_a_proj_with_mqa), "grad_weight_kv_up": grad_of(attn.kv_b_proj),
           "grad_weight_output": grad_of(attn.o_proj), "grad_latent_kv_norm_gamma": attn.kv_a_layernorm.weight.grad}
    if attn.q_proj is not None:
        got["grad_weight_query"] = grad_of(attn.q_proj)
    else:
        got.update(grad_weight_query_down=grad_of(attn.q_a_proj), grad_weight_query_up=grad_of(attn.q_b_proj),
                   grad_latent_queries=kept["latent_queries"].grad[0],
                   grad_latent_query_norm_gamma=attn.q_a_layernorm.weight.grad)
    if attn.kv_a_proj_with_mqa.bias is not None:
        got.update(grad_bias_kv_down=grad_of(attn.kv_a_proj_with_mqa, True),
                   grad_bias_output=grad_of(attn.o_proj, True))
        if attn.q_a_proj is not None:
            got["grad_bias_query_down"] = grad_of(attn.q_a_proj, True)
    return {key: np.asarray(value.detach().numpy() if torch.is_tensor(value) else value) for key, value in got.items()}


def mine(gradients: dict) -> dict[str, np.ndarray]:
    """attncli's gradients, with dK split as autograd sees it: the nope part per head, and the shared rotary key's
    gradient summed over the heads."""
    keys = gradients["grad_keys"]
    return {**gradients, "keys_nope": keys[..., :NOPE], "k_r": keys[..., NOPE:].sum(axis=0)}


def largest_difference(got: dict, want: dict) -> dict[str, float]:
    """Each key's largest |attncli − autograd|, relative to autograd's largest number."""
    out = {}
    for key, value in want.items():
        assert got[key].shape == value.shape, (key, got[key].shape, value.shape)
        out[key] = float(np.abs(got[key] - value).max() / np.abs(value).max())
    return out


@pytest.mark.parametrize("version, q_lora, causal, interleave, yarn, bias", CASES)
def test_latent_gradients_against_autograd(monkeypatch, hf64, version, q_lora, causal, interleave, yarn,  # noqa: F811
                                            bias):
    n, positions = 6, [0, 1, 2, 5, 40, 41]
    cfg, attn = deepseek(version, q_lora, interleave, yarn, bias)
    frequencies, a = frequencies_and_factor(cfg, hf64, yarn, max(positions) + 1)
    monkeypatch.undo()
    rng = np.random.default_rng(version + 2 * q_lora + 4 * causal)
    x, seed = rng.normal(size=(n, cfg.hidden_size)), rng.normal(size=(n, cfg.hidden_size))
    want = autograd(monkeypatch, attn, x, seed, position_embeddings(version, frequencies, a, positions),
                    hf_mask(n, n)[0] if causal else None)
    doc = document(attn, cfg, x, rope_of(version, interleave, yarn, frequencies), yarn_scale(yarn),
                   positions=positions, mask="causal" if causal else "none", gradient=seed)
    trace = attncli.compute(doc)
    full = largest_difference(mine(trace.gradients), want)
    streamed = largest_difference(mine(attend_streamed(trace.spec).gradients), want)
    print(f"\nDeepseekV{version} q_lora={q_lora} causal={causal}: worst {max(full.values()):.1e} (full), "
          f"{max(streamed.values()):.1e} (streamed)")
    assert max(full.values()) < TOL, full
    assert max(streamed.values()) < TOL, streamed
    assert (LATENT_KEYS & set(trace.gradients)) <= set(want), "a latent gradient autograd did not check"
    if q_lora and bias:  # every key the latent stage adds is compared (the contract gives the up-projections no bias)
        assert LATENT_KEYS - set(want) == {"grad_bias_query_up", "grad_bias_kv_up"}

