"""A naive, loop-by-loop attention written from FORMAT.md, independent of attncli.

Plain Python lists and ``math``: no numpy, nothing shared with the package,
so agreement with it is evidence, not an echo.
"""

from __future__ import annotations

import math


def matmul(a, b):
    return [[sum(a[i][t] * b[t][j] for t in range(len(b))) for j in range(len(b[0]))] for i in range(len(a))]


def identity(d):
    return [[1.0 if i == j else 0.0 for j in range(d)] for i in range(d)]


def split_heads(w, heads):
    """A 2-D d_in × (h·d) weight -> h matrices d_in × d (consecutive column blocks); 3-D as is."""
    if isinstance(w[0][0], list):
        return w
    d = len(w[0]) // heads
    return [[row[i * d : (i + 1) * d] for row in w] for i in range(heads)]


def naive_attention(inputs, query=None, key=None, value=None, *, heads=1, context=None, bias=None,
                    output=None, scale="sqrt", mask=None):
    bias = bias or {}
    source = context if context is not None else inputs
    n, m = len(inputs), len(source)
    wq = split_heads(query if query is not None else identity(len(inputs[0])), heads)
    wk = split_heads(key if key is not None else identity(len(source[0])), heads)
    wv = split_heads(value if value is not None else identity(len(source[0])), heads)
    heads = len(wq)
    d_k, d_v = len(wq[0][0]), len(wv[0][0])
    factor = {"sqrt": 1 / math.sqrt(d_k), "none": 1.0}.get(scale, scale)
    if mask == "causal":
        mask = [[1 if j <= i else 0 for j in range(m)] for i in range(n)]
    result = {k: [] for k in ("queries", "keys", "values", "scores", "scaled_scores", "weights", "head_outputs")}
    for h in range(heads):
        q, k, v = matmul(inputs, wq[h]), matmul(source, wk[h]), matmul(source, wv[h])
        for rows, name, d in ((q, "query", d_k), (k, "key", d_k), (v, "value", d_v)):
            if name in bias:
                b = bias[name][h * d : (h + 1) * d]
                for row in rows:
                    for j in range(d):
                        row[j] += b[j]
        s = [[sum(q[i][t] * k[j][t] for t in range(d_k)) for j in range(m)] for i in range(n)]
        z = [[factor * s[i][j] for j in range(m)] for i in range(n)]
        a = []
        for i in range(n):
            allowed = [mask is None or bool(mask[i][j]) for j in range(m)]
            if not any(allowed):
                a.append([0.0] * m)
                continue
            top = max(z[i][j] for j in range(m) if allowed[j])
            e = [math.exp(z[i][j] - top) if allowed[j] else 0.0 for j in range(m)]
            a.append([x / sum(e) for x in e])
        o = [[sum(a[i][j] * v[j][c] for j in range(m)) for c in range(d_v)] for i in range(n)]
        for name, value_ in zip(result, (q, k, v, s, z, a, o)):
            result[name].append(value_)
    concat = [sum((result["head_outputs"][h][i] for h in range(heads)), []) for i in range(n)]
    y = matmul(concat, output) if output is not None else concat
    if "output" in bias:
        y = [[y[i][j] + bias["output"][j] for j in range(len(y[0]))] for i in range(n)]
    result["output"] = y
    result["scale"] = factor
    return result


def max_abs_diff(a, b) -> float:
    """Largest |a - b| over two nested lists of the same shape (None only against None)."""
    if isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), (a, b)
        return max((max_abs_diff(x, y) for x, y in zip(a, b)), default=0.0)
    if a is None or b is None:
        assert a is None and b is None, (a, b)
        return 0.0
    return abs(a - b)
