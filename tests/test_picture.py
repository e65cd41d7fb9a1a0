"""--export pictures: SVG and HTML that parse and hold the tokens and numbers, text on the cell grid, errors.

Numbers are checked against tests/reference.py (plain Python, independent of attncli).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

import numpy as np
import pytest
import yaml
from conftest import EXAMPLES
from reference import naive_attention
from rich.cells import cell_len
from test_checkpoints import assert_refused
from test_heatmap import reference, run_cli, strip_right, trace_of

from attncli.cli import app
from attncli.views.heatmap import HeatMap
from attncli.views.picture import picture


def svg_text(data: bytes) -> str:
    root = ET.fromstring(data)
    return "".join(el.text or "" for el in root.iter() if el.tag.endswith("text")).replace("\u00a0", " ")


class _Text(HTMLParser):
    def __init__(self):
        super().__init__()
        self.parts: list[str] = []

    def handle_data(self, data):
        self.parts.append(data)


def html_text(data: bytes) -> str:
    parser = _Text()
    parser.feed(data.decode("utf-8"))
    parser.close()
    return "".join(parser.parts)


@pytest.mark.parametrize("suffix", [".svg", ".html"])
def test_pictures_parse_and_hold_tokens_and_numbers(suffix):
    trace = trace_of(EXAMPLES / "cross_attention.yaml")
    data = picture([HeatMap(trace, color=True)], suffix, 120)
    text = svg_text(data) if suffix == ".svg" else html_text(data)
    for token in ("我", "是", "学生", "I", "am"):
        assert token in text
    doc = yaml.safe_load((EXAMPLES / "cross_attention.yaml").read_text())
    w = doc["weights"]
    ref = naive_attention(doc["inputs"], w["query"], w["key"], w["value"], context=doc["context"])
    for value in np.array(ref["weights"][0]).flat:
        assert f"{value:.2f}" in text
    assert "Noto Sans CJK SC" in data.decode("utf-8")


def test_svg_places_each_wide_character_on_the_grid():
    data = picture([HeatMap(trace_of(EXAMPLES / "bert_base.yaml"), color=True)], ".svg", 120)
    root = ET.fromstring(data)
    widths = {float(el.get("textLength")) for el in root.iter() if el.tag.endswith("text") and el.text == "我"}
    assert len(widths) == 1  # every 我 alone, two cells wide


@pytest.mark.parametrize("args, message", [
    (["heatmap", "{ex}/illustrated.yaml", "--export", "{tmp}/a.jpg"], "--export: expected a file name ending in .svg"),
    (["heatmap", "{ex}/illustrated.yaml", "--head", "3"], "--head 3 is out of range"),
    (["heatmap", "{ex}/illustrated.yaml", "--head", "x"], "'x' is not a head number"),
    (["compute", "{ex}/illustrated.yaml", "--format", "json", "--export", "{tmp}/a.svg"],
     "works with --format table only"),
    (["compute", "{ex}/illustrated.yaml", "-o", "{tmp}/a.svg", "--export", "{tmp}/a.svg"], "same file as --output"),
    (["compute", "{tmp}/csv/files.yaml", "--export", "{tmp}/csv/key.txt"], "is one of this run's input files"),
    (["heatmap", "{tmp}/csv/files.yaml", "--export", "{tmp}/csv/key.txt"], "is one of this run's input files"),
    (["compute", "{ex}/illustrated.yaml", "-o", "{tmp}/a.npz", "--export", "{tmp}/a.svg"], "-o a.npz writes arrays"),
    (["compute", "{ex}/illustrated.yaml", "--export", "{tmp}/no/a.svg"], "the folder"),
    # -o's problems are found before the picture is written: both files or neither
    (["compute", "{ex}/illustrated.yaml", "-o", "{tmp}/no/x.txt", "--export", "{tmp}/a.svg"], "the folder"),
    (["compute", "{tmp}/csv/files.yaml", "-o", "{tmp}/csv/key.txt", "--export", "{tmp}/a.svg"],
     "is one of this run's input files"),
])
def test_export_errors_exit_2_and_write_nothing(runner, tmp_path, args, message):
    import shutil

    shutil.copytree(EXAMPLES / "csv", tmp_path / "csv")
    before = (tmp_path / "csv" / "key.txt").read_bytes()
    argv = [a.format(ex=EXAMPLES, tmp=tmp_path) for a in args]
    result = runner.invoke(app, argv)
    assert result.exit_code == 2 and message in result.stderr and result.stdout == ""
    assert (tmp_path / "csv" / "key.txt").read_bytes() == before
    assert not list(tmp_path.glob("a.*"))


def test_export_is_not_touched_when_the_document_fails(runner, tmp_path):
    out = tmp_path / "old.svg"
    out.write_text("keep me")
    bad = tmp_path / "bad.yaml"
    bad.write_text("inputs: [[1, 2], [3]]\n")
    result = runner.invoke(app, ["compute", str(bad), "--export", str(out)])
    assert result.exit_code == 2 and out.read_text() == "keep me"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.yaml", "old.svg"]


def test_compute_export_html_holds_the_tables(runner, tmp_path):
    out = tmp_path / "x.html"
    result = run_cli(runner, "compute", EXAMPLES / "illustrated.yaml", "--only", "weights", "--export", out)
    assert result.exit_code == 0
    text = html_text(out.read_bytes())
    for value in np.array(reference("illustrated.yaml")["weights"][0]).flat:
        assert f"{value:.4f}" in text
    assert "Input 1" in text and "<title>attncli compute illustrated.yaml</title>" in out.read_text()


def test_svg_text_sits_on_the_cell_grid():
    """Every piece of text starts on a cell boundary and is as long as its cells (a Chinese character two)."""
    root = ET.fromstring(picture([HeatMap(trace_of(EXAMPLES / "bert_base.yaml"), color=True)], ".svg", 120))
    texts = [el for el in root.iter() if el.tag.endswith("text") and el.get("textLength") and (el.text or "").strip()]
    first = next(el for el in texts if el.text.startswith("Attention"))
    cell = float(first.get("textLength")) / len(first.text)
    for el in texts:
        body = el.text.replace("\u00a0", " ")
        x = float(el.get("x"))
        assert x == pytest.approx(cell * round(x / cell), abs=0.01), body  # Rich writes 3 decimals
        assert float(el.get("textLength")) == pytest.approx(cell * cell_len(body), abs=0.01), body
    assert any(el.text == "鱼" for el in texts)


def test_compute_export_txt_is_what_stdout_shows(runner, tmp_path):
    out = tmp_path / "tables.txt"
    result = run_cli(runner, "compute", EXAMPLES / "cross_attention.yaml", "--export", out)
    assert result.exit_code == 0
    assert strip_right(out.read_text()).strip() == strip_right(result.stdout).strip()
    assert "学生" in out.read_text()


def test_export_off_a_terminal_is_120_columns_wide_unless_columns_says(runner, tmp_path):
    out = tmp_path / "bert.txt"
    result = runner.invoke(app, ["compute", str(EXAMPLES / "bert_base.yaml"), "--head", "1", "--only", "inputs",
                                 "--export", str(out)],
                           env={"COLUMNS": ""})
    assert result.exit_code == 0
    lines = out.read_text().splitlines()
    assert max(cell_len(line) for line in lines) <= 120 and not re.search(r"\d…", out.read_text())  # no squashed cells
    assert "768" in lines[2]  # the last column's label
    narrow = runner.invoke(app, ["compute", str(EXAMPLES / "bert_base.yaml"), "--only", "inputs", "--export", str(out)],
                           env={"COLUMNS": "60"})
    assert narrow.exit_code == 0 and max(cell_len(line) for line in out.read_text().splitlines()) <= 60


# ---------------------------------------------------------------- the size of a picture, checked before it is drawn


def png_size(data: bytes) -> tuple[int, int]:
    import struct

    return struct.unpack(">II", data[16:24])


@pytest.mark.parametrize("theme", ["dark", "light"])
def test_the_size_worked_out_first_is_the_size_drawn(theme, monkeypatch):
    """The pixels the limits are checked on are those resvg draws, framed or not."""
    from attncli.views.picture import png_ready
    from attncli.views.picture_size import Size

    if not png_ready():
        pytest.skip("resvg-py is not installed")
    seen, check_all = [], Size.check_all
    monkeypatch.setattr(Size, "check_all",
                        lambda self, text: (seen.append(self.pixels(text.count("\n"))), check_all(self, text)))
    data = picture([HeatMap(trace_of(EXAMPLES / "two_heads.yaml"), color=True)], ".png", 120, theme=theme)
    assert seen == [png_size(data)]


def test_a_png_too_large_to_view_is_refused_before_it_is_drawn(runner, tmp_path, monkeypatch):
    """BERT-base's every table as a PNG was 2686 × 50462 pixels: 28 s, 1.9 GB, and SIGABRT under a 1 GiB limit."""
    import attncli.views.picture as pictures

    monkeypatch.setattr(pictures, "to_png", lambda svg: pytest.fail("drawn"))
    out = tmp_path / "out.png"
    result = runner.invoke(app, ["compute", str(EXAMPLES / "bert_base.yaml"), "--export", str(out)],
                           env={"COLUMNS": ""})
    # (known from the tables' rows, before their layout: 2,686 × 50,462 once laid out)
    assert_refused(result, "--export: the picture would be at least ", " pixels tall", "32,767 pixels a side",
                   "--only KEY", "--head N", ".svg")
    assert list(tmp_path.iterdir()) == []


def test_a_png_beyond_the_memory_budget_is_refused(runner, tmp_path, monkeypatch):
    import attncli.views.picture as pictures

    monkeypatch.setattr(pictures, "to_png", lambda svg: pytest.fail("drawn"))
    out = tmp_path / "out.png"
    args = ["compute", str(EXAMPLES / "bert_base.yaml"), "--head", "1", "--export", str(out)]
    result = runner.invoke(app, args, env={"COLUMNS": "", "ATTNCLI_MEMORY": "150M"})
    assert_refused(result, "--export: drawing this PNG of 108 lines would need",
                   "more than the 150 MiB attncli may use")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("option", ["--export", "--output"])
def test_a_page_too_long_is_refused_before_it_is_laid_out(runner, tmp_path, option):
    doc = tmp_path / "long.yaml"
    doc.write_text("inputs: {random: normal, seed: 0, shape: [10001, 2]}\n")
    out = tmp_path / "long.svg"
    result = runner.invoke(app, ["compute", str(doc), "--only", "inputs", "--full", option, str(out)])
    assert_refused(result, f"{option}: the picture would be at least 10,", "lines long", "(10,000 lines)",
                   "save it as .txt")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["long.yaml"]


def test_a_full_heat_map_too_tall_for_a_png_is_refused_before_it_is_laid_out(runner, tmp_path, monkeypatch):
    """heatmap --full of 1500 queries took 40 s to lay out before the refusal: a line per query is known before."""
    from attncli.views.heatmap import HeatMap

    monkeypatch.setattr(HeatMap, "__rich_console__", lambda *a: pytest.fail("laid out"))
    monkeypatch.setattr(HeatMap, "__rich_measure__", lambda *a: pytest.fail("measured"))
    doc = tmp_path / "long.yaml"
    doc.write_text("inputs: {random: normal, seed: 0, shape: [1500, 8]}\n")
    result = runner.invoke(app, ["heatmap", str(doc), "--full", "--export", str(tmp_path / "map.png")])
    assert_refused(result, "--export: the picture would be at least 73,", "pixels tall (1,501 lines of text)",
                   "(--head N)")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["long.yaml"]
