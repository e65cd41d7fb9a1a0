"""attncli against plain numpy and PyTorch: time, peak memory and GFLOP/s, all measured in one run.

    python benchmarks/run.py            # n = 512, 2048, 8192 (a few minutes on 2 cores)
    python benchmarks/run.py --long     # and n = 16384
    python benchmarks/run.py --sizes 512,2048 --skip-process
    python benchmarks/run.py --repeat 1 # one run of each case instead of the best of 3
    python benchmarks/run.py --llama    # and the Llama-style layer of benchmarks/llama.py

Every case runs in a child process of its own, so its peak memory (the child's
maximum resident set, from wait4) is its own.  One self-attention layer:
d_model = 768, 12 heads of 64, float64, W_Q, W_K, W_V and W_O, no mask, inputs
read from .npy files in a temporary folder.  This is a measurement, not a test:
it asserts nothing about time; it does check that every implementation gives the
same output (to 1e-9).
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

ROOT = Path(__file__).resolve().parent.parent
D_MODEL, HEADS, D_K = 768, 12, 64
ILLUSTRATED = ROOT / "examples" / "illustrated.yaml"

TORCH_SCRIPT = '''
import json, sys
import numpy as np
import torch
folder, n, kind = sys.argv[1], int(sys.argv[2]), sys.argv[3]
x = torch.from_numpy(np.load(f"{folder}/x{n}.npy"))
w = {c: torch.from_numpy(np.load(f"{folder}/w{c}.npy")) for c in "qkvo"}
q, k, v = ((x @ w[c]).view(1, n, 12, 64).transpose(1, 2) for c in "qkv")  # 4-D: the CPU flash kernel
y = torch.nn.functional.scaled_dot_product_attention(q, k, v)[0].transpose(0, 1).reshape(n, 768) @ w["o"]
if kind == "json":
    sys.stdout.write(json.dumps({"output": y.tolist()}) + "\\n")
else:
    np.save(f"{folder}/torch_out{n}.npy", y.numpy())
'''


def flops(n: int) -> float:
    """Q, K, V and output projections, Q·Kᵀ and A·V (multiply-adds count 2)."""
    return 2 * n * D_MODEL * D_MODEL * 4 + 4 * HEADS * n * n * D_K


# ---------------------------------------------------------------- the cases, each in its own process


def case_peak(n: int, folder: Path) -> dict:
    import numpy as np

    a = np.random.default_rng(0).random((n, n))
    a @ a
    best = min(_timed(lambda: a @ a) for _ in range(3))
    return {"seconds": best, "gflops": 2 * n**3 / best / 1e9}


def case_attncli(n: int, folder: Path) -> dict:
    import numpy as np

    from attncli.core.stream import attend_streamed
    from attncli.inputs.builder import build_spec
    from attncli.inputs.document import read_document

    spec = build_spec(read_document(str(folder / f"doc{n}.yaml")))
    start = time.perf_counter()
    y = attend_streamed(spec).output
    seconds = time.perf_counter() - start
    np.save(folder / f"out_attncli{n}.npy", y)
    return {"seconds": seconds}


def case_numpy(n: int, folder: Path) -> dict:
    """Plain numpy, queries in blocks of 256 so that one head's scores are 256 × n at a time."""
    import numpy as np

    x, w = _inputs(n, folder)
    start = time.perf_counter()
    q, k, v = x @ w["q"], x @ w["k"], x @ w["v"]  # (n, 768) each
    heads = np.empty((n, D_MODEL))
    for h in range(HEADS):
        cols = slice(h * D_K, (h + 1) * D_K)
        for lo in range(0, n, 256):
            s = q[lo : lo + 256, cols] @ k[:, cols].T / np.sqrt(D_K)
            e = np.exp(s - s.max(axis=1, keepdims=True))
            heads[lo : lo + 256, cols] = (e / e.sum(axis=1, keepdims=True)) @ v[:, cols]
    y = heads @ w["o"]
    seconds = time.perf_counter() - start
    np.save(folder / f"out_numpy{n}.npy", y)
    return {"seconds": seconds}


def case_numpy_full(n: int, folder: Path) -> dict:
    """Plain numpy keeping every h × n × n matrix, as a first implementation would."""
    import numpy as np

    x, w = _inputs(n, folder)
    start = time.perf_counter()
    q, k, v = ((x @ w[c]).reshape(n, HEADS, D_K).transpose(1, 0, 2) for c in "qkv")
    s = q @ k.transpose(0, 2, 1) / np.sqrt(D_K)  # (h, n, n)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    a = e / e.sum(axis=-1, keepdims=True)
    y = (a @ v).transpose(1, 0, 2).reshape(n, D_MODEL) @ w["o"]
    seconds = time.perf_counter() - start
    np.save(folder / f"out_numpy_full{n}.npy", y)
    return {"seconds": seconds}


def case_torch(n: int, folder: Path) -> dict:
    import numpy as np
    import torch

    torch.set_num_threads(_cores())
    x = torch.from_numpy(np.load(folder / f"x{n}.npy"))
    w = {c: torch.from_numpy(np.load(folder / f"w{c}.npy")) for c in "qkvo"}
    start = time.perf_counter()
    q, k, v = ((x @ w[c]).view(1, n, HEADS, D_K).transpose(1, 2) for c in "qkv")  # (1, h, n, d): 4-D takes the flash kernel
    y = torch.nn.functional.scaled_dot_product_attention(q, k, v)[0].transpose(0, 1).reshape(n, D_MODEL) @ w["o"]
    seconds = time.perf_counter() - start
    np.save(folder / f"out_torch{n}.npy", y.numpy())
    return {"seconds": seconds}


def case_inputs(n: int, folder: Path) -> dict:
    """Write the .npy inputs and the documents (here, so that the parent never holds numpy's memory)."""
    write_inputs(folder, [int(s) for s in os.environ["BENCH_SIZES"].split(",")])
    return {}


def case_compare(n: int, folder: Path) -> dict:
    """max |Δ| of each out_*{n}.npy against the torch (else numpy) output; the files are removed."""
    import numpy as np

    outputs = {path.name[4 : -len(f"{n}.npy")]: np.load(path) for path in folder.glob(f"out_*{n}.npy")}
    reference = outputs.get("torch", outputs.get("numpy"))
    for path in folder.glob(f"out_*{n}.npy"):
        path.unlink()
    return {name: float(np.abs(y - reference).max()) for name, y in outputs.items()}


def case_compare_files(n: int, folder: Path) -> dict:
    import numpy as np

    a, b = folder / f"attncli_out{n}.npy", folder / f"torch_out{n}.npy"
    diff = float(np.abs(np.load(a) - np.load(b)).max())
    a.unlink()
    b.unlink()
    return {"diff": diff}


CASES = {
    "inputs": case_inputs, "compare": case_compare, "compare-files": case_compare_files, "peak": case_peak,
    "attncli": case_attncli, "numpy": case_numpy, "numpy-full": case_numpy_full, "torch": case_torch,
}


def _inputs(n: int, folder: Path):
    import numpy as np

    return np.load(folder / f"x{n}.npy"), {c: np.load(folder / f"w{c}.npy") for c in "qkvo"}


def _timed(action) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


# ---------------------------------------------------------------- the parent: spawn, measure, compare


def spawn(argv: list[str], stdout=subprocess.PIPE) -> tuple[float, float, str]:
    """Run ``argv``; (wall seconds, its own peak resident memory in MB, standard output)."""
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
    return wall, usage.ru_maxrss / 1024, out


def best_case(case: str, n: int, folder: Path, repeat: int) -> dict:
    """The fastest of ``repeat`` runs (the one least slowed by whatever else the machine does), with the largest peak."""
    runs = [run_case(case, n, folder) for _ in range(repeat)]
    return {**min(runs, key=lambda r: r["seconds"]), "peak_mb": max(r["peak_mb"] for r in runs)}


def run_case(case: str, n: int, folder: Path) -> dict:
    _, peak, out = spawn([sys.executable, __file__, "--case", case, "--n", str(n), "--folder", str(folder)])
    # The parent never imports numpy, so what a child inherits at fork (counted in ru_maxrss) is small.
    return {**json.loads(out.strip().splitlines()[-1]), "peak_mb": peak}


def attncli_command() -> list[str]:
    script = Path(sys.executable).parent / "attncli"
    return [str(script)] if script.exists() else [sys.executable, "-m", "attncli"]


def write_inputs(folder: Path, sizes: list[int]) -> None:
    import numpy as np

    rng = np.random.default_rng(0)
    for c in "qkvo":
        np.save(folder / f"w{c}.npy", rng.normal(0.0, D_MODEL**-0.5, (D_MODEL, D_MODEL)))
    for n in sizes:
        np.save(folder / f"x{n}.npy", rng.normal(size=(n, D_MODEL)))
        weights = "\n".join(f"  {name}: w{c}.npy" for name, c in zip(("query", "key", "value", "output"), "qkvo"))
        (folder / f"doc{n}.yaml").write_text(f"inputs: x{n}.npy\nheads: {HEADS}\nweights:\n{weights}\n")
    (folder / "torch_layer.py").write_text(TORCH_SCRIPT)


def fits(n: int) -> bool:
    """Whether the plain numpy implementation (about 4 arrays of h × n × n) fits in half the free memory."""
    with open("/proc/meminfo") as f:
        available = next(int(line.split()[1]) * 1024 for line in f if line.startswith("MemAvailable:"))
    return 4 * 8 * HEADS * n * n < available // 2


def best_of(argv: list[str], times: int) -> tuple[float, float]:
    walls = sorted(spawn(argv, stdout=subprocess.DEVNULL)[0] for _ in range(times))
    return walls[0], walls[len(walls) // 2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--long", action="store_true", help="also n = 16384")
    parser.add_argument("--sizes", help="comma-separated n (default 512,2048,8192)")
    parser.add_argument("--skip-process", action="store_true", help="skip the whole-process comparisons")
    parser.add_argument("--llama", action="store_true", help="also the Llama-style layer (benchmarks/llama.py), n = 8192")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each timed case; the fastest is shown (default 3)")
    parser.add_argument("--case", choices=CASES, help=argparse.SUPPRESS)
    parser.add_argument("--n", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--folder", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.case:
        sys.path.insert(0, str(ROOT))
        print(json.dumps(CASES[args.case](args.n, args.folder)))
        return
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else [512, 2048, 8192] + ([16384] if args.long else [])
    import importlib.util

    has_torch = importlib.util.find_spec("torch") is not None
    folder = Path(tempfile.mkdtemp(prefix="attncli-bench-"))
    try:
        os.environ["BENCH_SIZES"] = ",".join(str(n) for n in sorted(set(sizes) | {512}))
        run_case("inputs", 0, folder)
        report(sizes, folder, has_torch, not args.skip_process, max(args.repeat, 1))
        if args.llama and has_torch:
            sys.path.insert(0, str(ROOT / "benchmarks"))
            import llama

            llama.report(llama.measure(8192, max(args.repeat, 1)))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def report(sizes: list[int], folder: Path, has_torch: bool, whole: bool, repeat: int) -> None:
    from importlib.metadata import version

    blas = os.environ.get("OPENBLAS_CORETYPE", "detected")
    print(f"attncli benchmark, {datetime.date.today()}, {platform.machine()} {_cores()} cores, Python {platform.python_version()}, "
          f"numpy {version('numpy')} (OPENBLAS_CORETYPE={blas}), typer {version('typer')}" + (f", torch {version('torch')}" if has_torch else ""))
    peak = max(run_case("peak", 4096, folder)["gflops"] for _ in range(repeat))
    print(f"numpy float64 matmul peak (4096 × 4096, same process kind): {peak:.0f} GFLOP/s\n")
    print("One layer: d_model 768, 12 heads, float64, output only; time of the computation in its own process,")
    print(f"the fastest of {repeat} runs; peak = the largest maximum resident memory of those processes.\n")
    print(f"{'n':>6}  {'implementation':<22}{'time':>9}{'peak':>10}{'GFLOP/s':>9}{'of peak':>9}{'÷ torch':>9}{'max |Δ|':>10}")
    for n in sizes:
        cases = ["attncli", "numpy"] + (["numpy-full"] if fits(n) else []) + (["torch"] if has_torch else [])
        results = {case: best_case(case, n, folder, repeat) for case in cases}
        diffs = run_case("compare", n, folder)
        for case, r in results.items():
            diff = diffs[case.replace("-", "_")]
            rate = flops(n) / r["seconds"] / 1e9
            ratio = f"{r['seconds'] / results['torch']['seconds']:.2f}" if has_torch else "-"
            name = {"attncli": "attncli (streamed)", "numpy": "numpy, blocks of 256", "numpy-full": "numpy, every h×n×n",
                    "torch": "torch SDPA"}[case]
            print(f"{n:>6}  {name:<22}{r['seconds']:>8.2f}s{r['peak_mb']:>7.0f} MB{rate:>9.0f}{rate / peak:>9.2f}{ratio:>9}{diff:>10.1e}")
        if not fits(n):
            print(f"{n:>6}  {'numpy, every h×n×n':<22}  skipped: needs about {4 * 8 * HEADS * n * n / 2**30:.0f} GiB")
    if whole:
        whole_processes(sizes, folder, has_torch, repeat)


def whole_processes(sizes: list[int], folder: Path, has_torch: bool, repeat: int) -> None:
    attncli = attncli_command()
    python = sys.executable
    print(f"\nWhole processes (wall time; best and median of several runs for the short ones, best of {repeat} for n ≥ 8192)")
    base = best_of([python, "-c", "import typer, numpy, yaml"], 7)
    small = best_of([*attncli, "compute", str(ILLUSTRATED), "--format", "json"], 7)
    helps = best_of([*attncli, "--help"], 7)
    print(f"  python -c 'import typer, numpy, yaml'            {base[0]:.3f} s (median {base[1]:.3f})")
    print(f"  attncli compute illustrated.yaml --format json   {small[0]:.3f} s (median {small[1]:.3f})   ratio {small[0] / base[0]:.2f} (median {small[1] / base[1]:.2f})")
    print(f"  attncli --help                                   {helps[0]:.3f} s (median {helps[1]:.3f})   ratio {helps[0] / base[0]:.2f}")
    if not has_torch:
        return
    layer = best_of([*attncli, "compute", str(folder / "doc512.yaml"), "--format", "json", "--only", "output"], 3)
    torch_layer = best_of([python, str(folder / "torch_layer.py"), str(folder), "512", "json"], 3)
    print(f"  BERT-base layer n=512 → JSON: attncli {layer[0]:.2f} s, torch script {torch_layer[0]:.2f} s, ratio {layer[0] / torch_layer[0]:.2f}")
    for n in [s for s in sizes if s >= 8192]:
        out = folder / f"attncli_out{n}.npy"
        ours = [spawn([*attncli, "compute", str(folder / f"doc{n}.yaml"), "--only", "output", "-o", str(out)]) for _ in range(repeat)]
        theirs = [spawn([python, str(folder / "torch_layer.py"), str(folder), str(n), "npy"]) for _ in range(repeat)]
        (wall, mem), (t_wall, t_mem) = ((min(r[0] for r in runs), max(r[1] for r in runs)) for runs in (ours, theirs))
        diff = run_case("compare-files", n, folder)["diff"]
        print(f"  n={n} → .npy: attncli {wall:.2f} s / {mem:.0f} MB, torch script {t_wall:.2f} s / {t_mem:.0f} MB, "
              f"ratio {wall / t_wall:.2f}, max |Δ| {diff:.1e}")


if __name__ == "__main__":
    main()
