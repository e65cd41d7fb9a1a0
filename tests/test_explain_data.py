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


def test_the_installed_entry_point_explains_the_builtin_example_from_any_folder(tmp_path):
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "-m", "attncli", "explain", "--step", "4"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "1·0 + 0·1 + 2·1 = 2" in result.stdout
