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
                raise AttnError("linear.not_used_linear_layer_linear",
                                key) if key in _SOFTMAX_KEYS else unknown_document_key(key, TOP)
        self.data, self.folder, self.files = doc.data, doc.folder, set()
        self.block = mapping_of(doc.data["linear"], "linear", KEYS)

    def read(self, key: str, value: Any, shape: tuple[int, ...] | None = None) -> np.ndarray:
        """The array at ``linear.KEY`` (or a top-level key), as float64; ``{product: [A, B, …]}`` is A·B·…"""
        if isinstance(value, dict) and "product" in value:
            factors = mapping_of(value, key, ("product",))["product"]
            if not isinstance(factors, list) or len(factors) < 2:
                raise AttnError("linear.not_list_two_more_matrices",
                                key + ".product", factors=describe(factors))
            arrays = [self.read(f"{key}.product[{i}]", f) for i, f in enumerate(factors)]
            for i in range(1, len(arrays)):
                a, b = arrays[i - 1], arrays[i]
                if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
                    raise AttnError("linear.after_product_needs_matrices_whose", f"{key}.product[{i}]",
                                    b_shape=shape_str(b.shape), a_shape=shape_str(a.shape))
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
                raise AttnError("linear.required", "linear." + key, what=what, shape=shape_str(shape))
            return np.full(shape, default)
        array = self.read("linear." + key, value, shape)
        if array.shape != shape:
            raise AttnError("linear.expected", "linear." + key, array_shape=shape_str(array.shape), what=what,
                            shape=shape_str(shape))
        return array

    def spec(self) -> LinearSpec:
        kind = self.block.get("kind")
        if kind not in KINDS:
            raise AttnError("linear.not_kind_linear_attention_gated_delta", "linear.kind", kind=describe(kind))
        if kind == "lightning":
            from attncli.inputs.lightning import read_lightning

            spec = read_lightning(self, dict(kind=kind, chunk=self._chunk(kind), l2=False))
        else:
            for key in LIGHTNING_ONLY:
                if self.block.get(key) is not None:
                    raise AttnError("linear.belongs_lightning_attention_kind_lightning_2",
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
            raise AttnError("gemma.not_true_false", "linear." + key, flag=describe(value))
        return value

    def _heads(self) -> tuple[int, int]:
        heads = head_count(self.block.get("heads"), "linear.heads") or 1
        value_heads = head_count(self.block.get("value_heads"), "linear.value_heads") or heads
        if value_heads % heads:
            raise AttnError("linear.which_not_multiple_heads_each", "linear.value_heads", value_heads=value_heads,
                            heads=heads)
        return heads, value_heads

    def _weight(self, weights: dict, name: str, rows: int, what: str, heads: int | None = None,
                columns: int | None = None) -> np.ndarray:
        """weights.NAME: ``rows`` × (a multiple of ``heads``, or exactly ``columns``)."""
        key = "linear.weights." + name
        if weights.get(name) is None:
            raise AttnError("linear.required_w", key, what=what)
        w = self.read(key, weights[name], (rows, columns or heads))
        if w.ndim != 2 or w.shape[0] != rows:
            raise AttnError("linear.expected_2", key, w_shape=shape_str(w.shape), what=what, rows=plural(rows, 'row'))
        if columns is not None and w.shape[1] != columns or heads is not None and w.shape[1] % heads:
            need = plural(columns, "column") if columns is not None else f"columns a multiple of {heads}"
            raise AttnError("linear.expected_3", key, w_shape=shape_str(w.shape), what=what, need=need)
        return w

    def inputs(self, lightning: bool = False) -> np.ndarray:
        """X (n, d_model), which the projections read: required, and no gradient (given for q, k, v … only)."""
        if self.block.get("gradient") is not None:
            raise AttnError("linear.backward_given_qkv_only" if lightning else "linear.backward_given_qkv_beta_g_only",
                            "linear.gradient")
        if self.data.get("inputs") is None:
            raise AttnError("linear.inputs_required_lightning" if lightning else "linear.inputs_required", "inputs")
        x = self.read("inputs", self.data["inputs"])
        if x.ndim != 2 or x.shape[0] == 0:
            raise AttnError("linear.expected_matrix_n_d_model", "inputs", x_shape=shape_str(x.shape))
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
            raise AttnError("linear.expected_one_kernel_per_channel", "linear.conv", conv_shape=shape_str(conv.shape),
                            channels=channels)
        return conv

    def _norm(self, kind: str, d_v: int, gated: bool) -> tuple[np.ndarray, float, str] | None:
        value = self.block.get("norm")
        if value is None or value is False:
            return (np.ones(d_v), 1e-6, DEFAULT_ACTIVATION[kind]) if gated else None
        norm = {} if value is True else mapping_of(value, "linear.norm", ("gamma", "eps", "activation"))
        gamma = np.ones(d_v) if norm.get("gamma") is None else self.read("linear.norm.gamma", norm["gamma"], (d_v,))
        if gamma.shape != (d_v,):
            raise AttnError("linear.expected_one_number_per_value",
                            "linear.norm.gamma", gamma_shape=shape_str(gamma.shape), d_v=d_v)
        eps = number_of(norm.get("eps", 1e-6), "linear.norm.eps")
        activation = norm.get("activation", DEFAULT_ACTIVATION[kind])
        if activation not in ACTIVATIONS:
            raise AttnError("linear.not_silu_sigmoid", "linear.norm.activation", activation=describe(activation))
        return gamma, eps, activation

    def _given(self, common: dict) -> LinearSpec:
        for key in GIVEN:
            if self.block.get(key) is None:
                raise AttnError("lightning.required_what_kernel_receives_given", "linear." + key,
                                value=", ".join(k for k in GIVEN if k != key))
        for key in FROM_INPUTS:
            if self.block.get(key) is not None:
                raise AttnError("linear.makes_q_k_v_g",
                                "linear." + key)
        if self.data.get("inputs") is not None:
            raise AttnError("linear.cannot_used_queries_keys_values", "inputs")
        arrays = {key: self.read("linear." + key, self.block[key]) for key in GIVEN}
        q = arrays["queries"]
        if q.ndim != 3 or q.shape[1] == 0:
            raise AttnError("linear.expected_h_k_n_d_k", "linear.queries", q_shape=shape_str(q.shape))
        h_k, n, d_k = q.shape
        v = arrays["values"]
        if v.ndim != 3 or v.shape[1] != n or v.shape[0] % h_k:
            raise AttnError("linear.expected_h_v_n_d_v_n", "linear.values", v_shape=shape_str(v.shape), n=n, h_k=h_k)
        h_v = v.shape[0]
        per_channel = common["kind"] == "kda"
        expected = {"keys": (q.shape, "h_k × n × d_k"), "beta": ((h_v, n), "h_v × n"),
                    "g": ((h_v, n, d_k) if per_channel else (h_v, n), "h_v × n × d_k" if per_channel else "h_v × n")}
        for key, (shape, what) in expected.items():
            if arrays[key].shape != shape:
                raise AttnError("linear.expected",
                                "linear." + key, array_shape=shape_str(arrays[key].shape), what=what,
                                shape=shape_str(shape))
        for key, count in (("heads", h_k), ("value_heads", h_v)):
            stated = head_count(self.block.get(key), "linear." + key)
            if stated is not None and stated != count:
                raise AttnError("lightning.but_given_arrays_have", "linear." + key, stated=stated, h=count)
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
            raise AttnError("linear.expected_dl_d_head_outputs_h_v", "linear.gradient",
                            seed_shape=shape_str(seed.shape), shape=shape_str(shape))
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
