"""A stage of the computation and the quantities it writes: what :mod:`attncli.core.stages` lists.

A :class:`Stage` has its name, its formula, the quantities it reads and writes, whether the
document has it (``present``), how it runs on everything at once (``run``) and, for the stages of
the n × m attention itself, on one block of queries (``block``, for :mod:`attncli.core.stream`), and its
backward step (``backward``, :mod:`attncli.core.gradients`), which :func:`attncli.core.pipeline.backward` runs.
Each quantity it writes is a :class:`Quantity`: its JSON key, its formula's name, its title, its
shape, its formula as text and as LaTeX, and what a document needs for it.

The parts: ``before`` stages work on the rows of X, Q, K and V (the streamed path runs them on
everything, like the full one); ``attention`` stages make the n × m matrices (streamed: block by
block, or tile by tile where the fused kernel of :mod:`attncli.core.tiles` does them, ``tiled``);
``after`` stages work on the rows of the output.  A stage that rewrites a quantity (``clip_qkv``
rewrites Q, K and V) lists it again, with its own formula.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from attncli.core.record import record
from attncli.core.spec import Spec

if TYPE_CHECKING:
    from attncli.core.variants import Variant  # (what check reads: that package, imported when it reads it)

Arrays = dict  # JSON key (or an internal name starting with "_") -> array, or None


@record
class Quantity:
    """One array of the result: its JSON key, the formula's name for it, its title and its shape."""

    key: str  # the JSON key: "queries"
    symbol: str  # the formula's name: "Q" (--only takes either)
    title: str  # "Queries"
    shape: str  # "h n d_k": per query head; "g m d_k": per key/value head; "n d": per token; "h n m": scores
    needs: str = ""  # what the document needs for it, when not every document has it ("rope:")
    source: str = ""  # the document's own array: the Spec field holding it ("w_q"); "" when a stage computes it
    parameter: bool = False  # a matrix a stage applies (W_Q, b_Q …): in the result only when --only names it
    text: Callable[[Spec], str] = lambda spec: ""  # its formula as tables write it: "Q = X̂·W_Q + b_Q"
    latex: Callable[[Spec, Callable[[str], str]], str] = lambda spec, up: ""  # as LaTeX, ``up`` naming the head
    note: Callable[[Spec], str] | None = None  # what its table's title adds after the formula
    masked: bool = False  # a matrix whose masked cells are no number (null in JSON, blank in tables)
    checkable: bool = False  # a learner may give it in check's ``answer:`` (its row for ``query:`` from ``rows``)
    null_at_minus_inf: bool = False  # a −inf cell (kept in .npz) is null in JSON: a masked cell, a row with no key
    steps: tuple[int | str, ...] = ()  # the explain steps that work it out (1 … 8, "rope" …): the page's cells point
    #   to them all, check's report to the last; () : the first step that shows it (or a step check chooses)

    @property
    def per_head(self) -> bool:
        return self.shape.startswith(("h ", "g "))

    @property
    def per_kv_head(self) -> bool:
        return self.shape.startswith("g ")

    @property
    def rows(self) -> str | None:
        """The axis role of its rows: ``"query"`` (one per query, n), ``"key"`` (one per key, m), or None."""
        dims = self.shape.split()
        return "query" if "n" in dims else "key" if "m" in dims else None

    @property
    def row_axis(self) -> int | None:
        """The axis of its rows (one per query, or else one per key), or None: ``h n d_k`` -> 1, ``m r_kv`` -> 0."""
        dims = self.shape.split()
        return dims.index("n") if "n" in dims else dims.index("m") if "m" in dims else None

    @property
    def matrix(self) -> bool:
        """An n × m matrix per head: kept only by the full computation."""
        return self.shape.startswith(("h n m", "p n m"))  # (p: differential attention's head pairs)


class Lazy:
    """A stage's variants named by where they live, imported the first time they are read: only ``attncli check``
    reads them, so a computation never imports :mod:`attncli.core.variants`.

    Each name is ``"module:NAME"``, NAME a :class:`~attncli.core.variants.Variant` or a tuple of them; iterating
    gives them all in the names' order, the same objects at every reading (each module imported once, the tuple
    kept).  With ``args`` the one name is a function that makes the stage's one variant from them (the
    temperature's, from the query stage it multiplies).  Frozen; a plain class, not a dataclass (one of those costs
    its generated methods' compile at every start), equal only to itself.
    """

    __slots__ = ("names", "args")
    names: tuple[str, ...]
    args: tuple

    def __init__(self, *names: str, args: tuple = ()) -> None:
        object.__setattr__(self, "names", names)
        object.__setattr__(self, "args", args)

    def __setattr__(self, name: str, value) -> None:
        raise AttributeError(f"Lazy is frozen: cannot set {name}")

    def __iter__(self) -> Iterator[Variant]:
        return iter(resolved(self))

    def __copy__(self) -> Lazy:  # (frozen: a copy, even a deep one, is itself, as a tuple's would be)
        return self

    def __deepcopy__(self, memo: dict) -> Lazy:
        return self

    def __repr__(self) -> str:
        return f"Lazy({', '.join(map(repr, self.names))}{f', args={self.args!r}' if self.args else ''})"


def resolved(lazy: Lazy) -> tuple[Variant, ...]:
    """The variants ``lazy`` names, in order: imported at the first call, the same tuple at every later one (also
    when two threads ask at once: the first tuple stored is the one kept)."""
    done = _RESOLVED.get(lazy)
    if done is not None:
        return done
    import importlib

    found: list[Variant] = []
    for name in lazy.names:
        module, _, attribute = name.partition(":")
        value = getattr(importlib.import_module(module), attribute)
        value = value(*lazy.args) if lazy.args else value
        found += value if isinstance(value, tuple) else (value,)
    return _RESOLVED.setdefault(lazy, tuple(found))


_RESOLVED: dict[Lazy, tuple[Variant, ...]] = {}


@record
class Stage:
    """One stage of the computation (see the module's docstring)."""

    name: str
    formula: str
    reads: tuple[str, ...]
    writes: tuple[Quantity, ...]  # what it computes, and the document's matrices it applies (parameters)
    run: Callable[[Spec, Arrays], Arrays]  # on every query at once -> the arrays it writes
    present: Callable[[Spec], bool] = lambda spec: True
    part: str = "before"  # "before", "attention" or "after"
    block: Callable[[Spec, Arrays, int, int], Arrays] | None = None  # attention: the queries lo … hi − 1 only
    tiled: Callable[[Spec], bool] = lambda spec: False  # attention: done by the fused kernel of core.tiles
    backward: Callable[[Spec, Arrays, Arrays], Arrays] | None = None  # the gradients of what it read, from those
    #   of what it wrote (core.gradients); None: nothing it makes carries a gradient back
    variants: Lazy | tuple[Variant, ...] = ()  # its plausible wrong versions, for check (core.variants), read
    #   by iterating: a Lazy imports them then
    explained: tuple[str, ...] = ()  # the extra explain steps that show it (``--step rope``), named as the document's
    #   part; explain shows such a step after the last stage it shows (:func:`extra_steps`)

    @property
    def keys(self) -> tuple[str, ...]:
        """The JSON keys of the arrays it computes."""
        return tuple(q.key for q in self.writes if not q.parameter)

    @property
    def parameters(self) -> tuple[Quantity, ...]:
        """The document's matrices it applies (W_Q, b_Q …), each before what it makes."""
        return tuple(q for q in self.writes if q.parameter)


def extra_steps(stages: tuple[Stage, ...]) -> tuple[str, ...]:
    """The extra explain steps of ``stages`` (each ``Stage.explained``), in the order explain shows them: each after
    the last stage it shows (the latent step after the rotation: it shows the absorbed queries)."""
    last = {name: i for i, stage in enumerate(stages) for name in stage.explained}
    return tuple(sorted(last, key=last.__getitem__))  # (a stable sort: one stage's steps in their own order)


# ---------------------------------------------------------------- what several stages' steps share


def rows_in(spec: Spec, a: Arrays):
    """The rows the projections and the gate read (n, d_model): X̂ with pre_norm, else X₀ = X (+ P)."""
    return spec.embedded if a.get("normalized_inputs") is None else a["normalized_inputs"]


def rows_key(spec: Spec) -> str:
    """The JSON key of :func:`rows_in`'s rows: where a backward step sends their gradient."""
    return "normalized_inputs" if spec.pre_norm is not None else "inputs"


def added(out: Arrays, key: str, value) -> None:
    """``out[key]`` += ``value``, in place: ``out``'s arrays are the step's own (no third n × d_model array)."""
    if key in out:
        out[key] += value
    else:
        out[key] = value
