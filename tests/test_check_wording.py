"""``check``'s text as a learner reads it: wrapped lines without trailing spaces, a value kept with its word, the
sentences' grammar, and the Chinese pointer naming a step as explain's title does."""

from __future__ import annotations

import re

import numpy as np
import yaml
from test_check_norms import EPS, POST, POST_BETA, POST_GAMMA, X, norm, rounded

from attncli.cli import app


def post_norm_answer(tmp_path, wrong):
    path = tmp_path / "pn.yaml"
    path.write_text(yaml.safe_dump({**POST, "answer": {"query": 2, "normalized_output": rounded(wrong[1]),
                                                       "residual": rounded(X[1] + wrong[1])}}))
    return path


def output_y():
    from test_check_norms import W_K, W_Q, W_V, softmax

    return softmax((X @ W_Q) @ (X @ W_K).T / 2.0) @ (X @ W_V)


def test_wrapped_lines_have_no_trailing_spaces_and_keep_values_with_their_words(runner, tmp_path, monkeypatch):
    post_norm_answer(tmp_path, norm(output_y(), "layer", POST_BETA, POST_GAMMA, EPS))
    monkeypatch.chdir(tmp_path)  # a short path: the closing command fits the narrowest line whole
    for columns in ("60", "72", "80"):
        result = runner.invoke(app, ["check", "pn.yaml"], env={"COLUMNS": columns})
        assert result.exit_code == 1, result.output
        lines = result.stdout.splitlines()
        assert all(line == line.rstrip() for line in lines), lines
        assert not any(re.match(r"\s*-?\d", line) for line in lines), lines  # no value alone at a line's start
        assert not any(line.rstrip().endswith(("yours", "expected")) for line in lines), lines
        assert all(len(line) <= int(columns) for line in lines), lines


def test_carried_sentences_read_right(runner, tmp_path):
    """normalized_output done wrong with no known slip (every γ·x̂ + β cell + 1), residual from it correctly."""
    y = output_y()
    wrong = norm(y, "layer", POST_GAMMA, POST_BETA, EPS) + np.array([1.0, 0, 0, 0])
    path = post_norm_answer(tmp_path, wrong)
    text = " ".join(runner.invoke(app, ["check", str(path)]).stdout.split())
    assert "this is what follows from your own normalized_output when the rest is done right: fixing " \
           "normalized_output is enough" in text
    assert " give " not in text and "they come right" not in text


def test_chinese_pointer_names_the_step_as_explain_does(runner, tmp_path):
    path = post_norm_answer(tmp_path, norm(output_y(), "layer", POST_BETA, POST_GAMMA, EPS))
    zh = " ".join(runner.invoke(app, ["check", str(path), "--lang", "zh"], env={"COLUMNS": "200"}).stdout.split())
    assert "步骤 残差" in zh and "对照你的数字重读附加步骤“残差”：" in zh and "第 residual 步" not in zh
    title = runner.invoke(app, ["explain", str(path), "--step", "residual", "--lang", "zh"]).stdout.splitlines()[0]
    assert title.startswith("附加步骤")
    en = " ".join(runner.invoke(app, ["check", str(path)], env={"COLUMNS": "200"}).stdout.split())
    assert "Read step residual with your numbers beside it:" in en


def test_the_explain_command_too_long_for_a_line_continues_with_a_backslash(runner, tmp_path, monkeypatch):
    """The suggested command, too wide for 80 columns with its path, breaks between words with `` \\`` line ends
    and no trailing space: the lines pasted together into a shell are the one command."""
    import shutil
    from pathlib import Path

    from conftest import EXAMPLES

    monkeypatch.chdir(tmp_path)  # (a path named relative to it: 85 characters of command, each word under 80)
    folder = Path("a-long-folder-name-" * 2)
    folder.mkdir()
    doc = folder / "homework.yaml"
    shutil.copy(EXAMPLES / "check" / "homework.yaml", doc)
    result = runner.invoke(app, ["check", str(doc)], env={"COLUMNS": "80", "NO_COLOR": "1"})
    lines = result.stdout.splitlines()
    assert result.exit_code == 1 and all(line == line.rstrip() for line in lines)
    start = next(i for i, line in enumerate(lines) if line.strip().startswith("attncli explain"))
    end = next(i for i in range(start, len(lines)) if not lines[i].endswith(" \\"))
    assert end > start and all(len(line) <= 80 for line in lines[start:end + 1])
    pasted = " ".join(line.strip().removesuffix(" \\").strip() for line in lines[start:end + 1])
    assert pasted == f"attncli explain {doc} --step 7 --query 1"
