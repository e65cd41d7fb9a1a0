"""explain 的 ``backward`` 步骤的中文文字。"""

BACKWARD = {
    "title": "反向传播穿过 softmax",
    "table": "缩放后得分的梯度  dZ",
    "table_head": "第 {head} 个头缩放后得分的梯度  dZ",
    "seen_one": "一个键（权重是 1，dZ 是 0）",
    "seen_none": "任何键",
    "default_query": "没有给出 --query，而第 1 个查询 {query_one} 只看得到{seen}："
                     "这一步跟随第 {i} 个查询 {q}，它是第一个看得到两个或更多键的查询。",
    "body": "反向计算时，每个权重 a_ij 得到 dA_ij = dH_i·V_j，即这个权重变大时损失的变化量。"
            "softmax 让每一行的和保持为 1（减去 sink 的份额），"
            "一个权重要变大，同一行的其他权重就必须变小：传到得分上的是 a_ij·(dA_ij − D_i)，"
            "其中 D_i 是这一行 dA 按 a 加权的平均值。下面写出的是第 {head} 个头里查询 {q} 和它最看重的键 {key}。",
    "body_tie": "反向计算时，每个权重 a_ij 得到 dA_ij = dH_i·V_j，即这个权重变大时损失的变化量。"
                "softmax 让每一行的和保持为 1（减去 sink 的份额），"
                "一个权重要变大，同一行的其他权重就必须变小：传到得分上的是 a_ij·(dA_ij − D_i)，"
                "其中 D_i 是这一行 dA 按 a 加权的平均值。下面写出的是第 {head} 个头里查询 {q} 和键 {key}："
                "这一行有 {count} 个键的权重并列最大（按显示的位数都是 {w}），{key} 是其中之一。",
    "no_storage": "D_i 同时等于 dH_i 与 H_i 的点积，两行各 d_v 个数，用不到 n × m 的矩阵。"
                  "FlashAttention 这样的内核先算 D，保留前向计算中每一行的 log-sum-exp，"
                  "再用 Q、K 和它按块重建权重，a_ij = exp(z_ij − lse_i)；"
                  "所以反向计算和前向一样，从不同时保存全部权重。",
    "scale": "缩放在这里同样重要。有缩放时，这一行最大的权重是 {with_max}，Σ_j a_ij·(1 − a_ij)（softmax 导数的大小）"
             "是 {with_sum}；不缩放时最大的权重会是 {without_max}，这个和是 {without_sum}。一行越集中到一个键上，"
             "每个 a·(1 − a) 就越接近 0，传回 Q 和 K 的梯度就越少{why}。",
    "scale_little": "这里缩放的影响很小。有缩放时，这一行最大的权重是 {with_max}，"
                    "Σ_j a_ij·(1 − a_ij)（softmax 导数的大小）是 {with_sum}；不缩放时分别是 {without_max} 和 "
                    "{without_sum}。这些得分都很小（绝对值最大的是 {top}），所以有没有缩放这一行都离饱和很远，"
                    "传回 Q 和 K 的梯度差不多。得分更大时（它们随 d_k 增大），"
                    "缩放决定一行有多集中到一个键上、传回的梯度有多少{why}。",
    "scale_alike": "这里缩放的影响很小。有缩放时，这一行最大的权重是 {with_max}，"
                   "Σ_j a_ij·(1 − a_ij)（softmax 导数的大小）是 {with_sum}；不缩放时分别是 {without_max} 和 "
                   "{without_sum}：有没有缩放，传回 Q 和 K 的梯度都差不多。换成别的得分（得分往往随 d_k 增大），"
                   "缩放决定一行有多集中到一个键上、传回的梯度有多少{why}。",
    "why_sqrt": "：除以 √d_k 让随 d_k 增大的得分不会让投影得不到梯度",
    "why_other": "（这个文档的缩放是它自己给的数，不是 1/√d_k = {sqrt}：比 1/√d_k 小的缩放让一行更平，传回的梯度更多；"
                 "比它大的缩放让一行更尖，传回的梯度更少）",
    "latent": "这里的键和值不是逐个头投影出来的，而是由每个词元的一个潜在向量展开得到，所以梯度在反向时又汇合到一起："
              "键 {key} 在每个头里的 dk_nope 和 dv 都流回这个词元唯一的潜在向量 c_KV"
              "（dc = Σ_h [dk_nope,h | dv_h]·W_UKV,hᵀ），每个头对旋转部分的梯度都加到它们共用的那一个旋转键 k_r 上。"
              "用 --only dc_KV、dW_UKV、dW_DKV 可以看到每个词元的这些梯度。",
}
