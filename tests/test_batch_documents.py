"""A batch of sequences (layout: bshd / bhsd / thd): each sequence's numbers are those of a naive numpy attention
run on that sequence alone (causal aligned bottom-right, grouped heads, a soft cap), and check --against judges a
kernel's batched result sequence by sequence."""

from __future__ import annotations

import json

import numpy as np
import pytest

from attncli.cli.main import app

RNG = np.random.default_rng(11)
B, N, M, H, G, D, DV = 3, 4, 6, 4, 2, 3, 2


def naive(q, k, v, causal=None, softcap=None):
    """q (h, n, d), k (g, m, d), v (g, m, d_v) -> (out (h, n, d_v), lse (h, n)), one loop per head and row."""
    h, n, m = q.shape[0], q.shape[1], k.shape[1]
    out, lse = np.zeros((h, n, v.shape[2])), np.zeros((h, n))
    for a in range(h):
        kv = a // (h // k.shape[0])
        for i in range(n):
            z = np.array([q[a, i] @ k[kv, j] / np.sqrt(q.shape[2]) for j in range(m)])
            if softcap:
                z = softcap * np.tanh(z / softcap)
            keep = [j for j in range(m) if causal is None or j <= i + (m - n if causal == "lower_right" else 0)]
            e = np.exp(z[keep] - z[keep].max())
            out[a, i] = (e / e.sum()) @ v[kv, keep]
            lse[a, i] = np.log(e.sum()) + z[keep].max()
    return out, lse


def _write(tmp_path, layout: str, **extra):
    if layout == "thd":
        cu_q, cu_k = [0, 2, 5, 9], [0, 3, 7, 12]
        q, k, v = RNG.normal(size=(9, H, D)), RNG.normal(size=(12, G, D)), RNG.normal(size=(12, G, DV))
        parts = [(q[cu_q[i]:cu_q[i + 1]].transpose(1, 0, 2), k[cu_k[i]:cu_k[i + 1]].transpose(1, 0, 2),
                  v[cu_k[i]:cu_k[i + 1]].transpose(1, 0, 2)) for i in range(3)]
        extra = {"cu_seqlens_q": cu_q, "cu_seqlens_k": cu_k, **extra}
    else:
        shape = (lambda s, h, d: (B, s, h, d)) if layout == "bshd" else (lambda s, h, d: (B, h, s, d))
        q, k, v = RNG.normal(size=shape(N, H, D)), RNG.normal(size=shape(M, G, D)), RNG.normal(size=shape(M, G, DV))
        per = (lambda a, i: a[i].transpose(1, 0, 2)) if layout == "bshd" else (lambda a, i: a[i])
        parts = [(per(q, i), per(k, i), per(v, i)) for i in range(B)]
    for name, a in (("q", q), ("k", k), ("v", v)):
        np.save(tmp_path / f"{name}.npy", a)
    doc = {"layout": layout, "queries": "q.npy", "keys": "k.npy", "values": "v.npy", **extra}
    (tmp_path / "batch.json").write_text(json.dumps(doc))
    return tmp_path / "batch.json", parts


@pytest.mark.parametrize("layout", ["bshd", "bhsd", "thd"])
def test_each_sequence_is_its_own_attention(runner, tmp_path, layout):
    path, parts = _write(tmp_path, layout, mask={"causal": "lower_right"}, softcap=3.0)
    result = runner.invoke(app, ["compute", str(path), "-f", "json", "--only", "head_outputs", "--only", "lse"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["layout"] == layout and len(data["batch"]) == len(parts)
    for got, (q, k, v) in zip(data["batch"], parts):
        out, lse = naive(q, k, v, "lower_right", 3.0)
        assert np.abs(np.array(got["head_outputs"]) - out).max() <= 1e-12 * np.abs(out).max()
        assert np.abs(np.array(got["lse"]) - lse).max() <= 1e-12 * np.abs(lse).max()
        assert got["heads"] == H and got["kv_heads"] == G


def test_tables_and_arrays_name_each_sequence(runner, tmp_path, monkeypatch):
    path, parts = _write(tmp_path, "bshd", mask="causal")
    text = runner.invoke(app, ["compute", str(path), "--only", "weights", "--head", "1"])
    assert text.exit_code == 0 and [line for line in text.stdout.splitlines() if "Sequence" in line] == [
        f"Sequence {i} · Head 1 · Weights  A = softmax(S / √3)   4 × 6" for i in (1, 2, 3)]
    monkeypatch.chdir(tmp_path)
    assert runner.invoke(app, ["compute", str(path), "-o", "out.npz", "--only", "head_outputs"]).exit_code == 0
    with np.load(tmp_path / "out.npz") as saved:
        assert sorted(saved.files) == sorted([f"batch[{i}].head_outputs" for i in range(B)] +
                                             [f"batch[{i}].scale" for i in range(B)])
        assert np.abs(saved["batch[2].head_outputs"] - naive(*parts[2], "upper_left")[0]).max() <= 1e-12


@pytest.mark.parametrize(("layout", "extra", "message"), [
    ("bshd", {"mask": {"matrix": [[1]]}}, "mask: with layout: takes causal, window and chunk"),
    ("bshd", {"tokens": ["a"]}, "tokens: cannot be given for a whole batch"),
    ("bshd", {"cu_seqlens_q": [0, 4]}, "cu_seqlens_q: goes with layout: thd"),
    ("thd", {"cu_seqlens_q": [0, 5, 2, 9]}, "cu_seqlens_q: must start at 0, grow at every sequence"),
    ("thd", {"cu_seqlens_k": [0, 12]}, "cu_seqlens_k: has 1 sequences but cu_seqlens_q has 3"),
    ("tbhd", {}, "layout: is 'tbhd'; expected one of bshd, bhsd, thd"),
])
def test_a_batch_that_does_not_fit_is_one_line(runner, tmp_path, layout, extra, message):
    path, _ = _write(tmp_path, "thd" if layout == "thd" else "bshd", **extra)
    if layout == "tbhd":
        path.write_text(json.dumps({**json.loads(path.read_text()), "layout": "tbhd"}))
    result = runner.invoke(app, ["compute", str(path)])
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and message in result.stderr and "Traceback" not in result.stderr


def test_check_against_judges_every_sequence(runner, tmp_path):
    """A bf16 kernel stand-in (each sequence rounded to bf16, softmax in float32) is within; one cell of the third
    sequence moved by 0.5 is outside, and the report names that sequence, head and query."""
    path, parts = _write(tmp_path, "bhsd", mask="causal")
    bf16 = lambda a: (np.asarray(a, np.float32).view(np.uint32) + 0x8000 & 0xFFFF0000).view(np.float32)  # noqa: E731
    outs = []
    for q, k, v in parts:
        q, k, v = (bf16(x).astype(np.float64) for x in (q, k, v))
        outs.append(bf16(naive(q, k, v, "upper_left")[0]))
    kernel = np.stack(outs)  # (b, h, n, d_v): the layout of the document
    np.savez(tmp_path / "good.npz", head_outputs=kernel)
    good = runner.invoke(app, ["check", str(path), "--against", str(tmp_path / "good.npz"), "--dtype", "bf16",
                               "-f", "json"])
    assert good.exit_code == 0, good.output
    verdict = json.loads(good.stdout)
    assert verdict["within"] and [s["within"] for s in verdict["batch"]] == [True, True, True]
    kernel[2, 1, 3, 0] += 0.5
    np.savez(tmp_path / "bad.npz", head_outputs=kernel)
    bad = runner.invoke(app, ["check", str(path), "--against", str(tmp_path / "bad.npz"), "--dtype", "bf16"])
    assert bad.exit_code == 1
    third = bad.stdout[bad.stdout.index("Sequence 3"):]
    assert "OUTSIDE" in third and "head 2, query 4" in third and "OUTSIDE" not in bad.stdout[:bad.stdout.index(
        "Sequence 3")]
    np.savez(tmp_path / "flat.npz", head_outputs=kernel[0])
    wrong = runner.invoke(app, ["check", str(path), "--against", str(tmp_path / "flat.npz"), "--dtype", "bf16"])
    assert wrong.exit_code == 2 and "head_outputs: is 4×4×2; the batch's layout gives it as 3 × …" in wrong.stderr
