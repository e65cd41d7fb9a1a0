"""The English words of explain's step ``differential`` (differential attention, DiffLlama)."""

DIFFERENTIAL = {
    "title": "Differential attention: one softmax minus another",
    "body": "Here the heads work in pairs: head {first} and head {second} share one output. Each computed its own "
            "softmax above (steps 4 and 5), and the pair's weights are their difference, w = a₁ − λ·a₂ with λ = "
            "{lam}. Attention that both heads give a key alike (the common-mode noise of the paper) cancels out; what "
            "head {first} sees and head {second} does not stays. The weights may now be negative, and a row no longer "
            "sums to 1. They mix the two heads' values side by side, [v₁ | v₂], {width} numbers per key.",
    "norm": "Each row of the pair's output is then divided by its root mean square (an RMSNorm with no γ) and "
            "multiplied by 1 − λ_init = {scale}. Its first half is head {left} of the head outputs H and its second "
            "half head {right}: the output projection reads them as it reads any heads.",
    "sum_note": "With differential attention this plain mix of head {head}'s own values is not yet its output: the "
                "differential step combines it with its pair.",
    "matrix_note": "With differential attention the head outputs H below are not the weights times V: each pair's "
                   "normalised output Ô (the differential step) fills two of them, pair p's first d_v numbers as head "
                   "2p − 1 and its last d_v as head 2p.",
    "backward": "Going backwards, each weight a_ij of head {head} receives dA_ij = {sign}dW_ij, where "
                "dW = dO·[v₁ | v₂]ᵀ is the gradient of the combined weights of its pair (heads {first} and "
                "{second}), dO coming back through the pair's RMSNorm. The softmax keeps every row summing to 1, so "
                "what reaches the score is a_ij·(dA_ij − D_i), D_i the row's average of dA weighted by a. With "
                "differential attention D_i is no longer dH_i·H_i: it is computed from the row of weights. Below, for "
                "query {q} and the key it weighs most, {key}.",
}
