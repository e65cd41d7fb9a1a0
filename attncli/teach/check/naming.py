"""The slip named for a wrong answer: the variants that fit every given number (:mod:`.search`), in words.

The stages' declared variants are tried first (singles, then pairs).  The slips no stage can declare, those of
the answer's writing (the scaled scores given as the scores, the weights as the scores, the rotated queries as the
projected ones), are tried after them (:mod:`.slips`, :mod:`.modern`, :mod:`.arith`), under the same rule: named
only when they reproduce every number given.

One fitting candidate: its sentence.  Several: the first one's sentence, then either "or, giving the same numbers"
(no quantity tells them apart) or the cheapest test that does, the first cell where they differ.
"""

from __future__ import annotations

import numpy as np

from attncli.core.variants import Variant
from attncli.teach.check import search
from attncli.teach.check.answer import Answer, Given
from attncli.teach.check.search import Candidate, Change
from attncli.teach.texts import texts

LEGACY_ROUNDINGS = ((None, None), (0.01, "rounded_2"), (0.1, "rounded_1"))
FED_RAW_INPUTS = "layer_raw_inputs"  # a stack's layer computed on the stack's own inputs (cli/check.py makes it)


def legacy_candidates(trace, givens: list[Given], answer: Answer, tol: float,
                      alternatives: tuple = ()) -> list[Candidate]:
    """The slips not yet declared as variants (and the document's ``alternatives``, each (name, its Trace, its
    words)), as candidates that fit every given number."""
    from attncli.teach.check.arith import arithmetic_slips
    from attncli.teach.check.modern import modern_slips
    from attncli.teach.check.slips import Slip, arrays_of, classic_slips, rerun

    fitting = []
    with np.errstate(all="ignore"):
        slips = classic_slips(trace) + modern_slips(trace) + arithmetic_slips(trace)
    for name, other, words in alternatives:
        slips.append(Slip(name, lambda rounding, other=other: arrays_of(other) if rounding is None
                          else rerun(other, {}, rounding), dict(words)))
    for slip in slips:
        for rounding, name in LEGACY_ROUNDINGS if slip.rounded else LEGACY_ROUNDINGS[:1]:
            arrays = slip.arrays(rounding)
            if not arrays:
                continue
            changes = (_named(slip.name, slip.words),) + (() if name is None else (_named(name, {}),))
            one = Candidate(changes, arrays)
            if search.fits(one, givens, answer, trace.spec, tol):
                fitting.append(one)
                break
    return fitting


def _named(name: str, words: dict) -> Change:
    return Change(-1, "", Variant(name, lambda *args: {}), dict(words))


def family(name: str) -> str:
    """Slips told apart only by a detail (rounded to halves or to 1 decimal; which bias): one is enough to name."""
    return "rounded" if name.startswith("rounded_") else name.replace("biases", "bias")


def sentence(candidate: Candidate, lang: str) -> str:
    """The candidate's slips in words: one sentence, or two joined."""
    sentences = texts(lang)["slips"]
    parts = [sentences[c.name].format(**c.words) for c in candidate.changes]
    return parts[0] if len(parts) == 1 else sentences["and_also"].format(first=parts[0], second=parts[1])


def identical(a: Candidate, b: Candidate) -> bool:
    """The same numbers everywhere: no quantity tells the two apart."""
    return all(search.same(a.arrays.get(key), b.arrays.get(key)) for key in search.ANSWERABLE
               if a.arrays.get(key) is not None and b.arrays.get(key) is not None)


@np.errstate(all="ignore")  # a variant's numbers may overflow: they are the learner's then, never a warning
def named(trace, answer: Answer, givens: list[Given], wrong: list[str], tol: float, lang: str,
          simpler=lambda: False, alternatives: tuple = ()) -> tuple[dict[str, str], list[dict], list[dict]]:
    """For each wrong key the hint, the slips named ``{"name", "hint", "keys"}`` and the notes (the test telling
    two fitting slips apart); nothing when no candidate reproduces every number given.  Pairs of variants are
    tried only when no single slip fits and ``simpler()`` finds no plainer explanation (another row, a transpose,
    the learner's own earlier numbers carried on)."""
    found = search.Search(trace, givens, answer, wrong, tol)
    fitting = found.singles() or legacy_candidates(trace, givens, answer, tol, alternatives)
    if not fitting and not simpler():
        fitting = found.pairs()
    if not fitting:
        return {}, [], []
    words = texts(lang)
    first = fitting[0]
    text = sentence(first, lang)
    alike = [c for c in fitting[1:] if c.names != first.names and family(c.names[0]) not in map(family, first.names)]
    if alike:
        text = words["slips"]["or_same"].format(first=text, second=sentence(alike[0], lang))
    others = [c for c in alike if not identical(first, c)]
    notes = [note for note in [_test(others[0], first, answer, trace, lang)] if note] if others else []
    keys = list(wrong)
    entries = [{"name": name, "hint": text, "keys": keys} for name in dict.fromkeys(first.names)]
    if getattr(first, "changes", None):  # (a stage's declared variant: where it happens, for the pointer to explain)
        entries[0]["_stage"] = first.changes[0].stage
    entries += [{"name": c.names[0], "hint": text, "keys": keys} for c in alike[:1]]
    return {key: text for key in keys}, entries, notes


def _test(other: Candidate, first: Candidate, answer: Answer, trace, lang: str) -> dict | None:
    """The cheapest test telling the first fitting slip from another: the first cell where they differ, as the
    fields of the report's ``tell_apart`` sentence (``cell`` counting from 0; the report names it in words)."""
    found = search.telling_apart([first, other], answer, trace.spec)
    if found is None:
        return None
    _, key, cell, mine, theirs = found
    return {"key": key, "cell": cell, "mine": mine, "theirs": theirs, "first": first.names[0],
            "second": other.names[0]}
