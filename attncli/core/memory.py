"""How much memory attncli may use: ``ATTNCLI_MEMORY``, else half of what is available now,
and never more than the process's own limits (``ulimit -v``, ``ulimit -d``) leave.

Every size a document or an option asks for is compared with :func:`memory_budget`
before anything is allocated, and refused with :func:`beyond`'s words when it does not fit.
"""

from __future__ import annotations

import os
import re

from attncli.core.errors import AttnError, shorten

MEMORY_ENV = "ATTNCLI_MEMORY"
THREAD_ADDRESS = 128 << 20  # address space a worker thread reserves: its stack, malloc's arena, OpenBLAS's buffer
HEADROOM = 64 << 20  # of a process limit, kept for the interpreter's own small objects and for saying what went wrong
CHECKED_FROM = 16 << 20  # smaller needs are never refused (a moment of little free memory must not refuse a small
# document)


def memory_budget() -> int:
    """The bytes attncli may still allocate: the smallest of :func:`limits`."""
    return min(room for room, _, _ in limits())


def limits() -> list[tuple[int, str, bool]]:
    """Each limit in force as (bytes left, where it comes from, whether mapped files count against it):
    ``ATTNCLI_MEMORY`` (else half the memory available), and what the address-space and data-size
    limits leave after what the process uses already (less :data:`HEADROOM`)."""
    value = os.environ.get(MEMORY_ENV, "").strip()
    found = [(parse_size(value), MEMORY_ENV, False) if value
             else (available_memory() // 2, f"half the memory available; set {MEMORY_ENV} to change it", False)]
    for limit, field, name in (("RLIMIT_AS", "VmSize", "the address-space limit, ulimit -v"),
                               ("RLIMIT_DATA", "VmData", "the data-size limit, ulimit -d")):
        soft = process_limit(limit)
        if soft is not None:
            left = max(soft - _status_bytes(field) - HEADROOM, 0)
            found.append((left, f"what is left of {name} {size_text(soft)}", limit == "RLIMIT_AS"))
    return found


def process_limit(name: str) -> int | None:
    """The soft limit ``resource.RLIMIT_AS`` or ``RLIMIT_DATA`` in bytes, None when there is none."""
    try:
        import resource

        soft = resource.getrlimit(getattr(resource, name))[0]
    except (ImportError, AttributeError, OSError, ValueError):  # not Unix
        return None
    return None if soft == resource.RLIM_INFINITY or soft < 0 else soft


def thread_reserve() -> int:
    """Address space each worker thread takes (:data:`THREAD_ADDRESS`) while a process limit counts it, else 0."""
    return THREAD_ADDRESS if process_limit("RLIMIT_AS") is not None or process_limit("RLIMIT_DATA") is not None else 0


def _status_bytes(field: str) -> int:
    """``VmSize`` (address space) or ``VmData`` (data) of this process, from /proc/self/status (0 if unknown)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def ensure_fits(need: int, what: str, where: str | None = None, hint: str = "", mapped: int = 0) -> None:
    """Refuse ``need`` bytes before they are allocated, naming the smallest limit they exceed:
    ``{what} would need 3 GiB of memory, more than the 1 GiB attncli may use (…){hint}``.

    ``mapped``: bytes of a file about to be mapped into memory, which take address space only.
    Needs below :data:`CHECKED_FROM` pass unchecked.
    """
    if need + mapped < CHECKED_FROM:
        return
    for room, source, address in sorted(limits()):
        total = need + mapped if address else need
        if total > room:
            raise AttnError("memory.would_need", where, what=what, beyond=beyond(total, room, source), hint=hint)


def parse_size(text: str) -> int:
    """``2G``, ``512M``, ``1.5GiB``, ``800000000`` -> bytes."""
    match = re.fullmatch(r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)[ \t]*([kmgt]?)(?:i?b)?", text.strip().lower(), re.ASCII)
    if not match or float(match.group(1)) <= 0:
        raise AttnError("memory.not_memory_size_e_g", MEMORY_ENV, text=shorten(text))
    size = float(match.group(1)) * 1024 ** " kmgt".index(match.group(2) or " ")
    if size > 2**62:  # (a float of hundreds of digits is inf)
        raise AttnError("memory.larger_than_any_memory_bytes", MEMORY_ENV, text=shorten(text))
    return int(size)


def available_memory() -> int:
    """MemAvailable from /proc/meminfo, within a cgroup limit when there is one (else 4 GiB)."""
    available = None
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    available = int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    if available is None:
        try:
            available = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):
            available = 4 << 30
    try:
        with open("/sys/fs/cgroup/memory.max") as f, open("/sys/fs/cgroup/memory.current") as g:
            limit = f.read().strip()
            if limit != "max":
                available = min(available, int(limit) - int(g.read()))
    except (OSError, ValueError):
        pass
    return max(available, 0)


def budget_source() -> str:
    """Where the budget comes from (the smallest limit), for messages that refuse a size."""
    return min(limits())[1]


def beyond(need: int, budget: int, source: str | None = None) -> str:
    """"1.2 GiB of memory, more than the 512 MiB attncli may use (ATTNCLI_MEMORY)"."""
    allowed = f"the {size_text(budget)} attncli may use ({source or budget_source()})"
    return f"{size_text(need)} of memory, more than {allowed}"


def size_text(count: float) -> str:
    """``74.5 GiB``, ``64 MiB``, ``1000 bytes``; a size beyond float64 (a forged header's) in digits."""
    if count >= 2**70:
        return f"{shorten(int(count))} bytes" if count != float("inf") else "more bytes than float64 counts"
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if count >= size:
            return f"{count / size:.1f}".removesuffix(".0") + f" {unit}"
    return f"{int(count)} bytes"
