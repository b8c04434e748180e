"""Atomic file writes: a reader sees the old file or the new one, never a half-written one. A user's output file
(``-o``) is checked before any work is done and written with errors that name it."""

from __future__ import annotations

import errno
import os
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO

from arena_cli.errors import InputError


def fsync_dir(directory: Path) -> None:
    """Make a rename durable: the directory entry itself must reach the disk."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _umask() -> int:
    """The process umask (mkstemp creates files 0600; published files get the usual permissions)."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write(path: Path, write: Callable[[Path], object]) -> None:
    """Call ``write(tmp)`` on a temporary file beside ``path``, fsync it, then rename it over ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        write(tmp)
        with open(tmp, "rb+") as handle:
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
        fsync_dir(path.parent)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def atomic_write_bytes(path: Path, data: bytes) -> None:
    atomic_write(path, lambda tmp: tmp.write_bytes(data))


def writable_file(path: Path) -> Path:
    """``path`` if a file can be written there, else an :class:`InputError` naming it: checked before a command
    does its work, so a typo in ``-o`` costs nothing. Its directory must exist (it is not created); a symbolic
    link's is its target's."""
    path = Path(path)
    if path.is_dir():
        raise InputError(f"cannot write {path}: it is a directory (give a file name)")
    if written_in_place(path):
        if not os.access(path, os.W_OK):
            raise InputError(f"cannot write {path}: permission denied")
        return path
    _writable_directory(path, path.resolve().parent)
    return path


def written_in_place(path: Path) -> bool:
    """Whether ``path`` is an existing file that is not a regular one (``/dev/stdout``, ``/dev/null``, a terminal, a
    named pipe): it is written where it is, as a shell's ``>`` does. Replacing it by a regular file, as an atomic
    write would, would break it for every other program."""
    return path.exists() and not path.is_file() and not path.is_dir()


def writable_directory(path: Path) -> Path:
    """``path`` if it is, or can be made, a directory to write files in; else an :class:`InputError` naming it."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise InputError(f"cannot write into {path}: it exists and is not a directory")
    existing = next(p for p in (path, *path.parents) if p.exists())
    _writable_directory(path, existing)
    return path


def _writable_directory(path: Path, directory: Path) -> None:
    if not directory.exists():
        raise InputError(f"cannot write {path}: no directory {directory}")
    if not directory.is_dir():
        raise InputError(f"cannot write {path}: {directory} is not a directory")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise InputError(f"cannot write {path}: directory {directory} is not writable")


#: Where :func:`write_output` has a writer write: a temporary file's path, or a device or pipe opened for it.
Target = Path | IO[bytes]


def put_bytes(target: Target, data: bytes) -> None:
    """Write ``data`` to a :data:`Target`."""
    if isinstance(target, Path):
        target.write_bytes(data)
    else:
        target.write(data)


def write_output(path: Path, write: Callable[[Target], object]) -> bool:
    """:func:`atomic_write` for a user's output file: whole or not at all, and a failure (a directory in the way,
    no permission, a full disk) is an :class:`InputError` naming the file instead of a traceback. A symbolic link
    is followed (its target is replaced, the link stays); a device or pipe is written in place, opened here once
    and given to ``write`` open (a writer that opened a named pipe again after its reader left would wait for a
    reader for ever). Whether the output was written whole: False when the reader of a device or pipe stopped
    reading (the rest is discarded, and that is no error)."""
    path = Path(path)
    try:
        if written_in_place(path):
            return _write_in_place(path, write)
        atomic_write(path.resolve(), write)
        return True
    except Exception as error:
        reason = write_failure(error)
        if reason is None:
            raise
        raise InputError(f"cannot write {path}: {reason}") from None


def _write_in_place(path: Path, write: Callable[[Target], object]) -> bool:
    """A reader that stops reading (``-o /dev/stdout | head -1``) is not an error, as on stdout: False then."""
    try:
        with open(path, "wb") as handle:
            write(handle)
    except Exception as error:
        if _error_number(error) != errno.EPIPE:
            raise
        return False
    return True


def write_failure(error: BaseException) -> str | None:
    """Why a write failed, when the file system is why (a full disk, a read-only file system, no permission), or
    None. Polars reports the OS error of its own writes in its message, except that its parquet writer, when
    the footer cannot be written, says only "transport error"."""
    number = _error_number(error)
    if number is not None:
        return os.strerror(number)
    if isinstance(error, OSError):
        return error.strerror or str(error)
    if _is_polars_error(error) and "transport error" in str(error):
        return "the parquet file could not be written out (is the disk full?)"
    return None


_OS_ERROR = re.compile(r"\(os error (\d+)\)")


def _error_number(error: BaseException) -> int | None:
    """The OS error number of a failed write: polars raises its own writes' errors with the number in the message
    only (an ``OSError`` without ``errno``, or a polars error)."""
    if isinstance(error, OSError) and error.errno is not None:
        return error.errno
    match = _OS_ERROR.search(str(error)) if isinstance(error, OSError) or _is_polars_error(error) else None
    return int(match.group(1)) if match else None


def _is_polars_error(error: BaseException) -> bool:
    import polars as pl

    return isinstance(error, pl.exceptions.PolarsError)
