"""The mutation check (tests/mutations.py): each hand mutation of the backward pass and of explain's products, in a
temporary copy, is killed by the torch-free tests (torch made unimportable there)."""

from __future__ import annotations

import pytest
from mutations import MUTATIONS, main


@pytest.mark.slow
def test_every_mutation_is_killed_without_torch(capsys):
    assert main([]) == 0, capsys.readouterr().out
    out = capsys.readouterr().out
    assert out.count(" killed ") == len(MUTATIONS) >= 12
    assert "sink_sign" in out and "layer_norm_mean" in out  # the two that survived every torch-free test before
