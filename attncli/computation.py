"""One computation of a document, for the command line and the Python API alike (``attncli.compute``).

    the Document read once → its Spec (each layer's of a stack, each sequence's of a batch) → the memory plan
    → the stage list (the core) → a :class:`Computed`: the Traces, in order, and what they are

A stacked document (``layers:``) is chained here: layer i's inputs are layer i − 1's last quantity
(:mod:`attncli.inputs.stacked` only cuts the document into layers and knows nothing of Traces). ``layer=N`` gives
layer N alone, the layers before it computed for its inputs. Nothing here prints, draws or knows the command
line: a query no key may see is in its Trace (``empty_queries``), for the caller to say; a caller's own
``check(parts, heads)`` (``--head`` against the heads) runs on the document's outline, before any matrix is read,
and on the Spec, before the attention.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, Optional

from attncli.core.errors import AttnError
from attncli.core.record import record
from attncli.inputs.document import Document

Check = Callable[[Optional[frozenset], Optional[int]], None]  # (the document's parts or None, its heads or None)
PASSED_ON = ("normalized", "residual", "output")  # the first a layer has is its result, the next layer's inputs


@record
class Computed:
    """What :func:`compute` gave: ``traces`` in order (the one document's; every layer's of a stack; every
    sequence's of a batch), ``form`` ``"one"``, ``"layers"`` or ``"batch"``, ``keys`` to show (``only``, or with
    ``emulate`` the eager computation's), ``layers`` each Trace's index in its stack (None outside one), and
    ``before`` the Traces of the layers before ``layer`` (computed for its inputs)."""

    traces: tuple
    form: str
    keys: Optional[list[str]]
    layers: tuple = ()
    before: tuple = ()


def compute(doc: Document, *, layer: Optional[int] = None, only: Optional[list[str]] = None,
            overrides: Optional[dict] = None, kind: str = ".npz", emulate: Optional[str] = None,
            caller: str = "attncli.compute", streams: bool = False, check: Optional[Check] = None,
            progress: Any = None, placed: bool = True) -> Computed:
    """Compute ``doc`` (read once, :func:`attncli.inputs.document.read_document`).

    ``layer``: one layer of a stack (from 1); ``only``: the keys wanted (checked names; each layer of a stack must
    have them); ``kind``: how the result will be written, which the memory plan prices (json, table, .npz …);
    ``streams``: a one-layer document may be computed block by block or only up to what ``only`` needs
    (:func:`attncli.plan.compute_within`, ``progress`` its bar), else it is computed in full or refused up front
    (``caller`` names it then); ``emulate``: bf16, fp16 or fp32, the eager computation instead (one layer);
    ``placed``: an error of the computation itself names the document (a layer's always does).
    """
    from attncli.inputs.document import is_batch, is_stacked

    if layer is None and is_stacked(doc.data):
        return _layers(doc, only, overrides, kind, caller, emulate)
    if layer is None and is_batch(doc.data):
        return _batch(doc, only, overrides, kind, caller, emulate)
    before, cut = _before(doc, layer, overrides) if layer is not None else ((), None)
    eager = None if emulate is None else f"{caller} --emulate" if caller == "compute" else f"{caller}(emulate=…)"
    from attncli.plan import compute_in_full, compute_within

    if eager is not None:  # the eager computation reads the weights: the full computation
        run = partial(compute_in_full, kind=kind, command=eager)
    elif streams:
        run = partial(compute_within, keys=only, kind=kind, progress=progress)
    else:
        run = partial(compute_in_full, kind=kind, command=caller)
    trace = trace_of(doc, overrides, run, check, cut, eager, placed)
    if eager is not None:
        from attncli.core.emulate import emulated_trace

        trace, only = emulated_trace(trace, emulate, only)
    return Computed((trace,), "one", only, (None if layer is None else layer - 1,), before)


def trace_of(doc: Document, overrides: Optional[dict], run: Callable, check: Optional[Check] = None,
             cut: Optional[tuple] = None, eager: Optional[str] = None, placed: bool = True):
    """``doc``'s (or, ``cut`` (index, inputs, passed_on), its layer's) outline and Spec, ``check``ed, then
    ``run(spec)``; a stack's top-level key is named where the document has it, and an error of ``run`` without a
    place is the document's. ``eager``: the name of the eager computation, which takes a softmax of dot-product
    scores only."""
    from attncli.core.memory import memory_budget
    from attncli.inputs.builder import build_spec

    if cut is not None:
        from attncli.inputs.stacked import layer_document

        doc = layer_document(doc, *cut)
    if check is not None:
        from attncli.inputs.outline import outline

        shape = outline(doc.data, overrides)
        check(shape.parts, shape.heads)
    memory_budget()  # an unusable ATTNCLI_MEMORY is named first, not inside the first matrix that checks its size
    try:
        spec = build_spec(doc, overrides)
    except AttnError as e:
        from attncli.inputs.stacked import top_level_place

        raise top_level_place(e, doc) from None
    if check is not None:
        check(None, spec.heads)
    try:
        if eager is not None:
            from attncli.core.emulate import softmax_of_dots

            softmax_of_dots(spec, eager)
        return run(spec)
    except AttnError as e:  # overflow or memory: the document is the place to look
        placing = (placed or cut is not None) and (e.where is None or eager is not None)
        raise (e.at(doc.name) if placing else e) from None


def _before(doc: Document, layer: int, overrides: Optional[dict]) -> tuple[tuple, tuple]:
    """(the Traces of the layers before ``layer`` (from 1), each computed in full; the cut of ``layer`` itself:
    its index, its inputs and the key of the layer before they are)."""
    from attncli.core.pipeline import attend
    from attncli.inputs.stacked import layer_number, shared_for

    index = layer_number(layer, doc)
    inputs, before = doc.data["inputs"], []
    for i in range(index):
        before.append(trace_of(doc, overrides, attend, cut=(i, inputs, None, shared_for(doc, i, before))))
        inputs = last_quantity(before[-1])
    return tuple(before), (index, inputs, last_key(before[-1]) if before else None, shared_for(doc, index, before))


def layer_of(doc: Document, layer: int, overrides: Optional[dict]) -> tuple[Document, tuple]:
    """Layer ``layer`` (from 1) of a stacked document as a one-layer document, and the Traces of the layers before
    it (each computed in full for the next one's inputs): what ``--layer N`` gives every command."""
    from attncli.inputs.stacked import layer_document

    before, cut = _before(doc, layer, overrides)
    return layer_document(doc, *cut), before


def last_key(trace) -> str:
    """The key of the layer's result, the next layer's inputs: normalized (add_norm), else residual, else output."""
    for key in PASSED_ON:
        if getattr(trace, key) is not None:
            return key
    raise AttnError("computation.computed_no_output_pass_next")  # (every full computation has one)


def last_quantity(trace) -> Any:
    """The layer's result (:func:`last_key`), the next layer's inputs."""
    return getattr(trace, last_key(trace))


def _layers(doc, only, overrides, kind, caller, emulate) -> Computed:
    """Every layer of a stack, chained: each in full, its inputs the layer before's last quantity."""
    from attncli.inputs.stacked import shared_for, stack_of
    from attncli.outputs.serialize import check_present
    from attncli.plan import compute_in_full

    if emulate is not None:
        raise AttnError("stack.emulates_one_layer_s_kernel", "emulate")
    count, traces, run = len(stack_of(doc)), [], partial(compute_in_full, kind=kind, command=caller)
    for index in range(count):
        inputs = doc.data["inputs"] if index == 0 else last_quantity(traces[-1])
        traces.append(trace_of(doc, overrides, run, cut=(index, inputs, None, shared_for(doc, index, traces))))
    for i, trace in enumerate(traces):  # only names a key every layer has ('normalized' needs add_norm …)
        try:
            check_present(trace, only)
        except AttnError as e:
            raise AttnError("computation.layers_layer_has_none", e.where, reason=e, i=i, i_2=i + 1,
                            name=doc.name) from None
    return Computed(tuple(traces), "layers", only, tuple(range(count)))


def sequences(doc: Document, overrides: Optional[dict], run: Callable) -> list:
    """The Trace of each sequence of a batch (``layout:``), each ``run(spec)`` as its own document."""
    from attncli.inputs.batch import sequences as split

    try:
        documents = split(doc)
    except AttnError as e:  # the batch's own keys: the document is the place
        raise e.at(doc.name) from None
    return [trace_of(one, overrides, run) for one in documents]


def _batch(doc, only, overrides, kind, caller, emulate) -> Computed:
    """Every sequence of a batch, each in full (a kernel's batch is small), with every key ``only`` names."""
    from attncli.outputs.serialize import check_present
    from attncli.plan import compute_in_full

    if emulate is not None:
        raise AttnError("batch.emulates_one_sequence_s_kernel", "emulate")
    traces = sequences(doc, overrides, partial(compute_in_full, kind=kind, command=caller))
    for i, trace in enumerate(traces):
        try:
            check_present(trace, only)
        except AttnError as e:
            raise AttnError("computation.batch_has_none", e.where, reason=e, i=i) from None
    return Computed(tuple(traces), "batch", only, (None,) * len(traces))


def of_spec(spec, only: Optional[list[str]] = None, emulate: Optional[str] = None):
    """The Trace of a :class:`attncli.core.spec.Spec` already built (the Python API's ``attncli.compute(spec)``)."""
    from attncli.plan import compute_in_full, compute_within

    if emulate is not None:
        from attncli.core.emulate import emulated_trace, softmax_of_dots

        softmax_of_dots(spec, "attncli.compute(emulate=…)")
        return emulated_trace(compute_in_full(spec, ".npz", "attncli.compute(emulate=…)"), emulate, only)[0]
    if only is not None:
        return compute_within(spec, only, ".npz")
    return compute_in_full(spec, ".npz", "attncli.compute")


class Layers(list):
    """The Traces of a stack's layers, in order (``layers[0]`` is layer 1's), and the stack's ``output``."""

    @property
    def output(self):
        """The stack's output, n × d_model: the last layer's ``normalized``, else ``residual``, else ``output``."""
        return last_quantity(self[-1])
