"""The explorable page from Python: inline in Jupyter and VS Code notebooks, or in a browser from a script.

``attncli.compute(...)`` returns a :class:`Result`: a :class:`~attncli.core.trace.Trace` (every array, unchanged)
whose ``_repr_html_`` is the page of ``attncli page`` in an ``<iframe srcdoc>`` (its script and styles stay
inside the frame and cannot touch the notebook's).  :func:`show` writes the page to a temporary file and opens
it in the default browser.

This module is the one door from the Python API to the page's view (tests/test_layers_contract.py): the core
stays numpy-only and knows nothing of HTML; the page is made only when it is asked for.
"""

from __future__ import annotations

from dataclasses import fields
from html import escape
from pathlib import Path

from attncli.core.record import record
from attncli.core.trace import Trace

FRAME_HEIGHT = 640  # pixels of the frame in a notebook's output; the page scrolls inside it


@record(eq=False, kw_only=True)  # (as Trace: == and hash() by identity)
class Result(Trace):
    """A Trace that a notebook shows as the explorable page (``attncli.show(result)`` opens it in a browser)."""

    def _repr_html_(self) -> str:
        return inline(self)


def result(trace: Trace) -> Result:
    """The same arrays (not copied) as a :class:`Result`."""
    return trace if isinstance(trace, Result) else Result(**{f.name: getattr(trace, f.name) for f in fields(Trace)})


def page(trace: Trace, title: str = "attncli", lang: str = "en") -> str:
    """The page of ``attncli page`` for ``trace``, as text, opening in ``lang`` (en or zh)."""
    from attncli.teach.page import page_html

    if not isinstance(trace, Trace):  # (inline and show come here too)
        from attncli.core.arguments import type_name

        raise TypeError(f"trace: expected what attncli.compute returns (a Trace), not {type_name(trace)}")
    return page_html(trace, title, lang=lang)


def inline(trace: Trace, height: int = FRAME_HEIGHT, lang: str = "en") -> str:
    """The page in an iframe of its own for a notebook's output (``srcdoc``: nothing is fetched); in Chinese:
    ``IPython.display.HTML(attncli.notebook.inline(trace, lang="zh"))``."""
    return (f'<iframe srcdoc="{escape(page(trace, lang=lang), quote=True)}" title="attncli" '
            f'style="width: 100%; height: {height}px; border: 1px solid #8884;" '
            'sandbox="allow-scripts"></iframe>')


def show(trace: Trace, title: str = "attncli", lang: str = "en") -> Path:
    """Write the page of ``trace`` (opening in ``lang``) to a temporary ``.html`` file and open it in the default
    browser.

    Returns the file's path (it is left for the browser to read; the system's temporary folder clears it).
    """
    import tempfile
    import webbrowser

    with tempfile.NamedTemporaryFile("w", suffix=".html", prefix="attncli-", delete=False,
                                     encoding="utf-8") as file:
        file.write(page(trace, title, lang))
    path = Path(file.name)
    webbrowser.open(path.as_uri())
    return path
