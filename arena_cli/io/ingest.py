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
PART_BYTES = 128 << 20


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
        old_quarantine = store.scan("quarantine", ["source_file", "source_row", "reason", "raw"])
        pending: list[pl.DataFrame] = []
        pending_rows = pending_bytes = 0
        rejected_parts: list[pl.DataFrame] = []
        for summary, accepted, rejected in stream(paths, options, index):
            keep_summary(summaries, summary)
            if on_batch:
                on_batch(summary)
            if rejected.height:
                rejected_parts.append(rejected)
            if accepted.height:
                pending.append(accepted)
                pending_rows += accepted.height
                pending_bytes += int(accepted.estimated_size())
            if pending_rows >= PART_ROWS or pending_bytes >= PART_BYTES:
                tx.add("battles", pl.concat(pending, how="diagonal_relaxed", rechunk=False))
                pending, pending_rows, pending_bytes = [], 0, 0
        rejected_all = pl.concat(rejected_parts) if rejected_parts else empty_quarantine()
        if strict and rejected_all.height:
            counts = Counter(rejected_all["reason"].to_list())
            valid = sum(s.stored for s in summaries)
            refused = RejectedRowsError(
                f"--strict: {rejected_all.height} row(s) rejected ({', '.join(f'{k}: {v}' for k, v in sorted(counts.items()))}); "
                f"the store is unchanged (the {valid:,} valid new row(s) were not stored either)"
            )
            refused.summaries = tuple(replace(s, stored=0) for s in summaries)
            raise refused
        if pending:
            tx.add("battles", pl.concat(pending, how="diagonal_relaxed", rechunk=False))
        identity = ["source_file", "source_row", "reason", "raw"]
        rejected_all = rejected_all.unique(identity, keep="first", maintain_order=True)  # a source given twice
        if old_quarantine is not None and rejected_all.height:  # only the stored rows of these sources' rows are held
            rows = rejected_all.lazy().select("source_file", "source_row").unique()
            again = old_quarantine.join(rows, on=["source_file", "source_row"], how="semi", nulls_equal=True)
            rejected_all = rejected_all.join(again.collect(engine="streaming"), on=identity, how="anti", nulls_equal=True)
        tx.add("quarantine", rejected_all)
        tx.log({"sources": [s.as_dict() for s in summaries]})
    return summaries
