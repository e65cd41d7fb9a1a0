"""``attncli check``'s English words: the report's lines, and one sentence per slip (what was done, what to do instead).

The slips are the stages' declared variants (:mod:`attncli.core.variants`) and those of
:mod:`attncli.teach.check.slips` and :mod:`attncli.teach.check.modern`, by name; the same keys exist in
:mod:`attncli.teach.texts.check_zh`.
"""

CHECK = {
    "title": "Your answer, step by step (tolerance {tol})", "correct": "correct", "wrong": "wrong: {problem}",
    "wrong_at": "wrong at {cell}: expected {expected}, yours {given}", "hint": "hint: {hint}",
    "cell": {"pair": "pair {i}", "head": "head {i}", "row": "row {i}", "column": "column {i}", "sep": ", ",
             "token": " ('{token}')", "token_i": "token {i}", "chunk": "block {i}"},
    "sep": ", ",
    "problem": "has shape {given}, but {key} here has shape {expected}",
    "one_number": "one number",
    "transposed": "it looks transposed",
    "left_empty": "only a masked scaled score may be left null (or −inf); every other cell has a number (a masked "
                  "key's weight is 0)",
    "other_row": "these are the numbers of query {row} (“{token}”), not of query {query}: check which row you worked "
                 "on, or write query: {row}",
    "other_token_row": "these are the numbers of token {row} (“{token}”), not of token {query}: check which row you "
                       "worked on, or write query: {row}",
    "other_head": "these are the numbers of head {head}, not of head {given}: check which head you worked on, or write "
                  "head: {head}",
    "carried": "this is what follows from your own {upstream} when the rest is done right: fixing {upstream} is "
               "enough",
    "row_match": "{key}: one row given without query:, so it was compared with every row: it is {row}.",
    "row_closest": "{key}: one row given without query: matches no row, so it was compared with the closest, {row}.",
    "row_match_heads": "{key}: one row given without head:, so it was compared with the query's row in every head: "
                       "it is {row}.",
    "row_closest_heads": "{key}: one row given without head:, so it was compared with the query's row in every "
                         "head: it matches none, the closest is {row}.",
    "row_match_context": "{key}: one row given; its rows are the context's tokens, not the queries' that query: "
                         "counts, so it was compared with every row: it is {row}.",
    "row_closest_context": "{key}: one row given; its rows are the context's tokens, not the queries' that query: "
                           "counts, so it was compared with every row: it matches none, the closest is {row}.",
    "none_fits_right": "No known slip explains {key} (step {step}), the first wrong quantity: work it out again from "
                       "there. Right: {keys}.",
    "none_fits_alone": "No known slip explains {key} (step {step}), the first wrong quantity: work it out again from "
                       "there. None of the other quantities given is right.",
    "masked_cell": "the unmasked cells are right; a masked key's scaled score has no number to give (softmax leaves it "
                   "out): leave it null, or write −inf",
    "concat": "these are the heads side by side (concat(H₁ … H_h)); head_outputs gives one matrix per head, "
              "head 1 first",
    "none_fits_only": "No known slip explains {key} (step {step}): work it out again step by step, or give the "
                      "quantities before it too, so that the first wrong one can be found.",
    "same_slip": "the same slip as {key} above",
    "transposed_square": "these are the right numbers with rows and columns swapped: write the matrix as the tables "
                         "show it, one row per token",
    "one_head": "this is head {head}'s output alone (H_{head}): the output puts all {h} heads side by side, "
                "concat(H₁ … H_{h}){projected}",
    "projected": ", then multiplies by W_O",
    "heads_summed": "these are the heads' outputs {how}: the heads are put side by side, concat(H₁ … H_{h}), one row "
                    "of h·d_v = {width} numbers per token{projected}",
    "added": "added up", "averaged": "averaged",
    "heads_stacked": "these are the heads' outputs stacked one under another ({rows} rows): they go side by side, one "
                     "row per token, concat(H₁ … H_{h}){projected}",
    "none_fits_carried": "No known slip explains {key} (step {step}), the first wrong quantity: work it out again from "
                         "there. What you gave for {after} follows from it correctly and comes right with it.",
    "read_step": "Read {where} with your numbers beside it: {command}",
    "step_number": "step {step}", "step_extra": "step {name}", "step_other": "step {step}",
    "tell_apart": "Two slips give the numbers you wrote. To tell them apart, work out {key} at {cell}: it is {mine} "
                  "with the first ({first}), {theirs} with the second ({second}).",
    "rounded_answer": "these are right as far as the decimals you wrote go, but the tolerance {tol} asks for more: "
                      "keep more decimals, or check with --tol {suggest}",
}

SLIPS = {
    "or_same": "{first}; or, giving the same numbers: {second}",
    # step 4: the scale
    "scale_left_out": "the scale was left out: multiply every score by {scale} before softmax",
    "scale_added": "the scores were divided by {root} although this document says scale: none: give softmax the "
                   "scores as they are",
    "scale_twice": "the scale was applied twice: multiply every score by {scale} once",
    "scale_twice_dk": "the scale was applied twice (each score divided by d_k = {d_k}, not by {root}): divide every "
                      "score by {root} once",
    "scale_twice_dk_model": "the scores were divided by {d_k}, which is d_k (the scale applied twice) and also "
                            "√d_model = √{d_model} (the width of the inputs): divide every score by √d_k = {root}, one "
                            "head's width",
    "scale_inverted": "the scores were multiplied by √d_k instead of divided by it: divide every score by {root}",
    "scale_d_model": "the scores were divided by √d_model = √{d_model}, the width of the inputs: divide them by "
                     "√d_k = {root}, the width of one head's queries and keys",
    "scores_scaled": "these are already scaled: the scores are Q·Kᵀ before scaling (the scaled ones go under "
                     "scaled_scores)",
    # step 4: the dot products
    "not_transposed": "K was not transposed: the scores are Q·Kᵀ, each query row dotted with each key row",
    "scores_transposed": "the scores were taken the other way round, K·Qᵀ (row i holding q_j·k_i): row i of Q·Kᵀ holds "
                         "query i against every key, q_i·k_j",
    # step 5: softmax and the mask
    "softmax_axis": "softmax ran down the columns (over queries); it runs along each row, over the keys",
    "not_divided": "the exponentials were not divided by their sum: divide each e^z by its row's total, so that the "
                   "weights add up to 1",
    "sum_not_softmax": "each score was divided by its row's sum without taking e^z first: softmax divides each "
                       "exponential e^z by the sum of the row's exponentials",
    "mask_ignored": "the mask was left out: the masked keys get weight 0, so leave them out of the softmax",
    "mask_zero": "the masked scores were set to 0 instead of −∞, so each still took a share e⁰ = 1: leave the masked "
                 "keys out of the softmax altogether",
    "mask_after": "the masked weights were set to 0 after softmax, so the others no longer add up to 1: mask the "
                  "scores before softmax",
    "causal_strict": "the causal mask hid each query's own key too: query i sees the keys 1 … i, itself included",
    "causal_future": "the causal mask was turned round (each query saw the keys after it): query i sees the keys "
                     "1 … i and none after it",
    "rounded_half": "the weights were rounded too early (to 0, 0.5 or 1): keep full precision until the end",
    "rounded_1": "the weights were rounded too early (to 1 decimal): keep full precision until the end",
    "rounded_2": "the weights were rounded too early (to 2 decimals): keep full precision until the end",
    # steps 6 and 7: the weighted sum
    "times_keys": "the weights multiplied the keys instead of the values: the output is Σ_j a_j·v_j, with the rows "
                  "of V",
    "left_out_one": "the weighted value of “{token}” (a{j}·v{j}) was left out of the sum: add the weighted values of "
                    "every key",
    "weights_column": "the weights were read down a column (Aᵀ·V): output i mixes the values with row i of the "
                      "weights, the weights of query i",
    # step 8 and the projections
    "w_o_left_out": "the output projection W_O was left out: multiply the heads put side by side by W_O",
    "w_o_left_out_b_o_kept": "the output projection W_O was left out (only b_O was added): multiply the heads put "
                             "side by side by W_O, then add b_O",
    "bias_left_out": "the bias {names} was left out: add it after its product, x·W + b",
    "biases_left_out": "the biases {names} were left out: add each after its product, x·W + b",
    "weights_as_wx": "the weights {names} were applied as W·x (PyTorch's nn.Linear layout): attncli uses row vectors, "
                     "x·W (transpose PyTorch weights)",
    "heads_split": "the heads were split wrongly (columns taken in turn): head i takes the i-th block of d_k "
                   "consecutive columns",
    "heads_order": "the heads were put side by side in the wrong order: head 1's output comes first, then head 2's, "
                   "and so on",
    "keys_from_inputs": "the keys and values were made from the inputs X: in cross-attention they come from the "
                        "context, K = C·W_K and V = C·W_V",
    # today's attention
    "rope_interleaved": "the pairs were taken interleaved (2i, 2i + 1); this document pairs the halves, i with "
                        "i + dims/2 (style: half, rotate_half)",
    "rope_halves": "the pairs were taken as halves (i, i + dims/2); this document pairs neighbours, 2i with 2i + 1 "
                   "(style: interleaved)",
    "rope_from_1": "the positions were counted from 1; they count from 0 (the first token is at position 0 and is "
                   "not turned at all)",
    "rope_forgotten": "the rotation was forgotten: with rope the scores are Q′·K′ᵀ, the queries and keys turned by "
                      "their positions",
    "rope_reversed": "the pairs were turned the wrong way (by −φ): turn each pair (a, b) to (a·cos φ − b·sin φ, "
                     "b·cos φ + a·sin φ)",
    "rope_queries_only": "only the queries were turned: rope turns the keys too, each by its own position",
    "rope_values": "the values were rotated too: rope turns only the queries and the keys; V stays as projected",
    "rope_as_projected": "these are the rotated queries and keys: queries and keys are the projections before rope "
                         "(the turned ones go under queries_rotated and keys_rotated)",
    "temperature_left_out": "the query temperature was left out: with query_temperature each query row is multiplied "
                            "by τ = 1 + attn_scale·ln(1 + ⌊(p + 1)/floor_scale⌋) before the scores",
    "gate_left_out": "the output gate was left out: each head's output is multiplied by G = σ(X̂·W_G + b_G) before "
                     "the output projection",
    "gate_after_output": "the gate was applied after the output projection: it multiplies each head's output H, "
                         "Y = concat(H ⊙ G)·W_O + b_O, not Y itself",
    "residual_scale_left_out": "the residual's scale was left out: the output is multiplied by {alpha} before it "
                               "is added, R = X + {alpha}·Y",
    "softcap_left_out": "the soft cap was left out: each scaled score z becomes {c}·tanh(z / {c})",
    "rope_factor_once": "the attention factor a = {a} was put on cos and sin once: it multiplies the rotated query "
                        "and the rotated key alike, so the rotated part of each score grows by a² = {a2}, not by a",
    "clip_left_out": "Q, K and V were not clamped: with clip_qkv every number of them beyond ±{c} becomes ±{c} "
                     "before the scores",
    "max_logit_unscaled": "the largest logit was taken of the scores S before the scale: the logit entering the "
                          "softmax is Z = scale·S",
    "v_norm_left_out": "the values were not normalised: with v_norm each value row is divided by its root mean square, "
                       "v̂ = v / √(mean(v²) + ε), before the weights mix them",
    "qk_clip_gamma_uncapped": "γ = τ / S_max was used for every head: a head whose S_max is not above τ = {tau} keeps "
                              "γ = 1 (QK-Clip only ever shrinks W_Q and W_K)",
    "sink_left_out": "the sink was left out of the denominator: with sinks each row's softmax divides by Σ e^z + e^s, "
                     "so its weights sum to less than 1 (the rest is the sink's share)",
    "qk_norm_left_out": "Q and K were not normalised: with qk_norm every query and every key goes through {norm} "
                        "before the scores",
    "qk_norm_after_rope": "the norm came after the rotation: here qk_norm normalises Q and K before rope, and rope "
                          "turns the normalised numbers",
    "qk_norm_before_rope": "the norm came before the rotation: with after_rope: true qk_norm normalises the rotated "
                           "Q′ and K′ (as Llama 4 does)",
    "qk_norm_key_gamma": "the queries were normalised with the keys' γ: qk_norm.gamma.query is for the queries, "
                         "qk_norm.gamma.key for the keys",
    "pre_norm_left_out": "the inputs were not normalised first: with pre_norm the projections multiply X̂ = norm(X), "
                         "not X",
    "score_bias_left_out": "the score bias was left out: it is added to every scaled score before softmax",
    "mask_inverted": "the mask was read the other way round: under this document's convention the keys you weighted "
                     "are the masked ones (convention: allow means 1 = may attend; block, as nn.MultiheadAttention, "
                     "means 1 = masked)",
    "kv_group": "query head i was given key/value head i mod {g}: the {group} query heads that share a key/value head "
                "are neighbours, so head i uses key/value head i // {group}",
    "residual_left_out": "the residual was left out: add the output back to the block's input, R = X + Y",
    "latent_rope_first": "the rotation turned the wrong end of each head: with latent the last d_r = {d_r} numbers of "
                         "each query and key turn (rope.part: last), after the unrotated k_nope part",
    "latent_rope_key_left_out": "the heads' keys lack the shared rotary key: each key is (k_nope | k_r), k_nope "
                                "from the head's own columns of W_UKV and k_r, the last d_r = {d_r} columns of "
                                "C·W_DKV, the same in every head",
    "latent_kv_norm_left_out": "the latent was not normalised: c = kv_norm(first r_kv columns of C·W_DKV) before "
                               "W_UKV expands it into keys and values",
    "yarn_mscale_once": "the YaRN factor m = {m} was put on the scale once: DeepSeek multiplies 1/√d_k by m² = {m2}, "
                        "once for the queries' share and once for the keys'",
    # issue 31: softmax's own arithmetic (teach/check/arith.py)
    "max_column": "the maximum was taken down each column (over the queries) before exponentiating: subtract each "
                  "row's own maximum, which keeps every e^z at most 1",
    "sum_whole": "every exponential was divided by the sum of the whole matrix: divide it by its own row's sum, so "
                 "that each query's weights add up to 1",
    "scale_on_weights": "the scale multiplied the weights, {c}·softmax(S), instead of the scores: it goes inside, "
                        "softmax({c}·S)",
    "scale_on_output": "the scale multiplied the output instead of the scores: it goes inside the softmax, "
                       "softmax({c}·S)·V",
    # weights and scores confused
    "scores_as_weights": "the scaled scores were used as the weights: softmax turns them into weights first, each "
                         "e^z divided by the sum of its row's",
    "softmax_twice": "softmax was applied twice (to the weights again): apply it once, to the scaled scores",
    "weights_as_scores": "these are the weights, not the scores: the scores are Q·Kᵀ before softmax (the weights go "
                         "under weights)",
    # an additive bias: its sign and its place
    "bias_subtracted": "the score bias was subtracted: it is added, z = scale·S + B",
    "alibi_reversed": "ALiBi's distance was taken the other way round, slope·(p_i − p_j): the bias is "
                      "slope·(p_j − p_i), negative for the keys behind the query",
    "bias_before_scale": "the bias was added before the scale, {c}·(S + B): scale the scores first, then add the bias, "
                         "{c}·S + B",
    # a normalisation (pre_norm, add_norm)
    "norm_axis": "{norm} of {where} was taken down each column (over the tokens): it normalises each row, over its "
                 "{d} numbers",
    "norm_ddof": "{norm} of {where} divided the sum by d − 1: it takes the mean over the row's d = {d} numbers (divide "
                 "by d, as torch does)",
    "norm_eps_left_out": "ε = {eps} was left out of {norm} of {where}: it goes under the root with the mean",
    "norm_eps_outside": "ε = {eps} was added outside the root in {norm} of {where}: it goes inside, under the root",
    "norm_no_root": "{norm} of {where} divided by the mean itself, not by its square root: divide by √(mean + ε)",
    "norm_other": "{where} used {other}'s formula: this document asks for {norm}",
    "norm_gamma_left_out": "γ was left out of {norm} of {where}: multiply the normalised row by γ",
    "norm_beta_left_out": "β was left out of {norm} of {where}: add β after multiplying by γ",
    "norm_gamma_beta_swapped": "γ and β were swapped in {norm} of {where}: multiply the normalised row by γ, then "
                               "add β",
    "norm_scope_projection": "{norm} of qk_norm was taken over all {d} numbers of a token's heads together: with "
                             "scope: head each head's {d_k} numbers are normalised on their own",
    "norm_scope_head": "{norm} of qk_norm was taken over each head's {d_k} numbers on their own: with scope: "
                       "projection all {d} numbers of a token's projection are normalised together (as OLMo 2 does)",
    # the stages' declared variants (attncli/core/variants): how two slips, or two candidates, are said
    "and_also": "{first}; and also {second}",
    "scale_d_v": "the scores were divided by √d_v = √{d_v}, the width of the values: divide them by √d_k = {root}, "
                 "the width of the queries and keys",
    "scale_n": "the scores were divided by √n = √{n}, the number of tokens: divide them by √d_k = {root}, the width of "
               "the queries and keys",
    "scale_rounded": "the scale was worked out from {root} rounded to {rounded}: keep 1/{root} to full precision",
    "softmax_overflow": "e^z overflowed: a scaled score above {limit} makes e^z larger than any float (inf), and "
                        "inf / inf is NaN; subtract each row's own maximum before exponentiating, so that every e^z "
                        "is at most 1 (softmax does not change)",
    "softmax_base_2": "the weights were taken with 2^z instead of e^z: softmax exponentiates with base e",
    "log_softmax": "these are log-softmax values, z − ln Σ e^z: the weights are e^z / Σ e^z themselves (their "
                   "exponentials), numbers from 0 to 1 that add up to 1",
    "window_wider": "the sliding window took one key too many: window: W lets each query see W keys, itself included",
    "window_narrower": "the sliding window took one key too few: window: W lets each query see W keys, itself "
                       "included",
    "padding_rows": "the padding was put on the query rows: a padded token is hidden as a key (its column), while "
                    "its own row still attends to the real keys",
    "heads_one_block": "every head was made from head 1's columns: head i takes its own block, columns i·d_k … "
                       "(i + 1)·d_k − 1",
    "values_as_keys": "the scores were taken with the values, Q·Vᵀ: the scores are Q·Kᵀ, with the keys",
    "kv_one_head": "every query head was given key/value head 1, as if there were one shared key/value head: here "
                   "there are {g}, and query head i uses key/value head i // {group}",
    "rope_frequency_no_2": "the frequencies were taken as θ^(−i/dims): the exponent has a 2, f_i = θ^(−2i/dims)",
    "alibi_distance_abs": "ALiBi's distance was taken without its direction, −slope·|p_j − p_i|: the bias is "
                          "slope·(p_j − p_i), positive for the keys after the query",
    "alibi_slopes_reversed": "ALiBi's slopes were given to the heads in reverse order: head 1 has the largest slope, "
                             "2^(−8/h)",
    "alibi_base_e": "ALiBi's slopes were taken with base e: they are powers of 2, 2^(−8k/h) for head k",
    "residual_from_normalized": "the residual added the normalised inputs X̂: it adds the block's input before "
                                "pre_norm, R = X + Y",
    "norm_before_add": "the output was normalised before it was added, X + LN(Y): Add & Norm adds first, "
                       "LN(X + Y)",
    "layer_raw_inputs": "layer {layer} was fed the stack's own inputs X: each layer after the first takes the "
                        "layer before's result ({passed}) as its inputs",
    # the backward pass
    "dz_sigmoid": "dZ was taken as dA ⊙ A ⊙ (1 − A), each weight's own derivative only: every weight of the row "
                  "depends on every score, so dZ = A ⊙ (dA − D), with D = Σ_j a_j·dA_j",
    "delta_left_out": "the row term D was left out, dZ = A ⊙ dA: subtract D = Σ_j a_j·dA_j from each dA first, "
                      "dZ = A ⊙ (dA − D)",
    "dk_not_transposed": "dK was taken as dS·Q: the keys' gradient is dSᵀ·Q (column j of dS for key j)",
    "dv_not_transposed": "dV was taken as A·dH: the values' gradient is Aᵀ·dH (column j of A for value j)",
    "scale_forgotten_backward": "the scale was left out of the backward pass: dS = scale·dZ, so dQ and dK carry "
                                "the scale too",
}
SLIPS.update({  # the lightning indexer (core/variants/indexer.py)
    "indexer_head_weights_left_out": "the indexer's heads were all weighed 1: each head's ReLU(q·k) is multiplied by "
                                     "its weight w = x̂·W_IW before the heads are summed",
    "indexer_scales_left_out": "the indexer's scales were left out: I = Σ_h w_h·H^(−1/2)·ReLU(d^(−1/2)·q_h·k), here "
                               "with H = {H} and d = {d}, so yours is {factor} times too large",
    "indexer_smallest_kept": "the keys with the smallest I were kept: each query keeps the top_k = {top_k} keys with "
                             "the largest I (equal values: the lower key index first)",
})
SLIPS.update({  # differential attention (core/variants/differential.py)
    "differential_lambda_added": "λ·A₂ was added: differential attention subtracts the second softmax, "
                                 "W = A₁ − λ·A₂, so that the noise both maps share cancels",
    "differential_layer_from_one": "λ_init was worked out with the layer counted from 1: layer: {layer} counts from 0, "
                                   "so λ_init = 0.8 − 0.6·e^(−0.3·{layer}) = {right}, not {wrong}",
    "differential_norm_left_out": "the RMSNorm of each pair's output was left out: Ô = (1 − λ_init)·O / "
                                  "√(mean(O²) + ε) over the pair's 2·d_v numbers, before the output projection",
    "differential_factor_left_out": "the factor 1 − λ_init = {factor} was left out: the normalised output is "
                                    "multiplied by it, Ô = (1 − λ_init)·RMSNorm(O)",
})
CHECK.update({  # a linear: document (teach/check/linear.py)
    "either": "one of these slips gives your numbers: {slips}", "sep_or": "; or ",
    "state_swapped": "these are the right numbers with rows and columns swapped: the state is d_k × d_v, a row per "
                     "key number and a column per value number",
    "step_delta": "the delta rule's step", "step_lightning": "lightning attention's step",
    "none_fits_delta": "No known slip of the recurrence gives these numbers: work the first wrong token again, "
                       "S ← e^g·S, u = β(v − Sᵀk), S ← S + k·uᵀ, o = Sᵀq.",
    "none_fits_lightning": "No known slip of the recurrence gives these numbers: work the first wrong token again, "
                           "S ← e^(−s)·S + k·vᵀ, o = Sᵀq.",
})
SLIPS.update({  # a linear: document's recurrence (core/variants/linear.py)
    "linear_decay_after": "the state was decayed after the update: each token first decays S ← e^g·S, then "
                          "u = β(v − Sᵀk) reads the decayed state, then S ← S + k·uᵀ",
    "linear_beta_left_out": "β was left out: u = β(v − Sᵀk), so each update is scaled by the token's β = σ(b)",
    "linear_delta_left_out": "the delta rule's correction was left out: u = β(v − Sᵀk), not β·v; what the state "
                             "already holds for k is taken away before the new value is written",
    "linear_state_transposed": "the state was read transposed: S is d_k × d_v (a row per key number), and the output "
                               "is o = Sᵀq",
    "linear_q_unscaled": "the queries were not scaled: q is multiplied by 1/√d_k = 1/{root} (d_k = {d_k}) before "
                         "o = Sᵀq",
    "linear_q_unscaled_scale": "the queries were not scaled: q is multiplied by the document's scale: {scale} before "
                               "o = Sᵀq",
    "linear_l2_left_out": "q and k were not l2-normalised: each is divided by its length, √(Σx² + ε), before the "
                          "recurrence (and q then scaled), so that every key writes into the state with length 1",
    "lightning_decay_after": "the new token was decayed too: S ← e^(−s)·S + k·vᵀ decays what the state held, then "
                             "adds this token's k·vᵀ whole",
    "lightning_decay_sign": "the decay grew the state: S ← e^(−s)·S + k·vᵀ, with e^(−s) below 1, so older tokens count "
                            "less",
    "lightning_state_transposed": "the state was read transposed: S is d_k × d_v (a row per key number), and the "
                                  "output is o = Sᵀq",
})
