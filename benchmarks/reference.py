"""attncli.reference against torch autograd on scaled_dot_product_attention: float64, causal, forward + backward.

    python benchmarks/reference.py                     # batch 4 × 16 heads × 2048 × 128, 3 rounds
    python benchmarks/reference.py --n 512 --rounds 1  # a quick look

The same arrays (q, k, v, dO: batch × heads × n × d, float64, saved as .npy) go to both, each run a process of
its own, in rounds of one of each in turn.  attncli: ``attncli.reference(q, k, v, layout="bhsd", causal=True,
dout=dO)`` (out, lse, dq, dk, dv).  torch: ``scaled_dot_product_attention(q, k, v, is_causal=True)`` on tensors
that require grad, ``out.backward(dO)``, on the kernel ``torch._fused_sdp_choice`` names.  Times are the call
alone (arrays loaded first); the ratio is attncli's median over torch's.  Memory: tracemalloc's peak in the child
(numpy and torch CPU report their buffers to it) and its peak resident memory less what it held before the call,
against the budget 1.5 × (the inputs and outputs) + one n × n float64 tile per thread.  The first round's
results are compared (the largest difference over the largest value).  This is a measurement: it asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KEYS = ("out", "dq", "dk", "dv")


def child(kind: str, folder: str, save: str | None) -> None:
    import resource
    import tracemalloc

    import numpy as np

    if kind == "torch":
        import torch
    else:
        import attncli
    tracemalloc.start()
    q, k, v, d_o = (np.load(f"{folder}/{name}.npy") for name in ("q", "k", "v", "do"))
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    if kind == "torch":
        qt, kt, vt = (torch.from_numpy(a).requires_grad_() for a in (q, k, v))
        choice = torch._fused_sdp_choice(qt, kt, vt, is_causal=True)
        out = torch.nn.functional.scaled_dot_product_attention(qt, kt, vt, is_causal=True)
        out.backward(torch.from_numpy(d_o))
        results = {"out": out.detach().numpy(), "dq": qt.grad.numpy(), "dk": kt.grad.numpy(), "dv": vt.grad.numpy()}
        name = f"torch (kernel {choice})"
    else:
        r = attncli.reference(q, k, v, layout="bhsd", causal=True, dout=d_o)
        results = {"out": r.out, "dq": r.dq, "dk": r.dk, "dv": r.dv}
        name = "attncli.reference"
    seconds = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1]
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    if save:
        np.savez(save, **results)
    print(f"{seconds} {peak} {rss * 1024} {name}")


def spawn(argv: list[str]) -> tuple[float, int, int, str]:
    done = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT)
    if done.returncode:
        raise RuntimeError(f"{' '.join(argv)} failed: {done.stderr[-2000:]}")
    seconds, peak, rss, name = done.stdout.split(maxsplit=3)
    return float(seconds), int(peak), int(rss), name.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--heads", type=int, default=16)
    parser.add_argument("--n", type=int, default=2048)
    parser.add_argument("--d", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--child", choices=("attncli", "torch"))
    parser.add_argument("--folder")
    parser.add_argument("--save")
    args = parser.parse_args()
    if args.child:
        child(args.child, args.folder, args.save)
        return
    import numpy as np

    shape = (args.batch, args.heads, args.n, args.d)
    with tempfile.TemporaryDirectory() as folder:
        rng = np.random.default_rng(0)
        for name in ("q", "k", "v", "do"):
            np.save(f"{folder}/{name}.npy", rng.normal(size=shape))
        times: dict[str, list[float]] = {"attncli": [], "torch": []}
        memory: dict[str, tuple[int, int]] = {}
        names = {}
        for round_ in range(args.rounds):
            for kind in ("attncli", "torch"):
                save = f"{folder}/{kind}.npz" if round_ == 0 else None
                argv = [sys.executable, __file__, "--child", kind, "--folder", folder] + (["--save", save] if save
                                                                                          else [])
                seconds, peak, rss, names[kind] = spawn(argv)
                times[kind].append(seconds)
                memory[kind] = max(memory.get(kind, (0, 0)), (peak, rss))
                print(f"round {round_ + 1}: {names[kind]:<40} {seconds:8.2f} s   load {os.getloadavg()[0]:.2f}",
                      flush=True)
        mine, theirs = np.load(f"{folder}/attncli.npz"), np.load(f"{folder}/torch.npz")
        for key in KEYS:
            diff = float(np.abs(mine[key] - theirs[key]).max() / np.abs(theirs[key]).max())
            print(f"{key}: largest difference / largest value {diff:.1e}")
    ratios = sorted(a / b for a, b in zip(times["attncli"], times["torch"]))
    ratio = statistics.median(times["attncli"]) / statistics.median(times["torch"])
    print(f"attncli ÷ torch (median times): {ratio:.2f}  (rounds {ratios[0]:.2f}–{ratios[-1]:.2f})")
    size = 8 * np.prod(shape)
    arrays = 8 * size + 8 * args.batch * args.heads * args.n  # q, k, v, dO in; out, dq, dk, dv and lse out
    threads = min(len(os.sched_getaffinity(0)), 2 * args.batch * args.heads)
    budget = 1.5 * arrays + threads * 8 * args.n * args.n
    for kind, (peak, rss) in memory.items():
        print(f"{names[kind]:<40} tracemalloc peak {peak / 2**20:7.0f} MiB, resident peak growth {rss / 2**20:7.0f} "
              f"MiB; budget {budget / 2**20:.0f} MiB (inputs and outputs {arrays / 2**20:.0f} MiB), "
              f"peak ÷ budget {peak / budget:.2f}")
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
