"""The page's words beside a gradient's arithmetic (English): why each line holds, in explain --step backward's terms.

One entry per gradient; ``{…}`` are filled with the cell's tokens and the document's numbers. ``D`` and ``dZ``
reuse explain's own sentences (:mod:`attncli.teach.texts.backward_en`).
"""

from attncli.teach.texts.backward_en import BACKWARD

GRADS = {
    "grad_output": "The document gives dY: the loss is L = Σ gradient ⊙ Y, so dL/dY is the gradient itself.",
    "grad_head_outputs": "Y writes the heads' outputs side by side, so head {head}'s dH is its own columns of dY "
                         "(column {c} of the head is column {col} of Y).",
    "grad_head_outputs_wo": "Y = concat(H)·W_O, so dH = dY·W_Oᵀ: row {q} of dY times row {col} of W_O, the row "
                            "that multiplies head {head}'s column {c}.",
    "grad_weights": "Going backwards, each weight a_ij receives dA_ij = dH_i·V_j, how much the loss would change if "
                    "that weight grew: here query {q}'s dH times key {key}'s value, term by term.",
    "delta": "D_i is the row's average of dA weighted by a, Σ_j a_ij·dA_ij. " + BACKWARD["no_storage"],
    "grad_scaled_scores": "The softmax keeps every row summing to 1 (less a sink's share), so one weight can only "
                          "grow if the others of its row shrink: what reaches the score is a_ij·(dA_ij − D_i), where "
                          "D_i is the row's average of dA weighted by a. Here query {q} and key {key}.",
    "masked": "Key {key} is masked for query {q}: its weight is exactly 0, so dZ = 0·(dA − D) = 0, whatever dA is. "
              "No gradient reaches a masked score: the mask is fixed, not learned, and the loss does not depend on a "
              "score whose weight is 0.",
    "grad_scores": "The softmax reads Z = scale·S (scale {scale}), so every dS is dZ times the scale. The same factor "
                   "comes back in dQ and dK: without it the scores, and with them how saturated each row is, would "
                   "grow with d_k.",
    "grad_scores_cap": "The softmax reads Z = c·tanh(scale·S / c) (scale {scale}, soft cap c = {cap}), so dS is dZ "
                       "times its derivative, scale·(1 − tanh²(scale·S / c)): a score near the cap passes almost "
                       "no gradient.",
    "queries": "S_ij = q_i·k_j, so moving q_i moves every score of its row: dQ_i = Σ_j dS_ij·k_j = "
               "scale·Σ_j dZ_ij·k_j, the keys {q} sees, each weighted by the gradient of its score (a masked key "
               "adds nothing: its dZ is 0). Written for column {c}.",
    "keys": "S_ij = q_i·k_j, so moving k_j moves every score of its column: dK_j = Σ_i dS_ij·q_i = "
            "scale·Σ_i dZ_ij·q_i, the queries that see key {key}, each weighted by the gradient of its score. "
            "Written for column {c}.",
    "values": "H_i = Σ_j a_ij·v_j, so the value of key {key} reaches every query that weighs it: dV_j = Σ_i a_ij·dH_i, "
              "written for column {c}.",
    "group": "The key and value heads are shared (grouped-query): this one serves query heads {first} to {last}, "
             "and their sums add up.",
    "group_two": "The key and value heads are shared (grouped-query): this one serves query heads {first} and {last}, "
                 "and their sums add up.",
    "grad_weight_query": "Q = X·W_Q, so dW_Q = Xᵀ·dQ: cell ({r}, {col}) sums, over the tokens, column {r} of the "
                         "projection's input times column {c} of head {head}'s dQ.",
    "grad_weight_key": "K = X·W_K, so dW_K = Xᵀ·dK: cell ({r}, {col}) sums, over the tokens, column {r} of the "
                       "projection's input times column {c} of key head {head}'s dK.",
    "grad_weight_value": "V = X·W_V, so dW_V = Xᵀ·dV: cell ({r}, {col}) sums, over the tokens, column {r} of the "
                         "projection's input times column {c} of value head {head}'s dV.",
    "grad_weight_output": "Y = concat(H)·W_O, so dW_O = concat(H)ᵀ·dY: cell ({r}, {col}) sums, over the tokens, "
                          "column {r} of the heads' outputs side by side times column {col} of dY.",
    "grad_inputs": "X reaches the loss through Q, K and V: dX = dQ·W_Qᵀ + dK·W_Kᵀ + dV·W_Vᵀ, every head's columns "
                   "side by side. Row {q}, column {r}: one sum for each path, then their total.",
    "grad_inputs_queries": "With a context, X reaches the loss through Q alone: dX = dQ·W_Qᵀ, every head's columns "
                           "side by side. Row {q}, column {r}.",
    "more": "(and {count} more terms)",
    "not_worked": "This gradient passes through a stage whose arithmetic the page does not write out (rope's turn "
                  "back, qk_norm, clip, the temperature, a gate, a norm, the residual, a bias, a sink, the latent "
                  "projections); its value is attncli compute's.",
    "spent": "To keep a large document's page small, each gradient table writes out the arithmetic of its first "
             "cells only, row by row, and this one comes after them; its value is attncli compute's.",
    "legend": "Gradients: blue below 0, orange above, the deeper the larger |x| in the table; 0 uncoloured.",
}
