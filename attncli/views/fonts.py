"""Whether this machine has a font for each wide character of a PNG picture (Chinese, Japanese, Korean).

resvg draws a PNG with the fonts installed on the machine, and a character no font has comes out as an empty box,
silently.  Before a picture with such characters is drawn, the fonts of the folders resvg reads (as its font
database does: the system's font folders and the user's) are looked through: each file's ``cmap`` table, the
characters it has, read with the standard library (TrueType, OpenType and collections, formats 4 and 12).
"""

from __future__ import annotations

import os
import struct
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

from rich.cells import cell_len

FONT_SUFFIXES = (".ttf", ".otf", ".ttc", ".otc")
INSTALL_CJK = ("a font with Chinese characters (Debian, Ubuntu: apt install fonts-noto-cjk; Fedora: "
               "dnf install google-noto-sans-cjk-fonts)")


def font_dirs() -> list[Path]:
    """The folders of fonts resvg's font database reads on this system."""
    home = Path.home()
    if sys.platform == "darwin":
        return [Path("/Library/Fonts"), Path("/System/Library/Fonts"), home / "Library/Fonts"]
    if sys.platform == "win32":
        windir = Path(os.environ.get("WINDIR", r"C:\Windows"))
        return [windir / "Fonts", Path(os.environ.get("LOCALAPPDATA", home)) / "Microsoft/Windows/Fonts"]
    data = [*(os.environ.get("XDG_DATA_DIRS") or "").split(":"), "/usr/local/share", "/usr/share"]
    return [*dict.fromkeys(Path(d) / "fonts" for d in data if d), home / ".fonts", home / ".local/share/fonts"]


def wide_characters(text: str) -> list[str]:
    """The characters of ``text`` two terminal cells wide (Chinese, Japanese, Korean, full-width forms), in order."""
    return list(dict.fromkeys(ch for ch in text if ord(ch) > 0x1000 and cell_len(ch) == 2))


def missing(characters: Iterable[str], dirs: Iterable[Path] | None = None) -> list[str]:
    """The ``characters`` that no font in ``dirs`` (:func:`font_dirs`) has."""
    left = set(characters)
    for file in _font_files(font_dirs() if dirs is None else dirs):
        if not left:
            break
        left -= {ch for ch in left if _has(file, ord(ch))}
    return [ch for ch in characters if ch in left]


def _font_files(dirs: Iterable[Path]) -> Iterator[Path]:
    for folder in dirs:
        try:
            for root, _, names in os.walk(folder, followlinks=True):
                yield from (Path(root) / n for n in sorted(names) if n.lower().endswith(FONT_SUFFIXES))
        except OSError:
            continue


def _has(file: Path, code: int) -> bool:
    """Whether a font of ``file`` maps ``code`` (an unreadable or unknown file: no)."""
    try:
        with file.open("rb") as f:
            return any(code in ranges for ranges in _cmaps(f))
    except (OSError, struct.error, ValueError):
        return False


class Ranges:
    """Character ranges [first, last] of one cmap subtable."""

    def __init__(self, pairs: list[tuple[int, int]]):
        self.pairs = pairs

    def __contains__(self, code: int) -> bool:
        return any(first <= code <= last for first, last in self.pairs)


def _read(f, offset: int, fmt: str) -> tuple:
    f.seek(offset)
    return struct.unpack(fmt, f.read(struct.calcsize(fmt)))


def _cmaps(f) -> Iterator[Ranges]:
    """The Unicode cmap subtable of each font of the file (a collection has several)."""
    tag = f.read(4)
    fonts = [0]
    if tag == b"ttcf":
        count = _read(f, 8, ">I")[0]
        fonts = list(_read(f, 12, f">{min(count, 64)}I"))
    for start in fonts:
        tables = _read(f, start + 4, ">H")[0]
        for k in range(min(tables, 200)):
            name, _, offset, _ = _read(f, start + 12 + 16 * k, ">4sIII")
            if name == b"cmap":
                yield _unicode_ranges(f, offset)


def _unicode_ranges(f, cmap: int) -> Ranges:
    """The ranges of the best Unicode subtable: format 12 (every plane), else format 4 (the first plane)."""
    count = _read(f, cmap + 2, ">H")[0]
    found: dict[int, int] = {}
    for k in range(min(count, 64)):
        platform, encoding, offset = _read(f, cmap + 4 + 8 * k, ">HHI")
        if platform == 0 or (platform == 3 and encoding in (1, 10)):
            found.setdefault(_read(f, cmap + offset, ">H")[0], cmap + offset)
    if 12 in found:
        groups = _read(f, found[12] + 12, ">I")[0]
        values = _read(f, found[12] + 16, f">{3 * groups}I")
        return Ranges([(values[3 * g], values[3 * g + 1]) for g in range(groups)])
    if 4 in found:
        segments = _read(f, found[4] + 6, ">H")[0] // 2
        ends = _read(f, found[4] + 14, f">{segments}H")
        starts = _read(f, found[4] + 16 + 2 * segments, f">{segments}H")
        return Ranges([(s, e) for s, e in zip(starts, ends) if s != 0xFFFF])
    return Ranges([])
