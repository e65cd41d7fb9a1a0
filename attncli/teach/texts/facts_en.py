"""``attncli explain``'s English sentences that hold only for some numbers, one for each case the numbers can be in.

Chosen by :mod:`attncli.teach.explain.facts`; merged into the steps' tables of :mod:`attncli.teach.texts.en`.
The same keys exist in :mod:`attncli.teach.texts.facts_zh`.
"""

FACTS = {
    "label": {"all_weights_head": "Weights of head {head}, every query  A", "head_outputs_head": "Outputs of head "
              "{head}, every query  H"},
    "weights": {
        "body_some": "Each input is turned into three new vectors by three weight matrices: W_Q for the query, W_K "
                     "for the key and W_V for the value. Each matrix has one row per input number and one column per "
                     "output number. A trained model learns them; here the document gives {given} and leaves out the "
                     "rest (see below), so every number that follows can still be checked by hand.",
        "body_cross_some": "Three weight matrices make the vectors attention works with: W_Q turns each input row into "
                           "a query, W_K and W_V turn each context row into a key and a value. Each matrix has one row "
                           "per number of the rows it multiplies (d_model = {d_model} for W_Q, d_ctx = {d_ctx} for "
                           "W_K and W_V) and one column per output number. A trained model learns them; here the "
                           "document gives {given} and leaves out the rest (see below), so every number that follows "
                           "can still be checked by hand.",
        "body_cross_none": "Three weight matrices make the vectors attention works with: W_Q turns each input row "
                           "into a query, W_K and W_V turn each context row into a key and a value. A trained model "
                           "learns them; this document gives none of them (see below), so every number that follows "
                           "can be checked by hand.",
        "body_none": "Each input is turned into three new vectors by three weight matrices: W_Q for the query, W_K for "
                     "the key and W_V for the value. A trained model learns them; this document gives none of them "
                     "(see below), so every number that follows can be checked by hand.",
    },
    "scores": {
        "default_query": "No --query was given, and query 1, {first_query}, may see {seen}: these steps follow {q}, "
                         "the first query that sees two keys or more, so that the weights have something to share out "
                         "(choose any query with --query).",
        "seen_none": "no key", "seen_one": "only one key",
        "alibi_behind": "A key behind {q} gets a negative bias, the further back the more.",
        "alibi_ahead": "A key after {q} gets a positive bias, the further ahead the more.",
        "alibi_self": "{q} may see no key but itself, so the only bias in its row that counts is its own, 0.",
        "scale_none_t5": "The scores are not divided by √d_k here (scale: none), as in T5: T5 leaves the division out "
                         "of attention and folds it into how W_Q is initialised (its query weights start about √d_k "
                         "times smaller), so trained weights already carry the factor.",
        "symmetric_weights": "In this document {qk} is symmetric for any inputs, not by coincidence: W_Q and W_K "
                             "differ, but W_Q·W_Kᵀ is itself symmetric{bias}, and q_i·k_j = x_i·W_Q·W_Kᵀ·x_jᵀ{terms}, "
                             "so the score of i for j equals that of j for i whatever the rows x are. Weights whose "
                             "W_Q·W_Kᵀ is not symmetric are what let the two scores differ.",
        "symmetric_bias": " and W_Q·b_Kᵀ = W_K·b_Qᵀ",
        "count_dot": "Why a dot product, counted on this document for one head: its {n} × {m} scores of d_k = {d_k} "
                     "numbers take {dot_mul} multiplications and {dot_add} additions, all in one matrix product that "
                     "hardware does fastest. Additive scores with a hidden layer of {d_a} would take {add_mul} "
                     "multiplications, {add_add} additions and {add_tanh} tanh.",
        "count_additive": "Counted on this document for one head, these {n} × {m} additive scores take {add_mul} "
                          "multiplications, {add_add} additions and {add_tanh} tanh (hidden layer d_a = {d_a}); dot "
                          "products of the same vectors would take {dot_mul} multiplications and {dot_add} additions, "
                          "in one matrix product: the reason transformers score with the dot product.",
        "symmetric_terms": " + x_i·W_Q·b_Kᵀ + b_Q·W_Kᵀ·x_jᵀ + b_Q·b_Kᵀ",
    },
    "softmax": {
        "softmax_zeros": "Softmax turns the scores into weights of 0 or more that add up to 1: take e to the power "
                         "of each score, add the exponentials up, and divide each one by that sum. Because "
                         "of the exponential, a score a little higher than the rest gets a clearly larger share.",
        "softmax_sink": "Softmax turns the scores into positive weights: take e to the power of each score, add "
                        "the exponentials up (here with the sink's, below), and divide each one by that sum. "
                        "Because of the exponential, a score a little higher than the rest gets a clearly larger "
                        "share.",
        "softmax_sink_zeros": "Softmax turns the scores into weights of 0 or more: take e to the power of each "
                              "score, add the exponentials up (here with the sink's, below), and divide each one "
                              "by that sum. Because of the exponential, a score a little higher than the rest "
                              "gets a clearly larger share.",
        "underflow": "A weight is exactly 0 also for {keys}, which {q} may see: e^(z − max z) there is below about "
                     "e^−745, the smallest number float64 can hold, so it is rounded to 0.",
        "shift_small": "Every score that takes part here is negative, the largest {top}, so every e^z is below 1 "
                       "(e^{top} = {e_top}). The largest score is subtracted first all the same, as attention code "
                       "always does: the largest exponential becomes e^0 = 1, and the weights stay the same (the "
                       "shift cancels in the division). It matters for scores below about −745, whose e^z float64 "
                       "rounds to exactly 0.",
        "shift_underflow": "Every score that takes part here is negative, below about −745 (the largest is {top}), so "
                           "every e^z would be rounded to exactly 0 in float64 and the division would read 0 / 0. "
                           "So the largest score is subtracted first, as attention code always does: the largest "
                           "exponential becomes e^0 = 1, and the weights stay the same (the shift cancels in the "
                           "division).",
        "shift_large": "The scores are large: the largest is {top}, and e^{top} = {e_top}. So the largest one is "
                       "subtracted before exponentiating, as attention code always does: the largest exponential "
                       "becomes e^0 = 1, and the weights stay the same (the shift cancels in the division). Above "
                       "about 709.78, e^z would overflow float64.",
        "shift_overflow": "The scores are large: the largest is {top}, and e^{top} would overflow float64 (anything "
                          "above about e^709.78 is infinite). So the largest one is subtracted before "
                          "exponentiating, as attention code always does: this keeps e^z from overflowing (the largest "
                          "becomes e^0 = 1), and the weights stay the same (the shift cancels in the division).",
    },
    "sum": {
        "body_some": "Adding the weighted values gives the output of {q}: a blend of the {count} values whose weight "
                     "is not 0 ({keys}), mixed in the proportions of their weights; the other {zero} keys have weight "
                     "0 and add nothing. It has d_v = {d_v} numbers, the width of the values.",
        "body_some_one": "Adding the weighted values gives the output of {q}: a blend of the {count} values whose "
                         "weight is not 0 ({keys}), mixed in the proportions of their weights; the one other key has "
                         "weight 0 and adds nothing. It has d_v = {d_v} numbers, the width of the values.",
        "body_one": "Only one key, {only}, has a weight other than 0, and it is 1: the output of {q} is v{j}, the "
                    "value of {only}, alone, and nothing is blended. It has d_v = {d_v} numbers, the width of the "
                    "values.",
        "body_one_scaled": "Only one key, {only}, has a weight other than 0 ({w}): the output of {q} is {w} × v{j}, "
                           "the value of {only} alone times its weight, and nothing is blended. It has d_v = {d_v} "
                           "numbers, the width of the values.",
        "body_zero": "Every weight of {q} is 0, so its output is 0: no value is added. It has d_v = {d_v} numbers, the "
                     "width of the values.",
        "body_signed": "Adding the weighted values gives the output of {q}: each value times its weight. Some weights "
                       "here are negative, so this is not a blend of the values but a sum in which some are "
                       "subtracted. It has d_v = {d_v} numbers, the width of the values.",
    },
}
