"""``attncli check``: a hand calculation (the document's ``answer:``) compared with the trace, and the slip named.

Entry point: :mod:`.compare` (:func:`.compare.check`, :func:`.compare.diagnose`); :mod:`.view` writes the report
as text or JSON.  :mod:`.answer` reads the ``answer:`` section; :mod:`.search` runs the stages with their declared
variants (:mod:`attncli.core.variants`) and :mod:`.naming` names those that reproduce every number given;
:mod:`.slips` and :mod:`.modern` hold the slips no stage declares yet; :mod:`.near_misses` what else a wrong quantity
can be.
"""
