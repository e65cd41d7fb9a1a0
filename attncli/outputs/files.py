"""Files as every command writes them: atomically, never over one of the run's inputs."""

from __future__ import annotations

import os
from pathlib import Path

from attncli.core.errors import AttnError


def check_destination(path: Path, inputs: set[Path]) -> Path:
    """``path`` resolved, if a file may be written there: not an input, not a directory, in a folder that exists."""
    target = path.resolve()
    if target in inputs:
        raise AttnError("is one of this run's input files; choose another output path", str(path))
    if target.is_dir():
        raise AttnError("is a directory; give a file name", str(path))
    if not target.parent.is_dir():
        raise AttnError(f"cannot be written: the folder {target.parent} does not exist", str(path))
    return target


def write_atomic(path: Path, data: bytes, inputs: set[Path]) -> None:
    """Write ``data`` to ``path`` through a temporary file renamed into place.

    A failed run leaves no partial file, and an input file is never overwritten.
    """
    import tempfile

    target = check_destination(path, inputs)
    try:
        fd, temp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as e:
        raise AttnError(f"cannot be written ({e.strerror or e})", str(path)) from None
    try:
        if hasattr(os, "fchmod"):  # as open() would create it (mkstemp makes it private: 0600)
            umask = os.umask(0)
            os.umask(umask)
            os.fchmod(fd, 0o666 & ~umask)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temp, target)
    except BaseException as e:
        Path(temp).unlink(missing_ok=True)
        if isinstance(e, OSError):
            raise AttnError(f"cannot be written ({e.strerror or e})", str(path)) from None
        raise
