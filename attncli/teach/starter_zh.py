"""``attncli init --lang zh``: the starter document's comments in Chinese (the keys and numbers stay as they are).

Each entry pairs a comment exactly as :mod:`attncli.teach.starter` writes it in English (a regular expression: the
numbers and names it fills in are groups) with its Chinese.  Only comments change: the document read back is the
same.  ``tests/test_language.py`` checks that no English sentence is left for every option of ``init``.
"""

from __future__ import annotations

import re

from rich.cells import cell_len

KINDS = {"self-attention": "自注意力", "cross-attention": "交叉注意力"}

PARAGRAPHS = [  # (English, Chinese): whole comments, several lines each
    (r"# An attention document from `attncli init`: (self-attention|cross-attention), (\d+) heads?\. "
     r"Edit anything, then",
     lambda m: f"# 由 `attncli init` 生成的注意力文档：{KINDS[m[1]]}，{m[2]} 个头。可以随意修改，然后运行"),
    (r"every intermediate, step by step", "逐步列出每一个中间结果"),
    (r"the attention weights as a picture", "把注意力权重画成热力图"),
    (r"# Sizes: n = (\d+) tokens(?:, m = (\d+) context rows)?, (.*)\.$",
     lambda m: f"# 尺寸：n = {m[1]}（词元数）" + (f"，m = {m[2]}（上下文行数）" if m[2] else "") + f"，{m[3]}。"),
    (r"# A matrix is written out as rows \(\[\[1, 0\], \[0, 1\]\]\), read from a file relative\n"
     r"# to this document \(\.csv, \.tsv, \.txt, \.npy\), or drawn at random with a seed:\n"
     r"# \{random: KIND, seed: S, shape: \[rows, columns\]\}, KIND one of normal, uniform,\n"
     r"# xavier, kaiming \(as torch\.nn\.init\); the same seed always gives the same numbers\.",
     "# 矩阵可以逐行写出（[[1, 0], [0, 1]]），可以从文件读取（路径相对于本文档；\n"
     "# .csv、.tsv、.txt、.npy），也可以用种子随机生成：\n"
     "# {random: KIND, seed: S, shape: [rows, columns]}，KIND 取 normal、uniform、xavier\n"
     "# 或 kaiming（同 torch.nn.init）；同一个种子总是生成同样的数。"),
    (r"# Labels for the rows of inputs, one per token \(one string is split on spaces,\n"
     r"# or into characters when it has none\)\.",
     "# inputs 各行的标签，每个词元一个（只写一个字符串时按空格切开，没有空格就逐字切开）。"),
    (r"# X: one row per token, d_model = (\d+) numbers each\.", r"# X：每个词元一行，每行 d_model = \1 个数。"),
    (r"# Cross-attention: the keys and values come from this context \(one row per\n"
     r"# source token\), the queries from the inputs\. Delete both keys for self-attention\.",
     "# 交叉注意力：键和值来自这里的上下文（每个源词元一行），查询来自 inputs。\n"
     "# 删掉 context_tokens 和 context 两项就成了自注意力。"),
    (r"# Normalise each input row before the projections: ", "# 投影之前，先把每一行输入归一化："),
    (r"# \(Llama's input_layernorm is RMSNorm; GPT-2's ln_1 is LayerNorm\)\.",
     "# （Llama 的 input_layernorm 是 RMSNorm；GPT-2 的 ln_1 是 LayerNorm。）"),
    (r"# The queries are projected from the normalised rows; the keys and values from the context, as it is\.",
     "# 查询由归一化后的行投影得到；键和值由未经归一化的上下文投影得到。"),
    (r"# The queries are projected from the normalised rows; the keys and values from them too\.",
     "# 查询由归一化后的行投影得到，键和值也是。"),
    (r"# Heads: each weight's columns are split into this many equal blocks, head i\n"
     r"# taking block i \(the layout of PyTorch's in-projection and of BERT\)\.",
     "# 头数：每个权重矩阵的列平均分成这么多块，第 i 个头取第 i 块\n"
     "# （PyTorch 的 in-projection 和 BERT 都这样排布）。"),
    (r"# Grouped-query attention: the keys and values have only this many heads, and\n"
     r"# query head i \(from 0\) uses key/value head i // \(heads / kv_heads\) = i // (\d+)\n"
     r"# \(num_key_value_heads in Hugging Face; 1 is multi-query attention\)\.",
     "# 分组查询注意力：键和值只有这么多个头；查询头 i（从 0 数起）\n"
     r"# 使用键值头 i // (heads / kv_heads) = i // \1" "\n"
     "# （即 Hugging Face 的 num_key_value_heads；取 1 就是多查询注意力）。"),
    (r"# Projections, d_in × d_out \(row vectors: Q = X·W_Q, the transpose of PyTorch's\n"
     r"# nn\.Linear\.weight\)\. Leave one out to use the identity\.",
     "# 投影矩阵，形状 d_in × d_out（按行向量相乘：Q = X·W_Q，即 PyTorch 中\n"
     "# nn.Linear.weight 的转置）。省略哪一个，哪一个就取单位矩阵。"),
    (r"  # Output gate \(Qwen3-Next\): G = σ\(X̂·W_G\), one gate per number of each head's\n"
     r"  # output, and Y = concat\(H ⊙ G\)·W_O \(gate and gated_head_outputs in the JSON\)\.",
     "  # 输出门控（Qwen3-Next）：G = σ(X̂·W_G)，每个头的输出里每个数各有一个门，\n"
     "  # Y = concat(H ⊙ G)·W_O（JSON 中的 gate 和 gated_head_outputs）。"),
    (r"# Optional biases, added after each product: vectors of length h·d_k \(query\), (\w)·d_k\n"
     r"# \(key\), (\w)·d_v \(value\) and d_out \(output\)\. For example:",
     "# 可选的偏置，在每次矩阵乘法之后加上：长度依次为 h·d_k（query）、\\1·d_k（key）、\n"
     "# \\2·d_v（value）和 d_out（output）的向量。例如："),
    (r"# Scores are multiplied by the scale before the softmax: sqrt \(1/√d_k\), none\n# \(1\), or a number\.",
     "# 做 softmax 之前，得分先乘以缩放系数：sqrt（1/√d_k）、none（1）或一个数。"),
    (r"# none here \(--integers\): whole scores stay whole; sqrt would multiply them by 1/√(\d+)\.",
     r"# 这里用 none（--integers）：整数得分仍是整数；sqrt 会让它们都乘以 1/√\1。"),
    (r"# Which keys each query may attend to: none \(all\), causal \(query i sees keys\n"
     r"# 1 … i; needs n = m\), or an n × m matrix of 1 \(may attend\) and 0 \(masked\)\.",
     "# 每个查询可以关注哪些键：none（全部）、causal（查询 i 只看键 1 … i；\n"
     "# 要求 n = m），或一个 n × m 的矩阵，1 表示可以关注，0 表示屏蔽。"),
    (r"# QK-norm: each head's query and key rows normalised before the rotation\n"
     r"# \(Qwen3's and Gemma 3's q_norm and k_norm; scope: projection normalises a\n"
     r"# token's whole projection, as OLMo 2; after_rope: true comes after it, as Llama 4\)\.",
     "# QK-norm：旋转之前，把每个头的查询行和键行归一化（即 Qwen3 和 Gemma 3 的\n"
     "# q_norm、k_norm；scope: projection 对一个词元的整个投影归一化，如 OLMo 2；\n"
     "# after_rope: true 放到旋转之后，如 Llama 4）。"),
    (r"# Rotary position embedding: each query and key \(never a value\) is turned, pair\n"
     r"# of dimensions by pair, by its position times a frequency θ\^\(−2i/d_k\)\. base is θ\n"
     r"# \(rope_theta\); style half pairs dimension i with i \+ d_k/2 \(Hugging Face's\n"
     r"# rotate_half\), interleaved pairs 2i with 2i \+ 1 \(GPT-J, RoFormer\)\. Positions are\n"
     r"# 0 … n − 1 unless positions: \[\.\.\.\] says otherwise\.",
     "# 旋转位置编码：每个查询和键（值从不旋转）按维度两两成对地转动，转角是位置\n"
     "# 乘以频率 θ^(−2i/d_k)。base 就是 θ（rope_theta）；style 取 half 时维度 i 与\n"
     "# i + d_k/2 配对（Hugging Face 的 rotate_half），取 interleaved 时 2i 与 2i + 1\n"
     "# 配对（GPT-J、RoFormer）。位置默认是 0 … n − 1，可以用 positions: [...] 另外指定。"),
    (r"# Linear \(position interpolation\): every frequency divided by factor\.",
     "# 线性缩放（位置插值）：每个频率都除以 factor。"),
    (r"# Dynamic NTK: a larger base once the positions pass L \(here never: n < L\)\.",
     "# 动态 NTK：位置超过 L 之后改用更大的 base（这里 n < L，不会发生）。"),
    (r"# Llama 3\.1: slow waves divided by factor, fast ones kept, a blend between\.",
     "# Llama 3.1：慢变的频率除以 factor，快变的保持不变，两者之间平滑过渡。"),
    (r"# YaRN: the slow pairs stretched by factor, and cos and sin times a = 0\.1·ln\(factor\) \+ 1\.",
     "# YaRN：慢变的维度对按 factor 拉长，cos 和 sin 再乘以 a = 0.1·ln(factor) + 1。"),
    (r"# LongRoPE \(Phi-3\): each frequency divided by its own factor, short_factor while the positions stay "
     r"below L,\n  # long_factor past it; cos and sin times a = √\(1 \+ ln factor / ln L\)\.",
     "# LongRoPE（Phi-3）：每个频率除以各自的因子，位置低于 L 时用 short_factor，\n"
     "  # 超过之后用 long_factor；cos 和 sin 再乘以 a = √(1 + ln factor / ln L)。"),
    (r"# Attention sinks \(gpt-oss\): one logit s_h per query head joins each row's softmax as\n"
     r"# a key with no value, a_ij = e\^z_ij / \(Σ_j′ e\^z_ij′ \+ e\^s_h\): a row then sums to less\n"
     r"# than 1, the rest going nowhere \(sink_weights in the JSON\)\.",
     "# 注意力汇（gpt-oss）：每个查询头有一个 logit s_h，像一个没有值的键那样加入每一行的\n"
     "# softmax，a_ij = e^z_ij / (Σ_j′ e^z_ij′ + e^s_h)：于是一行权重之和小于 1，\n"
     "# 余下的份额不落到任何值上（JSON 中的 sink_weights）。"),
    (r"# Llama 4's query temperature: query row i is multiplied, after the rotation, by\n"
     r"# τ_i = 1 \+ attn_scale·ln\(1 \+ ⌊\(p_i \+ 1\) / floor_scale⌋\), p_i its position\. Llama 4\n"
     r"# has floor_scale: 8192 \(τ = 1 up to position 8190\); 2 shows it on a few tokens\.",
     "# Llama 4 的查询温度：旋转之后，第 i 行查询乘以\n"
     "# τ_i = 1 + attn_scale·ln(1 + ⌊(p_i + 1) / floor_scale⌋)，p_i 是它的位置。Llama 4\n"
     "# 用 floor_scale: 8192（位置 8190 之前 τ = 1）；这里取 2，几个词元就能看出效果。"),
    (r"# A pre-norm block: the output is added back to the inputs as they were\n"
     r"# before the norm, R = X \+ Y \(the residual of Llama's decoder layer\)\.",
     "# 前置归一化的块：输出加回归一化之前的输入，R = X + Y（Llama 解码层的残差连接）。"),
]

NOTES = [  # (English, Chinese): the comments after a key's value
    (r", whole numbers, for working by hand$", "，都是整数，方便手算"),
    (r", the numbers of (\{.*\})$", r"，即 \1 生成的数"),
    (r"# h·d_v × d_out: mixes the concatenated heads", "# h·d_v × d_out：把拼接起来的各个头混合在一起"),
    (r"# optional: h·d_v × d_out$", "# 可选：h·d_v × d_out"),
    (r"# ε \((\w+) in Hugging Face configurations\)$", r"# ε（Hugging Face 配置中的 \1）"),
    (r"# d_model = (\d+) numbers, default ones \(Gemma stores γ − 1: add 1\)$",
     r"# d_model = \1 个数，默认全为 1（Gemma 存的是 γ − 1：要加 1）"),
    (r"# d_model = (\d+) numbers, default zeros$", r"# d_model = \1 个数，默认全为 0"),
    (r"# d_k = (\d+) numbers each \(or one row per head\), default ones$",
     r"# 各 d_k = \1 个数（或每个头一行），默认全为 1"),
    (r"# rotate only the first dims of each head \(partial rotary\); default d_k$",
     "# 只旋转每个头的前 dims 维（部分旋转）；默认 d_k"),
    (r"# L: the model's max_position_embeddings$", "# L：模型的 max_position_embeddings"),
    (r"# max_position_embeddings / original_max_position_embeddings when a config has none$",
     "# 配置里没有时，取 max_position_embeddings / original_max_position_embeddings"),
    (r"# Phi-3: the config's top-level one$", "# Phi-3：取配置顶层的那一个"),
    (r"# dims/2 numbers$", "# dims/2 个数"),
]

MODERN = [  # the items of "As in today's models: …"
    (r"(\d+) key/value heads? shared by the query heads", r"由查询头共用的 \1 个键值头"),
    (r"rotary positions", "旋转位置编码"),
    (r"(RMSNorm|LayerNorm) before attention and the residual", r"注意力之前的 \1 与残差连接"),
    (r"queries and keys normalised \(QK-norm\)", "查询和键的归一化（QK-norm）"),
    (r"attention sinks", "注意力汇"), (r"an output gate", "输出门控"), (r"a query temperature", "查询温度"),
]


def in_chinese(text: str) -> str:
    """The starter document ``text`` with its comments in Chinese (the YAML itself untouched)."""
    text = re.sub(r"# As in today's models: ((?:.|\n#   )*?)\.\n", _modern, text)
    for english, chinese in PARAGRAPHS:
        text = re.sub(english, chinese, text, flags=re.MULTILINE)
    for english, chinese in NOTES:
        text = re.sub(english, chinese, text, flags=re.MULTILINE)
    return text


def _modern(match: re.Match) -> str:
    items = match[1].replace("\n#   ", " ").split(", ")
    for english, chinese in MODERN:
        items = [re.sub(f"^{english}$", chinese, item) for item in items]
    lines = ["# 与当今的模型一样："]
    for k, item in enumerate(items):  # lines of at most 88 columns (a Chinese character takes two)
        item += "。" if k == len(items) - 1 else "、"
        if cell_len(lines[-1] + item) > 88:
            lines.append("#   ")
        lines[-1] += item
    return "\n".join(lines) + "\n"
