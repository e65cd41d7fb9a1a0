"""attncli extract as its user meets it (issue 32, item 4): a --layer the model does not have is refused from
config.json alone, before PyTorch is imported; a progress line on a terminal's standard error (never into a pipe);
the document names the checkpoint relative to itself, through the links the user made, so that the two can be
shared or moved together.
"""

from __future__ import annotations

import io
import json
import os
import pty
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import tiny_models
from test_checkpoints import assert_refused

from attncli.cli import app
from attncli.cli.extract import Progress
from attncli.core.errors import AttnError
from attncli.models import loading


def model_folder(tmp_path: Path, config: dict) -> Path:
    """A folder that passes the checks made without PyTorch: config.json and a one-tensor .safetensors."""
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    header = b'{"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}'
    (folder / "model.safetensors").write_bytes(len(header).to_bytes(8, "little") + header + bytes(4))
    return folder


@pytest.mark.parametrize("config, args, said", [
    ({"model_type": "bert", "num_hidden_layers": 6}, ["--layer", "9"], "this bert model's layers are 0 to 5"),
    ({"model_type": "bert", "num_hidden_layers": 6}, ["--layer", "-1"], "this bert model's layers are 0 to 5"),
    ({"model_type": "gpt2", "n_layer": 2}, ["--layer", "2"], "this gpt2 model's layers are 0 to 1"),
    ({"model_type": "t5", "num_layers": 6, "num_decoder_layers": 3}, ["--layer", "4", "--stack", "decoder"],
     "this t5 model's decoder layers are 0 to 2"),
    ({"model_type": "llama4_text", "num_hidden_layers": 4}, ["--layer", "4"], "layers are 0 to 3"),
])
def test_a_layer_the_model_lacks_is_refused_before_pytorch_is_imported(runner, tmp_path, monkeypatch, config, args,
                                                                       said):
    def never() -> None:
        raise AssertionError("PyTorch was imported to refuse a layer that config.json rules out")

    monkeypatch.setattr(loading, "require", never)
    if config["model_type"] not in __import__("attncli.models.families", fromlist=["FAMILIES"]).FAMILIES:
        pytest.skip(f"{config['model_type']} is not a family of extract")
    folder = model_folder(tmp_path, config)
    result = runner.invoke(app, ["extract", str(folder), "--text", "hi", "-o", str(tmp_path / "l.yaml"), *args])
    assert_refused(result, f"Error: --layer: {args[1]} is out of range: ", said)
    assert not (tmp_path / "l.yaml").exists()


def test_a_config_that_does_not_say_its_layers_leaves_it_to_transformers(runner, tmp_path, monkeypatch):
    def reached() -> None:
        raise AttnError("reached", "require")

    monkeypatch.setattr(loading, "require", reached)
    folder = model_folder(tmp_path, {"model_type": "bert"})
    out = str(tmp_path / "l.yaml")
    result = runner.invoke(app, ["extract", str(folder), "--text", "hi", "--layer", "9", "-o", out])
    assert_refused(result, "Error: require: reached")
    assert loading.layer_count({"text_config": {"num_hidden_layers": 4}}, "encoder") == 4
    assert loading.layer_count({"num_layers": 6, "num_decoder_layers": 2}, "decoder") == 2
    assert loading.layer_count({"num_hidden_layers": True}, "encoder") is None


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_progress_line_replaces_itself_and_is_cleared(monkeypatch):
    monkeypatch.setattr(sys, "stderr", Terminal())
    progress = Progress()
    progress("loading the tokenizer")
    progress("running the model on 15 tokens")
    progress("")
    written = sys.stderr.getvalue()
    assert written.startswith("\r\rextract: loading the tokenizer… 0 s\r")
    steps = written.split("\r")
    assert steps[-1] == "" and steps[-2] == " " * len("extract: running the model on 15 tokens… 0 s")
    monkeypatch.setattr(sys, "stderr", io.StringIO())  # a pipe or a file: nothing
    quiet = Progress()
    quiet("loading the tokenizer")
    assert sys.stderr.getvalue() == ""


@pytest.fixture(scope="module")
def bert(hf, tmp_path_factory):
    return tiny_models.build(*hf, "bert", tmp_path_factory.mktemp("models") / "bert")


def test_a_terminal_sees_each_step_and_a_pipe_sees_none(hf, bert, tmp_path):
    command = [sys.executable, "-m", "attncli", "extract", str(bert), "--text", tiny_models.TEXT, "--layer", "1",
               "-o", str(tmp_path / "l.yaml")]
    env = {**os.environ, "COLUMNS": "80"}
    main, other = pty.openpty()
    run = subprocess.Popen(command, stderr=other, stdout=subprocess.PIPE, env=env)
    os.close(other)
    seen = b""
    while True:
        try:
            chunk = os.read(main, 4096)
        except OSError:  # the process ended (Linux: EIO)
            break
        if not chunk:
            break
        seen += chunk
    report = run.communicate(timeout=600)[0].decode()
    os.close(main)
    assert run.returncode == 0 and report.startswith(f"{bert}: bert, layer 1 of 0–1, ")
    tokens = report.split(", ")[2].split()[0]
    steps = [part for part in seen.decode().split("\r") if part.strip()]
    assert [step.split("…")[0] for step in steps] == [
        "extract: importing PyTorch and transformers", "extract: loading the tokenizer",
        "extract: loading the model in float64", f"extract: running the model on {tokens} tokens",
        "extract: computing the document and comparing it with the model", "extract: writing the document"]
    assert seen.decode().endswith("\r") and max(len(step) for step in steps) < 80
    piped = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
    assert piped.returncode == 0 and piped.stderr == ""


def test_the_document_names_the_checkpoint_through_the_links_the_user_made(runner, hf, bert, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    (work / "bert").symlink_to(bert)  # as the README's `ln -s … minilm`
    doc = work / "layer.yaml"
    result = runner.invoke(app, ["extract", str(work / "bert"), "--text", tiny_models.TEXT, "--layer", "0",
                                 "-o", str(doc)])
    assert result.exit_code == 0, result.stderr
    text = doc.read_text()
    assert "{file: bert/model.safetensors, tensor: " in text and str(bert) not in text
    # a document in a folder below, reached through a link too: the way up is the real one
    (tmp_path / "alias").symlink_to(work)
    below = tmp_path / "alias" / "layers" / "l0.yaml"
    below.parent.mkdir()
    assert runner.invoke(app, ["extract", str(tmp_path / "alias" / "bert"), "--text", tiny_models.TEXT, "--layer",
                               "0", "-o", str(below)]).exit_code == 0
    assert "{file: ../bert/model.safetensors, tensor: " in below.read_text()
    moved = Path(shutil.move(work, tmp_path / "shared"))  # the folder and its link move together
    for path in (moved / "layer.yaml", moved / "layers" / "l0.yaml"):
        computed = runner.invoke(app, ["compute", str(path), "--only", "weights", "--format", "json"])
        assert computed.exit_code == 0, computed.stderr
    # a model elsewhere, not under the document's folder: still relative to the document, as inputs: is
    apart = tmp_path / "docs" / "l.yaml"
    apart.parent.mkdir()
    assert runner.invoke(app, ["extract", str(bert), "--text", tiny_models.TEXT, "--layer", "0",
                               "-o", str(apart)]).exit_code == 0
    assert f"{{file: {os.path.relpath(bert, apart.parent)}/model.safetensors, " in apart.read_text()
