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

Files under a table folder that the manifest does not list are leftovers of a killed run; the next writer
deletes them. To read a store with other tools, read the files the manifest lists (or ``arena export``).
"""

from __future__ import annotations

import fcntl
import json
import os
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from arena_cli.errors import InputError, StoreLockedError
from arena_cli.io.atomic import atomic_write, atomic_write_bytes, fsync_dir
from arena_cli.io.options import default_store_path

MANIFEST = "manifest.json"
FORMAT = "arena-store"
FORMAT_VERSION = 1

def _empty_manifest() -> dict[str, Any]:
    return {"format": FORMAT, "version": FORMAT_VERSION, "generation": 0, "tables": {}, "ingests": []}


@dataclass
class Transaction:
    """Parts staged by one writer; nothing is visible to readers until :meth:`Store.write` publishes them."""

    store: Store
    manifest: dict[str, Any]
    staged: list[tuple[str, Path, dict[str, Any]]] = field(default_factory=list)

    def add(self, table: str, frame: pl.DataFrame) -> None:
        """Stage ``frame`` as a new part of ``table`` (written and fsynced now, published on commit)."""
        if frame.height == 0:
            return
        folder = self.store.root / table
        folder.mkdir(parents=True, exist_ok=True)
        final = folder / f"part-{self.manifest['generation'] + 1:06d}-{uuid.uuid4().hex[:8]}.parquet"
        atomic_write(final, lambda tmp: frame.write_parquet(tmp, compression="zstd", statistics=True))
        nulls = {column: count for column, count in zip(frame.columns, frame.null_count().row(0)) if count}
        self.staged.append((table, final, {"rows": frame.height, "nulls": nulls}))

    def log(self, entry: dict[str, Any]) -> None:
        self.manifest.setdefault("ingests", []).append(entry)


class Store:
    """A battle store at ``root``. Reads see the manifest as it was when the store was opened."""

    def __init__(self, root: Path, manifest: dict[str, Any]):
        self.root = Path(root)
        self.manifest = manifest

    # -- opening -------------------------------------------------------------------------------------------
    @classmethod
    def open(cls, root: Path | str | None = None, *, create: bool = False) -> Store:
        root = Path(root) if root is not None else default_store_path()
        manifest_path = root / MANIFEST
        if manifest_path.exists():
            return cls(root, cls._read_manifest(manifest_path))
        if not create:
            raise InputError(f"no store at {root} (run `arena ingest FILE --store {root}` first)")
        root.mkdir(parents=True, exist_ok=True)
        return cls(root, _empty_manifest())

    @staticmethod
    def _read_manifest(path: Path) -> dict[str, Any]:
        try:
            manifest = json.loads(path.read_text())
        except (OSError, ValueError) as error:
            raise InputError(f"unreadable store manifest {path}: {error}") from None
        if manifest.get("format") != FORMAT:
            raise InputError(f"{path} is not an arena store manifest")
        if manifest.get("version", 0) > FORMAT_VERSION:
            raise InputError(f"store {path.parent} was written by a newer arena-cli (format {manifest['version']})")
        return manifest

    def refresh(self) -> None:
        path = self.root / MANIFEST
        self.manifest = self._read_manifest(path) if path.exists() else _empty_manifest()

    # -- reading -------------------------------------------------------------------------------------------
    def parts(self, table: str) -> list[Path]:
        return [self.root / p["path"] for p in self.manifest["tables"].get(table, [])]

    def rows(self, table: str) -> int:
        return sum(p["rows"] for p in self.manifest["tables"].get(table, []))

    def tables(self) -> list[str]:
        return sorted(self.manifest["tables"])

    def scan_parts(self, table: str, columns: list[str] | None = None) -> list[pl.LazyFrame]:
        """One lazy frame per part, all with the same columns: those asked for (default: all) that some part
        has; a part without one reads it as null. Lets a consumer reduce a table part by part."""
        frames = [pl.scan_parquet(p) for p in self.parts(table)]
        schemas = [f.collect_schema() for f in frames]
        union: dict[str, pl.DataType] = {}
        for schema in schemas:
            for name, dtype in schema.items():
                union.setdefault(name, dtype)
        names = [c for c in (columns if columns is not None else union) if c in union]
        return [
            frame.select(pl.col(c) if c in schema else pl.lit(None, union[c]).alias(c) for c in names)
            for frame, schema in zip(frames, schemas)
        ]

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
            if not set(columns) <= set(pl.scan_parquet(path).collect_schema().names()):
                return False
            if "nulls" not in entry:
                unknown.append(pl.scan_parquet(path).select(columns))
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
        """Exclusive writer lock: a second writer waits up to ``wait`` seconds, then fails clearly."""
        self.root.mkdir(parents=True, exist_ok=True)
        handle = open(self.root / ".lock", "a+")
        deadline = time.monotonic() + wait
        try:
            while True:
                try:
                    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise StoreLockedError(
                            f"store {self.root} is locked by another arena run; waited {wait:g} s "
                            "(try again later or raise --lock-wait)"
                        ) from None
                    time.sleep(0.1)
            yield
        finally:
            handle.close()

    @contextmanager
    def write(self, wait: float = 60.0) -> Iterator[Transaction]:
        """Lock, re-read the manifest, let the caller stage parts, then publish them atomically.

        If the body raises (or the process dies), the manifest is untouched and the staged parts are
        orphans that the next writer removes.
        """
        with self.lock(wait):
            self.refresh()
            self._remove_orphans()
            manifest = json.loads(json.dumps(self.manifest))
            tx = Transaction(self, manifest)
            try:
                yield tx
            except BaseException:
                for _, path, _ in tx.staged:
                    path.unlink(missing_ok=True)
                raise
            if not tx.staged and tx.manifest == self.manifest:
                return
            tables = manifest["tables"]
            for table, path, counts in tx.staged:
                tables.setdefault(table, []).append({"path": path.relative_to(self.root).as_posix(), **counts})
            manifest["generation"] += 1
            for folder in {self.root / t for t, _, _ in tx.staged}:
                fsync_dir(folder)
            atomic_write_bytes(self.root / MANIFEST, (json.dumps(manifest, indent=1) + "\n").encode())
            self.manifest = manifest
            self._remove_orphans()

    def _remove_orphans(self) -> None:
        listed = {self.root / p["path"] for parts in self.manifest["tables"].values() for p in parts}
        for folder in ("battles", "quarantine", "features"):
            for path in (self.root / folder).rglob("part-*.parquet"):
                if path not in listed:
                    path.unlink(missing_ok=True)
            for path in (self.root / folder).rglob(".part-*.tmp"):
                path.unlink(missing_ok=True)
        for path in self.root.glob(f".{MANIFEST}.*.tmp"):  # a manifest write cut short
            path.unlink(missing_ok=True)
