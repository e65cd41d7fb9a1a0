"""The Qwen3-shaped case (issue 28): benchmarks/llama.py's layer with QK-norm, whole processes, in rounds.

    python benchmarks/qwen3.py            # n = 8192, d_model 2048, 16 query heads, 4 K/V heads of 128
    python benchmarks/qwen3.py --n 2048   # a quicker look
    python benchmarks/run.py --qwen3      # the same, from the main benchmark

Qwen3's attention in float64: llama.py's layer (W_Q, W_K, W_V on 4 key/value heads, W_O, causal, the output
only, written to .npy) with an RMSNorm over each head's 128 numbers of the queries and of the keys (γ shared
by the heads, ε = 1e-6, Qwen3's q_norm and k_norm) before RoPE (θ = 10⁶, rotate_half). The torch script
normalises and rotates the same tensors itself, then calls ``scaled_dot_product_attention(..., is_causal=True)``
on 4-D tensors with the K/V heads repeated; it asserts that torch chose its fused flash kernel
(``torch._fused_sdp_choice``) and forces it, so that a fallback would be an error. Measured and printed by
llama.py's ``measure`` and ``report`` (rounds, best times, CPU, peak memory, the outputs compared to 1e-9).
"""

from __future__ import annotations

import sys
from pathlib import Path

import llama

EPS = 1e-6

NORM = '''eps = 1e-6
gamma = {c: torch.from_numpy(np.load(f"{folder}/g{c}.npy")) for c in "qk"}
def rms_norm(t, gamma):  # Qwen3RMSNorm over each head's d numbers
    return gamma * (t * torch.rsqrt(t.pow(2).mean(-1, keepdim=True) + eps))
q, k = rms_norm(q, gamma["q"]), rms_norm(k, gamma["k"])
'''
ROTATION = "inv = 1.0 / 10000.0 **"
assert ROTATION in llama.TORCH_SCRIPT  # the norm goes in just before the rotation
TORCH_SCRIPT = llama.TORCH_SCRIPT.replace(ROTATION, NORM + ROTATION.replace("10000.0", "1000000.0"))

DOCUMENT = llama.DOCUMENT.replace("rope: {base: 10000}", f"""\
qk_norm: {{kind: rms, gamma: {{query: gq.npy, key: gk.npy}}, eps: {EPS}}}
rope: {{base: 1000000}}""")


def write_inputs(folder: Path, n: int) -> None:
    """llama.py's inputs and weights, γ of the query and key norms near 1, this layer's document and torch script."""
    import numpy as np

    llama.write_inputs(folder, n)
    rng = np.random.default_rng(1)
    for c in "qk":
        np.save(folder / f"g{c}.npy", 1.0 + rng.normal(0.0, 0.1, llama.D_K))
    (folder / "doc.yaml").write_text(DOCUMENT)
    (folder / "torch_layer.py").write_text(TORCH_SCRIPT)


def measure(n: int, repeat: int = 1) -> dict:
    return llama.measure(n, repeat, write_inputs)


def report(result: dict, peak: float | None = None) -> None:
    llama.report(result, peak, "Qwen3-shaped layer (QK-norm: RMSNorm per head, γ shared, before RoPE θ = 10⁶)")


if __name__ == "__main__":
    llama.main(sys.modules[__name__])
