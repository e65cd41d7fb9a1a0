"""FlexAttention's ``score_mod`` and ``mask_mod`` called on broadcast index arrays, and score_mod's derivative.

For the block of query heads ``heads``, queries lo … hi − 1 and keys s0 … s1 − 1 of sequence b, the callables get
``b`` (a 0-d integer array), ``h`` (G, 1, 1), ``q_idx`` (1, rows, 1) and ``kv_idx`` (1, 1, keys), positions counted
from the start of the sequence, and ``score_mod`` the scores Z (G, rows, keys): torch tensors (float64, int64)
when the inputs were tensors, so FlexAttention's own callables (``torch.where`` …) run unchanged; numpy arrays
otherwise.  What they return is broadcast to (G, rows, keys).

The backward pass multiplies dZ by score_mod's derivative: by ``torch.autograd`` for tensors, by the complex step
Im f(z + iε) / ε for numpy (exact to rounding for the arithmetic and elementary functions scores are made of).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from attncli.kernel_arrays import ArgumentError, torch_module

STEP = 1e-100  # ε of the complex step: f(z + iε) = f(z) + iε·f′(z) + O(ε²)


class Mods:
    def __init__(self, score_mod: Callable | None, mask_mod: Callable | None, torch_kind: bool) -> None:
        self.score_mod, self.mask_mod, self.torch_kind = score_mod, mask_mod, torch_kind

    def _indices(self, b: int, heads: slice, lo: int, hi: int, s0: int, s1: int) -> tuple:
        idx = (np.array(b), np.arange(heads.start, heads.stop)[:, None, None], np.arange(lo, hi)[None, :, None],
               np.arange(s0, s1)[None, None, :])
        return tuple(torch_module().from_numpy(i) for i in idx) if self.torch_kind else idx

    def _numpy(self, x, shape: tuple[int, ...]) -> np.ndarray:
        if self.torch_kind and hasattr(x, "detach"):
            x = x.detach().numpy()
        return np.broadcast_to(np.asarray(x), shape)

    def scores(self, z: np.ndarray, b: int, heads: slice, lo: int, hi: int, s0: int, s1: int) -> np.ndarray:
        """score_mod(Z, b, h, q_idx, kv_idx) (G, rows, keys), float64."""
        score = torch_module().from_numpy(z) if self.torch_kind else z
        made = self._numpy(self.score_mod(score, *self._indices(b, heads, lo, hi, s0, s1)), z.shape)
        if made.dtype.kind not in "fiu":
            raise ArgumentError("kernel_mods.score_mod_returned_scores_block_real", dtype=made.dtype, shape=z.shape)
        return made.astype(np.float64)

    def scores_back(self, z: np.ndarray, d_z: np.ndarray, b: int, heads: slice, lo: int, hi: int, s0: int,
                    s1: int) -> np.ndarray:
        """dZ before score_mod: dZ′ ⊙ ∂score_mod/∂Z (0 where dZ′ is 0: a masked cell)."""
        idx = self._indices(b, heads, lo, hi, s0, s1)
        if self.torch_kind:
            torch = torch_module()
            score = torch.from_numpy(z.copy()).requires_grad_(True)
            with torch.enable_grad():
                made = self.score_mod(score, *idx)
                if not getattr(made, "requires_grad", False):
                    return np.zeros_like(d_z)  # a score_mod that does not read the score
                (grad,) = torch.autograd.grad(made, score, grad_outputs=torch.from_numpy(np.array(
                    np.broadcast_to(d_z, made.shape))), allow_unused=True)
            return np.zeros_like(d_z) if grad is None else grad.numpy()
        try:
            made = np.asarray(self.score_mod(z + 1j * STEP, *idx))
        except TypeError as e:
            raise ArgumentError("kernel_mods.score_mod_cannot_differentiated_numpy_scores", e=e
                                ) from None
        slope = np.broadcast_to(made.imag / STEP if np.iscomplexobj(made) else np.zeros(made.shape), z.shape)
        return np.where(d_z == 0.0, 0.0, d_z * slope)

    def mask(self, b: int, heads: slice, lo: int, hi: int, s0: int, s1: int) -> np.ndarray:
        """mask_mod(b, h, q_idx, kv_idx), True = attend, broadcast to (G, rows, keys)."""
        shape = (heads.stop - heads.start, hi - lo, s1 - s0)
        made = self._numpy(self.mask_mod(*self._indices(b, heads, lo, hi, s0, s1)), shape)
        if made.dtype != bool:
            raise ArgumentError("kernel_mods.mask_mod_returned_block_must_return", dtype=made.dtype, shape=shape)
        return made
