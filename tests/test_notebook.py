"""What attncli.compute returns in a notebook (the page inline, through _repr_html_) and attncli.show."""

from __future__ import annotations

import html
import re
import webbrowser
from pathlib import Path

import numpy as np
from conftest import EXAMPLES

import attncli
import attncli.notebook
from attncli.core.pipeline import attend
from attncli.notebook import result
from attncli.teach.texts import texts


def test_a_notebook_shows_the_page_in_a_frame_of_its_own():
    trace = attncli.compute(EXAMPLES / "illustrated.yaml")
    assert isinstance(trace, attncli.Trace)
    shown = trace._repr_html_()
    assert shown.startswith("<iframe srcdoc=\"") and shown.endswith("</iframe>")
    assert 'sandbox="allow-scripts"' in shown  # its script runs, shut off from the notebook's page
    page = html.unescape(re.search(r'srcdoc="([^"]*)"', shown).group(1))
    assert page.startswith("<!DOCTYPE html>") and '"0.4683"' in page
    assert "https:" not in page and "http:" not in page


def test_the_result_is_the_trace_with_the_same_arrays():
    spec = attncli.load(EXAMPLES / "two_heads.yaml")
    plain = attend(spec)
    wrapped = result(plain)
    assert type(plain) is attncli.Trace and result(wrapped) is wrapped
    assert wrapped.weights is plain.weights and wrapped.spec is plain.spec
    computed = attncli.compute(spec)
    np.testing.assert_array_equal(computed.output, plain.output)
    assert type(computed).__name__ == "Result"


def test_show_opens_the_page_in_a_browser(monkeypatch):
    opened = []
    monkeypatch.setattr(webbrowser, "open", lambda url, *args, **kwargs: opened.append(url) or True)
    path = attncli.show(attncli.compute(EXAMPLES / "causal.yaml"), "causal")
    try:
        assert opened == [path.as_uri()] and path.suffix == ".html"
        text = Path(path).read_text(encoding="utf-8")
        causal = texts("en")["scores"]["mask_causal"].split("{q}")[0]  # explain's words are in the page
        assert "<title>causal</title>" in text and causal in text
    finally:
        path.unlink()


def test_a_result_without_its_weights_has_no_page():
    from dataclasses import replace

    import pytest

    trace = replace(attncli.compute(EXAMPLES / "illustrated.yaml"), scores=None, weights=None)  # as streamed
    with pytest.raises(attncli.AttnError, match="needs the scores and weights"):
        attncli.notebook.page(trace)
