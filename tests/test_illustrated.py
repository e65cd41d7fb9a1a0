"""The 8-step walkthrough's numbers (seed 000), worked by hand.

Q, K, V and the scores are whole numbers anyone can check on paper; the
weights follow from softmax([2, 4, 4]) = [e², e⁴, e⁴] / (e² + 2e⁴).
"""

from __future__ import annotations

import json
import math

from conftest import EXAMPLES

from attncli.cli import app

HAND_Q = [[1, 0, 2], [2, 2, 2], [2, 1, 3]]
HAND_K = [[0, 1, 1], [4, 4, 0], [2, 3, 1]]
HAND_V = [[1, 2, 3], [2, 8, 0], [2, 6, 3]]
HAND_SCORES = [[2, 4, 4], [4, 16, 12], [4, 12, 10]]


def test_illustrated_numbers_by_hand(runner):
    result = runner.invoke(app, ["compute", str(EXAMPLES / "illustrated.yaml"), "--format", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["queries"] == [HAND_Q]
    assert data["keys"] == [HAND_K]
    assert data["values"] == [HAND_V]
    assert data["scores"] == [HAND_SCORES]
    assert data["scale"] == 1.0
    total = math.exp(2) + 2 * math.exp(4)
    expected_row = [math.exp(2) / total, math.exp(4) / total, math.exp(4) / total]
    for got, want in zip(data["weights"][0][0], expected_row):
        assert abs(got - want) < 1e-12
    output_1 = [sum(w * HAND_V[j][c] for j, w in enumerate(expected_row)) for c in range(3)]
    for got, want in zip(data["output"][0], output_1):
        assert abs(got - want) < 1e-12
    assert [round(x, 4) for x in data["output"][0]] == [1.9366, 6.6831, 1.5951]
    assert [round(x, 4) for x in data["weights"][0][0]] == [0.0634, 0.4683, 0.4683]
