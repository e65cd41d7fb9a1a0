"""The plausible wrong versions of each stage, as data beside the right one: what ``attncli check`` names.

Each module holds the :class:`Variant` tuples of some stages (small pure numpy functions);
:mod:`attncli.core.stages` gives each stage its tuple (``Stage(…, variants=…)``), and check's search
(:mod:`attncli.teach.check.search`) runs the stage list with one variant, or two, in place of the right steps.
A new stage brings its variants here and check needs no code of its own for them.

- :mod:`.scale`: the scale's factor (√d_k, d_k, √d_v, √d_model, √n, 1, rounded, × for ÷), the score bias's sign,
  its place, ALiBi's distance, slopes and base;
- :mod:`.softmax`: the base, the axis, the maximum (overflow), the normaliser, log-softmax, the weights confused;
- :mod:`.masks`: the mask left out or done wrong (diagonal, window ± 1, padding on the rows, 0 for −∞);
- :mod:`.heads`: the heads' columns, grouped-query heads, the weights' layout, the biases, the context;
- :mod:`.products`: the operand order and transposes of S = Q·Kᵀ, H = A·V and Y = concat(H)·W_O;
- :mod:`.rope`: the pair order, the sign, the frequencies, the positions, the attention factor once;
- :mod:`.norms`: every norm's axis, ε, root, γ and β; the residual's operands;
- :mod:`.qknorm`: qk_norm left out, moved across the rotation, the keys' γ for the queries, its norm and scope;
- :mod:`.latent`: latent's rotary key and kv_norm left out, kv_norm and query_norm done wrong, the rotated part at
  the wrong end (rope), YaRN's mscale once (scale);
- :mod:`.indexer`: the lightning indexer's head weights or scales left out, the smallest I kept;
- :mod:`.max_logits`: the largest logit taken before the scale, QK-Clip's γ not capped at 1;
- :mod:`.backward`: the backward steps (dZ, D, dK, the scale in dQ and dK).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from attncli.core.spec import Spec

__all__ = ["Variant", "when"]


@dataclass(frozen=True)
class Variant:
    """A plausible wrong way to do one stage, as data beside the right one: what ``attncli check`` names.

    ``apply(spec, a, p, run)`` does the stage this wrong way on the arrays so far and returns what the stage writes
    (``run(spec, a)`` is the stage's right step, for a variant that only changes a setting); ``cases(spec)`` gives
    one mapping ``p`` per instance the document can show (none: not here; ``p`` also fills the slip's sentence,
    ``texts(lang)["slips"][name]``, and ``p["name"]`` may rename it); ``later``: later stages the same slip does
    otherwise, by name, each ``step(spec, a, p, run)``.  ``backward``: a wrong backward step instead,
    ``apply(spec, a, d, p, run)`` with the gradients ``d`` of what the stage wrote.  The variants live in
    modules of this package, and so does the class: only check makes one (a stage names its variants lazily,
    :class:`attncli.core.stage.Lazy`), so a computation never builds it.
    """

    name: str
    apply: Callable[..., dict]
    cases: Callable[[Spec], tuple[dict, ...]] = lambda spec: ({},)
    later: tuple[tuple[str, Callable[..., dict]], ...] = ()
    backward: bool = False


def when(test: Callable, **words) -> Callable:
    """``cases`` of a variant with one instance, when ``test(spec)`` holds (``words`` computed from the spec)."""
    def cases(spec):
        return ({key: fn(spec) for key, fn in words.items()},) if test(spec) else ()
    return cases
