"""The backward pass's oracle without torch: central differences of L = Σ gradient ⊙ (the block's last quantity).

For every gradient key a result holds, L is computed again with what that key is the gradient of moved a little
along a random direction u, both ways: (L(x + h·u) − L(x − h·u)) / 2h is ⟨dL/dx, u⟩ to O(h²), which the key's
array must give.  What is moved:

- a matrix of the document (``grad_weight_query`` → ``weights.query``, ``grad_sinks`` → ``sinks``, a norm's γ …):
  the document itself, changed, read and computed again by ``attncli.compute``: the whole forward pass;
- a quantity the computation makes (``grad_scores`` → ``scores``): the forward arrays, with that quantity changed
  where the last stage the document has that writes it left it, and the stages after it run again;
- ``delta`` (D_i = rowsum(dH ⊙ H)): the derivative of L when each row of H is scaled by (1 + t·u_i).

Where one stage writes a quantity and also what follows from it (``residual`` and ``normalized``, c_Q and Q), the
step from it is written here from FORMAT.md.  Nothing here reads a gradient attncli computed, except to compare.
"""

from __future__ import annotations

import copy
from collections.abc import Callable

import numpy as np

import attncli
from attncli.core.pipeline import run
from attncli.core.stages import STAGES

STEP = 1e-6  # relative to the size of what is moved
TOLERANCE = 1e-6  # relative to |dL/dx|·|u|
QUERY_KEYS = ("queries", "queries_rotated", "normalized_queries")
KEY_KEYS = ("keys", "keys_rotated", "normalized_keys")

# a gradient of a document's matrix -> where the document holds it (and its value when the document leaves it out)
NORMS = ("pre_norm", "post_norm", "add_norm")


def leaf_path(key: str, doc: dict) -> tuple[str, ...] | None:
    """Where in the document the array ``key`` is the gradient of lives; None: a quantity the computation makes."""
    name = key.removeprefix("grad_")
    if name in ("inputs", "context", "sinks"):
        return (name,)
    for prefix, section in (("weight_", "weights"), ("bias_", "bias")):
        if name.startswith(prefix):
            return section, name.removeprefix(prefix)
    for norm in NORMS:
        if name.startswith(f"{norm}_"):
            return norm, name.removeprefix(f"{norm}_")
    if name.startswith("qk_norm_"):
        _, _, param, what = name.split("_")
        return "qk_norm", param, what
    if name.startswith("latent_") and name.endswith("_norm_gamma"):
        return "latent", name.removeprefix("latent_").removesuffix("_gamma"), "gamma"
    return None


def last_of(trace_or_arrays, spec) -> np.ndarray:
    """The block's last quantity: normalized with add_norm, else residual, else output."""
    get = trace_or_arrays.get if isinstance(trace_or_arrays, dict) else lambda k: getattr(trace_or_arrays, k)
    if spec.add_norm is not None:
        return get("normalized")
    return get("residual") if spec.residual else get("output")


def seed_of(doc: dict, last: np.ndarray) -> np.ndarray:
    """The document's gradient in the last quantity's shape (dO per head is n × h·d_v with the heads side by side)."""
    g = np.asarray(doc["gradient"], dtype=np.float64)
    return g.transpose(1, 0, 2).reshape(last.shape) if g.shape != last.shape else g


class Oracle:
    """One document: its gradient keys, each checked along random directions."""

    def __init__(self, doc: dict, seed: int = 0):
        self.doc = doc
        self.plain = {key: value for key, value in doc.items() if key != "gradient"}
        self.trace = attncli.compute(doc)
        self.spec = attncli.compute(self.plain).spec
        self.arrays = run(self.spec)
        self.seed = seed_of(doc, last_of(self.trace, self.spec))
        self.rng = np.random.default_rng(seed)

    # ---------------------------------------------------------------- L with one thing moved

    def loss(self, last: np.ndarray) -> float:
        return float(np.sum(self.seed * last))

    def along_document(self, path: tuple[str, ...]) -> tuple[np.ndarray, Callable[[np.ndarray], float]]:
        x = np.asarray(_get(self.doc, path, self.default(path)), dtype=np.float64)

        def loss(moved: np.ndarray) -> float:
            changed = copy.deepcopy(self.plain)
            _set(changed, path, moved)
            trace = attncli.compute(changed)
            return self.loss(last_of(trace, trace.spec))
        return x, loss

    def default(self, path: tuple[str, ...]):
        """A norm's γ (ones) or β (zeros) the document leaves to its default, so that it can be moved."""
        def width(key):
            return self.trace.spec.inputs.shape[1] if key != "post_norm" else self.trace.output.shape[1]
        if path[0] in NORMS and path[1] in ("gamma", "beta"):
            return (np.ones if path[1] == "gamma" else np.zeros)(width(path[0]))
        if path[0] == "latent" and path[2] == "gamma":
            lat = self.spec.latent
            return np.ones(lat.r_kv if path[1] == "kv_norm" else lat.r_q)
        return None

    def along_quantity(self, key: str) -> tuple[np.ndarray, Callable[[np.ndarray], float]]:
        spec, a = self.spec, self.arrays
        present = [stage for stage in STAGES if stage.present(spec)]
        if key in ("kernel_queries", "kernel_keys"):  # the last query (key) stage, moved by u/τ (by u)
            kinds = QUERY_KEYS if key == "kernel_queries" else KEY_KEYS
            at = max(i for i, stage in enumerate(present) if set(stage.keys) & set(kinds))
            inner = next(k for k in present[at].keys if k in kinds)
            tau = a.get("query_temperature") if key == "kernel_queries" else None
            tau = 1.0 if tau is None else tau[None, :, None]
            return a[key], lambda moved: self.loss(self.after(present, at, {inner: a[inner] + (moved - a[key]) / tau}))
        if key in ("latent_queries", "latent_kv"):
            at = next(i for i, stage in enumerate(present) if stage.name == "latent")
            return a[key], lambda moved: self.loss(self.after(present, at, self.latent_from(key, moved)))
        if key == "residual" and spec.add_norm is not None:  # N = LayerNorm(R) is made by the same stage
            gamma, beta, eps = spec.add_norm
            return a[key], lambda moved: self.loss(layer_norm(moved, gamma, beta, eps))
        at = max(i for i, stage in enumerate(present) if key in stage.keys)
        return a[key], lambda moved: self.loss(self.after(present, at, {key: moved}))

    def after(self, present: list, at: int, given: dict) -> np.ndarray:
        """The last quantity with ``given`` in place of what stage ``at`` made, every later stage run again (a later
        stage may rewrite it: clip_qkv clamps the Q that latent makes)."""
        with np.errstate(all="ignore"):
            out = run(self.spec, {**self.arrays, **given}, stages=present[at + 1:])
        return last_of(out, self.spec)

    def latent_from(self, key: str, moved: np.ndarray) -> dict:
        """Q (from c_Q), or K and V (from c_KV) as FORMAT.md makes them: Q_h = c_Q·W_UQ,h + b_Q,
        K_h = (c_KV·W_UK,h + b_K | k_r), V_h = c_KV·W_UV,h + b_V; k_r as the keys hold it."""
        spec, a = self.spec, self.arrays

        def project(x, w, b):  # x (n, r), w (h, r, d), b (h, d) or None -> (h, n, d)
            return np.einsum("nr,hrd->hnd", x, w) + (0.0 if b is None else b[:, None, :])
        if key == "latent_queries":
            return {"latent_queries": moved, "queries": project(moved, spec.w_q, spec.b_q)}
        d_nope = spec.latent.d_nope
        keys = a["keys"].copy()
        keys[..., :d_nope] = project(moved, spec.w_k, spec.b_k)
        return {"latent_kv": moved, "keys": keys, "values": project(moved, spec.w_v, spec.b_v)}

    def along_delta(self) -> tuple[np.ndarray, Callable[[np.ndarray], float]]:
        """D as the derivative of L in t, each row (h, i) of H scaled by 1 + t·u_hi: moved = t·u."""
        present = [stage for stage in STAGES if stage.present(self.spec)]
        at = max(i for i, stage in enumerate(present) if "head_outputs" in stage.keys)
        h = self.arrays["head_outputs"]
        zero = np.zeros(h.shape[:2])
        return zero, lambda moved: self.loss(self.after(present, at, {"head_outputs": h * (1.0 + moved[..., None])}))

    # ---------------------------------------------------------------- the comparison

    def mover(self, key: str):
        if key == "delta":
            return self.along_delta()
        path = leaf_path(key, self.doc)
        if path is not None and (path[0] != "latent" or "latent" in self.doc):
            return self.along_document(path)
        return self.along_quantity(key.removeprefix("grad_"))

    def check(self, key: str, directions: int = 2) -> list[tuple[float, float, float]]:
        """(⟨gradient, u⟩, the central difference, the tolerance) along ``directions`` random unit directions."""
        got = self.trace.gradients[key]
        x, loss = self.mover(key)
        assert got.shape == x.shape, f"{key}: {got.shape}, but what it is the gradient of is {x.shape}"
        h = STEP * max(1.0, float(np.sqrt(np.mean(x * x))) * np.sqrt(x.size))
        out = []
        for _ in range(directions):
            u = self.rng.normal(size=x.shape)
            u /= np.linalg.norm(u)
            difference = (loss(x + h * u) - loss(x - h * u)) / (2 * h)
            rounding = 1e-13 * float(np.sum(np.abs(self.seed * last_of(self.trace, self.spec)))) / h
            out.append((float(np.sum(got * u)), difference, TOLERANCE * float(np.linalg.norm(got)) + rounding))
        return out

    def failures(self, directions: int = 2) -> dict[str, list]:
        """Every gradient key of the result whose directional derivatives are not the central differences."""
        bad = {}
        for key in self.trace.gradients:
            found = self.check(key, directions)
            if any(abs(mine - theirs) > tol for mine, theirs, tol in found):
                bad[key] = found
        return bad


def layer_norm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: float) -> np.ndarray:
    centred = x - x.mean(axis=-1, keepdims=True)
    return gamma * centred / np.sqrt(np.mean(centred * centred, axis=-1, keepdims=True) + eps) + beta


def _get(doc: dict, path: tuple[str, ...], default):
    node = doc
    for part in path:
        if not isinstance(node, dict) or part not in node:
            return default
        node = node[part]
    return node


def _set(doc: dict, path: tuple[str, ...], value) -> None:
    node = doc
    for part in path[:-1]:
        if not isinstance(node.get(part), dict):
            node[part] = {} if node.get(part) in (None, True) else node[part]
        node = node[part]
    node[path[-1]] = value
