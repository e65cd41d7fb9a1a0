"""The streamed path with every mask and score bias (issues 16 and 20): attend_streamed against attend, table by table.

Blocks, tiles and the narrow tiles along a causal or window band's edges are forced to many sizes (odd ones, edges
wider than the tile, one query per block), so that every branch of attncli.core.tiles meets every kind of mask and
score bias; a few sliding windows are compared with PyTorch's scaled_dot_product_attention too, and a long one goes
through ``compute --only output -o out.npy`` as a user runs it.  Huge numbers overflow alike in both paths, whether or
not a mask hides the cell; numpy values inside a mapping's lists read as a document's.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from stream_helpers import assert_equal_traces, document, same_error, spec_of

import attncli
from attncli.cli import app
from attncli.core import stream, tiles
from attncli.core.pipeline import attend
from attncli.core.stream import attend_streamed


def shapes(monkeypatch, rows: int, cells: int, edge: int) -> None:
    """Blocks of ``rows`` queries, tiles of ``cells`` scores, ``edge`` keys along a band's edge (at most the tile)."""
    monkeypatch.setattr(stream, "fast_rows", lambda spec: rows)
    monkeypatch.setattr(stream, "BLOCK_CELLS", cells)
    monkeypatch.setattr(tiles, "EDGE_KEYS", edge)


# ---------------------------------------------------------------- overflow where the mask hides it


@pytest.mark.parametrize("mask, hidden", [({"causal": "upper_left"}, 11), ({"causal": "lower_right", "window": 2}, 0),
                                          ({"window": 2}, 11)], ids=["causal", "causal-window", "window"])
@pytest.mark.parametrize("threads", [1, 2])
def test_scores_that_overflow_in_masked_keys_are_the_same_error(mask, hidden, threads, monkeypatch):
    """attend computes S for every cell, masked or not, and names an overflow anywhere in it: the streamed path
    must not skip the keys outside a block's band when it checks (or it gives numbers where attend gives an error)."""
    shapes(monkeypatch, rows=2, cells=24, edge=3)
    data = document(1, n=4, m=12, heads=1)
    context = np.array(data["context"])
    context[hidden] *= 1e160  # a key outside every query's band; q·k overflows with queries of 1e160
    data.update(inputs=(np.array(data["inputs"]) * 1e160).tolist(), context=context.tolist())
    spec = spec_of(dict(data, mask=mask))
    assert "scores overflow float64 at head 1, row 1" in same_error(spec, threads)


# ---------------------------------------------------------------- every mask and bias × many block, tile and edge sizes

# (queries per block, cells per tile, keys along a band's edge): tiles of cells // rows keys, at least 16 (tiles.LEAST);
# an edge of 100 is wider than the tile (then the tile's width), 1, 2, 3, 5 and 13 cut the band at odd places (a window
# under 4 × EDGE_KEYS takes half of it: an edge of 1 must still be a key wide)
SHAPES = [(1, 24, 3), (3, 24, 5), (16, 24, 3), (7, 100, 13), (32, 512, 2), (32, 512, 100), (64, 4096, 16), (5, 80, 1)]

N, M = 29, 45  # self-attention n × n, or cross-attention n × m and m × n
CASES = {
    "causal-upper-left-n<m": (N, M, {"mask": {"causal": "upper_left"}}),
    "causal-upper-left-n>m": (M, N, {"mask": {"causal": "upper_left"}}),
    "causal-lower-right-n<m": (N, M, {"mask": {"causal": "lower_right"}}),
    "causal-lower-right-n>m": (M, N, {"mask": {"causal": "lower_right"}}),  # the first 16 queries see no key
    "causal-window-1": (N, None, {"mask": {"causal": True, "window": 1}}),
    "causal-window-6": (N, None, {"mask": {"causal": True, "window": 6}}),
    "causal-window-n": (N, None, {"mask": {"causal": True, "window": N}}),
    "causal-window-beyond-m": (N, M, {"mask": {"causal": True, "window": M + 3}}),
    "lower-right-window-n<m": (N, M, {"mask": {"causal": "lower_right", "window": 7}}),
    "lower-right-window-n>m": (M, N, {"mask": {"causal": "lower_right", "window": 4}}),
    "window-1": (N, None, {"mask": {"window": 1}}),
    "window-6": (N, None, {"mask": {"window": 6}}),
    "window-n": (N, None, {"mask": {"window": N}}),
    "window-n<m": (N, M, {"mask": {"window": 9}}),
    "window-n>m": (M, N, {"mask": {"window": 9}}),  # the last 8 queries see no key
    "window-m": (M, N, {"mask": {"window": N}}),  # n > m, W = m: every query sees a key (the last, keys 16 … 28)
    "window-padding": (N, None, {"mask": {"window": 3, "keys": [1] * 10 + [0] * 8 + [1] * 11}}),  # some see none
    "causal-window-padding-block": (N, M, {"mask": {"causal": "lower_right", "window": 20, "convention": "block",
                                                    "keys": [0] * 30 + [1] * 5 + [0] * 10}}),
    "window-per-head-matrix": (N, None, {"heads": 3, "mask": {"causal": True, "window": 8, "matrix":
                                                             (np.random.default_rng(1).random((3, N, N)) < 0.6)}}),
    "window-matrix": (N, M, {"mask": {"window": 12, "matrix": np.random.default_rng(2).random((N, M)) < 0.5}}),
    "window-alibi": (N, None, {"mask": {"causal": True, "window": 10}, "score_bias": {"alibi": True}}),
    "window-relative": (N, None, {"mask": {"window": 5}, "score_bias": {"relative": {
        "table": np.random.default_rng(3).normal(size=(8, 4)), "buckets": 8, "max_distance": 16}}}),
    "window-bias-minus-inf": (N, None, {"mask": {"causal": True, "window": 9}, "score_bias": {"matrix": np.where(
        np.random.default_rng(4).random((N, N)) < 0.4, -np.inf, np.random.default_rng(5).normal(size=(N, N)))}}),
    "window-bias-per-head": (N, M, {"mask": {"window": 15}, "score_bias": {"alibi": True, "matrix": np.where(
        np.random.default_rng(6).random((4, N, M)) < 0.2, -np.inf,
        3 * np.random.default_rng(7).normal(size=(4, N, M)))}}),
    "window-grouped": (N, None, {"kv_heads": 2, "mask": {"causal": True, "window": 4}}),
    "window-grouped-one": (N, M, {"kv_heads": 1, "mask": {"window": 11}}),
    "window-rope": (N, None, {"rope": True, "kv_heads": 1, "mask": {"causal": True, "window": 5}}),
    "window-softcap": (N, None, {"softcap": 1.5, "mask": {"window": 4}}),
    "window-positions": (N, None, {"positions": list(range(100, 100 + 3 * N, 3)), "score_bias": {"alibi": True},
                                   "mask": {"causal": True, "window": 7}}),  # masks count rows, ALiBi reads positions
    "everything": (N, M, {"kv_heads": 2, "rope": {"base": 100}, "softcap": 4.0, "scale": 0.7,
                          "score_bias": {"alibi": True}, "mask": {"causal": "lower_right", "window": 13,
                                                                  "keys": [1] * 40 + [0] + [1] * 4}}),
}


def case_spec(name: str, spread: float):
    n, m, extra = CASES[name]
    extra = dict(extra)
    seed = sum(map(ord, name))
    if m is not None:
        extra["context"] = (spread * np.random.default_rng(seed).normal(size=(m, 8))).tolist()
    return spec_of(document(seed, n=n, spread=spread, **extra))


@pytest.mark.parametrize("spread", [0.2, 12.0], ids=["no-row-max", "running-row-max"])
@pytest.mark.parametrize("rows, cells, edge", SHAPES, ids=[f"{r}x{c}-edge{e}" for r, c, e in SHAPES])
@pytest.mark.parametrize("name", CASES)
def test_every_mask_and_bias_with_any_tiles_equals_attend(name, rows, cells, edge, spread, monkeypatch):
    shapes(monkeypatch, rows, cells, edge)
    spec = case_spec(name, spread)
    assert_equal_traces(attend(spec), attend_streamed(spec, threads=2))


# ---------------------------------------------------------------- the same, drawn at random


@st.composite
def streamed_cases(draw):
    """A random document with every kind of mask part and score bias, and the block, tile and edge sizes."""
    n, m = draw(st.integers(1, 70)), draw(st.one_of(st.none(), st.integers(1, 90)))
    keys, heads = m or n, draw(st.sampled_from([1, 2, 4]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    mask = {}
    if causal := draw(st.sampled_from([None, True, "lower_right"])):
        mask["causal"] = causal
    if draw(st.booleans()):
        mask["window"] = draw(st.one_of(st.integers(1, 12), st.sampled_from([n, keys, max(n, keys) + 5])))
    if draw(st.booleans()):
        mask["keys"] = rng.random(keys) < draw(st.sampled_from([0.3, 0.8]))
    if draw(st.integers(0, 4)) == 0:
        mask["matrix"] = rng.random(draw(st.sampled_from([(n, keys), (heads, n, keys)]))) < 0.6
    bias = {}
    if draw(st.booleans()):
        bias["alibi"] = True
    if draw(st.integers(0, 3)) == 0:
        shape = draw(st.sampled_from([(n, keys), (heads, n, keys)]))
        bias["matrix"] = np.where(rng.random(shape) < 0.3, -np.inf, rng.normal(size=shape))
    extra = {key: value for key, value in (("mask", mask), ("score_bias", bias)) if value}
    if heads > 1 and draw(st.booleans()):
        extra["kv_heads"] = draw(st.sampled_from([1, heads // 2]))
    if draw(st.booleans()):
        extra["rope"] = True
    if draw(st.booleans()):
        extra["softcap"] = draw(st.sampled_from([0.5, 5.0]))
    spread = draw(st.sampled_from([0.2, 3.0, 12.0, 40.0]))
    if m is not None:
        extra["context"] = spread * rng.normal(size=(m, 8))
    data = document(int(rng.integers(1 << 30)), n=n, heads=heads, spread=spread, **extra)
    sizes = (draw(st.integers(1, 40)), draw(st.sampled_from([24, 100, 500, 2048])), draw(st.integers(1, 70)))
    return data, sizes, draw(st.sampled_from([1, 2]))


@pytest.mark.slow
@settings(max_examples=300, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
@given(streamed_cases())
def test_random_documents_with_any_tiles_equal_attend(case):
    data, (rows, cells, edge), threads = case
    spec = spec_of(data)
    with pytest.MonkeyPatch.context() as patch:
        shapes(patch, rows, cells, edge)
        assert_equal_traces(attend(spec), attend_streamed(spec, threads=threads))


# ---------------------------------------------------------------- sliding windows against PyTorch


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


@pytest.mark.parametrize("n, window, causal, spread",
                         [(300, 1, True, 1.0), (300, 64, False, 0.2), (777, 129, True, 6.0),
                                                       (1000, 1000, True, 1.0), (2000, 64, True, 6.0),
                                                       (2000, 300, False, 6.0)])
@pytest.mark.parametrize("tiles_of", ["cache", "small"])
def test_sliding_windows_equal_pytorch_sdpa(torch, n, window, causal, spread, tiles_of, monkeypatch):
    """scaled_dot_product_attention on (1, h, n, d) float64 tensors with the window as an explicit boolean mask
    (True = may attend; causal: i − W < j ≤ i, else |i − j| < W), against the streamed output, to 1e-12."""
    if tiles_of == "small":
        shapes(monkeypatch, rows=96, cells=96 * 40, edge=7)
    heads, d = 3, 4
    data = document(n, n=n, heads=heads, d_k=d, d_v=d, spread=spread,
                    mask={"causal": True, "window": window} if causal else {"window": window})
    trace = attend_streamed(spec_of(data), threads=2)
    x, w = (torch.tensor(np.array(a))
            for a in (data["inputs"], [data["weights"][c] for c in ("query", "key", "value")]))
    q, k, v = ((x @ w[c]).reshape(n, heads, d).transpose(0, 1)[None] for c in range(3))  # (1, h, n, d)
    i, j = torch.arange(n)[:, None], torch.arange(n)[None, :]
    allowed = ((j <= i) & (j > i - window)) if causal else ((i - j).abs() < window)
    want = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=allowed)  # scale 1 / √d, as attncli
    want = want[0].transpose(0, 1).reshape(n, heads * d).numpy()
    assert np.abs(trace.output - want).max() <= 1e-12 * max(1.0, np.abs(want).max())


# ---------------------------------------------------------------- as a user: a long document, the output to a file


def windowed_reference(x: np.ndarray, w: dict, heads: int, window: int, causal: bool) -> np.ndarray:
    """The layer written out directly: for each query its window of keys (i − W < j ≤ i, or |i − j| < W), softmax
    with the row's own maximum, the heads side by side, then W_O."""
    n, d = len(x), w["q"].shape[1] // heads
    q, k, v = (x @ w[c] for c in "qkv")
    out = np.empty((n, heads * d))
    for i in range(n):
        keys = slice(max(0, i - window + 1), i + 1 if causal else min(n, i + window))
        for h in range(heads):
            cols = slice(h * d, (h + 1) * d)
            z = k[keys, cols] @ q[i, cols] / np.sqrt(d)
            e = np.exp(z - z.max())
            out[i, cols] = e @ v[keys, cols] / e.sum()
    return out @ w["o"]


@pytest.mark.parametrize("causal", [True, False])
def test_a_long_sliding_window_document_written_to_npy(runner, tmp_path, causal):
    """`attncli compute DOC --only output -o out.npy`, n = 3000, W = 64, matrices in .npy files (README, "Put big
    matrices in files"): the streamed computation, to 1e-12 of a direct loop over the queries."""
    rng = np.random.default_rng(64)
    n, d_model, heads, window = 3000, 32, 4, 64
    x = 4.0 * rng.normal(size=(n, d_model))  # large enough for the running row maximum
    w = {c: rng.normal(size=(d_model, d_model)) / np.sqrt(d_model) for c in "qkvo"}
    for name, array in [("x", x), *w.items()]:
        np.save(tmp_path / f"{name}.npy", array)
    mask = f"{{causal: true, window: {window}}}" if causal else f"{{window: {window}}}"
    (tmp_path / "doc.yaml").write_text(f"inputs: x.npy\nheads: {heads}\n"
                                       "weights: {query: q.npy, key: k.npy, value: v.npy, output: o.npy}\n"
                                       f"mask: {mask}\n")
    result = runner.invoke(app, ["compute", str(tmp_path / "doc.yaml"), "--only", "output",
                                 "-o", str(tmp_path / "y.npy")])
    assert result.exit_code == 0, result.output
    got, want = np.load(tmp_path / "y.npy"), windowed_reference(x, w, heads, window, causal)
    assert got.shape == (n, d_model) and np.abs(got - want).max() <= 1e-12 * np.abs(want).max()


# ---------------------------------------------------------------- from Python: numpy values inside lists


def test_numpy_values_inside_lists_read_as_the_python_values_a_document_holds():
    """list(array) gives numpy scalars, and a list of rows may hold arrays: as welcome in a mapping's lists as
    at its top (a window over padded keys, ALiBi at given positions, per-head slopes)."""
    rng = np.random.default_rng(9)
    x, w = rng.normal(size=(6, 4)), {c: rng.normal(size=(4, 4)) for c in ("query", "key", "value")}
    keys, positions, slopes = np.array([1, 1, 0, 1, 1, 1], bool), np.arange(6.0) * 2, np.array([0.5, 0.25])
    plain = {"inputs": x.tolist(), "weights": w, "heads": 2, "positions": positions.tolist(),
             "mask": {"window": 2, "keys": keys.tolist(), "matrix": np.tril(np.ones((6, 6)), 1).astype(int).tolist()},
             "score_bias": {"alibi": {"slopes": slopes.tolist()}}}
    numpy = {"inputs": list(x), "weights": w, "heads": 2, "positions": list(positions),
             "mask": {"window": 2, "keys": list(keys),
                      "matrix": [list(row) for row in np.tril(np.ones((6, 6), int), 1)]},
             "score_bias": {"alibi": {"slopes": list(slopes)}}}
    expected, got = attncli.compute(plain), attncli.compute(numpy)
    for key in ("scaled_scores", "weights", "output"):
        assert np.array_equal(getattr(got, key), getattr(expected, key), equal_nan=True), key
    assert got.weights[0, 0, 2] == 0 and got.weights[0, 3, 1] == 0 and got.weights[0, 3, 3] > 0  # padding, window
    with pytest.raises(attncli.AttnError, match=r"mask\.keys: entry 2: 2 is not a mask value"):
        attncli.compute(dict(numpy, mask={"keys": list(np.array([1, 2, 1, 1, 1, 1]))}))  # still checked as a document
