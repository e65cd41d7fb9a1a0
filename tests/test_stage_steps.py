"""The explain steps the stage list names (``Stage.explained``, ``Quantity.steps``) are the steps explain makes.

Check's report points to ``Quantity.steps`` (its last), the page's cells to all of them, and ``--step`` takes the
names of ``EXTRA_STEPS``: each test runs explain itself on documents of every kind and reads the steps it made.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import attncli
from attncli.cli.checks import extra_steps, step_choice
from attncli.core.errors import AttnError
from attncli.core.stages import EXTRA_STEPS, QUANTITIES, STAGES
from attncli.teach.explain.step import Focus
from attncli.teach.explain.walkthrough import steps

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
DOCUMENTS = ("illustrated.yaml", "rope.yaml", "llama_style.yaml", "latent.yaml", "sparse_indexer.yaml",
             "differential.yaml", "gemma4/global_layer.yaml", "backward/grads.yaml", "alibi.yaml")


def made(name: str):
    trace = attncli.compute(str(EXAMPLES / name))
    return trace, steps(trace, Focus(0, 0, "en"))


@pytest.mark.parametrize("name", DOCUMENTS)
def test_every_step_a_quantity_names_is_one_explain_makes(name):
    trace, shown = made(name)
    numbers = [s.number for s in shown]
    named = {key: q.steps for key, q in QUANTITIES.items() if q.steps and getattr(trace, key, None) is not None}
    assert named, name
    for key, wanted in named.items():
        assert set(wanted) <= set(numbers), (name, key, wanted, numbers)


@pytest.mark.parametrize("name", DOCUMENTS)
def test_explains_extra_steps_come_in_the_order_of_extra_steps(name):
    trace, shown = made(name)
    extras = [s.number for s in shown if isinstance(s.number, str) and s.number != "backward"]
    assert extras == [step for step in EXTRA_STEPS if step in extras], name


def test_the_extra_steps_are_the_stages_named_ones_in_explains_order():
    assert EXTRA_STEPS == ("positional", "pre_norm", "qk_norm", "rope", "latent", "indexer", "differential",
                           "add_norm", "residual")
    assert set(EXTRA_STEPS) == {step for stage in STAGES for step in stage.explained}
    assert extra_steps(frozenset({"indexer", "latent", "rope", "residual", "gradient"})) == [
        "rope", "latent", "indexer", "residual", "backward"]
    with pytest.raises(AttnError) as refused:
        step_choice("bogus", None)
    assert refused.value.message.endswith("1 to 8 or all, and positional, pre_norm, qk_norm, rope, latent, indexer, "
                                          "differential, add_norm or residual when the document has them")

