"""The texts of the lightning indexer's explained step (DeepSeek-V3.2's sparse attention), in English and Chinese."""

TEXTS = {
    "en": {
        "title": "The indexer: which keys query {q} keeps",
        "body": "Before the attention, DeepSeek-V3.2's lightning indexer scores every key this query may see with "
                "its own small heads (H = {H}, each d = {d} numbers wide, with one key per token shared by all of "
                "them): I = Σ_h w_h·H^(−1/2)·ReLU(d^(−1/2)·q_h·k). Each head votes only when its query and the key "
                "agree (ReLU), with a weight w_h the token gives it.",
        "all": "Query {q} may see {seen} keys, no more than top_k = {top_k}: it keeps them all, and its attention "
               "is the dense one.",
        "some": "Query {q} may see {seen} keys and keeps the top_k = {top_k} with the largest I ({kept}); the "
                "others are masked in the attention below, exactly as a mask matrix would mask them. Equal values "
                "are ranked by the lower key index first.",
        "ties": "{ties} of the keys left out have the same I as the last key kept: the cut splits a tie, and "
                "another implementation (torch.topk does not say which of tied keys it returns) may keep another "
                "of them.",
        "dropped": "Under full attention (the document's mask alone) head {head} would have given the dropped keys "
                   "{share} of query {q}'s weight ({percent}): what the sparse attention gives up for this query.",
        "backward": "The selection has no gradient (the model runs the indexer under no_grad, and top-k has no "
                    "derivative): the backward pass treats it as a fixed mask.",
        "kept_line": "kept (rank {rank})", "dropped_line": "dropped", "line_masked": "{token}: masked by the document",
        "line": "{token}: {formula}   →   {what}",
        "sep": ", ", "table": "Index scores  I (rows: queries, columns: keys)",
        "queries": "Indexer queries of query {i}, one row per indexer head",
    },
    "zh": {
        "title": "索引器：查询 {q} 保留哪些键",
        "body": "在注意力之前，DeepSeek-V3.2 的闪电索引器（lightning indexer）用它自己的小头（H = {H} 个，每个 "
                "d = {d} 个数，所有头共用每个词元的一个键）给这个查询能看到的每个键打分："
                "I = Σ_h w_h·H^(−1/2)·ReLU(d^(−1/2)·q_h·k)。每个头只在它的查询与键一致时投票（ReLU），"
                "权重 w_h 由该词元给出。",
        "all": "查询 {q} 能看到 {seen} 个键，不多于 top_k = {top_k}：它全部保留，它的注意力就是稠密注意力。",
        "some": "查询 {q} 能看到 {seen} 个键，保留 I 最大的 top_k = {top_k} 个（{kept}）；其余的键在下面的注意力中"
                "被遮蔽，与掩码矩阵遮蔽它们完全一样。I 相等时，键的下标小的排在前面。",
        "ties": "被舍弃的键中有 {ties} 个与最后保留的键 I 相同：截断处出现并列，另一种实现（torch.topk 不规定并列时"
                "返回哪个键）可能保留其中另一个。",
        "dropped": "在完全注意力下（只用文档自己的掩码），头 {head} 会把查询 {q} 的 {share} 权重（{percent}）给被舍弃的"
                   "键：这是稀疏注意力为这个查询放弃的部分。",
        "backward": "这个选择没有梯度（模型在 no_grad 下运行索引器，top-k 不可导）：反向传播把它当作固定的掩码。",
        "kept_line": "保留（第 {rank} 名）", "dropped_line": "舍弃", "line_masked": "{token}：被文档的掩码遮蔽",
        "line": "{token}：{formula}   →   {what}",
        "sep": "、", "table": "索引得分  I（行：查询，列：键）",
        "queries": "查询 {i} 的索引器查询，每个索引器头一行",
    },
}
