"""Lightning attention in a linear: document (docs/format.md Part 4, ``kind: lightning``), without torch: a
hand-worked example, MiniMax's slopes worked by hand, the block form against a plain Python loop of the direct sum,
the gradients against central differences, the JSON, --only, tables and explain through the command line, and bad
documents (exit 2)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import yaml

from attncli.cli import app
from attncli.core.linear import run
from attncli.inputs.document import Document
from attncli.inputs.linear import read_linear

# Three tokens, one head, d_k = 2, d_v = 1, s = ln 2 (each token keeps half of the state), worked by hand:
#   t1: S = k₁v₁ᵀ = [2, 0];                 o = q₁·S = 2
#   t2: S = ½·[2, 0] + [0, 4] = [1, 4];     o = [1, 1]·S = 5   (direct: ½·(q₂·k₁)·2 + (q₂·k₂)·4 = 1 + 4)
#   t3: S = ½·[1, 4] + [3, 0] = [3.5, 2];   o = [0, 1]·S = 2   (direct: ¼·0·2 + ½·1·4 + 0·3)
# chunk 2: t3 starts a block: intra = (q₃·k₃)·3 = 0, inter = e^{−s}·q₃·[1, 4] = 2
HAND = dict(kind="lightning", queries=[[[1, 0], [1, 1], [0, 1]]], keys=[[[1, 0], [0, 1], [1, 0]]],
            values=[[[2], [4], [3]]], slopes=[math.log(2)], chunk=2)


def assert_close(mine, expected, tol: float = 1e-12) -> None:
    mine, expected = np.asarray(mine, dtype=float), np.asarray(expected, dtype=float)
    assert mine.shape == expected.shape
    assert np.abs(mine - expected).max() <= tol * max(1.0, np.abs(expected).max())


def computed(linear: dict, keep_state: bool = True, **top):
    return run(read_linear(Document({**top, "linear": linear}, "<test>", Path("."))), keep_state=keep_state)


def write(tmp_path: Path, doc: dict) -> Path:
    path = tmp_path / "doc.yaml"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return path


def test_the_hand_worked_example(runner, tmp_path):
    path = write(tmp_path, {"linear": HAND})
    result = runner.invoke(app, ["compute", str(path), "--format", "json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["kind"] == "lightning" and out["scale"] == 1.0 and out["chunk"] == 2
    assert_close(out["head_outputs"], [[[2], [5], [2]]])
    assert_close(out["state"], [[[[2], [0]], [[1], [4]], [[3.5], [2]]]])
    assert_close(out["final_state"], [[[3.5], [2]]])
    assert_close(out["intra"], [[[2], [5], [0]]])
    assert_close(out["inter"], [[[0], [0], [2]]])
    assert_close(out["slopes"], [math.log(2)])
    assert [key for key in out if key in ("beta", "g", "u", "normalized_queries")] == []
    scores = runner.invoke(app, ["compute", str(path), "--format", "json", "--only", "decayed_scores"])
    assert_close(json.loads(scores.stdout)["decayed_scores"], [[[1, 0, 0], [0.5, 1, 0], [0, 0.5, 0]]])


def test_slopes_are_minimaxs_formula_by_hand():
    # four heads: base 2^(−8/4) = ¼, so s = ¼, ¹⁄₁₆, ¹⁄₆₄, ¹⁄₂₅₆ times 1 − l/(L − 1 + 1e-5) + 1e-5
    q = np.ones((4, 1, 2))
    trace = computed(dict(kind="lightning", queries=q, keys=q, values=q, slopes=dict(layer=1, layers=3)))
    factor = 1 - 1 / (2 + 1e-5) + 1e-5
    assert_close(trace["slopes"], [factor / 4, factor / 16, factor / 64, factor / 256], 1e-15)


def naive(q, k, v, s, s0):
    """o_i = Σ_{j≤i} e^{−s(i−j)}·(q_i·k_j)·v_j + e^{−s(i+1)}·S₀ᵀq_i, one head, in plain Python loops."""
    n, d_k, d_v = len(q), len(q[0]), len(v[0])
    out = []
    for i in range(n):
        o = [sum(math.exp(-s * (i + 1)) * s0[c][e] * q[i][c] for c in range(d_k)) for e in range(d_v)]
        for j in range(i + 1):
            w = math.exp(-s * (i - j)) * sum(q[i][c] * k[j][c] for c in range(d_k))
            o = [o[e] + w * v[j][e] for e in range(d_v)]
        out.append(o)
    return out


def random_arrays(seed: int, h: int, n: int, d_k: int = 3, d_v: int = 2):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(h, n, d_k)), rng.normal(size=(h, n, d_k)), rng.normal(size=(h, n, d_v)),
            rng.uniform(0.05, 1.0, size=h), rng.normal(size=(h, d_k, d_v)))


@pytest.mark.parametrize("n, chunk", [(1, 256), (17, 4), (16, 16), (23, 1), (40, 7)])
def test_block_form_is_the_direct_sum(n, chunk):
    q, k, v, s, s0 = random_arrays(n, 2, n)
    trace = computed(dict(kind="lightning", queries=q, keys=k, values=v, slopes=s.tolist(), initial_state=s0,
                          chunk=chunk))
    for j in range(2):
        expected = naive(q[j].tolist(), k[j].tolist(), v[j].tolist(), float(s[j]), s0[j].tolist())
        assert_close(trace["head_outputs"][j], expected)
        assert_close(trace["intra"][j] + trace["inter"][j], expected)
        o_from_state = np.einsum("tkv,tk->tv", trace["state"][j], q[j])  # o_t = S_tᵀq_t, the recurrence
        assert_close(o_from_state, expected)
    assert_close(trace["final_state"], trace["state"][:, -1])


def test_only_output_keeps_no_state():
    q, k, v, s, _ = random_arrays(3, 2, 30)
    trace = computed(dict(kind="lightning", queries=q, keys=k, values=v, slopes=s.tolist(), chunk=8),
                     keep_state=False)
    assert "state" not in trace and "decayed_scores" not in trace and "chunk_states" not in trace


def test_gradients_are_central_differences_of_the_naive_loop():
    q, k, v, s, s0 = random_arrays(11, 1, 5)
    seed = np.random.default_rng(2).normal(size=v.shape)
    arrays = dict(queries=q, keys=k, values=v, slopes=s, initial_state=s0)
    trace = computed(dict(kind="lightning", **{**arrays, "slopes": s.tolist()}, chunk=2, gradient=seed))

    def loss(changed: dict) -> float:
        a = {**arrays, **changed}
        out = naive(a["queries"][0].tolist(), a["keys"][0].tolist(), a["values"][0].tolist(), float(a["slopes"][0]),
                    a["initial_state"][0].tolist())
        return float(np.sum(np.array(out) * seed[0]))

    for key, grad in (("queries", "grad_queries"), ("keys", "grad_keys"), ("values", "grad_values"),
                      ("slopes", "grad_slopes"), ("initial_state", "grad_initial_state")):
        numeric = np.zeros_like(arrays[key])
        for index in np.ndindex(arrays[key].shape):
            up, down = arrays[key].copy(), arrays[key].copy()
            up[index] += 1e-6
            down[index] -= 1e-6
            numeric[index] = (loss({key: up}) - loss({key: down})) / 2e-6
        assert_close(trace[grad], numeric, 1e-7)


def test_from_inputs_the_norm_over_heads_gate_and_projection():
    """X → SiLU(X·W) per head → the direct sum → RMSNorm over all h·d outputs → σ(X·W_G) ⊙ → ·W_O, written out."""
    rng = np.random.default_rng(4)
    x, wq, wk, wv, wg, wo = (rng.normal(size=shape) for shape in ((6, 5), (5, 4), (5, 4), (5, 4), (5, 4), (4, 3)))
    gamma = rng.normal(size=4)
    trace = computed(dict(kind="lightning", heads=2, slopes=dict(layer=0, layers=2), chunk=4,
                          weights=dict(query=wq, key=wk, value=wv, gate=wg, output=wo),
                          norm=dict(gamma=gamma, eps=1e-6)), inputs=x)
    silu = lambda a: a / (1 + np.exp(-a))  # noqa: E731
    s = [2.0 ** -4 * (1 + 1e-5), 2.0 ** -8 * (1 + 1e-5)]  # base 2^(−8/2), layer 0
    heads = [naive(silu(x @ wq)[:, 2 * j:2 * j + 2].tolist(), silu(x @ wk)[:, 2 * j:2 * j + 2].tolist(),
                   silu(x @ wv)[:, 2 * j:2 * j + 2].tolist(), s[j], [[0, 0], [0, 0]]) for j in range(2)]
    o = np.concatenate([np.array(h) for h in heads], axis=1)  # n × h·d
    y = gamma * o / np.sqrt(np.mean(o * o, axis=1, keepdims=True) + 1e-6) / (1 + np.exp(-(x @ wg)))
    assert_close(trace["output"], y @ wo)
    assert_close(trace["gated_head_outputs"].transpose(1, 0, 2).reshape(6, 4), y)


def test_a_weight_may_be_a_product_of_matrices():
    rng = np.random.default_rng(8)
    x, a, b, w = rng.normal(size=(4, 3)), rng.normal(size=(3, 2)), rng.normal(size=(2, 4)), rng.normal(size=(3, 4))
    linear = dict(kind="lightning", heads=2, slopes=[0.3, 0.1], weights=dict(query=w, key=w, value=w))
    plain = computed({**linear, "weights": dict(query=a @ b, key=w, value=w)}, inputs=x)
    product = computed({**linear, "weights": dict(query={"product": [a, b]}, key=w, value=w)}, inputs=x)
    assert_close(product["output"], plain["output"], 0)
    with pytest.raises(Exception, match=r"product\[1\].*inner sizes"):
        computed({**linear, "weights": dict(query={"product": [a, w]}, key=w, value=w)}, inputs=x)


def test_explain_writes_the_sum_out_term_by_term(runner, tmp_path):
    path = write(tmp_path, {"linear": HAND})
    result = runner.invoke(app, ["explain", str(path), "--query", "3", "--format", "json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    lines = out["steps"][0]["lines"]
    texts = [line["text"] for line in lines]
    assert "token 2 (q2): q·k = 1.0000, decay e^(−s·1) = 0.5000, weight 0.5000" in texts[2]
    assert "Sum: o = [2.0000]" in texts[4]
    assert_close([line["state"] for line in lines if line["state"] is not None][0], [[3.5], [2]])
    zh = runner.invoke(app, ["explain", str(path), "--lang", "zh"])
    assert zh.exit_code == 0 and "闪电注意力" in zh.stdout and "求和：o = [5.0000]" in zh.stdout


def test_tables_show_the_slopes_and_the_two_parts(runner, tmp_path):
    path = write(tmp_path, {"linear": HAND})
    result = runner.invoke(app, ["compute", str(path), "--only", "s", "--only", "inter", "-p", "2"])
    assert result.exit_code == 0, result.output
    assert "s, the slope of each head" in result.stdout and "0.69" in result.stdout
    assert "Head 1 · inter = (Q ⊙ e^−s(i+1))·S" in result.stdout


GOOD = dict(kind="lightning", queries=[[[1.0, 0.0]]], keys=[[[1.0, 0.0]]], values=[[[1.0]]], slopes=[0.5])
TWO = dict(GOOD, queries=[[[1.0, 0.0]], [[0.0, 1.0]]], keys=[[[1.0, 0.0]], [[0.0, 1.0]]], values=[[[1.0]], [[2.0]]],
           slopes=[0.5, 0.25])  # two heads
BAD = [
    ({**GOOD, "beta": [[1.0]]}, "linear.beta", "belongs to the delta rule"),
    ({**GOOD, "slopes": None}, "linear.slopes", "is required"),
    ({**GOOD, "slopes": [0.5, 0.1]}, "linear.slopes", "one per head, h = 1"),
    ({**GOOD, "slopes": [-0.5]}, "linear.slopes", "-0.5 is not a positive finite number (the slope of head 1)"),
    ({**TWO, "slopes": [0.5]}, "linear.slopes", "has 1 number; expected one per head, h = 2"),
    ({**TWO, "slopes": [0.5, 0]}, "linear.slopes", "0 is not a positive finite number (the slope of head 2)"),
    ({**GOOD, "slopes": {"layer": 3, "layers": 2}}, "linear.slopes.layer", "0 to layers − 1 = 1"),
    ({**GOOD, "values": [[[1.0], [2.0]]]}, "linear.values", "n = 1"),
    ({**GOOD, "activation": "gelu"}, "linear.activation", "not used with them given directly"),
    ({"kind": "gated_delta", "slopes": [1.0]}, "linear.slopes", "belongs to lightning attention"),
]


@pytest.mark.parametrize("linear, place, words", BAD)
def test_bad_documents_are_one_line_naming_the_key(runner, tmp_path, linear, place, words):
    path = write(tmp_path, {"linear": linear})
    result = runner.invoke(app, ["compute", str(path), "--format", "json"])
    assert result.exit_code == 2 and result.stdout == ""
    line = result.stderr.strip()
    assert "\n" not in line and "Traceback" not in line
    assert line.startswith(f"Error: {path}: {place}: ") and words in line, line


def test_an_error_in_chinese(runner, tmp_path):
    path = write(tmp_path, {"linear": {**GOOD, "slopes": [0.5, 0.1]}})
    result = runner.invoke(app, ["compute", str(path), "--lang", "zh"])
    assert result.exit_code == 2 and "应为每个头一个，h = 1" in result.stderr
    one = runner.invoke(app, ["compute", str(write(tmp_path, {"linear": {**TWO, "slopes": [0.5]}})), "--lang", "zh"])
    assert "linear.slopes: 只有 1 个数；应为每个头一个，h = 2" in one.stderr
    bad = write(tmp_path, {"linear": {**TWO, "slopes": [0.5, -1]}})
    bad = runner.invoke(app, ["compute", str(bad), "--lang", "zh"])
    assert "linear.slopes: -1 不是有限的正数（头 2 的斜率）" in bad.stderr


@pytest.mark.parametrize("example, head", [("lightning.yaml", 2), ("gated_delta.yaml", 1)])
def test_explain_names_the_state_by_its_path_in_the_json(runner, example, head):
    """The JSON's state is state[head][token] (both counted from 0): the line names that path, and the S it shows is
    the JSON's at that path."""
    from conftest import EXAMPLES

    path = str(EXAMPLES / "linear" / example)
    out = json.loads(runner.invoke(app, ["compute", path, "--format", "json"]).stdout)
    steps = json.loads(runner.invoke(app, ["explain", path, "--query", "3", "--head", str(head),
                                           "--format", "json"]).stdout)["steps"]
    named = [line for step in steps for line in step["lines"] if "compute's state" in line["text"]]
    assert len(named) == 1 and f"compute's state[{head - 1}][2]" in named[0]["text"], named
    assert_close(named[0]["state"], out["state"][head - 1][2])
    zh = runner.invoke(app, ["explain", path, "--query", "3", "--head", str(head), "--lang", "zh"]).stdout
    assert f"compute 的 state[{head - 1}][2]" in zh


@pytest.mark.parametrize("query, line", [(13, "token 1: the one earlier term: [1.0000]"),
                                         (14, "tokens 1 and 2: 2 earlier terms, summed: [1.5000]")])
def test_the_earlier_terms_line_says_one_or_two_as_such(runner, tmp_path, query, line):
    """14 tokens, q = k = 1, s = ln 2, v = 4096 for tokens 1 and 2: at token 13 the one term before the 12 shown is
    2^(−12)·4096 = 1; at token 14 the two are 2^(−13)·4096 + 2^(−12)·4096 = 1.5."""
    ones = lambda: [[[1.0] for _ in range(14)]]  # noqa: E731  (lists of their own: no YAML aliases)
    values = [[[4096.0], [4096.0], *([1.0] for _ in range(12))]]
    path = write(tmp_path, {"linear": dict(kind="lightning", queries=ones(), keys=ones(), values=values,
                                           slopes=[math.log(2)], scale="none")})
    out = json.loads(runner.invoke(app, ["explain", str(path), "--query", str(query), "--format", "json"]).stdout)
    texts = [entry["text"] for entry in out["steps"][0]["lines"]]
    assert texts[1] == line, texts[:2]
