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
        assert_same_result(now[name]["json"], want[name]["json"], name)


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
