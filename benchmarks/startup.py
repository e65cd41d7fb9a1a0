"""Start-up: a small document's whole run against the import floor, from a plain ``pip install .`` (issue 39).

    python benchmarks/startup.py                    # a throwaway venv under /tmp with this tree, 21 rounds
    python benchmarks/startup.py --venv /tmp/v      # reuse (or make) that venv
    python benchmarks/startup.py --other /tmp/old   # and the same commands from another venv, in the same rounds
    python benchmarks/startup.py --importtime 7     # and what `python -X importtime` says remains (min of 7 runs)

The floor is ``python -c 'import typer, numpy, yaml'``: a run cannot start in less. The run is ``attncli compute
examples/illustrated.yaml --format json`` (and ``attncli --help``). One of each in turn, the order reversed every
round; shown are the medians of the wall and CPU times (user + system, from wait4) and their ratios to the floor's,
with the load average before and after. An editable install starts slower (its import finder): measure a plain one.
This is a measurement, not a test; it checks that the run succeeds.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "examples" / "illustrated.yaml"


def venv_with_this_tree(venv: Path) -> Path:
    """``venv`` (made if missing) with this tree installed as ``pip install .`` installs it."""
    if not (venv / "bin" / "python").exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "pip"), "install", "-q"]
    subprocess.run([*pip, str(ROOT)], check=True)  # its dependencies (and attncli, unless this version is there)
    subprocess.run([*pip, "--force-reinstall", "--no-deps", str(ROOT)], check=True)  # this tree's attncli
    return venv


def spawn(argv: list[str]) -> tuple[float, float]:
    """Run ``argv`` (in /tmp, output discarded); its wall and CPU seconds."""
    start = time.perf_counter()
    child = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tempfile.gettempdir())
    _, status, usage = os.wait4(child.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{' '.join(argv)} failed")
    return time.perf_counter() - start, usage.ru_utime + usage.ru_stime


def commands(venv: Path, label: str) -> dict[str, list[str]]:
    bin_ = venv / "bin"
    return {f"{label}compute --format json": [str(bin_ / "attncli"), "compute", str(DOC), "--format", "json"],
            f"{label}--help": [str(bin_ / "attncli"), "--help"]}


def rounds(cases: dict[str, list[str]], count: int) -> dict[str, list[tuple[float, float]]]:
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in cases}
    order = list(cases.items())
    for i in range(count):
        for name, argv in order if i % 2 == 0 else order[::-1]:
            runs[name].append(spawn(argv))
    return runs


def importtime(venv: Path, times: int) -> None:
    """Each module's own import time, the least of ``times`` runs, for those the floor does not import."""
    python = str(venv / "bin" / "python")

    def selves(argv: list[str]) -> dict[str, int]:
        best: dict[str, int] = {}
        for _ in range(times):
            text = subprocess.run([python, "-X", "importtime", *argv], capture_output=True, text=True,
                                  cwd=tempfile.gettempdir()).stderr
            for own, name in re.findall(r"import time:\s+(\d+) \|\s+\d+ \|\s+(\S+)", text):
                best[name] = min(best.get(name, 1 << 40), int(own))
        return best

    floor = selves(["-c", "import typer, numpy, yaml"])
    run = selves(["-m", "attncli", "compute", str(DOC), "--format", "json"])
    extra = {name: us for name, us in run.items() if name not in floor}
    ours = {name: us for name, us in extra.items() if name.startswith("attncli")}
    print(f"\n-X importtime (least of {times} runs): the floor imports {len(floor)} modules in "
          f"{sum(floor.values()) / 1000:.1f} ms of their own time; the run {len(extra)} more in "
          f"{sum(extra.values()) / 1000:.1f} ms, of which attncli's {len(ours)} in {sum(ours.values()) / 1000:.1f} ms")
    print("  others: " + ", ".join(f"{name} {us / 1000:.1f}" for name, us in
                                   sorted(extra.items(), key=lambda item: -item[1]) if name not in ours))
    print("  attncli's largest: " + ", ".join(f"{name} {us / 1000:.1f}" for name, us in
                                              sorted(ours.items(), key=lambda item: -item[1])[:15]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--venv", type=Path, help="the venv to install into (default: a new one under /tmp)")
    parser.add_argument("--other", type=Path, help="another venv whose attncli runs in the same rounds")
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--importtime", type=int, default=0, metavar="RUNS")
    args = parser.parse_args()
    venv = venv_with_this_tree(args.venv or Path(tempfile.mkdtemp(prefix="attncli-startup-")) / "venv")
    cases = {"floor: import typer, numpy, yaml": [str(venv / "bin" / "python"), "-c", "import typer, numpy, yaml"]}
    cases |= commands(venv, "")
    if args.other is not None:
        cases |= commands(args.other, f"{args.other.name}: ")
    before = os.getloadavg()[0]
    runs = rounds(cases, args.rounds)
    floor = [statistics.median(r[k] for r in runs[next(iter(cases))]) for k in (0, 1)]
    print(f"{args.rounds} interleaved rounds, medians (load average {before:.2f} before, "
          f"{os.getloadavg()[0]:.2f} after; {os.cpu_count()} CPUs)")
    for name, found in runs.items():
        wall, cpu = (statistics.median(r[k] for r in found) for k in (0, 1))
        print(f"  {name:36} wall {wall * 1000:6.1f} ms  ×{wall / floor[0]:.2f}   cpu {cpu * 1000:6.1f} ms  "
              f"×{cpu / floor[1]:.2f}")
    if args.importtime:
        importtime(venv, args.importtime)


if __name__ == "__main__":
    main()
