"""The Llama-style case (issue 15): attncli against PyTorch's fused CPU kernel, whole processes, in rounds.

    python benchmarks/llama.py            # n = 8192, d_model 2048, 16 query heads, 4 K/V heads of 128
    python benchmarks/llama.py --n 2048   # a quicker look
    python benchmarks/run.py --llama      # the same, from the main benchmark

One decoder attention layer in float64: W_Q, W_K, W_V (grouped-query: 4 key/value heads) and W_O,
RoPE (θ = 10000, rotate_half pairs), causal, the output only, written to .npy by each process.
PyTorch takes the same projections and rotation, repeats the K/V heads to 16 and calls
``scaled_dot_product_attention(..., is_causal=True)`` on 4-D (batch, heads, n, d) tensors: its
fused flash kernel on the CPU (``enable_gqa=True`` or 3-D inputs take the math path in float64,
which materialises every n × n matrix: no yardstick); the script asserts that torch chose that
kernel (``torch._fused_sdp_choice``) and forces it, so that a fallback would be an error. The two
processes run in rounds, one of each in turn; shown are the best wall time of each, that run's CPU
time (user + system), the largest peak memory (maximum resident set, wait4), and the ratio with its
spread round by round. The outputs are compared (to 1e-9 relative); nothing is asserted about time.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
D_MODEL, HEADS, KV_HEADS, D_K = 2048, 16, 4, 128

TORCH_SCRIPT = '''
import sys
import numpy as np
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
folder, n = sys.argv[1], int(sys.argv[2])
h, g, d = 16, 4, 128
x = torch.from_numpy(np.load(f"{folder}/x.npy"))
w = {c: torch.from_numpy(np.load(f"{folder}/w{c}.npy")) for c in "qkvo"}
q = (x @ w["q"]).view(1, n, h, d).transpose(1, 2)  # (1, h, n, d): 4-D takes the fused kernel
k = (x @ w["k"]).view(1, n, g, d).transpose(1, 2)
v = (x @ w["v"]).view(1, n, g, d).transpose(1, 2)
inv = 1.0 / 10000.0 ** (torch.arange(0, d, 2, dtype=torch.float64) / d)
angle = torch.arange(n, dtype=torch.float64)[:, None] * inv[None, :]
cos, sin = torch.cat([angle.cos()] * 2, -1), torch.cat([angle.sin()] * 2, -1)
def rotate_half(t):
    return torch.cat([-t[..., d // 2:], t[..., : d // 2]], -1)
q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
k, v = k.repeat_interleave(h // g, dim=1), v.repeat_interleave(h // g, dim=1)
assert SDPBackend(torch._fused_sdp_choice(q, k, v, is_causal=True)) == SDPBackend.FLASH_ATTENTION
with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):  # a fallback is an error
    y = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
y = y[0].transpose(0, 1).reshape(n, h * d) @ w["o"]
np.save(f"{folder}/torch_out.npy", y.numpy())
'''

DOCUMENT = """\
inputs: x.npy
heads: 16
kv_heads: 4
rope: {base: 10000}
mask: causal
weights:
  query: wq.npy
  key: wk.npy
  value: wv.npy
  output: wo.npy
"""


def write_inputs(folder: Path, n: int) -> None:
    import numpy as np

    rng = np.random.default_rng(0)
    shapes = {"q": (D_MODEL, HEADS * D_K), "k": (D_MODEL, KV_HEADS * D_K), "v": (D_MODEL, KV_HEADS * D_K),
              "o": (HEADS * D_K, D_MODEL)}
    for c, shape in shapes.items():
        np.save(folder / f"w{c}.npy", rng.normal(0.0, shape[0] ** -0.5, shape))
    np.save(folder / "x.npy", rng.normal(size=(n, D_MODEL)))
    (folder / "doc.yaml").write_text(DOCUMENT)
    (folder / "torch_layer.py").write_text(TORCH_SCRIPT)


def spawn(argv: list[str]) -> tuple[float, float, float]:
    """Run ``argv``; (wall seconds, its own peak resident memory in MB, CPU seconds)."""
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        child = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err, cwd=ROOT)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
        if os.waitstatus_to_exitcode(status) != 0:
            err.seek(0)
            raise RuntimeError(f"{' '.join(argv)} failed: {err.read().decode()[-2000:]}")
    return wall, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime


def flops(n: int) -> float:
    """Projections (Q, K, V, O) and, causal, half of Q·Kᵀ and A·V (multiply-adds count 2)."""
    projections = 2 * n * D_MODEL * (2 * HEADS * D_K + 2 * KV_HEADS * D_K)
    return projections + 4 * HEADS * (n * (n + 1) / 2) * D_K


def measure(n: int, repeat: int = 1, write=write_inputs, count=flops) -> dict:
    """The two commands in rounds on the inputs ``write(folder, n)`` makes (benchmarks/qwen3.py and mla.py pass
    their own); with ``count`` (the multiply-adds' FLOPs at n), attncli's GFLOP/s too."""
    import numpy as np

    attncli = Path(sys.executable).parent / "attncli"
    command = [str(attncli)] if attncli.exists() else [sys.executable, "-m", "attncli"]
    with tempfile.TemporaryDirectory(prefix="attncli-llama-") as tmp:
        folder = Path(tmp)
        write(folder, n)
        ours, theirs = [], []
        for _ in range(repeat):  # rounds: one of each in turn
            ours.append(spawn([*command, "compute", str(folder / "doc.yaml"), "--only", "output",
                               "-o", str(folder / "out.npy")]))
            theirs.append(spawn([sys.executable, str(folder / "torch_layer.py"), str(folder), str(n)]))
        a, b = np.load(folder / "out.npy"), np.load(folder / "torch_out.npy")
        difference = float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-300))
    best, best_theirs = min(ours), min(theirs)
    ratios = sorted(mine[0] / other[0] for mine, other in zip(ours, theirs))
    return {"n": n, "attncli_s": best[0], "attncli_cpu": best[2], "attncli_mb": max(r[1] for r in ours),
            "torch_s": best_theirs[0], "torch_cpu": best_theirs[2], "torch_mb": max(r[1] for r in theirs),
            "ratio": best[0] / best_theirs[0], "ratios": (ratios[0], ratios[-1]), "max_rel_difference": difference,
            **({"gflops": count(n) / best[0] / 1e9} if count else {})}


def report(result: dict, peak: float | None = None, title: str = "Llama-style layer") -> None:
    """Print ``result``; with ``peak`` (numpy's float64 matmul GFLOP/s, from benchmarks/run.py), the share of it."""
    print(f"{title}: n = {result['n']}, d_model {D_MODEL}, {HEADS} query heads, {KV_HEADS} K/V heads of "
          f"{D_K}, RoPE, causal, float64, output only, whole processes writing .npy")
    print(f"  attncli                                        {result['attncli_s']:7.2f} s "
          f"(cpu {result['attncli_cpu']:6.2f} s)  {result['attncli_mb']:7.0f} MB  {result['gflops']:5.1f} GFLOP/s"
          + (f" ({result['gflops'] / peak:.2f} of numpy's matmul peak)" if peak else ""))
    print(f"  torch SDPA fused (flash), is_causal, 4-D, K/V repeated  {result['torch_s']:7.2f} s "
          f"(cpu {result['torch_cpu']:6.2f} s)  {result['torch_mb']:7.0f} MB")
    low, high = result["ratios"]
    print(f"  ratio attncli / torch: {result['ratio']:.2f} (rounds {low:.2f}–{high:.2f}; "
          f"cpu {result['attncli_cpu'] / result['torch_cpu']:.2f})"
          f"   (outputs agree to {result['max_rel_difference']:.1e} relative)")


def main(layer=None) -> None:
    """This script's command line, or that of ``layer``: a module with its own measure and report (qwen3.py)."""
    layer = layer or sys.modules[__name__]
    parser = argparse.ArgumentParser(description=layer.__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=8192, help="tokens (default 8192)")
    parser.add_argument("--repeat", type=int, default=1, help="rounds of both; the fastest is shown (default 1)")
    args = parser.parse_args()
    layer.report(layer.measure(args.n, args.repeat))


if __name__ == "__main__":
    main()
