"""``indexer`` (DeepSeek-V3.2's lightning indexer) against loops written here: the table I cell by cell, top-k by
sorting each row by hand (larger first, equal values the lower key index first), the attention that follows as a
softmax over the kept keys only, the weight full attention gave the dropped keys; ties at the cut; the streamed path;
the backward pass with the selection as a fixed mask (central differences); the errors, one line and exit 2.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from typer.testing import CliRunner

import attncli
from attncli.cli import app

N, D_MODEL, H_I, D_I = 7, 6, 3, 4


def rng_doc(seed: int = 0, top_k: int = 3, **extra) -> dict:
    g = np.random.default_rng(seed)
    doc = {"inputs": g.normal(size=(N, D_MODEL)).tolist(), "heads": 2, "mask": "causal",
           "weights": {"query": g.normal(size=(D_MODEL, 8)).tolist(), "key": g.normal(size=(D_MODEL, 8)).tolist(),
                       "value": g.normal(size=(D_MODEL, 6)).tolist()},
           "rope": {"dims": 4, "base": 100.0},
           "indexer": {"top_k": top_k, "heads": H_I,
                       "weights": {"query": g.normal(size=(D_MODEL, H_I * D_I)).tolist(),
                                   "key": g.normal(size=(D_MODEL, D_I)).tolist(),
                                   "head_weights": g.normal(size=(D_MODEL, H_I)).tolist()},
                       "key_norm": {"kind": "layer", "gamma": (1 + 0.3 * g.normal(size=D_I)).tolist(),
                                    "beta": (0.2 * g.normal(size=D_I)).tolist()}}}
    doc.update(extra)
    return doc


def turned(x: list[float], p: float, dims: int, base: float) -> list[float]:
    """rotate_half's rotation of the first ``dims`` numbers of x at position p, by hand."""
    out, half = list(x), dims // 2
    for i in range(half):
        f = base ** (-2 * i / dims)
        a, b = x[i], x[i + half]
        out[i], out[i + half] = a * math.cos(p * f) - b * math.sin(p * f), b * math.cos(p * f) + a * math.sin(p * f)
    return out


def naive_table(doc: dict) -> list[list[float]]:
    """I_s,t = Σ_h w_s,h·H^(−1/2)·ReLU(d^(−1/2)·q_s,h·k_t) with loops; −inf above the diagonal (causal)."""
    x, ix = np.array(doc["inputs"]), doc["indexer"]
    wq, wk, ww = (np.array(ix["weights"][k]) for k in ("query", "key", "head_weights"))
    gamma, beta = ix["key_norm"]["gamma"], ix["key_norm"]["beta"]
    keys = []
    for t in range(N):
        raw = [sum(x[t, c] * wk[c, j] for c in range(D_MODEL)) for j in range(D_I)]
        mean = sum(raw) / D_I
        var = sum((r - mean) ** 2 for r in raw) / D_I
        normed = [gamma[j] * (raw[j] - mean) / math.sqrt(var + 1e-6) + beta[j] for j in range(D_I)]
        keys.append(turned(normed, t, 4, 100.0))
    table = []
    for s in range(N):
        row = []
        for t in range(N):
            if t > s:
                row.append(-math.inf)
                continue
            total = 0.0
            for h in range(H_I):
                q = [sum(x[s, c] * wq[c, h * D_I + j] for c in range(D_MODEL)) for j in range(D_I)]
                q = turned(q, s, 4, 100.0)
                dot = sum(q[j] * keys[t][j] for j in range(D_I)) / math.sqrt(D_I)
                w = sum(x[s, c] * ww[c, h] for c in range(D_MODEL))
                total += w * max(dot, 0.0) / math.sqrt(H_I)
            row.append(total)
        table.append(row)
    return table


def by_hand(row: list[float], k: int) -> list[int]:
    """The kept keys of one row: sorted by (−I, index), the allowed ones, the first k."""
    allowed = [t for t, v in enumerate(row) if v != -math.inf]
    return sorted(allowed, key=lambda t: (-row[t], t))[:k]


@pytest.mark.parametrize("seed, top_k", [(0, 3), (1, 2), (2, 5), (3, 1)])
def test_table_and_top_k_against_loops(seed, top_k):
    doc = rng_doc(seed, top_k)
    trace = attncli.compute(doc)
    table = np.array(naive_table(doc))
    finite = np.isfinite(table)
    assert np.array_equal(np.isfinite(trace.index_scores), finite)
    assert np.abs(trace.index_scores[finite] - table[finite]).max() <= 1e-12 * np.abs(table[finite]).max()
    for s in range(N):
        want = by_hand(naive_table(doc)[s], top_k)
        assert trace.index_selected[s].tolist() == want + [-1] * (min(top_k, N) - len(want)), s
        assert np.flatnonzero(trace.index_mask[s]).tolist() == sorted(want)


def test_attention_sees_only_the_kept_keys_and_the_dropped_weight():
    doc = rng_doc(4, 2)
    sparse, dense = attncli.compute(doc), attncli.compute({**doc, "indexer": None})
    kept = sparse.index_mask.astype(bool)
    for h in range(2):
        for s in range(N):
            z = [dense.scaled_scores[h, s, t] for t in range(N) if kept[s, t]]
            e = [math.exp(v - max(z)) for v in z]
            want = np.zeros(N)
            want[kept[s]] = [v / sum(e) for v in e]
            np.testing.assert_allclose(sparse.weights[h, s], want, rtol=0, atol=1e-14)
            dropped = sum(dense.weights[h, s, t] for t in range(s + 1) if not kept[s, t])
            assert sparse.index_dropped_weight[h, s] == pytest.approx(dropped, abs=1e-15)
    assert np.array_equal(sparse.scaled_scores, dense.scaled_scores)  # the same Z, another mask


def test_a_tie_at_the_cut_keeps_the_lower_index_and_is_counted():
    doc = rng_doc(5, 2)  # head weights of zero: every I is 0, every row a tie
    doc["indexer"]["weights"]["head_weights"] = np.zeros((D_MODEL, H_I)).tolist()
    trace = attncli.compute(doc)
    assert trace.index_selected.tolist() == [[0, -1], [0, 1]] + [[0, 1]] * (N - 2)
    assert trace.index_ties.tolist() == [0, 0] + [s - 1 for s in range(2, N)]
    result = CliRunner().invoke(app, ["compute", "-", "--format", "json", "--only", "index_ties"],
                                input=json.dumps(doc))
    assert result.exit_code == 0
    assert json.loads(result.stdout)["index_ties"] == [0, 0, 1, 2, 3, 4, 5]
    assert "tie" in result.stderr and "x3" in result.stderr  # the warning names the queries


def test_json_keys_types_and_nulls():
    doc = rng_doc(0, 3)
    result = CliRunner().invoke(app, ["compute", "-", "--format", "json"], input=json.dumps(doc))
    assert result.exit_code == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["index_scores"][0][1] is None and isinstance(out["index_scores"][1][0], float)
    assert out["index_selected"][0] == [0, -1, -1] and all(isinstance(v, int) for v in out["index_mask"][3])
    assert np.shape(out["index_queries"]) == (H_I, N, D_I) and np.shape(out["index_keys"]) == (N, D_I)
    assert np.shape(out["index_head_weights"]) == (N, H_I) and np.shape(out["index_dropped_weight"]) == (2, N)
    keys = list(out)
    assert keys.index("queries_rotated") < keys.index("index_queries") < keys.index("scores")
    assert keys.index("lse") < keys.index("index_dropped_weight") < keys.index("head_outputs")


def test_streamed_equals_full_and_only_the_indexer_needs_no_attention():
    doc = rng_doc(6, 3)
    full = attncli.compute(doc)
    streamed = attncli.compute(doc, only=["output", "index_dropped_weight"])
    assert streamed.scores is None
    np.testing.assert_allclose(streamed.output, full.output, rtol=0, atol=1e-12)
    np.testing.assert_allclose(streamed.index_dropped_weight, full.index_dropped_weight, rtol=0, atol=1e-15)
    early = attncli.compute(doc, only=["index_scores"])
    assert early.scores is None and np.array_equal(early.index_scores, full.index_scores)


def test_backward_treats_the_selection_as_a_fixed_mask():
    """grad_inputs against central differences of L = Σ G ⊙ Y with the selection held fixed (a mask matrix)."""
    doc = rng_doc(7, 3, gradient={"random": "normal", "seed": 1})
    trace = attncli.compute(doc)
    fixed = {**doc, "indexer": None, "mask": {"causal": True, "matrix": trace.index_mask.tolist()}}
    g = trace.spec.gradient
    x = np.array(doc["inputs"])

    def loss(x_: np.ndarray) -> float:
        return float((attncli.compute({**fixed, "inputs": x_.tolist()}, gradient=None).output * g).sum())

    eps, worst = 1e-6, 0.0
    for i, j in [(0, 0), (3, 2), (6, 5), (5, 1)]:
        e = np.zeros_like(x)
        e[i, j] = eps
        numeric = (loss(x + e) - loss(x - e)) / (2 * eps)
        worst = max(worst, abs(numeric - trace.grad_inputs[i, j]) / max(1.0, abs(numeric)))
    assert worst < 1e-7
    assert "grad_index_scores" not in trace.gradients


ERRORS = [
    ({"top_k": 0}, "indexer.top_k: 0 is not a whole number ≥ 1"),
    ({"top_k": None}, "indexer.top_k: is required"),
    ({"tok_k": 2}, "unknown key 'tok_k' (did you mean 'top_k'?)"),
    ({"weights": {"key": [[1.0] * 4] * 5}}, "indexer.weights.key: is 5×4 but the inputs give 6 numbers per token"),
    ({"weights": {"head_weights": [[1.0] * 2] * 6}}, "indexer.weights.head_weights: is 6×2 but the indexer has 3"),
    ({"heads": 5}, "indexer.weights.query: has 12 columns but the indexer has 5 heads of d = 4"),
    ({"rope": {"dims": 6}}, "indexer.rope.dims: 6 is wider than each head"),
    ({"key_norm": {"kind": "batch"}}, "indexer.key_norm.kind:"),
]


@pytest.mark.parametrize("change, message", ERRORS)
def test_bad_indexer_is_one_line_and_exit_2(change, message):
    doc = rng_doc(0, 3)
    ix = doc["indexer"]
    for key, value in change.items():
        if key == "weights":
            ix["weights"].update(value)
        else:
            ix[key] = value
    result = CliRunner().invoke(app, ["compute", "-", "--format", "json"], input=json.dumps(doc))
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and message in result.stderr, result.stderr


def test_indexer_with_queries_given_directly_is_refused():
    q = np.ones((1, 3, 4)).tolist()
    doc = {"queries": q, "keys": q, "values": q, "indexer": {"top_k": 1}}
    result = CliRunner().invoke(app, ["compute", "-"], input=json.dumps(doc))
    assert result.exit_code == 2 and "indexer: reads the rows of inputs" in result.stderr


def test_the_example_by_hand():
    """examples/sparse_indexer.yaml: "mat" asks q = [1, 0] and [0, 1] with w = [1, 2]; "sat"'s key LayerNorm([1, 0])
    = [1, −1] (to 1e-6): I = 2^(−1/2)·(1·ReLU(2^(−1/2)) + 2·ReLU(−2^(−1/2))) = 0.5; its row [0.5, 1, 0.5, 0, 1] keeps
    keys 1 and 4; "on" asks zeros: I = 0 everywhere, two keys left out tie the last kept."""
    from pathlib import Path

    trace = attncli.compute(Path(__file__).resolve().parent.parent / "examples" / "sparse_indexer.yaml")
    c = 0.5 / math.sqrt(0.25 + 1e-6)  # LayerNorm([1, 0]) = [c, −c] with ε = 1e-6
    np.testing.assert_allclose(trace.index_scores[4], [0.5 * c, c, 0.5 * c, 0.0, c], rtol=0, atol=1e-15)
    assert trace.index_selected[4].tolist() == [1, 4] and trace.index_selected[3].tolist() == [0, 1]
    assert trace.index_ties.tolist() == [0, 0, 0, 2, 0]
    assert np.array_equal(trace.weights[0, 4] > 0, [False, True, False, False, True])


def test_check_answers_the_table_and_names_the_slip_of_the_smallest_kept(tmp_path):
    doc = rng_doc(2, 3)
    trace = attncli.compute(doc)
    flipped = {**doc, "indexer": {**doc["indexer"], "weights": {
        **doc["indexer"]["weights"], "head_weights": (-np.array(doc["indexer"]["weights"]["head_weights"])).tolist()}}}
    wrong = attncli.compute(flipped).index_mask  # the smallest I kept: each I negated
    table = [[None if math.isinf(v) else round(float(v), 6) for v in row] for row in trace.index_scores]
    path = tmp_path / "answer.json"
    path.write_text(json.dumps({**doc, "answer": {"index_scores": table, "index_mask": wrong.tolist()}}))
    result = CliRunner().invoke(app, ["check", str(path)])
    assert result.exit_code == 1
    assert "index_scores  correct" in result.stdout and "the keys with the smallest I were kept" in result.stdout
    zh = CliRunner().invoke(app, ["check", str(path), "--lang", "zh"])
    assert "保留的是 I 最小的键" in zh.stdout


@pytest.mark.parametrize("args, message", [(["explain", "examples/causal.yaml", "--step", "indexer"],
                                            "--step: 'indexer' needs indexer: in the document"),
                                           (["compute", "examples/causal.yaml", "--only", "index_scores"],
                                            "--only: 'index_scores' needs indexer: in the document")])
def test_asking_for_the_indexer_without_one_is_one_line(args, message):
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2 and result.stderr.count("\n") == 1 and message in result.stderr
