"""The English words of explain's step ``backward``."""

BACKWARD = {
    "title": "The backward pass through the softmax",
    "table": "Gradient of the scaled scores  dZ",
    "table_head": "Gradient of the scaled scores of head {head}  dZ",
    "seen_one": "one key alone (its weight is 1 and its dZ 0)",
    "seen_none": "no key",
    "default_query": "No --query was given, and query 1, {query_one}, sees {seen}: "
                     "this step follows query {i}, {q}, the first that sees two keys or more.",
    "body": "Going backwards, each weight a_ij receives dA_ij = dH_i·V_j, how much the loss would change if that "
            "weight grew. The softmax keeps every row summing to 1 (less a sink's share), so one weight can only grow "
            "if the others of its row shrink: what reaches the score is a_ij·(dA_ij − D_i), where D_i is the row's "
            "average of dA weighted by a. Below, for query {q} of head {head} and the key it weighs most, {key}.",
    "body_tie": "Going backwards, each weight a_ij receives dA_ij = dH_i·V_j, how much the loss would change if that "
                "weight grew. The softmax keeps every row summing to 1 (less a sink's share), so one weight can only "
                "grow if the others of its row shrink: what reaches the score is a_ij·(dA_ij − D_i), where D_i is "
                "the row's average of dA weighted by a. Below, for query {q} of head {head} and {key}: {count} keys "
                "share the row's largest weight, {w} at the decimals shown, and this is one of them.",
    "no_storage": "D_i is also the dot product of dH_i with H_i, two rows of d_v numbers: it needs no n × m matrix. "
                  "Kernels (FlashAttention) compute D first, keep each row's log-sum-exp from the forward pass, and "
                  "then rebuild each tile of weights from Q, K and it, a_ij = exp(z_ij − lse_i), so the backward pass, "
                  "like the forward, never stores all the weights at once.",
    "scale": "The scale matters here too. With it, this row's largest weight is {with_max} and Σ_j a_ij·(1 − a_ij), "
             "the size of the softmax's derivative, is {with_sum}; with the unscaled scores the largest weight would "
             "be {without_max} and the sum {without_sum}. The more a row saturates towards one key, the closer every "
             "a·(1 − a) is to 0 and the less gradient reaches Q and K{why}.",
    "scale_little": "Here the scale changes little. With it, this row's largest weight is {with_max} and Σ_j "
                    "a_ij·(1 − a_ij), the size of the softmax's derivative, is {with_sum}; with the unscaled scores "
                    "{without_max} and {without_sum}. The scores are small (the largest in size is {top}), so the "
                    "row is far from saturated either way and about as much gradient reaches Q and K. With larger "
                    "scores, as they grow with d_k, the scale decides how far a row saturates towards one key and how "
                    "little gradient gets through{why}.",
    "scale_alike": "Here the scale changes little. With it, this row's largest weight is {with_max} and Σ_j "
                   "a_ij·(1 − a_ij), the size of the softmax's derivative, is {with_sum}; with the unscaled scores "
                   "{without_max} and {without_sum}: about as much gradient reaches Q and K either way. With other "
                   "scores, as they grow with d_k, the scale decides how far a row saturates towards one key and how "
                   "little gradient gets through{why}.",
    "why_sqrt": ": dividing by √d_k keeps scores that grow with d_k from starving the projections of their gradient",
    "why_other": " (this document's scale is its own number, not 1/√d_k = {sqrt}: a scale below 1/√d_k flattens the "
                 "rows and lets more gradient through, one above it sharpens them and lets less)",
    "latent": "Here the keys and values are not projected head by head but expanded from one latent per token, so "
              "the gradients meet again on the way back: every head's dk_nope and dv of key {key} flow into that "
              "token's one latent c_KV (dc = Σ_h [dk_nope,h | dv_h]·W_UKV,hᵀ), and every head's gradient of the "
              "rotated part is added into the one rotary key k_r they share. --only dc_KV, dW_UKV, dW_DKV shows them "
              "for every token.",
}
