"""The texts of lightning attention's explained step (attncli explain on a ``kind: lightning`` document), in English
and Chinese."""

TEXTS = {
    "en": {
        "title": "Lightning attention at token {t} ({token}), head {j}: o = Σ over tokens i ≤ {t} of "
                 "e^(−s·({t} − i))·(q·k_i)·v_i, with the head's slope s = {s} (each step keeps e^(−s) = {e})",
        "earlier": "tokens 1 to {last}: {count} earlier terms, summed: {sum}",
        "earlier_one": "token 1: the one earlier term: {sum}",
        "earlier_two": "tokens 1 and 2: 2 earlier terms, summed: {sum}",
        "term": "token {i} ({token}): q·k = {qk}, decay e^(−s·{dist}) = {decay}, weight {w}; {w}·v = {w}·{v} "
                "= {term}",
        "initial": "S₀: e^(−s·{t})·S₀ᵀq = {e}·S₀ᵀq = {term}, what the state before the first token adds",
        "sum": "Sum: o = {o}, the head's output at token {t} (compute's head_outputs)",
        "state": "The same through the state: S after token {t} (compute's state[{h}][{i}]; each token "
                 "S ← {e}·S + k·vᵀ), and Sᵀq = {o}",
    },
    "zh": {
        "title": "闪电注意力在词元 {t}（{token}）、头 {j}：o = 对所有 i ≤ {t} 求和 e^(−s·({t} − i))·(q·k_i)·v_i，"
                 "该头的斜率 s = {s}（每一步保留 e^(−s) = {e}）",
        "earlier": "词元 1 到 {last}：{count} 个更早的项，其和：{sum}",
        "earlier_one": "词元 1：更早的那一项：{sum}",
        "earlier_two": "词元 1 和 2：2 个更早的项，其和：{sum}",
        "term": "词元 {i}（{token}）：q·k = {qk}，衰减 e^(−s·{dist}) = {decay}，权重 {w}；{w}·v = {w}·{v} = {term}",
        "initial": "S₀：e^(−s·{t})·S₀ᵀq = {e}·S₀ᵀq = {term}，第一个词元之前的状态加上的量",
        "sum": "求和：o = {o}，该头在词元 {t} 的输出（compute 的 head_outputs）",
        "state": "通过状态得到同样的结果：词元 {t} 之后的 S（compute 的 state[{h}][{i}]；每个词元 S ← {e}·S + k·vᵀ），"
                 "Sᵀq = {o}",
    },
}
