"""`attncli check` on a BERT-base-sized document: the stages' variants searched, singly and in pairs.

    python benchmarks/check_variants.py [--repeat N]

d_model 768, 12 heads of 64, n = 16, W_O and every bias, causal; three answers worked out here in numpy:

- ``single``: the scale left out (one variant reproduces it);
- ``pair``: the scale left out and the weights rounded to 2 decimals before they multiply V (two variants);
- ``none``: an output no variant explains (every single one and every pair the pruning keeps is tried).

It prints the seconds of ``check``'s diagnosis (the computation excluded), the same as a number of full computations
of the document (timed just before: the ratio holds on a loaded machine, the seconds do not), and what was named.
The budget is 5 s with pairs searched; nothing is asserted about time.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from attncli.core.pipeline import attend
from attncli.inputs.builder import build_spec
from attncli.inputs.document import Document
from attncli.teach.check.answer import read_answer
from attncli.teach.check.compare import diagnose

N, D, H = 16, 768, 12


def document(rng) -> dict:
    w = {name: (rng.standard_normal((D, D)) / np.sqrt(D)).tolist() for name in ("query", "key", "value", "output")}
    b = {name: (0.1 * rng.standard_normal(D)).tolist() for name in ("query", "key", "value", "output")}
    return {"inputs": rng.standard_normal((N, D)).tolist(), "heads": H, "weights": w, "bias": b, "mask": "causal"}


def learner(doc: dict, scale: float, rounding: float | None = None) -> np.ndarray:
    """The output worked out in numpy: per head, the causal softmax of scale·Q·Kᵀ, times V; concat; W_O, b_O."""
    x = np.array(doc["inputs"])
    w = {k: np.array(v) for k, v in doc["weights"].items()}
    b = {k: np.array(v) for k, v in doc["bias"].items()}
    q, k, v = (x @ w[n] + b[n] for n in ("query", "key", "value"))
    d = D // H
    causal = np.tril(np.ones((N, N), bool))
    heads = []
    for h in range(H):
        c = slice(h * d, (h + 1) * d)
        z = np.where(causal, scale * q[:, c] @ k[:, c].T, -np.inf)
        a = np.exp(z - z.max(axis=1, keepdims=True))
        a /= a.sum(axis=1, keepdims=True)
        if rounding is not None:
            a = np.round(a / rounding) * rounding
        heads.append(a @ v[:, c])
    return np.concatenate(heads, axis=1) @ w["output"] + b["output"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    repeat = parser.parse_args().repeat
    rng = np.random.default_rng(0)
    doc = document(rng)
    spec = build_spec(Document(doc, "bert-sized", Path(".")))
    start = time.perf_counter()
    trace = attend(spec)
    once = time.perf_counter() - start  # the yardstick: one full computation of the document, moments before
    print(f"one computation (attend) {once:.3f} s")
    right = learner(doc, 1 / 8)
    answers = {"single": learner(doc, 1.0), "pair": learner(doc, 1.0, 0.01),
               "none": right + 0.3 * rng.standard_normal(right.shape)}
    for name, output in answers.items():
        answer = read_answer({"output": np.round(output, 4).tolist()}, trace, Path("."))
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            report = diagnose(trace, answer)
            times.append(time.perf_counter() - start)
        named = [s["name"] for s in report.slips]
        print(f"{name:7s} best {min(times):.2f} s, median {sorted(times)[len(times) // 2]:.2f} s "
              f"(= {min(times) / once:.0f} computations)  named {named}")


if __name__ == "__main__":
    main()
