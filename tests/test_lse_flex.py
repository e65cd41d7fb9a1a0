"""lse against PyTorch's flex_attention(..., return_aux=AuxRequest(lse=True)) on the CPU in float64: the natural
logarithm of each row's sum of exponentials, with masks, a soft cap, a score bias and grouped heads."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import attncli

N, D_MODEL, H, G, D = 6, 8, 4, 2, 4


@pytest.fixture(scope="module")
def torch():
    torch = pytest.importorskip("torch")
    pytest.importorskip("torch.nn.attention.flex_attention")
    return torch


def _flex_lse(torch, trace, score_mod=None):
    from torch.nn.attention.flex_attention import AuxRequest, flex_attention

    q, k, v = (torch.tensor(a)[None] for a in (trace.kernel_queries, trace.kernel_keys, trace.values))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # flex_attention warns that it runs uncompiled (eager) on the CPU
        out, aux = flex_attention(q, k, v, score_mod=score_mod, scale=trace.spec.scale, enable_gqa=True,
                                  return_aux=AuxRequest(lse=True))
    return out[0].numpy(), aux.lse[0].numpy()


def _doc(seed: int, **extra) -> dict:
    rng = np.random.default_rng(seed)
    return {"inputs": rng.normal(size=(N, D_MODEL)).tolist(), "heads": H, "kv_heads": G,
            "weights": {"query": rng.normal(size=(D_MODEL, H * D)).tolist(),
                        "key": rng.normal(size=(D_MODEL, G * D)).tolist(),
                        "value": rng.normal(size=(D_MODEL, G * D)).tolist()}, **extra}


def test_lse_is_flex_attentions_natural_logarithm(torch):
    trace = attncli.compute(_doc(0))
    out, lse = _flex_lse(torch, trace)
    assert np.allclose(out, trace.head_outputs, rtol=1e-12, atol=1e-12)
    assert np.abs(trace.lse - lse).max() <= 1e-12 * np.abs(lse).max()
    assert np.abs(trace.lse - lse / math.log(2)).max() > 0.1  # not a base-2 logarithm


def test_lse_with_a_causal_mask_soft_cap_and_alibi(torch):
    cap, slopes = 2.5, [0.5, 0.25, 0.125, 0.0625]
    trace = attncli.compute(_doc(1, mask="causal", softcap=cap, score_bias={"alibi": {"slopes": slopes}}))

    def score_mod(score, b, h, i, j):
        capped = cap * torch.tanh(score / cap)
        biased = capped + torch.tensor(slopes, dtype=torch.float64)[h] * (j - i)
        return torch.where(j <= i, biased, -float("inf"))

    out, lse = _flex_lse(torch, trace, score_mod)
    assert np.allclose(out, trace.head_outputs, rtol=1e-12, atol=1e-12)
    assert np.abs(trace.lse - lse).max() <= 1e-12 * np.abs(lse).max()


def test_lse_with_sinks_adds_the_sinks_exponential(torch):
    sinks = [0.5, -1.0, 2.0, 0.0]
    trace = attncli.compute(_doc(2, sinks=sinks, mask="causal"))
    _, lse = _flex_lse(torch, trace, lambda score, b, h, i, j: torch.where(j <= i, score, -float("inf")))
    expected = np.logaddexp(lse, np.array(sinks)[:, None])
    assert np.abs(trace.lse - expected).max() <= 1e-12 * np.abs(expected).max()
