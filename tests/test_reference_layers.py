"""The layers beyond the core (positional, add_norm, score: additive, normalize) against tests/reference.py.

attncli is reached through its command line only (``compute FILE --format json``); every expected number
comes from the plain-Python loop in tests/reference.py or from PyYAML, never from attncli itself.
Also here: the fast reader of large inline YAML matrices against PyYAML, and fully masked rows under
``normalize: sum``.
"""

from __future__ import annotations

import json
import math
import random

import pytest
import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from reference import NotComputable, max_rel_diff, reference_document, sinusoidal
from typer.testing import CliRunner

from attncli.cli import app

TOL = 1e-12  # on |got − want| / max(1, |want|): absolute for numbers up to 1, relative beyond
COMPARED = ("inputs", "context", "positional", "queries", "keys", "values", "scores", "scaled_scores", "weights",
            "head_outputs", "output", "residual", "normalized")


def run(tmp_path, text: str, name: str = "doc.yaml"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return CliRunner().invoke(app, ["compute", str(path), "--format", "json"])


def compute(tmp_path, text: str, name: str = "doc.yaml"):
    result = run(tmp_path, text, name)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout), result.stderr


def check(tmp_path, text: str) -> tuple[dict, dict, str]:
    """Compute a YAML document with attncli and with the reference (on PyYAML's reading); they must agree."""
    got, stderr = compute(tmp_path, text)
    want = reference_document(yaml.safe_load(text))
    assert_agree(got, want, stderr)
    return got, want, stderr


def assert_agree(got: dict, want: dict, stderr: str) -> None:
    assert set(got) >= {k for k in COMPARED if k in want}
    for key in COMPARED:
        assert (key in got) == (key in want), key
        if key in want:
            assert max_rel_diff(got[key], want[key]) <= TOL, key
    assert abs(got["scale"] - want["scale"]) <= 1e-15
    for i in want["empty_queries"]:
        assert f"query {i + 1} " in stderr, stderr
    if not want["empty_queries"]:
        assert "may attend to no key" not in stderr


# ------------------------------------------------------------------ positional


def test_sinusoidal_table_is_the_formula():
    p = sinusoidal(3, 5)  # odd width: the last column is a sine
    assert p[0] == [0.0, 1.0, 0.0, 1.0, 0.0]
    assert p[2][3] == math.cos(2 / 10000 ** (2 / 5)) and p[2][4] == math.sin(2 / 10000 ** (4 / 5))


def test_sinusoidal_positions_odd_width_two_heads(tmp_path):
    got, _, _ = check(tmp_path, """
inputs: [[1, 0, 0.5], [0, 2, -1], [1, 1, 1], [-0.5, 0.25, 2], [3, 0, 1]]
positional: sinusoidal
heads: 2
weights:
  query: [[0.2, -0.1, 0.4, 0.3], [0.5, 0.1, -0.3, 0.2], [-0.4, 0.3, 0.1, 0.6]]
  key: [[0.3, 0.1, -0.2, 0.5], [-0.1, 0.4, 0.6, 0.0], [0.2, -0.3, 0.1, 0.4]]
  value: [[0.1, 0.2], [0.0, -0.2], [0.6, 0.1]]
""")
    assert got["inputs"][1] == [0.0, 2.0, -1.0]  # inputs stay X; P is its own key
    assert len(got["positional"]) == 5 and got["positional"][0] == [0.0, 1.0, 0.0]


def test_positional_matrix_with_a_context_moves_only_the_queries(tmp_path):
    got, _, _ = check(tmp_path, """
inputs: [[1, 0], [0, 1]]
positional: [[0.5, -0.5], [0.25, 2]]
context: [[1, 2, 3], [0, -1, 0.5], [2, 2, 0]]
weights:
  query: [[0.5, 1], [-1, 0.25]]
  key: [[1, 0], [0, 1], [0.5, 0.5]]
  value: [[1, 0], [0, 1], [1, 1]]
""")
    assert got["context"] == [[1.0, 2.0, 3.0], [0.0, -1.0, 0.5], [2.0, 2.0, 0.0]]


# ------------------------------------------------------------------ Add & Norm


def test_add_norm_true_with_positional_and_output_projection(tmp_path):
    got, want, _ = check(tmp_path, """
inputs: [[1, 0, 1, 0], [0, 2, 0, 2], [1, 1, 1, 1]]
positional: sinusoidal
heads: 2
weights:
  value: [[0, 2, 0, 1], [0, 3, 0, 0], [1, 0, 3, 0], [1, 1, 0, -1]]
  output: [[0.5, 0, 0, 1], [0, 0.5, 1, 0], [1, 0, 0.5, 0], [0, 1, 0, 0.5]]
bias: {output: [0.1, 0.2, 0.3, 0.4]}
add_norm: true
""")
    x0 = [[x + p for x, p in zip(xs, ps)] for xs, ps in zip(got["inputs"], want["positional"])]
    assert max_rel_diff(got["residual"], [[a + y for a, y in zip(r, o)] for r, o in zip(x0, got["output"])]) < TOL


@pytest.mark.parametrize("gamma", ["[2, 0.5, -1]", "[[2], [0.5], [-1]]"])  # a vector may be a row or a column
def test_add_norm_gamma_beta_eps(tmp_path, gamma):
    check(tmp_path, f"""
inputs: [[1, 2, 3], [0.5, 0.5, 0.5], [-1, 4, 0]]
weights: {{value: [[0.1, 0.2, 0.3], [0.3, 0.2, 0.1], [1, 0, -1]]}}
mask: causal
add_norm: {{gamma: {gamma}, beta: [0, 1, -0.5], eps: 0.25}}
""")


def test_add_norm_default_eps_is_torch_layer_norm_default(tmp_path):
    got, _, _ = check(tmp_path, "inputs: [[0.001, 0.002], [0, 0.0005]]\nadd_norm: true\n")
    r = got["residual"][0]
    assert got["normalized"][0][0] == pytest.approx(-(r[1] - r[0]) / 2 / math.sqrt((r[1] - r[0]) ** 2 / 4 + 1e-5))


# ------------------------------------------------------------------ score: additive


ADDITIVE = """
inputs: [[1, 0, 1, 0], [0, 2, 0, 2], [1, 1, 1, 1]]
heads: 2
weights:
  query: [[0.2, -0.1, 0.4, 0.3], [0.5, 0.1, -0.3, 0.2], [-0.4, 0.3, 0.1, 0.6], [0.1, 0.7, -0.2, -0.5]]
  w1: {w1}
  w2: {w2}
  v: {v}
score: additive
"""
SHARED = {"w1": "[[1, -0.5, 0.25], [0.5, 2, -1]]", "w2": "[[0.5, 0.5, -1], [-1, 0.25, 2]]", "v": "[1, -2, 0.5]"}
PER_HEAD = {"w1": "[[[1, -0.5], [0.5, 2]], [[0.3, 0.1], [-1, 1]]]",
            "w2": "[[[0.5, 0.5], [-1, 0.25]], [[2, 0], [0, 2]]]", "v": "[[1, -2], [0.5, 0.5]]"}


@pytest.mark.parametrize("weights", [SHARED, PER_HEAD, {**SHARED, "v": "[[1, -2, 0.5]]"}], ids=["shared", "per-head",
                                                                                             "v-one-row"])
@pytest.mark.parametrize("extra", ["", "scale: sqrt\n", "scale: 0.5\nmask: causal\n", "normalize: sum\n",
                                   "normalize: none\nmask: [[1, 0, 0], [0, 0, 0], [1, 1, 0]]\n"])
def test_additive_scores(tmp_path, weights, extra):
    got, _, _ = check(tmp_path, ADDITIVE.format(**weights) + extra)
    if "scale" not in extra:
        assert got["scale"] == 1.0  # Bahdanau scores are not scaled by default
    if extra == "scale: sqrt\n":
        assert got["scale"] == 1 / math.sqrt(2)


def test_additive_scores_with_a_context(tmp_path):
    check(tmp_path, """
inputs: [[1, 0], [0, 1], [0.5, -0.5]]
context: [[1, 2, 3], [0, -1, 0.5]]
weights: {key: [[1, 0], [0, 1], [0.5, 0.5]], w1: [[1], [2]], w2: [[-1], [0.5]], v: [3]}
score: additive
normalize: sum
""")


# ------------------------------------------------------------------ normalize


def test_normalize_sum_divides_by_the_row_sum(tmp_path):
    got, _, _ = check(tmp_path, "inputs: [[1, -1], [3, -1], [0.5, 0.5]]\nnormalize: sum\nscale: none\n")
    assert got["weights"][0][0] == [1 / 3, 2 / 3, 0.0]  # scores 2, 4, 0


def test_normalize_sum_fully_masked_row_gets_zero_weights_and_a_warning(tmp_path):
    """Not an error: the masked row's sum is over no key at all, as with softmax (README, "Masks")."""
    got, want, stderr = check(tmp_path, """
tokens: [a, b, c]
inputs: [[1, 2], [3, -1], [0.5, 0.5]]
heads: 2
weights: {value: [[1, 0, 2, 1], [0, 1, -1, 1]]}
bias: {value: [0.5, 0.5, 0.5, 0.5]}
normalize: sum
mask: [[1, 1, 0], [0, 0, 0], [true, true, true]]
""")
    assert got["weights"][0][1] == [0.0, 0.0, 0.0] and got["weights"][1][1] == [0.0, 0.0, 0.0]
    assert got["head_outputs"][0][1] == [0.0, 0.0] and got["scaled_scores"][1][1] == [None, None, None]
    assert want["empty_queries"] == [1] and "query 2 ('b')" in stderr


def test_normalize_sum_fully_masked_row_with_a_context_and_output_bias(tmp_path):
    got, _, stderr = check(tmp_path, """
inputs: [[1, 2], [3, -1]]
context: [[1, 0, 1], [0.5, 2, 0], [1, 1, 1]]
weights: {query: [[1, 0], [0, 1]], key: [[1, 0], [0, 1], [1, 1]], output: [[1, 0], [0, 1], [1, 1]]}
bias: {output: [0.5, -0.5]}
normalize: sum
mask: [[0, 0, 0], [1, 0, 1]]
""")
    assert got["output"][0] == [0.5, -0.5] and "query 1 " in stderr


def test_normalize_sum_row_summing_to_zero_is_an_error(tmp_path):
    text = "inputs: [[1, 0], [-1, 0]]\nnormalize: sum\n"  # query 1's scores: 1 and −1
    with pytest.raises(NotComputable):
        reference_document(yaml.safe_load(text))
    result = run(tmp_path, text)
    assert result.exit_code == 2 and result.stdout == "" and "Traceback" not in result.stderr
    assert "query 1" in result.stderr and "sum to 0" in result.stderr


def test_normalize_none_keeps_the_scaled_scores(tmp_path):
    got, _, _ = check(tmp_path, """
inputs: [[1, -1, 2], [3, -1, 0], [0.5, 0.5, 1]]
heads: 3
scale: 2
normalize: none
mask: [[1, 0, 1], [0, 0, 0], [1, 1, 1]]
positional: sinusoidal
""")
    assert got["weights"][2][0][1] == 0.0 and got["weights"][0][1] == [0.0] * 3


def test_normalize_softmax_is_the_default(tmp_path):
    text = "inputs: [[1, -1], [3, -1], [0.5, 0.5]]\nmask: causal\n"
    plain, _ = compute(tmp_path, text)
    explicit, _ = compute(tmp_path, text + "normalize: softmax\n")
    assert plain == explicit
    check(tmp_path, text)


# ------------------------------------------------------------------ random documents


NUMBER = st.one_of(st.integers(-8, 8).map(lambda k: k / 4), st.floats(-2, 2).map(lambda x: round(x, 3)))
ALLOW = st.sampled_from([0, 1, True, False])
SIZE = st.integers(1, 3)


@st.composite
def documents(draw) -> dict:
    h, n, d_model = draw(SIZE), draw(st.integers(1, 4)), draw(st.integers(1, 4))
    doc: dict = {"inputs": matrix(draw, n, d_model)}
    m, d_ctx = n, d_model
    if draw(st.booleans()):
        m, d_ctx = draw(st.integers(1, 4)), draw(st.integers(1, 4))
        doc["context"] = matrix(draw, m, d_ctx)
    three_d = draw(st.booleans())
    weights = doc["weights"] = {}
    d_k, d_v = draw_projections(draw, weights, h, d_model, d_ctx, three_d)
    if draw(st.booleans()) or not (three_d and weights) and h > 1:
        doc["heads"] = h
    add_norm = draw(st.booleans())
    d_out = h * d_v
    if (add_norm and d_out != d_model) or draw(st.booleans()):
        d_out = d_model if add_norm else draw(SIZE)
        weights["output"] = matrix(draw, h * d_v, d_out)
    draw_biases(draw, doc, (("query", h * d_k), ("key", h * d_k), ("value", h * d_v), ("output", d_out)))
    if draw(st.booleans()):
        doc["score"] = "additive"
        draw_additive(draw, weights, h, d_k)
    choice = draw(st.sampled_from(["default", "sqrt", "none", "number"]))
    if choice != "default":
        doc["scale"] = draw(st.sampled_from([0.5, 2, 0.125, 1.5])) if choice == "number" else choice
    normalize = draw(st.sampled_from(["sum", "none", None, "softmax", "sum"]))
    if normalize:
        doc["normalize"] = normalize
    draw_mask(draw, doc, n, m)
    positional = draw(st.sampled_from([None, "sinusoidal", "matrix"]))
    if positional:
        doc["positional"] = matrix(draw, n, d_model) if positional == "matrix" else positional
    if add_norm:
        doc["add_norm"] = draw_add_norm(draw, d_model)
    if not weights:
        del doc["weights"]
    return doc


def matrix(draw, rows: int, cols: int, cell=NUMBER) -> list:
    """A rows × cols list of lists of ``cell``."""
    return draw(st.lists(st.lists(cell, min_size=cols, max_size=cols), min_size=rows, max_size=rows))


def draw_projections(draw, weights: dict, h: int, d_model: int, d_ctx: int, three_d: bool) -> tuple[int, int]:
    """W_Q, W_K and W_V, each maybe left out (the identity, where the heads can split it); (d_k, d_v)."""

    def weight(d_in, d):
        return [matrix(draw, d_in, d) for _ in range(h)] if three_d else matrix(draw, d_in, h * d)

    omit_q = d_model % h == 0 and draw(st.booleans())
    d_k = d_model // h if omit_q else draw(SIZE)
    if not omit_q:
        weights["query"] = weight(d_model, d_k)
    if not (d_ctx == h * d_k and draw(st.booleans())):
        weights["key"] = weight(d_ctx, d_k)
    omit_v = d_ctx % h == 0 and draw(st.booleans())
    d_v = d_ctx // h if omit_v else draw(SIZE)
    if not omit_v:
        weights["value"] = weight(d_ctx, d_v)
    return d_k, d_v


def draw_biases(draw, doc: dict, widths: tuple[tuple[str, int], ...]) -> None:
    """Each of the query, key, value and output biases, maybe."""
    for name, width in widths:
        if draw(st.booleans()):
            doc.setdefault("bias", {})[name] = draw(st.lists(NUMBER, min_size=width, max_size=width))


def draw_additive(draw, weights: dict, h: int, d_k: int) -> None:
    """Additive scores' W₁ and W₂ (per head or shared) and v (per head or one row)."""
    d_a = draw(SIZE)
    for name in ("w1", "w2"):
        weights[name] = [matrix(draw, d_k, d_a) for _ in range(h)] if draw(st.booleans()) else matrix(draw, d_k, d_a)
    weights["v"] = matrix(draw, h, d_a) if draw(st.booleans()) else matrix(draw, 1, d_a)[0]


def draw_mask(draw, doc: dict, n: int, m: int) -> None:
    """No mask key, mask: none, causal (with as many keys as queries) or a 0/1 matrix."""
    mask = draw(st.sampled_from(["omitted", "none", "causal", "matrix", "matrix"]))
    if mask == "causal" and n == m:
        doc["mask"] = "causal"
    elif mask in ("none", "matrix"):
        doc["mask"] = matrix(draw, n, m, ALLOW) if mask == "matrix" else "none"


def draw_add_norm(draw, d_model: int) -> dict | bool:
    """add_norm: true, or a mapping with any of gamma, beta and eps."""
    options = {}
    if draw(st.booleans()):
        options["gamma"] = draw(st.lists(NUMBER, min_size=d_model, max_size=d_model))
    if draw(st.booleans()):
        options["beta"] = draw(st.lists(NUMBER, min_size=d_model, max_size=d_model))
    if draw(st.booleans()):
        options["eps"] = draw(st.sampled_from([1e-5, 0.01, 1.0]))
    return options or True


def sum_condition(doc: dict, want: dict) -> float:
    """How much a sum-normalised row magnifies rounding: the size of its terms over its sum (1 if none)."""
    if doc.get("normalize") != "sum":
        return 1.0
    v = doc["weights"].get("v") if doc.get("score") == "additive" else None
    worst = 1.0
    for h, rows in enumerate(want["scaled_scores"]):
        for i, row in enumerate(rows):
            keys = [j for j, z in enumerate(row) if z is not None]
            if not keys:
                continue
            if v is None:
                q, k = want["queries"][h][i], want["keys"][h]
                size = sum(abs(a * b) for j in keys for a, b in zip(q, k[j]))
            else:
                size = len(keys) * sum(abs(x) for x in (v[h] if isinstance(v[0], list) else v))
            total = abs(sum(row[j] for j in keys))
            worst = max(worst, math.inf if total == 0 else abs(want["scale"]) * (size + 1) / total)
    return worst


@pytest.mark.slow
@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow,
                                                                                     HealthCheck.filter_too_much])
@given(doc=documents())
def test_random_documents_agree_with_the_reference(tmp_path_factory, doc):
    tmp_path = tmp_path_factory.mktemp("doc")
    try:
        want = reference_document(doc)
    except NotComputable:
        result = run(tmp_path, json.dumps(doc), "doc.json")
        assert result.exit_code == 2 and result.stdout == "" and "sum to 0" in result.stderr, result.output
        return
    assume(sum_condition(doc, want) < 100)  # a sum near 0 amplifies the last bit of each score: not comparable
    got, stderr = compute(tmp_path, json.dumps(doc), "doc.json")
    assert_agree(got, want, stderr)


# ------------------------------------------------------------------ the fast reader of large inline matrices
# A document of 20 000 characters or more has its large `key: [[…]]` matrices read by numpy before YAML sees
# the rest (a placeholder stands in for each). Whatever it reads must be what PyYAML reads.


SPELLINGS = ["1", "-0", "1e-3", "2E+2", ".5", "-.25", "1.", "+3", "-1.5e1", "0.1", "7", "-2.5e-3"]


def spelled(rows: int, cols: int, seed: int) -> list[list[str]]:
    rng = random.Random(seed)
    cells = [[repr(rng.uniform(-2, 2)) for _ in range(cols)] for _ in range(rows)]
    for k, spelling in enumerate(SPELLINGS):
        cells[k % rows][(k * 7) % cols] = spelling
    return cells


def flow(cells: list[list[str]], sep: str = ",\n  ") -> str:
    return "[" + sep.join("[" + ", ".join(row) + "]" for row in cells) + "]"


def naive_numbers(value):
    """PyYAML's reading of a matrix, its strings (YAML 1.1 reads `1e-3` as one) converted by float()."""
    if isinstance(value, list):
        return [naive_numbers(x) for x in value]
    assert not isinstance(value, bool) and value is not None
    return float(value)


@pytest.mark.parametrize("sep", [",\n  ", ", "], ids=["rows-on-lines", "one-line"])
def test_large_inline_matrices_read_as_pyyaml_reads_them(tmp_path, sep):
    x, w = spelled(40, 120, 1), spelled(120, 3, 2)
    text = f"tokens: {' '.join(f't{i}' for i in range(40))}\ninputs: {flow(x, sep)}\n" \
           f"weights:\n  query: {flow(w, sep)}\n  key: {flow(w, sep)}\nscale: none\n"
    assert len(flow(x, sep)) > 20_000 and len(flow(w, sep)) < 20_000 < len(text)
    got, _ = compute(tmp_path, text)
    raw = yaml.safe_load(text)
    assert got["inputs"] == naive_numbers(raw["inputs"])  # exactly: every cell as float() reads it
    raw["inputs"] = naive_numbers(raw["inputs"])
    raw["weights"] = {k: naive_numbers(v) for k, v in raw["weights"].items()}
    want = reference_document(raw)
    for key in ("queries", "keys", "scores"):
        assert max_rel_diff(got[key], want[key]) <= TOL, key


def test_json_style_large_matrices_with_a_mask_read_as_pyyaml_reads_them(tmp_path):
    n = 90
    x, w = spelled(n, 12, 3), spelled(12, 4, 4)
    mask = [["1" if (i + j) % 5 else "0" for j in range(n)] for i in range(n)]
    mask[7] = ["0"] * n  # a fully masked query
    text = f'{{inputs: {flow(x)}, "mask": {flow(mask, ", ")},\n "weights": {{"query": {flow(w)}, "key": {flow(w)}}}, ' \
           '"normalize": "sum", "positional": "sinusoidal"}\n'
    assert len(flow(x)) > 20_000 and len(flow(mask, ", ")) > 20_000
    got, stderr = compute(tmp_path, text)
    raw = yaml.safe_load(text)
    raw["inputs"] = naive_numbers(raw["inputs"])
    raw["weights"] = {k: naive_numbers(v) for k, v in raw["weights"].items()}
    assert got["inputs"] == raw["inputs"]
    want = reference_document(raw)
    assert sum_condition(raw, want) < 1e4
    for key in ("queries", "keys", "values", "scores", "scaled_scores"):
        assert max_rel_diff(got[key], want[key]) <= TOL, key
    assert got["weights"][0][7] == [0.0] * n and "query 8 " in stderr


def large_valid_matrix() -> str:
    return flow(spelled(30, 100, 5))


def test_a_quoted_string_in_a_matrix_row_is_an_error_naming_the_cell(tmp_path):
    """The string holds `x: [[…]]`, which the quick scan lifts too; it must not come back as a placeholder."""
    inner = flow(spelled(30, 100, 6), ", ")
    text = f'inputs: [[1, 0], ["x: {inner}", 1]]\nweights:\n  key: {large_valid_matrix()}\n'
    cell = yaml.safe_load(text)["inputs"][1][0]
    assert cell.startswith("x: [[") and len(inner) > 20_000
    result = run(tmp_path, text)
    assert result.exit_code == 2 and result.stdout == "" and "Traceback" not in result.stderr
    assert "inputs: row 2, column 1" in result.stderr and repr(cell[:30])[:-1] in result.stderr, result.stderr
    assert "attncli-matrix" not in result.stderr


def test_a_quoted_string_that_looks_like_a_matrix_stays_as_written(tmp_path):
    """Token labels that hold `k: [[…]]` text, beside a large matrix that is lifted and put back."""
    inner = flow(spelled(30, 100, 7), ", ")
    x = spelled(30, 100, 8)
    labels = [f"'t{i}'" for i in range(30)]
    labels[3] = f"'k: {inner}'"
    text = f"tokens: [{', '.join(labels)}]\ninputs: {flow(x)}\nscale: none\n"
    raw = yaml.safe_load(text)
    got, _ = compute(tmp_path, text)
    assert got["tokens"] == raw["tokens"] and got["tokens"][3].startswith("k: [[")
    assert got["inputs"] == naive_numbers(raw["inputs"])
