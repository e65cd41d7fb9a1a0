"""An unknown tensor name in a .safetensors header of 300,000 names: how long the refusal (with its did-you-mean)
takes, against reading a tensor the header does hold, from the same file, in the same run.

    python benchmarks/tensor_names.py [rounds]

Both are whole processes (``attncli compute DOC --only inputs --format json``); the rounds are interleaved and
the medians of wall and CPU seconds printed with the load average. The reading of the header (35 MB of JSON)
is the floor both pay; the ratio says what the refusal adds to it (issue 40: 6.1 s, goal ≤ 5 s).
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

NAMES = 300_000


def checkpoint(path: Path) -> None:
    header = {f"model.layers.{i // 1000}.self_attn.proj_{i % 1000}.weight":
              {"dtype": "F32", "shape": [1, 1], "data_offsets": [4 * i, 4 * i + 4]} for i in range(NAMES)}
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with path.open("wb") as f:
        f.write(len(text).to_bytes(8, "little") + text + bytes(4 * NAMES))


def one(command: list[str], doc: Path) -> tuple[float, float, int, str]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    result = subprocess.run([*command, "compute", str(doc), "--only", "inputs", "--format", "json"],
                            capture_output=True, text=True, timeout=600)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu, result.returncode, result.stderr


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    command = [str(Path(sys.executable).with_name("attncli"))]
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        checkpoint(folder / "big.safetensors")
        known, unknown = folder / "known.yaml", folder / "unknown.yaml"
        known.write_text("inputs: {file: big.safetensors, tensor: model.layers.7.self_attn.proj_12.weight}\n")
        unknown.write_text("inputs: {file: big.safetensors, tensor: model.layers.7.self_attn.proj_12.wieght}\n")
        times: dict[str, list[tuple[float, float]]] = {"known": [], "unknown": []}
        for _ in range(rounds):
            for name, doc in (("known", known), ("unknown", unknown)):
                wall, cpu, code, stderr = one(command, doc)
                assert code == (0 if name == "known" else 2), stderr
                if name == "unknown":
                    assert "nearest: 'model.layers.7.self_attn.proj_12.weight'" in stderr, stderr
                times[name].append((wall, cpu))
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    med = {name: (statistics.median(w for w, _ in t), statistics.median(c for _, c in t)) for name, t in times.items()}
    print(f"{NAMES:,} names, {rounds} interleaved rounds, load average {load}")
    for name, (wall, cpu) in med.items():
        print(f"  {name:8} tensor: wall {wall:6.2f} s   CPU {cpu:6.2f} s")
    print(f"  refusal / read of a known tensor: wall {med['unknown'][0] / med['known'][0]:.2f}, "
          f"CPU {med['unknown'][1] / med['known'][1]:.2f}")


if __name__ == "__main__":
    main()
