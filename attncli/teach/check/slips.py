"""The slips a teacher sees in a hand calculation of attention, each the computation done again with one change.

A :class:`Slip` is one change (the scale left out, the weights times K instead of V, one
weighted value left out of the sum …) and every quantity an answer may give, computed with
it: :func:`attncli.teach.check.compare.diagnose` tries each slip on every quantity the answer gives,
so a slip made in step 3 is named from an answer that gives only the output.  Its sentence
(what was done, what to do instead) is ``texts(lang)["slips"][name]``, filled with ``words``.

:func:`rerun` does the computation again from any stage on (:func:`attncli.core.pipeline.rerun`): the stages
given replace the trace's, everything after them is computed anew (earlier ones stay the trace's).  A slip
of the document's settings (a scale, a mask, a bias left out) is :func:`attend` on a changed
:class:`~attncli.core.spec.Spec`.  The slips of today's attention (RoPE, soft cap, pre-norm,
score bias, mask conventions, shared key/value heads, the residual) are in
:mod:`attncli.teach.check.modern`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from attncli.core import pipeline
from attncli.core.attention import output_projection
from attncli.core.errors import AttnError
from attncli.core.gate import gated_or_not
from attncli.core.pipeline import attend
from attncli.core.scores import shared
from attncli.core.softmax import exp_rows, softmax
from attncli.core.softmax import normalize as weights_of
from attncli.core.stages import QUANTITIES, writer
from attncli.core.trace import Trace
from attncli.outputs.serialize import array_of
from attncli.teach.lines import subscript

Arrays = dict[str, np.ndarray | None]
ANSWERABLE = tuple(key for key, q in QUANTITIES.items() if not q.source)  # what an answer may give: what is computed
AFTER_WEIGHTS = tuple(key for key in ANSWERABLE if writer(key) > writer("weights"))  # what rounding the weights changes
ROUNDINGS = (0.01, 0.1)  # a slip's weights also tried rounded to 2 or 1 decimals before they multiply V


@dataclass(frozen=True)
class Slip:
    """One slip: its name (the key of its sentence), the sentence's placeholders, and its numbers."""

    name: str
    make: Callable[[float | None], Arrays]  # the quantities with this slip (weights rounded to a step, or not)
    words: dict = field(default_factory=dict)
    rounded: bool = True  # also try the slip with its weights rounded before they multiply the values
    cache: dict = field(default_factory=dict, compare=False, repr=False)

    def arrays(self, rounding: float | None = None) -> Arrays:
        """The slip's quantities, computed once; {} when they cannot be computed (an overflow, a zero sum)."""
        if rounding not in self.cache:
            try:
                with np.errstate(all="ignore"):
                    self.cache[rounding] = self.make(rounding)
            except (AttnError, ArithmeticError, ValueError):  # an overflow, normalize: sum by 0, a shape
                self.cache[rounding] = {}
        return self.cache[rounding]


def arrays_of(trace: Trace) -> Arrays:
    return {key: array_of(trace, key) for key in ANSWERABLE}


def rerun(trace: Trace, start: Arrays, rounding: float | None = None,
          mix: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None,
          project: Callable[[np.ndarray], np.ndarray] | None = None, steps: dict | None = None) -> Arrays:
    """Every answerable quantity, with the stages in ``start`` replaced and everything after them computed again.

    ``rounding``: the weights rounded to this step before they multiply the values; ``mix(a, v)``: the head
    outputs made otherwise than a·V; ``project(heads)``: the output made otherwise than concat·W_O + b_O;
    ``steps``: stages done otherwise, by name (``{"qk_norm": step(spec, arrays) -> arrays}``).
    """
    replace = dict(steps or {})
    if rounding is not None or mix is not None:
        def mixed(spec, a: Arrays) -> Arrays:
            weights = a["weights"] if rounding is None else np.round(a["weights"] / rounding) * rounding
            v = shared(a["values"], spec.heads)
            return {"head_outputs": weights @ v if mix is None else mix(weights, v)}
        replace["mix"] = mixed
    if project is not None:
        replace["output"] = lambda spec, a: {"output": project(gated_or_not(a))}  # H ⊙ G with a gate
    got = pipeline.rerun(trace.spec, pipeline.arrays_of(trace), given=start, replace=replace)
    return {key: got.get(key) for key in ANSWERABLE}


def allowed_of(spec) -> np.ndarray | None:
    return None if spec.mask is None else spec.mask.full()


def by_spec(trace: Trace, **changes) -> Callable[[float | None], Arrays]:
    """The slip of a changed setting: the whole computation again (its weights rounded, when asked)."""
    def make(rounding: float | None) -> Arrays:
        changed = attend(dataclasses.replace(trace.spec, **changes))
        return arrays_of(changed) if rounding is None else rerun(changed, {}, rounding)
    return make


def by_stage(trace: Trace, start: Callable[[], Arrays], **how) -> Callable[[float | None], Arrays]:
    """The slip of one stage done otherwise: the trace's stages up to it, the rest computed again."""
    return lambda rounding: rerun(trace, start(), rounding, **how)


# ---------------------------------------------------------------- the classic slips, in the order they are preferred


def classic_slips(trace: Trace) -> list[Slip]:
    """The slips of the 2017 layer this document can show (a slip that changes nothing here is left out).

    In the order they are preferred: the scale, the scores, the softmax, the mask, the mixing of the values,
    the output projection, the biases, the weights' layout, the heads, the context, the answer's rounding.
    """
    found: list[Slip] = []
    add = lambda name, make, rounded=True, **words: found.append(Slip(name, make, words, rounded))  # noqa: E731
    scale_slips(trace, add)
    score_slips(trace, add)
    softmax_slips(trace, add)
    allowed = allowed_of(trace.spec)
    if allowed is not None and not np.all(allowed):
        mask_slips(trace, add)
    mixing_slips(trace, add)
    output_slips(trace, add)
    bias_slips(trace, add)
    transposed_weights(trace, add)
    head_slips(trace, add)
    context_slips(trace, add)
    answer_slips(trace, add)
    return found


def scale_slips(trace: Trace, add) -> None:
    """The scale left out, added where there is none, applied twice, inverted, or taken from d_model."""
    spec = trace.spec
    root = f"√{spec.d_k}"
    scale = {"sqrt": f"1/{root}", "none": "1"}.get(spec.scale_name, f"{spec.scale:g}")
    d_model = spec.inputs.shape[1]
    if spec.scale != 1.0:
        add("scale_left_out", by_spec(trace, scale=1.0), scale=scale)
    if spec.scale_name == "none" and spec.score == "dot" and spec.d_k > 1:
        add("scale_added", by_spec(trace, scale=1 / np.sqrt(spec.d_k)), root=root)
    if spec.scale != 1.0:
        twice = ("scale_twice" if spec.scale_name != "sqrt"
                 else "scale_twice_dk" if d_model != spec.d_k ** 2 else "scale_twice_dk_model")
        add(twice, by_spec(trace, scale=float(np.square(spec.scale))),
            scale=scale, root=root, d_k=spec.d_k, d_model=d_model)
    if spec.scale_name == "sqrt":
        add("scale_inverted", by_spec(trace, scale=np.sqrt(spec.d_k)), root=root)
        if d_model not in (spec.d_k, spec.d_k ** 2):  # (d_k² is the slip above)
            add("scale_d_model", by_spec(trace, scale=1 / np.sqrt(d_model)), d_model=d_model, root=root)


def scored_qk(trace: Trace) -> tuple[np.ndarray, np.ndarray]:
    """The queries and the keys (one per query head) the scores were made of: rotated, with RoPE."""
    q = trace.queries if trace.queries_rotated is None else trace.queries_rotated
    k = shared(trace.keys if trace.keys_rotated is None else trace.keys_rotated, trace.spec.heads)
    return q, k


def score_slips(trace: Trace, add) -> None:
    """Q·K with K not transposed, or the score matrix transposed."""
    spec = trace.spec
    q, k = scored_qk(trace)
    if spec.score == "dot" and spec.d_k == spec.m:  # Q·K only has a shape when d_k = m
        add("not_transposed", by_stage(trace, lambda: {"scores": q @ k}))
    if spec.score == "dot" and spec.n == spec.m and not np.allclose(trace.scores, np.swapaxes(trace.scores, -1, -2)):
        add("scores_transposed", by_stage(trace, lambda: {"scores": np.swapaxes(trace.scores, -1, -2).copy()}))


def softmax_slips(trace: Trace, add) -> None:
    """Softmax over the wrong axis, the exponentials not divided by their sum, the scores divided by their sum."""
    spec = trace.spec
    if spec.normalize != "softmax":
        return
    allowed = allowed_of(spec)
    z = trace.scaled_scores
    flipped = None if allowed is None else np.swapaxes(np.broadcast_to(allowed, z.shape), -1, -2)
    add("softmax_axis",
        by_stage(trace, lambda: {"weights": np.swapaxes(softmax(np.swapaxes(z, -1, -2), flipped), -1, -2)}))
    add("not_divided", by_stage(trace, lambda: {"weights": exp_rows(z, allowed, shift=False)}))
    add("sum_not_softmax", by_stage(trace, lambda: {"weights": weights_of(z, "sum", allowed, spec.tokens)}))


def mixing_slips(trace: Trace, add) -> None:
    """The weights times K instead of V, one weighted value left out of the sum, the weights taken by columns."""
    spec = trace.spec
    _, k = scored_qk(trace)
    # (with d_k ≠ d_v: an answer of another shape)
    add("times_keys", by_stage(trace, lambda: {}, mix=lambda a, v: a @ k))
    if spec.m > 1:
        for j in range(min(spec.m, 16)):  # one weighted value left out of the sum
            add("left_out_one",
                by_stage(trace, lambda: {}, mix=lambda a, v, j=j: a @ v - a[..., j:j + 1] * v[:, j:j + 1, :]),
                token=spec.context_tokens[j], j=subscript(j + 1))
    if spec.n == spec.m:
        add("weights_column", by_stage(trace, lambda: {}, mix=lambda a, v: np.swapaxes(a, -1, -2) @ v))


def output_slips(trace: Trace, add) -> None:
    """W_O left out (b_O kept, or not): the heads' outputs concatenated taken as the output."""
    spec = trace.spec
    if spec.w_o is None:
        return
    concat = lambda heads: heads.transpose(1, 0, 2).reshape(spec.n, -1)  # noqa: E731
    if spec.b_o is not None and spec.b_o.shape[0] == spec.heads * spec.d_v:
        add("w_o_left_out_b_o_kept", by_stage(trace, lambda: {}, project=lambda heads: concat(heads) + spec.b_o))
    add("w_o_left_out", by_stage(trace, lambda: {}, project=concat))


def head_slips(trace: Trace, add) -> None:
    """The heads' columns taken interleaved, or the heads concatenated in reverse order."""
    spec = trace.spec
    if spec.heads > 1:
        add("heads_split", by_spec(trace, **interleaved(spec)))
        add("heads_order",
            by_stage(trace, lambda: {}, project=lambda heads: output_projection(heads[::-1].copy(), spec)))


def context_slips(trace: Trace, add) -> None:
    """Cross-attention's keys and values made from the inputs instead of the context."""
    spec = trace.spec
    if (spec.context is not None and spec.context.shape[1] == spec.inputs.shape[1]
            and (spec.mask is None or spec.n == spec.m)):
        add("keys_from_inputs", by_spec(trace, context=None))


def answer_slips(trace: Trace, add) -> None:
    """Slips of the answer's writing: every number rounded as it goes, the scaled scores given as the scores."""
    spec = trace.spec
    for name, step in (("rounded_half", 0.5), ("rounded_1", 0.1), ("rounded_2", 0.01)):
        add(name, lambda rounding, step=step: rerun(trace, {}, step), rounded=False)
    if spec.scale != 1.0:
        add("scores_scaled", lambda rounding: dict(arrays_of(trace), scores=spec.scale * trace.scores), rounded=False)


def mask_slips(trace: Trace, add) -> None:
    """The mask ignored, masked scores set to 0 instead of −∞, masked weights zeroed after softmax,
    causal off by one."""
    spec = trace.spec
    allowed, z = allowed_of(spec), trace.scaled_scores
    add("mask_ignored", by_spec(trace, mask=None))
    if spec.normalize == "softmax":
        add("mask_zero", by_stage(trace, lambda: {"weights": softmax(np.where(allowed, z, 0.0))}))
        add("mask_after", by_stage(trace, lambda: {"weights": np.where(allowed, softmax(z), 0.0)}))
    if spec.mask.causal == "upper_left" and spec.mask.window is None:
        strict = np.tril(np.ones((spec.n, spec.m), dtype=bool), -1)
        future = np.triu(np.ones((spec.n, spec.m), dtype=bool))
        for name, cells in (("causal_strict", strict), ("causal_future", future)):
            matrix = cells if spec.mask.matrix is None else cells & spec.mask.matrix
            wrong = dataclasses.replace(spec.mask, causal=None, matrix=matrix)
            add(name, by_spec(trace, mask=wrong))


def bias_slips(trace: Trace, add) -> None:
    """Biases left out: all of them, those of the projections only, or one of them."""
    spec = trace.spec
    present = [(name, symbol) for name, symbol in (("b_q", "b_Q"), ("b_k", "b_K"), ("b_v", "b_V"), ("b_o", "b_O"))
               if getattr(spec, name) is not None]
    groups = [present] if len(present) > 1 else []
    projections = [pair for pair in present if pair[0] != "b_o"]
    groups += [projections] if 1 < len(projections) < len(present) else []
    groups += [[pair] for pair in present]
    for group in groups:
        add("biases_left_out" if len(group) > 1 else "bias_left_out",
            by_spec(trace, **{name: None for name, _ in group}), names=", ".join(symbol for _, symbol in group))


def transposed_weights(trace: Trace, add) -> None:
    """A square weight applied as W·x (PyTorch's nn.Linear layout) instead of x·W: each, and all of them at once."""
    spec = trace.spec
    changes = {}
    for name, symbol in (("w_q", "W_Q"), ("w_k", "W_K"), ("w_v", "W_V")):
        w = getattr(spec, name)  # (h, d_in, d)
        h, d_in, d = w.shape
        if d_in == h * d:
            full = w.transpose(1, 0, 2).reshape(d_in, h * d)
            changes[symbol] = {name: full.T.reshape(d_in, h, d).transpose(1, 0, 2)}
    if spec.w_o is not None and spec.w_o.shape[0] == spec.w_o.shape[1]:
        changes["W_O"] = {"w_o": spec.w_o.T.copy()}
    if len(changes) > 1:
        every = {name: w for change in changes.values() for name, w in change.items()}
        add("weights_as_wx", by_spec(trace, **every), names=", ".join(changes))
    for symbol, change in changes.items():
        add("weights_as_wx", by_spec(trace, **change), names=symbol)


def interleaved(spec) -> dict:
    """Every head's weights (and biases) taken as interleaved columns (head i: columns i, i+h, …)."""
    changes = {}
    for name in ("w_q", "w_k", "w_v"):
        w = getattr(spec, name)  # (h, d_in, d)
        h, d_in, d = w.shape
        full = w.transpose(1, 0, 2).reshape(d_in, h * d)
        changes[name] = full.reshape(d_in, d, h).transpose(2, 0, 1)
    for name in ("b_q", "b_k", "b_v"):
        b = getattr(spec, name)  # (h, d)
        if b is not None:
            changes[name] = b.reshape(-1).reshape(b.shape[1], b.shape[0]).T.copy()
    return changes
