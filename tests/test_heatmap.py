"""attncli heatmap and --export: golden text, masks, CJK alignment, and pictures that parse.

Numbers are checked against tests/reference.py (plain Python, independent of attncli).
"""

from __future__ import annotations

import io
import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

import numpy as np
import pytest
import yaml
from rich.cells import cell_len
from rich.console import Console

from attncli.attention import attend
from attncli.cli import app
from attncli.document import read_document
from attncli.heatmap import HATCH, SHADES, HeatMap
from attncli.picture import picture
from attncli.spec import build_spec
from tests.conftest import EXAMPLES
from tests.reference import naive_attention


def trace_of(path):
    return attend(build_spec(read_document(str(path))))


def text_of(renderable, width=80) -> str:
    console = Console(width=width, file=io.StringIO(), color_system=None, legacy_windows=False)
    console.print(renderable)
    return console.file.getvalue()


def reference(name: str, **extra) -> dict:
    doc = yaml.safe_load((EXAMPLES / name).read_text())
    w = doc.get("weights", {})
    return naive_attention(doc["inputs"], w.get("query"), w.get("key"), w.get("value"), heads=doc.get("heads", 1),
                           bias=doc.get("bias"), output=w.get("output"), scale=doc.get("scale", "sqrt"), **extra)


ILLUSTRATED = """\
Attention weights  A = softmax(S)   3 queries × 3 keys

         Input 1 Input 2 Input 3
Input 1     0.06 ▒▒ 0.47 ▒▒ 0.47
Input 2     0.00 ██ 0.98    0.02
Input 3     0.00 ██ 0.88    0.12

scale 0.00 ▕ ░▒▓█▏ 0.98   rows: queries, columns: keys
"""

TWO_HEADS = """\
Attention weights  A = softmax(S / √2)   2 heads   3 queries × 3 keys

head 1             head 2
    The cat sat        The cat sat
The ▒▒▒▒▒▒▒▒░░░░   The ░░░░▓▓▓▓░░░░
cat ░░░░▒▒▒▒▒▒▒▒   cat ▓▓▓▓▒▒▒▒░░░░
sat ▒▒▒▒▒▒▒▒░░░░   sat ████    ░░░░

scale 0.00 ▕ ░▒▓█▏ 0.73   rows: queries, columns: keys
"""


def strip_right(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.splitlines()) + "\n"


def test_one_head_golden_text_and_numbers_match_the_reference():
    text = text_of(HeatMap(trace_of(EXAMPLES / "illustrated.yaml"), color=False))
    assert strip_right(text) == ILLUSTRATED
    weights = np.array(reference("illustrated.yaml")["weights"][0])
    for i, line in enumerate(text.splitlines()[3:6]):
        shown = [float(x) for x in re.findall(r"\d\.\d\d", line)]
        assert shown == pytest.approx(np.round(weights[i], 2).tolist(), abs=1e-12)


def test_small_multiples_keep_the_column_labels_whole():
    text = text_of(HeatMap(trace_of(EXAMPLES / "two_heads.yaml"), color=False))
    assert strip_right(text) == TWO_HEADS
    assert "…" not in text
    # the deepest shade sits where the reference has the largest weight of the shared scale
    weights = np.array(reference("two_heads.yaml")["weights"])
    h, i, j = np.unravel_index(weights.argmax(), weights.shape)
    assert (h, i, j) == (1, 2, 0) and weights.max() == pytest.approx(0.73, abs=0.005)


def test_long_labels_become_numbered_columns_with_a_key_line(tmp_path):
    doc = tmp_path / "long.yaml"
    doc.write_text("tokens: [internationalization, 我想吃饭吃饭, x]\ninputs: [[1, 0], [0, 1], [1, 1]]\nheads: 2\n")
    text = text_of(HeatMap(trace_of(doc), color=False))
    assert "keys: 1 internationalization · 2 我想吃饭吃饭 · 3 x" in text
    header = text.splitlines()[3]
    assert header.split() == ["1", "2", "3", "1", "2", "3"]


def test_causal_masked_cells_are_hatched_and_only_those(tmp_path):
    trace = trace_of(EXAMPLES / "causal.yaml")
    lines = text_of(HeatMap(trace, color=False)).splitlines()[3:7]
    for i, line in enumerate(lines):
        cells = re.findall(r"( [ ░▒▓█]{2} +\d\.\d\d| ╱{7})", line[7:])
        assert len(cells) == 4, line
        assert [HATCH in c for c in cells] == [j > i for j in range(4)]
    assert "╱╱ masked" in text_of(HeatMap(trace, color=False))
    # small multiples: the three masked cells of each head are drawn ╱╱, nothing else is
    doc = tmp_path / "causal2.yaml"
    doc.write_text("tokens: a b c\ninputs: [[1, 0], [0, 1], [1, 1]]\nheads: 2\nmask: causal\n")
    many = text_of(HeatMap(trace_of(doc), color=False)).splitlines()
    rows = [line for line in many if line[:1] in "abc" and line[:1]]
    assert [line.count(HATCH) for line in rows] == [8, 4, 0]  # 2 heads × masked cells × 2 cells
    unmasked = text_of(HeatMap(trace_of(EXAMPLES / "bert_base.yaml"), color=False), width=200)
    assert HATCH not in unmasked and "masked" not in unmasked


def test_cjk_rows_have_the_same_width_and_wrap_to_the_terminal():
    trace = trace_of(EXAMPLES / "bert_base.yaml")
    for width, across in ((40, 2), (60, 3), (120, 4), (200, 4)):
        lines = text_of(HeatMap(trace, color=False), width=width).splitlines()
        grid = [line for line in lines if line[:1] in "我想吃酸菜鱼" and line[:1]]
        assert len(grid) == 12 * 6 // across
        assert len({cell_len(line) for line in grid}) == 1
        assert all(cell_len(line) <= width for line in lines)
        assert sum(line.count("head ") for line in lines if line.startswith("head ")) == 12
        assert lines[2].count("head ") == across


def test_colour_uses_viridis_backgrounds_and_shades_only_without_colour():
    trace = trace_of(EXAMPLES / "illustrated.yaml")
    console = Console(width=80, file=io.StringIO(), color_system="truecolor", legacy_windows=False)
    console.print(HeatMap(trace, color=True))
    out = console.file.getvalue()
    assert "\x1b[" in out and "48;2;" in out and not set(SHADES[1:]) & set(re.sub(r"scale.*", "", out))
    assert not re.search(r"\x1b\[1;[^m]*48;2;", out)  # bold labels, not bold cells
    # the deepest colour (viridis yellow) is the largest weight, 0.98, in black ink
    assert re.search(r"\x1b\[30;48;2;253;231;37m +0\.98 +\x1b", out)


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


def run_cli(runner, *args):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


def test_heatmap_command_exports_and_prints_shades(runner, tmp_path):
    out = tmp_path / "heads.svg"
    result = run_cli(runner, "heatmap", EXAMPLES / "two_heads.yaml", "--export", out)
    assert result.exit_code == 0, result.output
    assert "The cat sat" in result.stdout and "\x1b[" not in result.stdout and "▓" in result.stdout
    assert "The" in svg_text(out.read_bytes())
    assert [p.name for p in tmp_path.iterdir()] == ["heads.svg"]  # no temporary file left behind
    txt = tmp_path / "heads.txt"
    assert run_cli(runner, "heatmap", EXAMPLES / "two_heads.yaml", "--head", "2", "--export", txt).exit_code == 0
    assert "head 2 of 2" in txt.read_text() and "▓" in txt.read_text()


@pytest.mark.parametrize("args, message", [
    (["heatmap", "{ex}/illustrated.yaml", "--export", "{tmp}/a.png"], "--export: expected a file name ending in .svg"),
    (["heatmap", "{ex}/illustrated.yaml", "--head", "3"], "--head 3 is out of range"),
    (["heatmap", "{ex}/illustrated.yaml", "--head", "x"], "'x' is not a head number"),
    (["compute", "{ex}/illustrated.yaml", "--format", "json", "--export", "{tmp}/a.svg"], "works with --format table only"),
    (["compute", "{ex}/illustrated.yaml", "-o", "{tmp}/a.svg", "--export", "{tmp}/a.svg"], "same file as --output"),
    (["compute", "{tmp}/csv/files.yaml", "--export", "{tmp}/csv/key.txt"], "is one of this run's input files"),
    (["heatmap", "{tmp}/csv/files.yaml", "--export", "{tmp}/csv/key.txt"], "is one of this run's input files"),
    (["compute", "{ex}/illustrated.yaml", "-o", "{tmp}/a.npz", "--export", "{tmp}/a.svg"], "-o a.npz writes arrays"),
    (["compute", "{ex}/illustrated.yaml", "--export", "{tmp}/no/a.svg"], "the folder"),
    # -o's problems are found before the picture is written: both files or neither
    (["compute", "{ex}/illustrated.yaml", "-o", "{tmp}/no/x.txt", "--export", "{tmp}/a.svg"], "the folder"),
    (["compute", "{tmp}/csv/files.yaml", "-o", "{tmp}/csv/key.txt", "--export", "{tmp}/a.svg"], "is one of this run's input files"),
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


CAUSAL = """\
Attention weights  A = softmax(S / √4)   4 queries × 4 keys

         Evan's     dog   Riley   barks
Evan's  ██ 1.00 ╱╱╱╱╱╱╱ ╱╱╱╱╱╱╱ ╱╱╱╱╱╱╱
dog     ██ 0.89    0.11 ╱╱╱╱╱╱╱ ╱╱╱╱╱╱╱
Riley   ▓▓ 0.66    0.11 ░░ 0.23 ╱╱╱╱╱╱╱
barks      0.13    0.19 ░░ 0.39 ░░ 0.29

scale 0.00 ▕ ░▒▓█▏ 1.00   ╱╱ masked   rows: queries, columns: keys
"""


def test_causal_golden_text_as_the_readme_shows_it():
    trace = trace_of(EXAMPLES / "causal.yaml")
    spec = trace.spec  # the seeded random matrices, read by attncli; the attention itself by the reference
    ref = naive_attention(spec.inputs.tolist(), spec.w_q[0].tolist(), spec.w_k[0].tolist(), spec.w_v[0].tolist(), mask="causal")
    assert strip_right(text_of(HeatMap(trace, color=False))) == CAUSAL
    shown = [[float(x) for x in re.findall(r"\d\.\d\d", line)] for line in CAUSAL.splitlines()[3:7]]
    assert shown == [np.round(row[: i + 1], 2).tolist() for i, row in enumerate(ref["weights"][0])]


def many_tokens(tmp_path, n: int, heads: int = 1):
    rng = np.random.default_rng(3)
    doc = tmp_path / "many.yaml"
    doc.write_text(yaml.safe_dump({"tokens": [f"t{i}" for i in range(1, n + 1)], "inputs": rng.normal(size=(n, 4)).tolist(),
                                   "heads": heads}))
    return trace_of(doc)


@pytest.mark.parametrize("width", [40, 80, 120])
def test_one_head_keeps_to_the_terminal_width_showing_both_ends(tmp_path, width):
    trace = many_tokens(tmp_path, 30)
    lines = text_of(HeatMap(trace, color=False), width=width).splitlines()
    assert all(cell_len(line) <= width for line in lines)
    header, first = lines[2], lines[3]
    assert "t1 " in header and header.rstrip().endswith("t30") and "t15 " not in header
    # the left-out column's … sits in the same place in the header and in every row
    assert header.index("…") == first.index("…")
    # the first row's last number is the reference weight of query 1 on key 30
    ref = naive_attention(trace.spec.inputs.tolist())["weights"][0][0]
    assert float(first.split()[-1]) == pytest.approx(round(ref[-1], 2), abs=1e-9)


def test_key_line_breaks_between_entries(tmp_path):
    doc = tmp_path / "long.yaml"
    tokens = ["internationalization", "我想吃饭吃饭吃饭吃饭", "x", "a very long label indeed"]
    doc.write_text(yaml.safe_dump({"tokens": tokens, "inputs": [[1, 0], [0, 1], [1, 1], [2, 0]], "heads": 2},
                                  allow_unicode=True))
    lines = text_of(HeatMap(trace_of(doc), color=False), width=50).splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("keys:"))
    keys = [line.strip() for line in lines[start:] if not line.startswith("scale")][:-1]  # up to the legend
    entries = " · ".join(keys).removeprefix("keys: ").split(" · ")
    assert entries == [f"{j} {t}" for j, t in enumerate(tokens, 1)]
    assert all(cell_len(line) <= 50 for line in lines)
    assert "我想吃饭吃…" in text_of(HeatMap(trace_of(doc), color=False), width=80)  # cut, the ellipsis right after


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
    result = runner.invoke(app, ["compute", str(EXAMPLES / "bert_base.yaml"), "--head", "1", "--only", "inputs", "--export", str(out)],
                           env={"COLUMNS": ""})
    assert result.exit_code == 0
    lines = out.read_text().splitlines()
    assert max(cell_len(line) for line in lines) <= 120 and not re.search(r"\d…", out.read_text())  # no squashed cells
    assert "768" in lines[2]  # the last column's label
    narrow = runner.invoke(app, ["compute", str(EXAMPLES / "bert_base.yaml"), "--only", "inputs", "--export", str(out)],
                           env={"COLUMNS": "60"})
    assert narrow.exit_code == 0 and max(cell_len(line) for line in out.read_text().splitlines()) <= 60
