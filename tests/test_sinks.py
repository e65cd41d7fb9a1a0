"""gpt-oss's attention sinks, the log-sum-exp and the kernel's view (Part 3): against a loop written here, torch's
logsumexp, Hugging Face's GptOssAttention (eager, float64, sliding window through its own mask), and the streamed
path (the fused tiles and the generic blocks) to 1e-12, with huge scores and queries that may see no key."""

from __future__ import annotations

import json
import math
import os

import numpy as np
import pytest
from stream_helpers import assert_equal_traces, document, spec_of

from attncli.cli import app
from attncli.core import stream
from attncli.core.pipeline import attend
from attncli.core.stream import attend_streamed

TOL = 1e-12


def naive(z: np.ndarray, allowed: np.ndarray, sinks: np.ndarray | None, v: np.ndarray):
    """Weights, sink shares, lse and H by loops over heads and rows, in exact-ish Python floats (math.fsum)."""
    h, n, m = z.shape
    a, share, lse, out = np.zeros_like(z), np.zeros((h, n)), np.zeros((h, n)), np.zeros((h, n, v.shape[-1]))
    for head in range(h):
        for i in range(n):
            terms = [float(z[head, i, j]) for j in range(m) if allowed[head, i, j]]
            if sinks is not None:
                terms.append(float(sinks[head]))
            if not terms:
                lse[head, i] = -math.inf
                continue
            top = max(terms)
            total = math.fsum(math.exp(t - top) for t in terms)
            lse[head, i] = top + math.log(total)
            for j in range(m):
                if allowed[head, i, j]:
                    a[head, i, j] = math.exp(float(z[head, i, j]) - top) / total
            share[head, i] = math.exp(float(sinks[head]) - top) / total if sinks is not None else 0.0
            out[head, i] = a[head, i] @ v[head]
    return a, share, lse, out


def close(got: np.ndarray, want: np.ndarray, tol: float = TOL) -> bool:
    assert np.array_equal(np.isneginf(got), np.isneginf(want))
    got, want = got[np.isfinite(want)], want[np.isfinite(want)]
    return got.shape == want.shape and bool(np.abs(got - want).max(initial=0.0) <= tol * max(1.0, np.abs(want).max()))


MASK = {"matrix": [[0] * 6] + [[1] * (i + 1) + [0] * (5 - i) for i in range(1, 6)]}  # query 1 sees no key


@pytest.mark.parametrize("sinks", [None, [0.5, -1.2], [40.0, -3.0], [-900.0, 900.0]])
def test_the_weights_sink_shares_and_lse_are_the_loops(sinks):
    extra = {"mask": MASK} if sinks is None else {"mask": MASK, "sinks": sinks}
    spec = spec_of(document(3, n=6, heads=2, **extra))
    trace = attend(spec)
    a, share, lse, out = naive(trace.scaled_scores, spec.allowed, spec.sinks, trace.values)
    assert close(trace.weights, a) and close(trace.lse, lse) and close(trace.head_outputs, out)
    assert (trace.sink_weights is None) == (sinks is None)
    if sinks is not None:
        assert close(trace.sink_weights, share)
        assert np.allclose(trace.weights.sum(-1) + trace.sink_weights, 1.0, atol=1e-14)  # a row sums to 1 − σ
        assert np.array_equal(trace.lse[:, 0], spec.sinks) and np.all(trace.sink_weights[:, 0] == 1.0)
        assert trace.empty_queries == ()  # the sink takes the whole row: no warning
    else:
        assert trace.empty_queries == (0,)


@pytest.mark.torch
def test_lse_is_torchs_logsumexp_over_the_allowed_scores():
    torch = pytest.importorskip("torch")
    for sinks in (None, [0.5, -1.2]):
        extra = {"mask": MASK} if sinks is None else {"mask": MASK, "sinks": sinks}
        spec = spec_of(document(5, n=6, heads=2, **extra))
        trace = attend(spec)
        z = torch.tensor(trace.scaled_scores).masked_fill(~torch.tensor(np.array(spec.allowed)), -torch.inf)
        if sinks is not None:
            z = torch.cat([z, torch.tensor(spec.sinks).reshape(-1, 1, 1).expand(-1, 6, 1)], dim=-1)
        assert close(trace.lse, torch.logsumexp(z, dim=-1).numpy())


STREAMED = [
    ({"sinks": [0.5, -1.2, 3.0, 0.0], "mask": "causal"}, 1.0),
    ({"sinks": [80.0, -80.0, 900.0, -900.0]}, 1.0),  # beyond EXP_LIMIT: every head shifted
    ({"sinks": [1.0, 2.0, 3.0, 4.0], "mask": {"causal": True, "window": 3}}, 30.0),  # huge scores: the row maximum
    ({"sinks": [1.0, -2.0, 0.0, 5.0], "mask": {"keys": [0] * 41}}, 1.0),  # no query sees a key
    ({"sinks": [1.0, -2.0, 0.0, 5.0], "mask": {"matrix": np.tril(np.ones((41, 41)), -1).tolist()}}, 1.0),
    ({"mask": {"matrix": np.tril(np.ones((41, 41)), -1).tolist()}}, 1.0),  # no sinks, query 1 without a key
    ({"sinks": [1.0, -2.0, 0.0, 5.0], "softcap": 5.0, "score_bias": {"alibi": True}, "mask": "causal"}, 3.0),
]


@pytest.mark.parametrize("extra, spread", STREAMED)
@pytest.mark.parametrize("path", ["tiles", "generic"])
def test_the_streamed_path_gives_the_full_ones_numbers(monkeypatch, extra, spread, path):
    monkeypatch.setattr(stream, "BLOCK_CELLS", 24)  # many small tiles
    monkeypatch.setattr(stream, "GENERIC_BLOCK_BYTES", 8 * 4 * 41 * 3)  # three rows per block
    if path == "generic":
        monkeypatch.setattr(stream, "fast", lambda spec: False)
    spec = spec_of(document(7, spread=spread, kv_heads=2, **extra))
    full = attend(spec)
    for threads in (1, 2):
        streamed = attend_streamed(spec, threads=threads)
        assert_equal_traces(full, streamed)
        assert streamed.lse is not None and (streamed.sink_weights is None) == ("sinks" not in extra)


def test_huge_scores_with_sinks_take_the_checked_tiles(monkeypatch):
    """Scores near 1e300 (each tile checked, the row maximum always subtracted): the streamed numbers are attend's."""
    monkeypatch.setattr(stream, "BLOCK_CELLS", 24)
    data = document(11, n=20, heads=2, spread=1.0, sinks=[1e5, -1e5], mask="causal", scale=1e298)
    spec = spec_of(data)
    assert_equal_traces(attend(spec), attend_streamed(spec, threads=2))


def _run(runner, tmp_path, doc, *args):
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(doc))
    return runner.invoke(app, ["compute", str(path), *args])


def test_json_null_for_a_row_without_keys_and_only_lse_streams(runner, tmp_path, monkeypatch):
    doc = document(2, n=6, heads=2, mask=MASK)
    result = _run(runner, tmp_path, doc, "--format", "json")
    data = json.loads(result.stdout)
    assert data["lse"][0][0] is None and data["lse"][1][0] is None and "sink_weights" not in data
    called = []
    monkeypatch.setattr(stream, "attend_streamed", lambda spec, *a, **k: called.append(1) or attend(spec))
    only = json.loads(_run(runner, tmp_path, doc, "--format", "json", "--only", "lse").stdout)
    assert only["lse"] == data["lse"] and called  # --only lse never needs the n × m matrices
    npz = tmp_path / "out.npz"
    assert _run(runner, tmp_path, doc, "-o", str(npz), "--only", "lse").exit_code == 0
    assert np.isneginf(np.load(npz)["lse"][:, 0]).all()


@pytest.mark.parametrize("extra, why", [({"normalize": "sum"}, "normalize: softmax"),
                                        ({"score": "additive", "weights": {"w1": [[1.0]] * 8, "w2": [[1.0]] * 8,
                                                                           "v": [1.0]}}, "score: dot")])
def test_no_lse_without_a_softmax_of_dot_products(runner, tmp_path, extra, why):
    doc = {"inputs": document(1, n=3)["inputs"], **extra}
    data = json.loads(_run(runner, tmp_path, doc, "--format", "json").stdout)
    assert "lse" not in data
    result = _run(runner, tmp_path, doc, "--format", "json", "--only", "lse")
    assert result.exit_code == 2 and why in result.stderr and result.stdout == ""


def test_the_kernel_view_only_when_asked(runner, tmp_path):
    doc = document(4, n=5, heads=2, kv_heads=1, rope=True)
    data = json.loads(_run(runner, tmp_path, doc, "--format", "json").stdout)
    assert "kernel_queries" not in data and "kernel_keys" not in data
    only = json.loads(_run(runner, tmp_path, doc, "--format", "json", "--only", "kernel_queries",
                           "--only", "kernel_keys").stdout)
    assert only["kernel_queries"] == data["queries_rotated"] and only["kernel_keys"] == data["keys_rotated"]
    plain = document(4, n=5, heads=2)
    only = json.loads(_run(runner, tmp_path, plain, "--format", "json", "--only", "kernel_queries").stdout)
    assert only["kernel_queries"] == json.loads(_run(runner, tmp_path, plain, "--format", "json").stdout)["queries"]
    npz = tmp_path / "out.npz"
    assert _run(runner, tmp_path, doc, "-o", str(npz)).exit_code == 0 and "kernel_keys" not in np.load(npz)
    assert _run(runner, tmp_path, doc, "-o", str(npz), "--only", "kernel_keys").exit_code == 0
    assert np.load(npz)["kernel_keys"].shape == (1, 5, 4)


@pytest.mark.parametrize("value, message", [([1.0, 2.0, 3.0], "is 3 but there are 2 query heads"),
                                            ("x", "sinks"), ([1.0, float("nan")], "sinks")])
def test_wrong_sinks_are_named(runner, tmp_path, value, message):
    doc = document(1, n=3, heads=2, sinks=value)
    result = _run(runner, tmp_path, doc, "--format", "json")
    assert result.exit_code == 2 and "sinks" in result.stderr and message in result.stderr, result.stderr


def test_sinks_need_a_softmax(runner, tmp_path):
    result = _run(runner, tmp_path, document(1, n=3, heads=1, sinks=[0.0], normalize="sum"), "--format", "json")
    assert result.exit_code == 2 and "sinks: " in result.stderr and "normalize: softmax" in result.stderr


# ---------------------------------------------------------------- Hugging Face's GptOssAttention


@pytest.mark.torch
@pytest.mark.parametrize("window", [None, 3])
def test_gpt_oss_attention(monkeypatch, window):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers", minversion="5.23")
    masking = pytest.importorskip("transformers.masking_utils")
    gpt_oss = pytest.importorskip("transformers.models.gpt_oss.modeling_gpt_oss")
    os.environ["HF_HUB_OFFLINE"] = "1"
    h, g, d, n, d_model = 4, 2, 4, 7, 16
    cfg = transformers.GptOssConfig(vocab_size=16, num_hidden_layers=1, hidden_size=d_model, num_attention_heads=h,
                                    num_key_value_heads=g, head_dim=d, sliding_window=window or 128,
                                    layer_types=["sliding_attention" if window else "full_attention"])
    cfg._attn_implementation = "eager"
    module = gpt_oss.GptOssAttention(cfg, 0)
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=gen, dtype=torch.float64) * 0.5)
        module.sinks.copy_(torch.tensor([0.5, -1.0, 2.5, 0.0]))
    module = module.to(torch.float64).eval()
    probs = []
    softmax = torch.nn.functional.softmax
    monkeypatch.setattr(torch.nn.functional, "softmax", lambda *a, **k: probs.append(softmax(*a, **k)) or probs[-1])
    x = torch.randn((1, n, d_model), generator=gen, dtype=torch.float64)
    freqs = 1.0 / 150000.0 ** (np.arange(0, d, 2) / d)
    angle = torch.tensor(np.outer(np.arange(n, dtype=np.float64), freqs))[None]  # gpt-oss: cos, sin of d/2 angles
    fn = masking.sliding_window_causal_mask_function(window) if window else masking.causal_mask_function
    mask = masking.eager_mask(batch_size=1, q_length=n, kv_length=n, mask_function=fn, dtype=torch.float64)
    with torch.no_grad():
        y, weights = module(x, (angle.cos(), angle.sin()), mask)
    T = lambda linear: linear.weight.detach().numpy().T.tolist()  # noqa: E731
    doc = {"inputs": x[0].numpy().tolist(), "heads": h, "kv_heads": g,
           "weights": {"query": T(module.q_proj), "key": T(module.k_proj), "value": T(module.v_proj),
                       "output": T(module.o_proj)},
           "bias": {name: getattr(module, f"{name[0]}_proj").bias.detach().numpy().tolist()
                    for name in ("query", "key", "value", "output")},
           "rope": {"frequencies": freqs.tolist()}, "sinks": module.sinks.detach().numpy().tolist(),
           "mask": {"causal": True, **({"window": window} if window else {})}}
    trace = attend(spec_of(doc))
    assert close(trace.weights, weights[0].numpy())
    assert close(trace.sink_weights, probs[-1][0, ..., -1].numpy())
    assert close(trace.output, y[0].numpy())
    for threads in (1, 2):
        assert_equal_traces(trace, attend_streamed(spec_of(doc), threads=threads))


# ---------------------------------------------------------------- views: heat map, tables, explain, check

SMALL = {"tokens": ["a", "b", "c"], "inputs": [[1, 0, 1, 0], [0, 2, 0, 2], [1, 1, 1, 1]], "heads": 2,
         "sinks": [0.5, -1.2], "mask": {"matrix": [[0, 0, 0], [1, 1, 0], [1, 1, 1]]}}


def test_the_heat_map_shows_the_sinks_share_beside_each_row(runner, tmp_path):
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(SMALL))
    one = runner.invoke(app, ["heatmap", str(path), "--head", "1"], env={"COLUMNS": "80", "NO_COLOR": "1"})
    assert one.exit_code == 0, one.output
    lines = one.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert any(line.rstrip().endswith("│    sink") for line in lines)
    assert any(line.startswith("a ") and line.rstrip().endswith("1.00") for line in lines)  # no key: all to the sink
    assert any(line.startswith("b ") and line.rstrip().endswith("0.08") for line in lines)  # σ = 0.0843
    assert "sink (σ)" in one.stdout and "Warning" not in one.output
    both = runner.invoke(app, ["heatmap", str(path)], env={"COLUMNS": "80", "NO_COLOR": "1"})
    assert both.exit_code == 0 and "│σ" in both.stdout.replace(" ", "")


def test_tables_show_sigma_and_lse_on_request(runner, tmp_path):
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(SMALL))
    tables = runner.invoke(app, ["compute", str(path)], env={"COLUMNS": "100"}).stdout
    assert "Head 1 · Sink share  σ = e^s / (Σ e^z + e^s)   3 × 1" in tables and "Log-sum-exp" not in tables
    lse = runner.invoke(app, ["compute", str(path), "--only", "lse", "--head", "2"], env={"COLUMNS": "100"}).stdout
    assert "LSE = ln(Σ e^z + e^s)" in lse and "-1.2000" in lse  # query a: lse = s_2
    csv = runner.invoke(app, ["compute", str(path), "--only", "sink_weights", "--format", "csv"]).stdout
    assert csv.splitlines()[:2] == ["head,token,σ", "1,a,1.0"]


@pytest.mark.parametrize("lang, words", [("en", "the sink takes σ = 0.0843"), ("zh", "汇拿走了 “b” 的 σ = 0.0843")])
def test_explain_says_what_the_sink_took(runner, tmp_path, lang, words):
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(SMALL))
    result = runner.invoke(app, ["explain", str(path), "--step", "5", "--query", "2", "--lang", lang],
                           env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.output
    text = " ".join(result.stdout.split())
    assert words in text and "Σ = 1 + 16.9188 + 1.6487 = 19.5675" in text


@pytest.mark.parametrize("lang, words", [("en", "the sink was left out of the denominator"), ("zh", "分母里漏掉了汇")])
def test_check_names_a_sink_left_out(runner, tmp_path, lang, words):
    without = {key: value for key, value in SMALL.items() if key != "sinks"}
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps(without))
    output = json.loads(runner.invoke(app, ["compute", str(plain), "--format", "json", "--only", "output"]).stdout)
    path = tmp_path / "doc.json"
    path.write_text(json.dumps({**SMALL, "answer": {"output": output["output"]}}))
    result = runner.invoke(app, ["check", str(path), "--lang", lang], env={"COLUMNS": "400"})
    assert words in " ".join(result.stdout.split()), result.output


def test_the_kernel_view_of_an_additive_score_is_what_the_score_reads(runner, tmp_path):
    """score: additive has no Q·Kᵀ, but its score still reads one query and one key: kernel_queries and kernel_keys
    are those (here rotated and clipped), and vᵀ·tanh(q·W₁ + k·W₂) of them, by a loop, is JSON's `scores`."""
    rng = np.random.default_rng(8)
    w1, w2, v = rng.normal(size=(4, 3)), rng.normal(size=(4, 3)), rng.normal(size=3)
    doc = {"inputs": rng.normal(size=(5, 8)).tolist(), "heads": 2, "rope": True, "clip_qkv": 0.8, "score": "additive",
           "weights": {"w1": w1.tolist(), "w2": w2.tolist(), "v": v.tolist()}}
    data = json.loads(_run(runner, tmp_path, doc, "--format", "json").stdout)
    only = json.loads(_run(runner, tmp_path, doc, "--format", "json", "--only", "kernel_queries",
                           "--only", "kernel_keys").stdout)
    assert only["kernel_queries"] == data["queries_rotated"] and only["kernel_keys"] == data["keys_rotated"]
    q, k = np.array(only["kernel_queries"]), np.array(only["kernel_keys"])
    loop = [[[float(v @ np.tanh(q[h, i] @ w1 + k[h, j] @ w2)) for j in range(5)] for i in range(5)] for h in range(2)]
    np.testing.assert_allclose(data["scores"], loop, rtol=1e-13, atol=1e-13)
