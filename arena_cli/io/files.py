"""Opening vote-log files: standard input, compression, the container a file holds, and damage.

A file is checked before its rows are read (:func:`check_file`): it exists and is a file, and its first bytes
agree with its name. Compressed files (gzip, bz2, xz) are read through, by their content whatever their name;
a name that promises a compression the content lacks, a compression that is not read (zstd, zip) or a text
encoding other than UTF-8 is an input error, as is damage found while reading (:func:`opened`): a truncated or
corrupt stream stops the read, since the rows after the damage are lost and the rows before it are not a vote
log anyone meant to read (see the README: nothing of such a file is used).
"""

from __future__ import annotations

import bz2
import gzip
import io
import itertools
import lzma
import os
import shutil
import sys
import tempfile
import threading
import weakref
import zlib
from typing import TYPE_CHECKING
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, TypeVar, cast

from arena_cli.errors import InputError

if TYPE_CHECKING:
    import polars as pl

_T = TypeVar("_T")

#: A file name standing for standard input.
STDIN = "-"

_EXTENSIONS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "json", ".csv": "csv", ".tsv": "csv", ".parquet": "parquet", ".pq": "parquet"}
_HEAD_BYTES = 4096


@dataclass(frozen=True)
class Codec:
    """A compression read through: its name, the file extension that says it, its first bytes."""

    name: str
    suffix: str
    magic: bytes
    open: Callable[[IO[bytes]], io.BufferedIOBase]


CODECS = (
    Codec("gzip", ".gz", b"\x1f\x8b", lambda raw: gzip.GzipFile(fileobj=raw)),
    Codec("bz2", ".bz2", b"BZh", lambda raw: bz2.BZ2File(raw)),
    Codec("xz", ".xz", b"\xfd7zXZ\x00", lambda raw: lzma.LZMAFile(raw)),
)
#: Contents recognised by their first bytes that no container reads, and what to do about them (UTF-32's
#: byte-order marks before UTF-16's, which they start with).
FOREIGN = (
    (b"\x28\xb5\x2f\xfd", "zstd-compressed, which is not read: decompress it first (zstd -d)"),
    (b"PK\x03\x04", "a zip archive: unzip it first"),
    (b"\xff\xfe\x00\x00", "UTF-32 text: convert it to UTF-8 first (iconv -f UTF-32 -t UTF-8)"),
    (b"\x00\x00\xfe\xff", "UTF-32 text: convert it to UTF-8 first (iconv -f UTF-32 -t UTF-8)"),
    (b"\xff\xfe", "UTF-16 text: convert it to UTF-8 first (iconv -f UTF-16 -t UTF-8)"),
    (b"\xfe\xff", "UTF-16 text: convert it to UTF-8 first (iconv -f UTF-16 -t UTF-8)"),
)
PARQUET_MAGIC = b"PAR1"


def is_stdin(path: str | os.PathLike[str]) -> bool:
    return str(path) == STDIN


#: Standard input copied to a file, per stream (a test harness or a caller may replace ``sys.stdin``).
_STDIN_COPIES: weakref.WeakKeyDictionary[Any, Path] = weakref.WeakKeyDictionary()


def scan_parquet(path: str | os.PathLike[str]) -> pl.LazyFrame:
    """A lazy read of one parquet file (a source, or a store's part), its name taken as it is: polars would take
    ``votes[1].parquet`` as a glob pattern (and find no file, or another)."""
    import polars as pl

    return pl.scan_parquet(local_path(path), glob=False)


def local_path(path: str | os.PathLike[str]) -> Path:
    """The file to open for a source. Standard input (``-``) is copied once to a temporary file, removed at
    exit: it can be read only once, while a read may take two passes, and parquet needs to seek."""
    if not is_stdin(path):
        return Path(path)
    stream = sys.stdin.buffer if sys.stdin is not None and hasattr(sys.stdin, "buffer") else None
    if stream is None:
        raise InputError("-: there is no standard input to read")
    if stream not in _STDIN_COPIES:
        if sys.stdin.isatty():
            raise InputError("-: standard input is a terminal; pipe a vote log into it (e.g. `zcat votes.jsonl.gz | arena fit - -i jsonl`)")
        handle, name = tempfile.mkstemp(prefix="arena-stdin-")
        with os.fdopen(handle, "wb") as copy:
            shutil.copyfileobj(stream, copy, 1 << 20)
        _STDIN_COPIES[stream] = Path(name)
        weakref.finalize(stream, Path(name).unlink, missing_ok=True)
    return _STDIN_COPIES[stream]


def check_file(path: str | os.PathLike[str]) -> None:
    """A source that can be opened: standard input, or an existing file (a directory gets its own message)."""
    if is_stdin(path):
        local_path(path)
        return
    path = Path(path)
    if path.is_dir():
        hint = ""
        if (path / "manifest.json").exists():
            hint = f"; to read a store, use --store {path}"
        elif any(container_of(p) for p in path.iterdir() if p.is_file()):
            hint = f"; give its files instead (e.g. {path / '*'})"
        raise InputError(f"{path} is a directory, not a vote-log file{hint}")
    if not path.is_file():
        raise InputError(f"no such file: {path}")


def _head(path: str | os.PathLike[str], size: int) -> bytes:
    try:
        with open(local_path(path), "rb") as handle:
            return handle.read(size)
    except OSError as error:
        raise InputError(f"cannot read {path}: {error.strerror}") from None


def container_of(path: str | os.PathLike[str]) -> str | None:
    """The container a file's name says (compression suffixes looked through), or None."""
    suffixes = [s.lower() for s in Path(path).suffixes]
    if suffixes and suffixes[-1] in {c.suffix for c in CODECS}:
        suffixes = suffixes[:-1]
    return _EXTENSIONS.get(suffixes[-1]) if suffixes else None


def sniff_container(path: str | os.PathLike[str]) -> str:
    """The container of a file whose name does not say (standard input, ``votes.txt``), from its first bytes:
    parquet, a JSON array or JSON lines. CSV has no such mark: it needs ``--input-format csv``."""
    head = _decompressed_head(path)
    text = head.removeprefix(b"\xef\xbb\xbf").lstrip()
    if head.startswith(PARQUET_MAGIC):
        return "parquet"
    if text.startswith(b"["):
        return "json"
    if text.startswith(b"{") or not text:  # (no bytes, or blank lines: an empty log, in any format)
        return "jsonl"
    raise InputError(f"{path}: cannot tell the format from the name or the content (neither JSON nor parquet); use --input-format csv|jsonl|json|parquet")


def _decompressed_head(path: str | os.PathLike[str]) -> bytes:
    with opened(path) as handle:
        return handle.read(_HEAD_BYTES)


def codec_of(path: str | os.PathLike[str], head: bytes) -> Codec | None:
    """The compression of a file, by its content (``head``: its first bytes). Content that no container reads, or
    a name promising a compression its content lacks (an error page saved under the log's name?), is an input
    error; an empty file is an empty log whatever its name."""
    for magic, what in FOREIGN:
        if head.startswith(magic):
            raise InputError(f"{path}: {what}")
    named = next((c for c in CODECS if Path(path).suffix.lower() == c.suffix), None)
    found = next((c for c in CODECS if head.startswith(c.magic)), None)
    if named is not None and found is not named and head:
        raise InputError(f"{path}: not {named.name} (the name ends in {named.suffix}, the content is not {named.name}-compressed)")
    return found


@contextmanager
def opened(path: str | os.PathLike[str]) -> Iterator[IO[bytes]]:
    """A file's bytes, decompressed. Damage found while reading becomes an input error naming the file: a
    truncated stream (which Python reports as ``EOFError``, and the command line would take for Ctrl-D), a
    corrupt one, or one that is not what its name says."""
    try:
        raw = open(local_path(path), "rb")
    except OSError as error:
        raise InputError(f"cannot read {path}: {error.strerror}") from None
    with raw:
        codec = codec_of(path, raw.read(8))
        raw.seek(0)
        try:
            if codec is None:
                yield raw
            else:
                with codec.open(raw) as stream:
                    yield cast(IO[bytes], stream)  # a compressed stream reads as a binary file
        except EOFError:
            name = codec.name if codec else "file"
            raise InputError(f"{path}: truncated {name} (the data ends early: an interrupted download or copy?)") from None
        except (OSError, zlib.error, lzma.LZMAError) as error:
            if codec is None:
                raise InputError(f"cannot read {path}: {getattr(error, 'strerror', None) or error}") from None
            raise InputError(f"{path}: corrupt {codec.name} ({error})") from None


def parquet_content(path: str | os.PathLike[str]) -> None:
    """Before a parquet read: a file that holds something else gets a message saying what it holds."""
    head = _head(path, 8)
    if not head or head.startswith(PARQUET_MAGIC):
        return
    codec = codec_of(path, head)
    if codec is not None:
        raise InputError(f"{path}: {codec.name}-compressed parquet: decompress it first (parquet compresses its own data)")
    text = head.removeprefix(b"\xef\xbb\xbf").lstrip()
    if text[:1] in (b"{", b"["):
        raise InputError(f"{path}: not parquet (it starts like JSON; use --input-format jsonl or json)")


def text_content(path: str | os.PathLike[str], container: str) -> None:
    """Before a text read (JSONL, JSON, CSV): a file that holds parquet gets a message saying so."""
    if _decompressed_head(path)[:4] == PARQUET_MAGIC:
        raise InputError(f"{path}: holds parquet, not {container}; use --input-format parquet")


def read_ahead(items: Iterator[_T]) -> Iterator[_T]:
    """``items``, the next one made on a thread of its own while the caller works on this one: reading a file's
    next slice or block (file reads, numpy and polars, which let go of the interpreter) overlaps the checks of the
    one before it, which alone leave one of two cores idle part of the time. One item ahead at most; the items are
    made one after another, in order, as without it (a caller that stops early waits for the one being made)."""
    with ThreadPoolExecutor(1) as worker:
        ahead = worker.submit(lambda: list(itertools.islice(items, 1)))
        while made := ahead.result():
            ahead = worker.submit(lambda: list(itertools.islice(items, 1)))
            yield made.pop()  # (not kept here: the caller alone holds it)


#: Whether :func:`quiet_stderr` silences file descriptor 2: the command line's choice (its errors are one line), not
#: a library caller's, whose other threads may be writing there.
QUIET_PANICS = False
_quiet_lock = threading.Lock()
_quiet_depth = 0
_quiet_saved: int | None = None


@contextmanager
def quiet_stderr() -> Iterator[None]:
    """File descriptor 2 pointed at /dev/null meanwhile, under :data:`QUIET_PANICS`: a panic in polars' Rust code
    writes its message (and, with ``RUST_BACKTRACE``, a backtrace) there before it is raised as an exception, which
    the caller turns into one line. For a read that may panic, made while nothing else writes there; nested and
    concurrent uses share one redirection, undone when the last ends."""
    global _quiet_depth, _quiet_saved
    if not QUIET_PANICS:
        yield
        return
    with _quiet_lock:
        if _quiet_depth == 0:
            try:
                sys.stderr.flush()
                saved = os.dup(2)
            except (OSError, ValueError, AttributeError):  # no descriptor 2 (an embedding without one): nothing to quiet
                saved = None
            if saved is not None:
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, 2)
                os.close(devnull)
            _quiet_saved = saved
        _quiet_depth += 1
    try:
        yield
    finally:
        with _quiet_lock:
            _quiet_depth -= 1
            if _quiet_depth == 0 and _quiet_saved is not None:
                os.dup2(_quiet_saved, 2)
                os.close(_quiet_saved)
                _quiet_saved = None
