"""The fast paths of the streamed computation (issue 20) give the full computation's numbers, to 1e-12.

attncli.core.tiles takes a block of queries against its keys a tile at a time, with a running row
maximum where exp needs one (the online softmax), skips tiles a mask covers, folds the scale into Q
and writes every output row itself (the output array starts uninitialised).  Each of these is
checked here against :func:`attend`, which keeps every n × m matrix: with tiles forced small (many
per block, so that the row maximum moves between them), with the tile size the cache gives, on one
thread and two, for every kind of mask and score bias, soft-capping, grouped-query heads, rotary
positions and cross-attention.  Nothing here measures time.
"""

from __future__ import annotations

import dataclasses
import io
import itertools

import numpy as np
import pytest
from stream_helpers import TOL, assert_equal_traces, assert_same, document, same_error, spec_of

from attncli.cli import app
from attncli.core import attention, bounds, stream, tiles
from attncli.core.attention import projections
from attncli.core.errors import AttnError
from attncli.core.masks import Mask
from attncli.core.pipeline import attend
from attncli.core.stream import attend_streamed
from attncli.core.threads import _cpu_list, cache_bytes, cores
from attncli.inputs.builder import build_spec
from attncli.inputs.document import Document
from attncli.outputs.serialize import write_npy


@pytest.fixture
def small_tiles(monkeypatch):
    """Tiles of 16 × 16: a block of 16 queries meets its keys in several tiles."""
    monkeypatch.setattr(stream, "BLOCK_CELLS", 24)


@pytest.fixture
def unwritten_is_nan(monkeypatch):
    """np.empty gives NaN everywhere while the test runs: a row the computation forgot to write shows."""
    empty = np.empty

    def poisoned(shape, dtype=float, order="C", **kw):
        a = empty(shape, dtype=dtype, order=order, **kw)
        if np.issubdtype(a.dtype, np.floating):
            a.fill(np.nan)
        return a

    monkeypatch.setattr(np, "empty", poisoned)


def rng_mask(seed: int, shape: tuple[int, ...], p: float = 0.7) -> list:
    return (np.random.default_rng(seed).random(shape) < p).astype(int).tolist()


N, M = 41, 37
CASES = {
    "plain": {},
    "scale": {"scale": 0.3},
    "scale-one": {"scale": "none"},
    "causal": {"mask": "causal"},
    "causal-lower-right-cross": {"m": M, "mask": {"causal": "lower_right"}},
    "causal-upper-left-cross": {"m": M, "mask": {"causal": "upper_left"}},
    "causal-window": {"mask": {"causal": True, "window": 5}},
    "window-two-sided": {"mask": {"window": 7}},
    "padding-keys": {"mask": {"keys": [0] * 20 + [1] * 5 + [0] * 16}},  # the first and the last tiles have no key
    "padding-block": {"mask": {"keys": [1] * 3 + [0] * 38, "convention": "block"}},
    "matrix": {"mask": rng_mask(1, (N, N))},
    "matrix-per-head": {"mask": {"matrix": rng_mask(2, (4, N, N), 0.2)}},
    "matrix-empty-rows": {"mask": [[0] * N if i in (0, 17, 40) else [1] * N for i in range(N)]},
    "bias-matrix": {"score_bias": {"matrix": np.random.default_rng(3).normal(size=(N, N)).tolist()}},
    "bias-minus-inf": {"score_bias": {"matrix": np.where(np.random.default_rng(4).random((N, N)) < 0.3, -np.inf,
                                                         np.random.default_rng(5).normal(size=(N, N))).tolist()}},
    "alibi-causal": {"score_bias": {"alibi": True}, "mask": "causal"},
    "relative": {"score_bias": {"relative": {"table": np.random.default_rng(6).normal(size=(8, 4)).tolist(),
                                             "buckets": 8, "max_distance": 16}}},
    "softcap": {"softcap": 2.5},
    "grouped": {"kv_heads": 2, "mask": {"causal": True, "window": 9}},
    "rope": {"rope": True, "kv_heads": 1, "mask": "causal"},
    "everything": {"kv_heads": 2, "rope": {"base": 100}, "softcap": 4.0, "score_bias": {"alibi": True},
                   "mask": {"causal": True, "window": 20, "keys": [1] * 30 + [0] + [1] * 10}},
}


@pytest.mark.parametrize("spread, shifted", [(0.2, False), (12.0, True)], ids=["no-row-max", "running-row-max"])
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("name", CASES)
def test_small_tiles_equal_the_full_computation(small_tiles, name, threads, spread, shifted):
    extra = dict(CASES[name])
    m = extra.pop("m", None)
    spec = spec_of(document(len(name), m=m, spread=spread, **extra))
    rows = stream.fast_rows(spec)
    assert rows == 16 and tiles.tile_keys(spec, rows, stream.cells()) == 16
    q, k, v = attention.projections(spec)
    if spec.rope is not None:
        q, k = attention.rotations(q, k, spec)
    assert bool(bounds.needs_shift(q, k, v, spec).any()) == (shifted and "softcap" not in extra)  # |c·tanh| < c
    assert_same(spec, threads)


@pytest.mark.parametrize("name", ["plain", "causal", "matrix-per-head", "everything"])
def test_the_tiles_the_cache_gives_equal_the_full_computation(name):
    extra = dict(CASES[name])
    spec = spec_of(document(7, spread=10.0, **extra))  # one tile per block: the row max of the tile is the row's
    assert_same(spec)


def test_every_output_row_is_written(small_tiles, unwritten_is_nan):
    """The output array starts uninitialised: rows with no key, blocks with no key, skipped tiles are all 0."""
    mask = np.ones((4, 48, 48), dtype=int)
    mask[1, :16] = 0  # head 2, the first block: no key at all
    mask[2, 20] = 0  # head 3, one query without a key
    mask[3, :, :32] = 0  # head 4: the first two tiles of every block are masked
    spec = spec_of(document(8, n=48, spread=12.0, mask={"matrix": mask.tolist()}))
    trace = attend_streamed(spec, threads=2)
    assert np.isfinite(trace.head_outputs).all() and np.isfinite(trace.output).all()
    assert not trace.head_outputs[1, :16].any() and not trace.head_outputs[2, 20].any()
    assert trace.empty_queries == tuple(range(16)) + (20,)
    np.testing.assert_allclose(trace.output, attend(spec).output, rtol=0, atol=TOL)


def test_the_row_maximum_moves_from_tile_to_tile(small_tiles):
    """Scores rising along the keys: every tile raises each row's maximum, and what was summed is rescaled."""
    n = 40
    x = np.zeros((n, 2))
    x[:, 0] = 1.0
    x[:, 1] = np.linspace(0, 30, n)  # key j scores about 30·j / n against a query, up to e^900 apart
    data = {"inputs": x.tolist(), "weights": {"query": [[10.0], [0.0]], "key": [[0.0], [1.0]], "value": [[1.0], [2.0]]},
            "scale": "none"}
    spec = spec_of(data)
    assert bounds.needs_shift(*attention.projections(spec), spec).all()
    streamed, full = attend_streamed(spec, threads=1), attend(spec)
    np.testing.assert_allclose(streamed.output, full.output, rtol=TOL, atol=0)
    descending = dict(data, inputs=x[::-1].tolist())  # and falling: the first tile holds the maximum
    np.testing.assert_allclose(attend_streamed(spec_of(descending)).output, attend(spec_of(descending)).output,
                               rtol=TOL, atol=0)


def test_huge_numbers_are_checked_tile_by_tile(small_tiles):
    """Scores near 1e300 (checked): the scale after the product, as the full computation; overflow named alike."""
    data = document(9, n=40, spread=1.0)
    data["inputs"] = (np.array(data["inputs"]) * 1e149).tolist()
    spec = spec_of(data)
    assert not bounds.cannot_overflow(*attention.projections(spec)[:2], spec)
    assert_same(spec)
    data["inputs"] = (np.array(data["inputs"]) * 1e10).tolist()
    assert "overflow" in same_error(spec_of(data))


@pytest.fixture
def tiles_computed(monkeypatch) -> list[tuple[int, int, int, int, int]]:
    """(head, first query, last query + 1, first key, last key + 1) of every tile _Blocks.scores computes."""
    computed: list[tuple[int, int, int, int, int]] = []
    scores = tiles._Blocks.scores

    def counting(self, q, h, lo, hi, s0, s1, z):
        computed.append((h, lo, hi, s0, s1))
        return scores(self, q, h, lo, hi, s0, s1, z)

    monkeypatch.setattr(tiles._Blocks, "scores", counting)
    return computed


def test_masked_tiles_and_spans_are_not_computed(small_tiles, tiles_computed):
    """A causal mask computes the tiles on or below the diagonal only; a tile every key of which is padding, none."""
    computed = tiles_computed
    n = 64  # four blocks of 16 queries, four tiles of 16 keys
    attend_streamed(spec_of(document(10, n=n, heads=1, mask="causal")), threads=1)
    assert sorted((h, lo, s0) for h, lo, _, s0, _ in computed) == [(0, lo, s0) for lo in range(0, n, 16)
                                                                    for s0 in range(0, lo + 16, 16)]
    computed.clear()
    attend_streamed(spec_of(document(10, n=n, heads=1, mask={"keys": [1] * 16 + [0] * 32 + [1] * 16})), threads=1)
    assert sorted((h, lo, s0) for h, lo, _, s0, _ in computed) == [(0, lo, s0) for lo in range(0, n, 16)
                                                                    for s0 in (0, 48)]


def test_queries_that_see_no_key_of_a_tile_are_not_computed(small_tiles, tiles_computed, monkeypatch):
    """Blocks of 32 queries, tiles of 16 keys, causal: on the diagonal, the second tile is the later 16 queries'."""
    computed = tiles_computed
    monkeypatch.setattr(stream, "fast_rows", lambda spec: 32)
    spec = spec_of(document(15, n=64, heads=1, spread=12.0, mask="causal"))
    assert_same(spec, threads=1)
    computed.clear()
    attend_streamed(spec, threads=1)
    assert sorted((lo, hi, s0) for _, lo, hi, s0, _ in computed) == [(0, 32, 0), (16, 32, 16), (32, 64, 0),
                                                                      (32, 64, 16), (32, 64, 32), (48, 64, 48)]


@pytest.mark.parametrize("causal, window", [("upper_left", None), ("lower_right", None), ("upper_left", 3),
                                            ("lower_right", 5), (None, 4), (None, 1)])
def test_the_queries_a_band_lets_see_a_rectangle(causal, window):
    """Mask.query_span: exactly the queries with an allowed cell among the keys, by causal and window."""
    n, m = 13, 17
    full = Mask(n, m, causal=causal, window=window).full()
    for lo, hi, start, stop in itertools.product(range(0, n, 3), range(1, n + 1, 4),
                                                 range(0, m, 4), range(1, m + 1, 5)):
        if lo >= hi or start >= stop:
            continue
        first, last = Mask(n, m, causal=causal, window=window).query_span(lo, hi, start, stop)
        seeing = [i for i in range(lo, hi) if full[i, start:stop].any()]
        assert list(range(first, last)) == seeing, (lo, hi, start, stop)


@pytest.mark.parametrize("causal, window", [("upper_left", None), ("lower_right", None), ("upper_left", 3),
                                            ("lower_right", 5), (None, 4), (None, 1)])
def test_a_band_that_covers_a_rectangle_builds_none(causal, window):
    """Mask.block's shortcut (no cell built when causal and window allow them all) against the cells themselves."""
    n, m = 13, 17
    mask = Mask(n, m, causal=causal, window=window)
    full = mask.full()
    for lo, hi, start, stop in itertools.product(range(0, n, 3), range(1, n + 1, 4),
                                                 range(0, m, 4), range(1, m + 1, 5)):
        if lo >= hi or start >= stop:
            continue
        block = mask.block(lo, hi, start, stop)
        cells = full[lo:hi, start:stop]
        assert (block is None) == bool(cells.all()), (lo, hi, start, stop)
        if block is not None:
            assert np.array_equal(block, cells)


def test_tile_shape_from_the_cache_and_the_jobs():
    spec = spec_of(document(11, n=2000, heads=12))
    assert tiles.tile_shape(spec, 1 << 19) == (1024, 512)  # 4 MiB: four L2 caches of 1 MiB
    assert tiles.tile_shape(spec, 1 << 18) == (512, 512)
    assert tiles.tile_shape(spec, 24) == (16, 16)
    one_head = spec_of(document(12, n=512, heads=1))
    rows, _ = tiles.tile_shape(one_head, 1 << 18)  # fewer than two jobs per core: smaller blocks
    assert rows < 512 and -(-512 // rows) >= 2 * cores()
    windowed = spec_of(document(13, n=2000, heads=12, mask={"causal": True, "window": 128}))
    assert tiles.edge_keys(spec, 512) == 128  # along a causal diagonal
    assert tiles.edge_keys(windowed, 512) == 64  # a window narrower than 512
    assert tiles.edge_keys(windowed, 16) == 16  # never wider than the tile
    cells = tiles.tile_cells()
    assert cells >= tiles.LEAST * tiles.LEAST
    l2 = cache_bytes(2)
    if l2 is not None:
        assert 8 * cells <= tiles.L2_TILES * l2[0]


def test_cpu_lists_and_cache_sizes():
    assert _cpu_list("0-3,8") == [0, 1, 2, 3, 8] and _cpu_list("5") == [5]
    assert cache_bytes(99) is None
    found = cache_bytes(2)
    assert found is None or (found[0] >= 1 << 10 and found[1] >= 1)


@pytest.mark.parametrize("array", [np.arange(12.0).reshape(3, 4), np.arange(24.0).reshape(2, 3, 4).transpose(1, 0, 2),
                                   np.asfortranarray(np.arange(6.0).reshape(2, 3)), np.zeros((0, 4)), np.array(2.5),
                                   np.arange(30.0).reshape(5, 6)[::2, 1::2], np.zeros((4, 0, 3))[::2],
                                   np.arange(600.0).reshape(10, 6, 10).transpose(1, 0, 2)[:, ::3]],
                         ids=["c", "transposed", "fortran", "empty", "0-d", "strided", "empty-strided", "blocks"])
def test_write_npy_writes_what_np_save_writes(array, tmp_path, monkeypatch):
    """Byte for byte np.save's, into a memory buffer and into a file; a non-contiguous array a block of rows at a time
    (NPY_BLOCK made small: "blocks" is written a row at a time, "strided" in one block)."""
    from attncli.outputs import serialize

    monkeypatch.setattr(serialize, "NPY_BLOCK", 80)
    saved = io.BytesIO()
    np.save(saved, array, allow_pickle=False)
    mine = io.BytesIO()
    write_npy(mine, array)
    assert mine.getvalue() == saved.getvalue()
    with open(tmp_path / "a.npy", "wb") as file:
        write_npy(file, array)
    assert (tmp_path / "a.npy").read_bytes() == saved.getvalue()


def test_the_npy_file_of_a_streamed_output(runner, tmp_path, small_tiles):
    doc = tmp_path / "doc.yaml"
    np.save(tmp_path / "x.npy", np.random.default_rng(14).normal(size=(70, 8)))
    doc.write_text("inputs: x.npy\nheads: 2\nmask: causal\n")
    out = tmp_path / "y.npy"
    result = runner.invoke(app, ["compute", str(doc), "--only", "output", "-o", str(out)])
    assert result.exit_code == 0, result.output
    spec = build_spec(Document({"inputs": np.load(tmp_path / "x.npy").tolist(), "heads": 2, "mask": "causal"}, "d",
                               tmp_path))
    np.testing.assert_allclose(np.load(out), attend(spec).output, rtol=0, atol=TOL)


@pytest.mark.parametrize("preset", [None, "1"])
def test_the_command_sets_numpy_and_openblas_defaults_unless_told(monkeypatch, preset):
    """Huge pages off and OpenBLAS's idle threads asleep at once, set before numpy is imported, as the command
    starts; a value already in the environment is kept."""
    import os

    from attncli.cli import main

    environment = {} if preset is None else {"NUMPY_MADVISE_HUGEPAGE": preset, "OPENBLAS_THREAD_TIMEOUT": preset}
    monkeypatch.setattr(os, "environ", environment)
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0
    want = ("0", "4") if preset is None else (preset, preset)
    assert (environment["NUMPY_MADVISE_HUGEPAGE"], environment["OPENBLAS_THREAD_TIMEOUT"]) == want


@pytest.mark.slow
def test_numpy_reads_the_defaults_in_a_command(tmp_path):
    """In a real process: numpy, imported after the command started, has huge pages off."""
    import os
    import subprocess
    import sys

    core = np._core if hasattr(np, "_core") else np.core  # numpy 2 renamed numpy.core
    if not hasattr(core.multiarray, "_get_madvise_hugepage"):
        pytest.skip("this numpy does not say whether it asks for huge pages")
    code = ("import sys; from attncli.cli import main; import atexit; "  # numpy imported only once main has run
            "core = lambda np: np._core if hasattr(np, '_core') else np.core; "
            "atexit.register(lambda: print(core(__import__('numpy')).multiarray._get_madvise_hugepage())); "
            "main(sys.argv[1:])")
    doc = tmp_path / "doc.yaml"
    doc.write_text("inputs: [[1, 0], [0, 1]]\n")
    env = {key: value for key, value in os.environ.items() if key not in ("NUMPY_MADVISE_HUGEPAGE",)}
    done = subprocess.run([sys.executable, "-c", code, "compute", str(doc), "--only", "output", "--format", "json"],
                          capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "False"


@pytest.mark.parametrize("n, m", [(13, 17), (17, 13)])
@pytest.mark.parametrize("causal, window", [("upper_left", None), ("lower_right", None), ("upper_left", 3),
                                            ("lower_right", 5), (None, 4), (None, 1), (None, None)])
def test_the_keys_every_query_of_a_block_sees(n, m, causal, window):
    """Mask.seen_by_all (where the tiles need no mask and may be wide) against the cells themselves."""
    mask = Mask(n, m, causal=causal, window=window)
    full = mask.full()
    for lo, hi in itertools.product(range(n), range(1, n + 1)):
        if lo >= hi:
            continue
        first, last = mask.seen_by_all(lo, hi)
        seen = [j for j in range(m) if full[lo:hi, j].all()]
        assert list(range(first, last)) == seen, (lo, hi)


@pytest.mark.parametrize("n, m, mask, middle", [(64, 64, "causal", True), (50, 70, {"causal": "lower_right"}, True),
                                                (70, 50, {"causal": True, "window": 13}, False),
                                                (64, 64, {"window": 30}, True),
                                                (60, 60, {"causal": True, "window": 50,
                                                          "keys": [1] * 50 + [0] * 10}, True)])
def test_narrow_edge_tiles_and_wide_middle_ones_give_the_same_numbers(n, m, mask, middle, tiles_computed, monkeypatch):
    """Blocks of 32 queries, tiles of 16 keys in the middle of a band and 3 along its edges: the same as attend."""
    monkeypatch.setattr(stream, "fast_rows", lambda spec: 32)
    monkeypatch.setattr(stream, "BLOCK_CELLS", 32 * 16)
    monkeypatch.setattr(tiles, "EDGE_KEYS", 3)
    context = None if n == m else {"context": np.random.default_rng(3).normal(size=(m, 8)).tolist()}
    spec = spec_of(document(21, n=n, spread=4.0, mask=mask, **(context or {})))
    assert_same(spec, threads=2)
    widths = {s1 - s0 for *_, s0, s1 in tiles_computed}
    assert 3 in widths and (16 in widths) == middle  # edge tiles, and wide ones where a band has a middle


@pytest.mark.parametrize("q_size, k_size, checked", [(1.0, 1.0, False), (1e149, 1e149, False), (1e160, 1e-170, False),
                                                      (1e155, 1e155, True)])
def test_tiles_are_checked_only_when_no_bound_rules_overflow_out(q_size, k_size, checked, monkeypatch):
    """The row norms bound every score (Cauchy–Schwarz); where a norm's square overflows (1e160), the bound from the
    largest entries decides instead (1e160 · 1e-170 is small); only when neither rules overflow out is every tile
    checked. Either way the numbers are attend's."""
    seen = []
    run = stream.run_tiles
    monkeypatch.setattr(stream, "run_tiles", lambda *args: seen.append(args[5]) or run(*args))
    rng = np.random.default_rng(31)
    n, d = 12, 4
    data = {"inputs": np.eye(n, d).tolist(), "heads": 1, "mask": "causal",
            "weights": {"query": (q_size * rng.normal(size=(d, d))).tolist(),
                        "key": (k_size * rng.normal(size=(d, d))).tolist(),
                        "value": rng.normal(size=(d, d)).tolist()}}
    spec = spec_of(data)
    try:
        full = attend(spec)
    except AttnError as error:  # 1e155 · 1e155 overflows: the same error from both paths
        with pytest.raises(AttnError) as streamed:
            attend_streamed(spec, threads=1)
        assert str(streamed.value) == str(error) and checked
        return
    assert_equal_traces(full, attend_streamed(spec, threads=1))
    assert seen == [checked]


class _Counted(np.ndarray):
    """An array that counts the matrix products it takes part in (``x @ w`` and np.matmul both call the ufunc)."""

    products: list = []

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if ufunc is np.matmul:
            _Counted.products.append((tuple(a.shape for a in inputs), inputs[1]))  # (kept: its id stays its own)
        plain = lambda a: a.view(np.ndarray) if isinstance(a, _Counted) else a  # noqa: E731
        if "out" in kwargs:
            kwargs["out"] = tuple(plain(a) for a in kwargs["out"])
        return getattr(ufunc, method)(*(plain(a) for a in inputs), **kwargs)


def _counting(spec):
    """``spec`` with its inputs and context counting the products they are multiplied in (none counted yet)."""
    _Counted.products = []
    context = None if spec.context is None else spec.context.view(_Counted)
    return dataclasses.replace(spec, inputs=spec.inputs.view(_Counted), context=context)


def _products() -> int:
    """The products counted: one taken in blocks of rows on several threads (attncli.core.threads.matmul), each
    block with the same right-hand matrix, counts once."""
    return len({id(right) for _, right in _Counted.products})


@pytest.mark.parametrize("weights", [False, True])
def test_a_document_without_weights_at_n_16384_performs_no_projection_product(weights):
    """An omitted weight is the identity: its projection takes x's columns, head by head, and multiplies nothing
    (issue 27). Counted, not timed: the products the inputs take part in, 0 without weights and 3 with them."""
    n, d_model, heads = 16384, 32, 4
    rng = np.random.default_rng(27)
    x = rng.normal(size=(n, d_model))
    data = {"inputs": x.tolist(), "heads": heads}
    if weights:
        data["weights"] = {name: rng.normal(size=(d_model, d_model)).tolist() for name in ("query", "key", "value")}
    spec = _counting(spec_of(data))
    q, k, v = projections(spec)
    assert _products() == (3 if weights else 0)
    if not weights:  # head i is x's i-th block of columns, exactly
        blocks = x.reshape(n, heads, d_model // heads).transpose(1, 0, 2)
        assert all(np.array_equal(a, blocks) for a in (q, k, v))


@pytest.mark.parametrize("weights", [False, True])
def test_the_whole_computation_without_weights_performs_no_projection_product(weights):
    """Both paths, to the output: 16384 queries against a context of 16 keys (cheap scores, every projection taken),
    and a self-attention document; with weights, the three products of Q, K and V."""
    rng = np.random.default_rng(28)
    for n, m in ((16384, 16), (64, None)):
        data = {"inputs": rng.normal(size=(n, 8)).tolist(), "heads": 2}
        if m is not None:
            data["context"] = rng.normal(size=(m, 8)).tolist()
        if weights:
            data["weights"] = {name: rng.normal(size=(8, 8)).tolist() for name in ("query", "key", "value")}
        spec = spec_of(data)
        for compute in (attend, attend_streamed):
            trace = compute(_counting(spec))
            assert _products() == (3 if weights else 0), (n, compute.__name__)
            assert np.isfinite(trace.output).all()
