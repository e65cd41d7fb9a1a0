"""What a run imports before it is needed (issue 39, start-up): in a real process, ``compute FILE --format json`` on a
one-layer document loads neither the message catalogue, nor another command, nor check's variants, nor the
stacked-layer module, the YAML writer, Rich or what only another option or a larger document needs; an English error
loads the translator but no Chinese catalogue. (The time itself is measured by the benchmarks, against the import
floor: docs/speed.md, "Start-up".)"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

# Each module here (or package: its modules too) is what only an error, a Chinese message, another command, a stacked
# document, another format or another option needs.
LAZY = (
    "attncli.cli.messages",  # an error's line
    "attncli.cli.check", "attncli.cli.explain", "attncli.cli.extract", "attncli.cli.heatmap", "attncli.cli.init",
    "attncli.cli.page", "attncli.cli.card", "attncli.cli.stack",  # the other commands; a stack of layers
    "attncli.inputs.stacked",  # a stacked document (layers:)
    "attncli.core.emulate",  # --emulate
    "attncli.core.variants",  # the stages' wrong variants: check (each stage names them lazily, core.stage.Lazy)
    "attncli.outputs.blocks", "attncli.outputs.paste", "attncli.views",  # tables, markdown, latex, csv, --export,
    "attncli.outputs.titles",  # the notices' words (a warning); the tables' titles, a stack's layer names
    "attncli.core.stream", "attncli.core.tiles", "attncli.core.stream_backward",  # a document too large in full
    "attncli.inputs.tensorfiles",  # a .safetensors or .npz file
    "attncli.inputs.rope", "attncli.core.rope_scaling", "attncli.inputs.qknorm", "attncli.inputs.sinks",
    "attncli.inputs.differential", "attncli.inputs.indexer",  # a document's optional parts, read only when given
    "attncli.inputs.textfile",  # a CSV or text matrix file (and −inf written as text)
    "string",  # (string.Formatter: a message's template taken apart, in Chinese)
    "attncli.outputs.yamltext",  # the YAML writer (init, extract)
    "attncli.teach", "attncli.models",  # explain, check, page; extract
    "rich",  # tables, progress bars, --help
    "typer.rich_utils",  # --help
    "attncli.cli.help_zh", "attncli.cli.wrap_zh",  # --help in Chinese (and its texts, attncli/data/help_zh.json)
)


def modules_after(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess, set[str]]:
    """Run ``attncli ARGS`` in a fresh interpreter (in English unless ``--lang``); the result, and the modules
    loaded when it exited."""
    listing = tmp_path / "modules.json"
    code = ("import atexit, json, sys; "
            "atexit.register(lambda: open(sys.argv[1], 'w').write(json.dumps(sorted(sys.modules) + "
            "['catalogue:' + lang for lang in getattr(sys.modules.get('attncli.core.messages'), '_read', ())]))); "
            "from attncli.cli import main; main(sys.argv[2:])")
    env = {key: value for key, value in os.environ.items() if not key.endswith("_COMPLETE")} | {"ATTNCLI_LANG": "en"}
    done = subprocess.run([sys.executable, "-c", code, str(listing), *args], capture_output=True, text=True,
                          env=env, timeout=600)
    return done, set(json.loads(listing.read_text()))


def loaded(modules: set[str], names: tuple[str, ...]) -> list[str]:
    """Those of ``modules`` that are one of ``names`` or inside one (a name that ends in '.': inside it only)."""
    inside = tuple(name.rstrip(".") + "." for name in names)
    return sorted(m for m in modules if m in names or m.startswith(inside))


def test_the_json_path_imports_nothing_it_does_not_need(tmp_path):
    done, modules = modules_after(tmp_path, "compute", str(EXAMPLES / "illustrated.yaml"), "--format", "json")
    assert done.returncode == 0 and done.stderr == "", done.stderr
    # the walkthrough's first query, by hand: q1 = [1, 0, 1, 0]·W_Q = [1, 0, 2]; its scores with the keys
    # [0, 1, 1], [4, 4, 0], [2, 3, 1] are 2, 4, 4 (no scaling), and the weights their softmax
    e = [math.exp(s) for s in (2, 4, 4)]
    weights = json.loads(done.stdout)["weights"][0][0]
    assert all(math.isclose(w, x / sum(e), rel_tol=1e-12) for w, x in zip(weights, e, strict=True))
    assert "attncli.cli.compute" in modules and "attncli.inputs.builder" in modules  # (the run was a real one)
    assert loaded(modules, LAZY) == []
    assert {m for m in modules if m.startswith("catalogue:")} == set()  # (no message file read: nothing went wrong)


def test_an_english_error_reads_no_catalogue(tmp_path):
    done, modules = modules_after(tmp_path, "compute", str(EXAMPLES / "no such document.yaml"), "--format", "json")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("Error: ") and "no such file" in done.stderr, done.stderr
    assert "attncli.cli.messages" in modules and {m for m in modules if m.startswith("catalogue:")} == {"catalogue:en"}


def test_a_chinese_error_reads_the_catalogue(tmp_path):
    done, modules = modules_after(tmp_path, "compute", str(EXAMPLES / "no such document.yaml"), "--lang", "zh")
    assert done.returncode == 2 and "没有这个文件" in done.stderr, done.stderr
    assert "catalogue:zh" in modules


def test_a_chinese_help_reads_its_texts_and_an_english_one_does_not(tmp_path):
    done, modules = modules_after(tmp_path, "compute", "--help", "--lang", "zh")
    assert done.returncode == 0 and "为 FILE 计算注意力" in done.stdout, done.stdout
    assert "attncli.cli.help_zh" in modules and "attncli.cli.wrap_zh" in modules
    done, modules = modules_after(tmp_path, "compute", "--help")
    assert done.returncode == 0 and "Compute attention for FILE" in done.stdout
    assert loaded(modules, ("attncli.cli.help_zh", "attncli.cli.wrap_zh")) == []


def test_help_lists_every_command_in_order_whichever_ran_first():
    """The commands are imported one at a time (the one a run names); registered later, they still list in order."""
    code = ("from attncli.cli.main import COMMANDS, the_command; the_command(['page']); the_command(['compute']); "
            "from attncli.cli import app; "
            "print([c.name or c.callback.__name__ for c in app.registered_commands] == list(COMMANDS))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert done.stdout.strip() == "True", done.stderr
