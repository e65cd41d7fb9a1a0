"""``max_logits`` and ``qk_clip`` (Kimi K2's QK-Clip): each head's largest logit, γ, the rescaled W_Q, W_K.

The largest logits are compared with a loop over heads, queries and keys written here (Python floats, its own
softcap, bias and causal mask), in the full and the streamed computation.  QK-Clip's new maximum is checked
twice: it is τ for every clipped head (without a cap or bias), and a second document built from the rescaled
matrices the JSON gives, computed afresh, has exactly those maxima (one key head per query head, grouped heads,
multi-head latent attention); and as users see it: JSON nulls, explain, check, and the errors.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import attncli
from attncli.cli import app
from attncli.core.pipeline import attend
from attncli.core.stream import attend_streamed

TAU = 2.0


def document(seed: int = 0, heads: int = 2, kv_heads: int = 2, softcap: float | None = None, bias: bool = False,
             tau: float | None = TAU) -> dict:
    rng = np.random.default_rng(seed)
    n, d_model, d_k = 5, 6, 3
    doc = {"inputs": rng.normal(size=(n, d_model)).tolist(), "heads": heads, "kv_heads": kv_heads, "mask": "causal",
           "weights": {"query": (2 * rng.normal(size=(d_model, heads * d_k))).tolist(),
                       "key": (2 * rng.normal(size=(d_model, kv_heads * d_k))).tolist()},
           "bias": {"query": rng.normal(size=heads * d_k).tolist(), "key": rng.normal(size=kv_heads * d_k).tolist()},
           "max_logits": True}
    if softcap is not None:
        doc["softcap"] = softcap
    if bias:
        doc["score_bias"] = {"matrix": rng.normal(size=(heads, n, n)).tolist()}
    if tau is not None:
        doc["qk_clip"] = {"tau": tau}
    return doc


def loop_maxima(doc: dict) -> tuple[list[float], list[tuple[int, int]]]:
    """Each head's largest allowed logit and its first cell, with Python floats and loops."""
    x = doc["inputs"]
    h, g = doc["heads"], doc.get("kv_heads", doc["heads"])
    wq, wk = np.array(doc["weights"]["query"]), np.array(doc["weights"]["key"])
    if wq.ndim == 3:  # per head (h, d_model, d_k): side by side
        wq, wk = np.concatenate(list(wq), axis=1), np.concatenate(list(wk), axis=1)
    bq = doc.get("bias", {}).get("query", [0.0] * wq.shape[1])
    bk = doc.get("bias", {}).get("key", [0.0] * wk.shape[1])
    d_k, n = wq.shape[1] // h, len(x)

    def project(w, b, i, c):
        return sum(float(x[i][r]) * float(w[r][c]) for r in range(len(x[0]))) + float(b[c])

    cap, bias = doc.get("softcap"), doc.get("score_bias", {}).get("matrix")
    tops, cells = [], []
    for head in range(h):
        kv = head // (h // g)
        best, at = -math.inf, None
        for i in range(n):
            for j in range(i + 1):  # causal
                s = sum(project(wq, bq, i, head * d_k + t) * project(wk, bk, j, kv * d_k + t) for t in range(d_k))
                z = s / math.sqrt(d_k)
                z = cap * math.tanh(z / cap) if cap else z
                z += bias[head][i][j] if bias else 0.0
                if z > best:
                    best, at = z, (i, j)
        tops.append(best)
        cells.append(at)
    return tops, cells


@pytest.mark.parametrize(("heads", "kv_heads", "softcap", "bias"),
                         [(2, 2, None, False), (4, 2, None, True), (3, 1, 1.5, False), (2, 1, 0.8, True)])
def test_the_largest_logits_equal_a_loop_full_and_streamed(heads, kv_heads, softcap, bias):
    doc = document(1, heads, kv_heads, softcap, bias, tau=None)
    tops, cells = loop_maxima(doc)
    spec = attncli.load(doc)
    for trace in (attend(spec), attend_streamed(spec, threads=2)):
        np.testing.assert_allclose(trace.max_logits, tops, rtol=1e-12)
        assert trace.max_logit_cells.tolist() == [list(c) for c in cells]
    full = attend(spec)
    z = np.where(spec.allowed, full.scaled_scores, -np.inf)
    assert full.max_logits.tolist() == z.reshape(heads, -1).max(axis=1).tolist()  # the JSON's own cells, exactly


def rescaled_document(doc: dict, trace) -> dict:
    """The document with QK-Clip's W_Q, b_Q, W_K, b_K in place of its own (per head, 3-D), and no qk_clip."""
    new = json.loads(json.dumps(doc))
    new.pop("qk_clip")
    new["weights"] = {"query": trace.qk_clip_weight_query.tolist(), "key": trace.qk_clip_weight_key.tolist()}
    new["bias"] = {"query": trace.qk_clip_bias_query.reshape(-1).tolist(),
                   "key": trace.qk_clip_bias_key.reshape(-1).tolist()}
    return new


@pytest.mark.parametrize(("heads", "kv_heads"), [(2, 2), (4, 2), (3, 1)])
@pytest.mark.parametrize("seed", range(3))
def test_qk_clip_brings_every_clipped_head_to_tau(seed, heads, kv_heads):
    doc = document(seed, heads, kv_heads)
    trace = attncli.compute(doc)
    tops, _ = loop_maxima(doc)
    gamma = np.array([min(1.0, TAU / t) for t in tops])
    assert (gamma < 1).any()  # the test's logits do pass τ
    np.testing.assert_allclose(trace.qk_clip_gamma, gamma, rtol=1e-12)
    expected = np.where(gamma < 1, TAU, tops)
    np.testing.assert_allclose(trace.qk_clip_max_logits, expected, rtol=1e-12)
    again, _ = loop_maxima(rescaled_document(doc, trace))  # the rescaled weights, computed afresh by the loop
    np.testing.assert_allclose(again, expected, rtol=1e-12)
    streamed = attend_streamed(attncli.load(doc), threads=2)
    np.testing.assert_allclose(streamed.qk_clip_max_logits, expected, rtol=1e-12)


def test_grouped_heads_scale_the_key_head_by_its_groups_smallest_gamma():
    doc = document(2, 4, 2)
    trace = attncli.compute(doc)
    w_k = np.array(doc["weights"]["key"]).reshape(6, 2, 3).transpose(1, 0, 2)  # (g, d_model, d_k)
    w_q = np.array(doc["weights"]["query"]).reshape(6, 4, 3).transpose(1, 0, 2)
    gamma = trace.qk_clip_gamma
    smallest = gamma.reshape(2, 2).min(axis=1)
    np.testing.assert_allclose(trace.qk_clip_weight_key, w_k * np.sqrt(smallest)[:, None, None], rtol=1e-14)
    on_q = gamma / np.repeat(np.sqrt(smallest), 2)
    np.testing.assert_allclose(trace.qk_clip_weight_query, w_q * on_q[:, None, None], rtol=1e-14)


def test_a_soft_cap_keeps_the_new_maximum_at_or_above_tau():
    doc = document(0, 2, 2, softcap=3.0)
    trace = attncli.compute(doc)
    again, _ = loop_maxima(rescaled_document(doc, trace))
    np.testing.assert_allclose(trace.qk_clip_max_logits, again, rtol=1e-12)
    clipped = trace.qk_clip_gamma < 1
    assert clipped.any() and (trace.qk_clip_max_logits[clipped] >= TAU - 1e-12).all()


def latent_document(seed: int) -> dict:
    rng = np.random.default_rng(seed)
    n, d_model, h, r_q, r_kv, d_nope, d_r, d_v = 4, 6, 2, 4, 3, 2, 2, 3
    normal = lambda *shape: (2 * rng.normal(size=shape)).tolist()  # noqa: E731
    return {"inputs": normal(n, d_model), "heads": h, "rope": {"dims": d_r, "part": "last"}, "mask": "causal",
            "latent": {"kv_norm": {"kind": "rms"}, "query_norm": {"kind": "rms"}},
            "weights": {"query_down": normal(d_model, r_q), "query_up": normal(r_q, h * (d_nope + d_r)),
                        "kv_down": normal(d_model, r_kv + d_r), "kv_up": normal(r_kv, h * (d_nope + d_v))},
            "qk_clip": {"tau": 1.0}}


@pytest.mark.parametrize("seed", range(3))
def test_latent_attention_rescales_the_unshared_parts_only(seed):
    doc = latent_document(seed)
    trace = attncli.compute(doc)
    gamma, h, d_nope, d_v = trace.qk_clip_gamma, 2, 2, 3
    assert (gamma < 1).any()
    up = np.array(doc["weights"]["query_up"]).reshape(4, h, 4)  # (r_q, h, d_nope + d_r)
    factor = np.concatenate([np.repeat(np.sqrt(gamma)[:, None], d_nope, 1), np.repeat(gamma[:, None], 2, 1)], 1)
    np.testing.assert_allclose(trace.qk_clip_weight_query, up.transpose(1, 0, 2) * factor[:, None, :], rtol=1e-14)
    kv_up = np.array(doc["weights"]["kv_up"]).reshape(3, h, d_nope + d_v)
    new_up = kv_up.copy()
    new_up[:, :, :d_nope] = trace.qk_clip_weight_key.transpose(1, 0, 2)  # W_UK,h rescaled, W_UV,h as it was
    np.testing.assert_allclose(new_up[:, :, :d_nope], kv_up[:, :, :d_nope] * np.sqrt(gamma)[None, :, None],
                               rtol=1e-14)
    new = json.loads(json.dumps(doc))
    new.pop("qk_clip")
    new["max_logits"] = True
    new["weights"]["query_up"] = trace.qk_clip_weight_query.transpose(1, 0, 2).reshape(4, -1).tolist()
    new["weights"]["kv_up"] = new_up.reshape(3, -1).tolist()
    again = attncli.compute(new)  # the rescaled model computed afresh: the shared rotary key k_r as it was
    np.testing.assert_allclose(again.max_logits, trace.qk_clip_max_logits, rtol=1e-12)
    np.testing.assert_allclose(trace.qk_clip_max_logits, np.where(gamma < 1, 1.0, trace.max_logits), rtol=1e-12)


def test_a_head_with_no_allowed_cell_has_no_maximum(runner, tmp_path):
    doc = {"inputs": [[1, 0], [0, 1]], "heads": 2, "weights": {"query": [[1, 0], [0, 1]]}, "max_logits": True,
           "mask": [[[0, 0], [0, 0]], [[1, 0], [1, 1]]]}
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(doc))
    result = runner.invoke(app, ["compute", str(path), "--format", "json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["max_logits"][0] is None and out["max_logit_cells"][0] == [None, None]
    assert out["max_logits"][1] == pytest.approx(1 / math.sqrt(1))
    assert out["max_logit_cells"][1] == [1.0, 1.0]  # q₂·k₂ = 1 in the second head


def test_explain_and_check_speak_of_the_largest_logit(runner, tmp_path):
    doc = document(0, 2, 2)
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(doc))
    result = runner.invoke(app, ["explain", str(path), "--step", "5", "--head", "1"])
    assert result.exit_code == 0, result.output
    assert "S_max" in result.stdout and "QK-Clip with τ = 2" in result.stdout
    zh = runner.invoke(app, ["explain", str(path), "--step", "5", "--lang", "zh"])
    assert "最大 logit" in zh.stdout
    trace = attncli.compute(doc)
    for answer, code in (({"max_logits": trace.max_logits.tolist()}, 0),
                         ({"qk_clip_gamma": [1.0] * 2}, 1)):
        path.write_text(json.dumps(dict(doc, answer=answer)))
        assert runner.invoke(app, ["check", str(path)]).exit_code == code


@pytest.mark.parametrize(("extra", "where"), [
    ({"qk_norm": {"kind": "rms"}}, "qk_clip"),
    ({"clip_qkv": 3}, "qk_clip"),
    ({"qk_clip": {"tau": -1}}, "qk_clip.tau"),
    ({"qk_clip": {}}, "qk_clip.tau"),
    ({"qk_clip": {"tau": 1, "alpha": 0.5}}, "qk_clip"),
    ({"max_logits": "yes"}, "max_logits"),
])
def test_bad_keys_are_one_line_and_exit_2(runner, tmp_path, extra, where):
    path = tmp_path / "doc.json"
    path.write_text(json.dumps({**document(0), **extra}))
    result = runner.invoke(app, ["compute", str(path)])
    assert result.exit_code == 2
    assert result.stdout == "" and "Traceback" not in result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"Error: {path}: {where}"), result.stderr


def test_qk_clip_refuses_queries_given_directly(runner, tmp_path):
    path = tmp_path / "doc.json"
    path.write_text(json.dumps({"queries": [[1.0, 2.0]], "keys": [[1.0, 0.0]], "values": [[1.0, 1.0]],
                                "qk_clip": {"tau": 1}}))
    result = runner.invoke(app, ["compute", str(path)])
    assert result.exit_code == 2 and "qk_clip" in result.stderr and "given directly" in result.stderr
    path.write_text(json.dumps({"queries": [[1.0, 2.0]], "keys": [[1.0, 0.0]], "values": [[1.0, 1.0]],
                                "max_logits": True}))
    out = json.loads(runner.invoke(app, ["compute", str(path), "--format", "json"]).stdout)
    assert out["max_logits"] == [pytest.approx(1 / math.sqrt(2))]


def test_checks_hints_name_the_slips_of_the_largest_logit(runner, tmp_path):
    doc = dict(document(0, 2, 2, softcap=30.0), qk_clip={"tau": 25.0})
    trace = attncli.compute(doc)
    allowed = trace.spec.allowed
    before_cap = np.where(allowed, trace.spec.scale * trace.scores, -np.inf).max(axis=(1, 2))
    unscaled = np.where(allowed, trace.scores, -np.inf).max(axis=(1, 2))
    assert (trace.max_logits < 25).any() and (trace.max_logits > 25).any()
    for answer, slip in (({"max_logits": before_cap.tolist()}, "softcap_left_out"),
                         ({"max_logits": unscaled.tolist()}, "max_logit_unscaled"),
                         ({"qk_clip_gamma": (25 / trace.max_logits).tolist()}, "qk_clip_gamma_uncapped")):
        path = tmp_path / "doc.json"
        path.write_text(json.dumps(dict(doc, answer=answer)))
        result = runner.invoke(app, ["check", str(path), "--format", "json"])
        assert result.exit_code == 1, result.output
        assert slip in result.stdout, result.stdout


@pytest.mark.parametrize(("lang", "phrase"), [("en", "γtimesaslarge"), ("zh", "变为原来的γ倍")])
def test_qk_clip_of_grouped_heads_says_the_scores_scale_by_gamma_once(runner, lang, phrase):
    """examples/clip/qk_clip.yaml (4 query heads on 2 key/value heads): the grouped rule, then the scores' γ, once."""
    from conftest import EXAMPLES

    result = runner.invoke(app, ["explain", str(EXAMPLES / "clip" / "qk_clip.yaml"), "--step", "5", "--head", "2",
                                 "--lang", lang], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    text = "".join(result.stdout.split())  # (the lines joined: a Chinese line breaks between two characters)
    assert ("thesharedkeyheadtakes√γ" in text or "共享的键头乘以" in text) and text.count(phrase) == 1
