"""A sliding window skips what it masks: n = 16384, causal, W = 512, output only, against the same layer without it.

    python benchmarks/window.py                 # n = 16384, W = 512, best of 3 (a few minutes on 2 cores)
    python benchmarks/window.py --n 4096 --repeat 1

One self-attention layer as benchmarks/run.py's (d_model = 768, 12 heads of 64, float64, W_Q, W_K, W_V and
W_O from .npy files), written once with ``mask: causal`` and once with ``mask: {causal: true, window: W}``.
Each is a whole ``attncli compute DOC --only output -o out.npy`` process (its peak memory from wait4).  Both
pay the same fixed part that no window changes (reading 100 MB of inputs, the four 768 × 768 projections, writing
the output), so the attention alone is timed too, in a process of its own (attend_streamed minus the
projections), and its ratio is shown beside the whole-process ratio.  The outputs are checked against a direct numpy computation on a sample of
rows (to 1e-9).  This is a measurement: it asserts nothing about time.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from run import D_MODEL, HEADS, attncli_command, best_of, spawn, write_inputs

D_K = D_MODEL // HEADS


def documents(folder: Path, n: int, window: int) -> dict[str, Path]:
    base = (folder / f"doc{n}.yaml").read_text()
    docs = {"causal": "mask: causal\n", f"window {window}": f"mask: {{causal: true, window: {window}}}\n"}
    paths = {}
    for name, mask in docs.items():
        path = folder / f"{name.replace(' ', '_')}.yaml"
        path.write_text(base + mask)
        paths[name] = path
    return paths


def check(folder: Path, n: int, window: int, out: Path, rows: int = 64) -> float:
    """max |attncli − numpy| over a sample of rows of the windowed layer."""
    import numpy as np

    x = np.load(folder / f"x{n}.npy")
    w = {c: np.load(folder / f"w{c}.npy") for c in "qkvo"}
    y = np.load(out)
    q, k, v = (x @ w[c] for c in "qkv")
    worst = 0.0
    for i in np.random.default_rng(1).choice(n, rows, replace=False):
        keys = slice(max(0, i - window + 1), i + 1)
        heads = []
        for h in range(HEADS):
            cols = slice(h * D_K, (h + 1) * D_K)
            z = k[keys, cols] @ q[i, cols] / np.sqrt(D_K)
            a = np.exp(z - z.max())
            heads.append(a / a.sum() @ v[keys, cols])
        worst = max(worst, float(np.abs(np.concatenate(heads) @ w["o"] - y[i]).max()))
    return worst


ALONE = """
import json, sys, time
from attncli.core.attention import projections
from attncli.core.stream import attend_streamed
from attncli.inputs.builder import build_spec
from attncli.inputs.document import read_document
spec = build_spec(read_document(sys.argv[1]))
runs, fixed = [], []
for _ in range(int(sys.argv[2])):
    t = time.perf_counter(); projections(spec); fixed.append(time.perf_counter() - t)
    t = time.perf_counter(); attend_streamed(spec); runs.append(time.perf_counter() - t)
print(json.dumps({"attention": min(runs) - min(fixed)}))
"""


def attention_alone(path: Path, repeat: int) -> float:
    """Seconds of attend_streamed beyond the projections, the best of ``repeat``, in a process of its own."""
    import json

    return json.loads(spawn([sys.executable, "-c", ALONE, str(path), str(repeat)])[2])["attention"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=16384)
    parser.add_argument("--window", type=int, default=512)
    parser.add_argument("--repeat", type=int, default=3, help="runs of each case; the fastest is shown (default 3)")
    args = parser.parse_args()
    rows = 128  # the block of queries attncli takes for W = 512 (attncli.core.stream._fast_rows)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        write_inputs(folder, [args.n])
        paths = documents(folder, args.n, args.window)
        print(f"n = {args.n}, d_model {D_MODEL}, {HEADS} heads, float64, causal, output only, whole processes "
              f"(best of {args.repeat})")
        seconds, peaks = {}, {}
        for name, path in paths.items():
            out = folder / f"out_{path.stem}.npy"
            argv = [*attncli_command(), "compute", str(path), "--only", "output", "-o", str(out)]
            seconds[name] = best_of(argv, args.repeat)[0]
            peaks[name] = spawn(argv, stdout=None)[1]
            print(f"  {name:<12} {seconds[name]:8.2f} s   peak {peaks[name]:7.0f} MB")
        windowed = f"window {args.window}"
        print(f"ratio, whole process: {seconds[windowed] / seconds['causal']:.3f} (window {args.window} / causal)")
        alone = {name: attention_alone(paths[name], args.repeat) for name in ("causal", windowed)}
        print(f"attention alone (in one process, projections left out): causal {alone['causal']:.2f} s, "
              f"{windowed} {alone[windowed]:.2f} s, ratio {alone[windowed] / alone['causal']:.3f} "
              f"(the keys computed: {(args.window + rows - 1) / (args.n / 2 + rows / 2):.3f})")
        error = check(folder, args.n, args.window, folder / f"out_{paths[windowed].stem}.npy")
        print(f"max |attncli − numpy| on 64 rows of the windowed layer: {error:.1e}")


if __name__ == "__main__":
    main()
