"""The I/O edge of the engine: the battles a fit needs, read from a store or from files, with style features.

Reads only the columns the fit uses: the models, outcome and vote weight, the cluster column, the user's covariate
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
from arena_cli.models.options import FitOptions, StyleTransform, parse_style
from arena_cli.schema import META_COLUMNS, Frame, FrameT

if TYPE_CHECKING:
    from arena_cli.models.design import Encoded, Encoder


def _feature_members(term: str, transform: StyleTransform = StyleTransform.lmarena) -> tuple[str, ...] | None:
    """The registry features a style term is computed from, or None for a user covariate: the features it sums,
    and the tokens each side's density divides by under arena-hard-auto's transform (all but the length)."""
    from arena_cli.features.registry import BY_NAME, STYLE_GROUPS

    members = STYLE_GROUPS[term] if term in STYLE_GROUPS else (term,) if term in BY_NAME else None
    if members is None or transform is StyleTransform.lmarena or members == ("tokens",):
        return members
    return (*members, "tokens")


def load_fit_battles(
    source: Source,
    filters: BattleFilter | None,
    styles: Sequence[str],
    *,
    cluster: str | None = None,
    features: FeatureOptions = FeatureOptions(),
    extra_columns: Sequence[str] = (),
    map_batch: Encoder | None = None,
    transform: StyleTransform = StyleTransform.lmarena,
) -> Loaded[list[Frame]]:
    """Battles for fitting every style spec in ``styles`` (one for ``arena fit``, several for variants), in
    parts: one per store part when nothing needs computing (a store whose counts are complete); else one.
    ``transform``: the style transform (arena-hard-auto's also needs the token counts of markdown terms).

    ``extra_columns``: also read these (a report's summary describes the battles the fit reads).
    ``map_batch``: a fit's :class:`~arena_cli.models.design.Encoder`, applied part by part, and batch by batch (or
    within a streaming query) as files are read, so that the per-side counts are never held whole.
    """
    from arena_cli.features.registry import side_columns
    from arena_cli.io.battles import load_battle_parts
    from arena_cli.io.store import Store
    from arena_cli.models.design import WEIGHT
    sources, store = source.files, source.store_path  # a files source still finds cached features in the store
    terms = list(dict.fromkeys(t for spec in styles for t in parse_style(spec)))
    needed = sorted({f for t in terms for f in (_feature_members(t, transform) or ())})
    covariates = [t for t in terms if _feature_members(t) is None]
    columns = ["model_a", "model_b", "outcome", WEIGHT, *extra_columns, *([cluster] if cluster else [])]
    columns += [c for t in covariates for c in (t, *side_columns(t))]
    feature_columns = [c for f in needed for c in side_columns(f)]
    if needed:
        columns += feature_columns
    if needed and sources:
        # read without the texts first: most logs give every battle's counts (columns, or LMArena's conv_metadata),
        # and the texts are most of their bytes; a battle without counts stops the read (its first batch or slice)
        counts = _FileCounts(feature_columns, features, map_batch, texts=False)
        try:
            loaded = load_battle_parts(source, filters, columns=[*columns, *META_COLUMNS], map_batch=counts)
            if not counts.stale and not (counts.deferred and not _counted(loaded.battles, feature_columns, map_batch)):
                return loaded
        except _TextsNeeded:
            pass
        # some battle has no counts (or they showed only after others were mapped with theirs): read again, with
        # the texts, every battle's counts computed from its texts or LMArena's metadata, batch by batch as read
        columns += ["conversation_a", "conversation_b", *META_COLUMNS]
        return load_battle_parts(source, filters, columns=columns, map_batch=_FileCounts(feature_columns, features, map_batch, given=False))
    opened = Store.open(store) if needed else None
    if opened is None or opened.complete("battles", feature_columns):
        return load_battle_parts(source, filters, columns=columns, map_batch=map_batch)
    meta = _meta_columns(feature_columns) if features.counts == "precomputed" else None
    if meta is not None and opened.complete("battles", list(meta.values())):
        # every battle has LMArena's precomputed counts: read as they are, part by part, nothing joined or computed
        given = [*(c for c in columns if c not in feature_columns), *meta.values()]
        counted = (lambda part: map_batch(_with_meta(part, meta))) if map_batch is not None else (lambda part: _with_meta(part, meta))
        return load_battle_parts(source, filters, columns=given, map_batch=counted)
    # cached, or computed from the store's own texts; a battle without texts takes its conv_metadata counts, whichever
    # --counts asked for (as a file's battle does)
    columns += ["battle_id", "content_hash", *META_COLUMNS]
    from arena_cli.features.cache import CachedCounts

    cached = CachedCounts.of(opened, needed, features.recipe, features.encoding)
    if cached is not None:
        # joined part by part to the cache; only a battle without cached values needs the whole read below
        def joined(part: Frame) -> Frame:
            counted = _preferred(cached(part.lazy()), meta)
            return map_batch(counted) if map_batch is not None else counted

        parts = load_battle_parts(source, filters, columns=[c for c in columns if c not in feature_columns], map_batch=joined)
        collected: list[Frame] = [part.lazy().collect(engine="streaming") for part in parts.battles]
        if _counted(collected, feature_columns, map_batch):
            return Loaded(collected, parts.warnings)
    texts = [c for c in ("conversation_a", "conversation_b") if c not in columns]

    def counted_part(part: Frame) -> Frame:
        """A part with every feature: cached, else computed from its own texts (a pure function of each battle,
        so part by part is the same), never the store's texts whole."""
        battles = part.lazy().collect()
        if not _complete(battles, feature_columns):
            from arena_cli.features import attach_features

            battles = attach_features(battles, store=store, recipe=features.recipe, encoding=features.encoding)
        battles = _preferred(battles.drop(texts, strict=False), meta)
        return map_batch(battles) if map_batch is not None else battles

    return load_battle_parts(source, filters, columns=[*columns, *texts], map_batch=counted_part)


def _meta_columns(feature_columns: list[str]) -> dict[str, str] | None:
    """Per feature column (``<feature>_<side>``), the column of LMArena's precomputed count of it
    (``meta_<feature>_<side>``, from conv_metadata); None when some feature has none (not an LMArena count)."""
    meta = {c: f"meta_{c}" for c in feature_columns}
    return meta if set(meta.values()) <= set(META_COLUMNS) else None


def _has_meta(meta: dict[str, str]) -> pl.Expr:
    """Per battle: whether it has every precomputed count of ``meta``."""
    return pl.all_horizontal(pl.col(m).is_not_null() for m in meta.values())


def _preferred(battles: FrameT, meta: dict[str, str] | None) -> FrameT:
    """``battles`` with each feature column of ``meta`` taken from its precomputed count where a battle has
    every one (``counts=precomputed``), else as it is."""
    if meta is None or not set(meta.values()) <= set(battles.collect_schema().names()):
        return battles
    return battles.with_columns(pl.when(_has_meta(meta)).then(pl.col(m).cast(pl.Int64)).otherwise(pl.col(c)).alias(c) for c, m in meta.items())


def _with_meta(battles: FrameT, meta: dict[str, str]) -> FrameT:
    """``battles`` with each feature column of ``meta`` taken from its precomputed count (as computed features are typed)."""
    return battles.with_columns(pl.col(m).cast(pl.Int64).alias(c) for c, m in meta.items())


class _TextsNeeded(Exception):
    """A battle read without texts has no counts: they are computed from its texts, which were not read."""


class _FileCounts:
    """The row map of battles read from files for a fit with style features, then ``then`` (the fit's encoder).

    The counts the files give (columns, or LMArena's conv_metadata with ``counts=precomputed``) are used if every
    battle has them; else every battle's are computed from its texts (or metadata), as a store's are. A fit first
    reads the files without their texts (``texts=False``: most logs give every battle's counts, and the texts are
    most of their bytes). A battle without counts stops that read at its batch (:class:`_TextsNeeded`), and a gap
    found after battles were mapped with given counts (:attr:`stale`, or, for a streamed read mapped lazily,
    :attr:`deferred` and shown by the result) makes it useless: the files are then read with their texts and
    every battle's counts computed (``given=False``), batch by batch as read, the texts never held whole.
    """

    def __init__(self, columns: list[str], features: FeatureOptions, then: Encoder | None, given: bool | None = None, texts: bool = True):
        self.columns = columns
        self.features = features
        self.then = then
        self.given = given  # whether the files' counts are used; None: not decided yet
        self.texts = texts
        self.stale = False
        self.deferred = False

    def __call__(self, frame: Frame) -> Frame:
        if isinstance(frame, pl.LazyFrame):  # a streamed read: mapped lazily, whether every battle has counts shown by the result
            schema = frame.collect_schema()
            if self.given is not False and self._has_columns(schema):
                self.given = self.deferred = True
                return self._then(frame)
            meta = self._meta(schema)
            if self.given is not False and meta is not None:
                self.given = self.deferred = True
                return self._then(_with_meta(frame, meta))
            frame = frame.collect(engine="streaming")
        if frame.height and self.given is not False:
            if self._has_columns(frame.schema) and not frame.select(pl.any_horizontal(pl.col(self.columns).is_null()).any()).item():
                self.given = True
                return self._then(frame)
            self.stale = bool(self.given)
            self.given = False
        return self._then(self._computed(frame))

    def _has_columns(self, schema: pl.Schema) -> bool:
        return all(c in schema and schema[c] != pl.Null for c in self.columns)

    def _meta(self, schema: pl.Schema) -> dict[str, str] | None:
        """The columns of LMArena's precomputed counts to take (see :func:`_meta_columns`), if they are to be
        taken (``counts=precomputed``) and the battles have them."""
        meta = _meta_columns(self.columns) if self.features.counts == "precomputed" else None
        return meta if meta is not None and set(meta.values()) <= set(schema.names()) else None

    def _then(self, frame: Frame) -> Frame:
        return self.then(frame) if self.then is not None else frame

    def _computed(self, battles: pl.DataFrame) -> pl.DataFrame:
        """``battles`` with every feature computed (a pure function of each battle: batch by batch is the same);
        with ``counts=precomputed``, a battle with LMArena's precomputed counts of every feature takes those."""
        meta = self._meta(battles.schema)
        if meta is not None:
            has = battles.select(_has_meta(meta)).to_series()
            if has.all():
                return _with_meta(battles, meta)
        if not self.texts:
            raise _TextsNeeded
        if meta is None:
            return self._attached(battles)
        rows = battles.with_row_index("__row")
        given = _with_meta(rows.filter(has), meta)
        counted = self._attached(rows.filter(~has)).select(given.columns)
        return pl.concat([given, counted], how="vertical_relaxed").sort("__row").drop("__row")

    def _attached(self, battles: pl.DataFrame) -> pl.DataFrame:
        from arena_cli.features import attach_features

        # battles read from files are matched to their computed features by position
        keyed = battles.with_columns(pl.int_range(pl.len()).cast(pl.String).alias("battle_id"))
        return attach_features(keyed, recipe=self.features.recipe, encoding=self.features.encoding).drop("battle_id")


def _counted(parts: Sequence[Frame], columns: list[str], encoder: Encoder | None) -> bool:
    """Whether every battle read has its counts (encoded: every style term has a value, or is unusable)."""
    frames = [part.lazy().collect() for part in parts]
    if encoder is not None:
        return all(encoder.counted(frame) for frame in frames)
    return all(_complete(frame, columns) for frame in frames)


def _complete(battles: pl.DataFrame, columns: list[str]) -> bool:
    return all(c in battles.columns for c in columns) and battles.select(pl.col(columns).null_count().sum()).sum_horizontal().item() == 0


def load_encoded_battles(
    source: Source, filters: BattleFilter | None, options: FitOptions, features: FeatureOptions = FeatureOptions()
) -> Loaded[Encoded]:
    """The battles for ``fit(_, options)``, reduced to the values the fit uses as they are read (the
    :class:`~arena_cli.models.design.Encoder`): a one-shot fit of a large file never holds its per-side counts."""
    from arena_cli.models.design import TIMESTAMP, Encoded, Encoder

    encoder = Encoder(options)  # an order-dependent method (Elo) reads the votes' timestamps too
    loaded = load_fit_battles(source, filters, [options.style], cluster=options.cluster, features=features,
                              extra_columns=[TIMESTAMP] if encoder.ordered else [], map_batch=encoder,
                              transform=encoder.options.style_transform)
    return Loaded(Encoded(loaded.battles), loaded.warnings)
