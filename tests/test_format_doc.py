"""docs/format.md against the code: the JSON-key table and the document-key tables must agree with compute.

The tables are parsed from the page itself, and compared with what ``attncli compute --format json`` writes and
accepts (run in-process through the CLI only), so a key added to the code but not to the page, or the other way
round, fails here.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from attncli.cli import app

DOC = Path(__file__).resolve().parent.parent / "docs" / "format.md"
JSON_HEADING = "## The JSON output"
TOP_HEADING = "### Top-level keys"
SECTIONS_HEADING = "### Keys inside the sections"
NOT_A_KEY = "qqqq"  # close to no key, so the error lists every known key


def _lines() -> list[str]:
    return DOC.read_text(encoding="utf-8").splitlines()


def _table_after(heading: str) -> list[list[str]]:
    """The body rows (as cells) of the first markdown table after the line ``heading``."""
    lines = _lines()
    assert heading in lines, f"docs/format.md has no heading {heading!r}"
    rows: list[list[str]] = []
    for line in lines[lines.index(heading) + 1 :]:
        if line.startswith("|"):
            rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
        elif rows or line.startswith("#"):
            break
    assert len(rows) > 2, f"no table under {heading!r}"
    _header, separator, *body = rows
    assert set(separator[0]) <= set("-: "), f"malformed table under {heading!r}"
    return body


def _backticked(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def _json_table() -> dict[str, tuple[str, str]]:
    """JSON key -> (its shape cell, its 'when' cell)."""
    table = {}
    for cells in _table_after(JSON_HEADING):
        keys = _backticked(cells[0])
        assert keys, f"a row of the JSON table has no backticked key: {cells}"
        for key in keys:
            assert key not in table, f"JSON key {key!r} is listed twice"
            table[key] = (cells[1], cells[2])
    return table


def _first_column(heading: str) -> set[str]:
    return {key for cells in _table_after(heading) for key in _backticked(cells[0])}


# -- documents that together use every optional feature; `sizes` gives each shape symbol its value

CROSS = {  # cross-attention, learned positions, 2 heads, a file, random initialisers, a bias, a mask matrix, a scale
    "doc": {
        "tokens": ["I", "am"],
        "inputs": [[1, 0, 1, 0], [0, 1, 0, 1]],
        "positional": [[0.1, 0.2, 0.3, 0.4], [0.5, 0.6, 0.7, 0.8]],
        "context_tokens": "我是谁",
        "context": [[1, 0, 0, 1, 0], [0, 1, 1, 0, 0], [1, 1, 0, 0, 1]],
        "heads": 2,
        "weights": {
            "query": {"random": "xavier", "seed": 1, "shape": [4, 6]},
            "key": {"random": "kaiming", "seed": 2},
            "value": "value.csv",
        },
        "bias": {"query": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]},
        "mask": [[1, 1, 0], [True, False, True]],
        "scale": 0.25,
    },
    "files": {"value.csv": "1,0,0,1\n0,1,1,0\n1,1,0,0\n0,0,1,1\n2,0,0,2\n"},
    "sizes": {"n": 2, "m": 3, "h": 2, "g": 2, "d_k": 3, "d_v": 2, "d_model": 4, "d_ctx": 5, "d_out": 4},
}
BLOCK = {  # positional + output projection + Add & Norm, causal mask, an answer section compute must ignore
    "doc": {
        "tokens": "我想吃",
        "inputs": [[1, 0, 1, 0], [0, 2, 0, 2], [1, 1, 1, 1]],
        "positional": "sinusoidal",
        "heads": 2,
        "weights": {"output": {"random": "xavier", "seed": 4}},
        "bias": {"output": [0.1, 0.2, 0.3, 0.4]},
        "add_norm": {"gamma": [1, 2, 1, 2], "beta": [0, 0, 0.5, 0.5], "eps": 1e-12},
        "mask": "causal",
        "answer": {"query": 1, "scores": [1.0]},
    },
    "sizes": {"n": 3, "m": 3, "h": 2, "g": 2, "d_k": 2, "d_v": 2, "d_model": 4, "d_ctx": 4, "d_out": 4},
}
ADDITIVE = {  # Bahdanau scores, weights used as they are
    "doc": {
        "inputs": [[1, 0, 1, 0], [0, 2, 0, 2], [1, 1, 1, 1]],
        "weights": {
            "query": {"random": "normal", "seed": 5, "shape": [4, 2]},
            "key": {"random": "uniform", "seed": 6},
            "w1": {"random": "normal", "seed": 7, "shape": [2, 5]},
            "w2": {"random": "normal", "seed": 8},
            "v": [1, -1, 0.5, 2, 0],
        },
        "score": "additive",
        "normalize": "none",
    },
    "sizes": {"n": 3, "m": 3, "h": 1, "g": 1, "d_k": 2, "d_v": 4, "d_model": 4, "d_ctx": 4, "d_out": 4},
}
SUM = {  # 3-D weights (heads from them), sum normalisation, a causal mask, no scaling
    "doc": {
        "tokens": "a b c",
        "inputs": [[1, 0], [0, 1], [1, 1]],
        "weights": {"query": [[[1], [1]], [[1], [2]]], "key": [[[1], [1]], [[1], [2]]]},
        "scale": "none",
        "normalize": "sum",
        "mask": "causal",
    },
    "sizes": {"n": 3, "m": 3, "h": 2, "g": 2, "d_k": 1, "d_v": 1, "d_model": 2, "d_ctx": 2, "d_out": 2},
}
MODERN = {  # a Llama-style block with Gemma 2's extras: grouped-query heads, rope, both norms, residual, soft cap
    "doc": {
        "tokens": "a b c d",
        "inputs": {"random": "normal", "seed": 9, "shape": [4, 6]},
        "heads": 4,
        "kv_heads": 2,
        "weights": {
            "query": {"random": "xavier", "seed": 10, "shape": [6, 8]},
            "key": {"random": "xavier", "seed": 11, "shape": [6, 4]},
            "value": {"random": "xavier", "seed": 12, "shape": [6, 6]},
            "output": {"random": "xavier", "seed": 13, "shape": [12, 6]},
        },
        "bias": {"key": [0.1, 0.2, 0.3, 0.4], "value": [0, 0, 0, 1, 1, 1]},
        "rope": {"base": 100, "style": "interleaved"},
        "positions": [3, 4, 5, 6],
        "pre_norm": {"kind": "rms", "gamma": [1, 2, 1, 2, 1, 2], "eps": 1e-5},
        "post_norm": {"kind": "layer", "beta": [0.5, 0, 0, 0, 0, 0]},
        "residual": True,
        "softcap": 2.5,
        "mask": "causal",
        "sinks": [0.5, -1.0, 0.0, 2.0],
    },
    "sizes": {"n": 4, "m": 4, "h": 4, "g": 2, "d_k": 2, "d_v": 3, "d_model": 6, "d_ctx": 6, "d_out": 6, "dims/2": 1},
}
# cross-attention with one key/value head, partial rope at the keys' own positions, a LayerNorm pre-norm
MULTI_QUERY = {
    "doc": {
        "inputs": [[1, 0, 1, 0], [0, 2, 0, 2]],
        "context": [[1, 0, 0], [0, 1, 0], [0, 0, 1]],
        "heads": 2,
        "kv_heads": 1,
        "weights": {"query": {"random": "normal", "seed": 14, "shape": [4, 8]},
                    "key": {"random": "normal", "seed": 15, "shape": [3, 4]},
                    "value": [[1, 0], [0, 1], [1, 1]]},
        "rope": {"dims": 2, "frequencies": [0.5]},
        "context_positions": [0, 2, 4],
        "pre_norm": {"kind": "layer"},
        "add_norm": True,
        "qk_norm": {"kind": "rms", "gamma": {"query": [1, 2, 1, 2]}},
    },
    "sizes": {"n": 2, "m": 3, "h": 2, "g": 1, "d_k": 4, "d_v": 2, "d_model": 4, "d_ctx": 3, "d_out": 4, "dims/2": 1},
}
BIASED = {  # ALiBi and T5's relative bias summed, a padded key, a lower-right causal mask with a window, two heads
    "doc": {
        "inputs": {"random": "normal", "seed": 3, "shape": [3, 4]},
        "context": {"random": "normal", "seed": 4, "shape": [5, 4]},
        "heads": 2,
        "weights": {"query": {"random": "xavier", "seed": 5, "shape": [4, 4]}},
        "score_bias": {"alibi": True, "relative": {"table": {"random": "normal", "seed": 6, "shape": [8, 2]},
                                                     "buckets": 8, "max_distance": 16}},
        "mask": {"causal": "lower_right", "window": 3, "keys": [1, 1, 1, 1, 0]},
    },
    "sizes": {"n": 3, "m": 5, "h": 2, "g": 2, "d_k": 2, "d_v": 2, "d_model": 4, "d_ctx": 4, "d_out": 4},
}
PART3 = {  # Llama 4's temperature and chunks, Qwen3-Next's gate, Granite's residual scale (issue 28)
    "doc": {
        "inputs": {"random": "normal", "seed": 1, "shape": [4, 4]}, "heads": 2,
        "weights": {"gate": {"random": "normal", "seed": 2, "shape": [4, 4]}},
        "query_temperature": {"floor_scale": 2, "attn_scale": 0.1}, "residual": {"scale": 0.5},
        "mask": {"causal": True, "chunk": 2},
    },
    "sizes": {"n": 4, "m": 4, "h": 2, "g": 2, "d_k": 2, "d_v": 2, "d_model": 4, "d_ctx": 4, "d_out": 4},
}
LATENT = {  # DeepSeek V3's multi-head latent attention with a query LoRA (issue 29)
    "doc": {
        "inputs": {"random": "normal", "seed": 1, "shape": [3, 4]}, "heads": 2, "rope": {"dims": 2, "part": "last"},
        "latent": {"kv_norm": {"kind": "rms"}, "query_norm": {"kind": "rms"}},
        "weights": {"query_down": {"random": "normal", "seed": 2, "shape": [4, 3]},
                    "query_up": {"random": "normal", "seed": 3, "shape": [3, 8]},
                    "kv_down": {"random": "normal", "seed": 4, "shape": [4, 4]},
                    "kv_up": {"random": "normal", "seed": 5, "shape": [2, 6]}},
        "mask": "causal",
    },
    "sizes": {"n": 3, "m": 3, "h": 2, "g": 2, "d_k": 4, "d_v": 1, "d_model": 4, "d_ctx": 4, "d_out": 2, "r_q": 3,
              "r_kv": 2, "(r_kv + d_r)": 4, "dims/2": 1},
}
CLIPPED = {  # Kimi K2's QK-Clip on grouped heads with a key bias: the largest logits, γ and the new maxima
    "doc": {
        "inputs": {"random": "normal", "seed": 1, "shape": [3, 4]}, "heads": 2, "kv_heads": 1,
        "weights": {"query": {"random": "normal", "seed": 2, "shape": [4, 4]},
                    "key": {"random": "normal", "seed": 3, "shape": [4, 2]}},
        "bias": {"key": [0.5, -0.5]}, "mask": "causal", "max_logits": True, "qk_clip": {"tau": 0.5},
    },
    "sizes": {"n": 3, "m": 3, "h": 2, "g": 1, "d_k": 2, "d_v": 4, "d_model": 4, "d_ctx": 4, "d_out": 8, "2": 2},
}
GEMMA4 = {  # Gemma 4's global layer: V = K's projection, the values RMS-normalised, scale 1, qk_norm, rope
    "doc": {
        "inputs": {"random": "normal", "seed": 1, "shape": [3, 4]}, "heads": 2, "kv_heads": 1, "scale": "none",
        "weights": {"query": {"random": "normal", "seed": 2, "shape": [4, 4]},
                    "key": {"random": "normal", "seed": 3, "shape": [4, 2]}},
        "k_eq_v": True, "v_norm": True, "qk_norm": {"kind": "rms"}, "rope": True, "mask": "causal",
    },
    "sizes": {"n": 3, "m": 3, "h": 2, "g": 1, "d_k": 2, "d_v": 2, "d_model": 4, "d_ctx": 4, "d_out": 4,
              "dims/2": 1},
}
CASES = {"biased": BIASED, "cross": CROSS, "block": BLOCK, "additive": ADDITIVE, "sum": SUM, "modern": MODERN,
         "multi_query": MULTI_QUERY, "part3": PART3, "latent": LATENT,
         "clipped": CLIPPED, "gemma4": GEMMA4}
PLAIN = [[1, 0], [0, 1]]


def _compute(tmp_path: Path, doc: dict[str, Any], files: dict[str, str] | None = None) -> Any:
    for name, text in (files or {}).items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    return CliRunner().invoke(app, ["compute", str(path), "--format", "json"])


def _json_of(tmp_path: Path, case: dict[str, Any]) -> dict[str, Any]:
    result = _compute(tmp_path, case["doc"], case.get("files"))
    assert result.exit_code == 0, result.output
    assert result.stderr == "", result.stderr
    return json.loads(result.stdout)


def _shape(value: Any) -> tuple[int, ...]:
    shape = []
    while isinstance(value, list):
        shape.append(len(value))
        value = value[0] if value else None
    return tuple(shape)


# -- the JSON keys


def test_the_json_table_lists_exactly_the_keys_compute_writes(tmp_path: Path) -> None:
    written: set[str] = set()
    for name, case in CASES.items():
        folder = tmp_path / name
        folder.mkdir()
        written |= set(_json_of(folder, case))
    documented = set(_json_table())
    assert documented - written == set(), "documented in docs/format.md but never written by compute"
    assert written - documented == set(), "written by compute but missing from the JSON table of docs/format.md"


def _given(doc: dict[str, Any], key: str) -> bool:
    """A document key, or a section's (``weights.gate``), is given."""
    section, _, name = key.partition(".")
    return key in doc if not name else name in (doc.get(section) or {})


@pytest.mark.parametrize("name", CASES)
def test_the_json_table_gives_each_key_its_shape_and_presence(tmp_path: Path, name: str) -> None:
    case = CASES[name]
    result = _json_of(tmp_path, case)
    for key, (shape, when) in _json_table().items():
        needs = [k for k in _backticked(when) if not k.startswith("-")]
        present = any if " or " in when else all  # "with `a` or `b`": either key; "with `a`": that key
        expected_present = present(_given(case["doc"], k) for k in needs) if when.startswith("with") else True
        if when.startswith("unless"):  # "unless `score: additive` or `normalize: sum`": absent with either
            expected_present = not any(case["doc"].get(k.split(": ")[0]) == k.split(": ")[1] for k in needs)
        assert (key in result) == expected_present, f"{name}: {key!r} present: {key in result}, table says {when!r}"
        if key not in result:
            continue
        if shape == "number":
            assert isinstance(result[key], (int, float)) and not isinstance(result[key], bool), key
            continue
        symbols = [s.strip() for s in shape.split("×")]
        unknown = [s for s in symbols if s not in case["sizes"]]
        assert not unknown, f"{key}: shape {shape!r} uses symbols this test does not size: {unknown}"
        assert _shape(result[key]) == tuple(case["sizes"][s] for s in symbols), f"{name}: {key} is not {shape}"


def test_json_keys_come_in_the_tables_order(tmp_path: Path) -> None:
    order = list(_json_table())
    for name, case in CASES.items():
        folder = tmp_path / name
        folder.mkdir()
        keys = list(_json_of(folder, case))
        assert keys == [k for k in order if k in keys]


# -- the document keys, both ways


def _known_keys_listed(tmp_path: Path, doc: dict[str, Any], where: str) -> set[str]:
    """The keys compute says it knows, from its error on an unknown key at ``where``."""
    result = _compute(tmp_path, doc)
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    match = re.search(rf"{re.escape(where)}unknown key '{NOT_A_KEY}' \(expected one of ([^)]*)\)", result.stderr)
    assert match, result.stderr
    return {key.strip() for key in match.group(1).split(",")}


def test_the_top_level_table_matches_the_keys_compute_knows(tmp_path: Path) -> None:
    known = _known_keys_listed(tmp_path, {"inputs": PLAIN, NOT_A_KEY: 1}, "doc.json: ")
    assert _first_column(TOP_HEADING) == known


@pytest.mark.parametrize("section", ["weights", "bias", "add_norm", "rope", "pre_norm", "post_norm", "mask",
                                     "score_bias"])
def test_the_section_table_matches_the_keys_compute_knows(tmp_path: Path, section: str) -> None:
    known = _known_keys_listed(tmp_path, {"inputs": PLAIN, section: {NOT_A_KEY: 1}}, f"{section}: ")
    documented = {key.split(".", 1)[1] for key in _first_column(SECTIONS_HEADING) if key.startswith(f"{section}.")}
    assert documented == known


SAMPLES: dict[str, dict[str, Any]] = {  # a valid use of each top-level key, added to {"inputs": PLAIN}
    "inputs": {},
    "tokens": {"tokens": "p q"},
    "context": {"context": [[1, 0], [0, 1], [1, 1]]},
    "context_tokens": {"context": [[1, 2]], "context_tokens": ["c"]},
    "heads": {"heads": 2},
    "weights": {"weights": {"query": [[1, 0], [0, 1]], "output": [[1, 1], [1, 1]]}},
    "bias": {"bias": {"key": [0.5, 0.5], "output": [1, 2]}},
    "scale": {"scale": 0.5},
    "mask": {"mask": "causal"},
    "positional": {"positional": [[0.1, 0.2], [0.3, 0.4]]},
    "score": {
        "score": "additive",
        "weights": {"w1": [[1, 0, 1], [0, 1, 1]], "w2": [[1, 1, 0], [0, 1, 0]], "v": [1, 2, 3]},
    },
    "normalize": {"normalize": "sum"},
    "add_norm": {"add_norm": True},
    "kv_heads": {"heads": 2, "kv_heads": 1, "weights": {"key": [[1], [0]]}},
    "rope": {"rope": True},
    "positions": {"rope": True, "positions": [5, 6]},
    "context_positions": {"context": [[1, 0], [0, 1], [1, 1]], "rope": True, "context_positions": [0, 1, 2]},
    "pre_norm": {"pre_norm": {"kind": "rms"}},
    "post_norm": {"post_norm": {"kind": "rms"}, "residual": True},
    "residual": {"residual": True},
    "softcap": {"softcap": 30},
    "sinks": {"sinks": [0.5]},
    "max_logits": {"max_logits": True},
    "qk_clip": {"qk_clip": {"tau": 100}},
    "v_norm": {"v_norm": True},
    "k_eq_v": {"k_eq_v": True},
    "score_bias": {"score_bias": {"alibi": True}},
    "answer": {"answer": {"weights": [[0.67, 0.33], [0.33, 0.67]]}},
    "differential": {"heads": 2, "differential": {"layer": 1}},
}


@pytest.mark.parametrize("key", sorted(_first_column(TOP_HEADING)))
def test_every_documented_top_level_key_is_accepted(tmp_path: Path, key: str) -> None:
    doc = {"inputs": PLAIN, **SAMPLES.get(key, {key: 1})}
    result = _compute(tmp_path, doc)
    assert "unknown key" not in result.output, result.output
    if key in SAMPLES:
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout)["tokens"]


def test_an_unknown_key_is_refused_with_the_nearest_one(tmp_path: Path) -> None:
    result = _compute(tmp_path, {"inputs": PLAIN, "wieghts": {"query": PLAIN}})
    assert result.exit_code == 2
    assert result.stdout == ""
    assert "unknown key 'wieghts' (did you mean 'weights'?)" in result.stderr
    assert "Traceback" not in result.output
