"""Issue 18, a newcomer's first hour: the projection matrices on request and the formula names for --only (5),
natural spellings in a document (7), one colour scale for tables and heat maps (8), pictures for slides and
papers: --theme, .png, LaTeX of wide matrices (10).

The expected numbers come from the YAML read by PyYAML alone, never from attncli's own reading.
"""

from __future__ import annotations

import csv
import io
import json
import re

import numpy as np
import pytest
import yaml
from conftest import EXAMPLES

from attncli.cli import app

TWO_HEADS = EXAMPLES / "two_heads.yaml"


def run(runner, *args, ok: bool = True):
    result = runner.invoke(app, [str(a) for a in args])
    if ok:
        assert result.exit_code == 0, result.output
    return result


def refused(runner, *args) -> str:
    """The one error line of a run that must fail with exit 2, nothing on standard output."""
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert "Traceback" not in result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    return lines[0]


def document(name: str) -> dict:
    return yaml.safe_load((EXAMPLES / name).read_text(encoding="utf-8"))


def per_head(weight: list, heads: int) -> np.ndarray:
    """A d_in × (h·d) weight as h × d_in × d: consecutive column blocks (the contract's split, done here by slicing)."""
    w = np.array(weight, dtype=float)
    d = w.shape[1] // heads
    return np.stack([w[:, i * d:(i + 1) * d] for i in range(heads)])


# -- 5. the projection matrices, on request; --only takes the formula's names


def json_of(runner, *args) -> dict:
    return json.loads(run(runner, "compute", *args, "--format", "json").stdout)


def test_the_default_json_has_no_projection_keys(runner):
    data = json_of(runner, TWO_HEADS)
    assert not [key for key in data if key.startswith(("weight_", "bias_"))]
    assert np.array(data["weights"]).shape == (2, 3, 3)  # `weights` is still A


def test_the_default_tables_show_no_projection(runner):
    text = run(runner, "compute", TWO_HEADS).stdout
    assert "projection" not in text and "b_Q" not in text.replace("+ b_Q", "")


def test_the_projections_in_json_are_the_documents_weights_per_head(runner):
    doc = document("two_heads.yaml")
    names = ["weight_query", "bias_query", "weight_key", "bias_key", "weight_value", "bias_value",
             "weight_output", "bias_output"]
    data = json_of(runner, TWO_HEADS, *[a for key in names for a in ("--only", key)])
    assert [k for k in data if k in names] == names  # in the order they are computed
    for part in ("query", "key", "value"):
        np.testing.assert_array_equal(np.array(data[f"weight_{part}"]), per_head(doc["weights"][part], 2))
        np.testing.assert_array_equal(np.array(data[f"bias_{part}"]), np.array(doc["bias"][part]).reshape(2, 2))
    np.testing.assert_array_equal(np.array(data["weight_output"]), np.array(doc["weights"]["output"]))
    np.testing.assert_array_equal(np.array(data["bias_output"]), np.array(doc["bias"]["output"]))
    assert "weights" not in data and "queries" not in data


ALIASES = [
    ("X", "inputs"), ("C", "context"), ("Q", "queries"), ("K", "keys"), ("V", "values"), ("S", "scores"),
    ("Z", "scaled_scores"), ("A", "weights"), ("a", "weights"), ("H", "head_outputs"), ("Y", "output"),
    ("W_Q", "weight_query"), ("w_q", "weight_query"), ("Wq", "weight_query"), ("WQ", "weight_query"),
    ("W_K", "weight_key"), ("W_V", "weight_value"), ("W_O", "weight_output"), ("wo", "weight_output"),
    ("b_Q", "bias_query"), ("b_q", "bias_query"), ("b_K", "bias_key"), ("b_V", "bias_value"), ("b_O", "bias_output"),
]


@pytest.mark.parametrize("alias, key", ALIASES)
def test_only_takes_the_formulas_name(runner, alias, key):
    path = EXAMPLES / ("cross_attention.yaml" if key == "context" else "two_heads.yaml")
    by_alias = json_of(runner, path, "--only", alias)
    assert by_alias == json_of(runner, path, "--only", key)
    assert key in by_alias


@pytest.mark.parametrize("alias, key", [("Q'", "queries_rotated"), ("Q′", "queries_rotated"), ("K′", "keys_rotated"),
                                        ("R", "residual"), ("X̂", "normalized_inputs")])
def test_only_takes_the_names_of_todays_quantities(runner, alias, key):
    data = json_of(runner, EXAMPLES / "llama_style.yaml", "--only", alias)
    assert key in data and len([k for k in data if isinstance(data[k], list)
                                and k not in ("tokens", "context_tokens")]) == 1


def test_grouped_query_projections_are_per_key_value_head(runner):
    doc = document("llama_style.yaml")
    data = json_of(runner, EXAMPLES / "llama_style.yaml", "--only", "W_K", "--only", "W_Q", "--only", "W_V")
    assert np.array(data["weight_query"]).shape == (8, 16, 4)
    assert np.array(data["weight_key"]).shape == (2, 16, 4)
    assert np.array(data["weight_value"]).shape == (2, 16, 4)
    assert doc["kv_heads"] == 2
    tables = run(runner, "compute", EXAMPLES / "llama_style.yaml", "--only", "W_K").stdout
    assert tables.count("Key projection  W_K   16 × 4") == 2  # each key/value head once
    assert "K/V head 2 (query heads 5–8) · Key projection" in tables


def test_tables_show_the_projections_with_their_numbers(runner):
    text = run(runner, "compute", TWO_HEADS, "--only", "W_Q", "--only", "b_Q", "--head", "2").stdout
    assert "Head 2 · Query projection  W_Q   4 × 2" in text
    assert "Head 2 · Query bias  b_Q   1 × 2" in text
    rows = [line for line in text.splitlines() if line.startswith("│")]
    cells = [[float(c) for c in line.strip("│").split("│")[1:]] for line in rows]
    np.testing.assert_array_equal(np.array(cells[:4]), per_head(document("two_heads.yaml")["weights"]["query"], 2)[1])
    assert cells[4] == [-0.1, 0.0]


def test_markdown_latex_and_csv_show_the_projections(runner):
    doc = document("two_heads.yaml")
    w_o = np.array(doc["weights"]["output"])
    markdown = run(runner, "compute", TWO_HEADS, "-f", "markdown", "--only", "W_O", "-p", "2").stdout
    assert markdown.startswith("### Output projection: `W_O` (4 × 4)\n")
    cells = [[float(c) for c in line.strip("| ").split(" | ")[1:]] for line in markdown.splitlines()[4:8]]
    np.testing.assert_array_equal(np.array(cells), w_o)
    latex = run(runner, "compute", TWO_HEADS, "-f", "latex", "--only", "W_K", "--head", "1", "-p", "1").stdout
    assert ("W_K^{(1)} = \\begin{bmatrix}\n1.0 & 0.0 \\\\\n0.5 & 0.5 \\\\\n0.0 & 1.0 \\\\\n"
            "0.0 & 0.0\n\\end{bmatrix}") in latex
    rows = list(csv.reader(io.StringIO(run(runner, "compute", TWO_HEADS, "-f", "csv", "--only", "b_V").stdout)))
    assert rows == [["head", "row", "1", "2"], ["1", "b_V", "0.0", "0.0"], ["2", "b_V", "0.1", "0.1"]]
    rows = list(csv.reader(io.StringIO(run(runner, "compute", TWO_HEADS, "-f", "csv", "--only", "W_O").stdout)))
    assert rows[0] == ["row", "1", "2", "3", "4"]
    np.testing.assert_array_equal(np.array([[float(x) for x in r[1:]] for r in rows[1:]]), w_o)


def test_npz_holds_the_projections_asked_for(runner, tmp_path):
    out = tmp_path / "w.npz"
    run(runner, "compute", TWO_HEADS, "--only", "W_Q", "--only", "A", "-o", out)
    with np.load(out) as arrays:
        assert sorted(arrays.files) == ["scale", "weight_query", "weights"]
        np.testing.assert_array_equal(arrays["weight_query"],
                                      per_head(document("two_heads.yaml")["weights"]["query"], 2))


def test_an_omitted_weight_is_shown_as_the_identity_it_stands_for(runner):
    data = json_of(runner, EXAMPLES / "rope.yaml", "--only", "W_V")
    np.testing.assert_array_equal(np.array(data["weight_value"]), np.eye(4)[None])


@pytest.mark.parametrize("name, message", [
    ("b_Q", "--only: 'bias_query' needs bias.query: in the document"),
    ("W_O", "--only: 'weight_output' needs weights.output: in the document"),
    ("bias_output", "--only: 'bias_output' needs bias.output: in the document"),
])
@pytest.mark.parametrize("fmt", ["table", "json", "markdown", "latex"])
def test_a_projection_the_document_lacks_is_an_error_in_every_format(runner, name, message, fmt):
    assert refused(runner, "compute", EXAMPLES / "illustrated.yaml", "--only", name, "-f", fmt) == f"Error: {message}"


def test_an_unknown_name_lists_the_keys_and_the_formula_names(runner):
    line = refused(runner, "compute", TWO_HEADS, "--only", "qqq")
    assert "unknown key 'qqq'" in line and "weight_query" in line and "W_Q or b_Q" in line and "A, H" in line
    assert "attncli compute --help lists them all" in line
    assert "did you mean 'weights'?" in refused(runner, "compute", TWO_HEADS, "--only", "wieghts")


# -- 7. natural spellings: told where they belong; scale: null refused


def compute_doc(runner, tmp_path, text: str):
    (tmp_path / "doc.yaml").write_text("inputs: [[1, 0, 1, 0], [0, 2, 0, 2], [1, 1, 1, 1]]\n" + text, encoding="utf-8")
    return runner.invoke(app, ["compute", str(tmp_path / "doc.yaml"), "--format", "json"])


W = "[[1, 0, 1], [1, 0, 0], [0, 0, 1], [0, 1, 1]]"
SPELLINGS = [  # (the document's extra lines, the message after "doc.yaml: ")
    (f"W_Q: {W}", "unknown key 'W_Q' (did you mean 'weights.query'?)"),
    (f"Wq: {W}", "unknown key 'Wq' (did you mean 'weights.query'?)"),
    (f"w_q: {W}", "unknown key 'w_q' (did you mean 'weights.query'?)"),
    (f"q: {W}", "unknown key 'q' (did you mean 'weights.query'?)"),
    (f"query_weight: {W}", "unknown key 'query_weight' (did you mean 'weights.query'?)"),
    (f"W_K: {W}", "unknown key 'W_K' (did you mean 'weights.key'?)"),
    (f"v: {W}", "unknown key 'v' (did you mean 'weights.value'?)"),
    (f"o_proj: {W}", "unknown key 'o_proj' (did you mean 'weights.output'?)"),
    (f"weights: {{W_Q: {W}}}", "weights: unknown key 'W_Q' (did you mean 'query'?)"),
    (f"weights: {{Wq: {W}}}", "weights: unknown key 'Wq' (did you mean 'query'?)"),
    (f"weights: {{q: {W}}}", "weights: unknown key 'q' (did you mean 'query'?)"),
    (f"weights: {{query_weight: {W}}}", "weights: unknown key 'query_weight' (did you mean 'query'?)"),
    (f"weights: {{Wv: {W}}}", "weights: unknown key 'Wv' (did you mean 'value'?)"),
    ("weights: {b_q: [1, 2, 3]}", "weights: unknown key 'b_q' (did you mean 'bias.query'?)"),
    ("b_q: [1, 2, 3]", "unknown key 'b_q' (did you mean 'bias.query'?)"),
    ("b_O: [1, 2, 3]", "unknown key 'b_O' (did you mean 'bias.output'?)"),
    ("bias: {b_q: [1, 2, 3]}", "bias: unknown key 'b_q' (did you mean 'query'?)"),
    ("bias: {q: [1, 2, 3]}", "bias: unknown key 'q' (did you mean 'query'?)"),
    (f"bias: {{W_K: {W}}}", "bias: unknown key 'W_K' (did you mean 'weights.key'?)"),
    ("attn_bias: [[0, 1, 2]]", "unknown key 'attn_bias' (did you mean 'score_bias'?)"),
    ("attention_bias: [[0, 1, 2]]", "unknown key 'attention_bias' (did you mean 'score_bias'?)"),
    ("position_bias: [[0, 1, 2]]", "unknown key 'position_bias' (did you mean 'score_bias'?)"),
    ("alibi: true", "unknown key 'alibi' (did you mean 'score_bias'?)"),
    ("wieghts: {}", "unknown key 'wieghts' (did you mean 'weights'?)"),  # the nearest key, as before
    ("rope: {q: 1}", "rope: unknown key 'q' (expected one of base, dims, style, frequencies, part, "
                     "attention_factor, scaling)"),  # no weights there
    ("scale: null", "scale: null (or an empty value) is not a scale: write scale: none to leave the scores unscaled "
                    "(× 1), or leave scale out for the default 1/√d_k (scale: sqrt)"),
    ("scale: ~", "scale: null (or an empty value) is not a scale"),
    ("scale:", "scale: null (or an empty value) is not a scale"),
]


@pytest.mark.parametrize("text, message", SPELLINGS,
                         ids=[case[0].split(":")[0] + str(i) for i, case in enumerate(SPELLINGS)])
def test_natural_spellings_are_told_where_they_belong(runner, tmp_path, text, message):
    result = compute_doc(runner, tmp_path, text + "\n")
    assert result.exit_code == 2 and result.stdout == "", result.output
    line = result.stderr.strip()
    assert "\n" not in line and line.startswith(f"Error: {tmp_path / 'doc.yaml'}: {message}"), line


def test_scale_none_and_an_omitted_scale_still_mean_what_they_did(runner, tmp_path):
    assert json.loads(compute_doc(runner, tmp_path, "scale: none\n").stdout)["scale"] == 1.0
    assert json.loads(compute_doc(runner, tmp_path, "").stdout)["scale"] == 0.5  # 1/√4
    assert json.loads(compute_doc(runner, tmp_path, "scale: sqrt\n").stdout)["scale"] == 0.5


def test_the_python_api_refuses_a_null_scale_too():
    import attncli

    with pytest.raises(attncli.AttnError, match="null .* is not a scale: write scale: none"):
        attncli.compute({"inputs": [[1.0, 2.0]], "scale": None})


# -- 8. one colour scale for compute's tables and the heat maps, readable on dark and light backgrounds


def luminance(rgb) -> float:
    channel = [(c / 255) / 12.92 if c / 255 <= 0.04045 else ((c / 255 + 0.055) / 1.055) ** 2.4 for c in rgb]
    return 0.2126 * channel[0] + 0.7152 * channel[1] + 0.0722 * channel[2]


def contrast(a, b) -> float:
    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def zero_and_one():
    """A trace whose weights are exactly 1 and 0 (scores 10000 apart), nothing masked."""
    import attncli

    trace = attncli.compute({"inputs": [[100.0, 0.0], [0.0, 100.0]], "tokens": "a b", "scale": "none"})
    assert trace.weights[0].tolist() == [[1.0, 0.0], [0.0, 1.0]]
    return trace


def cell_styles(renderable, number: str) -> set:
    """(foreground, background) of every cell whose text is ``number`` (or that number with more zeros)."""
    from rich.console import Console

    console = Console(file=io.StringIO(), width=80, color_system="truecolor", force_terminal=True, legacy_windows=False)
    found = set()
    for segment in console.render(renderable):
        if re.fullmatch(rf"\s*{re.escape(number)}0*\s*", segment.text or ""):
            style = segment.style
            colour = lambda c: None if c is None or c.is_default else c.get_truecolor()  # noqa: E731
            found.add((colour(style.color), colour(style.bgcolor)) if style else (None, None))
    return found


def test_weights_0_and_1_look_the_same_in_compute_and_heatmap():
    from attncli.views.heatmap import HeatMap
    from attncli.views.tables import View, compute_tables

    trace = zero_and_one()
    (table,) = compute_tables(trace, View(precision=2), None, ["weights"])
    heat = HeatMap(trace, head=0, color=True, precision=2)
    assert cell_styles(table, "1") == cell_styles(heat, "1.0") and len(cell_styles(heat, "1.0")) == 1
    assert cell_styles(table, "0") == cell_styles(heat, "0.0") == {(None, None)}  # no colour: the terminal's own
    ((ink, background),) = cell_styles(heat, "1.0")
    assert tuple(background) == (226, 109, 0) and tuple(ink) == (0, 0, 0)


def test_the_same_escape_codes_reach_the_terminal_from_both_views():
    from rich.console import Console

    from attncli.views.heatmap import HeatMap
    from attncli.views.tables import View, compute_tables

    trace = zero_and_one()
    codes = []
    for renderable in (*compute_tables(trace, View(precision=2), None, ["weights"]),
                       HeatMap(trace, head=0, precision=2)):
        console = Console(file=io.StringIO(), width=80, color_system="truecolor", force_terminal=True)
        console.print(renderable)
        out = console.file.getvalue()
        codes.append((set(re.findall(r"\x1b\[([0-9;]*)m *1(?:\.0+)? *\x1b", out)),
                      set(re.findall(r"(\x1b\[[0-9;]*m)? *0(?:\.0+)? ", out))
                      - {"", "\x1b[0m"}))  # (a reset: no colour)
    assert codes[0][0] == codes[1][0] == {"30;48;2;226;109;0"}
    assert codes[0][1] == codes[1][1] == set()  # 0 is written without any colour in both


def test_the_scale_reads_on_dark_and_light_backgrounds():
    from attncli.views.colours import RAMP, UNCOLOURED, heat_rgb, heat_style, ink, swatches

    shades = [heat_rgb(UNCOLOURED + (1 - UNCOLOURED) * k / 20) for k in range(21)]
    for rgb in shades:
        assert contrast(rgb, (0, 0, 0)) > 5 and contrast(rgb, (255, 255, 255)) > 2.5  # a visible cell on either
        assert contrast(rgb, (0, 0, 0) if ink(rgb) == "black" else (255, 255, 255)) >= 4.5  # its number legible
    # one lightness: no cell is much brighter or darker than another, so neither end stands out on one background
    assert max(map(luminance, shades)) - min(map(luminance, shades)) < 0.03
    # the more weight, the more vivid: the spread of the channels (a measure of chroma) grows along the scale
    spread = [max(rgb) - min(rgb) for rgb in RAMP]
    assert spread == sorted(spread) and spread[0] < 30 < 200 < spread[-1]
    assert heat_style(0.0) == heat_style(UNCOLOURED / 2) == "" and swatches()[0] == ""
    assert len(set(swatches())) == len(swatches())


# -- 10. pictures for slides and papers: --theme, .png, LaTeX that fits the page


import struct  # noqa: E402
import xml.etree.ElementTree as ET  # noqa: E402
import zlib  # noqa: E402

SVG = "{http://www.w3.org/2000/svg}"


def export(runner, tmp_path, name: str, *args, command: str = "heatmap", doc=EXAMPLES / "causal.yaml"):
    out = tmp_path / name
    run(runner, command, doc, "--export", out, *args)
    return out


def test_the_svg_is_a_dark_terminal_window_by_default_and_with_theme_dark(runner, tmp_path):
    for out in (export(runner, tmp_path, "a.svg"), export(runner, tmp_path, "b.svg", "--theme", "dark")):
        root = ET.fromstring(out.read_bytes())
        assert len(root.findall(f".//{SVG}circle")) == 3  # the window's buttons
        assert root.get("viewBox").startswith("0 0 ")
        assert "#292929" in out.read_text()  # Rich's dark background
    assert (tmp_path / "a.svg").read_bytes() == (tmp_path / "b.svg").read_bytes()


def test_the_light_svg_is_black_on_white_without_a_frame(runner, tmp_path):
    out = export(runner, tmp_path, "light.svg", "--theme", "light")
    root = ET.fromstring(out.read_bytes())
    assert root.findall(f".//{SVG}circle") == []  # no window buttons, no title
    assert "attncli heatmap" not in out.read_text()
    x, y, width, height = (float(v) for v in root.get("viewBox").split())
    first = root.find(f"{SVG}rect")  # the background: exactly the picture, white
    assert first.get("fill") == "#ffffff"
    assert [float(first.get(k)) for k in ("x", "y", "width", "height")] == [x, y, width, height]
    dark = export(runner, tmp_path, "dark.svg", "--theme", "dark")
    _, _, _, dark_height = (float(v) for v in ET.fromstring(dark.read_bytes()).get("viewBox").split())
    assert y > 20 and height < dark_height - 20  # cut to the text and its margin: no title bar above it
    text = "".join(root.itertext())
    assert "Evan's" in text and "0.89" in text and "masked" in text
    assert re.search(r"fill: #000000", out.read_text())  # black ink
    assert 'fill="#e26d00"' in out.read_text()  # the scale's full orange: weight 1.00, the same as on a dark terminal


def test_html_keeps_its_white_page_and_can_be_dark(runner, tmp_path):
    light = export(runner, tmp_path, "a.html").read_text()
    dark = export(runner, tmp_path, "b.html", "--theme", "dark").read_text()
    assert re.search(r"background-color: #ffffff", light) and re.search(r"background-color: #292929", dark)


def png_size_and_corner(data: bytes) -> tuple[tuple[int, int], tuple[int, ...]]:
    """(width, height) and the top-left pixel of an 8-bit RGBA PNG,
    decoded here (its first pixel needs no unfiltering)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, size = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour = struct.unpack(">IIBB", body[:10])
            assert (depth, colour) == (8, 6)
            size = (width, height)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    return size, tuple(raw[1:5])


def test_png_is_the_svg_at_twice_its_size(runner, tmp_path):
    pytest.importorskip("resvg_py")
    for theme, corner in (("light", (255, 255, 255, 255)), ("dark", None)):
        svg = export(runner, tmp_path, f"{theme}.svg", "--theme", theme)
        png = export(runner, tmp_path, f"{theme}.png", "--theme", theme)
        _, _, width, height = (float(v) for v in ET.fromstring(svg.read_bytes()).get("viewBox").split())
        size, pixel = png_size_and_corner(png.read_bytes())
        assert abs(size[0] - 2 * width) <= 1 and abs(size[1] - 2 * height) <= 1
        if corner:
            assert pixel == corner
        else:
            assert pixel != (255, 255, 255, 255)


def test_png_of_tables_and_explain_too(runner, tmp_path):
    pytest.importorskip("resvg_py")
    tables = export(runner, tmp_path, "t.png", "--only", "A", command="compute", doc=EXAMPLES / "illustrated.yaml")
    steps = tmp_path / "s.png"
    run(runner, "explain", "--step", "5", "--export", steps, "--theme", "light")
    for out in (tables, steps):
        assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_png_without_resvg_says_what_to_install_and_writes_nothing(runner, tmp_path, monkeypatch):
    import attncli.views.picture as picture

    monkeypatch.setattr(picture, "png_ready", lambda: False)
    out = tmp_path / "heads.png"
    line = refused(runner, "heatmap", EXAMPLES / "causal.yaml", "--export", out)
    assert line == ("Error: --export: writing .png needs the optional package resvg-py (a wheel, no system libraries): "
                    "pip install 'attncli[png]'")
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_the_python_caller_of_to_png_gets_the_same_words(monkeypatch):
    import sys

    from attncli.core.errors import AttnError
    from attncli.views.picture import to_png

    monkeypatch.setitem(sys.modules, "resvg_py", None)  # as if it were not installed
    with pytest.raises(AttnError, match=r"pip install 'attncli\[png\]'"):
        to_png("<svg xmlns='http://www.w3.org/2000/svg'/>")


def test_a_bad_theme_or_suffix_is_refused(runner, tmp_path):
    result = run(runner, "heatmap", EXAMPLES / "causal.yaml", "--export", tmp_path / "a.svg", "--theme", "sepia",
                 ok=False)
    assert result.exit_code == 2 and "'sepia' is not one of 'dark', 'light'" in result.stderr and result.stdout == ""
    assert not (tmp_path / "a.svg").exists()
    line = refused(runner, "heatmap", EXAMPLES / "causal.yaml", "--export", tmp_path / "a.jpg")
    assert line == "Error: --export: expected a file name ending in .svg, .png, .html or .txt"


# LaTeX: every equation fits the page; the comment names the rows and columns shown


def latex(runner, *args) -> str:
    return run(runner, "compute", *args, "--format", "latex").stdout


def test_the_comment_names_exactly_the_rows_and_columns_shown(runner, tmp_path):
    tokens = [f"t{i}" for i in range(1, 21)]
    doc = {"tokens": tokens, "inputs": np.eye(20)[:, :3].tolist(), "weights": {"query": np.ones((3, 3)).tolist()}}
    path = tmp_path / "wide.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    text = latex(runner, path, "--only", "weights", "-p", "2")
    comment = re.search(r"^% Weights: [^\n]*rows: ([^;]*); columns: (.*)$", text, re.M)
    (matrix,) = re.findall(r"\\begin\{array\}\{l\|r+\}\n(.*?)\n\\end\{array\}", text, re.S)
    header, *lines = [row.split(" & ") for row in matrix.replace(" \\\\ \\hline\n", " \\\\\n").split(" \\\\\n")]
    rows, columns = comment.group(1).split(", "), comment.group(2).split(", ")
    assert len(rows) == len(lines) and len(columns) == len(lines[0]) - 1 == len(header) - 1
    assert [r == "…" for r in rows] == [line[1] == r"\vdots" for line in lines]
    assert [c == "…" for c in columns] == [cell == r"\cdots" for cell in lines[0][1:]]
    # the labels beside the matrix are the ones the comment names
    assert [line[0] for line in lines] == [r"\vdots" if r == "…" else rf"\text{{{r}}}" for r in rows]
    assert header == [""] + [r"\cdots" if c == "…" else rf"\text{{{c}}}" for c in columns]
    assert rows[:6] == tokens[:6] and rows[-6:] == tokens[-6:]  # the first and last six rows, as the matrix shows
    assert columns[0] == "t1" and columns[-1] == "t20" and "t12" not in columns  # (it listed t1 … t12 before)


def test_a_summary_drops_columns_to_fit_beside_its_formula(runner):
    text = latex(runner, EXAMPLES / "bert_base.yaml", "--only", "Q", "--head", "1")
    assert ("% Head 1 · Queries: Q = X·W_Q + b_Q (6 × 64); rows: 我, 想, 吃, 酸, 菜, 鱼; "
            "columns: 1, 2, …, 63, 64") in text
    assert r"Q^{(1)} = X W_Q^{(1)} + b_Q^{(1)} = \begin{array}{l|rrrrr}" in text  # the tokens beside it


def test_the_text_width_estimate_errs_on_the_safe_side():
    """The widths TeX gives (pdflatex, article class, 10 pt, display math, measured with \\settowidth) are never
    underestimated, and not by more than a quarter."""
    from attncli.outputs.paste import _formula_pt, _matrix_pt

    measured = {  # formula and " = " -> points
        r"A^{(1)} = \operatorname{softmax}\left(\frac{S^{(1)}}{\sqrt{64}}\right)": 113.75,
        r"H^{(1)} = A^{(1)} V^{(1)}": 80.78,
        "X": 19.62,
        r"Q^{(1)} = X W_Q^{(1)} + b_Q^{(1)}": 100.42,
        r"Y = \operatorname{concat}(H^{(1)}, \dots, H^{(12)}) W_O + b_O": 173.51,
        r"{A^{(1)}}_{\text{cols }100\text{--}108}": 72.86,
    }
    for tex, width in measured.items():
        assert width <= _formula_pt(tex) <= 1.25 * width, tex
    six = [["0.3148"] * 6] + [["1"] * 6] * 5
    assert 230.0 <= _matrix_pt(six) <= 1.1 * 230.0
    assert 36.11 <= _matrix_pt([["0.3148"]]) <= 1.25 * 36.11


@pytest.mark.slow
@pytest.mark.skipif(__import__("shutil").which("pdflatex") is None, reason="pdflatex is not installed")
@pytest.mark.parametrize("args", [["-p", "4"], ["-p", "6", "--full"], ["-p", "17"], ["-p", "1", "--full"]])
def test_pdflatex_sets_every_example_without_an_overfull_line(runner, tmp_path, args):
    import subprocess

    names = ["bert_base.yaml", "llama_style.yaml", "two_heads.yaml", "cross_attention.yaml", "rope.yaml", "causal.yaml"]
    body = "\n\n".join(latex(runner, _ascii_tokens(runner, EXAMPLES / name, tmp_path), *args,
                             *[a for k in ("X", "W_Q", "Q", "K", "S", "Z", "A", "H", "Y")
                                                             for a in ("--only", k)]) for name in names)
    (tmp_path / "doc.tex").write_text("\\documentclass{article}\n\\usepackage{amsmath}\n\\begin{document}\n"
                                      + body + "\n\\end{document}\n", encoding="utf-8")
    done = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "doc.tex"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    log = (tmp_path / "doc.log").read_text(encoding="utf-8", errors="replace")
    assert done.returncode == 0, log[-2000:]
    assert "Overfull \\hbox" not in log, re.findall(r"Overfull \\hbox.*", log)


def _ascii_tokens(runner, path, tmp_path):
    """The document with its Chinese tokens (labels beside the matrices since issue 32: pdflatex cannot set them
    without CJKutf8) each made of as many W as it has characters: as wide as TeX sets them in a CJK font, or wider."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    shown = json.loads(run(runner, "compute", path, "-f", "json", "--only", "output").stdout)
    for key in ("tokens", "context_tokens"):
        if key in data and not str(data[key]).isascii():
            data[key] = ["W" * len(token) + str(i) for i, token in enumerate(shown[key])]
    if data == yaml.safe_load(path.read_text(encoding="utf-8")):
        return path
    copy = tmp_path / path.name
    copy.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    return copy
