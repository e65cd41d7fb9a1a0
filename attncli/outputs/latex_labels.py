"""Token labels beside a LaTeX matrix: a label column for the rows and a header row for the keys (issue 32).

A matrix whose rows are tokens (X, Q, K, V, S, A, H, Y …) is written as an ``array`` (LaTeX's own, nothing beyond
amsmath's ``\\text``): its first column holds the row tokens, set off by a vertical rule, and, when its columns
are tokens too (scores and weights: the keys), a first row holds them, set off by ``\\hline``.  Matrices without
tokens (W_Q, a bias, the rotary frequencies) stay ``bmatrix``.  Labels are escaped for text mode.

>>> print(label_tex("d_k & 50% {x}"))
\\text{d\\_k \\& 50\\% \\{x\\}}
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from attncli.core.errors import visible

# text mode: each character LaTeX would read as markup, as the command that prints it
_TEXT_SPECIAL = {"\\": r"\textbackslash{}", "{": r"\{", "}": r"\}", "_": r"\_", "&": r"\&", "%": r"\%", "#": r"\#",
                 "$": r"\$", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "<": r"\textless{}",
                 ">": r"\textgreater{}", "|": r"\textbar{}", "-": "-{}"}  # "-{}": no -- or --- dash ligature
_SPECIAL = re.compile("[" + re.escape("".join(_TEXT_SPECIAL)) + "]")
# Chinese, Japanese and Korean characters: pdflatex cannot set them without CJKutf8; xelatex needs xeCJK
_CJK = re.compile("[\u1100-\u11ff\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef\U00020000-\U0003ffff]")
CJK_NOTE = ("% The labels hold Chinese, Japanese or Korean characters: compile with xelatex and\n"
            "% \\usepackage{xeCJK}, or with pdflatex and \\usepackage{CJKutf8}, the equations inside\n"
            "% \\begin{CJK}{UTF8}{gbsn} ... \\end{CJK}.")
CJK_NOTES = {"en": CJK_NOTE,  # the note in each language of the comments
             "zh": "% 标签中含有中文、日文或韩文字符：请用 xelatex 编译并加上 \\usepackage{xeCJK}，\n"
                   "% 或用 pdflatex 编译并加上 \\usepackage{CJKutf8}，把公式放在\n"
                   "% \\begin{CJK}{UTF8}{gbsn} ... \\end{CJK} 之中。"}


def label_tex(label: str) -> str:
    """A token as text inside math: one line, control characters visible, LaTeX's special characters escaped."""
    label = visible(" ".join(label.split()))
    return "\\text{" + _SPECIAL.sub(lambda m: _TEXT_SPECIAL[m.group()], label) + "}"


def has_cjk(labels: list[str]) -> bool:
    return any(_CJK.search(label) for label in labels)


# Widths in points of Computer Modern at 10 pt, a little wide (the widest small letters and capitals of cmr10)
def label_pt(label: str) -> float:
    """The width of :func:`label_tex` of ``label``, never less than TeX makes it.

    >>> label_pt("Input 1")
    38.35
    """
    label = visible(" ".join(label.split()))
    return round(sum(_char_pt(c) for c in label), 2)


def _char_pt(c: str) -> float:
    if c == " ":
        return 3.33
    if _CJK.match(c):
        return 10.0
    if c in "mwMW":
        return 10.28
    return 7.78 if c.isupper() else 5.0 if c.isdigit() else 5.56


@dataclass(frozen=True)
class Frame:
    """The labels a matrix is written with: its row tokens and column tokens, or None where it has none."""

    rows: list[str] | None
    columns: list[str] | None

    @property
    def labelled(self) -> bool:
        return self.rows is not None or self.columns is not None

    def column_pts(self, cols: list[int | None], widths: list[float]) -> list[float]:
        """The width of each shown column: its numbers' (``widths``), or its header's when that is wider."""
        if self.columns is None:
            return widths
        return [max(w, 13.4 if j is None else label_pt(self.columns[j])) for j, w in zip(cols, widths)]

    def total_pt(self, rows: list[int | None], widths: list[float]) -> float:
        """The width of the matrix: a ``bmatrix`` (columns 10 pt apart, brackets 7 pt each), or an ``array`` (each
        column 5 pt either side, the label column and its rule)."""
        if not self.labelled:
            return sum(widths) + 10.0 * (len(widths) - 1) + 14.0
        label = 0.0 if self.rows is None else max(2.78 if i is None else label_pt(self.rows[i]) for i in rows) + 10.4
        return label + sum(widths) + 10.0 * len(widths)

    def matrix(self, rows: list[int | None], cols: list[int | None], cells: list[list[str]]) -> str:
        """The matrix in TeX: ``bmatrix`` without labels, else an ``array`` with a label column and a header row."""
        if not self.labelled:
            return "\\begin{bmatrix}\n" + " \\\\\n".join(" & ".join(line) for line in cells) + "\n\\end{bmatrix}"
        rows_tex = self.rows and [label_tex(label) for label in self.rows]
        lead = (lambda i: []) if rows_tex is None else (lambda i: [r"\vdots" if i is None else rows_tex[i]])
        head = ""
        if self.columns is not None:
            header = [r"\cdots" if j is None else label_tex(self.columns[j]) for j in cols]
            head = " & ".join(([""] if self.rows is not None else []) + header) + " \\\\ \\hline\n"
        body = " \\\\\n".join(" & ".join(lead(i) + line) for i, line in zip(rows, cells))
        spec = ("l|" if self.rows is not None else "") + "r" * len(cols)
        return f"\\begin{{array}}{{{spec}}}\n{head}{body}\n\\end{{array}}"
