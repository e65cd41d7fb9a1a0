"""Chinese for the messages of the computation, its plan and the pictures (attncli, attncli.core, .plan, .views)."""

CATALOGUE = {
    "q, k and v need at least 2 axes (rows × width); got {}, {}, {}":
        "q、k 和 v 至少需要 2 个轴（行 × 宽）；得到的是 {}、{}、{}",
    "q is {} but k is {}: queries and keys need the same width d_k": "q 是 {}，但 k 是 {}：查询和键需要相同的宽度 d_k",
    "k is {} but v is {}: keys and values need the same leading axes and rows":
        "k 是 {}，但 v 是 {}：键和值需要相同的前导轴和行数",
    "allowed is {} but q and k give {} queries × {} keys": "allowed 是 {}，但 q 和 k 给出 {} 个查询 × {} 个键",
    "q has {} heads but k and v have {}: grouped-query attention needs the key/value heads to divide the query he"
    "ads":
        "q 有 {} 个头，但 k 和 v 有 {} 个：分组查询注意力需要键值头数能整除查询头数",
    "{} overflow float64 at {}row {} ({}); the numbers in the document are too large to compute with":
        "{} 在{}第 {} 行（{}）超出了 float64 的范围；文档中的数太大，无法计算",
    "scores overflow float64 at {}row {} ({}); the numbers in the document are too large to compute with":
        "得分在{}第 {} 行（{}）超出了 float64 的范围；文档中的数太大，无法计算",
    "scaled scores overflow float64 at {}row {} ({}); the numbers in the document are too large to compute with":
        "缩放后的得分在{}第 {} 行（{}）超出了 float64 的范围；文档中的数太大，无法计算",
    "Add & Norm overflows float64 at row {} ({}): the variance of the residual (or γ) is too large to compute wit" "h":
        "Add & Norm 在第 {} 行（{}）超出了 float64 的范围：残差（或 γ）的方差太大，无法计算",
    "{} overflow float64 at row {} ({}): the {} of the row is too large to normalise":
        "{} 在第 {} 行（{}）超出了 float64 的范围：这一行的{}太大，无法归一化",
    "is {}, which has no log-sum-exp: {} is for a softmax of dot-product scores (FlashAttention's)":
        "是 {}，它没有 log-sum-exp：{} 用于点积得分的 softmax（FlashAttention 的）",
    "'{}' needs gradient: in the document (the dO of the backward pass)":
        "'{}' 需要文档中的 gradient:（反向传播的 dO）",
    "unknown {} {} ({})": "未知的{} {}（{}）",
    "{} is not a memory size (e.g. 4G, 512M or a number of bytes)": "{} 不是内存大小（例如 4G、512M 或字节数）",
    "{} is larger than any memory (2^62 bytes at most)": "{} 超过了任何内存（最多 2^62 字节）",
    "{} would need {}{}": "{} 需要 {}{}",
    "{} overflow float64 at {}row {} ({}): the {} of the row is too large to normalise":
        "{} 在{}第 {} 行（{}）超出了 float64 的范围：这一行的{}太大，无法归一化",
    "normalize: sum: the scores of query {} ('{}') in head {} sum to 0, so they cannot be divided by their sum (u"
    "se normalize: softmax)":
        "normalize: sum：头 {2} 中查询 {0}（'{1}'）的得分之和为 0，所以不能除以它们的和（请用 normalize: softmax）",
    "gradient: {} overflows float64 in the backward pass at {}; the gradient or the numbers in the document are to"
    "o large to compute with":
        "gradient: {} 在反向传播中（{}）超出了 float64 的范围；gradient 或文档中的数太大，无法计算",
    "scores overflow float64; the numbers in the document are too large to compute with":
        "得分超出了 float64 的范围；文档中的数太大，无法计算",
    "{}: this document has no {} to judge it against": "{}：本文档没有可用来判断它的 {}",
    "{} is {} but this document's is {} (or (1, …) as PyTorch's)":
        "{} 是 {}，但本文档的是 {}（或 PyTorch 那样的 (1, …)）",
    "the whole result, with the scores, scaled_scores and weights of {}, would need about {}; {}":
        "整个结果连同 {} 的得分、缩放后的得分和权重，大约需要 {}；{}",
    "even block by block, this document needs about {}": "即使分块计算，本文档也大约需要 {}",
    "{} of {} need about {}; use --only output or --only head_outputs to compute block by block without them":
        "{} 的 {} 大约需要 {}；请用 --only output 或 --only head_outputs 分块计算，不保留它们",
    "no font on this machine has {} of the picture's characters (a PNG would show empty boxes): install {}, or ex"
    "port .svg":
        "本机没有任何字体含有图中的 {} 个字符（PNG 会显示成空方框）：请安装{}，或导出 .svg",
    "writing .png needs the optional package resvg-py (a wheel, no system libraries): pip install 'attncli[png]'":
        "写出 .png 需要可选的包 resvg-py（一个 wheel，不需要系统库）：pip install 'attncli[png]'",
    "{}{}": "{}{}",
    # attncli.core.arguments: every array at its door (the Python API, check --against)
    "is None, not an array of numbers": "是 None，不是数组",
    "is a string, not an array of numbers": "是字符串，不是数组",
    "is bytes, not an array of numbers": "是字节串，不是数组",
    "is {}, not an array of numbers": "是 {}，不是数组",
    "is not an array of numbers (its rows are not all the same length)": "不是数组（它的各行长度不一）",
    "holds {} ({}); expected True/False values": "存放的是{}（{}）；应为 True/False 值",
    "holds {} ({}); expected real numbers (floating point or integers)": "存放的是{}（{}）；应为实数（浮点数或整数）",
    "is {}; expected at least {} axes": "是 {}；至少需要 {} 个轴",
    "is empty ({})": "是空的（{}）",
    "is {}; expected {}": "是 {}；应为 {}",
    "holds {} at [{}]; expected finite numbers": "在 [{1}] 处含有 {0}；应为有限的数",
    "is {}, not a number": "是 {}，不是数",
    "is {}; expected a finite number": "是 {}；应为有限的数",
    "holds itself (a mapping or list that contains itself cannot be read)":
        "包含它自己（包含自身的映射或列表无法读取）",
    "q is {} but k is {}: their leading axes do not match": "q 是 {}，但 k 是 {}：它们的前导轴不一致",
    "overflow float64: q·kᵀ (or the weights times v) is too large to compute with":
        "超出了 float64 的范围：q·kᵀ（或权重乘以 v）太大，无法计算",
    "{} overflows {}'s range (±{}) at {} ({}): the eager computation in {} holds inf there, as PyTorch's would (bf"
    "16 and fp32 reach ±3.4e38)":
        "{0} 在 {3}（{4}）超出了 {1} 的范围（±{2}）：{5} 的 eager 计算在那里得到 inf，PyTorch 也是如此"
        "（bf16 和 fp32 可达 ±3.4e38）",
}
