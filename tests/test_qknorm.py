"""``qk_norm`` (Part 3): the queries and keys normalised per head or over the projection, before or after the rotation.

Compared with a loop over tokens, heads and numbers written here (RMSNorm and LayerNorm by their definitions, RoPE
pair by pair), and between the full and the streamed computation; ``--only`` stops before the attention; every wrong
shape or value is an error naming the key, and an overflowing row one naming the row.  (The real Hugging Face
modules: tests/test_qknorm_torch.py.)
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from stream_helpers import assert_same, spec_of
from stream_helpers import document as stream_document

import attncli
from attncli.cli import app
from attncli.core.errors import AttnError
from attncli.core.pipeline import attend_until, needs_no_attention

N, D_MODEL, H, G, D_K = 5, 6, 4, 2, 4


def document(seed: int = 0, **qk_norm) -> dict:
    """Four query heads on two K/V heads of d_k = 4, rope (θ = 100), causal; ``qk_norm`` as given."""
    rng = np.random.default_rng(seed)
    doc = {"inputs": rng.normal(size=(N, D_MODEL)).tolist(), "heads": H, "kv_heads": G, "mask": "causal",
           "rope": {"base": 100},
           "weights": {"query": rng.normal(size=(D_MODEL, H * D_K)).tolist(),
                       "key": rng.normal(size=(D_MODEL, G * D_K)).tolist(),
                       "value": rng.normal(size=(D_MODEL, G * D_K)).tolist(),
                       "output": rng.normal(size=(H * D_K, D_MODEL)).tolist()},
           "bias": {"query": rng.normal(size=H * D_K).tolist(), "key": rng.normal(size=G * D_K).tolist()}}
    if qk_norm:
        doc["qk_norm"] = qk_norm
    return doc


# ---------------------------------------------------------------- the loop


def norm_loop(row: list[float], gamma: list[float], beta: list[float], kind: str, eps: float) -> list[float]:
    width = len(row)
    mean = sum(row) / width if kind == "layer" else 0.0
    spread = sum((x - mean) ** 2 for x in row) / width
    return [g * (x - mean) / math.sqrt(spread + eps) + b for x, g, b in zip(row, gamma, beta)]


def rope_loop(row: list[float], p: float, base: float = 100.0) -> list[float]:
    half = len(row) // 2
    out = list(row)
    for i in range(half):
        angle = p * base ** (-2 * i / len(row))
        a, b = row[i], row[i + half]
        out[i], out[i + half] = a * math.cos(angle) - b * math.sin(angle), a * math.sin(angle) + b * math.cos(angle)
    return out


def side_parameters(qk: dict, name: str, side: str, heads: int, default: float) -> list[list[float]]:
    """γ or β of one side as one list per head (scope head) or one list for the whole row (projection)."""
    given = (qk.get(name) or {}).get(side)
    if qk.get("scope", "head") == "projection":
        return [list(given) if given is not None else [default] * (heads * D_K)]
    if given is None:
        return [[default] * D_K] * heads
    array = np.array(given, dtype=float)
    return [list(array)] * heads if array.ndim == 1 else [list(r) for r in array]


def normalized_loop(rows: np.ndarray, qk: dict, side: str, heads: int) -> list[list[list[float]]]:
    """rows (tokens, heads·d_k) -> per head, per token, the normalised d_k numbers."""
    kind = qk["kind"]
    eps = qk.get("eps", 1e-6 if kind == "rms" else 1e-5)
    gamma = side_parameters(qk, "gamma", side, heads, 1.0)
    beta = side_parameters(qk, "beta", side, heads, 0.0)
    out = [[None] * len(rows) for _ in range(heads)]
    for t, row in enumerate(rows):
        if qk.get("scope", "head") == "projection":
            whole = norm_loop(list(row), gamma[0], beta[0], kind, eps)
            for h in range(heads):
                out[h][t] = whole[h * D_K:(h + 1) * D_K]
        else:
            for h in range(heads):
                out[h][t] = norm_loop(list(row[h * D_K:(h + 1) * D_K]), gamma[h], beta[h], kind, eps)
    return out


def loop_reference(doc: dict) -> dict[str, np.ndarray]:
    """The layer token by token and head by head."""
    x = np.array(doc["inputs"])
    w = {k: np.array(v) for k, v in doc["weights"].items()}
    b = {k: np.array(doc["bias"].get(k, np.zeros(w[k].shape[1]))) for k in ("query", "key", "value")}
    qk = doc.get("qk_norm")  # None: the layer without the norm (a slip of check's tests)
    q, k, v = ((x @ w[name] + b[name]) for name in ("query", "key", "value"))
    turn = lambda per_head: [[rope_loop(r, t) for t, r in enumerate(head)] for head in per_head]  # noqa: E731
    split = lambda rows, heads: [[list(r[h * D_K:(h + 1) * D_K]) for r in rows] for h in range(heads)]  # noqa: E731
    if qk is None:
        q_hat, k_hat = split(q, H), split(k, G)
        q_last, k_last = turn(q_hat), turn(k_hat)
    elif qk.get("after_rope"):
        q_rot, k_rot = turn(split(q, H)), turn(split(k, G))
        flat = lambda per_head: np.concatenate([np.array(head) for head in per_head], axis=1)  # noqa: E731
        q_hat, k_hat = normalized_loop(flat(q_rot), qk, "query", H), normalized_loop(flat(k_rot), qk, "key", G)
        q_last, k_last = q_hat, k_hat
    else:
        q_hat, k_hat = normalized_loop(q, qk, "query", H), normalized_loop(k, qk, "key", G)
        q_last, k_last = turn(q_hat), turn(k_hat)
    heads = np.zeros((N, H * D_K))
    for h in range(H):
        kv = h // (H // G)
        for i in range(N):
            s = [sum(a * c for a, c in zip(q_last[h][i], k_last[kv][j])) / math.sqrt(D_K) for j in range(i + 1)]
            e = [math.exp(z - max(s)) for z in s]
            for t in range(D_K):
                heads[i, h * D_K + t] = sum(e[j] * v[j, kv * D_K + t] for j in range(i + 1)) / sum(e)
    return {"normalized_queries": np.array(q_hat), "normalized_keys": np.array(k_hat), "output": heads @ w["output"]}


RNG = np.random.default_rng(28)
CASES = {
    "rms, shared γ": dict(kind="rms", gamma={"query": RNG.normal(size=D_K).tolist(),
                                              "key": RNG.normal(size=D_K).tolist()}),
    "rms, γ per head": dict(kind="rms", gamma={"query": RNG.normal(size=(H, D_K)).tolist(),
                                               "key": RNG.normal(size=(G, D_K)).tolist()}, eps=0.01),
    "rms, projection": dict(kind="rms", scope="projection", gamma={"query": RNG.normal(size=H * D_K).tolist(),
                                                                   "key": RNG.normal(size=G * D_K).tolist()}),
    "layer, γ and β per head": dict(kind="layer", gamma={"query": RNG.normal(size=(H, D_K)).tolist()},
                                    beta={"query": RNG.normal(size=D_K).tolist(),
                                          "key": RNG.normal(size=(G, D_K)).tolist()}),
    "layer, projection": dict(kind="layer", scope="projection", beta={"key": RNG.normal(size=G * D_K).tolist()}),
    "rms after rope": dict(kind="rms", after_rope=True, eps=1e-5),
    "layer after rope, γ per head": dict(kind="layer", after_rope=True,
                                         gamma={"key": RNG.normal(size=(G, D_K)).tolist()}),
}


@pytest.mark.parametrize("case", CASES)
def test_equals_a_loop_over_tokens_and_heads(case):
    doc = document(1, **CASES[case])
    trace, expected = attncli.compute(doc), loop_reference(doc)
    for key, want in expected.items():
        np.testing.assert_allclose(getattr(trace, key), want, rtol=0, atol=1e-12 * max(1.0, np.abs(want).max()))
    plain = attncli.compute(document(1))
    assert not np.allclose(plain.output, trace.output)  # the norm changed the layer


def test_after_rope_normalises_the_rotated_queries_and_the_scores_see_them():
    trace = attncli.compute(document(2, kind="rms", after_rope=True))
    rms = np.sqrt(np.mean(trace.normalized_queries ** 2, axis=-1))
    np.testing.assert_allclose(rms, 1.0, atol=1e-5)  # γ = 1: every row of Q̂ has an RMS of 1 (up to ε)
    np.testing.assert_allclose(np.sqrt(np.mean(trace.queries_rotated ** 2, axis=-1)),
                               np.sqrt(np.mean(trace.queries ** 2, axis=-1)), rtol=1e-12)  # Q′ is rope's output
    k = np.repeat(trace.normalized_keys, H // G, axis=0)
    np.testing.assert_allclose(trace.scores, trace.normalized_queries @ k.transpose(0, 2, 1), rtol=1e-12)


def test_before_rope_the_rotation_turns_the_normalised_numbers():
    trace = attncli.compute(document(2, kind="rms"))
    norms = lambda a: np.linalg.norm(a, axis=-1)  # noqa: E731  (a rotation keeps each vector's length)
    np.testing.assert_allclose(norms(trace.queries_rotated), norms(trace.normalized_queries), rtol=1e-12)
    assert not np.allclose(norms(trace.queries_rotated), norms(trace.queries))


def test_without_rope_the_scores_see_the_normalised_numbers():
    doc = dict(document(3, kind="layer"), rope=None)
    trace = attncli.compute({k: v for k, v in doc.items() if v is not None})
    assert trace.queries_rotated is None
    k = np.repeat(trace.normalized_keys, H // G, axis=0)
    np.testing.assert_allclose(trace.scores, trace.normalized_queries @ k.transpose(0, 2, 1), rtol=1e-12)


@pytest.mark.parametrize("case", ["rms, γ per head", "layer, projection", "rms after rope"])
@pytest.mark.parametrize("context", [False, True])
def test_streamed_equals_full(case, context):
    doc = stream_document(5, n=37, m=29 if context else None, heads=4, kv_heads=2, d_k=4, mask="causal",
                          rope={"base": 100}, qk_norm=CASES[case])
    assert_same(spec_of(doc))


def test_without_qk_norm_nothing_changes():
    assert attncli.load(dict(document(4), qk_norm=False)).qk_norm is None
    np.testing.assert_array_equal(attncli.compute(dict(document(4), qk_norm=False)).output,
                                  attncli.compute(document(4)).output)
    assert attncli.compute(document(4)).normalized_queries is None


def test_only_normalized_queries_stops_before_the_attention(runner, tmp_path):
    spec = attncli.load(document(5, kind="rms"))
    assert needs_no_attention(["normalized_queries"]) and needs_no_attention(["normalized_keys"])
    trace = attend_until(spec, ["normalized_queries"])
    assert trace.scores is None and trace.weights is None and trace.head_outputs is None
    np.testing.assert_array_equal(trace.normalized_queries, attncli.compute(document(5, kind="rms")).normalized_queries)
    path = tmp_path / "qk.json"
    path.write_text(json.dumps(document(5, kind="rms", after_rope=True)))
    for name in ("normalized_queries", "Q̂", "Qhat"):
        result = runner.invoke(app, ["compute", str(path), "-f", "json", "--only", name])
        assert result.exit_code == 0, result.stderr
        data = json.loads(result.stdout)
        assert "normalized_queries" in data and "weights" not in data and "scores" not in data
        want = attncli.compute(document(5, kind="rms", after_rope=True)).normalized_queries
        np.testing.assert_allclose(np.array(data["normalized_queries"]), want, rtol=1e-15)


def test_tables_name_the_normalised_queries_and_keys(runner, tmp_path):
    path = tmp_path / "qk.json"
    path.write_text(json.dumps(document(6, kind="layer", scope="projection")))
    table = runner.invoke(app, ["compute", str(path)], env={"COLUMNS": "160"})
    assert table.exit_code == 0, table.stderr
    assert "Normalised queries" in table.stdout and "Q̂ = LayerNorm_projection(Q)" in table.stdout
    assert "Q′ = rope(Q̂)" in table.stdout and "S = Q′·K′ᵀ" in table.stdout
    path.write_text(json.dumps(document(6, kind="rms", after_rope=True)))
    table = runner.invoke(app, ["compute", str(path)], env={"COLUMNS": "160"})
    assert "K̂ = RMSNorm_head(K′)" in table.stdout and "S = Q̂·K̂ᵀ" in table.stdout
    latex = runner.invoke(app, ["compute", str(path), "-f", "latex", "--only", "normalized_keys"])
    assert r"\hat K^{[1]} = \operatorname{RMSNorm}_{\text{head}}({K^{[1]}}')" in latex.stdout


# ---------------------------------------------------------------- errors


BAD = [
    ({"kind": "rms", "gamma": {"query": [1.0] * 5}}, "qk_norm.gamma.query: has 5 numbers; expected d_k = 4 (shared "
     "by the heads) or heads × d_k = 4 × 4"),
    ({"kind": "rms", "gamma": {"key": [[1.0] * 4] * 4}}, "qk_norm.gamma.key: is 4×4; that is the queries' size; the "
     "keys take d_k = 4 (shared by the key/value heads) or kv_heads × d_k = 2 × 4"),
    ({"kind": "rms", "gamma": {"key": [[1.0] * 4] * 3}}, "qk_norm.gamma.key: is 3×4; expected kv_heads × d_k = 2 × 4 "
     "(a row per key/value head; or d_k = 4 numbers shared by them)"),
    ({"kind": "rms", "gamma": {"query": [1.0] * 16}}, "qk_norm.gamma.query: has 16 numbers; that is heads·d_k in one "
     "row: one γ per head is written heads × d_k = 4 × 4 (a row per query head), and one γ over a token's whole "
     "projection needs scope: projection"),
    ({"kind": "rms", "gamma": {"query": [1.0] * 12}}, "qk_norm.gamma.query: has 12 numbers; that is 3 × d_k: one γ per "
     "head is heads × d_k = 4 × 4 (a row per query head; or d_k = 4 shared by them)"),
    ({"kind": "layer", "beta": {"key": [0.0] * 16}}, "qk_norm.beta.key: has 16 numbers; that is the queries' size"),
    ({"kind": "rms", "scope": "projection", "gamma": {"query": [1.0] * 4}}, "qk_norm.gamma.query: has 4 numbers; "
     "expected heads·d_k = 4·4 = 16"),
    ({"kind": "layer", "beta": {"key": [0.0] * 3}}, "qk_norm.beta.key: has 3 numbers"),
    ({"kind": "rms", "beta": {"query": [0.0] * 4}}, "qk_norm.beta: is only used with kind: layer"),
    ({"gamma": {"query": [1.0] * 4}}, "qk_norm.kind: is required"),
    ({"kind": "l2"}, "qk_norm.kind: the string 'l2' is not one of rms, layer"),
    ({"kind": "rms", "scope": "token"}, "qk_norm.scope: the string 'token' is not one of head"),
    ({"kind": "rms", "eps": 0}, "qk_norm.eps: 0 is not a positive finite number"),
    ({"kind": "rms", "eps": "1e-6"}, "qk_norm.eps:"),
    ({"kind": "rms", "after_rope": "yes"}, "qk_norm.after_rope: the string 'yes' is not true or false"),
    ({"kind": "rms", "gamma": [1.0] * 4}, "qk_norm.gamma: expected a mapping with query and key"),
    ({"kind": "rms", "gamma": {"queries": [1.0] * 4}}, "qk_norm.gamma"),
    ({"kind": "rms", "axis": 1}, "qk_norm"),
    ("rms", "qk_norm: expected a mapping"),
]


@pytest.mark.parametrize("value, words", BAD)
def test_every_wrong_shape_or_value_is_refused(runner, tmp_path, value, words):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(dict(document(0), qk_norm=value)))
    result = runner.invoke(app, ["compute", str(path)])
    assert result.exit_code == 2 and result.stdout == ""
    assert words in result.stderr, result.stderr
    assert "Traceback" not in result.stderr and result.stderr.count("\n") == 1


@pytest.mark.parametrize("qk, where", [({"kind": "rms"}, "head 3, row 2 ('x2')"),
                                       ({"kind": "layer", "scope": "projection"}, "row 2 ('x2')")])
def test_a_row_whose_mean_square_overflows_is_named(qk, where):
    doc = document(7, **qk)
    doc["inputs"][1][0] = 1e200
    doc["weights"]["query"] = np.zeros((D_MODEL, H * D_K)).tolist()
    doc["weights"]["query"][0][2 * D_K] = 1.0  # only token 2 (x2) has a huge number, in head 3
    with pytest.raises(AttnError) as error:
        attncli.compute(doc)
    assert f"normalized queries overflow float64 at {where}" in str(error.value)
    assert "too large to normalise" in str(error.value)
