"""The page's gradient cells (issue 33): each cell's arithmetic, term by term, against a naive loop in numpy.

The reference below recomputes the whole forward and backward pass from the document's own arrays (X, W_Q, W_K,
W_V, the gradient) one number at a time, without attncli's maths; every term the page writes must be that loop's
number rounded as the page rounds it (4 decimals), and every total the table's.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from conftest import EXAMPLES

import attncli
from attncli.teach.page import page_data, page_html
from attncli.teach.page.gradient_tables import SPENT
from attncli.teach.page.gradients import written
from attncli.teach.texts import texts

EN, ZH = texts("en")["page_grads"], texts("zh")["page_grads"]
HALF_UNIT = 0.5e-4 + 1e-9  # a number written with 4 decimals is within this of the truth
CJK = re.compile(r"[\u4e00-\u9fff]")


def naive(spec, causal: bool) -> dict:
    """Forward and backward, one number at a time (no matrix products): Q, K, V, A, H, dH, dA, D, dZ, dS, dQ, dK,
    dV, dW_Q, dX, from the document's X, W_Q, W_K, W_V (h or g, d_model, d) and its gradient dY (no W_O)."""
    x, wq, wk, wv = spec.embedded, spec.w_q, spec.w_k, spec.w_v
    h, g, n, d_model, d_k, d_v = wq.shape[0], wk.shape[0], x.shape[0], x.shape[1], wq.shape[2], wv.shape[2]
    r = {name: np.zeros(shape) for name, shape in (
        ("Q", (h, n, d_k)), ("K", (g, n, d_k)), ("V", (g, n, d_v)), ("A", (h, n, n)), ("H", (h, n, d_v)),
        ("dH", (h, n, d_v)), ("dA", (h, n, n)), ("D", (h, n)), ("dZ", (h, n, n)), ("dS", (h, n, n)),
        ("dQ", (h, n, d_k)), ("dK", (g, n, d_k)), ("dV", (g, n, d_v)), ("dWQ", (d_model, h * d_k)),
        ("dX", (n, d_model)))}
    for name, w in (("Q", wq), ("K", wk), ("V", wv)):
        for a, i, c in np.ndindex(r[name].shape):
            r[name][a, i, c] = sum(x[i, k] * w[a, k, c] for k in range(d_model))
    for a, i in np.ndindex(h, n):
        _row(r, spec.gradient, a, i, h // g, (lambda j, i=i: j <= i or not causal))
    _backward(r, h // g)
    for k, a, c in np.ndindex(d_model, h, d_k):
        r["dWQ"][k, a * d_k + c] = sum(x[i, k] * r["dQ"][a, i, c] for i in range(n))
    for i, k in np.ndindex(n, d_model):
        r["dX"][i, k] = sum(r[f"d{p}"][a, i, c] * w[a, k, c] for p, w in (("Q", wq), ("K", wk), ("V", wv))
                            for a, c in np.ndindex(w.shape[0], w.shape[2]))
    return r


def _row(r: dict, dy: np.ndarray, a: int, i: int, group: int, seen) -> None:
    """Query i of head a: its weights, output, dH, dA, D, dZ, dS."""
    kv, n, d_k, d_v = a // group, r["A"].shape[1], r["Q"].shape[2], r["V"].shape[2]
    scale = 1 / math.sqrt(d_k)
    z = [scale * sum(r["Q"][a, i, c] * r["K"][kv, j, c] for c in range(d_k)) for j in range(n)]
    top = max(z[j] for j in range(n) if seen(j))
    e = [math.exp(z[j] - top) if seen(j) else 0.0 for j in range(n)]
    for j in range(n):
        r["A"][a, i, j] = e[j] / sum(e)
    for c in range(d_v):
        r["H"][a, i, c] = sum(r["A"][a, i, j] * r["V"][kv, j, c] for j in range(n))
        r["dH"][a, i, c] = dy[i, a * d_v + c]
    for j in range(n):
        r["dA"][a, i, j] = sum(r["dH"][a, i, c] * r["V"][kv, j, c] for c in range(d_v))
    r["D"][a, i] = sum(r["dH"][a, i, c] * r["H"][a, i, c] for c in range(d_v))
    for j in range(n):
        r["dZ"][a, i, j] = r["A"][a, i, j] * (r["dA"][a, i, j] - r["D"][a, i])
        r["dS"][a, i, j] = scale * r["dZ"][a, i, j]


def _backward(r: dict, group: int) -> None:
    """dQ, dK, dV: sums over keys or queries; a key/value head adds its group's query heads."""
    h, n, d_k = r["Q"].shape
    for a, i, c in np.ndindex(h, n, d_k):
        r["dQ"][a, i, c] = sum(r["dS"][a, i, j] * r["K"][a // group, j, c] for j in range(n))
        r["dK"][a // group, i, c] += sum(r["dS"][a, q, i] * r["Q"][a, q, c] for q in range(n))
    for a, i, c in np.ndindex(h, n, r["V"].shape[2]):
        r["dV"][a // group, i, c] += sum(r["A"][a, q, i] * r["dH"][a, q, c] for q in range(n))


def cell(data: dict, key: str, head, r: int, c: int, lang: str = "en") -> tuple[list[str], list[str]]:
    """(paragraphs, lines) the panel of shown cell (r, c) of table ``key`` writes, as the page's script reads them."""
    t = next(t for t in data["tables"] if t["key"] == key and t["head"] == head)
    entry = t["gx"][r][c]
    assert entry is not None, (key, head, r, c)
    k = 0 if lang == "en" else 1
    return [data["S"][p] for p in entry[1][k]], [data["S"][p] for p in entry[2][k]]


def terms(line: str) -> list[tuple[float, ...]]:
    """``  = 0.4876·(-0.5357) + 0.3185·0.7037`` -> [(0.4876, -0.5357), (0.3185, 0.7037)]."""
    body = line.strip().removeprefix("= ")
    return [tuple(float(f.strip("()")) for f in term.split("·")) for term in body.split(" + ")]


def close(written_: float, truth: float) -> bool:
    return abs(written_ - truth) <= HALF_UNIT


def check_sum(lines: list[str], start: int, expected: list[tuple[float, ...]], total: float) -> None:
    """Lines ``start``..``start + 2`` are one sum: its terms are ``expected`` and its total ``total``, number by
    number (each rounded to 4 decimals)."""
    got = terms(lines[start + 1])
    assert len(got) == len(expected), (lines, expected)
    for g_, e in zip(got, expected, strict=True):
        assert all(close(a, b) for a, b in zip(g_, e, strict=True)), (lines[start + 1], e)
    assert close(float(lines[start + 2].strip().removeprefix("= ")), total), (lines[start + 2], total)


@pytest.fixture(scope="module")
def grads():
    trace = attncli.compute(EXAMPLES / "backward" / "grads.yaml")
    return trace, page_data(trace), naive(trace.spec, causal=True)


def test_the_reference_is_attncli_s_own_numbers(grads):
    """(The naive loop and attncli agree: otherwise the tests below would compare the page with a wrong truth.)"""
    trace, _, ref = grads
    g = trace.gradients
    for key, name in (("grad_values", "dV"), ("grad_keys", "dK"), ("grad_queries", "dQ"), ("grad_inputs", "dX"),
                      ("grad_scaled_scores", "dZ"), ("delta", "D"), ("grad_weight_query", "dWQ")):
        assert np.allclose(g[key], ref[name], rtol=1e-10, atol=1e-12), key


def test_a_dv_cell_sums_its_column_term_by_term(grads):
    trace, data, ref = grads
    for head in (0, 1):
        for j, c in ((0, 0), (1, 0), (2, 1)):  # dV[j, c] = Σ_i a_ij·dH_ic over the queries that see key j
            words, lines = cell(data, "grad_values", head, j, c)
            key = trace.spec.tokens[j]
            assert lines[0] == f"dV[{key}, {c + 1}] = Σ_i a_i,{key}·dH_i,{c + 1}"
            expected = [(ref["A"][head, i, j], ref["dH"][head, i, c]) for i in range(j, 4)]
            check_sum(lines, 0, expected, ref["dV"][head, j, c])
            assert f"“{key}”" in words[0] and f"column {c + 1}" in words[0]


def test_da_and_d_are_dot_products_of_dh(grads):
    _, data, ref = grads
    _, lines = cell(data, "grad_weights", 1, 3, 2)  # dA[down, sat] = dH_down·v_sat (head 2)
    check_sum(lines, 0, [(ref["dH"][1, 3, c], ref["V"][1, 2, c]) for c in range(2)], ref["dA"][1, 3, 2])
    words, lines = cell(data, "delta", 0, 2, 0)  # D[sat] = dH_sat·H_sat = Σ_j a·dA over the keys sat sees
    check_sum(lines, 0, [(ref["dH"][0, 2, c], ref["H"][0, 2, c]) for c in range(2)], ref["D"][0, 2])
    check_sum(lines, 3, [(ref["A"][0, 2, j], ref["dA"][0, 2, j]) for j in range(3)], ref["D"][0, 2])
    assert "FlashAttention" in words[0]


def test_dz_is_a_times_da_minus_d_and_a_masked_one_is_0_saying_why(grads):
    trace, data, ref = grads
    _, lines = cell(data, "grad_scaled_scores", 0, 3, 1)  # dZ[down, cat] = a·(dA − D)
    numbers = [float(x) for x in re.findall(r"-?\d+\.\d+|-?\d+", lines[0].split("=", 2)[2])]
    a, d_a, d, total = numbers
    assert close(a, ref["A"][0, 3, 1]) and close(d_a, ref["dA"][0, 3, 1]) and close(d, ref["D"][0, 3])
    assert close(total, ref["dZ"][0, 3, 1])
    for lang, words_of in (("en", EN), ("zh", ZH)):
        words, lines = cell(data, "grad_scaled_scores", 0, 0, 2, lang)  # “The” may not see “sat”: masked
        assert lines == [f"dZ[The, sat] = a·(dA − D) = 0·({ref['dA'][0, 0, 2]:.4f} − {ref['D'][0, 0]:.4f}) = 0"]
        assert words[1] == words_of["masked"].format(q="“The”", key="“sat”")
    words, _ = cell(data, "grad_scaled_scores", 0, 3, 1)
    assert len(words) == 1  # an unmasked cell: no word of a mask


def test_ds_dq_dk_show_the_scale(grads):
    trace, data, ref = grads
    _, lines = cell(data, "grad_scores", 0, 2, 1)
    assert lines == [f"dS[sat, cat] = scale·dZ = 0.707107·({ref['dZ'][0, 2, 1]:.4f}) = {ref['dS'][0, 2, 1]:.4f}"]
    _, lines = cell(data, "grad_queries", 1, 3, 0)  # dQ[down, 1] (head 2): Σ_j dS·k, then s·Σ_j dZ·k
    check_sum(lines, 0, [(ref["dS"][1, 3, j], ref["K"][1, j, 0]) for j in range(4)], ref["dQ"][1, 3, 0])
    inner = sum(ref["dZ"][1, 3, j] * ref["K"][1, j, 0] for j in range(4))
    check_sum(lines, 3, [(ref["dZ"][1, 3, j], ref["K"][1, j, 0]) for j in range(4)], inner)
    assert lines[6] == f"dQ[down, 1] = scale·Σ = 0.707107·{inner:.4f} = {ref['dQ'][1, 3, 0]:.4f}".replace(
        f"·{inner:.4f}", f"·({inner:.4f})" if inner < 0 else f"·{inner:.4f}")
    _, lines = cell(data, "grad_keys", 0, 1, 1)  # dK[cat, 2]: the queries that see “cat” (2, 3, 4)
    check_sum(lines, 0, [(ref["dS"][0, i, 1], ref["Q"][0, i, 1]) for i in range(1, 4)], ref["dK"][0, 1, 1])


def test_weight_gradients_and_dx(grads):
    trace, data, ref = grads
    x = trace.spec.embedded
    _, lines = cell(data, "grad_weight_query", None, 2, 3)  # dW_Q[3, 4] = Σ_i X_i3·dQ (head 2's column 2)
    check_sum(lines, 0, [(x[i, 2], ref["dQ"][1, i, 1]) for i in range(4)], ref["dWQ"][2, 3])
    _, lines = cell(data, "grad_inputs", None, 1, 0)  # dX[cat, 1]: the paths through Q, K and V, then their total
    spec = trace.spec
    paths = [(ref["dQ"], spec.w_q), (ref["dK"], spec.w_k), (ref["dV"], spec.w_v)]
    parts = []
    for k, (dp, w) in enumerate(paths):
        expected = [(dp[a, 1, c], w[a, 0, c]) for a in range(2) for c in range(2)]
        parts.append(sum(p * q for p, q in expected))
        check_sum(lines, 3 * k, expected, parts[-1])
    got = [t_[0] for t_ in terms(lines[10])]
    assert all(close(a, b) for a, b in zip(got, parts, strict=True)) and close(float(lines[11][4:]), ref["dX"][1, 0])


def test_grouped_query_heads_sum_over_the_group():
    doc = {"inputs": [[1.0, 0.5, -1.0], [0.0, 2.0, 1.0], [1.5, -0.5, 0.5]], "heads": 4, "kv_heads": 2,
           "weights": {"query": {"random": "xavier", "seed": 4, "shape": [3, 8]},
                       "key": {"random": "xavier", "seed": 5, "shape": [3, 4]},
                       "value": {"random": "xavier", "seed": 6, "shape": [3, 4]}},
           "gradient": {"random": "normal", "seed": 7}}
    trace = attncli.compute(doc)
    data, ref = page_data(trace), naive(trace.spec, causal=False)
    assert np.allclose(trace.gradients["grad_values"], ref["dV"], rtol=1e-10, atol=1e-12)
    words, lines = cell(data, "grad_values", 2, 1, 0)  # K/V head 2 serves query heads 3 and 4
    assert lines[0].startswith("dV_h3[") and lines[3].startswith("dV_h4[")
    parts = []
    for k, a in enumerate((2, 3)):
        expected = [(ref["A"][a, i, 1], ref["dH"][a, i, 0]) for i in range(3)]
        parts.append(sum(p * q for p, q in expected))
        check_sum(lines, 3 * k, expected, parts[-1])
    check_sum(lines, 6, [(p,) for p in parts], ref["dV"][1, 1, 0])
    assert words[1] == EN["group_two"].format(first=3, last=4)  # two heads: "3 and 4"
    assert "query heads 3 and 4," in words[1] and " to " not in words[1]
    assert "这个头服务第 3 和第 4 个查询头" in cell(data, "grad_values", 2, 1, 0, "zh")[0][1]


def test_stages_the_formulas_leave_out_get_a_note_not_a_wrong_sum():
    """With rope, dQ is dQ′ turned back: dQ′ is written (Σ_j dS·k′), dQ is not; with clip, no dW; the sums that
    are written give the table's number back."""
    base = {"inputs": [[1.0, 0.5, -1.0, 2.0], [0.0, 2.0, 1.0, -1.0], [1.5, -0.5, 0.5, 0.0]], "heads": 1,
            "weights": {"query": {"random": "xavier", "seed": 1, "shape": [4, 4]},
                        "key": {"random": "xavier", "seed": 2, "shape": [4, 4]}},
            "gradient": {"random": "normal", "seed": 3}, "mask": "causal"}
    trace = attncli.compute({**base, "rope": {"dims": 4}})
    data = page_data(trace)
    assert not written(trace, "grad_queries") and written(trace, "grad_queries_rotated")
    rotated = next(t for t in data["tables"] if t["key"] == "grad_queries_rotated")
    plain = next(t for t in data["tables"] if t["key"] == "grad_queries")
    assert all(c is not None for row in rotated["gx"] for c in row)
    assert all(c is None for row in plain["gx"] for c in row)
    _, lines = cell(data, "grad_queries_rotated", 0, 2, 3)
    assert lines[0].startswith("dQ′[") and "k′_j,4" in lines[0]
    assert close(float(lines[2].strip()[2:]), trace.gradients["grad_queries_rotated"][0, 2, 3])
    clipped = page_data(attncli.compute({**base, "clip_qkv": 0.3}))
    assert all(c is None for t in clipped["tables"] if t["key"].startswith("grad_weight_") for row in t["gx"]
               for c in row)
    assert clipped["grads"]["en"]["not_worked"] == EN["not_worked"] and CJK.search(clipped["grads"]["zh"]["not_worked"])


def test_gradient_tables_are_signed_and_chinese(grads):
    _, data, _ = grads
    for t in data["tables"]:
        gradient = t["key"].startswith("grad_") or t["key"] == "delta"
        assert (t["signed"] is not None) == gradient, t["key"]
        assert CJK.search(t["title"]["zh"]), t["title"]
        if gradient:
            assert t["signed"] == pytest.approx(max(abs(float(v)) for row in t["v"] for v in row if v), abs=HALF_UNIT)
            for row in t["gx"]:
                for entry in row:  # every paragraph of the Chinese panel is Chinese
                    assert all(CJK.search(data["S"][p]) for p in entry[1][1])


def test_a_large_document_with_gradient_is_cut_and_stays_small():
    n = 200
    rng = np.random.default_rng(1)
    trace = attncli.compute({"inputs": rng.normal(size=(n, 8)), "heads": 2, "mask": "causal",
                             "gradient": rng.normal(size=(n, 8))})
    html = page_html(trace)
    assert len(html.encode()) < 6_000_000
    data = page_data(trace)
    dv = next(t for t in data["tables"] if t["key"] == "grad_values")
    assert None in dv["r"] and dv["gx"][12] == [None] * len(dv["c"])  # the ⋮ row
    _, lines = cell(data, "grad_values", 0, 0, 0)  # key 1 is seen by all 200 queries: 12 terms and the rest counted
    assert lines[1].endswith(EN["more"].format(count=n - 12))
    assert close(float(lines[2].strip()[2:]), trace.gradients["grad_values"][0, 0, 0])
    d_a = next(t for t in data["tables"] if t["key"] == "grad_weights")  # 24 × 24 cells of 4 terms
    last = d_a["gx"][-1][-1]  # past the table's share of the budget: 0, and the panel's note says so
    assert last == SPENT and last is not None and data["grads"]["zh"]["spent"] == ZH["spent"]
    assert isinstance(d_a["gx"][0][0], list)


SWEEP = [{f} for f in ("causal", "window", "bias_matrix", "alibi", "softcap", "rope", "gqa", "qk_norm", "pre_norm",
                       "residual", "add_norm", "gate", "clip", "sinks", "temperature", "positional", "context",
                       "biases")] + [{"gqa", "causal"}, {"rope", "softcap", "gqa"}, {"context", "gqa", "sinks"}]


@pytest.mark.parametrize("features", SWEEP, ids=lambda f: "+".join(sorted(f)))
def test_every_table_the_formulas_claim_is_written_out_whole(features):
    """Through every stage of the backward pass (tests/backward_reference.py's documents): a gradient table the
    formulas hold for (:func:`written`) has every shown cell written out, none dropped because its sum missed the
    table's number, and each written total is the table's number."""
    from backward_reference import document

    trace = attncli.compute(document(features, 2))  # (seed 2 draws qk_norm with a γ a head)
    data = page_data(trace)
    claimed = [t for t in data["tables"] if t["gx"] is not None and written(trace, t["key"])]
    assert {"grad_weights", "grad_scaled_scores", "grad_values"} <= {t["key"] for t in claimed}
    for t in claimed:
        for r, row in zip(t["r"], t["gx"], strict=True):
            for c, entry in zip(t["c"], row, strict=True):
                assert (entry is None) == (r is None or c is None), (t["key"], t["head"], r, c)
                if entry is not None:
                    last = data["S"][entry[2][0][-1]].strip()
                    assert last.endswith(" " + t["v"][t["r"].index(r)][t["c"].index(c)]) or \
                        close(float(last.rsplit("= ", 1)[1]), float(t["v"][t["r"].index(r)][t["c"].index(c)])), last
