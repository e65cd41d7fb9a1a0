"""What each of explain's sentences that state a fact about the numbers claims, recomputed in numpy from the Trace.

``FACTS`` maps a paragraph's text key (``"softmax.shift_large"``, as :class:`attncli.teach.explain.step.Said`
carries it) to a check of its claim on the chosen query and head, and of the numbers it prints (each must stand
for the value it names, at the decimals printed: :func:`shown`). ``PLAIN`` names the paragraphs that state no fact
about this document's numbers (what a stage does, why models do it). A paragraph in neither fails the test, so
that a new sentence is classified when it is written.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np
from explain_arithmetic import Span

SUB = str.maketrans("₀₁₂₃₄₅₆₇₈₉", "0123456789")


@dataclass
class Row:
    """The chosen query ``i`` of head ``h``, and what the checks read of it."""

    trace: object
    h: int
    i: int
    p: int
    asked: bool

    @property
    def spec(self):
        return self.trace.spec

    @property
    def kv(self) -> int:
        return self.h // (self.spec.heads // self.spec.kv_heads)

    def seen(self, i: int | None = None) -> np.ndarray:
        """Which keys query ``i`` may see (m,), from the document's mask."""
        allowed = self.spec.allowed
        i = self.i if i is None else i
        return np.ones(self.spec.m, bool) if allowed is None else np.asarray(allowed[self.h, i])

    @property
    def a(self) -> np.ndarray:
        return self.trace.weights[self.h, self.i]


def shown(text: str, want: float, what: str = "") -> None:
    """``text`` is how ``want`` prints: to half a unit of its last decimal (of its mantissa, in e-notation)."""
    text = str(text).strip("()")
    assert Span.of(text).meets(Span(float(want)), 1e-9), f"{what}: {text} printed for {want!r}"


def printed(x: float, p: int) -> str:
    """How a table writes ``x``: a whole number without decimals, else ``p`` decimals (never ``-0.0000``)."""
    if x == round(x) and abs(x) < 1e15:
        return str(int(x))
    text = f"{x:.{p}f}"
    return text.lstrip("-") if float(text) == 0 else text


def quoted(names: str) -> list[str]:
    """The tokens of ``“a”, “b” and “c”``."""
    return [part.split("”")[0] for part in str(names).split("“")[1:]]


def names_in(text: str) -> list[str]:
    """``W_Q, W_K and W_V`` (``W_Q、W_K 和 W_V``) → the names."""
    return re.split(r"\s*(?:,|、|和|\band\b)\s*", text.strip())


def _tokens(r: Row, keys) -> list[str]:
    return [r.spec.context_tokens[j] for j in keys][:6]


# ---------------------------------------------------------------- steps 1 to 3


def inputs(r: Row, w: dict) -> None:
    assert (w["n"], w["d_model"]) == r.spec.inputs.shape


def cross(r: Row, w: dict) -> None:
    assert (w["m"], w["d_ctx"]) == r.spec.context.shape


def given(r: Row, w: dict, which: str) -> None:
    left_out = {f"W_{name[0].upper()}" for name in r.spec.identity}
    names = {"W_Q", "W_K", "W_V"} - left_out
    if which == "all":
        assert not left_out, left_out
    elif which == "none":
        assert not names, names
    else:
        assert set(names_in(w["given"])) == names
    if which != "all":
        assert left_out


def omitted(r: Row, w: dict) -> None:
    left_out = {f"W_{name[0].upper()}" for name in r.spec.identity}
    assert set(names_in(w["omitted"])) == left_out


def biases(r: Row, w: dict) -> None:
    have = [name for name, b in (("b_Q", r.spec.b_q), ("b_K", r.spec.b_k), ("b_V", r.spec.b_v)) if b is not None]
    assert names_in(w["biases"]) == have


def heads(r: Row, w: dict) -> None:
    assert w["h"] == r.spec.heads > 1 and w["head"] == r.h + 1


def gqa(r: Row, w: dict) -> None:
    h, g = r.spec.heads, r.spec.kv_heads
    group = h // g
    assert g < h and (w["g"], w["group"], w["head0"]) == (g, group, r.h)
    assert (w["kv0"], w["kv"], w["first"], w["last"]) == (r.h // group, r.h // group + 1, r.h // group * group + 1,
                                                           (r.h // group + 1) * group)


def d_k_d_v(r: Row, w: dict) -> None:
    assert (w["d_k"], w["d_v"]) == (r.spec.d_k, r.spec.d_v) and r.spec.d_k != r.spec.d_v


def same_projection(r: Row) -> bool:
    spec = r.spec
    if "query" in spec.identity and "key" in spec.identity and spec.b_q is None and spec.b_k is None:
        return True
    w_q, w_k = np.asarray(spec.w_q[r.h]), np.asarray(spec.w_k[r.kv])
    b_q = None if spec.b_q is None else np.asarray(spec.b_q[r.h])
    b_k = None if spec.b_k is None else np.asarray(spec.b_k[r.kv])
    return (w_q.shape == w_k.shape and np.array_equal(w_q, w_k)
            and ((b_q is None and b_k is None) or (b_q is not None and b_k is not None and np.array_equal(b_q, b_k))))


# ---------------------------------------------------------------- step 4


def default_query(r: Row, w: dict) -> None:
    counts = [int(r.seen(i).sum()) for i in range(r.spec.n)]
    assert counts[0] < 2 and counts[r.i] >= 2 and all(c < 2 for c in counts[:r.i]), counts
    assert w["q"] == f"“{r.spec.tokens[r.i]}”"


def alibi(r: Row, w: dict, case: str) -> None:
    p_k, p_q = np.asarray(r.spec.key_positions), r.spec.query_positions[r.i]
    seen = r.seen()
    behind, ahead = bool((seen & (p_k < p_q)).any()), bool((seen & (p_k > p_q)).any())
    assert {"behind": behind, "ahead": ahead, "self": not behind and not ahead}[case]
    slopes = np.asarray(r.spec.score_bias.slopes)
    assert slopes[r.h] > 0  # a key behind is pushed down: slope × (p_j − p_i) < 0


def pair(text: str) -> tuple[int, int]:
    """``q′₁·k′₃`` → (0, 2)."""
    q, k = text.split("·")
    return int(q.lstrip("q′̂").translate(SUB)) - 1, int(k.lstrip("k′̂").translate(SUB)) - 1


def asymmetric(r: Row, w: dict, own_row: bool) -> None:
    s = r.trace.scores[r.h]
    a, b = pair(w["qab"])
    assert pair(w["qba"]) == (b, a)
    shown(w["ab"], s[a, b], "q_a·k_b")
    shown(w["ba"], s[b, a], "q_b·k_a")
    assert float(w["ab"]) != float(w["ba"]) and s[a, b] != s[b, a], (w["ab"], w["ba"])  # said to differ, printed apart
    if own_row:
        assert a == r.i
    else:
        assert np.allclose(s[r.i], s[:, r.i], rtol=0, atol=1e-9 * max(1.0, np.abs(s).max()))


def symmetric(r: Row, w: dict, forced: bool) -> None:
    s = r.trace.scores[r.h]
    assert np.allclose(s, s.T, rtol=0, atol=1e-9 * max(1.0, np.abs(s).max()))
    assert same_projection(r) == forced


def symmetric_weights(r: Row, w: dict) -> None:
    spec = r.spec
    m = np.asarray(spec.w_q[r.h]) @ np.asarray(spec.w_k[r.kv]).T
    assert np.allclose(m, m.T, atol=1e-9 * max(1.0, np.abs(m).max())) and not same_projection(r)


def counts(r: Row, w: dict) -> None:
    n, m, d = r.spec.n, r.spec.m, r.spec.d_k
    d_a = w["d_a"]
    assert d_a == (np.asarray(r.spec.w_1).shape[-1] if r.spec.score == "additive" else d)
    assert (w["dot_mul"], w["dot_add"]) == (n * m * d, n * m * (d - 1))
    assert w["add_mul"] == (n + m) * d * d_a + n * m * d_a and w["add_tanh"] == n * m * d_a
    assert w["add_add"] == (n + m) * d_a * (d - 1) + n * m * (2 * d_a - 1)


def chunk(r: Row, w: dict) -> None:
    c, i = r.spec.mask.chunk, r.i + r.spec.mask.offset
    keys = [j for j in range(r.spec.m) if j // c == i // c]
    tokens = r.spec.context_tokens
    assert w["chunk"] == c and w["chunk_keys"] == (f"{tokens[keys[0]]} … {tokens[keys[-1]]}" if keys else "—")


def temperature(r: Row, w: dict) -> None:
    floor_scale, attn_scale = r.spec.query_temperature
    tau = 1 + attn_scale * math.log(1 + math.floor((r.spec.query_positions[r.i] + 1) / floor_scale))
    shown(w["tau"], tau, "τ")
    shown(w["tau"], r.trace.query_temperature[r.i], "τ")


def unscaled(r: Row, i: int) -> np.ndarray:
    """Query i's weights with scale 1, every other stage kept (written again here from the Trace)."""
    spec, s = r.spec, r.trace.scores[r.h, i].copy()
    if spec.softcap is not None:
        s = spec.softcap * np.tanh(s / spec.softcap)
    if r.trace.score_bias is not None:
        b = r.trace.score_bias[r.h, i]
        s = s + np.where(np.isfinite(b), b, 0.0)
    seen = r.seen(i)
    if spec.normalize != "softmax":
        s = np.where(seen, s, 0.0)
        return s if spec.normalize == "none" else s / s.sum()
    logits = np.append(s[seen], [] if spec.sinks is None else [spec.sinks[r.h]])
    e = np.exp(logits - logits.max())
    out = np.zeros(spec.m)
    out[seen] = (e / e.sum())[:seen.sum()]
    return out


def scale_sqrt(r: Row, w: dict, changes: bool) -> None:
    seen = r.seen()
    plain = unscaled(r, r.i)
    differ = [printed(x, r.p) != printed(y, r.p) for x, y in zip(r.a[seen], plain[seen])]
    assert any(differ) == changes, (r.a[seen], plain[seen])
    shown(w["with_max"], r.a[seen].max(), "largest weight")
    if changes:
        shown(w["without_max"], plain[seen].max(), "largest weight without the division")


# ---------------------------------------------------------------- step 5


def top_score(r: Row) -> float:
    z, seen = r.trace.scaled_scores[r.h, r.i], r.seen()
    return max([float(z[seen].max()), *([] if r.spec.sinks is None else [float(r.spec.sinks[r.h])])])


def positive(r: Row, w: dict, zeros: bool) -> None:
    assert (r.a > 0).all() != zeros and (r.a >= 0).all()  # "positive", or "0 or more" (a masked key's 0 too)


def underflow(r: Row, w: dict) -> None:
    seen = r.seen()
    zero = [j for j in range(r.spec.m) if seen[j] and r.a[j] == 0]
    assert w["count"] == len(zero) and quoted(w["keys"]) == _tokens(r, zero)


def shift(r: Row, w: dict, case: str) -> None:
    top = top_score(r)
    shown(w["top"], top, "the largest score")
    with np.errstate(over="ignore", under="ignore"):
        e = math.exp(top) if top < 709.78 else math.inf
    assert {"small": -745 < top < 0 and float(w["top"]) < 0, "underflow": e == 0.0, "large": 30 < top and e < math.inf,
            "overflow": e == math.inf}[case], top
    if case in ("small", "large"):
        shown(w["e_top"], e, "e^top")


def masked(r: Row, w: dict, every: bool) -> None:
    seen = r.seen()
    assert (not seen.any()) if every else (seen.any() and not seen.all())
    if every:
        assert (r.a == 0).all() and (r.trace.head_outputs[r.h, r.i] == 0).all()


def sink(r: Row, w: dict) -> None:
    seen = r.seen()
    z, s = r.trace.scaled_scores[r.h, r.i][seen], float(r.spec.sinks[r.h])
    top = max([s, *z])
    share = math.exp(s - top) / (math.exp(s - top) + float(np.exp(z - top).sum()))
    shown(w["s"], s, "sink")
    shown(w["share"], share, "σ")
    if w["rest"] == f"1 − {w['share']}":  # 1 − σ written out: σ too small for float64's 1 − σ
        assert 1 - share == 1.0 == r.a.sum() or abs(r.a.sum() - 1) < 1e-15
    else:
        shown(w["rest"], 1 - share, "1 − σ")
        shown(w["rest"], r.a.sum(), "Σ a")
        assert share == 0 or float(w["rest"]) != 1, ("printed as if there were no share", w["rest"])
    assert share == 0 or float(w["share"]) != 0, ("printed as if there were no share", w["share"])
