"""`attncli check` on BERT-base documents: the stages' variants searched, singly and in pairs.

    python benchmarks/check_variants.py [--repeat N] [--skip-process]

Two documents, each with answers worked out here in numpy:

- ``examples/bert_base.yaml`` itself (d_model 768, 12 heads of 64, n = 6, W_O and every bias, no mask), with an
  ``answer:`` section written beside it: the whole output with the scale left out and the weights rounded to 2
  decimals before they multiply V (``pair``: two variants, found only by the pair search), the same for query 3
  alone (``pair row``), and an output no variant explains (``none``: every single one and every pair the pruning
  keeps is tried).  ``attncli check`` on the file is also timed as a whole process (``process``), the issue's
  target: within 5 s with pairs searched;
- a BERT-base-sized one built here (n = 16, causal), ``single`` (the scale left out), ``pair`` and ``none`` as above;
  then the same document with a ``gradient:`` (dL/dY), ``pair`` again: each candidate has a backward pass too.

It prints the seconds of ``check``'s diagnosis (the computation excluded), best and median of ``--repeat`` runs (and
the median CPU seconds), the median as a number of full computations of the document (the median of 9, timed just
before: the ratio holds on a loaded machine, the seconds do not), and what was named. Nothing is asserted about
time.

Figures (benchmarks/README.md, "check_variants.py"; 2026-12-04, a 2-core Intel Xeon virtual machine, load average
4 to 7 from other work, 3 rounds alternating with the code before): examples/bert_base.yaml pair 0.18 s (before
0.32), the whole `attncli check` process 0.54 s (0.60); n = 16 pair 0.17 s (0.46), none 0.17 s (0.47); with a
gradient, pair 0.37 s (10.6).  Best of each; the medians moved with the load (README).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from attncli.cli.main import library_defaults

library_defaults()  # the settings attncli's command makes before numpy is imported (OpenBLAS's idle threads sleep)

import numpy as np  # noqa: E402

from attncli.core.pipeline import attend  # noqa: E402
from attncli.inputs.builder import build_spec  # noqa: E402
from attncli.inputs.document import Document, read_document  # noqa: E402
from attncli.teach.check.answer import read_answer  # noqa: E402
from attncli.teach.check.compare import diagnose  # noqa: E402

N, D, H = 16, 768, 12
EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "bert_base.yaml"


def document(rng) -> dict:
    w = {name: (rng.standard_normal((D, D)) / np.sqrt(D)).tolist() for name in ("query", "key", "value", "output")}
    b = {name: (0.1 * rng.standard_normal(D)).tolist() for name in ("query", "key", "value", "output")}
    return {"inputs": rng.standard_normal((N, D)).tolist(), "heads": H, "weights": w, "bias": b, "mask": "causal"}


def learner(x, w: dict, b: dict, scale: float, rounding: float | None = None, causal: bool = True) -> np.ndarray:
    """The output worked out in numpy: per head, the (causal) softmax of scale·Q·Kᵀ, times V; concat; W_O, b_O.
    ``w``, ``b``: d_model × d_model weights and their biases by name (query, key, value, output)."""
    q, k, v = (x @ w[n] + b[n] for n in ("query", "key", "value"))
    n, d = len(x), x.shape[1] // H
    seen = np.tril(np.ones((n, n), bool)) if causal else np.ones((n, n), bool)
    heads = []
    for h in range(H):
        c = slice(h * d, (h + 1) * d)
        z = np.where(seen, scale * q[:, c] @ k[:, c].T, -np.inf)
        a = np.exp(z - z.max(axis=1, keepdims=True))
        a /= a.sum(axis=1, keepdims=True)
        if rounding is not None:
            a = np.round(a / rounding) * rounding
        heads.append(a @ v[:, c])
    return np.concatenate(heads, axis=1) @ w["output"] + b["output"]


def yardstick(spec) -> tuple[object, float]:
    """The Trace, and the median seconds of one full computation of the document (9 of them)."""
    times = []
    for _ in range(9):
        start = time.perf_counter()
        trace = attend(spec)
        times.append(time.perf_counter() - start)
    return trace, float(np.median(times))


def timed(name: str, trace, raw: dict, once: float, repeat: int) -> None:
    answer = read_answer(raw, trace, Path("."))
    times, cpu = [], []
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        report = diagnose(trace, answer)
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    named = [s["name"] for s in report.slips]
    print(f"  {name:9s} best {min(times):.3f} s, median {np.median(times):.3f} s, CPU {np.median(cpu):.3f} s "
          f"(= {np.median(times) / once:.0f} computations)  named {named}")


def built(repeat: int, rng) -> None:
    doc = document(rng)
    trace, once = yardstick(build_spec(Document(doc, "bert-sized", Path("."))))
    print(f"n = {N}, causal (built here): one computation (attend) {once:.4f} s")
    x = np.array(doc["inputs"])
    w, b = ({k: np.array(v) for k, v in doc[part].items()} for part in ("weights", "bias"))
    right = learner(x, w, b, 1 / 8)
    answers = {"single": learner(x, w, b, 1.0), "pair": learner(x, w, b, 1.0, 0.01),
               "none": right + 0.3 * rng.standard_normal(right.shape)}
    for name, output in answers.items():
        timed(name, trace, {"output": np.round(output, 4).tolist()}, once, repeat)
    doc["gradient"] = rng.standard_normal((N, D)).tolist()  # dL/dY: the backward pass is part of each candidate
    trace, once = yardstick(build_spec(Document(doc, "bert-sized", Path("."))))
    print(f"the same with gradient: one computation (attend, backward included) {once:.4f} s")
    timed("pair", trace, {"output": np.round(answers["pair"], 4).tolist()}, once, repeat)


def example(repeat: int, rng, process: bool) -> None:
    text = EXAMPLE.read_text(encoding="utf-8")
    spec = build_spec(read_document(str(EXAMPLE)))
    trace, once = yardstick(spec)
    print(f"examples/bert_base.yaml (n = {spec.n}): one computation (attend) {once:.4f} s")
    x = spec.inputs
    w = {n: np.concatenate(list(m), axis=1) for n, m in (("query", spec.w_q), ("key", spec.w_k), ("value", spec.w_v))}
    b = {n: np.concatenate(list(m)) for n, m in (("query", spec.b_q), ("key", spec.b_k), ("value", spec.b_v))}
    w["output"], b["output"] = spec.w_o, spec.b_o
    pair = np.round(learner(x, w, b, 1.0, 0.01, causal=False), 4)
    none = np.round(learner(x, w, b, 1 / 8, causal=False) + 0.3 * rng.standard_normal(pair.shape), 4)
    answers = {"pair": {"output": pair.tolist()}, "pair row": {"query": 3, "output": pair[2].tolist()},
               "none": {"output": none.tolist()}}
    for name, raw in answers.items():
        timed(name, trace, raw, once, repeat)
    if not process:
        return
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "bert_base_pair.yaml"  # the example and an answer: section with the pair's output
        path.write_text(text + "answer:\n  output: " + str(pair.tolist()) + "\n", encoding="utf-8")
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            done = subprocess.run([sys.executable, "-m", "attncli", "check", str(path)], capture_output=True, text=True,
                                  timeout=600)
            times.append(time.perf_counter() - start)
        named = "scale" in done.stdout and "rounded" in done.stdout
        print(f"  process   best {min(times):.2f} s, median {np.median(times):.2f} s (exit {done.returncode}, "
              f"{'both slips named' if named else 'NOT named: ' + done.stdout[-300:]})")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--skip-process", action="store_true", help="leave out the whole `attncli check` process")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    example(args.repeat, rng, not args.skip_process)
    built(args.repeat, rng)


if __name__ == "__main__":
    main()
