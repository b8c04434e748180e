"""Results of the Python API that are not fits or comparisons: a summary of battles, a pairwise matrix, a
report, a feature table, an ingest. Like :class:`~arena_cli.models.result.FitResult`, each carries the
``settings``, ``filters``, ``inputs`` and ``warnings`` that every JSON document shows in ``meta``, and
renders itself with ``to_document()`` (the layouts live in :mod:`arena_cli.render.views`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

if TYPE_CHECKING:
    from arena_cli.comparison import VariantComparison
    from arena_cli.io.ingest import SourceSummary
    from arena_cli.render.document import Document


@dataclass(frozen=True)
class Summary:
    """What a set of battles is: ``overview`` (battles, models, first and last timestamp) and the frames
    ``models``, ``outcomes``, ``languages`` (when known), ``quarantine`` and ``features`` (for a store)."""

    overview: dict[str, Any]
    models: pl.DataFrame
    outcomes: pl.DataFrame
    languages: pl.DataFrame | None = None
    quarantine: pl.DataFrame | None = None
    features: pl.DataFrame | None = None
    settings: dict[str, Any] = field(default_factory=dict)
    filters: dict[str, Any] = field(default_factory=dict)
    inputs: dict[str, Any] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()

    def to_document(self) -> Document:
        from arena_cli.render.views import summary_document

        return summary_document(self)


@dataclass(frozen=True)
class PairwiseMatrix:
    """Every ordered pair that met or was fitted (``pairs``: battles, wins, ties, losses, win_rate,
    predicted), the model order of the matrix, and which value it shows."""

    pairs: pl.DataFrame
    order: tuple[str, ...]
    value: str
    long: bool = False
    settings: dict[str, Any] = field(default_factory=dict)
    filters: dict[str, Any] = field(default_factory=dict)
    inputs: dict[str, Any] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()

    def to_document(self) -> Document:
        from arena_cli.render.views import matrix_document

        return matrix_document(self)


@dataclass(frozen=True)
class Report:
    """A ranking report's parts: the battles' summary, the rank diff, every variant's leaderboard, the pairs."""

    summary: Summary
    comparison: VariantComparison
    leaderboards: dict[str, pl.DataFrame]
    pairs: pl.DataFrame
    source: str
    settings: dict[str, Any] = field(default_factory=dict)
    filters: dict[str, Any] = field(default_factory=dict)
    inputs: dict[str, Any] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()

    def to_document(self) -> Document:
        from arena_cli.render.report import report_document

        return report_document(self)


@dataclass(frozen=True)
class FeatureTable:
    """Style features per battle (``kind="features"``) or the list of features (``kind="feature_list"``)."""

    frame: pl.DataFrame
    kind: str = "features"
    settings: dict[str, Any] = field(default_factory=dict)
    filters: dict[str, Any] = field(default_factory=dict)
    inputs: dict[str, Any] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()

    def to_document(self) -> Document:
        from arena_cli.render.views import feature_document

        return feature_document(self)


@dataclass(frozen=True)
class IngestReport:
    """What an ingest did, per source file: rows read, stored, duplicates, quarantined by reason."""

    store: Path
    summaries: tuple[SourceSummary, ...]
    settings: dict[str, Any] = field(default_factory=dict)
    filters: dict[str, Any] = field(default_factory=dict)
    inputs: dict[str, Any] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()

    def to_document(self) -> Document:
        from arena_cli.render.views import ingest_document

        return ingest_document(self)
