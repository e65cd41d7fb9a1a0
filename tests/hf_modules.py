"""Hugging Face attention modules built for the comparisons, beside tests/tiny_models.py (whole models): a tiny
float64 eager config, every parameter drawn at random, ``nn.Linear`` weights in attncli's layout, heads first, HF's
own eager masks, and the attncli document of a Llama-style attention (q/k/v/o_proj).

torch and transformers are imported where used: a test file skips itself (``pytest.importorskip``) before it
calls any of these.
"""

from __future__ import annotations

import os

import numpy as np

os.environ["HF_HUB_OFFLINE"] = "1"  # build from configs only: never reach the Hub
os.environ["TRANSFORMERS_OFFLINE"] = "1"


def config(name: str, intermediate_size: int = 32, **fields):
    """A tiny float64 eager config of ``transformers.<name>Config`` (one layer, 16 tokens of vocabulary)."""
    import transformers

    cfg = getattr(transformers, f"{name}Config")(vocab_size=16, num_hidden_layers=1,
                                                 intermediate_size=intermediate_size, **fields)
    cfg._attn_implementation = "eager"
    return cfg


def randomize(module, seed: int, std: float = 0.3):
    """Every parameter drawn from N(0, std²) (γ too: norms far from ones, peaked attention, non-zero biases, so that
    mistakes show), the module in float64 and in eval mode."""
    import torch

    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=g, dtype=torch.float64) * std)
    return module.to(torch.float64).eval()


def T(linear) -> np.ndarray:
    """nn.Linear.weight (d_out × d_in) in attncli's d_in × d_out."""
    return linear.weight.detach().numpy().T.copy()


def heads_of(t, heads: int) -> np.ndarray:
    """(1, n, heads·d) -> (heads, n, d)."""
    return t[0].reshape(t.shape[1], heads, -1).permute(1, 0, 2).detach().numpy()


def hf_mask(n: int, m: int, function=None) -> tuple:
    """HF's own eager mask (1, 1, n, m) for queries at the last n of m positions (causal unless ``function``), and
    where it allows (n × m)."""
    import torch
    from transformers import masking_utils as masking

    mask = masking.eager_mask(batch_size=1, q_length=n, kv_length=m, q_offset=m - n,
                              mask_function=function or masking.causal_mask_function, dtype=torch.float64)
    return mask, (mask[0, 0] == 0).numpy()


def attention_document(attn, x, heads: int, kv_heads: int, mask, **extra) -> dict:
    """The attncli document of a Llama-style attention (q/k/v/o_proj), weights transposed, biases when present."""
    doc = {"inputs": x, "heads": heads, "kv_heads": kv_heads, "mask": mask,
           "weights": {name: T(getattr(attn, f"{name[0]}_proj")) for name in ("query", "key", "value", "output")}}
    biases = {name: getattr(attn, f"{name[0]}_proj").bias for name in ("query", "key", "value", "output")}
    if any(b is not None for b in biases.values()):
        doc["bias"] = {name: b.detach().numpy() for name, b in biases.items() if b is not None}
    return doc | extra
