"""Every English sentence of ``attncli explain``: step titles, paragraphs and table labels.

Placeholders in braces are filled from :func:`attncli.teach.explain.step.context` (``{q}`` the
query's label, ``{d_k}``, ``{scale}`` …).  The same keys exist in :mod:`attncli.teach.texts.zh`.
"""

from attncli.teach.texts.backward_en import BACKWARD
from attncli.teach.texts.block_steps_en import MODERN
from attncli.teach.texts.check_en import CHECK, SLIPS
from attncli.teach.texts.differential_en import DIFFERENTIAL
from attncli.teach.texts.facts_en import FACTS
from attncli.teach.texts.why_en import WHY

TEXTS = {
    # the query heads a key/value head serves, in a sentence: two are "heads 1 and 2", more "heads 1 to 4"
    "span": {"two": "heads {first} and {last}", "many": "heads {first} to {last}"},
    "kv_weights": "W_K and W_V",  # (with V = K, k_eq_v: W_K alone)
    "step": "Step",
    "formula": "Formula",
    "formula_line": "Formula: {formula}",
    "and": " and ",
    "list_sep": ", ",
    "extra_heading": "Step {key} · {title}",  # an extra step (positional, rope …)
    "step_names": {"positional": "positional", "pre_norm": "pre_norm", "rope": "rope", "add_norm": "add_norm",
                   "residual": "residual", "backward": "backward",
                   "differential": "differential",
                   "delta": "delta rule", "lightning": "lightning"},  # (their own names in English)
    "of_head": "{title} (head {head})",  # a step's title with --head all
    "check": CHECK,  # attncli check: the report and the slips (texts/check_en.py)
    "slips": SLIPS,
    "label": {
        **FACTS["label"],  # the sentences true of some numbers only (texts/facts_en.py)
        "saturation": "Saturation  largest weight and Jacobian entry",
        "query_w1": "Query term  q·W₁", "keys_w2": "Key terms  K·W₂", "tanh": "Hidden layer  tanh(q·W₁ + K·W₂)",
        "inputs": "Inputs  X", "context": "Context  C", "positional": "Positional encoding  P",
        "normalized_values": "Normalised values  V̂",
        "embedded": "Inputs with positions  X + P",
        "w_q": "Query weights  W_Q", "w_k": "Key weights  W_K", "w_v": "Value weights  W_V",
        "b_q": "Query bias  b_Q", "b_k": "Key bias  b_K", "b_v": "Value bias  b_V",
        "queries": "Queries  Q", "keys": "Keys  K", "values": "Values  V",
        "scores": "Scores  s", "scaled_scores": "Scaled scores  z", "masked": "masked", "score_bias": "Score bias  b",
        "exponentials": "Exponentials  e^z", "exponentials_shifted": "Exponentials  e^(z − max z)",
        "weights": "Weights  a", "weighted_values": "Weighted values  a_j · v_j",
        "head_output": "Output  y", "all_weights": "All weights  A", "head_outputs": "All outputs  H",
        "concat": "Heads side by side  concat(H₁ … H_h)", "output": "Output  Y",
        "differential_weights": "Combined weights  W = A₁ − λ·A₂", "pair_values": "The pair's values  [V₁ | V₂]",
        "normalized_head_outputs": "Normalised pair output  Ô",
        "gate": "Gate  G = σ(X̂·W_G + b_G)", "gated_head_outputs": "Gated outputs  H ⊙ G",
        "residual": "Residual  R", "normalized": "Add & Norm  LayerNorm(R)",
        "normalized_inputs": "Normalised inputs  X̂", "normalized_output": "Normalised output  {norm}(Y)",
        "queries_rotated": "Rotated queries  Q′", "keys_rotated": "Rotated keys  K′",
        "latent_kv": "Latent keys and values  c_KV", "absorbed_queries": "Absorbed queries  Q_abs",
        "normalized_queries": "Normalised queries  Q̂", "normalized_keys": "Normalised keys  K̂",
        "angles": "Angles  φ = p·f, one column per pair", "kv_head": "K/V head {kv} (query heads {first}–{last})",
        "average": "Plain average", "relevance": "Relevance", "why_weights": "Weights", "why_output": "Output",
        "why_shares": "R / row sum",
    },
    "inputs": {
        "title": "Prepare the inputs",
        "body": "Attention works on vectors, so every token arrives as one row of numbers: here {n} tokens of "
                "{d_model} numbers each. In a real model these rows come from an embedding table; here they are "
                "simply the numbers of your document.",
        "cross": "This is cross-attention: the queries come from these inputs, while the keys and values come from a "
                 "second sequence, the context C ({m} rows of {d_ctx} numbers). Think of a translator looking back at "
                 "the source sentence while writing the next word.",
        "stacked": "This is layer {layer} of a stack, so its rows are not numbers from your document: they are what "
                   "layer {before} passed on, its {passed}, computed first ({n} tokens of {d_model} numbers each). "
                   "Each row already carries some of the other tokens, and this layer mixes them again.",
        "normalized": "LayerNorm(X + output) (add_norm)", "residual": "residual X + output", "output": "output Y",
    },
    "positional": {
        "title": "Positional encoding",
        "body": "Attention itself has no idea of order: shuffle the rows and every score is shuffled with them. "
                "To let the model know where a token stands, a position vector P is added to each input row "
                "before anything else happens; the projections in step 3 see {sees}.",
        "sees": "X + P",
        "sees_normalised": "X + P, after it is normalised (step pre_norm)",
        "sinusoidal": "Here P is the sinusoidal encoding: counting columns from 1 as the tables do, columns 1, 3, 5 … "
                      "use a sine and columns 2, 4, 6 … a cosine, and the wavelength grows from one pair of columns to "
                      "the next, so every position gets its own pattern and nearby positions get similar ones.",
        "matrix": "Here P is the matrix given in the document.",
    },
    "weights": {
        "shared_kv": "This layer makes no keys or values of its own: kv_from: {kv_from} takes those of layer "
                     "{kv_layer}, the keys as that layer's scores saw them (normalised and turned) and the values as "
                     "its weights mixed them (Gemma 4's KV sharing). So it has only W_Q here; W_K and W_V are that "
                     "layer's.",
        **FACTS["weights"],  # the sentences true of some numbers only (texts/facts_en.py)
        "title": "The weights",
        "body": "Each input is turned into three new vectors by three weight matrices: W_Q for the query, W_K for "
                "the key and W_V for the value. Each matrix has one row per input number and one column per "
                "output number. A trained model learns them; here they are given, so every number that follows can "
                "be checked by hand.",
        "body_k_eq_v": "Each input is turned into its query by W_Q and its key by W_K. There is no W_V: the key "
                       "projection is also the value (k_eq_v, Gemma 4's global layers; step 3). Each matrix has one "
                       "row per input number and one column per output number. A trained model learns them; here "
                       "they are given, so every number that follows can be checked by hand.",
        "body_cross": "Three weight matrices make the vectors attention works with: W_Q turns each input row into a "
                      "query, W_K and W_V turn each context row into a key and a value. Each matrix has one row per "
                      "number of the rows it multiplies (d_model = {d_model} for W_Q, d_ctx = {d_ctx} for W_K and W_V) "
                      "and one column per output number. A trained model learns them; here they are given, so every "
                      "number that follows can be checked by hand.",
        "latent": "With latent attention, W_K and W_V here are W_UK and W_UV, this head's key and value columns of "
                  "W_UKV: they multiply the token's latent c_KV ({r_kv} numbers), not its input row, and W_K gives "
                  "only the unrotated part of the key (step latent shows both).",
        "identity": "The document leaves out {omitted}, so that projection is the identity: the vector is the row it "
                    "multiplies, unchanged.",
        "identity_many": "The document leaves out {omitted}, so those projections are the identity: each vector is the "
                         "row it multiplies, unchanged.",
        "biases": "The document also gives biases ({biases}): each is added after its matrix product, so a projection "
                  "is row × W + b.",
        "heads": "There are {h} heads, each with its own slice of the weights; these are the weights of head {head} "
                 "(choose another with --head).",
        "gqa": "There are {h} query heads but only {g} key/value heads (kv_heads: {g}): this is grouped-query "
               "attention (GQA). Each query head has its own slice of W_Q, while each slice of {kv_weights} serves "
               "{group} query heads. Counting from 0, query head i uses key/value head i // (h / g) = i // {group}; "
               "head {head} shown here (i = {head0}) therefore uses key/value head {head0} // {group} = {kv0}, K/V "
               "head {kv} counting from 1, shared by {shared} (choose another head with --head).",
        "gqa_why": "Why share? While a model generates text it keeps the keys and values of every token so far (the KV "
                   "cache) instead of computing them again for each new token. With {g} key/value heads instead of "
                   "{h}, each token keeps {g} keys and {g} values instead of {h} of each: a cache {group} times "
                   "smaller, and less memory to read at every step, for little loss of quality.",
        "mqa_share": "There are {h} query heads but a single key/value head (kv_heads: 1): each query head has its own "
                     "slice of W_Q, and all of them share the one {kv_weights}, so head {head} shown here uses K/V "
                     "head 1, as every other head does (choose another head with --head).",
        "mqa": "With kv_heads: 1 every query head shares the one key/value head: this is multi-query attention (MQA), "
               "the extreme case of grouped-query attention. While a model generates text it keeps the keys and values "
               "of every token so far (the KV cache); here each token keeps one key and one value instead of {h} of "
               "each.",
        "dk_dv": "Queries and keys must have the same width (d_k = {d_k}) because they are multiplied together; the "
                 "values may be wider or narrower (d_v = {d_v}), and their width is the width of the output.",
    },
    "projections": {
        "shared_label": "layer {kv_layer}'s {name}",
        "body_shared": "Multiply each input row by W_Q to get that token's query. The keys and values are not made "
                       "here: they are layer {kv_layer}'s (kv_from: {kv_from}), the keys already normalised and turned "
                       "as that layer's scores saw them, so this layer adds nothing to the cache.",
        "title": "Derive queries, keys and values",
        "body": "Multiply each input row by each weight matrix: row × W_Q gives that token's query, row × W_K its key, "
                "row × W_V its value. The same three matrices are used for every token.",
        "body_k_eq_v": "Multiply each input row by each weight matrix: row × W_Q gives that token's query, row × W_K "
                       "its key, and that same key projection is also its value. The same two matrices are used for "
                       "every token.",
        "why_qk": "Why two different vectors for matching? The query describes what a token is looking for, the key "
                  "what it offers to others. Because they are made by different matrices, how much token A cares "
                  "about B need not equal how much B cares about A; a single shared vector would force that symmetry.",
        "body_cross": "Multiply each input row by W_Q to get that token's query, and each context row by W_K and W_V "
                      "to get that context token's key and value. The same matrices are used for every row.",
        "why_qk_same": "Why two different vectors for matching? The query describes what a token is looking for, the "
                       "key what it offers to others. Made by different matrices, they let how much token A cares "
                       "about B differ from how much B cares about A; in this document the query and key matrices are "
                       "the same, so each query equals its key and that symmetry is forced (step 4).",
        "why_qk_same_additive": "Why two different vectors for matching? The query describes what a token is looking "
                                "for, the key what it offers to others. In this document the query and key matrices "
                                "are the same, so each query equals its key; the additive score still treats the two "
                                "differently, through W₁ for the query and W₂ for the key.",
        "why_qk_cross": "The query describes what each input token is looking for, the key what each context token "
                        "offers: they come from two different sequences, so a score always reads from an input token "
                        "to a context token.",
        "positional": "The rows multiplied here are those of X + P, the inputs with their positions (step positional).",
        "positional_cross": "The query rows are those of X + P, the inputs with their positions (step positional); the "
                            "context is used as given.",
        "pre_norm": "The rows multiplied here are those of X̂, the inputs after the normalisation of step pre_norm, not "
                    "the raw X; the keys and values are made from X̂ too.",
        "pre_norm_cross": "The query rows are those of X̂, the inputs after the normalisation of step pre_norm; the "
                          "context is used as given.",
        "gqa": "Head {head} makes its own queries, but its keys and values are those of K/V head {kv}, computed once "
               "and shared by {shared}.",
        "clip": "Then every number of Q, K and V is clamped to the interval from −{clip:g} to {clip:g} (clip_qkv, as "
                "MPT and DBRX do): a number beyond it becomes the end it passed, the others stay as they are. It keeps "
                "a few huge projections from dominating the scores.",
        "k_eq_v": "There is no W_V: each value is its token's key projection itself, taken before the keys are "
                  "normalised and turned (k_eq_v, Gemma 4's global layers), so K and V share one matrix and one cache.",
        "v_norm": "Then each value row is divided by its root mean square, v̂ = v / √(mean(v²) + ε) (v_norm, Gemma 4, "
                  "with no γ): every value the weights mix has the same size, and only its direction carries "
                  "information.",
    },
    "scores": {
        **FACTS["scores"],  # the sentences true of some numbers only (texts/facts_en.py)
        "title": "Score the query against every key",
        "dot": "The score of {q} against a key is the dot product of its query with that key: multiply them number by "
               "number and add up. The result is large when the two vectors point the same way, near zero when "
               "they are unrelated and negative when they disagree, so it measures how well the key matches what "
               "the query is looking for.",
        "additive": "This document uses additive (Bahdanau) scoring, the predecessor of the dot product: query and "
                    "key are each projected (W₁, W₂), added, passed through tanh, and reduced to one number by v. "
                    "It also measures how well a key suits the query, with a small learned network instead of a "
                    "plain dot product.",
        "rope": "Here the query and the keys have been rotated by their positions (step rope): the dot product is "
                "taken between the rotated query q′ and each rotated key k′, so the score also depends on how far "
                "apart the two tokens are.",
        "rope_additive": "Here the query and the keys have been rotated by their positions (step rope): the score is "
                         "computed from the rotated query q′ and the rotated keys k′.",
        "qk_norm_after": "Here the query and the keys have been rotated and then normalised (steps rope and "
                         "qk_norm): the score is computed from the normalised query q̂ and the normalised keys k̂.",
        "qk_norm": "Here the query and the keys have been normalised (step qk_norm): the score is computed from the "
                   "normalised query q̂ and the normalised keys k̂.",
        "scale_none_softcap": "This document uses scale: none, so the scores are not divided by √d_k.",
        "softcap": "Then each scaled score z is soft-capped at c = {softcap}: z becomes c·tanh(z / c). tanh stays "
                   "between −1 and 1, so a capped score stays between −{softcap} and {softcap}; a small score passes "
                   "almost unchanged, a large one is squashed towards the cap, and no single score can grow so large "
                   "that it takes all the weight (Gemma 2 caps its attention scores this way).",
        "scale_none": "The scale here is none (scale: none): the scores are not divided by √d_k, as in the "
                      "illustrated walkthrough. Transformers usually divide by √d_k: with hundreds of numbers per "
                      "vector the raw dot products grow large, and softmax would then put nearly all the weight on "
                      "the single largest score.",
        "additive_none": "Additive scores are used as they are unless the document gives a scale, and here there is "
                         "none (scale: none).",
        "additive_sqrt": "Then each score is divided by √d_k = √{d_k}, as the document asks (scale: sqrt).",
        "additive_number": "Then each score is multiplied by the document's scale, {scale}.",
        "z": "What is turned into weights in step 5 is called z, the scaled score: here z = {z}.",
        "scale_sqrt": "Then each score is divided by √d_k = √{d_k}.",
        "scale_sqrt_why": "A dot product adds up d_k products, so its size grows with d_k, and the division keeps it "
                          "in check. Here it changes the weights of {q}: the largest is {with_max}, and would be "
                          "{without_max} without the division. With hundreds of numbers per vector the undivided "
                          "scores grow so large that softmax gives nearly all the weight to one key and its gradients "
                          "almost vanish, so training stalls.",
        "scale_sqrt_little": "Here the division changes none of the weights of {q} at the decimals shown (the largest "
                             "is {with_max} either way). It matters for longer vectors: a dot product adds up d_k "
                             "products, so its size grows with d_k, and with hundreds of numbers per vector the "
                             "undivided scores grow so large that softmax gives nearly all the weight to one key and "
                             "its gradients almost vanish, so training stalls.",
        "scale_number": "Then each score is multiplied by the document's scale, {scale}. The usual choice is 1/√d_k, "
                        "which keeps large scores from saturating the softmax.",
        "mask_causal": "A causal mask applies: {q} may only look at itself and the tokens before it, so the keys after "
                       "it are masked and take no part in what follows.",
        "mask_matrix": "The document's mask applies: the keys marked 0 for {q} are masked and take no part in what "
                       "follows.",
        "mask_parts": "The document's mask applies, made of parts that must all allow a key (causal order, a sliding "
                      "window, padded keys, a matrix): the keys any part rules out for {q} are masked and take no part "
                      "in what follows.",
        "mask_chunk": "The mask cuts the keys into chunks of {chunk} (Llama 4's chunked attention): {q} only sees "
                      "the keys of its own chunk, {chunk_keys}, and every key of an earlier chunk is masked too.",
        "temperature": "First the query is multiplied by its temperature τ (query_temperature, Llama 4): at position "
                       "{position}, τ = 1 + {attn_scale}·ln(1 + ⌊({position} + 1) / {floor_scale}⌋) = {tau}. τ grows "
                       "by steps with the position, so far-away queries get sharper scores, which keeps their "
                       "softmax from flattening over thousands of keys. Every score of this row is τ times q′·k.",
        "mask_score_bias": "The score bias holds −inf for some keys of {q}: adding −inf leaves nothing for softmax to "
                           "weigh, so those keys are masked exactly as a mask would mask them.",
        "bias_matrix": "Then the document's score bias B is added to each scaled score (PyTorch's float attn_mask): "
                       "a fixed number per query and key that nudges the score up or down before softmax.",
        "bias_alibi": "Then ALiBi adds a penalty that grows with distance: slope × (key position − query position). "
                      "Each head has its own slope, so some heads look far and others stay close.",
        "bias_relative": "Then T5's relative bias is added: the distance key position − query position is put in a "
                         "bucket (one bucket per small distance, then wider and wider buckets on a logarithmic scale "
                         "up to max_distance), and each head has learned one number per bucket.",
        "bias_why": "A bias that depends only on how far apart two tokens are tells the model about order without any "
                    "position vector added to the inputs: the same words at the same distance get the same nudge "
                    "wherever they stand, which is why such models need no position embeddings and cope with longer "
                    "texts than they were trained on.",
        "asymmetric": "Read the other way round, the numbers differ: the score of {q} for {other} is {qab} = {ab}, "
                      "but the score of {other} for {q} is {qba} = {ba}. Each dot product on its own is symmetric "
                      "(q·k = k·q); what differs is whose query meets whose key, so how much {q} attends to {other} "
                      "need not be how much {other} attends to {q}.",
        "row_column": "For {q} the scores happen to read the same both ways (its row of {qk} equals its column), but "
                      "not for every pair: the score of {first} for {other} is {qab} = {ab}, that of {other} for "
                      "{first} is {qba} = {ba}. A dot product is symmetric (q·k = k·q); what differs is whose "
                      "query meets whose key.",
        "symmetric": "In this document {qk} happens to be symmetric: for every pair, the score of i for j, q_i·k_j, "
                     "equals the score of j for i, q_j·k_i. That is a coincidence of these inputs and weights: W_Q "
                     "and W_K differ, and in general the two scores differ.",
        "forced": "{why}: each token's query is its key, so q_i·k_j = k_i·q_j = q_j·k_i for every pair, and {qk} is "
                  "symmetric by construction, not by coincidence. Separate matrices W_Q and W_K are what let the score "
                  "of i for j differ from that of j for i.",
        "why_same": "Here W_Q = W_K",
        "why_same_bias": "Here W_Q = W_K and b_Q = b_K",
        "why_identity": "The document gives neither W_Q nor W_K, so both are the identity and Q = K = {x}",
    },
    "softmax": {
        **FACTS["softmax"],  # the sentences true of some numbers only (texts/facts_en.py)
        "title": "Softmax: scores become weights",
        "softmax": "Softmax turns the scores into weights that are positive and add up to 1: take e to the power of "
                   "each score, add the exponentials up, and divide each one by that sum. Because of the exponential, "
                   "a score a little higher than the rest gets a clearly larger share.",
        "sum": "This document uses normalize: sum: each score is simply divided by the sum of its row. That gives "
               "weights adding up to 1 when the scores are positive, but unlike softmax it breaks down for negative "
               "scores or a row summing to zero.",
        "none": "This document uses normalize: none: the scaled scores are used as weights just as they are, without "
                "making them add up to 1.",
        "masked": "Masked keys get weight exactly 0.",
        "all_masked": "Every key is masked for {q}, so there is nothing to share out: all its weights are 0, and so "
                      "is its output (as PyTorch's scaled_dot_product_attention gives).",
        "sink": "This head also has a sink (gpt-oss): a logit s = {s} that joins the sum like one more key but has no "
                "value, so the attention it receives goes nowhere. Its e^s is added to the denominator: the sink takes "
                "σ = {share} of {q}'s attention, and the weights of the keys add up to 1 − σ = {rest}, not to 1. A "
                "head can so attend to almost nothing when no key fits.",
        "all_masked_sink": "Every key is masked for {q}, so its whole attention goes to the sink (s = {s}): σ = 1, "
                           "every weight is 0 and so is its output. With a sink that is no mistake, and no warning is "
                           "given.",
        "max_logit": "Over every query of this head, the largest logit entering the softmax is S_max = {top}, at "
                     "query {at_query} and key {at_key} (max_logits). MuonClip (Kimi K2) watches this number while "
                     "training: a logit that keeps growing makes the softmax nearly one-hot and the training unstable.",
        "max_logit_none": "No cell of this head is allowed, so it has no largest logit (null in the JSON).",
        "qk_clip": "QK-Clip with τ = {tau}: S_max is above τ, so γ = τ / S_max = {gamma}, and W_Q and W_K of this head "
                   "are rescaled ({rule}). Every score of the head becomes γ times as large, and the "
                   "largest one is now {new}.",
        "qk_clip_unchanged": "QK-Clip with τ = {tau}: S_max is not above τ, so γ = 1 and this head's W_Q and W_K stay "
                             "as they are.",
        "rule_heads": "one key/value head per query head: √γ on each",
        "rule_grouped": "grouped heads: the shared key head takes √γ of its group's smallest γ, and each query head "
                        "the rest of its own γ",
        "rule_latent": "latent attention: √γ on the unrotated query and key parts, γ on the rotated query part, the "
                       "shared rotary key untouched",
    },
    "weighted": {
        "title": "Weight each value",
        "body": "Each key's weight now multiplies that key's value row. A value with a large weight comes through "
                "almost whole; one with a weight near 0 nearly vanishes.",
        "body_zero": "Each key's weight now multiplies that key's value row. A value with a large weight comes "
                     "through almost whole; one with a weight near 0 nearly vanishes, and one with a weight of exactly "
                     "0 ({keys}) vanishes altogether.",
        "builtin_first": "The illustrated walkthrough shows these weighted values as {rounded_rows}: they come from "
                         "its weights rounded to {rounded_weights}, not from the exact weights {exact_weights} used "
                         "here.",
        "builtin": "The illustrated walkthrough rounds the weights of {q} to {rounded_weights}; from those, the "
                   "weighted values would be {rounded_rows}, not the exact ones above.",
    },
    "sum": {
        **FACTS["sum"],  # the sentences true of some numbers only (texts/facts_en.py)
        "title": "Add them up: the output of {q}",
        "body": "Adding the weighted values gives the output of {q}: a blend of all the values, mixed in the "
                "proportions of its weights. It has d_v = {d_v} numbers, the width of the values.",
        "heads": "This is what head {head} gives {q}; step 8 shows how the heads are combined.",
        "builtin": "The illustrated walkthrough's figures show the weights of {q} rounded to {rounded_weights} and "
                   "therefore this output as {rounded}; the exact output is {exact}. This example uses scale: none (no "
                   "division by √d_k), exactly like the walkthrough.",
    },
    "matrix": {
        "title": "Every query at once",
        "body": "Steps 4 to 7 were for one query. Written with matrices, every query is done in one go: {qk} holds "
                "all the scores, each row is normalised into weights, and multiplying by V mixes the values for "
                "every query at once. This is what attention code really computes.",
        "mask": "Masked cells take no part: their weight is 0.",
        "heads": "With {h} heads, each head runs steps 3 to 7 with its own weights, and the {h} outputs are put side "
                 "by side into one row per token.",
        "heads_mqa": "With {h} query heads, each runs steps 3 to 7 with its own W_Q and the one {kv_weights} they all "
                     "share (a single key/value head), and the {h} outputs are put side by side into one row per "
                     "token.",
        "heads_gqa": "With {h} query heads, each runs steps 3 to 7 with its own W_Q and the {kv_weights} of its group "
                     "({g} key/value heads, each shared by {group} query heads), and the {h} outputs are put side by "
                     "side into one row per token.",
        "projection": "The output projection W_O then mixes the heads' results into the final output of {d_out} "
                      "numbers per token.",
        "gate": "Before that, each head's output is gated (Qwen3-Next): g = σ(x·W_G + b_G) gives one number between "
                "0 and 1 per output number of the head, made from the token's own input, and y ⊙ g keeps that share "
                "of it. A head can so switch itself off for a token; the lines show the gate of {q} in this head.",
    },
    "add_norm": {
        "title": "Add & Norm",
        "body": "The attention output is added to the block's input (the residual connection, so the original "
                "information is never lost), and each row is then layer-normalised: shifted to mean 0, scaled to "
                "variance 1, then stretched by γ and shifted by β. This keeps the numbers in a steady range from "
                "layer to layer.",
        "post_norm": "Before it is added, the attention output is normalised itself (post_norm, {norm}): "
                     "R = {x0} + {norm}(Y); the first lines work this out for {q}.",
    },
    "pre_norm": MODERN["pre_norm"],
    "qk_norm": MODERN["qk_norm"],
    "rope": MODERN["rope"],
    "latent": MODERN["latent"],
    "residual": MODERN["residual"],
    "backward": BACKWARD,
    "differential": DIFFERENTIAL,
    "why": WHY,  # explain --why (texts/why_en.py)
    "mistake": "Your answer first goes wrong here: {key} at {cell}: expected {expected}, yours {given}.",
    "mistake_shape": "Your answer first goes wrong here: {key} {problem}.",
    "hint": "Hint: {hint}",
}
