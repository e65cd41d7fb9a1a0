"""latent's slips are the stages' declared variants now (:mod:`attncli.core.variants.latent`): the rotary key left
out, kv_norm left out or done wrong, query_norm done wrong (the latent stage), the rotated part at the wrong end
(rope), YaRN's mscale once (scale).

(An empty module, kept while ``tests/test_slips.py`` reads the source of the old hand-written slips' modules.)
"""
