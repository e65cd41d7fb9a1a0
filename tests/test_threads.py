"""attncli.core.threads: the kept pool of threads and products taken in blocks of rows on it (issue 27).

A product large enough is split into blocks of rows, one BLAS thread each, where OpenBLAS would have run its
own threads; the blocks cover the rows once and give the product (against einsum's own loops, no BLAS).  The
pool is kept between calls, a job that asks for threads runs its jobs itself (no deadlock), an error stops the
jobs not started, and a forked child makes a pool of its own.  Nothing here measures time.
"""

from __future__ import annotations

import os
import threading
import time

import numpy as np
import pytest

from attncli.core import threads


@pytest.fixture
def two_blas_threads(monkeypatch):
    """OpenBLAS on two threads and two cores, whatever the machine: where a product is split."""
    if threads._openblas() is None:
        pytest.skip("numpy is not linked to an OpenBLAS we can find")
    monkeypatch.setattr(threads, "cores", lambda: 2)
    with threads._blas_threads(2):
        yield


@pytest.fixture
def spans(monkeypatch):
    """The blocks of rows each run_parallel call was given."""
    seen: list[list] = []
    original = threads.run_parallel

    def recording(task, jobs, progress, count):
        seen.append(list(jobs))
        return original(task, jobs, progress, count)

    monkeypatch.setattr(threads, "run_parallel", recording)
    return seen


@pytest.mark.parametrize("n", [512, 1100, 4096])
def test_a_large_product_is_taken_in_blocks_of_rows(two_blas_threads, spans, n):
    rng = np.random.default_rng(n)
    a, b = rng.normal(size=(n, 96)), rng.normal(size=(96, 700))
    a = a[:, ::-1][:, ::-1]  # a view, as the heads side by side are
    product = threads.matmul(a, b)
    reference = np.einsum("ik,kj->ij", a, b, optimize=False)  # its own loops, no BLAS
    scale = np.abs(a).max() * np.abs(b).max() * a.shape[1]
    assert product.shape == (n, 700) and np.abs(product - reference).max() <= 1e-13 * scale
    [blocks] = spans
    assert len(blocks) > 1 and blocks[0][0] == 0 and blocks[-1][1] == n
    assert all(hi == lo for (_, hi), (lo, _) in zip(blocks, blocks[1:]))  # every row once, in order
    assert len(blocks) % 2 == 0  # as many blocks for each of the two threads (1100 rows: 6 of 184, not 4 of 256 and 76)
    assert all(hi - lo >= threads.PRODUCT_ROWS // 2 for lo, hi in blocks)
    assert all(hi - lo >= threads.PRODUCT_ROWS for lo, hi in blocks) or len(blocks) > n // threads.PRODUCT_ROWS


def test_small_products_and_one_blas_thread_stay_one_call(two_blas_threads, spans):
    rng = np.random.default_rng(1)
    small = rng.normal(size=(600, 8)), rng.normal(size=(8, 8))  # 77 k multiplications
    assert np.allclose(threads.matmul(*small), np.einsum("ik,kj->ij", *small), rtol=0, atol=1e-13)
    large = rng.normal(size=(1024, 64)), rng.normal(size=(64, 512))
    with threads._blas_threads(1):  # what OPENBLAS_NUM_THREADS=1 asks for
        threads.matmul(*large)
    assert spans == []
    threads.matmul(*large)
    assert len(spans) == 1


def test_the_pool_is_kept_and_a_job_inside_a_job_runs_there():
    names: list[str] = []

    def outer(job):
        inner = []
        threads.run_parallel(lambda j: inner.append(threading.current_thread().name), [0, 1, 2], None, threads=2)
        assert inner == [threading.current_thread().name] * 3  # here, one after another
        names.append(threading.current_thread().name)

    def pool_threads() -> set[int]:
        return {t.ident for t in threading.enumerate() if t.name.startswith("attncli-2_")}

    threads.run_parallel(outer, list(range(4)), None, threads=2)
    kept = pool_threads()
    threads.run_parallel(outer, list(range(4)), None, threads=2)
    assert pool_threads() == kept and 1 <= len(kept) <= 2  # the same threads, no new ones
    assert len(names) == 8 and all(name.startswith("attncli-2_") for name in names)


def test_an_error_stops_the_jobs_not_started_and_progress_counts_in_order():
    started, done = [], []

    def task(job):
        started.append(job)
        if job == 1:
            raise ValueError("job 1")
        time.sleep(0.01)

    with pytest.raises(ValueError, match="job 1"):
        threads.run_parallel(task, list(range(40)), done.append, threads=2)
    assert len(started) < 40  # the rest were dropped
    assert done in ([], [1])  # only job 0 could have finished before job 1's error was seen
    counted = []
    threads.run_parallel(lambda job: None, list(range(7)), counted.append, threads=2)
    assert counted == [1] * 7


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here")
def test_a_forked_child_makes_its_own_pool():
    threads.run_parallel(lambda job: None, [0, 1], None, threads=2)  # the parent's pool exists
    pid = os.fork()
    if pid == 0:  # the child: its parent's threads are not here
        code = 1
        try:
            seen = []
            threads.run_parallel(seen.append, list(range(6)), None, threads=2)
            code = 0 if sorted(seen) == list(range(6)) else 1
        finally:
            os._exit(code)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            assert os.waitstatus_to_exitcode(status) == 0
            return
        time.sleep(0.05)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    pytest.fail("the forked child's jobs never ran (a pool of its parent's threads)")


def test_rope_and_the_qk_norm_scaling_on_large_heads_are_split_into_row_blocks_with_the_same_numbers(
        monkeypatch, spans):
    """RoPE and the QK-norm's scaling of a Q large enough (2 heads × 4096 rows × 128: 2²⁰ numbers) run in blocks
    of rows on two threads, covering every row once: against the formulas written here, each element by itself."""
    from attncli.core.positions import Rope, rotate
    from attncli.core.qknorm import normalize

    monkeypatch.setattr(threads, "cores", lambda: 2)
    rng = np.random.default_rng(5)
    x = rng.normal(size=(2, 4096, 128))
    positions = np.arange(4096.0)
    frequencies = 10000.0 ** (-np.arange(0, 128, 2) / 128)
    turned = rotate(x, positions, Rope(frequencies, style="half"))
    angle = positions[:, None] * frequencies  # (n, 64): rotate_half's pairs (i, i + 64)
    a, b = x[..., :64], x[..., 64:]
    np.testing.assert_allclose(turned, np.concatenate([a * np.cos(angle) - b * np.sin(angle),
                                                       b * np.cos(angle) + a * np.sin(angle)], -1), rtol=0, atol=1e-13)
    gamma = rng.normal(size=128)
    normed = normalize(x, gamma, None, "rms", "head", 1e-6)
    expected = x / np.sqrt((x ** 2).mean(-1, keepdims=True) + 1e-6) * gamma
    np.testing.assert_allclose(normed, expected, rtol=1e-14, atol=1e-14)
    blocks = [jobs for jobs in spans if isinstance(jobs[0], slice)]
    assert len(blocks) == 2  # one split for each
    for jobs in blocks:
        assert len(jobs) >= 2 and jobs[0].start == 0 and jobs[-1].stop == 4096
        assert all(one.stop == two.start for one, two in zip(jobs, jobs[1:]))
