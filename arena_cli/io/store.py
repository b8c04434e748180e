"""The battle store: a directory of parquet parts listed by one small manifest.

Why this shape: parquet parts are readable by any tool (polars, pandas, duckdb), appends never rewrite old
data, and publishing a write is one atomic rename of ``manifest.json``. A run killed at any instant leaves
the store exactly as before (the old manifest still lists only the old parts) or exactly as after.

Layout::

    STORE/manifest.json            the truth: which part files make up each table, with each part's rows
                                   and its null count per column (only the columns that have nulls)
    STORE/battles/part-*.parquet   canonical battles (arena_cli.schema.BATTLE_SCHEMA + extra columns)
    STORE/quarantine/part-*.parquet  rejected rows with their reason (QUARANTINE_SCHEMA)
    STORE/features/<key>/part-*.parquet  style features per battle, one folder per (recipe, encoding, version)
    STORE/.lock                    writers hold an exclusive lock on it
    STORE/lost+found/              what ``arena store repair`` or a writer set aside (never deleted)

A store that is not consistent (see :mod:`arena_cli.io.manifest`: a listed part missing, a part the manifest
does not list, ...) is never read nor written: every open says what is wrong (exit 3) and points at ``arena
store repair``. A writer deletes only the temporaries of a run that did not finish, and sets aside the parts it
staged, only after checking the manifest and every part it lists. To read a store with other tools, read the files the manifest lists (or
``arena export``).
"""

from __future__ import annotations

import copy
import errno
import fcntl
import json
import os
import shlex
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from arena_cli.errors import InputError, StoreLockedError
from arena_cli.io.atomic import atomic_write, atomic_write_bytes, fsync_dir, write_failure
from arena_cli.io.files import scan_parquet
from arena_cli.io.manifest import (
    MANIFEST,
    TABLE_FOLDERS,
    Problem,
    aside_path,
    by_importance,
    empty_manifest,
    first_line,
    layout_problems,
    listed_problems,
    not_permitted,
    part_files,
    read_manifest,
    schema_problem,
    staged_leftovers,
    union_with,
    unreadable_data,
)
from arena_cli.io.options import default_store_path

__all__ = ["MANIFEST", "Store", "StoreDamagedError", "Transaction"]


class StoreDamagedError(InputError):
    """The store is not consistent: nothing is read or written until ``arena store repair`` fixes it."""

    def __init__(self, root: Path, problems: list[Problem]):
        self.problems = problems
        first = problems[0]
        more = f" (and {len(problems) - 1} more problem{'s' if len(problems) > 2 else ''})" if len(problems) > 1 else ""
        if first.kind == "manifest_newer":
            super().__init__(f"store {root}: {first.detail}")
        else:
            quoted = shlex.quote(str(root))
            deep = " --deep" if any(p.kind == "unreadable_data" for p in problems) else ""  # only a read of the data finds it
            super().__init__(f"store {root} is damaged: {first.detail}{more}; nothing was changed. "
                             f"`arena store check{deep} --store {quoted}` lists the problems, `arena store repair --store {quoted}` fixes them")


@contextmanager
def writing(root: Path, path: Path | None = None) -> Iterator[None]:
    """A file-system error while writing the store (a full disk, a read-only store, no permission) is the
    user's to fix: an input error (exit 3) naming the path, never a traceback."""
    try:
        yield
    except Exception as error:
        reason = write_failure(error)
        if reason is None:
            raise
        where = getattr(error, "filename", None) or path or root
        raise InputError(f"cannot write to store {root}: {reason[:1].lower()}{reason[1:]} ({where})") from None


@dataclass
class Transaction:
    """Parts staged by one writer; nothing is visible to readers until :meth:`Store.write` publishes them."""

    store: Store
    manifest: dict[str, Any]
    staged: list[tuple[str, Path, dict[str, Any]]] = field(default_factory=list)
    published: list[Callable[[], None]] = field(default_factory=list)

    def add(self, table: str, frame: pl.DataFrame) -> None:
        """Stage ``frame`` as a new part of ``table`` (written and fsynced now, published on commit)."""
        if frame.height == 0:
            return
        folder = self.store.root / table
        final = folder / f"part-{self.manifest['generation'] + 1:06d}-{uuid.uuid4().hex[:8]}.parquet"
        with writing(self.store.root, final):
            folder.mkdir(parents=True, exist_ok=True)
            atomic_write(final, lambda tmp: frame.write_parquet(tmp, compression="zstd", statistics=True))
        nulls = {column: count for column, count in zip(frame.columns, frame.null_count().row(0)) if count}
        self.staged.append((table, final, {"rows": frame.height, "nulls": nulls}))

    def log(self, entry: dict[str, Any]) -> None:
        self.manifest.setdefault("ingests", []).append(entry)

    def on_publish(self, then: Callable[[], None]) -> None:
        """Call ``then`` once the write is published (or had nothing to publish), still under the lock: for
        what is derived from the published store (the duplicate index)."""
        self.published.append(then)


class Store:
    """A battle store at ``root``. Reads see the manifest as it was when the store was opened."""

    def __init__(self, root: Path, manifest: dict[str, Any]):
        self.root = Path(root)
        self.manifest = manifest

    # -- opening -------------------------------------------------------------------------------------------
    @classmethod
    def open(cls, root: Path | str | None = None, *, create: bool = False) -> Store:
        """The store at ``root``, checked as cheaply as a read allows (:class:`StoreDamagedError` when it is
        not consistent). ``create``: a directory without a store is a new, empty one (created on first write)."""
        root = Path(root) if root is not None else default_store_path()
        if root.exists() and not root.is_dir():
            raise InputError(f"store {root} is a file, not a store directory")
        files = list(part_files(root))  # before the manifest: see layout_problems
        manifest = cls._checked(root, deep=False, files=files)
        if manifest is None:
            if not create:
                raise InputError(f"no store at {root} (run `arena ingest FILE --store {root}` first)")
            manifest = empty_manifest()
        return cls(root, manifest)

    @staticmethod
    def _checked(root: Path, deep: bool, files: list[Path] | None = None) -> dict[str, Any] | None:
        """The manifest, once the store is known to be consistent (None: no store there yet)."""
        manifest, problems = read_manifest(root)
        if manifest is not None:
            problems += listed_problems(root, manifest, deep) + layout_problems(root, manifest, files)
        errors = by_importance(p for p in problems if p.error)
        if errors:
            raise StoreDamagedError(root, errors)
        return manifest

    def refresh(self) -> None:
        """Read the manifest again, with the deep checks a writer needs (every listed part's footer)."""
        self.manifest = self._checked(self.root, deep=True) or empty_manifest()

    # -- reading -------------------------------------------------------------------------------------------
    def parts(self, table: str) -> list[Path]:
        return [self.root / p["path"] for p in self.manifest["tables"].get(table, [])]

    def rows(self, table: str) -> int:
        return sum(p["rows"] for p in self.manifest["tables"].get(table, []))

    def tables(self) -> list[str]:
        return sorted(self.manifest["tables"])

    def _schema(self, table: str, part: Path, union: dict[str, Any]) -> pl.Schema:
        """A part's schema from its footer, which every read takes anyway: a part that cannot be read, lacks its
        table's key columns or cannot be read together with the parts before it (``union``) is damage (exit 3),
        not a polars error halfway through a command."""
        path = part.relative_to(self.root).as_posix()
        try:
            schema = scan_parquet(part).collect_schema()
        except (OSError, pl.exceptions.PolarsError) as error:
            raise StoreDamagedError(self.root, [Problem("unreadable_part", path, f"{path}: it is not readable parquet ({first_line(error)})")]) from None
        why = schema_problem(table, dict(schema), union)
        if why is not None:
            raise StoreDamagedError(self.root, [Problem("wrong_schema", path, f"{path} cannot be a part of {table}: {why}")])
        return schema

    def scan_parts(self, table: str, columns: list[str] | None = None) -> list[pl.LazyFrame]:
        """One lazy frame per part, all with the same columns: those asked for (default: all) that some part
        has; a part without one reads it as null. Lets a consumer reduce a table part by part."""
        parts = self.parts(table)
        union: dict[str, Any] = {}
        schemas = []
        for part in parts:
            schemas.append(self._schema(table, part, union))
            union = union_with(union, dict(schemas[-1]))
        names = [c for c in (columns if columns is not None else union) if c in union]
        return [
            self._rows(part, schema).select(pl.col(c) if c in schema else pl.lit(None, union[c]).alias(c) for c in names)
            for part, schema in zip(parts, schemas)
        ]

    def read_part(self, table: str, relative: str, columns: list[str]) -> pl.DataFrame:
        """``columns`` of one listed part of ``table`` (a path as the manifest lists it), read as every store read
        is: damage in its data is :class:`StoreDamagedError`."""
        path = self.root / relative
        return self._rows(path, self._schema(table, path, {})).select(columns).collect()

    def _rows(self, part: Path, schema: pl.Schema) -> pl.LazyFrame:
        """A part's rows, lazily, as ``pl.scan_parquet`` gives them (only the columns and rows a query needs).
        Data the footer checks cannot see is damaged (a flipped byte in a page) is found only as it is decoded,
        by whatever query collects it: there it is damage, :class:`StoreDamagedError` naming the part (exit 3),
        never a polars error."""
        from polars.io.plugins import register_io_source

        def read(columns: list[str] | None, predicate: pl.Expr | None, limit: int | None, _batch: int | None) -> Iterator[pl.DataFrame]:
            query = scan_parquet(part)
            query = query.select(columns) if columns is not None else query
            query = query.filter(predicate) if predicate is not None else query
            try:
                yield (query.head(limit) if limit is not None else query).collect()
            except PermissionError:
                raise not_permitted(part) from None
            except (OSError, pl.exceptions.PolarsError, pl.exceptions.PanicException) as error:
                raise StoreDamagedError(self.root, [unreadable_data(part.relative_to(self.root).as_posix(), error)]) from None

        return register_io_source(read, schema=schema, is_pure=True)

    def scan(self, table: str, columns: list[str] | None = None) -> pl.LazyFrame | None:
        """A lazy frame over the table's parts (None when the table has none). Parts may differ in extra
        columns and in types; missing columns read as null, types are widened to one that holds all."""
        parts = self.scan_parts(table, columns)
        if not parts:
            return None
        return parts[0] if len(parts) == 1 else pl.concat(parts, how="diagonal_relaxed")

    def complete(self, table: str, columns: list[str]) -> bool:
        """Whether every row of ``table`` has a value in each of ``columns``. Answered from the null counts the
        manifest keeps per part and the parts' footers; parts written before it kept them are read."""
        unknown = []
        for entry in self.manifest["tables"].get(table, []):
            path = self.root / entry["path"]
            if not set(columns) <= set(self._schema(table, path, {}).names()):
                return False
            if "nulls" not in entry:
                unknown.append(self._rows(path, self._schema(table, path, {})).select(columns))
            elif any(entry["nulls"].get(c) for c in columns):
                return False
        if not unknown:
            return True
        counts = pl.concat(unknown).select(pl.sum_horizontal(pl.col(columns).null_count()))
        return counts.collect(engine="streaming").item() == 0

    def read(self, table: str, columns: list[str] | None = None) -> pl.DataFrame | None:
        lazy = self.scan(table, columns)
        return None if lazy is None else lazy.collect()

    # -- writing -------------------------------------------------------------------------------------------
    @contextmanager
    def lock(self, wait: float = 60.0) -> Iterator[None]:
        """Exclusive writer lock: a second writer waits up to ``wait`` seconds, then fails clearly. A store
        that cannot be locked (read-only, no permission) is an input error naming the path."""
        deadline = time.monotonic() + wait
        path = self.root / ".lock"
        while True:
            with writing(self.root, path):
                self.root.mkdir(parents=True, exist_ok=True)
                try:
                    handle = open(path, "a+")
                except FileNotFoundError:  # a new store's folder was just removed by a run that wrote nothing
                    continue
            try:
                self._acquire(handle, deadline, wait)
                if _same_file(handle, path):
                    break
            except BaseException:
                handle.close()
                raise
            handle.close()  # the lock file was removed (see _remove_if_new) while we waited: lock the new one
        try:
            yield
        finally:
            handle.close()

    def _acquire(self, handle: Any, deadline: float, wait: float) -> None:
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise StoreLockedError(
                        f"store {self.root} is locked by another arena run; waited {wait:g} s "
                        "(try again later or raise --lock-wait)"
                    ) from None
                time.sleep(0.1)

    @contextmanager
    def write(self, wait: float = 60.0) -> Iterator[Transaction]:
        """Lock, check the store (deeply: a damaged store is never written), set aside what a run that did not
        finish staged, let the caller stage parts, then publish them atomically.

        If the body raises, or the publish fails (a full disk), the staged parts are removed and the manifest is
        untouched (a process killed outright leaves them to the next writer). A new store gets its empty
        manifest before anything is staged, so that what a killed first run staged is a leftover like any
        other; when nothing is published in it, that manifest goes again, and the folder if this call made it.
        """
        created = not self.root.exists()
        with self.lock(wait):
            new = not (self.root / MANIFEST).exists()
            try:
                self.refresh()
                if new:
                    self._write_manifest(self.manifest)
                with writing(self.root):
                    for leftover in staged_leftovers(self.root, self.manifest):
                        # a part of the next generation may also be a published one whose manifest went back
                        # (edited, restored): set aside, never deleted (``arena store repair`` ingests it again)
                        _set_aside(self.root, leftover)
                tx = Transaction(self, copy.deepcopy(self.manifest))
                try:
                    yield tx
                    if tx.staged or tx.manifest != self.manifest:
                        self._publish(tx)
                except BaseException:
                    self._discard(tx)
                    raise
                for then in tx.published:
                    then()
            finally:
                if new:
                    self._remove_if_unused(created)

    def _write_manifest(self, manifest: dict[str, Any]) -> None:
        with writing(self.root, self.root / MANIFEST):
            atomic_write_bytes(self.root / MANIFEST, (json.dumps(manifest, indent=1) + "\n").encode())

    def _publish(self, tx: Transaction) -> None:
        manifest = tx.manifest
        tables = manifest["tables"]
        for table, path, counts in tx.staged:
            tables.setdefault(table, []).append({"path": path.relative_to(self.root).as_posix(), **counts})
        manifest["generation"] += 1
        with writing(self.root):
            for folder in {self.root / t for t, _, _ in tx.staged}:
                fsync_dir(folder)
        self._write_manifest(manifest)
        self.manifest = manifest

    def _on_disk(self) -> dict[str, Any] | None:
        """The manifest file as it is now (None when there is none); raises when it cannot be parsed."""
        try:
            return json.loads((self.root / MANIFEST).read_text())
        except FileNotFoundError:
            return None

    def _discard(self, tx: Transaction) -> None:
        """Remove the parts ``tx`` staged, unless the manifest on disk lists them (a publish that failed after
        its rename, e.g. in the directory's fsync, did publish them)."""
        try:
            manifest = self._on_disk() or empty_manifest()
            listed = {p["path"] for parts in manifest["tables"].values() for p in parts}
        except Exception:  # the manifest cannot be read: leave the parts to the next writer's checks
            return
        for _, path, _ in tx.staged:
            if path.relative_to(self.root).as_posix() not in listed:
                with suppress(OSError):
                    path.unlink(missing_ok=True)

    def _remove_if_unused(self, created: bool) -> None:
        """Undo the creation of a store in which nothing was published: its empty manifest and, when this
        writer made the folder, its lock file, empty table folders and the folder (under the lock; a writer
        waiting for it takes a new lock file). Nothing else is ever deleted."""
        with suppress(Exception):
            if self._on_disk() == empty_manifest():
                (self.root / MANIFEST).unlink()
        if not created or (self.root / MANIFEST).exists():
            return
        with suppress(OSError):
            (self.root / ".lock").unlink(missing_ok=True)
            for folder in (self.root / f for f in TABLE_FOLDERS):
                for empty in sorted((d for d in folder.rglob("*") if d.is_dir()), reverse=True):
                    empty.rmdir()
                if folder.is_dir():
                    folder.rmdir()
            self.root.rmdir()


def _same_file(handle: Any, path: Path) -> bool:
    """Whether the open lock file is still the one at ``path`` (not removed or replaced since it was opened)."""
    try:
        return os.fstat(handle.fileno()).st_ino == os.stat(path).st_ino
    except FileNotFoundError:
        return False


def _set_aside(root: Path, leftover: Path) -> None:
    """A data file a writer finds staged by a run that did not finish, moved to lost+found (its place kept); an
    atomic-write temporary (never data yet published) removed."""
    if not leftover.name.startswith("part-"):
        leftover.unlink(missing_ok=True)
        return
    aside = aside_path(root, leftover.relative_to(root).as_posix())
    aside.parent.mkdir(parents=True, exist_ok=True)
    leftover.replace(aside)
