"""The newcomer's first hour (issue 18): the test command, files a learner edits, -o's extension, options that
mean the same on every command, standard input on a terminal, only what --only asks for, shell completion.

The examples of --help and of the README are run as written by tests/test_help_examples.py and
tests/test_readme.py, in a folder holding only what a fresh clone has.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import EXAMPLES, ORACLE_FIXTURES, ROOT

from attncli.cli import app

ENTRY_POINT = Path(sys.executable).parent / "attncli"
COMMAND = [str(ENTRY_POINT)] if ENTRY_POINT.exists() else [sys.executable, "-m", "attncli"]
ENV = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "NO_COLOR", "FORCE_COLOR")}
ENV["PYTHONPATH"] = str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")
ILLUSTRATED = str(EXAMPLES / "illustrated.yaml")
TWO_HEADS = str(EXAMPLES / "two_heads.yaml")
HOMEWORK = str(EXAMPLES / "check" / "homework.yaml")


def invoke(runner, *args, **kwargs):
    return runner.invoke(app, [str(a) for a in args], **kwargs)


def one_error(result, *words: str) -> str:
    """Exit 2, nothing on standard output, one ``Error:`` line holding ``words``."""
    assert result.exit_code == 2, (result.exit_code, result.stdout, result.stderr)
    assert result.stdout == ""
    assert result.stderr.startswith("Error: ") and result.stderr.count("\n") == 1, result.stderr
    for word in words:
        assert word in result.stderr, (word, result.stderr)
    return result.stderr


def json_of(runner, *args) -> dict:
    result = invoke(runner, *args)
    assert result.exit_code in (0, 1), result.stderr
    return json.loads(result.stdout)


# ---------------------------------------------------------------- 2. the test command installs only what tests need


def _readme() -> str:
    return (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_test_extra_is_light_and_the_oracles_are_apart():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    names = {extra: {re.split(r"[<>=!~ \[]", req)[0].lower() for req in reqs} for extra, reqs in extras.items()}
    # resvg-py: one 1.4 MB wheel, for .png
    assert names["test"] == {"pytest", "pytest-xdist", "pytest-timeout", "hypothesis", "ruff", "resvg-py"}
    assert "transformers" in names["oracles"] and "torch" not in names["oracles"]  # torch: the CPU build, by hand


def test_ci_runs_the_readme_commands_exactly():
    """.ci/run takes the test command and the comparisons' command from the README, so they cannot drift apart."""
    ci = (ROOT / ".ci" / "run").read_text()
    patterns = re.findall(r'grep -m1 -E "(.*?)" README\.md', ci)
    assert len(patterns) == 2
    lines = _readme().splitlines()
    found = []
    for pattern in patterns:
        grep = subprocess.run(["grep", "-E", pattern.replace('\\"', '"'), str(ROOT / "README.md")], capture_output=True,
                              text=True, timeout=600)
        matches = grep.stdout.splitlines()
        assert len(matches) == 1, (pattern, matches)
        assert matches[0] in lines
        found.append(matches[0])
    test_command, oracle_command = found
    assert test_command == ("python3 -m venv .venv && . .venv/bin/activate && pip install -e '.[test]' "
                            "&& python -m pytest")
    assert "torch" not in test_command and "transformers" not in test_command
    assert "--index-url https://download.pytorch.org/whl/cpu" in oracle_command and "'.[oracles]'" in oracle_command
    assert oracle_command.endswith("python -m pytest -m torch")
    assert 'bash -euo pipefail -c "$test_command"' in ci and 'bash -euo pipefail -c "$oracle_command"' in ci
    assert "python3-venv" in _readme()


def _torch_users() -> list[tuple[str, str]]:
    """(file, test) of every test that imports torch or transformers (module level: test '*')."""
    users = []
    for path in sorted((ROOT / "tests").glob("test_*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        marked = any(isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "pytestmark" for t in node.targets)
                     and "mark.torch" in ast.unparse(node.value) for node in tree.body)
        for node in tree.body:
            text = ast.unparse(node)
            if not re.search(r"importorskip\('(torch|transformers)", text):
                continue
            if isinstance(node, ast.FunctionDef):
                decorators = [ast.unparse(d) for d in node.decorator_list]
                fixture = node.name in ORACLE_FIXTURES and any(d.startswith("pytest.fixture") for d in decorators)
                own = fixture or any("mark.torch" in d for d in decorators)  # conftest marks a fixture's users
                users.append((path.name, node.name, marked or own))
            elif node.col_offset == 0 and not isinstance(node, ast.ClassDef):
                users.append((path.name, "*", marked))
    return users


@pytest.mark.slow  # parses every test module
def test_every_comparison_is_marked_torch():
    users = _torch_users()
    assert {("test_torch.py", "*"), ("test_modern_torch.py", "*")} <= {(f, t) for f, t, _ in users}
    assert [(f, t) for f, t, ok in users if not ok] == [("test_readme.py", "test_readme_python")]  # marked per block:
    from test_readme import python_blocks

    torch_blocks = [b for b in python_blocks() if "import numpy as np, torch" in str(getattr(b, "values", b))]
    assert len(torch_blocks) == 1 and [m.name for m in torch_blocks[0].marks] == ["torch"]


@pytest.mark.slow
def test_the_comparisons_skip_cleanly_without_torch_and_transformers(tmp_path):
    """As in a fresh environment from the README's test command: torch and transformers cannot be imported."""
    block = tmp_path / "sitecustomize.py"
    block.write_text("import sys\n"
                     "for name in ('torch', 'transformers', 'safetensors'):\n    sys.modules[name] = None\n")
    env = {**ENV, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ENV['PYTHONPATH']}"}
    files = ["tests/test_torch.py", "tests/test_modern_torch.py", "tests/test_layers.py", "tests/test_readme.py"]
    result = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-m", "torch", *files],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-2000:]
    summary = result.stdout.strip().splitlines()[-1]
    assert "skipped" in summary and "passed" not in summary and "error" not in summary, summary


# ---------------------------------------------------------------- 3. init never replaces a document silently


def test_init_refuses_an_existing_file_unless_force(runner, tmp_path):
    out = tmp_path / "attn.yaml"
    out.write_text("# my hand-written document\ninputs: [[1, 2]]\n")
    before = (out.read_bytes(), os.stat(out).st_mtime_ns)
    result = invoke(runner, "init", "-o", out)
    one_error(result, f"Error: {out}: already exists; give --force to replace it, or choose another name")
    assert (out.read_bytes(), os.stat(out).st_mtime_ns) == before
    assert [p.name for p in tmp_path.iterdir()] == ["attn.yaml"]  # no temporary file left either
    forced = invoke(runner, "init", "--n", "2", "-o", out, "--force")
    assert forced.exit_code == 0, forced.stderr
    assert out.read_text() == invoke(runner, "init", "--n", "2").stdout
    assert invoke(runner, "compute", out, "--only", "output").exit_code == 0


def test_init_refuses_a_link_to_an_existing_file_and_writes_new_files_and_devices(runner, tmp_path):
    target = tmp_path / "mine.yaml"
    target.write_text("inputs: [[1]]\n")
    link = tmp_path / "link.yaml"
    link.symlink_to(target.name)
    one_error(invoke(runner, "init", "-o", link), "link.yaml", "already exists", "--force")
    assert target.read_text() == "inputs: [[1]]\n" and link.is_symlink()
    assert invoke(runner, "init", "-o", tmp_path / "new.yaml").exit_code == 0
    assert (tmp_path / "new.yaml").read_text().startswith("#")
    assert invoke(runner, "init", "-o", os.devnull).exit_code == 0  # a device is written, never replaced


def test_bad_options_are_named_before_the_existing_file(runner, tmp_path):
    out = tmp_path / "doc.yaml"
    out.write_text("kept\n")
    one_error(invoke(runner, "init", "--heads", "4", "--kv-heads", "3", "-o", out), "--kv-heads")
    assert out.read_text() == "kept\n"


# ---------------------------------------------------------------- 4. -o picks the format from the extension


def _stdout(runner, *args) -> bytes:
    result = invoke(runner, *args)
    assert result.exit_code == 0, result.stderr
    return result.stdout_bytes


@pytest.mark.parametrize("suffix, format, extra", [
    (".json", "json", []),
    (".JSON", "json", []),
    (".csv", "csv", ["--only", "weights"]),
    (".md", "markdown", []),
    (".tex", "latex", ["--only", "output"]),
])
def test_the_extension_picks_the_format(runner, tmp_path, suffix, format, extra):
    out = tmp_path / f"result{suffix}"
    assert invoke(runner, "compute", TWO_HEADS, "-o", out, *extra).exit_code == 0
    assert out.read_bytes() == _stdout(runner, "compute", TWO_HEADS, "--format", format, *extra)
    again = tmp_path / f"again{suffix}"  # --format may say the same
    assert invoke(runner, "compute", TWO_HEADS, "-o", again, "--format", format.upper(), *extra).exit_code == 0
    assert again.read_bytes() == out.read_bytes()


def test_txt_and_unknown_extensions_write_the_tables_as_before(runner, tmp_path):
    txt, unknown, none = tmp_path / "t.txt", tmp_path / "t.out", tmp_path / "t"
    for path in (txt, unknown, none):
        assert invoke(runner, "compute", ILLUSTRATED, "-o", path).exit_code == 0
    assert txt.read_bytes() == unknown.read_bytes() == none.read_bytes()
    assert "│ Input 1 │  0.0634 │  0.4683 │  0.4683 │" in txt.read_text()
    as_json = tmp_path / "t.dat"  # an unknown extension takes --format
    assert invoke(runner, "compute", ILLUSTRATED, "-o", as_json, "-f", "json").exit_code == 0
    assert as_json.read_bytes() == _stdout(runner, "compute", ILLUSTRATED, "-f", "json")


def test_svg_and_html_draw_the_tables(runner, tmp_path):
    svg, html, exported = tmp_path / "w.svg", tmp_path / "w.html", tmp_path / "e.svg"
    assert invoke(runner, "compute", ILLUSTRATED, "--only", "weights", "-o", svg).exit_code == 0
    assert invoke(runner, "compute", ILLUSTRATED, "--only", "weights", "--export", exported).exit_code == 0
    assert svg.read_bytes() == exported.read_bytes()  # the picture --export draws
    assert svg.read_text().startswith("<svg") and "0.4683" in svg.read_text()
    assert invoke(runner, "compute", ILLUSTRATED, "--only", "weights", "-o", html).exit_code == 0
    assert html.read_text().startswith("<!DOCTYPE html>") and "0.4683" in html.read_text()


def test_npy_and_npz_are_arrays(runner, tmp_path):
    weights = np.array(json_of(runner, "compute", ILLUSTRATED, "-f", "json")["weights"])
    assert invoke(runner, "compute", ILLUSTRATED, "--only", "weights", "-o", tmp_path / "w.npy").exit_code == 0
    assert np.array_equal(np.load(tmp_path / "w.npy"), weights)
    assert invoke(runner, "compute", ILLUSTRATED, "-o", tmp_path / "all.NPZ").exit_code == 0
    assert np.array_equal(np.load(tmp_path / "all.NPZ")["weights"], weights)


@pytest.mark.parametrize("name, format, means", [
    ("x.json", "csv", ".json means the json format"),
    ("x.csv", "json", ".csv means the csv format"),
    ("x.md", "latex", ".md means the markdown format"),
    ("x.tex", "markdown", ".tex means the latex format"),
    ("x.txt", "json", ".txt means the table format"),
    ("x.svg", "json", ".svg means the table format"),
    ("x.npz", "json", ".npz means binary arrays"),
    ("x.npy", "table", ".npy means binary arrays"),
])
def test_a_format_that_contradicts_the_extension_is_an_error(runner, tmp_path, name, format, means):
    out = tmp_path / name
    one_error(invoke(runner, "compute", ILLUSTRATED, "--only", "weights", "-o", out, "--format", format),
              f"Error: --format: {format} contradicts -o {name}, whose extension {means}")
    assert not out.exists()
    out.write_text("earlier\n")
    one_error(invoke(runner, "compute", ILLUSTRATED, "--only", "weights", "-o", out, "--format", format), "contradicts")
    assert out.read_text() == "earlier\n"


# ---------------------------------------------------------------- 6. options mean the same on every command


def _weights(runner, *args) -> np.ndarray:
    return np.array(json_of(runner, "compute", *args, "-f", "json", "--only", "weights")["weights"])


@pytest.mark.parametrize("options", [["--scale", "sqrt"], ["--mask", "causal"],
                                     ["--scale", "0.25", "--mask", "causal"]],
                         ids=lambda o: " ".join(o))
def test_explain_heatmap_and_check_take_the_overrides_of_compute(runner, options):
    expected = _weights(runner, ILLUSTRATED, *options)
    assert not np.allclose(expected, _weights(runner, ILLUSTRATED))  # the override changes something
    steps = json_of(runner, "explain", ILLUSTRATED, "--step", "5", "--query", "2", "-f", "json", *options)
    assert np.allclose(steps["numbers"]["weights"]["values"][0], expected[0, 1], atol=1e-15)
    shown = invoke(runner, "heatmap", ILLUSTRATED, "--head", "1", "--precision", "3", *options, env={"NO_COLOR": "1"})
    assert shown.exit_code == 0, shown.stderr
    assert f"{expected[0, 2, 2]:.3f}" in shown.stdout
    assert ("╱╱" in shown.stdout) == ("causal" in " ".join(options).lower())
    found = json_of(runner, "check", HOMEWORK, "-f", "json", *options)
    weights = next(f for f in found["findings"] if f["key"] == "weights")
    assert not weights["ok"] and weights["expected"] == pytest.approx(expected[0, 0, weights["cell"][0] - 1], abs=1e-12)


def test_heads_is_replaced_on_every_command(runner, tmp_path):
    doc = tmp_path / "doc.yaml"
    doc.write_text("inputs: [[1, 0, 1, 0], [0, 2, 0, 2], [1, 1, 1, 1]]\n"
                   "answer: {head: 2, query: 1, scores: [1, 0, 1]}\n")
    expected = np.array(json_of(runner, "compute", doc, "--heads", "2", "-f", "json")["scores"])
    assert expected.shape == (2, 3, 3)
    steps = json_of(runner, "explain", doc, "--heads", "2", "--head", "2", "--step", "4", "-f", "json")
    assert steps["numbers"]["scores"]["values"][0] == expected[1, 0].tolist()
    shown = invoke(runner, "heatmap", doc, "--heads", "2", env={"NO_COLOR": "1"})
    assert "head 1" in shown.stdout and "head 2" in shown.stdout
    found = json_of(runner, "check", doc, "--heads", "2", "-f", "json")
    assert found["findings"][0]["key"] == "scores" and found["correct"] is (expected[1, 0].tolist() == [1, 0, 1])
    one_error(invoke(runner, "check", doc, "-f", "json"), "answer.head", "out of range")  # one head without --heads


@pytest.mark.parametrize("command", ["compute", "heatmap"])
def test_head_all_is_every_head(runner, command):
    plain = invoke(runner, command, TWO_HEADS, env={"NO_COLOR": "1"})
    for spelling in ("all", "ALL"):
        every = invoke(runner, command, TWO_HEADS, "--head", spelling, env={"NO_COLOR": "1"})
        assert every.exit_code == 0 and every.stdout == plain.stdout
    assert "Head 2 · Weights" in plain.stdout or "head 2" in plain.stdout
    one_error(invoke(runner, command, TWO_HEADS, "--head", "every"), "--head",
              "'every' is not a head number (1, 2, …) or all")


def test_compute_head_all_is_allowed_with_json(runner):
    every = _stdout(runner, "compute", TWO_HEADS, "-f", "json", "--head", "all")
    assert every == _stdout(runner, "compute", TWO_HEADS, "-f", "json")
    one_error(invoke(runner, "compute", TWO_HEADS, "-f", "json", "--head", "1"), "--head selects tables")


def test_explain_head_all_follows_each_head_in_turn(runner):
    one = [json_of(runner, "explain", TWO_HEADS, "--head", str(h), "-f", "json") for h in (1, 2)]
    every = json_of(runner, "explain", TWO_HEADS, "--head", "all", "-f", "json")
    assert every["head"] == "all"
    numbers = [s["step"] for s in every["steps"]]
    assert numbers == [1, 2, 3, 4, 5, 6, 7, 2, 3, 4, 5, 6, 7, 8]
    for k, h in [(1, 1), (7, 2)]:  # step 2 of head 1, then of head 2
        assert every["steps"][k]["title"].endswith(f"(head {h})")
    for h, run in enumerate(one):
        steps = every["steps"][1 + 6 * h: 7 + 6 * h]
        for got, want in zip(steps, run["steps"][1:7]):
            assert got["numbers"] == want["numbers"] and got["lines"] == want["lines"]
    assert every["steps"][0] == one[0]["steps"][0] and every["steps"][-1]["numbers"] == one[0]["steps"][-1]["numbers"]
    only4 = json_of(runner, "explain", TWO_HEADS, "--head", "all", "--step", "4", "-f", "json", "--lang", "zh")
    assert [s["title"][-8:] for s in only4["steps"]] == ["（第 1 个头）", "（第 2 个头）"]
    why = json_of(runner, "explain", TWO_HEADS, "--head", "all", "--why", "-f", "json")
    assert [s["step"] for s in why["steps"]] == ["a", "b", "c", "d", "e"] * 2  # (e: why the scale, issue 19)


def test_explain_head_all_marks_the_mistake_in_the_answers_head(runner, tmp_path):
    doc = tmp_path / "doc.yaml"
    doc.write_text((EXAMPLES / "two_heads.yaml").read_text() + "\nanswer: {head: 2, query: 1, scores: [9, 9, 9]}\n")
    every = json_of(runner, "explain", doc, "--head", "all", "-f", "json")
    marked = [(s["step"], s["title"]) for s in every["steps"] if s["notes"]]
    assert len(marked) == 1 and marked[0][0] == 4 and marked[0][1].endswith("(head 2)")


def test_check_json_lists_the_findings(runner):
    result = invoke(runner, "check", HOMEWORK, "--format", "json")
    assert result.exit_code == 1  # as the text: something is wrong
    found = json.loads(result.stdout)
    assert found["tolerance"] == 0.005 and found["correct"] is False and found["lang"] == "en"
    fields = ["key", "step", "ok", "cell", "where", "expected", "given", "problem", "hint"]
    assert [list(f) for f in found["findings"]] == [fields] * 3
    assert [(f["key"], f["step"], f["ok"]) for f in found["findings"]] == [("scores", 4, True), ("weights", 5, True),
                                                                         ("output", 7, False)]
    wrong = found["findings"][2]
    output = json_of(runner, "compute", HOMEWORK, "-f", "json")["output"]  # (the full computation, as check's)
    assert wrong["cell"] == [1] and wrong["where"] == "column 1" and wrong["expected"] == output[0][0]
    assert wrong["given"] == 2.0 and wrong["hint"].startswith("the weights were rounded too early")
    text = invoke(runner, "check", HOMEWORK).stdout
    assert "wrong at column 1: expected 1.93662, yours 2" in text and "hint: the weights were rounded too early" in text


def test_check_json_of_a_blank_a_shape_and_a_right_answer(runner, tmp_path):
    doc = tmp_path / "doc.yaml"
    doc.write_text((EXAMPLES / "illustrated.yaml").read_text()
                   + "answer:\n  scores: [[2, 4, 4], [4, 16, 12], [4, 12, 10]]\n  weights: [[0.06, null, 0.47]]\n"
                     "  output: [[1.94, 6.68, 1.6], [2, 7.96, 0.05], [2, 7.76, 0.36]]\n")
    found = json_of(runner, "check", doc, "-f", "json")
    scores, weights, output = found["findings"]
    assert scores["ok"] and scores["cell"] is None and output["ok"]
    assert not weights["ok"] and weights["cell"] is None and weights["problem"].startswith("has shape 1 × 3")
    doc.write_text((EXAMPLES / "illustrated.yaml").read_text() + "answer:\n  query: 2\n  weights: [0.0, null, 0.02]\n")
    blank = json_of(runner, "check", doc, "-f", "json")["findings"][0]
    assert blank["cell"] == [2] and blank["given"] is None and blank["where"] == "column 2"
    doc.write_text((EXAMPLES / "illustrated.yaml").read_text()
                   + "answer:\n  scores: [[2, 4, 4], [4, 16, 12], [4, 12, 10]]\n")
    result = invoke(runner, "check", doc, "-f", "json")
    assert result.exit_code == 0 and json.loads(result.stdout)["correct"] is True


def test_check_in_chinese(runner):
    text = invoke(runner, "check", HOMEWORK, "--lang", "zh", env={"COLUMNS": "80"}).stdout
    lines = text.splitlines()
    assert lines[0] == "你的答案，逐步核对（容差 0.005）"
    assert lines[1].split() == ["✓", "步骤", "4", "scores", "正确"]
    assert "错在第 1 列：应为 1.93662，你写的是 2" in lines[3]
    assert "提示：权重取整过早（取成 0、0.5 或 1）：应保留完整精度" in text  # the hint in Chinese too (issue 19)
    found = json_of(runner, "check", HOMEWORK, "-f", "json", "--lang", "ZH")
    assert found["lang"] == "zh" and found["findings"][2]["where"] == "第 1 列"


def test_cells_are_named_with_rows_and_heads_in_both_languages(runner, tmp_path):
    doc = tmp_path / "doc.yaml"
    doc.write_text((EXAMPLES / "two_heads.yaml").read_text()
                   + "\nanswer: {head: 2, weights: [[0.3, 0.3, 0.4], [0, 0, 1], [1, 0, 0]]}\n")
    en = json_of(runner, "check", doc, "-f", "json")["findings"][0]
    zh = json_of(runner, "check", doc, "-f", "json", "--lang", "zh")["findings"][0]
    assert en["cell"] == [1, 1] and en["where"] == "row 1 ('The'), column 1"
    assert zh["where"] == "第 1 行（'The'），第 1 列"


@pytest.mark.parametrize("args", [
    ["compute", ILLUSTRATED, "-f", "JSON"],
    ["compute", ILLUSTRATED, "--format", "Markdown"],
    ["explain", "--lang", "ZH", "--step", "1"],
    ["explain", "-f", "Json", "--step", "1"],
    ["heatmap", ILLUSTRATED, "--of", "SCORES"],
    ["check", HOMEWORK, "-f", "JSON"],
    ["check", HOMEWORK, "--lang", "Zh"],
    ["init", "--mask", "CAUSAL", "--init", "Kaiming", "--pre-norm", "RMS"],
], ids=lambda a: " ".join(a[:1] + a[2:]))
def test_choices_are_not_case_sensitive(runner, args):
    lowered = [a.lower() if a[0].isupper() else a for a in args]
    upper, lower = invoke(runner, *args), invoke(runner, *lowered)
    assert upper.exit_code == lower.exit_code and upper.exit_code in (0, 1), upper.stderr
    assert upper.stdout == lower.stdout


def test_version_short_and_long(runner):
    from attncli import __version__

    for option in ("-V", "--version"):
        result = invoke(runner, option)
        assert result.exit_code == 0 and result.stdout == f"attncli {__version__}\n"


# ---------------------------------------------------------------- 11. standard input on a terminal, --only, completion


@pytest.mark.slow
@pytest.mark.parametrize("command", [["compute", "-", "--only", "output"], ["check", "-"],
                                     ["explain", "-", "--step", "1"], ["heatmap", "-"]], ids=lambda c: c[0])
def test_reading_standard_input_on_a_terminal_says_so(command):
    import pty

    main, secondary = pty.openpty()
    try:
        process = subprocess.Popen([*COMMAND, *command], stdin=secondary, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, env=ENV)
        os.close(secondary)
        deadline = time.monotonic() + 60
        said = b""
        while b"\n" not in said and time.monotonic() < deadline and process.poll() is None:  # it says so, then waits
            said += os.read(process.stderr.fileno(), 1)
        text = (EXAMPLES / "check" / "homework.yaml").read_bytes().replace(b"\n", b"\r")
        os.write(main, text + b"\r\x04")  # typed, then Ctrl-D
        out, rest = process.communicate(timeout=60)
    finally:
        os.close(main)
    assert said == "Reading the document from standard input (end with Ctrl-D)…\n".encode()
    assert rest == b"" and process.returncode == (1 if command[0] == "check" else 0), rest
    assert out


def test_standard_input_from_a_pipe_or_file_says_nothing(runner):
    result = invoke(runner, "compute", "-", "--only", "output", input=(EXAMPLES / "illustrated.yaml").read_text())
    assert result.exit_code == 0 and result.stderr == ""


KEYS_BEFORE_SCORES = [
    ("illustrated.yaml", ["inputs"]),
    ("cross_attention.yaml", ["context", "inputs"]),
    ("bert_base.yaml", ["queries", "keys", "values"]),
    ("llama_style.yaml", ["normalized_inputs"]),
    ("llama_style.yaml", ["queries_rotated", "keys_rotated", "values"]),
]


@pytest.mark.parametrize("name, keys", KEYS_BEFORE_SCORES, ids=lambda x: x if isinstance(x, str) else ",".join(x))
def test_only_keys_before_the_scores_compute_no_attention(runner, monkeypatch, name, keys):
    path = EXAMPLES / name
    only = [a for key in keys for a in ("--only", key)]
    full = {fmt: _stdout(runner, "compute", path, *only, *extra) for fmt, extra in
            (("json", ["-f", "json"]), ("table", []), ("markdown", ["-f", "markdown"]))}

    def forbidden(*args, **kwargs):
        raise AssertionError("the attention was computed")

    from attncli.core import attention, pipeline, stream

    monkeypatch.setattr(pipeline, "attend", forbidden)
    monkeypatch.setattr(stream, "attend_streamed", forbidden)
    monkeypatch.setattr(attention, "scores", forbidden)
    if keys == ["inputs"] or set(keys) == {"inputs", "context"}:  # nor the projections
        monkeypatch.setattr(attention, "projections", forbidden)
    for fmt, extra in (("json", ["-f", "json"]), ("table", []), ("markdown", ["-f", "markdown"])):
        assert _stdout(runner, "compute", path, *only, *extra) == full[fmt]  # the same bytes as before
    monkeypatch.undo()
    trace_keys = json.loads(full["json"])
    assert not {"scores", "weights", "output"} & set(trace_keys)


def test_only_a_later_key_still_computes_the_attention(runner, monkeypatch):
    from attncli.core import pipeline

    calls = []
    real = pipeline.attend_until
    monkeypatch.setattr(pipeline, "attend_until", lambda *a: calls.append(a) or real(*a))
    data = json_of(runner, "compute", ILLUSTRATED, "-f", "json", "--only", "inputs", "--only", "weights")
    assert calls == [] and data["weights"][0][0][0] == pytest.approx(0.0634, abs=1e-4)


def test_only_keys_before_the_scores_are_checked_against_the_memory_budget(runner, tmp_path):
    doc = tmp_path / "doc.yaml"
    doc.write_text("inputs: {random: normal, seed: 0, shape: [1000, 8]}\n"
                   "weights: {query: {random: normal, shape: [8, 20000]},"
                   " key: {random: normal, shape: [8, 20000]}, value: {random: normal, shape: [8, 20000]}}\n")
    small = {"ATTNCLI_MEMORY": "100M"}
    one_error(invoke(runner, "compute", doc, "--only", "queries", "-o", tmp_path / "q.npy", env=small),
              "Error: --only: queries of this document would need", "more than the 100 MiB attncli may use")
    assert not (tmp_path / "q.npy").exists()
    inputs = invoke(runner, "compute", doc, "--only", "inputs", "-o", tmp_path / "x.npy", env=small)  # no projection
    assert inputs.exit_code == 0, inputs.stderr
    assert np.load(tmp_path / "x.npy").shape == (1000, 8)


@pytest.mark.slow
def test_only_inputs_of_a_long_document_is_quick(tmp_path):
    """n = 4096, d_model 256, 4 heads: the whole attention takes seconds; the inputs alone no more than reading them."""
    rng = np.random.default_rng(0)
    np.save(tmp_path / "x.npy", rng.normal(size=(4096, 256)))
    (tmp_path / "doc.yaml").write_text("inputs: x.npy\nheads: 4\n")
    timings = {}
    for key in ("inputs", "output"):
        start = time.perf_counter()
        result = subprocess.run([*COMMAND, "compute", str(tmp_path / "doc.yaml"), "--only", key, "-o",
                                 str(tmp_path / f"{key}.npy")], env=ENV, capture_output=True, timeout=300)
        timings[key] = time.perf_counter() - start
        assert result.returncode == 0, result.stderr
    assert np.array_equal(np.load(tmp_path / "inputs.npy"), np.load(tmp_path / "x.npy"))
    assert timings["inputs"] < timings["output"], timings


def test_shell_completion_is_offered(runner):
    help_text = invoke(runner, "--help", env={"COLUMNS": "120", "NO_COLOR": "1"}).stdout
    assert "--install-completion" in help_text and "--show-completion" in help_text
    assert "--install-completion" in _readme()


@pytest.mark.slow
def test_shell_completion_completes_commands_options_and_choices(tmp_path):
    def complete(words: str) -> list[str]:
        env = {**ENV, "_ATTNCLI_COMPLETE": "complete_bash", "COMP_WORDS": words,
               "COMP_CWORD": str(len(words.split()) - 1)}
        if words.endswith(" "):
            env["COMP_CWORD"] = str(len(words.split()))
        result = subprocess.run(COMMAND, env=env, capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, result.stderr
        return result.stdout.split()

    assert complete("attncli com") == ["compute"]
    assert "--format" in complete("attncli compute x.yaml --fo")
    assert complete("attncli compute x.yaml --format ") == ["table", "json", "markdown", "latex", "csv"]
    script = subprocess.run([*COMMAND, "--show-completion", "bash"], env=ENV, capture_output=True, text=True,
                            timeout=60)
    assert script.returncode == 0 and "_ATTNCLI_COMPLETE=complete_bash" in script.stdout
    home = tmp_path / "home"
    home.mkdir()
    installed = subprocess.run([*COMMAND, "--install-completion", "bash"], env={**ENV, "HOME": str(home)},
                               capture_output=True, text=True, timeout=60)
    assert installed.returncode == 0, installed.stderr
    assert "completion" in (home / ".bashrc").read_text()
