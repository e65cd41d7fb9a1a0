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


def test_both_languages_have_the_same_texts_and_placeholders():
    import string

    from attncli.teach.texts.en import TEXTS as EN
    from attncli.teach.texts.zh import TEXTS as ZH

    def flat(d, prefix=""):
        for key, value in d.items():
            yield from flat(value, f"{prefix}{key}.") if isinstance(value, dict) else [(f"{prefix}{key}", value)]

    en, zh = dict(flat(EN)), dict(flat(ZH))
    assert set(en) == set(zh)
    fields = lambda text: {name for _, name, _, _ in string.Formatter().parse(text) if name}  # noqa: E731
    assert {k: fields(v) for k, v in en.items()} == {k: fields(v) for k, v in zh.items()}
