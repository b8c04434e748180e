"""Atomic file writes: a reader sees the old file or the new one, never a half-written one. A user's output file
(``-o``) is checked before any work is done and written with errors that name it."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

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
    does its work, so a typo in ``-o`` costs nothing. Its directory must exist (it is not created)."""
    path = Path(path)
    if path.is_dir():
        raise InputError(f"cannot write {path}: it is a directory (give a file name)")
    _writable_directory(path, path.parent)
    return path


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


def write_output(path: Path, write: Callable[[Path], object]) -> None:
    """:func:`atomic_write` for a user's output file: whole or not at all, and a failure (a directory in the way,
    no permission, a full disk) is an :class:`InputError` naming the file instead of a traceback."""
    try:
        atomic_write(path, write)
    except OSError as error:
        raise InputError(f"cannot write {path}: {error.strerror or error}") from None
