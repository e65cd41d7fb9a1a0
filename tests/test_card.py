"""attncli card: each library's lines give the document's attention.

The torch lines (SDPA, FlexAttention, Hugging Face's mask functions) are run as the card prints them, on the arrays
its own `attncli compute … -o kernel.npz` command writes, and compared with attncli's outputs and lse.  FlashAttention,
JAX and FlashInfer are not installable here: their arguments are read by a small numpy version of what each
library documents (written here from their documentation and source, not from attncli's code):

    FlashAttention  i′ = i + m − n; causal j ≤ i′; window_size (l, r): i′ − l ≤ j ≤ i′ + r (−1 unbounded);
                    softcap c·tanh(scale·s / c); alibi −slope·|i′ − j|; lse natural
    JAX (XLA path)  is_causal j ≤ i; local_window_size (l, r): i − l ≤ j ≤ i + r; bias added; mask True = attend
    FlashInfer      causal j ≤ i′ (bottom-right); window_left w: j ≥ i′ − w; logits_soft_cap as FlashAttention;
                    custom_mask replaces causal; lse base 2
"""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest

from attncli.cli.main import app

RNG = np.random.default_rng(7)


def _doc(n=5, m=None, h=2, g=None, d=3, d_v=None, **extra) -> dict:
    rng = np.random.default_rng(n * 31 + h * 7 + (m or 0))
    g = g or h
    d_v = d_v or d
    doc = {"inputs": rng.normal(size=(n, 6)).tolist(), "heads": h, "kv_heads": g,
           "weights": {"query": rng.normal(size=(6, h * d)).tolist(), "key": rng.normal(size=(6, g * d)).tolist(),
                       "value": rng.normal(size=(6, g * d_v)).tolist()}}
    if m is not None:
        doc["context"] = rng.normal(size=(m, 6)).tolist()
    return {**doc, **extra}


DOCUMENTS = {
    "plain": _doc(),
    "causal": _doc(mask="causal"),
    "gqa_window": _doc(n=7, h=4, g=2, d_v=2, mask={"causal": True, "window": 3}),
    "two_sided_window": _doc(n=6, mask={"window": 2}),
    "lower_right": _doc(n=3, m=6, mask={"causal": "lower_right"}),
    "upper_left_cross": _doc(n=3, m=6, mask={"causal": "upper_left", "window": 2}),
    "chunk_padding": _doc(n=6, mask={"causal": True, "chunk": 4, "keys": [1, 1, 1, 1, 1, 0]}),
    "matrix_per_head": _doc(n=4, mask={"matrix": np.tril(np.ones((2, 4, 4)), k=1).astype(int).tolist()}),
    "softcap_alibi": _doc(n=5, h=4, softcap=1.5, mask="causal", score_bias={"alibi": True}),
    "alibi_two_sided": _doc(n=5, h=2, score_bias={"alibi": True}),
    "bias_matrix": _doc(n=4, score_bias={"matrix": RNG.normal(size=(2, 4, 4)).tolist()}),
    "sinks_empty": _doc(n=4, sinks=[0.5, -1.0], mask={"keys": [0, 0, 0, 0]}),
    "sinks_causal_gqa": _doc(n=5, h=4, g=2, sinks=[0.3, -0.2, 1.1, 0.0], mask={"causal": True, "window": 2}),
}


def _card(runner, tmp_path, name: str, *args: str) -> dict:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(DOCUMENTS[name]))
    result = runner.invoke(app, ["card", str(path), "-f", "json", *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def torch():
    torch = pytest.importorskip("torch")
    pytest.importorskip("torch.nn.attention.flex_attention")
    return torch


@pytest.mark.parametrize("name", sorted(DOCUMENTS))
@pytest.mark.parametrize("library", ["sdpa", "flex", "hf"])
def test_the_torch_lines_give_attnclis_numbers(torch, runner, tmp_path, monkeypatch, name, library):
    card = _card(runner, tmp_path, name)
    command = card["command"].split()
    assert command[:3] == ["attncli", "compute", str(tmp_path / f"{name}.json")]
    monkeypatch.chdir(tmp_path)
    written = runner.invoke(app, command[1:])  # the card's own command writes kernel.npz
    assert written.exit_code == 0, written.output
    entry = next(e for e in card["libraries"] if e["library"] == library)
    if not entry["equivalent"]:
        assert library == "sdpa" and DOCUMENTS[name].get("softcap") and entry["missing"][0]["id"] == "no_softcap"
        return
    scope: dict = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # flex_attention warns that it runs uncompiled on the CPU
        exec("\n".join(card["setup"] + entry["code"]), scope)
    import attncli

    trace = attncli.compute(DOCUMENTS[name])
    out, lse = trace.head_outputs, np.where(np.isfinite(trace.lse), trace.lse, np.nan)
    if library == "hf":
        got, allowed = scope["allowed"], trace.spec.allowed
        if got is None:
            assert allowed is None
        else:
            assert np.array_equal(np.broadcast_to(got.numpy(), allowed.shape), allowed)
        return
    got = scope["out"][0].numpy()
    assert np.abs(got - out).max() <= 1e-12 * max(1.0, np.abs(out).max())
    if library == "flex":
        got_lse = scope["lse"][0].numpy()
        finite = np.isfinite(lse)
        assert np.array_equal(np.isfinite(got_lse), finite)  # −inf exactly where attncli writes null
        assert np.abs(got_lse[finite] - lse[finite]).max(initial=0) <= 1e-12 * max(1.0, np.abs(lse[finite]).max(
            initial=0))


def _softmax_out(z, allowed, v):
    z = np.where(allowed, z, -np.inf)
    top = np.max(z, axis=-1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    e = np.exp(z - top)
    total = e.sum(-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, (e / np.where(total > 0, total, 1)) @ v, 0.0), np.log(total[..., 0]) + top[..., 0]


def _flash_reading(args, q, k, v):
    n, m = q.shape[1], k.shape[1]
    i = np.arange(n)[:, None] + m - n
    j = np.arange(m)[None, :]
    z = args["softmax_scale"] * q @ k.transpose(0, 2, 1)
    if args["softcap"]:
        z = args["softcap"] * np.tanh(z / args["softcap"])
    if args["alibi_slopes"] is not None:
        z = z - np.array(args["alibi_slopes"])[:, None, None] * np.abs(i - j)
    left, right = args["window_size"]
    allowed = np.ones((n, m), dtype=bool)
    if args["causal"]:
        right = 0
        allowed &= j <= i
    if left >= 0:
        allowed &= j >= i - left
    if right >= 0:
        allowed &= j <= i + right
    return _softmax_out(z, allowed, v)


def _jax_reading(args, q, k, v, bias, allowed_doc):
    n, m = q.shape[1], k.shape[1]
    i, j = np.arange(n)[:, None], np.arange(m)[None, :]
    z = args["scale"] * q @ k.transpose(0, 2, 1) + (bias if args["bias"] else 0.0)
    allowed = np.ones((n, m), dtype=bool) & (allowed_doc if args["mask"] else True)
    if args["is_causal"]:
        allowed = allowed & (j <= i)
    if args["local_window_size"] is not None:
        left, right = args["local_window_size"]
        allowed = allowed & (i <= j + left) & (i >= j - right)
    return _softmax_out(z, allowed, v)


def _flashinfer_reading(args, q, k, v, allowed_doc):
    n, m = q.shape[1], k.shape[1]
    i = np.arange(n)[:, None] + m - n
    j = np.arange(m)[None, :]
    z = args["sm_scale"] * q @ k.transpose(0, 2, 1)
    if args["logits_soft_cap"]:
        z = args["logits_soft_cap"] * np.tanh(z / args["logits_soft_cap"])
    allowed = allowed_doc if args["custom_mask"] else np.ones((n, m), dtype=bool)
    if args["causal"]:
        allowed = allowed & (j <= i)
    if args["window_left"] >= 0:
        allowed = allowed & (j >= i - args["window_left"])
    out, lse = _softmax_out(z, allowed, v)
    return out, lse / math.log(2)


@pytest.mark.parametrize("name", sorted(DOCUMENTS))
def test_the_other_libraries_arguments_mean_the_document(runner, tmp_path, name):
    import attncli

    card = _card(runner, tmp_path, name)
    trace = attncli.compute(DOCUMENTS[name])
    out, lse = trace.head_outputs, np.where(np.isfinite(trace.lse), trace.lse, np.nan)
    h, g = trace.spec.heads, trace.spec.kv_heads
    q = trace.kernel_queries
    k, v = (np.repeat(x, h // g, axis=0) for x in (trace.kernel_keys, trace.values))
    allowed = np.ones((h, trace.spec.n, trace.spec.m), dtype=bool) if trace.spec.allowed is None else trace.spec.allowed
    bias = 0.0 if trace.score_bias is None else np.nan_to_num(trace.score_bias, nan=0.0, neginf=0.0)
    entries = {e["library"]: e for e in card["libraries"]}
    sinks = DOCUMENTS[name].get("sinks")
    readings = {"flash": lambda a: _flash_reading(a, q, k, v),
                "jax": lambda a: _jax_reading(a, q, k, v, bias, allowed),
                "flashinfer": lambda a: _flashinfer_reading(a, q, k, v, allowed)}
    for library, reading in readings.items():
        entry = entries[library]
        if not entry["equivalent"]:
            continue
        got, got_lse = reading(entry["arguments"])
        if sinks is not None:  # the card's correction after the kernel: o·σ(lse − s_h)
            s = np.array(sinks)[:, None]
            natural = got_lse * (math.log(2) if library == "flashinfer" else 1.0)
            got = got * (1.0 / (1.0 + np.exp(s - natural)))[..., None]
            got = np.nan_to_num(got)
        assert np.abs(got - out).max() <= 1e-12 * max(1.0, np.abs(out).max()), library
        if library != "jax" and sinks is None:
            finite = np.isfinite(lse)
            natural = got_lse * (math.log(2) if library == "flashinfer" else 1.0)
            assert np.abs(natural[finite] - lse[finite]).max(initial=0) <= 1e-12 * max(1.0, np.abs(lse).max(
                initial=0, where=finite))


@pytest.mark.parametrize(("name", "library", "reason"), [
    ("softcap_alibi", "sdpa", "no_softcap"), ("softcap_alibi", "jax", "no_softcap"),
    ("upper_left_cross", "flash", "top_left"), ("chunk_padding", "flash", "no_chunk"),
    ("chunk_padding", "flash", "flash_keys"), ("matrix_per_head", "flash", "no_matrix"),
    ("matrix_per_head", "flashinfer", "per_head"), ("alibi_two_sided", "flash", "flash_alibi"),
    ("bias_matrix", "flash", "no_bias"), ("softcap_alibi", "flashinfer", "flashinfer_bias"),
    ("sinks_empty", "jax", "jax_sinks"),
])
def test_a_library_that_cannot_say_it_says_why(runner, tmp_path, name, library, reason):
    entry = next(e for e in _card(runner, tmp_path, name)["libraries"] if e["library"] == library)
    assert not entry["equivalent"] and entry["code"] == []
    assert reason in [m["id"] for m in entry["missing"]]


def test_the_conventions_in_each_librarys_words(runner, tmp_path):
    """Hand-read: a causal window of W = 3 keys (i − 3 < j ≤ i) is (2, 0) in FlashAttention and JAX, window_left 2
    in FlashInfer and sliding_window_overlay(3) in Hugging Face; two-sided |i − j| < 2 is (1, 1) and the
    bidirectional overlay's 1."""
    causal = {e["library"]: e for e in _card(runner, tmp_path, "gqa_window")["libraries"]}
    assert causal["flash"]["arguments"]["window_size"] == [2, 0] and causal["flash"]["arguments"]["causal"]
    assert causal["jax"]["arguments"]["local_window_size"] == [2, 0]
    assert causal["flashinfer"]["arguments"]["window_left"] == 2
    assert "sliding_window_overlay(3)" in "\n".join(causal["hf"]["code"])
    assert "enable_gqa=True" in "\n".join(causal["sdpa"]["code"])
    two = {e["library"]: e for e in _card(runner, tmp_path, "two_sided_window")["libraries"]}
    assert two["flash"]["arguments"]["window_size"] == [1, 1] and not two["flash"]["arguments"]["causal"]
    assert "sliding_window_bidirectional_overlay(1)" in "\n".join(two["hf"]["code"])
    assert {e: (x["lse_base"], x["lse_shape"]) for e, x in causal.items()} == {
        "sdpa": (None, None), "flex": ("e", "(b, h, n)"), "flash": ("e", "(b, h, n)"), "hf": (None, None),
        "jax": (None, None), "flashinfer": ("2", "(n, h)")}


def test_the_card_on_a_terminal_and_in_chinese(runner, tmp_path):
    (tmp_path / "w.json").write_text(json.dumps(DOCUMENTS["gqa_window"]))
    text = runner.invoke(app, ["card", str(tmp_path / "w.json"), "--library", "flash"], env={"COLUMNS": "80"})
    assert text.exit_code == 0, text.output
    assert "FlashAttention" in text.stdout and "window_size=(2, 0)" in text.stdout and "SDPA" not in text.stdout
    assert "-o kernel.npz --only kernel_queries --only kernel_keys --only values" in text.stdout
    zh = runner.invoke(app, ["card", str(tmp_path / "w.json"), "--lang", "zh", "-l", "flashinfer"])
    assert zh.exit_code == 0 and "约定对照卡" in zh.stdout and "以 2 为底" in zh.stdout


@pytest.mark.parametrize(("extra", "args", "where"), [
    ({"normalize": "sum"}, [], "normalize"), ({"score": "additive", "additive_dim": 2}, [], "score"),
])
def test_what_no_kernel_computes_is_one_line(runner, tmp_path, extra, args, where):
    path = tmp_path / "d.json"
    path.write_text(json.dumps(_doc(**extra)))
    result = runner.invoke(app, ["card", str(path), *args])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error:") and where in lines[0] and "Traceback" not in result.output
