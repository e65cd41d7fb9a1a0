"""attncli extract for the 2025 families (issue 28): Qwen3, Qwen3-MoE, Gemma 3, OLMo 2/3, gpt-oss, Phi-3 (LongRoPE),
Granite, SmolLM3, Mixtral, Starcoder2; tiny models built here from configs with random weights (never downloaded).

Each extracted document verifies itself against the model in float64 (capture's float64 switches); here it is
computed again with the plain ``attncli compute`` and compared with the model run as a user runs it (float64,
eager attention, output_attentions, a hook on o_proj), where transformers keeps a few float32 steps (the rope
tables, RMSNorm's cast): to 1e-5 relative to the largest value. The rope frequencies and attention factor the
document derives from ``rope.scaling`` are compared with the rotary module's own (float32) ``inv_freq`` and its
``attention_scaling``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import tiny_models
from tiny_models import TEXT

import attncli
from attncli.cli import app

pytestmark = pytest.mark.torch

YARN = {"rope_type": "yarn", "rope_theta": 1000.0, "factor": 4.0, "original_max_position_embeddings": 6}
LONGROPE = {"rope_type": "longrope", "rope_theta": 10000.0, "partial_rotary_factor": 0.5,
            "short_factor": [1.0, 1.5], "long_factor": [2.0, 3.5]}
SMALL = {"hidden_size": 16, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
         "intermediate_size": 32, "max_position_embeddings": 24, "bos_token_id": 2, "eos_token_id": 3,
         "pad_token_id": 0}


def configs(transformers) -> dict:
    """Each family's tiny config and its class with a head (two layers of width 16)."""
    t = transformers
    return {
        "qwen3": (t.Qwen3Config(**SMALL, head_dim=8, attention_bias=True, rope_parameters=YARN), "Qwen3ForCausalLM"),
        "qwen3_moe": (t.Qwen3MoeConfig(**SMALL, head_dim=6, num_experts=4, num_experts_per_tok=2,
                                       moe_intermediate_size=8), "Qwen3MoeForCausalLM"),
        "gemma3_text": (t.Gemma3TextConfig(**SMALL, head_dim=8, sliding_window=3, query_pre_attn_scalar=6,
                                           layer_types=["sliding_attention", "full_attention"],
                                           rope_parameters={"sliding_attention": {"rope_type": "default",
                                                                                  "rope_theta": 100.0},
                                                            "full_attention": {"rope_type": "linear", "factor": 2.0,
                                                                               "rope_theta": 10000.0}}),
                        "Gemma3ForCausalLM"),
        "olmo2": (t.Olmo2Config(**SMALL), "Olmo2ForCausalLM"),
        "olmo3": (t.Olmo3Config(**SMALL, sliding_window=3, layer_types=["sliding_attention", "full_attention"]),
                  "Olmo3ForCausalLM"),
        "gpt_oss": (t.GptOssConfig(**{**SMALL, "intermediate_size": 16}, head_dim=8, num_local_experts=4,
                                   num_experts_per_tok=2, sliding_window=3,
                                   rope_parameters={**YARN, "beta_fast": 8.0, "beta_slow": 2.0}),
                    "GptOssForCausalLM"),
        "phi3": (t.Phi3Config(**{**SMALL, "num_attention_heads": 2, "num_key_value_heads": 1},
                              original_max_position_embeddings=6, rope_parameters=LONGROPE), "Phi3ForCausalLM"),
        "granite": (t.GraniteConfig(**SMALL, attention_multiplier=0.2, residual_multiplier=0.5,
                                    embedding_multiplier=2.0), "GraniteForCausalLM"),
        "smollm3": (t.SmolLM3Config(**SMALL, no_rope_layers=[1, 0]), "SmolLM3ForCausalLM"),
        "mixtral": (t.MixtralConfig(**SMALL, num_local_experts=4, num_experts_per_tok=2, sliding_window=3),
                    "MixtralForCausalLM"),
        "llama": (t.LlamaConfig(**SMALL, rope_parameters={**YARN, "mscale": 2.0, "mscale_all_dim": 1.0}),
                  "LlamaForCausalLM"),
        "starcoder2": (t.Starcoder2Config(**SMALL, use_bias=True, sliding_window=3, norm_epsilon=1e-5),
                       "Starcoder2ForCausalLM"),
    }


FAMILIES = ("qwen3", "qwen3_moe", "gemma3_text", "olmo2", "olmo3", "gpt_oss", "phi3", "granite", "smollm3",
            "mixtral", "starcoder2", "llama")
WANTS = {  # what each family's document says (layer 0, then layer 1)
    "qwen3": ["qk_norm:\n  kind: rms\n  gamma: {query: {file:", "self_attn.q_norm.weight}, key:",
              "type: yarn, factor: 4.0, original_max_position_embeddings: 6",
              "q_proj.bias"],
    "qwen3_moe": ["qk_norm:\n  kind: rms\n  gamma: {query:", "kv_heads: 2"],
    "gemma3_text": ["mask: {causal: true, window: 3}", "scale: 0.408248290463863", "post_norm:", "base: 100.0"],
    "olmo2": ["scope: projection", "post_norm:"],
    "olmo3": ["scope: projection", "window: 3"],
    "gpt_oss": ["sinks: {file:", "beta_fast: 8.0, beta_slow: 2.0", "window: 3"],
    "phi3": ["type: longrope", "dims: 4", "short_factor: [1.0, 1.5], long_factor: [2.0, 3.5]", "qkv_proj.weight"],
    "granite": ["residual: {scale: 0.5}", "scale: 0.2"],
    "smollm3": ["rope:"],
    "mixtral": ["window: 3", "kv_heads: 2"],
    "llama": ["type: yarn", "mscale: 2.0, mscale_all_dim: 1.0"],
    "starcoder2": ["kind: layer", "beta:", "o_proj.bias", "window: 3"],
}
LATER = {"gemma3_text": ["mask: causal", "type: linear", "base: 10000.0"], "olmo3": ["mask: causal"],
         "gpt_oss": ["mask: causal"], "smollm3": ["residual: true"]}


def build(torch, transformers, family: str, folder: Path, given=None) -> Path:
    """The tiny model of ``family`` (or the ``given`` (config, class with a head)), random weights, saved."""
    tok = tiny_models.tokenizer(transformers, "gpt2")
    cfg, head = given or configs(transformers)[family]
    cfg.vocab_size = len(tok)
    return tiny_models.save_random(torch, getattr(transformers, head)(cfg), tok, family, folder)


@pytest.fixture(scope="module")
def folders(hf, tmp_path_factory):
    torch, transformers = hf
    root = tmp_path_factory.mktemp("models2025")
    return {family: build(torch, transformers, family, root / family) for family in FAMILIES}


def model_run(torch, transformers, folder: Path, layer: int, monkeypatch, x=None) -> tuple[dict, object]:
    """The model as a user runs it, in float64: X (hidden state), A (output_attentions), Y (o_proj's output).

    transformers' float32 steps (the rope tables, RMSNorm's cast, the softmax's dtype) become float64 here by
    making torch's float32 float64 once the weights are loaded, and building the rotary module again under it:
    independently of how extract's capture switches them."""
    model = transformers.AutoModel.from_pretrained(folder, dtype=torch.float64, attn_implementation="eager",
                                                   experts_implementation="eager").eval()
    caught = {}
    if x is not None:  # the layer runs on the document's X (an MoE router before it upcasts with .float() in extract)
        model.get_submodule(f"layers.{layer}").register_forward_pre_hook(
            lambda m, args: (torch.from_numpy(x)[None], *args[1:]))
    model.get_submodule(f"layers.{layer}.self_attn.o_proj").register_forward_hook(
        lambda m, args, out: caught.setdefault("output", out))
    ids = transformers.AutoTokenizer.from_pretrained(folder)(TEXT, return_tensors="pt")["input_ids"]
    with monkeypatch.context() as patch, torch.no_grad():
        for name in ("float32", "float"):
            patch.setattr(torch, name, torch.float64)
        patch.setattr(torch.Tensor, "float", torch.Tensor.double)
        model.rotary_emb = type(model.rotary_emb)(model.config)
        out = model(input_ids=ids, output_attentions=True, output_hidden_states=True)
    found = {"inputs": out.hidden_states[layer], "weights": out.attentions[layer], **caught}
    return {k: v[0].double().numpy() for k, v in found.items()}, model


def close(ours, theirs, what: str, tol: float = 1e-10) -> None:
    tiny_models.close(ours, theirs, what, tol)


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("layer", [0, 1])
def test_each_family_reproduces_the_model(runner, hf, folders, family, layer, tmp_path, monkeypatch):
    torch, transformers = hf
    doc = tmp_path / f"{family}{layer}.yaml"
    result = runner.invoke(app, ["extract", str(folders[family]), "--text", TEXT, "-o", str(doc),
                                 "--layer", str(layer)])
    assert result.exit_code == 0, result.stderr
    report = result.stdout.splitlines()
    reported = {line.split()[0]: float(line.split()[1]) for line in report[2:-1]}
    assert reported["weights"] <= 1e-12 and reported["output"] <= 1e-12 and reported["residual"] <= 1e-12, reported
    text = doc.read_text()
    for fragment in WANTS[family] if layer == 0 else LATER.get(family, WANTS[family]):
        assert fragment in text, (family, layer, fragment, text)

    x = np.load(doc.with_suffix(".npy"))
    expected, model = model_run(torch, transformers, folders[family], layer, monkeypatch)
    if layer == 0:  # the embeddings, bit for bit
        assert np.array_equal(x, expected["inputs"])
    close(x, expected["inputs"], "inputs", 1e-10 if "experts" not in str(model) else 1e-7)
    expected, model = model_run(torch, transformers, folders[family], layer, monkeypatch, x)
    got = json.loads(runner.invoke(app, ["compute", str(doc), "--format", "json"]).stdout)
    close(got["weights"], expected["weights"], "weights")
    close(got["output"], expected["output"], "output")
    rotary = model.rotary_emb
    if "rope_frequencies" in got:
        kind = "" if hasattr(rotary, "inv_freq") else model.config.layer_types[layer]  # (a rope per layer type)
        inv_freq = getattr(rotary, f"{kind}_inv_freq" if kind else "inv_freq")
        if family == "phi3":  # the sentence is longer than original_max_position_embeddings (6): the long factors
            assert len(got["tokens"]) > 6
            inv_freq = 1.0 / (torch.tensor(LONGROPE["long_factor"], dtype=torch.float64)
                              * 10000.0 ** (torch.arange(0, 4, 2, dtype=torch.float64) / 4))
        close(got["rope_frequencies"], inv_freq, "rope_frequencies", 1e-15)
        factor = getattr(rotary, f"{kind}_attention_scaling" if kind else "attention_scaling")
        assert got["rope_attention_factor"] == pytest.approx(factor, rel=1e-15, abs=0)
    spec = attncli.load(doc)
    assert spec.w_o.shape == (model.config.num_attention_heads * model.get_submodule(
        f"layers.{layer}.self_attn").head_dim, 16)


def test_smollm3_nope_layer_has_no_rope(runner, folders, tmp_path):
    doc = tmp_path / "nope.yaml"
    assert runner.invoke(app, ["extract", str(folders["smollm3"]), "--text", TEXT, "-o", str(doc),
                               "--layer", "1"]).exit_code == 0
    assert "rope" not in doc.read_text()


def test_gemma3_gamma_is_one_plus_w(runner, hf, folders, tmp_path):
    torch, transformers = hf
    doc = tmp_path / "g.yaml"
    assert runner.invoke(app, ["extract", str(folders["gemma3_text"]), "--text", TEXT, "-o", str(doc),
                               "--layer", "0"]).exit_code == 0
    spec = attncli.load(doc)
    model = transformers.AutoModel.from_pretrained(folders["gemma3_text"])
    w = model.get_parameter("layers.0.self_attn.q_norm.weight").detach().double().numpy()
    assert np.array_equal(spec.qk_norm.gamma_query, 1.0 + w)


def test_gemma3_bidirectional_is_refused(runner, hf, tmp_path):
    torch, transformers = hf
    folder = build(torch, transformers, "gemma3_text", tmp_path / "g")
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "use_bidirectional_attention": True}))
    result = runner.invoke(app, ["extract", str(folder), "--text", TEXT, "-o", str(tmp_path / "g.yaml"),
                                 "--layer", "0"])
    assert result.exit_code == 2
    assert "use_bidirectional_attention" in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_phi3_top_level_original_wins_and_a_short_sentence_takes_the_short_factors(runner, hf, tmp_path):
    """Phi-3's config: the top-level original_max_position_embeddings (20) overrides rope_parameters' (6); the
    sentence (15 tokens) is within it, so LongRoPE divides by short_factor."""
    torch, transformers = hf
    cfg = transformers.Phi3Config(**{**SMALL, "num_attention_heads": 2, "num_key_value_heads": 1},
                                  original_max_position_embeddings=20,
                                  rope_parameters={**LONGROPE, "original_max_position_embeddings": 6})
    folder = build(torch, transformers, "phi3", tmp_path / "phi3", (cfg, "Phi3ForCausalLM"))
    doc = tmp_path / "p.yaml"
    result = runner.invoke(app, ["extract", str(folder), "--text", TEXT, "-o", str(doc), "--layer", "1"])
    assert result.exit_code == 0, result.stderr
    assert "original_max_position_embeddings: 20" in doc.read_text()
    got = json.loads(runner.invoke(app, ["compute", str(doc), "--format", "json"]).stdout)
    short = 1.0 / (np.array(LONGROPE["short_factor"]) * 10000.0 ** (np.arange(0, 4, 2) / 4))
    assert np.array_equal(got["rope_frequencies"], short)
    assert got["rope_attention_factor"] == pytest.approx(np.sqrt(1 + np.log(24 / 20) / np.log(20)), rel=1e-15)
