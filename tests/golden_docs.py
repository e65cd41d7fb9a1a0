"""Random documents for the golden test: every feature of the format, drawn from a seeded generator.

``documents()`` yields (name, document) pairs; the same call always gives the same documents, so
their JSON can be recorded once (``python tests/golden_docs.py``) and compared after any change
that must not move a number (tests/test_golden.py: the structure exactly, the numbers within
rounding, see golden_compare.py).
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RECORD = HERE / "golden" / "outputs.json.gz"  # exit codes and JSON, numbers at full precision
COUNT = 200


def _matrix(rng: np.random.Generator, rows: int, cols: int) -> list:
    return np.round(rng.normal(0, 1, (rows, cols)), 3).tolist()


def _document(rng: np.random.Generator) -> dict:
    n = int(rng.integers(1, 6))
    h = int(rng.integers(1, 4))
    d_k = int(rng.integers(1, 4))
    d_v = int(rng.integers(1, 4))
    d_model = int(rng.integers(1, 6))
    doc: dict = {"inputs": _matrix(rng, n, d_model)}
    cross = rng.random() < 0.25
    m, d_ctx = n, d_model
    if cross:
        m, d_ctx = int(rng.integers(1, 6)), int(rng.integers(1, 5))
        doc["context"] = _matrix(rng, m, d_ctx)
    if rng.random() < 0.5:
        doc["tokens"] = [f"t{i}" for i in range(n)]
    three_d = rng.random() < 0.3
    score = "additive" if rng.random() < 0.15 else "dot"
    if not three_d:
        doc["heads"] = h
    weights = _projections(rng, three_d, h, d_model, d_ctx, d_k, d_v)
    output, d_out, add_norm = _output(rng, cross, h * d_v, d_model)
    if output is not None:
        weights["output"] = output
    if score == "additive":
        weights |= _additive(rng, d_k)
        doc["score"] = "additive"
    doc["weights"] = weights
    if rng.random() < 0.4:
        doc["bias"] = _bias(rng, h * d_k, h * d_v, d_out)
    doc["scale"] = ["sqrt", "none", 0.5, None][int(rng.integers(0, 4))]
    if doc["scale"] is None:
        del doc["scale"]
    mask = _mask(rng, n, m)
    if mask is not None:
        doc["mask"] = mask
    if rng.random() < 0.15 and not cross:
        doc["positional"] = "sinusoidal" if rng.random() < 0.5 else _matrix(rng, n, d_model)
    if rng.random() < 0.1 and score == "dot":
        doc["normalize"] = "none"
    if add_norm:
        doc["add_norm"] = True if rng.random() < 0.5 else _norm(rng, d_model)
    return doc


def _projections(rng: np.random.Generator, three_d: bool, h: int, d_model: int, d_ctx: int, d_k: int,
                 d_v: int) -> dict:
    """W_Q, W_K and W_V: one (d_in, d) matrix per head, or the heads side by side in one matrix."""
    if three_d:
        return {"query": rng.normal(0, 1, (h, d_model, d_k)).round(3).tolist(),
                "key": rng.normal(0, 1, (h, d_ctx, d_k)).round(3).tolist(),
                "value": rng.normal(0, 1, (h, d_ctx, d_v)).round(3).tolist()}
    return {"query": _matrix(rng, d_model, h * d_k), "key": _matrix(rng, d_ctx, h * d_k),
            "value": _matrix(rng, d_ctx, h * d_v)}


def _output(rng: np.random.Generator, cross: bool, width: int, d_model: int) -> tuple[list | None, int, bool]:
    """W_O half the time, the output's width d_out, and whether add_norm goes with it (R = X + Y: d_out = d_model)."""
    with_output = rng.random() < 0.5
    add_norm = not cross and rng.random() < 0.2
    if not with_output:
        return None, width, add_norm and width == d_model
    d_out = d_model if add_norm else int(rng.integers(1, 5))
    return _matrix(rng, width, d_out), d_out, add_norm


def _additive(rng: np.random.Generator, d_k: int) -> dict:
    """Additive attention's W₁, W₂ (d_k × d_a) and v (d_a)."""
    d_a = int(rng.integers(1, 4))
    return {"w1": _matrix(rng, d_k, d_a), "w2": _matrix(rng, d_k, d_a),
            "v": np.round(rng.normal(0, 1, d_a), 3).tolist()}


def _bias(rng: np.random.Generator, width_k: int, width_v: int, d_out: int) -> dict:
    """The query and value biases, and sometimes the key's and the output's."""
    bias = {"query": np.round(rng.normal(0, 1, width_k), 3).tolist(),
            "value": np.round(rng.normal(0, 1, width_v), 3).tolist()}
    if rng.random() < 0.5:
        bias["key"] = np.round(rng.normal(0, 1, width_k), 3).tolist()
    if rng.random() < 0.5:
        bias["output"] = np.round(rng.normal(0, 1, d_out), 3).tolist()
    return bias


def _mask(rng: np.random.Generator, n: int, m: int) -> str | list | None:
    """None, causal (when there are as many keys as queries) or a random 0/1 matrix of n × m."""
    kind = int(rng.integers(0, 3))
    if kind == 1 and n == m:
        return "causal"
    if kind == 2:
        return (rng.random((n, m)) < 0.7).astype(int).tolist()
    return None


def _norm(rng: np.random.Generator, d_model: int) -> dict:
    """An add_norm mapping: γ near 1, β near 0."""
    return {"gamma": np.round(rng.normal(1, 0.1, d_model), 3).tolist(),
            "beta": np.round(rng.normal(0, 0.1, d_model), 3).tolist(), "eps": 1e-6}


def documents():
    """(name, document) for the examples' companions: COUNT random documents, always the same."""
    rng = np.random.default_rng(20261123)
    for i in range(COUNT):
        yield f"random-{i:03d}", _document(rng)


def examples() -> list[Path]:
    return sorted((ROOT / "examples").glob("*.yaml"))


def compute_json(args: list[str]) -> tuple[int, str, str]:
    """Run ``attncli compute ARGS --format json`` in this process: (exit code, stdout, stderr)."""
    from typer.testing import CliRunner

    from attncli.cli import app

    result = CliRunner().invoke(app, ["compute", *args, "--format", "json"])
    return result.exit_code, result.stdout, result.stderr


def current(tmp: Path) -> dict[str, dict]:
    """Every example's and every random document's exit code and JSON, as the code computes them now."""
    record = {}
    runs = [(f"examples/{path.name}", path) for path in examples()]
    for name, doc in documents():
        path = tmp / f"{name}.json"
        path.write_text(json.dumps(doc))
        runs.append((name, path))
    for name, path in runs:
        code, out, _ = compute_json([str(path)])
        record[name] = {"exit": code, "json": json.loads(out) if code == 0 else None}
    return record


def recorded() -> dict[str, dict]:
    with gzip.open(RECORD, "rt", encoding="utf-8") as f:
        return json.load(f)


if __name__ == "__main__":  # record the results (only before a change that must keep every number)
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        text = json.dumps(current(Path(tmp)), separators=(",", ":"))
    with open(RECORD, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as f:
        f.write(text.encode())
    print(f"recorded {RECORD}", file=sys.stderr)
