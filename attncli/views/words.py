"""The words of the heat maps and of the command line's notices, in English and Chinese side by side.

Each entry is a format string; :func:`words` gives a language's table (English for any other).  The Chinese uses
the seeds' terms (查询, 键, 值, 得分, 缩放, 注意力权重) and 键值头 for a key/value head.
"""

from __future__ import annotations

EN = {
    # heat maps: the title, the heads, the legend
    "weights": "Attention weights", "scores": "Scores", "scaled_scores": "Scaled scores", "score_bias": "Score bias",
    "grad_weights": "Gradient of the weights", "grad_scaled_scores": "Gradient of the scaled scores",
    "head_of": "head {h} of {heads}", "heads": "{heads} heads", "kv_head_of": " (K/V head {j} of {g})",
    "sharing": " sharing {g} K/V head", "sharing_many": " sharing {g} K/V heads",
    "sizes": "{n} queries × {m} keys", "head": "head {h}", "keys_of": "keys {a}–{b} of {m}", "keys": "keys: ",
    "scale": "scale ", "signed_colour": "blue < 0 < orange, 0 uncoloured",
    "signed_plain": "shade: size, sign: the numbers", "signed_marked": "shade: size, −: below 0",
    "masked": " masked", "axes": "rows: queries, columns: keys", "alike": " (numbered alike)",
    "sink": "sink", "sink_note": "sink (σ): the row's share left to the sink (its weights sum to 1 − σ)",
    "tall": "{count} heads do not fit on a screen: --head N (1–{heads}) draws one",
    # differential attention's combined weights: a map per pair of heads (pair p: heads p and p + h/2)
    "differential_weights": "Differential weights", "pair": "pair {h}",
    "pair_of": "pair {h} of {heads} (heads {a} and {b})", "pairs": "{heads} pairs of heads",
    "tall_pairs": "{count} pairs do not fit on a screen: --head N (1–{heads}) draws the pair of head N",
    # the command line's notices (standard error)
    "stdin": "Reading the document from standard input (end with Ctrl-D)…",
    "no_key": "query {i} ({token}) may attend to no key (its mask row is all 0); its weights and head output are 0",
    "hint_parts": "; if 1 means masked in your mask (as in nn.MultiheadAttention), set mask.convention: block",
    "hint_matrix": "; if 1 means masked in your mask (as in nn.MultiheadAttention), write it as "
                   "mask: {{matrix: …, convention: block}}",
    "streaming": "attention, block by block",
    "reproduces": "The document reproduces the model (max |difference|):", "wrote": "Wrote {document} and {inputs}.",
}

ZH = {
    "weights": "注意力权重", "scores": "得分", "scaled_scores": "缩放后的得分", "score_bias": "得分偏置",
    "grad_weights": "注意力权重的梯度", "grad_scaled_scores": "缩放后得分的梯度",
    "head_of": "第 {h} 个头（共 {heads} 个）", "heads": "{heads} 个头",
    "kv_head_of": "，用第 {j} 个键值头（共 {g} 个）",
    "sharing": "，共用 {g} 个键值头", "sharing_many": "，共用 {g} 个键值头",
    "sizes": "{n} 个查询 × {m} 个键", "head": "头 {h}", "keys_of": "第 {a}–{b} 个键，共 {m} 个", "keys": "键：",
    "scale": "色标 ", "signed_colour": "蓝色 < 0 < 橙色，0 不着色", "signed_plain": "深浅表示大小，正负看数字",
    "signed_marked": "深浅表示大小，− 表示小于 0",
    "masked": " 已屏蔽", "axes": "行：查询，列：键", "alike": "（行列编号相同）",
    "sink": "汇点", "sink_note": "汇点 (σ)：这一行留给注意力汇的份额（其余权重之和为 1 − σ）",
    "tall": "{count} 个头在一屏里放不下：用 --head N（1–{heads}）只画一个",
    "differential_weights": "差分权重", "pair": "头对 {h}",
    "pair_of": "第 {h} 个头对（共 {heads} 个；头 {a} 与 {b}）", "pairs": "{heads} 个头对",
    "tall_pairs": "{count} 个头对在一屏里放不下：用 --head N（1–{heads}）只画头 N 所在的头对",
    "stdin": "正在从标准输入读取文档（输入完毕按 Ctrl-D）…",
    "no_key": "查询 {i}（{token}）的掩码行全为 0，没有可以关注的键；它的注意力权重和头的输出都是 0",
    "hint_parts": "；如果你的掩码里 1 表示屏蔽（像 nn.MultiheadAttention 那样），请设 mask.convention: block",
    "hint_matrix": "；如果你的掩码里 1 表示屏蔽（像 nn.MultiheadAttention 那样），请写成 "
                   "mask: {{matrix: …, convention: block}}",
    "streaming": "注意力，逐块计算",
    "reproduces": "文档重现了模型的结果（最大 |差值|）：", "wrote": "已写入 {document} 和 {inputs}。",
}

EN["index_ties"] = ("indexer: at query {i} ({token}) {ties} of the keys left out tie the last key kept (I = {value}); "
                    "the lower key index was kept, as docs/format.md says (torch.topk may keep another)")
ZH["index_ties"] = ("indexer：在查询 {i}（{token}）处，被舍弃的键中有 {ties} 个与最后保留的键并列（I = {value}）；"
                    "按 docs/format.md 的规则保留了下标小的键（torch.topk 可能保留另一个）")

TABLES = {"en": EN, "zh": ZH}


def words(lang: str) -> dict[str, str]:
    """The table of ``lang`` (en or zh; English for any other)."""
    return TABLES.get(lang, EN)
