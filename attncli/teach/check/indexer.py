"""The lightning indexer's slips are the indexer stage's declared variants now (:mod:`attncli.core.variants.indexer`):
the head weights or the scales left out, the smallest I kept.

(An empty module, kept while ``tests/test_slips.py`` reads the source of the old hand-written slips' modules.)
"""
