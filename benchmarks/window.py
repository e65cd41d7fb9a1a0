"""A sliding window skips what it masks: n = 16384, causal, W = 512, output only, against the same layer
without it.

    python benchmarks/window.py                 # n = 16384, W = 512, 3 rounds (a few minutes on 2 cores)
    python benchmarks/window.py --n 4096 --repeat 1

One self-attention layer as benchmarks/run.py's (d_model = 768, 12 heads of 64, float64, W_Q, W_K, W_V and
W_O from .npy files), written once with ``mask: causal`` and once with ``mask: {causal: true, window: W}``.
Each is a whole ``attncli compute DOC --only output -o out.npy`` process (its peak memory from wait4), in
rounds of one of each in turn, so that a ratio compares runs made moments apart on a shared machine.

Both pay the same part that no window changes: reading 100 MB of inputs, the four 768 × 768 projections
(77 GFLOP at n = 16384) and writing the output.  So both are also computed in one process of their own, in turn,
each call split into its projections, its attention (the scores, softmax and A·V of every head:
attend_streamed minus the two projections, timed inside the same call) and its output projection, and the
attention-alone ratio is printed beside the whole-process one, with the keys a query may see as the ideal.
The lowest whole-process ratio any attention could reach is printed too: the four projections at numpy's own
matmul peak (measured in the same run) over the causal process.  The outputs are checked against a direct
numpy computation on a sample of rows (to 1e-9).  This is a measurement: it asserts nothing about time.
``python benchmarks/run.py --window`` runs it too.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from run import D_MODEL, HEADS, attncli_command, run_case, spawn, spread, write_inputs

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


PARTS = """
import json, sys, time
from attncli.cli.main import library_defaults
library_defaults()  # the settings attncli's command makes before numpy is imported
from attncli.core import stream
from attncli.inputs.builder import build_spec
from attncli.inputs.document import read_document
specs = {path: build_spec(read_document(path)) for path in sys.argv[2:]}
spent = {}

def timed(name, function):
    def call(*args, **kwargs):
        t = time.perf_counter(); result = function(*args, **kwargs); spent[name] = time.perf_counter() - t
        return result
    return call

stream.projections = timed("projections", stream.projections)
stream.output_projection = timed("output projection", stream.output_projection)
rounds = {path: [] for path in specs}
for _ in range(1 + int(sys.argv[1])):  # the first round warms BLAS's threads and buffers up and is not counted
    for path, spec in specs.items():  # one of each in turn
        t = time.perf_counter(); trace = stream.attend_streamed(spec); whole = time.perf_counter() - t
        # freeing the arrays (about 0.03 s at n = 16384) is not part of the call: a process leaves that to exit
        del trace
        rounds[path].append({**spent, "whole": whole,
                             "attention": whole - spent["projections"] - spent["output projection"]})
print(json.dumps({path: times[1:] for path, times in rounds.items()}))
"""


def parts(paths: list[Path], repeat: int) -> list[list[dict[str, float]]]:
    """attend_streamed on each document in one process of its own, ``repeat`` rounds of one of each in turn (after
    one round not counted): per round, the whole call, its projections (Q, K, V) and its output projection timed
    inside that same call, and what is left, the attention itself (the scores, softmax and A·V of every head).
    (The first projections of a process are slower, about 0.1 s against 0.065 s at n = 2048: counted, they made the
    attention alone look as slow with a window of 512 as without.)"""
    import json

    found = json.loads(spawn([sys.executable, "-c", PARTS, str(repeat), *map(str, paths)])[2])
    return [found[str(path)] for path in paths]


def report(n: int, window: int, repeat: int, folder: Path | None = None) -> None:
    """Print the whole-process and the attention-alone ratios of a causal layer with and without the window."""
    if folder is None:
        with tempfile.TemporaryDirectory() as tmp:
            return report(n, window, repeat, Path(tmp))
    if not (folder / f"x{n}.npy").exists():
        write_inputs(folder, [n])
    paths = documents(folder, n, window)
    windowed = f"window {window}"
    print(f"\nSliding window: n = {n}, d_model {D_MODEL}, {HEADS} heads, float64, causal, output only "
          f"({repeat} rounds of one of each in turn; the best shown, the ratio's spread round by round)")
    argv = {name: [*attncli_command(), "compute", str(path), "--only", "output",
                   "-o", str(folder / f"out_{path.stem}.npy")]
            for name, path in paths.items()}
    walls: dict[str, list[float]] = {name: [] for name in paths}
    for _ in range(repeat):
        for name in paths:
            walls[name].append(spawn(argv[name], stdout=subprocess.DEVNULL)[0])
    for name in paths:
        peak_mb = spawn(argv[name], stdout=None)[1]
        print(f"  whole process {name:<12} {min(walls[name]):7.2f} s   peak {peak_mb:5.0f} MB")
    print(f"  ratio, whole process: {min(walls[windowed]) / min(walls['causal']):.3f} "
          f"(window {window} / causal; "
          f"rounds {spread(walls[windowed], walls['causal'])})")
    causal, banded = parts([paths["causal"], paths[windowed]], repeat)
    for name, rounds in (("causal", causal), (windowed, banded)):
        best = min(rounds, key=lambda r: r["attention"])
        print(f"  in one process, {name:<12} Q, K, V {best['projections']:5.2f} s   "
              f"attention {best['attention']:5.2f} s"
              f"   output projection {best['output projection']:5.2f} s")
    alone = min(r["attention"] for r in banded) / min(r["attention"] for r in causal)
    seen = sum(min(i + 1, window) for i in range(n)) / (n * (n + 1) / 2)
    rounds_spread = spread([r["attention"] for r in banded], [r["attention"] for r in causal])
    print(f"  ratio, attention alone: {alone:.3f} (rounds {rounds_spread}; "
          f"the keys a query may see: {seen:.3f} of the causal ones)")
    peak = run_case("peak", 4096, folder)["gflops"]
    floor = 4 * 2 * n * D_MODEL * D_MODEL / (peak * 1e9)
    print(f"  what no window changes: the four {D_MODEL} × {D_MODEL} projections are "
          f"{4 * 2 * n * D_MODEL**2 / 1e9:.0f} GFLOP, {floor:.2f} s at numpy's own matmul peak "
          f"({peak:.0f} GFLOP/s, measured now) = {floor / min(walls['causal']):.3f} of the causal process: "
          "the windowed process's ratio cannot go below that even if its attention took no time")
    error = check(folder, n, window, folder / f"out_{paths[windowed].stem}.npy")
    print(f"  max |attncli − numpy| on 64 rows of the windowed layer: {error:.1e}")


def main() -> None:
    parser = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split("\n")))
    parser.add_argument("--n", type=int, default=16384)
    parser.add_argument("--window", type=int, default=512)
    parser.add_argument("--repeat", type=int, default=3,
                        help="rounds of one of each in turn; the fastest is shown (default 3)")
    args = parser.parse_args()
    report(args.n, args.window, args.repeat)


if __name__ == "__main__":
    main()
