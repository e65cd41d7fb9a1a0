"""YAML scalars as attncli writes them (init's and extract's documents): each reads back as exactly what was written.

A string is written plain only where YAML 1.2 (attncli's reader) reads the plain text back as that same string;
anything that would read as a number, a boolean, null, an infinity or a NaN, or that holds YAML's punctuation,
is double-quoted. A number is written with ``repr``, which reads back as the same float.

>>> [yaml_scalar(x) for x in ("cat", ".5", ".inf", "yes", "", "我想", 0.1, float("-inf"), True)]
['cat', '".5"', '".inf"', '"yes"', '""', '我想', '0.1', '-.inf', 'true']
"""

from __future__ import annotations

import json
import math
import re

# plain in a flow sequence or mapping: no indicator first, no flow punctuation, comment or ': ' inside
_PLAIN = re.compile(r"[^\s\-?:,\[\]{}#&*!|>'\"%@`][^,\[\]{}#:]*")
_RESERVED = {"null", "~", "true", "false", "yes", "no", "on", "off", "y", "n", ".nan", ".inf", "-.inf", "+.inf"}


def yaml_scalar(value: object) -> str:
    """A boolean, a number exactly, or text (:func:`yaml_string`)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        if isinstance(value, float) and not math.isfinite(value):
            return ".nan" if math.isnan(value) else ("-.inf" if value < 0 else ".inf")
        return repr(value)
    return yaml_string(str(value))


def yaml_string(text: str) -> str:
    """Text plain when that reads back as the same string, else double-quoted."""
    plain = _PLAIN.fullmatch(text) and text == text.strip() and text.lower() not in _RESERVED and not _numeric(text)
    if plain and text.isprintable():
        return text
    # a JSON string is a YAML double-quoted scalar; DEL and the C1 controls, which JSON leaves raw, escaped too
    # (YAML refuses them raw, and a terminal showing the document would act on them)
    return escape_c1(json.dumps(text, ensure_ascii=False))


def escape_c1(text: str) -> str:
    """JSON text with DEL, the C1 controls and the line and paragraph separators as \\u escapes (YAML refuses the
    controls raw and breaks lines at the separators, dropping a space beside them)."""
    return re.sub("[\x7f-\x9f\u2028\u2029]", lambda m: f"\\u{ord(m.group()):04x}", text)


def _numeric(text: str) -> bool:
    try:
        float(text.replace("_", ""))
    except ValueError:
        return bool(re.fullmatch(r"[-+]?(0x[0-9a-fA-F]+|0o[0-7]+|\.inf|\.nan)", text, re.I))
    return True
