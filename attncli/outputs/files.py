"""Files as every command writes them: whole or not at all, never over one of the run's inputs.

A regular file (or a new one) is written to a short-named temporary file in its folder, then
renamed into place with the replaced file's permissions. A device, a FIFO or ``/dev/stdout`` is
opened and written instead, never replaced. Several files are written together: every
temporary file is complete before the first rename, and a failed rename puts back the files
already renamed. Standard output gets every byte too (short writes, non-blocking pipes), or an
error naming it.
"""

from __future__ import annotations

import os
import re
import signal
import stat
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, Optional

from attncli.core.errors import AttnError
from attncli.core.record import record

STDIN = Path("-")  # among a run's inputs: the document was read from standard input
STDOUT_NAME = "standard output"
_FD_PATH = r"/dev/std(out|err)|/dev/fd/(\d+)|/proc/self/fd/(\d+)"  # (compiled where used: standard output needs none)
_HELD = {getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)}


@record(frozen=False)
class Destination:
    """Where one output goes: ``path`` resolved; ``fd`` for standard output and /dev/fd/N;
    ``in_place`` for devices and FIFOs."""

    where: str  # as messages name it: the path as given
    path: Optional[Path] = None
    fd: Optional[int] = None
    in_place: bool = False
    existing: Optional[os.stat_result] = None  # the regular file that is replaced


@record
class Streamed:
    """A result that ``write(file)`` writes into a binary file (``np.savez``: array by array), not held as bytes:
    a regular file gets it straight into its temporary file; a stream (a FIFO, a device) as the bytes it makes."""

    write: Callable[[BinaryIO], None]

    def data(self) -> bytes:
        import io

        buffer = io.BytesIO()
        self.write(buffer)
        return buffer.getvalue()


Data = bytes | Streamed  # what a file is given: its bytes, or what writes them


def _reason(e: BaseException) -> str:
    if isinstance(e, RuntimeError):  # Path.resolve() on Python < 3.13
        return "Too many levels of symbolic links"
    return getattr(e, "strerror", None) or str(e)


def destination(path: Optional[Path], inputs: set[Path]) -> Destination:
    """Where ``path`` (None: standard output) may be written, or an :class:`AttnError` saying why not."""
    if path is None:
        return Destination(STDOUT_NAME, fd=1)
    where = str(path)
    special = re.compile(_FD_PATH).fullmatch(os.path.abspath(path))  # /dev/stdout: the stream itself, whatever it is
    if special:
        fd = {"out": 1, "err": 2}[special[1]] if special[1] else int(special[2] or special[3])
        return Destination(where, fd=fd)
    try:
        target = path.resolve()
        try:
            found: Optional[os.stat_result] = os.stat(target)
        except FileNotFoundError:
            found = None
        _refuse_inputs(target, found, inputs, where)
        if found is not None and stat.S_ISDIR(found.st_mode):
            raise AttnError("files.directory_give_file_name", where)
        if found is not None and not stat.S_ISREG(found.st_mode):
            return Destination(where, target, in_place=True)  # a device or a FIFO: written, never replaced
        if not target.parent.is_dir():
            raise AttnError("files.cannot_written_folder_does_not", where, parent=target.parent)
    except (OSError, RuntimeError) as e:
        raise AttnError("files.cannot_written", where, reason=_reason(e)) from None
    return Destination(where, target, existing=found)


def _refuse_inputs(target: Path, found: Optional[os.stat_result], inputs: set[Path], where: str) -> None:
    if target in inputs:
        raise AttnError("files.one_this_run_s_input", where)
    if found is None:
        return
    same = (found.st_dev, found.st_ino)
    if STDIN in inputs:
        try:
            source = os.fstat(0)
        except OSError:
            source = None
        if source is not None and stat.S_ISREG(source.st_mode) and (source.st_dev, source.st_ino) == same:
            raise AttnError("files.document_read_from_standard_input", where)
    for path in inputs - {STDIN}:
        try:
            other = os.stat(path)
        except OSError:
            continue
        if (other.st_dev, other.st_ino) == same:  # a hard link to an input
            raise AttnError("files.one_this_run_s_input", where)


def check_destination(path: Path, inputs: set[Path]) -> Path:
    """``path`` resolved, if a file may be written there: not an input, not a directory, in a folder that exists."""
    found = destination(path, inputs)
    return found.path if found.path is not None else path


def write_atomic(path: Path, data: bytes, inputs: set[Path]) -> None:
    """Write ``data`` to ``path`` whole or not at all (see :func:`write_all`)."""
    write_all([(path, data)], inputs)


def write_all(outputs: list[tuple[Optional[Path], Data]], inputs: set[Path]) -> None:
    """Write each ``(path, data)`` (path None: standard output): every byte of each, or no file changed.

    Regular files are prepared as temporary files first; then the streams (standard output, devices,
    FIFOs) are written; then the files are renamed into place, and put back if a rename fails. A
    reader that goes away (``BrokenPipeError``) still lets the files be renamed, then is raised.
    """
    places = [(destination(path, inputs), data) for path, data in outputs]
    temps: list[tuple[str, Destination]] = []
    opened: list[int] = []
    try:
        for place, data in places:
            if place.fd is None and not place.in_place:
                _prepare(place, data, temps)
        streams = [(place, data, _open(place, opened)) for place, data in places
                   if place.fd is not None or place.in_place]
        broken: Optional[BrokenPipeError] = None
        for place, data, fd in streams:
            try:
                _write_stream(fd, data, place.where)
            except BrokenPipeError as e:  # the reader has what it wanted (`| head`): not a failure of the files
                broken = e
        with _signals_held():
            _rename_all(temps)
            temps.clear()
        if broken is not None:
            raise broken
    except BaseException:
        with _signals_held():
            for temp, _ in temps:
                _remove(temp)
        raise
    finally:
        for fd in opened:
            os.close(fd)


def _prepare(place: Destination, data: Data, temps: list[tuple[str, Destination]]) -> None:
    """A temporary file beside ``place`` holding ``data`` (synced), with the mode the result should have."""
    import tempfile

    try:
        with _signals_held():  # created and remembered at once: a signal cannot leave it behind
            fd, temp = tempfile.mkstemp(prefix=".attncli-", suffix=".tmp", dir=place.path.parent)
            temps.append((temp, place))
        try:
            _keep_permissions(fd, place.existing)
            if isinstance(data, Streamed):
                with os.fdopen(fd, "wb", closefd=False) as file:
                    data.write(file)
            else:
                _write_stream(fd, data, place.where)
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as e:
        raise AttnError("files.cannot_written", place.where, reason=_reason(e)) from None


def _keep_permissions(fd: int, existing: Optional[os.stat_result]) -> None:
    """The replaced file's mode (and owner, where allowed); a new file's as open() would make it."""
    if not hasattr(os, "fchmod"):
        return
    if existing is None:
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)  # mkstemp makes it private (0600)
        return
    mode, mine = stat.S_IMODE(existing.st_mode), os.fstat(fd)
    if hasattr(os, "fchown") and (mine.st_uid, mine.st_gid) != (existing.st_uid, existing.st_gid):
        try:
            os.fchown(fd, existing.st_uid, existing.st_gid)
        except OSError:  # not allowed: the file becomes ours, with its old mode but no set-user/group-ID bit (as cp -p)
            mode &= ~(stat.S_ISUID | stat.S_ISGID)
    os.fchmod(fd, mode)


def _open(place: Destination, opened: list[int]) -> int:
    if place.fd is not None:
        if place.fd == 1:
            return _stdout_fd()
        return place.fd
    try:
        fd = os.open(place.path, os.O_WRONLY | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        raise AttnError("files.cannot_written", place.where, reason=_reason(e)) from None
    opened.append(fd)
    return fd


def _stdout_fd() -> int:
    """Standard output's file descriptor, after what Python holds for it; -1 when it is not a real file."""
    if sys.stdout is None:  # started with standard output closed (`>&-`)
        raise AttnError("files.closed_nothing_can_written_there", STDOUT_NAME)
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as e:
        raise AttnError("files.cannot_written", STDOUT_NAME, reason=_reason(e)) from None
    try:
        return sys.stdout.fileno()
    except (OSError, ValueError, AttributeError):  # an in-memory stream (tests, notebooks)
        return -1


def _write_stream(fd: int, data: Data, where: str) -> None:
    """Every byte of ``data`` to ``fd``: short writes continued, a non-blocking pipe waited for."""
    if isinstance(data, Streamed):
        data = data.data()
    if fd == -1:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return
    view = memoryview(data)
    while view:
        try:
            written = os.write(fd, view)
        except BlockingIOError:
            _wait_writable(fd)
            continue
        except BrokenPipeError:
            raise
        except OSError as e:
            raise AttnError("files.cannot_written", where, reason=_reason(e)) from None
        if written <= 0:
            raise AttnError("files.cannot_written_system_accepted_no", where)
        view = view[written:]


def _wait_writable(fd: int) -> None:
    import select

    if hasattr(select, "poll"):  # (no FD_SETSIZE limit)
        poller = select.poll()
        poller.register(fd, select.POLLOUT)
        poller.poll()
    else:
        select.select([], [fd], [])


def _rename_all(temps: list[tuple[str, Destination]]) -> None:
    """Rename each temporary file into place; if one fails, the files already replaced get their old content back."""
    keep = len(temps) > 1
    done: list[tuple[Destination, Optional[str]]] = []
    try:
        for temp, place in temps:
            backup = _backup(place) if keep and place.existing is not None else None
            try:
                os.replace(temp, place.path)
            except OSError as e:
                if backup:
                    _remove(backup)
                raise AttnError("files.cannot_written", place.where, reason=_reason(e)) from None
            done.append((place, backup))
    except BaseException:
        for place, backup in reversed(done):
            try:
                if backup:
                    os.replace(backup, place.path)
                else:
                    os.unlink(place.path)
            except OSError:
                pass
        raise
    for _, backup in done:
        if backup:
            _remove(backup)


def _backup(place: Destination) -> str:
    """A second name for the file about to be replaced (a hard link, else a copy), to put it back."""
    import shutil
    import tempfile

    try:
        for _ in range(100):
            name = str(place.path.parent / f".attncli-{os.urandom(4).hex()}.old")
            try:
                os.link(place.path, name)
                return name
            except FileExistsError:
                continue
            except OSError:
                break  # no hard links here: a copy
        fd, name = tempfile.mkstemp(prefix=".attncli-", suffix=".old", dir=place.path.parent)
        os.close(fd)
        try:
            shutil.copy2(place.path, name)
        except OSError:
            _remove(name)
            raise
        return name
    except OSError as e:
        raise AttnError("files.cannot_written_no_copy_old",
                        place.where, reason=_reason(e)) from None


def _remove(name: str) -> None:
    try:
        os.unlink(name)
    except OSError:
        pass


@contextmanager
def _signals_held() -> Iterator[None]:
    """Ctrl-C, SIGTERM and SIGHUP wait until the block is done (a file created is remembered, a rename finished)."""
    import threading

    if not hasattr(signal, "pthread_sigmask") or threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, _HELD)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
