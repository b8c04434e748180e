"""The pipeline as a Python API: one function per command of the ``arena`` CLI.

Each call reads its battles (vote-log files, a store, or a polars frame), runs one stage of
read → validate → store → features → fit → uncertainty → compare, and returns a result that carries its
``settings``, ``filters``, ``inputs`` and ``warnings``; ``result.to_document()`` renders it (tables, JSON,
markdown, html). Nothing here prints: the CLI shows the warnings and writes the document.

    import arena_cli as arena

    board = arena.fit("votes.jsonl.gz", style="both", ci="none")
    board.leaderboard            # polars frame: rank, model, score, intervals, counts
    diff = arena.rank_diff(store="arena-store", where="language = 'English'")
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

import polars as pl

from arena_cli.errors import InputError, NoDataError, OptionError, RejectedRowsError
from arena_cli.io.battles import Loaded, collect_parts, filter_frame
from arena_cli.io.options import LOCK_WAIT, BattleFilter, FeatureOptions, InputOptions, Source
from arena_cli.models.options import DEFAULT_MIN_BATTLES, DEFAULT_TOP_K, DEFAULT_VARIANTS, MIN_BATTLES, WORKERS, CIMethod, FitOptions
from arena_cli.results import FeatureTable, IngestReport, PairwiseMatrix, Report, Summary
from arena_cli.schema import Frame

if TYPE_CHECKING:
    from arena_cli.comparison import Gate, LeaderboardComparison, VariantComparison
    from arena_cli.features.cache import FeatureUpdate
    from arena_cli.io.repair import StoreCheck, StoreRepair
    from arena_cli.judge_diagnostics import JudgeReport
    from arena_cli.models.result import FitResult

#: Where battles come from: a :class:`Source`, one file, several files, a frame of battles, or None (then
#: ``store=``, else the default store).
Data = Union[Source, str, "os.PathLike[str]", Sequence[Union[str, "os.PathLike[str]"]], pl.DataFrame, None]
#: ``on_progress(done, total)``: called as bootstrap rounds (or feature batches) finish.
Progress = Callable[[int, int], None]

#: Columns a summary of battles describes (``arena info`` and the report's data section).
SUMMARY_COLUMNS = ("model_a", "model_b", "outcome", "weight", "timestamp", "language")
#: Columns pairwise counts and win rates read (``arena matrix`` without predictions).
PAIR_COLUMNS = ("model_a", "model_b", "outcome", "weight")


# -------------------------------------------------------------------------------------------- helpers


def _source(data: Data, store: str | os.PathLike[str] | None, input: InputOptions | None) -> Source:
    source = Source.of(data, store=store)  # type: ignore[arg-type]
    if input is not None and not isinstance(input, InputOptions):
        raise InputError(f"input: an InputOptions (e.g. InputOptions(fmt='csv')), not {type(input).__name__}")
    return dataclasses.replace(source, input=input) if input is not None else source


def _fit_options(options: FitOptions | None, values: Mapping[str, Any]) -> FitOptions:
    """``options`` with keyword overrides (``style="both"``); unknown names are an input error."""
    base = options or FitOptions()
    unknown = sorted(set(values) - {f.name for f in dataclasses.fields(FitOptions)})
    if unknown:
        raise InputError(f"unknown fit option(s): {', '.join(unknown)}")
    chosen = dataclasses.replace(base, **values) if values else base
    chosen.validate()
    return dataclasses.replace(chosen, style=_style_spec(chosen.style))


def _style_spec(style: str) -> str:
    """``style`` as the fit reads it (``"length,"`` -> ``"length"``, ``" length , bold"`` -> ``"length,bold"``), so
    that titles and ``meta`` show the terms fitted, not the text typed; a built-in name stays as it is."""
    from arena_cli.features.registry import VARIANTS
    from arena_cli.models.options import parse_style

    spec = style.strip()
    return spec if spec in VARIANTS else ",".join(parse_style(spec)) or "none"


def _filters(filters: BattleFilter | None, where: str | None) -> BattleFilter:
    filters = filters or BattleFilter()
    return dataclasses.replace(filters, where=where) if where is not None else filters


def _frame_input(frame: pl.DataFrame, filters: BattleFilter) -> tuple[pl.DataFrame, dict[str, Any]]:
    battles = filter_frame(frame, filters)
    if battles.height == 0:
        raise NoDataError("no battles left after filtering")
    return battles, {"files": [], "store": None, "frame_rows": frame.height}


def _fit_settings(settings: Mapping[str, Any], features: FeatureOptions) -> dict[str, Any]:
    """A fit's settings, with the feature recipe and where LMArena counts were taken from when style terms used
    features (``feature_source``: ``precomputed``, conv_metadata counts where a battle has them; ``texts``)."""
    out = dict(settings)
    if settings.get("features"):
        out["feature_recipe"] = features.as_meta()
        out["feature_source"] = features.counts
    return out


# ------------------------------------------------------------------------------------------- loading


def load_battles(
    data: Data = None, *, store: str | os.PathLike[str] | None = None, where: str | None = None,
    filters: BattleFilter | None = None, columns: Sequence[str] | None = None, input: InputOptions | None = None,
) -> Loaded[pl.DataFrame]:
    """The battles of files or a store, validated as ``arena ingest`` validates them (rows it would
    quarantine are skipped and counted in ``warnings``), filtered; ``columns=None`` reads every column."""
    from arena_cli.io.battles import load_battles as load

    filters = _filters(filters, where)
    if isinstance(data, pl.DataFrame):
        frame, _ = _frame_input(data, filters)
        return Loaded(frame.select(columns) if columns is not None else frame)
    return load(_source(data, store, input), filters, columns)


# ----------------------------------------------------------------------------------------------- fit


def fit(
    data: Data = None, options: FitOptions | None = None, *, store: str | os.PathLike[str] | None = None,
    where: str | None = None, filters: BattleFilter | None = None, features: FeatureOptions | None = None,
    input: InputOptions | None = None, on_progress: Progress | None = None, **fit_options: Any,
) -> FitResult:
    """One leaderboard (``arena fit``): Bradley-Terry scores with intervals and ranks, and style coefficients
    with ``style=``. ``fit_options`` override fields of ``options`` (:class:`FitOptions`)."""
    from arena_cli.models.engine import fit as fit_battles
    from arena_cli.models.inputs import load_encoded_battles

    chosen = _fit_options(options, fit_options)
    filters, features = _filters(filters, where), features or FeatureOptions()
    if isinstance(data, pl.DataFrame):
        frame, inputs = _frame_input(data, filters)
        result = fit_battles(frame, chosen, on_progress=on_progress)
        warnings: tuple[str, ...] = ()
    else:
        source = _source(data, store, input)
        loaded = load_encoded_battles(source, filters, chosen, features)
        with _told_on_no_data(loaded.warnings):
            result = fit_battles(loaded.battles, chosen, on_progress=on_progress)
        warnings, inputs = loaded.warnings, source.as_meta()
    return dataclasses.replace(
        result, settings=_fit_settings(result.settings, features), filters=filters.as_meta(),
        inputs=inputs, warnings=(*warnings, *result.warnings),
    )


def _variant_specs(variants: str | Sequence[str] | Mapping[str, str], baseline: str, sort: str | None = None) -> dict[str, str]:
    """Variant name -> style spec, from ``"none,lb=length+bold"``, a list of such items, or a mapping as it is;
    ``baseline`` and ``sort`` checked against them before any battle is read (an :class:`OptionError`)."""
    from arena_cli.comparison import check_variant_choice, parse_variants

    if isinstance(variants, Mapping):
        specs = dict(variants)
    else:
        specs = parse_variants(variants if isinstance(variants, str) else ",".join(variants))
    check_variant_choice(specs, baseline, sort)
    return specs


@contextmanager
def _told_on_no_data(warnings: Sequence[str]) -> Iterator[None]:
    """A fit that finds nothing to rank says what the read left out (rows skipped, ids that name prompts): the
    read's warnings, which the result would have carried, are why."""
    try:
        yield
    except NoDataError as error:
        if not warnings:
            raise
        raise NoDataError(f"{error}; the read said: {'; '.join(warnings)}") from None


def rank_diff(
    data: Data = None, variants: str | Sequence[str] | Mapping[str, str] = DEFAULT_VARIANTS, *, baseline: str = "none",
    sort: str | None = None, top_k: int = DEFAULT_TOP_K, options: FitOptions | None = None,
    store: str | os.PathLike[str] | None = None, where: str | None = None, filters: BattleFilter | None = None,
    features: FeatureOptions | None = None, input: InputOptions | None = None, on_progress: Progress | None = None,
    **fit_options: Any,
) -> VariantComparison:
    """The rank-diff table (``arena diff``): every style-control variant fitted on the same battles with the
    same resamples, each model's rank and score per variant and its rank change against ``baseline``."""
    from arena_cli.models.inputs import load_fit_battles

    specs = _variant_specs(variants, baseline, sort)
    chosen = _fit_options(options, fit_options)
    filters, features = _filters(filters, where), features or FeatureOptions()
    if isinstance(data, pl.DataFrame):
        frame, inputs = _frame_input(data, filters)
        return _rank_diff_of([frame], specs, baseline, sort, top_k, chosen, features, filters, inputs, (), on_progress)
    source = _source(data, store, input)
    loaded = load_fit_battles(source, filters, list(specs.values()), cluster=chosen.cluster, features=features, transform=chosen.resolved().style_transform)
    with _told_on_no_data(loaded.warnings):
        return _rank_diff_of(loaded.battles, specs, baseline, sort, top_k, chosen, features, filters, source.as_meta(), loaded.warnings, on_progress)


def _rank_diff_of(
    battles: list[Frame], specs: dict[str, str], baseline: str, sort: str | None, top_k: int,
    options: FitOptions, features: FeatureOptions, filters: BattleFilter, inputs: dict[str, Any],
    warnings: tuple[str, ...], on_progress: Progress | None,
) -> VariantComparison:
    from arena_cli.comparison import diff_variants

    comparison = diff_variants(battles, specs, options, baseline, sort, top_k, on_progress=on_progress)
    uses_features = any(r.settings.get("features") for r in comparison.results.values())
    settings = {"variants": dict(specs), "baseline": baseline, "sort": sort, "top_k": top_k, **comparison.settings}
    if uses_features:
        settings["feature_recipe"] = features.as_meta()
    fit_warnings = tuple(m for r in comparison.results.values() for m in r.warnings)
    return dataclasses.replace(
        comparison, settings=settings, filters=filters.as_meta(), inputs=inputs,
        warnings=tuple(dict.fromkeys((*warnings, *fit_warnings))),
    )


# ------------------------------------------------------------------------------------------- compare


def compare(
    old: str | os.PathLike[str] | FitResult, new: str | os.PathLike[str] | FitResult, *, fail_on: Iterable[str | Gate] = (),
    old_where: str | None = None, new_where: str | None = None, options: FitOptions | None = None,
    filters: BattleFilter | None = None, features: FeatureOptions | None = None,
    on_progress: Progress | None = None, **fit_options: Any,
) -> LeaderboardComparison:
    """What changed between two leaderboards (``arena compare``): each side an ``arena fit -o`` file, a
    store (fitted here with ``options``, sliced by its ``*_where`` and the model lists of ``filters``), or a
    :class:`FitResult`; ``fail_on`` conditions are evaluated (``result.failed``)."""
    from arena_cli.comparison import Gate, ScoreDraws, compare_leaderboards, parse_gate, settings_mismatch
    from arena_cli.models.result import FitResult

    gates = [g if isinstance(g, Gate) else parse_gate(g) for g in ([fail_on] if isinstance(fail_on, (str, Gate)) else fail_on)]
    for side in (old, new):
        if not isinstance(side, (str, os.PathLike, FitResult)):
            raise InputError(f"compare takes leaderboard files, stores or FitResults, not {type(side).__name__} (fit a frame with fit() first)")
    chosen = _fit_options(options, fit_options)
    filters, features = filters or BattleFilter(), features or FeatureOptions()
    if filters.where is not None:
        raise InputError("compare takes a --where per side: old_where, new_where")
    stores = [not isinstance(s, FitResult) and Path(s).is_dir() for s in (old, new)]
    if (filters.models or filters.exclude_models) and not any(stores):
        raise InputError("--models/--exclude-models apply to a side that is a store directory; both sides are leaderboard files")
    sides: list[tuple[pl.DataFrame, dict[str, Any], dict[str, Any], dict[str, Any], ScoreDraws | None]] = []
    warnings: list[str] = []
    for name, side, where, option, is_store in (("old", old, old_where, "--old-where", stores[0]), ("new", new, new_where, "--new-where", stores[1])):
        side_filter = dataclasses.replace(filters, where=where, where_option=option)
        if isinstance(side, FitResult):
            result = side
        elif is_store:
            try:
                result = fit(Source(store=Path(side)), chosen, filters=side_filter, features=features, on_progress=on_progress)
            except NoDataError as error:  # the same filters may leave battles on one side and none on the other: say which
                raise NoDataError(f"{name} side, {_label(side, where)}: {error}") from None
        else:
            if where:
                raise InputError(f"{option} applies to a store directory; {side} is a leaderboard file")
            from arena_cli.comparison import load_leaderboard

            board, settings = load_leaderboard(Path(side))
            sides.append((board, settings, {"files": [str(side)], "store": None}, side_filter.as_meta(), None))
            continue
        warnings.extend(result.warnings)
        inputs = result.inputs or {"files": [], "store": None}
        sides.append((result.leaderboard, {**result.settings, "where": where}, inputs, side_filter.as_meta(), ScoreDraws.of(result)))
    (old_board, old_settings, old_inputs, old_filters, old_draws), (new_board, new_settings, new_inputs, new_filters, new_draws) = sides
    differing = settings_mismatch(old_settings, new_settings)
    if differing:
        warnings.append(f"the two leaderboards were fitted with different {', '.join(differing)}: their scores may not be comparable")
    labels = [_label(side, where) for side, where in ((old, old_where), (new, new_where))]
    comparison = compare_leaderboards(
        old_board, new_board, gates, labels[0], labels[1], {"old": old_settings, "new": new_settings}, old_draws, new_draws,
    )
    return dataclasses.replace(
        comparison, filters={"old": old_filters, "new": new_filters}, inputs={"old": old_inputs, "new": new_inputs},
        warnings=tuple(dict.fromkeys(warnings)),
    )


def _label(side: object, where: str | None) -> str:
    from arena_cli.models.result import FitResult

    text = "fit" if isinstance(side, FitResult) else str(side)
    return text + (f" [{where}]" if where else "")


# -------------------------------------------------------------------------------------- report, matrix


def report(
    data: Data = None, variants: str | Sequence[str] | Mapping[str, str] = DEFAULT_VARIANTS, *, baseline: str = "none",
    top_k: int = DEFAULT_TOP_K, options: FitOptions | None = None, store: str | os.PathLike[str] | None = None,
    where: str | None = None, filters: BattleFilter | None = None, features: FeatureOptions | None = None,
    input: InputOptions | None = None, on_progress: Progress | None = None, **fit_options: Any,
) -> Report:
    """A ranking report (``arena report``): a summary of the battles, the rank diff across ``variants``,
    style coefficients, highlights, every variant's leaderboard and the plots. The battles are read once."""
    from arena_cli.info import store_context, summarize
    from arena_cli.pairwise import pairwise_counts
    from arena_cli.models.inputs import load_fit_battles

    specs = _variant_specs(variants, baseline)
    chosen = _fit_options(options, fit_options)
    filters, features = _filters(filters, where), features or FeatureOptions()
    context: tuple[pl.DataFrame | None, pl.DataFrame | None] = (None, None)
    if isinstance(data, pl.DataFrame):
        battles, inputs = _frame_input(data, filters)
        warnings: tuple[str, ...] = ()
        label = f"{data.height:,} battles"
    else:
        source = _source(data, store, input)
        loaded = load_fit_battles(
            source, filters, list(specs.values()), cluster=chosen.cluster, features=features, extra_columns=SUMMARY_COLUMNS,
            transform=chosen.resolved().style_transform,
        )
        battles = collect_parts(loaded.battles)
        if battles.height == 0:
            raise NoDataError("no battles left after filtering")
        warnings, inputs, label = loaded.warnings, source.as_meta(), source.label()
        if not source.files:
            context = store_context(source.store_path)
    with _told_on_no_data(warnings):
        comparison = _rank_diff_of([battles], specs, baseline, None, top_k, chosen, features, filters, inputs, warnings, on_progress)
    summary = summarize(battles.select([c for c in SUMMARY_COLUMNS if c in battles.columns]), *context)
    return Report(
        summary=summary, comparison=comparison, leaderboards={name: r.leaderboard for name, r in comparison.results.items()},
        pairs=pairwise_counts(battles), source=label,
        settings=comparison.settings, filters=comparison.filters, inputs=inputs, warnings=comparison.warnings,
    )


def matrix(
    data: Data = None, *, value: str = "win_rate", long: bool = False, options: FitOptions | None = None,
    store: str | os.PathLike[str] | None = None, where: str | None = None, filters: BattleFilter | None = None,
    features: FeatureOptions | None = None, input: InputOptions | None = None, **fit_options: Any,
) -> PairwiseMatrix:
    """Pairwise battles, win rates and predicted win probabilities (``arena matrix``): ``value`` is what the
    model × model matrix shows (``battles``, ``win_rate``, ``predicted``), or every pair with ``long``.

    Only predictions (``predicted``, ``long``) need a fit, in leaderboard order; counts and win rates are the
    battles as they are, by overall win rate, so a fit that can rank nothing (too few battles) cannot stop them."""
    from arena_cli.pairwise import VALUES, model_order, pairwise_counts, with_predictions
    from arena_cli.models.engine import fit as fit_battles
    from arena_cli.models.inputs import load_fit_battles

    value = value.replace("-", "_")  # (the command line's spelling, win-rate, too)
    if value not in VALUES:
        raise OptionError("--value", f"{value!r}: one of {', '.join(VALUES)}")
    chosen = dataclasses.replace(_fit_options(options, fit_options), ci=CIMethod.none)
    filters, features = _filters(filters, where), features or FeatureOptions()
    predicts = long or value == "predicted"
    warnings: tuple[str, ...] = ()
    if isinstance(data, pl.DataFrame):
        battles, inputs = _frame_input(data, filters)
    elif predicts:
        source = _source(data, store, input)
        loaded = load_fit_battles(source, filters, [chosen.style], features=features, transform=chosen.resolved().style_transform)
        battles, warnings, inputs = collect_parts(loaded.battles), loaded.warnings, source.as_meta()
    else:
        source = _source(data, store, input)
        counted = load_battles(source, filters=filters, columns=PAIR_COLUMNS)
        battles, warnings, inputs = counted.battles, counted.warnings, source.as_meta()
    if not predicts:
        counts = pairwise_counts(battles)
        if not counts.height:
            with _told_on_no_data(warnings):
                raise NoDataError("no battles left to count: every vote weighs 0" if battles.height else "no battles left to count")
        unused = _unused_fit_options(chosen)
        said = (f"fit options ({', '.join(unused)}) shape only the predictions (value predicted, or long): the {value.replace('_', ' ')} matrix "
                "counts the battles as they are",) if unused else ()
        order = tuple(model_order(counts))  # (from the sums as they are: rounded, tiny weights would tie at 0)
        return PairwiseMatrix(
            pairs=_shown_counts(counts), order=order, value=value, long=False,
            settings={"value": value, "layout": "wide", "n_battles": int(counts["battles"].sum()) // 2, "n_models": len(order)},
            filters=filters.as_meta(), inputs=inputs, warnings=(*warnings, *said),
        )
    with _told_on_no_data(warnings):
        result = fit_battles(battles, chosen)
    pairs = with_predictions(_shown_counts(pairwise_counts(battles)), result)
    settings = {"value": value, "layout": "long" if long else "wide", **_fit_settings(result.settings, features)}
    return PairwiseMatrix(
        pairs=pairs, order=tuple(model_order(pairs, result)), value=value, long=long, settings=settings,
        filters=filters.as_meta(), inputs=inputs, warnings=(*warnings, *result.warnings),
    )


def _shown_counts(pairs: pl.DataFrame) -> pl.DataFrame:
    """:func:`~arena_cli.pairwise.pairwise_counts`' sums of vote weights rounded as ``arena info``'s are (their win
    rates were taken from the sums as they are)."""
    from arena_cli.info import rounded_weights

    return rounded_weights(pairs, ["weight", "wins", "ties", "losses"])


def _unused_fit_options(options: FitOptions) -> list[str]:
    """The fit options set otherwise than by default, where no fit is made (how fast a fit would run aside)."""
    default = dataclasses.replace(FitOptions(), ci=options.ci, workers=options.workers)
    return [f.name for f in dataclasses.fields(FitOptions) if getattr(options, f.name) != getattr(default, f.name)]


# ------------------------------------------------------------------------------------- data and store


def describe(
    data: Data = None, *, store: str | os.PathLike[str] | None = None, where: str | None = None,
    filters: BattleFilter | None = None, input: InputOptions | None = None,
) -> Summary:
    """What the battles are (``arena info``): counts, models, dates, outcomes, languages and, for a store,
    its quarantine and cached features."""
    from arena_cli.info import store_context, summarize

    filters = _filters(filters, where)
    if isinstance(data, pl.DataFrame):
        frame, inputs = _frame_input(data, filters)
        summary = summarize(frame)
        return dataclasses.replace(summary, filters=filters.as_meta(), inputs=inputs)
    source = _source(data, store, input)
    loaded = _summary_battles(source, filters)
    context = (None, None) if source.files else store_context(source.store_path)
    return dataclasses.replace(summarize(loaded.battles, *context), filters=filters.as_meta(), inputs=source.as_meta(), warnings=loaded.warnings)


def judges(
    data: Data = None, *, store: str | os.PathLike[str] | None = None, where: str | None = None,
    filters: BattleFilter | None = None, input: InputOptions | None = None, min_battles: int = DEFAULT_MIN_BATTLES,
) -> JudgeReport:
    """Diagnostics of LLM judges (``arena judges``): each judge's position consistency on swapped pairs (the same
    two answers shown in both orders) and the first position's share of wins; each judge's plain Bradley-Terry
    leaderboard (models with fewer than ``min_battles`` votes of that judge left out) and the rank correlations
    between judges."""
    from arena_cli.judge_diagnostics import JUDGE_COLUMNS, JudgeReport, judge_agreement, judge_scores, position_consistency

    MIN_BATTLES.check(min_battles)
    filters = _filters(filters, where)
    if isinstance(data, pl.DataFrame):
        frame, inputs = _frame_input(data, filters)
        battles = frame.select(pl.col(c) if c in frame.columns else pl.lit(None, dtype=pl.String).alias(c) for c in JUDGE_COLUMNS)
        read: tuple[str, ...] = ()
    else:
        source = _source(data, store, input)
        loaded = load_battles(source, filters=filters, columns=JUDGE_COLUMNS)
        battles, inputs, read = loaded.battles, source.as_meta(), loaded.warnings
    from arena_cli.versions import library_versions

    scores, fitted = judge_scores(battles, min_battles)
    return JudgeReport(  # per-judge fits: their versions, whether or not a judge had enough votes for one
        judges=position_consistency(battles), agreement=judge_agreement(scores), scores=scores,
        settings={"min_battles": min_battles, "versions": library_versions()}, filters=filters.as_meta(),
        inputs=inputs, warnings=(*read, *fitted),
    )


def _summary_battles(source: Source, filters: BattleFilter) -> Loaded[pl.DataFrame]:
    """The columns a summary describes (and those ``filters`` name)."""
    from arena_cli.io.battles import load_battles as load_frame

    return load_frame(source, filters, columns=SUMMARY_COLUMNS)


def ingest(
    files: str | os.PathLike[str] | Sequence[str | os.PathLike[str]], store: str | os.PathLike[str] | None = None, *, input: InputOptions | None = None,
    strict: bool = False, lock_wait: float = 60.0, on_source: Callable[[str, int], None] | None = None,
) -> IngestReport:
    """Validate vote logs and add their new battles to the store (``arena ingest``); rejected rows go to its
    quarantine with their reason. One atomic publish: all files or none. ``on_source(file, rows read)``
    reports progress."""
    from arena_cli.io.ingest import check_sources, ingest_to_store
    from arena_cli.io.results import SourceSummary, source_notes
    from arena_cli.io.store import Store

    LOCK_WAIT.check(lock_wait)
    source = _source(files, store, input)
    paths = list(source.files)
    check_sources(paths, source.input)  # a typo in a path or option must not leave an empty store behind
    _refuse_files_in_store(paths, source.store_path)
    target = Store.open(source.store_path, create=True)

    def report(summaries: Sequence[SourceSummary], *notes: str) -> IngestReport:
        return IngestReport(
            store=target.root, summaries=tuple(summaries), settings={"strict": strict, **source.input.as_meta()},
            inputs={"files": [str(p) for p in paths], "store": str(target.root)}, warnings=(*notes, *source_notes(summaries, quarantined=True)),
        )

    try:
        summaries = ingest_to_store(
            target, paths, source.input, strict=strict, lock_wait=lock_wait,
            on_batch=(lambda s: on_source(s.source, s.rows_read)) if on_source else None,
        )
    except RejectedRowsError as error:
        error.report = report(error.summaries, str(error))
        raise
    return report(summaries)


def _refuse_files_in_store(paths: Sequence[Path], store: Path) -> None:
    """A file in a folder of the store's tables (or of its duplicate index) is the store's to manage (a part not in
    its manifest is moved to lost+found, a staging file's name is removed as a leftover): never read as a source,
    so never moved or removed as one. Any other file under the store's directory is read (a log kept there, a part
    set aside in lost+found to bring its battles back)."""
    from arena_cli.io.files import is_stdin
    from arena_cli.io.index import FOLDER as INDEX
    from arena_cli.io.manifest import TABLE_FOLDERS

    managed = [store.resolve() / folder for folder in (*TABLE_FOLDERS, INDEX)]
    for path in paths:
        if not is_stdin(path) and any(folder in path.resolve().parents for folder in managed):
            raise InputError(f"{path}: a file in a folder of the store {store}, whose files the store manages: copy it out of the store, then ingest the copy")


def compute_features(
    data: Data = None, *, store: str | os.PathLike[str] | None = None, features: FeatureOptions | None = None,
    input: InputOptions | None = None, workers: int | None = None, on_progress: Progress | None = None,
) -> FeatureTable:
    """Style features of every battle and side (``arena features FILES``): tokens, markdown counts,
    structure, densities. With ``store=`` cached features are used and only the rest computed."""
    from arena_cli.features import attach_features, compute_features as compute
    from arena_cli.features.cache import FEATURE_COLUMNS
    from arena_cli.features.tokenizer import canonical_encoding

    WORKERS.check(workers)
    features = features or FeatureOptions()
    if isinstance(data, pl.DataFrame):
        battles: pl.DataFrame = data
        inputs: dict[str, Any] = {"files": [], "store": None, "frame_rows": data.height}
        warnings: tuple[str, ...] = ()
    else:
        source = _source(data, None, input)
        loaded = load_battles(source)
        battles, inputs, warnings = loaded.battles, source.as_meta(), loaded.warnings
    if store is not None:  # the store's cached features are read: it is an input too
        inputs = {**inputs, "store": str(Path(store))}
        table = attach_features(battles, store=store, recipe=features.recipe, encoding=features.encoding, workers=workers).select("battle_id", *FEATURE_COLUMNS)
    else:
        table = compute(battles, features.recipe, features.encoding, workers, on_batch=_BatchProgress(on_progress, battles.height))
    settings = {"recipe": features.recipe, "encoding": canonical_encoding(features.encoding), **_feature_versions()}
    return FeatureTable(table, settings=settings, inputs=inputs, warnings=warnings)


class _BatchProgress:
    """Feature code reports batches done; the API reports ``on_progress(done, total)``."""

    def __init__(self, on_progress: Progress | None, total: int = 0):
        self.on_progress, self.total, self.done = on_progress, total, 0

    def start(self, total: int) -> None:
        self.total = total

    def __call__(self, rows: int) -> None:
        self.done += rows
        if self.on_progress:
            self.on_progress(self.done, self.total)


def _feature_versions() -> dict[str, Any]:
    from arena_cli.features.registry import feature_versions

    return {"feature_versions": feature_versions()}


def update_features(
    store: str | os.PathLike[str] | None = None, *, features: FeatureOptions | None = None, workers: int | None = None,
    lock_wait: float = 60.0, on_progress: Progress | None = None,
) -> FeatureUpdate:
    """Compute and cache in the store the features of every battle that has none for the recipe and
    encoding (``arena features``); an interrupted run keeps the parts it finished."""
    from arena_cli.features import update_store_features

    WORKERS.check(workers)
    LOCK_WAIT.check(lock_wait)
    features = features or FeatureOptions()
    progress = _BatchProgress(on_progress)
    return update_store_features(
        Source(store=Path(store) if store is not None else None).store_path, features.recipe, features.encoding,
        workers=workers, lock_wait=lock_wait, on_start=progress.start, on_batch=progress,
    )


def stored_features(store: str | os.PathLike[str] | None = None, *, features: FeatureOptions | None = None) -> FeatureTable:
    """The features cached in a store for a recipe and encoding (what ``arena features -o`` exports)."""
    from arena_cli.features.cache import read_store_features
    from arena_cli.features.tokenizer import canonical_encoding
    from arena_cli.io.store import Store

    features = features or FeatureOptions()
    opened = Store.open(Source(store=Path(store) if store is not None else None).store_path)
    encoding = canonical_encoding(features.encoding)
    table = read_store_features(opened, features.recipe, encoding)
    settings = {"recipe": features.recipe, "encoding": encoding, **_feature_versions()}
    return FeatureTable(table, settings=settings, inputs={"files": [], "store": str(opened.root)})


def feature_list() -> FeatureTable:
    """Every style feature with its kind, style group and description (``arena features --list``)."""
    from arena_cli.features.registry import FEATURES, STYLE_GROUPS

    group_of = {name: group for group, names in STYLE_GROUPS.items() for name in names}
    frame = pl.DataFrame({
        "feature": [f.name for f in FEATURES],
        "kind": [f.kind for f in FEATURES],
        "style_group": [group_of.get(f.name, "") for f in FEATURES],
        "description": [f.description for f in FEATURES],
    })
    return FeatureTable(frame, kind="feature_list", settings=_feature_versions())


def check_store(store: str | os.PathLike[str] | None = None, *, deep: bool = False) -> StoreCheck:
    """Every problem of a store (``arena store check``): its manifest, each listed part (footers, schemas,
    row counts; with ``deep``, its data read whole) and the files it does not list. ``result.healthy`` is False
    when it needs a repair."""
    from arena_cli.io.repair import check_store as check

    return check(Source(store=Path(store) if store is not None else None).store_path, deep=deep)


def repair_store(
    store: str | os.PathLike[str] | None = None, *, dry_run: bool = False, adopt_unpublished: bool = False, lock_wait: float = 60.0,
) -> StoreRepair:
    """Make a store consistent (``arena store repair``): rebuild its manifest from the parts on disk, keeping
    what is readable and was published, moving the rest to ``STORE/lost+found/``; nothing is deleted."""
    from arena_cli.io.repair import repair_store as repair

    store_path = Source(store=Path(store) if store is not None else None).store_path
    return repair(store_path, lock_wait=lock_wait, dry_run=dry_run, adopt_unpublished=adopt_unpublished)


def export(
    output: str | os.PathLike[str], *, store: str | os.PathLike[str] | None = None, table: str = "battles",
    fmt: str | None = None, where: str | None = None,
) -> int | None:
    """Write the store's battles (or its quarantine) to one parquet, JSONL or CSV file, atomically; returns
    the number of rows, None when ``output`` is a device or pipe whose reader stopped reading before the end
    (``arena export``)."""
    from arena_cli.io.export import export_table

    return export_table(Source(store=Path(store) if store is not None else None).store_path, table, Path(output), fmt, where)
