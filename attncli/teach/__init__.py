"""The teaching layer, one subpackage per feature.

- :mod:`.explain`: ``attncli explain``, the eight-step walkthrough and the extra steps of today's attention;
- :mod:`.why`: ``attncli explain --why``, why attention has queries, keys and values;
- :mod:`.check`: ``attncli check``, a hand calculation compared with the trace, and the slip named;
- :mod:`.starter`: ``attncli init``'s commented document (``starter_*`` beside it: its lines and its comments' texts);
- :mod:`.texts`: the words of all of them, one table per language;
- :mod:`.lines`: the worked arithmetic written out as text, which explain, why and check share.
"""
