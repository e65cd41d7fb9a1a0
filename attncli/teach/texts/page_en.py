"""The words of the page (``attncli page``) around explain's own: buttons, headings and notes (English)."""

PAGE = {
    "lang_name": "English",
    "title": "Every number of this attention",
    "intro": "Click a number, or reach it with Tab and the arrow keys and press Enter: a panel shows where it comes "
             "from, with this document's numbers. Point at a token to light up its row and column in every table.",
    "heads": "Heads",
    "all_heads": "all",
    "head": "Head {h}",
    "switch_lang": "中文",
    "switch_lang_label": "Show the page in Chinese",
    "theme_dark": "Dark",
    "theme_light": "Light",
    "theme_label": "Switch between the light and the dark theme",
    "path": "Walkthrough",
    "path_intro": "The eight steps of attncli explain, one at a time, for the query and head chosen here.",
    "query": "Query",
    "previous": "Previous step",
    "next": "Next step",
    "goto": "See its tables",
    "close": "Close",
    "value": "{table}, row {row}, column {column}: {value}",
    "masked_value": "{table}, row {row}, column {column}: masked",
    "shown": "{rows} of {n} rows and {columns} of {m} columns are shown: the first and last of a large matrix "
             "(attncli compute --full shows them all).",
    "no_lines": "Like attncli explain, the panel writes out the arithmetic of the first 12 keys of a row only; this "
                "key comes later.",
    "not_worked": "This page writes out explain's steps for {count} (query, head) pairs only (more would make a "
                  "large document's page slow to write); for this number, run attncli explain FILE --head {head} "
                  "--query {query}.",
    "given": "This number is part of the document: nothing computes it.",
    "legend": "Weights, and the scores from the smallest to the largest of each table: the deeper the colour, the "
              "larger the number; masked cells are hatched.",
    "tables": "Tables",
    "decode": "Decoding with a KV cache",
    "decode_intro": "A model that generates text computes this causal attention one token at a time: each new "
                    "token's key and value join a cache, and its query is scored against the keys the cache holds. "
                    "Step t gives exactly row t of the tables below: the cache only saves computing the earlier "
                    "rows again.",
    "decode_step": "Step {t} of {n}: '{token}' arrives; the cache holds {size} keys and values.",
    "decode_evicted": "The sliding window of {w} lets the oldest go.",
    "decode_key": "cached key",
    "decode_score": "scaled score z",
    "decode_weight": "weight a",
    "decode_new": "(new)",
    "decode_same": "Output {out}: the same numbers as row {t} of the weights and head outputs tables.",
    "decode_differs": "Output {out}: row {t} of the full computation differs here (it sees keys the cache does not).",
    "decode_prev": "Previous token",
    "decode_next": "Next token",
    "names": {},  # (in English the tables keep compute's titles)
}

LINEAR = {  # a linear: document's page (docs/format.md Part 4): the words that differ from softmax attention's
    "title": "Every number of this linear attention",
    "path_intro": "The step of attncli explain (the delta rule, or lightning attention's sum), for the token and "
                  "value head chosen here.",
    "query": "Token",
    "heads": "Value heads",
    "given": "The page works out the head outputs o, the state S and (in the delta rule) u, in explain's step; this "
             "number is not in that step: its table's title gives its formula.",
}
