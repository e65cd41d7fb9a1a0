"""The texts of the delta rule's explained step (attncli explain on a linear: document), in English and Chinese."""

TEXTS = {
    "en": {
        "title": "The delta rule at token {t} ({token}), value head {j}: how the state S (d_k × d_v = {d_k} × {d_v}) "
                 "changes",
        "before": "S before token {t}: the state token {p} left (S₀ for the first token)",
        "first": "S before the first token: S₀ (zeros without initial_state)",
        "decay": "1. Decay: S ← e^g·S with g = {g} (e^g = {e}): every number of the state keeps {e} of itself",
        "decay_kda": "1. Decay, per key channel: S ← diag(e^g)·S; row i of S is multiplied by e^(g_i): {e}",
        "read": "2. Read: Sᵀk̂ = {read}: what the decayed state already predicts for this token's key",
        "correct": "3. Correct: u = β·(v − Sᵀk̂) = {beta} · ({v} − {read}) = {u}: only the part the state got wrong",
        "write": "4. Write: S ← S + k̂·uᵀ: the key's direction now holds u (k̂ = {k})",
        "after": "S after token {t} (compute's state[{h}][{i}])",
        "outer": "k̂·uᵀ, what token {t} adds",
        "out": "5. Read out: o = Sᵀq̂ = {o} (q̂ = {q}, scaled by {scale}): the head's output at token {t}",
        "decayed": "S after the decay",
    },
    "zh": {
        "title": "delta 规则在词元 {t}（{token}）、值头 {j}：状态 S（d_k × d_v = {d_k} × {d_v}）如何变化",
        "before": "词元 {t} 之前的 S：词元 {p} 留下的状态（第一个词元用 S₀）",
        "first": "第一个词元之前的 S：S₀（没有 initial_state 时为零）",
        "decay": "1. 衰减：S ← e^g·S，g = {g}（e^g = {e}）：状态的每个数保留自身的 {e}",
        "decay_kda": "1. 按键通道衰减：S ← diag(e^g)·S；S 的第 i 行乘以 e^(g_i)：{e}",
        "read": "2. 读取：Sᵀk̂ = {read}：衰减后的状态对这个词元的键已经给出的预测",
        "correct": "3. 纠正：u = β·(v − Sᵀk̂) = {beta} · ({v} − {read}) = {u}：只写入状态预测错的部分",
        "write": "4. 写入：S ← S + k̂·uᵀ：键的方向现在存着 u（k̂ = {k}）",
        "after": "词元 {t} 之后的 S（compute 的 state[{h}][{i}]）",
        "outer": "k̂·uᵀ，词元 {t} 加上的量",
        "out": "5. 读出：o = Sᵀq̂ = {o}（q̂ = {q}，已乘以 {scale}）：该头在词元 {t} 的输出",
        "decayed": "衰减之后的 S",
    },
}
