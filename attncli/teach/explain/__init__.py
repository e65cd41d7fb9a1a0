"""``attncli explain``: the eight steps of the illustrated walkthrough, and the extra steps of today's attention.

Entry point: :func:`.walkthrough.steps` (the steps as data); :mod:`.view` draws them with Rich and writes
them as JSON.  :mod:`.step` is what a step is made of, :mod:`.modern` the pre_norm, rope and residual steps,
:mod:`.notes` the sentences that depend on the document's numbers.
"""
