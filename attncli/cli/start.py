"""Starting within an address-space limit (``ulimit -v``, ``ulimit -d``), before numpy is imported.

numpy's OpenBLAS reserves address space as it is imported: a stack and a buffer for each of its threads, one thread
per core. Under ``ulimit -v 1048576`` on a machine of 32 cores that is more than the limit, and OpenBLAS then ends
the process with its own line (``OpenBLAS error: Memory allocation still failed``, exit 1), or raises SIGINT when a
thread cannot be made (which would read as Ctrl-C). So under a limit OpenBLAS gets the threads that fit in a quarter
of it (unless the environment says how many), and a limit too small for numpy to start at all is one line naming
memory, exit 2, before anything is read or written.
"""

from __future__ import annotations

import os

from attncli.core.memory import HEADROOM, size_text

# measured (VmSize, numpy 2.4 with scipy-openblas 0.3.31): importing numpy takes 81 MiB, its first product's buffer
# 39 MiB more; each further OpenBLAS thread 40 MiB at import (its stack and buffer) and 40 MiB at its first product
NUMPY_START = 128 << 20
BLAS_THREAD = 80 << 20
BLAS_VARIABLES = ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")  # in the order OpenBLAS reads them
PROCESS_LIMITS = (("RLIMIT_AS", "VmSize", "ulimit -v"), ("RLIMIT_DATA", "VmData", "ulimit -d"))


def tightest_limit() -> tuple[int, int, str] | None:
    """(bytes left, the soft limit, its ulimit option) of the process limit with the least left; None without one."""
    from attncli.core.memory import _status_bytes, process_limit

    found = []
    for name, field, option in PROCESS_LIMITS:
        soft = process_limit(name)
        if soft is not None:
            found.append((soft - _status_bytes(field), soft, option))
    return min(found, default=None)


def blas_threads_for(left: int, cores: int) -> int:
    """OpenBLAS threads whose address space takes at most a quarter of what numpy's start leaves of ``left``
    (at least one, at most ``cores``).

    >>> blas_threads_for(1000 << 20, 64), blas_threads_for(2000 << 20, 64), blas_threads_for(300 << 20, 64)
    (3, 6, 1)
    >>> blas_threads_for(64 << 30, 8)
    8
    """
    spare = max(left - NUMPY_START - HEADROOM, 0)
    return max(1, min(cores, 1 + spare // 4 // BLAS_THREAD))


def asked_threads(environ) -> int | None:
    """The OpenBLAS threads the environment asks for (the first of :data:`BLAS_VARIABLES` set to a count)."""
    for name in BLAS_VARIABLES:
        value = environ.get(name, "").strip()
        if value.isdigit() and int(value) > 0:
            return int(value)
    return None


def start_within_limits(environ=None) -> dict[str, str] | None:
    """Under a process limit, set ``OPENBLAS_NUM_THREADS`` to the threads that fit (unless the environment sets a
    count); the fields of the message refusing to start (``cli.too_little_memory_to_start``) when numpy could not
    be imported in what is left, else None."""
    from attncli.core.threads import cores

    environ = os.environ if environ is None else environ
    tight = tightest_limit()
    if tight is None:
        return None
    left, soft, option = tight
    threads = asked_threads(environ)
    if threads is None:
        threads = blas_threads_for(left, cores())
        environ["OPENBLAS_NUM_THREADS"] = str(threads)
    need = NUMPY_START + (min(threads, cores()) - 1) * BLAS_THREAD + HEADROOM
    if need <= left:
        return None
    return {"need": size_text(soft - left + need), "limit": size_text(soft), "option": option}
