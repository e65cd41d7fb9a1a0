"""From a FILE argument to a computed Trace: the one path every command takes."""

import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Optional

from attncli.cli.language import current
from attncli.cli.run import say, warn
from attncli.core.errors import AttnError, quoted
from attncli.views.words import words


def load(file: str, overrides: dict | None = None, doc=None, compute=None):
    """Read (unless ``doc`` is given), validate and compute a document: the one path every command takes.

    ``compute(spec) -> Trace`` replaces :func:`attncli.core.attention.attend` (``compute`` streams large inputs).
    """
    from attncli.core.memory import memory_budget
    from attncli.core.pipeline import attend
    from attncli.inputs.builder import build_spec

    memory_budget()  # an unusable ATTNCLI_MEMORY is named first, not inside the first matrix that checks its size
    doc = doc or read(file)
    try:
        spec = build_spec(doc, overrides)
    except AttnError as e:  # a stack's top-level key (tokens, the first layer's inputs) is named where it is
        from attncli.inputs.stacked import top_level_place

        raise top_level_place(e, doc) from None
    try:
        trace = (compute or attend)(spec)
    except AttnError as e:  # overflow or memory: the document is the place to look
        raise (e.at(doc.name) if e.where is None else e) from None
    if not trace.empty_queries:
        return trace
    from attncli.inputs.stacked import layer_index
    from attncli.outputs.titles import phrase

    hint = _convention_hint(spec)
    index = layer_index(doc)  # a stacked document's layer: which one, as the key path and counted from 1
    place = "" if index is None else phrase(current(), "layer_of", j=index, i=index + 1)
    for i in trace.empty_queries:  # in the language the command chose
        warn(place + words(current())["no_key"].format(i=i + 1, token=quoted(spec.tokens[i])) + hint)
    return trace


def _convention_hint(spec) -> str:
    """When the mask read the other way leaves every query a key:
    the flags may mean "masked" (nn.MultiheadAttention)."""
    inverted = None if spec.mask is None or spec.n * spec.m > 1 << 26 else spec.mask.inverted()
    if inverted is None or not inverted.full().any(axis=-1).all():
        return ""
    return words(current())["hint_parts" if spec.mask_name == "parts" else "hint_matrix"].format()




def read(file: str, layer: Optional[int] = None, overrides: dict | None = None, stacks: bool = False):
    """The document FILE (- for standard input); on a terminal, ``-`` says first that it waits for the document.

    A stacked document (``layers:``) gives its layer ``--layer N`` (from 1) as a one-layer document, the layers
    before it computed for its inputs; without ``layer`` it is refused unless the command takes ``stacks``.
    """
    from attncli.inputs.document import is_stacked, read_document

    if file == "-" and sys.stdin is not None:
        try:
            waiting = sys.stdin.isatty()
        except (OSError, ValueError):
            waiting = False
        if waiting:
            say(words(current())["stdin"] + "\n")
    doc = read_document(file)
    if layer is None and not is_stacked(doc.data):  # (one layer: the stack's module is not needed)
        return doc
    from attncli.inputs.stacked import compute_stack, last_key, layer_document, layer_number, stack_of

    index = layer_number(layer, doc)
    if index is not None:
        before = compute_stack(doc, overrides, lambda d, o: load(file, o, doc=d), index)
        return layer_document(doc, index, _passed_on(doc, before), last_key(before[-1]) if before else None)
    if is_stacked(doc.data) and not stacks:
        count = len(stack_of(doc))
        raise AttnError(f"is a stack of {count} layers (layers:); this command shows one: choose it with "
                        f"--layer N (1 … {count})", doc.name)
    return doc


def _passed_on(doc, before: list):
    """The inputs of the layer after ``before`` (the top-level inputs when there is none)."""
    from attncli.inputs.stacked import last_quantity

    return last_quantity(before[-1]) if before else doc.data["inputs"]


def attend_within_memory(spec, keys: Optional[list[str]], kind: str):
    """:func:`attncli.plan.compute_within`, with a progress bar while it streams for longer than a second."""
    from attncli.plan import compute_within

    return compute_within(spec, keys, kind, lambda blocks, seconds: progress(blocks, show=seconds > 1.0))


@contextmanager
def progress(total: int, show: bool):
    """A transient progress bar on standard error, only when that is a terminal; yields advance(k) or None."""
    if not show or not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    columns = (TextColumn(words(current())["streaming"]), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    from attncli.cli.write import terminal_width

    with Progress(*columns, console=Console(stderr=True, width=terminal_width()), transient=True) as bar:
        task = bar.add_task("", total=total)
        yield lambda k: bar.advance(task, k)


def input_paths(file: str, trace) -> set[Path]:
    """Every file the result was read from (STDIN: standard input): an output may never replace one of them."""
    from attncli.inputs.reading import real_path
    from attncli.outputs.files import STDIN

    return set(trace.spec.files) | ({real_path(Path(file))} if file != "-" else {STDIN})
