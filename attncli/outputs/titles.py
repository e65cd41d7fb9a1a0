"""The titles of the tables in each language: every quantity's name and the words around it ("Head 2 · ").

English comes from the stage list (each :class:`~attncli.core.stage.Quantity`'s ``title``); Chinese from the texts'
table ``titles.names`` (``attncli/data/texts/zh.json``), one entry per JSON key, beside the phrases both languages use
(``titles.phrases``).  The terms are those of the seeds: 查询/键/值, 得分,
缩放, 注意力权重, 输出.  JSON keys and formulas stay as they are in every language.
"""

from __future__ import annotations

import re

from attncli.outputs.texts import LANGUAGES, texts

# The English the stage list writes, which a Chinese title replaces (code: the patterns over core's English titles and
# formulas; the Chinese is data, under these ids). English has no table of its own for them: its titles are core's.
GRADIENT_OF = "Gradient of "  # the other gradients' titles: "Gradient of dW_Q", "Gradient of qk_norm's γ (keys)"
OWNERS = {" (queries)": "queries", " (keys)": "keys"}  # a gradient's owner: its id in titles.owners
FORMULA_WORDS = {  # a formula's literal words (compute's titles, the page's): their ids in titles.formula_words
    " (summed over the group)": "summed_over_group", " (every path)": "every_path", " per head": "per_head",
    "given frequencies": "given_frequencies", "cos and sin ×": "cos_and_sin", " (given)": "given",
    " / row sum": "row_sum", ", pair p as heads 2p−1, 2p": "pair_as_heads", " as pairs": "as_pairs",
    "RMSNorm's backward of ": "rmsnorm_backward", " (V̂ with v_norm) of the layer kv_from names": "kv_from_v_norm",
    " of the layer kv_from names": "kv_from"}  # (in this order: the longer kv_from first)


def table(lang: str) -> dict:
    """The titles' texts of ``lang`` (``titles`` in ``attncli/data/texts/<lang>.json``; English for any other)."""
    return texts(lang)["titles"]


# the patterns of the rotary formula (``pairs (i, i + 1), θ = 10000, last 2 of 3 dims``) in Chinese, after the
# literal words (titles.formula_words: each id's English replaced by its Chinese)
ZH_FORMULA_PATTERNS = (
    (r"(?<![\w(])pairs (\([^()]*\))", r"配对 \1"), (r" written as (\([^()]*\))", r"（写作 \1）"),
    (r"(?<!\w)last ([0-9]+) of ([0-9]+) dims", r"后 \1 维（共 \2 维）"),
    (r"(?<!\w)first ([0-9]+) of ([0-9]+) dims", r"前 \1 维（共 \2 维）"),
    (r"(\w+) scaling ×", r"\1 缩放 ×"), (r"([A-Za-z′]+) = given\Z", r"\1 = 给定"), (r"\Af: given\Z", "f：给定"),
)


def formula(text: str, lang: str) -> str:
    """A formula as a title shows it in ``lang``: the symbols as they are, the English words around them in Chinese.

    >>> formula("dK = dL/dK (summed over the group)", "zh")
    'dK = dL/dK（对组内求和）'
    >>> formula("pairs (i, i + 1), θ = 10000, last 2 of 3 dims", "zh")
    '配对 (i, i + 1), θ = 10000, 后 2 维（共 3 维）'

    """
    if _english(lang):
        return text
    words = table(lang)["formula_words"]
    for english, word in FORMULA_WORDS.items():
        text = text.replace(english, words[word])
    for pattern, chinese in ZH_FORMULA_PATTERNS if lang == "zh" else ():
        text = re.sub(pattern, chinese, text)
    return text


def _english(lang: str) -> bool:
    """Whether ``lang``'s titles are the stage list's own (English, or a language without a texts' file)."""
    return lang == "en" or lang not in LANGUAGES


def phrase(lang: str, which: str, **values: object) -> str:
    """One of the phrases (``titles.phrases``) in ``lang`` (English for any other), filled in.

    >>> phrase("zh", "positional", name="sinusoidal")
    '位置编码（sinusoidal）'
    """
    return table(lang)["phrases"][which].format(**values)


def title(key: str, english: str, lang: str) -> str:
    """The name of quantity ``key`` in ``lang``: its stage's English ``title``, or the Chinese one.

    >>> title("weights", "Weights", "zh"), title("grad_weight_query", "Gradient of W_Q", "zh")
    ('注意力权重', 'W_Q 的梯度')
    >>> title("grad_qk_norm_gamma_key", "Gradient of qk_norm's γ (keys)", "zh")
    'qk_norm 的 γ（键）的梯度'
    """
    if _english(lang):
        return english
    t = table(lang)
    if key in t["names"]:
        return t["names"][key]
    if english.startswith(GRADIENT_OF):
        of = english.removeprefix(GRADIENT_OF).replace("'s ", " 的 ")
        for owner, word in OWNERS.items():
            of = of.replace(owner, t["owners"][word])
        return t["gradient_closed" if of.endswith("）") else "gradient"].format(of=of)
    return english
