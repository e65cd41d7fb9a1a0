"""Issue 31, Chinese everywhere: the language of a run (--lang, else ATTNCLI_LANG, else a zh_* locale, else English)
and what each command shows in it: titles, legends, comments, notices in Chinese with no English sentence left over,
tables that still fit 80 columns, JSON unchanged.  (Error messages are another branch's.)"""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

import pytest
from conftest import EXAMPLES
from rich.cells import cell_len

from attncli.cli import app

CJK = re.compile(r"[\u4e00-\u9fff]")
WORD = re.compile(r"\(?[A-Za-z][a-z]+[,.;:)]?")  # a lowercase English word (a formula's Q, W_Q, d_k, 2i: no word)
FORMULA = {"cos", "sin", "softmax", "rope", "exp", "ln", "log", "max", "mean", "var", "concat"}  # functions


def english_runs(text: str, allowed: set[str] = frozenset()) -> list[str]:
    """Runs of 3 or more English words in a row (separated by spaces only): a sentence left in English. Formulas,
    key names (with _ or digits), numbers, capitals and the ``allowed`` words (token labels, commands) break a run."""
    runs, run = [], []
    for piece in re.split(r"(\s+)", text):
        if piece.isspace() or piece == "":
            if "\n" in piece and run:  # a line ends a run
                runs.append(run)
                run = []
            continue
        if WORD.fullmatch(piece) and piece.strip("(),.;:") not in allowed | FORMULA:
            run.append(piece)
        else:
            runs.append(run)
            run = []
    runs.append(run)
    return [" ".join(r) for r in runs if len(r) >= 3]


def test_the_checker_finds_a_sentence_and_passes_formulas_and_labels():
    assert english_runs("头 1 · 查询  Q = X·W_Q + b_Q   3 × 2") == []
    assert english_runs("注意力权重  A = softmax(S / √4)   4 个查询 × 4 个键") == []
    assert english_runs("rows: queries, columns: keys") == ["rows: queries, columns: keys"]
    assert english_runs("色标 0.00   the weights sum to one") == ["the weights sum to one"]
    assert english_runs("│ The │ cat │ sat │", {"The", "cat", "sat"}) == []
    assert english_runs("The cat sat") == ["The cat sat"]


def invoke(runner, args: list[str], env: dict, code: int = 0):
    result = runner.invoke(app, args, env={"COLUMNS": "80", "NO_COLOR": "1", **env})
    assert code is None or result.exit_code == code, result.output
    return result


# The ways to ask for Chinese, and to ask for English against a Chinese environment
CHINESE = {"ATTNCLI_LANG=zh": ([], {"ATTNCLI_LANG": "zh"}),
           "LANG=zh_CN": ([], {"ATTNCLI_LANG": None, "LC_ALL": None, "LC_MESSAGES": None, "LANG": "zh_CN.UTF-8"}),
           "LC_ALL=zh_TW": ([], {"ATTNCLI_LANG": None, "LC_ALL": "zh_TW.UTF-8", "LANG": "en_US.UTF-8"}),
           "--lang zh over ATTNCLI_LANG=en": (["--lang", "zh"], {"ATTNCLI_LANG": "en"})}
ENGLISH = {"--lang en over ATTNCLI_LANG=zh": (["--lang", "en"], {"ATTNCLI_LANG": "zh"}),
           "--lang en over LANG=zh_CN": (["--lang", "en"], {"ATTNCLI_LANG": None, "LC_ALL": None,
                                                            "LANG": "zh_CN.UTF-8"})}
TOKENS = {"The", "cat", "sat", "barks", "dog", "Riley", "Evan's", "the", "llama", "ate", "some", "green", "grass",
          "like", "fish"}


def assert_chinese(text: str, allowed: set[str] = frozenset(), width: bool = True) -> None:
    """Chinese, no English sentence, and (on a terminal) every line within 80 columns."""
    assert CJK.search(text), text
    assert english_runs(text, TOKENS | allowed) == [], text
    assert not width or all(cell_len(line) <= 80 for line in text.splitlines()), text


COMPUTE = [["compute", str(EXAMPLES / "two_heads.yaml")],
           ["compute", str(EXAMPLES / "llama_style.yaml"), "-p", "2"],
           ["compute", str(EXAMPLES / "causal.yaml"), "--format", "markdown"],
           ["compute", str(EXAMPLES / "two_heads.yaml"), "--format", "latex"],
           ["compute", str(EXAMPLES / "backward" / "grads.yaml"), "--only", "dQ", "--only", "dW_Q", "--only", "dA"],
           ["compute", str(EXAMPLES / "bert_base.yaml"), "--only", "W_Q", "--head", "2"],
           ["compute", str(EXAMPLES / "stacked" / "two_layers.yaml"), "--only", "weights"],
           ["compute", str(EXAMPLES / "stacked" / "two_layers.yaml"), "--layer", "2", "--format", "markdown"]]


@pytest.mark.parametrize("way", CHINESE)
@pytest.mark.parametrize("args", COMPUTE, ids=lambda args: " ".join(args[1:]).replace(str(EXAMPLES) + "/", ""))
def test_compute_titles_are_chinese(runner, way, args):
    extra, env = CHINESE[way]
    out = invoke(runner, [*args, *extra], env).stdout
    pasted = "--format" in args  # Markdown and LaTeX: lines as long as their tables, at any width
    assert_chinese(out, {"cols"}, width=not pasted)  # (LaTeX: a block of columns, A_{\\text{cols } 1--8})
    english = invoke(runner, [*args, "--lang", "en"], env).stdout
    assert not CJK.search(english.replace("我想吃酸菜鱼", "")) and english != out


@pytest.mark.parametrize("way", ENGLISH)
def test_lang_en_overrides_a_chinese_environment(runner, way):
    extra, env = ENGLISH[way]
    for args in (COMPUTE[0], ["heatmap", str(EXAMPLES / "causal.yaml")], ["init"],
                 ["explain", "--step", "5"], ["check", str(EXAMPLES / "check" / "homework.yaml")]):
        result = invoke(runner, [*args, *extra], env, code=None if args[0] == "check" else 0)
        assert not CJK.search(result.stdout), (args, result.stdout)


def test_json_is_the_same_in_every_language(runner):
    args = ["compute", str(EXAMPLES / "two_heads.yaml"), "--format", "json"]
    assert invoke(runner, args, {"ATTNCLI_LANG": "zh"}).stdout == invoke(runner, args, {"ATTNCLI_LANG": "en"}).stdout


def test_every_quantity_has_a_chinese_title():
    from attncli.core.stages import QUANTITIES
    from attncli.outputs.titles import title

    for key, q in QUANTITIES.items():
        zh = title(key, q.title, "zh")
        assert CJK.search(zh) and english_runs(zh) == [] and zh != q.title, (key, zh)
        assert title(key, q.title, "en") == q.title


HEATMAPS = [["heatmap", str(EXAMPLES / "causal.yaml")],
            ["heatmap", str(EXAMPLES / "two_heads.yaml")],
            ["heatmap", str(EXAMPLES / "llama_style.yaml"), "--head", "3"],
            ["heatmap", str(EXAMPLES / "llama_style.yaml")],
            ["heatmap", str(EXAMPLES / "bert_base.yaml"), "--full"],
            ["heatmap", str(EXAMPLES / "backward" / "grads.yaml"), "--of", "grad_scaled_scores"],
            ["heatmap", str(EXAMPLES / "two_heads.yaml"), "--of", "scores", "--head", "1"]]


@pytest.mark.parametrize("way", CHINESE)
@pytest.mark.parametrize("args", HEATMAPS, ids=lambda args: " ".join(args[1:]).replace(str(EXAMPLES) + "/", ""))
def test_heatmap_titles_and_legends_are_chinese(runner, way, args):
    extra, env = CHINESE[way]
    out = invoke(runner, [*args, *extra], env).stdout
    assert_chinese(out)
    assert "行：查询，列：键" in out


def test_heatmap_with_colour_and_sinks_in_chinese(tmp_path):
    from attncli.cli.load import load
    from attncli.inputs.document import read_document
    from attncli.views.heatmap import HeatMap

    doc = tmp_path / "sinks.yaml"
    doc.write_text("inputs: [[1, 0], [0, 1], [1, 1]]\nheads: 2\nsinks: [0.5, -1.0]\nweights:\n"
                   "  query: [[1, 0], [0, 1]]\n  key: [[1, 0], [0, 1]]\n  value: [[1, 0], [0, 1]]\n"
                   "  output: [[1, 0], [0, 1]]\ngradient: [[1, 0], [0, 1], [1, 1]]\n", encoding="utf-8")
    trace = load(str(doc), doc=read_document(str(doc)))
    for of, head, color in (("weights", None, True), ("weights", 0, False), ("grad_weights", None, True),
                            ("grad_weights", 1, False)):
        lines = [line.plain for line in HeatMap(trace, of, head, False, color, 2, "zh").lines(80)]
        text = "\n".join(lines)
        assert_chinese(text, {"x1", "x2", "x3"})
        assert ("汇点" in text) == (of == "weights")


INIT = [[], ["--tokens", "我想吃酸菜鱼", "--mask", "causal"],
        ["--n", "2", "--context", "3", "--heads", "2", "--inline"],
        ["--integers", "--pre-norm", "rms", "--rope"],
        ["--d-model", "8", "--heads", "4", "--kv-heads", "2", "--rope", "--pre-norm", "layer", "--qk-norm", "rms",
         "--sinks", "--gate", "--query-temperature", "--context", "5"],
        ["--kv-heads", "1", "--heads", "2"], *(["--rope-scaling", kind] for kind in
                                               ("linear", "dynamic", "llama3", "yarn", "longrope"))]


def comments(text: str) -> str:
    """The comments of a YAML document (a # outside quotes: init's labels here have none)."""
    return "\n".join(line.split("#", 1)[1] for line in text.splitlines() if "#" in line)


@pytest.mark.parametrize("args", INIT, ids=" ".join)
def test_init_comments_are_chinese_and_the_document_the_same(runner, args):
    from attncli.inputs.document import parse_text

    zh = invoke(runner, ["init", *args, "--lang", "zh"], {"ATTNCLI_LANG": "en"}).stdout
    en = invoke(runner, ["init", *args], {"ATTNCLI_LANG": "en"}).stdout
    assert parse_text(zh, "zh") == parse_text(en, "en")
    assert zh.count("\n") <= en.count("\n") and zh != en
    said = comments(zh)
    assert CJK.search(said)
    assert english_runs(said, {"attncli", "compute", "heatmap"}) == [], said
    for line in zh.splitlines():
        assert cell_len(line) <= 100 or not line.lstrip().startswith("#"), line  # (wrapped as the English)
    assert invoke(runner, ["init", *args], CHINESE["LANG=zh_CN"][1]).stdout == zh


def test_init_json_is_the_same_in_chinese(runner, tmp_path):
    for lang in ("en", "zh"):
        invoke(runner, ["init", "--heads", "2", "--rope", "-o", str(tmp_path / f"{lang}.json"), "--lang", lang], {})
    assert (tmp_path / "en.json").read_text() == (tmp_path / "zh.json").read_text()


@pytest.mark.parametrize("way", CHINESE)
def test_explain_check_and_page_follow_the_environment(runner, way):
    extra, env = CHINESE[way]
    out = invoke(runner, ["explain", "--step", "5", *extra], env).stdout
    assert CJK.search(out) and "softmax" in out
    result = invoke(runner, ["check", str(EXAMPLES / "check" / "homework.yaml"), *extra], env, code=1)
    assert CJK.search(result.stdout)
    page = invoke(runner, ["page", str(EXAMPLES / "illustrated.yaml"), *extra], env).stdout
    assert '"lang":"zh"' in page.replace(" ", "")


def test_page_explain_check_stay_english_by_default(runner):
    assert not CJK.search(invoke(runner, ["explain", "--step", "5"], {}).stdout)
    page = invoke(runner, ["page", str(EXAMPLES / "illustrated.yaml")], {}).stdout
    assert '"lang":"en"' in page.replace(" ", "")


def test_the_warning_of_a_query_with_no_key_is_chinese(runner, tmp_path):
    doc = tmp_path / "doc.yaml"
    doc.write_text("tokens: [a, b, c]\ninputs: [[1, 0], [0, 1], [1, 1]]\ncontext: [[1, 0], [0, 1]]\n"
                   "mask: {causal: lower_right}\n", encoding="utf-8")
    result = invoke(runner, ["compute", str(doc), "--format", "json", "--lang", "zh"], {})
    assert result.stderr.startswith("警告：查询 1（'a'）")  # the prefix in Chinese too (Error: is 错误：)
    assert english_runs(result.stderr) == []
    english = invoke(runner, ["compute", str(doc), "--format", "json"], {"ATTNCLI_LANG": "en"})
    assert english.stderr.startswith("Warning: query 1 ('a') may attend to no key")
    assert json.loads(result.stdout) == json.loads(english.stdout)


def test_every_step_extract_tells_is_in_chinese():
    import inspect

    from attncli.cli.extract import in_language
    from attncli.models import extract

    steps = re.findall(r'progress\(f?"([^"]+)"\)', inspect.getsource(extract))
    assert len(steps) == 5
    for step in [*steps, "writing the document"]:
        told = step.replace("{dtype}", "float64").replace("{n}", "7")
        zh = in_language(told, "zh")
        assert CJK.search(zh) and english_runs(zh) == [], told
        assert in_language(told, "en") == told
    assert in_language("running the model on 7 tokens", "zh") == "正在用 7 个词元运行模型"


def test_extract_report_in_chinese(tmp_path):
    from attncli.cli.extract import _report

    found = SimpleNamespace(summary="minilm: bert, layer 3 of 0–5, 7 tokens, float64",
                            agreement=[SimpleNamespace(key="weights", difference=1e-16, module="BertSelfAttention")])
    zh = _report(found, tmp_path / "l3.yaml", tmp_path / "l3.npy", "zh").splitlines()
    assert zh[1] == "文档重现了模型的结果（最大 |差值|）：" and zh[-1].startswith("已写入 ")
    assert _report(found, tmp_path / "l3.yaml", tmp_path / "l3.npy").splitlines()[-1].startswith("Wrote ")


def test_check_against_verdict_in_chinese():
    from rich.console import Console

    from attncli.core.verdict import Finding
    from attncli.views.verdict import report

    fields = Finding.__dataclass_fields__
    values = {"key": "weights", "largest": 0.5, "rms": 0.1, "eager": 1e-3, "budget": 2e-3, "within": False,
              "worst": (0, 1, 0), "truth": 0.25, "got": 0.75}
    finding = Finding(**{name: values[name] for name in fields if name in values})
    console = Console(width=80, record=True, color_system=None)
    for line in report([finding], "bf16", ["a", "b"], ["a", "b"], "zh"):
        console.print(line)
    text = console.export_text()
    assert_chinese(text, {"eager"})
    assert "头 1，查询 2 ('b')，键 1 ('a')" in text


@pytest.mark.parametrize("command", ["compute", "heatmap", "explain", "check", "init", "extract", "page", "card"])
def test_every_command_has_lang_and_says_the_precedence(runner, command):
    text = " ".join(invoke(runner, [command, "--help"], {"COLUMNS": "300"}).stdout.split())
    assert "--lang" in text and "ATTNCLI_LANG" in text and "LC_ALL" in text


@pytest.mark.parametrize("command", [["compute", str(EXAMPLES / "illustrated.yaml"), "--only", "weights"],
                                     ["heatmap", str(EXAMPLES / "causal.yaml")]], ids=lambda c: c[0])
def test_a_png_of_chinese_titles_needs_a_chinese_font(runner, tmp_path, monkeypatch, command):
    """The documents' labels are English: only the titles and legends are Chinese, and a PNG of them without a font
    that has them is refused, nothing written; in English the same picture is drawn with Latin fonts alone."""
    pytest.importorskip("resvg_py")
    from test_picture_glyphs import format4, sfnt

    from attncli.views import fonts

    (tmp_path / "latin").mkdir()
    (tmp_path / "latin" / "Latin.ttf").write_bytes(sfnt(format4(0x20, 0x7E)))
    monkeypatch.setattr(fonts, "font_dirs", lambda: [tmp_path / "latin"])
    out = tmp_path / "zh.png"
    result = invoke(runner, [*command, "--lang", "zh", "--export", str(out)], {}, code=2)
    assert result.stderr.startswith("错误：--export: ") and not out.exists()
    english = tmp_path / "en.png"
    invoke(runner, [*command, "--lang", "en", "--export", str(english)], {"ATTNCLI_LANG": "zh"})
    assert english.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_positions_and_emulated_titles_in_chinese(runner, tmp_path):
    doc = tmp_path / "doc.yaml"
    doc.write_text("tokens: [The, cat, sat]\ninputs: [[1, 0], [0, 1], [1, 1]]\npositional: sinusoidal\n",
                   encoding="utf-8")
    out = invoke(runner, ["compute", str(doc), "--lang", "zh"], {}).stdout
    assert "位置编码  P（sinusoidal）" in out and "加上位置编码的输入  X + P" in out
    assert_chinese(out)
    out = invoke(runner, ["compute", str(doc), "--emulate", "bf16", "--only", "weights"], {"ATTNCLI_LANG": "zh"}).stdout
    assert "注意力权重（模拟 bf16）" in out
    assert_chinese(out)
