"""``attncli check`` on a ``linear:`` document (docs/format.md Part 4): each answered array of the layer compared with
the computed one, and a wrong one explained by the declared wrong versions of the recurrence
(:mod:`attncli.core.variants.linear`): a slip is named only when it reproduces every number given.

The answer takes any array ``compute`` writes for the layer (``u``, ``state``, ``final_state``, ``head_outputs``,
``output`` …), with ``query: i`` (a token, from 1, or its label) for one token's row and ``head: j`` (from 1) for one
value head's, as the softmax check does.
"""

from __future__ import annotations

import numpy as np

from attncli.core.errors import AttnError, visible
from attncli.core.linear import KEYS, LinearTrace
from attncli.core.variants.linear import LINEAR_VARIANTS
from attncli.teach.check.answer import _numbers, _position
from attncli.teach.check.compare import Finding, Report, _shape, check_tolerance
from attncli.teach.texts import texts

PER_TOKEN = frozenset({"inputs", "output"})  # (n, d): the token is the first axis
NO_TOKEN = frozenset({"slopes", "initial_state", "final_state", "chunk_states"})  # no token axis
NOT_PER_HEAD = frozenset({"inputs", "output"})


def read_linear_answer(raw, trace: LinearTrace, folder) -> tuple[dict[str, np.ndarray], int | None, int | None]:
    """The answer's arrays (key -> the numbers given, NaN where null), its query and its head (from 0, or None)."""
    spec = trace.spec
    answerable = [key for key in KEYS if key in trace]
    if not isinstance(raw, dict) or not raw:
        raise AttnError("answer.expected_mapping_any", "answer", checkable=", ".join(answerable))
    query = _position(raw.get("query"), spec.tokens, "answer.query", "query")
    head = _position(raw.get("head"), [str(i) for i in range(1, spec.value_heads + 1)], "answer.head", "head")
    head = 0 if head is None and spec.value_heads == 1 else head  # (one head: its arrays without the head axis)
    arrays = {}
    for key, value in raw.items():
        if key in ("query", "head"):
            continue
        if key not in answerable:
            raise AttnError("linear.not_array_this_layer_give", "answer", key=key, answerable=', '.join(answerable))
        try:
            numbers, nulls = _numbers(value, folder)
        except AttnError as e:
            raise e.at(f"answer.{key}") from None
        arrays[key] = np.where(nulls, np.nan, numbers)
    if not arrays:
        raise AttnError("answer.gives_no_result_check_add", "answer", checkable=", ".join(answerable))
    return arrays, query, head


def selected(array: np.ndarray, key: str, query: int | None, head: int | None) -> np.ndarray:
    """``array`` (as compute writes it) at the answer's query (its token's row) and head."""
    if head is not None and key not in NOT_PER_HEAD:
        array = array[head]
        token_axis = 0
    else:
        token_axis = 0 if key in PER_TOKEN else 1
    if query is not None and key not in NO_TOKEN:
        array = np.take(array, query, axis=token_axis)
    return array


def axes(key: str, ndim: int) -> tuple[str, ...]:
    """The axes of ``key``'s array as compute writes it: ``head``, ``token``, ``row`` (a key number of the state),
    ``chunk``, ``column``."""
    if key in PER_TOKEN:
        return ("token", "column")[:ndim]
    if key == "chunk_states":
        return ("head", "chunk", "row", "column")
    if key in NO_TOKEN:
        return ("head", "row", "column")[:ndim]
    return ("head", "token", *(("row", "column") if ndim == 4 else ("column",) * (ndim - 2)))


def cell_words(cell: tuple[int, ...], key: str, ndim: int, query: int | None, head: int | None, tokens: list[str],
               words: dict) -> str:
    """The given array's cell in words: ``token 2 ('cat'), row 1, column 2`` for a state, ``row 2 ('cat'), column
    1`` where the rows are tokens; ``row 1, column 2`` for a final state (its rows are key numbers, not tokens)."""
    names = [a for a in axes(key, ndim) if not (a == "head" and head is not None and key not in NOT_PER_HEAD)
             and not (a == "token" and query is not None and key not in NO_TOKEN)]
    parts = []
    for n, (name, i) in enumerate(zip(names, cell)):
        if name == "token":
            label = words["token"].format(token=visible(tokens[i])) if i < len(tokens) else ""
            parts.append(words["row" if n == len(names) - 2 else "token_i"].format(i=i + 1) + label)
        else:
            parts.append(words[name].format(i=i + 1))
    return words["sep"].join(parts)


def _wrong_cell(given: np.ndarray, expected: np.ndarray, tol: float) -> tuple[int, ...] | None:
    with np.errstate(invalid="ignore"):
        wrong = np.argwhere(~(np.abs(given - expected) <= tol))
    return None if not len(wrong) else tuple(int(i) for i in wrong[0])


def diagnose_linear(trace: LinearTrace, raw, folder, tol: float, lang: str = "en", source: str | None = None
                    ) -> Report:
    """The findings, one per answered array in the order of the computation; for the wrong ones, the slips of the
    recurrence that give every number the learner wrote."""
    check_tolerance(tol)
    arrays, query, head = read_linear_answer(raw, trace, folder)
    spec, t = trace.spec, texts(lang)
    words, step = t["check"], "lightning" if spec.kind == "lightning" else "delta"
    findings, expected = [], {}
    rows, notes = _one_rows(trace, arrays, query, head, tol, words)  # key -> the token of a one-row answer
    for key in sorted(arrays, key=KEYS.index):
        expected[key] = selected(trace[key], key, rows.get(key, query), head)
        if arrays[key].shape != expected[key].shape:
            findings.append(Finding(key, step, False, problem=words["problem"].format(
                given=_shape(arrays[key].shape, words), key=key, expected=_shape(expected[key].shape, words))))
            continue
        cell = _wrong_cell(arrays[key], expected[key], tol)
        where = None if cell is None else cell_words(cell, key, trace[key].ndim, rows.get(key, query), head,
                                                     spec.tokens, words["cell"])
        where = where if where is None or key not in rows else _row_words(key, trace[key].ndim, rows[key], spec.tokens,
                                                                          words["cell"]) + words["cell"]["sep"] + where
        findings.append(Finding(key, step, True) if cell is None else
                        Finding(key, step, False, cell, float(expected[key][cell]), float(arrays[key][cell]),
                                where=where))
    slips = _fitting(trace, arrays, query, rows, head, tol, lang) if not all(f.ok for f in findings) else []
    hint = None if not slips else slips[0]["hint"] if len(slips) == 1 else words["either"].format(
        slips=words["sep_or"].join(s["hint"] for s in slips))
    if not slips:  # what else the numbers are: another token's or head's, or the right ones transposed
        findings = [f if f.ok or f.problem else Finding(**{**f.__dict__, "hint": _near_miss(
            trace, f.key, arrays[f.key], rows.get(f.key, query), head, tol, words)}) for f in findings]
    findings = [f if f.ok or f.problem or not slips else Finding(**{**f.__dict__, "hint": hint}) for f in findings]
    for s in slips:
        s["keys"] = [f.key for f in findings if not f.ok]
    if slips and source not in (None, "-"):
        shown = query if query is not None or len(set(rows.values())) != 1 else next(iter(rows.values()))
        command = f"attncli explain {source}" + ("" if shown is None else f" --query {shown + 1}") + (
            "" if head is None or spec.value_heads == 1 else f" --head {head + 1}")
        notes.append(words["read_step"].format(where=words["step_" + step], command=command))
    elif not slips and not all(f.ok or f.hint for f in findings):
        notes.append(words["none_fits_" + step])
    return Report(findings, notes, slips)


def _near_miss(trace: LinearTrace, key: str, given: np.ndarray, query, head, tol: float, words: dict) -> str | None:
    """The right numbers of another token (with query:), of another head (with head:), or with rows and columns
    swapped: the hint, or None."""
    spec, full = trace.spec, trace[key]
    if query is not None and key not in NO_TOKEN:
        for r in range(len(spec.tokens)):
            if r != query and _fits(given, selected(full, key, r, head), tol):
                return words["other_token_row"].format(row=r + 1, token=spec.tokens[r], query=query + 1)
    if head is not None and key not in NOT_PER_HEAD:
        for h in range(full.shape[0]):
            if h != head and _fits(given, selected(full, key, query, h), tol):
                return words["other_head"].format(head=h + 1, given=head + 1)
    expected = selected(full, key, query, head)
    if expected.ndim >= 2 and expected.shape[-1] == expected.shape[-2] and _fits(given, np.swapaxes(expected, -1,
                                                                                                   -2), tol):
        state = axes(key, full.ndim)[-2] == "row"  # a state's rows are its key numbers, not tokens
        return words["state_swapped" if state else "transposed_square"]
    return None


def _one_rows(trace: LinearTrace, arrays: dict, query, head, tol: float, words: dict
              ) -> tuple[dict[str, int], list[str]]:
    """One token's row given without query: the token it is (or the closest) per key, and a note saying so."""
    rows, notes = {}, []
    for key in sorted(arrays, key=KEYS.index):
        if query is not None or key in NO_TOKEN or not (key in PER_TOKEN or head is not None):
            continue  # (no token axis, or the head axis first)
        every = selected(trace[key], key, None, head)  # (n, …): the token axis first
        if every.ndim < 2 or arrays[key].shape != every.shape[1:]:
            continue
        with np.errstate(invalid="ignore"):
            distance = np.nan_to_num(np.abs(every - arrays[key]), nan=np.inf).reshape(len(every), -1).max(axis=1)
        r = int(np.argmin(distance))
        rows[key] = r
        notes.append(words["row_match" if _wrong_cell(arrays[key], every[r], tol) is None else "row_closest"].format(
            key=key, row=_row_words(key, trace[key].ndim, r, trace.spec.tokens, words["cell"])))
    return rows, notes


def _row_words(key: str, ndim: int, r: int, tokens: list[str], words: dict) -> str:
    """Token ``r``'s row in words: ``row 3 ('sat')``, or ``token 3 ('sat')`` where its rows are a state's."""
    rest = [a for a in axes(key, ndim) if a not in ("head", "token")]
    return words["row" if len(rest) == 1 else "token_i"].format(i=r + 1) + words["token"].format(
        token=visible(tokens[r]))


def _fitting(trace: LinearTrace, arrays: dict, query, rows: dict, head, tol: float, lang: str) -> list[dict]:
    """Every declared slip of this kind of layer that reproduces every number given."""
    spec, sentences = trace.spec, texts(lang)["slips"]
    found = []
    for variant in LINEAR_VARIANTS:
        if spec.kind not in variant.kinds:
            continue
        cases = variant.cases(spec)
        if not cases:
            continue
        with np.errstate(all="ignore"):
            changed = variant.apply(spec, dict(trace))  # (the arrays are the same for every case: its words differ)
        for case in cases:
            if all(_fits(arrays[key], selected(changed.get(key, trace[key]), key, rows.get(key, query), head), tol)
                   for key in arrays):
                name = case.get("name", variant.name)
                found.append({"name": name, "hint": sentences[name].format(**case)})
    return found


def _fits(given: np.ndarray, made: np.ndarray, tol: float) -> bool:
    return given.shape == made.shape and _wrong_cell(given, made, tol) is None
