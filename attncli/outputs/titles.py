"""The titles of the tables in each language: every quantity's name and the words around it ("Head 2 · ").

English comes from the stage list (each :class:`~attncli.core.stage.Quantity`'s ``title``); Chinese is here, one
entry per JSON key, beside the phrases both languages use.  The terms are those of the seeds: 查询/键/值, 得分,
缩放, 注意力权重, 输出.  JSON keys and formulas stay as they are in every language.
"""

from __future__ import annotations

import re

ZH_TITLES = {
    "inputs": "输入", "positional": "位置编码", "normalized_inputs": "归一化后的输入", "context": "上下文",
    "weight_query_down": "查询的降维投影", "bias_query_down": "查询降维投影的偏置", "latent_queries": "潜在查询",
    "weight_query_up": "查询的升维投影", "weight_kv_down": "键值的降维投影", "bias_kv_down": "键值降维投影的偏置",
    "latent_kv": "潜在键值", "weight_kv_up": "键值的升维投影",
    "queries": "查询", "keys": "键", "values": "值",
    "weight_query": "查询投影", "bias_query": "查询偏置", "weight_key": "键投影", "bias_key": "键偏置",
    "weight_value": "值投影", "bias_value": "值偏置",
    "normalized_queries": "归一化后的查询", "normalized_keys": "归一化后的键",
    "queries_rotated": "旋转后的查询", "keys_rotated": "旋转后的键", "rope_frequencies": "旋转频率",
    "rope_attention_factor": "旋转的注意力系数", "query_temperature": "查询温度",
    "kernel_queries": "内核所见的查询", "kernel_keys": "内核所见的键", "absorbed_queries": "吸收后的查询",
    "scores": "得分", "score_bias": "得分偏置", "scaled_scores": "缩放后的得分", "weights": "注意力权重",
    "sink_weights": "注意力汇的份额", "lse": "对数求和指数", "head_outputs": "头的输出",
    "weight_gate": "门控投影", "bias_gate": "门控偏置", "gate": "门控", "gated_head_outputs": "门控后的头输出",
    "weight_output": "输出投影", "bias_output": "输出偏置", "output": "输出", "normalized_output": "归一化后的输出",
    "residual": "残差", "normalized": "残差相加并归一化",
    "delta": "D（FlashAttention 的）", "grad_kernel_queries": "内核所见查询的梯度",
    "grad_kernel_keys": "内核所见键的梯度", "grad_sinks": "注意力汇的梯度",
    "differential_lambda_q1": "差分的 λ_q1", "differential_lambda_k1": "差分的 λ_k1",
    "differential_lambda_q2": "差分的 λ_q2", "differential_lambda_k2": "差分的 λ_k2", "differential_lambda": "差分的 λ",
    "differential_weights": "差分权重", "differential_head_outputs": "差分的头输出",
    "normalized_head_outputs": "归一化后的头输出",
    "normalized_values": "归一化后的值",
    "max_logits": "最大 logit", "max_logit_cells": "最大 logit 的位置",
    "qk_clip_gamma": "QK-Clip 的系数", "qk_clip_max_logits": "QK-Clip 之后的最大 logit",
    "qk_clip_weight_query": "QK-Clip 之后的查询投影", "qk_clip_bias_query": "QK-Clip 之后的查询偏置",
    "qk_clip_weight_key": "QK-Clip 之后的键投影", "qk_clip_bias_key": "QK-Clip 之后的键偏置",
}
ZH_TITLES.update({  # DeepSeek-V3.2's lightning indexer
    "index_queries": "索引器的查询", "index_keys": "索引器的键", "index_head_weights": "索引器的头权重",
    "index_scores": "索引得分", "index_selected": "保留的键", "index_mask": "索引器的掩码",
    "index_ties": "截断处的并列", "index_dropped_weight": "被舍弃的键的权重",
})
GRADIENT_OF = "Gradient of "  # the other gradients' titles: "Gradient of dW_Q", "Gradient of qk_norm's γ (keys)"
ZH_OWNERS = {" (queries)": "（查询）", " (keys)": "（键）"}

PHRASES = {
    "en": {"head": "Head {h} · ", "kv_head": "K/V head {j} (query heads {a}–{b}) · ",
           "positional": "Positional encoding ({name})", "positional_title": "Positional encoding  P ({name})",
           "with_positions": "Inputs with positions", "emulated": " (emulated {dtype})",
           "columns": "columns {a}–{b} of {d}", "shown": "{k} of {d} columns shown",
           "layer": "Layer {i} · ",
           "layer_of": "layers[{j}] (layer {i}): ",
           "stack_output": "Output of the stack (layer {n}'s last quantity)", "sequence": "Sequence {i} · ",
           "pair": "Pair {p} (heads {a} and {b}) · ",
           # a LaTeX equation's comment: the matrix, its part (a block of columns), its rows' and columns' labels
           "tex_equation": "{name}: {text} ({n} × {d}){part}; rows: {rows}; columns: {columns}",
           "tex_formula": "{name}: {text} ({n} × {d}), its numbers below", "tex_part": ", {columns}"},
    "zh": {"head": "头 {h} · ", "kv_head": "键值头 {j}（查询头 {a}–{b}）· ",
           "positional": "位置编码（{name}）", "positional_title": "位置编码  P（{name}）",
           "with_positions": "加上位置编码的输入", "emulated": "（模拟 {dtype}）",
           "columns": "第 {a}–{b} 列，共 {d} 列", "shown": "显示 {d} 列中的 {k} 列",
           "layer": "第 {i} 层 · ",
           "layer_of": "layers[{j}]（第 {i} 层）：",
           "stack_output": "整个堆叠的输出（第 {n} 层的最终结果）", "sequence": "序列 {i} · ",
           "pair": "头对 {p}（头 {a} 与 {b}）· ",
           "tex_equation": "{name}：{text}（{n} × {d}）{part}；行：{rows}；列：{columns}",
           "tex_formula": "{name}：{text}（{n} × {d}），数值见下", "tex_part": "，{columns}"},
}
# the English words of a formula as the stage list writes it (compute's titles, the page's), in Chinese: literal
# notes, then patterns of the rotary formula (``pairs (i, i + 1), θ = 10000, last 2 of 3 dims``)
ZH_FORMULA_WORDS = {" (summed over the group)": "（对组内求和）", " (every path)": "（所有路径）",
                    " per head": "（每个头）", "given frequencies": "给定的频率", "cos and sin ×": "cos 和 sin ×",
                    " (given)": "（给定）", " / row sum": " / 每行之和",
                    ", pair p as heads 2p−1, 2p": "，头对 p 即头 2p−1 与 2p", " as pairs": "（按头对排列）",
                    "RMSNorm's backward of ": "RMSNorm 的反向传播：",
                    " (V̂ with v_norm) of the layer kv_from names": "（有 v_norm 时为 V̂），取自 kv_from 所指的层",
                    " of the layer kv_from names": "，取自 kv_from 所指的层"}
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
    if lang != "zh":
        return text
    for english, chinese in ZH_FORMULA_WORDS.items():
        text = text.replace(english, chinese)
    for pattern, chinese in ZH_FORMULA_PATTERNS:
        text = re.sub(pattern, chinese, text)
    return text


def phrase(lang: str, which: str, **values: object) -> str:
    """One of :data:`PHRASES` in ``lang`` (English for any other), filled in.

    >>> phrase("zh", "positional", name="sinusoidal")
    '位置编码（sinusoidal）'
    """
    return PHRASES.get(lang, PHRASES["en"])[which].format(**values)


def title(key: str, english: str, lang: str) -> str:
    """The name of quantity ``key`` in ``lang``: its stage's English ``title``, or the Chinese one.

    >>> title("weights", "Weights", "zh"), title("grad_weight_query", "Gradient of W_Q", "zh")
    ('注意力权重', 'W_Q 的梯度')
    >>> title("grad_qk_norm_gamma_key", "Gradient of qk_norm's γ (keys)", "zh")
    'qk_norm 的 γ（键）的梯度'
    """
    if lang != "zh":
        return english
    if key in ZH_TITLES:
        return ZH_TITLES[key]
    if english.startswith(GRADIENT_OF):
        of = english.removeprefix(GRADIENT_OF).replace("'s ", " 的 ")
        for owner, zh in ZH_OWNERS.items():
            of = of.replace(owner, zh)
        return of + ("" if of.endswith("）") else " ") + "的梯度"
    return english
