"""The explorable page (``attncli page``, ``_repr_html_`` in notebooks): the data of a Trace for it.

:func:`page_data` gathers what the page shows: compute's tables (:mod:`.tables`) and, for every query and head
shown, explain's steps in English and Chinese with the lines each cell's arithmetic is on (:mod:`.worked`);
:func:`page_html` hands them to the view that writes the one self-contained file (:mod:`attncli.views.page`).
"""

from __future__ import annotations

from attncli.core.errors import AttnError
from attncli.core.trace import Trace
from attncli.outputs.numbers import pick
from attncli.teach.page.decode import decode_data
from attncli.teach.page.gradient_tables import Budget, gradient_cells, is_gradient, signed_scale
from attncli.teach.page.sums import words
from attncli.teach.page.tables import PAGE_EDGE, PAGE_MAX, shown_tables, table_data
from attncli.teach.page.worked import Strings, cell_steps, explained, focus_steps, per_query
from attncli.teach.texts import texts
from attncli.views.colours import NEGATIVE, POSITIVE, RAMP, UNCOLOURED

__all__ = ["page_data", "page_html"]


def page_data(trace: Trace, title: str = "attncli", precision: int = 4, lang: str = "en") -> dict:
    """Everything the page shows, as JSON-ready values (strings in one list ``S``, referred to by index); it opens
    in ``lang`` (en or zh)."""
    if trace.scores is None or trace.weights is None:
        raise AttnError("page.page_needs_scores_weights_this")
    spec = trace.spec
    queries = [i for i in pick(spec.n, PAGE_MAX, PAGE_EDGE, False) if i is not None]
    pairs = explained(trace, queries)
    strings = Strings()
    focus, steps, english = focus_steps(trace, pairs, strings)
    tables, all_shown = [], shown_tables(trace)
    budget = Budget(sum(map(is_gradient, all_shown)))  # the terms the gradient tables write out, shared
    for shown in all_shown:
        data = table_data(shown, trace, precision)
        data["gx"], data["signed"] = gradient_cells(trace, shown, strings, precision, budget), signed_scale(shown)
        data["x"] = None if data["gx"] is not None else cell_steps(trace, shown, queries[0], english)
        data["perQuery"] = per_query(trace, shown)
        tables.append(data)
    return {
        "title": title, "lang": lang, "heads": spec.heads, "explained": len(pairs), "queries": queries,
        "pathHeads": sorted({h for h, _ in pairs}), "pathQueries": sorted({i for _, i in pairs}),
        "tokens": list(spec.tokens), "cross": spec.context is not None,
        "masked": {lang: texts(lang)["label"]["masked"] for lang in ("en", "zh")},
        "ui": {lang: texts(lang)["page"] for lang in ("en", "zh")},
        "ramp": RAMP, "low": UNCOLOURED, "signed": [NEGATIVE, POSITIVE],
        "grads": {lang: {k: words(lang)[k] for k in ("not_worked", "spent", "legend")} for lang in ("en", "zh")},
        "tables": tables, "focus": focus, "steps": steps, "S": strings.items,
        "decode": decode_data(trace, precision),
    }


def page_html(trace: Trace, title: str = "attncli", precision: int = 4, lang: str = "en") -> str:
    """The page as one HTML document: no request leaves it (its styles, script and data are inside)."""
    from attncli.views.page import render

    return render(page_data(trace, title, precision, lang))
