"""The English words of the extra steps of today's attention: ``pre_norm``, ``rope`` and ``residual``."""

MODERN = {
    "pre_norm": {
        "title_rms": "Pre-norm: RMSNorm",
        "title_layer": "Pre-norm: LayerNorm",
        "body": "Before the projections, each input row is normalised on its own (pre-norm): brought to a standard "
                "size, so that the queries, keys and values are computed from rows of similar scale however large the "
                "rows have grown in earlier layers. Putting the norm before attention, rather than after the residual "
                "addition, is what keeps deep stacks of layers stable to train; most models since GPT-2 do it.",
        "rms": "This is RMSNorm (kind: rms, as in Llama, Mistral and T5): the row is divided by its root mean square "
               "√(mean(x²) + ε), with ε = {eps}. Unlike LayerNorm it does not subtract the mean and has no β; it is "
               "cheaper and trains as well.",
        "layer": "This is LayerNorm (kind: layer): the row's mean is subtracted and the result divided by √(var + ε), "
                 "with ε = {eps}; then γ scales and β shifts each number.",
        "gamma": "Each number is then multiplied by its own γ (the document's gamma), the learned gain of its "
                 "dimension.",
        "gamma_ones": "γ is all ones here (the default), so it changes nothing.",
        "cross": "Only the inputs are normalised: the context, which gives the keys and values, is used as given (in "
                 "encoder–decoder models it was normalised already).",
        "residual": "The residual added at the end (step {res_step}) uses {x0} as it was, not X̂: the normalisation "
                    "only shapes what attention sees.",
    },
    "rope": {
        "shared_kv": "Only the queries are turned here: the keys are layer {kv_layer}'s (kv_from: {kv_from}), turned "
                     "there already at their own positions.",
        "title": "Rotary position embedding (RoPE)",
        "body": "Rotary position embedding (RoPE) writes each token's position into its query and its key, after the "
                "projections and before the scores. The numbers of each head are taken in pairs, and each pair (a, b) "
                "is turned like a point in the plane by an angle φ = p·f that grows with the token's position p, each "
                "pair at its own frequency f. A rotation changes a pair's direction, never its length, and nothing is "
                "added to the rows. The values are not rotated.",
        "half": "Here a pair is dimension i with dimension i + {half} (counting from 1, the first pair is dimensions "
                "{a} and {b}): the first half of the rotated numbers with the second half, as Hugging Face's Llama, "
                "Mistral and Qwen do it (rotate_half).",
        "interleaved": "Here a pair is two neighbours, 2i and 2i + 1 (counting from 1, the first pair is dimensions "
                       "{a} and {b}), as RoFormer, GPT-J and Meta's original Llama code do it.",
        "base": "The frequencies are f_i = θ^(−2i/dims) for i = {i_range}, with θ = {base} and dims = {dims}: "
                "f = {freqs} radians per position.",
        "still": "Every frequency here is 0, so every angle φ = p·0 is 0 and nothing turns: the queries and keys "
                 "leave this step as they came, and the scores see no positions. (This is how a layer with no "
                 "rotation, such as Kimi Linear's full attention, keeps its shared key part k_r: a rope of "
                 "frequency 0.)",
        "given": "The document gives the frequencies itself: f = {freqs} radians per position (a scaled rope, or a "
                 "checkpoint's own inv_freq).",
        "spread": "Fast pairs turn a lot from one position to the next and tell neighbours apart; slow pairs hardly "
                  "turn and still differ between tokens far apart.",
        "partial": "Only the first {dims} of the {d_k} numbers of each head are rotated; the other {rest} pass "
                   "unchanged (partial rotary, as in GPT-NeoX and Phi).",
        "positions_default": "Positions count from 0: the first token is at position 0, so {q} is at p = {p} and {k} "
                             "at p′ = {pk}.",
        "positions_given": "The document sets the positions (positions: or context_positions:): {q} is at p = {p} and "
                           "{k} at p′ = {pk}.",
        "worked": "The lines below turn the first pair of the query of {q} and of the key of {k}: φ = p·f, then "
                  "(a·cos φ − b·sin φ, b·cos φ + a·sin φ); rot(φ) stands for that turn.",
        "why": "Why rotate? Take a query pair q at position p and a key pair k at position p′. Their dot product after "
               "the rotations, q′·k′, depends only on the angle between the two turned pairs, and that angle is the "
               "original one changed by (p − p′)·f. So q′·k′ equals the dot product of q turned by (p − p′)·f with k "
               "not turned at all: the score sees the distance p − p′, never where the two tokens stand in the text. "
               "The last two lines check it with this document's numbers.",
        # Part 3: where the turned numbers sit, the scaling, the attention factor
        "interleaved_halves": "Here a pair is two neighbours, 2i and 2i + 1 (counting from 1, the first pair is "
                              "dimensions {a} and {b}), but the turned pairs are written as all the first members, "
                              "then all the second members (DeepSeek V3's rope_interleave): queries and keys are laid "
                              "out the same way, so the scores equal those of the interleaved style.",
        "partial_last": "Only the last {dims} of the {d_k} numbers of each head are rotated; the first {rest} pass "
                        "unchanged (DeepSeek's multi-head latent attention: the rotated part follows the rest).",
        "base_scaled": "Without scaling the frequencies would be f_i = θ^(−2i/dims) for i = {i_range}, with θ = {base} "
                       "and dims = {dims}: {rope_plain}. The scaling turns them into f = {freqs} radians per position.",
        "scaling_linear": "Linear scaling (position interpolation) divides every frequency by factor = {rope_factor}: "
                          "each position turns the pairs as little as a position {rope_factor} times closer would.",
        "scaling_dynamic": "Dynamic NTK scaling raises the base once the positions pass L = {rope_L}: here the "
                           "largest position + 1 is P = {rope_P}, so θ becomes θ·(factor·P/L − (factor − 1))^(dims/"
                           "(dims − 2)) = {rope_grown} with factor = {rope_factor}: the slow pairs slow down the most.",
        "scaling_dynamic_short": "Dynamic NTK scaling only changes the base once the positions pass L = {rope_L}; "
                                 "here P = {rope_P}, so the frequencies stay θ's.",
        "scaling_llama3": "Llama 3's scaling sorts the pairs by their wavelength λ_i = 2π/f_i, in positions: waves "
                          "longer than L/low_freq_factor = {rope_long_wave} (pairs i = {rope_stretched}) are divided "
                          "by factor = {rope_factor}, waves shorter than L/high_freq_factor = {rope_short_wave} (pairs "
                          "i = {rope_kept}) are kept, and the pairs between (i = {rope_blended}) blend the two.",
        "scaling_yarn": "YaRN (factor = {rope_factor}, L = {rope_L}) stretches only the slow pairs. Over the L "
                        "positions it was trained on, pair i turns L·f_i/2π times ({rope_turns} for the first "
                        "pairs): the pairs that turn more than β_fast = {rope_beta_fast} times keep their "
                        "frequency (i = {rope_kept}), those that turn less than β_slow = {rope_beta_slow} times are "
                        "divided by {rope_factor} (i = {rope_stretched}), and those between blend the two (i = "
                        "{rope_blended}): f_i·(r_i/{rope_factor} + 1 − r_i), with the ramp r_i = clamp((i − "
                        "{rope_low})/({rope_high} − {rope_low}), 0, 1).",
        "scaling_longrope_long": "LongRoPE divides each frequency by its own factor. The positions reach past "
                                 "L = {rope_L} (P = {rope_P}), so the long_factor list is used: e = {rope_e}.",
        "scaling_longrope_short": "LongRoPE divides each frequency by its own factor. The positions stay within "
                                  "L = {rope_L} (P = {rope_P}), so the short_factor list is used: e = {rope_e}.",
        "factor_given": "cos and sin are multiplied by a = {rope_a} (rope.attention_factor), for the query and for "
                        "the key: the rotated part of every score is multiplied by a² = {rope_a2}.",
        "factor_yarn": "YaRN also multiplies cos and sin by a = {rope_a} (0.1·ln factor + 1, or the ratio of the "
                       "mscale terms), for the query and for the key alike: the rotated part of every score grows by "
                       "a² = {rope_a2}, which keeps the softmax as sharp as the stretched positions would not.",
        "factor_longrope": "LongRoPE also multiplies cos and sin by a = √(1 + ln factor / ln L) = {rope_a}, for the "
                           "query and for the key alike: the rotated part of every score grows by a² = {rope_a2}.",
    },
    "qk_norm": {
        "shared_kv": "Only the queries are normalised here: the keys are layer {kv_layer}'s (kv_from: {kv_from}), "
                     "normalised there already.",
        "title_rms": "QK-norm: RMSNorm of the queries and keys",
        "title_layer": "QK-norm: LayerNorm of the queries and keys",
        "formula_head": "per head, over its d_k numbers",
        "formula_projection": "over all h·d_k numbers of a token",
        "body": "QK-norm normalises every query and every key on its own before they are multiplied, as Qwen3, "
                "Gemma 3, OLMo 2, Command R+, StableLM 2 and Llama 4 do. The values are left as they are.",
        "rms": "The norm is RMSNorm (kind: rms): a row is divided by its root mean square √(mean(x²) + ε), with "
               "ε = {eps}, so that its numbers have a mean square of about 1.",
        "layer": "The norm is LayerNorm (kind: layer): the row's mean is subtracted and the result divided by "
                 "√(var + ε), with ε = {eps}.",
        "head": "It works on each head's {d_k} numbers separately (scope: head): every query and key row of every head "
                "is brought to the same size.",
        "projection": "It works on all of a token's numbers at once, before they are split into heads (scope: "
                      "projection, as OLMo 2 and 3 do): the {hd} query numbers of a token together, and its {gd} key "
                      "numbers together. One head's row can then be longer or shorter than another's.",
        "before_rope": "It comes after the projections and before the rotation: rope then turns the normalised "
                       "numbers, which keeps their length.",
        "after_rope": "It comes after the rotation (after_rope: true, as Llama 4 does): the rotated query and keys "
                      "are normalised, and the scores multiply the normalised ones.",
        "no_rope": "The scores then multiply the normalised queries and keys.",
        "gamma": "Each number is then multiplied by its γ (gamma), a learned gain per dimension.",
        "gamma_per_head": "Each number is then multiplied by its γ (gamma), and here each head has its own row of γ "
                          "(as Command R+ and StableLM 2 store it).",
        "gamma_ones": "γ is all ones here (the default; Llama 4's norm has no weight at all), so it changes nothing.",
        "beta": "Then β (beta) is added to each number.",
        "bound": "A score is a dot product, so |q·k| ≤ ‖q‖·‖k‖. Without the norm the lengths are whatever the "
                 "projections give: in head {head} the longest query has ‖q‖ = {q_len} and the longest key "
                 "‖k‖ = {k_len}, so a scaled score could reach {s} × {q_len} × {k_len} = {before}; and that grows with "
                 "the inputs (twice the inputs, four times the bound). After the norm a row's length no longer depends "
                 "on the inputs: at most max|γ|·√{width} (+ ‖β‖), here ‖q̂‖ ≤ {q_hat} and ‖k̂‖ ≤ {k_hat}, so no "
                 "scaled score can pass {s} × {q_hat} × {k_hat} = {after}. The largest here is {reached}.",
        "why": "Why bound them? When the logits can grow without limit, softmax puts almost all the weight on a single "
               "key and its gradients vanish; large models whose attention logits blow up this way stop training "
               "(their loss spikes and diverges). With QK-norm only γ sets how sharp attention can be.",
    },
    "residual": {
        "title": "Residual connection",
        "body": "The attention output is added to the block's input (the residual connection): {r_formula}. The layer "
                "only has to learn a change to each row, and the original information passes through untouched, which "
                "also lets gradients flow through deep stacks of layers.",
        "post_norm": "Before it is added, the output is normalised itself (post_norm, {norm}), so the residual grows "
                     "by rows of a steady size.",
        "sandwich": "With the pre-norm as well there is a norm before attention and one after it: the “sandwich” of "
                    "Gemma 2.",
        "pre_norm": "There is no normalisation after the addition: the residual is passed on as it is, and the next "
                    "layer normalises it again before its own projections (pre-norm), as step pre_norm did here.",
        "no_norm": "There is no normalisation after the addition: the residual is passed on as it is.",
        "scale": "The output is multiplied by α = {alpha} before it is added (Granite's residual_multiplier): each "
                 "layer adds a smaller change, which keeps a deep stack of layers stable.",
    },
    "latent": {
        "title": "Multi-head latent attention (DeepSeek V2/V3, Kimi K2)",
        "body": "Here the keys and values are not projected from each token directly. Each token is first squeezed "
                "into one short latent c of r_kv = {r_kv} numbers: the first r_kv columns of its row times W_DKV, "
                "normalised by kv_norm. The next d_r = {d_r} columns are one rotary key k_r. Every head then expands "
                "the same c with its own columns of W_UKV: d_nope = {d_nope} numbers of key (k_nope) and d_v of value. "
                "Below, one token worked out in head {head}.",
        "query": "The queries are projected as usual (weights.query); the last d_r numbers of each head's query are "
                 "the ones rope turns.",
        "query_lora": "The queries go through a latent too: c_Q = query_norm(x̂·W_DQ), then c_Q·W_UQ. That only "
                      "saves weights; it does not change the cache.",
        "shared": "A head's key is (k_nope | k_r): its own unrotated part, then the rotary key k_r, which is the same "
                  "for every head. Rope turns only that last part, so position enters through d_r numbers shared "
                  "by all heads, and the latent c stays free of positions.",
        "cache": "Why build it this way? At generation time a model keeps, for every past token, what the keys and "
                 "values are made from. Plain multi-head attention keeps every head's key and value, "
                 "{full_formula} numbers per token here. This layer needs only c and the rotated k_r: "
                 "{latent_formula}. "
                 "For DeepSeek V3 that is {v3_latent} numbers instead of {v3_full}, about {v3_times} times fewer, "
                 "in every layer.",
        "absorbed": "Inference engines never expand the keys. Since q_nope·k_nopeᵀ = q_nope·(c·W_UK)ᵀ = "
                    "(q_nope·W_UKᵀ)·cᵀ, they fold W_UK into the query once (the absorbed query q_abs, r_kv + d_r "
                    "numbers) and multiply it straight with the cached (c | k_r′). The last lines check it: both ways "
                    "give the same score.",
        "not_absorbed": "This document normalises or clips Q and K after the projection, so W_UK cannot be folded "
                        "into the query: the absorbed form does not apply.",
    },
}
# kv_from: the keys were turned in their own layer, so the worked lines turn the query only
MODERN["rope"]["why_shared"] = MODERN["rope"]["why"].removesuffix(" The last two lines check it with this document's "
                                                                  "numbers.")
