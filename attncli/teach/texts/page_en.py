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
    "names": {},  # (in English the tables keep compute's titles)
}
