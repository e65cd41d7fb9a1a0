"""``attncli explain --why``'s English words: the stages a to e, and the intuitions told next to their numbers."""

WHY = {
    "average": {
        "title": "First idea: average the values",
        "body": "The simplest way to let a token take in the others: give it the plain average of all the value "
                "rows. Every token then gets the very same output, whatever it is; nothing depends on relevance.",
        "fixed": "Or a fixed mix: keep three quarters of a token's own value and take a quarter of another's, "
                 "y = 0.75·v_i + 0.25·v_j. For {q} taking from {other}: 0.75 × {v_i} + 0.25 × {v_j} = {y}. The "
                 "shares are the same for every pair of tokens, whatever they mean; the attention computed here "
                 "gives {other} the weight {a} and {q} itself {a_self}, from its query and their keys.",
    },
    "symmetric": {
        "title": "Second idea: weigh by similarity",
        "body": "Better: weigh each token by how similar it is to ours, measured by the dot products X·Xᵀ, with "
                "each row divided by its own sum so that the weights add up to 1. Now outputs differ, but the "
                "relevance is symmetric: A is exactly as relevant to B as B is to A. Language is not like that: "
                "a pronoun needs the noun it stands for far more than the noun needs the pronoun.",
        "cross": "With cross-attention the inputs and the context are different sequences, so X·Xᵀ does not say "
                 "how relevant a context row is; this stage is left out.",
    },
    "query_key": {
        "title": "Third idea: separate queries and keys",
        "body": "Give every token a query (what it looks for) and a key (what it offers): relevance Q·Kᵀ need "
                "no longer be symmetric. Each row is still divided by its own sum.",
        "asymmetric": "Now relevance can differ both ways: the relevance of {first} for {other} is {qab} = {ab}, that "
                      "of {other} for {first} is {qba} = {ba}.",
        "symmetric": "With these numbers Q·Kᵀ happens to be symmetric as well (a coincidence of these inputs "
                     "and weights), so the relevances do not show the difference from X·Xᵀ. The weights still differ "
                     "both ways, because each row is divided by its own sum: {first} gives {other} the weight {wab}, "
                     "while {other} gives {first} {wba}.",
        "forced": "Here every query equals its key (W_Q = W_K, or both left out), so Q·Kᵀ is symmetric by "
                  "construction, like X·Xᵀ: separate queries and keys only help when their matrices differ. The "
                  "weights still differ both ways, because each row is divided by its own sum: {first} gives {other} "
                  "the weight {wab}, while {other} gives {first} {wba}.",
        "dictionary": "Think of looking a word up in a dictionary: the query is the word you look up, the keys are the "
                      "headwords and the values the entries under them. Attention does not pick one entry; it blends "
                      "them all, more of those whose headword matches better. {match}",
        "match_one": "{here} the query of {q} matches the key of {best} best: q·k = {r}.",
        "match_tie": "{here} the query of {q} matches the keys of {best} equally well, better than the others: q·k = "
                     "{r} for each.",
        "match_all": "{here} the query of {q} matches every key equally: q·k = {r} for each, so no headword stands "
                     "out.",
        "here": "Here", "here_masked": "Here, among the keys its mask lets it see,",
        "symmetric_bias": " and W_Q·b_Kᵀ = W_K·b_Qᵀ",
        "symmetric_weights": "Here Q·Kᵀ is symmetric as well, for any inputs: W_Q and W_K differ, but W_Q·W_Kᵀ is "
                             "itself symmetric{bias}, so the relevances do not show the difference from X·Xᵀ. The "
                             "weights still differ both ways, because each row is divided by its own sum: {first} "
                             "gives {other} the weight {wab}, while {other} gives {first} {wba}.",
    },
    "softmax": {
        "title": "Finally: softmax",
        "body": "Dividing by the sum fails for negative or cancelling scores. Softmax (after the scale) always "
                "gives positive weights adding up to 1: this is attention as transformers use it.",
        "market": "Or think of a fruit market: the query is what you want (ripe, sweet, cheap), each stall's key is "
                  "what it claims to offer, and the score is how well the claim fits your wish. Softmax shares your "
                  "money out among the stalls, more where the score is higher, and the values are the fruit you carry "
                  "home: the output. {spend}",
        "spend_one": "{here} {q} spends {share} of its weight at the stall of {best}.",
        "spend_tie": "{here} {q} spends {share} of its weight at each of the stalls of {best}, which tie.",
    },
    "scale": {
        "title": "Why the scale: a saturated softmax stops learning",
        "body": "A dot product adds up d_k products, so with wide vectors the scores grow large and softmax saturates: "
                "one weight near 1, the others near 0. Its gradient vanishes with it: every entry of its Jacobian, "
                "∂a_i/∂z_j = a_i·(δ_ij − a_j), is near 0 when the weights are near 0 or 1 (a_i·(1 − a_i) is never "
                "above 1/4). The table gives, for each query, the largest weight and the largest entry of the Jacobian "
                "with the scale (×{c}) and without it (×1).",
        "usual": "This document uses scale: none, so the scale compared is the usual one, 1/√d_k = 1/√{d_k}.",
        "numbers": "For {q}: without the scale the largest weight is {a1} and the largest Jacobian entry {j1}; with "
                   "×{c}, {a2} and {j2}.",
        "helps": "The scale keeps its softmax further from saturation, so more gradient flows back through it.",
        "no_help": "Its scores are small, so its softmax is not saturated without the scale: here the scale even makes "
                   "the largest Jacobian entry smaller.",
        "same": "Here the scale changes the largest Jacobian entry by less than 0.0001.",
        "elsewhere": "For {other} it does: its largest Jacobian entry grows from {j1} to {j2} with the scale.",
        "weight": "a", "jacobian": "∂a/∂z", "with": "×{c}", "without": "×1",
    },
    "divided": "A = R / row sum",
    "masked": "The stages compare ideas, so they leave out the document's mask.",
    "left_out": "The stages compare ideas, so they leave out the document's {parts}.",
    "parts": {"mask": "mask", "rope": "rotary position embedding (rope)", "softcap": "soft cap", "sep": ", ",
              "and": " and "},
    "zero_row": "The relevances of {q} add up to 0, so they cannot be divided by their sum; that row is shown "
                "as 0. This is one reason softmax replaced the plain sum.",
}
