"""The result: every intermediate of one attention computation, computed once and read by every view.

:class:`Trace` has one array field per quantity a stage of :data:`attncli.core.stages.STAGES` computes (those
without a ``source``: the document's own arrays, X, P and C, are read from the Spec), named as its JSON key, in
the stage list's order; the fields are made from the list, so a new stage's quantities are fields without an
edit here.  Its shape is the quantity's (``Quantity.shape``: ``h n d_k`` is per query head, one row per query).

>>> "queries" in TRACE_ARRAYS and "inputs" not in TRACE_ARRAYS
True
"""

from __future__ import annotations

from dataclasses import field, make_dataclass

import numpy as np

from attncli.core.record import record
from attncli.core.spec import Spec
from attncli.core.stages import STAGES

TRACE_ARRAYS = tuple(dict.fromkeys(q.key for stage in STAGES for q in stage.writes if not q.source))  # by JSON key


class _Arrays:
    """What a Trace reads besides its fields: the gradients by key, the document's own arrays, the heads joined."""

    __slots__ = ()

    def __getattr__(self, name: str) -> np.ndarray | None:
        """A gradient by its JSON key (``trace.grad_queries``), None when not computed."""
        if name.startswith("grad_") or name == "delta":
            return self.__dict__.get("gradients", {}).get(name)
        raise AttributeError(name)

    @property
    def inputs(self) -> np.ndarray:
        """X (n, d_model), as the JSON key ``inputs``."""
        return self.spec.inputs

    @property
    def context(self) -> np.ndarray | None:
        """C (m, d_ctx), or None for self-attention."""
        return self.spec.context

    @property
    def positional(self) -> np.ndarray | None:
        """P (n, d_model), or None without ``positional``."""
        return self.spec.positional

    @property
    def mixed_values(self) -> np.ndarray | None:
        """The values the weights mix (g, m, d_v): V̂ with ``v_norm`` (Gemma 4), else V."""
        return self.values if self.spec.v_norm is None else self.normalized_values

    @property
    def concat(self) -> np.ndarray:
        """The heads side by side: (n, h·d_v)."""
        h, n, d_v = self.head_outputs.shape
        return self.head_outputs.transpose(1, 0, 2).reshape(n, h * d_v)


Trace = record(make_dataclass(
    "Trace",
    [("spec", Spec),
     *((key, np.ndarray | None, field(default=None)) for key in TRACE_ARRAYS),  # a stage that did not run: None
     ("empty_queries", tuple, field(default=())),  # queries whose every key is masked
     ("gradients", dict, field(default_factory=dict)),  # with gradient: grad_* and delta, by JSON key
     ("emulated", str | None, field(default=None))],  # compute --emulate's dtype ('bf16'): the eager computation's
    bases=(_Arrays,), init=False, repr=False, eq=False, kw_only=True,  # (its methods: core.record's, below)
    namespace={"__doc__": "Every intermediate of one attention computation (per-head arrays head-first).\n\n"
               "    The array fields carry the names of the JSON keys (``queries``, ``weights`` …, one per computed\n"
               "    quantity of the stage list), and are given by name: ``Trace(spec=spec, queries=q, …)``; a stage\n"
               "    that did not run leaves its array None."}),
    eq=False, kw_only=True)  # holds arrays: == and hash() by identity
Trace.__module__ = __name__  # (make_dataclass's own ``module`` is Python 3.12's)
