"""``attncli explain`` 的全部中文文字：步骤标题、说明段落和表格标签。

花括号中的占位符由 :func:`attncli.teach.explain.step.context` 填入；键名与 :mod:`attncli.teach.texts.en` 一一对应。
"""

from attncli.teach.texts.backward_zh import BACKWARD
from attncli.teach.texts.block_steps_zh import MODERN
from attncli.teach.texts.check_zh import CHECK, SLIPS
from attncli.teach.texts.differential_zh import DIFFERENTIAL
from attncli.teach.texts.facts_zh import FACTS
from attncli.teach.texts.why_zh import WHY

TEXTS = {
    "span": {"two": "第 {first} 和第 {last} 个头", "many": "第 {first} 到第 {last} 个头"},
    "kv_weights": "W_K 和 W_V",
    "step": "步骤",
    "formula": "公式",
    "formula_line": "公式：{formula}",  # (a full-width colon after 公式)
    "and": " 和 ",
    "list_sep": "、",
    "extra_heading": "附加步骤 · {title}（--step {key}）",
    "step_names": {"positional": "位置编码", "pre_norm": "前置归一化", "rope": "旋转位置编码",
                   "add_norm": "残差与层归一化", "residual": "残差", "backward": "反向传播",
                   "differential": "差分注意力",
                   "delta": "delta 规则", "lightning": "闪电注意力"},
    "of_head": "{title}（第 {head} 个头）",
    "check": CHECK,  # attncli check: the report and the slips (texts/check_zh.py)
    "slips": SLIPS,
    "label": {
        **FACTS["label"],  # the sentences true of some numbers only (texts/facts_zh.py)
        "saturation": "饱和程度  最大权重与雅可比矩阵最大项",
        "query_w1": "查询项  q·W₁", "keys_w2": "键项  K·W₂", "tanh": "隐藏层  tanh(q·W₁ + K·W₂)",
        "inputs": "输入  X", "context": "上下文  C", "positional": "位置编码  P",
        "normalized_values": "归一化后的值  V̂",
        "embedded": "加上位置编码的输入  X + P",
        "w_q": "查询权重  W_Q", "w_k": "键权重  W_K", "w_v": "值权重  W_V",
        "b_q": "查询偏置  b_Q", "b_k": "键偏置  b_K", "b_v": "值偏置  b_V",
        "queries": "查询  Q", "keys": "键  K", "values": "值  V",
        "scores": "得分  s", "scaled_scores": "缩放后的得分  z", "masked": "已屏蔽", "score_bias": "得分偏置  b",
        "exponentials": "指数  e^z", "exponentials_shifted": "指数  e^(z − max z)", "weights": "权重  a",
        "weighted_values": "加权后的值  a_j · v_j",
        "head_output": "输出  y", "all_weights": "全部权重  A", "head_outputs": "全部输出  H",
        "concat": "各头拼接  concat(H₁ … H_h)", "output": "输出  Y",
        "differential_weights": "组合权重  W = A₁ − λ·A₂", "pair_values": "这一对的值  [V₁ | V₂]",
        "normalized_head_outputs": "归一化后的一对输出  Ô",
        "gate": "门控  G = σ(X̂·W_G + b_G)", "gated_head_outputs": "门控后的输出  H ⊙ G",
        "residual": "残差  R", "normalized": "残差与层归一化  LayerNorm(R)",
        "normalized_inputs": "归一化后的输入  X̂", "normalized_output": "归一化后的输出  {norm}(Y)",
        "queries_rotated": "旋转后的查询  Q′", "keys_rotated": "旋转后的键  K′",
        "latent_kv": "键值潜在向量  c_KV", "absorbed_queries": "吸收后的查询  Q_abs",
        "normalized_queries": "归一化后的查询  Q̂", "normalized_keys": "归一化后的键  K̂",
        "angles": "旋转角  φ = p·f，每列一对", "kv_head": "键值头 {kv}（查询头 {first}–{last} 共用）",
        "average": "简单平均", "relevance": "相关度", "why_weights": "权重", "why_output": "输出",
        "why_shares": "R / 每行之和",
    },
    "inputs": {
        "title": "准备输入",
        "body": "注意力处理的是向量，所以每个词元都表示成一行数字：这里共有 {n} 个词元，每个 {d_model} 维。"
                "在真实模型里，这些行来自词嵌入表；这里用的就是你文档里写的数字。",
        "cross": "这是交叉注意力：查询来自这些输入，键和值则来自另一段序列，即上下文 C（{m} 行，每行 {d_ctx} 维）。"
                 "好比译者每写一个词，都要回头看一眼原文。",
        "stacked": "这是堆叠中的第 {layer} 层，所以这些行不是你文档里写的数字，而是先算出的第 {before} 层传下来的"
                   "{passed}（{n} 个词元，每个 {d_model} 维）。每一行已经带上了其他词元的一部分信息，"
                   "这一层再把它们混合一次。",
        "normalized": "LayerNorm(X + output)（add_norm）", "residual": "残差 X + output", "output": "输出 Y",
    },
    "positional": {
        "title": "位置编码",
        "body": "注意力本身不分先后：把各行打乱，得分也只是跟着一起换位置。为了让模型知道每个词元在哪儿，"
                "在一切计算之前，先给每一行输入加上一个位置向量 P；第 3 步的投影看到的是 {sees}。",
        "sees": "X + P",
        "sees_normalised": "归一化之后的 X + P（见 pre_norm 步骤）",
        "sinusoidal": "这里的 P 是正弦位置编码：按表格的编号从 1 数起，第 1、3、5 … 列用正弦，第 2、4、6 … 列用余弦，"
                      "波长每隔两列变长一次。这样每个位置都有独一无二的模式，相邻位置的模式也彼此相近。",
        "matrix": "这里的 P 是文档中直接给出的矩阵。",
    },
    "weights": {
        "shared_kv": "这一层不自己生成键和值：kv_from: {kv_from} 取第 {kv_layer} 层的键和值，键是那一层打分时用的样子"
                     "（已归一化、已旋转），值是那一层的权重所混合的样子（Gemma 4 的 KV 共享）。所以这里只有 W_Q；"
                     "W_K 和 W_V 属于那一层。",
        **FACTS["weights"],  # the sentences true of some numbers only (texts/facts_zh.py)
        "title": "权重",
        "body": "每个输入要经过三个权重矩阵，变成三个新向量：W_Q 得到查询，W_K 得到键，W_V 得到值。"
                "矩阵的行数等于输入的维数，列数等于输出的维数。训练好的模型会自己学出这些权重；"
                "这里直接给定，方便你把后面每个数都亲手验算一遍。",
        "body_k_eq_v": "每个输入经 W_Q 得到查询，经 W_K 得到键。这里没有 W_V：键投影同时也就是值（k_eq_v，Gemma 4 "
                       "的全局层；见第 3 步）。矩阵的行数等于输入的维数，列数等于输出的维数。训练好的模型会自己学出"
                       "这些权重；这里直接给定，方便你把后面每个数都亲手验算一遍。",
        "body_cross": "注意力要用的向量由三个权重矩阵算出：W_Q 把每一行输入变成查询，"
                      "W_K 和 W_V 把上下文的每一行变成键和值。矩阵的行数等于它所乘的那一行的维数（W_Q 为 d_model = "
                      "{d_model}，W_K 和 W_V 为 d_ctx = {d_ctx}），列数等于输出的维数。训练好的模型会自己学出这些权重；"
                      "这里直接给定，方便你把后面每个数都亲手验算一遍。",
        "latent": "在潜在注意力中，这里的 W_K 和 W_V 是 W_UK 和 W_UV，即 W_UKV 中属于这个头的键列和值列："
                  "它们乘的是词元的潜在向量 c_KV（{r_kv} 个数），而不是输入行；W_K 只给出键中不旋转的部分"
                  "（见 latent 步骤）。",
        "identity": "文档没有给出 {omitted}，因此这一投影是恒等映射：得到的向量就是它所乘的那一行，原封不动。",
        "identity_many": "文档没有给出 {omitted}，因此这些投影都是恒等映射：得到的每个向量就是它所乘的那一行，"
                         "原封不动。",
        "biases": "文档还给出了偏置（{biases}）：每个偏置都在对应的矩阵乘法之后加上，所以一次投影是 行 × W + b。",
        "heads": "一共有 {h} 个头，每个头用权重中属于自己的那一部分；这里显示的是第 {head} 个头的权重"
                 "（可用 --head 换成别的头）。",
        "gqa": "这里有 {h} 个查询头，却只有 {g} 个键值头（kv_heads: {g}），这就是分组查询注意力（GQA）："
               "每个查询头有自己的一份 W_Q，而每一份 {kv_weights} 由 {group} 个查询头共用。从 0 开始计数，"
               "查询头 i 使用键值头 i // (h / g) = i // {group}；这里显示的第 {head} 个头（i = {head0}）"
               "因此使用键值头 {head0} // {group} = {kv0}，即从 1 数起的第 {kv} 个键值头，"
               "由{shared}共用（可用 --head 换成别的头）。",
        "gqa_why": "为什么要共用？模型生成文本时，会把之前每个词元的键和值保存下来（KV 缓存），"
                   "免得每生成一个新词元都重算一遍。键值头从 {h} 个减到 {g} 个，每个词元要存的键和值"
                   "也从各 {h} 个减到各 {g} 个：缓存缩小到原来的 1/{group}，每一步要读的内存也更少，而效果损失很小。",
        "mqa_share": "这里有 {h} 个查询头，却只有一个键值头（kv_heads: 1）：每个查询头有自己的一份 W_Q，"
                     "而全部查询头共用同一份 {kv_weights}，所以这里显示的第 {head} 个头和其他头一样，"
                     "用的都是第 1 个键值头（可用 --head 换成别的头）。",
        "mqa": "kv_heads: 1 时，所有查询头共用唯一的一个键值头：这就是多查询注意力（MQA），"
               "是分组查询注意力的极端情形。模型生成文本时会保存之前每个词元的键和值（KV 缓存）；"
               "这里每个词元只需存一个键和一个值，而不是各 {h} 个。",
        "dk_dv": "查询和键要相乘，所以维数必须相同（d_k = {d_k}）；值的维数可以不同（d_v = {d_v}），"
                 "输出的维数也随之而定。",
    },
    "projections": {
        "shared_label": "第 {kv_layer} 层的 {name}",
        "body_shared": "把每一行输入乘以 W_Q，得到这个词元的查询。键和值不在这里计算：它们来自第 {kv_layer} 层"
                       "（kv_from: {kv_from}），键已按那一层打分时的样子归一化并旋转，"
                       "所以这一层不往缓存里添加任何东西。",
        "title": "推导查询、键和值",
        "body": "把每一行输入分别乘以三个权重矩阵：乘 W_Q 得到这个词元的查询，乘 W_K 得到键，乘 W_V 得到值。"
                "所有词元共用同样的三个矩阵。",
        "body_k_eq_v": "把每一行输入分别乘以权重矩阵：乘 W_Q 得到这个词元的查询，乘 W_K 得到键，"
                       "这个键投影同时也就是它的值。所有词元共用同样的两个矩阵。",
        "why_qk": "为什么匹配时要用两个不同的向量？查询表示这个词元想找什么，键表示它能给别人提供什么。"
                  "两者由不同的矩阵算出，所以 A 对 B 的关注程度不必等于 B 对 A 的关注程度；"
                  "如果只用同一个向量，这种关系就只能是对称的。",
        "body_cross": "用每一行输入乘以 W_Q，得到这个词元的查询；用上下文的每一行乘以 W_K 和 W_V，"
                      "得到这个上下文词元的键和值。每一行用的都是同样的矩阵。",
        "why_qk_same": "为什么匹配时要用两个不同的向量？查询表示这个词元想找什么，键表示它能给别人提供什么。"
                       "由不同的矩阵算出时，A 对 B 的关注程度可以不同于 B 对 A 的关注程度；"
                       "而这份文档里查询和键的矩阵相同，每个查询都等于它的键，这种对称就是必然的（见步骤 4）。",
        "why_qk_same_additive": "为什么匹配时要用两个不同的向量？查询表示这个词元想找什么，键表示它能给别人提供什么。"
                                "这份文档里查询和键的矩阵相同，每个查询都等于它的键；不过加性打分仍然区别对待两者："
                                "查询乘 W₁，键乘 W₂。",
        "why_qk_cross": "查询表示每个输入词元想找什么，键表示每个上下文词元能提供什么：两者来自不同的序列，"
                        "所以得分总是从一个输入词元指向一个上下文词元。",
        "positional": "这里相乘的是 X + P 的各行，即加上位置编码之后的输入（见 positional 步骤）。",
        "positional_cross": "查询用的是 X + P 的各行，即加上位置编码之后的输入（见 positional 步骤）；"
                            "上下文则原样使用。",
        "pre_norm": "这里相乘的是 X̂ 的各行，即经过 pre_norm 步骤归一化之后的输入，而不是原始的 X；"
                    "键和值同样由 X̂ 算出。",
        "pre_norm_cross": "查询用的是 X̂ 的各行，即经过 pre_norm 步骤归一化之后的输入；上下文则原样使用。",
        "gqa": "第 {head} 个头有自己的查询，但它的键和值来自第 {kv} 个键值头：只算一次，"
               "由{shared}共用。",
        "clip": "接着把 Q、K、V 的每个数都截断到 −{clip:g} 到 {clip:g} 之间（clip_qkv，MPT 和 DBRX 的做法）："
                "超出的数变成它越过的那个端点，其余的数不变。这样少数特别大的投影值就不会主导得分。",
        "k_eq_v": "这里没有 W_V：每个值就是它那个词元的键投影本身，取在键被归一化和旋转之前（k_eq_v，Gemma 4 "
                  "的全局层），所以 K 和 V 共用一个矩阵、一份缓存。",
        "v_norm": "接着把每个值行除以它的均方根，v̂ = v / √(mean(v²) + ε)（v_norm，Gemma 4 的做法，没有 γ）："
                  "权重混合的每个值大小相同，只有方向携带信息。",
    },
    "scores": {
        **FACTS["scores"],  # the sentences true of some numbers only (texts/facts_zh.py)
        "title": "计算查询与每个键的得分",
        "dot": "{q} 对某个键的得分，就是它的查询与这个键的点积：逐位相乘再求和。两个向量方向越一致，点积越大；"
               "互不相关时接近零；方向相反时为负。所以点积衡量的是这个键与查询所找的东西有多契合。",
        "additive": "本文档使用加性（Bahdanau）打分，它是点积注意力的前身：查询和键分别经过 W₁、W₂ 投影后相加，"
                    "再过 tanh，最后由向量 v 压成一个数。它同样衡量键与查询是否契合，只不过用的是一个小型网络，"
                    "而不是直接做点积。",
        "rope": "这里的查询和键已经按各自的位置旋转过（见 rope 步骤）：点积是在旋转后的查询 q′ 与每个旋转后的键 k′ "
                "之间计算的，所以得分还取决于两个词元相距多远。",
        "rope_additive": "这里的查询和键已经按各自的位置旋转过（见 rope 步骤）："
                         "得分由旋转后的查询 q′ 和旋转后的键 k′ 算出。",
        "qk_norm_after": "这里的查询和键先旋转、再归一化（见 rope 和 qk_norm 步骤）："
                         "得分由归一化后的查询 q̂ 和归一化后的键 k̂ 算出。",
        "qk_norm": "这里的查询和键已经归一化（见 qk_norm 步骤）：得分由归一化后的查询 q̂ 和归一化后的键 k̂ 算出。",
        "scale_none_softcap": "本文档设置了 scale: none，得分不除以 √d_k。",
        "softcap": "接着对每个缩放后的得分 z 做软上限（soft-capping），上限 c = {softcap}：z 变成 c·tanh(z / c)。"
                   "tanh 的值在 −1 与 1 之间，所以截断后的得分落在 −{softcap} 与 {softcap} 之间：小的得分几乎不变，"
                   "大的得分被压向上限，任何一个得分都不会大到独占全部权重（Gemma 2 就这样限制注意力得分）。",
        "scale_none": "这里不做缩放（scale: none）：得分不除以 √d_k，与图解教程的做法一致。"
                      "Transformer 里通常还要除以 √d_k："
                      "向量一旦有几百维，原始点积就会很大，softmax 会把几乎全部权重都压到得分最高的那个键上。",
        "additive_none": "加性得分除非文档给出缩放系数，否则原样使用；这里没有缩放（scale: none）。",
        "additive_sqrt": "接着按文档的要求（scale: sqrt），每个得分都除以 √d_k = √{d_k}。",
        "additive_number": "接着，每个得分都乘以文档指定的缩放系数 {scale}。",
        "z": "第 5 步要变成权重的量记作 z，即缩放后的得分：这里 z = {z}。",
        "scale_sqrt": "接着，每个得分都除以 √d_k = √{d_k}。",
        "scale_sqrt_why": "点积是 d_k 个乘积之和，维数越高，数值往往越大，除以 √d_k 正是为了压住它。"
                          "这里它改变了 {q} 的权重：最大的权重是 {with_max}，不除的话会是 {without_max}。"
                          "向量有几百维时，不加缩放的得分会大到让 softmax 把几乎全部权重都给一个键，"
                          "梯度也随之变得极小，模型很难学下去。",
        "scale_sqrt_little": "在这里，除以 √d_k 没有改变 {q} 的任何一个权重（按显示的位数，最大的权重都是 "
                             "{with_max}）。它对更长的向量才要紧：点积是 d_k 个乘积之和，维数越高，数值往往越大；"
                             "向量有几百维时，不加缩放的得分会大到让 softmax 把几乎全部权重都给一个键，"
                             "梯度也随之变得极小，模型很难学下去。",
        "scale_number": "接着，每个得分都乘以文档指定的缩放系数 {scale}。通常取 1/√d_k，"
                        "以免得分过大、让 softmax 饱和。",
        "mask_causal": "这里用了因果掩码：{q} 只能看到自己和它前面的词元，后面的键都被屏蔽，不参与后续计算。",
        "mask_matrix": "这里用了文档给出的掩码：对 {q} 标为 0 的键都被屏蔽，不参与后续计算。",
        "mask_parts": "这里用了由几部分组成的掩码（因果顺序、滑动窗口、填充的键、掩码矩阵），"
                      "每一部分都允许的键才能被看到：任何一部分排除的键，对 {q} 来说都被屏蔽，不参与后续计算。",
        "mask_chunk": "掩码把键分成每块 {chunk} 个（Llama 4 的分块注意力）："
                      "{q} 只能看到自己所在块里的键，即 {chunk_keys}，"
                      "更早的块里的键也都被屏蔽。",
        "temperature": "先把查询乘以它的温度 τ（query_temperature，Llama 4 的做法）：在位置 {position}，"
                       "τ = 1 + {attn_scale}·ln(1 + ⌊({position} + 1) / {floor_scale}⌋) = {tau}。τ 随位置分级增大，"
                       "位置越远的查询得分越尖锐，这样在成千上万个键上做 softmax 时权重不会被摊平。"
                       "这一行的每个得分都是 q′·k 的 τ 倍。",
        "mask_score_bias": "得分偏置对 {q} 的某些键是 −inf：加上 −inf 之后 softmax 再也分不到权重，"
                           "所以这些键和被掩码屏蔽完全一样。",
        "bias_matrix": "接着把文档给出的得分偏置 B 加到每个缩放后的得分上（相当于 PyTorch 的浮点 attn_mask）："
                       "每对查询和键一个固定的数，在 softmax 之前加到得分上，让这个得分变大或变小。",
        "bias_alibi": "接着 ALiBi 加上一个随距离增长的惩罚：斜率 ×（键的位置 − 查询的位置）。每个头有自己的斜率，"
                      "有的头看得远，有的头只看近处。",
        "bias_relative": "接着加上 T5 的相对位置偏置：先把距离（键的位置 − 查询的位置）放进一个桶里（小距离每个一个桶，"
                         "更远的距离按对数刻度归入越来越宽的桶，直到 max_distance），每个头为每个桶学到一个数。",
        "bias_why": "只取决于两个词元相隔多远的偏置，不用往输入里加位置向量，也能告诉模型先后顺序："
                    "同样的词隔着同样的距离，不管出现在句子哪里，加到得分上的偏置都一样。"
                    "所以这类模型不需要位置嵌入，还能处理比训练时更长的文本。",
        "asymmetric": "反过来读，数字就不一样了：{q} 对 {other} 的得分是 {qab} = {ab}，而 {other} 对 {q} 的得分是 "
                      "{qba} = {ba}。单看一次点积，它是对称的（q·k = k·q）；不同的是谁的查询碰上谁的键，"
                      "所以 {q} 对 {other} 的关注程度，不必等于 {other} 对 {q} 的关注程度。",
        "row_column": "对 {q} 来说，正着读和反着读的得分碰巧相同（{qk} 中它的那一行等于它的那一列），"
                      "但并非每一对都如此：{first} 对 {other} 的得分是 {qab} = {ab}，"
                      "{other} 对 {first} 的得分却是 {qba} = {ba}。点积本身是对称的（q·k = k·q）；"
                      "不同的是谁的查询碰上谁的键。",
        "symmetric": "在这份文档里，{qk} 恰好是对称的：对每一对词元，"
                     "i 对 j 的得分 q_i·k_j 都等于 j 对 i 的得分 q_j·k_i。"
                     "这只是这组输入和权重的巧合：W_Q 与 W_K 并不相同，一般来说这两个得分是不同的。",
        "forced": "{why}：每个词元的查询就是它的键，所以对每一对词元都有 q_i·k_j = k_i·q_j = q_j·k_i，"
                  "{qk} 的对称是结构决定的，不是巧合。正是分开的 W_Q 和 W_K，"
                  "才让 i 对 j 的得分可以不同于 j 对 i 的得分。",
        "why_same": "这里 W_Q = W_K",
        "why_same_bias": "这里 W_Q = W_K，且 b_Q = b_K",
        "why_identity": "文档既没有给出 W_Q，也没有给出 W_K，两者都是恒等映射，Q = K = {x}",
    },
    "softmax": {
        **FACTS["softmax"],  # the sentences true of some numbers only (texts/facts_zh.py)
        "title": "Softmax：把得分变成权重",
        "softmax": "Softmax 把得分变成一组为正、总和为 1 的权重：对每个得分取 e 的幂，把这些指数加起来，"
                   "再用每个指数除以总和。由于指数函数增长很快，比别人稍高一点的得分就能分到明显更多的权重。",
        "sum": "本文档设置了 normalize: sum：每个得分直接除以所在行的总和。得分都为正时，权重之和同样为 1；"
               "但与 softmax 不同，一旦出现负分或整行之和为零，这种做法就行不通了。",
        "none": "本文档设置了 normalize: none：缩放后的得分原样当作权重使用，不要求它们加起来等于 1。",
        "masked": "被屏蔽的键，权重恰好为 0。",
        "all_masked": "对 {q} 来说，所有键都被屏蔽了，没有可以分配的对象：它的权重全部为 0，输出也是 0"
                      "（与 PyTorch 的 scaled_dot_product_attention 一致）。",
        "sink": "这个头还有一个“汇”（sink，gpt-oss 的做法）：一个 logit s = {s}，"
                "它像多出来的一个键一样加进分母，却没有值，分给它的注意力哪儿也不去。"
                "分母多了 e^s 这一项：汇拿走了 {q} 的 σ = {share}，各个键的权重加起来是 1 − σ = {rest}，"
                "而不是 1。这样，没有合适的键时，一个头几乎可以什么都不关注。",
        "all_masked_sink": "对 {q} 来说，所有键都被屏蔽了，所以它的注意力全部给了汇（s = {s}）："
                           "σ = 1，每个权重都是 0，输出也是 0。有汇时这不算错误，也不会给出警告。",
        "max_logit": "在这个头的所有查询中，进入 softmax 的最大 logit 是 S_max = {top}，位于查询 {at_query}、"
                     "键 {at_key}（max_logits）。MuonClip（Kimi K2）在训练时盯着这个数：logit 一直变大，"
                     "softmax 就几乎变成独热分布，训练也随之不稳定。",
        "max_logit_none": "这个头没有任何允许的格子，所以没有最大 logit（JSON 中为 null）。",
        "qk_clip": "QK-Clip，τ = {tau}：S_max 超过了 τ，所以 γ = τ / S_max = {gamma}，这个头的 W_Q 和 W_K "
                   "按比例缩小（{rule}）。这个头的每个得分都变为原来的 γ 倍，最大的一个现在是 {new}。",
        "qk_clip_unchanged": "QK-Clip，τ = {tau}：S_max 没有超过 τ，所以 γ = 1，这个头的 W_Q 和 W_K 保持不变。",
        "rule_heads": "每个查询头各有一个键值头：两边各乘以 √γ",
        "rule_grouped": "分组的头：共享的键头乘以组内最小 γ 的平方根，每个查询头乘以自己 γ 余下的部分",
        "rule_latent": "潜在注意力：不旋转的查询与键部分乘以 √γ，旋转的查询部分乘以 γ，共享的旋转键不变",
    },
    "weighted": {
        "title": "给每个值加权",
        "body": "现在用每个键的权重去乘它对应的值向量。权重大的值几乎原样保留，权重接近 0 的值则几乎消失。",
        "body_zero": "现在用每个键的权重去乘它对应的值向量。权重大的值几乎原样保留，权重接近 0 的值几乎消失，"
                     "权重恰好为 0 的值（{keys}）则完全消失。",
        "builtin_first": "图解教程给出的加权值是 {rounded_rows}：它们来自取整后的权重 {rounded_weights}，"
                         "而不是这里用的精确权重 {exact_weights}。",
        "builtin": "图解教程把 {q} 的权重取整为 {rounded_weights}；用这些权重算出的加权值会是 {rounded_rows}，"
                   "而不是上面的精确值。",
    },
    "sum": {
        **FACTS["sum"],  # the sentences true of some numbers only (texts/facts_zh.py)
        "title": "求和：得到 {q} 的输出",
        "body": "把加权后的值相加，就得到 {q} 的输出：它是所有值按各自权重调配而成的混合，"
                "共有 d_v = {d_v} 个数，与值的维数相同。",
        "heads": "这是第 {head} 个头给 {q} 的结果；各个头如何合并，见第 8 步。",
        "builtin": "图解教程的图中把 {q} 的权重取整为 {rounded_weights}，因此给出的输出是 {rounded}；"
                   "精确的输出其实是 {exact}。另外，这个例子和教程一样设置了 scale: none，没有除以 √d_k。",
    },
    "matrix": {
        "title": "所有查询一起算",
        "body": "第 4 到 7 步只算了一个查询。换成矩阵写法，所有查询可以一次算完：{qk} 包含全部得分，"
                "逐行归一化得到权重，再乘以 V，就同时为每个查询混合好了值。实际的注意力代码正是这样计算的。",
        "mask": "被屏蔽的位置不参与计算，权重为 0。",
        "heads": "共有 {h} 个头时，每个头都用自己的权重各自走一遍第 3 到 7 步，"
                 "然后把 {h} 个头的输出并排拼接，每个词元得到一行。",
        "heads_mqa": "共有 {h} 个查询头时，每个查询头都用自己的 W_Q 和全部查询头共用的同一份 {kv_weights}"
                     "（只有一个键值头）各自走一遍第 3 到 7 步，然后把 {h} 个头的输出并排拼接，每个词元得到一行。",
        "heads_gqa": "共有 {h} 个查询头时，每个查询头都用自己的 W_Q 和所在组的 {kv_weights}"
                     "（共 {g} 个键值头，每个由 {group} 个查询头共用）各自走一遍第 3 到 7 步，"
                     "然后把 {h} 个头的输出并排拼接，每个词元得到一行。",
        "projection": "随后，输出投影 W_O 把各个头的结果融合起来，得到每个词元 {d_out} 维的最终输出。",
        "gate": "在此之前，每个头的输出先经过门控（Qwen3-Next 的做法）：g = σ(x·W_G + b_G) 由该词元自己的输入算出，"
                "给头的每个输出数一个 0 到 1 之间的数，y ⊙ g 只保留相应的比例。这样一个头可以对某个词元把自己关掉；"
                "下面几行是 {q} 在这个头里的门控。",
    },
    "add_norm": {
        "title": "Add & Norm（残差与层归一化）",
        "body": "注意力的输出先与这一层的输入相加（残差连接，保证原有信息不会丢失），再对每一行做层归一化："
                "先平移到均值为 0、缩放到方差为 1，再乘以 γ、加上 β。这样数值在一层层传递中始终保持在稳定的范围内。",
        "post_norm": "相加之前，注意力的输出先自己做一次归一化（post_norm，{norm}）：R = {x0} + {norm}(Y)；"
                     "开头几行算出了 {q} 的这一步。",
    },
    "pre_norm": MODERN["pre_norm"],
    "qk_norm": MODERN["qk_norm"],
    "rope": MODERN["rope"],
    "latent": MODERN["latent"],
    "residual": MODERN["residual"],
    "backward": BACKWARD,
    "differential": DIFFERENTIAL,
    "why": WHY,  # explain --why (texts/why_zh.py)
    "mistake": "你的答案从这里开始出错：{key}，位置 {cell}：应为 {expected}，你写的是 {given}。",
    "mistake_shape": "你的答案从这里开始出错：{key} {problem}。",
    "hint": "提示：{hint}",
}
