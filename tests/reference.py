"""A naive, loop-by-loop attention written from FORMAT.md, independent of attncli.

Plain Python lists and ``math``: no numpy, nothing shared with the package,
so agreement with it is evidence, not an echo.

Beyond the core (README, "Beyond the core: positions, Add & Norm, other scores"):

    positional   P[pos, 2i] = sin(pos / 10000^(2i/d)), P[pos, 2i+1] = cos(…), or a matrix: X₀ = X + P
    score        additive: e_ij = vᵀ·tanh(q_i·W₁ + k_j·W₂) per head, not scaled unless a scale is given
    normalize    softmax (default) · sum: z_ij / Σ_allowed z_ij · none: the scaled scores themselves
    add_norm     R = X₀ + Y, then γ ⊙ (R − mean) / √(var + ε) + β per row (biased variance, ε = 1e-5)

:func:`naive_attention` takes the pieces as arguments; :func:`reference_document` takes a whole
document as plain Python values (as PyYAML or json read it) and answers with the keys of the JSON.
"""

from __future__ import annotations

import math

LAYER_NORM_EPS = 1e-5  # torch.nn.LayerNorm's default


class NotComputable(ValueError):
    """The contract says attncli must refuse this document (exit 2), e.g. a sum-normalised row summing to 0."""


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


def sinusoidal(n, d):
    """P[pos][2i] = sin(pos / 10000^(2i/d)), P[pos][2i+1] = cos(pos / 10000^(2i/d)): n × d."""
    p = [[0.0] * d for _ in range(n)]
    for pos in range(n):
        for c in range(d):
            angle = pos / 10000.0 ** ((c - c % 2) / d)
            p[pos][c] = math.sin(angle) if c % 2 == 0 else math.cos(angle)
    return p


def per_head(w, heads, depth):
    """One copy per head of a weight shared by the heads (depth 2: matrix, 1: vector); per-head ones as they are."""
    nested = w
    for _ in range(depth):
        nested = nested[0]
    if not isinstance(nested, list):
        return [w] * heads
    return w * heads if depth == 1 and len(w) == 1 else w  # one per head; a 1 × d_a `v` is shared too


def layer_norm(r, gamma=None, beta=None, eps=LAYER_NORM_EPS):
    """Each row: γ ⊙ (r − mean) / √(var + ε) + β, var the biased variance (as torch.nn.LayerNorm)."""
    out = []
    for row in r:
        d = len(row)
        mean = sum(row) / d
        var = sum((x - mean) ** 2 for x in row) / d
        g = gamma if gamma is not None else [1.0] * d
        b = beta if beta is not None else [0.0] * d
        out.append([g[j] * (row[j] - mean) / math.sqrt(var + eps) + b[j] for j in range(d)])
    return out


def naive_attention(inputs, query=None, key=None, value=None, *, heads=1, context=None, bias=None,
                    output=None, scale=None, mask=None, positional=None, score="dot", additive=None,
                    normalize="softmax", add_norm=None):
    """Every intermediate of one attention, the JSON's keys (``scaled_scores`` unmasked, as computed).

    ``positional``: None, ``"sinusoidal"`` or an n × d_model matrix. ``score="additive"`` needs
    ``additive={"w1": …, "w2": …, "v": …}``. ``normalize``: softmax, sum or none. ``add_norm``: None/False,
    True, or a dict with any of gamma, beta, eps. ``scale``: sqrt, none or a number; None is the default
    (sqrt, or none for additive scores).
    """
    bias = bias or {}
    n = len(inputs)
    p = positions(n, len(inputs[0]), positional)
    x0 = inputs if p is None else [[inputs[i][j] + p[i][j] for j in range(len(inputs[0]))] for i in range(n)]
    source = context if context is not None else x0
    m = len(source)
    wq = split_heads(query if query is not None else identity(len(inputs[0])), heads)
    wk = split_heads(key if key is not None else identity(len(source[0])), heads)
    wv = split_heads(value if value is not None else identity(len(source[0])), heads)
    heads = len(wq)
    d_k, d_v = len(wq[0][0]), len(wv[0][0])
    if scale is None:
        scale = "none" if score == "additive" else "sqrt"
    factor = {"sqrt": 1 / math.sqrt(d_k), "none": 1.0}.get(scale, scale)
    mask = mask_matrix(mask, n, m)
    if score == "additive":
        w1, w2, va = (per_head(additive[name], heads, depth) for name, depth in (("w1", 2), ("w2", 2), ("v", 1)))
    result = {k: [] for k in ("queries", "keys", "values", "scores", "scaled_scores", "weights", "head_outputs")}
    for h in range(heads):
        q, k, v = matmul(x0, wq[h]), matmul(source, wk[h]), matmul(source, wv[h])
        for rows, name, d in ((q, "query", d_k), (k, "key", d_k), (v, "value", d_v)):
            if name in bias:
                add_bias(rows, bias[name][h * d : (h + 1) * d])
        s = additive_scores(q, k, w1[h], w2[h], va[h]) if score == "additive" else dot_scores(q, k)
        z = [[factor * s[i][j] for j in range(m)] for i in range(n)]
        a = [weights_row(z[i], [mask is None or bool(mask[i][j]) for j in range(m)], normalize,
                         f"query {i + 1} in head {h + 1}") for i in range(n)]
        o = [[sum(a[i][j] * v[j][c] for j in range(m)) for c in range(d_v)] for i in range(n)]
        for name, value_ in zip(result, (q, k, v, s, z, a, o)):
            result[name].append(value_)
    concat = [sum((result["head_outputs"][h][i] for h in range(heads)), []) for i in range(n)]
    y = matmul(concat, output) if output is not None else concat
    if "output" in bias:
        y = [[y[i][j] + bias["output"][j] for j in range(len(y[0]))] for i in range(n)]
    result["output"] = y
    result["scale"] = factor
    result["empty_queries"] = [i for i in range(n) if mask is not None and not any(mask[i])]
    if p is not None:
        result["positional"] = p
    if add_norm is not None and add_norm is not False:
        result["residual"], result["normalized"] = add_and_norm(x0, y, add_norm)
    return result


def positions(n, d, positional):
    """P for ``positional``: sinusoidal, or the n × d matrix given; None without positions."""
    if positional is None or positional is False or positional == "none":
        return None
    return sinusoidal(n, d) if positional == "sinusoidal" else positional


def mask_matrix(mask, n, m):
    """The mask as an n × m matrix of 0 and 1 (causal written out), or None for none."""
    if mask == "causal":
        return [[1 if j <= i else 0 for j in range(m)] for i in range(n)]
    return None if mask == "none" else mask


def add_bias(rows, b):
    """Each row + b, in place (the row's width of b)."""
    for row in rows:
        for j in range(len(row)):
            row[j] += b[j]


def dot_scores(q, k):
    """S = Q·Kᵀ: s_ij = q_i·k_j."""
    return [[sum(q[i][t] * k[j][t] for t in range(len(q[0]))) for j in range(len(k))] for i in range(len(q))]


def additive_scores(q, k, w1, w2, v):
    """e_ij = vᵀ·tanh(q_i·W₁ + k_j·W₂)."""
    qa, ka = matmul(q, w1), matmul(k, w2)  # n × d_a, m × d_a
    return [[sum(v[c] * math.tanh(qa[i][c] + ka[j][c]) for c in range(len(v))) for j in range(len(k))]
            for i in range(len(q))]


def weights_row(z, allowed, normalize, where):
    """One query's weights from its scaled scores: softmax, sum or none over the allowed keys."""
    m = len(z)
    if not any(allowed):
        return [0.0] * m  # every key masked: zero weights, whatever the normalisation
    if normalize == "none":
        return [z[j] if allowed[j] else 0.0 for j in range(m)]
    if normalize == "sum":
        total = sum(z[j] for j in range(m) if allowed[j])
        if total == 0:
            raise NotComputable(f"normalize: sum: the scores of {where} sum to 0")
        return [z[j] / total if allowed[j] else 0.0 for j in range(m)]
    top = max(z[j] for j in range(m) if allowed[j])
    e = [math.exp(z[j] - top) if allowed[j] else 0.0 for j in range(m)]
    return [x / sum(e) for x in e]


def add_and_norm(x0, y, add_norm):
    """R = X₀ + Y, and LayerNorm(R) with the γ, β and ε ``add_norm`` gives (True: the defaults)."""
    options = add_norm if isinstance(add_norm, dict) else {}
    assert len(y[0]) == len(x0[0]), "add_norm needs d_out = d_model"
    residual = [[x0[i][j] + y[i][j] for j in range(len(y[0]))] for i in range(len(y))]
    return residual, layer_norm(residual, flat(options.get("gamma")), flat(options.get("beta")),
                                options.get("eps", LAYER_NORM_EPS))


def flat(vector):
    """A vector written as a list, one row or one column -> a list of numbers (None stays None)."""
    if vector is None or not isinstance(vector[0], list):
        return vector
    return [x for row in vector for x in row]


def reference_document(doc):
    """A document (plain Python values, every matrix inline) -> the JSON attncli should print.

    Masked ``scaled_scores`` are None, as in the JSON. Raises :class:`NotComputable` where attncli
    must answer with an error.
    """
    weights, bias = doc.get("weights") or {}, doc.get("bias") or {}
    heads = doc.get("heads")
    if heads is None:
        three_d = [w for w in (weights.get(k) for k in ("query", "key", "value")) if w is not None and
                   isinstance(w[0][0], list)]
        heads = len(three_d[0]) if three_d else 1
    bias = {k: flat(v) for k, v in bias.items()}
    mask = doc.get("mask")
    result = naive_attention(
        doc["inputs"], weights.get("query"), weights.get("key"), weights.get("value"), heads=heads,
        context=doc.get("context"), bias=bias, output=weights.get("output"), scale=doc.get("scale"), mask=mask,
        positional=doc.get("positional"), score=doc.get("score", "dot"),
        additive={k: weights[k] for k in ("w1", "w2", "v") if k in weights}, normalize=doc.get("normalize", "softmax"),
        add_norm=doc.get("add_norm"))
    if mask is not None and mask != "none":
        allowed = mask if mask != "causal" else [[j <= i for j in range(len(result["keys"][0]))]
                                                  for i in range(len(doc["inputs"]))]
        result["scaled_scores"] = [[[z if allowed[i][j] else None for j, z in enumerate(row)]
                                    for i, row in enumerate(head)] for head in result["scaled_scores"]]
    result["inputs"] = doc["inputs"]
    if doc.get("context") is not None:
        result["context"] = doc["context"]
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


def max_rel_diff(a, b) -> float:
    """Largest |a - b| / max(1, |b|): the absolute difference for numbers up to 1, relative beyond."""
    if isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), (a, b)
        return max((max_rel_diff(x, y) for x, y in zip(a, b)), default=0.0)
    if a is None or b is None:
        assert a is None and b is None, (a, b)
        return 0.0
    return abs(a - b) / max(1.0, abs(b))


def max_scaled_diff(a, b) -> float:
    """Largest |a - b| over the largest |b| (at least 1): rounding scales with the largest entry of a result."""
    def flat(x):
        return [z for y in x for z in flat(y)] if isinstance(x, list) else [x]

    largest = max((abs(x) for x in flat(b) if x is not None), default=0.0)
    return max_abs_diff(a, b) / max(1.0, largest)
