"""The heat map of a ``linear:`` document (docs/format.md Part 4): the state S (d_k × d_v) of each value head after
one token, or lightning attention's decayed scores (n × n), drawn as :class:`~attncli.views.heatmap.HeatMap` draws
attention: one head large with its numbers, or every head side by side on one colour scale, signed around 0."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from rich.cells import cell_len

from attncli.core.errors import visible
from attncli.core.linear import LinearTrace
from attncli.outputs.texts import texts
from attncli.views.heatmap import KEY_CELLS_MANY, KEY_CELLS_ONE, HeatMap, Scale
from attncli.views.words import words


class LinearHeatMap(HeatMap):
    """``of``: ``state`` (after token ``t``, 0-based; the recurrence's state[t]) or ``decayed_scores``; ``head``
    a value head (0-based) or None for all."""

    def __init__(self, trace: LinearTrace, of: str, t: int, head: int | None = None, full: bool = False,
                 color: bool = True, precision: int = 2, lang: str = "en"):
        spec = trace.spec
        self.of, self.full, self.color, self.precision, self.layer = of, full, color, precision, ""
        self.signed = True
        self.texts, self.t = texts(lang)["views_linear"], t  # the title's words (the texts' table views_linear)
        self.words = {**words(lang), **({"axes": self.texts["axes"]} if of == "state" else {})}
        self.token = visible(spec.tokens[t])
        self.formula = "state_lightning" if of == "state" and spec.kind == "lightning" else of  # its own recurrence
        if of == "state":
            self.matrices = trace["state"][:, t]  # (h_v, d_k, d_v)
            rows, cols = [f"k{i}" for i in range(1, spec.d_k + 1)], [str(j) for j in range(1, spec.d_v + 1)]
            masked = np.zeros(self.matrices.shape, bool)
        else:
            self.matrices = trace["decayed_scores"]  # (h, n, n)
            rows = cols = [visible(token) for token in spec.tokens]
            masked = np.broadcast_to(np.triu(np.ones((spec.n, spec.n), bool), 1), self.matrices.shape)
        h = self.matrices.shape[0]
        self.spec = SimpleNamespace(tokens=rows, context_tokens=cols, n=len(rows), m=len(cols), heads=h, kv_heads=h,
                                    d_k=spec.d_k)
        self.sinks = None
        self.heads = list(range(h)) if head is None else [head]
        self.masked = masked
        self.scale = self._scale()
        key_w = max(cell_len(label) for label in cols)
        self.numbered = key_w + 1 > (KEY_CELLS_MANY if len(self.heads) > 1 else KEY_CELLS_ONE)

    def _scale(self) -> Scale:
        """−max|x| … max|x| over the heads drawn (their unmasked cells): 0 in the middle."""
        top = max(float(np.abs(self.matrices[h]).max(where=~self.masked[h], initial=0.0)) for h in self.heads)
        return Scale(-top, top) if top > 0 else Scale(-1.0, 1.0)

    def title(self) -> str:
        w, spec = self.texts, self.spec
        formula = w[self.formula].format(t=self.t + 1, token=self.token, d_k=spec.d_k)
        which = w["head_of"].format(h=self.heads[0] + 1, heads=spec.heads) if len(self.heads) == 1 and \
            spec.heads > 1 else (w["heads"].format(heads=spec.heads) if spec.heads > 1 else "")
        return "   ".join(part for part in (formula, which, w["sizes"].format(n=spec.n, m=spec.m)) if part)
