"""attncli extract for StableLM, GLM-4, Cohere, Cohere 2 and ModernBERT (attncli/models/other_outlines.py).

Tiny models are built here from configs with random weights (never downloaded) and saved; each extracted document
is computed with the plain ``attncli compute`` and compared with the model run here, in float64, as a user runs
it (``output_attentions``, hooks on the layer and its output projection), its float32 steps switched to float64 by
replacing the classes' methods in this test (independently of attncli.models.float64_switches).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import tiny_models
from tiny_models import TEXT

from attncli.cli import app

pytestmark = [pytest.mark.torch, pytest.mark.slow]
TOL = 1e-9
SMALL = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 48,
         "max_position_embeddings": 24}


def configs(transformers, vocab: int) -> dict:
    small = {**SMALL, "vocab_size": vocab, "pad_token_id": 0, "bos_token_id": 2, "eos_token_id": 3}
    return {
        "stablelm": transformers.StableLmConfig(**small, num_key_value_heads=2, qk_layernorm=True, use_qkv_bias=True,
                                                partial_rotary_factor=0.5),
        "glm4": transformers.Glm4Config(**small, num_key_value_heads=2, head_dim=8, attention_bias=True),
        "cohere": transformers.CohereConfig(**small, num_key_value_heads=2, use_qk_norm=True, attention_bias=True),
        "cohere2": transformers.Cohere2Config(**small, num_key_value_heads=2, sliding_window=3,
                                              layer_types=["sliding_attention", "full_attention"]),
        "modernbert": transformers.ModernBertConfig(**{**small, "num_hidden_layers": 3}, local_attention=4,
                                                    global_attn_every_n_layers=2, attention_bias=True,
                                                    norm_bias=True, cls_token_id=2, sep_token_id=3),
        "mpt": transformers.MptConfig(vocab_size=vocab, d_model=32, n_heads=4, n_layers=2, expansion_ratio=2,
                                      max_seq_len=24, attn_config={"clip_qkv": 0.8}, pad_token_id=0),
        "dbrx": transformers.DbrxConfig(vocab_size=vocab, d_model=32, n_heads=4, n_layers=2, max_seq_len=24,
                                        attn_config={"clip_qkv": 0.8, "kv_n_heads": 2, "rope_theta": 10000.0},
                                        ffn_config={"ffn_hidden_size": 32, "moe_num_experts": 2, "moe_top_k": 1},
                                        pad_token_id=0),
        "llama4_text": transformers.Llama4TextConfig(**small, num_key_value_heads=2, head_dim=8,
                                                     intermediate_size_mlp=48,
                                                     num_local_experts=2, num_experts_per_tok=1,
                                                     no_rope_layers=[1, 0], attention_chunk_size=4, use_qk_norm=True,
                                                     attn_temperature_tuning=True, floor_scale=2, attn_scale=0.5,
                                                     rope_parameters={"rope_type": "default", "rope_theta": 500.0}),
        "qwen3_next": transformers.Qwen3NextConfig(**small, num_key_value_heads=2, head_dim=8, attention_bias=True,
                                                   layer_types=["linear_attention", "full_attention"],
                                                   linear_num_value_heads=2, linear_num_key_heads=2,
                                                   linear_key_head_dim=8, linear_value_head_dim=8, num_experts=2,
                                                   num_experts_per_tok=1, moe_intermediate_size=16,
                                                   shared_expert_intermediate_size=16),
    }


LAYERS = {"stablelm": (0, 1), "glm4": (0, 1), "cohere": (0, 1), "cohere2": (0, 1), "modernbert": (0, 1, 2),
          "mpt": (0, 1), "dbrx": (0, 1), "llama4_text": (0, 1),
          "qwen3_next": (1,)}
ATTENTION = {"modernbert": "layers.{L}.attn", "mpt": "blocks.{L}.attn", "dbrx": "blocks.{L}.norm_attn_norm.attn"}
BLOCK = {"mpt": "blocks.{L}", "dbrx": "blocks.{L}"}


@pytest.fixture(scope="module")
def folders(hf, tmp_path_factory):
    torch, transformers = hf
    tok = tiny_models.tokenizer(transformers, "llama")
    made = configs(transformers, len(tok))
    return tiny_models.built(torch, transformers, {family: made[family] for family in LAYERS}, tok,
                             tmp_path_factory.mktemp("models2026"))


def _float64(torch, monkeypatch, model) -> None:
    """Hugging Face's float32 steps in float64, by replacing methods (softmax, .float(), norms, rope)."""
    f64 = torch.float64
    softmax, to_float = torch.nn.functional.softmax, torch.Tensor.float
    monkeypatch.setattr(torch.nn.functional, "softmax", lambda x, dim=None, _stacklevel=3, dtype=None: softmax(x, dim))
    monkeypatch.setattr(torch.Tensor, "float", lambda self, *a, **k: self if self.dtype == f64 else self.to(f64)
                        if not (self.is_floating_point() or self.is_complex()) else to_float(self))
    for module in model.modules():
        name = type(module).__name__
        if name == "Qwen3NextRMSNorm":  # γ = 1 + w
            monkeypatch.setattr(type(module), "forward", lambda self, x: (1 + self.weight) * x * torch.rsqrt(
                x.pow(2).mean(-1, keepdim=True) + self.eps))
        elif name.endswith("RMSNorm"):
            eps = "variance_epsilon" if hasattr(module, "variance_epsilon") else "eps"  # (Llama 4's: eps until 5.25)
            monkeypatch.setattr(type(module), "forward", lambda self, x, eps=eps: getattr(self, "weight", 1.0) * x *
                                torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + getattr(self, eps)))  # (5.25's
            #   Llama4TextWeightlessRMSNorm, the L2Norm before: no γ)
        elif name in ("CohereLayerNorm", "Cohere2LayerNorm"):
            def layer(self, x):
                c = x - x.mean(-1, keepdim=True)
                return self.weight * c / torch.sqrt(c.pow(2).mean(-1, keepdim=True) + self.variance_epsilon)
            monkeypatch.setattr(type(module), "forward", layer)
        elif name.endswith("RotaryEmbedding"):
            interleave = name.startswith("Cohere")

            def rope(self, x, position_ids, layer_type=None, interleave=interleave, complex=name.startswith("Llama4")):
                inv = getattr(self, f"{layer_type}_inv_freq" if layer_type else "inv_freq")
                rope = self.config.rope_parameters
                theta = (rope[layer_type] if layer_type else rope)["rope_theta"]
                d = 2 * inv.shape[0]
                angles = position_ids.to(f64)[..., None] / theta ** (torch.arange(0, d, 2, dtype=f64) / d)
                if complex:  # Llama 4: e^(i·angle), its pairs interleaved
                    return torch.polar(torch.ones_like(angles), angles)
                emb = angles.repeat_interleave(2, -1) if interleave else torch.cat((angles, angles), -1)
                return emb.cos(), emb.sin()

            monkeypatch.setattr(type(module), "forward", rope)


def reference(torch, transformers, family, folder, layer, monkeypatch, x=None) -> dict:
    """The model's X, A and Y of the layer (with ``x``: the layer run on that X instead of its own)."""
    model = transformers.AutoModel.from_pretrained(folder, dtype=torch.float64, attn_implementation="eager",
                                                   experts_implementation="eager").eval()  # (grouped_mm: no float64)
    _float64(torch, monkeypatch, model)
    caught = {}

    def keep(key, pick):
        def hook(*args) -> None:  # (a hook returning something would replace the module's input or output)
            caught.setdefault(key, pick(*args))
        return hook

    block = model.get_submodule(BLOCK.get(family, "layers.{L}").format(L=layer))
    block.register_forward_pre_hook(keep("inputs", lambda m, a, k: a[0] if a else k["hidden_states"]),
                                    with_kwargs=True)
    if x is not None:
        def given(module, args, kwargs):
            own = torch.from_numpy(x)[None]
            return ((own, *args[1:]), kwargs) if args else (args, {**kwargs, "hidden_states": own})
        block.register_forward_pre_hook(given, with_kwargs=True)
    attention = model.get_submodule(ATTENTION.get(family, "layers.{L}.self_attn").format(L=layer))
    projection = attention.get_submodule({"modernbert": "Wo", "mpt": "out_proj", "dbrx": "out_proj"}.get(family,
                                                                                                        "o_proj"))
    projection.register_forward_hook(keep("output", lambda m, a, o: o))
    attention.register_forward_hook(keep("weights", lambda m, a, o: o[1]))
    ids = transformers.AutoTokenizer.from_pretrained(folder)(TEXT, return_tensors="pt")["input_ids"]
    with torch.no_grad():
        model(input_ids=ids, output_attentions=True)
    return {k: v[0].double().numpy() for k, v in caught.items()}


def agrees(ours, theirs, what: str) -> float:
    return tiny_models.close(ours, theirs, what, TOL)


@pytest.mark.parametrize("family,layer", [(f, L) for f, layers in LAYERS.items() for L in layers])
def test_each_family_reproduces_the_model(runner, hf, folders, family, layer, tmp_path, monkeypatch):
    torch, transformers = hf
    doc = tmp_path / f"{family}{layer}.yaml"
    result = runner.invoke(app, ["extract", str(folders[family]), "--text", TEXT, "-o", str(doc),
                                 "--layer", str(layer)])
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines()[1] == "The document reproduces the model (max |difference|):"
    x = np.load(doc.with_suffix(".npy"))
    # Qwen3-Next: its linear-attention layer before computes in float32 inside (Gated DeltaNet), X agrees to 1e-6:
    # the layer is run here on the document's X
    given = x if family == "qwen3_next" else None
    expected = reference(torch, transformers, family, folders[family], layer, monkeypatch, given)
    got = json.loads(runner.invoke(app, ["compute", str(doc), "--format", "json"]).stdout)
    if given is None:
        agrees(x, expected["inputs"], "inputs")
    else:
        assert np.max(np.abs(x - expected["inputs"])) < 1e-5
        expected["inputs"] = x
    agrees(got["weights"], expected["weights"], "weights")
    agrees(got["output"], expected["output"], "output")
    if "residual" in got and family not in ("glm4",):  # (GLM-4: R = X + post_norm(Y))
        agrees(got["residual"], expected["inputs"] + expected["output"], "residual")
    if family in ("mpt", "dbrx"):  # clip_qkv is at work: some of Q, K, V are clamped to ±0.8
        assert np.isclose(np.max(np.abs(got["queries"])), 0.8, rtol=0, atol=0)
    text = doc.read_text()
    for fragment in WANTS[family](layer):
        assert fragment in text, (family, layer, fragment)


WANTS = {
    "stablelm": lambda L: ["kind: layer", "rope: {base: 10000.0, dims: 4, style: half}", "qk_norm:\n  kind: layer",
                           "residual: true", "kv_heads: 2"],
    "glm4": lambda L: ["rope: {base: 10000.0, dims: 4, style: interleaved}", "post_norm:", "kind: rms",
                       "q_proj.bias"],
    "cohere": lambda L: ["rope: {base: 500000.0, style: interleaved}", "qk_norm:\n  kind: layer",
                         "q_norm.weight"],
    "cohere2": lambda L: (["mask: {causal: true, window: 3}", "style: interleaved"] if L == 0 else ["mask: causal"]),
    "modernbert": lambda L: (["columns: [0, 32]", "layout: torch"] + (["mask: {window: 3}"] if L % 2 else [])
                             + (["pre_norm:"] if L else [])),
    "llama4_text": lambda L: (["mask: {causal: true, chunk: 4}", "style: interleaved", "after_rope: true"] if L == 0
                              else ["mask: causal", "query_temperature: {floor_scale: 2.0, attn_scale: 0.5}"]),
    "qwen3_next": lambda L: ["gate: {file:", "dims: 2", "qk_norm:", "columns: [[0, 8], [16, 24], [32, 40], [48, 56]]"],
    "mpt": lambda L: ["clip_qkv: 0.8", "score_bias: {alibi: true}", "columns: [32, 64]"],
    "dbrx": lambda L: ["clip_qkv: 0.8", "kv_heads: 2", "columns: [32, 48]", "rope: {base: 10000.0, style: half}"],
}


def test_cohere_writes_no_residual_and_cohere2_full_layers_no_rope(runner, hf, folders, tmp_path):
    for family, layer in (("cohere", 0), ("cohere2", 1)):
        doc = tmp_path / f"{family}.yaml"
        assert runner.invoke(app, ["extract", str(folders[family]), "--text", TEXT, "-o", str(doc),
                                   "--layer", str(layer)]).exit_code == 0
        text = doc.read_text()
        assert "residual:" not in text  # the parallel block adds attention and MLP to X together
        assert ("rope:" in text) == (family == "cohere")


@pytest.mark.parametrize("family", list(LAYERS))
def test_float32_mirrors_each_family_in_its_own_precision(runner, hf, folders, family, tmp_path):
    doc = tmp_path / f"{family}.yaml"
    result = runner.invoke(app, ["extract", str(folders[family]), "--text", TEXT, "-o", str(doc),
                                 "--layer", str(LAYERS[family][-1]), "--dtype", "float32"])
    assert result.exit_code == 0, result.stderr
    reported = [float(line.split()[1]) for line in result.stdout.splitlines()[2:-1]]
    assert 0 < max(reported) < 1e-3  # float32's rounding (extract refuses more than 1e-4 × the largest value)


def test_stablelm_parallel_residual_writes_no_residual(runner, hf, tmp_path):
    torch, transformers = hf
    tok = tiny_models.tokenizer(transformers, "llama")
    config = configs(transformers, len(tok))["stablelm"]
    config.use_parallel_residual = True
    model = transformers.AutoModel.from_config(config)
    model.save_pretrained(tmp_path / "m", safe_serialization=True)
    tok.save_pretrained(tmp_path / "m")
    doc = tmp_path / "l1.yaml"
    result = runner.invoke(app, ["extract", str(tmp_path / "m"), "--text", TEXT, "-o", str(doc), "--layer", "1"])
    assert result.exit_code == 0, result.stderr
    assert "residual" not in result.stdout and "residual:" not in doc.read_text()  # X + attention + MLP together
