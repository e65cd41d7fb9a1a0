"""Masks and score biases (issue 16) against a naive reference written from the contract's words.

The reference below reads Part 2 of FORMAT.md ("Additive score bias", "Masks as PyTorch users write them") and
nothing of attncli: each cell (head, query i, key j) is decided by a Python loop, the ALiBi slopes come from the
paper's ``get_slopes`` (start · ratioᵏ, not 2^(−8k/h)), T5's bucket is written from HF's description of
``_relative_position_bucket`` with Python ints and float32 scalars.  Hypothesis draws small random documents with
every combination of the parts; the Q, K and V the reference starts from are numpy products (not under test).

Also: ``weights == softmax(scaled_scores)`` over the allowed keys for every document; the streamed computation
(``attend_streamed``, blocks of a few rows forced) equals the full one to 1e-12 with kv_heads, rope, softcap,
additive scores and ``normalize: sum``; fully masked rows; the JSON's nulls; the error paths, table-driven.
"""

from __future__ import annotations

import json
import math
from contextlib import contextmanager
from dataclasses import dataclass, field
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from stream_helpers import assert_equal_traces, same_error

import attncli
from attncli.cli import app
from attncli.core import stream
from attncli.core.errors import AttnError
from attncli.core.pipeline import attend
from attncli.core.stream import attend_streamed

BLOCKED = -np.inf  # a score bias cell that masks its key
TOL = 1e-12


# ---------------------------------------------------------------- the reference, from the contract's words


def paper_slopes(h: int) -> list[float]:
    """ALiBi's get_slopes (Press et al., 2022): a geometric sequence from 2^(−8/h) for a power of two; otherwise the
    nearest lower power of two's slopes followed by every other slope of twice that many heads."""

    def power_of_two(k: int) -> list[float]:
        start = 2 ** (-(2 ** -(math.log2(k) - 3)))
        return [start * start**i for i in range(k)]

    if math.log2(h).is_integer():
        return power_of_two(h)
    p = 2 ** math.floor(math.log2(h))
    return power_of_two(p) + paper_slopes(2 * p)[0::2][: h - p]


def t5_bucket(distance: int, bidirectional: bool, buckets: int, max_distance: int) -> int:
    """T5's _relative_position_bucket of memory − context position: half the buckets for each sign when
    bidirectional (the positive half shifted up), else only keys before the query count (later ones are 0); below
    max_exact = buckets // 2 one bucket per distance, above it logarithmic bins up to max_distance, computed as
    ``max_exact + log(d / max_exact) / log(max_distance / max_exact) · (buckets − max_exact)`` in float32 and
    truncated to an integer, at most buckets − 1."""
    f32 = np.float32
    bucket = 0
    if bidirectional:
        buckets //= 2
        if distance > 0:
            bucket += buckets
        distance = abs(distance)
    else:
        distance = max(-distance, 0)
    exact = buckets // 2
    if distance < exact:
        return bucket + distance
    ratio = f32(np.log(f32(f32(distance) / f32(exact)))) / f32(math.log(max_distance / exact))
    large = exact + int(f32(ratio * f32(buckets - exact)))
    return bucket + min(large, buckets - 1)


def _cell(matrix, hh: int, i: int, j: int):
    matrix = np.asarray(matrix)
    return matrix[hh, i, j] if matrix.ndim == 3 else matrix[i, j]


def reference_allowed(doc: dict, h: int, n: int, m: int) -> np.ndarray:
    """(h, n, m) True where the contract lets query i see key j in head hh."""
    mask = doc.get("mask", "none")
    bias_matrix = (doc.get("score_bias") or {}).get("matrix")
    allowed = np.ones((h, n, m), dtype=bool)
    for hh in range(h):
        for i in range(n):
            for j in range(m):
                ok = True
                if isinstance(mask, str) and mask == "causal":
                    ok = j <= i  # upper-left, as is_causal
                elif isinstance(mask, (list, np.ndarray)):
                    ok = bool(_cell(mask, hh, i, j))
                elif isinstance(mask, dict):
                    kind = {True: "upper_left", "upper_left": "upper_left", "lower_right": "lower_right"}.get(
                        mask.get("causal"))
                    i_prime = i + (m - n) if kind == "lower_right" else i
                    if kind is not None:
                        ok = ok and j <= i_prime
                    window = mask.get("window")
                    if window is not None:
                        ok = ok and (i_prime - window < j if kind is not None else abs(i - j) < window)
                    block = mask.get("convention") == "block"
                    if mask.get("keys") is not None:
                        ok = ok and bool(mask["keys"][j]) != block
                    if mask.get("matrix") is not None:
                        ok = ok and bool(_cell(mask["matrix"], hh, i, j)) != block
                if bias_matrix is not None and _cell(bias_matrix, hh, i, j) == -np.inf:
                    ok = False
                allowed[hh, i, j] = ok
    return allowed


def reference_bias(doc: dict, h: int, p_q: list, p_k: list) -> np.ndarray:
    """B (h, n, m): the sum of the score bias's parts, −inf where the matrix has it."""
    part = doc.get("score_bias") or {}
    n, m = len(p_q), len(p_k)
    alibi = part.get("alibi")
    slopes = None if alibi is None else (paper_slopes(h) if alibi is True else list(alibi["slopes"]))
    rel = part.get("relative")
    b = np.zeros((h, n, m))
    for hh in range(h):
        for i in range(n):
            for j in range(m):
                total = 0.0
                if part.get("matrix") is not None:
                    total += float(_cell(part["matrix"], hh, i, j))
                if slopes is not None:
                    total += slopes[hh] * (p_k[j] - p_q[i])
                if rel is not None:
                    bucket = t5_bucket(int(p_k[j] - p_q[i]), rel.get("bidirectional", True), rel.get("buckets", 32),
                                       rel.get("max_distance", 128))
                    total += float(np.asarray(rel["table"])[bucket, hh])
                b[hh, i, j] = total
    return b


def positions_of(doc: dict, n: int, m: int) -> tuple[list, list]:
    p_q = list(doc["positions"]) if "positions" in doc else list(range(n))
    if "context_positions" in doc:
        return p_q, list(doc["context_positions"])
    return p_q, (list(range(m)) if "context" in doc else p_q)


def reference(doc: dict) -> dict:
    """Every masked-attention key of a document without rope: B, the allowed cells, Z, A, H."""
    x = np.asarray(doc["inputs"], dtype=float)
    c = np.asarray(doc.get("context", x), dtype=float)
    h, g = doc["heads"], doc.get("kv_heads", doc["heads"])
    w = doc["weights"]
    split = lambda t, heads: t.reshape(t.shape[0], heads, -1).transpose(1, 0, 2)  # noqa: E731
    q, k, v = (split(x @ np.asarray(w["query"]), h), split(c @ np.asarray(w["key"]), g),
               split(c @ np.asarray(w["value"]), g))
    n, m, d_k = x.shape[0], c.shape[0], q.shape[2]
    p_q, p_k = positions_of(doc, n, m)
    bias = reference_bias(doc, h, p_q, p_k)
    allowed = reference_allowed(doc, h, n, m)
    cap = doc.get("softcap")
    z = np.zeros((h, n, m))
    a = np.zeros((h, n, m))
    for hh in range(h):
        kv = hh // (h // g)
        for i in range(n):
            for j in range(m):
                s = float(np.dot(q[hh, i], k[kv, j])) / math.sqrt(d_k)
                s = cap * math.tanh(s / cap) if cap else s
                z[hh, i, j] = s + (bias[hh, i, j] if np.isfinite(bias[hh, i, j]) else 0.0)
            seen = [j for j in range(m) if allowed[hh, i, j]]
            if seen:
                top = max(z[hh, i, j] for j in seen)
                e = {j: math.exp(z[hh, i, j] - top) for j in seen}
                total = sum(e.values())
                for j in seen:
                    a[hh, i, j] = e[j] / total
    heads = np.stack([a[hh] @ v[hh // (h // g)] for hh in range(h)])
    empty = tuple(i for i in range(n) if not allowed[:, i].any(axis=-1).all())
    return {"score_bias": bias, "allowed": allowed, "scaled_scores": z, "weights": a, "head_outputs": heads,
            "output": heads.transpose(1, 0, 2).reshape(n, -1), "empty": empty}


# ---------------------------------------------------------------- the reference's own checks


def test_paper_slopes_are_the_contracts_formula():
    assert paper_slopes(8) == pytest.approx([2 ** (-k) for k in range(1, 9)], rel=1e-15)
    assert paper_slopes(4) == pytest.approx([0.25, 0.0625, 0.015625, 0.00390625], rel=1e-15)
    six = paper_slopes(6)  # 4 of 2^(−8k/4), then 2^(−4/4·1), 2^(−4/4·3)
    assert six == pytest.approx([2**-2, 2**-4, 2**-6, 2**-8, 2**-1, 2**-3], rel=1e-15)


def test_t5_bucket_by_hand():
    # bidirectional, 32 buckets: 16 per sign, 8 exact; distance 3 → 3, −3 → 3, +3 → 16 + 3
    assert [t5_bucket(d, True, 32, 128) for d in (0, -3, 3, -7, 7, -8)] == [0, 3, 19, 7, 23, 8]
    assert t5_bucket(-10_000, True, 32, 128) == 15 and t5_bucket(10_000, True, 32, 128) == 31
    # unidirectional: later keys (distance > 0) are bucket 0; 16 exact buckets
    assert [t5_bucket(d, False, 32, 128) for d in (5, 0, -1, -15, -16, -10_000)] == [0, 0, 1, 15, 16, 31]


@pytest.mark.parametrize("bidirectional", [True, False])
@pytest.mark.parametrize("buckets, max_distance", [(32, 128), (8, 20), (6, 7), (16, 17), (33, 1000), (4, 3)])
def test_t5_bucket_of_every_distance(bidirectional, buckets, max_distance):
    exact = (buckets // 2 if bidirectional else buckets) // 2
    if exact < 1 or max_distance <= exact:
        pytest.skip("no logarithmic buckets: refused by attncli")
    from attncli.core.bias import relative_bucket

    distances = np.arange(-2 * max_distance - 5, 2 * max_distance + 6)
    want = [t5_bucket(int(d), bidirectional, buckets, max_distance) for d in distances]
    assert relative_bucket(distances, bidirectional, buckets, max_distance).tolist() == want


@pytest.mark.parametrize("h", range(1, 33))
def test_default_slopes(h):
    got = attncli.compute({"inputs": [[1.0] * h], "heads": h, "score_bias": {"alibi": True},
                           "positions": [0], "context": [[0.0] * h, [1.0] * h], "context_positions": [0, 1]})
    assert np.abs(got.score_bias[:, 0, 1] - paper_slopes(h)).max() <= 1e-15


# ---------------------------------------------------------------- documents drawn by hypothesis


@st.composite
def documents(draw, n_max: int = 6, extras: bool = False) -> dict:
    """A small document with any combination of mask parts and score bias parts (and, with ``extras``, kv_heads,
    rope, softcap, additive scores or normalize: sum)."""
    n = draw(st.integers(1, n_max))
    cross = draw(st.booleans())
    m = draw(st.integers(1, n_max)) if cross else n
    h = draw(st.sampled_from([1, 2, 3, 4]))
    g = draw(st.sampled_from([d for d in range(1, h + 1) if h % d == 0])) if extras else h
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    size = draw(st.sampled_from([0.3, 1.0, 1.0, 20.0]))  # 20: scores in the hundreds, exp needs the row max
    d_model, d_k, d_v = 4, 2, 3
    doc: dict = {"inputs": size * rng.normal(size=(n, d_model)), "heads": h,
                 "weights": {"query": rng.normal(size=(d_model, h * d_k)), "key": rng.normal(size=(d_model, g * d_k)),
                             "value": rng.normal(size=(d_model, g * d_v))}}
    if g != h:
        doc["kv_heads"] = g
    if cross:
        doc["context"] = size * rng.normal(size=(m, d_model))
    mask = draw_mask(draw, rng, h, n, m)
    if mask is not None:
        doc["mask"] = mask
    bias, whole = draw_score_bias(draw, rng, h, n, m)
    if bias:
        doc["score_bias"] = bias
    draw_positions(draw, rng, doc, n, m, cross, whole)
    if extras:
        draw_extra(draw, rng, doc, d_k)
    elif draw(st.booleans()):
        doc["softcap"] = draw(st.sampled_from([0.5, 3.0, 50.0]))
    return doc


def given_as(draw, allowed: np.ndarray):
    """A boolean mask as numpy gives it (the Python API takes that) or as a list of 0 and 1."""
    return allowed if draw(st.booleans()) else allowed.astype(int).tolist()


def draw_mask(draw, rng: np.random.Generator, h: int, n: int, m: int):
    """No mask, causal, a matrix (per head or shared), or the mask's parts."""
    form = draw(st.sampled_from(["none", "causal", "matrix", "parts", "parts", "parts"]))
    if form == "causal":
        return "causal"
    if form == "matrix":
        return given_as(draw, rng.random((h, n, m) if draw(st.booleans()) else (n, m)) < 0.7)
    return draw_mask_parts(draw, rng, h, n, m) if form == "parts" else None


def draw_mask_parts(draw, rng: np.random.Generator, h: int, n: int, m: int) -> dict:
    """Any of causal, window, keys, matrix and convention; causal when none of them would mask."""
    mask: dict = {}
    causal = draw(st.sampled_from([None, True, "upper_left", "lower_right", False]))
    if causal is not None:
        mask["causal"] = causal
    if draw(st.booleans()):
        mask["window"] = draw(st.integers(1, m + 1))
    if draw(st.booleans()):
        mask["keys"] = given_as(draw, rng.random(m) < 0.75)
    if draw(st.booleans()):
        mask["matrix"] = given_as(draw, rng.random((h, n, m) if draw(st.booleans()) else (n, m)) < 0.8)
    if draw(st.booleans()):
        mask["convention"] = draw(st.sampled_from(["allow", "block"]))
    if all(mask.get(part) is None or mask.get(part) is False for part in ("causal", "window", "keys", "matrix")):
        mask["causal"] = True
    return mask


def draw_score_bias(draw, rng: np.random.Generator, h: int, n: int, m: int) -> tuple[dict, bool]:
    """Any of a bias matrix (some cells −inf), ALiBi and T5's relative bias; and whether positions are whole
    numbers (T5's buckets need them)."""
    bias: dict = {}
    if draw(st.booleans()):
        matrix = rng.normal(size=(h, n, m) if draw(st.booleans()) else (n, m))
        matrix[rng.random(matrix.shape) < 0.15] = BLOCKED
        bias["matrix"] = matrix
    alibi = draw(st.sampled_from([None, True, "slopes"]))
    if alibi == "slopes":
        bias["alibi"] = {"slopes": rng.uniform(-1, 1, size=h).tolist()}
    elif alibi:
        bias["alibi"] = True
    whole = True
    if draw(st.booleans()):
        bidirectional = draw(st.booleans())
        buckets = draw(st.sampled_from([4, 6, 8, 9, 16, 32]))
        exact = (buckets // 2 if bidirectional else buckets) // 2
        relative = {"table": rng.normal(size=(buckets, h)).tolist(), "buckets": buckets,
                    "max_distance": draw(st.integers(exact + 1, exact + 12)), "bidirectional": bidirectional}
        bias["relative"] = relative
    else:
        whole = draw(st.booleans())
    return bias, whole


def draw_positions(draw, rng: np.random.Generator, doc: dict, n: int, m: int, cross: bool, whole: bool) -> None:
    """positions and context_positions, each maybe: offset, gaps, any order; whole numbers for T5's buckets."""
    if draw(st.booleans()):
        doc["positions"] = (rng.integers(-20, 40, size=n) if whole else rng.uniform(-20, 40, size=n)).tolist()
    if draw(st.booleans()) and (cross or "positions" not in doc or draw(st.booleans())):
        doc["context_positions"] = (rng.integers(-20, 40, size=m) if whole else rng.uniform(-20, 40, size=m)).tolist()


def draw_extra(draw, rng: np.random.Generator, doc: dict, d_k: int) -> None:
    """Nothing, rope, a soft cap, additive scores or normalize: sum."""
    extra = draw(st.sampled_from(["none", "rope", "softcap", "additive", "sum"]))
    if extra == "rope":
        doc["rope"] = True
    elif extra == "softcap":
        doc["softcap"] = draw(st.sampled_from([0.5, 3.0, 50.0]))
    elif extra == "additive":
        doc["score"] = "additive"
        doc["weights"].update(w1=rng.normal(size=(d_k, 3)), w2=rng.normal(size=(d_k, 3)), v=rng.normal(size=3))
    elif extra == "sum":
        doc["normalize"] = "sum"


def softmax_over(z: np.ndarray, allowed: np.ndarray) -> np.ndarray:
    """Row softmax over the allowed cells (masked 0; a row with none allowed all 0)."""
    out = np.zeros_like(z)
    for index in np.ndindex(z.shape[:-1]):
        keep = allowed[index]
        if keep.any():
            e = np.exp(z[index][keep] - z[index][keep].max())
            out[index][keep] = e / e.sum()
    return out


@pytest.mark.slow  # a property suite (300 documents)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents())
def test_every_combination_against_the_reference(doc):
    want = reference(doc)
    trace = attncli.compute(doc)
    allowed = want["allowed"]
    assert np.array_equal(trace.spec.allowed if trace.spec.allowed is not None else np.ones_like(allowed), allowed)
    if "score_bias" in doc:
        got = trace.score_bias
        assert np.array_equal(np.isneginf(got), np.isneginf(want["score_bias"]))
        finite = np.isfinite(want["score_bias"])
        assert np.abs(got[finite] - want["score_bias"][finite]).max(initial=0) <= TOL
    else:
        assert trace.score_bias is None
    assert np.abs(trace.scaled_scores[allowed] - want["scaled_scores"][allowed]).max(initial=0) <= 1e-9
    assert np.abs(trace.weights - want["weights"]).max() <= 1e-9
    assert np.all(trace.weights[~allowed] == 0)
    assert np.abs(trace.head_outputs - want["head_outputs"]).max() <= 1e-9
    assert trace.empty_queries == want["empty"]
    # weights = softmax(scaled_scores) over the allowed keys, from the Trace's own numbers
    assert np.abs(trace.weights - softmax_over(trace.scaled_scores, allowed)).max() <= TOL


@contextmanager
def blocks_of(rows: int):
    """The streamed computation in blocks of ``rows`` queries (the fast path's least is 16 otherwise)."""
    with mock.patch.object(stream, "fast_rows", lambda spec: min(rows, spec.n)), \
         mock.patch.object(stream, "generic_rows", lambda spec: min(rows, spec.n)):
        yield




@pytest.mark.slow  # a property suite (300 documents)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents(n_max=9, extras=True), st.integers(1, 4), st.sampled_from([1, 2]))
def test_streamed_equals_full(doc, rows, threads):
    spec = attncli.load(doc)
    try:
        full = attend(spec)
    except AttnError as e:  # normalize: sum whose allowed scores sum to 0 (or overflow): the same error streamed
        with blocks_of(rows), pytest.raises(AttnError) as streamed_error:
            attend_streamed(spec, threads=threads)
        assert streamed_error.value.message == e.message
        return
    with blocks_of(rows):
        streamed = attend_streamed(spec, threads=threads)
    assert_equal_traces(full, streamed)
    if spec.normalize == "softmax":
        allowed = spec.allowed if spec.allowed is not None else np.ones(full.weights.shape, dtype=bool)
        assert np.abs(full.weights - softmax_over(full.scaled_scores, allowed)).max() <= TOL


# -------------------------------------------------------------- through the command line: warnings and the JSON's nulls

X = "inputs: [[1, 0, 1, 0], [0, 2, 0, 2], [1, 1, 1, 1]]\n"  # n = 3, d_model = 4
CONTEXT = "context: [[1, 0, 0, 1], [0, 1, 1, 0]]\ntokens: [a, b, c]\n"  # m = 2


def run_json(runner, tmp_path, text: str, *args: str) -> tuple[dict, str]:
    (tmp_path / "doc.yaml").write_text(text, encoding="utf-8")
    result = runner.invoke(app, ["compute", str(tmp_path / "doc.yaml"), "--format", "json", *args])
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout), result.stderr


@pytest.mark.parametrize("only", [[], ["--only", "output", "--only", "head_outputs"]], ids=["full", "streamed"])
def test_fully_masked_rows_are_zero_with_a_warning_naming_the_query(runner, tmp_path, only):
    # lower-right with n = 3 > m = 2: query 0 sees no key (j ≤ i − 1), query 1 sees key 0, query 2 both
    got, stderr = run_json(runner, tmp_path, X + CONTEXT + "mask: {causal: lower_right}\n", *only)
    assert stderr == ("Warning: query 1 ('a') may attend to no key (its mask row is all 0); its weights and head "
                      "output are 0\n")
    assert got["head_outputs"][0][0] == [0.0] * len(got["head_outputs"][0][0])
    assert got["output"][0] == [0.0] * len(got["output"][0])
    if not only:
        assert got["weights"][0] == [[0.0, 0.0], [1.0, 0.0], got["weights"][0][2]]
        assert got["scaled_scores"][0][0] == [None, None] and got["scaled_scores"][0][1][1] is None
        assert None not in got["scaled_scores"][0][2]


def test_score_bias_in_json_and_null_scaled_scores_where_masked(runner, tmp_path):
    text = X + ("heads: 1\nmask: {causal: true}\n"
                "score_bias: {matrix: [[0.5, 1, 2], [0, -1, 3], [1, 1, 1]], alibi: true}\n")
    got, _ = run_json(runner, tmp_path, text)
    slope = paper_slopes(1)[0]
    want = np.array([[0.5, 1, 2], [0, -1, 3], [1, 1, 1]]) + slope * (np.arange(3)[None, :] - np.arange(3)[:, None])
    assert np.array_equal(np.array(got["score_bias"][0]), want)  # masked by the mask, the bias is still a number
    z = got["scaled_scores"][0]
    assert [[cell is None for cell in row] for row in z] == [[False, True, True], [False, False, True], [False] * 3]
    scores = np.array(got["scores"][0])
    assert z[2] == list(scores[2] / 2 + want[2])  # scale 1/√4, then + B


BIAS_WITH_MINUS_INF = {  # the same 3 × 3 bias written as each reader takes it; cell (0, 1) masks
    "yaml": "score_bias: {matrix: [[0, -.inf, 1], [0, 0, 0], [2, 0, 0]]}\n",
    "json-string": 'score_bias: {matrix: [[0, "-inf", 1], [0, 0, 0], [2, 0, 0]]}\n',
    "csv": "score_bias: {matrix: bias.csv}\n",
    "npy": "score_bias: {matrix: bias.npy}\n",
}


@pytest.mark.parametrize("how", BIAS_WITH_MINUS_INF)
@pytest.mark.parametrize("only", [[], ["--only", "output"]], ids=["full", "streamed"])
def test_minus_inf_bias_masks_its_key(runner, tmp_path, how, only):
    bias = np.array([[0, -np.inf, 1], [0, 0, 0], [2, 0, 0]])
    (tmp_path / "bias.csv").write_text("0,-inf,1\n0,0,0\n2,0,0\n")
    np.save(tmp_path / "bias.npy", bias)
    got, stderr = run_json(runner, tmp_path, X + "heads: 1\n" + BIAS_WITH_MINUS_INF[how], *only)
    plain, _ = run_json(runner, tmp_path, X + "heads: 1\nscore_bias: {matrix: [[0, 0, 1], [0, 0, 0], [2, 0, 0]]}\n"
                        "mask: [[1, 0, 1], [1, 1, 1], [1, 1, 1]]\n", *only)
    assert stderr == ""
    assert got["output"] == plain["output"]  # −inf masks exactly as a 0 in mask does
    if not only:
        assert got["score_bias"][0][0] == [0.0, None, 1.0] and got["scaled_scores"][0][0][1] is None
        assert got["weights"][0][0][1] == 0.0 and got["weights"] == plain["weights"]


def test_a_row_masked_by_minus_inf_alone_warns(runner, tmp_path):
    got, stderr = run_json(runner, tmp_path,
                           X + "score_bias: {matrix: [[0, 0, 0], [-.inf, -.inf, -.inf], [0, 0, 0]]}\n")
    assert "query 2 ('x2') may attend to no key" in stderr
    assert got["weights"][0][1] == [0.0, 0.0, 0.0] and got["scaled_scores"][0][1] == [None] * 3


def test_causal_word_and_mapping_agree_when_n_differs_from_m(runner, tmp_path):
    word, _ = run_json(runner, tmp_path, X + CONTEXT + "mask: causal\n")
    parts, _ = run_json(runner, tmp_path, X + CONTEXT + "mask: {causal: true}\n")
    upper, _ = run_json(runner, tmp_path, X + CONTEXT + "mask: {causal: upper_left}\n")
    assert word == parts == upper
    assert [row[1] == 0.0 for row in word["weights"][0]] == [True, False, False]  # query 0 sees key 0 only


# ---------------------------------------------------------------- bad masks and biases: exit 2, one line naming the key


@dataclass
class Case:
    id: str
    doc: str  # after X (n = 3, d_model = 4) and heads: 2
    names: list[str]  # what the one line must contain
    files: dict[str, bytes] = field(default_factory=dict)


TABLE = "{random: normal, shape: [32, 2]}"
CASES = [
    Case("empty-mapping", "mask: {}\n", ["mask:", "gives none of causal, window, keys, matrix"]),
    Case("only-false", "mask: {causal: false}\n", ["mask:", "gives none of"]),
    Case("unknown-part", "mask: {casual: true}\n", ["mask:", "unknown key 'casual'", "did you mean 'causal'"]),
    Case("window-zero", "mask: {window: 0}\n", ["mask.window:", "0 is not a whole number ≥ 1"]),
    Case("window-negative", "mask: {window: -1}\n", ["mask.window:", "-1 is not a whole number"]),
    Case("window-fraction", "mask: {window: 1.5}\n", ["mask.window:", "1.5 is not a whole number"]),
    Case("window-boolean", "mask: {window: true}\n", ["mask.window:", "true is not a whole number"]),
    Case("causal-word", "mask: {causal: lower-right}\n",
         ["mask.causal:", "'lower-right'", "upper_left or lower_right"]),
    Case("keys-length", "mask: {keys: [1, 0]}\n", ["mask.keys:", "3 keys"]),
    Case("keys-value", "mask: {keys: [1, 0.5, 1]}\n", ["mask.keys:", "entry 2", "0.5 is not a mask value"]),
    Case("matrix-heads", "mask: {matrix: m.npy}\n", ["mask.matrix:", "3×3×3", "2×3×3 (one per head)"],
         files={"m.npy": np.ones((3, 3, 3), dtype=bool)}),
    Case("matrix-cell", "mask: {matrix: [[1, 0, 2], [1, 1, 1], [1, 1, 1]]}\n", ["mask.matrix:", "row 1, column 3"]),
    Case("convention-typo", "mask: {keys: [1, 1, 0], convention: blocked}\n",
         ["mask.convention:", "'blocked'", "allow", "block"]),
    Case("mask-random", "mask: {random: normal}\n", ["mask:", "cannot be random"]),
    Case("bias-unknown-part", "score_bias: {alibii: true}\n", ["score_bias:", "did you mean 'alibi'"]),
    Case("bias-not-mapping", "score_bias: true\n", ["score_bias:", "matrix, alibi, relative"]),
    Case("bias-matrix-shape", "score_bias: {matrix: [[1, 2], [3, 4]]}\n", ["score_bias.matrix:", "2×2", "3×3"]),
    Case("bias-plus-inf", "score_bias: {matrix: [[0, .inf, 0], [0, 0, 0], [0, 0, 0]]}\n",
         ["score_bias.matrix:", "row 1, column 2", "inf"]),
    Case("bias-nan", "score_bias: {matrix: [[0, 0, 0], [0, 0, .nan], [0, 0, 0]]}\n",
         ["score_bias.matrix:", "row 2, column 3", "nan"]),
    Case("bias-npy-plus-inf", "score_bias: {matrix: b.npy}\n", ["score_bias.matrix:", "b.npy", "row 3, column 1"],
         files={"b.npy": np.array([[0, 0, 0], [0, -np.inf, 0], [np.inf, 0, 0]])}),
    Case("bias-npy-nan", "score_bias: {matrix: b.npy}\n", ["score_bias.matrix:", "b.npy", "row 1, column 3", "nan"],
         files={"b.npy": np.array([[0, 0, np.nan], [0, 0, 0], [0, 0, 0]])}),
    Case("alibi-slopes-length", "score_bias: {alibi: {slopes: [0.5]}}\n",
         ["score_bias.alibi.slopes:", "2 query heads", "one slope each"]),
    Case("alibi-word", "score_bias: {alibi: yes}\n", ["score_bias.alibi:", "true, or a mapping with slopes"]),
    Case("alibi-slope-typo", "score_bias: {alibi: {slope: [1, 2]}}\n", ["score_bias.alibi:", "did you mean 'slopes'"]),
    Case("relative-no-table", "score_bias: {relative: {buckets: 8}}\n", ["score_bias.relative.table:", "is required"]),
    Case("relative-table-shape", "score_bias: {relative: {table: [[1, 2]]}}\n",
         ["score_bias.relative.table:", "1×2", "32×2"]),
    Case("relative-fraction-positions", f"positions: [0, 0.5, 1]\nscore_bias: {{relative: {{table: {TABLE}}}}}\n",
         ["score_bias.relative:", "whole-number positions", "positions has 0.5"]),
    Case("relative-fraction-context-positions",
         f"context_positions: [0, 1, 2.25]\nscore_bias: {{relative: {{table: {TABLE}}}}}\n",
         ["score_bias.relative:", "context_positions has 2.25"]),
    Case("relative-too-few-buckets", "score_bias: {relative: {table: {random: normal, shape: [2, 2]}, buckets: 2}}\n",
         ["score_bias.relative:", "2 buckets", "no logarithmic buckets"]),
    Case("relative-max-distance-small",
         "score_bias: {relative: {table: {random: normal, shape: [8, 2]}, buckets: 8, max_distance: 2}}\n",
         ["score_bias.relative:", "max_distance 2", "no logarithmic buckets"]),
    Case("relative-max-distance-zero", f"score_bias: {{relative: {{table: {TABLE}, max_distance: 0}}}}\n",
         ["score_bias.relative.max_distance:", "0 is not a whole number"]),
    Case("relative-buckets-null", f"score_bias: {{relative: {{table: {TABLE}, buckets: null}}}}\n",
         ["score_bias.relative.buckets:", "null is not a whole number"]),
    Case("relative-max-distance-null", f"score_bias: {{relative: {{table: {TABLE}, max_distance: }}}}\n",
         ["score_bias.relative.max_distance:", "null is not a whole number"]),
    Case("window-huge", "mask: {window: 100000000000}\n", ["mask.window:", "more than 2^31 keys"]),
    Case("relative-buckets-huge", f"score_bias: {{relative: {{table: {TABLE}, buckets: 100000000000}}}}\n",
         ["score_bias.relative.buckets:", "more than 2^31"]),
    Case("relative-max-distance-huge", f"score_bias: {{relative: {{table: {TABLE}, max_distance: 10000000000}}}}\n",
         ["score_bias.relative.max_distance:", "more than 2^31"]),
    Case("relative-bidirectional-word", f"score_bias: {{relative: {{table: {TABLE}, bidirectional: yes}}}}\n",
         ["score_bias.relative.bidirectional:", "'yes'"]),
    Case("relative-key-typo", f"score_bias: {{relative: {{table: {TABLE}, bucket: 8}}}}\n",
         ["score_bias.relative:", "did you mean 'buckets'"]),
    Case("float-mask-as-mask", "mask: [[0, -.inf, 0], [0, 0, 0], [0, 0, 0]]\n",
         ["mask:", "0 and -inf", "score_bias: {matrix: …}"]),
    Case("float-mask-file-as-mask", "mask: {matrix: f.npy}\n", ["mask.matrix:", "score_bias"],
         files={"f.npy": np.array([[0, -np.inf, 0], [0, 0, -np.inf], [0, 0, 0]])}),
]


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_bad_mask_or_bias(runner, tmp_path, monkeypatch, case):
    monkeypatch.chdir(tmp_path)
    for name, array in case.files.items():
        np.save(tmp_path / name, array)
    (tmp_path / "doc.yaml").write_text(X + "heads: 2\n" + case.doc, encoding="utf-8")
    before = sorted(p.name for p in tmp_path.iterdir())
    for args in ([], ["--only", "output"]):
        result = runner.invoke(app, ["compute", "doc.yaml", "--format", "json", *args])
        assert result.exit_code == 2 and result.stdout == "", (result.exit_code, result.stdout)
        message = result.stderr
        assert message.startswith("Error: doc.yaml: ") and message.count("\n") == 1 and "Traceback" not in message
        for name in case.names:
            assert name in message, (name, message)
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_python_api_names_the_key_too():
    with pytest.raises(AttnError, match=r"mask\.keys: .*3 keys"):
        attncli.load({"inputs": np.eye(3), "mask": {"keys": np.array([True, False])}})
    with pytest.raises(AttnError, match=r"score_bias\.alibi\.slopes"):
        attncli.load({"inputs": np.eye(3), "heads": 3, "score_bias": {"alibi": {"slopes": np.ones(2)}}})


# ---------------------------------------------------------------- extremes: both paths agree


def both_paths(doc: dict, rows: int = 1):
    spec = attncli.load(doc)
    full = attend(spec)
    with blocks_of(rows):
        return full, attend_streamed(spec, threads=2)


def test_relative_bias_of_positions_beyond_int64_is_the_last_bucket():
    """Whole-number positions up to 1e308 are allowed: every distance of max_distance or more has the last bucket
    of its side (it was an internal error past 2^63)."""
    table = np.arange(8.0)[:, None] * [1.0, -1.0]  # bucket b of head 0 is b
    doc = {"inputs": np.eye(4)[:3], "heads": 2, "positions": [0.0, 1e300, -1e19],
           "score_bias": {"relative": {"table": table, "buckets": 8, "max_distance": 9}}}
    full, streamed = both_paths(doc)
    # bidirectional, 8 buckets: 4 a side, the last of the far side is 3 (keys before) or 7 (keys after)
    assert full.score_bias[0].tolist() == [[0, 7, 3], [3, 0, 3], [7, 7, 0]]
    assert np.abs(full.output - streamed.output).max() <= TOL
    near = dict(doc, positions=[0, 1000, -1000])
    assert np.array_equal(attncli.compute(near).score_bias, full.score_bias)


def test_softcap_of_an_overflowing_scaled_score_is_the_cap_in_both_paths():
    """scale·S beyond float64 is capped to ±c (c·tanh(∞) = c) by the full computation; streamed did call it an
    overflow."""
    x = np.array([[1e75, 0.0], [0.0, 1.0], [1.0, 1.0]])
    doc = {"inputs": x, "weights": {"query": np.diag([1e75, 1.0]), "key": np.diag([1e75, 1.0]), "value": np.eye(2)},
           "scale": 1e10, "softcap": 5.0, "score_bias": {"alibi": True}}
    full, streamed = both_paths(doc)
    assert full.scaled_scores[0, 0, 0] == 5.0 - 0.0  # capped, then the bias (0 on the diagonal)
    assert np.abs(full.output - streamed.output).max() <= TOL * np.abs(full.output).max()


@pytest.mark.parametrize("doc", [
    {"score_bias": {"alibi": {"slopes": [1e308]}}, "positions": [0, 1, 2]},  # B itself is ∞ at row 1
    {"score_bias": {"matrix": [[0, 0, 0], [0, 0, 0], [0, 0, 1.7e308]]}, "scale": 1.0},  # Z + B overflows at row 3
], ids=["alibi", "matrix"])
def test_an_overflowing_bias_names_the_same_query_in_both_paths(doc):
    x = np.array([[1.0, 0.0], [0.0, 1.0], [1e154, 1.0]])
    doc = {"inputs": x, "weights": {"query": np.eye(2), "key": np.eye(2), "value": np.eye(2)}} | doc  # S₂₂ = 1e308
    spec = attncli.load(doc)
    with blocks_of(1):
        message = same_error(spec, None)
    assert "scaled scores overflow float64 at head 1, row" in message, message
