"""The I/O edge of the engine: the battles a fit needs, read from a store or from files, with style features.

Reads only the columns the fit uses: the models and outcome, the cluster column, the user's covariate
columns, and — when a style term needs LMArena features — the keys and texts the feature code needs
(``arena_cli.features.attach_features`` uses cached store features and computes the rest). Battles that
already carry every needed ``<feature>_a``/``<feature>_b`` column (a file with precomputed counts) are used
as they are.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import polars as pl

from arena_cli.io.battles import Loaded
from arena_cli.io.options import BattleFilter, FeatureOptions, Source
from arena_cli.models.options import FitOptions, parse_style
from arena_cli.schema import Frame

if TYPE_CHECKING:
    from arena_cli.models.design import Encoded, Encoder


def _feature_members(term: str) -> tuple[str, ...] | None:
    """The registry features a style term sums, or None for a user covariate."""
    from arena_cli.features.registry import BY_NAME, STYLE_GROUPS

    if term in STYLE_GROUPS:
        return STYLE_GROUPS[term]
    return (term,) if term in BY_NAME else None


def load_fit_battles(
    source: Source,
    filters: BattleFilter | None,
    styles: Sequence[str],
    *,
    cluster: str | None = None,
    features: FeatureOptions = FeatureOptions(),
    extra_columns: Sequence[str] = (),
    reduce: Encoder | None = None,
) -> Loaded[list[Frame]]:
    """Battles for fitting every style spec in ``styles`` (one for ``arena fit``, several for variants), in
    parts: one per store part when nothing needs computing (a store whose counts are complete); else one.

    ``extra_columns``: also read these (a report's summary describes the battles the fit reads).
    ``reduce``: a fit's :class:`~arena_cli.models.design.Encoder`, applied part by part, and batch by batch (or
    within a streaming query) as files are read, so that the per-side counts are never held whole.
    """
    from arena_cli.io.battles import load_battle_parts, load_battles
    from arena_cli.features.registry import side_columns
    from arena_cli.io.store import Store
    from arena_cli.schema import META_COLUMNS

    sources, store = source.files, source.store_path  # a files source still finds cached features in the store
    terms = list(dict.fromkeys(t for spec in styles for t in parse_style(spec)))
    needed = sorted({f for t in terms for f in (_feature_members(t) or ())})
    covariates = [t for t in terms if _feature_members(t) is None]
    columns = ["model_a", "model_b", "outcome", *extra_columns, *([cluster] if cluster else [])]
    columns += [c for t in covariates for c in (t, *side_columns(t))]
    feature_columns = [c for f in needed for c in side_columns(f)]
    computed = False  # whether some counts may have to be computed (or come from the features cache)
    if needed:
        columns += feature_columns
        if sources:
            # features are computed from the files' texts or LMArena metadata (ids are not needed: see below)
            columns += ["conversation_a", "conversation_b", *META_COLUMNS]
            computed = True
        elif not Store.open(store).complete("battles", feature_columns):
            columns += ["battle_id", "content_hash"]  # cached, or computed from the store's own texts
            computed = True
    if not computed:
        return load_battle_parts(source, filters, columns=columns, reduce=reduce)
    if sources and reduce is not None:
        # files usually carry their counts: reduced as they are read, unless some battle lacks them (read again whole)
        def reduce_counted(batch: Frame) -> Frame:
            schema = batch.collect_schema()
            if not all(c in schema and schema[c] != pl.Null for c in feature_columns):
                raise _CountsMissing
            return reduce(batch)

        def counted(encoded: pl.DataFrame) -> None:
            if not reduce.counted(encoded):
                raise _CountsMissing

        try:
            return load_battle_parts(source, filters, columns=columns, reduce=reduce_counted, check=counted)
        except _CountsMissing:
            pass
    loaded = load_battles(source, filters, columns=columns)
    battles = loaded.battles
    if not _complete(battles, feature_columns):
        from arena_cli.features import attach_features

        if sources:  # battles read from files are matched to their computed features by position
            keyed = battles.with_columns(pl.int_range(pl.len()).cast(pl.String).alias("battle_id"))
            battles = attach_features(keyed, recipe=features.recipe, encoding=features.encoding).drop("battle_id")
        else:
            battles = attach_features(battles, store=store, recipe=features.recipe, encoding=features.encoding)
    return Loaded([reduce(battles) if reduce is not None else battles], loaded.warnings)


class _CountsMissing(Exception):
    """Some battles read from files have no per-side counts: they are computed from the texts."""


def _complete(battles: pl.DataFrame, columns: list[str]) -> bool:
    return all(c in battles.columns for c in columns) and battles.select(pl.col(columns).null_count().sum()).sum_horizontal().item() == 0


def load_encoded_battles(
    source: Source, filters: BattleFilter | None, options: FitOptions, features: FeatureOptions = FeatureOptions()
) -> Loaded[Encoded]:
    """The battles for ``fit(_, options)``, reduced to the values the fit uses as they are read (the
    :class:`~arena_cli.models.design.Encoder`): a one-shot fit of a large file never holds its per-side counts."""
    from arena_cli.models.design import Encoded, Encoder

    loaded = load_fit_battles(source, filters, [options.style], cluster=options.cluster, features=features, reduce=Encoder(options))
    return Loaded(Encoded(loaded.battles), loaded.warnings)
