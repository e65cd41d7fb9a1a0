"""``attncli check``: a hand calculation (the document's ``answer:``) compared with the trace, and the slip named.

Entry point: :mod:`.compare` (:func:`.compare.check`, :func:`.compare.diagnose`); :mod:`.view` writes the report
as text or JSON.  :mod:`.answer` reads the ``answer:`` section, :mod:`.slips` and :mod:`.modern` are the slips
(the computation done again with one change), :mod:`.other` what else a wrong quantity can be.
"""
