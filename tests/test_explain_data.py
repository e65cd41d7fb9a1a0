"""The built-in example packaged with attncli is the repository's examples/illustrated.yaml, byte for byte."""

from __future__ import annotations

from conftest import EXAMPLES, ROOT


def test_the_packaged_example_is_examples_illustrated_byte_for_byte():
    packaged = (ROOT / "attncli" / "data" / "illustrated.yaml").read_bytes()
    assert packaged == (EXAMPLES / "illustrated.yaml").read_bytes()


def test_the_packaged_example_is_found_through_importlib_resources():
    from importlib.resources import files

    text = files("attncli").joinpath("data/illustrated.yaml").read_text(encoding="utf-8")
    assert "scale: none" in text
