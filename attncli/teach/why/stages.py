"""``explain --why``: why attention has queries, keys and values, on the document's own numbers.

The progression (seed 002's idea, our words): (a) every output the plain average of
the value rows; (b) symmetric relevance X·Xᵀ, each row divided by its own sum;
(c) query–key relevance Q·Kᵀ divided by the row sum, then (d) softmax(scale·Q·Kᵀ);
and (e) why the scale (seed 003's argument: a saturated softmax has a vanishing gradient).
The intuitions told next to the numbers are in :mod:`attncli.teach.why.notes`.
Also: marking the step where a learner's ``answer:`` first goes wrong.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from attncli.core.attention import softmax
from attncli.core.errors import AttnError
from attncli.core.trace import Trace
from attncli.outputs.numbers import dims, number
from attncli.teach.explain.step import Focus, Numbers, Step, context, kv_head
from attncli.teach.texts import texts
from attncli.teach.why import notes as intuitions
from attncli.teach.why.notes import divide_rows


def why_steps(trace: Trace, focus: Focus) -> list[Step]:
    """The stages a to e; a stage whose numbers overflow float64 is an error naming it."""
    # X·Xᵀ and Q·Kᵀ of huge numbers (attend's checks cover neither with score: additive)
    with np.errstate(all="ignore"):
        steps = _stages(trace, focus)
    for step in steps:
        for numbers in step.numbers:
            if not np.isfinite(numbers.matrix).all():
                raise AttnError("stages.stage_overflow_float64_numbers_document",
                                "explain --why", number=step.number, title=step.title,
                                lower=numbers.title.split('  ')[0].lower())
    return steps


def _stages(trace: Trace, focus: Focus) -> list[Step]:
    """The stages a to e (b without its numbers for cross-attention, where X·Xᵀ means nothing;
    e only for dot scores)."""
    spec, h = trace.spec, focus.head
    t, ctx = texts(focus.lang), context(trace, focus)
    w, labels = t["why"], t["label"]
    v = trace.mixed_values[kv_head(spec, h)]  # (m, d_v): the key/value head this query head uses
    rows, cols, out_cols = spec.tokens, spec.context_tokens, dims(spec.d_v)

    average = np.repeat(v.mean(axis=0, keepdims=True), spec.n, axis=0)  # (n, d_v): the same row for everyone
    body = [w["average"]["body"].format(**ctx), *intuitions.fixed_mix(trace, focus, w, ctx)]  # (seed 002's 0.75)
    out = [Step("a", w["average"]["title"], "y_i = (1/m) · Σ_j v_j", body,
                numbers=[Numbers("output", labels["average"], average, rows, out_cols)])]
    if spec.context is None:
        x = spec.embedded
        out.append(_relevance_step("b", "symmetric", "R = X·Xᵀ   " + w["divided"], x @ x.T, v, trace, focus, t, ctx))
    else:
        out.append(Step("b", w["symmetric"]["title"], "R = X·Xᵀ", [w["symmetric"]["cross"].format(**ctx)]))
    qk = trace.queries[h] @ trace.keys[kv_head(spec, h)].T  # (n, m): the projections, before any rotation
    c = _relevance_step("c", "query_key", "R = Q·Kᵀ   " + w["divided"], qk, v, trace, focus, t, ctx)
    out.append(dataclasses.replace(c, text=c.text + intuitions.query_key(trace, focus, w, ctx, qk)))
    a = softmax(spec.scale * qk)  # (n, m)
    body = [w["softmax"]["body"].format(**ctx), intuitions.market(trace, focus, w, ctx, a)] + left_out(spec, w)
    formula = f"A = softmax({number(spec.scale, focus.precision)} · Q·Kᵀ)"
    out.append(Step("d", w["softmax"]["title"], formula, body, numbers=[
        Numbers("weights", labels["why_weights"], a, rows, cols, heat=True),
        Numbers("output", labels["why_output"], a @ v, rows, out_cols)]))
    return out + intuitions.scale_stage(trace, focus, t, ctx, qk)


def left_out(spec, w: dict) -> list[str]:
    """The sentence naming what the stages leave out of the document: its mask, rotation, soft cap."""
    parts = [name for name, present in (("mask", spec.mask is not None), ("rope", spec.rope is not None),
                                        ("softcap", spec.softcap is not None)) if present]
    if parts == ["mask"]:
        return [w["masked"]]
    if not parts:
        return []
    names = [w["parts"][name] for name in parts]
    listed = names[0] if len(names) == 1 else w["parts"]["sep"].join(names[:-1]) + w["parts"]["and"] + names[-1]
    return [w["left_out"].format(parts=listed)]


def _relevance_step(name: str, key: str, formula: str, r: np.ndarray, v: np.ndarray, trace: Trace, focus: Focus,
                    t: dict, ctx: dict) -> Step:
    spec, w, labels = trace.spec, t["why"], t["label"]
    a, zero_rows = divide_rows(r)
    text = [w[key]["body"].format(**ctx)]
    text += [w["zero_row"].format(**dict(ctx, q=spec.tokens[i])) for i in zero_rows]
    return Step(name, w[key]["title"], formula, text, numbers=[
        Numbers("relevance", labels["relevance"], r, spec.tokens, spec.context_tokens),
        Numbers("weights", labels["why_weights" if (a >= 0).all() else "why_shares"], a, spec.tokens,
                spec.context_tokens, heat=True),  # (a negative share of a row is no weight)
        Numbers("output", labels["why_output"], a @ v, spec.tokens, dims(spec.d_v))])


def mark_mistake(steps: list[Step], findings: list, trace: Trace, lang: str) -> list[Step]:
    """Add a note to the step where the learner's first wrong quantity appears (steps are returned anew)."""
    from attncli.teach.check.compare import shown
    from attncli.teach.check.view import place

    wrong = next((f for f in findings if not f.ok), None)
    if wrong is None:
        return steps
    t, spec = texts(lang), trace.spec
    if wrong.problem:
        notes = [t["mistake_shape"].format(key=wrong.key, problem=wrong.problem)]
    else:
        cell = place(wrong, spec.tokens, spec.context_tokens, t["check"]["cell"])
        notes = [t["mistake"].format(key=wrong.key, cell=cell, expected=shown(wrong.expected),
                                     given=shown(wrong.given))]
    if wrong.hint:
        notes.append(t["hint"].format(hint=wrong.hint))
    return [dataclasses.replace(s, notes=[*s.notes, *notes]) if s.number == wrong.step else s for s in steps]
