"""Paste formats and errors of today's attention, found by trying it as a user (issue 15's follow-ups)."""

from __future__ import annotations

import csv
import io

import numpy as np
import pytest
from conftest import EXAMPLES

import attncli
from attncli.cli import app

LLAMA = str(EXAMPLES / "llama_style.yaml")


def rows_of(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


@pytest.mark.parametrize("head", range(1, 9))
@pytest.mark.parametrize("key", ["keys", "values", "keys_rotated"])
def test_csv_of_one_query_head_gives_the_key_value_head_it_reads(runner, key, head):
    result = runner.invoke(app, ["compute", LLAMA, "-f", "csv", "--only", key, "--head", str(head)])
    assert result.exit_code == 0, result.stderr
    trace = attncli.compute(LLAMA)
    expected = getattr(trace, key)[(head - 1) // 4]  # 8 query heads share 2 key/value heads: 1–4 → 1, 5–8 → 2
    body = rows_of(result.stdout)[1:]
    assert np.array_equal(np.array([[float(x) for x in row[1:]] for row in body]), expected)


@pytest.mark.parametrize("key, heads, column", [("queries_rotated", 8, "head"), ("keys_rotated", 2, "kv_head"),
                                                ("keys", 2, "kv_head")])
def test_csv_of_every_head_says_which_head_each_row_is(runner, key, heads, column):
    result = runner.invoke(app, ["compute", LLAMA, "-f", "csv", "--only", key])
    assert result.exit_code == 0, result.stderr
    table = rows_of(result.stdout)
    assert table[0][0] == column
    assert [int(row[0]) for row in table[1:]] == [h for h in range(1, heads + 1) for _ in range(6)]
    values = np.array([[float(x) for x in row[2:]] for row in table[1:]])
    assert np.array_equal(values, getattr(attncli.compute(LLAMA), key).reshape(heads * 6, -1))


def test_latex_primes_a_braced_superscript(runner):
    result = runner.invoke(app, ["compute", LLAMA, "-f", "latex", "--only", "queries_rotated", "--only",
                                 "keys_rotated"])
    assert result.exit_code == 0, result.stderr
    assert "{Q^{(6)}}' = \\operatorname{rope}(Q^{(6)})" in result.stdout
    assert "{K^{[2]}}' = \\operatorname{rope}(K^{[2]})" in result.stdout
    assert "}^{(6)}'" not in result.stdout and ")}' " not in result.stdout.replace("}}' ", "")  # no double superscript


@pytest.mark.parametrize("norm, message", [
    ({"kind": "rms"}, "normalized inputs overflow float64 at row 1 ('x1'): the mean square of the row"),
    ({"kind": "layer"}, "normalized inputs overflow float64 at row 1 ('x1'): the variance of the row"),
])
def test_a_norm_whose_row_overflows_is_an_error_not_zeros(runner, tmp_path, norm, message):
    path = tmp_path / "doc.json"
    path.write_text(attncli_json({"inputs": [[1e308, -1e308], [1, 2]], "pre_norm": norm}))
    result = runner.invoke(app, ["compute", str(path), "-f", "json"])
    assert result.exit_code == 2 and result.stdout == ""
    assert message in result.stderr and result.stderr.count("\n") == 1


def test_rope_on_odd_heads_names_the_width_not_a_key_nobody_wrote(runner, tmp_path):
    path = tmp_path / "doc.json"
    path.write_text(attncli_json({"inputs": [[1, 2, 3]], "rope": True}))
    result = runner.invoke(app, ["compute", str(path)])
    assert result.exit_code == 2
    assert "rope: turns pairs of dimensions, but each head has an odd width (d_k = 3)" in result.stderr
    path.write_text(attncli_json({"inputs": [[1, 2, 3]], "rope": {"dims": 2}}))
    assert runner.invoke(app, ["compute", str(path)]).exit_code == 0


def attncli_json(doc: dict) -> str:
    import json

    return json.dumps(doc)
