"""Our own threads for the blocks of :mod:`attncli.core.stream`, with OpenBLAS held to one thread each.

numpy releases the GIL in matmul, exp and sums, so two Python threads keep two
cores busy; OpenBLAS's own threads would then compete with them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager


def run_parallel(task: Callable, jobs: list, progress: Callable[[int], None] | None, threads: int | None) -> None:
    """``task(job)`` for every job on ``threads`` threads (default: one per core), BLAS on one thread each.

    ``progress(1)`` is called as each job finishes.  An error or Ctrl-C stops the jobs not yet started.
    """
    threads = min(threads or cores(), len(jobs))
    if threads <= 1:
        for job in jobs:
            task(job)
            if progress:
                progress(1)
        return
    from concurrent.futures import ThreadPoolExecutor

    with _blas_threads(1):
        pool = ThreadPoolExecutor(threads)
        try:
            for _ in pool.map(task, jobs):
                if progress:
                    progress(1)
        finally:  # an error or Ctrl-C: let the running blocks finish, drop the rest
            pool.shutdown(wait=True, cancel_futures=True)


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
