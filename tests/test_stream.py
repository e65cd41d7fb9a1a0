"""Attention block by block (attncli.core.stream) against the full computation and the naive loop, and the memory
plan that chooses it (attncli.plan).

Blocks are made tiny so that every document is cut into many of them, with one
thread and with two.  The memory decision is tested with small forced budgets.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest
import stream_helpers
from reference import max_abs_diff, max_scaled_diff, naive_attention
from stream_helpers import same_error
from test_checkpoints import assert_refused

from attncli.cli import app
from attncli.cli.load import progress as _progress
from attncli.core import attention, bounds, memory, stream, threads
from attncli.core.errors import AttnError
from attncli.core.memory import parse_size
from attncli.core.pipeline import attend
from attncli.core.stream import attend_streamed
from attncli.inputs.builder import build_spec
from attncli.inputs.document import Document
from attncli.plan import Plan, plan
from attncli.plan.estimate import full_bytes, streamed_bytes

KEPT = ("queries", "keys", "values", "head_outputs", "output", "residual", "normalized")


@pytest.fixture
def tiny_blocks(monkeypatch):
    monkeypatch.setattr(stream, "BLOCK_CELLS", 24)  # 16 rows per block (the least), fewer keys than that
    monkeypatch.setattr(stream, "GENERIC_BLOCK_BYTES", 8 * 3 * 40)  # a row or two of every head per block


def spec_of(data: dict):
    return build_spec(Document(data, "doc", Path(".")))


def random_document(seed: int, *, n=37, m=None, heads=3, d_model=8, features=()) -> dict:
    """A random document: X, W_Q, W_K, W_V and whichever ``features`` are named."""
    rng = np.random.default_rng(seed)
    cross = "cross" in features
    m = m or (23 if cross else n)
    d_ctx = 6 if cross else d_model
    d_k, d_v = 4, 5
    three_d = "3d" in features
    weight = lambda d_in, d: (  # noqa: E731
        rng.normal(size=(heads, d_in, d)) if three_d else rng.normal(size=(d_in, heads * d))).tolist()
    data = {
        "inputs": rng.normal(size=(n, d_model)).tolist(),
        "heads": heads,
        "weights": {"query": weight(d_model, d_k), "key": weight(d_ctx, d_k), "value": weight(d_ctx, d_v)},
    }
    if cross:
        data["context"] = rng.normal(size=(m, d_ctx)).tolist()
    if "bias" in features:
        data["bias"] = {"query": rng.normal(size=heads * d_k).tolist(), "key": rng.normal(size=heads * d_k).tolist(),
                        "value": rng.normal(size=heads * d_v).tolist(), "output": rng.normal(size=d_model).tolist()}
    if "w_o" in features or "bias" in features or "add_norm" in features:
        data["weights"]["output"] = rng.normal(size=(heads * d_v, d_model)).tolist()
    if "mask" in features:
        mask = rng.random((n, m)) < 0.6
        mask[[2, n - 1]] = False  # fully masked rows, one of them in the last block
        data["mask"] = mask.astype(int).tolist()
    if "causal" in features:
        data["mask"] = "causal"
    data.update(fixed_features(features))
    if "additive" in features:
        data["score"] = "additive"
        data["weights"].update(w1=rng.normal(size=(d_k, 3)).tolist(), w2=rng.normal(size=(d_k, 3)).tolist(),
                               v=rng.normal(size=3).tolist())
    for mode in ("sum", "none"):
        if mode in features:
            data["normalize"] = mode
    if "large" in features:  # scores in the hundreds: exp needs the row max subtracted
        data["inputs"] = (30 * np.array(data["inputs"])).tolist()
    return data


def fixed_features(features) -> dict:
    """The named features that draw no numbers: a scale of 0.3, sinusoidal positions, add_norm."""
    switches = {"scale": ("scale", 0.3), "positional": ("positional", "sinusoidal"), "add_norm": ("add_norm", True)}
    return dict(switches[name] for name in switches if name in features)


FEATURES = [
    (),
    ("mask",),
    ("causal",),
    ("cross", "mask"),
    ("bias", "3d"),
    ("w_o", "scale"),
    ("positional", "add_norm", "causal"),
    ("additive", "mask"),
    ("none", "causal", "bias"),
    ("cross", "3d", "w_o", "mask", "scale"),
    ("large", "mask"),
    ("large", "causal", "bias"),
]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("features", FEATURES, ids=lambda f: "+".join(f) or "plain")
def test_streamed_equals_full(tiny_blocks, features, threads):
    spec = spec_of(random_document(len(features) * 7 + threads, features=features))
    full, streamed = attend(spec), attend_streamed(spec, threads=threads)
    assert stream.block_count(spec) > 2
    for key in KEPT:
        a, b = getattr(full, key), getattr(streamed, key)
        assert (a is None) == (b is None), key
        if a is not None:
            assert a.shape == b.shape and np.abs(a - b).max() <= 1e-12 * max(1.0, np.abs(a).max()), key
    assert streamed.scores is None and streamed.scaled_scores is None and streamed.weights is None
    assert streamed.empty_queries == full.empty_queries


@pytest.mark.parametrize("factor, shifted", [(0.05, False), (30.0, True)])
def test_exp_with_and_without_the_row_max(tiny_blocks, factor, shifted):
    """Small scores skip the row max (a pass saved); large ones keep it. Both agree with the naive loop."""
    doc = random_document(21, n=20, heads=2, features=("mask",))
    doc["inputs"] = (factor * np.array(doc["inputs"])).tolist()
    spec = spec_of(doc)
    q, k, v = attention.projections(spec)
    assert bounds.needs_shift(q, k, v, spec).tolist() == [shifted, shifted]
    want = naive_attention(doc["inputs"], doc["weights"]["query"], doc["weights"]["key"], doc["weights"]["value"],
                           heads=2, mask=doc["mask"])
    trace = attend_streamed(spec, threads=2)
    assert max_abs_diff(trace.output.tolist(), want["output"]) < 1e-12 * max(1.0, np.abs(trace.output).max())


def test_sum_normalisation_streamed(tiny_blocks):
    data = random_document(5, features=("sum",))
    data["inputs"] = np.abs(np.array(data["inputs"])).tolist()  # positive scores: no row sums to 0
    data["weights"], data["heads"] = {"query": np.eye(8).tolist(), "key": np.eye(8).tolist()}, 2
    spec = spec_of(data)
    full, streamed = attend(spec).output, attend_streamed(spec, threads=2).output
    assert np.abs(full - streamed).max() <= 1e-12 * max(1.0, np.abs(full).max())


def test_fully_masked_rows_are_zero(tiny_blocks):
    spec = spec_of(random_document(3, features=("mask",)))
    trace = attend_streamed(spec, threads=2)
    assert trace.empty_queries == (2, 36)
    assert not trace.head_outputs[:, [2, 36]].any()


def test_streamed_against_naive_loop(tiny_blocks, runner, tmp_path):
    doc = random_document(11, n=20, heads=2, features=("cross", "bias", "mask"))
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(doc))
    result = runner.invoke(app, ["compute", str(path), "--format", "json", "--only", "output", "--only",
                                 "head_outputs"])
    assert result.exit_code == 0, result.output
    got = json.loads(result.stdout)
    assert set(got) == {"tokens", "context_tokens", "heads", "kv_heads", "d_k", "d_v", "scale", "head_outputs",
                        "output"}
    want = naive_attention(doc["inputs"], doc["weights"]["query"], doc["weights"]["key"], doc["weights"]["value"],
                           heads=2, context=doc["context"], bias=doc["bias"], output=doc["weights"]["output"],
                           mask=doc["mask"])
    assert max_scaled_diff(got["output"], want["output"]) < 1e-12
    assert max_scaled_diff(got["head_outputs"], want["head_outputs"]) < 1e-12


@pytest.mark.parametrize("threads", [1, 2])
def test_overflow_names_the_same_cell(tiny_blocks, threads):
    data = random_document(1, n=40, heads=2)
    x = np.array(data["inputs"])
    x[5, 4:] = 1e200  # head 2 overflows in the first block,
    x[30, :4] = 1e200  # head 1 in a later one: attend names head 1 (head by head, then row by row)
    data["inputs"] = x.tolist()
    w = np.zeros((8, 12))
    w[:4, :6] = w[4:, 6:] = 1.0  # head 1 reads the first four input columns, head 2 the last four
    data["weights"] = {"query": w.tolist(), "key": w.tolist()}
    spec = spec_of(data)
    assert "head 1, row 31" in same_error(spec, threads)


def test_sum_error_names_the_row_of_the_whole_document(tiny_blocks):
    data = {"inputs": [[1.0, 0.0]] * 30 + [[1.0, -1.0]] + [[1.0, 0.0]] * 5, "normalize": "sum", "scale": "none",
            "context": [[1.0, 1.0], [1.0, 0.0], [0.0, 1.0]]}
    spec = spec_of(data)
    assert "query 31 ('x31')" in same_error(spec, None)


# ---------------------------------------------------------------- the memory decision


BIG = {"inputs": {"random": "normal", "seed": 0, "shape": [64, 16]}, "heads": 4}


def test_plan_full_when_it_fits():
    spec = spec_of(BIG)
    assert plan(spec, None, "json", budget=1 << 30) == Plan(stream=False)
    assert plan(spec, ["weights"], "json", budget=1 << 30).stream is False


def test_plan_streams_when_the_matrices_are_not_asked_for():
    spec = spec_of(BIG)
    assert plan(spec, ["output"], "json", budget=1 << 30) == Plan(stream=True)
    assert plan(spec, ["head_outputs", "queries"], "table", budget=1 << 30) == Plan(stream=True)


def test_plan_refuses_the_whole_result_that_does_not_fit_and_says_what_does():
    """Without --only, the n × m matrices were left out with a warning (exit 0):
    a script reading .weights broke later."""
    spec = spec_of(BIG)
    budget = streamed_bytes(spec) + threads.cores() * memory.thread_reserve() + 1000  # (under ulimit -v too)
    assert full_bytes(spec, None, "json") > budget
    with pytest.raises(AttnError) as error:
        plan(spec, None, "json", budget=budget)
    message = str(error.value)
    assert message.startswith("the whole result, with the scores, scaled_scores "
                              "and weights of 4 × 64 × 64, would need about ")
    assert message.endswith("; leave them out with --only inputs --only queries --only keys --only values "
                            "--only head_outputs --only output")
    assert plan(spec, ["inputs", "queries", "keys", "values", "head_outputs", "output"], "json", budget=budget).stream
    npz = full_bytes(spec, None, ".npz")
    assert npz < full_bytes(spec, None, "json")
    with pytest.raises(AttnError, match=r"; write every array with -o FILE\.npz, or leave them out with --only inputs"):
        plan(spec, None, "json", budget=npz)
    assert plan(spec, None, ".npz", budget=npz) == Plan(stream=False)


def test_plan_refuses_matrices_asked_for_by_name():
    spec = spec_of(BIG)
    with pytest.raises(AttnError) as error:
        plan(spec, ["output", "weights"], ".npz", budget=streamed_bytes(spec) + 1000)
    message = str(error.value)
    assert message.startswith("--only: weights of 4 × 64 × 64 need about ")
    assert "MiB of memory" in message and "use --only output or --only head_outputs" in message


def test_plan_refuses_what_does_not_fit_even_streamed():
    spec = spec_of(BIG)
    with pytest.raises(AttnError, match="even block by block"):
        plan(spec, ["output"], "json", budget=1000)


def test_full_estimate_grows_with_the_matrices_written():
    spec = spec_of(BIG)
    assert full_bytes(spec, ["weights"], "json") < full_bytes(spec, None, "json")
    assert full_bytes(spec, None, "table") < full_bytes(spec, None, ".npz") < full_bytes(spec, None, "json")


@pytest.mark.parametrize("text, size", [("800", 800), ("2K", 2048), ("512M", 512 << 20), ("1.5GiB", 3 << 29),
                                        ("4 gb", 4 << 30)])
def test_parse_size(text, size):
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["lots", "-1G", "0", "2X"])
def test_parse_size_refuses(text):
    with pytest.raises(AttnError, match="ATTNCLI_MEMORY: .* is not a memory size"):
        parse_size(text)


def test_budget_from_environment(monkeypatch):
    monkeypatch.setenv("ATTNCLI_MEMORY", "3G")
    assert memory.memory_budget() == 3 << 30
    monkeypatch.delenv("ATTNCLI_MEMORY")
    assert 0 < memory.memory_budget() <= memory.available_memory()


# ---------------------------------------------------------------- through the command line


def write_big(tmp_path) -> Path:
    path = tmp_path / "big.yaml"
    path.write_text("inputs: {random: normal, seed: 0, shape: [64, 16]}\nheads: 4\nmask: causal\n")
    return path


def squeezed_budget(monkeypatch):
    """A budget that fits the document of write_big() block by block, but not in full."""
    spec = spec_of({"inputs": {"random": "normal", "seed": 0, "shape": [64, 16]}, "heads": 4, "mask": "causal"})
    monkeypatch.setenv("ATTNCLI_MEMORY", str(streamed_bytes(spec) + 1000))
    return spec


@pytest.mark.parametrize("name", ["out.json", "out.npz", "out.txt", "out.md", "out.svg"])
def test_cli_refuses_the_whole_result_with_a_small_budget_and_what_it_names_fits(runner, tmp_path, monkeypatch, name):
    """Every format that would have left the matrices out (the tables too) refuses instead."""
    spec = squeezed_budget(monkeypatch)
    out = tmp_path / name
    result = runner.invoke(app, ["compute", str(write_big(tmp_path)), "-o", str(out)])
    assert_refused(result,
                   "big.yaml: the whole result, with the scores, scaled_scores and weights of 4 × 64 × 64, would",
                   "(ATTNCLI_MEMORY)", "leave them out with --only inputs --only queries")
    assert not out.exists()
    named = result.stderr.rstrip().split("leave them out with ")[1].split()
    fits = runner.invoke(app, ["compute", str(write_big(tmp_path)), "--format", "json", *named])
    assert fits.exit_code == 0 and fits.stderr == "", fits.stderr
    got = json.loads(fits.stdout)
    full = attend(spec).output
    assert np.abs(np.array(got["output"]) - full).max() <= 1e-12 * max(1.0, np.abs(full).max())


def test_cli_refuses_named_matrix_that_does_not_fit(runner, tmp_path, monkeypatch):
    squeezed_budget(monkeypatch)
    out = tmp_path / "out.json"
    result = runner.invoke(app, ["compute", str(write_big(tmp_path)), "--only", "weights", "-o", str(out)])
    assert result.exit_code == 2
    assert result.stdout == "" and not out.exists()
    assert result.stderr.startswith("Error: --only: weights of 4 × 64 × 64 need about ")
    assert "(ATTNCLI_MEMORY)" in result.stderr


def test_cli_bad_budget_is_a_user_error(runner, tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNCLI_MEMORY", "plenty")
    result = runner.invoke(app, ["compute", str(write_big(tmp_path)), "--only", "output"])
    assert result.exit_code == 2 and result.stderr.startswith("Error: ATTNCLI_MEMORY: 'plenty' is not a memory size")


def test_progress_only_on_a_terminal(monkeypatch):
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    terminal = Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    with _progress(10, show=True) as advance:
        for _ in range(10):
            advance(1)
    assert "attention, block by block" in terminal.getvalue()
    monkeypatch.setattr("sys.stderr", io.StringIO())
    with _progress(10, show=True) as advance:
        assert advance is None


def test_blas_runs_one_thread_per_worker_and_is_restored():
    from attncli.core import threads

    calls = threads._openblas()
    if calls is None:
        pytest.skip("numpy is not linked to an OpenBLAS we can find")
    _, get_threads = calls
    before = get_threads()
    seen = []
    threads.run_parallel(lambda job: seen.append(get_threads()), list(range(6)), None, threads=2)
    assert seen == [1] * 6
    assert get_threads() == before


@pytest.mark.parametrize("extra", [{"qk_norm": {"kind": "rms"}, "rope": True}, {"rope": True}, {}])
def test_only_output_lets_the_query_and_key_stages_go_before_the_tiles(extra):
    """``--only output`` keeps Q, K, Q̂ and K̂ no longer than the stages after them need: the kernel's Q and K (what
    the tiles read) stay, the rest is None in the Trace, and the output is the same bytes; a key named is kept."""
    spec = spec_of(stream_helpers.document(3, n=33, heads=4, kv_heads=2, **extra))
    every = attend_streamed(spec, threads=2)
    lean = attend_streamed(spec, threads=2, keep=["output"])
    np.testing.assert_array_equal(lean.output, every.output)
    kernel = ("queries_rotated", "keys_rotated") if "rope" in extra else ("queries", "keys")
    for key in stream.QK_STAGES:
        if getattr(every, key) is not None:
            assert (getattr(lean, key) is None) == (key not in kernel), key
    named = attend_streamed(spec, threads=2, keep=["output", "queries"])
    np.testing.assert_array_equal(named.queries, every.queries)
