"""What reading one matrix out of a large checkpoint costs: whole processes, .safetensors against .npy.

    python benchmarks/checkpoint.py              # a 500 MB float32 .safetensors, 21 runs of each
    python benchmarks/checkpoint.py --mb 2000 --repeat 9

A temporary folder gets a .safetensors of about ``--mb`` MB (float32 768 × 768 matrices named as a
decoder's, ``model.layers.i.self_attn.{q,k,v,o}_proj.weight``), and one of its matrices, the last in
the file, saved alone as .npy. Two documents are the same attention (16 tokens of width 768, 12 heads)
but for W_Q: one reads it with ``{file: model.safetensors, tensor: …, layout: torch}``, the other from
the .npy file. Each ``attncli compute … --only output -o y.npy`` process is timed, alternating, and the
difference of the medians is what reading the matrix out of the checkpoint costs (target: < 0.05 s),
in wall-clock time and in CPU time (user + system, from wait4), which other load on the machine moves
less. The page cache is warm after the first run, as it is for anyone who runs a document twice.

Reading in-process (``read_value`` alone, 200 times each, the header parsed each time) is timed too, for a
figure without the noise of starting processes. The outputs are compared: they must be identical.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SIDE = 768
TENSOR = "model.layers.{}.self_attn.{}_proj.weight"


def write_checkpoint(path: Path, megabytes: int) -> tuple[str, int]:
    """A float32 .safetensors of about ``megabytes`` MB, written a tensor at a time; the last tensor's name."""
    import numpy as np

    rng = np.random.default_rng(0)
    count = max(1, megabytes * 1_000_000 // (SIDE * SIDE * 4))
    names = [TENSOR.format(i // 4, "qkvo"[i % 4]) for i in range(count)]
    size = SIDE * SIDE * 4
    header = {name: {"dtype": "F32", "shape": [SIDE, SIDE], "data_offsets": [i * size, (i + 1) * size]}
              for i, name in enumerate(names)}
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with path.open("wb") as f:
        f.write(len(text).to_bytes(8, "little") + text)
        for _ in names:
            f.write((rng.standard_normal((SIDE, SIDE), dtype=np.float32) * 0.05).tobytes())
    return names[-1], path.stat().st_size


def documents(folder: Path, last: str) -> None:
    import numpy as np

    from attncli.inputs.matrices import read_value

    w = read_value({"file": "model.safetensors", "tensor": last}, folder)  # as stored: d_out × d_in
    np.save(folder / "w_q.npy", w.T.astype(np.float32))  # what layout: torch gives, as a float32 .npy
    common = "inputs: {random: normal, seed: 1, shape: [16, 768]}\nheads: 12\n"
    (folder / "checkpoint.yaml").write_text(
        common + f"weights:\n  query: {{file: model.safetensors, tensor: {last}, layout: torch}}\n")
    (folder / "npy.yaml").write_text(common + "weights:\n  query: w_q.npy\n")


def run(command: list[str]) -> tuple[float, float]:
    """The process's wall time and its CPU time (user + system, from wait4: less moved by other load)."""
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode:
        raise SystemExit(f"{' '.join(command)} failed ({process.returncode})")
    return wall, usage.ru_utime + usage.ru_stime


def in_process(folder: Path, last: str, repeat: int = 200) -> dict[str, float]:
    from attncli.inputs import tensorfiles
    from attncli.inputs.matrices import read_value

    specs = {"safetensors": {"file": "model.safetensors", "tensor": last, "layout": "torch"}, "npy": "w_q.npy"}
    times = {}
    for label, spec in specs.items():
        read_value(spec, folder)
        start = time.perf_counter()
        for _ in range(repeat):
            tensorfiles._headers.clear()  # each read parses the header, as each process does once
            read_value(spec, folder)
        times[label] = (time.perf_counter() - start) / repeat
    return times


def main() -> None:
    import numpy as np

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=500, help="size of the checkpoint in MB (default 500)")
    parser.add_argument("--repeat", type=int, default=21, help="runs of each process (default 21)")
    args = parser.parse_args()
    script = Path(sys.executable).parent / "attncli"
    attncli = [str(script)] if script.exists() else [sys.executable, "-m", "attncli"]
    with tempfile.TemporaryDirectory(prefix="attncli-checkpoint-") as tmp:
        folder = Path(tmp)
        start = time.perf_counter()
        last, size = write_checkpoint(folder / "model.safetensors", args.mb)
        print(f"wrote {size / 1e6:.0f} MB ({size // (SIDE * SIDE * 4)} float32 {SIDE} × {SIDE} matrices) "
              f"in {time.perf_counter() - start:.1f} s; reading {last}, the last one")
        documents(folder, last)
        times: dict[str, list[tuple[float, float]]] = {"checkpoint": [], "npy": []}
        for _ in range(args.repeat + 1):  # the first round warms the page cache and is not counted
            for label in times:
                out = folder / f"y_{label}.npy"
                times[label].append(run([*attncli, "compute", str(folder / f"{label}.yaml"), "--only", "output",
                                         "-o", str(out)]))
        same = np.array_equal(np.load(folder / "y_checkpoint.npy"), np.load(folder / "y_npy.npy"))
        inside = in_process(folder, last)
    print(f"whole `attncli compute … --only output` processes, {args.repeat} runs each (after one warm-up run):")
    medians = {}
    for label, runs in times.items():
        wall, cpu = [w for w, _ in runs[1:]], [c for _, c in runs[1:]]
        medians[label] = statistics.median(wall), statistics.median(cpu)
        print(f"  W_Q from {'the .safetensors' if label == 'checkpoint' else 'a small .npy':17} "
              f"wall: median {medians[label][0]:.3f} s, fastest {min(wall):.3f} s   "
              f"CPU: median {medians[label][1]:.3f} s, least {min(cpu):.3f} s")
    wall, cpu = (medians["checkpoint"][i] - medians["npy"][i] for i in (0, 1))
    print(f"  difference of the medians: wall {wall:+.3f} s, CPU {cpu:+.3f} s   (target: < 0.05 s)")
    print(f"in-process read_value: .safetensors {inside['safetensors'] * 1e3:.2f} ms, "
          f".npy {inside['npy'] * 1e3:.2f} ms   (outputs identical: {same})")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
