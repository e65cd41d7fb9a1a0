"""Every number unchanged: the JSON of every example and of 200 random documents.

tests/golden/outputs.json.gz holds each document's exit code and JSON. Keys, shapes, tokens, strings
and masked cells must be exactly as recorded; numbers within 1e-12 of the largest entry of their array
(golden_compare.py), which any BLAS kernel's summation order meets and any real change of a number
does not. Record again (``python tests/golden_docs.py``) only for a change that is meant to move
numbers, and say so in the commit.
"""

from __future__ import annotations

import copy

import pytest
from golden_compare import assert_same_result
from golden_docs import current, documents, recorded

# Keys Part 3 of the contract adds to documents that were already valid (FORMAT.md): checked apart, then dropped.
# lse: with every softmax of Q·Kᵀ; rope_frequencies and rope_attention_factor: whenever rope is given
ADDED = ("lse", "rope_frequencies", "rope_attention_factor")


def test_the_generator_covers_the_format():
    docs = [doc for _, doc in documents()]
    assert len(docs) == 200
    seen = {key for doc in docs for key in doc}
    assert {"context", "heads", "bias", "mask", "positional", "score", "normalize", "add_norm"} <= seen
    assert any(doc.get("mask") == "causal" for doc in docs) and any(isinstance(doc.get("mask"), list) for doc in docs)


def test_json_is_unchanged(tmp_path):
    want = recorded()
    now = current(tmp_path)
    assert sorted(now) == sorted(want)
    assert sum(run["exit"] == 0 for run in want.values()) > 150  # most documents compute
    for name in want:
        assert now[name]["exit"] == want[name]["exit"], name
        got = without_added(now[name]["json"], want[name]["json"], name)
        assert_same_result(got, want[name]["json"], name)


def without_added(got, want, name: str):
    """``got`` without the keys Part 3 added, after checking them: lse against each row's scaled scores, the plain
    rotation's frequencies and a = 1."""
    if not isinstance(got, dict) or not isinstance(want, dict):
        return got
    added = {key: got[key] for key in ADDED if key in got and key not in want}
    _check_lse(added.get("lse"), got, name)
    if "rope_attention_factor" in added:
        assert added["rope_attention_factor"] == 1.0, name  # no document before Part 3 scales cos and sin
        assert "queries_rotated" in got and len(added["rope_frequencies"]) * 2 <= got["d_k"], name
    return {key: value for key, value in got.items() if key not in added}


def _check_lse(lse, result: dict, name: str) -> None:
    """lse (h × n) is in the JSON of every softmax of dot-product scores, and ln Σ exp of each row's scaled scores."""
    import numpy as np

    if lse is None:
        return
    z = np.array([[[np.nan if x is None else x for x in row] for row in head] for head in result["scaled_scores"]])
    top = np.nanmax(np.where(np.isnan(z), -np.inf, z), axis=-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        want = (top + np.log(np.nansum(np.exp(z - top), axis=-1, keepdims=True)))[..., 0]
    got = np.array([[np.nan if x is None else x for x in row] for row in lse])
    assert np.array_equal(np.isnan(got), ~np.isfinite(want)), name
    assert np.allclose(got[np.isfinite(want)], want[np.isfinite(want)], rtol=1e-12, atol=1e-12), name


def test_the_comparison_catches_a_moved_number_a_new_key_and_a_masked_cell():
    want = recorded()["examples/bert_base.yaml"]["json"]
    assert_same_result(copy.deepcopy(want), want)
    for change in ("number", "key", "mask", "token"):
        got = copy.deepcopy(want)
        if change == "number":
            got["output"][3][100] *= 1 + 1e-9
        elif change == "key":
            got["extra"] = 1
        elif change == "mask":
            got["weights"][0][0][0] = None
        else:
            got["tokens"][1] = got["tokens"][1].upper() + "x"
        with pytest.raises(AssertionError):
            assert_same_result(got, want, "bert_base")
