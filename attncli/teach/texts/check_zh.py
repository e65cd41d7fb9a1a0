"""``attncli check`` 的中文：报告的各行，以及每种失误的一句话（做错了什么、应该怎么做）。

键名与 :mod:`attncli.teach.texts.check_en` 一一对应。答案里的键名（scores、weights …）是文档中要写的名字，保持原样。
"""

CHECK = {
    "title": "你的答案，逐步核对（容差 {tol}）", "correct": "正确", "wrong": "错误：{problem}",
    "wrong_at": "错在{cell}：应为 {expected}，你写的是 {given}", "hint": "提示：{hint}",
    "cell": {"pair": "第 {i} 个头对", "head": "第 {i} 个头", "row": "第 {i} 行", "column": "第 {i} 列", "sep": "，",
             "token": "（'{token}'）", "token_i": "第 {i} 个词元", "chunk": "第 {i} 块"},
    "sep": "、",
    "problem": "形状是 {given}，而这里 {key} 的形状是 {expected}",
    "one_number": "一个数",
    "transposed": "看起来是转置了",
    "left_empty": "只有被屏蔽的缩放后得分可以留空（null，或写 −inf）；其他每个格子都有数（被屏蔽的键权重为 0）",
    "other_row": "这是查询 {row}（“{token}”）的数字，不是查询 {query} 的：核对一下算的是哪一行，或者写 query: {row}",
    "other_token_row": "这是词元 {row}（“{token}”）的数字，不是词元 {query} 的：核对一下算的是哪一行，"
                       "或者写 query: {row}",
    "other_head": "这是第 {head} 个头的数字，不是第 {given} 个头的：核对一下算的是哪个头，或者写 head: {head}",
    "carried": "这正是用你自己的 {upstream} 往下正确计算得到的结果：只需改正 {upstream}",
    "row_match": "{key}：只给了一行，又没有写 query:，所以与每一行都比较过，它就是{row}。",
    "row_closest": "{key}：只给了一行、没有写 query:，它与任何一行都不相符，所以与最接近的{row}比较。",
    "row_match_heads": "{key}：只给了一行，又没有写 head:，所以与每个头里这个查询的那一行都比较过，它就是{row}。",
    "row_closest_heads": "{key}：只给了一行，又没有写 head:，所以与每个头里这个查询的那一行都比较过，"
                         "它与任何一行都不相符，最接近的是{row}。",
    "row_match_context": "{key}：只给了一行；它的行对应上下文的词元，而不是 query: 所指的查询，"
                         "所以与每一行都比较过，它就是{row}。",
    "row_closest_context": "{key}：只给了一行；它的行对应上下文的词元，而不是 query: 所指的查询，"
                           "所以与每一行都比较过，它与任何一行都不相符，最接近的是{row}。",
    "none_fits_right": "没有已知的失误能解释 {key}（步骤 {step}），它是第一个出错的量：请从这里重新计算。"
                       "正确的有：{keys}。",
    "none_fits_alone": "没有已知的失误能解释 {key}（步骤 {step}），它是第一个出错的量：请从这里重新计算。"
                       "给出的其他量也都不对。",
    "masked_cell": "未屏蔽的格子都对了；被屏蔽的键没有缩放后的得分可写（softmax 不计入它）：请留空（null），或写 −inf",
    "concat": "这是各头并排拼接后的结果（concat(H₁ … H_h)）；head_outputs 要每个头各写一个矩阵，从第 1 个头开始",
    "one_head": "这只是第 {head} 个头的输出（H_{head}）：输出要把全部 {h} 个头并排拼接，concat(H₁ … H_{h}){projected}",
    "projected": "，再乘以 W_O",
    "heads_summed": "这是把各个头的输出{how}的结果：各个头应该并排拼接，concat(H₁ … H_{h})，"
                    "每个词元一行 h·d_v = {width} 个数{projected}",
    "added": "相加", "averaged": "取平均",
    "heads_stacked": "这是把各个头的输出上下叠在一起（{rows} 行）：它们应该并排拼接，每个词元一行，"
                     "concat(H₁ … H_{h}){projected}",
    "none_fits_carried": "没有已知的失误能解释 {key}（步骤 {step}），它是第一个出错的量：请从这里重新计算。"
                         "{after} 都是由它正确推出的，改好它，它们也就对了。",
    "read_step": "对照你的数字重读{where}：{command}",
    "step_number": "第 {step} 步", "step_extra": "附加步骤“{name}”", "step_other": "步骤 {step}",  # as explain's titles
    "none_fits_only": "没有已知的失误能解释 {key}（步骤 {step}）：请一步步重新计算，或者把它之前的量也写上，"
                      "好找出第一个出错的量。",
    "same_slip": "与上面 {key} 的失误相同",
    "transposed_square": "数字是对的，但行和列对调了：请按表格的样子写，每个词元一行",
    "tell_apart": "有两种失误都能得到你写的数字。要分辨是哪一种，请算出 {key} 在{cell}的值："
                  "第一种（{first}）得 {mine}，第二种（{second}）得 {theirs}。",
    "rounded_answer": "按你写的小数位数来看是对的，但容差 {tol} 要求更精确：多保留几位小数，"
                      "或者用 --tol {suggest} 核对",
}

SLIPS = {
    "or_same": "{first}；或者（得到的数字相同）：{second}",
    # 步骤 4：缩放
    "scale_left_out": "漏掉了缩放：在 softmax 之前，每个得分都要乘以 {scale}",
    "scale_added": "本文档写的是 scale: none，却把得分除以了 {root}：应把得分原样交给 softmax",
    "scale_twice": "缩放用了两次：每个得分只乘一次 {scale}",
    "scale_twice_dk": "缩放用了两次（每个得分除以了 d_k = {d_k}，而不是 {root}）：每个得分只除一次 {root}",
    "scale_twice_dk_model": "得分除以了 {d_k}，它既是 d_k（相当于缩放用了两次），"
                            "也是 √d_model = √{d_model}（输入的宽度）：每个得分应除以 √d_k = {root}，即一个头的宽度",
    "scale_inverted": "得分乘以了 √d_k，而不是除以它：每个得分都应除以 {root}",
    "scale_d_model": "得分除以了 √d_model = √{d_model}，即输入的宽度：应除以 √d_k = {root}，即一个头的查询和键的宽度",
    "scores_scaled": "这些得分已经缩放过了：scores 是缩放之前的 Q·Kᵀ（缩放后的写在 scaled_scores 下）",
    # 步骤 4：点积
    "not_transposed": "K 没有转置：得分是 Q·Kᵀ，即每个查询行与每个键行的点积",
    "scores_transposed": "得分算反了，成了 K·Qᵀ（第 i 行放的是 q_j·k_i）："
                         "Q·Kᵀ 的第 i 行是查询 i 与每个键的点积 q_i·k_j",
    # 步骤 5：softmax 与掩码
    "softmax_axis": "softmax 沿列（对各个查询）计算了；它应沿每一行、对各个键计算",
    "not_divided": "指数没有除以它们的和：每个 e^z 都要除以所在行的总和，权重加起来才等于 1",
    "sum_not_softmax": "直接用每个得分除以所在行的和，没有先取 e^z：softmax 是用每个指数 e^z 除以这一行所有指数的和",
    "mask_ignored": "漏掉了掩码：被屏蔽的键权重为 0，应把它们排除在 softmax 之外",
    "mask_zero": "被屏蔽的得分设成了 0 而不是 −∞，于是每个仍分到 e⁰ = 1 的一份：应把被屏蔽的键完全排除在 softmax 之外",
    "mask_after": "softmax 之后才把被屏蔽的权重设为 0，其余权重加起来就不再是 1：应在 softmax 之前屏蔽得分",
    "causal_strict": "因果掩码把每个查询自己的键也屏蔽了：查询 i 能看到键 1 … i，包括它自己",
    "causal_future": "因果掩码方向反了（每个查询看的是它后面的键）：查询 i 能看到键 1 … i，看不到它后面的键",
    "rounded_half": "权重取整过早（取成 0、0.5 或 1）：应保留完整精度，直到最后",
    "rounded_1": "权重取整过早（保留 1 位小数）：应保留完整精度，直到最后",
    "rounded_2": "权重取整过早（保留 2 位小数）：应保留完整精度，直到最后",
    # 步骤 6 和 7：加权求和
    "times_keys": "权重乘的是键而不是值：输出是 Σ_j a_j·v_j，用的是 V 的行",
    "left_out_one": "加权求和时漏掉了“{token}”的加权值（a{j}·v{j}）：每个键的加权值都要加上",
    "weights_column": "权重是按列读取的（Aᵀ·V）：输出 i 要用权重的第 i 行（即查询 i 的权重）来混合各个值",
    # 步骤 8 与投影
    "w_o_left_out": "漏掉了输出投影 W_O：各头拼接之后还要乘以 W_O",
    "w_o_left_out_b_o_kept": "漏掉了输出投影 W_O（只加了 b_O）：各头拼接之后先乘以 W_O，再加 b_O",
    "bias_left_out": "漏掉了偏置 {names}：乘完权重之后要加上它，x·W + b",
    "biases_left_out": "漏掉了偏置 {names}：每次乘完权重之后都要加上对应的偏置，x·W + b",
    "weights_as_wx": "权重 {names} 按 W·x（PyTorch 中 nn.Linear 的布局）来用了：attncli 用的是行向量，"
                     "x·W（PyTorch 的权重要先转置）",
    "heads_split": "多头切分错了（各列是轮流分给各头的）：第 i 个头取第 i 块连续的 d_k 列",
    "heads_order": "各头输出拼接的顺序错了：第 1 个头的输出在最前面，然后是第 2 个头的，依此类推",
    "keys_from_inputs": "键和值是由输入 X 算出的：交叉注意力中它们来自上下文，K = C·W_K，V = C·W_V",
    # 今天的注意力
    "rope_interleaved": "成对的维度取成了相邻的 (2i, 2i + 1)；本文档是前后两半配对，i 与 i + dims/2（style: half，"
                        "即 rotate_half）",
    "rope_halves": "成对的维度取成了前后两半 (i, i + dims/2)；本文档是相邻配对，2i 与 2i + 1（style: interleaved）",
    "rope_from_1": "位置从 1 开始数了；位置应从 0 开始（第一个词元在位置 0，完全不旋转）",
    "rope_forgotten": "忘了旋转：使用 rope 时，得分是 Q′·K′ᵀ，即按各自位置旋转之后的查询和键",
    "rope_reversed": "旋转方向反了（转了 −φ）：每一对 (a, b) 应变为 (a·cos φ − b·sin φ, b·cos φ + a·sin φ)",
    "rope_queries_only": "只旋转了查询：rope 也要把每个键按它自己的位置旋转",
    "rope_values": "值也被旋转了：rope 只旋转查询和键，V 保持投影之后的样子",
    "rope_as_projected": "这些是旋转之后的查询和键：queries 和 keys 是 rope 之前的投影（旋转之后的写在 queries_rotated "
                         "和 keys_rotated 下）",
    "temperature_left_out": "漏掉了查询温度：有 query_temperature 时，算得分之前每个查询行都要乘以 "
                            "τ = 1 + attn_scale·ln(1 + ⌊(p + 1)/floor_scale⌋)",
    "gate_left_out": "漏掉了输出门控：在输出投影之前，每个头的输出都要乘以 G = σ(X̂·W_G + b_G)",
    "gate_after_output": "门控用在了输出投影之后：它乘的是每个头的输出 H，Y = concat(H ⊙ G)·W_O + b_O，而不是 Y 本身",
    "residual_scale_left_out": "漏掉了残差的缩放：R = X + {alpha}·Y，输出要先乘以 {alpha} 再相加",
    "softcap_left_out": "漏掉了软上限：每个缩放后的得分 z 都要变成 {c}·tanh(z / {c})",
    "rope_factor_once": "注意力因子 a = {a} 只乘了一次：旋转后的查询和键都要乘以它，"
                        "所以每个得分的旋转部分变为 a² = {a2} 倍，而不是 a 倍",
    "clip_left_out": "漏掉了对 Q、K、V 的截断：有 clip_qkv 时，它们超出 ±{c} 的每个数都要先变成 ±{c}，再算得分",
    "max_logit_unscaled": "最大 logit 取自缩放之前的得分 S：进入 softmax 的 logit 是 Z = scale·S",
    "v_norm_left_out": "漏掉了对值的归一化：有 v_norm 时，每个值行都要先除以它的均方根，v̂ = v / √(mean(v²) + ε)，"
                       "再由权重混合",
    "qk_clip_gamma_uncapped": "对每个头都用了 γ = τ / S_max：S_max 不超过 τ = {tau} 的头 γ 仍为 1"
                              "（QK-Clip 只会缩小 W_Q 和 W_K）",
    "sink_left_out": "分母里漏掉了汇（sink）：有 sinks 时，每一行的 softmax 要除以 Σ e^z + e^s，"
                     "所以权重加起来小于 1（剩下的是汇的份额）",
    "qk_norm_left_out": "漏掉了对 Q 和 K 的归一化：有 qk_norm 时，每个查询和每个键都要先经过 {norm}，再算得分",
    "qk_norm_after_rope": "归一化放在了旋转之后：这里 qk_norm 在 rope 之前归一化 Q 和 K，rope 旋转的是归一化后的数",
    "qk_norm_before_rope": "归一化放在了旋转之前：有 after_rope: true 时，qk_norm 归一化的是旋转之后的 Q′ 和 K′"
                           "（Llama 4 的做法）",
    "qk_norm_key_gamma": "查询用了键的 γ 来归一化：qk_norm.gamma.query 用于查询，qk_norm.gamma.key 用于键",
    "pre_norm_left_out": "输入没有先归一化：有 pre_norm 时，投影乘的是 X̂ = norm(X)，而不是 X",
    "score_bias_left_out": "漏掉了得分偏置：在 softmax 之前，它要加到每个缩放后的得分上",
    "mask_inverted": "掩码读反了：按本文档的约定，你给了权重的键恰恰是被屏蔽的（convention: allow 表示 1 = 可以关注；"
                     "block，如 nn.MultiheadAttention，表示 1 = 屏蔽）",
    "kv_group": "查询头 i 用了键值头 i mod {g}：共用一个键值头的 {group} 个查询头是相邻的，"
                "所以头 i 用的是键值头 i // {group}",
    "residual_left_out": "漏掉了残差：要把输出加回到这一层的输入上，R = X + Y",
    "latent_rope_first": "旋转转错了每个头的一端：有 latent 时，每个查询和键转动的是最后 d_r = {d_r} 个数"
                         "（rope.part: last），排在不旋转的 k_nope 之后",
    "latent_rope_key_left_out": "各头的键少了共享的旋转键：每个键是 (k_nope | k_r)，k_nope 来自该头在 W_UKV 中的列，"
                                "k_r 是 C·W_DKV 的最后 d_r = {d_r} 列，所有头都相同",
    "latent_kv_norm_left_out": "潜在向量没有归一化：W_UKV 展开成键和值之前，c = kv_norm(C·W_DKV 的前 r_kv 列)",
    "yarn_mscale_once": "YaRN 的因子 m = {m} 只乘了一次：DeepSeek 把 1/√d_k 乘以 m² = {m2}，查询一次，键一次",
    # 第 31 号问题：softmax 本身的算术（teach/check/arith.py）
    "max_column": "取指数之前减去的是每一列（跨查询）的最大值：应减去本行自己的最大值，这样每个 e^z 都不超过 1",
    "sum_whole": "每个指数除以的是整个矩阵的总和：应除以本行的总和，这样每个查询的权重加起来才等于 1",
    "scale_on_weights": "缩放乘在了权重上，成了 {c}·softmax(S)，而不是乘在得分上：应放进 softmax 里，softmax({c}·S)",
    "scale_on_output": "缩放乘在了输出上，而不是得分上：应放进 softmax 里，softmax({c}·S)·V",
    "scores_as_weights": "把缩放后的得分直接当成了权重：要先用 softmax 把它们变成权重，每个 e^z 除以本行的总和",
    "softmax_twice": "softmax 做了两次（又对权重做了一次）：只对缩放后的得分做一次",
    "weights_as_scores": "这是注意力权重，不是得分：得分是 softmax 之前的 Q·Kᵀ（权重写在 weights 下）",
    "bias_subtracted": "得分偏置被减掉了：应该加上，z = scale·S + B",
    "alibi_reversed": "ALiBi 的距离取反了，成了 slope·(p_i − p_j)：偏置是 slope·(p_j − p_i)，查询之前的键得到负值",
    "bias_before_scale": "偏置在缩放之前就加上了，成了 {c}·(S + B)：应先缩放得分，再加偏置，{c}·S + B",
    "norm_axis": "{where} 的 {norm} 是沿每一列（跨词元）做的：应对每一行的 {d} 个数做归一化",
    "norm_ddof": "{where} 的 {norm} 把总和除以了 d − 1：应取一行 d = {d} 个数的平均（除以 d，与 torch 相同）",
    "norm_eps_left_out": "{where} 的 {norm} 漏掉了 ε = {eps}：它应和平均值一起放在根号里",
    "norm_eps_outside": "{where} 的 {norm} 把 ε = {eps} 加在了根号外面：它应放在根号里面",
    "norm_no_root": "{where} 的 {norm} 直接除以了平均值，没有开平方：应除以 √(平均值 + ε)",
    "norm_other": "{where} 用了 {other} 的公式：这份文档要求的是 {norm}",
    "norm_gamma_left_out": "{where} 的 {norm} 漏掉了 γ：归一化后的行要乘以 γ",
    "norm_beta_left_out": "{where} 的 {norm} 漏掉了 β：乘以 γ 之后还要加上 β",
    "norm_gamma_beta_swapped": "{where} 的 {norm} 把 γ 和 β 弄反了：归一化后的行先乘以 γ，再加上 β",
    "norm_scope_projection": "qk_norm 的 {norm} 是对一个词元所有头的 {d} 个数一起做的：scope: head 时，"
                             "每个头的 {d_k} 个数各自归一化",
    "norm_scope_head": "qk_norm 的 {norm} 是对每个头的 {d_k} 个数分别做的：scope: projection 时，"
                       "一个词元整个投影的 {d} 个数要一起归一化（OLMo 2 就是这样）",
    # 各阶段声明的变体（attncli/core/variants）：两种失误、或两个候选的说法
    "and_also": "{first}；另外，{second}",
    "scale_d_v": "得分除以的是 √d_v = √{d_v}（值向量的宽度）：应除以 √d_k = {root}（查询和键的宽度）",
    "scale_n": "得分除以的是 √n = √{n}（词元的个数）：应除以 √d_k = {root}（查询和键的宽度）",
    "scale_rounded": "缩放是用四舍五入成 {rounded} 的 {root} 算出来的：1/{root} 要保留完整精度",
    "softmax_overflow": "e^z 溢出了：缩放后的得分超过 {limit} 时，e^z 比任何浮点数都大（inf），而 inf / inf 得 NaN；"
                        "取指数之前先减去本行自己的最大值，每个 e^z 就都不超过 1（softmax 的结果不变）",
    "softmax_base_2": "权重是用 2^z 而不是 e^z 算的：softmax 取的是以 e 为底的指数",
    "log_softmax": "这些是 log-softmax 的值，z − ln Σ e^z：权重本身是 e^z / Σ e^z（它们的指数），"
                   "是 0 到 1 之间、加起来等于 1 的数",
    "window_wider": "滑动窗口多算了一个键：window: W 让每个查询看到 W 个键（包括它自己）",
    "window_narrower": "滑动窗口少算了一个键：window: W 让每个查询看到 W 个键（包括它自己）",
    "padding_rows": "填充被放到了查询的行上：被填充的词元作为键被屏蔽（它的那一列），它自己的那一行照样关注真实的键",
    "heads_one_block": "每个头都用了第 1 个头的列：第 i 个头取它自己的那一块，第 i·d_k … (i + 1)·d_k − 1 列",
    "values_as_keys": "得分是用值向量算的，Q·Vᵀ：得分是 Q·Kᵀ，用的是键",
    "kv_one_head": "每个查询头都用了第 1 个键值头，好像只有一个共享的键值头：这里有 {g} 个，"
                   "查询头 i 用的是键值头 i // {group}",
    "rope_frequency_no_2": "频率取成了 θ^(−i/dims)：指数里有个 2，f_i = θ^(−2i/dims)",
    "alibi_distance_abs": "ALiBi 的距离丢了方向，成了 −slope·|p_j − p_i|：偏置是 slope·(p_j − p_i)，"
                          "查询之后的键得到正值",
    "alibi_slopes_reversed": "ALiBi 的斜率按相反的顺序分给了各头：第 1 个头的斜率最大，是 2^(−8/h)",
    "alibi_base_e": "ALiBi 的斜率是以 e 为底算的：它们是 2 的幂，第 k 个头是 2^(−8k/h)",
    "residual_from_normalized": "残差加的是归一化后的输入 X̂：应加上 pre_norm 之前这一层的输入，R = X + Y",
    "norm_before_add": "输出先归一化再相加，成了 X + LN(Y)：Add & Norm 是先相加，再归一化，LN(X + Y)",
    "layer_raw_inputs": "第 {layer} 层用的是整个堆叠最初的输入 X：第一层之后的每一层"
                        "都以前一层的结果（{passed}）作为输入",
    # 反向传播
    "dz_sigmoid": "dZ 取成了 dA ⊙ A ⊙ (1 − A)，只算了每个权重对自己得分的导数：一行中每个权重都依赖于每个得分，"
                  "所以 dZ = A ⊙ (dA − D)，其中 D = Σ_j a_j·dA_j",
    "delta_left_out": "漏掉了行项 D，成了 dZ = A ⊙ dA：应先从每个 dA 中减去 D = Σ_j a_j·dA_j，dZ = A ⊙ (dA − D)",
    "dk_not_transposed": "dK 取成了 dS·Q：键的梯度是 dSᵀ·Q（第 j 个键用 dS 的第 j 列）",
    "dv_not_transposed": "dV 取成了 A·dH：值的梯度是 Aᵀ·dH（第 j 个值用 A 的第 j 列）",
    "scale_forgotten_backward": "反向传播时漏掉了缩放：dS = scale·dZ，所以 dQ 和 dK 也带着这个缩放",
}
SLIPS.update({  # 闪电索引器（core/variants/indexer.py）
    "indexer_head_weights_left_out": "索引器的每个头都按权重 1 计算了：各头的 ReLU(q·k) 相加之前要乘以它的权重 "
                                     "w = x̂·W_IW",
    "indexer_scales_left_out": "漏掉了索引器的缩放：I = Σ_h w_h·H^(−1/2)·ReLU(d^(−1/2)·q_h·k)，这里 H = {H}、d = {d}，"
                               "所以你的结果大了 {factor} 倍",
    "indexer_smallest_kept": "保留的是 I 最小的键：每个查询保留 I 最大的 top_k = {top_k} 个键（相等时下标小的在前）",
})
SLIPS.update({  # 差分注意力（core/variants/differential.py）
    "differential_lambda_added": "把 λ·A₂ 加上了：差分注意力要减去第二个 softmax，W = A₁ − λ·A₂，"
                                 "这样两张注意力图共有的噪声才会相互抵消",
    "differential_layer_from_one": "计算 λ_init 时把层数从 1 数起了：layer: {layer} 从 0 数起，"
                                   "所以 λ_init = 0.8 − 0.6·e^(−0.3·{layer}) = {right}，而不是 {wrong}",
    "differential_norm_left_out": "漏掉了每对输出的 RMSNorm：在输出投影之前，要在这一对的 2·d_v 个数上计算 "
                                  "Ô = (1 − λ_init)·O / √(mean(O²) + ε)",
    "differential_factor_left_out": "漏掉了因子 1 − λ_init = {factor}：归一化后的输出还要乘以它，"
                                    "Ô = (1 − λ_init)·RMSNorm(O)",
})
CHECK.update({  # linear: 文档（teach/check/linear.py）
    "either": "下面几种失误之一能得出你的数字：{slips}", "sep_or": "；或者",
    "state_swapped": "数字是对的，但行和列对调了：状态是 d_k × d_v，每个键分量一行，每个值分量一列",
    "step_delta": "“delta 规则”那一步", "step_lightning": "“闪电注意力”那一步",
    "none_fits_delta": "已知的递推失误都得不出这些数字：把第一个算错的词元重算一遍，"
                       "S ← e^g·S，u = β(v − Sᵀk)，S ← S + k·uᵀ，o = Sᵀq。",
    "none_fits_lightning": "已知的递推失误都得不出这些数字：把第一个算错的词元重算一遍，"
                           "S ← e^(−s)·S + k·vᵀ，o = Sᵀq。",
})
SLIPS.update({  # linear: 文档的递推（core/variants/linear.py）
    "linear_decay_after": "状态在更新之后才衰减：每个词元要先衰减 S ← e^g·S，再用衰减后的状态算 u = β(v − Sᵀk)，"
                          "最后 S ← S + k·uᵀ",
    "linear_beta_left_out": "漏掉了 β：u = β(v − Sᵀk)，每次更新都要乘以该词元的 β = σ(b)",
    "linear_delta_left_out": "漏掉了 delta 规则的修正：u = β(v − Sᵀk)，而不是 β·v；写入新值之前，"
                             "要先减去状态里已经为 k 存下的内容",
    "linear_state_transposed": "状态读成了转置：S 是 d_k × d_v（每个键分量一行），输出是 o = Sᵀq",
    "linear_q_unscaled": "查询没有缩放：在 o = Sᵀq 之前，q 要乘以 1/√d_k = 1/{root}（d_k = {d_k}）",
    "linear_q_unscaled_scale": "查询没有缩放：在 o = Sᵀq 之前，q 要乘以文档给的 scale: {scale}",
    "linear_l2_left_out": "q 和 k 没有做 l2 归一化：进入递推之前，每个都要除以自己的长度 √(Σx² + ε)（然后再缩放 q），"
                          "这样每个键写入状态时长度都是 1",
    "lightning_decay_after": "把新词元也衰减了：S ← e^(−s)·S + k·vᵀ 只衰减状态原有的内容，再把这个词元的 k·vᵀ 完整加上",
    "lightning_decay_sign": "衰减反而让状态变大了：S ← e^(−s)·S + k·vᵀ，其中 e^(−s) 小于 1，越早的词元分量越小",
    "lightning_state_transposed": "状态读成了转置：S 是 d_k × d_v（每个键分量一行），输出是 o = Sᵀq",
})
