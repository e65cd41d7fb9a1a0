"""The seam between the builder and the readers of the optional keys (layers, modern, masking).

:mod:`attncli.inputs.builder`'s ``_Builder`` is the one :class:`MatrixSource`; the readers see only this much of
it, so they can neither reach its other state nor import it (it imports them).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

import numpy as np


class MatrixSource(Protocol):
    """The document being built, as the readers of its optional keys use it."""

    @property
    def data(self) -> Mapping[str, Any]:
        """The document's top-level keys (command-line overrides applied), values as the document gives them."""
        ...

    @property
    def weights(self) -> Mapping[str, Any]:
        """The ``weights:`` section by projection name (empty when the document has none), values unread."""
        ...

    def read(
        self, key: str, value: Any, shape: tuple[int, ...] | None = None, boolean: bool = False, minus_inf: bool = False
    ) -> np.ndarray:
        """The matrix at ``key``, read once; ``shape`` sizes a shapeless random one, ``boolean`` reads a mask."""
        ...
