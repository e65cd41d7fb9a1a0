"""Differential attention (``differential``, DiffLlama): a tiny example worked by hand, transformers'
DiffLlamaAttention in float64 (forward, and its backward through torch.autograd), a torch function written here for
λ per head pair and grouped heads, the streamed path, and the refusals (one line each, exit 2)."""

from __future__ import annotations

import json
import math
import os

import numpy as np
import pytest
from stream_helpers import assert_equal_traces, document, spec_of

from attncli.cli import app
from attncli.core.pipeline import attend
from attncli.core.stream import attend_streamed

TOL = 1e-12


def close(got, want, tol: float = TOL) -> bool:
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    return got.shape == want.shape and bool(np.abs(got - want).max(initial=0.0) <= tol * max(1.0, np.abs(want).max()))


# ---------------------------------------------------------------- a tiny example, worked by hand


def test_a_tiny_example_worked_by_hand():
    """X = I₂, identity projections, two heads of one number: head 0 sees column 0, head 1 column 1 (scale none).
    Head 0's scores are [[1, 0], [0, 0]], head 1's [[0, 0], [0, 1]]; with σ = e/(e + 1) the weights are
    A₁ = [[σ, 1 − σ], [½, ½]] and A₂ = [[½, ½], [1 − σ, σ]].  λ = e^(1·ln 2) − e^(1·0) + λ_init(0) = 2 − 1 + 0.2 =
    1.2; V′ = [V₁ | V₂] = I₂, so O = W = A₁ − 1.2·A₂, and each row of Ô is 0.8·O / √(mean(O²) + ε)."""
    eps = 1e-5
    doc = {"inputs": [[1, 0], [0, 1]], "heads": 2, "scale": "none",
           "differential": {"lambda_q1": [1], "lambda_k1": [math.log(2)], "lambda_q2": [1], "lambda_k2": [0],
                            "layer": 0, "eps": eps}}
    trace = attend(spec_of(doc))
    s = math.e / (math.e + 1)
    w = [[s - 0.6, (1 - s) - 0.6], [0.5 - 1.2 * (1 - s), 0.5 - 1.2 * s]]
    o_hat = [[0.8 * x / math.sqrt((row[0] ** 2 + row[1] ** 2) / 2 + eps) for x in row] for row in w]
    assert close(trace.differential_lambda, [1.2])
    assert close(trace.weights, [[[s, 1 - s], [0.5, 0.5]], [[0.5, 0.5], [1 - s, s]]])
    assert close(trace.differential_weights, [w])
    assert close(trace.differential_head_outputs, [w])
    assert close(trace.normalized_head_outputs, [o_hat])
    assert close(trace.head_outputs, [[[r[0]] for r in o_hat], [[r[1]] for r in o_hat]])  # pair 0 = heads 0, 1
    assert close(trace.output, o_hat)


def test_layer_gives_transformers_lambda_init():
    for layer in (0, 1, 5, 23):
        doc = {"inputs": [[1, 0], [0, 1]], "heads": 2, "differential": {"layer": layer}}
        assert close(attend(spec_of(doc)).differential_lambda, [0.8 - 0.6 * math.exp(-0.3 * layer)])


# ---------------------------------------------------------------- transformers' DiffLlamaAttention, float64


def _float64_steps(monkeypatch, torch):
    """transformers' softmax and λ sums in float32 kept in float64 (as extract's switches do)."""
    softmax, total = torch.nn.functional.softmax, torch.sum
    monkeypatch.setattr(torch.nn.functional, "softmax",
                        lambda x, dim=None, dtype=None, **k: softmax(x, dim=dim, **k) if x.dtype == torch.float64
                        else softmax(x, dim=dim, dtype=dtype, **k))
    monkeypatch.setattr(torch, "sum", lambda x, *a, dtype=None, **k: total(x, *a, **k)
                        if x.dtype == torch.float64 and dtype == torch.float32 else total(x, *a, dtype=dtype, **k))


def _diffllama(torch, transformers, h: int, g: int, d: int, layer: int, seed: int):
    module = __import__("transformers.models.diffllama.modeling_diffllama", fromlist=["DiffLlamaAttention"])
    os.environ["HF_HUB_OFFLINE"] = "1"
    cfg = transformers.DiffLlamaConfig(vocab_size=16, num_hidden_layers=layer + 1, hidden_size=16,
                                       num_attention_heads=h, num_key_value_heads=g, head_dim=d, rms_norm_eps=1e-5)
    cfg._attn_implementation = "eager"
    attn = module.DiffLlamaAttention(cfg, layer)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in attn.parameters():
            p.copy_(torch.randn(p.shape, generator=gen, dtype=torch.float64) * 0.4)
    return attn.to(torch.float64), gen


def _hf_document(attn, x, n: int, d: int, layer: int, h: int, g: int) -> dict:
    T = lambda linear: linear.weight.detach().numpy().T.tolist()  # noqa: E731
    lam = {name: getattr(attn, name).detach().numpy().tolist() for name in
           ("lambda_q1", "lambda_k1", "lambda_q2", "lambda_k2")}
    return {"inputs": x[0].detach().numpy().tolist(), "heads": h, "kv_heads": g,
            "weights": {"query": T(attn.q_proj), "key": T(attn.k_proj), "value": T(attn.v_proj),
                        "output": T(attn.o_proj)},
            "rope": {"base": 10000.0}, "mask": "causal", "differential": {**lam, "layer": layer, "eps": 1e-5}}


def _angles(torch, n: int, d: int):
    freqs = 1.0 / 10000.0 ** (np.arange(0, d, 2) / d)
    angle = torch.tensor(np.outer(np.arange(n, dtype=np.float64), freqs))
    emb = torch.cat((angle, angle), dim=-1)[None]
    return emb.cos(), emb.sin()


@pytest.mark.torch
@pytest.mark.parametrize(("h", "g", "layer"), [(4, 4, 0), (4, 2, 3), (8, 2, 1)])
def test_diffllama_attention_forward_and_backward(monkeypatch, h, g, layer):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers", minversion="5.23")
    masking = pytest.importorskip("transformers.masking_utils")
    d, n = 4, 6
    attn, gen = _diffllama(torch, transformers, h, g, d, layer, seed=h + g + layer)
    _float64_steps(monkeypatch, torch)
    x = torch.randn((1, n, 16), generator=gen, dtype=torch.float64, requires_grad=True)
    mask = masking.eager_mask(batch_size=1, q_length=n, kv_length=n, mask_function=masking.causal_mask_function,
                              dtype=torch.float64)
    joined = []
    attn.o_proj.register_forward_pre_hook(lambda m, args: joined.append(args[0].detach()))
    y, weights = attn(x, _angles(torch, n, d), mask)
    seed = torch.randn((1, n, 16), generator=gen, dtype=torch.float64)
    (y * seed).sum().backward()
    doc = _hf_document(attn, x, n, d, layer, h, g)
    trace = attend(spec_of({**doc, "gradient": seed[0].numpy().tolist()}))
    assert close(trace.output, y[0].detach().numpy())
    assert close(trace.weights, weights[0].detach().numpy())
    h_cat = trace.head_outputs.transpose(1, 0, 2).reshape(n, -1)  # concat(H), what o_proj receives
    assert close(h_cat, joined[0][0].numpy())
    grads = trace.gradients
    assert close(grads["grad_inputs"], x.grad[0].numpy())
    for key, linear in (("query", attn.q_proj), ("key", attn.k_proj), ("value", attn.v_proj),
                        ("output", attn.o_proj)):
        assert close(grads[f"grad_weight_{key}"], linear.weight.grad.numpy().T), key
    for name in ("lambda_q1", "lambda_k1", "lambda_q2", "lambda_k2"):
        assert close(grads[f"grad_differential_{name}"], getattr(attn, name).grad.numpy()), name


@pytest.mark.torch
def test_float32_lambda_is_why_the_switch_is_needed(monkeypatch):
    """Without the switches transformers' λ and softmax are float32: the model's output differs near 1e-8."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers", minversion="5.23")
    masking = pytest.importorskip("transformers.masking_utils")
    attn, gen = _diffllama(torch, transformers, 4, 2, 4, 2, seed=5)
    x = torch.randn((1, 5, 16), generator=gen, dtype=torch.float64)
    mask = masking.eager_mask(batch_size=1, q_length=5, kv_length=5, mask_function=masking.causal_mask_function,
                              dtype=torch.float64)
    with torch.no_grad():
        y, _ = attn(x, _angles(torch, 5, 4), mask)
    trace = attend(spec_of(_hf_document(attn, x, 5, 4, 2, 4, 2)))
    assert close(trace.output, y[0].numpy(), 1e-5) and not close(trace.output, y[0].numpy(), 1e-12)


# ---------------------------------------------------------------- λ per pair, grouped heads: a torch function here


def _torch_differential(torch, x, w_q, w_k, w_v, lam, lambda_init, h, g, eps):
    """Differential attention written from the paper in torch (no mask, scale 1/√d): λ one per pair (p, d) rows."""
    n, d = x.shape[0], w_q.shape[1] // h
    q = (x @ w_q).reshape(n, h, d).transpose(0, 1)
    k = (x @ w_k).reshape(n, g, d).transpose(0, 1).repeat_interleave(h // g, dim=0)
    v = (x @ w_v).reshape(n, g, -1).transpose(0, 1).repeat_interleave(h // g, dim=0)
    a = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(d), dim=-1)
    p = h // 2
    lam_p = torch.exp((lam[0] * lam[1]).sum(-1)) - torch.exp((lam[2] * lam[3]).sum(-1)) + lambda_init
    kept = {"differential_lambda": lam_p, "weights": a}
    w = torch.stack([a[i] - lam_p[i] * a[i + p] for i in range(p)])  # (p, n, m)
    o = w @ torch.stack([torch.cat((v[i], v[i + p]), dim=-1) for i in range(p)])  # (p, n, 2·d_v)
    o_hat = (1 - lambda_init) * o / torch.sqrt((o * o).mean(-1, keepdim=True) + eps)
    kept.update(differential_weights=w, differential_head_outputs=o, normalized_head_outputs=o_hat)
    for t in kept.values():
        t.retain_grad()
    return torch.cat(list(o_hat), dim=-1), kept


@pytest.mark.torch
@pytest.mark.parametrize(("h", "g"), [(2, 1), (4, 1), (6, 3), (4, 4)])
def test_lambda_per_pair_and_grouped_heads_against_autograd(h, g):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(h * 10 + g)
    n, d, d_model, p = 5, 3, 6, h // 2
    x, w_q, w_k = rng.normal(size=(n, d_model)), rng.normal(size=(d_model, h * d)), rng.normal(size=(d_model, g * d))
    w_v, lam = rng.normal(size=(d_model, g * d)), [0.3 * rng.normal(size=(p, d)) for _ in range(4)]
    seed = rng.normal(size=(n, h * d))
    names = ("lambda_q1", "lambda_k1", "lambda_q2", "lambda_k2")
    doc = {"inputs": x.tolist(), "heads": h, "kv_heads": g,
           "weights": {"query": w_q.tolist(), "key": w_k.tolist(), "value": w_v.tolist()},
           "differential": {**{name: v.tolist() for name, v in zip(names, lam, strict=True)}, "lambda_init": 0.35},
           "gradient": seed.tolist()}
    trace = attend(spec_of(doc))
    tensors = [torch.tensor(t, requires_grad=True) for t in (x, w_q, w_k, w_v, *lam)]
    y, kept = _torch_differential(torch, *tensors[:4], tensors[4:], 0.35, h, g, 1e-5)
    (y * torch.tensor(seed)).sum().backward()
    assert close(trace.output, y.detach().numpy())
    grads = trace.gradients
    for key, t in zip(("grad_inputs", "grad_weight_query", "grad_weight_key", "grad_weight_value"), tensors,
                      strict=False):
        assert close(grads[key], t.grad.numpy()), key
    for name, t in zip(names, tensors[4:], strict=True):
        assert close(grads[f"grad_differential_{name}"], t.grad.numpy()), name
    for key, t in kept.items():  # the stage's own quantities, and dA
        assert close(grads[f"grad_{key}"], t.grad.numpy()), key
    a, d_a = kept["weights"].detach().numpy(), kept["weights"].grad.numpy()
    assert close(grads["delta"], (a * d_a).sum(-1))  # D = Σ_j a_ij·dA_ij


def test_the_gradients_of_lambda_and_weights_are_central_differences():
    doc = document(7, n=5, heads=4, kv_heads=2, d_k=3, d_v=2, mask="causal",
                   differential={"lambda_q1": [0.1, -0.2, 0.3], "lambda_k1": [0.2, 0.1, 0.0],
                                 "lambda_q2": [0.05, 0.1, -0.1], "lambda_k2": [0.3, 0.2, 0.1], "layer": 2})
    rng = np.random.default_rng(0)
    seed = rng.normal(size=(5, 8))
    trace = attend(spec_of({**doc, "gradient": seed.tolist()}))
    loss = lambda d: float((attend(spec_of(d)).output * seed).sum())  # noqa: E731
    step = 1e-6
    for j in range(3):
        up, down = json.loads(json.dumps(doc)), json.loads(json.dumps(doc))
        up["differential"]["lambda_q2"][j] += step
        down["differential"]["lambda_q2"][j] -= step
        numeric = (loss(up) - loss(down)) / (2 * step)
        assert abs(trace.gradients["grad_differential_lambda_q2"][j] - numeric) <= 1e-6 * max(1, abs(numeric))


# ---------------------------------------------------------------- the streamed path, and as users see it


def test_the_streamed_path_equals_the_full_one():
    spec = spec_of(document(3, n=37, heads=4, kv_heads=2, mask="causal",
                            differential={"lambda_q1": [0.1] * 4, "lambda_k1": [0.2] * 4, "lambda_q2": [0.3] * 4,
                                          "lambda_k2": [0.1] * 4, "lambda_init": 0.5}))
    assert_equal_traces(attend(spec), attend_streamed(spec, threads=2))


def test_json_keys_and_shapes(runner, tmp_path):
    doc = document(1, n=3, heads=4, d_k=2, d_v=3, differential={"layer": 1})
    path = tmp_path / "d.json"
    path.write_text(json.dumps(doc))
    result = runner.invoke(app, ["compute", str(path), "--format", "json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert np.shape(out["differential_lambda"]) == (2,)
    assert np.shape(out["differential_weights"]) == (2, 3, 3)
    assert np.shape(out["differential_head_outputs"]) == np.shape(out["normalized_head_outputs"]) == (2, 3, 6)
    assert np.shape(out["head_outputs"]) == (4, 3, 3) and np.shape(out["weights"]) == (4, 3, 3)
    only = runner.invoke(app, ["compute", str(path), "--format", "json", "--only", "normalized_head_outputs"])
    assert only.exit_code == 0 and close(json.loads(only.stdout)["normalized_head_outputs"],
                                         out["normalized_head_outputs"])


BAD = {
    "odd heads": ({"heads": 3}, {"layer": 0}, "differential: ", "odd"),
    "no lambda_init": ({}, {}, "differential: ", "needs lambda_init (a number) or layer (λ_init = 0.8 − 0.6·e^"),
    "both": ({}, {"layer": 1, "lambda_init": 0.3}, "differential: ", "give lambda_init or layer, not both"),
    "three vectors": ({}, {"layer": 0, "lambda_q1": [1], "lambda_k1": [1], "lambda_q2": [1]}, "differential: ",
                      "all four"),
    "shapes differ": ({}, {"layer": 0, "lambda_q1": [1, 2], "lambda_k1": [1], "lambda_q2": [1], "lambda_k2": [1]},
                      "differential.lambda_k1: ", "multiplied"),
    "rows not pairs": ({}, {"layer": 0, "lambda_q1": [[1], [2], [3]], "lambda_k1": [[1], [2], [3]], "lambda_q2": [1],
                            "lambda_k2": [1]}, "differential.lambda_q1: ", "a row per pair"),
    "infinite lambda": ({}, {"layer": 0, "lambda_q1": [30], "lambda_k1": [30], "lambda_q2": [0], "lambda_k2": [0]},
                        "differential: ", "= inf for head pair 1 (not a finite number"),  # pairs from 1
    "nan lambda": ({}, {"layer": 0, "lambda_q1": [".nan"], "lambda_k1": [1], "lambda_q2": [0], "lambda_k2": [0]},
                   "differential.lambda_q1", "NaN"),
    "negative layer": ({}, {"layer": -1}, "differential.layer: ", "≥ 0"),
    "misspelt": ({}, {"layer": 0, "lamda_init": 0.3}, "lamda_init", "lambda_init"),
    "not softmax": ({"normalize": "sum"}, {"layer": 0}, "differential: ", "normalize: softmax"),
}


@pytest.mark.parametrize("case", BAD)
def test_bad_input_is_one_line_and_exit_2(runner, tmp_path, case):
    top, differential, where, said = BAD[case]
    doc = {"inputs": [[1, 0, 1, 0, 1, 0], [0, 1, 0, 1, 0, 1]], "heads": 2, **top, "differential": differential}
    path = tmp_path / "d.yaml"
    path.write_text(json.dumps(doc).replace('".nan"', ".nan"))
    result = runner.invoke(app, ["compute", str(path), "--format", "json"])
    assert result.exit_code == 2 and result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1 and where in result.stderr and said in result.stderr, \
        result.stderr


def test_without_the_vectors_lambda_is_lambda_init_and_they_get_no_gradient(runner, tmp_path):
    doc = {"inputs": [[1, 0], [0, 1]], "heads": 2, "differential": {"lambda_init": 0.3}, "gradient": [[1, 0], [0, 1]]}
    path = tmp_path / "d.json"
    path.write_text(json.dumps(doc))
    out = json.loads(runner.invoke(app, ["compute", str(path), "--format", "json"]).stdout)
    assert out["differential_lambda"] == [0.3] and not any(key.startswith("grad_differential_lambda_") for key in out)
    asked = runner.invoke(app, ["compute", str(path), "--format", "json", "--only", "differential_lambda_q1"])
    assert asked.exit_code == 2 and len(asked.stderr.strip().splitlines()) == 1


def test_lambda_init_and_layer_exclude_each_other_in_chinese_too(runner, tmp_path):
    path = tmp_path / "d.json"
    path.write_text(json.dumps({"inputs": [[1, 0], [0, 1]], "heads": 2,
                                "differential": {"layer": 1, "lambda_init": 0.3}}))
    result = runner.invoke(app, ["compute", str(path), "--lang", "zh"])
    assert result.exit_code == 2 and "只给 lambda_init 或 layer 中的一个，不要同时给" in result.stderr
