"""The machine's fonts as resvg and attncli see them, and the suite on a machine without a Chinese font (issue 39).

On Linux both read fontconfig's configuration: ``FONTCONFIG_FILE`` naming a file whose only folder is empty hides
every font of the machine from resvg's drawing and from attncli's check alike, which is how a test shows a machine
with no CJK font on one that has it.  The README's commands then pass, or skip saying why (the pictures of Chinese
tokens, which the README says need a CJK font).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import test_readme

from attncli.views import fonts

linux = pytest.mark.skipif(sys.platform in ("darwin", "win32"), reason="resvg reads fontconfig on Linux and the BSDs")


def config(*elements: str) -> str:
    return '<?xml version="1.0"?>\n<!DOCTYPE fontconfig SYSTEM "urn:fontconfig:fonts.dtd">\n' \
           f'<fontconfig>{"".join(elements)}</fontconfig>\n'


@pytest.fixture
def no_fonts(tmp_path, monkeypatch) -> Path:
    """fontconfig pointed at an empty font folder (the folder)."""
    folder = tmp_path / "no-fonts"
    folder.mkdir()
    (tmp_path / "fonts.conf").write_text(config(f"<dir>{folder}</dir>"), encoding="utf-8")
    monkeypatch.setenv("FONTCONFIG_FILE", str(tmp_path / "fonts.conf"))
    return folder


@linux
def test_the_folders_are_those_fontconfig_names(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    (tmp_path / "conf.d").mkdir()
    (tmp_path / "conf.d" / "20-b.conf").write_text(config("<dir>/opt/b</dir>", "<include>../fonts.conf</include>"))
    (tmp_path / "conf.d" / "10-a.conf").write_text(config("<dir>/opt/a</dir>"))
    (tmp_path / "conf.d" / "README").write_text("<dir>/not/a/conf</dir>")
    (tmp_path / "broken.conf").write_text("<fontconfig><dir>/opt/broken</dir>")  # not XML: adds nothing
    (tmp_path / "fonts.conf").write_text(config(
        "<dir>/usr/share/fonts</dir>", '<dir prefix="xdg">fonts</dir>', "<dir>~/.fonts</dir>",
        '<dir prefix="relative">mine</dir>', "<include>conf.d</include>", "<include>broken.conf</include>",
        '<include ignore_missing="yes">nowhere.conf</include>', "<dir>/usr/share/fonts</dir>"))
    monkeypatch.setenv("FONTCONFIG_FILE", str(tmp_path / "fonts.conf"))
    assert fonts.font_dirs() == [Path("/usr/share/fonts"), tmp_path / "data/fonts", tmp_path / "home/.fonts",
                                 tmp_path / "mine", Path("/opt/a"), Path("/opt/b")]  # the include's loop read once


def test_where_fontconfig_names_no_folder_the_fixed_ones(tmp_path, monkeypatch):
    monkeypatch.setattr("sys.platform", "linux")
    monkeypatch.setenv("FONTCONFIG_FILE", str(tmp_path / "absent.conf"))
    monkeypatch.setenv("XDG_DATA_DIRS", "/opt/share:/usr/share")
    dirs = fonts.font_dirs()
    assert dirs[:3] == [Path("/opt/share/fonts"), Path("/usr/share/fonts"), Path("/usr/local/share/fonts")]
    assert dirs[3:] == [Path.home() / ".fonts", Path.home() / ".local/share/fonts"]


def text_png(family: str, fontconfig: Path) -> bytes:
    """Two letters in ``family`` drawn by attncli's resvg, in a process of its own (resvg reads the fonts once in a
    process), with ``FONTCONFIG_FILE`` at ``fontconfig``."""
    svg = ('<svg xmlns="http://www.w3.org/2000/svg" width="40" height="20"><text x="2" y="15" '
           f'font-family="{family}" font-size="12">Ab</text></svg>')
    code = "import sys; from attncli.views.picture import to_png; sys.stdout.buffer.write(to_png(sys.argv[1]))"
    env = {**os.environ, "FONTCONFIG_FILE": str(fontconfig)}
    return subprocess.run([sys.executable, "-c", code, svg], capture_output=True, env=env, check=True,
                          timeout=120).stdout


@linux
def test_resvg_reads_the_same_configuration(no_fonts, tmp_path, monkeypatch):
    """With fontconfig on an empty folder resvg draws no letter, and attncli finds no font; on a folder holding
    DejaVu Sans Mono, resvg draws with it."""
    pytest.importorskip("resvg_py")
    blank = text_png("DejaVu Sans Mono", tmp_path / "fonts.conf")
    assert blank[:8] == b"\x89PNG\r\n\x1a\n" and blank == text_png("No Such Font", tmp_path / "fonts.conf")
    assert fonts.font_dirs() == [no_fonts] and fonts.missing(["我", "A"]) == ["我", "A"]
    monkeypatch.delenv("FONTCONFIG_FILE")
    dejavu = next((f for f in fonts._font_files(fonts.font_dirs()) if f.name == "DejaVuSansMono.ttf"), None)
    if dejavu is None:
        pytest.skip("no DejaVu Sans Mono on this machine to draw with")
    (tmp_path / "one").mkdir()
    (tmp_path / "one" / dejavu.name).write_bytes(dejavu.read_bytes())
    (tmp_path / "one.conf").write_text(config(f"<dir>{tmp_path / 'one'}</dir>"), encoding="utf-8")
    monkeypatch.setenv("FONTCONFIG_FILE", str(tmp_path / "one.conf"))
    assert fonts.missing(["A", "我"]) == ["我"]
    assert text_png("DejaVu Sans Mono", tmp_path / "one.conf") != blank


PICTURES = [command for command in test_readme.commands() if ".png" in command]


@pytest.mark.slow  # one shell and its attncli process each
@pytest.mark.parametrize("command", PICTURES, ids=lambda c: c[:50])
def test_the_readme_commands_pass_or_skip_without_fonts(command, no_fonts, tmp_path):
    """The README's commands that draw a PNG (the only ones that read fonts), with fontconfig on an empty font
    folder: those the README says need a CJK font skip, saying why; the others pass."""
    if not (test_readme.BIN / "attncli").exists():
        pytest.skip("attncli is not installed")
    if test_readme.NEEDS_CJK_FONT not in command:
        test_readme.test_readme_command(command, tmp_path)
        return
    with pytest.raises(pytest.skip.Exception, match="no font with Chinese characters on this machine"):
        test_readme.test_readme_command(command, tmp_path)


def test_the_readme_draws_a_png():
    assert PICTURES  # (else the test above tests nothing)
