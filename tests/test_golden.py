"""Every number unchanged: the JSON of every example and of 200 random documents, byte for byte.

The digests in tests/golden/json_sha256.json were recorded before the package was reorganised
(issue 13); a change that moves one bit of one number, or an exit code, fails here.
"""

from __future__ import annotations

import json

from golden_docs import RECORD, current, documents


def test_the_generator_covers_the_format():
    docs = [doc for _, doc in documents()]
    assert len(docs) == 200
    seen = {key for doc in docs for key in doc}
    assert {"context", "heads", "bias", "mask", "positional", "score", "normalize", "add_norm"} <= seen
    assert any(doc.get("mask") == "causal" for doc in docs) and any(isinstance(doc.get("mask"), list) for doc in docs)


def test_json_is_unchanged(tmp_path):
    recorded = json.loads(RECORD.read_text())
    now = current(tmp_path)
    assert sorted(now) == sorted(recorded)
    changed = [name for name in recorded if now[name] != recorded[name]]
    assert not changed, f"{len(changed)} documents give other JSON now: {changed[:10]}"
