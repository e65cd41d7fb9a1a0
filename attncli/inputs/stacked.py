"""Stacked attention layers: a document whose ``layers:`` list chains attention layers, each taking the output
of the one before it as its inputs (seed 002: the output of one attention layer is the next one's input).

    tokens: [I, like, fish]     # once, at the top
    inputs: [[…], …]            # X of the first layer
    positions: […]              # optional, shared by every layer (rope, alibi, relative)
    positional: sinusoidal      # optional, added to the first layer's inputs only
    layers:
      - {heads: 2, weights: {…}, add_norm: true}     # every key of a one-layer document but those above
      - {weights: {…}, mask: causal}

Layer i (counting from 0) is the one-layer document made of the top keys and ``layers[i]``, its ``inputs``
replaced by layer i − 1's last quantity (``normalized`` with add_norm, else ``residual`` with residual, else
``output``): :mod:`attncli.computation` chains them; this module only cuts the document into its
layers. (Not :mod:`attncli.inputs.layers`, which reads the optional stages around one attention.)
"""

from __future__ import annotations

import copy
import re
from dataclasses import replace
from typing import Any

from attncli.core.errors import AttnError, describe
from attncli.inputs.builder import TOP_KEYS
from attncli.inputs.document import Document, is_stacked
from attncli.inputs.gemma import SharedKV
from attncli.inputs.values import unknown_key

SHARED = ("tokens", "inputs", "positions", "positional")  # given once, at the top of a stacked document
TOP = (*SHARED, "layers")
NOT_IN_A_LAYER = {  # a layer's key that a stack gives otherwise, and the id of why
    "tokens": "stacked.tokens_once",
    "inputs": "stacked.inputs_from_layer_before",
    "positions": "stacked.positions_once",
    "positional": "stacked.positional_once",
    "queries": "stacked.queries_from_inputs",
    "keys": "stacked.keys_from_inputs",
    "values": "stacked.values_from_inputs",
    "layers": "stacked.layers_do_not_nest",
    "gradient": "stacked.no_backward_through_stack",
}
LAYER_KEYS = tuple(key for key in TOP_KEYS if key not in NOT_IN_A_LAYER)
MAX_LAYERS = 1024  # layers in one stack (the deepest published models have about 130): docs/format.md says so


def stack_of(doc: Document) -> list[dict[str, Any]]:
    """The layer mappings of a stacked document, its top keys checked; every error names the key in ``doc``."""
    for key in doc.data:
        if key not in TOP:
            if key not in LAYER_KEYS:
                raise unknown_key(key, TOP).at(doc.name)
            raise AttnError("stacked.key_each_layer_stacked_document",
                            key).at(doc.name)
    layers = doc.data["layers"]
    if not isinstance(layers, list) or not layers:
        shown = "an empty list" if isinstance(layers, list) else describe(layers)
        raise AttnError("stacked.expected_list_one_more_layer", "layers", shown=shown).at(doc.name)
    if len(layers) > MAX_LAYERS:  # refused before any layer is read or computed
        raise AttnError("stacked.holds_layers_stack_has_most", "layers", count=len(layers),
                        max_layers=MAX_LAYERS).at(doc.name)
    if doc.data.get("inputs") is None:
        raise AttnError("stacked.required_first_layer_s_x", "inputs").at(doc.name)
    for i, layer in enumerate(layers):
        if not isinstance(layer, dict):
            raise AttnError("stacked.expected_mapping_layer_s_keys", f"layers[{i}]", layer=describe(layer)).at(doc.name)
        for key in layer:
            if key in NOT_IN_A_LAYER:
                raise AttnError(NOT_IN_A_LAYER[key], f"layers[{i}].{key}").at(doc.name)
    return layers


def layer_document(doc: Document, index: int, inputs: Any, passed_on: str | None = None,
                   shared: SharedKV | None = None) -> Document:
    """Layer ``index`` (from 0) as a one-layer document whose inputs are ``inputs`` (its messages say which layer),
    ``passed_on`` the key of the layer before that they are (:func:`last_key`); ``shared``: its ``kv_from``'s keys
    and values (:func:`shared_for`)."""
    layer = stack_of(doc)[index]
    data = {key: doc.data[key] for key in ("tokens", "positions") if key in doc.data}
    if index == 0 and "positional" in doc.data:
        data["positional"] = doc.data["positional"]
    data["inputs"] = inputs
    data.update(layer)
    if shared is not None:
        data["kv_from"] = shared
    return replace(doc, data=data, name=f"{doc.name}: layers[{index}]", passed_on=passed_on)


def shared_for(doc: Document, index: int, traces: list | tuple) -> SharedKV | None:
    """Layer ``index``'s ``kv_from: j`` as the keys and values of layer j (``traces[j]``, computed): those its scores
    saw (``kernel_keys``) and its weights mixed (V̂ or V); None without kv_from."""
    j = stack_of(doc)[index].get("kv_from")
    if j is None:
        return None
    if isinstance(j, bool) or not isinstance(j, int) or not 0 <= j < index:
        earlier = f"0 … {index - 1}" if index else "none: layer 0 is the first"
        raise AttnError("stacked.not_earlier_layer_counting_from",
                        f"layers[{index}].kv_from", j=describe(j), earlier=earlier).at(doc.name)
    trace = traces[j]
    return SharedKV(j, trace.kernel_keys, trace.mixed_values)


def top_level_place(error: AttnError, doc: Document) -> AttnError:
    """``error`` from building a layer's document, naming a key the stack gives at its top (``tokens``,
    ``positions``; the first layer's ``inputs`` and ``positional``) where the document has it, not in the layer."""
    found = re.fullmatch(r"(.*): layers\[(\d+)\]", doc.name, flags=re.DOTALL)
    if found is None or error.where is None:
        return error
    base, index = found.group(1), int(found.group(2))
    shared = ("tokens", "positions") + (("inputs", "positional") if index == 0 else ())
    rest = error.where[len(doc.name):] if error.where.startswith(doc.name) else ""
    if re.match(rf": ({'|'.join(shared)})(\.|:|\[| |$)", rest) is None:  # (the key, or a place in it)
        return error
    moved = copy.copy(error)  # (the same message, at another place)
    moved.where = base + rest
    moved.args = (str(moved),)
    return moved


def layer_index(doc: Document) -> int | None:
    """The index (from 0) of a layer's document (:func:`layer_document`) in its stack's ``layers:``; else None."""
    found = re.search(r": layers\[(\d+)\]$", doc.name)
    return int(found.group(1)) if found else None


def layer_place(doc: Document) -> str:
    """``layers[1]: `` for a layer's document (:func:`layer_document`), so that a warning says which layer; else ""."""
    found = re.search(r": (layers\[\d+\])$", doc.name)
    return f"{found.group(1)}: " if found else ""


def layer_number(value: int | None, doc: Document) -> int | None:
    """``--layer N`` (from 1) as an index into the stack, or None; checked against the document."""
    if value is None:
        return None
    if not is_stacked(doc.data):
        raise AttnError("stacked.one_layer_document_has_no", "--layer", name=doc.name)
    count = len(stack_of(doc))
    if not 1 <= value <= count:
        raise AttnError("stacked.but_has_layer_choose",
                        "--layer", value=value, name=doc.name, count=count, plural_s='s' if count > 1 else '',
                        count_2=count)
    return value - 1

