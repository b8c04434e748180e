"""The duplicate index: which battle ids the store holds, and with what content, at a cost per batch that grows
only with the logarithm of the store's size.

An ingest must tell, for every battle id it reads, whether the store has it and with which content key. Joining
each batch with every stored id, or ``is_in`` against them, hashes the whole store for every batch (quadratic in
the rows ever ingested), and holding the ids themselves takes gigabytes at 100M battles. Instead each battle is
kept as three 64-bit words — two independent hashes of its id (a 128-bit fingerprint) and its content key — in
:class:`SortedRuns`: arrays sorted by the first word, looked up with a binary search per id, and merged when a
newer run grows as large as the one before (a log-structured merge): a batch of m ids costs O(m log n) to look
up and O(m log(n/m)) amortised to add, 24 bytes per stored battle.

Why a fingerprint and not the ids: two distinct ids share a 128-bit fingerprint with probability about
n·m/2^128 for m ids read against n stored — below 10^-21 at a billion of each, far below the odds of a disk's
undetected error — and a mistaken match would at worst drop one vote as a duplicate, so the ids need not be
read back to confirm a match. Content keys are 64 bits: two contents of one id look alike with probability
2^-64 per conflicting row.

Persisted form (``STORE/index/``): ``battles.json`` names the run files (``battles-<16 hex>.u64``, three arrays of
little-endian uint64 each, with their CRC-32), the battles parts they cover (path and rows) and the polars version
whose hash made them. It is written under the writer's lock after the manifest is published, so it can lag the
store (a run killed in between) but never lead it: parts the index lacks are read and added; an index that names
a part the store no longer lists (a repair set it aside), does not match its checksums or comes from another
polars version is rebuilt from the parts. It is a cache: deleting ``STORE/index/`` costs the next ingest a
rebuild, never a battle.
"""

from __future__ import annotations

import json
import re
import uuid
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import polars as pl

from arena_cli.io.atomic import atomic_write, atomic_write_bytes

if TYPE_CHECKING:
    from arena_cli.io.store import Store

#: Seeds of the two hashes of an id: one sorts the index, the other confirms a match.
SEEDS = (0x5EED_0001, 0x5EED_0002)
FOLDER = "index"
MANIFEST = "battles.json"
FORMAT = "arena-battle-index"
VERSION = 1
RUN_NAME = re.compile(r"battles-[0-9a-f]{16}\.u64")
#: :func:`arena_cli.io.atomic.atomic_write`'s temporaries of the index's files, left by a run killed as it saved.
TEMPORARY_NAME = re.compile(r"\.(?:battles-[0-9a-f]{16}\.u64|battles\.json)\..+\.tmp")
WORD = np.dtype("<u8")


@dataclass
class Run:
    """Keys and values, sorted by the keys' first word (equal first words in the order they were added); a key's
    ``second`` word and ``values`` are None in a run of 64-bit keys alone (a set). ``saved``: the index file the run
    was read from or written to, and its CRC-32 (None until saved)."""

    first: np.ndarray
    second: np.ndarray | None
    values: np.ndarray | None
    saved: tuple[str, int] | None = None

    def __len__(self) -> int:
        return len(self.first)

    def taken(self, at: np.ndarray) -> Run:
        return Run(self.first[at], *(None if words is None else words[at] for words in (self.second, self.values)))


class SortedRuns:
    """A map from keys of one or two 64-bit words to uint64 values (or a set of 64-bit keys: no second words, no
    values) as sorted runs merged geometrically (see the module's docstring).

    ``combine``: what a key added again gives — ``first`` keeps the value it had, ``sum`` adds the new one."""

    def __init__(self, combine: Literal["first", "sum"], runs: Iterable[Run] = ()):
        self.combine = combine
        self.runs = list(runs)

    def add(self, first: np.ndarray, second: np.ndarray | None = None, values: np.ndarray | None = None) -> None:
        if not len(first):
            return
        self.runs.append(self._combined(Run(first, second, values).taken(np.argsort(first, kind="stable"))))
        while len(self.runs) > 1 and len(self.runs[-2]) <= len(self.runs[-1]):
            self.runs.append(self._merged([self.runs.pop(-2), self.runs.pop()]))

    def get(self, first: np.ndarray, second: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Per key: whether it is held, and its value (0 when not, and in a set)."""
        found = np.zeros(len(first), dtype=bool)
        values = np.zeros(len(first), dtype=np.uint64)
        order = np.argsort(first)  # a binary search per key is several times faster on sorted keys
        first = first[order]
        second = None if second is None else second[order]
        for run in (run for run in self.runs if len(run)):
            at = np.minimum(np.searchsorted(run.first, first), len(run) - 1)
            hit = run.first[at] == first
            if run.second is not None:
                hit &= run.second[at] == second
            value = run.values[at] if run.values is not None else np.zeros(len(first), dtype=np.uint64)
            after = np.minimum(at + 1, len(run) - 1)
            for key in np.flatnonzero((after > at) & (run.first[after] == first)):  # rare: a first word held twice
                hit[key], value[key] = self._look_through(run, at[key], None if second is None else second[key])
            take = hit if self.combine == "sum" else hit & ~found[order]
            values[order[take]] += value[take]
            found[order[hit]] = True
        return found, values

    def _look_through(self, run: Run, start: int, second: np.uint64 | None) -> tuple[bool, np.uint64]:
        """Whether the keys from ``start`` on with its first word hold one with the ``second`` word, and its value
        (the first one's, or their sum)."""
        hit, value, at = False, np.uint64(0), start
        while at < len(run) and run.first[at] == run.first[start]:
            if (run.second is None or run.second[at] == second) and (self.combine == "sum" or not hit):
                hit, value = True, value + (np.uint64(0) if run.values is None else run.values[at])
            at += 1
        return hit, value

    def _combined(self, run: Run) -> Run:
        """``run`` with each key once: consecutive repeats (all of them, bar a first-word collision) combined."""
        repeat = np.zeros(len(run), dtype=bool)
        repeat[1:] = run.first[1:] == run.first[:-1]
        if run.second is not None:
            repeat[1:] &= run.second[1:] == run.second[:-1]
        if not repeat.any():
            return run
        starts = np.flatnonzero(~repeat)
        kept = run.taken(starts)
        if self.combine == "sum" and run.values is not None:
            kept.values = np.add.reduceat(run.values, starts).astype(np.uint64)
        return kept

    def _merged(self, runs: list[Run]) -> Run:
        """One run of two (``runs``, older first, emptied here): a stable sort of two sorted runs is a linear merge,
        the older first among equals. Each word's arrays are let go once merged, so that a merge holds about 40
        bytes per key at most, not 64 (at 100M battles, the difference is 2.4 GB)."""
        firsts = np.concatenate([run.first for run in runs])
        pending = [[run.second for run in runs], [run.values for run in runs]]
        runs.clear()
        order = np.argsort(firsts, kind="stable")
        first = firsts[order]
        del firsts
        words: list[np.ndarray | None] = []
        while pending:
            both = pending.pop(0)
            words.append(None if both[0] is None or both[1] is None else np.concatenate([both[0], both[1]])[order])
            del both
        return self._combined(Run(first, words[0], words[1]))


def id_words(ids: pl.Series) -> tuple[np.ndarray, np.ndarray]:
    """An id's 128-bit fingerprint, as two words."""
    return tuple(ids.hash(seed).to_numpy() for seed in SEEDS)  # type: ignore[return-value]


def content_words(hashes: pl.Series) -> tuple[np.ndarray, np.ndarray]:
    """A content hash (32 hex digits) as two words."""
    return tuple(hashes.str.slice(start, 16).str.to_integer(base=16, dtype=pl.UInt64).to_numpy() for start in (0, 16))  # type: ignore[return-value]


class BattleIndex:
    """Battle id -> content key of every battle stored or accepted so far (see the module's docstring)."""

    def __init__(self, runs: SortedRuns | None = None, parts: dict[str, int] | None = None):
        self.keys = runs if runs is not None else SortedRuns("first")
        self.parts = dict(parts or {})

    def references(self, ids: pl.Series) -> pl.Series:
        """Per id, the content key it has in the index (null: an id not seen)."""
        found, values = self.keys.get(*id_words(ids))
        return pl.select(pl.when(pl.lit(pl.Series(found))).then(pl.lit(pl.Series(values, dtype=pl.UInt64)))).to_series()

    def add(self, battles: pl.DataFrame) -> None:
        """Remember the ids and content keys of ``battles`` (with ``battle_id`` and ``content_hash``). A battle
        without a content hash (a store written by other means) cannot be told from another content: it is left
        out, as duplicate detection has always left it."""
        keyed = battles.select("battle_id", content_key(pl.col("content_hash")).alias("key")).drop_nulls("key")
        self.keys.add(*id_words(keyed["battle_id"]), keyed["key"].to_numpy())

    # -- the store's index -----------------------------------------------------------------------------------
    @classmethod
    def of_store(cls, store: Store) -> BattleIndex:
        """The index of the battles the store's manifest lists: the saved one when it holds no part the manifest
        lacks, completed with the parts it lacks; else rebuilt from the parts."""
        listed = {entry["path"]: entry["rows"] for entry in store.manifest["tables"].get("battles", [])}
        index = _saved(store.root / FOLDER)
        if index is None or any(listed.get(path) != rows for path, rows in index.parts.items()):
            index = cls()
        for path, rows in listed.items():
            if path not in index.parts:
                index.add(store.read_part("battles", path, ["battle_id", "content_hash"]))
                index.parts[path] = rows
        return index

    def save(self, root: Path, manifest: dict[str, Any]) -> None:
        """Write the index of the battles ``manifest`` lists (once it is published, under the writer's lock): the
        runs not saved yet, then ``battles.json`` naming them, then remove the runs it no longer names and the
        temporaries of a run killed as it saved. A failure to write is left to the next ingest, which rebuilds what
        it misses."""
        parts = {entry["path"]: entry["rows"] for entry in manifest["tables"].get("battles", [])}
        if not parts or not set(self.parts) <= set(parts):
            return
        folder = root / FOLDER
        try:
            folder.mkdir(exist_ok=True)
            runs = []
            for run in self.keys.runs:
                if run.saved is None:
                    name = f"battles-{uuid.uuid4().hex[:16]}.u64"
                    atomic_write(folder / name, partial(_write_run, run=run))
                    run.saved = (name, _crc(run))
                runs.append({"file": run.saved[0], "rows": len(run), "crc32": run.saved[1]})
            self.parts = parts
            saved = {"format": FORMAT, "version": VERSION, "hash": _hasher(), "parts": parts, "runs": runs}
            atomic_write_bytes(folder / MANIFEST, (json.dumps(saved, indent=1) + "\n").encode())
            named = {run["file"] for run in runs}
            for file in folder.iterdir():
                if (RUN_NAME.fullmatch(file.name) and file.name not in named) or TEMPORARY_NAME.fullmatch(file.name):
                    file.unlink()
        except OSError:
            return


def content_key(hashes: pl.Expr) -> pl.Expr:
    """The first 64 bits of a content hash: they tell two contents of one id apart as well as 128, in half the
    memory."""
    return hashes.str.slice(0, 16).str.to_integer(base=16, dtype=pl.UInt64, strict=False)


def _hasher() -> str:
    """What made the id hashes: polars keeps its hash stable within a version only."""
    return f"polars {pl.__version__} seeds {SEEDS[0]:x},{SEEDS[1]:x}"


def _write_run(path: Path, run: Run) -> None:
    with open(path, "wb") as handle:
        for words in _words(run):
            words.tofile(handle)


def _crc(run: Run) -> int:
    crc = 0
    for words in _words(run):
        crc = zlib.crc32(words.data, crc)
    return crc


def _words(run: Run) -> list[np.ndarray]:
    """A run of the index as it is saved: its three arrays of words (an index's runs always have all three)."""
    return [np.ascontiguousarray(words, dtype=WORD) for words in (run.first, run.second, run.values) if words is not None]


def _saved(folder: Path) -> BattleIndex | None:
    """The index saved in ``folder``, or None when there is none or it cannot be trusted whole."""
    try:
        saved = json.loads((folder / MANIFEST).read_text())
        if saved.get("format") != FORMAT or saved.get("version") != VERSION or saved.get("hash") != _hasher():
            return None
        runs = []
        for entry in saved["runs"]:
            name, rows = entry["file"], entry["rows"]
            if not RUN_NAME.fullmatch(name) or (folder / name).stat().st_size != 3 * rows * WORD.itemsize:
                return None
            words = np.memmap(folder / name, dtype=WORD, mode="r", shape=(3, rows)) if rows else np.zeros((3, 0), WORD)
            run = Run(words[0], words[1], words[2], (name, entry["crc32"]))
            if _crc(run) != entry["crc32"]:
                return None
            runs.append(run)
        parts = {str(path): int(rows) for path, rows in saved["parts"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return BattleIndex(SortedRuns("first", runs), parts)
