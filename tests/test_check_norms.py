"""Issue 31: `attncli check` names a normalisation done wrong in every norm stage: post_norm, qk_norm (RMSNorm and
LayerNorm, per head and over the whole projection) and latent's kv_norm (add_norm and pre_norm: test_check_arith.py).

Each wrong answer is worked out here in plain numpy, as a learner would make the slip: the norm taken over the
tokens instead of the features, the variance divided by d − 1, ε left out or added outside the root, the root
forgotten, the other norm's formula, γ or β left out (or swapped), and qk_norm over all of a token's heads instead
of each head (or the reverse). The hint names the stage, and the report points to `attncli explain FILE --step N`.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import answer_checked as check

from attncli.cli import app

R = np.random.default_rng(3131)
X = R.integers(-2, 3, (3, 4)).astype(float)
W_Q, W_K, W_V = ((R.integers(-3, 4, (4, 4)) / 2) for _ in range(3))
EPS = 0.25  # large enough that leaving it out, or putting it outside the root, changes the answer


def rounded(a: np.ndarray) -> list:
    return np.round(a, 4).tolist()


def norm(x, kind, gamma, beta, eps, axis=-1, ddof=0, outside=False, root=True):
    """A learner's RMSNorm or LayerNorm over ``axis`` (an int or a tuple), with one switch per slip."""
    axis = axis if isinstance(axis, tuple) else (axis,)
    count = int(np.prod([x.shape[a] for a in axis]))
    centred = x if kind == "rms" else x - x.mean(axis=axis, keepdims=True)
    spread = (centred * centred).sum(axis=axis, keepdims=True) / (count - ddof)
    divisor = np.sqrt(spread) + eps if outside else np.sqrt(spread + eps) if root else spread + eps
    return gamma * centred / divisor + (beta if kind == "layer" else 0.0)


def slipped(kind: str, features=-1, tokens=0) -> dict:
    """Each slip's norm of x, by the name check gives it (γ and β passed in)."""
    other = "layer" if kind == "rms" else "rms"
    return {
        "norm_axis": lambda x, g, b: norm(x, kind, g, b, EPS, axis=tokens),
        "norm_ddof": lambda x, g, b: norm(x, kind, g, b, EPS, axis=features, ddof=1),
        "norm_eps_left_out": lambda x, g, b: norm(x, kind, g, b, 0.0, axis=features),
        "norm_eps_outside": lambda x, g, b: norm(x, kind, g, b, EPS, axis=features, outside=True),
        "norm_no_root": lambda x, g, b: norm(x, kind, g, b, EPS, axis=features, root=False),
        "norm_other": lambda x, g, b: norm(x, other, g, b, EPS, axis=features),
        "norm_gamma_left_out": lambda x, g, b: norm(x, kind, 1.0, b, EPS, axis=features),
        **({"norm_beta_left_out": lambda x, g, b: norm(x, kind, g, 0.0, EPS, axis=features),
            "norm_gamma_beta_swapped": lambda x, g, b: norm(x, kind, b, g, EPS, axis=features)} if kind == "layer"
           else {}),
    }


def named(found: dict) -> list[str]:
    return [s["name"] for s in found["slips"]]


def pointed(runner, found: dict, step: str) -> None:
    """The report points to `attncli explain FILE --step N`, and that command runs."""
    line = next(note for note in found["notes"] if "attncli explain" in note)
    words = line.split("attncli explain ", 1)[1].split()
    assert words[1:3] == ["--step", step], line
    assert runner.invoke(app, ["explain", *words]).exit_code == 0


def softmax(z):
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


# ---------------------------------------------------------------- post_norm: R = X + post_norm(Y)

POST_GAMMA, POST_BETA = np.array([1.5, 0.5, 1.0, 2.0]), np.array([0.25, -0.5, 0.0, 0.75])
POST = {"inputs": X.tolist(), "weights": {"query": W_Q.tolist(), "key": W_K.tolist(), "value": W_V.tolist()},
        "residual": True, "post_norm": {"kind": "layer", "gamma": POST_GAMMA.tolist(), "beta": POST_BETA.tolist(),
                                        "eps": EPS}}


@pytest.mark.parametrize("slip", sorted(slipped("layer")))
def test_post_norm_done_wrong_is_named_from_the_residual(runner, tmp_path, slip):
    y = softmax((X @ W_Q) @ (X @ W_K).T / 2) @ (X @ W_V)  # d_k = 4: scale 1/2
    wrong = slipped("layer")[slip](y, POST_GAMMA, POST_BETA)
    found = check(runner, tmp_path, POST, {"residual": rounded(X + wrong)})
    assert named(found)[0] == slip, found
    assert "post_norm" in found["findings"][0]["hint"] or slip == "norm_other"
    pointed(runner, found, "residual")


# ---------------------------------------------------------------- qk_norm: per head (RMSNorm) and per projection

GQ, GK = np.array([1.5, 0.5]), np.array([2.0, 0.75])
QK_HEAD = {"inputs": X.tolist(), "heads": 2, "weights": {"query": W_Q.tolist(), "key": W_K.tolist()},
           "qk_norm": {"kind": "rms", "gamma": {"query": GQ.tolist(), "key": GK.tolist()}, "eps": EPS}}


def heads(m: np.ndarray) -> np.ndarray:
    """(n, 2·2) -> (2, n, 2): head i takes columns 2i, 2i + 1."""
    return m.reshape(m.shape[0], 2, 2).transpose(1, 0, 2)


def per_head_slips() -> dict:
    found = slipped("rms", features=-1, tokens=-2)
    found["norm_scope_projection"] = lambda x, g, b: norm(x, "rms", g, b, EPS, axis=(0, -1))  # a token's 4 numbers
    return found


@pytest.mark.parametrize("slip", sorted(per_head_slips()))
def test_qk_norm_per_head_done_wrong(runner, tmp_path, slip):
    q, k = heads(X @ W_Q), heads(X @ W_K)
    make = per_head_slips()[slip]
    q_hat, k_hat = make(q, GQ, 0.0), make(k, GK, 0.0)
    found = check(runner, tmp_path, QK_HEAD, {"normalized_queries": rounded(q_hat), "normalized_keys": rounded(k_hat)})
    assert named(found)[0] == slip, found
    assert "qk_norm" in found["findings"][0]["hint"] or slip == "norm_other"
    pointed(runner, found, "qk_norm")


def test_qk_norm_slip_is_named_from_the_weights_alone(runner, tmp_path):
    """A slip of the norm, found from a later quantity: the weights made from the wrongly normalised Q and K."""
    q, k = heads(X @ W_Q), heads(X @ W_K)
    q_hat, k_hat = norm(q, "rms", GQ, 0.0, EPS, ddof=1), norm(k, "rms", GK, 0.0, EPS, ddof=1)
    weights = softmax(q_hat @ k_hat.transpose(0, 2, 1) / np.sqrt(2))
    found = check(runner, tmp_path, QK_HEAD, {"weights": rounded(weights)})
    assert named(found)[0] == "norm_ddof", found


GP, BP = np.array([1.5, 0.5, 1.0, 2.0]), np.array([0.5, -0.25, 0.0, 1.0])
QK_PROJECTION = {**QK_HEAD, "qk_norm": {"kind": "layer", "scope": "projection", "eps": EPS,
                                        "gamma": {"query": GP.tolist(), "key": GP[::-1].tolist()},
                                        "beta": {"query": BP.tolist(), "key": BP[::-1].tolist()}}}


def projection_slips() -> dict:
    found = {name: make for name, make in slipped("layer", features=-1, tokens=0).items()}
    found["norm_scope_head"] = lambda x, g, b: np.concatenate(  # each head's 2 numbers on their own
        [norm(x[:, 2 * i:2 * i + 2], "layer", g[2 * i:2 * i + 2], b[2 * i:2 * i + 2], EPS) for i in range(2)], axis=1)
    return found


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("slip", sorted(projection_slips()))
def test_qk_norm_over_the_projection_done_wrong(runner, tmp_path, slip, lang):
    """OLMo 2's norm of a token's whole projection (n, h·d_k), then split into heads."""
    make = projection_slips()[slip]
    q_hat, k_hat = make(X @ W_Q, GP, BP), make(X @ W_K, GP[::-1], BP[::-1])
    answer = {"normalized_queries": rounded(heads(q_hat)), "normalized_keys": rounded(heads(k_hat))}
    found = check(runner, tmp_path, QK_PROJECTION, answer, "--lang", lang)
    assert named(found)[0] == slip, found
    if slip in ("norm_scope_head", "norm_scope_projection"):
        assert ("每个头的 2 个数" if lang == "zh" else "each head's 2 numbers") in found["findings"][0]["hint"]


# ---------------------------------------------------------------- latent's kv_norm

KV_DOWN = R.integers(-2, 3, (4, 5)).astype(float)  # r_kv = 3 latent columns, then d_r = 2 rotary ones
KV_UP = R.integers(-2, 3, (3, 4)).astype(float)  # per head [k_nope (1) | v (1)]
G_KV = np.array([1.5, 0.5, 2.0])
LATENT = {"inputs": X.tolist(), "heads": 2, "rope": {"dims": 2, "part": "last"},
          "latent": {"kv_norm": {"kind": "rms", "gamma": G_KV.tolist(), "eps": EPS}},
          "weights": {"query": (R.integers(-2, 3, (4, 6)) / 2).tolist(), "kv_down": KV_DOWN.tolist(),
                      "kv_up": KV_UP.tolist()}}


@pytest.mark.parametrize("slip", sorted(slipped("rms")))
def test_latent_kv_norm_done_wrong_is_named_from_the_values(runner, tmp_path, slip):
    c = slipped("rms")[slip](X @ KV_DOWN[:, :3], G_KV, 0.0)  # the latent c_KV (n, r_kv), done wrong
    values = np.stack([c @ KV_UP[:, 2 * h + 1:2 * h + 2] for h in range(2)])  # (h, m, d_v = 1)
    found = check(runner, tmp_path, LATENT, {"values": rounded(values)})
    assert named(found)[0] == slip, found
    assert "latent.kv_norm" in found["findings"][0]["hint"] or slip == "norm_other"
    found = check(runner, tmp_path, LATENT, {"latent_kv": rounded(c)})
    assert named(found)[0] == slip, found
    pointed(runner, found, "latent")


# ---------------------------------------------------------------- pre_norm's LayerNorm (RMSNorm: test_check_arith.py)

PRE_GAMMA, PRE_BETA = np.array([1.5, 0.5, 1.0, 2.0]), np.array([0.5, 0.0, -0.25, 1.0])
PRE = {"inputs": X.tolist(), "weights": {"query": W_Q.tolist(), "key": W_K.tolist(), "value": W_V.tolist()},
       "pre_norm": {"kind": "layer", "gamma": PRE_GAMMA.tolist(), "beta": PRE_BETA.tolist(), "eps": EPS}}


@pytest.mark.parametrize("slip", sorted(slipped("layer")))
def test_pre_norm_layer_norm_done_wrong_is_named_from_the_queries(runner, tmp_path, slip):
    x_hat = slipped("layer")[slip](X, PRE_GAMMA, PRE_BETA)
    found = check(runner, tmp_path, PRE, {"queries": rounded(x_hat @ W_Q)})
    assert named(found)[0] == slip, found
    pointed(runner, found, "pre_norm")  # where the slip happens, not the queries' step 3


def turned(x: np.ndarray) -> np.ndarray:
    """rope with d_k = dims = 2 (one pair, frequency 1): the pair (a, b) at position p turned by p radians."""
    p = np.arange(x.shape[-2])[:, None]
    a, b = x[..., :1], x[..., 1:]
    return np.concatenate([a * np.cos(p) - b * np.sin(p), b * np.cos(p) + a * np.sin(p)], axis=-1)


@pytest.mark.parametrize("slip", ["norm_ddof", "norm_eps_outside", "norm_scope_projection"])
def test_qk_norm_after_the_rotation_done_wrong(runner, tmp_path, slip):
    """Llama 4's order (after_rope: true): the rotated Q′ and K′ are normalised, and that norm is done wrong."""
    doc = {**QK_HEAD, "rope": {"dims": 2}, "qk_norm": {**QK_HEAD["qk_norm"], "after_rope": True}}
    q, k = turned(heads(X @ W_Q)), turned(heads(X @ W_K))
    make = per_head_slips()[slip]
    found = check(runner, tmp_path, doc, {"normalized_queries": rounded(make(q, GQ, 0.0)),
                                          "normalized_keys": rounded(make(k, GK, 0.0))})
    assert named(found)[0] == slip, found


# ---------------------------------------------------------------- add_norm with its own γ, β and ε

ADD = {**PRE, "add_norm": {"gamma": PRE_GAMMA.tolist(), "beta": PRE_BETA.tolist(), "eps": EPS}}
del ADD["pre_norm"]


@pytest.mark.parametrize("slip", sorted(slipped("layer")))
def test_add_norm_with_gamma_beta_eps_done_wrong(runner, tmp_path, slip):
    r = X + softmax((X @ W_Q) @ (X @ W_K).T / 2) @ (X @ W_V)
    found = check(runner, tmp_path, ADD, {"normalized": rounded(slipped("layer")[slip](r, PRE_GAMMA, PRE_BETA))})
    assert named(found)[0] == slip, found
    assert "add_norm" in found["findings"][0]["hint"] or slip == "norm_other"
    pointed(runner, found, "add_norm")


# ---------------------------------------------------------------- latent's query_norm

W_QD, G_Q = R.integers(-2, 3, (4, 3)).astype(float), np.array([0.5, 1.5, 1.0])
W_QU = (R.integers(-2, 3, (3, 6)) / 2)
LATENT_Q = {**LATENT, "latent": {**LATENT["latent"], "query_norm": {"kind": "rms", "gamma": G_Q.tolist(),
                                                                     "eps": EPS}},
            "weights": {**{k: v for k, v in LATENT["weights"].items() if k != "query"},
                        "query_down": W_QD.tolist(), "query_up": W_QU.tolist()}}


@pytest.mark.parametrize("slip", ["norm_axis", "norm_ddof", "norm_eps_outside", "norm_gamma_left_out"])
def test_latent_query_norm_done_wrong(runner, tmp_path, slip):
    c_q = slipped("rms")[slip](X @ W_QD, G_Q, 0.0)  # c_Q (n, r_q), done wrong
    queries = (c_q @ W_QU).reshape(3, 2, 3).transpose(1, 0, 2)  # (h, n, d_nope + d_r)
    found = check(runner, tmp_path, LATENT_Q, {"queries": rounded(queries)})
    assert named(found)[0] == slip, found
    assert "latent.query_norm" in found["findings"][0]["hint"]


def test_post_norm_gamma_and_beta_swapped_in_the_report(runner, tmp_path):
    """The report a learner reads: β ⊙ x̂ + γ in place of γ ⊙ x̂ + β is named, not "No known slip"."""
    import yaml

    y = softmax((X @ W_Q) @ (X @ W_K).T / 2.0) @ (X @ W_V)  # d_k = 4: scale 1/2
    swapped = norm(y, "layer", POST_BETA, POST_GAMMA, EPS)
    path = tmp_path / "pn.yaml"
    path.write_text(yaml.safe_dump({**POST, "answer": {"query": 2, "normalized_output": rounded(swapped[1]),
                                                       "residual": rounded(X[1] + swapped[1])}}))
    result = runner.invoke(app, ["check", str(path)])
    assert result.exit_code == 1, result.output
    text = " ".join(result.output.split())
    assert "γ and β were swapped in LayerNorm of post_norm" in text and "No known slip" not in text
