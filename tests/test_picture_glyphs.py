"""PNG pictures of Chinese text (issue 32, item 2): drawn only where a font of the machine has every wide character,
else refused in one line naming what to install, with nothing written.

The fonts are made here: the smallest files a font reader accepts (a table directory and a ``cmap``), one with
Latin letters only and one with the CJK Unified Ideographs, so the test means the same on any machine.
"""

from __future__ import annotations

import re
import struct

import pytest
from conftest import EXAMPLES
from test_checkpoints import assert_refused

from attncli.cli import app
from attncli.views import fonts


def sfnt(cmap: bytes) -> bytes:
    """A font file holding only a cmap table."""
    return struct.pack(">IHHHH", 0x00010000, 1, 16, 0, 0) + struct.pack(">4sIII", b"cmap", 0, 28, len(cmap)) + cmap


def format4(first: int, last: int) -> bytes:
    """A cmap with one format 4 subtable (Windows, Unicode BMP): first … last, then the closing 0xFFFF segment."""
    ends, starts = [last, 0xFFFF], [first, 0xFFFF]
    body = struct.pack(">HHHHHH", 4, 0, 0, 4, 4, 1) + struct.pack(">2H", *ends) + b"\0\0" + struct.pack(">2H", *starts)
    body += struct.pack(">2h", 1 - first, 1) + struct.pack(">2H", 0, 0)
    return struct.pack(">HHHHI", 0, 1, 3, 1, 12) + body


def format12(first: int, last: int) -> bytes:
    body = struct.pack(">HHIII", 12, 0, 28, 0, 1) + struct.pack(">III", first, last, 1)
    return struct.pack(">HHHHI", 0, 1, 3, 10, 12) + body


def collection(*fonts_: bytes) -> bytes:
    """A .ttc of the fonts (each table offset is from the file's start)."""
    header = 12 + 4 * len(fonts_)
    out, offsets = b"", []
    for font in fonts_:
        offsets.append(header + len(out))
        base = offsets[-1]
        table = struct.unpack(">I", font[20:24])[0]  # the cmap's offset, moved to the file's start
        out += font[:20] + struct.pack(">I", base + table) + font[24:]
    return b"ttcf" + struct.pack(">HHI", 1, 0, len(fonts_)) + struct.pack(f">{len(fonts_)}I", *offsets) + out


@pytest.fixture
def latin(tmp_path):
    folder = tmp_path / "latin"
    folder.mkdir()
    (folder / "Latin.ttf").write_bytes(sfnt(format4(0x20, 0x7E)))
    return folder


@pytest.fixture
def cjk(tmp_path):
    folder = tmp_path / "cjk"
    (folder / "deep").mkdir(parents=True)
    (folder / "deep" / "Han.otc").write_bytes(collection(sfnt(format4(0x20, 0x7E)), sfnt(format12(0x4E00, 0x9FFF))))
    return folder


def test_the_characters_each_font_has(latin, cjk, tmp_path):
    assert fonts.wide_characters("Step 4 · 计算 我我 ░ …") == ["计", "算", "我"]
    assert fonts.missing(["我", "想"], [latin]) == ["我", "想"]
    assert fonts.missing(["我", "想", "ｶ"], [latin, cjk]) == ["ｶ"]  # (half-width katakana: not in U+4E00 … U+9FFF)
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "cut.ttf").write_bytes(sfnt(format4(0x4E00, 0x9FFF))[:30])  # unreadable: no glyphs
    assert fonts.missing(["我"], [tmp_path / "broken", tmp_path / "nowhere"]) == ["我"]


@pytest.mark.parametrize("command", [["heatmap", str(EXAMPLES / "bert_base.yaml")],
                                     ["explain", str(EXAMPLES / "bert_base.yaml"), "--lang", "zh", "--step", "4"]])
def test_chinese_without_a_font_for_it_is_refused_and_nothing_written(runner, tmp_path, monkeypatch, latin, command):
    pytest.importorskip("resvg_py")
    monkeypatch.setattr(fonts, "font_dirs", lambda: [latin])
    out = tmp_path / "picture.png"
    result = runner.invoke(app, [*command, "--export", str(out)])
    english = "--lang" not in command  # (with --lang zh the message is Chinese too: tests/test_errors_zh.py)
    line = assert_refused(result, ("Error: " if english else "错误：") + "--export: ", "apt install fonts-noto-cjk",
                          ".svg", *(["no font on this machine has ", "or export .svg"] if english else ["PNG"]))
    assert "我" not in line and not out.exists()
    assert runner.invoke(app, [*command, "--export", str(tmp_path / "picture.svg")]).exit_code == 0  # a browser's fonts


def test_with_a_font_for_every_character_the_png_is_drawn(runner, tmp_path, monkeypatch, latin, cjk):
    pytest.importorskip("resvg_py")
    out = tmp_path / "heads.png"
    monkeypatch.setattr(fonts, "font_dirs", lambda: [latin, cjk])
    assert runner.invoke(app, ["heatmap", str(EXAMPLES / "bert_base.yaml"), "--export", str(out)]).exit_code == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    monkeypatch.setattr(fonts, "font_dirs", lambda: [latin])  # Latin text needs no more
    english = tmp_path / "causal.png"
    assert runner.invoke(app, ["heatmap", str(EXAMPLES / "causal.yaml"), "--export", str(english)]).exit_code == 0
    assert english.is_file()


@pytest.mark.parametrize("suffix", [".svg", ".html"])
def test_svg_and_html_fetch_no_fonts(runner, tmp_path, suffix):
    """Rich's SVG loaded Fira Code from a CDN: a blog embedding the picture made its readers fetch it."""
    out = tmp_path / f"heads{suffix}"
    assert runner.invoke(app, ["heatmap", str(EXAMPLES / "bert_base.yaml"), "--export", str(out)]).exit_code == 0
    text = out.read_text(encoding="utf-8")
    assert "@font-face" not in text and not re.search(r"url\(\s*['\"]?(?!#)", text)  # only the picture's own #clips
    assert '"Noto Sans Mono CJK SC"' in text or "'Noto Sans Mono CJK SC'" in text  # the reader's own fonts, named
