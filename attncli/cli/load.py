"""From a FILE argument to a computed Trace: the one path every command takes."""

import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Optional

from attncli.cli.language import current
from attncli.cli.run import say, warn
from attncli.core.errors import AttnError, quoted


def load(file: str, overrides: dict | None = None, doc=None, compute=None):
    """Read (unless ``doc`` is given), validate and compute a one-layer document, and say which queries no key may
    see (:func:`attncli.computation.trace_of`).

    ``compute(spec) -> Trace`` replaces :func:`attncli.core.pipeline.attend` (``compute`` streams large inputs).
    """
    from attncli.computation import trace_of
    from attncli.core.memory import memory_budget
    from attncli.core.pipeline import attend
    from attncli.inputs.stacked import layer_index

    memory_budget()  # an unusable ATTNCLI_MEMORY is named first, not inside the first matrix that checks its size
    doc = doc or read(file)
    trace = trace_of(doc, overrides, compute or attend)
    warn_unseen(trace, layer_index(doc))
    return trace


def warn_unseen(trace, index: Optional[int] = None) -> None:
    """A warning for each query no key may see (in the language the command chose), naming the layer of a stack
    (``index``, from 0) it is in."""
    spec = trace.spec
    place = "" if index is None else _layer_of(index)
    warn_ties(trace, place)
    if not trace.empty_queries:
        return
    hint = _convention_hint(spec)
    for i in trace.empty_queries:
        warn(place + words(current())["no_key"].format(i=i + 1, token=quoted(spec.tokens[i])) + hint)


def _layer_of(index: int) -> str:
    """The words before a warning about the layer ``index`` (from 0) of a stack, in the command's language."""
    from attncli.outputs.titles import phrase

    return phrase(current(), "layer_of", j=index, i=index + 1)


def words(language: str) -> dict[str, str]:
    """The notices' words in ``language`` (:mod:`attncli.views.words`: imported only when a notice is said)."""
    from attncli.views.words import words as table

    return table(language)


def warn_ties(trace, place: str) -> None:
    """A warning for each query where the indexer's cut split keys of equal I (docs/format.md's tie rule decided)."""
    ties = getattr(trace, "index_ties", None)
    if ties is None or not ties.any():
        return
    spec = trace.spec
    for i in ties.nonzero()[0]:
        value = trace.index_scores[i, trace.index_selected[i, -1]] if trace.index_scores is not None else None
        warn(place + words(current())["index_ties"].format(i=i + 1, token=quoted(spec.tokens[i]), ties=int(ties[i]),
                                                           value="?" if value is None else f"{value:.6g}"))


def warn_computed(computed) -> None:
    """:func:`warn_unseen` for every Trace of a :class:`attncli.computation.Computed`, the layers before first."""
    for index, trace in enumerate(computed.before):
        warn_unseen(trace, index)
    for trace, index in zip(computed.traces, computed.layers):
        warn_unseen(trace, index)


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
    if layer is not None:
        from attncli.computation import layer_of

        doc, before = layer_of(doc, layer, overrides)
        for index, trace in enumerate(before):
            warn_unseen(trace, index)
    elif is_stacked(doc.data) and not stacks:
        from attncli.inputs.stacked import stack_of

        count = len(stack_of(doc))
        raise AttnError("load.stack_layers_layers_this_command", doc.name, count=count, count_2=count)
    return doc


def progress_bar(blocks: int, seconds: float):
    """What :func:`attncli.plan.compute_within` shows while it streams: a bar when it takes longer than a second."""
    return progress(blocks, show=seconds > 1.0)


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
