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
NOT_IN_A_LAYER = {  # a layer's key that a stack gives otherwise, and why
    "tokens": "the tokens are given once, at the top of a stacked document",
    "inputs": "a layer's inputs are the output of the layer before it (the first layer's are the top-level inputs)",
    "positions": "positions are given once, at the top of a stacked document",
    "positional": "positional is added once, to the first layer's inputs: give it at the top",
    "queries": "a layer of a stack computes its queries from its inputs",
    "keys": "a layer of a stack computes its keys from its inputs",
    "values": "a layer of a stack computes its values from its inputs",
    "layers": "layers do not nest",
    "gradient": "attncli has no backward pass through a stack of layers; leave gradient out",
}
LAYER_KEYS = tuple(key for key in TOP_KEYS if key not in NOT_IN_A_LAYER)
MAX_LAYERS = 1024  # layers in one stack (the deepest published models have about 130): docs/format.md says so


def stack_of(doc: Document) -> list[dict[str, Any]]:
    """The layer mappings of a stacked document, its top keys checked; every error names the key in ``doc``."""
    for key in doc.data:
        if key not in TOP:
            if key not in LAYER_KEYS:
                raise unknown_key(key, TOP).at(doc.name)
            raise AttnError("is a key of each layer in a stacked document: move it into the layers' mappings",
                            key).at(doc.name)
    layers = doc.data["layers"]
    if not isinstance(layers, list) or not layers:
        shown = "an empty list" if isinstance(layers, list) else describe(layers)
        raise AttnError(f"is {shown}; expected a list of one or more layer mappings", "layers").at(doc.name)
    if len(layers) > MAX_LAYERS:  # refused before any layer is read or computed
        raise AttnError(f"holds {len(layers)} layers; a stack has at most {MAX_LAYERS} (the deepest models have "
                        "about 130)", "layers").at(doc.name)
    if doc.data.get("inputs") is None:
        raise AttnError("is required: the first layer's X, n × d_model", "inputs").at(doc.name)
    for i, layer in enumerate(layers):
        if not isinstance(layer, dict):
            raise AttnError(f"is {describe(layer)}; expected a mapping (a layer's keys)", f"layers[{i}]").at(doc.name)
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
        raise AttnError(f"{describe(j)} is not an earlier layer, counting from 0 as layers: does ({earlier})",
                        f"layers[{index}].kv_from").at(doc.name)
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
        raise AttnError(f"{doc.name} is a one-layer document (it has no layers:); leave out --layer", "--layer")
    count = len(stack_of(doc))
    if not 1 <= value <= count:
        raise AttnError(f"is {value} but {doc.name} has {count} layer{'s' if count > 1 else ''} (choose 1 … {count})",
                        "--layer")
    return value - 1

