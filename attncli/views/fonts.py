"""Whether this machine has a font for each wide character of a PNG picture (Chinese, Japanese, Korean).

resvg draws a PNG with the fonts installed on the machine, and a character no font has comes out as an empty box,
silently.  Before a picture with such characters is drawn, the fonts of the folders resvg reads (as its font
database does: on Linux the folders of fontconfig's configuration, else the system's font folders and the user's)
are looked through: each file's ``cmap`` table, the characters it has, read with the standard library (TrueType,
OpenType and collections, formats 4 and 12).  ``FONTCONFIG_FILE`` names the configuration for both: a file whose
only ``<dir>`` is an empty folder hides every font of the machine, from resvg and from this check alike (how the
tests show a machine without a Chinese font, tests/test_fonts_hidden.py).
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
    """The folders of fonts resvg's font database reads on this system: on Linux (and the BSDs) those fontconfig's
    configuration names (:func:`fontconfig_dirs`), or the fixed folders where it names none."""
    home = Path.home()
    if sys.platform == "darwin":
        return [Path("/Library/Fonts"), Path("/System/Library/Fonts"), home / "Library/Fonts"]
    if sys.platform == "win32":
        windir = Path(os.environ.get("WINDIR", r"C:\Windows"))
        return [windir / "Fonts", Path(os.environ.get("LOCALAPPDATA", home)) / "Microsoft/Windows/Fonts"]
    configured = fontconfig_dirs()
    if configured:
        return configured
    data = [*(os.environ.get("XDG_DATA_DIRS") or "").split(":"), "/usr/local/share", "/usr/share"]
    return [*dict.fromkeys(Path(d) / "fonts" for d in data if d), home / ".fonts", home / ".local/share/fonts"]


def fontconfig_dirs() -> list[Path]:
    """The ``<dir>`` folders of fontconfig's configuration, read as resvg's font database reads it: the file
    ``$FONTCONFIG_FILE`` alone where it is set; else ``$XDG_CONFIG_HOME/fontconfig/fonts.conf`` (or, without it,
    ``/etc/fonts/local.conf``) and ``/etc/fonts/fonts.conf``; each with the files and folders its ``<include>``s
    name.  A file that cannot be read or parsed adds nothing."""
    found: list[Path] = []
    seen: set[Path] = set()
    if os.environ.get("FONTCONFIG_FILE"):
        _read_config(Path(os.environ["FONTCONFIG_FILE"]), found, seen)
    else:
        user = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "fontconfig/fonts.conf"
        if not _read_config(user, found, seen):
            _read_config(Path("/etc/fonts/local.conf"), found, seen)
        _read_config(Path("/etc/fonts/fonts.conf"), found, seen)
    return list(dict.fromkeys(found))


def _read_config(path: Path, found: list[Path], seen: set[Path]) -> bool:
    """The ``<dir>``s of the fontconfig file ``path`` (a folder: its ``*.conf`` files in order) added to ``found``;
    whether it was read."""
    from xml.etree import ElementTree  # (only a PNG picture with wide characters reads the configuration)

    path = Path(os.path.normpath(path))
    if path in seen:  # an include that loops
        return True
    seen.add(path)
    if path.is_dir():
        for file in sorted(path.glob("*.conf")):
            _read_config(file, found, seen)
        return True
    try:
        root = ElementTree.parse(path).getroot()
    except (OSError, ElementTree.ParseError):
        return False
    for element in root:
        text = (element.text or "").strip()
        if text and element.tag == "dir":
            found.append(_config_path(text, element.get("prefix"), path, "XDG_DATA_HOME", ".local/share"))
        elif text and element.tag == "include":
            _read_config(_config_path(text, element.get("prefix"), path, "XDG_CONFIG_HOME", ".config"), found, seen)
    return True


def _config_path(text: str, prefix: str | None, config: Path, xdg: str, xdg_default: str) -> Path:
    """A path of a fontconfig file as fontconfig reads it: ``~`` the home folder, ``prefix="xdg"`` under the XDG
    folder ``xdg``, a relative include or ``prefix="relative"`` beside the file."""
    if text.startswith("~"):
        return Path.home() / text[1:].lstrip("/")
    if prefix == "xdg":
        return Path(os.environ.get(xdg) or Path.home() / xdg_default) / text
    if prefix == "relative" or (xdg == "XDG_CONFIG_HOME" and not Path(text).is_absolute()):
        return config.parent / text
    return Path(text)


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
