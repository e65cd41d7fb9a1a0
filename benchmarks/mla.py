"""Multi-head latent attention (issue 29): attncli against PyTorch's fused CPU kernel, whole processes, in rounds.

    python benchmarks/mla.py              # n = 8192, a DeepSeek-V2-Lite-shaped layer
    python benchmarks/mla.py --n 2048     # a quicker look
    python benchmarks/run.py --mla        # the same, from the main benchmark

One layer in float64: d_model 2048, 16 heads, d_nope 128, d_r 64 (interleaved pairs, the last 64 of each head),
d_v 128, r_kv 512, no query LoRA (V2-Lite's q_proj), causal, the output only, written to .npy by each process.
attncli reads the document's ``latent`` (W_Q, W_DKV, kv_norm, W_UKV, W_O).  PyTorch takes the same projections,
norm and rotation, expands K and V per head, pads V to d_k = 192 with zeros (as FlashAttention does for MLA: with
d_v ≠ d_k torch takes its math path, 8.6 GB per n × m tensor here) and calls
``scaled_dot_product_attention(..., is_causal=True)`` on 4-D tensors; the script asserts that torch chose its fused
flash kernel (``torch._fused_sdp_choice``) and forces it, so that a fallback would be an error.  The two processes
run in rounds, one of each in turn; shown are the best wall time of each, that run's CPU time, the largest peak
memory (maximum resident set, wait4), and the ratio with its spread round by round.  The outputs are compared (to
1e-9 relative); nothing is asserted about time.  Targets (the issue): ratio ≤ 1.0, attncli's peak ≤ 1.5 GB.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import llama  # one way to run and measure whole processes in rounds, llama.py's

ROOT = Path(__file__).resolve().parent.parent
D_MODEL, HEADS, NOPE, ROPE, D_V, R_KV = 2048, 16, 128, 64, 128, 512

TORCH_SCRIPT = '''
import sys
import numpy as np
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
folder, n = sys.argv[1], int(sys.argv[2])
h, nope, rope, d_v, r_kv = 16, 128, 64, 128, 512
d_k = nope + rope
x = torch.from_numpy(np.load(f"{folder}/x.npy"))
w = {name: torch.from_numpy(np.load(f"{folder}/{name}.npy")) for name in ("wq", "wkv_down", "wkv_up", "wo")}
q = (x @ w["wq"]).view(1, n, h, d_k).transpose(1, 2)  # (1, h, n, d_k)
both = x @ w["wkv_down"]  # (n, r_kv + d_r)
c, k_r = both[:, :r_kv], both[:, r_kv:]
c = c * torch.rsqrt(c.pow(2).mean(-1, keepdim=True) + 1e-6)  # kv_norm, gamma = 1
kv = (c @ w["wkv_up"]).view(1, n, h, nope + d_v).transpose(1, 2)  # (1, h, n, d_nope + d_v)
inv = 1.0 / 10000.0 ** (torch.arange(0, rope, 2, dtype=torch.float64) / rope)
angle = torch.arange(n, dtype=torch.float64)[:, None] * inv[None, :]  # (n, d_r/2)
cos, sin = angle.cos(), angle.sin()
def turn(t):  # interleaved pairs (2i, 2i + 1) of the last d_r numbers
    a, b = t[..., 0::2], t[..., 1::2]
    return torch.stack((a * cos - b * sin, b * cos + a * sin), -1).flatten(-2)
q = torch.cat((q[..., :nope], turn(q[..., nope:])), -1)
k = torch.cat((kv[..., :nope], turn(k_r).expand(1, h, n, rope)), -1)
v = torch.nn.functional.pad(kv[..., nope:], (0, d_k - d_v))  # V padded to d_k: the fused kernel needs d_v = d_k
assert SDPBackend(torch._fused_sdp_choice(q, k, v, is_causal=True)) == SDPBackend.FLASH_ATTENTION
with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):  # a fallback is an error
    y = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
y = y[..., :d_v][0].transpose(0, 1).reshape(n, h * d_v) @ w["wo"]
np.save(f"{folder}/torch_out.npy", y.numpy())
'''

DOCUMENT = """\
inputs: x.npy
heads: 16
rope: {dims: 64, part: last, style: interleaved}
latent:
  kv_norm: {kind: rms}
mask: causal
weights:
  query: wq.npy
  kv_down: wkv_down.npy
  kv_up: wkv_up.npy
  output: wo.npy
"""


def write_inputs(folder: Path, n: int) -> None:
    import numpy as np

    rng = np.random.default_rng(0)
    shapes = {"wq": (D_MODEL, HEADS * (NOPE + ROPE)), "wkv_down": (D_MODEL, R_KV + ROPE),
              "wkv_up": (R_KV, HEADS * (NOPE + D_V)), "wo": (HEADS * D_V, D_MODEL)}
    for name, shape in shapes.items():
        np.save(folder / f"{name}.npy", rng.normal(0.0, shape[0] ** -0.5, shape))
    np.save(folder / "x.npy", rng.normal(size=(n, D_MODEL)))
    (folder / "doc.yaml").write_text(DOCUMENT)
    (folder / "torch_layer.py").write_text(TORCH_SCRIPT)


def measure(n: int, repeat: int = 1) -> dict:
    """attncli and the torch script in rounds, as llama.py measures its layer (no FLOP count: the latent
    projections' FLOPs are not llama's)."""
    return llama.measure(n, repeat, write=write_inputs, count=None)


def report(result: dict) -> None:
    print(f"MLA layer (DeepSeek-V2-Lite-shaped): n = {result['n']}, d_model {D_MODEL}, {HEADS} heads, d_nope {NOPE}, "
          f"d_r {ROPE}, d_v {D_V}, r_kv {R_KV}, causal, float64, output only, whole processes writing .npy")
    print(f"  attncli (latent)                               {result['attncli_s']:7.2f} s "
          f"(cpu {result['attncli_cpu']:6.2f} s)  {result['attncli_mb']:7.0f} MB")
    print(f"  torch SDPA fused (flash), is_causal, V padded  {result['torch_s']:7.2f} s "
          f"(cpu {result['torch_cpu']:6.2f} s)  {result['torch_mb']:7.0f} MB")
    low, high = result["ratios"]
    print(f"  ratio attncli / torch: {result['ratio']:.2f} (rounds {low:.2f}–{high:.2f}; "
          f"cpu {result['attncli_cpu'] / result['torch_cpu']:.2f})   (outputs agree to "
          f"{result['max_rel_difference']:.1e} relative; targets: ratio ≤ 1.0, attncli ≤ 1536 MB)")
    if result["max_rel_difference"] > 1e-9:
        raise SystemExit("the outputs differ")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=8192, help="tokens (default 8192)")
    parser.add_argument("--repeat", type=int, default=1, help="rounds of both; the fastest is shown (default 1)")
    args = parser.parse_args()
    report(measure(args.n, args.repeat))


if __name__ == "__main__":
    main()
