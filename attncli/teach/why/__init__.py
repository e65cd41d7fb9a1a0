"""``attncli explain --why``: why attention has queries, keys and values, on the document's own numbers.

Entry point: :func:`.stages.why_steps` (and :func:`.stages.mark_mistake` for ``--check``); :mod:`.notes` holds
the intuitions told next to the numbers.  The steps are :mod:`attncli.teach.explain`'s, drawn by its view.
"""
