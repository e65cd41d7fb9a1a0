"""Our own threads for the blocks of :mod:`attncli.core.stream` and for large products, with OpenBLAS held to one
thread each.

numpy releases the GIL in matmul, exp and sums, so two Python threads keep two
cores busy; OpenBLAS's own threads would then compete with them.  The threads are started once and kept
(:func:`_pool`): starting two costs about half a millisecond, and a layer at n = 512 uses them five times.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

PRODUCT_ROWS = 256  # rows of a product's block at least (fewer: B packed once per block shows, see matmul)
PRODUCT_FLOPS = 1 << 25  # a product smaller than this stays one BLAS call


def run_parallel(task: Callable, jobs: list, progress: Callable[[int], None] | None, threads: int | None) -> None:
    """``task(job)`` for every job on ``threads`` threads (default: one per core), BLAS on one thread each.

    ``progress(1)`` is called as each job finishes, in the jobs' order.  An error or Ctrl-C stops the jobs not
    yet started; those running stop at their next look at :func:`stopped` (a long job looks between its blocks).
    Called from inside a job, the jobs run there, one after another.
    """
    threads = min(threads or cores(), len(jobs))
    if threads <= 1 or getattr(_INSIDE, "job", False):
        for job in jobs:
            task(job)
            if progress:
                progress(1)
        return
    from concurrent.futures import wait

    stop = threading.Event()  # this call's own: another thread's run_parallel is not stopped by it
    with _blas_threads(1):
        futures = [_pool(threads).submit(_as_job, task, job, stop) for job in jobs]
        try:
            for future in futures:
                future.result()
                if progress:
                    progress(1)
        except BaseException:  # an error or Ctrl-C: the running jobs stop at their next look, the rest are dropped
            stop.set()
            for future in futures:
                future.cancel()
            wait(futures)
            raise


def matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a @ b for matrices a (n, k) and b (k, m): where OpenBLAS would run its own threads, blocks of a's rows on
    ours instead (:func:`run_parallel`), one BLAS thread each, into one (n, m) array.

    Each block is BLAS's own product of those rows (in the products measured, the same bits as one call; in any
    case within rounding).  OpenBLAS's threads share each block of the product and wait for each other, so one
    of them held up by other work on the machine holds the product up; blocks of rows are taken in turn by
    whichever thread is free (see benchmarks/README.md, inprocess.py).  Blocks have at least
    :data:`PRODUCT_ROWS` rows (B is packed once per block), about four per thread, and as many for each thread
    (fewer rows than PRODUCT_ROWS then, where the rows would not share out evenly).
    """
    import numpy as np

    calls = _openblas()
    threads = 1 if calls is None or getattr(_INSIDE, "job", False) else min(calls[1](), cores())
    n = a.shape[0] if a.ndim == 2 and b.ndim == 2 else 0
    if threads <= 1 or n < 2 * PRODUCT_ROWS or 2 * n * a.shape[1] * b.shape[1] < PRODUCT_FLOPS:
        return a @ b
    out = np.empty((n, b.shape[1]), dtype=np.result_type(a, b))
    rows = max(PRODUCT_ROWS, -(-n // (4 * threads)))
    count = -(-n // rows)
    if count % threads:  # a whole number of blocks per thread (768 rows: 4 of 192, not 3 of 256 with one thread idle)
        rows = -(-n // (-(-count // threads) * threads))
    spans = [(lo, min(lo + rows, n)) for lo in range(0, n, rows)]
    run_parallel(lambda span: np.matmul(a[span[0]:span[1]], b, out=out[span[0]:span[1]]), spans, None, threads)
    return out


def in_row_blocks(task: Callable[[slice], None], rows: int, size: int) -> None:
    """``task(rows lo:hi)`` for blocks of ``rows`` rows on our threads, where the arrays (``size`` numbers) are
    large enough for two threads to pay (an elementwise pass over Q or K at n = 8192: RoPE, a norm's scaling);
    else one call.  Each block writes its own rows, so the result has the same bits as one call."""
    threads = min(cores(), max(1, rows // 64))
    if threads <= 1 or size < ELEMENTWISE_NUMBERS or getattr(_INSIDE, "job", False):
        task(slice(0, rows))
        return
    step = -(-rows // (2 * threads))
    run_parallel(task, [slice(lo, min(lo + step, rows)) for lo in range(0, rows, step)], None, threads)


ELEMENTWISE_NUMBERS = 1 << 20  # an elementwise pass over fewer numbers stays one call (about a millisecond)


_INSIDE = threading.local()  # .job: this thread is running a job of run_parallel
_POOLS: dict = {}  # threads -> a ThreadPoolExecutor of that many threads, kept for the process


def _as_job(task: Callable, job, stop: threading.Event) -> None:
    _INSIDE.job, _INSIDE.stop = True, stop
    try:
        task(job)
    finally:
        _INSIDE.job, _INSIDE.stop = False, None


def stopped() -> bool:
    """Whether the run_parallel call this thread's job belongs to is stopping (an error in another job, Ctrl-C):
    a job that runs for long looks between its blocks and returns, so that Ctrl-C is answered within a block's
    time, not the whole job's."""
    stop = getattr(_INSIDE, "stop", None)
    return stop is not None and stop.is_set()


def _pool(threads: int):
    """The kept pool of ``threads`` threads (made at its first use; a forked child makes its own)."""
    pool = _POOLS.get(threads)
    if pool is None:
        from concurrent.futures import ThreadPoolExecutor

        pool = _POOLS[threads] = ThreadPoolExecutor(threads, thread_name_prefix=f"attncli-{threads}")
    return pool


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_POOLS.clear)  # a child has none of its parent's threads


def cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def cache_bytes(level: int) -> tuple[int, int] | None:
    """(size in bytes, cores sharing it) of the data cache at ``level`` of the first core this process
    may run on, from Linux's /sys/devices/system/cpu; None where that is not known."""
    try:
        cpu = min(os.sched_getaffinity(0))
        folder = f"/sys/devices/system/cpu/cpu{cpu}/cache"
        for index in sorted(name for name in os.listdir(folder) if name.startswith("index")):
            path = f"{folder}/{index}"
            if _text(path, "level") == str(level) and _text(path, "type") in ("Data", "Unified"):
                size = _text(path, "size")
                factor = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(size[-1:], 1)
                return int(size.rstrip("KMG")) * factor, max(len(_cpu_list(_text(path, "shared_cpu_list"))), 1)
    except (AttributeError, OSError, ValueError):  # not Linux, no sysfs, an unexpected text
        return None
    return None


def _text(folder: str, name: str) -> str:
    with open(f"{folder}/{name}") as f:
        return f.read().strip()


def _cpu_list(text: str) -> list[int]:
    """'0-3,8' → [0, 1, 2, 3, 8]."""
    found: list[int] = []
    for part in text.split(","):
        first, _, last = part.partition("-")
        found.extend(range(int(first), int(last or first) + 1))
    return found


@contextmanager
def _blas_threads(count: int) -> Iterator[None]:
    """Set OpenBLAS's thread count for a while (our own threads share the cores instead)."""
    calls = _openblas()
    if calls is None:
        yield
        return
    set_threads, get_threads = calls
    before = get_threads()
    set_threads(count)
    try:
        yield
    finally:
        set_threads(before)


_OPENBLAS: list = []


def _openblas():
    """OpenBLAS's set/get_num_threads from the library numpy loaded (Linux), or None."""
    if not _OPENBLAS:
        _OPENBLAS.append(_find_openblas())
    return _OPENBLAS[0]


def _find_openblas():
    import ctypes

    try:
        with open("/proc/self/maps") as f:
            paths = {line.split()[-1] for line in f if "openblas" in line.lower() and ".so" in line}
    except OSError:
        return None
    for path in sorted(paths):
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for prefix in ("scipy_openblas", "openblas"):
            for suffix in ("64_", ""):
                setter = getattr(lib, f"{prefix}_set_num_threads{suffix}", None)
                getter = getattr(lib, f"{prefix}_get_num_threads{suffix}", None)
                if setter is not None and getter is not None:
                    setter.argtypes, getter.restype = [ctypes.c_int], ctypes.c_int
                    return setter, getter
    return None
