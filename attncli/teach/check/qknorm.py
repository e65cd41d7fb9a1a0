"""qk_norm's slips are the qk_norm stages' declared variants now (:mod:`attncli.core.variants.qknorm`): the norm
left out, moved to the other side of the rotation, the keys' γ for the queries, the norm done wrong, its scope.

(An empty module, kept while ``tests/test_slips.py`` reads the source of the old hand-written slips' modules.)
"""
