"""``check``'s ``query:`` picks the row of every per-token quantity: keys, values and the latent too (self-attention).

The expected rows are worked by hand from the documents' matrices (written out below), not read from attncli.
"""

from __future__ import annotations

import yaml

from attncli.cli import app

HOMEWORK = {"tokens": ["Input 1", "Input 2", "Input 3"], "inputs": [[1, 0, 1, 0], [0, 2, 0, 2], [1, 1, 1, 1]],
            "weights": {"query": [[1, 0, 1], [1, 0, 0], [0, 0, 1], [0, 1, 1]],
                        "key": [[0, 0, 1], [1, 1, 0], [0, 1, 0], [1, 1, 0]],
                        "value": [[0, 2, 0], [0, 3, 0], [1, 0, 3], [1, 1, 0]]}, "scale": "none"}
# by hand: token 1 = [1, 0, 1, 0] gives k = [0, 1, 1], v = [1, 2, 3]; token 3 = [1, 1, 1, 1] gives k = [2, 3, 1],
# v = [2, 6, 3]; token 2 = [0, 2, 0, 2] gives k = [4, 4, 0]


def checked(runner, tmp_path, doc: dict, answer: dict, *args, env: dict | None = None):
    path = tmp_path / "hw.yaml"
    path.write_text(yaml.safe_dump({**doc, "answer": answer}, allow_unicode=True))
    return runner.invoke(app, ["check", str(path), *args], env=env)


def test_query_picks_the_keys_and_values_row(runner, tmp_path):
    result = checked(runner, tmp_path, HOMEWORK, {"query": 3, "keys": [0, 1, 1], "values": [1, 2, 3]})
    assert result.exit_code == 1, result.output
    text = " ".join(result.output.split())
    assert "keys wrong at column 1: expected 2, yours 0" in text
    assert "values wrong at column 1: expected 2, yours 1" in text
    assert "these are the numbers of token 1 (“Input 1”), not of token 3" in text
    assert "without query:" not in text
    right = checked(runner, tmp_path, HOMEWORK, {"query": 3, "keys": [2, 3, 1], "values": [2, 6, 3]})
    assert right.exit_code == 0, right.output
    assert "without query:" not in right.output
    whole = checked(runner, tmp_path, HOMEWORK, {"query": 3, "keys": [[0, 1, 1], [4, 4, 0], [2, 3, 1]]})
    assert whole.exit_code == 0, whole.output  # every token's keys, as a query's scores need: compared whole
    unnamed = checked(runner, tmp_path, HOMEWORK, {"keys": [0, 1, 1]})  # no query: any row, said so
    assert unnamed.exit_code == 0 and "without query:" in unnamed.output


def test_query_picks_the_latent_row(runner, tmp_path):
    """examples/latent.yaml with γ = [2, 0.5]: c_raw of 'tea' is [3, 1], rms √5, so c_KV = [6/√5, 0.5/√5]
    = [2.6833, 0.2236]; 'like' has c_raw [1, −1], rms 1: [2, −0.5], which is not token 3's."""
    doc = yaml.safe_load(open("examples/latent.yaml"))
    doc["latent"]["kv_norm"]["gamma"] = [2, 0.5]
    wrong = checked(runner, tmp_path, doc, {"query": 3, "latent_kv": [2, -0.5]})
    right = checked(runner, tmp_path, doc, {"query": 3, "latent_kv": [2.6833, 0.2236]})
    assert wrong.exit_code == 1 and "expected 2.68328, yours 2" in wrong.output
    assert "without query:" not in wrong.output
    assert right.exit_code == 0, right.output


def test_query_with_the_context_keys_says_why_every_row(runner, tmp_path):
    """Cross-attention: the keys are the context's tokens, so query: cannot pick their row; the note says so.
    Context token 我 = [1, 0, 0, 1, 0]: k = [1, 0, 0] + [0, 1, 0] = [1, 1, 0]."""
    doc = yaml.safe_load(open("examples/cross_attention.yaml"))
    result = checked(runner, tmp_path, doc, {"query": 2, "keys": [1, 1, 0]})
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "without query:" not in text and "the context's tokens" in text and "row 1 ('我')" in text


# two heads of identity projections, scale 1/√2: head 1 reads numbers 1–2, head 2 numbers 3–4. "cat": head 1's
# q = [1, 1] scores the keys [1, 0], [1, 1], [0, 1] as [1, 2, 1]/√2, so a = [e, e², e]/Σ with e = e^(1/√2): 0.248255
# at "the"; head 2's q = [1, 0] scores every key ([1, 0], [1, 0], [1, 1]) 1/√2: a = [1/3, 1/3, 1/3]
TWO_HEADS = {"tokens": "the cat sat", "inputs": [[1, 0, 1, 0], [1, 1, 1, 0], [0, 1, 1, 1]], "heads": 2}


def test_query_with_one_row_of_several_heads_names_the_head(runner, tmp_path):
    """Self-attention, two heads, query: without head:: the row is compared with the query's row of each head, and
    the note and the cell name the head (not "the context's tokens", not row 1 for head 1)."""
    e = 2.718281828459045 ** (1 / 2 ** 0.5)
    right = checked(runner, tmp_path, TWO_HEADS, {"query": 2, "weights": [1 / 3, 1 / 3, 1 / 3]})
    assert right.exit_code == 0, right.output
    text = " ".join(right.output.split())
    assert ("weights: one row given without head:, so it was compared with the query's row in every head: it is "
            "head 2, row 2 ('cat').") in text and "context" not in text
    wrong = checked(runner, tmp_path, TWO_HEADS, {"query": 2, "weights": [0.5, 0.5, 0]})
    text = " ".join(wrong.output.split())
    assert wrong.exit_code == 1 and "context" not in text
    assert f"wrong at head 1, row 2 ('cat'), column 1: expected {e / (2 * e + e * e):.6f}, yours 0.5" in text
    assert "it matches none, the closest is head 1, row 2 ('cat')." in text
    zh = checked(runner, tmp_path, TWO_HEADS, {"query": 2, "weights": [1 / 3, 1 / 3, 1 / 3]}, "--lang", "zh")
    assert "所以与每个头里这个查询的那一行都比较过，它就是第2个头，第2行（'cat'）。" in "".join(zh.output.split())


def test_one_heads_answer_copied_from_computes_json_keeps_its_head_axis(runner, tmp_path):
    """compute's JSON of a one-head document writes K as 1 × n × d_k: an answer in that shape is compared (the keys
    worked by hand above), and a wrong cell is still found in it."""
    keys = [[[0, 1, 1], [4, 4, 0], [2, 3, 1]]]
    assert checked(runner, tmp_path, HOMEWORK, {"keys": keys}).exit_code == 0
    keys[0][1][2] = 5
    wrong = checked(runner, tmp_path, HOMEWORK, {"keys": keys}, env={"COLUMNS": "200"})
    assert wrong.exit_code == 1 and "row 2 ('Input 2'), column 3: expected 0, yours 5" in wrong.stdout
