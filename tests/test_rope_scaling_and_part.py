"""``rope.part``, ``style: interleaved_halves``, ``rope.attention_factor`` and ``rope.scaling`` without PyTorch.

A loop over tokens, heads and pairs written here (the pairs turned one by one with math.cos and math.sin), the
streamed path against the full one, the scores' a², the views (tables, --only, CSV) and every refused value.
The comparisons with Hugging Face are in test_rope_scaling_torch.py.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import attncli
from attncli.cli import app
from attncli.core.pipeline import attend
from attncli.core.positions import Rope
from attncli.core.stream import attend_streamed


def document(seed: int = 0, **rope) -> dict:
    rng = np.random.default_rng(seed)
    n, d_model, heads, d_k = 5, 8, 2, 6
    return {"inputs": rng.normal(size=(n, d_model)).tolist(), "heads": heads, "mask": "causal",
            "positions": [0, 3, 7, 20, 41],
            "weights": {name: rng.normal(size=(d_model, heads * d_k)).tolist() for name in ("query", "key", "value")},
            "rope": rope or True}


def loop_rotation(x: list[float], p: float, f: list[float], style: str, part: str, a: float) -> list[float]:
    """One head's row turned pair by pair: pair i is (x[2i], x[2i+1]) or (x[i], x[i + half]) of the turned part."""
    dims, d = 2 * len(f), len(x)
    lo = 0 if part == "first" else d - dims
    out = list(x)
    for i, fi in enumerate(f):
        read = (lo + i, lo + i + len(f)) if style == "half" else (lo + 2 * i, lo + 2 * i + 1)
        write = (lo + 2 * i, lo + 2 * i + 1) if style == "interleaved" else (lo + i, lo + i + len(f))
        c, s = a * math.cos(p * fi), a * math.sin(p * fi)
        u, v = x[read[0]], x[read[1]]
        out[write[0]], out[write[1]] = u * c - v * s, v * c + u * s
    return out


CASES = [{"dims": 4, "part": "last", "style": "interleaved_halves", "attention_factor": 1.3},
         {"dims": 4, "part": "last", "style": "half"},
         {"dims": 4, "part": "first", "style": "interleaved", "attention_factor": 0.7},
         {"style": "interleaved_halves",
          "scaling": {"type": "yarn", "factor": 8, "original_max_position_embeddings": 16}},
         {"dims": 2, "part": "last",
          "scaling": {"type": "longrope", "factor": 4, "original_max_position_embeddings": 16, "short_factor": [1.5],
                      "long_factor": [3.0]}}]


@pytest.mark.parametrize("rope", CASES)
def test_rotation_equals_a_loop_over_pairs(rope):
    doc = document(1, **rope)
    trace = attncli.compute(doc)
    f, a = trace.rope_frequencies.tolist(), float(trace.rope_attention_factor)
    for name, given, turned in (("queries", trace.queries, trace.queries_rotated),
                                ("keys", trace.keys, trace.keys_rotated)):
        for h in range(given.shape[0]):
            for i, p in enumerate(doc["positions"]):
                want = loop_rotation(given[h, i].tolist(), p, f, rope.get("style", "half"), rope.get("part", "first"),
                                     a)
                np.testing.assert_allclose(turned[h, i], want, rtol=1e-13, atol=1e-13, err_msg=name)


def test_interleaved_halves_scores_equal_interleaved():
    halves = attncli.compute(document(2, style="interleaved_halves", dims=4, part="last"))
    pairs = attncli.compute(document(2, style="interleaved", dims=4, part="last"))
    np.testing.assert_allclose(halves.scores, pairs.scores, rtol=1e-12, atol=1e-12)
    assert not np.allclose(halves.queries_rotated, pairs.queries_rotated)


def test_the_attention_factor_multiplies_the_scores_by_its_square():
    plain = attncli.compute(document(3))
    scaled = attncli.compute(document(3, attention_factor=1.5))
    np.testing.assert_allclose(scaled.scores, 1.5 ** 2 * plain.scores, rtol=1e-12, atol=1e-12)
    assert float(plain.rope_attention_factor) == 1.0


def test_a_given_attention_factor_wins_over_the_derived_one():
    scaling = {"type": "yarn", "factor": 4, "original_max_position_embeddings": 16}
    derived = attncli.compute(document(4, scaling=scaling))
    given = attncli.compute(document(4, scaling=scaling, attention_factor=1.0))
    assert float(derived.rope_attention_factor) == pytest.approx(0.1 * math.log(4) + 1, rel=1e-15)
    assert float(given.rope_attention_factor) == 1.0
    np.testing.assert_array_equal(derived.rope_frequencies, given.rope_frequencies)


@pytest.mark.parametrize("rope", CASES)
def test_streamed_equals_full(rope):
    spec = attncli.load(document(5, **rope))
    full, streamed = attend(spec), attend_streamed(spec, threads=2)
    for key in ("queries_rotated", "keys_rotated", "rope_frequencies", "rope_attention_factor", "head_outputs",
                "output"):
        np.testing.assert_allclose(getattr(streamed, key), getattr(full, key), rtol=1e-12, atol=1e-12)


def test_json_tables_and_only(runner, tmp_path):
    path = tmp_path / "rope.json"
    path.write_text(json.dumps(document(6, scaling={"type": "linear", "factor": 2}, dims=4)))
    data = json.loads(runner.invoke(app, ["compute", str(path), "-f", "json"]).stdout)
    assert data["rope_frequencies"] == [0.5, 0.005] and data["rope_attention_factor"] == 1.0
    only = runner.invoke(app, ["compute", str(path), "-f", "json", "--only", "rope_attention_factor"])
    only = json.loads(only.stdout)
    assert only["rope_attention_factor"] == 1.0 and "queries" not in only
    table = runner.invoke(app, ["compute", str(path)], env={"COLUMNS": "160"}).stdout
    assert "Rotary frequencies  f_i = linear(10000^(−2i/4), factor 2)" in table
    assert "linear scaling ×2" in table
    csv = runner.invoke(app, ["compute", str(path), "-f", "csv", "--only", "f"]).stdout
    assert "0.5" in csv and "0.005" in csv


def test_without_scaling_the_plain_rotation_is_unchanged():
    plain = attncli.compute(document(7, dims=4))
    again = attncli.compute(document(7, dims=4, part="first", attention_factor=1))
    np.testing.assert_array_equal(plain.queries_rotated, again.queries_rotated)
    np.testing.assert_array_equal(plain.rope_frequencies, 1.0 / 10000.0 ** (np.arange(0, 4, 2) / 4))


YARN = {"type": "yarn", "factor": 4, "original_max_position_embeddings": 16}
BAD = [  # (rope, the key the message names, words in it)
    ({"scaling": {"factor": 2}}, "rope.scaling.type", "is required"),
    ({"scaling": {"type": "ntk", "factor": 2}}, "rope.scaling.type", "not one of linear, dynamic"),
    ({"scaling": {"type": "yarn", "original_max_position_embeddings": 16}}, "rope.scaling.factor", "is required"),
    ({"scaling": {"type": "yarn", "factor": 4}}, "rope.scaling.original_max_position_embeddings", "required by"),
    ({"scaling": {**YARN, "factor": -1}}, "rope.scaling.factor", "positive"),
    ({"scaling": {**YARN, "low_freq_factor": 1}}, "rope.scaling.low_freq_factor", "llama3's"),
    ({"scaling": {"type": "linear", "factor": 2, "original_max_position_embeddings": 8}},
     "rope.scaling.original_max_position_embeddings", "not used by type linear"),
    ({"scaling": {**YARN, "truncate": "no"}}, "rope.scaling.truncate", "not true or false"),
    ({"scaling": {**YARN, "mscale": -1}}, "rope.scaling.mscale", "negative"),
    ({"scaling": {**YARN, "beta_fast": 0}}, "rope.scaling.beta_fast", "positive"),
    ({"scaling": {**YARN, "type": "longrope", "short_factor": [1, 1, 1]}}, "rope.scaling.long_factor", "required"),
    ({"scaling": {**YARN, "type": "longrope", "short_factor": [1, 1, 1], "long_factor": [1, 2]}},
     "rope.scaling.long_factor", "dims/2 = 3"),
    ({"scaling": {**YARN, "type": "longrope", "short_factor": [1, 0, 1], "long_factor": [1, 2, 3]}},
     "rope.scaling.short_factor", "not positive"),
    ({"scaling": YARN, "frequencies": [1, 0.1, 0.01]}, "rope", "not both"),
    ({"scaling": {**YARN, "type": "llama3", "low_freq_factor": 4, "high_freq_factor": 4}},
     "rope.scaling.high_freq_factor", "not above low_freq_factor"),
    ({"dims": 2, "scaling": {**YARN, "type": "dynamic"}}, "rope.scaling.type", "rope.dims ≥ 4"),
    ({"base": 1, "scaling": YARN}, "rope.base", "above 1"),
    ({"scaling": "yarn"}, "rope.scaling", "a mapping with type"),
    ({"part": "middle"}, "rope.part", "not one of first, last"),
    ({"style": "halves"}, "rope.style", "interleaved_halves"),
    ({"attention_factor": 0}, "rope.attention_factor", "positive"),
    ({"attention_factor": "1.2"}, "rope.attention_factor", "not a number"),
]


@pytest.mark.parametrize("rope, key, words", BAD)
def test_every_wrong_value_is_refused(runner, tmp_path, rope, key, words):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(document(8, **rope)))
    result = runner.invoke(app, ["compute", str(path)])
    assert result.exit_code == 2, result.stdout
    message = result.stderr.strip()
    assert message.count("\n") == 0 and f"{key}:" in message and words in message, message


def _yarn_doc(tmp_path, **extra):
    doc = {"inputs": np.random.default_rng(3).normal(size=(4, 16)).tolist(), "mask": "causal",
           "positions": [0, 10, 100, 200],
           "weights": {n: np.random.default_rng(i).normal(size=(16, 16)).tolist()
                       for i, n in enumerate(("query", "key", "value"))},
           "rope": {"scaling": {"type": "yarn", "factor": 4, "original_max_position_embeddings": 64}, **extra}}
    path = tmp_path / "yarn.json"
    path.write_text(json.dumps(doc))
    return path, doc


@pytest.mark.parametrize("lang, words", [
    ("en", ["keep their frequency (i = 0)", "divided by 4 (i = 3–7)", "blend the two (i = 1, 2)",
            "r_i = clamp((i − 0)/(3 − 0), 0, 1)", "a = 1.139", "a² = 1.296"]),
    ("zh", ["保持原频率（i = 0）", "除以 4（i = 3–7）", "取混合（i = 1, 2）", "a = 1.139", "a² = 1.296"])])
def test_explain_names_the_yarn_ramp_and_the_factor(runner, tmp_path, lang, words):
    path, _ = _yarn_doc(tmp_path)
    result = runner.invoke(app, ["explain", str(path), "--step", "rope", "--lang", lang], env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.stderr
    for word in words:
        assert word in result.stdout, word
    assert "1.1386·(" in result.stdout and "1.2965·(" in result.stdout  # a on each worked pair, a² on the check


def test_explain_turns_the_last_dimensions_with_part_last(runner, tmp_path):
    path, _ = _yarn_doc(tmp_path, dims=4, part="last", style="interleaved_halves")
    result = runner.invoke(app, ["explain", str(path), "--step", "rope"], env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.stderr
    # read as neighbours, written as halves
    assert "(q₁₃, q₁₄) = (" in result.stdout and "(q′₁₃, q′₁₅)" in result.stdout
    assert "Only the last 4 of the 16 numbers" in result.stdout and "rope_interleave" in result.stdout


@pytest.mark.parametrize("lang, words", [("en", "was put on cos and sin once"), ("zh", "只乘了一次")])
def test_check_names_the_factor_applied_once(runner, tmp_path, lang, words):
    from attncli.core.positions import rotate
    path, doc = _yarn_doc(tmp_path)
    trace = attncli.compute(doc)
    once = rotate(trace.keys, trace.spec.key_positions, Rope(trace.rope_frequencies))  # a on the queries only
    doc["answer"] = {"scores": np.round((trace.queries_rotated @ once.transpose(0, 2, 1))[0], 4).tolist()}
    path.write_text(json.dumps(doc))
    result = runner.invoke(app, ["check", str(path), "--lang", lang], env={"COLUMNS": "400"})
    assert words in result.stdout and "1.296" in result.stdout, result.stdout


@pytest.mark.parametrize("kind, a", [("linear", 1.0), ("dynamic", 1.0), ("llama3", 1.0),
                                     ("yarn", 0.1 * math.log(4) + 1),
                                     ("longrope", math.sqrt(1 + math.log(32) / math.log(4096)))])
def test_init_writes_a_scaling_that_computes(runner, kind, a):
    text = runner.invoke(app, ["init", "--n", "3", "--d-model", "8", "--rope-scaling", kind]).stdout
    assert f"type: {kind}" in text
    result = runner.invoke(app, ["compute", "-", "--only", "rope_attention_factor", "-f", "json"], input=text)
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["rope_attention_factor"] == pytest.approx(a, rel=1e-15)
