"""Ctrl-C in the first moments of `attncli compute - -o out.json`: real SIGINTs at set delays after the start.

    python benchmarks/interrupt_at_start.py [rounds] [--no-site]

For each delay, how many runs ended as a Ctrl-C should (exit 130, the one line ``Interrupted.``, the old output
file intact) and how the others ended: killed before Python handles SIGINT (-2, silent), or a traceback from
Python's own start-up (site and .pth files, before any attncli code), or from the lines pip writes (the console script's
``from attncli.cli import main`` while importlib looks for the package, an editable install's finder), which
attncli cannot catch: no line of the package has run yet. The document is
standard input that never ends, so every run is still going when its signal comes. Prints the load average: the
start-up takes longer on a loaded machine, and the delays move with it.

``--no-site`` starts Python without its site step (``-S``, the packages' folders put on sys.path by hand): what is
left is attncli's own window, without the .pth files of this environment (an editable install's finder imports
pathlib there, before any attncli code runs).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

DELAYS = (0.02, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.6)


def one(command: list[str], delay: float, out: Path) -> str:
    out.write_text("an earlier result\n")
    process = subprocess.Popen([*command, "compute", "-", "-o", str(out)], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(delay)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=120)
    if out.read_text() != "an earlier result\n":
        return "output file changed"
    if process.returncode == 130 and stderr == b"Interrupted.\n":
        return "ok"
    text = stderr.decode(errors="replace")
    frames = re.findall(r'File "([^"]+)"', text)
    if any(f"{os.sep}attncli{os.sep}" in frame for frame in frames):  # a module of the package
        return "traceback in attncli code"
    if any("attncli" in frame for frame in frames):  # pip's console script or editable finder, before the package
        return "traceback in pip's script, before attncli"
    if "Traceback" in text or "Fatal Python error" in text:  # site, io, importlib: before any attncli line
        return "traceback in Python's start-up"
    return f"exit {process.returncode}"


def command_line(no_site: bool) -> list[str]:
    if not no_site:
        return [shutil.which("attncli") or str(Path(sys.executable).with_name("attncli"))]
    import attncli

    paths = [str(Path(attncli.__file__).parent.parent), *(p for p in sys.path if p.endswith("site-packages"))]
    return [sys.executable, "-S", "-c", f"import sys; sys.path[1:1] = {paths!r}; from attncli.cli import main; "
            "sys.exit(main())"]


def main() -> None:
    numbers = [a for a in sys.argv[1:] if a.isdigit()]
    rounds = int(numbers[0]) if numbers else 3
    command = command_line("--no-site" in sys.argv)
    results: dict[float, Counter] = {delay: Counter() for delay in DELAYS}
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "out.json"
        for _ in range(rounds):  # the delays interleaved, round after round
            for delay in DELAYS:
                results[delay][one(command, delay, out)] += 1
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {rounds} rounds; {command[0]}"
          + (" -S (no site)" if len(command) > 1 else ""))
    for delay, counts in results.items():
        print(f"  {delay:4.2f} s: " + ", ".join(f"{n} {what}" for what, n in counts.most_common()))


if __name__ == "__main__":
    main()
