"""attncli extract for DiffLlama (differential attention): a tiny model built here from a config with random weights
(never downloaded) and saved; each extracted document is computed with the plain ``attncli compute`` and compared
with the model run here in float64 as a user runs it (``output_hidden_states``, ``output_attentions``, a hook on the
output projection), its float32 steps (softmax, λ's sums, RMSNorm, RoPE) switched to float64 in this test."""

from __future__ import annotations

import json

import numpy as np
import pytest
import tiny_models
from tiny_models import TEXT

from attncli.cli import app

pytestmark = [pytest.mark.torch]
TOL = 1e-9


@pytest.fixture(scope="module")
def diffllama(tmp_path_factory):
    torch, transformers = tiny_models.hf_and_tokenizers()
    tok = tiny_models.tokenizer(transformers, "llama")
    cfg = transformers.DiffLlamaConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=3, num_attention_heads=4,
                                       num_key_value_heads=2, intermediate_size=48, max_position_embeddings=24,
                                       rms_norm_eps=1e-5)
    folder = tiny_models.save_random(torch, transformers.DiffLlamaForCausalLM(cfg), tok, "diffllama",
                                     tmp_path_factory.mktemp("models") / "diffllama")
    return torch, transformers, folder


def _model_run(torch, transformers, folder, layer: int, monkeypatch) -> dict:
    f64 = torch.float64
    softmax, total = torch.nn.functional.softmax, torch.sum
    monkeypatch.setattr(torch.nn.functional, "softmax", lambda x, dim=None, _stacklevel=3, dtype=None:
                        softmax(x, dim=dim))
    monkeypatch.setattr(torch, "sum", lambda x, *a, dtype=None, **k: total(x, *a, **k))  # (λ's float32 sums)
    model = transformers.AutoModel.from_pretrained(folder, dtype=f64, attn_implementation="eager").eval()
    for module in model.modules():
        if hasattr(module, "variance_epsilon"):
            monkeypatch.setattr(type(module), "forward", lambda self, x: self.weight * x * torch.rsqrt(
                x.pow(2).mean(-1, keepdim=True) + self.variance_epsilon))
        if hasattr(module, "inv_freq"):
            d = 2 * module.inv_freq.shape[0]
            exact = 1.0 / model.config.rope_parameters["rope_theta"] ** (torch.arange(0, d, 2, dtype=f64) / d)

            def rope(self, x, position_ids, exact=exact):
                angles = position_ids.to(f64)[..., None] * exact
                emb = torch.cat((angles, angles), dim=-1)
                return emb.cos(), emb.sin()

            monkeypatch.setattr(type(module), "forward", rope)
    caught = {}
    model.get_submodule(f"layers.{layer}.self_attn.o_proj").register_forward_hook(
        lambda m, args, out: caught.setdefault("output", out))
    ids = transformers.AutoTokenizer.from_pretrained(folder)(TEXT, return_tensors="pt")["input_ids"]
    with torch.no_grad():
        out = model(input_ids=ids, output_attentions=True, output_hidden_states=True)
    attn = model.get_submodule(f"layers.{layer}.self_attn")
    return {"inputs": out.hidden_states[layer][0].numpy(), "weights": out.attentions[layer][0].numpy(),
            "output": caught["output"][0].numpy(), "lambda_init": attn.lambda_init,
            **{name: getattr(attn, name).detach().numpy() for name in ("lambda_q1", "lambda_k1", "lambda_q2",
                                                                       "lambda_k2")}}


@pytest.mark.parametrize("layer", [0, 2])
def test_extract_reproduces_diffllama(runner, diffllama, tmp_path, monkeypatch, layer):
    torch, transformers, folder = diffllama
    doc = tmp_path / f"diff{layer}.yaml"
    result = runner.invoke(app, ["extract", str(folder), "--text", TEXT, "-o", str(doc), "--layer", str(layer)])
    assert result.exit_code == 0, result.stderr
    report = result.stdout.splitlines()
    assert report[1] == "The document reproduces the model (max |difference|):"
    reported = {line.split()[0]: float(line.split()[1]) for line in report[2:-1]}
    assert reported["weights"] <= 1e-12 and reported["output"] <= 1e-12, reported
    text = doc.read_text()
    assert "differential:" in text and f"layer: {layer}" in text and "lambda_q1" in text
    computed = runner.invoke(app, ["compute", str(doc), "--format", "json"])
    assert computed.exit_code == 0, computed.stderr
    got = json.loads(computed.stdout)
    want = _model_run(torch, transformers, folder, layer, monkeypatch)
    for key in ("inputs", "weights", "output"):
        ours, theirs = np.asarray(got[key]), want[key]
        assert ours.shape == theirs.shape and np.abs(ours - theirs).max() <= TOL, key
    lam = np.exp(want["lambda_q1"] @ want["lambda_k1"]) - np.exp(want["lambda_q2"] @ want["lambda_k2"])
    assert abs(0.8 - 0.6 * np.exp(-0.3 * layer) - want["lambda_init"]) <= 1e-15  # (transformers' own λ_init)
    assert np.abs(np.asarray(got["differential_lambda"]) - (lam + want["lambda_init"])).max() <= 1e-12
