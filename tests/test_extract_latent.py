"""attncli extract for DeepSeek V2 and V3 (issue 29: multi-head latent attention), tiny models built here from configs
with random weights (never downloaded), and Kimi K2's folder refused in one line.

Each extracted document verifies itself against the model in float64 (capture's float64 switches: RMSNorm, the
softmax, V2's complex rotation in complex128); here it is computed again with the plain ``attncli compute`` and
compared with the model run as a user runs it (float64, eager attention, output_attentions, a hook on o_proj),
where transformers keeps a few float32 steps (RMSNorm's cast, V2's complex64 rotation): to 1e-5 of the largest
value; the rope frequencies the document derives from YaRN against the rotary module's own (float32) inv_freq.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import tiny_models
from tiny_models import TEXT

from attncli.cli import app

pytestmark = pytest.mark.torch

YARN = {"rope_type": "yarn", "rope_theta": 1000.0, "factor": 4.0, "original_max_position_embeddings": 6,
        "mscale": 1.0, "mscale_all_dim": 0.8}
SMALL = {"hidden_size": 16, "num_hidden_layers": 2, "num_attention_heads": 2, "num_key_value_heads": 2,
         "intermediate_size": 32, "max_position_embeddings": 24, "bos_token_id": 2, "eos_token_id": 3,
         "pad_token_id": 0, "kv_lora_rank": 6, "qk_nope_head_dim": 4, "qk_rope_head_dim": 4, "v_head_dim": 3,
         "n_routed_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 8, "first_k_dense_replace": 1,
         "n_group": 1, "topk_group": 1}
CASES = {  # name: (config class, its fields, the class with a head, what the document says)
    "v2": ("DeepseekV2Config", {"q_lora_rank": None}, "DeepseekV2ForCausalLM",
           ["style: interleaved", "part: last", "kv_b_proj.weight", "  query: {file:"]),
    "v2_lora_yarn": ("DeepseekV2Config", {"q_lora_rank": 5, "rope_parameters": YARN}, "DeepseekV2ForCausalLM",
                     ["type: yarn", "query_norm:", "q_a_proj.weight", "scale: 0."]),
    "v3": ("DeepseekV3Config", {"q_lora_rank": 5, "rope_interleave": True}, "DeepseekV3ForCausalLM",
           ["style: interleaved_halves", "query_down: {file:", "kv_a_layernorm.weight"]),
    "v3_halves_yarn_bias": ("DeepseekV3Config", {"q_lora_rank": None, "rope_interleave": False,
                                                 "rope_parameters": YARN, "attention_bias": True},
                            "DeepseekV3ForCausalLM", ["style: half", "kv_down: {file:", "mscale_all_dim: 0.8",
                                                      "kv_a_proj_with_mqa.bias"]),
}


@pytest.fixture(scope="module")
def folders(hf, tmp_path_factory):
    torch, transformers = hf
    root = tmp_path_factory.mktemp("models_mla")
    tok = tiny_models.tokenizer(transformers, "gpt2")
    made = {}
    for name, (config, fields, head, _) in CASES.items():
        fields = {**SMALL, **fields}
        if config == "DeepseekV2Config":
            fields = {k: v for k, v in fields.items() if k not in ("n_group", "topk_group")}
        cfg = getattr(transformers, config)(**fields, vocab_size=len(tok))
        made[name] = tiny_models.save_random(torch, getattr(transformers, head)(cfg), tok, name, root / name)
    return made


def model_run(torch, transformers, folder, layer: int, x: np.ndarray) -> dict:
    """The model as a user runs it, in float64, its layer fed the document's X: A and Y."""
    model = transformers.AutoModel.from_pretrained(folder, dtype=torch.float64, attn_implementation="eager",
                                                   experts_implementation="eager").eval()
    caught = {}
    model.get_submodule(f"layers.{layer}").register_forward_pre_hook(
        lambda m, args: (torch.from_numpy(x)[None], *args[1:]))
    model.get_submodule(f"layers.{layer}.self_attn.o_proj").register_forward_hook(
        lambda m, args, out: caught.setdefault("output", out))
    ids = transformers.AutoTokenizer.from_pretrained(folder)(TEXT, return_tensors="pt")["input_ids"]
    with torch.no_grad():
        out = model(input_ids=ids, output_attentions=True)
    caught["weights"] = out.attentions[layer]
    caught["inv_freq"] = model.rotary_emb.inv_freq[None]
    return {k: v[0].double().numpy() for k, v in caught.items()}


def close(ours, theirs, what: str, tol: float) -> None:
    ours, theirs = np.asarray(ours, dtype=np.float64), np.asarray(theirs, dtype=np.float64)
    assert ours.shape == theirs.shape, (what, ours.shape, theirs.shape)
    difference = float(np.max(np.abs(ours - theirs)))
    assert difference <= tol * max(1.0, float(np.max(np.abs(theirs)))), (what, difference)


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("layer", [0, 1])
def test_deepseek_extract_reproduces_the_model(runner, hf, folders, name, layer, tmp_path):
    torch, transformers = hf
    doc = tmp_path / f"{name}{layer}.yaml"
    result = runner.invoke(app, ["extract", str(folders[name]), "--text", TEXT, "-o", str(doc),
                                 "--layer", str(layer)])
    assert result.exit_code == 0, result.stderr
    reported = {line.split()[0]: float(line.split()[1]) for line in result.stdout.splitlines()[2:-1]}
    assert reported["weights"] <= 1e-12 and reported["output"] <= 1e-12 and reported["residual"] <= 1e-12, reported
    text = doc.read_text()
    for fragment in CASES[name][3]:
        assert fragment in text, (name, fragment, text)
    expected = model_run(torch, transformers, folders[name], layer, np.load(doc.with_suffix(".npy")))
    got = json.loads(runner.invoke(app, ["compute", str(doc), "--format", "json"]).stdout)
    close(got["weights"], expected["weights"], "weights", 1e-5)
    close(got["output"], expected["output"], "output", 1e-5)
    close(got["rope_frequencies"], expected["inv_freq"], "rope_frequencies", 1e-6)
    assert len(got["latent_kv"][0]) == 6 and len(got["absorbed_queries"][0][0]) == 6 + 4


def test_kimi_k2_folder_is_refused_in_one_line(runner, tmp_path):
    folder = tmp_path / "kimi"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "kimi_k2", "architectures": [
        "DeepseekV3ForCausalLM"], "auto_map": {"AutoConfig": "configuration_deepseek.DeepseekV3Config"}}))
    (folder / "configuration_deepseek.py").write_text("raise SystemExit('never run')\n")
    pytest.importorskip("safetensors.numpy").save_file({"w": np.zeros((2, 2))}, str(folder / "model.safetensors"))
    result = runner.invoke(app, ["extract", str(folder), "--text", TEXT, "-o", str(tmp_path / "k.yaml"),
                                 "--layer", "0"])
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1 and "kimi_k2" in result.stderr and "never runs" in result.stderr
    assert not (tmp_path / "k.yaml").exists()
