"""attncli extract --text-file FILE (and - for standard input): the sentence from a file, past the 128 KiB that
Linux lets one command-line argument hold (issue 26).

The file is read as a document is: a regular file (or a pipe), at most 1 MiB, UTF-8; each problem is one line
naming the file, before the model is loaded (the model folders of the refusals below do not even exist).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_extract import folders, refused  # noqa: F401  (fixtures; hf is conftest's)
from tiny_models import TEXT

from attncli.cli import app


def extract_with(runner, folder, out: Path, *args: str, stdin: str | None = None):
    return runner.invoke(app, ["extract", str(folder), "--layer", "0", "-o", str(out), *args], input=stdin)


def test_a_sentence_from_a_file_or_standard_input_is_the_sentence_given_as_text(runner, hf, folders, tmp_path):  # noqa: F811
    documents = []
    for name, args, stdin in (("text", ["--text", TEXT], None), ("file", ["--text-file", "{tmp}/sentence.txt"], None),
                              ("stdin", ["--text-file", "-"], TEXT + "\r\n")):
        # its final line break is not the sentence's
        (tmp_path / "sentence.txt").write_text(TEXT + "\n", encoding="utf-8")
        out = tmp_path / name / "layer.yaml"
        out.parent.mkdir()
        result = extract_with(runner, folders["bert"], out, *[a.format(tmp=tmp_path) for a in args], stdin=stdin)
        assert result.exit_code == 0, result.stderr
        documents.append((out.read_bytes(), out.with_suffix(".npy").read_bytes()))
    assert documents[0] == documents[1] == documents[2]


def test_a_long_sentence_from_a_file_is_refused_for_its_tokens_naming_the_file(runner, hf, folders, tmp_path):  # noqa: F811
    story = tmp_path / "story.txt"
    story.write_text("the street " * 20, encoding="utf-8")
    out = tmp_path / "layer.yaml"
    refused(extract_with(runner, folders["bert"], out, "--text-file", str(story)), out,
            f"{story}: is 42 tokens long, more than the 24 positions")


CASES = {  # what is in the file (bytes, or a function making it), and the words of the one line
    "missing": (None, ["sentence.txt: no such file"]),
    "folder": (lambda path: path.mkdir(), ["sentence.txt: is a directory"]),
    "invalid-utf8": (b"caf\xe9 au lait",
                     ["sentence.txt: invalid UTF-8 at byte 3 (line 1): the file must be UTF-8 text"]),
    "binary": (b"\x00\x01\x02", ["sentence.txt: is binary, not UTF-8 text"]),
    "too-large": (b"word " * ((1 << 20) // 5 + 1),
                  ["sentence.txt: text is larger than 1 MiB; no model takes that many"]),
    "device": (lambda path: path.symlink_to("/dev/zero"), ["sentence.txt: is not a regular file (a device or socket)"]),
}


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_a_text_file_that_cannot_be_used_is_one_line_before_the_model(runner, tmp_path, case):
    content, words = CASES[case]
    path = tmp_path / "sentence.txt"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        content(path)
    out = tmp_path / "layer.yaml"
    refused(extract_with(runner, tmp_path / "no-model", out, "--text-file", str(path)), out, *words)


@pytest.mark.parametrize("args, words", [
    ([], ["--text: is missing: give the sentence with --text TEXT, or --text-file FILE (- for standard input)"]),
    (["--text", "hi", "--text-file", "s.txt"], ["--text-file: and --text both give the sentence; give one of them"]),
    (["--text-file", ""], ["the text's file name: is empty; give a file name, or - for standard input"]),
])
def test_the_sentence_options_are_checked_first(runner, tmp_path, args, words):
    out = tmp_path / "layer.yaml"
    refused(extract_with(runner, tmp_path / "no-model", out, *args), out, *words)


def test_an_empty_text_file_is_an_empty_sentence_naming_the_file(runner, tmp_path):
    """(The empty sentence is refused before the model is loaded, as --text "" is.)"""
    path = tmp_path / "empty.txt"
    path.write_text("\n")
    out = tmp_path / "layer.yaml"
    refused(extract_with(runner, tmp_path / "no-model", out, "--text-file", str(path)), out,
            f"{path}: is empty; give the sentence to run the model on")
