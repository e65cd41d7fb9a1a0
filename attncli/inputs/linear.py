"""A ``linear:`` document (docs/format.md Part 4) -> a checked :class:`~attncli.core.linear.LinearSpec` (lightning
attention's own keys: :mod:`attncli.inputs.lightning`).

Every shape relation is checked here, each error naming its key (``linear.weights.query: …``), so the delta rule
in :mod:`attncli.core.delta` never sees an inconsistent document.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from attncli.core.errors import AttnError, describe, plural, shape_str
from attncli.core.linear import ACTIVATIONS, LinearSpec
from attncli.inputs.archives import is_archive
from attncli.inputs.document import Document
from attncli.inputs.matrices import read_value
from attncli.inputs.reading import real_path
from attncli.inputs.values import head_count, mapping_of, number_of, scale_of, token_labels, unknown_document_key

TOP = ("tokens", "inputs", "linear", "answer")  # a linear: document's top-level keys (answer: for check)
KEYS = ("kind", "heads", "value_heads", "weights", "conv", "A_log", "dt_bias", "norm", "l2norm", "scale", "chunk",
        "initial_state", "queries", "keys", "values", "beta", "g", "gradient", "slopes", "activation")
GIVEN = ("queries", "keys", "values", "beta", "g")  # what a kernel receives, instead of inputs and weights
FROM_INPUTS = ("weights", "conv", "A_log", "dt_bias", "norm")
WEIGHTS = ("query", "key", "value", "beta", "decay", "gate", "output")
KINDS = ("gated_delta", "kda", "lightning")
LIGHTNING_ONLY = ("slopes", "activation")
CHUNK = {"gated_delta": 64, "kda": 64, "lightning": 256}  # transformers' chunk and block sizes
SCALE = {"gated_delta": "sqrt", "kda": "sqrt", "lightning": "none"}
DEFAULT_ACTIVATION = {"gated_delta": "silu", "kda": "sigmoid"}


def read_linear(doc: Document) -> LinearSpec:
    """Validate a ``linear:`` document into a LinearSpec (errors name the file and the key)."""
    try:
        return _Reader(doc).spec()
    except AttnError as e:
        raise e.at(doc.name) from None


class _Reader:
    def __init__(self, doc: Document):
        for key in doc.data:
            if key not in TOP:
                raise AttnError("is not used with linear: (a layer of linear attention takes tokens, inputs and "
                                "linear only)", key) if key in _SOFTMAX_KEYS else unknown_document_key(key, TOP)
        self.data, self.folder, self.files = doc.data, doc.folder, set()
        self.block = mapping_of(doc.data["linear"], "linear", KEYS)

    def read(self, key: str, value: Any, shape: tuple[int, ...] | None = None) -> np.ndarray:
        """The array at ``linear.KEY`` (or a top-level key), as float64; ``{product: [A, B, …]}`` is A·B·…"""
        if isinstance(value, dict) and "product" in value:
            factors = mapping_of(value, key, ("product",))["product"]
            if not isinstance(factors, list) or len(factors) < 2:
                raise AttnError(f"{describe(factors)} is not a list of two or more matrices to multiply",
                                key + ".product")
            arrays = [self.read(f"{key}.product[{i}]", f) for i, f in enumerate(factors)]
            for i in range(1, len(arrays)):
                a, b = arrays[i - 1], arrays[i]
                if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
                    raise AttnError(f"is {shape_str(b.shape)} after {shape_str(a.shape)}: the product needs matrices "
                                    "whose inner sizes agree", f"{key}.product[{i}]")
            product = arrays[0]
            for b in arrays[1:]:
                product = product @ b
            return product
        if isinstance(value, str):
            self.files.add(real_path(self.folder / value))
        elif is_archive(value) and isinstance(value.get("file"), str):
            self.files.add(real_path(self.folder / value["file"]))
        try:
            return np.asarray(read_value(value, self.folder, shape), dtype=np.float64)
        except AttnError as e:
            raise e.at(key) from None

    def array(self, key: str, shape: tuple[int, ...], what: str, default: float | None = None) -> np.ndarray:
        """``linear.KEY`` of exactly ``shape`` (``what`` names its axes), or ``default`` everywhere when omitted."""
        value = self.block.get(key)
        if value is None:
            if default is None:
                raise AttnError(f"is required ({what} = {shape_str(shape)})", "linear." + key)
            return np.full(shape, default)
        array = self.read("linear." + key, value, shape)
        if array.shape != shape:
            raise AttnError(f"is {shape_str(array.shape)}; expected {what} = {shape_str(shape)}", "linear." + key)
        return array

    def spec(self) -> LinearSpec:
        kind = self.block.get("kind")
        if kind not in KINDS:
            raise AttnError(f"{describe(kind)} is not a kind of linear attention: gated_delta (Gated DeltaNet), kda "
                            "(Kimi Delta Attention) or lightning (MiniMax)", "linear.kind")
        if kind == "lightning":
            from attncli.inputs.lightning import read_lightning

            spec = read_lightning(self, dict(kind=kind, chunk=self._chunk(kind), l2=False))
        else:
            for key in LIGHTNING_ONLY:
                if self.block.get(key) is not None:
                    raise AttnError("belongs to lightning attention (kind: lightning), not to the delta rule",
                                    "linear." + key)
            given = [key for key in GIVEN if self.block.get(key) is not None]
            common = dict(kind=kind, chunk=self._chunk(kind), l2=self._flag("l2norm"))
            spec = self._given(common) if given else self._projected(common)
        try:
            spec.scale, spec.scale_name = scale_of(self.block.get("scale", SCALE[kind]), spec.d_k)
        except AttnError as e:  # (scale_of names the top-level key: here it is the block's)
            e.where = "linear.scale"
            raise
        spec.initial_state = self._initial(spec)
        spec.files = self.files
        return spec

    def _chunk(self, kind: str) -> int:
        chunk = head_count(self.block.get("chunk", CHUNK[kind]), "linear.chunk",
                           "is more than a chunk of tokens can be")
        return int(chunk)

    def _flag(self, key: str) -> bool:
        value = self.block.get(key, True)
        if not isinstance(value, bool):
            raise AttnError(f"{describe(value)} is not true or false", "linear." + key)
        return value

    def _heads(self) -> tuple[int, int]:
        heads = head_count(self.block.get("heads"), "linear.heads") or 1
        value_heads = head_count(self.block.get("value_heads"), "linear.value_heads") or heads
        if value_heads % heads:
            raise AttnError(f"is {value_heads}, which is not a multiple of heads = {heads} (each query/key head "
                            "serves value_heads / heads value heads)", "linear.value_heads")
        return heads, value_heads

    def _weight(self, weights: dict, name: str, rows: int, what: str, heads: int | None = None,
                columns: int | None = None) -> np.ndarray:
        """weights.NAME: ``rows`` × (a multiple of ``heads``, or exactly ``columns``)."""
        key = "linear.weights." + name
        if weights.get(name) is None:
            raise AttnError(f"is required: W ({what})", key)
        w = self.read(key, weights[name], (rows, columns or heads))
        if w.ndim != 2 or w.shape[0] != rows:
            raise AttnError(f"is {shape_str(w.shape)}; expected {what} with {plural(rows, 'row')}", key)
        if columns is not None and w.shape[1] != columns or heads is not None and w.shape[1] % heads:
            need = plural(columns, "column") if columns is not None else f"columns a multiple of {heads}"
            raise AttnError(f"is {shape_str(w.shape)}; expected {what}: {need}", key)
        return w

    def inputs(self, lightning: bool = False) -> np.ndarray:
        """X (n, d_model), which the projections read: required, and no gradient (given for q, k, v … only)."""
        if self.block.get("gradient") is not None:
            raise AttnError("(the backward pass) is given for q, k and v given directly only, so far: give them in "
                            "linear:, or leave gradient out" if lightning else
                            "(the backward pass) is given for q, k, v, β and g given directly only, so far: give them "
                            "in linear:, or leave gradient out", "linear.gradient")
        if self.data.get("inputs") is None:
            raise AttnError("is required: X (n × d_model), or queries, keys and values in linear:" if lightning else
                            "is required: X (n × d_model), or queries, keys, values, beta and g in linear:", "inputs")
        x = self.read("inputs", self.data["inputs"])
        if x.ndim != 2 or x.shape[0] == 0:
            raise AttnError(f"is {shape_str(x.shape)}; expected a matrix n × d_model", "inputs")
        return x

    def _projected(self, common: dict) -> LinearSpec:
        x = self.inputs()
        n, d_model = x.shape
        h_k, h_v = self._heads()
        weights = mapping_of(self.block.get("weights") or {}, "linear.weights", WEIGHTS)
        w = {"query": self._weight(weights, "query", d_model, "d_model × h_k·d_k", heads=h_k)}
        d_k = w["query"].shape[1] // h_k
        w["key"] = self._weight(weights, "key", d_model, "d_model × h_k·d_k", columns=h_k * d_k)
        w["value"] = self._weight(weights, "value", d_model, "d_model × h_v·d_v", heads=h_v)
        d_v = w["value"].shape[1] // h_v
        kda = common["kind"] == "kda"
        w["beta"] = self._weight(weights, "beta", d_model, "d_model × h_v", columns=h_v)
        w["decay"] = self._weight(weights, "decay", d_model, "d_model × h_v·d_k" if kda else "d_model × h_v",
                                  columns=h_v * d_k if kda else h_v)
        if weights.get("gate") is not None:
            w["gate"] = self._weight(weights, "gate", d_model, "d_model × h_v·d_v", columns=h_v * d_v)
        if weights.get("output") is not None:
            w["output"] = self._weight(weights, "output", h_v * d_v, "h_v·d_v × d_out")
        conv = self._conv(2 * h_k * d_k + h_v * d_v)
        a_log = self.array("A_log", (h_v,), "h_v")
        dt_bias = self.array("dt_bias", (h_v * d_k,) if kda else (h_v,), "h_v·d_k" if kda else "h_v", 0.0)
        tokens = token_labels(self.data.get("tokens"), n, "x", "tokens", "inputs")
        return LinearSpec(tokens=tokens, heads=h_k, value_heads=h_v, d_k=d_k, d_v=d_v, scale=1.0, scale_name="",
                          inputs=x, weights=w, conv=conv, a_log=a_log,
                          dt_bias=dt_bias.reshape(h_v, d_k) if kda else dt_bias, norm=self._norm(common["kind"], d_v,
                                                                                                  "gate" in w),
                          **common)

    def _conv(self, channels: int) -> np.ndarray | None:
        if self.block.get("conv") is None:
            return None
        conv = self.read("linear.conv", self.block["conv"], (channels, 4))
        if conv.ndim == 3 and conv.shape[1] == 1:  # Conv1d's weight as stored, C × 1 × w
            conv = conv[:, 0]
        if conv.ndim != 2 or conv.shape[0] != channels or conv.shape[1] == 0:
            raise AttnError(f"is {shape_str(conv.shape)}; expected one kernel per channel of [q | k | v]: "
                            f"(2·h_k·d_k + h_v·d_v) × w = {channels} × w", "linear.conv")
        return conv

    def _norm(self, kind: str, d_v: int, gated: bool) -> tuple[np.ndarray, float, str] | None:
        value = self.block.get("norm")
        if value is None or value is False:
            return (np.ones(d_v), 1e-6, DEFAULT_ACTIVATION[kind]) if gated else None
        norm = {} if value is True else mapping_of(value, "linear.norm", ("gamma", "eps", "activation"))
        gamma = np.ones(d_v) if norm.get("gamma") is None else self.read("linear.norm.gamma", norm["gamma"], (d_v,))
        if gamma.shape != (d_v,):
            raise AttnError(f"is {shape_str(gamma.shape)}; expected γ, one number per value channel: d_v = {d_v}",
                            "linear.norm.gamma")
        eps = number_of(norm.get("eps", 1e-6), "linear.norm.eps")
        activation = norm.get("activation", DEFAULT_ACTIVATION[kind])
        if activation not in ACTIVATIONS:
            raise AttnError(f"{describe(activation)} is not silu or sigmoid", "linear.norm.activation")
        return gamma, eps, activation

    def _given(self, common: dict) -> LinearSpec:
        for key in GIVEN:
            if self.block.get(key) is None:
                raise AttnError("is required with " + ", ".join(k for k in GIVEN if k != key) + " (what the kernel "
                                "receives is given together)", "linear." + key)
        for key in FROM_INPUTS:
            if self.block.get(key) is not None:
                raise AttnError("makes q, k, v, β or g from inputs; it is not used with them given directly",
                                "linear." + key)
        if self.data.get("inputs") is not None:
            raise AttnError("cannot be used with queries, keys, values, beta and g given directly in linear:", "inputs")
        arrays = {key: self.read("linear." + key, self.block[key]) for key in GIVEN}
        q = arrays["queries"]
        if q.ndim != 3 or q.shape[1] == 0:
            raise AttnError(f"is {shape_str(q.shape)}; expected h_k × n × d_k", "linear.queries")
        h_k, n, d_k = q.shape
        v = arrays["values"]
        if v.ndim != 3 or v.shape[1] != n or v.shape[0] % h_k:
            raise AttnError(f"is {shape_str(v.shape)}; expected h_v × n × d_v with n = {n} and h_v a multiple of "
                            f"h_k = {h_k}", "linear.values")
        h_v = v.shape[0]
        per_channel = common["kind"] == "kda"
        expected = {"keys": (q.shape, "h_k × n × d_k"), "beta": ((h_v, n), "h_v × n"),
                    "g": ((h_v, n, d_k) if per_channel else (h_v, n), "h_v × n × d_k" if per_channel else "h_v × n")}
        for key, (shape, what) in expected.items():
            if arrays[key].shape != shape:
                raise AttnError(f"is {shape_str(arrays[key].shape)}; expected {what} = {shape_str(shape)}",
                                "linear." + key)
        for key, count in (("heads", h_k), ("value_heads", h_v)):
            stated = head_count(self.block.get(key), "linear." + key)
            if stated is not None and stated != count:
                raise AttnError(f"is {stated} but the given arrays have {count}", "linear." + key)
        tokens = token_labels(self.data.get("tokens"), n, "q", "tokens", "queries")
        return LinearSpec(tokens=tokens, heads=h_k, value_heads=h_v, d_k=d_k, d_v=v.shape[2], scale=1.0,
                          scale_name="", given=arrays, gradient=self._gradient(v.shape), **common)

    def _gradient(self, shape: tuple[int, int, int]) -> np.ndarray | None:
        """dL/d head_outputs: h_v × n × d_v, or n × h_v·d_v (dL/d output, the heads side by side)."""
        if self.block.get("gradient") is None:
            return None
        h_v, n, d_v = shape
        seed = self.read("linear.gradient", self.block["gradient"], shape)
        if seed.shape == (n, h_v * d_v):
            seed = seed.reshape(n, h_v, d_v).transpose(1, 0, 2)
        if seed.shape != shape:
            raise AttnError(f"is {shape_str(seed.shape)}; expected dL/d head_outputs, h_v × n × d_v = "
                            f"{shape_str(shape)} (or n × h_v·d_v)", "linear.gradient")
        return np.ascontiguousarray(seed)

    def _initial(self, spec: LinearSpec) -> np.ndarray | None:
        if self.block.get("initial_state") is None:
            return None
        return self.array("initial_state", (spec.value_heads, spec.d_k, spec.d_v), "S₀, h_v × d_k × d_v")


# a softmax document's keys: with linear: each is named as not used there, not as unknown
_SOFTMAX_KEYS = ("context", "context_tokens", "heads", "weights", "bias", "scale", "mask", "positional", "score",
                 "normalize", "add_norm", "score_bias", "latent", "kv_heads", "rope", "positions",
                 "context_positions", "pre_norm", "post_norm", "residual", "softcap", "clip_qkv", "query_temperature",
                 "sinks", "qk_norm", "gradient", "queries", "keys", "values", "layers")
