"""attncli extract for DeepSeek-V3.2 (MLA after its lightning indexer), tiny models built here from configs with random
weights (never downloaded).

The extracted document verifies itself against the model in float64 (capture's switches, and the indexer's forward
in float64 with attncli's tie rule: transformers computes its scores in float32 and torch.topk keeps any of tied
keys); here it is computed again with the plain ``attncli compute`` and compared with the model run as a user runs
it (float64, eager attention, output_attentions): the indexer's keys where no tie straddles the cut, the weights and
the output to 1e-5 of the largest value (transformers' float32 RMSNorm).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import tiny_models
from test_extract_latent import close, model_run
from tiny_models import TEXT

from attncli.cli import app

pytestmark = pytest.mark.torch

SMALL = {"hidden_size": 16, "num_hidden_layers": 2, "num_attention_heads": 2, "num_key_value_heads": 2,
         "intermediate_size": 32, "max_position_embeddings": 64, "bos_token_id": 2, "eos_token_id": 3,
         "pad_token_id": 0, "kv_lora_rank": 6, "q_lora_rank": 5, "qk_nope_head_dim": 4, "qk_rope_head_dim": 4,
         "v_head_dim": 3, "n_routed_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 8,
         "first_k_dense_replace": 1, "n_group": 1, "topk_group": 1, "index_topk": 3, "index_head_dim": 8,
         "index_n_heads": 2}


@pytest.fixture(scope="module")
def folder(hf, tmp_path_factory):
    torch, transformers = hf
    root = tmp_path_factory.mktemp("models_dsa")
    tok = tiny_models.tokenizer(transformers, "gpt2")
    cfg = transformers.DeepseekV32Config(**SMALL, vocab_size=len(tok))
    return tiny_models.save_random(torch, transformers.DeepseekV32ForCausalLM(cfg), tok, "v32", root / "v32")


@pytest.mark.parametrize("layer", [0, 1])
def test_deepseek_v32_extract_reproduces_the_model(runner, hf, folder, layer, tmp_path):
    torch, transformers = hf
    doc = tmp_path / f"v32_{layer}.yaml"
    result = runner.invoke(app, ["extract", str(folder), "--text", TEXT, "-o", str(doc), "--layer", str(layer)])
    assert result.exit_code == 0, result.stderr
    reported = {line.split()[0]: float(line.split()[1]) for line in result.stdout.splitlines()[2:-1]}
    assert reported["weights"] <= 1e-12 and reported["output"] <= 1e-12 and reported["residual"] <= 1e-12, reported
    text = doc.read_text()
    for fragment in ("indexer:", "top_k: 3", "indexer.wq_b.weight", "indexer.k_norm.bias", "weights_proj.weight",
                     "style: interleaved_halves", "query_down: {file:"):
        assert fragment in text, (fragment, text)
    expected = model_run(torch, transformers, folder, layer, np.load(doc.with_suffix(".npy")))
    got = json.loads(runner.invoke(app, ["compute", str(doc), "--format", "json"]).stdout)
    clean = np.array(got["index_ties"]) == 0
    assert clean.sum() >= len(clean) - 3  # (ties at the cut: exact zeros of I, where torch.topk keeps any)
    weights = np.array(got["weights"])
    close(weights[:, clean], expected["weights"][:, clean], "weights", 1e-5)
    close(np.array(got["output"])[clean], expected["output"][clean], "output", 1e-5)
    kept = np.array(got["index_mask"], dtype=bool)
    assert np.array_equal(kept[clean], (expected["weights"][0] > 0)[clean])
    assert kept.sum(axis=1).max() == 3 and np.array(got["index_dropped_weight"]).max() > 0
