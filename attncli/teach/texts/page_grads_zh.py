"""页面上梯度算式旁边的文字（中文）：每一行为什么成立，用 explain --step backward 的说法。

每个梯度一条；``{…}`` 填入这个格子的词元和文档里的数。``D`` 和 ``dZ`` 沿用 explain 自己的句子
（:mod:`attncli.teach.texts.backward_zh`）。
"""

from attncli.teach.texts.backward_zh import BACKWARD

GRADS = {
    "grad_output": "dY 由文档给出：损失是 L = Σ gradient ⊙ Y，所以 dL/dY 就是给出的梯度本身。",
    "grad_head_outputs": "Y 把各个头的输出并排放在一起，所以第 {head} 个头的 dH 就是 dY 中属于它的那几列"
                         "（这个头的第 {c} 列是 Y 的第 {col} 列）。",
    "grad_head_outputs_wo": "Y = concat(H)·W_O，所以 dH = dY·W_Oᵀ：dY 的 {q} 这一行乘以 W_O 的第 {col} 行，"
                            "也就是乘第 {head} 个头第 {c} 列的那一行。",
    "grad_weights": "反向计算时，每个权重 a_ij 得到 dA_ij = dH_i·V_j，即这个权重变大时损失的变化量："
                    "这里是查询 {q} 的 dH 乘以键 {key} 的值，逐项写出。",
    "delta": "D_i 是这一行 dA 按 a 加权的平均值，Σ_j a_ij·dA_ij。" + BACKWARD["no_storage"],
    "grad_scaled_scores": "softmax 让每一行的和保持为 1（减去 sink 的份额），"
                          "一个权重要变大，同一行的其他权重就必须变小："
                          "传到得分上的是 a_ij·(dA_ij − D_i)，其中 D_i 是这一行 dA 按 a 加权的平均值。"
                          "这里是查询 {q} 和键 {key}。",
    "masked": "对查询 {q} 来说，键 {key} 被屏蔽了：它的权重正好是 0，所以无论 dA 是多少，dZ = 0·(dA − D) = 0。"
              "梯度传不到被屏蔽的得分：掩码是固定的，不是学出来的，而且损失不依赖权重为 0 的得分。",
    "grad_scores": "softmax 读入的是 Z = scale·S（scale 为 {scale}），所以每个 dS 都是 dZ 乘以这个缩放系数。"
                   "同一个系数也会出现在 dQ 和 dK 里：没有它，得分以及每一行的集中程度都会随 d_k 增大。",
    "grad_scores_cap": "softmax 读入的是 Z = c·tanh(scale·S / c)（scale 为 {scale}，软上限 c = {cap}），"
                       "所以 dS 是 dZ 乘以它的导数 scale·(1 − tanh²(scale·S / c))：接近上限的得分几乎传不回梯度。",
    "queries": "S_ij = q_i·k_j，所以 q_i 一变，它这一行的每个得分都跟着变：dQ_i = Σ_j dS_ij·k_j = "
               "scale·Σ_j dZ_ij·k_j，即 {q} 看得到的键，各自乘以它的得分的梯度（被屏蔽的键不起作用：它的 dZ 是 0）。"
               "这里写的是第 {c} 列。",
    "keys": "S_ij = q_i·k_j，所以 k_j 一变，它这一列的每个得分都跟着变：dK_j = Σ_i dS_ij·q_i = "
            "scale·Σ_i dZ_ij·q_i，即看得到键 {key} 的查询，各自乘以它的得分的梯度。这里写的是第 {c} 列。",
    "values": "H_i = Σ_j a_ij·v_j，所以键 {key} 的值会传到每个给它权重的查询：dV_j = Σ_i a_ij·dH_i，"
              "这里写的是第 {c} 列。",
    "group": "键和值的头是共享的（分组查询注意力）：这个头服务第 {first} 到第 {last} 个查询头，它们的和要加在一起。",
    "group_two": "键和值的头是共享的（分组查询注意力）：这个头服务第 {first} 和第 {last} 个查询头，"
                 "它们的和要加在一起。",
    "grad_weight_query": "Q = X·W_Q，所以 dW_Q = Xᵀ·dQ：格子 ({r}, {col}) 是对所有词元求和，"
                         "投影输入的第 {r} 列乘以第 {head} 个头 dQ 的第 {c} 列。",
    "grad_weight_key": "K = X·W_K，所以 dW_K = Xᵀ·dK：格子 ({r}, {col}) 是对所有词元求和，"
                       "投影输入的第 {r} 列乘以第 {head} 个键头 dK 的第 {c} 列。",
    "grad_weight_value": "V = X·W_V，所以 dW_V = Xᵀ·dV：格子 ({r}, {col}) 是对所有词元求和，"
                         "投影输入的第 {r} 列乘以第 {head} 个值头 dV 的第 {c} 列。",
    "grad_weight_output": "Y = concat(H)·W_O，所以 dW_O = concat(H)ᵀ·dY：格子 ({r}, {col}) 是对所有词元求和，"
                          "并排的各头输出的第 {r} 列乘以 dY 的第 {col} 列。",
    "grad_inputs": "X 通过 Q、K 和 V 影响损失：dX = dQ·W_Qᵀ + dK·W_Kᵀ + dV·W_Vᵀ，各个头的列并排放在一起。"
                   "第 {q} 行第 {r} 列：每条路径一个和，再把它们相加。",
    "grad_inputs_queries": "有上下文时，X 只通过 Q 影响损失：dX = dQ·W_Qᵀ，各个头的列并排放在一起。"
                           "第 {q} 行第 {r} 列。",
    "more": "（还有 {count} 项）",
    "not_worked": "这个梯度经过了页面不写出算式的步骤（rope 的反向旋转、qk_norm、clip、温度、门控、归一化、"
                  "残差、偏置、sink、潜在投影）；它的值来自 attncli compute。",
    "spent": "为了让大文档的页面不至于太大，每张梯度表只按行写出前面一些格子的算式，这个格子排在它们之后；"
             "它的值来自 attncli compute。",
    "legend": "梯度：小于 0 为蓝色，大于 0 为橙色，|x| 在表中越大颜色越深；0 不着色。",
}
