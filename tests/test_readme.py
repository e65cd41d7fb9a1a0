"""The console sessions of the README and of the guides in docs/ it links are what attncli prints (80 columns, no
colour).

Each ``$ command`` of a ```console block runs in a folder holding what a fresh clone has
(the examples, and no other file: every file a command names is one of the examples, or is
made by the command itself); its output must equal the lines shown.  An output that ends in a
line ``…`` is compared up to that line.  The attncli lines of the ```bash and ```sh blocks run
there too, and must succeed.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import EXAMPLES, PAGES, pages_text

BIN = Path(sys.executable).parent
NEEDS_CJK_FONT = "a CJK font"  # what the comment of a README command drawing Chinese into a PNG says it needs


def sessions() -> list[tuple[str, list[str]]]:
    text = pages_text()
    found = []
    for body in re.findall(r"```console\n(.*?)```", text, re.S):
        parts = re.split(r"^\$ (.*)$", body, flags=re.M)
        for command, output in zip(parts[1::2], parts[2::2]):
            found.append((command, [line.rstrip() for line in output.strip("\n").splitlines()]))
    return found


NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")


def same_lines(printed: list[str], shown: list[str], rtol: float = 1e-12) -> bool:
    """The lines are the same text, numbers compared relative to their size: a full-precision float of the README
    (CSV, JSON) may differ in its last bits with another numpy or BLAS; a rounded one is then still equal."""
    if len(printed) != len(shown):
        assert printed == shown  # pytest's diff says where
    for got, want in zip(printed, shown):
        if got == want:
            continue
        got_numbers, want_numbers = NUMBER.findall(got), NUMBER.findall(want)
        assert NUMBER.split(got) == NUMBER.split(want) and len(got_numbers) == len(want_numbers), (got, want)
        for a, b in zip(got_numbers, want_numbers):
            assert abs(float(a) - float(b)) <= rtol * max(abs(float(a)), abs(float(b))), (got, want)
    return True


def test_same_lines_compares_numbers_relative_to_their_size():
    assert same_lines(["1,0.4683105308334813,2.0e-05"], ["1,0.4683105308334812,2.0e-05"])
    with pytest.raises(AssertionError):
        same_lines(["1,0.4683"], ["1,0.4684"])
    with pytest.raises(AssertionError):
        same_lines(["weights 0.5"], ["scores 0.5"])
    with pytest.raises(AssertionError):
        same_lines(["0.5", "1"], ["0.5"])


@pytest.mark.slow  # one installed attncli process each
@pytest.mark.skipif(not (BIN / "attncli").exists(), reason="attncli is not installed")
@pytest.mark.parametrize("command, shown", sessions(), ids=lambda x: x[:50] if isinstance(x, str) else "")
def test_readme_session(command, shown, tmp_path):
    shutil.copytree(EXAMPLES, tmp_path / "examples")
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", "COLUMNS": "80", "NO_COLOR": "1"}
    env.pop("FORCE_COLOR", None)
    result = subprocess.run(["bash", "-c", command], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=120)
    printed = [line.rstrip() for line in (result.stdout + result.stderr).strip("\n").splitlines()]
    if "…" in shown:  # the README shows the beginning
        shown = shown[: shown.index("…")]
        printed = printed[: len(shown)]
    assert same_lines(printed, shown)
    assert result.returncode == (2 if shown[0].startswith(("Error:", "错误：")) else 1 if "✗" in "".join(shown) else 0)


def commands() -> list[str]:
    """The attncli lines of the ```bash and ```sh blocks of the README and its guides (not the set-up commands)."""
    text = pages_text()
    lines = [line for body in re.findall(r"```(?:bash|sh)\n(.*?)```", text, re.S) for line in body.splitlines()]
    return [line for line in lines if re.match(r"([A-Z_]+=\S+ )?(attncli|cat examples/\S+ \| attncli) ", line)]


def test_the_readme_runs_its_examples():
    """Every way the README and its guides show attncli being run is among those run here (none is left out by the
    patterns), and every guide is run."""
    text = pages_text()
    shown = [line for body in re.findall(r"```(?:bash|sh)\n(.*?)```", text, re.S) for line in body.splitlines()
             if "attncli " in line and not line.startswith(("python3 -m venv", "pip install"))]
    assert shown and set(shown) == set(commands())
    assert len(sessions()) >= 20
    readme = PAGES[0].read_text(encoding="utf-8")
    for page in PAGES[1:]:  # each guide exists, is linked from the README, and runs some attncli
        assert f"(docs/{page.name})" in readme and "attncli " in page.read_text(encoding="utf-8"), page.name
    assert len(readme.splitlines()) < 250  # what a newcomer needs; the rest is in the guides


@pytest.mark.slow  # one shell and its attncli processes each
@pytest.mark.skipif(not (BIN / "attncli").exists(), reason="attncli is not installed")
@pytest.mark.parametrize("command", commands(), ids=lambda c: c[:50])
def test_readme_command(command, tmp_path):
    if "| jq" in command and shutil.which("jq") is None:
        pytest.skip("jq is not installed")
    shutil.copytree(EXAMPLES, tmp_path / "examples")
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", "COLUMNS": "80"}
    result = subprocess.run(["bash", "-o", "pipefail", "-c", command], cwd=tmp_path, capture_output=True, text=True,
                            env=env, timeout=300)
    if result.returncode == 2 and "Error: --export: no font on this machine has " in result.stderr:
        # a PNG of Chinese tokens on a machine without a font for them (refused, rightly): the README says so
        assert NEEDS_CJK_FONT in command, f"the README must say that this example needs {NEEDS_CJK_FONT}"
        pytest.skip(f"no font with Chinese characters on this machine (apt install fonts-noto-cjk): {result.stderr}")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() or re.search(r"(-o|--export|>) \S+", command), "printed nothing"


def python_blocks() -> list:
    """The Python blocks of the README and its guides; one that imports torch is a comparison (pytest -m torch)."""
    blocks = re.findall(r"```python\n(.*?)```", pages_text(), re.S)
    return [pytest.param(code, marks=pytest.mark.torch) if re.search(r"^import .*\btorch\b", code, re.M) else code
            for code in blocks]


@pytest.mark.parametrize("code", python_blocks(), ids=lambda c: c.splitlines()[0][:40])
def test_readme_python(code, monkeypatch, capsys, tmp_path):
    """Every Python block of the README runs as written, in a folder that has the examples."""
    if re.search(r"^import .*\btorch\b", code, re.M):
        pytest.importorskip("torch")
    (tmp_path / "examples").symlink_to(EXAMPLES)
    monkeypatch.chdir(tmp_path)  # the blocks may save files: never into the repository
    exec(compile(code, "README.md", "exec"), {"__name__": "readme"})
    if "attncli.AttnError" in code:  # the API's example of an error prints the CLI's message
        assert "<dict>: unknown key 'wieghts' (did you mean 'weights'?)" in capsys.readouterr().out
