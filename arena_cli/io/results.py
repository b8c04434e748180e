"""What a read gives back: per-source counts (:class:`SourceSummary`), the in-memory result (:class:`IngestResult`),
or, from a fast path that cannot finish, the slower path to take instead (:class:`ReadPath`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import polars as pl


class ReadPath(Enum):
    """How sources are read, fastest first (see :func:`arena_cli.io.reading.choose_read_path`)."""

    STREAMED = "streamed"  # parquet of narrow columns, rows as they are: a slice of rows at a time, each read once
    STREAMED_JSON = "streamed-json"  # JSON lines, or a JSON array split into them: the fields needed, parsed once per block
    LEAN = "lean"  # batches, validated, no hashes: for a computation that needs no ids
    FULL = "full"  # batches, validated, hashed, duplicates settled by content


@dataclass
class SourceSummary:
    """What became of one source's rows: ``rows_read`` = ``stored`` + ``duplicates`` + quarantined. ``id_column``:
    the source column its battle ids came from; ``reused_ids``: rows quarantined as conflicting duplicates of
    another row of the same source (see :func:`source_notes`)."""

    source: str
    rows_read: int = 0
    stored: int = 0
    duplicates: int = 0
    quarantined: Counter[str] = field(default_factory=Counter)
    id_column: str | None = None
    reused_ids: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "rows_read": self.rows_read,
            "stored": self.stored,
            "duplicates": self.duplicates,
            "quarantined": sum(self.quarantined.values()),
            "quarantined_by_reason": dict(sorted(self.quarantined.items())),
        }


def keep_summary(summaries: list[SourceSummary], summary: SourceSummary) -> None:
    """Add ``summary`` to ``summaries`` unless it is the last one kept: a source's batches all report the one
    summary of their source, and a path given twice is two sources, each with its own counts."""
    if not summaries or summaries[-1] is not summary:
        summaries.append(summary)


@dataclass
class IngestResult:
    """In-memory result of reading sources: canonical battles, quarantined rows, per-source counts."""

    battles: pl.DataFrame
    quarantine: pl.DataFrame
    summaries: list[SourceSummary]


#: A source in which more than this share of the rows reuse the id of another of its rows, with other content,
#: has ids that name something else than votes: in a vote log an id is one vote, so that never happens (bar a
#: damaged row or two), while in a log keyed by prompt (arena-hard-auto's battles, an AlpacaEval conversion)
#: nearly every row reuses the id of the first answer to its prompt.
REUSED_ID_SHARE = 0.05


def source_notes(summaries: Sequence[SourceSummary], quarantined: bool) -> tuple[str, ...]:
    """What a reader should know of its sources beyond the counts: empty ones, and ids that name prompts.
    ``quarantined``: the rows not used were kept in a store's quarantine (an ingest), else only skipped."""
    kept = "quarantined as conflicting duplicates (reason conflicting_duplicate)" if quarantined else "skipped as conflicting duplicates"
    notes = []
    for s in summaries:
        if s.rows_read == 0:
            notes.append(f"{s.source}: no rows (an empty log)")
        elif s.id_column is not None and s.reused_ids > REUSED_ID_SHARE * s.rows_read:
            notes.append(
                f"{s.source}: {s.reused_ids:,} of {s.rows_read:,} rows share their {s.id_column} with another row of the file "
                f"but not its content, and were {kept}: {s.id_column} probably names prompts, "
                f"not votes. If every row is a vote, read it with --map battle_id= (ids from each row's content)"
            )
    return tuple(notes)


def dropped_rows(summaries: list[SourceSummary], quarantine: pl.DataFrame) -> tuple[str, ...]:
    """Every row a read did not use, counted: exact duplicates, and the rows it skipped per reason (with the
    first one's detail), for reads that keep no quarantine."""
    messages = []
    duplicates = sum(s.duplicates for s in summaries)
    if duplicates:
        messages.append(f"{duplicates:,} exact duplicate row(s) dropped (the battle id and content of an earlier row)")
    if quarantine.height:
        reasons = quarantine["reason"].value_counts(sort=True)
        first = quarantine.row(0, named=True)
        messages.append(
            f"{quarantine.height:,} row(s) skipped: " + ", ".join(f"{r} {n:,}" for r, n in reasons.iter_rows())
            + f" (first: {first['source_file']} row {first['source_row']}, {first['detail']}; `arena ingest` keeps them in a quarantine)"
        )
    return tuple(messages)


def nothing_read(summaries: list[SourceSummary], quarantine: pl.DataFrame) -> str:
    """Why files gave no battles at all: empty, or every row dropped."""
    files = ", ".join(s.source for s in summaries)
    rows = sum(s.rows_read for s in summaries)
    if not rows:
        return f"no battles: {files} {'has' if len(summaries) == 1 else 'have'} no rows"
    return f"no battles: none of the {rows:,} row(s) of {files} is usable; " + "; ".join(dropped_rows(summaries, quarantine))
