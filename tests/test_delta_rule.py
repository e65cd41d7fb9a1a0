"""The delta rule of a linear: document (docs/format.md Part 4), without torch: a hand-worked example of both
kinds, the chunked form against the recurrence and against the one-chunk algebra written with an inverse, the JSON
and --only through the command line, the state never kept with --only output, and bad documents (exit 2)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import yaml

from attncli.cli import app
from attncli.core import delta
from attncli.core.linear import run
from attncli.inputs.document import Document
from attncli.inputs.linear import read_linear

HALF = math.log(0.5)
# Three tokens, one head, d_k = 2, d_v = 1, no l2 norm and no scale, so that every number is worked by hand:
#   t1: S = 0;            u = 0.5·(2 − 0) = 1;  S = [1, 0]ᵀ;          o = Sᵀ[1, 0] = 1
#   t2: S ← 0.5·S = [0.5, 0]; u = 1·(4 − Sᵀ[0, 1]) = 4; S = [0.5, 4]; o = Sᵀ[1, 1] = 4.5
#   t3 (gated_delta, g = 0): u = 3 − Sᵀ[1, 0] = 2.5; S = [3, 4]; o = Sᵀ[0, 1] = 4
#   t3 (kda, g = [0, ln ½]): S ← [0.5, 2]; u = 2.5; S = [3, 2]; o = 2
HAND = dict(queries=[[[1, 0], [1, 1], [0, 1]]], keys=[[[1, 0], [0, 1], [1, 0]]], values=[[[2], [4], [3]]],
            beta=[[0.5, 1, 1]], l2norm=False, scale="none", chunk=2)
HAND_G = {"gated_delta": [[0, HALF, 0]], "kda": [[[0, 0], [HALF, HALF], [0, HALF]]]}
HAND_STATES = {"gated_delta": [[1, 0], [0.5, 4], [3, 4]], "kda": [[1, 0], [0.5, 4], [3, 2]]}
HAND_OUT = {"gated_delta": [1, 4.5, 4], "kda": [1, 4.5, 2]}


def assert_close(mine, expected, tol: float = 1e-12) -> None:
    mine, expected = np.asarray(mine, dtype=float), np.asarray(expected, dtype=float)
    assert mine.shape == expected.shape
    assert np.abs(mine - expected).max() <= tol * max(1.0, np.abs(expected).max())


def computed(linear: dict, keep_state: bool = True, **top):
    return run(read_linear(Document({**top, "linear": linear}, "<test>", Path("."))), keep_state=keep_state)


def compute_json(runner, tmp_path: Path, doc: dict, *args: str) -> dict:
    path = tmp_path / "doc.yaml"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    result = runner.invoke(app, ["compute", str(path), "--format", "json", *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.mark.parametrize("kind", ["gated_delta", "kda"])
def test_the_hand_worked_example(runner, tmp_path, kind):
    out = compute_json(runner, tmp_path, {"linear": {"kind": kind, **HAND, "g": HAND_G[kind]}})
    assert list(out) == ["tokens", "kind", "heads", "value_heads", "d_k", "d_v", "scale", "chunk", "queries",
                         "keys", "values", "beta", "g", "u", "state", "final_state", "head_outputs", "output"]
    assert (out["tokens"], out["kind"], out["heads"], out["d_k"], out["d_v"], out["scale"], out["chunk"]) == \
        (["q1", "q2", "q3"], kind, 1, 2, 1, 1.0, 2)
    assert_close(out["u"], [[[1], [4], [2.5]]])
    assert_close(out["state"], [[[[a], [b]] for a, b in HAND_STATES[kind]]])
    assert_close(out["final_state"], [[[a] for a in HAND_STATES[kind][-1]]])
    assert_close(out["head_outputs"], [[[o] for o in HAND_OUT[kind]]])
    assert_close(out["output"], [[o] for o in HAND_OUT[kind]])


def naive(q, k, v, beta, g, s0):
    """The recurrence as Python loops over one head's numbers (g per token, or per key channel)."""
    n, d_k, d_v = len(k), len(k[0]), len(v[0])
    s = [list(row) for row in s0]
    outs = []
    for t in range(n):
        decay = [math.exp(g[t][i] if isinstance(g[t], list) else g[t]) for i in range(d_k)]
        s = [[s[i][c] * decay[i] for c in range(d_v)] for i in range(d_k)]
        u = [beta[t] * (v[t][c] - sum(s[i][c] * k[t][i] for i in range(d_k))) for c in range(d_v)]
        s = [[s[i][c] + k[t][i] * u[c] for c in range(d_v)] for i in range(d_k)]
        outs.append([sum(s[i][c] * q[t][i] for i in range(d_k)) for c in range(d_v)])
    return outs, s


def random_rule(seed: int, h: int, n: int, per_channel: bool, d_k: int = 6, d_v: int = 4):
    rng = np.random.default_rng(seed)
    q, k = delta.l2norm(rng.normal(size=(h, n, d_k))) / math.sqrt(d_k), delta.l2norm(rng.normal(size=(h, n, d_k)))
    g = -np.exp(rng.normal(size=(h, n, d_k) if per_channel else (h, n)))
    return q, k, rng.normal(size=(h, n, d_v)), delta.sigmoid(rng.normal(size=(h, n))), g, rng.normal(size=(h, d_k, d_v))


@pytest.mark.parametrize("per_channel", [False, True])
@pytest.mark.parametrize("n, chunk", [(1, 64), (37, 8), (64, 64), (130, 64), (50, 1)])
def test_chunked_is_the_recurrence(per_channel, n, chunk):
    q, k, v, beta, g, s0 = random_rule(n + chunk, 3, n, per_channel)
    o, u, states, final = delta.recurrent(q, k, v, beta, g, s0)
    o2, u2, chunks, final2 = delta.chunked(q, k, v, beta, g, s0, chunk, keep_chunks=True)
    for mine, theirs in ((o2, o), (u2, u), (final2, final), (chunks[:, -1], final)):
        assert_close(mine, theirs)
    ends = [min(n, (c + 1) * chunk) - 1 for c in range(chunks.shape[1])]
    assert_close(chunks, states[:, ends])
    outs, last = naive(q[1].tolist(), k[1].tolist(), v[1].tolist(), beta[1].tolist(), g[1].tolist(), s0[1].tolist())
    assert_close(o[1], outs)
    assert_close(final[1], last)


@pytest.mark.parametrize("per_channel", [False, True])
def test_one_chunk_is_the_learners_algebra(per_channel):
    """U = TV and O = (QKᵀ∘Γ∘lower)U with T = (I + strictly-lower(diag β (KKᵀ∘Γ)))⁻¹ diag β, written out."""
    n = 9
    q, k, v, beta, g, _ = random_rule(3, 1, n, per_channel)
    q, k, v, beta, g = q[0], k[0], v[0], beta[0], g[0]
    big_g = np.cumsum(g if per_channel else g[:, None], axis=0)  # n × (d_k or 1)
    gamma = np.array([[np.exp(big_g[i] - big_g[j]) if j <= i else np.zeros(big_g.shape[1]) for j in range(n)]
                      for i in range(n)])  # n × n × (d_k or 1)
    kk = np.einsum("ic,jc,ijc->ij", k, k, np.broadcast_to(gamma, (n, n, k.shape[1])))
    qk = np.einsum("ic,jc,ijc->ij", q, k, np.broadcast_to(gamma, (n, n, k.shape[1])))
    t = np.linalg.inv(np.eye(n) + np.tril(np.diag(beta) @ kk, -1)) @ np.diag(beta)
    u = t @ v
    outs, _ = naive(q.tolist(), k.tolist(), v.tolist(), beta.tolist(), g.tolist(), np.zeros((6, 4)).tolist())
    assert_close(qk @ u, outs)
    o, u2, _, _ = delta.chunked(q[None], k[None], v[None], beta[None], g[None], None, chunk=n)
    assert_close(u2[0], u)


def test_value_heads_read_their_query_key_head():
    q, k, v, beta, g, s0 = random_rule(11, 2, 5, False)
    v4, beta4, g4 = (np.concatenate([x, x[::-1]]) for x in (v, beta, g))  # value heads 0, 1 | 2, 3 (swapped)
    doc = dict(kind="gated_delta", heads=2, value_heads=4, queries=q, keys=k, values=v4, beta=beta4, g=g4,
               l2norm=False, scale="none")
    trace = computed(doc)
    alone = [computed(dict(kind="gated_delta", queries=q[j:j + 1], keys=k[j:j + 1], values=v4[i:i + 1],
                           beta=beta4[i:i + 1], g=g4[i:i + 1], l2norm=False, scale="none"))
             for i, j in ((0, 0), (1, 0), (2, 1), (3, 1))]
    assert_close(trace["head_outputs"], np.concatenate([a["head_outputs"] for a in alone]))


def test_only_output_keeps_no_state_at_n_16384(runner, tmp_path, monkeypatch):
    """state would be 2 × 16384 × 32 × 32 float64 (268 MB): refused by the default result within 64 MB, and never
    made with --only output."""
    n, rng = 16384, np.random.default_rng(0)
    for name, shape in (("q", (2, n, 32)), ("k", (2, n, 32)), ("v", (2, n, 32)), ("b", (2, n)), ("g", (2, n))):
        np.save(tmp_path / f"{name}.npy", rng.random(shape) * (-0.1 if name == "g" else 1))
    doc = {"linear": dict(kind="gated_delta", queries="q.npy", keys="k.npy", values="v.npy", beta="b.npy",
                          g="g.npy")}
    path = tmp_path / "doc.yaml"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    monkeypatch.setenv("ATTNCLI_MEMORY", "64M")
    refused = runner.invoke(app, ["compute", str(path), "-o", str(tmp_path / "all.npz")])
    assert refused.exit_code == 2 and "state" in refused.stderr and "--only output" in refused.stderr
    assert not (tmp_path / "all.npz").exists()
    made = []
    monkeypatch.setattr(delta, "recurrent", lambda *a, **k: made.append(1))
    result = runner.invoke(app, ["compute", str(path), "--only", "output", "-o", str(tmp_path / "out.npz")])
    assert result.exit_code == 0, result.output
    assert not made
    assert list(np.load(tmp_path / "out.npz")) == ["output", "scale"]


def test_only_takes_the_formulas_names(runner, tmp_path):
    doc = {"linear": {"kind": "kda", **HAND, "g": HAND_G["kda"]}}
    out = compute_json(runner, tmp_path, doc, "--only", "S_n", "--only", "β", "--only", "chunk_states")
    assert list(out)[8:] == ["beta", "final_state", "chunk_states"]
    assert_close(out["chunk_states"], [[[[0.5], [4]], [[3], [2]]]])  # after tokens 2 and 3


def test_tables_show_each_head(runner, tmp_path):
    path = tmp_path / "doc.yaml"
    path.write_text(yaml.safe_dump({"linear": {"kind": "gated_delta", **HAND, "g": HAND_G["gated_delta"]}}))
    result = runner.invoke(app, ["compute", str(path), "--only", "state", "--only", "o", "-p", "2"])
    assert result.exit_code == 0, result.output
    assert "Head 1 · S after token q3" in result.stdout and "4.50" in result.stdout


GOOD = {"kind": "gated_delta", **HAND, "g": HAND_G["gated_delta"]}
BAD = [
    ({"linear": {**GOOD, "kind": "mamba"}}, "linear.kind", "gated_delta"),
    ({"linear": {**GOOD, "g": [[0, 0]]}}, "linear.g", "1×3"),
    ({"linear": {**GOOD, "values": [[[1], [2]]]}}, "linear.values", "n = 3"),
    ({"linear": {**GOOD, "chunk": 0}}, "linear.chunk", "≥ 1"),
    ({"linear": {**GOOD, "scale": None}}, "linear.scale", "scale: none"),
    ({"linear": {**GOOD, "conv": [[1, 2]]}}, "linear.conv", "used with them given directly"),
    ({"linear": {**GOOD, "wieghts": {}}}, "linear", "did you mean 'weights'"),
    ({"linear": {**GOOD, "g": [[0, 800, 0]]}}, "linear", "overflows"),
    ({"linear": GOOD, "mask": "causal"}, "mask", "not used with linear"),
    ({"inputs": [[1, 2]], "linear": {"kind": "kda"}}, "linear.weights.query", "required"),
    ({"inputs": [[1, 2]], "linear": {"kind": "kda", "heads": 2, "value_heads": 3}}, "linear.value_heads", "multiple"),
    ({"inputs": [[1, 2]], "linear": {"kind": "gated_delta", "weights": {"query": [[1], [0]], "key": [[1], [0]],
      "value": [[1], [0]], "beta": [[1], [0]], "decay": [[1, 0], [0, 1]]}, "A_log": [0]}}, "linear.weights.decay",
     "1 column"),
]


@pytest.mark.parametrize("doc, place, words", BAD)
def test_bad_documents_are_one_line_naming_the_key(runner, tmp_path, doc, place, words):
    path = tmp_path / "doc.yaml"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    result = runner.invoke(app, ["compute", str(path), "--format", "json"])
    assert result.exit_code == 2 and result.stdout == ""
    line = result.stderr.strip()
    assert "\n" not in line and "Traceback" not in line
    assert line.startswith(f"Error: {path}: {place}: ") and words in line, line


def test_other_commands_say_only_compute_computes_it(runner, tmp_path):
    path = tmp_path / "doc.yaml"
    path.write_text(yaml.safe_dump({"linear": GOOD}), encoding="utf-8")
    result = runner.invoke(app, ["card", str(path)])
    assert result.exit_code == 2 and "compute, explain, heatmap, page and check take" in result.stderr, result.output
    result = runner.invoke(app, ["check", str(path)])  # (check first asks for the answer it checks)
    assert result.exit_code == 2 and "answer:" in result.stderr


def test_an_error_in_chinese(runner, tmp_path, monkeypatch):
    path = tmp_path / "doc.yaml"
    path.write_text(yaml.safe_dump({"linear": {**GOOD, "kind": "mamba"}}), encoding="utf-8")
    result = runner.invoke(app, ["compute", str(path), "--lang", "zh"])
    assert result.exit_code == 2 and "不是线性注意力的一种" in result.stderr and "linear.kind" in result.stderr


@pytest.mark.parametrize("kind", ["gated_delta", "kda"])
def test_explain_writes_the_state_out_for_one_token(runner, tmp_path, kind):
    path = tmp_path / "doc.yaml"
    path.write_text(yaml.safe_dump({"linear": {"kind": kind, **HAND, "g": HAND_G[kind]}}), encoding="utf-8")
    result = runner.invoke(app, ["explain", str(path), "--query", "3", "--format", "json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert (out["query"], out["token"], out["head"]) == (3, "q3", 1)
    states = [line["state"] for line in out["steps"][0]["lines"] if line["state"] is not None]
    decayed = {"gated_delta": [[0.5], [4]], "kda": [[0.5], [2]]}[kind]
    # before, after the decay, k̂·uᵀ (u = 2.5 along k̂ = [1, 0]), after: the hand-worked numbers above
    for mine, expected in zip(states, [[[0.5], [4]], decayed, [[2.5], [0]], [[a] for a in HAND_STATES[kind][2]]]):
        assert_close(mine, expected)
    texts = " ".join(line["text"] for line in out["steps"][0]["lines"])
    assert "[2.5000]" in texts and f"o = Sᵀq̂ = [{HAND_OUT[kind][2]:.4f}]" in texts


def test_explain_in_chinese(runner, tmp_path):
    path = tmp_path / "doc.yaml"
    path.write_text(yaml.safe_dump({"linear": GOOD}), encoding="utf-8")
    result = runner.invoke(app, ["explain", str(path), "--lang", "zh"])
    assert result.exit_code == 0, result.output
    assert "衰减" in result.stdout and "词元 2 之后的 S" in result.stdout


@pytest.mark.parametrize("kind", ["gated_delta", "kda"])
def test_gradients_are_central_differences_of_the_naive_loop(kind):
    """linear.gradient without torch: each gradient against (L(x + h) − L(x − h)) / 2h of the Python loop above."""
    q, k, v, beta, g, s0 = random_rule(21, 1, 4, kind == "kda", d_k=3, d_v=2)
    seed = np.random.default_rng(5).normal(size=v.shape)
    arrays = dict(queries=q, keys=k, values=v, beta=beta, g=g, initial_state=s0)
    trace = computed(dict(kind=kind, **arrays, l2norm=False, scale="none", gradient=seed))

    def loss(changed: dict) -> float:
        a = {**arrays, **changed}
        outs, _ = naive(*(a[key][0].tolist() for key in ("queries", "keys", "values", "beta", "g", "initial_state")))
        return float(np.sum(np.array(outs) * seed[0]))

    for key, grad in (("queries", "grad_queries"), ("keys", "grad_keys"), ("values", "grad_values"),
                      ("beta", "grad_beta"), ("g", "grad_g"), ("initial_state", "grad_initial_state")):
        numeric = np.zeros_like(arrays[key])
        for index in np.ndindex(arrays[key].shape):
            up, down = arrays[key].copy(), arrays[key].copy()
            up[index] += 1e-6
            down[index] -= 1e-6
            numeric[index] = (loss({key: up}) - loss({key: down})) / 2e-6
        assert_close(trace[grad], numeric, 1e-7)
