"""attncli against PyTorch's fused CPU kernel (and its math path), plain numpy, and numpy's own matmul peak.

    python benchmarks/run.py            # n = 512, 2048, 8192, no mask and causal (several minutes on 2 cores)
    python benchmarks/run.py --long     # and n = 16384
    python benchmarks/run.py --sizes 512,2048 --skip-process
    python benchmarks/run.py --sizes 8192 --skip-alone --skip-inprocess  # whole processes only (a bisect)
    python benchmarks/run.py --repeat 1 # one round instead of 3
    python benchmarks/run.py --llama    # and the Llama-style layer of benchmarks/llama.py
    python benchmarks/run.py --mla      # and the DeepSeek-V2-Lite-shaped latent attention layer (benchmarks/mla.py)
    python benchmarks/run.py --qwen3    # and the Qwen3-shaped layer (QK-norm) of benchmarks/qwen3.py
    python benchmarks/run.py --window   # and n = 16384 causal with a sliding window of 512 (benchmarks/window.py)
    python benchmarks/run.py --skip-inprocess  # without the in-process comparison at n = 512 (benchmarks/inprocess.py)
    python benchmarks/run.py --backward # and the backward pass at n = 8192, its peak at 16384 (benchmarks/backward.py)

First, n = 512 in one process (benchmarks/inprocess.py): attncli's computation alone from a built Spec against
torch's fused SDPA with its projections, the same thread count for both, 21 rounds in alternating order, the
median ratio with its quartiles and range; and the projection products of a document without weights at
n = 16384, counted (0).

One self-attention layer: d_model = 768, 12 heads of 64, float64, W_Q, W_K, W_V and W_O, inputs read from
.npy files in a temporary folder; without a mask and causal.  Every case runs in a child process of its own,
so its peak memory (the child's maximum resident set, from wait4) is its own.  The cases of one n run in
rounds, one of each in turn, so that a ratio compares runs made moments apart on a machine other work shares:
shown are the best time of the rounds and the CPU time (user + system) of that run, and the ratio of the
best times to torch's fused kernel with the spread of the ratios round by round.

Torch's path is named, not assumed: ``torch._fused_sdp_choice`` says which kernel scaled_dot_product_attention
takes for the 4-D (1, h, n, d) float64 tensors, and that kernel is then forced
(``torch.nn.attention.sdpa_kernel``), so that a fallback would be an error, not a quiet change of yardstick.
Its math path, which materialises every h × n × n matrix, is timed too where that fits in memory.

GFLOP/s count the four projections and Q·Kᵀ and A·V (multiply-adds 2; causal: the n(n + 1)/2 cells a query
sees); "of peak" divides by numpy's own float64 matmul (4096 × 4096, all cores) measured in the same run.
This is a measurement, not a test: it asserts nothing about time; it does check that every implementation
gives the same output (to 1e-9).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from cases import CASES, D_MODEL, HEADS, NAMES, TORCH_SCRIPT, _cores, flops, write_inputs  # noqa: F401 (window.py)

ROOT = Path(__file__).resolve().parent.parent
ILLUSTRATED = ROOT / "examples" / "illustrated.yaml"

# ---------------------------------------------------------------- the parent: spawn, measure, compare


def spawn(argv: list[str], stdout=subprocess.PIPE) -> tuple[float, float, str, float]:
    """Run ``argv``; (wall seconds, its own peak resident memory in MB, standard output, CPU seconds)."""
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        child = subprocess.Popen(argv, stdout=stdout, stderr=err, cwd=ROOT)
        out = child.stdout.read().decode() if child.stdout else ""
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        if child.returncode != 0:
            err.seek(0)
            raise RuntimeError(f"{' '.join(argv)} failed ({child.returncode}): {err.read().decode()[-2000:]}")
    return wall, usage.ru_maxrss / 1024, out, usage.ru_utime + usage.ru_stime


def run_case(case: str, n: int, folder: Path, causal: bool = False) -> dict:
    argv = [sys.executable, __file__, "--case", case, "--n", str(n), "--folder", str(folder)]
    argv += ["--causal"] if causal else []
    _, peak, out, _ = spawn(argv)
    # The parent never imports numpy, so what a child inherits at fork (counted in ru_maxrss) is small.
    return {**json.loads(out.strip().splitlines()[-1]), "peak_mb": peak}


def rounds(cases: list[str], n: int, folder: Path, causal: bool, repeat: int) -> dict[str, list[dict]]:
    """Each case ``repeat`` times, one of each in turn."""
    runs: dict[str, list[dict]] = {case: [] for case in cases}
    for _ in range(repeat):
        for case in cases:
            runs[case].append(run_case(case, n, folder, causal))
    return runs


def spread(mine: list[float], theirs: list[float]) -> str:
    """The ratio round by round: 'lowest–highest' (one round: that ratio)."""
    ratios = sorted(a / b for a, b in zip(mine, theirs))
    return f"{ratios[0]:.2f}" if len(ratios) == 1 else f"{ratios[0]:.2f}–{ratios[-1]:.2f}"


def attncli_command() -> list[str]:
    script = Path(sys.executable).parent / "attncli"
    return [str(script)] if script.exists() else [sys.executable, "-m", "attncli"]


def fits(n: int, matrices: int = 4) -> bool:
    """Whether ``matrices`` arrays of h × n × n float64 fit in half the memory available now."""
    with open("/proc/meminfo") as f:
        available = next(int(line.split()[1]) * 1024 for line in f if line.startswith("MemAvailable:"))
    return matrices * 8 * HEADS * n * n < available // 2


def best_of(argv: list[str], times: int) -> tuple[float, float]:
    walls = sorted(spawn(argv, stdout=subprocess.DEVNULL)[0] for _ in range(times))
    return walls[0], walls[len(walls) // 2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--long", action="store_true", help="also n = 16384")
    parser.add_argument("--sizes", help="comma-separated n (default 512,2048,8192)")
    parser.add_argument("--skip-process", action="store_true", help="skip the whole-process comparisons")
    parser.add_argument("--skip-alone", action="store_true",
                        help="skip the computation alone in a process of its own (the first table)")
    parser.add_argument("--llama", action="store_true",
                        help="also the Llama-style layer (benchmarks/llama.py), n = 8192")
    parser.add_argument("--qwen3", action="store_true", help="also the Qwen3-shaped layer (benchmarks/qwen3.py)")
    parser.add_argument("--window", action="store_true",
                        help="also n = 16384, causal, with and without a sliding window of 512 (benchmarks/window.py)")
    parser.add_argument("--mla", action="store_true", help="also the latent attention layer (benchmarks/mla.py)")
    parser.add_argument("--repeat", type=int, default=3, help="rounds of every case (default 3)")
    parser.add_argument("--skip-inprocess", action="store_true", help="skip the in-process comparison (inprocess.py)")
    parser.add_argument("--backward", action="store_true", help="also the backward pass (backward.py)")
    parser.add_argument("--case", choices=CASES, help=argparse.SUPPRESS)
    parser.add_argument("--n", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--folder", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--causal", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.case:
        sys.path.insert(0, str(ROOT))
        print(json.dumps(CASES[args.case](args.n, args.folder, args.causal)))
        return
    default = [512, 2048, 8192] + ([16384] if args.long else [])
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else default
    import importlib.util

    has_torch = importlib.util.find_spec("torch") is not None
    folder = Path(tempfile.mkdtemp(prefix="attncli-bench-"))
    repeat = max(args.repeat, 1)
    try:
        os.environ["BENCH_SIZES"] = ",".join(str(n) for n in sorted(set(sizes) | {512}))
        run_case("inputs", 0, folder)
        peak = header(folder, has_torch, repeat)
        if has_torch and not args.skip_inprocess:
            print(spawn([sys.executable, str(ROOT / "benchmarks" / "inprocess.py")])[2])
        if not args.skip_alone:
            table_header(repeat)
            for n in sizes:
                for causal in (False, True):
                    report(n, causal, folder, has_torch, repeat, peak)
        if not args.skip_process:
            sys.path.insert(0, str(ROOT / "benchmarks"))
            import whole

            whole.report(sizes, folder, has_torch, repeat)
        if args.llama and has_torch:
            sys.path.insert(0, str(ROOT / "benchmarks"))
            import llama

            llama.report(llama.measure(8192, repeat), peak)
        if args.qwen3 and has_torch:
            sys.path.insert(0, str(ROOT / "benchmarks"))
            import qwen3

            qwen3.report(qwen3.measure(8192, repeat), peak)
        if args.window:
            sys.path.insert(0, str(ROOT / "benchmarks"))
            import window

            window.report(16384, 512, repeat, folder)
        if args.mla and has_torch:
            sys.path.insert(0, str(ROOT / "benchmarks"))
            import mla

            mla.report(mla.measure(8192, repeat))
        if args.backward:
            sys.path.insert(0, str(ROOT / "benchmarks"))
            import backward

            backward.report([8192], repeat, True, folder)
        print(f"\nload average (1, 5, 15 minutes) at the end: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def header(folder: Path, has_torch: bool, repeat: int) -> float:
    """Print the machine and numpy's matmul peak (the best of ``repeat`` processes); return the peak."""
    from importlib.metadata import version

    blas = os.environ.get("OPENBLAS_CORETYPE", "detected")
    print(f"attncli benchmark, {datetime.date.today()}, {platform.machine()} {_cores()} cores, "
          f"Python {platform.python_version()}, numpy {version('numpy')} (OPENBLAS_CORETYPE={blas}), "
          f"typer {version('typer')}" + (f", torch {version('torch')}" if has_torch else ""))
    peaks = sorted(run_case("peak", 4096, folder)["gflops"] for _ in range(repeat))
    print(f"load average (1, 5, 15 minutes) at the start: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print(f"numpy float64 matmul peak (4096 × 4096, {_cores()} threads): {peaks[-1]:.0f} GFLOP/s "
          f"(best of {repeat} processes; lowest {peaks[0]:.0f})\n")
    return peaks[-1]


def table_header(repeat: int) -> None:
    print(f"One layer: d_model {D_MODEL}, {HEADS} heads, float64, output only; "
          "the computation alone, in a process of its own;")
    print(f"{repeat} rounds of every case, in turn. time: the best round; "
          "cpu: that run's CPU seconds (user + system);")
    print("÷ torch: best time over torch's best fused time (the spread: round by round); "
          "peak: the largest resident memory.")
    print("attncli runs with the settings its command makes (attncli.cli.main.LIBRARY_DEFAULTS); "
          "numpy and torch with theirs.\n")
    print(f"{'n':>6} {'mask':<7} {'implementation':<22}{'time':>8}{'cpu':>8}{'peak':>9}{'GFLOP/s':>9}{'of peak':>8}"
          f"{'÷ torch':>8}{'spread':>11}{'max |Δ|':>9}  torch's path")


def report(n: int, causal: bool, folder: Path, has_torch: bool, repeat: int, peak: float) -> None:
    cases = ["attncli"] + ([] if causal else ["numpy"] + (["numpy-full"] if fits(n) else []))
    if has_torch:
        cases += ["torch"] + (["torch-math"] if fits(n, 3) else [])
    runs = rounds(cases, n, folder, causal, repeat)
    diffs = run_case("compare", n, folder)
    mask = "causal" if causal else "none"
    for case, results in runs.items():
        best = min(results, key=lambda r: r["seconds"])
        rate = flops(n, causal) / best["seconds"] / 1e9
        ratio, ratios = "-", ""
        if has_torch:
            theirs = [r["seconds"] for r in runs["torch"]]
            ratio = f"{best['seconds'] / min(theirs):.2f}"
            ratios = spread([r["seconds"] for r in results], theirs) if case != "torch" else ""
        chosen = best.get("path", "")
        print(f"{n:>6} {mask:<7} {NAMES[case]:<22}{best['seconds']:>7.2f}s{best['cpu']:>7.2f}s"
              f"{max(r['peak_mb'] for r in results):>6.0f} MB{rate:>9.0f}{rate / peak:>8.2f}{ratio:>8}{ratios:>11}"
              f"{diffs[case.replace('-', '_')]:>9.0e}  {chosen}")
    if not causal and not fits(n):
        print(f"{n:>6} {mask:<7} {NAMES['numpy-full']:<22}  "
              f"skipped: needs about {4 * 8 * HEADS * n * n / 2**30:.0f} GiB")
    if has_torch and not fits(n, 3):
        print(f"{n:>6} {mask:<7} {NAMES['torch-math']:<22}  "
              f"skipped: needs about {3 * 8 * HEADS * n * n / 2**30:.0f} GiB")


if __name__ == "__main__":
    main()
