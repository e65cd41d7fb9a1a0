"""The backward pass through ``latent`` without torch: the weight gradients against central differences of the
contract's own loop (tests/test_latent.py's ``loop``, no attncli in it), the streamed path (with ``--only`` letting
arrays go) against the full one, and the CLI: ``--only``, ``.npz``, ``explain --step backward``, ``check``, ``page``.
(Against torch.autograd on DeepSeek's modules: tests/test_latent_backward_torch.py.)"""

from __future__ import annotations

import copy
import json
import re

import numpy as np
import pytest
from stream_helpers import spec_of
from test_latent import D_MODEL, EXAMPLE, R_KV, document, loop
from typer.testing import CliRunner

import attncli
from attncli.cli.main import app
from attncli.core.stream import attend_streamed

LATENT = ("grad_latent_queries", "grad_latent_kv", "grad_weight_query_down", "grad_bias_query_down",
          "grad_weight_query_up", "grad_weight_kv_down", "grad_bias_kv_down", "grad_weight_kv_up",
          "grad_latent_query_norm_gamma", "grad_latent_kv_norm_gamma", "grad_inputs", "grad_weight_output")


def with_gradient(doc: dict, seed: int = 0) -> dict:
    doc = copy.deepcopy(doc)
    doc["gradient"] = np.random.default_rng(seed).normal(size=(len(doc["inputs"]), D_MODEL))
    return doc


def central_differences(doc: dict, section: str, name: str, step: float = 1e-6) -> np.ndarray:
    """dL/dW for W = doc[section][name], L = Σ gradient ⊙ output, the output from the loop, one cell at a time."""
    w = np.asarray(doc[section][name], dtype=np.float64)
    out = np.zeros_like(w)
    for cell in np.ndindex(w.shape):
        for sign in (1.0, -1.0):
            changed = copy.deepcopy(doc)
            changed[section][name] = w.copy()
            changed[section][name][cell] += sign * step
            out[cell] += sign * float(np.sum(doc["gradient"] * loop(changed)["output"])) / (2 * step)
    return out


@pytest.mark.parametrize("section, name, key", [("weights", "kv_up", "grad_weight_kv_up"),
                                                ("weights", "kv_down", "grad_weight_kv_down"),
                                                ("bias", "query_down", "grad_bias_query_down")])
def test_a_weight_gradient_against_central_differences(section, name, key):
    """kv_up: its key and value columns per head; kv_down: the latent through kv_norm and the rotary key every head
    shares; query_down's bias: through query_norm."""
    doc = with_gradient(document(11))
    got = attncli.compute(doc).gradients[key]
    want = central_differences(doc, section, name)
    assert got.shape == want.shape
    assert np.abs(got - want).max() < 1e-7 * np.abs(want).max()


@pytest.mark.parametrize("extra", [{}, {"clip_qkv": 1.5}, {"pre_norm": {"kind": "rms"}}, {"context": True},
                                   {"q_lora": False}])
def test_streamed_equals_full(extra):
    """The streamed backward, with everything kept and with --only's keys (c_Q, c_KV let go and made again)."""
    extra = dict(extra)
    q_lora = extra.pop("q_lora", True)
    if extra.pop("context", False):
        extra.update(context=np.random.default_rng(5).normal(size=(23, D_MODEL)), mask="none")
    spec = spec_of(with_gradient(document(4, n=37, q_lora=q_lora, **extra)))
    full = attncli.compute(spec).gradients
    assert {"grad_latent_kv", "grad_weight_kv_up", "grad_weight_kv_down"} <= set(full)
    keep = [key for key in LATENT if key in full][:3] + ["grad_weight_kv_up", "grad_inputs"]
    for streamed in (attend_streamed(spec, threads=2).gradients, attend_streamed(spec, threads=2, keep=keep).gradients):
        for key, value in streamed.items():
            assert np.abs(value - full[key]).max() <= 1e-12 * np.abs(full[key]).max(), key
    assert set(keep) <= set(streamed)


def test_clip_qkv_stops_the_gradient_where_it_cut():
    """clamp(·, −c, c) on the assembled Q, K and V: dQ (taken with respect to the clamped Q) reaches c_Q only where
    |Q| ≤ c: dc_Q = (dQ where not cut)·W_UQᵀ, summed over the heads."""
    doc = with_gradient(document(2, clip_qkv=0.8))
    trace = attncli.compute(doc)
    unclipped = attncli.compute({key: value for key, value in doc.items() if key not in ("clip_qkv", "gradient")})
    cut = np.abs(unclipped.queries) > 0.8
    assert cut.any() and (~cut).any()
    d_q, w_uq = trace.gradients["grad_queries"], trace.spec.w_q  # (h, n, d_k), (h, r_q, d_k)
    passed = np.einsum("hnd,hrd->nr", np.where(cut, 0.0, d_q), w_uq)
    everything = np.einsum("hnd,hrd->nr", d_q, w_uq)
    got = trace.gradients["grad_latent_queries"]
    assert np.abs(got - passed).max() <= 1e-12 * np.abs(passed).max() < np.abs(got - everything).max()


@pytest.fixture
def latent_doc(tmp_path):
    path = tmp_path / "latent.yaml"
    path.write_text(EXAMPLE.read_text() + "gradient: {random: normal, seed: 0}\n")
    return path


def test_cli_only_and_npz(latent_doc, tmp_path):
    runner = CliRunner()
    trace = attncli.compute(str(latent_doc))
    result = runner.invoke(app, ["compute", str(latent_doc), "-f", "json", "--only", "dW_UKV", "--only", "dc_KV"])
    assert result.exit_code == 0, result.stderr
    got = json.loads(result.stdout)
    want = trace.gradients["grad_weight_kv_up"]  # (--only without the n × m matrices runs the streamed path)
    assert np.abs(np.array(got["grad_weight_kv_up"]) - want).max() <= 1e-12 * np.abs(want).max()
    assert np.array(got["grad_latent_kv"]).shape == (3, R_KV - 3)  # the example's r_kv is 2
    out = tmp_path / "g.npz"
    result = runner.invoke(app, ["compute", str(latent_doc), "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    with np.load(out) as saved:
        for key in ("grad_weight_kv_down", "grad_weight_kv_up", "grad_latent_kv", "grad_latent_kv_norm_gamma",
                    "grad_weight_query", "grad_inputs"):
            np.testing.assert_array_equal(saved[key], trace.gradients[key])
    result = runner.invoke(app, ["compute", str(latent_doc), "--only", "grad_weight_query_down"])
    assert result.exit_code == 2 and "weights.query_down" in result.stderr and result.stderr.count("\n") == 1


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_explain_backward_check_and_page_on_a_latent_document(latent_doc, tmp_path, lang):
    """explain --step backward's D, dZ, dc_KV and dk_r are the trace's; check and page run on the document."""
    trace = attncli.compute(str(latent_doc))
    runner = CliRunner()
    result = runner.invoke(app, ["explain", str(latent_doc), "--step", "backward", "--lang", lang],
                           env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.stderr
    d = re.search(r"like: D = .* = (-?[\d.]+)", result.stdout)
    d_z = re.search(r"like, like: dZ = .* = (-?[\d.]+)", result.stdout)
    assert float(d[1]) == pytest.approx(trace.gradients["delta"][0, 1], abs=5e-5)
    assert float(d_z[1]) == pytest.approx(trace.gradients["grad_scaled_scores"][0, 1, 1], abs=5e-5)
    # the key it follows ("like", weighed most) gets its latent's gradient, and the shared rotary key's over the heads
    d_c, d_k_r = re.search(r"like: dc_KV = .* = \[(.*?)\],\s+dk_r = Σ_h dk_r,h = \[(.*?)\]", result.stdout).groups()
    want_c, want_k_r = trace.gradients["grad_latent_kv"][1], trace.gradients["grad_keys"][:, 1, 1:].sum(axis=0)
    assert np.allclose([float(v) for v in d_c.split(",")], want_c, rtol=0, atol=5e-5)
    assert np.allclose([float(v) for v in d_k_r.split(",")], want_k_r, rtol=0, atol=5e-5)
    assert ("c_KV" in result.stdout) and (("潜在向量" in result.stdout) == (lang == "zh"))
    answered = tmp_path / "answered.yaml"
    weights = np.round(trace.weights[0], 4).tolist()
    answered.write_text(latent_doc.read_text() + f"answer: {{head: 1, weights: {weights}}}\n")
    result = runner.invoke(app, ["check", str(answered)])
    assert result.exit_code == 0 and "correct" in result.stdout, result.output
    result = runner.invoke(app, ["page", str(latent_doc), "-o", str(tmp_path / "page.html")])
    assert result.exit_code == 0 and (tmp_path / "page.html").stat().st_size > 0
