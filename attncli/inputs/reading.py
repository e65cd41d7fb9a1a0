"""Reading a named file: every reason it cannot be read is one clear message, and its text must be UTF-8.

A missing file, a folder, a device, a loop of symbolic links, a folder without
permission on the way, a name too long or holding a NUL character: each is an
:class:`AttnError` naming the file, never an OSError or RuntimeError (exit 70).
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

from attncli.core.errors import AttnError


def read_bytes(path: Path, limit: int) -> bytes:
    """The file's bytes (at most ``limit + 1``); a named pipe is read too (``attncli compute <(…)``)."""
    mode = file_status(path, str(path), "a file").st_mode
    if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode)):
        raise AttnError("reading.not_regular_file_device_socket", str(path))
    try:
        with path.open("rb") as f:
            return f.read(limit + 1)
    except PermissionError:
        raise AttnError("archives.permission_denied", str(path)) from None
    except OSError as e:
        raise AttnError("archives.cannot_read", str(path), value=e.strerror or type(e).__name__) from None


def file_status(path: Path, name: str, kind: str) -> os.stat_result:
    """``os.stat`` of a file to read, through its links: every reason it cannot be read is one clear message.

    A missing file, a folder (``kind`` says what was expected instead), a loop of
    symbolic links, a folder on the way without permission, a name too long or with
    a NUL character in it.
    """
    try:
        status = path.stat()
    except ValueError:  # os.stat refuses a NUL character (a JSON "\u0000" or YAML "\0" in a file name)
        raise AttnError("reading.file_name_holds_nul_character", name) from None
    except PermissionError:
        raise AttnError("reading.permission_denied_file_folder_way", name) from None
    except OSError as e:
        dangling = e.errno == errno.ENOENT and os.path.islink(path)  # (islink: False for any failure)
        reasons = {
            errno.ENOENT: "reading.no_such_file_dangling_link" if dangling else "reading.no_such_file",
            errno.ELOOP: "reading.loop_of_links",
            errno.ENOTDIR: "reading.no_such_file_not_a_folder",
            errno.ENAMETOOLONG: "reading.file_name_too_long",
        }
        if e.errno in reasons:
            raise AttnError(reasons[e.errno], name) from None
        raise AttnError("reading.cannot_be_read", name, reason=e.strerror or type(e).__name__) from None
    if stat.S_ISDIR(status.st_mode):
        raise AttnError("reading.directory_not", name, kind=kind)
    return status


def read_exactly(f: BinaryIO, offset: int, dtype: Any, shape: tuple[int, ...], short: Callable[[], AttnError]) -> Any:
    """``shape`` values of ``dtype`` from byte ``offset`` of ``f``, read (never mapped) into a new array.

    A file is read rather than mapped because a mapped file that shrinks while in use (rewritten, copied onto a
    full disk) ends the process with SIGBUS, which nothing can catch: read, the bytes that are missing are
    ``short()``, an :class:`AttnError` (one line, exit 2).
    """
    import numpy as np

    array = np.empty(shape, dtype)
    view = memoryview(array.reshape(-1).view(np.uint8))
    f.seek(offset)
    done = 0
    while done < len(view):
        count = f.readinto(view[done:])
        if not count:
            raise short()
        done += count
    return array


def real_path(path: Path) -> Path:
    """``path`` with its links followed; as it is written (absolute) when they cannot be (a loop, a NUL character)."""
    try:
        return path.resolve()
    except (OSError, RuntimeError, ValueError):  # RuntimeError: a loop of links (Python < 3.13)
        return Path(os.path.abspath(path))


def decode_utf8(raw: bytes, name: str) -> str:
    """UTF-8 text without its byte-order mark; binary data and invalid bytes are named."""
    if b"\x00" in raw[:8192]:
        raise AttnError("reading.binary_not_utf_text", name)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        raise AttnError("reading.invalid_utf_byte_line_file", name, start=e.start, line=line) from None
    return text.removeprefix("\ufeff")


def npy_header(stream, what: str, where: str) -> tuple:
    """(shape, fortran order, dtype) of the .npy at the stream's position, format 1.0 or 2.0 (another version is an
    AttnError: ``what`` names the array, ``where`` the key or file).  numpy parses the header text with Python's
    tokenizer, so a damaged header may raise anything else: the caller names it."""
    import numpy as np

    fmt = np.lib.format
    version = fmt.read_magic(stream)
    read_header = {(1, 0): fmt.read_array_header_1_0, (2, 0): fmt.read_array_header_2_0}.get(version)
    if read_header is None:
        raise AttnError("reading.version_attncli_reads", where, what=what, version=version[0], version_2=version[1])
    return read_header(stream)


def read_utf8(path: str, limit: int, what: str, advice: str) -> tuple[str, str]:
    """The UTF-8 text of the file ``path``, or of standard input for ``-`` (named ``<stdin>``), and its name.

    At most ``limit + 1`` bytes are read: one more says ``{what} is larger than …; {advice}`` without reading
    the rest. A missing file, a folder, a device, invalid UTF-8: one message naming the file (:func:`read_bytes`).
    """
    import sys

    from attncli.core.memory import size_text

    if path == "-":
        if sys.stdin is None:  # started with standard input closed (`<&-`)
            raise AttnError("reading.closed_there_no_read_give", "standard input", what=what)
        try:
            raw, name = sys.stdin.buffer.read(limit + 1), "<stdin>"
        except OSError as e:
            raise AttnError("archives.cannot_read", "<stdin>", value=e.strerror or e) from None
    elif path == "":
        raise AttnError("reading.empty_give_file_name_standard", f"the {what}'s file name")
    else:
        raw, name = read_bytes(Path(path), limit), path
    if len(raw) > limit:
        raise AttnError("reading.larger_than", name, what=what, size_text=size_text(limit), advice=advice)
    return decode_utf8(raw, name), name
