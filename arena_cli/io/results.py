"""What a read gives back: per-source counts (:class:`SourceSummary`), the in-memory result (:class:`IngestResult`),
or, from a fast path that cannot finish, the slower path to take instead (:class:`ReadPath`)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import polars as pl


class ReadPath(Enum):
    """How sources are read, fastest first (see :func:`arena_cli.io.reading.choose_read_path`)."""

    STREAMED = "streamed"  # parquet of narrow columns, rows as they are: two polars streaming passes per file
    LEAN = "lean"  # batches, validated, no hashes: for a computation that needs no ids
    FULL = "full"  # batches, validated, hashed, duplicates settled by content


@dataclass
class SourceSummary:
    """What became of one source's rows."""

    source: str
    rows_read: int = 0
    stored: int = 0
    duplicates: int = 0
    quarantined: Counter[str] = field(default_factory=Counter)

    def as_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "rows_read": self.rows_read,
            "stored": self.stored,
            "duplicates": self.duplicates,
            "quarantined": sum(self.quarantined.values()),
            "quarantined_by_reason": dict(sorted(self.quarantined.items())),
        }


@dataclass
class IngestResult:
    """In-memory result of reading sources: canonical battles, quarantined rows, per-source counts."""

    battles: pl.DataFrame
    quarantine: pl.DataFrame
    summaries: list[SourceSummary]
