"""The backward pass: a whole attncli process computing a layer's gradients against torch's autograd, fused kernel.

    python benchmarks/backward.py                       # n = 8192, none and causal, 3 rounds; peak at n = 16384
    python benchmarks/backward.py --sizes 2048 --repeat 1 --skip-long
    python benchmarks/run.py --backward                 # the same, after run.py's own tables

One self-attention layer as benchmarks/run.py's (d_model = 768, 12 heads of 64, float64, W_Q, W_K, W_V and W_O
from .npy files) with ``gradient: g.npy`` (dL/d output, n × 768).  attncli: ``attncli compute DOC --only output
--only grad_queries --only grad_keys --only grad_values --only grad_inputs --only grad_weight_query … -o out.npz``
(the streamed forward and backward, FlashAttention-2's order).  torch: the same layer with autograd, the
projections and scaled_dot_product_attention on 4-D float64 tensors, its kernel named by
``torch._fused_sdp_choice`` and forced (``sdpa_kernel``), ``y.backward(g)``, every gradient written to a .npz.
Each run is a process of its own (its peak memory from wait4), in rounds of one of each in turn; the ratio is
attncli's best time over torch's.  The gradients are compared (largest difference over the largest value).
This is a measurement: it asserts nothing about time.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from run import D_MODEL, HEADS, attncli_command, spawn, spread, write_inputs

KEYS = ("output", "grad_queries", "grad_keys", "grad_values", "grad_inputs", "grad_weight_query", "grad_weight_key",
        "grad_weight_value", "grad_weight_output")
TORCH = '''
import sys
import numpy as np
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
folder, n, causal, out = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "causal", sys.argv[4]
x = torch.from_numpy(np.load(f"{folder}/x{n}.npy")).requires_grad_()
w = {c: torch.from_numpy(np.load(f"{folder}/w{c}.npy")).requires_grad_() for c in "qkvo"}
g = torch.from_numpy(np.load(f"{folder}/g{n}.npy"))
q, k, v = ((x @ w[c]).view(1, n, 12, 64).transpose(1, 2) for c in "qkv")
for t in (q, k, v):
    t.retain_grad()
path = SDPBackend(torch._fused_sdp_choice(q, k, v, is_causal=causal))
with sdpa_kernel([path]):  # a fallback is an error
    h = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
y = h[0].transpose(0, 1).reshape(n, 768) @ w["o"]
y.backward(g)
grads = {"output": y.detach(), "grad_queries": q.grad[0], "grad_keys": k.grad[0], "grad_values": v.grad[0],
         "grad_inputs": x.grad, **{f"grad_weight_{name}": w[c].grad for name, c in zip(
             ("query", "key", "value", "output"), "qkvo")}}
np.savez(out, **{key: value.numpy() for key, value in grads.items()})
print(path.name)
'''


def documents(folder: Path, n: int) -> dict[str, Path]:
    import numpy as np

    np.save(folder / f"g{n}.npy", np.random.default_rng(5).normal(size=(n, D_MODEL)))
    paths = {}
    for mask, name in (("none", f"doc{n}.yaml"), ("causal", f"causal{n}.yaml")):
        path = folder / f"backward_{mask}{n}.yaml"
        path.write_text((folder / name).read_text() + f"gradient: g{n}.npy\n")
        paths[mask] = path
    return paths


def largest_difference(mine: Path, theirs: Path) -> float:
    """max over the arrays of max |attncli − torch| / max |torch| (torch's q.grad … laid out as attncli's)."""
    import numpy as np

    with np.load(mine) as a, np.load(theirs) as b:
        return max(float(np.abs(a[key] - b[key]).max() / np.abs(b[key]).max()) for key in KEYS)


def measure(folder: Path, n: int, mask: str, doc: Path, repeat: int) -> dict:
    only = [arg for key in KEYS for arg in ("--only", key)]
    mine = [*attncli_command(), "compute", str(doc), *only, "-o", str(folder / "mine.npz")]
    theirs = [sys.executable, str(folder / "torch_backward.py"), str(folder), str(n), mask, str(folder / "torch.npz")]
    runs = {"attncli": [], "torch": []}
    path = ""
    for _ in range(repeat):
        runs["attncli"].append(spawn(mine))
        wall, peak, out, cpu = spawn(theirs)
        runs["torch"].append((wall, peak, out, cpu))
        path = out.strip()
    return {"runs": runs, "path": path, "difference": largest_difference(folder / "mine.npz", folder / "torch.npz")}


def report(sizes: list[int], repeat: int, long: bool, folder: Path) -> None:
    write_inputs(folder, sorted(set(sizes) | ({16384} if long else set())))
    (folder / "torch_backward.py").write_text(TORCH)
    print(f"\nThe backward pass: d_model {D_MODEL}, {HEADS} heads, float64; forward and backward (dQ, dK, dV, dX "
          "and the weight gradients) in a whole process writing .npz;")
    print(f"{repeat} rounds, in turn. time: the best round; ÷ torch: best over best (spread: round by round).\n")
    print(f"{'n':>6} {'mask':<7}{'attncli':>10}{'peak':>9}{'torch':>10}{'peak':>9}{'÷ torch':>9}{'spread':>12}"
          f"{'max rel Δ':>11}  torch's path")
    for n in sizes:
        for mask, doc in documents(folder, n).items():
            m = measure(folder, n, mask, doc, repeat)
            mine, theirs = m["runs"]["attncli"], m["runs"]["torch"]
            best_mine, best_theirs = min(r[0] for r in mine), min(r[0] for r in theirs)
            print(f"{n:>6} {mask:<7}{best_mine:>9.1f}s{max(r[1] for r in mine):>7.0f}MB{best_theirs:>9.1f}s"
                  f"{max(r[1] for r in theirs):>7.0f}MB{best_mine / best_theirs:>9.2f}"
                  f"{spread([r[0] for r in mine], [r[0] for r in theirs]):>12}{m['difference']:>11.1e}  {m['path']}")
    if long:
        doc = documents(folder, 16384)["causal"]
        only = [arg for key in KEYS for arg in ("--only", key)]
        wall, peak, _, _ = spawn([*attncli_command(), "compute", str(doc), *only, "-o", str(folder / "long.npz")])
        print(f"\nn = 16384, causal, attncli alone: {wall:.1f} s, peak {peak:.0f} MB (target ≤ 1536 MB)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="8192", help="comma-separated n (default 8192)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-long", action="store_true", help="skip the peak at n = 16384")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="attncli-backward-") as folder:
        report([int(s) for s in args.sizes.split(",")], max(args.repeat, 1), not args.skip_long, Path(folder))


if __name__ == "__main__":
    main()
