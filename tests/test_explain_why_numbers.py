"""`explain --why`'s numbers and the facts its sentences state, recomputed in numpy on random documents.

test_explain_truth.py checks the stages on the built-in example's hand-worked numbers; here each stage's matrices
(a: the plain average of V; b: X·Xᵀ and its rows divided by their sums; c: Q·Kᵀ the same; d: softmax(scale·Q·Kᵀ),
without the mask, as the stages say; e: the largest weight and Jacobian entry with the scale and without it) are
worked out from the document's own numbers, for several heads (grouped-query heads too), scales and queries, with
the Jacobian built whole, diag(a) − a·aᵀ, and the sentences of d and e read for the followed query's numbers (d's
stall: the largest of the unmasked weights among the keys the mask lets the query see, and when the mask hides a
larger one, its share of what those keys get, as its sentence says).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import yaml

from attncli.cli import app
from attncli.outputs.numbers import number

N, D = 5, 8


def document(seed: int, heads: int, kv_heads: int, scale, mask: bool) -> dict:
    rng = np.random.default_rng(seed)
    d_k = D // heads
    doc = {"inputs": np.round(rng.standard_normal((N, D)), 2).tolist(), "heads": heads,
           "weights": {"query": np.round(rng.standard_normal((D, D)), 2).tolist(),
                       "key": np.round(rng.standard_normal((D, kv_heads * d_k)), 2).tolist(),
                       "value": np.round(rng.standard_normal((D, kv_heads * d_k)), 2).tolist()}}
    if kv_heads != heads:
        doc["kv_heads"] = kv_heads
    if scale is not None:
        doc["scale"] = scale
    if mask:
        doc["mask"] = "causal"
    return doc


def softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def by_rows(r: np.ndarray) -> np.ndarray:
    """Each row over its own sum, a loop; a row whose sum cancels out stays 0."""
    out = np.zeros_like(r)
    for i, row in enumerate(r):
        if abs(row.sum()) > 1e-12 * np.abs(row).sum():
            out[i] = row / row.sum()
    return out


def jacobian_entry(a: np.ndarray) -> float:
    return float(np.abs(np.diag(a) - np.outer(a, a)).max())


CASES = [(1, 2, 2, None, False), (2, 2, 1, None, True), (3, 1, 1, "none", False), (4, 4, 2, 0.3, True),
         (5, 2, 2, 2.0, False)]


@pytest.mark.parametrize("seed, heads, kv_heads, scale, mask", CASES)
def test_every_stage_from_the_documents_numbers(runner, tmp_path, seed, heads, kv_heads, scale, mask):
    doc = document(seed, heads, kv_heads, scale, mask)
    path = tmp_path / "why.yaml"
    path.write_text(yaml.safe_dump(doc))
    x, d_k = np.array(doc["inputs"]), D // heads
    w = {k: np.array(v) for k, v in doc["weights"].items()}
    c = {None: 1 / np.sqrt(d_k), "none": 1.0}.get(scale, scale)
    for head, query in ((0, 0), (heads - 1, N - 1), (heads // 2, 2)):
        result = runner.invoke(app, ["explain", str(path), "--why", "--format", "json", "--head", str(head + 1),
                                     "--query", str(query + 1)])
        assert result.exit_code == 0, result.output
        stages = {s["step"]: s for s in json.loads(result.stdout)["steps"]}
        kv = head // (heads // kv_heads)  # the key/value head this query head reads
        q = x @ w["query"][:, head * d_k:(head + 1) * d_k]
        k, v = (x @ w[name][:, kv * d_k:(kv + 1) * d_k] for name in ("key", "value"))
        got = lambda step, key, stages=stages: np.array(stages[step]["numbers"][key]["values"])  # noqa: E731
        np.testing.assert_allclose(got("a", "output"), np.tile(v.mean(axis=0), (N, 1)), atol=1e-12)
        for step, r in (("b", x @ x.T), ("c", q @ k.T)):
            np.testing.assert_allclose(got(step, "relevance"), r, atol=1e-9)
            np.testing.assert_allclose(got(step, "weights"), by_rows(r), atol=1e-9)
            np.testing.assert_allclose(got(step, "output"), by_rows(r) @ v, atol=1e-9)
        a = softmax(c * (q @ k.T))  # (the stages leave the mask out, and say so)
        np.testing.assert_allclose(got("d", "weights"), a, atol=1e-12)
        np.testing.assert_allclose(got("d", "output"), a @ v, atol=1e-12)
        d_text = " ".join(stages["d"]["text"])
        seen = np.arange(N) <= query if mask else np.ones(N, bool)  # the market's stall: among the keys it may see
        among = bool(a[query][~seen].max(initial=0) > a[query][seen].max())
        share = a[query][seen].max() / (a[query][seen].sum() if among else 1.0)  # (among them: their share)
        assert f"{share:.0%} of its weight" in d_text
        assert ("among the keys its mask lets it see" in d_text) == among
        assert ("leave out the document's mask" in d_text) == mask
        scaled = c if c != 1.0 else 1 / np.sqrt(d_k)  # (scale: none compares the usual 1/√d_k)
        if scaled == 1.0:
            assert "e" not in stages
            continue
        plain, with_it = softmax(q @ k.T), softmax(scaled * (q @ k.T))
        table = got("e", "saturation")
        for i in range(N):
            expected = [with_it[i].max(), jacobian_entry(with_it[i]), plain[i].max(), jacobian_entry(plain[i])]
            np.testing.assert_allclose(table[i], expected, atol=1e-12)
        e_text = " ".join(stages["e"]["text"])
        numbers = [plain[query].max(), jacobian_entry(plain[query]), with_it[query].max(),
                   jacobian_entry(with_it[query])]
        assert all(number(value, 4) in e_text for value in numbers), (numbers, e_text)
