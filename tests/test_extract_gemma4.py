"""attncli extract for Gemma 4 (text): a tiny Gemma4ForCausalLM built here from a config with random weights (never
downloaded), sliding and global layers (the global ones with V = the raw k_proj output, their own head width and
key/value heads, a proportional rope), and two layers in kv sharing's "reuse" mode.

Each extracted document verifies itself against the model in float64 (the report's numbers, to 1e-12); here they are
computed again with the plain ``attncli compute`` and compared with the attention module's own output (a hook on
o_proj of the float64 model, its RMSNorm and softmax kept float64), and a "reuse" layer is refused in one line.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import tiny_models
from tiny_models import TEXT

from attncli.cli import app

pytestmark = pytest.mark.torch


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    torch, transformers = tiny_models.hf_and_tokenizers()
    tok = tiny_models.tokenizer(transformers, "gpt2")
    cfg = transformers.Gemma4TextConfig(
        vocab_size=len(tok), hidden_size=16, intermediate_size=32, num_hidden_layers=4, num_attention_heads=4,
        num_key_value_heads=2, head_dim=8, global_head_dim=16, num_global_key_value_heads=1, attention_k_eq_v=True,
        layer_types=["sliding_attention", "full_attention"] * 2, sliding_window=3, num_kv_shared_layers=2,
        hidden_size_per_layer_input=0, max_position_embeddings=64, bos_token_id=2, eos_token_id=3, pad_token_id=0)
    return tiny_models.save_random(torch, transformers.Gemma4ForCausalLM(cfg), tok, "gemma4",
                                   tmp_path_factory.mktemp("gemma4") / "gemma4")


def module_output(folder: Path, layer: int, x: np.ndarray) -> np.ndarray:
    """o_proj's output of ``layer`` run on the document's X, in float64 (RMSNorm's and softmax's casts undone)."""
    torch, transformers = tiny_models.hf_and_tokenizers()
    model = transformers.AutoModel.from_pretrained(folder, dtype=torch.float64, attn_implementation="eager").eval()
    caught = {}
    model.get_submodule(f"layers.{layer}").register_forward_pre_hook(
        lambda m, args: (torch.from_numpy(x)[None], *args[1:]))
    model.get_submodule(f"layers.{layer}.self_attn.o_proj").register_forward_hook(
        lambda m, args, out: caught.setdefault("output", out))
    ids = transformers.AutoTokenizer.from_pretrained(folder)(TEXT, return_tensors="pt")["input_ids"]
    original, softmax = torch.Tensor.float, torch.nn.functional.softmax
    torch.Tensor.float = lambda self, *a, **k: self if self.dtype == torch.float64 else original(self, *a, **k)
    torch.nn.functional.softmax = lambda t, dim=None, dtype=None, **k: softmax(t, dim=dim)
    try:
        with torch.no_grad():
            model(input_ids=ids, output_hidden_states=True)  # (no slicing before the shared layers)
    finally:
        torch.Tensor.float, torch.nn.functional.softmax = original, softmax
    return caught["output"][0].numpy()


@pytest.mark.parametrize(("layer", "wants"), [
    (0, ["window: 3", "v_norm:", "scale: none", "value:"]),
    (1, ["mask: causal", "k_eq_v: true", "kv_heads: 1", "frequencies:"]),
])
def test_each_layer_reproduces_the_model(runner, folder, tmp_path, layer, wants):
    doc = tmp_path / f"g{layer}.yaml"
    result = runner.invoke(app, ["extract", str(folder), "--text", TEXT, "-o", str(doc), "--layer", str(layer)])
    assert result.exit_code == 0, result.stderr
    reported = {line.split()[0]: float(line.split()[1]) for line in result.stdout.splitlines()[2:-1]}
    assert reported["weights"] <= 1e-12 and reported["output"] <= 1e-12 and reported["residual"] <= 1e-12, reported
    text = doc.read_text()
    for fragment in wants:
        assert fragment in text, (layer, fragment)
    got = json.loads(runner.invoke(app, ["compute", str(doc), "--format", "json"]).stdout)
    expected = module_output(folder, layer, np.load(doc.with_suffix(".npy")))
    tiny_models.close(got["output"], expected, "output", 1e-6)  # (its rope tables in float32)


def test_a_layer_reusing_keys_and_values_is_refused(runner, folder, tmp_path):
    result = runner.invoke(app, ["extract", str(folder), "--text", TEXT, "-o", str(tmp_path / "g.yaml"),
                                 "--layer", "2"])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert len(result.stderr.strip().splitlines()) == 1
    assert "layer 2 makes no keys or values: it reuses layer 0's" in result.stderr
