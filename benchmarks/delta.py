"""Gated DeltaNet in float64: a whole attncli process against a torch script running transformers' recurrent
function on the same arrays.

    python benchmarks/delta.py                     # n = 4096, 16 heads, d_k = d_v = 128, 3 rounds
    python benchmarks/delta.py --n 1024 --repeat 1 --torch-threads 1

The arrays (q, k, v: 16 × n × 128; β, g: 16 × n) are .npy files. attncli: ``attncli compute DOC --only
head_outputs --only final_state -o out.npz`` on a ``linear:`` document giving them directly (the chunked form, C =
64). torch: transformers' ``torch_recurrent_gated_delta_rule`` (models/qwen3_next), its source run with its float32
casts made float64 (so both compute float64), l2 norm in the kernel, the outputs written to a .npz. Each run is a
process of its own, in rounds of one of each in turn; the ratio is the median of attncli's times over torch's (and
of their CPU seconds, which a machine busy with other work changes least). The
outputs are compared (largest difference over the largest value). A measurement: it asserts nothing about time.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from run import attncli_command, spawn

TORCH = '''
import inspect, sys
import numpy as np
import torch
from transformers.models.qwen3_next import modeling_qwen3_next as qwen
folder, out, threads = sys.argv[1], sys.argv[2], int(sys.argv[3])
if threads:
    torch.set_num_threads(threads)
function = qwen.torch_recurrent_gated_delta_rule
if not inspect.isfunction(function):  # (transformers 5.25 with kernels: a hub-kernel wrapper calling it)
    function = inspect.getclosurevars(type(function).forward).nonlocals["func"]
source = inspect.getsource(function)
source = "\\n".join(line for line in source.splitlines() if not line.startswith("@"))
space = dict(vars(qwen))
exec(source.replace("torch.float32", "torch.float64"), space)  # transformers' own function, in float64
rule = space["torch_recurrent_gated_delta_rule"]
q, k, v, b, g = (torch.from_numpy(np.load(f"{folder}/{name}.npy")) for name in ("q", "k", "v", "b", "g"))
per_token = lambda t: t.transpose(0, 1)[None]  # h × n × … -> 1 × n × h × …
with torch.no_grad():
    o, final = rule(per_token(q), per_token(k), per_token(v), g=per_token(g), beta=per_token(b),
                    output_final_state=True, use_qk_l2norm_in_kernel=True)
assert o.dtype == torch.float64 and final.dtype == torch.float64
np.savez(out, head_outputs=o[0].transpose(0, 1).numpy(), final_state=final[0].numpy())
'''


def write_inputs(folder: Path, n: int, heads: int, d: int) -> Path:
    import numpy as np

    rng = np.random.default_rng(0)
    for name, shape in (("q", (heads, n, d)), ("k", (heads, n, d)), ("v", (heads, n, d)), ("b", (heads, n)),
                        ("g", (heads, n))):
        array = rng.normal(size=shape)
        if name == "b":
            array = 1 / (1 + np.exp(-array))
        if name == "g":
            array = -0.05 * np.exp(array)
        np.save(folder / f"{name}.npy", array)
    doc = folder / "doc.yaml"
    doc.write_text("linear: {kind: gated_delta, queries: q.npy, keys: k.npy, values: v.npy, beta: b.npy, g: g.npy}\n")
    return doc


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=4096)
    parser.add_argument("--heads", type=int, default=16)
    parser.add_argument("--d", type=int, default=128)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--torch-threads", type=int, default=0, help="torch.set_num_threads (0: torch's default)")
    args = parser.parse_args()
    import numpy as np

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        doc = write_inputs(folder, args.n, args.heads, args.d)
        script = folder / "torch_rule.py"
        script.write_text(TORCH)
        mine_argv = [*attncli_command(), "compute", str(doc), "--only", "head_outputs", "--only", "final_state", "-o",
                     str(folder / "mine.npz")]
        torch_argv = [sys.executable, str(script), str(folder), str(folder / "torch.npz"), str(args.torch_threads)]
        mine, theirs, mine_cpu, theirs_cpu = [], [], [], []
        for _ in range(args.repeat):  # interleaved rounds
            for runs, cpus, argv in ((mine, mine_cpu, mine_argv), (theirs, theirs_cpu, torch_argv)):
                wall, _, _, cpu = spawn(argv)
                runs.append(wall)
                cpus.append(cpu)
        a, b = np.load(folder / "mine.npz"), np.load(folder / "torch.npz")
        diff = max(np.abs(a[key] - b[key]).max() / np.abs(b[key]).max() for key in ("head_outputs", "final_state"))
    median = lambda xs: sorted(xs)[len(xs) // 2]  # noqa: E731
    print(f"Gated DeltaNet n = {args.n}, {args.heads} heads, d = {args.d}, float64, whole process, "
          f"{args.repeat} rounds; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"attncli (chunked)        {median(mine):7.2f} s   (rounds: {', '.join(f'{t:.2f}' for t in mine)})")
    threads = f"torch.set_num_threads({args.torch_threads})" if args.torch_threads else "default threads"
    print(f"torch recurrent float64 ({threads})")
    print(f"                         {median(theirs):7.2f} s   (rounds: {', '.join(f'{t:.2f}' for t in theirs)})")
    print(f"ratio attncli / torch    {median(mine) / median(theirs):7.3f}   (target ≤ 0.5); outputs differ by "
          f"{diff:.1e} of the largest entry")
    print(f"CPU seconds (user + system, every thread): attncli {median(mine_cpu):.2f}, torch {median(theirs_cpu):.2f}, "
          f"ratio {median(mine_cpu) / median(theirs_cpu):.3f} (what a busy machine changes least)")


if __name__ == "__main__":
    main()
