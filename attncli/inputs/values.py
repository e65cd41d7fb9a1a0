"""Single values of the input document: the scale, token labels, an omitted weight's identity."""

from __future__ import annotations

import math
import re
from typing import Any

from attncli.core.errors import AttnError, plural
from attncli.core.memory import beyond, memory_budget

IDENTITY_CHECK_BYTES = 64 * 1024 * 1024  # an omitted weight's identity from this size on is checked against memory


def check_identity_fits(key: str, d: int) -> None:
    """An omitted weight is the d × d identity: refused, naming its size, when it would not fit in memory."""
    need = d * d * 8
    if need < IDENTITY_CHECK_BYTES:
        return
    budget = memory_budget()
    if need > budget:
        raise AttnError(f"is omitted, so it would be the {d}×{d} identity ({beyond(need, budget)}); "
                        "give the weight, or fewer input columns", key)


def scale_of(value: Any, d_k: int) -> tuple[float, str]:
    """``scale:`` -> (the factor the scores are multiplied by, sqrt | none | number)."""
    if value == "sqrt" or value is None:
        return 1.0 / math.sqrt(d_k), "sqrt"
    if value == "none":
        return 1.0, "none"
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            raise AttnError(f"{value!r} is not sqrt, none or a number", "scale") from None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise AttnError(f"{value!r} is not sqrt, none or a finite number", "scale")
    return float(value), "number"


def split_tokens(text: str) -> list[str]:
    """"the cat sat" -> three words; "我是谁" (no spaces) -> one label per character."""
    return text.split() if re.search(r"\s", text.strip()) else list(text.strip())


def token_labels(value: Any, count: int, prefix: str, key: str, of: str) -> list[str]:
    """``count`` labels from ``key`` (a list or one string), or ``x1, x2, …`` when it is omitted."""
    if value is None:
        return [f"{prefix}{i}" for i in range(1, count + 1)]
    if isinstance(value, str):
        labels = split_tokens(value)
    elif isinstance(value, list):
        labels = []
        for i, label in enumerate(value, start=1):
            if isinstance(label, (list, dict)) or label is None:
                raise AttnError(f"label {i} is not text", key)
            labels.append(str(label).lower() if isinstance(label, bool) else str(label))
    else:
        raise AttnError("expected a list of labels or one string", key)
    if len(labels) != count:
        verb = "has" if of == "context" else "have"
        raise AttnError(f"has {plural(len(labels), 'label')} but {of} {verb} {plural(count, 'row')}", key)
    return labels
