"""check --against: PyTorch's bf16 and fp16 SDPA (output and gradients) are within FlashAttention's budget, and
planted kernel bugs are outside it, each named at its worst cell (exit code 1)."""

from __future__ import annotations

import json

import numpy as np
import pytest

import attncli
from attncli.cli import app

H, G, N, D = 4, 2, 48, 16


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


def _doc(tmp_path, spread: float = 1.0) -> str:
    rng = np.random.default_rng(7)
    doc = {"queries": (spread * rng.normal(size=(H, N, D))).tolist(), "keys": rng.normal(size=(G, N, D)).tolist(),
           "values": rng.normal(size=(G, N, D)).tolist(), "mask": "causal",
           "gradient": rng.normal(size=(H, N, D)).tolist()}
    path = tmp_path / "case.json"
    path.write_text(json.dumps(doc))
    return str(path)


def _save(tmp_path, **arrays) -> str:
    path = tmp_path / "result.npz"
    np.savez(path, **{key: value.detach().float().numpy() for key, value in arrays.items()})
    return str(path)


def _check(runner, doc: str, result: str, dtype: str):
    return runner.invoke(app, ["check", doc, "--against", result, "--dtype", dtype], env={"COLUMNS": "200"})


@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
def test_torch_sdpa_is_within_budget(torch, runner, tmp_path, dtype):
    doc = _doc(tmp_path)
    trace = attncli.compute(doc)
    kind = torch.bfloat16 if dtype == "bf16" else torch.float16
    q, k, v = (torch.tensor(a)[None].to(kind).requires_grad_() for a in (trace.queries, trace.keys, trace.values))
    out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, scale=trace.spec.scale,
                                                           enable_gqa=True)
    out.backward(torch.tensor(trace.grad_head_outputs)[None].to(kind))
    result = _save(tmp_path, head_outputs=out, grad_kernel_queries=q.grad, grad_kernel_keys=k.grad,
                   grad_values=v.grad)
    checked = _check(runner, doc, result, dtype)
    assert checked.exit_code == 0, checked.output
    assert checked.stdout.count("within") == 4 and "OUTSIDE" not in checked.stdout


def kernel(torch, trace, kind, bug: str | None = None):
    """An eager kernel in ``kind`` written out by hand, forward and backward, with one planted ``bug``."""
    spec = trace.spec
    q, k, v, d_o = (torch.tensor(a).to(kind) for a in (trace.queries, trace.keys, trace.values,
                                                       trace.grad_head_outputs))
    group = torch.arange(H) % G if bug == "modulo" else torch.arange(H) // (H // G)
    k_h, v_h = k[group], v[group]
    scale = spec.scale ** 2 if bug == "scale twice" else spec.scale
    s = (q.float() @ k_h.float().transpose(1, 2)) * scale
    i, j = torch.arange(N)[:, None], torch.arange(N)[None, :]
    s = s.masked_fill(~(j <= i + (1 if bug == "off by one" else 0)), float("-inf"))
    if bug == "no max":
        e = torch.exp(s.to(kind))
        p = (e / e.sum(-1, keepdim=True)).to(kind)
    else:
        p = torch.softmax(s, -1).to(kind)
    o = (p.float() @ v_h.float()).to(kind)
    d_p = d_o.float() @ v_h.float().transpose(1, 2)
    delta = (d_o.float() * o.float()).sum(-1, keepdim=True)
    d_s = (p.float() * (d_p if bug == "no D" else d_p - delta)).to(kind)
    d_q = ((d_s.float() @ k_h.float()) * spec.scale).to(kind)
    per_head_k = (d_s.float().transpose(1, 2) @ q.float()) * spec.scale
    per_head_v = p.float().transpose(1, 2) @ d_o.float()
    d_k = torch.zeros(G, N, D).index_add_(0, group, per_head_k).to(kind)
    d_v = torch.zeros(G, N, D).index_add_(0, group, per_head_v).to(kind)
    return {"head_outputs": o, "grad_kernel_queries": d_q, "grad_kernel_keys": d_k, "grad_values": d_v}


def test_a_correct_hand_written_kernel_is_within_budget(torch, runner, tmp_path):
    doc = _doc(tmp_path)
    checked = _check(runner, doc, _save(tmp_path, **kernel(torch, attncli.compute(doc), torch.bfloat16)), "bf16")
    assert checked.exit_code == 0, checked.output


@pytest.mark.parametrize("bug, dtype, spread, outside", [
    ("no D", "bf16", 1.0, ("grad_kernel_queries", "grad_kernel_keys")),
    ("scale twice", "bf16", 1.0, ("head_outputs",)),
    ("off by one", "bf16", 1.0, ("head_outputs",)),
    ("no max", "fp16", 16.0, ("head_outputs",)),
    ("modulo", "bf16", 1.0, ("head_outputs",)),
])
def test_planted_bugs_are_outside_budget(torch, runner, tmp_path, bug, dtype, spread, outside):
    doc = _doc(tmp_path, spread)
    kind = torch.bfloat16 if dtype == "bf16" else torch.float16
    checked = _check(runner, doc, _save(tmp_path, **kernel(torch, attncli.compute(doc), kind, bug)), dtype)
    assert checked.exit_code == 1, (bug, checked.output)
    for key in outside:
        assert f"{key}: worst at head " in checked.stdout or f"{key}: worst at key/value head " in checked.stdout, (
            bug, checked.stdout)


def test_the_same_bugs_pass_without_them(torch, runner, tmp_path):
    """The spread that makes fp16's exp overflow without the maximum is fine with it: the bug, not the numbers."""
    doc = _doc(tmp_path, 16.0)
    checked = _check(runner, doc, _save(tmp_path, **kernel(torch, attncli.compute(doc), torch.float16)), "fp16")
    assert checked.exit_code == 0, checked.output


def test_pytorch_shapes_and_refusals(runner, tmp_path):
    doc = _doc(tmp_path)
    trace = attncli.compute(doc)
    np.save(tmp_path / "lse.npy", trace.lse[None].astype(np.float32))  # PyTorch's (1, h, n), one .npy by its key
    checked = _check(runner, doc, str(tmp_path / "lse.npy"), "fp32")
    assert checked.exit_code == 0 and "lse" in checked.stdout, checked.output
    np.save(tmp_path / "lse.npy", trace.lse[:, :-1])
    wrong = _check(runner, doc, str(tmp_path / "lse.npy"), "fp32")
    assert wrong.exit_code == 2 and "lse is 4×47 but this document's is 4×48" in wrong.stderr
    alone = runner.invoke(app, ["check", doc, "--against", str(tmp_path / "lse.npy")])
    assert alone.exit_code == 2 and "--against and --dtype go together" in alone.stderr


def test_emulate_prints_the_eager_computation(runner, tmp_path):
    """--emulate bf16: every number a bfloat16 (its low 16 bits 0), P and O rounded, lse in float32; fp32 is the
    truth to float32's precision; the check's 'eager' column is that computation's largest error."""
    doc = _doc(tmp_path)
    trace = attncli.compute(doc)
    bf16 = json.loads(runner.invoke(app, ["compute", doc, "--emulate", "bf16", "-f", "json"]).stdout)
    assert list(bf16)[7:] == ["emulate", "weights", "lse", "head_outputs", "grad_kernel_queries", "grad_kernel_keys",
                              "grad_values"] and bf16["emulate"] == "bf16"  # marked: not the float64 truth
    for key in ("weights", "head_outputs", "grad_kernel_queries", "grad_kernel_keys", "grad_values"):
        bits = np.array(bf16[key], dtype=np.float32).view(np.uint32)
        assert not (bits & 0xFFFF).any(), key
    assert np.abs(np.array(bf16["head_outputs"]) - trace.head_outputs).max() > 1e-4  # rounded, not the truth
    fp32 = json.loads(runner.invoke(app, ["compute", doc, "--emulate", "fp32", "-f", "json"]).stdout)
    assert np.allclose(fp32["grad_values"], trace.grad_values, rtol=1e-5, atol=1e-5)
    np.savez(tmp_path / "eager.npz", head_outputs=np.array(bf16["head_outputs"]))
    checked = runner.invoke(app, ["check", doc, "--against", str(tmp_path / "eager.npz"), "--dtype", "bf16"],
                            env={"COLUMNS": "200"})
    largest = np.abs(np.array(bf16["head_outputs"]) - trace.head_outputs).max()
    assert checked.exit_code == 0 and checked.stdout.count(f"{largest:.2e}") == 2, checked.stdout


def _refused(result, *parts: str) -> None:
    """Exit code 2, one line on standard error saying each of ``parts``, nothing on standard output."""
    assert result.exit_code == 2 and result.stdout == "", result.output
    assert len(result.stderr.strip().splitlines()) == 1 and all(p in result.stderr for p in parts), result.stderr


@pytest.mark.parametrize("extra, key", [
    ({"normalize": "sum"}, "normalize: is sum"),
    ({"normalize": "none"}, "normalize: is none"),
    ({"score": "additive", "weights": {"w1": [[1.0, 0.0], [0.0, 1.0]], "w2": [[1.0, 0.0], [0.0, 1.0]],
                                        "v": [1.0, 1.0]}}, "score: is additive"),
])
def test_scores_without_a_log_sum_exp_are_refused(runner, tmp_path, extra, key):
    """No verdict nor emulated numbers from a dot-product softmax the document does not compute (FORMAT.md Part 3);
    a lse beside them was an internal error."""
    doc = tmp_path / "doc.json"
    plain = {"inputs": [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]} if "score" in extra else {
        "queries": [[[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]], "keys": [[[1.0, 0.0], [0.0, 1.0]]],
        "values": [[[1.0], [3.0]]]}
    doc.write_text(json.dumps({**plain, **extra}))
    heads = attncli.compute(str(doc)).head_outputs
    np.savez(tmp_path / "result.npz", head_outputs=heads, lse=np.zeros(heads.shape[:2]))
    checked = runner.invoke(app, ["check", str(doc), "--against", str(tmp_path / "result.npz"), "--dtype", "bf16"])
    _refused(checked, f"doc.json: {key}", "no log-sum-exp", "check --against")
    (tmp_path / "out.npz").unlink(missing_ok=True)
    emulated = runner.invoke(app, ["compute", str(doc), "--emulate", "bf16", "-o", str(tmp_path / "out.npz")])
    _refused(emulated, f"doc.json: {key}", "compute --emulate")
    assert not (tmp_path / "out.npz").exists()


def test_a_result_without_a_truth_is_one_line():
    """The judge itself, should a document have no lse (a library caller): the array named, no AttributeError."""
    from attncli.core.errors import AttnError
    from attncli.core.verdict import judge

    with pytest.raises(AttnError, match="--against: lse: this document has no lse"):
        judge({"lse": None}, {"lse": np.zeros((1, 2))}, {"lse": np.zeros((1, 2))}, "bf16")


@pytest.mark.parametrize("shape", [(4, 47), (48,), (2, 4, 48)])
def test_a_lse_of_the_wrong_shape_names_the_shape_expected(runner, tmp_path, shape):
    doc = _doc(tmp_path)
    np.savez(tmp_path / "result.npz", lse=np.zeros(shape, dtype=np.float32))
    _refused(_check(runner, doc, str(tmp_path / "result.npz"), "bf16"), "--against: lse is ",
             "but this document's is 4×48")


@pytest.mark.parametrize("only, named", [(["output"], "not output"), (["grad_inputs", "dV"], "not grad_inputs"),
                                         (["dQ"], "not grad_queries")])
def test_emulate_refuses_keys_it_does_not_give(runner, tmp_path, only, named):
    """compute --emulate --only output printed nothing (exit 0) and -o x.npz wrote only the scale."""
    doc = _doc(tmp_path)
    options = [arg for key in only for arg in ("--only", key)]
    for written in ([], ["-o", str(tmp_path / "x.npz")]):
        result = runner.invoke(app, ["compute", doc, "--emulate", "bf16", *options, *written])
        _refused(result, "--only: --emulate gives head_outputs, lse, weights, grad_kernel_queries, grad_kernel_keys, "
                 "grad_values", named)
        assert not (tmp_path / "x.npz").exists()
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps({key: value for key, value in json.loads(open(doc).read()).items()
                                 if key != "gradient"}))
    _refused(runner.invoke(app, ["compute", str(plain), "--emulate", "bf16", "--only", "dV"]),
             "'grad_values' needs gradient:")


def test_emulated_tables_are_marked(runner, tmp_path):
    doc = _doc(tmp_path)
    shown = runner.invoke(app, ["compute", doc, "--emulate", "fp16", "--only", "dV", "--head", "1"],
                          env={"COLUMNS": "200"})
    assert shown.exit_code == 0 and "Gradient of V (emulated fp16)" in shown.stdout, shown.output
    markdown = runner.invoke(app, ["compute", doc, "--emulate", "fp16", "--only", "lse", "-f", "markdown"])
    assert markdown.stdout.count("(emulated fp16)") == H
    truth = json.loads(runner.invoke(app, ["compute", doc, "--only", "lse", "-f", "json"]).stdout)
    assert "emulate" not in truth and "(emulated" not in runner.invoke(app, ["compute", doc, "--only", "dV"]).stdout


def test_unknown_arrays_in_the_result_are_refused(runner, tmp_path):
    """A misnamed dQ (``dq``) beside head_outputs was silently left unjudged; compute's own scale is passed over."""
    doc = _doc(tmp_path)
    heads = attncli.compute(doc).head_outputs
    np.savez(tmp_path / "result.npz", head_outputs=heads, dq=heads, foo=np.zeros(3))
    _refused(_check(runner, doc, str(tmp_path / "result.npz"), "bf16"), "result.npz: holds 'dq', 'foo', which "
             "--against does not read; it reads head_outputs, lse, weights, grad_kernel_queries")
    np.savez(tmp_path / "result.npz", head_outputs=heads, scale=np.float64(0.25))
    assert _check(runner, doc, str(tmp_path / "result.npz"), "bf16").exit_code == 0


def test_the_report_fits_80_columns(runner, tmp_path):
    """Every number whole at COLUMNS=80 (not "1.594e-…"), the title one line without trailing spaces."""
    doc = _doc(tmp_path)
    made = json.loads(runner.invoke(app, ["compute", doc, "--emulate", "bf16", "-f", "json"]).stdout)
    arrays = {key: np.array(made[key]) for key in ("head_outputs", "grad_kernel_queries", "grad_kernel_keys")}
    arrays["grad_kernel_keys"][1, 2, 3] += 1.0  # one cell outside its budget
    np.savez(tmp_path / "result.npz", **arrays)
    checked = runner.invoke(app, ["check", doc, "--against", str(tmp_path / "result.npz"), "--dtype", "bf16"],
                            env={"COLUMNS": "80"})
    assert checked.exit_code == 1, checked.output
    lines = checked.stdout.splitlines()
    assert lines[0] == "Against the float64 truth, in bf16 (budget: 2 × the eager bf16 error + 2 ulp)"
    assert all(len(line) <= 80 and line == line.rstrip() for line in lines), checked.stdout
    assert "…" not in checked.stdout and "OUTSIDE" in checked.stdout
    row = next(line for line in lines if "grad_kernel_keys" in line and "OUTSIDE" in line)
    largest, rms, eager, budget = (float(x) for x in row.split("│")[2:6])
    truth = attncli.compute(doc).grad_kernel_keys
    assert largest == pytest.approx(np.abs(arrays["grad_kernel_keys"] - truth).max(), rel=1e-2)
    assert eager < budget < largest
    assert "grad_kernel_keys: worst at key/value head 2, key 3 ('k3'), column 4:" in checked.stdout


def test_the_verdict_as_json(runner, tmp_path):
    """--format json: the same verdict as one object, the worst cell counted from 1, the errors from numpy."""
    doc = _doc(tmp_path)
    made = json.loads(runner.invoke(app, ["compute", doc, "--emulate", "bf16", "-f", "json"]).stdout)
    arrays = {key: np.array(made[key]) for key in ("head_outputs", "grad_kernel_keys")}
    arrays["grad_kernel_keys"][1, 2, 3] += 1.0  # one cell outside its budget
    np.savez(tmp_path / "result.npz", **arrays)
    checked = runner.invoke(app, ["check", doc, "--against", str(tmp_path / "result.npz"), "--dtype", "bf16",
                                  "--format", "json"])
    assert checked.exit_code == 1, checked.output
    data = json.loads(checked.stdout)
    assert data["dtype"] == "bf16" and data["within"] is False
    found = {f["key"]: f for f in data["findings"]}
    assert set(found) == {"head_outputs", "grad_kernel_keys"}
    assert found["head_outputs"]["within"] is True and found["grad_kernel_keys"]["within"] is False
    truth = attncli.compute(doc)
    wrong = found["grad_kernel_keys"]
    assert wrong["worst"] == [2, 3, 4] and wrong["where"] == "key/value head 2, key 3 ('k3'), column 4"
    assert wrong["largest"] == pytest.approx(np.abs(arrays["grad_kernel_keys"] - truth.grad_kernel_keys).max(),
                                             rel=1e-2)
    assert wrong["got"] == pytest.approx(wrong["truth"] + 1.0, abs=0.1)
    assert wrong["eager"] < wrong["budget"] < wrong["largest"]
    errors = arrays["head_outputs"] - truth.head_outputs
    assert found["head_outputs"]["rms"] == pytest.approx(np.sqrt(np.mean(errors ** 2)), rel=1e-2)
