"""The input document -> a validated :class:`Spec` with every matrix per head.

Shapes follow the contract (docs/format.md): row vectors, ``Q = X·W_Q + b_Q``, weights ``d_in × d_out``.
A 2-D weight is split into ``h`` consecutive column blocks; a 3-D weight is
``h × d_in × d`` already.  Every shape relation is checked here, so the maths
in :mod:`attncli.core.attention` never sees an inconsistent document.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from attncli.core.errors import AttnError, plural, quoted, shape_str
from attncli.core.spec import Spec, positions_of
from attncli.inputs.archives import is_archive
from attncli.inputs.direct import GIVEN, build_direct, is_direct
from attncli.inputs.document import Document
from attncli.inputs.gemma import k_eq_v_given, shared_of
from attncli.inputs.gradient import read_gradient
from attncli.inputs.latent import LATENT_BIASES, LATENT_WEIGHTS, read_latent, refuse_without_latent
from attncli.inputs.layers import ADDITIVE_WEIGHTS, read_layers
from attncli.inputs.masking import read_mask, read_score_bias, with_bias_mask
from attncli.inputs.matrices import read_value
from attncli.inputs.modern import MODERN_KEYS, check_grouping, kv_heads_of, read_modern
from attncli.inputs.reading import real_path
from attncli.inputs.values import (
    check_identity_fits,
    head_count,
    mapping_of,
    scale_of,
    split_tokens,
    token_labels,
    unknown_document_key,
)

TOP_KEYS = (
    "tokens", "context_tokens", "inputs", "context", "heads", "weights", "bias", "scale", "mask",
    "positional", "score", "normalize", "add_norm", "answer", "score_bias", "latent", *MODERN_KEYS, "gradient",
    *GIVEN,
    "differential",
    "indexer",
)
# `answer` holds a learner's hand calculation for `attncli check`; computing ignores it.
PROJECTIONS = ("query", "key", "value", "output", "gate")
WEIGHT_KEYS = (*PROJECTIONS, *ADDITIVE_WEIGHTS, *LATENT_WEIGHTS)


def build_spec(doc: Document, overrides: dict[str, Any] | None = None) -> Spec:
    """Validate ``doc`` (with command-line ``overrides`` replacing its keys) into a Spec."""
    data = dict(doc.data)
    data.update({k: v for k, v in (overrides or {}).items() if v is not None})
    try:
        return _Builder(data, doc.folder).build()
    except AttnError as e:
        key = (e.where or "").split(":")[0]
        if overrides and overrides.get(key) is not None:  # the option's value is at fault, not the document
            raise e.placed(f"--{key}{e.where[len(key):]}") from None
        raise e.at(doc.name) from None


class _Builder:
    def __init__(self, data: dict[str, Any], folder: Path):
        if "layers" in data:  # (the command line reads a stack layer by layer: attncli.inputs.stacked)
            raise AttnError("builder.makes_stack_layers_which_attncli", "layers")
        if "linear" in data:  # (attncli compute reads it: attncli.inputs.linear)
            raise AttnError("builder.makes_layer_linear_attention_which", "linear")
        for key in data:
            if key not in TOP_KEYS:
                raise unknown_document_key(key, TOP_KEYS)
        self.data, self.folder = data, folder
        self.cache: dict[str, np.ndarray] = {}
        self.files: set[Path] = set()
        self.per_head: set[str] = set()  # the weights the document gives per head (3-D): their gradients are 3-D too
        self.weights = self._section("weights", WEIGHT_KEYS)
        self.bias = self._section("bias", (*PROJECTIONS, *LATENT_BIASES))

    def _section(self, key: str, names: tuple[str, ...]) -> dict[str, Any]:
        section = self.data.get(key, {})
        return {} if section is None else mapping_of(section, key, names)

    def read(
        self, key: str, value: Any, shape: tuple[int, ...] | None = None, boolean: bool = False, minus_inf: bool = False
    ) -> np.ndarray:
        """The matrix at ``key`` (read once); ``boolean``: a mask; ``minus_inf``: −inf cells allowed (a score bias)."""
        if isinstance(value, str):
            self.files.add(real_path(self.folder / value))
        elif is_archive(value) and isinstance(value.get("file"), str):  # (a checkpoint is an input file too)
            self.files.add(real_path(self.folder / value["file"]))
        if key not in self.cache:
            try:
                self.cache[key] = read_value(value, self.folder, shape, boolean, minus_inf)
            except AttnError as e:
                raise e.at(key) from None
        return self.cache[key]

    def build(self) -> Spec:
        if is_direct(self.data):  # Q, K and V given: no inputs, weights or projections
            if self.data.get("indexer") is not None:
                raise AttnError("builder.reads_rows_inputs_c_q_latent", "indexer")
            if self.data.get("latent") is not None:
                raise AttnError("builder.makes_q_k_v_from", "latent")
            return build_direct(self)
        inputs = self._matrix("inputs", self.data.get("inputs"),
                              lambda: (self._count("tokens"), self._rows_of("query")))
        has_context = self.data.get("context") is not None
        if "context_tokens" in self.data and not has_context:
            raise AttnError("builder.given_but_there_no_context", "context_tokens")
        context = None
        if has_context:
            hint = lambda: (self._count("context_tokens"), self._rows_of("key") or self._rows_of("value"))  # noqa: E731
            context = self._matrix("context", self.data["context"], hint)
        source = inputs if context is None else context
        tokens = token_labels(self.data.get("tokens"), inputs.shape[0], "x", "tokens", "inputs")
        context_tokens = (
            tokens if context is None else token_labels(self.data.get("context_tokens"), context.shape[0], "c",
                                                        "context_tokens", "context")
        )
        kv_heads = kv_heads_of(self.data.get("kv_heads"))
        latent = None
        if self.data.get("latent") is not None:  # multi-head latent attention: W_Q (or W_UQ), W_UK, W_UV per head
            w_q, w_k, w_v, latent = read_latent(self, self.bias, self._heads() or 1, kv_heads, inputs.shape[1],
                                                source.shape[1])
        else:
            refuse_without_latent(self.weights, self.bias)
            w_q, w_k, w_v = self._projections(inputs.shape[1], source.shape[1], has_context, kv_heads)
        h, g, d_k, d_v = w_q.shape[0], w_k.shape[0], w_q.shape[2], w_v.shape[2]
        w_g, b_g = self._gate(inputs.shape[1], h, d_v)
        w_o = None
        if self.weights.get("output") is not None:
            w_o = self._matrix("weights.output", self.weights["output"], lambda: (h * d_v, inputs.shape[1]))
            if w_o.shape[0] != h * d_v:
                raise AttnError(
                    "builder.but_concatenated_heads_have_columns",
                    "weights.output", w_o_shape=shape_str(w_o.shape), h=h, d_v=d_v, h_2=h * d_v, h_3=h * d_v
                )
        b_o_width = w_o.shape[1] if w_o is not None else h * d_v
        d_out = w_o.shape[1] if w_o is not None else h * d_v
        layers = read_layers(self, inputs.shape[0], inputs.shape[1], h, d_k, d_out)
        if layers["positional"] is not None:
            _check_sum(inputs, layers["positional"], tokens)
        layers.update(read_modern(self, inputs.shape[0], source.shape[0], inputs.shape[1], d_k, d_out, has_context,
                                  heads=h, kv_heads=g))
        default_scale = "none" if layers["score"] == "additive" else "sqrt"  # Bahdanau scores are not scaled
        scale, scale_name = scale_of(self.data.get("scale", default_scale), d_k)
        n, m = inputs.shape[0], source.shape[0]
        mask, mask_name = read_mask(self, self.data.get("mask", "none"), n, m, h)
        positions = positions_of(n, m, layers["positions"], layers["context_positions"], has_context)
        score_bias = read_score_bias(self, self.data.get("score_bias"), n, m, h, positions)
        mask = with_bias_mask(mask, score_bias, n, m)
        last = "normalized" if layers["add_norm"] is not None else "residual" if layers["residual"] else "output"
        gradient = read_gradient(self, self.data.get("gradient"), (n, d_out), last)
        spec = Spec(
            tokens=tokens,
            context_tokens=context_tokens,
            inputs=inputs,
            context=context,
            w_q=w_q,
            w_k=w_k,
            w_v=w_v,
            b_q=self._bias("query", h, d_k),
            b_k=self._bias("key", g, d_k),
            b_v=self._bias("key", g, d_k) if k_eq_v_given(self.data) else self._bias("value", g, d_v),
            w_o=w_o,
            b_o=self._bias("output", 1, b_o_width, "weights.output" if w_o is not None else "the concatenated heads"),
            scale=scale,
            scale_name=scale_name,
            mask=mask,
            mask_name=mask_name,
            identity=frozenset(p for p in ("query", "key", "value") if self.weights.get(p) is None and latent is None
                               and not (p == "value" and k_eq_v_given(self.data))  # (V = K: W_V is W_K)
                               and not (p != "query" and shared_of(self.data) is not None)),  # (kv_from)
            shared_kv=None if shared_of(self.data) is None else (shared_of(self.data).keys,
                                                                   shared_of(self.data).values),
            shared_from=None if shared_of(self.data) is None else shared_of(self.data).index,
            files=frozenset(self.files),
            per_head=frozenset(self.per_head),
            score_bias=score_bias,
            w_g=w_g,
            b_g=b_g,
            latent=latent,
            gradient=gradient,
            **layers,
        )
        if self.data.get("indexer") is None:
            return spec
        from attncli.inputs.indexer import read_indexer, with_selection  # (a document with an indexer only)

        return with_selection(replace(spec, indexer=read_indexer(self, self.data["indexer"], spec)))

    # -- pieces

    def _projections(self, d_model: int, d_ctx: int, has_context: bool, kv_heads: int | None
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """W_Q (h, d_model, d_k), W_K (g, d_ctx, d_k) and W_V (g, d_ctx, d_v), their shapes checked together."""
        shared = shared_of(self.data)
        if shared is not None:  # kv_from: an earlier layer's K and V (zeros stand for W_K and W_V, which it has not)
            return self._shared_projections(shared, d_model, d_ctx, kv_heads)
        heads = self._heads() or self._heads_of_3d_weights(("query",) if kv_heads else ("query", "key", "value"))
        w_q = self._weight("query", d_model, "inputs", heads)
        heads = w_q.shape[0]
        g = kv_heads or heads  # key/value heads
        check_grouping(heads, g)
        of = "context" if has_context else "inputs"
        try:
            w_k = self._weight("key", d_ctx, of, g, w_q.shape[2])
        except AttnError as e:
            raise self._grouping_hint(e, "key", heads, w_q.shape[2], kv_heads) from None
        rows_o = self._rows_of("output")  # h·d_v, when the output projection fixes it
        d_v_hint = rows_o // heads if rows_o is not None and rows_o % heads == 0 else None
        w_v = w_k if k_eq_v_given(self.data) else self._weight("value", d_ctx, of, g, d_v_hint)  # (V = K: Gemma 4)
        if w_k.shape[2] != w_q.shape[2] and self.weights.get("query") is None and self.weights.get("key") is None:
            raise AttnError("builder.has_rows_numbers_but_inputs", of, d_ctx=d_ctx, d_model=d_model)
        if w_k.shape[2] != w_q.shape[2]:
            raise self._grouping_hint(AttnError(
                "builder.gives_keys_width_per_head",
                "weights.key", shape=w_k.shape[2], shape_2=w_q.shape[2]
            ), "key", heads, w_q.shape[2], kv_heads)
        return w_q, w_k, w_v

    def _shared_projections(self, shared, d_model: int, d_ctx: int, kv_heads: int | None
                            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """W_Q, and zeros of W_K's and W_V's shapes for ``kv_from``'s keys and values (g, m, d_k) and (g, m, d_v)."""
        g, m, d_k = shared.keys.shape
        w_q = self._weight("query", d_model, "inputs", self._heads() or self._heads_of_3d_weights(("query",)))
        if kv_heads not in (None, g):
            raise AttnError("builder.but_layer_s_keys_have", "kv_heads", kv_heads=kv_heads, index=shared.index, g=g)
        check_grouping(w_q.shape[0], g)
        if w_q.shape[2] != d_k:
            raise AttnError("builder.gives_queries_width_per_head", "weights.query", shape=w_q.shape[2],
                            index=shared.index, d_k=d_k)
        return w_q, np.zeros((g, d_ctx, d_k)), np.zeros((g, d_ctx, shared.values.shape[2]))

    def _matrix(self, key: str, value: Any, hint: Callable[[], tuple[int | None, ...]]) -> np.ndarray:
        if value is None:
            raise AttnError("builder.required_matrix_one_row_per", key)
        shape = None
        if _unsized(value):
            sizes = hint()
            shape = tuple(sizes) if all(sizes) else None
        array = self.read(key, value, shape)  # type: ignore[arg-type]
        if array.ndim != 2:
            what = "a vector" if array.ndim == 1 else f"{array.ndim}-D ({shape_str(array.shape)})"
            raise AttnError("builder.expected_matrix_one_row_per", key, what=what)
        return array

    def _count(self, key: str) -> int | None:
        value = self.data.get(key)
        if isinstance(value, list):
            return len(value)
        if isinstance(value, str):
            return len(split_tokens(value))
        return None

    def _rows_of(self, name: str) -> int | None:
        value = self.weights.get(name)
        if value is None or _random(value) and not isinstance(value.get("shape"), list):
            return None
        shape = tuple(value["shape"]) if _random(value) else self.read(f"weights.{name}", value).shape
        return shape[-2] if len(shape) >= 2 and isinstance(shape[-2], int) else None

    def _heads(self) -> int | None:
        return head_count(self.data.get("heads"), "heads")

    def _grouping_hint(self, e: AttnError, name: str, heads: int, d_k: int, kv_heads: int | None) -> AttnError:
        """A key weight shaped for fewer key/value heads than query heads: say that kv_heads exists."""
        value = self.weights.get(name)
        if kv_heads is not None or value is None or _unsized(value):
            return e
        shape = self.read(f"weights.{name}", value).shape
        width = shape[-1] if len(shape) == 2 else None
        if width and width % d_k == 0 and width // d_k < heads and heads % (width // d_k) == 0:
            g = width // d_k
            return AttnError("builder.columns_head_d_k_grouped_query", e.where, reason=e, width=width, g=g,
                             plural_s='s' if g > 1 else '', d_k=d_k, g_2=g)
        return e

    def _heads_of_3d_weights(self, names: tuple[str, ...] = ("query", "key", "value")) -> int | None:
        """The head count a 3-D weight implies (they must agree), or None when all are 2-D."""
        counts = {}
        for name in names:
            value = self.weights.get(name)
            if value is None or _unsized(value):
                continue
            array = self.read(f"weights.{name}", value)
            if array.ndim == 3:
                counts[name] = array.shape[0]
        if len(set(counts.values())) > 1:
            detail = ", ".join(f"weights.{name} has {count}" for name, count in counts.items())
            raise AttnError("builder.d_weights_disagree_number_heads", "weights", detail=detail)
        return next(iter(counts.values()), None)

    def _weight(self, name: str, d_in: int, of: str, heads: int | None, width: int | None = None) -> np.ndarray:
        """A projection as (h, d_in, d) per-head blocks; the identity when omitted."""
        key = f"weights.{name}"
        value = self.weights.get(name)
        if value is None:
            check_identity_fits(key, d_in)
            w = np.eye(d_in)
        else:
            w = self.read(key, value, (d_in, width * (heads or 1) if width else d_in))
        if w.ndim == 3:
            if heads is not None and w.shape[0] != heads:
                raise AttnError("builder.d_but_heads", key, heads=plural(w.shape[0], 'head'), heads_2=heads)
            blocks = w
            self.per_head.add(name)
        elif w.ndim == 2:
            h = heads or 1
            if w.shape[1] % h and value is None:
                raise AttnError("builder.omitted_so_identity_whose_columns", key, d_in=d_in, d_in_2=d_in, d_in_3=d_in,
                                h=h)
            if w.shape[1] % h:
                raise AttnError("builder.has_columns_which_heads_cannot", key, shape=w.shape[1], h=h)
            blocks = w.reshape(w.shape[0], h, w.shape[1] // h).transpose(1, 0, 2)
        else:
            torch = " (layout: torch leaves a vector as it is: is it a bias?)" if _torch_layout(value) else ""
            raise AttnError("builder.vector_expected_d_matrix_rows",
                            key, shape=w.shape[0], d_in=d_in, of=of, torch=torch)
        if blocks.shape[1] != d_in:
            d = "d_v" if name in ("value", "gate") else "d_k"
            h = blocks.shape[0]
            need = f"h×{d_in}×{d}" if w.ndim == 3 else f"{d_in}×{d}" if h == 1 else f"{d_in}×{h}·{d}"
            verb = "has" if of == "context" else "have"
            raise AttnError("builder.but_columns_need", key, w_shape=shape_str(w.shape), of=of, verb=verb, d_in=d_in,
                            need=need)
        # kept as the (d_in, h·d) matrix's memory, seen head by head: the projection then multiplies by that matrix
        # itself (attncli.core.attention.project), with no copy of it on every run
        return np.ascontiguousarray(blocks.transpose(1, 0, 2)).transpose(1, 0, 2)

    def _gate(self, d_model: int, h: int, d_v: int) -> tuple[np.ndarray | None, np.ndarray | None]:
        """W_G (h, d_model, d_v) and b_G (h, d_v) of the output gate (Part 3), or None."""
        if self.weights.get("gate") is None:
            if self.bias.get("gate") is not None:
                raise AttnError("builder.given_without_weights_gate_g", "bias.gate")
            return None, None
        w_g = self._weight("gate", d_model, "inputs", h, d_v)
        if w_g.shape[2] != d_v:
            raise AttnError("builder.gives_gates_width_per_head", "weights.gate", shape=w_g.shape[2], d_v=d_v,
                            d_model=d_model, h=h, d_v_2=d_v)
        return w_g, self._bias("gate", h, d_v)

    def _bias(self, name: str, h: int, d: int, of: str | None = None) -> np.ndarray | None:
        value = self.bias.get(name)
        if value is None:
            return None
        key = f"bias.{name}"
        b = self.read(key, value, (h * d,))
        if b.ndim == 2 and 1 in b.shape:
            b = b.reshape(-1)
        if b.ndim != 1:
            raise AttnError("builder.expected_vector_length", key, b_shape=shape_str(b.shape), h=h * d)
        if b.shape[0] != h * d:
            whose = of or f"weights.{name}"  # (the verb written out in each, so that a translation finds the names)
            id = "builder.has_length_but_give" if whose.endswith("heads") else "builder.has_length_but_gives"
            raise AttnError(id, key, length=b.shape[0], whose=whose, columns=h * d, need=h * d)
        return b.reshape(h, d) if name != "output" else b


def _random(value: Any) -> bool:
    return isinstance(value, dict) and not is_archive(value)


def _torch_layout(value: Any) -> bool:
    return is_archive(value) and value.get("layout") == "torch"


def _unsized(value: Any) -> bool:
    """A ``{random: …}`` without its shape: known only once the other matrices settle it."""
    return _random(value) and value.get("shape") is None


def _check_sum(inputs: np.ndarray, positional: np.ndarray, tokens: list[str]) -> None:
    """X + P must be finite: the projections and the residual see it (named here, with no RuntimeWarning)."""
    with np.errstate(over="ignore", invalid="ignore"):
        total = inputs + positional
    if not np.isfinite(total).all():
        row, column = (int(i) for i in np.argwhere(~np.isfinite(total))[0])
        raise AttnError("builder.inputs_positional_x_p_overflow", "positional", row=row + 1, tokens=quoted(tokens[row]),
                        column=column + 1)
