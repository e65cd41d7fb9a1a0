"""Option errors come before any matrix is read or attention computed (issue 26).

They used to come after the whole attention: a large document paid for it, and the error came after unrelated
warnings. Now an option alone is checked before the document is read; an option against what the document says
(its keys, its heads, its tokens) right after it is parsed; an option against a matrix's shape before the attention.
The documents here name a matrix file that does not exist: reading it would be an error of its own, so the
option's error proves that nothing was read.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_checkpoints import assert_refused

from attncli.cli import app

UNREADABLE = "inputs: {random: normal, seed: 0, shape: [4, 8]}\nheads: 2\nweights: {query: missing.npy}\n"
CASES = [
    (["compute", "--head", "3"], "--head 3 is out of range: this document has heads 1 and 2"),
    (["compute", "--head", "0"], "--head 0 is out of range: heads count from 1"),
    (["compute", "-o", "{tmp}/x.npy"], "--output: a .npy file holds one array: choose it with --only"),
    (["compute", "--only", "queries_rotated"], "--only: 'queries_rotated' needs rope: in the document"),
    (["compute", "--only", "context", "-o", "{tmp}/c.npz"], "--only: 'context' needs a context in the document"),
    (["compute", "--only", "output", "--format", "csv", "--head", "1"],
     "--head: 'output' has no heads; leave out --head"),
    (["compute", "--scale", "abc"], "--scale: 'abc' is not sqrt, none or a number"),
    (["explain", "--scale", "1e999"], "--scale: '1e999' is beyond float64"),
    (["heatmap", "--head", "0"], "--head 0 is out of range: heads count from 1"),
    (["heatmap", "--head", "3"], "--head 3 is out of range: this document has heads 1 and 2"),
    (["heatmap", "--of", "score_bias"], "--of: needs score_bias: in the document"),
    (["explain", "--step", "9"], "--step: 9 is out of range: the steps are 1 to 8"),
    (["explain", "--step", "rope"], "--step: 'rope' needs rope: in the document; the steps here are 1 to 8 or all"),
    (["explain", "--query", "5"], "--query: 5 is out of range: this document has queries 1 to 4"),
    (["explain", "--query", "cat"], "--query: 'cat' is neither a query number (1 to 4) nor a token (x1, x2, x3, x4)"),
    (["explain", "--head", "3"], "--head 3 is out of range: this document has heads 1 and 2"),
]


@pytest.mark.parametrize("args, message", CASES)
def test_an_option_error_comes_before_any_matrix_is_read(runner, tmp_path, args, message):
    doc = tmp_path / "doc.yaml"
    doc.write_text(UNREADABLE)
    argv = [args[0], str(doc), *(a.format(tmp=tmp_path) for a in args[1:])]
    assert_refused(runner.invoke(app, argv), message)
    assert [p.name for p in tmp_path.iterdir()] == ["doc.yaml"]


ALONE = ("count from 1", "holds one array", "has no heads", "9 is out of range", "--scale")


@pytest.mark.parametrize("args, message", [case for case in CASES if any(words in case[1] for words in ALONE)])
def test_an_option_alone_is_refused_before_the_document_is_read(runner, tmp_path, args, message):
    argv = [args[0], str(tmp_path / "none.yaml"), *(a.format(tmp=tmp_path) for a in args[1:])]
    assert_refused(runner.invoke(app, argv), message)


def test_an_option_against_a_shape_only_a_file_tells_comes_before_the_attention(runner, tmp_path, monkeypatch):
    """Heads from a 3-D weight's file: checked on the built Spec, before the attention (never computed here)."""
    import attncli.plan as plan

    for name in ("compute_within", "compute_in_full"):  # (compute's; explain's, heatmap's)
        monkeypatch.setattr(plan, name, lambda *a, **k: pytest.fail("the attention was computed"))
    np.save(tmp_path / "wq.npy", np.ones((2, 8, 4)))
    doc = tmp_path / "doc.yaml"
    doc.write_text("inputs: inputs.csv\nweights: {query: wq.npy, key: wq.npy, value: wq.npy}\n")
    (tmp_path / "inputs.csv").write_text("\n".join(",".join(["1"] * 8) for _ in range(4)) + "\n")
    for command in ("compute", "heatmap", "explain"):
        assert_refused(runner.invoke(app, [command, str(doc), "--head", "3"]),
                       "--head 3 is out of range: this document has heads 1 and 2")
    assert_refused(runner.invoke(app, ["explain", str(doc), "--query", "5"]),
                   "--query: 5 is out of range: this document has queries 1 to 4")


def test_no_warning_comes_before_an_option_error(runner, tmp_path):
    """A query no key may attend to is warned about after the attention; the option's error comes first, alone."""
    doc = tmp_path / "doc.yaml"
    doc.write_text("inputs: [[1, 0], [0, 1]]\nmask: [[0, 0], [1, 1]]\n")
    assert "Warning:" in runner.invoke(app, ["compute", str(doc)]).stderr
    for args in (["compute", "--head", "2"], ["heatmap", "--head", "2"], ["explain", "--step", "rope"],
                 ["compute", "-o", "x.npy"]):
        assert_refused(runner.invoke(app, [args[0], str(doc), *args[1:]]), "Error: ")
