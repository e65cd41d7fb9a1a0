"""The ``.npy`` writer (``compute … -o out.npy``): written into the file against built whole in memory first.

    python benchmarks/npy.py              # a 16384 × 768 float64 output (96 MiB), 3 rounds
    python benchmarks/npy.py --rounds 5

Each way runs in a child process of its own, in rounds, one of each in turn: ``streamed``, attncli's writer
(``outputs.serialize.write_npy`` through ``outputs.files.write_all``: the header, then the numbers straight into
the temporary file beside the target, then the rename); ``in memory``, the same files.write_all given the whole
file's bytes (np.save into a BytesIO: what a writer that builds the bytes first holds); ``np.save``, numpy's own
to the path (no temporary file, no fsync), the yardstick.  Two layouts: C-ordered rows (the output Y) and the
heads side by side stored (n, h, d) but read (h, n, d) (a streamed H).  Shown: the best wall time of the writing
and the child's peak memory (maximum resident set, wait4), beside that of a child that makes the array and
writes nothing.  The files are compared
byte for byte; nothing is asserted about time.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHILD = '''
import io, json, sys, time
from pathlib import Path
import numpy as np
from attncli.outputs.files import Streamed, write_all
from attncli.outputs.serialize import write_npy
way, layout, path = sys.argv[1:4]
rng = np.random.default_rng(0)
a = rng.normal(size=(16384, 768))
a = a if layout == "rows" else a.reshape(16384, 12, 64).transpose(1, 0, 2)  # (h, n, d), stored (n, h·d)
t = time.perf_counter()
if way == "streamed":
    write_all([(Path(path), Streamed(lambda f: write_npy(f, a)))], set())
elif way == "in memory":  # (np.save into a BytesIO writes the file's bytes as np.save does)
    buffer = io.BytesIO()
    np.save(buffer, a)
    write_all([(Path(path), buffer.getvalue())], set())
elif way == "np.save":
    np.save(path, a)
print(json.dumps({"seconds": time.perf_counter() - t, "mib": a.nbytes / 2**20}))
'''
WAYS = ("streamed", "in memory", "np.save")  # and "array only": the child's peak without writing, the baseline


def child(way: str, layout: str, path: str) -> dict:
    """One child process: its figures and its peak (maximum resident set, MiB, from wait4)."""
    process = subprocess.Popen([sys.executable, "-c", CHILD, way, layout, path], stdout=subprocess.PIPE, text=True,
                               cwd=ROOT, env={"PYTHONPATH": str(ROOT)})
    out = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode:
        raise SystemExit(f"{way} {layout}: exit {process.returncode}")
    return {**json.loads(out), "peak": usage.ru_maxrss / 1024}


def digest(path: Path) -> str:
    """The file's SHA-256, read a MiB at a time: this process stays small (a child's peak starts from its parent's,
    which Linux keeps across fork and exec)."""
    import hashlib

    h = hashlib.sha256()
    with path.open("rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        for layout in ("rows", "heads"):
            best: dict[str, dict] = {}
            for _ in range(args.rounds):
                for way in (*WAYS, "array only"):
                    got = child(way, layout, f"{folder}/{way.replace(' ', '_')}.npy")
                    mine = best.setdefault(way, got)
                    mine["seconds"], mine["peak"] = min(mine["seconds"], got["seconds"]), max(mine["peak"], got["peak"])
            digests = {digest(Path(f"{folder}/{way.replace(' ', '_')}.npy")) for way in WAYS}
            same = "identical" if len(digests) == 1 else "DIFFERENT"
            print(f"{layout} ({best['streamed']['mib']:.0f} MiB, files {same}):")
            for way in WAYS:
                added = max(0.0, best[way]["peak"] - best["array only"]["peak"])
                print(f"  {way:>10}: best {best[way]['seconds']:.3f} s, peak {best[way]['peak']:.0f} MiB "
                      f"(+{added:.0f} MiB over the array alone)")


if __name__ == "__main__":
    main()
