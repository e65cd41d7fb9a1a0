"""``latent`` (multi-head latent attention, Part 3) without torch: hand-worked numbers of examples/latent.yaml, a
loop over tokens and heads written from the contract, the absorbed form against the naive scores, streamed = full,
``--only``, and every wrong shape refused in one line that names what it read as what."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import numpy as np
import pytest
from stream_helpers import assert_same, spec_of
from typer.testing import CliRunner

import attncli
from attncli.cli.main import app
from attncli.core.errors import AttnError
from attncli.core.pipeline import needs_no_attention

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "latent.yaml"
H, D_MODEL, NOPE, D_R, D_V, R_KV, R_Q = 3, 6, 2, 4, 3, 5, 4


def document(seed: int, n: int = 7, q_lora: bool = True, style: str = "interleaved", **extra) -> dict:
    rng = np.random.default_rng(seed)
    weights = {"kv_down": rng.normal(size=(D_MODEL, R_KV + D_R)), "kv_up": rng.normal(size=(R_KV, H * (NOPE + D_V))),
               "output": rng.normal(size=(H * D_V, D_MODEL))}
    latent = {"kv_norm": {"kind": "rms", "gamma": rng.uniform(0.5, 1.5, R_KV).tolist(), "eps": 1e-6}}
    bias = {"kv_down": rng.normal(size=R_KV + D_R)}
    if q_lora:
        weights.update(query_down=rng.normal(size=(D_MODEL, R_Q)), query_up=rng.normal(size=(R_Q, H * (NOPE + D_R))))
        latent["query_norm"] = {"kind": "rms", "gamma": rng.uniform(0.5, 1.5, R_Q).tolist()}
        bias["query_down"] = rng.normal(size=R_Q)
    else:
        weights["query"] = rng.normal(size=(D_MODEL, H * (NOPE + D_R)))
    doc = {"inputs": rng.normal(size=(n, D_MODEL)), "heads": H, "latent": latent, "weights": weights, "bias": bias,
           "rope": {"dims": D_R, "part": "last", "style": style, "base": 100.0}, "mask": "causal"}
    doc.update(extra)
    return doc


def rms(x: np.ndarray, gamma, eps: float) -> np.ndarray:
    return np.asarray(gamma) * x / math.sqrt(float(np.mean(x * x)) + eps)


def turn(x: np.ndarray, p: float, base: float, style: str) -> np.ndarray:
    """One row's last D_R numbers turned at position p, pair by pair."""
    out = x.copy()
    lo = len(x) - D_R
    for i in range(D_R // 2):
        a_at, b_at = (lo + i, lo + i + D_R // 2) if style == "half" else (lo + 2 * i, lo + 2 * i + 1)
        angle = p * base ** (-2 * i / D_R)
        a, b = x[a_at], x[b_at]
        out[a_at], out[b_at] = a * math.cos(angle) - b * math.sin(angle), b * math.cos(angle) + a * math.sin(angle)
    return out


def loop(doc: dict) -> dict:
    """The contract's formulas, token by token and head by head."""
    x, w, b, lat = doc["inputs"], doc["weights"], doc["bias"], doc["latent"]
    n, style, base = len(x), doc["rope"]["style"], doc["rope"]["base"]
    d_k = NOPE + D_R
    q = np.zeros((H, n, d_k))
    k, v = np.zeros((H, n, d_k)), np.zeros((H, n, D_V))
    c_kv = np.zeros((n, R_KV))
    for t in range(n):
        if "query_down" in w:
            c_q = rms(x[t] @ w["query_down"] + b["query_down"], lat["query_norm"]["gamma"], 1e-6)
            row = c_q @ w["query_up"]
        else:
            row = x[t] @ w["query"]
        both = x[t] @ w["kv_down"] + b["kv_down"]
        c_kv[t] = rms(both[:R_KV], lat["kv_norm"]["gamma"], 1e-6)
        up = c_kv[t] @ w["kv_up"]
        for h in range(H):
            q[h, t] = turn(row[h * d_k:(h + 1) * d_k], t, base, style)
            head = up[h * (NOPE + D_V):(h + 1) * (NOPE + D_V)]
            k[h, t] = turn(np.concatenate([head[:NOPE], both[R_KV:]]), t, base, style)
            v[h, t] = head[NOPE:]
    out = np.zeros((n, H * D_V))
    for h in range(H):
        for i in range(n):
            z = np.array([q[h, i] @ k[h, j] / math.sqrt(d_k) for j in range(i + 1)])
            a = np.exp(z - z.max()) / np.exp(z - z.max()).sum()
            out[i, h * D_V:(h + 1) * D_V] = a @ v[h, :i + 1]
    return {"queries_rotated": q, "keys_rotated": k, "values": v, "latent_kv": c_kv, "output": out @ w["output"]}


def close(got: np.ndarray, want: np.ndarray) -> None:
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12 * max(1.0, np.abs(want).max()))


def test_the_example_by_hand():
    """examples/latent.yaml: token 3 'tea' = [1, 1, 0, 1]: [c_raw | k_r] = [3, 1 | 1, 1], c_KV = [3, 1]/√5 (rms 5
    within ε = 1e-6); head 1's key [c·(1, 0) | k_r] = [3/√5, 1, 1], its value c·(1, 1) = 4/√5; head 2's value
    c·(2, 0) = 6/√5; the shared rotary key is the same in both heads."""
    trace = attncli.compute(str(EXAMPLE))
    root5 = math.sqrt(5 + 1e-6)
    close(trace.latent_kv[2], np.array([3, 1]) / root5)
    close(trace.keys[:, 2], np.array([[3 / root5, 1, 1], [1 / root5, 1, 1]]))
    close(trace.values[:, 2, 0], np.array([4, 6]) / root5)
    assert (trace.spec.d_k, trace.spec.d_v, trace.spec.latent.d_nope) == (3, 1, 1)
    # x2 = [0, 1, 0, 0] at position 1 in head 1: q = [0, 0, 1] → [0, −sin 1, cos 1]; its score with k1 at 0 is
    # q_nope·k_nope + q_r′·k_r′ = 0 + (−sin 1)·1 + cos 1·0 = −sin 1
    assert trace.scores[0, 1, 0] == pytest.approx(-math.sin(1.0), abs=1e-15)
    assert trace.latent_queries is None and trace.spec.latent.r_kv == 2


@pytest.mark.parametrize("q_lora", [True, False])
@pytest.mark.parametrize("style", ["interleaved", "half", "interleaved_halves"])
def test_against_a_loop(q_lora, style):
    doc = document(1, q_lora=q_lora, style="interleaved" if style == "interleaved_halves" else style)
    want = loop(doc)
    doc["rope"]["style"] = style
    trace = attncli.compute(doc)
    for key in ("values", "latent_kv", "output"):
        close(getattr(trace, key), want[key])
    if style != "interleaved_halves":  # the same scores, the turned pairs written elsewhere in each head
        close(trace.queries_rotated, want["queries_rotated"])
        close(trace.keys_rotated, want["keys_rotated"])
    else:
        close(trace.scores, np.einsum("hid,hjd->hij", want["queries_rotated"], want["keys_rotated"]))


@pytest.mark.parametrize("extra", [{}, {"query_temperature": {"floor_scale": 2, "attn_scale": 0.5}},
                                   {"rope": {"dims": D_R, "part": "last", "attention_factor": 1.3}}])
def test_the_absorbed_queries_give_the_scores(extra):
    doc = document(2, **extra)
    trace = attncli.compute(doc)
    d_nope = trace.spec.latent.d_nope
    cache = np.concatenate([trace.latent_kv, trace.keys_rotated[0, :, d_nope:]], axis=1)  # (m, r_kv + d_r)
    assert trace.absorbed_queries.shape == (H, 7, R_KV + D_R)
    close(trace.absorbed_queries @ cache.T, trace.scores)
    w_uk = doc["weights"]["kv_up"].reshape(R_KV, H, NOPE + D_V)[:, 1, :NOPE]  # head 2's key columns
    q_nope = trace.queries_rotated[1, :, :NOPE] * (trace.query_temperature[:, None] if extra.get(
        "query_temperature") else 1.0)
    close(trace.absorbed_queries[1, :, :R_KV], q_nope @ w_uk.T)


@pytest.mark.parametrize("extra", [{"clip_qkv": 0.5}, {"qk_norm": {"kind": "rms"}}])
def test_no_absorbed_queries_with_what_does_not_commute(extra):
    trace = attncli.compute(document(3, **extra))
    assert trace.absorbed_queries is None and trace.keys is not None


@pytest.mark.parametrize("q_lora", [True, False])
@pytest.mark.parametrize("context", [False, True])
def test_streamed_equals_full(q_lora, context):
    doc = document(4, n=37, q_lora=q_lora)
    doc = json.loads(json.dumps(doc, default=lambda a: a.tolist()))
    if context:
        doc.update(context=np.random.default_rng(5).normal(size=(29, D_MODEL)).tolist(), mask="none")
    assert_same(spec_of(doc))


def test_only_latent_keys_need_no_attention(tmp_path):
    assert needs_no_attention(["latent_kv"]) and needs_no_attention(["latent_queries"])
    assert needs_no_attention(["absorbed_queries"])
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(document(6), default=lambda a: a.tolist()))
    full = attncli.compute(str(path))
    runner = CliRunner()
    for name, key in (("c_KV", "latent_kv"), ("latent_queries", "latent_queries"), ("Q_abs", "absorbed_queries"),
                      ("W_UKV", "weight_kv_up"), ("b_DKV", "bias_kv_down")):
        result = runner.invoke(app, ["compute", str(path), "-f", "json", "--only", name])
        assert result.exit_code == 0, result.stderr
        got = json.loads(result.stdout)
        assert set(got) - {"tokens", "context_tokens", "heads", "kv_heads", "d_k", "d_v", "scale"} == {key}
        want = getattr(full, key) if not key.startswith(("weight", "bias")) else full.spec.given(
            {"weight_kv_up": "latent.kv_up", "bias_kv_down": "latent.kv_down_bias"}[key])
        close(np.array(got[key]), want)
    result = runner.invoke(app, ["compute", str(path), "-f", "json", "--only", "output"])  # streamed
    close(np.array(json.loads(result.stdout)["output"]), full.output)


def test_without_latent_nothing_changes():
    doc = {"inputs": [[1.0, 2.0], [0.5, -1.0]], "rope": True}
    trace = attncli.compute(doc)
    assert trace.latent_kv is None and trace.absorbed_queries is None and trace.spec.latent is None


ERRORS = [
    (lambda d: d["weights"].update(kv_up=np.ones((R_KV, H * NOPE))), "weights.kv_up",
     "read as d_nope = 2 key columns then d_v value columns: that leaves d_v = 0"),
    (lambda d: d["weights"].update(kv_up=np.ones((R_KV, 10))), "weights.kv_up", "which 3 heads cannot split"),
    (lambda d: d["weights"].update(kv_up=np.ones((R_KV + 1, 15))), "weights.kv_up",
     "the latent (r_kv = 5: weights.kv_down's 9 columns less d_r = 4) has 5 numbers"),
    (lambda d: d["weights"].update(kv_down=np.ones((D_MODEL, D_R))), "weights.kv_down", "that leaves no latent"),
    (lambda d: d["weights"].update(kv_down=np.ones((D_MODEL + 1, 9))), "weights.kv_down", "inputs have 6 columns"),
    (lambda d: d["weights"].update(query_up=np.ones((R_Q, H * D_R))), "weights.query_up", "leaves no unrotated"),
    (lambda d: d["weights"].update(query_up=np.ones((R_Q + 1, 18))), "weights.query_up", "r_q = 4"),
    (lambda d: d["weights"].pop("kv_up"), "weights.kv_up", "is required with latent"),
    (lambda d: d["weights"].pop("query_up"), "weights.query_up", "is required"),
    (lambda d: d["weights"].update(query=np.ones((D_MODEL, 18))), "weights.query_down", "not both"),
    (lambda d: d["weights"].update(key=np.ones((D_MODEL, 18))), "weights.key", "is not used with latent"),
    (lambda d: d["latent"].pop("kv_norm"), "latent.kv_norm", "is required"),
    (lambda d: d["latent"].pop("query_norm"), "latent.query_norm", "is required with weights.query_down"),
    (lambda d: d["latent"].update(kv_nrom=1), "latent", "did you mean 'kv_norm'"),
    (lambda d: d["latent"]["kv_norm"].update(gamma=[1.0] * 4), "latent.kv_norm.gamma", "r_kv = 5"),
    (lambda d: d["rope"].update(part="first"), "rope.part", "must be last"),
    (lambda d: d.update(rope=True), "rope", "needs rope with dims"),
    (lambda d: d.update(kv_heads=1), "kv_heads", "every one of the 3 query heads"),
    (lambda d: d["bias"].update(kv_down=[0.0] * 3), "bias.kv_down", "gives 9 columns"),
    (lambda d: d.pop("latent"), "weights.query_down", "is used by multi-head latent attention: give latent:"),
    (lambda d: d.update(queries=np.ones((7, 18)), keys=np.ones((7, 18)), values=np.ones((7, 9))), "latent",
     "not used with queries, keys and values given directly"),
]


@pytest.mark.parametrize("change, where, words", ERRORS)
def test_a_wrong_document_is_refused_in_one_line(change, where, words):
    doc = copy.deepcopy(document(8))
    change(doc)
    with pytest.raises(AttnError) as error:
        attncli.compute(doc)
    message = str(error.value)
    assert message.startswith(f"<dict>: {where}: ") or f" {where}: " in message, message
    assert words in message and "\n" not in message, message


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_explain_works_the_latent_out_on_the_documents_numbers(lang):
    """--step latent: token 3's c_raw = (3, 1 | 1, 1) and c = [3, 1]/√5, the cache sizes (4 against 2·(3 + 1) = 8
    here, 576 against 128·(192 + 128) = 40960 for DeepSeek V3), and one score the absorbed way equal to q′·k′."""
    result = CliRunner().invoke(app, ["explain", str(EXAMPLE), "--step", "latent", "--query", "3", "--lang", lang,
                                      "--format", "json"])
    assert result.exit_code == 0, result.stderr
    step = json.loads(result.stdout)
    lines = "\n".join(step["lines"])
    assert "tea: (c_raw | k_r) = [1, 1, 0, 1] · W_DKV = (3, 1 | 1, 1)" in lines
    assert "[1.3416, 0.4472]" in lines
    assert "r_kv + d_r = 2 + 2 = 4,   h·(d_k + d_v) = 2·(3 + 1) = 8" in lines
    assert "576" in lines and "40960" in lines
    absorbed, naive = (line for line in step["lines"] if line.startswith("q_abs")).__next__().split(",   ")
    assert absorbed.split(" = ")[-1] == naive.split(" = ")[-1] == "4.6833"  # scores[0, 2, 2] = 4.68328…
    if lang == "zh":
        assert "缓存" in " ".join(step["text"])


def check_example(tmp_path, answer: dict, **changes) -> str:
    import yaml

    doc = yaml.safe_load(EXAMPLE.read_text())
    doc.update(changes, answer=answer)
    path = tmp_path / "answer.yaml"
    path.write_text(yaml.safe_dump(doc))
    result = CliRunner().invoke(app, ["check", str(path)], env={"COLUMNS": "200"})
    assert result.exit_code == 1, result.output
    return result.stdout


X = np.array([[1, 0, 0, 0], [0, 1, 0, 0], [1, 1, 0, 1]], dtype=float)
KV_DOWN = np.array([[1, 1, 1, 0], [1, -1, 0, 1], [0, 0, 0, 0], [1, 1, 0, 0]], dtype=float)


def test_check_names_kv_norm_forgotten(tmp_path):
    out = check_example(tmp_path, {"latent_kv": (X @ KV_DOWN[:, :2]).tolist()})  # c_raw, not normalised
    assert "hint: the latent was not normalised" in out


def test_check_names_the_rotated_part_taken_first(tmp_path):
    """Head 1's keys with the first two numbers turned: k = (k_nope | k_r) = [c·(1, 0) | k_r], turned by p rad."""
    c = (X @ KV_DOWN[:, :2]) / np.sqrt(np.mean((X @ KV_DOWN[:, :2]) ** 2, axis=1, keepdims=True) + 1e-6)
    k = np.concatenate([c[:, :1], X @ KV_DOWN[:, 2:]], axis=1)  # (3, 3)
    wrong = k.copy()
    for p in range(3):
        a, b = k[p, 0], k[p, 1]
        wrong[p, 0], wrong[p, 1] = a * math.cos(p) - b * math.sin(p), b * math.cos(p) + a * math.sin(p)
    out = check_example(tmp_path, {"head": 1, "keys_rotated": np.round(wrong, 4).tolist()})
    assert "hint: the rotation turned the wrong end of each head" in out


def test_check_names_the_shared_rotary_key_left_out(tmp_path):
    trace = attncli.compute(str(EXAMPLE))
    q_nope, k_nope = trace.queries[1, :, :1], trace.keys[1, :, :1]  # head 2, d_nope = 1
    out = check_example(tmp_path, {"head": 2, "scores": np.round(q_nope @ k_nope.T, 4).tolist()})
    assert "hint: the heads' keys lack the shared rotary key" in out


def test_check_names_the_yarn_mscale_once(tmp_path):
    """scale = m²/√3 with m = 0.1·1·ln 40 + 1 (DeepSeek V3's mscale_all_dim 1): the learner's m/√3."""
    m = 0.1 * math.log(40.0) + 1.0
    rope = {"dims": 2, "part": "last", "scaling": {"type": "yarn", "factor": 40, "original_max_position_embeddings": 4,
                                                   "mscale": 1, "mscale_all_dim": 1}}
    trace = attncli.compute(dict(yaml_doc(), rope=rope, scale=m * m / math.sqrt(3)))
    wrong = trace.scores[0] * m / math.sqrt(3)
    out = check_example(tmp_path, {"head": 1, "scaled_scores": np.where(np.tri(3) > 0, np.round(wrong, 4), None)
                                   .tolist()}, rope=rope, scale=m * m / math.sqrt(3))
    assert "hint: the YaRN factor m = 1.36889 was put on the scale once" in out


def yaml_doc() -> dict:
    import yaml

    return yaml.safe_load(EXAMPLE.read_text())
