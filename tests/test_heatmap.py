"""attncli heatmap: golden text, masks, CJK alignment, the terminal's width (pictures: test_picture.py).

Numbers are checked against tests/reference.py (plain Python, independent of attncli).
"""

from __future__ import annotations

import io
import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest
import yaml
from conftest import EXAMPLES
from reference import naive_attention
from rich.cells import cell_len
from rich.console import Console

from attncli.cli import app
from attncli.core.pipeline import attend
from attncli.inputs.builder import build_spec
from attncli.inputs.document import read_document
from attncli.views.heatmap import HATCH, SHADES, HeatMap


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
scale 0.00 ▕ ░▒▓█▏ 0.98   rows: queries, columns: keys

         Input 1 Input 2 Input 3
Input 1     0.06 ▒▒ 0.47 ▒▒ 0.47
Input 2     0.00 ██ 0.98    0.02
Input 3     0.00 ██ 0.88    0.12
"""

TWO_HEADS = """\
Attention weights  A = softmax(S / √2)   2 heads   3 queries × 3 keys
scale 0.00 ▕ ░▒▓█▏ 0.73   rows: queries, columns: keys

    head 1         head 2
    The cat sat    The cat sat
The ▒▒▒▒▒▒▒▒░░░░   ░░░░▓▓▓▓░░░░
cat ░░░░▒▒▒▒▒▒▒▒   ▓▓▓▓▒▒▒▒░░░░
sat ▒▒▒▒▒▒▒▒░░░░   ████    ░░░░
"""


def strip_right(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.splitlines()) + "\n"


def test_one_head_golden_text_and_numbers_match_the_reference():
    text = text_of(HeatMap(trace_of(EXAMPLES / "illustrated.yaml"), color=False))
    assert strip_right(text) == ILLUSTRATED
    weights = np.array(reference("illustrated.yaml")["weights"][0])
    for i, line in enumerate(text.splitlines()[4:7]):
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
    one = text_of(HeatMap(trace_of(doc), head=0, color=False))
    assert "keys: 1 internationalization · 2 我想吃饭吃饭 · 3 x" in one
    # several heads: the rows carry the columns' numbers (the keys are the queries), no keys: line
    text = text_of(HeatMap(trace_of(doc), color=False))
    assert "keys:" not in text and "columns: keys (numbered alike)" in text.splitlines()[1]
    header = text.splitlines()[4]
    assert header.split() == ["1", "2", "3", "1", "2", "3"]
    assert [line.split()[0] for line in text.splitlines()[5:8]] == ["1", "2", "3"]
    assert text.splitlines()[5].startswith("1 internation… ") and text.splitlines()[6].startswith("2 我想吃饭吃饭 ")


def test_causal_masked_cells_are_hatched_and_only_those(tmp_path):
    trace = trace_of(EXAMPLES / "causal.yaml")
    lines = text_of(HeatMap(trace, color=False)).splitlines()[4:8]
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
    for width, across in ((60, 4), (120, 6), (200, 12)):
        lines = text_of(HeatMap(trace, color=False), width=width).splitlines()
        grid = [line for line in lines if line[:1] in "我想吃酸菜鱼" and line[:1]]
        assert len(grid) == 12 * 6 // across
        at = next(i for i, line in enumerate(lines) if line.lstrip().startswith("head "))  # (after the title)
        names, ruler = lines[at], lines[at + 1]  # each panel's key labels start under its name, in terminal cells

        def starts(line, word):
            return [cell_len(line[:m.start()]) for m in re.finditer(word, line)]

        assert starts(names, "head ") == starts(ruler, "我想吃酸菜鱼") == [3 + 15 * k for k in range(across)]
        assert all(cell_len(line) <= 3 + 15 * across - 3 for line in grid) and grid[0] == grid[0].rstrip()
        assert all(cell_len(line) <= width for line in lines)
        assert sum(line.count("head ") for line in lines if line.lstrip().startswith("head ")) == 12
        assert names.count("head ") == across


def test_colour_uses_the_heat_scales_backgrounds_and_shades_only_without_colour():
    trace = trace_of(EXAMPLES / "illustrated.yaml")
    console = Console(width=80, file=io.StringIO(), color_system="truecolor", legacy_windows=False)
    console.print(HeatMap(trace, color=True))
    out = console.file.getvalue()
    assert "\x1b[" in out and "48;2;" in out and not set(SHADES[1:]) & set(re.sub(r"scale.*", "", out))
    assert not re.search(r"\x1b\[1;[^m]*48;2;", out)  # bold labels, not bold cells
    # the deepest colour (the scale's full orange, attncli.views.colours) is the largest weight, 0.98, in black ink
    assert re.search(r"\x1b\[30;48;2;226;109;0m +0\.98 +\x1b", out)


def run_cli(runner, *args):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


def test_heatmap_command_exports_and_prints_shades(runner, tmp_path):
    out = tmp_path / "heads.svg"
    result = run_cli(runner, "heatmap", EXAMPLES / "two_heads.yaml", "--export", out)
    assert result.exit_code == 0, result.output
    assert "The cat sat" in result.stdout and "\x1b[" not in result.stdout and "▓" in result.stdout
    assert "The" in "".join(ET.fromstring(out.read_bytes()).itertext())
    assert [p.name for p in tmp_path.iterdir()] == ["heads.svg"]  # no temporary file left behind
    txt = tmp_path / "heads.txt"
    assert run_cli(runner, "heatmap", EXAMPLES / "two_heads.yaml", "--head", "2", "--export", txt).exit_code == 0
    assert "head 2 of 2" in txt.read_text() and "▓" in txt.read_text()


CAUSAL = """\
Attention weights  A = softmax(S / √4)   4 queries × 4 keys
scale 0.00 ▕ ░▒▓█▏ 1.00   ╱╱ masked   rows: queries, columns: keys

         Evan's     dog   Riley   barks
Evan's  ██ 1.00 ╱╱╱╱╱╱╱ ╱╱╱╱╱╱╱ ╱╱╱╱╱╱╱
dog     ██ 0.89    0.11 ╱╱╱╱╱╱╱ ╱╱╱╱╱╱╱
Riley   ▓▓ 0.66    0.11 ░░ 0.23 ╱╱╱╱╱╱╱
barks      0.13    0.19 ░░ 0.39 ░░ 0.29
"""


def test_causal_golden_text_as_the_readme_shows_it():
    trace = trace_of(EXAMPLES / "causal.yaml")
    spec = trace.spec  # the seeded random matrices, read by attncli; the attention itself by the reference
    ref = naive_attention(spec.inputs.tolist(), spec.w_q[0].tolist(), spec.w_k[0].tolist(), spec.w_v[0].tolist(),
                          mask="causal")
    assert strip_right(text_of(HeatMap(trace, color=False))) == CAUSAL
    shown = [[float(x) for x in re.findall(r"\d\.\d\d", line)] for line in CAUSAL.splitlines()[4:8]]
    assert shown == [np.round(row[: i + 1], 2).tolist() for i, row in enumerate(ref["weights"][0])]


def many_tokens(tmp_path, n: int, heads: int = 1):
    rng = np.random.default_rng(3)
    doc = tmp_path / "many.yaml"
    doc.write_text(yaml.safe_dump({"tokens": [f"t{i}" for i in range(1, n + 1)],
                                   "inputs": rng.normal(size=(n, 4)).tolist(), "heads": heads}))
    return trace_of(doc)


@pytest.mark.parametrize("width", [40, 80, 120])
def test_one_head_keeps_to_the_terminal_width_showing_both_ends(tmp_path, width):
    trace = many_tokens(tmp_path, 30)
    lines = text_of(HeatMap(trace, color=False), width=width).splitlines()
    assert all(cell_len(line) <= width for line in lines)
    header, first = lines[lines.index("") + 1: lines.index("") + 3]  # below the title and legend
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
    lines = text_of(HeatMap(trace_of(doc), head=1, color=False), width=50).splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("keys:"))
    keys = [line.strip() for line in lines[start:]][:lines[start:].index("")]  # up to the grid
    entries = " · ".join(keys).removeprefix("keys: ").split(" · ")
    assert entries == [f"{j} {t}" for j, t in enumerate(tokens, 1)]
    assert all(cell_len(line) <= 50 for line in lines)
    one = text_of(HeatMap(trace_of(doc), head=1, color=False), width=80)
    assert "我想吃饭吃…" in one  # cut, the ellipsis right after


@pytest.mark.parametrize("columns, blocks", [(80, 2), (60, 3), (200, 1)])
def test_full_draws_every_key_in_blocks_that_fit(runner, tmp_path, columns, blocks):
    """--full at any width: every weight of every row is drawn, in blocks of keys side by side that fit the terminal."""
    doc = tmp_path / "long.yaml"
    doc.write_text('tokens: "[CLS] my cat chased the red laser pointer across the kitchen floor [SEP]"\n'
                   "inputs: {random: normal, seed: 1, shape: [13, 8]}\nheads: 2\n")
    result = runner.invoke(app, ["heatmap", str(doc), "--head", "1", "--full"],
                           env={"COLUMNS": str(columns), "NO_COLOR": "1"})
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert max(cell_len(line.rstrip()) for line in lines) <= columns
    weights = trace_of(doc).weights[0]
    for i, token in enumerate(["[CLS]", "my", "cat"]):
        shown = [float(x) for line in lines if line.startswith(token + " ") for x in re.findall(r"\d+\.\d+", line)]
        assert shown == [round(float(w), 2) for w in weights[i]], token  # all 13, in order
    assert sum(line.startswith("keys ") for line in lines) == (blocks if blocks > 1 else 0)


@pytest.mark.parametrize("width, head, lines", [(80, None, 2), (50, 2, 4), (120, 2, 1)])
def test_a_long_title_breaks_between_its_parts_instead_of_being_cut(tmp_path, width, head, lines):
    """16 query heads on 4 K/V heads with a sink: every word of the title is shown, in lines within the width."""
    doc = tmp_path / "many.yaml"
    doc.write_text("inputs: {random: normal, seed: 0, shape: [5, 32]}\nheads: 16\nkv_heads: 4\nmask: causal\n"
                   f"sinks: {[0.5] * 16}\nweights: {{query: {{random: normal, seed: 1, shape: [32, 64]}}, "
                   "key: {random: normal, seed: 2, shape: [32, 16]}, "
                   "value: {random: normal, seed: 3, shape: [32, 16]}}\n")
    trace = trace_of(doc)
    heat = HeatMap(trace, head=head, color=False)
    shown = text_of(heat, width=width).splitlines()[:lines]
    assert all(cell_len(line) <= width for line in shown) and not any("…" in line for line in shown)
    assert "   ".join(shown).replace(",   ", ",  ") == heat.title()


SENTENCE = '"[CLS] my grandmother cooks sour fish in the kitchen for the family [SEP]"'


def sentence(tmp_path, heads: int = 12):
    doc = tmp_path / "sentence.yaml"
    doc.write_text(f"tokens: {SENTENCE}\ninputs: {{random: normal, seed: 0, shape: [13, 48]}}\nheads: {heads}\n"
                   "weights:\n  query: {random: xavier, seed: 1, shape: [48, 48]}\n"
                   "  key: {random: xavier, seed: 2, shape: [48, 48]}\n")
    return doc


def test_twelve_heads_of_a_sentence_fit_fifty_lines_at_80_columns(runner, tmp_path):
    """Issue 32: 12 heads of 13 tokens were 102 lines, the legend last, the column numbers run together."""
    doc = sentence(tmp_path)
    result = runner.invoke(app, ["heatmap", str(doc)], env={"COLUMNS": "80", "NO_COLOR": "1"})
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert len(lines) <= 50 and max(cell_len(line) for line in lines) <= 80
    assert all(line == line.rstrip() for line in lines)
    assert lines[1].startswith("scale 0.00 ▕ ░▒▓█▏ ") and "numbered alike" in lines[1]  # the legend first
    names = [k for k, line in enumerate(lines) if line.lstrip().startswith("head ")]
    assert [lines[k].split()[1::2] for k in names] == [[str(h) for h in range(r, r + 4)] for r in (1, 5, 9)]
    spec = trace_of(doc).spec
    ref = np.array(naive_attention(spec.inputs.tolist(), np.concatenate(list(spec.w_q), axis=1).tolist(),
                                   np.concatenate(list(spec.w_k), axis=1).tolist(), heads=12)["weights"])
    tokens = SENTENCE.strip('"').split()
    for r, k in enumerate(names):  # each row of panels: the ruler, then query i's cells in each panel
        ruler = lines[k + 1]
        left = ruler.index("1")
        assert ruler[left:].split() == ["1···5····10··"] * 4  # numbers apart, a dot for each other key
        for i in range(13):
            line = lines[k + 2 + i]
            assert line[:left].split() == [str(i + 1), tokens[i]]
            for p in range(4):
                drawn = line[left + 16 * p: left + 16 * p + 13].ljust(13)
                assert drawn == "".join(SHADES[min(int(w / ref.max() * 5), 4)] for w in ref[4 * r + p, i])


def test_heads_that_cannot_fit_a_screen_suggest_one_head(runner, tmp_path):
    doc = sentence(tmp_path, heads=24)
    result = runner.invoke(app, ["heatmap", str(doc)], env={"COLUMNS": "80", "NO_COLOR": "1"})
    lines = result.stdout.splitlines()
    assert result.exit_code == 0 and len(lines) > 50
    assert lines[2] == "24 heads do not fit on a screen: --head N (1–24) draws one"
    assert sum(line.lstrip().startswith("head ") for line in lines) == 6  # still the narrowest grid: 4 across
    one = runner.invoke(app, ["heatmap", str(doc), "--head", "24"], env={"COLUMNS": "80", "NO_COLOR": "1"})
    assert one.exit_code == 0 and "head 24 of 24" in one.stdout and "do not fit" not in one.stdout


def ansi_cells(out: str) -> list[tuple[str, str]]:
    """(SGR parameters, text) of each styled run that holds a number, as Rich writes them."""
    return [(sgr, text.strip()) for sgr, text in re.findall(r"\x1b\[([0-9;]*)m([^\x1b]*)\x1b\[0m", out)
            if re.fullmatch(r"\s*-?\d+\.\d+\s*", text)]


@pytest.mark.parametrize("of", ["grad_scaled_scores", "grad_weights"])
def test_signed_gradients_are_drawn_on_a_scale_centred_on_zero(of):
    """Negative cells blue, positive orange, the largest |x| of either sign the most vivid, and the scale symmetric:
    the most negative cell is no longer drawn as 'near 0'."""
    from attncli.views.colours import NEGATIVE, POSITIVE

    trace = trace_of(EXAMPLES / "backward" / "grads.yaml")
    matrix = getattr(trace, of)[0]  # (n, m) of head 1
    allowed = trace.spec.allowed[0]
    big = float(np.abs(matrix[allowed]).max())
    console = Console(width=120, file=io.StringIO(), color_system="truecolor", legacy_windows=False)
    console.print(HeatMap(trace, of=of, head=0, color=True))
    out = console.file.getvalue()
    assert f"scale {-big:.2f} " in out and f" {big:.2f}" in out and "blue < 0 < orange" in out
    cells = ansi_cells(out)
    assert len(cells) == (np.abs(matrix[allowed]) >= big / 64).sum()  # 0 (within 1/64 of the largest): uncoloured
    for sgr, text in cells:
        value = float(text)
        rgb = tuple(int(c) for c in sgr.split(";")[-3:]) if "48;2;" in sgr else None
        if abs(value) >= 0.02 * big:  # (the numbers are rounded to 2 decimals)
            blue, orange = rgb[2] > rgb[0], rgb[0] > rgb[2]
            assert (blue and value < 0) or (orange and value > 0), (value, rgb)
    shown = {float(text): sgr for sgr, text in cells}
    lowest, highest = min(shown), max(shown)
    wanted = {lowest: NEGATIVE[-1], highest: POSITIVE[-1]}[lowest if abs(lowest) > abs(highest) else highest]
    assert shown[lowest if abs(lowest) > abs(highest) else highest].endswith(";".join(map(str, wanted)))
    plain = text_of(HeatMap(trace, of=of, head=0, color=False), 120)
    assert f"scale {-big:.2f} ▕█▓▒░0░▒▓█▏ {big:.2f}" in plain


def test_a_16_colour_terminal_draws_shades_that_grow_with_the_weight():
    """TERM=xterm without COLORTERM: Rich maps the even-lightness scale onto the terminal's palette, white at the
    low end and red at the high (backwards on a dark background); there the cells are shaded ░▒▓█ with numbers, as
    without colour, and no background colour is written."""
    trace = trace_of(EXAMPLES / "causal.yaml")
    console = Console(width=80, file=io.StringIO(), color_system="standard", legacy_windows=False, force_terminal=True)
    console.print(HeatMap(trace, color=True))
    out = console.file.getvalue()
    codes = {int(c) for sgr in re.findall(r"\x1b\[([0-9;]*)m", out) for c in sgr.split(";") if c}
    assert "\x1b[" in out and not codes & {*range(40, 48), *range(100, 108)}  # no background colour at all
    plain = re.sub(r"\x1b\[[0-9;]*m", "", out)
    assert strip_right(plain) == strip_right(text_of(HeatMap(trace, color=False)))
    rows = [line for line in plain.splitlines() if line.startswith(("Evan's", "dog"))]
    assert "██ 1.00" in rows[0] and "██ 0.89" in rows[1] and "0.11" in rows[1]
    truecolor = Console(width=80, file=io.StringIO(), color_system="truecolor", legacy_windows=False)
    truecolor.print(HeatMap(trace, color=True))
    assert "48;2;" in truecolor.file.getvalue()  # full colour terminals keep the colour scale
