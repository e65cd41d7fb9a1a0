"""Single values of the input document: the scale, token labels, an omitted weight's identity."""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np

from attncli.core.errors import AttnError, describe, plural, quoted, shorten, unknown_key
from attncli.core.memory import beyond, memory_budget
from attncli.inputs.document import OutOfRange

IDENTITY_CHECK_BYTES = 64 * 1024 * 1024  # an omitted weight's identity from this size on is checked against memory


def check_identity_fits(key: str, d: int) -> None:
    """An omitted weight is the d × d identity: refused, naming its size, when it would not fit in memory."""
    need = d * d * 8
    if need < IDENTITY_CHECK_BYTES:
        return
    budget = memory_budget()
    if need > budget:
        raise AttnError("values.omitted_so_would_identity_give", key, d=d, d_2=d, beyond=beyond(need, budget))


# A number as JSON and YAML 1.2 write it: ASCII digits only (float() also reads '１２' and '١٢'), no
# underscores (float() reads '1_000' as 1000), no hexadecimal, no words (inf, nan). Compiled where it is used (re
# keeps it): a document with no number written as text needs none.
_NUMBER_TEXT = r"[ \t]*[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?[ \t]*"


def number_in_text(text: str) -> float | None:
    """``'0.125'`` -> 0.125; None unless the text is a number as JSON and YAML 1.2 write it
    (may be ±inf beyond float64).

    >>> number_in_text("1e-3"), number_in_text("1_000"), number_in_text("１２"), number_in_text("nan")
    (0.001, None, None, None)
    """
    return float(text) if re.compile(_NUMBER_TEXT, re.ASCII).fullmatch(text) else None


def finite_number(value: Any) -> float | None:
    """A document's number as float64; None for a boolean, text, NaN, an infinity or an integer beyond float64."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:  # an integer of hundreds of digits
        return None
    return number if math.isfinite(number) else None


def scale_of(value: Any, d_k: int) -> tuple[float, str]:
    """``scale:`` -> (the factor the scores are multiplied by, sqrt | none | number)."""
    if value is None:  # YAML's null, ~ or an empty value: neither of the two meanings it could have is safe to guess
        raise AttnError("values.null_empty_value_not_scale", "scale")
    if value == "sqrt":
        return 1.0 / math.sqrt(d_k), "sqrt"
    if value == "none":
        return 1.0, "none"
    if isinstance(value, str):
        number = number_in_text(value)
        if number is None:
            raise AttnError("values.not_sqrt_none_number", "scale", value=shorten(value))
        if not math.isfinite(number):
            raise AttnError("values.beyond_float64_about_e308_most", "scale", value=shorten(value))
        return number, "number"
    number = finite_number(value)
    if number is None:
        # 1e999, 10**330
        beyond = isinstance(value, OutOfRange) or isinstance(value, int) and not isinstance(value, bool)
        problem = "is beyond float64 (about ±1.8e308 at most)" if beyond else "is not sqrt, none or a finite number"
        raise AttnError("values.value_and_problem", "scale", value=describe(value), problem=problem)
    return number, "number"


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
                raise AttnError("values.label_not_text", key, i=i)
            labels.append(str(label).lower() if isinstance(label, bool) else str(label))
    else:
        raise AttnError("values.expected_list_labels_one_string", key)
    if len(labels) != count:
        verb = "has" if of == "context" else "have"
        raise AttnError("values.has_but", key, labels=plural(len(labels), 'label'), of=of, verb=verb,
                        rows=plural(count, 'row'))
    return labels


def mapping_of(value: Any, key: str, names: tuple[str, ...], what: str | None = None) -> dict[str, Any]:
    """``value`` as a mapping whose keys are all among ``names`` (an unknown one suggests the nearest)."""
    if not isinstance(value, dict):
        raise AttnError("values.expected", key, value=what or 'a mapping with any of ' + ', '.join(names))
    for name in value:
        if name not in names:
            raise unknown_document_key(name, names, key).at(key)
    return value


# How papers and code spell what a document writes otherwise: an unknown key spelt so is answered with the place
# it belongs (its letters compared without case, underscores, hyphens or dots). "*" is the section's own kind
# (`q:` under `bias` is bias.query); at the top level it stands for the weights.
SPELLINGS = {
    ("*", "query"): ("q", "wq", "queryweight", "queryweights", "weightquery", "weightsquery", "wquery", "qweight",
                     "qproj", "queryproj", "queryprojection", "inprojq"),
    ("*", "key"): ("k", "wk", "keyweight", "keyweights", "weightkey", "weightskey", "wkey", "kweight", "kproj",
                   "keyproj", "keyprojection", "inprojk"),
    ("*", "value"): ("v", "wv", "valueweight", "valueweights", "weightvalue", "weightsvalue", "wvalue", "vweight",
                     "vproj", "valueproj", "valueprojection", "inprojv"),
    ("*", "output"): ("o", "wo", "outputweight", "outputweights", "weightoutput", "weightsoutput", "woutput", "oweight",
                      "oproj", "outproj", "outputproj", "outputprojection", "cproj"),
    ("bias", "query"): ("bq", "querybias", "biasquery", "qbias", "bquery", "qprojbias"),
    ("bias", "key"): ("bk", "keybias", "biaskey", "kbias", "bkey", "kprojbias"),
    ("bias", "value"): ("bv", "valuebias", "biasvalue", "vbias", "bvalue", "vprojbias"),
    ("bias", "output"): ("bo", "outputbias", "biasoutput", "obias", "boutput", "oprojbias", "outprojbias"),
    ("", "score_bias"): ("attnbias", "attentionbias", "positionbias", "positionalbias", "alibi", "relativebias",
                         "relativeattentionbias", "scorebiases"),
}
_SPELLED = {spelling: place for place, spellings in SPELLINGS.items() for spelling in spellings}
_WEIGHTS_ONLY = ("q", "k", "v", "o")  # only these few letters depend on the section: W_Q is a weight anywhere


def spelling_hint(name: Any, section: str = "") -> str | None:
    """Where a key spelt as in a paper or in code belongs, said from ``section`` (``''``: the top level), or None.

    >>> (spelling_hint("W_Q"), spelling_hint("Wq", "weights"),
    ...  spelling_hint("q", "bias"), spelling_hint("b_o", "weights"))
    ('weights.query', 'query', 'query', 'bias.output')
    >>> spelling_hint("attn_bias"), spelling_hint("attn_bias", "bias"), spelling_hint("cat")
    ('score_bias', None, None)
    """
    folded = re.sub(r"[\s_.\-]", "", str(name)[:100]).casefold()
    place = _SPELLED.get(folded)
    if place is None or section not in ("", "weights", "bias"):
        return None
    kind, leaf = place
    if kind == "":
        return leaf if section == "" else None
    if kind == "*":
        kind = section if section and folded in _WEIGHTS_ONLY else "weights"
    return leaf if kind == section else f"{kind}.{leaf}"


def unknown_document_key(name: Any, known: tuple[str, ...], section: str = "") -> AttnError:
    """``unknown key 'W_Q' (did you mean 'weights.query'?)``: a known spelling first, else the nearest known key."""
    hint = spelling_hint(name, section)
    if hint is None:
        return unknown_key(name, known)
    return AttnError("values.unknown_key_did_you_mean", name=quoted(name), hint=hint)


def head_count(value: Any, key: str, too_large: str = "heads are more than any weight has columns to split among them"
               ) -> int | None:
    """``heads:`` or ``kv_heads:`` (or another count: ``too_large`` says why beyond 2^31 is refused) as a whole
    number ≥ 1 (a numpy integer from the Python API too), or None."""
    if value is None:
        return None
    if isinstance(value, np.integer):
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise AttnError("masking.not_whole_number", key, value=describe(value))
    if value > 2**31:
        raise AttnError("values.value_and_problem", key, value=describe(value), problem=too_large)
    return value


def number_of(value: Any, key: str, positive: bool = True) -> float:
    """A finite number (positive unless ``positive`` is False) given under ``key``, or an error naming it."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise AttnError("qknorm.not_number", key, value=describe(value))
    try:
        number = float(value)
    except OverflowError:
        raise AttnError("values.too_large_float64", key, value=describe(value)) from None
    if not math.isfinite(number) or (positive and number <= 0):
        raise AttnError("values.not_positive_finite_number" if positive else "values.not_finite_number", key,
                        value=describe(value))
    return number
