"""Ingest: vote logs in the formats people have -> validated canonical battles in the store, and nothing lost.

Every source row ends up stored, counted as a duplicate, or quarantined with its original content, source, row
and reason. The reading itself (containers, dialects, validation, hashes, duplicates) is in
:mod:`arena_cli.io.reading` and the modules it names; in-memory reads (:func:`read_sources`) share it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from arena_cli.errors import InputError, RejectedRowsError
from arena_cli.io.dialects import check_sources
from arena_cli.io.index import BattleIndex
from arena_cli.io.options import InputOptions
from arena_cli.io.reading import read_sources, stream
from arena_cli.io.results import IngestResult, SourceSummary, keep_summary
from arena_cli.schema import empty_quarantine

if TYPE_CHECKING:
    from arena_cli.io.store import Store

__all__ = ["InputOptions", "IngestResult", "SourceSummary", "check_sources", "ingest_to_store", "read_sources"]

#: Battles are written to the store in parts of about this many rows, or fewer when they hold this many bytes
#: (as polars holds them: long conversations).
PART_ROWS = 500_000
PART_BYTES = 64 << 20


def ingest_to_store(store: Store, paths: list[Path], options: InputOptions | None = None, *, strict: bool = False,
                    lock_wait: float = 60.0, on_batch: Callable[[SourceSummary], None] | None = None) -> list[SourceSummary]:
    """Append the new battles of ``paths`` to ``store`` in one atomic publish (all sources or none).

    Idempotent: battles already stored are counted as duplicates. Quarantined rows are stored too, except
    rows already quarantined earlier (same source, row, reason and content). With ``strict``, any rejected
    row aborts the run and the store is left unchanged; so does a source that cannot be read to its end
    (a truncated or corrupt file).
    """
    try:
        return _ingest(store, paths, options or InputOptions(), strict, lock_wait, on_batch)
    except InputError as error:
        raise InputError(f"{error}; nothing was ingested, the store is unchanged") from None


def _ingest(store: Store, paths: list[Path], options: InputOptions, strict: bool, lock_wait: float,
            on_batch: Callable[[SourceSummary], None] | None) -> list[SourceSummary]:
    summaries: list[SourceSummary] = []
    with store.write(wait=lock_wait) as tx:
        index = BattleIndex.of_store(store)
        tx.on_publish(lambda: index.save(store.root, store.manifest))
        battles = _Parts(lambda frame: tx.add("battles", frame))
        quarantine = _Quarantine(store, lambda frame: tx.add("quarantine", frame), keep=not strict)
        for summary, accepted, rejected in stream(paths, options, index):
            keep_summary(summaries, summary)
            if on_batch:
                on_batch(summary)
            quarantine.add(rejected)
            battles.add(accepted)
        if strict and quarantine.reasons:
            valid = sum(s.stored for s in summaries)
            refused = RejectedRowsError(
                f"--strict: {quarantine.rejected} row(s) rejected ({', '.join(f'{k}: {v}' for k, v in sorted(quarantine.reasons.items()))}); "
                f"the store is unchanged (the {valid:,} valid new row(s) were not stored either)"
            )
            refused.summaries = tuple(replace(s, stored=0) for s in summaries)
            raise refused
        battles.flush()
        quarantine.flush()
        tx.log({"sources": [s.as_dict() for s in summaries]})
    return summaries


class _Parts:
    """Rows staged as parts of a table as they come, a part of about :data:`PART_ROWS` rows (or
    :data:`PART_BYTES`) at a time: an ingest holds one part, whatever the size of its sources."""

    def __init__(self, stage: Callable[[pl.DataFrame], None]):
        self.stage = stage
        self.pending: list[pl.DataFrame] = []
        self.rows = self.bytes = 0

    def add(self, frame: pl.DataFrame) -> None:
        if not frame.height:
            return
        self.pending.append(frame)
        self.rows += frame.height
        self.bytes += int(frame.estimated_size())
        if self.rows >= PART_ROWS or self.bytes >= PART_BYTES:
            self.flush()

    def flush(self) -> None:
        if self.pending:
            self.stage(self.finished(pl.concat(self.pending, how="diagonal_relaxed", rechunk=False)))
        self.pending, self.rows, self.bytes = [], 0, 0

    def finished(self, frame: pl.DataFrame) -> pl.DataFrame:
        return frame


#: What makes two quarantined rows the same one: the same row of the same source, rejected for the same reason.
QUARANTINE_IDENTITY = ["source_file", "source_row", "reason", "raw"]


class _Quarantine(_Parts):
    """The rows an ingest rejects, staged a part at a time (a file of millions of bad rows, with their raw text,
    is never held whole) and counted by reason. A row already quarantined is not stored again: by an earlier
    ingest (the store's quarantine), or earlier in this one (a source given twice; a key of 24 bytes per row
    is kept for that, the raw text by its 64-bit hash). ``keep=False`` (``--strict``) only counts."""

    def __init__(self, store: Store, stage: Callable[[pl.DataFrame], None], *, keep: bool):
        super().__init__(stage)
        self.old = store.scan("quarantine", QUARANTINE_IDENTITY)
        self.keep = keep
        self.reasons: Counter[str] = Counter()
        self.rejected = 0
        self.seen = pl.DataFrame(schema=dict(_seen_keys(empty_quarantine()).schema))

    def add(self, frame: pl.DataFrame) -> None:
        self.reasons.update(frame["reason"].to_list())
        self.rejected += frame.height
        if self.keep:
            super().add(frame)

    def finished(self, frame: pl.DataFrame) -> pl.DataFrame:
        frame = frame.unique(QUARANTINE_IDENTITY, keep="first", maintain_order=True)
        keys = _seen_keys(frame)
        fresh = keys.with_row_index("__at").join(self.seen, on=keys.columns, how="anti", nulls_equal=True)["__at"].sort()
        frame = frame[fresh]
        self.seen = pl.concat([self.seen, keys[fresh]])
        if self.old is not None and frame.height:  # only the stored rows of these sources' rows are held
            rows = frame.lazy().select("source_file", "source_row").unique()
            again = self.old.join(rows, on=["source_file", "source_row"], how="semi", nulls_equal=True)
            frame = frame.join(again.collect(engine="streaming"), on=QUARANTINE_IDENTITY, how="anti", nulls_equal=True)
        return frame


def _seen_keys(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.select(
        pl.col("source_file").cast(pl.Categorical), "source_row", pl.col("reason").cast(pl.Categorical), pl.col("raw").hash().alias("raw")
    )
