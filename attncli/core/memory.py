"""How much memory attncli may use: ``ATTNCLI_MEMORY``, else half of what is available now."""

from __future__ import annotations

import os
import re

from attncli.core.errors import AttnError, shorten

MEMORY_ENV = "ATTNCLI_MEMORY"


def memory_budget() -> int:
    """``ATTNCLI_MEMORY`` (bytes, or with K/M/G), else half of the memory available now."""
    value = os.environ.get(MEMORY_ENV, "").strip()
    if value:
        return parse_size(value)
    return available_memory() // 2


def parse_size(text: str) -> int:
    """``2G``, ``512M``, ``1.5GiB``, ``800000000`` -> bytes."""
    match = re.fullmatch(r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)[ \t]*([kmgt]?)(?:i?b)?", text.strip().lower(), re.ASCII)
    if not match or float(match.group(1)) <= 0:
        raise AttnError(f"{shorten(text)!r} is not a memory size (e.g. 4G, 512M or a number of bytes)", MEMORY_ENV)
    size = float(match.group(1)) * 1024 ** " kmgt".index(match.group(2) or " ")
    if size > 2**62:  # (a float of hundreds of digits is inf)
        raise AttnError(f"{shorten(text)!r} is larger than any memory (2^62 bytes at most)", MEMORY_ENV)
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
    """Where the budget comes from, for messages that refuse a size."""
    if os.environ.get(MEMORY_ENV, "").strip():
        return MEMORY_ENV
    return f"half the memory available; set {MEMORY_ENV} to change it"



def beyond(need: int, budget: int) -> str:
    """"1.2 GiB of memory, more than the 512 MiB attncli may use (ATTNCLI_MEMORY)"."""
    return f"{size_text(need)} of memory, more than the {size_text(budget)} attncli may use ({budget_source()})"


def size_text(count: float) -> str:
    """``74.5 GiB``, ``64 MiB``, ``1000 bytes``; a size beyond float64 (a forged header's) in digits."""
    if count >= 2**70:
        return f"{shorten(int(count))} bytes" if count != float("inf") else "more bytes than float64 counts"
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if count >= size:
            return f"{count / size:.1f}".removesuffix(".0") + f" {unit}"
    return f"{int(count)} bytes"
