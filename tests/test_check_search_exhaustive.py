"""check's search with its shortcuts names exactly what the exhaustive search names.

The shortcuts (the output's sketch, a changed output step tried on one row first, the pairs left out whose first
variant alone contradicts an earlier number, a pair started from its first variant's arrays) only reject candidates
that cannot fit.  Here the search runs both ways on every slip of test_check_variants.py (one per stage's variant,
forty and more) and on pairs and outputs no slip explains, worked out in numpy below, on a layer of 3 heads with
W_O and every bias, causal (also with a gradient, and with an output gate), and on differential attention's slips
(test_check_differential.py): the single and the pair candidates that
fit must be the same, in the same order, with the same arrays (a candidate's gradients are computed once it fits).
The exhaustive way computes each candidate in full from the document's own arrays and decides it by ``fits`` alone.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import ROOT
from test_check_differential import SLIPS as DIFFERENTIAL_SLIPS
from test_check_variants import CASES, r4, softmax

from attncli.core.pipeline import arrays_of, attend
from attncli.core.stages import BY_NAME, STAGES
from attncli.inputs.builder import build_spec
from attncli.inputs.document import Document
from attncli.teach.check import probe, search
from attncli.teach.check.answer import read_answer
from attncli.teach.check.compare import diagnose

R = np.random.default_rng(7)
N, D, H = 6, 12, 3  # d_k = d_v = 4
X = R.standard_normal((N, D))
W = {name: R.standard_normal((D, D)) / np.sqrt(D) for name in ("query", "key", "value", "output")}
B = {name: 0.1 * R.standard_normal(D) for name in ("query", "key", "value", "output")}
LAYER = {"inputs": X.tolist(), "heads": H, "mask": "causal", "weights": {k: v.tolist() for k, v in W.items()},
         "bias": {k: v.tolist() for k, v in B.items()}}
WITH_GRADIENT = {**LAYER, "gradient": R.standard_normal((N, D)).tolist()}  # (a candidate's gradients wait for a fit)
W_G = R.standard_normal((D, D))
GATED = {**LAYER, "weights": {**LAYER["weights"], "gate": W_G.tolist()}}  # Y = concat(H ⊙ σ(X·W_G))·W_O + b_O


def heads(scale: float = 0.5, rounding: float | None = None) -> np.ndarray:
    """concat(H₁ … H₃) (n, 12), a loop over heads: the causal softmax of scale·Q·Kᵀ (rounded), times V."""
    q, k, v = (X @ W[n] + B[n] for n in ("query", "key", "value"))
    out = []
    for h in range(H):
        c = slice(4 * h, 4 * h + 4)
        a = softmax(scale * q[:, c] @ k[:, c].T, np.tril(np.ones((N, N), bool)))
        out.append((a if rounding is None else np.round(a / rounding) * rounding) @ v[:, c])
    return np.concatenate(out, axis=1)


def scores() -> np.ndarray:
    """Q·Kᵀ per head (3, n, n), right: a number given before the pair's stages."""
    q, k = X @ W["query"] + B["query"], X @ W["key"] + B["key"]
    return np.stack([q[:, 4 * h:4 * h + 4] @ k[:, 4 * h:4 * h + 4].T for h in range(H)])


def weights(scale: float) -> np.ndarray:
    return np.stack([softmax(scale * s, np.tril(np.ones((N, N), bool))) for s in scores()])


def pair_cases():
    """(what the exhaustive search must name among the pairs, the answer)."""
    w_o, b_o = W["output"], B["output"]
    left_out = heads(1.0)  # the scale left out (1 for 1/√4)
    yield ("scale_left_out", "rounded_2"), {"output": r4(heads(1.0, 0.01) @ w_o + b_o)}
    yield ("scale_left_out", "rounded_2"), {"query": 5, "output": r4((heads(1.0, 0.01) @ w_o + b_o)[4])}
    yield ("scale_left_out", "w_o_left_out_b_o_kept"), {"output": r4(left_out + b_o)}
    yield ("scale_left_out", "bias_left_out"), {"output": r4(left_out @ w_o)}
    yield ("scale_left_out", "weights_as_wx"), {"output": r4(left_out @ w_o.T + b_o)}
    order = np.concatenate([left_out[:, 8:], left_out[:, 4:8], left_out[:, :4]], axis=1)
    yield ("scale_left_out", "heads_order"), {"output": r4(order @ w_o + b_o)}
    yield ("scale_left_out", "rounded_2"), {"scores": r4(scores()), "output": r4(heads(1.0, 0.01) @ w_o + b_o)}
    yield None, {"output": r4(heads() @ w_o + b_o + 0.3 * R.standard_normal((N, D)))}
    yield None, {"weights": r4(weights(1.0)), "output": r4(left_out @ w_o.T)}  # (no pair: W_Oᵀ and b_O left out)


def gated_cases():
    """On the gated layer (no sketch of the output there: the row of H ⊙ G is tried first)."""
    g = 1 / (1 + np.exp(-(X @ W_G)))  # (n, h·d_v), the heads' columns side by side as concat(H)'s
    w_o, b_o = W["output"], B["output"]
    yield ("scale_left_out", "rounded_2"), {"output": r4((heads(1.0, 0.01) * g) @ w_o + b_o)}
    left_out = heads(1.0) * g
    order = np.concatenate([left_out[:, 8:], left_out[:, 4:8], left_out[:, :4]], axis=1)
    yield ("scale_left_out", "heads_order"), {"output": r4(order @ w_o + b_o)}
    yield ("scale_left_out", "weights_as_wx"), {"query": 2, "output": r4((left_out @ w_o.T + b_o)[1])}
    yield None, {"output": r4((heads() * g) @ w_o + b_o + 0.3 * R.standard_normal((N, D)))}


def both_ways(doc: dict, raw: dict, monkeypatch) -> list[tuple]:
    """check run on the answer; each Search it makes also made exhaustively: [(singles, pairs) fast, exhaustive]."""
    spec = build_spec(Document(doc, "doc", Path(".")))
    trace = attend(spec)
    found, original = [], search.Search

    def twin(*args, **kwargs):
        fast, slow = original(*args, **kwargs), original(*args, **kwargs, _exhaustive=True)
        made = [(s.singles(), s.pairs()) for s in (fast, slow)]
        found.append(tuple(([c.names for c in singles], [c.names for c in pairs]) for singles, pairs in made))
        for mine, theirs in zip(made[0][0] + made[0][1], made[1][0] + made[1][1]):  # (the notes read every array)
            assert mine.names == theirs.names
            assert all(search.same(mine.arrays[key], theirs.arrays[key]) for key in search.ANSWERABLE), mine.names
        return fast

    monkeypatch.setattr(search, "Search", twin)
    diagnose(trace, read_answer(raw, trace, Path(".")))
    return found


@pytest.mark.parametrize("slip, doc, answer", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_every_declared_slip_the_same_both_ways(slip, doc, answer, monkeypatch):
    found = both_ways(doc, answer, monkeypatch)
    assert found, "no search was made"
    for fast, slow in found:
        assert fast == slow
    assert any((slip,) in slow[0] for _, slow in found), found  # (not two empty lists: the slip itself is found)


@pytest.mark.parametrize("slip", sorted(DIFFERENTIAL_SLIPS))
def test_differential_attentions_slips_the_same_both_ways(slip, monkeypatch):
    doc = yaml.safe_load((ROOT / "examples" / "differential.yaml").read_text())
    found = both_ways(doc, {"query": 2, "output": DIFFERENTIAL_SLIPS[slip]}, monkeypatch)
    assert found and all(fast == slow for fast, slow in found)
    assert any(slow[0] for _, slow in found), found  # (its slip found as a single)


@pytest.mark.parametrize("doc, kept", [(LAYER, True), (WITH_GRADIENT, True), (WITH_GRADIENT, False)],
                         ids=["layer", "with_gradient", "first_computed_again"])
@pytest.mark.parametrize("expected, answer", list(pair_cases()))
def test_pairs_the_same_both_ways(expected, answer, doc, kept, monkeypatch):
    if not kept:  # (a large layer's singles keep no arrays: a pair computes its first variant again)
        monkeypatch.setattr(search, "SMALL", 0)
    [(fast, slow)] = both_ways(doc, answer, monkeypatch)
    assert fast == slow
    if expected is None:
        assert slow == ([], [])
    else:
        assert slow[0] == [] and expected in slow[1], slow


@pytest.mark.parametrize("expected, answer", list(gated_cases()))
def test_pairs_the_same_both_ways_with_a_gate(expected, answer, monkeypatch):
    [(fast, slow)] = both_ways(GATED, answer, monkeypatch)
    assert fast == slow
    assert slow == ([], []) if expected is None else (slow[0] == [] and expected in slow[1]), slow


@pytest.mark.parametrize("doc", [LAYER, GATED], ids=["layer", "gated"])
def test_an_output_step_reads_its_own_row_of_h_only(doc):
    """The row probe's premise: the right output step, and each of its declared variants (and any variant's later
    output step), gives on one row of H (H ⊙ G, G) the same numbers as its row of the whole result."""
    spec = build_spec(Document(doc, "doc", Path(".")))
    a = arrays_of(attend(spec))
    stage = BY_NAME["output"]
    steps = [("right", lambda spec, a: stage.run(spec, a))]
    for variant in stage.variants:
        for case in variant.cases(spec):
            steps.append((case.get("name", variant.name), lambda spec, a, v=variant, p=case: v.apply(spec, a, p,
                                                                                                    stage.run)))
    for other in STAGES:
        for variant in other.variants:
            for name, fn in variant.later:
                if name == "output":
                    for case in variant.cases(spec):
                        steps.append((variant.name, lambda spec, a, f=fn, p=case: f(spec, a, p, stage.run)))
    assert len(steps) >= 6
    for name, step in steps:
        whole = step(spec, a)["output"]  # (n, d_out)
        for i in range(N):
            one = step(spec, probe.one_row(a, i, spec))["output"]
            assert one.shape == (1, whole.shape[1]), name
            np.testing.assert_allclose(one, whole[i:i + 1], rtol=1e-12, atol=1e-12, err_msg=name)
