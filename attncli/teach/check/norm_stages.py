"""The norms of qk_norm and of latent (kv_norm, query_norm) done wrong are their stages' declared variants now
(:mod:`attncli.core.variants.qknorm`, :mod:`attncli.core.variants.latent`, from
:func:`attncli.core.variants.norms.norm_variants`), like pre_norm's, post_norm's and add_norm's.

(An empty module, kept while ``tests/test_slips.py`` reads the source of the old hand-written slips' modules.)
"""
