"""Whole processes, from reading the files to writing the result: attncli's command against a torch script.

Called by ``benchmarks/run.py`` (its folder of inputs and documents, and its TORCH_SCRIPT, which asserts that
scaled_dot_product_attention takes its fused kernel and forces it).  For n ≥ 8192, without a mask and
causal: ``attncli compute DOC --only output -o y.npy`` and the torch script writing its .npy, in rounds,
one of each in turn; the best wall time of each with that run's CPU time (user + system, from wait4), the
largest peak memory, the ratio of the best times and its spread round by round, and max |Δ| of the outputs.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from run import ILLUSTRATED, attncli_command, best_of, run_case, spawn, spread


def report(sizes: list[int], folder: Path, has_torch: bool, repeat: int) -> None:
    attncli = attncli_command()
    python = sys.executable
    print(f"\nWhole processes (wall time; best and median of 7 runs for the short ones, {repeat} rounds for n ≥ 8192)")
    base = best_of([python, "-c", "import typer, numpy, yaml"], 7)
    small = best_of([*attncli, "compute", str(ILLUSTRATED), "--format", "json"], 7)
    helps = best_of([*attncli, "--help"], 7)
    print(f"  python -c 'import typer, numpy, yaml'            {base[0]:.3f} s (median {base[1]:.3f})")
    print(f"  attncli compute illustrated.yaml --format json   {small[0]:.3f} s (median {small[1]:.3f})   "
          f"ratio {small[0] / base[0]:.2f} (median {small[1] / base[1]:.2f})")
    print(f"  attncli --help                                   {helps[0]:.3f} s (median {helps[1]:.3f})   "
          f"ratio {helps[0] / base[0]:.2f}")
    if not has_torch:
        return
    layer = best_of([*attncli, "compute", str(folder / "doc512.yaml"), "--format", "json", "--only", "output"], 3)
    torch_layer = best_of([python, str(folder / "torch_layer.py"), str(folder), "512", "json"], 3)
    print(f"  BERT-base layer n=512 → JSON: attncli {layer[0]:.2f} s, torch script {torch_layer[0]:.2f} s, "
          f"ratio {layer[0] / torch_layer[0]:.2f}")
    print("  → .npy, torch on its fused kernel (is_causal=True for the causal layer):")
    for n in [s for s in sizes if s >= 8192]:
        for causal in (False, True):
            compare(n, causal, folder, attncli, repeat)


def compare(n: int, causal: bool, folder: Path, attncli: list[str], repeat: int) -> None:
    out = folder / f"attncli_out{n}.npy"
    document = folder / f"{'causal' if causal else 'doc'}{n}.yaml"
    ours = [*attncli, "compute", str(document), "--only", "output", "-o", str(out)]
    theirs = [sys.executable, str(folder / "torch_layer.py"), str(folder), str(n), "npy"]
    theirs += ["causal"] if causal else []
    runs: dict[str, list[tuple]] = {"attncli": [], "torch": []}
    for _ in range(repeat):
        for name, argv in (("attncli", ours), ("torch", theirs)):
            runs[name].append(spawn(argv, stdout=subprocess.DEVNULL))
    (wall, _, _, cpu), (t_wall, _, _, t_cpu) = (min(r, key=lambda x: x[0]) for r in runs.values())
    peaks = {name: max(r[1] for r in found) for name, found in runs.items()}
    diff = run_case("compare-files", n, folder)["diff"]
    walls = {name: [r[0] for r in found] for name, found in runs.items()}
    print(f"  n={n:<6}{'causal' if causal else 'no mask':<8} attncli {wall:6.2f} s (cpu {cpu:5.2f} s) "
          f"{peaks['attncli']:5.0f} MB   torch {t_wall:6.2f} s (cpu {t_cpu:5.2f} s) {peaks['torch']:5.0f} MB   "
          f"ratio {wall / t_wall:.2f} "
          f"(rounds {spread(walls['attncli'], walls['torch'])}; cpu {cpu / t_cpu:.2f})   max |Δ| {diff:.0e}")


if __name__ == "__main__":
    sys.exit("run it through benchmarks/run.py")
