"""attncli extract against the models themselves: every family, layers 0 and last, to 1e-9; and every error.

The tiny models (tests/tiny_models.py) are built here from configs with random weights and a tokenizer trained on
a few sentences; nothing is downloaded.  Each extracted document is computed with the plain ``attncli compute``
(JSON), and its numbers are compared with the model's own, taken as a user takes them (``output_attentions``,
``output_hidden_states``, a hook on the output projection).  The references of a document are checked against
the model's parameters, the ``.npy`` against the hidden state, bit for bit.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tiny_models
from test_checkpoints import assert_refused
from tiny_models import FAMILIES, TEXT

import attncli
from attncli.cli import app

TOL = 1e-9


@pytest.fixture(scope="module")
def folders(hf, tmp_path_factory):
    """One tiny model folder per family (and a bfloat16 Llama, a sharded GPT-2), built once."""
    torch, transformers = hf
    root = tmp_path_factory.mktemp("models")
    built = {family: tiny_models.build(torch, transformers, family, root / family) for family in FAMILIES}
    return built | tiny_models.odd_models(torch, transformers, root)


def extract(runner, folder: Path, out: Path, *args: str, text: str = TEXT):
    return runner.invoke(app, ["extract", str(folder), "--text", text, "-o", str(out), *args])


def computed(runner, doc: Path) -> dict:
    result = runner.invoke(app, ["compute", str(doc), "--format", "json"])
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def agrees(ours, theirs, what: str) -> float:
    ours, theirs = np.asarray(ours, dtype=np.float64), np.asarray(theirs, dtype=np.float64)
    assert ours.shape == theirs.shape, (what, ours.shape, theirs.shape)
    difference = float(np.max(np.abs(ours - theirs)))
    assert difference <= TOL, (what, difference)
    return difference


def check_family(runner, hf, folders, family: str, layer: int, tmp_path, monkeypatch, stack: str = "encoder",
                 folder_key: str | None = None):
    torch, transformers = hf
    folder = folders[folder_key or family]
    doc = tmp_path / f"{family}{layer}.yaml"
    args = ["--layer", str(layer)] + (["--stack", stack] if stack == "decoder" else [])
    result = extract(runner, folder, doc, *args)
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""
    report = result.stdout.splitlines()
    assert report[1] == "The document reproduces the model (max |difference|):"
    reported = {line.split()[0]: float(line.split()[1]) for line in report[2:-1]}
    assert reported["weights"] <= 1e-12 and reported["output"] <= 1e-12, reported
    assert report[-1] == f"Wrote {doc} and {doc.with_suffix('.npy')}."

    expected = tiny_models.reference(torch, transformers, family, folder, layer, monkeypatch, stack)
    x = np.load(doc.with_suffix(".npy"))
    if layer == 0:  # the embeddings: X bit for bit (later layers: through each side's own float64 RMSNorm and RoPE)
        assert np.array_equal(x, expected["inputs"])
    agrees(x, expected["inputs"], "inputs")
    got = computed(runner, doc)
    agrees(got["weights"], expected["weights"], "weights")
    agrees(got["output"], expected["output"], "output")
    if "normalized" in expected:  # post-norm: the Add & Norm
        agrees(got["residual"], expected["inputs"] + expected["output"], "residual")
        agrees(got["normalized"], expected["normalized"], "normalized")
    else:  # pre-norm: the residual, R = X + Y
        agrees(got["residual"], expected["inputs"] + expected["output"], "residual")
    spec = attncli.load(doc)
    model = getattr(transformers, "AutoModel" if family != "t5" else ("T5Model" if stack == "decoder" else
                                                                       "T5EncoderModel")).from_pretrained(folder)
    own = tiny_models.weights(model, family, layer, stack)
    for key, ours in (("query", spec.w_q), ("key", spec.w_k), ("value", spec.w_v)):
        assert np.array_equal(np.concatenate(list(ours), axis=1), own[key]), key  # the checkpoint's numbers, exactly
    assert np.array_equal(spec.w_o, own["output"])
    return doc, got


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("last", [False, True], ids=["layer0", "last"])
def test_every_family_reproduces_the_model(runner, hf, folders, family, last, tmp_path, monkeypatch):
    check_family(runner, hf, folders, family, 1 if last else 0, tmp_path, monkeypatch)


@pytest.mark.parametrize("layer", [0, 2])
def test_t5_decoder_self_attention(runner, hf, folders, layer, tmp_path, monkeypatch):
    doc, got = check_family(runner, hf, folders, "t5", layer, tmp_path, monkeypatch, stack="decoder")
    text = doc.read_text()
    assert "bidirectional: false" in text and "mask: causal" in text and "decoder.block.0.layer.0" in text
    assert json.loads(json.dumps(got["tokens"]))[0] == "<pad>"  # the start token, then the sentence shifted right


def test_what_each_family_writes(runner, hf, folders, tmp_path):
    """The keys of Part 2 each family needs, as the document says them."""
    wants = {"bert": ["add_norm:", "eps: 1e-12"], "distilbert": ["add_norm:"],
             "gpt2": ["mask: causal", "pre_norm:", "kind: layer", "residual: true", "columns: [16, 32]"],
             "llama": ["kv_heads: 2", "kind: rms", "rope: {base: 10000.0, style: half}", "layout: torch",
                       "q_proj.bias"],
             "mistral": ["mask: {causal: true, window: 3}"],
             "qwen2": ["kv_heads: 1", "rope: {frequencies: ["],
             "t5": ["scale: none", "relative: {table:", "buckets: 8, max_distance: 16, bidirectional: true",
                    "encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight"],
             "bloom": ["score_bias: {alibi: true}", "columns: [[0, 4], [12, 16], [24, 28], [36, 40]]"]}
    for family, fragments in wants.items():
        doc = tmp_path / f"{family}.yaml"
        assert extract(runner, folders[family], doc, "--layer", "1").exit_code == 0
        text = doc.read_text()
        for fragment in fragments:
            assert fragment in text, (family, fragment)
        assert "inputs: " + doc.with_suffix(".npy").name in text


def test_a_document_inside_the_model_folder_names_its_files_relatively(runner, hf, folders, tmp_path):
    import shutil

    folder = shutil.copytree(folders["gpt2"], tmp_path / "gpt2")
    (folder / "layers").mkdir()
    assert extract(runner, folder, folder / "layers" / "l0.yaml", "--layer", "0").exit_code == 0
    assert ("{file: ../model.safetensors, tensor: transformer.h.0.attn.c_attn.weight"
            in (folder / "layers/l0.yaml").read_text())
    again = extract(runner, folder, folder / "layers" / "l0.yaml", "--layer", "0")  # its own files are no inputs
    assert again.exit_code == 0, again.stderr
    assert extract(runner, folder, folder / "l1.yaml", "--layer", "1").exit_code == 0
    assert extract(runner, folder, folder / "l1.yaml", "--layer", "1").exit_code == 0
    assert "{file: model.safetensors, tensor: transformer.h.1.attn.c_attn.weight" in (folder / "l1.yaml").read_text()
    moved = shutil.move(folder, tmp_path / "elsewhere")  # the pair moves together
    assert runner.invoke(app, ["compute", str(Path(moved) / "layers/l0.yaml"), "--only", "output"]).exit_code == 0


def test_bfloat16_and_sharded_checkpoints(runner, hf, folders, tmp_path, monkeypatch):
    check_family(runner, hf, folders, "llama", 1, tmp_path, monkeypatch, folder_key="llama-bf16")
    assert (folders["gpt2-sharded"] / "model.safetensors.index.json").is_file()
    doc, _ = check_family(runner, hf, folders, "gpt2", 1, tmp_path, monkeypatch, folder_key="gpt2-sharded")
    assert "model-0000" in doc.read_text()  # the references name the shards


def test_float32_mirrors_the_model_in_its_own_precision(runner, hf, folders, tmp_path):
    for family in ("bert", "llama", "t5", "bloom"):
        doc = tmp_path / f"{family}.yaml"
        result = extract(runner, folders[family], doc, "--layer", "1", "--dtype", "float32")
        assert result.exit_code == 0, result.stderr
        assert ", float32" in result.stdout.splitlines()[0]
        reported = [float(line.split()[1]) for line in result.stdout.splitlines()[2:-1]]
        assert max(reported) < 1e-5 and max(reported) > 0  # float32's rounding, far inside 1e-4
        assert np.load(doc.with_suffix(".npy")).dtype == np.float64


def test_the_document_computes_draws_and_explains_with_the_plain_cli(runner, hf, folders, tmp_path):
    doc = tmp_path / "layer.yaml"
    assert extract(runner, folders["bert"], doc, "--layer", "1").exit_code == 0
    heatmap = runner.invoke(app, ["heatmap", str(doc), "--head", "all"], env={"NO_COLOR": "1", "COLUMNS": "100"})
    assert heatmap.exit_code == 0 and "head 2" in heatmap.stdout and "animal" in heatmap.stdout
    explain = runner.invoke(app, ["explain", str(doc), "--step", "4", "--query", "animal"], env={"COLUMNS": "100"})
    assert explain.exit_code == 0, explain.stderr
    code = ("import sys; sys.modules['torch'] = sys.modules['transformers'] = None; "  # the plain install: neither
            "from attncli.cli import main; main(['compute', sys.argv[1], '--only', 'weights', '-f', 'json'])")
    plain = subprocess.run([sys.executable, "-c", code, str(doc)], capture_output=True, text=True, timeout=600)
    assert plain.returncode == 0, plain.stderr
    assert np.allclose(json.loads(plain.stdout)["weights"], computed(runner, doc)["weights"], rtol=0, atol=0)


# ---------------------------------------------------------------- every way extract can be asked wrongly


def refused(result, out: Path, *fragments: str) -> str:
    """One line, exit 2, naming each fragment (test_checkpoints.assert_refused), and nothing written."""
    err = assert_refused(result, *fragments)
    assert not out.exists() and not out.with_suffix(".npy").exists()  # nothing written
    return err


def copy_of(folders, family: str, tmp_path: Path, change=None) -> Path:
    import shutil

    folder = shutil.copytree(folders[family], tmp_path / f"copy-{family}")
    if change:
        change(folder)
    return folder


def set_config(**fields):
    def change(folder: Path) -> None:
        config = json.loads((folder / "config.json").read_text())
        (folder / "config.json").write_text(json.dumps({**config, **fields}))
    return change


def remove(*patterns: str):
    def change(folder: Path) -> None:
        for pattern in patterns:
            for path in folder.glob(pattern):
                path.unlink()
    return change


def without_tensor(name: str):
    def change(folder: Path) -> None:
        from safetensors.torch import load_file, save_file

        tensors = load_file(folder / "model.safetensors")
        del tensors[name]
        save_file(tensors, folder / "model.safetensors", metadata={"format": "pt"})
    return change


CASES = {  # id: (family or a model name, change of the copied folder, extra arguments, fragments of the message)
    "missing-folder": ("./nowhere", None, [], ["./nowhere: no such folder", "never downloads one"]),
    "hub-name": ("bert-base-uncased", None, [], ["hf download bert-base-uncased --local-dir DIR"]),
    "no-config": ("bert", remove("config.json"), [], ["has no config.json"]),
    "bad-config": ("bert", lambda f: (f / "config.json").write_text("{"), [], ["config.json: cannot be read as JSON"]),
    "other-family": ("bert", set_config(model_type="gpt_neox"), [],
                     ["model_type 'gpt_neox' is not supported; extract knows bert, roberta, distilbert, gpt2, llama, "
                      "mistral, qwen2, t5, bloom"]),
    "bloom-residual": ("bloom", set_config(apply_residual_connection_post_layernorm=True), [],
                       ["config.json: apply_residual_connection_post_layernorm adds the normalised inputs back"]),
    "no-weights": ("bert", remove("*.safetensors"), [], ["has no .safetensors weights: it holds no weights"]),
    "pickle-only": ("bert", lambda f: [p.unlink() for p in f.glob("*.safetensors")] and None
                    or (f / "pytorch_model.bin").write_bytes(b"PK"), [], ["only pytorch_model.bin (a Python pickle"]),
    "damaged-weights": ("bert", lambda f: (f / "model.safetensors").write_bytes(b"\xff" * 64), [],
                        ["model.safetensors: is not a .safetensors file"]),
    "missing-tensor": ("bert", without_tensor("bert.encoder.layer.1.attention.self.key.bias"), [],
                       ["the checkpoint has no tensor for 'encoder.layer.1.attention.self.key.bias'", "at random"]),
    "no-tokenizer": ("bert", remove("tokenizer*"), [], ["has no tokenizer: none of tokenizer.json, vocab.txt"]),
    "broken-tokenizer": ("bert", lambda f: (f / "tokenizer.json").write_text("{"), [],
                         ["its tokenizer cannot be loaded from the folder"]),
    "layer-past-the-end": ("bert", None, ["--layer", "2"],
                           ["--layer: 2 is out of range: this bert model's layers are 0 to 1"]),
    "layer-negative": ("gpt2", None, ["--layer", "-1"], ["--layer: -1 is out of range", "layers are 0 to 1"]),
    "decoder-layer": ("t5", None, ["--stack", "decoder", "--layer", "3"], ["t5 model's decoder layers are 0 to 2"]),
    "stack-of-bert": ("bert", None, ["--stack", "decoder"], ["--stack: only T5 has a decoder stack"]),
    "empty-text": ("bert", None, ["--text", ""], ["--text: is empty"]),
    "blank-text": ("bert", None, ["--text", " \n\t "], ["--text: is empty"]),
    "text-too-long": ("bert", None, ["--text", "the street " * 20],
                      ["--text: is 42 tokens long, more than the 24 positions"]),
    "roberta-positions": ("roberta", None, ["--text", "the " * 24], ["more than the 25 positions of this model"]),
    "not-yaml": ("bert", None, ["-o", "{tmp}/layer.json"], ["layer.json: the document is YAML"]),
    "no-such-out-folder": ("bert", None, ["-o", "{tmp}/none/layer.yaml"],
                           ["none/layer.yaml: cannot be written: the folder"]),
    "npy-is-a-folder": ("bert", lambda f: None, ["-o", "{tmp}/dir.yaml"], ["dir.npy: is a directory"]),
    "npy-over-the-checkpoint": ("bert", None, ["-o", "{model}/model.yaml"], []),
}


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_refused_with_one_line(runner, hf, folders, case, tmp_path, monkeypatch):
    model, change, args, fragments = CASES[case]
    monkeypatch.chdir(tmp_path)
    folder = copy_of(folders, model, tmp_path, change) if model in folders else model
    (tmp_path / "dir.npy").mkdir()
    options = {"--layer": "0", "--text": TEXT, "-o": str(tmp_path / "layer.yaml")}
    for i in range(0, len(args), 2):
        options[args[i]] = args[i + 1].format(tmp=tmp_path, model=folder)
    out = Path(options["-o"])
    if case == "npy-over-the-checkpoint":  # model.npy would be written beside model.yaml: a link to the weights
        (folder / "model.npy").symlink_to(folder / "model.safetensors")
        before = (folder / "model.safetensors").read_bytes()
        fragments = ["model.npy: is one of this run's input files"]
    result = runner.invoke(app, ["extract", str(folder), *[x for pair in options.items() for x in pair]])
    refused(result, tmp_path / "nothing.yaml" if case.startswith("npy") else out, *fragments)
    assert not out.exists()
    if case == "npy-over-the-checkpoint":
        assert (folder / "model.safetensors").read_bytes() == before and not out.exists()


def test_a_document_that_does_not_reproduce_the_model_is_refused(runner, hf, folders, tmp_path, monkeypatch):
    from attncli.models import families

    monkeypatch.setattr(families, "_scale", lambda scaling, d_k: {"scale": 0.5})  # a wrong scale in the document
    out = tmp_path / "layer.yaml"
    err = refused(extract(runner, folders["bert"], out, "--layer", "1"), out,
                  "layer 1: the document does not reproduce the model: weights differs by",
                  "from the model's output_attentions (more than 1e-08); nothing was written")
    assert str(folders["bert"]) in err


def test_a_model_that_fails_to_run_is_one_line(runner, hf, folders, tmp_path, monkeypatch):
    def fail(self, *args, **kwargs):
        raise RuntimeError("mat1 and mat2 shapes cannot be multiplied (3x4 and 5x6)\nmore detail")

    monkeypatch.setattr(hf[1].BertModel, "forward", fail)
    out = tmp_path / "layer.yaml"
    refused(extract(runner, folders["bert"], out, "--layer", "0"), out,
            "layer 0: the model failed to run on the sentence (mat1 "
            "and mat2 shapes cannot be multiplied (3x4 and 5x6))")


def test_without_the_extra_it_says_what_to_install(tmp_path):
    """No PyTorch (or no transformers): one line naming the extra, before anything is loaded."""
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text('{"model_type": "bert"}')
    header = b'{"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}'
    (folder / "model.safetensors").write_bytes(len(header).to_bytes(8, "little") + header + bytes(4))
    import importlib.util

    for missing in ("torch", "transformers"):  # (where neither is installed, PyTorch is named first)
        named = "PyTorch" if missing == "torch" or importlib.util.find_spec("torch") is None else "transformers"
        code = (f"import sys; sys.modules[{missing!r}] = None; from attncli.cli import main; "
                "main(['extract', sys.argv[1], '--text', 'hi', '--layer', '0', '-o', sys.argv[2]])")
        run = subprocess.run([sys.executable, "-c", code, str(folder), str(tmp_path / "l.yaml")],
                             capture_output=True, text=True, timeout=600)
        assert run.returncode == 2 and run.stdout == "", run.stderr
        assert run.stderr == (f"Error: extract: needs PyTorch and Hugging Face transformers, and {named} is not "
                              "installed: pip install 'attncli[models]'\n")


# ---------------------------------------------------------------- several blocks of one tensor (BLOOM's fused heads)


def save_file(arrays: dict, path: str) -> None:
    """A float64 .safetensors as the format describes it (the test needs no safetensors package)."""
    header, offset = {}, 0
    for name, a in arrays.items():
        header[name] = {"dtype": "F64", "shape": list(a.shape), "data_offsets": [offset, offset + a.nbytes]}
        offset += a.nbytes
    text = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(len(text).to_bytes(8, "little") + text + b"".join(np.ascontiguousarray(a, "<f8").tobytes()
                                                                 for a in arrays.values()))


def test_columns_as_several_ranges(tmp_path):
    w, b = np.arange(24.0).reshape(6, 4), np.arange(6.0)
    save_file({"w": w, "b": b}, str(tmp_path / "t.safetensors"))
    ref = {"file": str(tmp_path / "t.safetensors"), "tensor": "w", "layout": "torch"}
    doc = {"inputs": np.eye(4), "scale": "none", "weights": {"query": {**ref, "columns": [[0, 1], [3, 5]]},
                                                            "key": {**ref, "columns": [[5, 6], [0, 2]]}},
           "bias": {"query": {"file": ref["file"], "tensor": "b", "columns": [[0, 1], [3, 5]]}}}
    spec = attncli.load(doc)
    assert np.array_equal(spec.w_q[0], w.T[:, [0, 3, 4]]) and np.array_equal(spec.b_q[0], [0, 3, 4])
    assert np.array_equal(spec.w_k[0], w.T[:, [5, 0, 1]])
    rows = attncli.load({"inputs": np.eye(2), "weights": {"query": {**ref, "layout": "rows", "rows": [[4, 6]],
                                                                    "columns": [0, 2]}}})
    assert np.array_equal(rows.w_q[0], w[4:6, 0:2])
    for columns, fragment in (([[0, 1], [5, 7]], "columns: [5, 7] goes beyond its 6 columns"),
                              ([[0, 1], 3], "columns: expected [start, stop]"), ([[2, 1]], "[2, 1] is no range")):
        with pytest.raises(attncli.AttnError, match=fragment.replace("[", r"\[").replace("]", r"\]")):
            attncli.load({"inputs": np.eye(4), "weights": {"query": {**ref, "columns": columns}}})
    with pytest.raises(attncli.AttnError, match="a vector is one row: cut its entries with columns"):
        attncli.load({"inputs": np.eye(4),
                      "bias": {"query": {"file": ref["file"], "tensor": "b", "rows": [[0, 1], [0, 1]]}}})
