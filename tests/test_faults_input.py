"""Hostile input: what the audit of attncli's input handling found, one table per class, every command.

Each bad case must end as one ``Error: <where>: <what>`` line on standard error, exit code 2,
nothing on standard output, no traceback and no RuntimeWarning; where a file holds a secret,
no more than one shortened cell of it (20 characters) may appear in the message.  Good cases
next to them show that the fixes refuse nothing that was right (full-width digits are refused
everywhere, ASCII numbers accepted everywhere; control characters are escaped, never dropped).
"""

from __future__ import annotations

import json
import os
import re
import struct
import subprocess
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from attncli.cli import app
from attncli.core.errors import AttnError, shorten
from attncli.inputs.values import number_in_text

SECRET = "hunter2-TOPSECRET-a7f3c9e1b5d2"  # no message may ever show this whole
X = "inputs: [[1, 0, 1, 0], [0, 2, 0, 2], [1, 1, 1, 1]]\n"  # n = 3, d_model = 4
X2 = "inputs: [[1, 0], [0, 1]]\n"
ANSWER = "answer: {weights: [0.5, 0.5]}\n"  # `check` reads the matrices only when there is an answer
COMMANDS = (["compute", "--format", "json"], ["explain"], ["heatmap"], ["check"])
BIG = "9" * 330  # an integer YAML reads whole (up to 400 digits), far beyond float64
LONG = "k" * 10_000
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # what a terminal may act on (tab and newline aside)


@dataclass
class Case:
    id: str
    doc: str  # written to sub/dir/doc.yaml (or `name`)
    names: list[str]  # what the message must contain
    files: dict[str, str | bytes] = field(default_factory=dict)  # relative to the document's folder
    args: list[str] = field(default_factory=list)  # after the command and the document
    commands: tuple = COMMANDS
    name: str = "doc.yaml"
    env: dict[str, str] = field(default_factory=dict)
    secret: str | None = None  # content that must not be echoed beyond CELL_CHARS


def invoke(runner, args: list[str], env: dict[str, str] | None = None, **kwargs):
    """The CLI in-process, every warning recorded (a RuntimeWarning would have been printed before the error)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = runner.invoke(app, args, env=env, **kwargs)
    assert not [w for w in caught if issubclass(w.category, RuntimeWarning)], [str(w.message) for w in caught]
    return result


def one_clean_error(result, names: list[str]) -> str:
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code == 2, (result.exit_code, result.stderr)
    assert result.stdout == "", result.stdout
    message = result.stderr
    assert "Traceback" not in message and "Warning" not in message, message
    assert message.startswith("Error: ") and message.endswith("\n") and message.count("\n") == 1, message
    for name in names:
        assert name in message, (name, message)
    return message


def no_content_beyond_a_cell(message: str, content: str) -> None:
    """Not one run of 21 characters of ``content`` in the message: at most one shortened cell of 20."""
    assert SECRET not in message, message
    for line in content.splitlines():
        for i in range(max(len(line) - 20, 0)):
            assert line[i : i + 21] not in message, (line[i : i + 21], message)


def npy_with_header(header: str, data: bytes = bytes(16)) -> bytes:
    header += " " * (63 - (10 + len(header)) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + data


def npy_bytes(array: np.ndarray) -> bytes:
    import io

    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def write(case: Case, root: Path) -> Path:
    folder = root / "sub" / "dir"
    folder.mkdir(parents=True)
    for name, content in case.files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    doc = folder / case.name
    doc.write_text(case.doc, encoding="utf-8")
    return doc


def run_case(runner, tmp_path, monkeypatch, case: Case) -> None:
    monkeypatch.chdir(tmp_path)
    doc = write(case, tmp_path)
    for command in case.commands:
        text = case.doc if command != ["check"] or "answer:" in case.doc else case.doc + ANSWER
        doc.write_text(text, encoding="utf-8")
        result = invoke(runner, [command[0], str(doc), *command[1:], *case.args], env=case.env)
        message = one_clean_error(result, case.names)
        if case.secret is not None:
            no_content_beyond_a_cell(message, case.secret)


# ---------------------------------------------------------------- 1. no file content in messages

SECRET_LINE = f"password={SECRET}"
LEAKS = [
    Case("csv-first-cell", "inputs: secret.csv\n", ["secret.csv", "line 1, column 1", "not a number"],
         files={"secret.csv": SECRET_LINE + ",1\n"}, secret=SECRET_LINE),
    Case("csv-later-line", "inputs: secret.csv\n", ["secret.csv", "line 2, column 2", "not a number"],
         files={"secret.csv": f"1,2\n3,{SECRET_LINE}\n"}, secret=SECRET_LINE),
    Case("txt-one-word", "inputs: secret.txt\n", ["secret.txt", "line 1, column 1"],
         files={"secret.txt": f"{SECRET}{SECRET}\n"}, secret=SECRET + SECRET),
    Case("tsv-with-spaces", "inputs: secret.tsv\n", ["secret.tsv", "line 1, column 1"],
         files={"secret.tsv": f"user name {SECRET}\t1\n"}, secret=f"user name {SECRET}"),
    Case("parent-folders", "inputs: ../../some/secret.txt\n", ["../../some/secret.txt", "line 1, column 1"],
         files={"../../some/secret.txt": f"{SECRET_LINE} and more\nsecond {SECRET}\n"}, secret=SECRET_LINE),
    Case("nan-like-cell", "inputs: secret.csv\n", ["secret.csv", "line 1, column 1"],
         files={"secret.csv": f"nan{SECRET}\n"}, secret=f"nan{SECRET}"),
    Case("infinite-cell", "inputs: secret.csv\n", ["secret.csv", "line 1, column 2", "too large for float64"],
         files={"secret.csv": "1," + "9" * 400 + "\n"}, secret="9" * 400),
    Case("mask-file", X + "mask: secret.csv\n", ["mask", "secret.csv", "line 1, column 1", "not a mask value"],
         files={"secret.csv": SECRET_LINE + "\n"}, secret=SECRET_LINE),
    Case("mask-file-txt", X + "mask: secret.txt\n", ["mask", "secret.txt", "line 2, column 1"],
         files={"secret.txt": f"1 1 1\n{SECRET}{SECRET} 1 1\n1 1 1\n"}, secret=SECRET + SECRET),
    Case("weight-file", X + "weights: {query: secret.csv}\n", ["weights.query", "secret.csv"],
         files={"secret.csv": SECRET_LINE + "\n"}, secret=SECRET_LINE),
    Case("bias-file", X + "bias: {query: secret.txt}\n", ["bias.query", "secret.txt"],
         files={"secret.txt": SECRET_LINE + "\n"}, secret=SECRET_LINE),
    Case("positional-file", X + "positional: secret.csv\n", ["positional", "secret.csv"],
         files={"secret.csv": SECRET_LINE + "\n"}, secret=SECRET_LINE),
    Case("context-file", X + "context: secret.csv\n", ["context", "secret.csv"],
         files={"secret.csv": SECRET_LINE + "\n"}, secret=SECRET_LINE),
    Case("add-norm-gamma-file", X + "add_norm: {gamma: secret.csv}\n", ["add_norm.gamma", "secret.csv"],
         files={"secret.csv": SECRET_LINE + "\n"}, secret=SECRET_LINE),
    Case("answer-file", X + "answer: {weights: secret.csv}\n", ["answer.weights", "secret.csv"],
         files={"secret.csv": SECRET_LINE + "\n"}, secret=SECRET_LINE, commands=(["check"], ["explain"])),
    Case("json-document", json.dumps({"inputs": "secret.csv"}), ["doc.json", "secret.csv"], name="doc.json",
         files={"secret.csv": SECRET_LINE + "\n"}, secret=SECRET_LINE, commands=(["compute"], ["heatmap"])),
    Case("npy-header-not-a-dict", "inputs: secret.npy\n", ["secret.npy", "header cannot be read"],
         files={"secret.npy": npy_with_header(f"{SECRET_LINE} is not a header")}, secret=SECRET_LINE),
    Case("npy-header-extra-key", "inputs: secret.npy\n", ["secret.npy", "header cannot be read"],
         files={"secret.npy": npy_with_header("{'descr': '<f8', 'fortran_order': "
                                              f"False, 'shape': (2,), '{SECRET}': 1}}")},
         secret=SECRET),
    Case("npy-header-descr", "inputs: secret.npy\n", ["secret.npy", "header cannot be read"],
         files={"secret.npy": npy_with_header(f"{{'descr': '{SECRET}', 'fortran_order': False, 'shape': (2,)}}")},
         secret=SECRET),
    Case("npy-header-fortran-order", "inputs: secret.npy\n", ["secret.npy", "header cannot be read"],
         files={"secret.npy": npy_with_header(f"{{'descr': '<f8', 'fortran_order': '{SECRET}', 'shape': (2,)}}")},
         secret=SECRET),
    Case("npy-header-shape", "inputs: secret.npy\n", ["secret.npy", "header cannot be read"],
         files={"secret.npy": npy_with_header(f"{{'descr': '<f8', 'fortran_order': False, 'shape': '{SECRET}'}}")},
         secret=SECRET),
    Case("npy-structured-field-names", "inputs: secret.npy\n", ["secret.npy", "records", "real numbers"],
         files={"secret.npy": npy_bytes(np.zeros(2, dtype=[(SECRET, "<f8")]))}, secret=SECRET),
]


@pytest.mark.parametrize("case", LEAKS, ids=[case.id for case in LEAKS])
def test_no_file_content_in_messages(runner, tmp_path, monkeypatch, case):
    run_case(runner, tmp_path, monkeypatch, case)


def test_mask_option_file_is_not_echoed(runner, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "doc.yaml").write_text(X)
    (tmp_path / "secret.txt").write_text(f"{SECRET_LINE}\n")
    message = one_clean_error(invoke(runner, ["compute", "doc.yaml", "--mask", "secret.txt"]),
                              ["--mask", "secret.txt", "line 1"])
    no_content_beyond_a_cell(message, SECRET_LINE)


def test_the_one_cell_is_still_quoted(runner, tmp_path, monkeypatch):
    """A short bad cell is still shown whole: that is what tells the user what to fix."""
    case = Case("short-cell", "inputs: m.csv\n", ["m.csv", "line 2, column 1: '1.2.3' is not a number"],
                files={"m.csv": "1,2\n1.2.3,4\n"})
    run_case(runner, tmp_path, monkeypatch, case)


# ---------------------------------------------------------------- 2. control characters never reach a terminal raw

LABELS = ["a\x1b[31mred", "b\x9b2J", "c\x07\x7f", "d|e*f*_g_ ~h~ &amp; $x$ #i [j](k) <l> `m`", "n\x00o\x1b]0;title\x07"]


def control_doc(tmp_path: Path) -> Path:
    n = len(LABELS)
    doc = {
        "inputs": [[float(i == j) + 0.5 * j for j in range(2)] for i in range(n)],
        "tokens": LABELS,
        "positional": "sinusoidal",
        "add_norm": True,
        "mask": [[1] * (i + 1) + [0] * (n - i - 1) for i in range(n)],
        "answer": {"weights": [[1] + [0] * (n - 1)] * n},  # wrong from row 2 on: `check` and explain name tokens
    }
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(doc))
    return path


OUTPUTS = [
    ["compute"], ["compute", "--format", "json"], ["compute", "--format", "markdown"], ["compute", "--format", "latex"],
    ["compute", "--format", "csv", "--only", "weights"], ["compute", "--format", "csv", "--only", "inputs"],
    ["compute", "--format", "csv", "--only", "scaled_scores", "--head", "1"],
    ["explain"], ["explain", "--query", "2"], ["explain", "--query", "5", "--lang", "zh"],
    ["explain", "--format", "json"],
    ["explain", "--why"], ["explain", "--why", "--format", "json"], ["heatmap"], ["heatmap", "--head", "1"], ["check"],
]


@pytest.mark.parametrize("command", OUTPUTS, ids=[" ".join(c) for c in OUTPUTS])
def test_control_characters_are_escaped_in_every_output(runner, tmp_path, command):
    doc = control_doc(tmp_path)
    result = invoke(runner, [command[0], str(doc), *command[1:]])
    assert result.exit_code == (1 if command == ["check"] else 0), result.stderr
    assert not CONTROL.findall(result.stdout), CONTROL.findall(result.stdout)[:5]
    assert not CONTROL.findall(result.stderr)
    if "json" in command:  # the same labels come back from the JSON, escapes and all
        data = json.loads(result.stdout)
        assert data.get("tokens", LABELS) == LABELS or data.get("token") == LABELS[0]
    elif command != ["check"] and "markdown" not in command:  # (Markdown escapes the backslash too: see below)
        assert "\\x1b[31mred" in result.stdout and "\\x9b2J" in result.stdout


def test_markdown_labels_keep_the_table_shape(runner, tmp_path):
    result = invoke(runner, ["compute", str(control_doc(tmp_path)), "--format", "markdown", "--only", "weights"])
    rows = [line for line in result.stdout.splitlines() if line.startswith("|")]
    widths = {len(re.split(r"(?<!\\)\|", row)) for row in rows}
    assert len(widths) == 1 and widths == {len(LABELS) + 3}, rows  # label column, one per key, and the two edges
    assert r"d\|e\*f\*\_g\_ \~h\~ \&amp; \$x\$ \#i \[j\](k) \<l\> \`m\`" in result.stdout
    assert "\\\\x1b\\[31mred" in result.stdout  # the backslash of the visible escape, escaped in turn


def test_latex_labels_stay_in_their_comment(runner, tmp_path):
    doc = control_doc(tmp_path)
    data = json.loads(doc.read_text())
    data["tokens"][0] = "two\nlines \\end{document} %"
    doc.write_text(json.dumps(data))
    result = invoke(runner, ["compute", str(doc), "--format", "latex", "--only", "weights"])
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    comments = [line for line in lines if "rows: " in line]
    assert comments and all(c.startswith("% Weights") and "two lines \\end{document} %" in c for c in comments)
    assert [line for line in lines if "end{document}" in line] == comments  # raw only inside the comments
    # beside the matrix, escaped for text mode: nothing the label holds is read as markup
    assert r"\text{two lines \textbackslash{}end\{document\} \%} & " in result.stdout
    assert not CONTROL.findall(result.stdout)


def test_csv_labels_read_back_as_the_visible_text(runner, tmp_path):
    import csv
    import io

    result = invoke(runner, ["compute", str(control_doc(tmp_path)), "--format", "csv", "--only", "inputs"])
    rows = list(csv.reader(io.StringIO(result.stdout)))
    assert [row[0] for row in rows[1:]] == [_visible(label) for label in LABELS]


def _visible(text: str) -> str:
    return re.sub("[\x00-\x1f\x7f-\x9f]", lambda m: f"\\x{ord(m.group()):02x}", text)


def test_init_writes_no_raw_control_characters_and_reads_back(runner):
    tokens = "a\x1b[31m b\x9bc d\x7f e"
    result = invoke(runner, ["init", "--tokens", tokens])
    assert result.exit_code == 0 and not CONTROL.findall(result.stdout), result.stdout
    back = invoke(runner, ["compute", "-", "--format", "json", "--only", "inputs"], input=result.stdout)
    assert back.exit_code == 0, back.stderr
    assert json.loads(back.stdout)["tokens"] == tokens.split()


# ---------------------------------------------------------------- 3. unbounded user text is shortened

LONG_TOKEN = "t" * 100_000


@dataclass
class Long:
    id: str
    doc: str
    args: list[str]
    names: list[str]
    name: str = "doc.yaml"
    env: dict[str, str] = field(default_factory=dict)


LONGS = [
    Long("top-key-json", json.dumps({"inputs": [[1]], LONG: 1}), ["compute"], ["unknown key", "(10000 characters)"],
         name="doc.json"),
    Long("weights-key", json.dumps({"inputs": [[1]], "weights": {LONG: 1}}), ["compute"],
         ["weights", "(10000 characters)"], name="doc.json"),
    Long("add-norm-key", json.dumps({"inputs": [[1]], "add_norm": {LONG: 1}}), ["compute"],
         ["add_norm", "(10000 characters)"], name="doc.json"),
    Long("random-key", json.dumps({"inputs": {"random": "normal", LONG: 1, "shape": [1, 1]}}), ["compute"],
         ["inputs", "(10000 characters)"], name="doc.json"),
    Long("answer-key", json.dumps({"inputs": [[1]], "answer": {LONG: 1}}), ["check"], ["answer", "(10000 characters)"],
         name="doc.json"),
    Long("duplicate-key", f'{{"inputs": [[1]], "{LONG}": 1, "{LONG}": 2}}', ["compute"],
         ["duplicate key", "(10000 characters)"], name="doc.json"),
    Long("random-kind", json.dumps({"inputs": {"random": LONG}}), ["compute"], ["random", "(10000 characters)"],
         name="doc.json"),
    Long("score", X + f"score: {LONG}\n", ["compute"], ["score", "(10000 characters)"]),
    Long("normalize", X + f"normalize: {LONG}\n", ["compute"], ["normalize", "(10000 characters)"]),
    Long("scale-word", X + f"scale: {LONG}\n", ["compute"], ["scale", "(10000 characters)"]),
    Long("scale-digits", X + f"scale: '{'1' * 5000}'\n", ["compute"], ["scale", "(5000 characters)", "beyond float64"]),
    Long("mask-word", X + f"mask: {LONG}\n", ["compute"], ["mask", "(10000 characters)"]),
    Long("mask-file-name", X + f"mask: {LONG}.csv\n", ["compute"], ["mask", "(10004 characters)", "too long"]),
    Long("positional-file-name", X + f"positional: {LONG}.npy\n", ["compute"], ["positional", "(10004 characters)"]),
    Long("weight-file-name", X + f"weights: {{query: {'w' * 300}.csv}}\n", ["compute"],
         ["weights.query", "(304 characters)"]),
    Long("heads-word", X + f"heads: {LONG}\n", ["compute"], ["heads", "(10000 characters)"]),
    Long("heads-digits", X + f"heads: {BIG}\n", ["compute"], ["heads", "(330 digits)"]),
    Long("eps-word", X + f"add_norm: {{eps: {LONG}}}\n", ["compute"], ["add_norm.eps", "(10000 characters)"]),
    Long("tag", X + f"scale: !!{LONG} 1\n", ["compute"], ["line 2", "characters)", "not allowed"]),
    Long("float-tag", X + f"scale: !!float {LONG}\n", ["compute"], ["line 2", "(10000 characters)", "!!float"]),
    Long("alias", f"inputs: &{LONG} [[1]]\nscale: *{LONG}\n", ["compute"], ["line 2", "(10000 characters)", "aliases"]),
    Long("overflow-label", f"tokens: [{LONG_TOKEN}, b]\ninputs: [[1e200, 0], [0, 1]]\n",
         ["compute", "--format", "json"], ["scores overflow float64", "(100000 characters)"]),
    Long("query-option", f"tokens: [{LONG_TOKEN}, b]\n" + X2, ["explain", "--query", LONG],
         ["--query", "(10000 characters)",
                                                                                               "(100000 characters)"]),
    Long("query-option-number", X2, ["explain", "--query", "9" * 5000],
         ["--query", "(5000 characters)", "out of range"]),
    Long("step-option", X2, ["explain", "--step", LONG], ["--step", "(10000 characters)"]),
    Long("step-option-number", X2, ["explain", "--step", "9" * 5000], ["--step", "(5000 characters)", "out of range"]),
    Long("head-option", X2, ["heatmap", "--head", LONG], ["--head", "(10000 characters)"]),
    Long("head-option-number", X2, ["heatmap", "--head", "9" * 5000], ["--head", "out of range"]),
    Long("scale-option", X2, ["compute", "--scale", LONG], ["--scale", "(10000 characters)"]),
    Long("mask-option", X2, ["compute", "--mask", LONG], ["--mask", "(10000 characters)"]),
    Long("only-option", X2, ["compute", "--only", LONG], ["--only", "(10000 characters)"]),
    Long("answer-query-label", f"tokens: [{LONG_TOKEN}, b]\n" + X2 + "answer: {query: nope, output: [1, 2]}\n",
         ["check"], ["answer.query", "(100000 characters)"]),
    Long("answer-query-word", X2 + f"answer: {{query: {LONG}, output: [1, 2]}}\n", ["check"],
         ["answer.query", "(10000 characters)"]),
    Long("answer-query-digits", X2 + f"answer: {{query: {BIG}, output: [1, 2]}}\n", ["check"],
         ["answer.query", "(330 digits)"]),
    Long("answer-head-digits", X2 + f"answer: {{head: {BIG}, output: [1, 2]}}\n", ["check"],
         ["answer.head", "(330 digits)"]),
    Long("memory-env", X2, ["compute"], ["ATTNCLI_MEMORY", "(5000 characters)"], env={"ATTNCLI_MEMORY": "x" * 5000}),
    Long("init-tokens", "", ["init", "--tokens", f"{LONG_TOKEN} x", "--n", "1"], ["--n", "(100000 characters)"]),
    Long("init-n", "", ["init", "--n", "9" * 30], ["--n", "(30 digits)", "too large"]),
]


@pytest.mark.parametrize("case", LONGS, ids=[case.id for case in LONGS])
def test_long_text_is_shortened(runner, tmp_path, monkeypatch, case):
    monkeypatch.chdir(tmp_path)
    args = list(case.args)
    if case.doc:
        (tmp_path / case.name).write_text(case.doc)
        args.insert(1, case.name)
    message = one_clean_error(invoke(runner, args, env=case.env), case.names)
    assert len(message) < 520, len(message)  # the text shortened; an unknown top key lists the ~40 known ones (an
    # unknown answer key the ~45 checkable ones)


def test_a_long_document_name_is_shortened(runner, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "/".join(["f" * 200] * 8)  # a 1600-character path, each name within the system's limit
    folder.mkdir(parents=True)
    (folder / "doc.yaml").write_text("inputs: [[1, 0], [0, 1]]\nscale: huge\n")
    for command in (["compute"], ["explain"], ["heatmap"]):
        message = one_clean_error(invoke(runner, [command[0], str(folder / "doc.yaml")]),
                                  ["/doc.yaml", "characters)", "'huge'"])
        assert len(message) < 400, message


def test_warnings_are_shortened(runner, tmp_path):
    doc = tmp_path / "doc.yaml"
    doc.write_text(f"tokens: [{LONG_TOKEN}, b]\ninputs: [[1, 0], [0, 1]]\nmask: [[0, 0], [1, 1]]\n")
    result = invoke(runner, ["compute", str(doc), "--format", "json", "--only", "output"])
    assert result.exit_code == 0 and result.stderr.startswith("Warning: query 1 ('tttt")
    assert "(100000 characters)" in result.stderr and len(result.stderr) < 400


def test_shorten_helper():
    assert shorten("abc") == "abc" and shorten("x" * 40) == "x" * 40
    assert shorten("x" * 41) == "x" * 40 + "… (41 characters)"
    assert shorten("a" * 50 + "/doc.yaml", 30, tail=12) == "a" * 18 + "…" + "a" * 3 + "/doc.yaml (59 characters)"
    assert shorten(-(10**400)) == "-1000000000… (401 digits)"
    assert shorten(10**5000).endswith("digits)")  # beyond what str() of an int allows (4300 digits)
    assert str(AttnError("x" * 5000)).endswith("(5000 characters)")


# ---------------------------------------------------------------- 4. what was an internal error (exit 70)

MEMORY = (["compute"], ["compute", "--format", "json"], ["heatmap"])  # the commands that plan for memory
JSON_COMMANDS = (["compute"], ["explain"], ["heatmap"])  # (`check` adds a YAML answer: not to a JSON document)
INTERNALS = [
    Case("scale-big-integer", X + f"scale: {BIG}\n", ["scale", "(330 digits)", "beyond float64"]),
    Case("eps-big-integer", X + f"add_norm: {{eps: {BIG}}}\n", ["add_norm.eps", "(330 digits)"]),
    Case("random-std", f"inputs: {{random: normal, std: {BIG}, shape: [2, 2]}}\n", ["inputs", "std", "(330 digits)"]),
    Case("random-mean", f"inputs: {{random: normal, mean: -{BIG}, shape: [2, 2]}}\n",
         ["inputs", "mean", "(330 digits)"]),
    Case("random-gain", f"inputs: {{random: xavier, gain: {BIG}, shape: [2, 2]}}\n",
         ["inputs", "gain", "(330 digits)"]),
    Case("random-low", f"inputs: {{random: uniform, low: {BIG}, shape: [2, 2]}}\n", ["inputs", "low", "(330 digits)"]),
    Case("random-high", f"inputs: {{random: uniform, high: {BIG}, shape: [2, 2]}}\n",
         ["inputs", "high", "(330 digits)"]),
    Case("random-shape", f"inputs: {{random: normal, shape: [{BIG}, 2]}}\n",
         ["inputs", "shape", "(330 digits)", "2 GiB"]),
    Case("random-shape-3d", X + f"weights: {{query: {{random: normal, shape: [{BIG}, {BIG}, 2]}}}}\n",
         ["weights.query", "(330 digits)"]),
    Case("random-seed", f"inputs: {{random: normal, seed: {BIG}, shape: [2, 2]}}\n",
         ["inputs", "seed", "(330 digits)"]),
    Case("answer-big-integer", X + f"answer: {{weights: {BIG}}}\n", ["answer.weights", "(330 digits)", "too large"],
         commands=(["check"], ["explain"])),
    Case("answer-big-integer-cell", X + f"answer: {{weights: [[1, {BIG}, 0]]}}\n", ["answer.weights", "column 2"],
         commands=(["check"],)),
    Case("mask-big-integer", X + f"mask: [[1, {BIG}, 1], [1, 1, 1], [1, 1, 1]]\n",
         ["mask", "row 1, column 2", "(330 digits)",
                                                                                    "not a mask value"]),
    Case("mask-big-integer-json", json.dumps({"inputs": [[1]], "mask": [[10**330]]}), ["mask", "(331 digits)"],
         name="doc.json", commands=JSON_COMMANDS),
    Case("memory-big-integer", X, ["ATTNCLI_MEMORY", "larger than any memory"], env={"ATTNCLI_MEMORY": BIG},
         commands=MEMORY),
    Case("memory-full-width-digits", X, ["ATTNCLI_MEMORY", "'１G' is not a memory size"], env={"ATTNCLI_MEMORY": "１G"},
         commands=MEMORY),
    Case("memory-arabic-digits", X, ["ATTNCLI_MEMORY", "not a memory size"], env={"ATTNCLI_MEMORY": "٣G"},
         commands=MEMORY),
    Case("positional-overflow",
         "tokens: [a, b]\ninputs: [[1e308, 1e308], [1, 2]]\npositional: [[1e308, 1e308], [0, 0]]\n",
         ["positional", "X + P", "overflow float64 at row 1 ('a')"]),
    Case("residual-overflow",
         "tokens: [a, b]\ninputs: [[1e308, 1e308], [1e308, 1e308]]\nweights: {query: [[0, 0], [0, 0]]}\n"
         "add_norm: true\n", ["doc.yaml", "residual overflow float64 at row 1 ('a')"], commands=COMMANDS[:3]),
    Case("variance-overflow", "tokens: [a, b]\ninputs: [[1e200, -1e200], [1e200, 1]]\n"
         "weights: {query: [[0, 0], [0, 0]], value: [[0, 0], [0, 0]]}\nadd_norm: true\n",
         ["doc.yaml", "Add & Norm overflows float64 at row 1 ('a')", "variance"]),
    Case("gamma-overflow",
         "tokens: [a, b]\ninputs: [[0, 0, 3], [2, 2, 1]]\nscale: 0\nadd_norm: {gamma: [1.5e308, 1.5e308, 1.5e308]}\n",
         ["doc.yaml", "Add & Norm overflows float64 at row 1 ('a')"]),
    Case("why-stage-overflow", "inputs: [[1e300, 2], [3, 4]]\nscore: additive\n"
         "weights: {w1: [[1e10, 0], [0, 1]], w2: [[1, 0], [0, 1]], v: [1e300, 1e300]}\n",
         ["doc.yaml", "explain --why: stage b", "overflow float64"],
         commands=(["explain", "--why"], ["explain", "--why", "--format", "json"])),
    Case("document-symlink-loop", X, ["loop.yaml", "loop of symbolic links"]),  # (the document is the loop)
    Case("matrix-symlink-loop", "inputs: loop.csv\n", ["inputs", "loop.csv", "loop of symbolic links"]),
    Case("matrix-two-link-loop", "inputs: a.csv\n", ["inputs", "a.csv", "loop of symbolic links"]),
    Case("mask-symlink-loop", X + "mask: loop.csv\n", ["mask", "loop.csv", "loop of symbolic links"]),
    Case("answer-symlink-loop", X + "answer: {weights: loop.csv}\n", ["answer.weights", "loop of symbolic links"],
         commands=(["check"],)),
    Case("matrix-is-directory", "inputs: folder.csv\n", ["inputs", "folder.csv", "is a directory"]),
    Case("npy-is-directory", "inputs: folder.npy\n", ["inputs", "folder.npy", "is a directory"]),
    Case("matrix-dangling-link", "inputs: gone.csv\n", ["inputs", "gone.csv", "no such file", "symbolic link"]),
    Case("matrix-under-a-file", "inputs: m.csv/x.csv\n", ["inputs", "m.csv/x.csv", "no such file", "not a folder"],
         files={"m.csv": "1,2\n"}),
    Case("matrix-name-with-nul", json.dumps({"inputs": "a\u0000.csv"}), ["inputs", "NUL"], name="doc.json",
         commands=JSON_COMMANDS),
    Case("matrix-name-too-long", X + f"weights: {{key: {'w' * 5000}.csv}}\n", ["weights.key", "too long"]),
]


def make_links(folder: Path) -> None:
    for name, target in (("loop.csv", "loop.csv"), ("a.csv", "b.csv"), ("b.csv", "a.csv"), ("gone.csv", "nowhere.csv")):
        (folder / name).symlink_to(target)
    (folder / "folder.csv").mkdir()
    (folder / "folder.npy").mkdir()


@pytest.mark.parametrize("case", INTERNALS, ids=[case.id for case in INTERNALS])
def test_no_internal_error(runner, tmp_path, monkeypatch, case):
    if case.id == "document-symlink-loop":
        monkeypatch.chdir(tmp_path)
        (tmp_path / "loop.yaml").symlink_to("loop.yaml")
        for command in COMMANDS:
            one_clean_error(invoke(runner, [command[0], "loop.yaml", *command[1:]]), case.names)
        return
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "sub" / "dir"
    folder.mkdir(parents=True)
    make_links(folder)
    doc = folder / case.name
    for name, content in case.files.items():
        (doc.parent / name).write_bytes(content if isinstance(content, bytes) else content.encode())
    for command in case.commands:
        text = case.doc if command != ["check"] or "answer:" in case.doc else case.doc + ANSWER
        doc.write_text(text)
        one_clean_error(invoke(runner, [command[0], str(doc), *command[1:]], env=case.env), case.names)


def test_a_loop_of_links_through_the_mask_option(runner, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "doc.yaml").write_text(X)
    (tmp_path / "loop.csv").symlink_to("loop.csv")
    one_clean_error(invoke(runner, ["compute", "doc.yaml", "--mask", "loop.csv"]),
                    ["--mask", "loop.csv", "loop of symbolic links"])
    (tmp_path / "dir.csv").mkdir()
    one_clean_error(invoke(runner, ["compute", "doc.yaml", "--mask", "dir.csv"]),
                    ["--mask", "dir.csv", "is a directory"])


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root reads every folder")
@pytest.mark.parametrize("target", ["doc", "matrix"])
def test_folder_without_search_permission(runner, tmp_path, monkeypatch, target):
    monkeypatch.chdir(tmp_path)
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "m.csv").write_text("1,2\n")
    (locked / "doc.yaml").write_text(X)
    (tmp_path / "doc.yaml").write_text("inputs: locked/m.csv\n")
    locked.chmod(0o600)
    try:
        path = "locked/doc.yaml" if target == "doc" else "doc.yaml"
        for command in COMMANDS[:3]:
            one_clean_error(invoke(runner, [command[0], path, *command[1:]]), ["permission denied"])
    finally:
        locked.chmod(0o700)


@pytest.mark.parametrize("target", ["doc", "matrix"])
def test_permission_denied_is_named_even_as_root(runner, tmp_path, monkeypatch, target):
    """The same, with the refusal simulated: what a user without permission sees (root is never refused)."""
    import pathlib

    real_stat = pathlib.Path.stat

    def stat(self, *args, **kwargs):
        if "locked" in str(self):
            raise PermissionError(13, "Permission denied", str(self))
        return real_stat(self, *args, **kwargs)

    monkeypatch.chdir(tmp_path)
    (tmp_path / "locked").mkdir()
    (tmp_path / "locked" / "m.csv").write_text("1,2\n")
    (tmp_path / "locked" / "doc.yaml").write_text(X)
    (tmp_path / "doc.yaml").write_text("inputs: locked/m.csv\n")
    monkeypatch.setattr(pathlib.Path, "stat", stat)
    path = "locked/doc.yaml" if target == "doc" else "doc.yaml"
    for command in COMMANDS[:3]:
        one_clean_error(invoke(runner, [command[0], path, *command[1:]]), ["locked", "permission denied"])


def test_mistakes_that_overflow_match_nothing(runner, tmp_path):
    """check's mistake models recompute with scale², 1/scale…: beyond float64 they are simply no match."""
    doc = tmp_path / "doc.yaml"
    doc.write_text("inputs: [[1, 2], [1, 2]]\nscale: 1e200\nanswer: {scaled_scores: "
                   "[[1, 2], [3, 4]], weights: [[0.1, 0.9], [0.5, 0.5]]}\n")
    for command in (["check"], ["explain"], ["explain", "--format", "json"]):
        result = invoke(runner, [command[0], str(doc), *command[1:]])
        assert result.exit_code == (1 if command == ["check"] else 0), result.stderr
        assert result.stderr == "", result.stderr
    assert "✗" in invoke(runner, ["check", str(doc)]).stdout


def test_a_mistake_model_still_gives_its_hint(runner, tmp_path):
    doc = tmp_path / "doc.yaml"
    # scale²·S
    doc.write_text("inputs: [[1, 2], [3, 4]]\nscale: 0.5\nanswer: {scaled_scores: [[1.25, 2.75], [2.75, 6.25]]}\n")
    result = invoke(runner, ["check", str(doc)])
    assert result.exit_code == 1 and "the scale was applied twice" in result.stdout, result.stdout


# ---------------------------------------------------------------- options with non-ASCII digits

DIGIT_OPTIONS = [
    (["heatmap", "--head", "²"], ["--head", "'²' is not a head number"]),
    (["heatmap", "--head", "３"], ["--head", "'３' is not a head number"]),
    (["heatmap", "--head", "٣"], ["--head", "'٣' is not a head number"]),
    (["explain", "--query", "²"], ["--query", "'²' is neither a query number"]),
    (["explain", "--query", "٣"], ["--query", "'٣' is neither a query number"]),
    (["explain", "--query", "３"], ["--query", "'３'"]),
    (["explain", "--step", "３"], ["--step", "unknown step '３'"]),
    (["explain", "--step", "²"], ["--step", "unknown step '²'"]),
    (["explain", "--step", "٤"], ["--step", "unknown step '٤'"]),
    (["compute", "--scale", "３"], ["--scale", "'３' is not sqrt, none or a number"]),
    (["compute", "--scale", "1_000"], ["--scale", "'1_000' is not sqrt, none or a number"]),
    (["compute", "--scale", "nan"], ["--scale", "'nan' is not sqrt, none or a number"]),
    (["compute", "--scale", "1e999"], ["--scale", "beyond float64"]),
    (["check", "--tol", "nan"], ["--tol", "must be a finite number ≥ 0, not nan"]),
]


@pytest.mark.parametrize("args, names", DIGIT_OPTIONS, ids=[" ".join(a) for a, _ in DIGIT_OPTIONS])
def test_options_take_ascii_digits_only(runner, tmp_path, args, names):
    doc = tmp_path / "doc.yaml"
    doc.write_text(X + "answer: {weights: [0.3, 0.3, 0.4]}\n")
    one_clean_error(invoke(runner, [args[0], str(doc), *args[1:]]), names)


@pytest.mark.parametrize("args", [["heatmap", "--head", " 1"], ["explain", "--query", "3"], ["explain", "--step", "4"],
                                  ["explain", "--step", " 8 "], ["compute", "--scale", " 0.5"],
                                  ["compute", "--scale", "1e-3"]])
def test_ascii_numbers_in_options_still_work(runner, tmp_path, args):
    doc = tmp_path / "doc.yaml"
    doc.write_text(X)
    result = invoke(runner, [args[0], str(doc), *args[1:]])
    assert result.exit_code == 0, result.stderr


# ---------------------------------------------------------------- 5. one rule for numbers: ASCII digits, no underscores

NUMBERS = [
    Case("csv-full-width", "inputs: m.csv\n", ["m.csv", "line 1, column 1: '１２' is not a number", "digits 0-9"],
         files={"m.csv": "１２,1\n3,4\n"}),
    Case("csv-arabic-indic", "inputs: m.csv\n", ["m.csv", "line 2, column 2: '٣' is not a number"],
         files={"m.csv": "1,2\n3,٣\n"}),
    Case("txt-devanagari", "inputs: m.txt\n", ["m.txt", "line 1, column 2: '१' is not a number"],
         files={"m.txt": "1 १\n"}),
    Case("tsv-superscript", "inputs: m.tsv\n", ["m.tsv", "line 1, column 1: '²' is not a number"],
         files={"m.tsv": "²\t1\n"}),
    Case("csv-underscore", "inputs: m.csv\n", ["m.csv", "line 1, column 2: '1_000' is not a number", "underscores"],
         files={"m.csv": "1,1_000\n"}),
    Case("mask-full-width", X + "mask: m.csv\n", ["m.csv", "line 1, column 1", "'１'"],
         files={"m.csv": "１,1,1\n1,1,1\n1,1,1\n"}),
    Case("inline-full-width", "inputs: [[１２, 1]]\n", ["inputs", "row 1, column 1", "'１２' is not a number"]),
    Case("inline-underscore", "inputs: [[1_000, 1]]\n", ["inputs", "row 1, column 1", "'1_000' is not a number"]),
    Case("json-string-number", '{"inputs": [["12", 1]]}', ["inputs", "row 1, column 1", "'12' is not a number"],
         name="doc.json", commands=JSON_COMMANDS),
    Case("scale-underscore", X + "scale: 1_000\n", ["scale", "'1_000' is not sqrt, none or a number"]),
    Case("scale-quoted-underscore", X + "scale: '1_000'\n", ["scale", "'1_000'"]),
    Case("scale-full-width", X + "scale: '１'\n", ["scale", "'１' is not sqrt, none or a number"]),
    Case("scale-arabic", X + "scale: ٣\n", ["scale", "'٣'"]),
    Case("eps-string", X + "add_norm: {eps: '1e-5'}\n", ["add_norm.eps", "the string '1e-5'"]),
    Case("std-underscore", "inputs: {random: normal, std: 1_0, shape: [2, 2]}\n", ["std", "'1_0'"]),
]


@pytest.mark.parametrize("case", NUMBERS, ids=[case.id for case in NUMBERS])
def test_numbers_are_ascii_everywhere(runner, tmp_path, monkeypatch, case):
    run_case(runner, tmp_path, monkeypatch, case)


@pytest.mark.parametrize("text, number",
                         [("12", 12.0), (" -1.5e3 ", -1500.0), (".5", 0.5), ("5.", 5.0), ("+2E-2", 0.02),
                                          ("1" * 400, float("inf"))])
def test_number_in_text_reads_json_and_yaml_numbers(text, number):
    assert number_in_text(text) == number


@pytest.mark.parametrize("text", ["１２", "١٢", "²", "1_000", "nan", "inf", "infinity", "0x10", "1e", "", " ", "1 2",
                                  "--1", "1,5"])
def test_number_in_text_refuses_the_rest(text):
    assert number_in_text(text) is None


def test_the_same_numbers_read_the_same_in_every_form(runner, tmp_path):
    """ASCII numbers: inline, CSV, TXT and the scale agree (the rule refuses nothing that was right)."""
    (tmp_path / "m.csv").write_text("1e-3, 2E+2\n-1.5e1,.5\n")
    (tmp_path / "m.txt").write_text("1e-3 2E+2\n\t-1.5e1 .5\n")
    for source in ("[[1e-3, 2E+2], [-1.5e1, .5]]", "m.csv", "m.txt"):
        (tmp_path / "doc.yaml").write_text(f"inputs: {source}\nscale: '0.25'\n")
        result = invoke(runner, ["compute", str(tmp_path / "doc.yaml"), "--format", "json", "--only", "inputs"])
        assert result.exit_code == 0, result.stderr
        data = json.loads(result.stdout)
        assert data["inputs"] == [[0.001, 200.0], [-15.0, 0.5]] and data["scale"] == 0.25


# ---------------------------------------------------------------- the option parser's own messages (subprocess: main())


@pytest.mark.slow
@pytest.mark.parametrize("args", [["compute", "x.yaml", "--format", LONG], ["compute", "x.yaml", f"--{LONG}"], [LONG],
                                  ["check", "x.yaml", "--tol", LONG], ["compute", "x.yaml", "--precision", "9" * 5000]])
def test_option_parser_messages_are_shortened(args):
    result = subprocess.run([sys.executable, "-m", "attncli", *args], capture_output=True, text=True, timeout=60,
                            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    assert result.returncode == 2 and result.stdout == "", result.stderr
    assert result.stderr.startswith("Error: ") and result.stderr.count("\n") == 1
    assert "characters)" in result.stderr and len(result.stderr) < 400, result.stderr


@pytest.mark.slow
def test_no_runtime_warning_on_stderr_of_a_real_run(tmp_path):
    """The positional overflow printed numpy's RuntimeWarning before the error: checked in a real process."""
    doc = tmp_path / "doc.yaml"
    doc.write_text("inputs: [[1e308, 1e308], [1, 2]]\npositional: [[1e308, 1e308], [0, 0]]\n")
    for command in ("compute", "heatmap", "explain"):
        result = subprocess.run([sys.executable, "-m", "attncli", command, str(doc)], capture_output=True, text=True,
                                timeout=60, env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
        assert result.returncode == 2 and result.stdout == ""
        assert result.stderr.startswith("Error: ") and result.stderr.count("\n") == 1, result.stderr
        assert "RuntimeWarning" not in result.stderr


@pytest.mark.slow
def test_init_refuses_bytes_that_are_not_utf8(tmp_path):
    result = subprocess.run([sys.executable, "-m", "attncli", "init", "--tokens", os.fsdecode(b"a\xff b")],
                            capture_output=True,
                            timeout=60, env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    assert result.returncode == 2 and result.stdout == b""
    assert result.stderr.startswith(b"Error: --tokens: is not valid UTF-8") and result.stderr.count(b"\n") == 1


@pytest.mark.parametrize("args, names", [
    (["--n", "99999999999999999999"], ["--n", "too large to generate"]),  # 10^20 labels would take all the memory
    (["--context", "9" * 30], ["--context", "(30 digits)×4", "too large to generate"]),
    (["--heads", "9" * 30], ["--heads", "(30 digits) heads"]),
    (["--seed", "9" * 30], ["--seed", "(30 digits) is too large"]),
    (["--d-k", "9" * 30], ["--d-model", "4×9999999999… (30 digits)"]),
])
def test_init_refuses_huge_sizes_at_once(runner, args, names):
    message = one_clean_error(invoke(runner, ["init", *args]), names)
    assert len(message) < 200, message
