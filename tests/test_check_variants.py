"""`attncli check` names a learner's slip from the stages' declared variants, and never a wrong one.

Each of the learner mistakes below is worked out here in plain numpy, as a learner makes it (a loop-free formula
written for the test, never attncli's variant code): the scale's denominator (d_k, √d_v, √d_model, √n, 1, a rounded
√d_k, × for ÷), softmax's base, axis, maximum, normaliser, log-softmax, a mask's diagonal, window ± 1, padding on
the query rows, the heads' columns, grouped-query heads read as one, RoPE's pair order, sign and frequencies, ALiBi's
distance, sign, slope order and base, a norm's axis, ε, root, γ and β, the residual's operands, the products'
operands, and the backward pass (dZ, D, dK, the scale); a stack's layer 2 fed the stack's own inputs and the
overflow are in test_check_overflow_and_stacks.py.  The answer gives the quantity the slip makes and, often, the
ones after it: a variant is named only when it reproduces every number given.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import answer_checked as check

R = np.random.default_rng(44)


def ints(shape, lo=-1, hi=2) -> np.ndarray:
    return R.integers(lo, hi, shape).astype(float)


def softmax(z: np.ndarray, ok: np.ndarray | None = None, base: float = np.e, axis: int = -1) -> np.ndarray:
    ok = np.ones(z.shape, bool) if ok is None else np.broadcast_to(ok, z.shape)
    zz = np.where(ok, z, -np.inf)
    e = np.where(ok, base ** (zz - zz.max(axis=axis, keepdims=True)), 0.0)
    return e / e.sum(axis=axis, keepdims=True)


def r4(a) -> list:
    return np.round(np.asarray(a, float), 4).tolist()


# ---------------------------------------------------------------- one head: n 5, d_model 6, d_k 3, d_v 2

X = ints((5, 6), -1, 3)
WQ, WK, WV = ints((6, 3)), ints((6, 3)), ints((6, 2))
ONE = {"inputs": X.tolist(), "weights": {"query": WQ.tolist(), "key": WK.tolist(), "value": WV.tolist()}}
Q, K, V = X @ WQ, X @ WK, X @ WV
S = Q @ K.T


def with_scale(c: float) -> dict:
    a = softmax(c * S)
    return {"scaled_scores": r4(c * S), "weights": r4(a), "output": r4(a @ V)}


def one_head_cases():
    yield "scale_left_out", ONE, with_scale(1.0)
    yield "scale_twice_dk", ONE, with_scale(1 / 3)
    yield "scale_d_v", ONE, with_scale(1 / np.sqrt(2))
    yield "scale_d_model", ONE, with_scale(1 / np.sqrt(6))
    yield "scale_n", ONE, with_scale(1 / np.sqrt(5))
    yield "scale_inverted", ONE, {"weights": with_scale(np.sqrt(3))["weights"]}
    yield "scale_rounded", ONE, {"scaled_scores": r4(S / 1.7)}
    z = S / np.sqrt(3)
    for name, a in (("softmax_base_2", softmax(z, base=2.0)), ("softmax_axis", softmax(z, axis=0)),
                    ("sum_whole", np.exp(z) / np.exp(z).sum()),
                    ("log_softmax", z - np.log(np.exp(z).sum(axis=1, keepdims=True))),
                    ("not_divided", np.exp(z)),
                    ("max_column", np.exp(z - z.max(axis=0)) / np.exp(z - z.max(axis=0)).sum(axis=1, keepdims=True))):
        yield name, ONE, {"weights": r4(a), "output": r4(a @ V)}
    a = softmax(z)
    yield "weights_column", ONE, {"output": r4(a.T @ V)}
    left = a @ V - a[:, 2:3] * V[2:3]
    yield "left_out_one", ONE, {"weights": r4(a), "output": r4(left)}
    yield "rounded_1", ONE, {"weights": r4(np.round(a, 1)), "output": r4(np.round(a, 1) @ V)}
    yield "scores_transposed", ONE, {"scores": r4(S.T)}
    yield "softmax_twice", ONE, {"weights": r4(softmax(softmax(z))), "output": r4(softmax(softmax(z)) @ V)}


def times_keys_case():
    wv = ints((6, 3))
    doc = {"inputs": X.tolist(), "weights": {"query": WQ.tolist(), "key": WK.tolist(), "value": wv.tolist()}}
    a = softmax(S / np.sqrt(3))
    return doc, {"weights": r4(a), "output": r4(a @ K)}


def values_as_keys_case():
    wv = ints((6, 3))
    doc = {"inputs": X.tolist(), "weights": {"query": WQ.tolist(), "key": WK.tolist(), "value": wv.tolist()}}
    return doc, {"scores": r4(Q @ (X @ wv).T)}


# ---------------------------------------------------------------- masks: causal, a window, key padding

XM = ints((5, 4), -1, 3)
WQM, WKM, WVM = ints((4, 2)), ints((4, 2)), ints((4, 2))
QM, KM, VM = XM @ WQM, XM @ WKM, XM @ WVM
ZM = QM @ KM.T / np.sqrt(2)
ROW, COL = np.indices((5, 5))
MASKED = {"inputs": XM.tolist(), "weights": {"query": WQM.tolist(), "key": WKM.tolist(), "value": WVM.tolist()}}


def masked_answer(ok: np.ndarray) -> dict:
    a = softmax(ZM, ok)
    return {"weights": r4(a), "output": r4(a @ VM)}


def mask_cases():
    yield "causal_strict", {**MASKED, "mask": "causal"}, masked_answer_strict()
    yield "causal_future", {**MASKED, "mask": "causal"}, masked_answer(COL >= ROW)
    yield "mask_ignored", {**MASKED, "mask": "causal"}, masked_answer(np.ones((5, 5), bool))
    behind = ROW - COL  # how far key j is behind query i
    yield "window_wider", {**MASKED, "mask": {"causal": True, "window": 2}}, masked_answer((behind >= 0) & (behind < 3))
    yield "window_narrower", {**MASKED, "mask": {"causal": True, "window": 3}}, masked_answer((behind >= 0)
                                                                                              & (behind < 2))
    pad = np.array([1, 1, 1, 0, 1], bool)
    yield "padding_rows", {**MASKED, "mask": {"keys": pad.astype(int).tolist()}}, padding_rows_answer(pad)
    yield "mask_after", {**MASKED, "mask": "causal"}, mask_after_answer()


def masked_answer_strict() -> dict:
    """The diagonal hidden too: query 1 sees no key at all (zero weights), query i the keys before it."""
    ok = COL < ROW
    top = np.array([ZM[i, :i].max() if i else 0.0 for i in range(5)])[:, None]
    e = np.where(ok, np.exp(ZM - top), 0.0)
    total = e.sum(axis=1, keepdims=True)
    a = np.divide(e, total, out=np.zeros_like(e), where=total > 0)
    return {"weights": r4(a), "output": r4(a @ VM)}


def padding_rows_answer(pad: np.ndarray) -> dict:
    ok = np.broadcast_to(pad[:, None], (5, 5))  # the padded token's row masked, every key seen
    e = np.where(ok, np.exp(ZM - ZM.max(axis=1, keepdims=True)), 0.0)
    total = e.sum(axis=1, keepdims=True)
    a = np.divide(e, total, out=np.zeros_like(e), where=total > 0)
    return {"weights": r4(a), "output": r4(a @ VM)}


def mask_after_answer() -> dict:
    a = np.where(COL <= ROW, softmax(ZM), 0.0)
    return {"weights": r4(a), "output": r4(a @ VM)}


# ---------------------------------------------------------------- heads: 2 heads of 2, W_O; grouped-query

XH = ints((4, 4), -1, 3)
WQH, WKH, WVH, WOH = ints((4, 4)), ints((4, 4)), ints((4, 4)), ints((4, 3))
WO_SQUARE = ints((4, 4))
HEADS = {"inputs": XH.tolist(), "heads": 2,
         "weights": {"query": WQH.tolist(), "key": WKH.tolist(), "value": WVH.tolist(), "output": WOH.tolist()}}


def two_heads(columns) -> np.ndarray:
    """The output with head h taking ``columns(h)`` of each weight."""
    out = []
    for h in range(2):
        c = columns(h)
        q, k, v = XH @ WQH[:, c], XH @ WKH[:, c], XH @ WVH[:, c]
        out.append(softmax(q @ k.T / np.sqrt(2)) @ v)
    return np.concatenate(out, axis=1)


def head_cases():
    yield "heads_one_block", HEADS, {"output": r4(two_heads(lambda h: slice(0, 2)) @ WOH)}
    yield "heads_split", HEADS, {"output": r4(two_heads(lambda h: slice(h, 4, 2)) @ WOH)}
    square = {**HEADS, "weights": {**HEADS["weights"], "output": WO_SQUARE.tolist()}}
    yield "w_o_left_out", square, {"output": r4(two_heads(lambda h: slice(2 * h, 2 * h + 2)))}
    right = two_heads(lambda h: slice(2 * h, 2 * h + 2))
    yield "heads_order", HEADS, {"output": r4(np.concatenate([right[:, 2:], right[:, :2]], axis=1) @ WOH)}


XG = ints((4, 4), -1, 3)
WQG, WKG, WVG = ints((4, 8)), ints((4, 4)), ints((4, 4))
GQA = {"inputs": XG.tolist(), "heads": 4, "kv_heads": 2,
       "weights": {"query": WQG.tolist(), "key": WKG.tolist(), "value": WVG.tolist()}}


def gqa_answer(kv_of) -> dict:
    heads = []
    for h in range(4):
        g = kv_of(h)
        q, k, v = XG @ WQG[:, 2 * h:2 * h + 2], XG @ WKG[:, 2 * g:2 * g + 2], XG @ WVG[:, 2 * g:2 * g + 2]
        heads.append(softmax(q @ k.T / np.sqrt(2)) @ v)
    return {"output": r4(np.concatenate(heads, axis=1))}


# ---------------------------------------------------------------- RoPE: n 4, d_k 4, θ = 100

XR = ints((4, 4), -1, 3)
WQR, WKR, WVR = ints((4, 4)), ints((4, 4)), ints((4, 4))
ROPE = {"inputs": XR.tolist(), "rope": {"base": 100},
        "weights": {"query": WQR.tolist(), "key": WKR.tolist(), "value": WVR.tolist()}}


def rotated(x: np.ndarray, freqs: np.ndarray, pos: np.ndarray, interleaved: bool = False) -> np.ndarray:
    """Each pair (a, b) turned by p·f: halves (i, i + 2) or neighbours (2i, 2i + 1)."""
    out = x.copy()
    for row, p in enumerate(pos):
        for i, f in enumerate(freqs):
            u, w = (2 * i, 2 * i + 1) if interleaved else (i, i + 2)
            a, b = x[row, u], x[row, w]
            out[row, u], out[row, w] = a * np.cos(p * f) - b * np.sin(p * f), b * np.cos(p * f) + a * np.sin(p * f)
    return out


def rope_answer(freqs=None, pos=None, interleaved=False) -> dict:
    freqs = 1 / 100.0 ** (np.arange(0, 4, 2) / 4) if freqs is None else freqs
    pos = np.arange(4.0) if pos is None else pos
    q, k = XR @ WQR, XR @ WKR
    qr, kr = rotated(q, freqs, pos, interleaved), rotated(k, freqs, pos, interleaved)
    return {"queries_rotated": r4(qr), "scores": r4(qr @ kr.T)}


def rope_cases():
    right = 1 / 100.0 ** (np.arange(0, 4, 2) / 4)
    yield "rope_interleaved", ROPE, rope_answer(interleaved=True)
    yield "rope_reversed", ROPE, rope_answer(freqs=-right)
    yield "rope_frequency_no_2", ROPE, rope_answer(freqs=1 / 100.0 ** (np.arange(2) / 4))
    yield "rope_from_1", ROPE, rope_answer(pos=np.arange(1.0, 5.0))


# ---------------------------------------------------------------- ALiBi: 2 heads, no mask (both directions)

XA = ints((4, 4), -1, 2)
WQA, WKA, WVA = ints((4, 4)), ints((4, 4)), ints((4, 4))
ALIBI = {"inputs": XA.tolist(), "heads": 2, "score_bias": {"alibi": True},
         "weights": {"query": WQA.tolist(), "key": WKA.tolist(), "value": WVA.tolist()}}


def alibi_answer(bias) -> dict:
    """The weights with B[h] = bias(h, i, j); the right slopes are 2^(−8k/2) = 1/16, 1/256."""
    i, j = np.indices((4, 4))
    weights = []
    for h in range(2):
        c = slice(2 * h, 2 * h + 2)
        z = (XA @ WQA[:, c]) @ (XA @ WKA[:, c]).T / np.sqrt(2) + bias(h, i, j)
        weights.append(softmax(z))
    return {"weights": r4(np.stack(weights))}


def alibi_cases():
    slope = [2.0 ** -4, 2.0 ** -8]
    yield "alibi_distance_abs", ALIBI, alibi_answer(lambda h, i, j: -slope[h] * np.abs(j - i))
    yield "alibi_reversed", ALIBI, alibi_answer(lambda h, i, j: slope[h] * (i - j))
    yield "alibi_slopes_reversed", ALIBI, alibi_answer(lambda h, i, j: slope[1 - h] * (j - i))
    yield "alibi_base_e", ALIBI, alibi_answer(lambda h, i, j: np.exp(-8.0 * (h + 1) / 2) * (j - i))


# ---------------------------------------------------------------- norms and the residual

XN = np.array([[1.0, -2.0, 0.0, 2.0], [0.0, 1.0, 2.0, -1.0], [2.0, 2.0, -1.0, 0.0]])
GAMMA, BETA = np.array([1.5, 0.5, 1.0, 2.0]), np.array([0.25, -0.5, 0.0, 1.0])
WQN, WKN, WVN = ints((4, 2)), ints((4, 2)), ints((4, 2))
WON = ints((2, 4))
PRE = {"inputs": XN.tolist(), "pre_norm": {"kind": "layer", "gamma": GAMMA.tolist(), "beta": BETA.tolist(),
                                           "eps": 0.5}, "residual": True,
       "weights": {"query": WQN.tolist(), "key": WKN.tolist(), "value": WVN.tolist(), "output": WON.tolist()}}


def layer(x, gamma=GAMMA, beta=BETA, eps=0.5, axis=-1, root=True):
    spread = x.var(axis=axis, keepdims=True) + eps
    return gamma * (x - x.mean(axis=axis, keepdims=True)) / (np.sqrt(spread) if root else spread) + beta


def block_from(x_hat: np.ndarray) -> np.ndarray:
    q, k, v = x_hat @ WQN, x_hat @ WKN, x_hat @ WVN
    return softmax(q @ k.T / np.sqrt(2)) @ v @ WON


def norm_cases():
    for name, x_hat in (("norm_axis", layer(XN, axis=0)), ("norm_eps_left_out", layer(XN, eps=0.0)),
                        ("norm_no_root", layer(XN, root=False)),
                        ("norm_gamma_beta_swapped", layer(XN, gamma=BETA, beta=GAMMA))):
        yield name, PRE, {"normalized_inputs": r4(x_hat), "residual": r4(XN + block_from(x_hat))}
    x_hat = layer(XN)
    yield "residual_from_normalized", PRE, {"normalized_inputs": r4(x_hat), "residual": r4(x_hat + block_from(x_hat))}
    yield "residual_left_out", PRE, {"residual": r4(block_from(x_hat))}
    y = softmax((XN @ WQN) @ (XN @ WKN).T / np.sqrt(2)) @ (XN @ WVN) @ WON
    add_norm = {**{k: v for k, v in PRE.items() if k not in ("pre_norm", "residual")}, "add_norm": True}
    yield "norm_before_add", add_norm, {"residual": r4(XN + y), "normalized": r4(XN + layer(y, 1.0, 0.0, 1e-5))}


# ---------------------------------------------------------------- the backward pass: dL/dH given

DH = ints((4, 2), -2, 3)
BACK = {"inputs": XM[:4].tolist(), "gradient": DH.tolist(), "weights": {"query": WQM.tolist(), "key": WKM.tolist(),
                                                                       "value": WVM.tolist()}}


def backward_cases():
    q, k, v = XM[:4] @ WQM, XM[:4] @ WKM, XM[:4] @ WVM
    c = 1 / np.sqrt(2)
    a = softmax(c * q @ k.T)
    d_a = DH @ v.T
    delta = (a * d_a).sum(axis=1, keepdims=True)
    d_z = a * (d_a - delta)
    yield "dz_sigmoid", BACK, {"grad_weights": r4(d_a), "grad_scaled_scores": r4(d_a * a * (1 - a))}
    yield "delta_left_out", BACK, {"dA": r4(d_a), "dZ": r4(a * d_a), "dQ": r4(c * (a * d_a) @ k)}
    yield "dk_not_transposed", BACK, {"dS": r4(c * d_z), "dK": r4(c * d_z @ q)}
    yield "scale_forgotten_backward", BACK, {"dZ": r4(d_z), "dS": r4(d_z), "dQ": r4(d_z @ k)}


def all_cases():
    cases = list(one_head_cases())
    cases.append(("times_keys", *times_keys_case()))
    cases.append(("values_as_keys", *values_as_keys_case()))
    cases += list(mask_cases())
    cases += list(head_cases())
    cases.append(("kv_one_head", GQA, gqa_answer(lambda h: 0)))
    cases.append(("kv_group", GQA, gqa_answer(lambda h: h % 2)))
    cases += list(rope_cases()) + list(alibi_cases()) + list(norm_cases()) + list(backward_cases())
    return cases


CASES = all_cases()


def test_at_least_forty_mistakes():
    assert len(CASES) >= 40, len(CASES)


@pytest.mark.parametrize("slip, doc, answer", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_the_slip_is_named_and_no_other(runner, tmp_path, slip, doc, answer):
    found = check(runner, tmp_path, doc, answer)
    names = [s["name"] for s in found["slips"]]
    assert names == [slip], (names, found["notes"], [f["hint"] for f in found["findings"]])
    wrong = [f for f in found["findings"] if not f["ok"]]
    assert wrong and wrong[-1]["hint"] == found["slips"][0]["hint"]
    rounded = "right as far as the decimals you wrote go"  # (weights rounded to 1 decimal are said to be that too)
    assert all(f["hint"] == found["slips"][0]["hint"] or f["hint"].startswith(f"these are {rounded}") for f in wrong)
