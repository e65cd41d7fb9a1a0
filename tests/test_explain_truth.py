"""`attncli explain` says only what is true of the document it explains, in English and in Chinese.

Each step's text is read on every example of examples/ (and on documents made here for the cases the
examples lack: an additive score, W_Q = W_K, Q = K = V = X, a row equal to its column), for the first
and the last query, in both languages, and checked against the document and the computed numbers:
what it says of the scale, of cross-attention, of symmetry (a dot product commutes: the point is q_i·k_j
against q_j·k_i, and the numbers it quotes are the scores), the notation of the worked lines (tokens as
labels, q₁ · k₂), z introduced before use, the sine and cosine columns, and the walkthrough's own rounded
figures on the built-in example.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
import yaml

from attncli.cli import app

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
FILES = sorted(EXAMPLES.glob("*.yaml")) + [EXAMPLES / "csv" / "files.yaml"]
MADE = {
    "additive.yaml": {"tokens": ["a", "b", "c"], "inputs": [[1, 0, 1], [0, 1, 0], [1, 1, 0]], "score": "additive",
                      "weights": {"w1": [[1, 0], [0, 1], [1, 1]], "w2": [[0, 1], [1, 0], [1, 1]], "v": [1, -1]},
                      "positional": "sinusoidal", "add_norm": True},
    "additive_scaled.yaml": {"inputs": [[1, 0], [0, 1]], "score": "additive", "scale": "sqrt",
                             "weights": {"w1": [[1, 0], [0, 1]], "w2": [[0, 1], [1, 0]], "v": [1, 2]}},
    "same_qk.yaml": {"tokens": ["a", "b", "c"], "inputs": [[1, 0, 1], [0, 1, 0], [1, 1, 0]],
                     "weights": {"query": [[1, 0], [0, 1], [1, 1]], "key": [[1, 0], [0, 1], [1, 1]]},
                     "bias": {"query": [0.5, 0], "key": [0.5, 0]}},
    "identity.yaml": {"tokens": "we see it", "inputs": [[1, 2], [0, 1], [2, 0]], "scale": "none"},
    "row_column.yaml": {"tokens": ["a", "b", "c"], "inputs": [[1, 0, 0], [0, 1, 0], [0, 0, 1]], "scale": "none",
                        "weights": {"query": [[1, 0, 0], [0, 1, 2], [0, 0, 1]]}},  # S = W_Q: S₂₃ = 2, S₃₂ = 0
    "cross_positional.yaml": {"tokens": ["I", "am"], "inputs": [[1, 0], [0, 1]], "positional": "sinusoidal",
                              "context": [[1, 0, 1], [0, 1, 1], [1, 1, 0]], "context_tokens": ["我", "是", "学生"],
                              "weights": {"query": [[1, 0], [0, 1]], "key": [[1, 0], [0, 1], [1, 1]]}},
}
CJK = re.compile(r"[\u4e00-\u9fff]")
SUB = str.maketrans("₀₁₂₃₄₅₆₇₈₉", "0123456789")


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("made")
    paths = {}
    for name, doc in MADE.items():
        paths[name] = folder / name
        paths[name].write_text(yaml.safe_dump(doc, allow_unicode=True))
    return paths


def documents(made) -> list[Path]:
    return FILES + list(made.values())


def explained(runner, path: Path, lang: str, *args) -> list[dict]:
    result = runner.invoke(app, ["explain", str(path), "--format", "json", "--lang", lang, *args])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    return data["steps"] if "steps" in data else [data]


def computed(runner, path: Path) -> dict:
    result = runner.invoke(app, ["compute", str(path), "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def cases(made):
    for path in documents(made):
        n = len(computed_tokens(path))
        for lang in ("en", "zh"):
            for query in sorted({1, n}):
                yield path, lang, query


def computed_tokens(path: Path) -> list:
    import attncli

    return attncli.compute(str(path)).spec.tokens


def test_every_step_of_every_example_is_true_of_its_document(runner, made):
    """The whole table: every example and made document × both languages × first and last query."""
    checked = 0
    for path, lang, query in cases(made):
        steps = {s["step"]: s for s in explained(runner, path, lang, "--query", str(query))}
        check_document(runner, path, lang, query, steps)
        checked += 1
    assert checked >= 2 * len(documents(made))


def check_document(runner, path: Path, lang: str, query: int, steps: dict) -> None:
    import attncli

    where = f"{path.name} {lang} query {query}"
    trace = attncli.compute(str(path))
    spec = trace.spec
    for step in steps.values():
        for paragraph in step["text"]:
            assert "{" not in paragraph and paragraph.strip(), (where, paragraph)
            # a dot product commutes
            assert "query·key" not in paragraph and "key·query" not in paragraph, (where, paragraph)
            assert "查询·键" not in paragraph, (where, paragraph)
            if lang == "zh":
                assert CJK.search(paragraph), (where, paragraph)
                assert not re.search(r"(?:\b[A-Za-z]{3,}\b[ ,]+){4,}",
                                     paragraph.replace("Hugging Face", "")), (where, paragraph)
    text = {number: " ".join(step["text"]) for number, step in steps.items()}
    cross = spec.context is not None
    # steps 2 and 3 on cross-attention: the inputs give the queries, the context the keys and values
    context_word = "上下文" if lang == "zh" else "context"
    assert (context_word in text[2] and context_word in text[3]) == cross, (where, text[2], text[3])
    if cross:
        assert "Each input is turned into three" not in text[2] and "each weight matrix" not in text[3], where
        assert "每个输入要经过三个权重矩阵" not in text[2] and "分别乘以三个权重矩阵" not in text[3], where
    # step 4 on the scale: only what the document does
    walkthrough = "图解教程" if lang == "zh" else "illustrated walkthrough"
    relative = spec.score_bias is not None and spec.score_bias.relative is not None  # T5: folded into W_Q
    assert (walkthrough in text[4]) == (spec.scale_name == "none" and spec.score == "dot"
                                        and spec.softcap is None and not relative), where
    assert (("initialised" in text[4] or "初始化" in text[4]) == (relative and spec.scale_name == "none")), where
    if spec.score == "additive":
        assert "√d_k" not in text[4] or spec.scale_name == "sqrt", (where, text[4])
    root = f"√d_k = √{spec.d_k}"
    assert (root in text[4]) == (spec.scale_name == "sqrt"), (where, text[4])
    # z is said before it is used, and is what the formula says
    z_said = "记作 z" if lang == "zh" else "is called z"
    assert z_said in text[4], where
    assert not re.search(r"(?<![\w^])z(?!\w)", text[4][:text[4].index(z_said)]), (where, text[4])
    # positional: the sine columns in the tables' numbering
    if "positional" in steps and spec.positional_name == "sinusoidal":
        assert ("1, 3, 5" in text["positional"] or "1、3、5" in text["positional"]), where
        assert "even columns use a sine" not in text["positional"] and "偶数列用正弦" not in text["positional"], where
    check_symmetry(where, lang, trace, query - 1, text[4], text[3])
    check_lines(where, trace, query - 1, steps[3]["lines"], steps[4]["lines"])


def check_symmetry(where: str, lang: str, trace, i: int, step4: str, step3: str) -> None:
    spec = trace.spec
    sentences = {"en": ("Read the other way round", "happen to read the same both ways", "happens to be symmetric",
                        "symmetric by construction"),
                 "zh": ("反过来读", "正着读和反着读的得分碰巧相同", "恰好是对称的", "对称是结构决定的")}[lang]
    said = [s for s in sentences if s in step4]
    if spec.context is not None or spec.score != "dot":
        assert not said, (where, step4)
        return
    s = trace.scores[0]
    assert len(said) == 1, (where, step4)
    same = (np.array_equal(spec.w_q[0], spec.w_k[0]) and ((spec.b_q is None and spec.b_k is None)
                                                          or (spec.b_q is not None and spec.b_k is not None
                                                              and np.array_equal(spec.b_q[0], spec.b_k[0]))))
    if said[0] == sentences[3]:
        assert same and np.allclose(s, s.T), where
        assert ("same" in step3 or "相同" in step3), (where, step3)  # step 3 does not claim different matrices
    elif said[0] == sentences[2]:
        assert np.allclose(s, s.T) and not same, where
    else:
        assert not np.allclose(s, s.T), where
        quoted = re.findall(r"q′?([₀-₉]+)·k′?([₀-₉]+) = (-?\d+(?:\.\d+)?)", step4)
        assert len(quoted) == 2, (where, step4)
        (a, b, ab), (b2, a2, ba) = quoted
        a, b = int(a.translate(SUB)) - 1, int(b.translate(SUB)) - 1
        assert (a2, b2) == (str(a + 1).translate(str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")),
                            str(b + 1).translate(str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")))
        assert float(ab) == pytest.approx(s[a, b], abs=1e-4) and float(ba) == pytest.approx(s[b, a], abs=1e-4), where
        assert abs(s[a, b] - s[b, a]) > 1e-6, where
        if said[0] == sentences[0]:
            assert a == i, where  # the chosen query's own row differs from its column


def check_lines(where: str, trace, i: int, lines3: list[str], lines4: list[str]) -> None:
    """Step 3: ``token: q₁ = row · W_Q = …``; step 4: ``key token: q₁ · k₂ = products = score`` (true to 4 decimals)."""
    spec = trace.spec
    sub = lambda k: str(k).translate(str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉"))  # noqa: E731
    assert lines3[0].startswith(f"{spec.tokens[i]}: q{sub(i + 1)} = "), (where, lines3[0])
    assert lines3[1].startswith(f"{spec.context_tokens[0]}: k₁ = ")
    assert lines3[2].startswith(f"{spec.context_tokens[0]}: v₁ = ")
    prime = "" if spec.rope is None else "′"
    if spec.score == "additive":  # its hidden terms: q·W₁ first, then vᵀ·tanh(q·W₁ + k·W₂) written out per key
        assert lines4[0].startswith(f"q{prime}{sub(i + 1)}·W₁ = ["), (where, lines4[0])
        lines4 = lines4[1:]
    for j, line in enumerate(lines4[:12]):
        if line == "…":
            continue
        token = spec.context_tokens[j]
        if spec.score == "additive":
            head = f"{token}: vᵀ·tanh(q{prime}{sub(i + 1)}·W₁ + k{prime}{sub(j + 1)}·W₂) = vᵀ·tanh("
            assert line.startswith(head), (where, line)
            head = line[:line.index(") = ", len(head)) + 4]
        else:
            head = f"{token}: q{prime}{sub(i + 1)} · k{prime}{sub(j + 1)} = "
        assert line.startswith(head), (where, line)
        dot = line[len(head):].split("   →   ")[0]
        products, total = dot.rsplit(" = ", 1)
        if "…" not in products and "e" not in products:
            pairs = re.findall(r"\(?(-?[\d.]+)\)?·\(?(-?[\d.]+)\)?", products)
            assert (sum(float(a) * float(b) for a, b in pairs)
                    == pytest.approx(float(total), abs=1e-3 * len(pairs) + 1e-3))
        assert float(total) == pytest.approx(trace.scores[0, i, j], abs=1e-4 * max(1, abs(trace.scores[0, i, j])))


# ---------------------------------------------------------------- step 4's symmetry, case by case


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_symmetry_forced_when_w_q_is_w_k_or_both_are_left_out(runner, made, lang):
    for name, why in (("same_qk.yaml", {"en": "Here W_Q = W_K and b_Q = b_K:", "zh": "这里 W_Q = W_K，且 b_Q = b_K："}),
                      ("identity.yaml", {"en": "The document gives neither W_Q nor W_K, so both are the identity and "
                                               "Q = K = X: each token's query is its key",
                                         "zh": "文档既没有给出 W_Q，也没有给出 W_K，两者都是恒等映射，"
                                               "Q = K = X：每个词元的查询就是它的键"}),
                      ("rope.yaml", {"en": "Q = K = X: each token's query is its key",
                                     "zh": "Q = K = X：每个词元的查询就是它的键"})):
        path = made.get(name, EXAMPLES / name)
        step = explained(runner, path, lang, "--step", "4")[0]
        assert why[lang] in " ".join(step["text"]), (name, step["text"])


def test_a_row_equal_to_its_column_is_not_called_symmetric(runner, made):
    """With W_Q = [[1,0,0],[0,1,2],[0,0,1]] and X = I, S = W_Q: query 1's row equals its column,
    but S₂₃ = 2 ≠ S₃₂ = 0."""
    text = " ".join(explained(runner, made["row_column.yaml"], "en", "--step", "4")[0]["text"])
    assert ("For “a” the scores happen to read the same both ways (its row of Q·Kᵀ equals its column), but not for "
            "every pair: the score of “b” for “c” is q₂·k₃ = 2, that of “c” for “b” is q₃·k₂ = 0.") in text


def test_the_illustrated_example_is_symmetric_by_coincidence_and_says_so(runner):
    for lang, words in (("en", "happens to be symmetric"), ("zh", "恰好是对称的")):
        text = " ".join(explained(runner, EXAMPLES / "illustrated.yaml", lang, "--step", "4")[0]["text"])
        assert words in text and ("coincidence" in text or "巧合" in text)


# ---------------------------------------------------------------- the walkthrough's own figures


ARTICLE = {1: ("[0.0, 0.5, 0.5]", "[2.0, 7.0, 1.5]"), 2: ("[0.0, 1.0, 0.0]", "[2.0, 8.0, 0.0]"),
           3: ("[0.0, 0.9, 0.1]", "[2.0, 7.8, 0.3]")}


@pytest.mark.parametrize("query", [1, 2, 3])
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_step_7_quotes_the_walkthroughs_own_rounding_for_each_query(runner, query, lang):
    result = runner.invoke(app, ["explain", "--step", "7", "--query", str(query), "--format", "json", "--lang", lang])
    text = " ".join(json.loads(result.stdout)["text"])
    weights, output = ARTICLE[query]
    assert weights in text and output in text, text
    assert "[2.0, 8.0, 0.0]" not in text or query == 2  # query 3 is not rounded to halves any more


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_step_6_says_the_walkthroughs_weighted_values_come_from_rounded_weights(runner, lang):
    result = runner.invoke(app, ["explain", "--step", "6", "--format", "json", "--lang", lang])
    text = " ".join(json.loads(result.stdout)["text"])
    assert "[1.0, 4.0, 0.0], [1.0, 3.0, 1.5]" in text and "[0.0, 0.5, 0.5]" in text
    assert ("rounded" in text) if lang == "en" else ("取整" in text)
    result = runner.invoke(app, ["explain", "--step", "6", "--query", "3", "--format", "json"])
    other = " ".join(json.loads(result.stdout)["text"])
    assert "[0.0, 0.9, 0.1]" in other and "would be" in other  # for queries 2 and 3 the rows are ours, from its weights
    plain = runner.invoke(app, ["explain", str(EXAMPLES / "two_heads.yaml"), "--step", "6", "--format", "json"]).stdout
    assert "walkthrough" not in plain


# ---------------------------------------------------------------- Chinese layout


@pytest.mark.slow  # every step of every example, twice
@pytest.mark.parametrize("width", ["40", "80"])
def test_chinese_text_never_starts_a_line_with_full_width_punctuation(runner, made, width):
    for path in documents(made):
        result = runner.invoke(app, ["explain", str(path), "--lang", "zh"], env={"COLUMNS": width, "NO_COLOR": "1"})
        assert result.exit_code == 0, result.output
        for line in result.stdout.splitlines():
            assert line.lstrip()[:1] not in "，。、；：！？）》」』”’" or not line.strip(), (path.name, line)
        assert "公式: " not in result.stdout and "公式：" in result.stdout
        assert "步骤 positional" not in result.stdout and "步骤 rope" not in result.stdout


def test_the_extra_steps_are_named_in_chinese(runner):
    result = runner.invoke(app, ["explain", str(EXAMPLES / "llama_style.yaml"), "--lang", "zh", "--step", "rope"])
    assert result.stdout.splitlines()[0] == "附加步骤 · 旋转位置编码（RoPE）（--step rope）"


# ---------------------------------------------------------------- --why: the seeds' teaching on the document's numbers


def why_stages(runner, *args) -> dict:
    result = runner.invoke(app, ["explain", *args, "--why", "--format", "json"])
    assert result.exit_code == 0, result.output
    return {s["step"]: s for s in json.loads(result.stdout)["steps"]}


def largest_jacobian_entry(a: np.ndarray) -> float:
    """max |∂a_i/∂z_j| of one softmax row, from the whole Jacobian diag(a) − a·aᵀ."""
    return float(np.abs(np.diag(a) - np.outer(a, a)).max())


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_why_the_scale_shows_saturation_with_and_without_it(runner, lang):
    x = np.array([[1, 0, 1, 0], [0, 2, 0, 2], [1, 1, 1, 1]], float)
    s = ((x @ np.array([[1, 0, 1], [1, 0, 0], [0, 0, 1], [0, 1, 1]]))
         @ (x @ np.array([[0, 0, 1], [1, 1, 0], [0, 1, 0], [1, 1, 0]])).T)
    stage = why_stages(runner, "--lang", lang)["e"]
    table = np.array(stage["numbers"]["saturation"]["values"])
    for i in range(3):
        for c, (weight, jac) in ((1 / np.sqrt(3), (0, 1)), (1.0, (2, 3))):
            e = np.exp(c * s[i] - (c * s[i]).max())
            a = e / e.sum()
            assert table[i, weight] == pytest.approx(a.max())
            assert table[i, jac] == pytest.approx(largest_jacobian_entry(a))
    text = " ".join(stage["text"])
    assert ("1/√d_k = 1/√3" in text) and ("0.2490" in text and "0.2454" in text)  # query 1: not helped …
    assert ("“Input 3”" in text and "0.1052" in text and "0.1851" in text)  # … query 3 is, and it is said
    assert (CJK.search(text) is not None) == (lang == "zh")


def test_why_makes_the_asymmetry_visible_on_the_built_in_example(runner):
    c = " ".join(why_stages(runner)["c"]["text"])
    # Q·Kᵀ = [[2, 4, 4], [4, 16, 12], [4, 12, 10]] is symmetric here; its rows divided by their sums are not
    assert "happens to be symmetric as well" in c
    assert "“Input 1” gives “Input 2” the weight 0.4000, while “Input 2” gives “Input 1” 0.1250" in c
    # the dictionary, on the numbers: q₁·K = [2, 4, 4], a tie
    assert "the query of “Input 1” matches the keys of “Input 2” and “Input 3” equally well" in c and "best" not in c
    d = " ".join(why_stages(runner)["d"]["text"])
    # the fruit market: 0.4683 for each of the two keys that tie
    assert "“Input 1” spends 47% of its weight at each of the stalls of “Input 2” and “Input 3”, which tie" in d
    two = " ".join(why_stages(runner, str(EXAMPLES / "two_heads.yaml"))["c"]["text"])
    assert "the relevance of “The” for “sat” is q₁·k₃ = 0.5000, that of “sat” for “The” is q₃·k₁ = 2.0375" in two


def test_why_when_every_query_is_its_key_and_for_cross_attention(runner, made):
    c = " ".join(why_stages(runner, str(made["identity.yaml"]))["c"]["text"])
    assert "symmetric by construction" in c
    zh = " ".join(why_stages(runner, str(made["identity.yaml"]), "--lang", "zh")["c"]["text"])
    assert "对称是结构决定的" in zh
    cross = why_stages(runner, str(EXAMPLES / "cross_attention.yaml"))
    assert "both ways" not in " ".join(cross["c"]["text"]) and "“学生”" in " ".join(cross["c"]["text"])
    assert "e" not in why_stages(runner, str(made["additive.yaml"]))  # the √d_k argument is about dot products
