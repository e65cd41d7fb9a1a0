"""今天的注意力中几个附加步骤的中文：``pre_norm``、``rope`` 和 ``residual``。"""

MODERN = {
    "pre_norm": {
        "title_rms": "预归一化：均方根归一化（RMSNorm）",
        "title_layer": "预归一化：层归一化（LayerNorm）",
        "body": "在投影之前，先对每一行输入单独做归一化（预归一化，pre-norm）：把它调整到标准的大小，"
                "这样无论前面各层让这些行变得多大，查询、键和值都由尺度相近的行算出。"
                "把归一化放在注意力之前、而不是放在残差相加之后，能让很深的模型稳定地训练；"
                "GPT-2 以来的大多数模型都这样做。",
        "rms": "这里用的是均方根归一化 RMSNorm（kind: rms，Llama、Mistral、T5 都用它）：每一行除以它的均方根 "
               "√(mean(x²) + ε)，ε = {eps}。与层归一化不同，它不减去均值，也没有 β，计算更省，训练效果却不差。",
        "layer": "这里用的是层归一化 LayerNorm（kind: layer）：先减去这一行的均值，再除以 √(var + ε)，ε = {eps}；"
                 "然后用 γ 缩放、用 β 平移每个数。",
        "gamma": "然后每个数再乘以各自的 γ（文档中的 gamma），也就是这一维学到的增益。",
        "gamma_ones": "这里的 γ 全是 1（默认值），所以不改变结果。",
        "cross": "只有输入被归一化：提供键和值的上下文原样使用（在编码器–解码器模型中，它已经归一化过了）。",
        "residual": "最后相加的残差（{res_step} 步骤）用的是原来的 {x0}，而不是 X̂：归一化只影响注意力看到的内容。",
    },
    "rope": {
        "shared_kv": "这里只旋转查询：键来自第 {kv_layer} 层（kv_from: {kv_from}），在那一层已按各自的位置旋转过。",
        "title": "旋转位置编码（RoPE）",
        "body": "旋转位置编码（RoPE）在投影之后、计算得分之前，把每个词元的位置写进它的查询和键里。"
                "每个头的数字两两配成一对，每一对 (a, b) 像平面上的一个点一样旋转一个角度 φ = p·f："
                "位置 p 越靠后，转得越多，每一对有各自的频率 f。旋转只改变一对数的方向，不改变它的长度，"
                "也不往各行上加任何东西。值不旋转。",
        "half": "这里第 i 维与第 i + {half} 维配成一对（从 1 数起，第一对是第 {a} 维和第 {b} 维）："
                "被旋转部分的前一半与后一半配对，Hugging Face 的 Llama、Mistral、Qwen 就是这样做的（rotate_half）。",
        "interleaved": "这里相邻的两维 2i 与 2i + 1 配成一对（从 1 数起，第一对是第 {a} 维和第 {b} 维），"
                       "RoFormer、GPT-J 和 Meta 最初的 Llama 代码是这样做的。",
        "base": "频率为 f_i = θ^(−2i/dims)，i = {i_range}，其中 θ = {base}，dims = {dims}："
                "f = {freqs}（单位：弧度/位置）。",
        "still": "这里每个频率都是 0，所以每个角度 φ = p·0 都是 0，什么也没有转：查询和键原样离开这一步，"
                 "得分里也看不出位置。（没有旋转的层，例如 Kimi Linear 的全注意力层，就是这样用频率为 0 的 rope "
                 "保留它共享的键部分 k_r 的。）",
        "given": "文档直接给出了频率：f = {freqs}（单位：弧度/位置；例如经过缩放的 RoPE，或检查点自带的 inv_freq）。",
        "spread": "频率高的对，相邻位置之间就转过很大的角度，能区分挨得很近的词元；频率低的对几乎不转，"
                  "要隔得很远才看得出差别。",
        "partial": "每个头的 {d_k} 个数中只有前 {dims} 个被旋转，其余 {rest} 个原样保留（部分旋转，"
                   "GPT-NeoX 和 Phi 这样做）。",
        "positions_default": "位置从 0 开始数：第一个词元在位置 0，所以 {q} 在 p = {p}，{k} 在 p′ = {pk}。",
        "positions_given": "位置由文档指定（positions: 或 context_positions:）：{q} 在 p = {p}，{k} 在 p′ = {pk}。",
        "worked": "下面几行把 {q} 的查询和 {k} 的键的第一对各旋转一次：φ = p·f，"
                  "然后 (a·cos φ − b·sin φ, b·cos φ + a·sin φ)；rot(φ) 表示这样转一次。",
        "why": "为什么要旋转？设查询的一对 q 在位置 p，键的一对 k 在位置 p′。旋转之后的点积 q′·k′ "
               "只取决于两个旋转后向量之间的夹角，而这个夹角等于原来的夹角再改变 (p − p′)·f。"
               "所以 q′·k′ 等于把 q 旋转 (p − p′)·f、k 完全不转时的点积：得分只看两个词元的距离 p − p′，"
               "而不管它们在文中的具体位置。最后两行用本文档的数字验证了这一点。",
        "interleaved_halves": "这里相邻的两维 2i 与 2i + 1 配成一对（从 1 数起，第一对是第 {a} 维和第 {b} 维），"
                              "但旋转后先写下所有对的第一个数，再写下所有对的第二个数"
                              "（DeepSeek V3 的 rope_interleave）："
                              "查询和键按同样的方式排列，所以得分与相邻配对的写法完全相同。",
        "partial_last": "每个头的 {d_k} 个数中只有最后 {dims} 个被旋转，前 {rest} 个原样保留"
                        "（DeepSeek 的多头潜在注意力：旋转部分排在其余部分之后）。",
        "base_scaled": "如果不缩放，频率应为 f_i = θ^(−2i/dims)，i = {i_range}，其中 θ = {base}，dims = {dims}："
                       "{rope_plain}。缩放之后变成 f = {freqs}（单位：弧度/位置）。",
        "scaling_linear": "线性缩放（位置插值）把每个频率都除以 factor = {rope_factor}：每个位置让各对转过的角度，"
                          "就像位置之间近了 {rope_factor} 倍一样小。",
        "scaling_dynamic": "动态 NTK 缩放在位置超过 L = {rope_L} 之后才增大基数：这里最大位置加 1 为 P = {rope_P}，"
                           "所以 θ 变为 θ·(factor·P/L − (factor − 1))^(dims/(dims − 2)) = {rope_grown}"
                           "（factor = {rope_factor}）：转得慢的对变慢得最多。",
        "scaling_dynamic_short": "动态 NTK 缩放只在位置超过 L = {rope_L} 之后才改变基数；这里 P = {rope_P}，"
                                 "所以频率仍是 θ 给出的那些。",
        "scaling_llama3": "Llama 3 的缩放按波长 λ_i = 2π/f_i（以位置计）给各对分类：波长大于 L/low_freq_factor = "
                          "{rope_long_wave} 的对（i = {rope_stretched}）除以 factor = {rope_factor}，波长小于 "
                          "L/high_freq_factor = {rope_short_wave} 的对（i = {rope_kept}）保持不变，介于两者之间的对"
                          "（i = {rope_blended}）取两者的混合。",
        "scaling_yarn": "YaRN（factor = {rope_factor}，L = {rope_L}）只拉伸转得慢的对。在训练时的 L 个位置上，"
                        "第 i 对转过 L·f_i/2π 圈（前几对为 {rope_turns}）：转过超过 β_fast = {rope_beta_fast} 圈的对"
                        "保持原频率（i = {rope_kept}），少于 β_slow = {rope_beta_slow} 圈的对除以 {rope_factor}"
                        "（i = {rope_stretched}），介于两者之间的对取混合（i = {rope_blended}）："
                        "f_i·(r_i/{rope_factor} + 1 − r_i)，斜坡 r_i = clamp((i − {rope_low})/({rope_high} − "
                        "{rope_low}), 0, 1)。",
        "scaling_longrope_long": "LongRoPE 把每个频率除以各自的因子。位置超出了 L = {rope_L}（P = {rope_P}），"
                                 "所以用 long_factor：e = {rope_e}。",
        "scaling_longrope_short": "LongRoPE 把每个频率除以各自的因子。位置没有超出 L = {rope_L}（P = {rope_P}），"
                                  "所以用 short_factor：e = {rope_e}。",
        "factor_given": "cos 和 sin 都乘以 a = {rope_a}（rope.attention_factor），查询和键各乘一次："
                        "每个得分的旋转部分因此乘以 a² = {rope_a2}。",
        "factor_yarn": "YaRN 还把 cos 和 sin 乘以 a = {rope_a}（0.1·ln factor + 1，或两个 mscale 项之比），"
                       "查询和键各乘一次：每个得分的旋转部分变为 a² = {rope_a2} 倍，"
                       "让 softmax 保持拉伸位置之后本会失去的锐度。",
        "factor_longrope": "LongRoPE 还把 cos 和 sin 乘以 a = √(1 + ln factor / ln L) = {rope_a}，查询和键各乘一次："
                           "每个得分的旋转部分变为 a² = {rope_a2} 倍。",
    },
    "qk_norm": {
        "shared_kv": "这里只对查询做归一化：键来自第 {kv_layer} 层（kv_from: {kv_from}），在那一层已经归一化过。",
        "title_rms": "QK 归一化：对查询和键做均方根归一化（RMSNorm）",
        "title_layer": "QK 归一化：对查询和键做层归一化（LayerNorm）",
        "formula_head": "每个头各自在它的 d_k 个数上",
        "formula_projection": "在一个词元的全部 h·d_k 个数上",
        "body": "QK 归一化在相乘之前，把每个查询和每个键各自归一化，Qwen3、Gemma 3、OLMo 2、Command R+、StableLM 2 "
                "和 Llama 4 都这样做。值保持不变。",
        "rms": "这里用的是均方根归一化 RMSNorm（kind: rms）：每一行除以它的均方根 √(mean(x²) + ε)，ε = {eps}，"
               "使这一行各数的均方约为 1。",
        "layer": "这里用的是层归一化 LayerNorm（kind: layer）：先减去这一行的均值，再除以 √(var + ε)，ε = {eps}。",
        "head": "它对每个头的 {d_k} 个数分别归一化（scope: head）：每个头的每一行查询和键都被调整到同样的大小。",
        "projection": "它在拆分成多个头之前，对一个词元的全部数一起归一化（scope: projection，OLMo 2 和 3 的做法）："
                      "一个词元的 {hd} 个查询数放在一起，{gd} 个键数放在一起。于是一个头的行可能比另一个头的长或短。",
        "before_rope": "它在投影之后、旋转之前进行：rope 再去旋转归一化后的数，旋转不改变长度。",
        "after_rope": "它在旋转之后进行（after_rope: true，Llama 4 的做法）：旋转后的查询和键被归一化，"
                      "得分用的是归一化后的查询和键。",
        "no_rope": "然后得分用归一化后的查询和键相乘。",
        "gamma": "然后每个数再乘以各自的 γ（gamma），也就是每一维学到的增益。",
        "gamma_per_head": "然后每个数再乘以各自的 γ（gamma），这里每个头有自己的一行 γ"
                          "（Command R+ 和 StableLM 2 这样存储）。",
        "gamma_ones": "这里的 γ 全是 1（默认值；Llama 4 的归一化根本没有权重），所以不改变结果。",
        "beta": "然后每个数再加上 β（beta）。",
        "bound": "得分是点积，所以 |q·k| ≤ ‖q‖·‖k‖。没有归一化时，长度由投影决定：第 {head} 个头里最长的查询 "
                 "‖q‖ = {q_len}，最长的键 ‖k‖ = {k_len}，所以缩放后的得分最大可达 {s} × {q_len} × {k_len} = {before}；"
                 "而且它随输入增大（输入加倍，上界变成四倍）。归一化之后，一行的长度不再取决于输入：最多为 "
                 "max|γ|·√{width}（再加 ‖β‖），这里 ‖q̂‖ ≤ {q_hat}，‖k̂‖ ≤ {k_hat}，所以缩放后的得分不会超过 "
                 "{s} × {q_hat} × {k_hat} = {after}。这里实际最大的是 {reached}。",
        "why": "为什么要限制它们？如果 logit 可以无限增大，softmax 就会把几乎全部权重放在一个键上，梯度随之消失；"
               "注意力 logit 这样失控的大模型会训练失败（损失突然飙升并发散）。"
               "有了 QK 归一化，注意力能有多尖锐只由 γ 决定。",
    },
    "residual": {
        "title": "残差连接",
        "body": "注意力的输出与这一层的输入相加（残差连接）：{r_formula}。这一层只需学会对每一行做些修改，"
                "原有信息原封不动地传下去，梯度也能顺畅地穿过很深的网络。",
        "post_norm": "相加之前，输出先自己做一次归一化（post_norm，{norm}），所以残差每次只加上大小稳定的行。",
        "sandwich": "再加上预归一化，注意力前后各有一次归一化：这就是 Gemma 2 的“三明治”结构。",
        "pre_norm": "相加之后不再做归一化：残差原样往下传，下一层在自己的投影之前会再做一次归一化（预归一化），"
                    "正如这里的 pre_norm 步骤。",
        "no_norm": "相加之后不再做归一化：残差原样往下传。",
        "scale": "输出在相加之前先乘以 α = {alpha}（Granite 的 residual_multiplier）："
                 "每一层只加上较小的改变，深层网络因此更稳定。",
    },
    "latent": {
        "title": "多头潜在注意力（DeepSeek V2/V3、Kimi K2）",
        "body": "这里的键和值不是直接从每个词元投影出来的。每个词元先被压缩成一个很短的潜在向量 c，共 r_kv = {r_kv} "
                "个数：取它那一行乘以 W_DKV 的前 r_kv 列，再经过 kv_norm 归一化。接下来的 d_r = {d_r} 列是一个旋转键 "
                "k_r。每个头再用 W_UKV 中属于自己的列展开同一个 c：得到 d_nope = {d_nope} 个键的数（k_nope）和 d_v "
                "个值的数。下面以第 {head} 个头为例，算出一个词元。",
        "query": "查询照常投影（weights.query）；每个头查询的最后 d_r 个数由 rope 旋转。",
        "query_lora": "查询也先经过一个潜在向量：c_Q = query_norm(x̂·W_DQ)，再乘 W_UQ。这只节省权重，不改变缓存。",
        "shared": "一个头的键是 (k_nope | k_r)：先是它自己不旋转的部分，然后是旋转键 k_r，而 k_r 对所有头都相同。"
                  "rope 只旋转最后这一段，所以位置信息只通过所有头共用的 d_r 个数进入，潜在向量 c 本身不含位置。",
        "cache": "为什么要这样设计？生成文本时，模型要为之前的每个词元保存用来构造键和值的东西。普通的多头注意力保存"
                 "每个头的键和值：这里每个词元 {full_formula} 个数。这一层只需保存 c 和旋转后的 k_r："
                 "{latent_formula} 个数。对 DeepSeek V3 来说，是 {v3_latent} 个数而不是 {v3_full} 个，"
                 "每一层都少了约 {v3_times} 倍。",
        "absorbed": "推理引擎从不展开键。因为 q_nope·k_nopeᵀ = q_nope·(c·W_UK)ᵀ = (q_nope·W_UKᵀ)·cᵀ，它们把 W_UK "
                    "事先并入查询（吸收后的查询 q_abs，共 r_kv + d_r 个数），再直接与缓存中的 (c | k_r′) 相乘。"
                    "最后几行验证了这一点：两种算法得到同一个得分。",
        "not_absorbed": "这个文档在投影之后还对 Q 和 K 做了归一化或截断，W_UK 无法并入查询：吸收形式不适用。",
    },
}
# kv_from：键已在它自己的那一层旋转过，下面的算式只旋转查询
MODERN["rope"]["why_shared"] = MODERN["rope"]["why"].removesuffix("最后两行用本文档的数字验证了这一点。")
