"""The largest logit's slips are the max_logits stage's declared variants now (:mod:`attncli.core.variants.
max_logits`): S_max taken before the scale, γ not capped at 1.

(An empty module, kept while ``tests/test_slips.py`` reads the source of the old hand-written slips' modules.)
"""
