"""Leaderboards side by side: style-control variants of one fit (``arena diff``) and two saved or freshly fitted
leaderboards (``arena compare``), with the checks a pipeline gates on.

A rank change is reported as ``baseline rank - new rank``: positive means the model climbs. A shift is
*significant* when the two rank intervals do not overlap at all (the interval "moved entirely"). The top k are
the k highest-scoring models (leaderboard order), whatever their rank intervals.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
import dataclasses
import math
from dataclasses import dataclass, field
from functools import reduce
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from arena_cli.bounds import Bounds
from arena_cli.errors import InputError, OptionError
from arena_cli.features.registry import VARIANTS
from arena_cli.models.options import DEFAULT_TOP_K, DEFAULT_VARIANTS, POSITION, TOP_K
from arena_cli.models.result import WIN_RATE_COLUMNS

if TYPE_CHECKING:
    from arena_cli.models import FitOptions, FitResult
    from arena_cli.models.design import Battles
    from arena_cli.render.document import Document

#: Columns of a leaderboard that comparisons read (``arena fit``'s leaderboard has them all).
COMPARED_COLUMNS = ("rank", "rank_lower", "rank_upper", "model", "score", "score_lower", "score_upper")
#: Their types in a fit's leaderboard.
COMPARED_TYPES: dict[str, pl.DataType] = {
    **dict.fromkeys(("rank", "rank_lower", "rank_upper"), pl.Int64()), "model": pl.String(), **dict.fromkeys(("score", "score_lower", "score_upper"), pl.Float64()),
}


# --------------------------------------------------------------------------------------------- variants


def parse_variants(text: str) -> dict[str, str]:
    """``"none,length,len-bold=length+bold"`` -> ``{variant name: style spec}`` for :class:`FitOptions`.

    Variants are comma-separated; a custom feature set joins its features with ``+`` (``length+bold``) and
    may be named ``NAME=SPEC``; an unnamed set is named by its spec. A malformed list is an :class:`OptionError`
    (a ValueError; exit 2 on the command line): what is wrong with it is in the text, whatever the battles.
    """
    variants: dict[str, str] = {}
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        name, sep, spec = item.partition("=")
        name, spec = (name.strip(), spec.strip()) if sep else (item, item)
        features = [f.strip() for f in spec.split("+") if f.strip()]
        if not name or not features or "=" in spec:
            raise OptionError("--variants", f"{item!r} is not NAME=FEATURE+FEATURE or a variant name")
        if name in variants:
            raise OptionError("--variants", f"variant {name!r} given twice")
        if name in VARIANTS and _style_of(spec) != _style_of(name):  # a table headed "none" must be the plain fit
            raise OptionError("--variants", f"{name!r} is the name of a built-in variant; give {spec!r} another name")
        variants[name] = ",".join(features)
    if not variants:
        raise OptionError("--variants", f"{text!r}: give at least one variant, e.g. {DEFAULT_VARIANTS}")
    return variants


def check_variant_choice(variants: Iterable[str], baseline: str, sort_by: str | None = None) -> None:
    """``baseline`` (and ``sort_by``, unless ``model``) must name one of ``variants``: known from the arguments
    alone, so an :class:`OptionError` (exit 2), raised before any battle is read."""
    names = list(variants)
    if not names:
        raise OptionError("--variants", f"give at least one variant, e.g. {DEFAULT_VARIANTS}")
    if baseline not in names:
        default = " (the default baseline: add it to --variants, or give --baseline)" if baseline == "none" else ""
        raise OptionError("--baseline", f"{baseline!r}{default} is not one of the variants {names}")
    if sort_by is not None and sort_by != "model" and sort_by not in names:
        raise OptionError("--sort", f"{sort_by!r}: give model or one of the variants {names}")


def _style_of(spec: str) -> tuple[str, ...]:
    """The feature groups a variant's spec fits (a built-in name's, or the features joined by ``+``)."""
    return VARIANTS.get(spec, tuple(f.strip() for f in spec.split("+") if f.strip()))


def _int_ranks(frame: pl.DataFrame) -> pl.DataFrame:
    """Ranks as signed integers, so differences never wrap around."""
    return frame.with_columns(pl.col(c).cast(pl.Int64) for c in ("rank", "rank_lower", "rank_upper") if c in frame.columns)


def _checked(leaderboard: pl.DataFrame, label: str) -> pl.DataFrame:
    """The columns every comparison needs, ranks as integers."""
    return _int_ranks(_complete(leaderboard, label).select(COMPARED_COLUMNS))


def _complete(leaderboard: pl.DataFrame, label: str) -> pl.DataFrame:
    """``leaderboard`` as it is, once it is known to have :data:`COMPARED_COLUMNS` (its win rates kept)."""
    missing = [c for c in COMPARED_COLUMNS if c not in leaderboard.columns]
    if missing:
        raise InputError(f"{label}: leaderboard lacks column(s) {missing}")
    try:  # (a column of no values, or of numbers as names, as the type it has in a fit's leaderboard)
        return leaderboard.with_columns(pl.col(c).cast(dtype) for c, dtype in COMPARED_TYPES.items())
    except pl.exceptions.PolarsError as error:
        raise InputError(f"{label}: leaderboard column of another type than a fit's ({str(error).splitlines()[0]})") from None


def with_positions(leaderboard: pl.DataFrame) -> pl.DataFrame:
    """Adds ``position``: 1 for the highest score, ties broken by model name (the order of the top k)."""
    return leaderboard.sort(["score", "model"], descending=[True, False], nulls_last=True).with_row_index("position", offset=1).with_columns(
        pl.col("position").cast(pl.Int64)
    )


def _interval_disjoint(lower_a: str, upper_a: str, lower_b: str, upper_b: str) -> pl.Expr:
    return (pl.col(upper_a) < pl.col(lower_b)) | (pl.col(lower_a) > pl.col(upper_b))


def rank_diff_frame(
    leaderboards: Mapping[str, pl.DataFrame],
    baseline: str,
    sort_by: str | None = None,
    change_intervals: Mapping[str, pl.DataFrame] | None = None,
) -> pl.DataFrame:
    """One row per model: per variant ``rank, rank_lower, rank_upper, score, score_lower, score_upper`` (and
    ``win_rate, win_rate_lower, win_rate_upper`` when the leaderboards have them; columns suffixed
    ``_<variant>``), and for every non-baseline variant ``rank_change_<v>`` (baseline rank
    minus its rank), ``shifted_<v>`` (its rank interval and the baseline's do not overlap) and, when
    ``change_intervals`` has the variant (see :func:`paired_rank_changes`), ``rank_change_lower_<v>`` /
    ``rank_change_upper_<v>``.

    Sorted by ``sort_by``'s rank (then its score), default the last variant; ``sort_by="model"`` sorts by name.
    """
    check_variant_choice(leaderboards, baseline, sort_by)
    sort_by = sort_by or list(leaderboards)[-1]
    parts, shown = [], {}
    for name, leaderboard in leaderboards.items():
        win_rate = [c for c in WIN_RATE_COLUMNS if c in leaderboard.columns]
        board = _checked(leaderboard, f"variant {name}").with_columns(leaderboard[c] for c in win_rate)
        shown[name] = [c for c in (*COMPARED_COLUMNS, *win_rate) if c != "model"]
        parts.append(board.select("model", *[pl.col(c).alias(f"{c}_{name}") for c in shown[name]]))
    frame = reduce(lambda left, right: left.join(right, on="model", how="full", coalesce=True), parts)
    ordered = ["model"]
    for name in leaderboards:
        ordered += [f"{c}_{name}" for c in shown[name]]
        if name != baseline:
            frame = frame.with_columns(
                (pl.col(f"rank_{baseline}") - pl.col(f"rank_{name}")).alias(f"rank_change_{name}"),
                _interval_disjoint(f"rank_lower_{name}", f"rank_upper_{name}", f"rank_lower_{baseline}", f"rank_upper_{baseline}").alias(f"shifted_{name}"),
            )
            ordered += [f"rank_change_{name}", f"shifted_{name}"]
            if change_intervals and name in change_intervals:
                bounds = change_intervals[name].select(
                    "model", pl.col("lower").alias(f"rank_change_lower_{name}"), pl.col("upper").alias(f"rank_change_upper_{name}")
                )
                frame = frame.join(bounds, on="model", how="left")
                ordered += [f"rank_change_lower_{name}", f"rank_change_upper_{name}"]
    keys = ["model"] if sort_by == "model" else [f"rank_{sort_by}", f"score_{sort_by}", "model"]
    return frame.select(ordered).sort(keys, descending=[k.startswith("score_") for k in keys], nulls_last=True)


def variant_coefficient_frame(coefficients: Mapping[str, pl.DataFrame]) -> pl.DataFrame:
    """Rows = variants with style coefficients (or a position term), columns = features (``<f>, <f>_lower,
    <f>_upper``, the position term last); a feature a variant does not control for is null (the seed table's "N/A")."""
    rows = [
        frame.select(pl.lit(name).alias("variant"), "feature", "coef", "lower", "upper")
        for name, frame in coefficients.items()
        if frame.height
    ]
    if not rows:
        return pl.DataFrame(schema={"variant": pl.String})
    long = pl.concat(rows)
    features = sorted(dict.fromkeys(long["feature"].to_list()), key=lambda f: f == POSITION)  # the position term last
    wide = long.pivot(on="feature", index="variant", values=["coef", "lower", "upper"], aggregate_function=None)
    renamed = {}
    for f in features:
        renamed[f"coef_{f}"] = f
        renamed[f"lower_{f}"] = f"{f}_lower"
        renamed[f"upper_{f}"] = f"{f}_upper"
    wide = wide.rename({k: v for k, v in renamed.items() if k in wide.columns})
    return wide.select("variant", *[c for f in features for c in (f, f"{f}_lower", f"{f}_upper")])


def _highlight_rows(changes: pl.DataFrame, variant: str, top_k: int) -> pl.DataFrame:
    """``changes`` has ``model, rank_base, rank_new, rank_change, shifted, position_base, position_new``."""
    kinds = [
        (pl.col("shifted") & (pl.col("rank_change") > 0), "significant rise"),
        (pl.col("shifted") & (pl.col("rank_change") < 0), "significant drop"),
        ((pl.col("position_new") <= top_k) & ((pl.col("position_base") > top_k) | pl.col("position_base").is_null()), f"entered top {top_k}"),
        ((pl.col("position_base") <= top_k) & ((pl.col("position_new") > top_k) | pl.col("position_new").is_null()), f"left top {top_k}"),
    ]
    frames = [
        changes.filter(condition.fill_null(False)).select(
            pl.lit(variant).alias("variant"), "model", pl.lit(kind).alias("change"),
            pl.col("rank_base").alias("rank_before"), pl.col("rank_new").alias("rank_after"), "rank_change",
            pl.col("position_base").alias("position_before"), pl.col("position_new").alias("position_after"),
        ).sort(["position_after", "model"], nulls_last=True)
        for condition, kind in kinds
    ]
    return pl.concat(frames)


def highlights_frame(leaderboards: Mapping[str, pl.DataFrame], baseline: str, top_k: int = DEFAULT_TOP_K) -> pl.DataFrame:
    """Per non-baseline variant: models with a significant rank shift, and models entering or leaving the top k."""
    base = with_positions(_checked(leaderboards[baseline], f"variant {baseline}"))
    frames = []
    for name, leaderboard in leaderboards.items():
        if name == baseline:
            continue
        new = with_positions(_checked(leaderboard, f"variant {name}"))
        frames.append(_highlight_rows(_paired(base, new), name, top_k))
    if not frames:  # only the baseline: no highlights, same columns
        return _highlight_rows(_paired(base, base).clear(), baseline, top_k)
    return pl.concat(frames)


def _paired(base: pl.DataFrame, new: pl.DataFrame) -> pl.DataFrame:
    """Two positioned leaderboards joined on model (``_base`` / ``_new`` suffixes) with the rank change."""
    pick = ["model", "position", *[c for c in COMPARED_COLUMNS if c != "model"]]
    joined = base.select(pick).rename(lambda c: c if c == "model" else f"{c}_base").join(
        new.select(pick).rename(lambda c: c if c == "model" else f"{c}_new"), on="model", how="full", coalesce=True
    )
    return joined.with_columns(
        (pl.col("rank_base") - pl.col("rank_new")).alias("rank_change"),
        _interval_disjoint("rank_lower_new", "rank_upper_new", "rank_lower_base", "rank_upper_base").alias("shifted"),
    )


@dataclass(frozen=True)
class VariantComparison:
    """The rank-diff table, the style-coefficient table and the highlights of one ``arena diff`` run, and the
    fits behind them (``results``, one per variant, when they were fitted here)."""

    rank_diff: pl.DataFrame
    coefficients: pl.DataFrame
    highlights: pl.DataFrame
    variants: dict[str, str]
    baseline: str
    top_k: int
    settings: dict[str, Any] = field(default_factory=dict)
    results: dict[str, FitResult] = field(default_factory=dict)
    filters: dict[str, Any] = field(default_factory=dict)
    inputs: dict[str, Any] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()

    def to_document(self) -> Document:
        from arena_cli.render.views import rank_diff_document

        return rank_diff_document(self)


def compare_variants(
    leaderboards: Mapping[str, pl.DataFrame],
    coefficients: Mapping[str, pl.DataFrame],
    variants: Mapping[str, str],
    baseline: str = "none",
    sort_by: str | None = None,
    top_k: int = DEFAULT_TOP_K,
    settings: Mapping[str, Any] | None = None,
    change_intervals: Mapping[str, pl.DataFrame] | None = None,
) -> VariantComparison:
    """Side by side: per-variant leaderboards (and style coefficients) fitted on the same battles."""
    TOP_K.check(top_k)
    return VariantComparison(
        rank_diff=rank_diff_frame(leaderboards, baseline, sort_by, change_intervals),
        coefficients=variant_coefficient_frame(coefficients),
        highlights=highlights_frame(leaderboards, baseline, top_k),
        variants=dict(variants),
        baseline=baseline,
        top_k=top_k,
        settings=dict(settings or {}),
    )


def compare_fits(
    results: Mapping[str, FitResult],
    variants: Mapping[str, str],
    baseline: str = "none",
    sort_by: str | None = None,
    top_k: int = DEFAULT_TOP_K,
) -> VariantComparison:
    """:func:`compare_variants` on the results of ``fit_variants`` (one fit per variant, shared resamples).

    Settings common to every variant are kept once; the rest (style, features, presets) per variant."""
    first = next(iter(results.values()))
    common = {k: v for k, v in first.settings.items() if all(k in r.settings and r.settings[k] == v for r in results.values())}
    shared = {**common, "per_variant": {name: {k: v for k, v in r.settings.items() if k not in common} for name, r in results.items()}}
    comparison = compare_variants(
        {name: r.leaderboard for name, r in results.items()},
        {name: r.coefficients for name, r in results.items()},
        variants, baseline, sort_by, top_k, settings=shared,
        change_intervals=paired_rank_changes(results, baseline, float(first.settings.get("confidence", 0.95))),
    )
    return dataclasses.replace(comparison, results=dict(results))


def paired_rank_changes(results: Mapping[str, FitResult], baseline: str, confidence: float) -> dict[str, pl.DataFrame]:
    """Per non-baseline variant: ``model, lower, upper``, the interval of the rank change (baseline rank minus
    variant rank) over the *paired* draws — draw r of every variant comes from the same resample r, so the
    change's own noise is measured, not the sum of two leaderboards' noise. Empty without draws."""
    import numpy as np

    base = results[baseline]
    if base.rank_draws is None:
        return {}
    tail = (1.0 - confidence) / 2.0
    base_draws = np.where(base.rank_draws == 0, np.nan, base.rank_draws.astype(np.float64))  # 0: undetermined
    out = {}
    for name, result in results.items():
        if name == baseline or result.rank_draws is None or result.models != base.models or result.rank_draws.shape != base.rank_draws.shape:
            continue
        draws = np.where(result.rank_draws == 0, np.nan, result.rank_draws.astype(np.float64))
        change = base_draws - draws
        with np.errstate(all="ignore"):
            lower = np.nanquantile(change, tail, axis=0, method="lower")
            upper = np.nanquantile(change, 1.0 - tail, axis=0, method="higher")
        out[name] = pl.DataFrame({
            "model": list(base.models),
            "lower": pl.Series(lower).fill_nan(None).cast(pl.Int64),
            "upper": pl.Series(upper).fill_nan(None).cast(pl.Int64),
        })
    return out


def diff_variants(
    battles: Battles,
    variants: Mapping[str, str],
    options: FitOptions,
    baseline: str = "none",
    sort_by: str | None = None,
    top_k: int = DEFAULT_TOP_K,
    on_progress: Callable[[int, int], None] | None = None,
) -> VariantComparison:
    """Fit every variant on ``battles`` with one shared bootstrap resampling, then compare them (the fits are
    in ``results``).

    ``options`` is left unresolved: each variant takes its own preset (e.g. ``--compat`` reweights only
    style-controlled fits)."""
    from arena_cli.models import fit_variants

    check_variant_choice(variants, baseline, sort_by)
    TOP_K.check(top_k)
    results = fit_variants(battles, dict(variants), options, on_progress=on_progress)
    return compare_fits(results, variants, baseline, sort_by, top_k)


# --------------------------------------------------------------------------------------- two leaderboards


def load_leaderboard(path: Path) -> tuple[pl.DataFrame, dict[str, Any]]:
    """A leaderboard saved by ``arena fit -o``: JSON (its ``leaderboard`` table and settings), parquet or CSV."""
    import json

    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such leaderboard file (give an `arena fit -o` file or a store directory)")
    suffix = path.suffix.lower()
    try:
        if suffix == ".json":
            payload = json.loads(path.read_text())
            tables = payload.get("tables", {})
            rows = tables.get("leaderboard")
            if rows is None:
                rows = next((t for t in tables.values() if t and {"model", "score"} <= set(t[0])), None)
            if rows is None:
                raise InputError(f"{path}: no leaderboard table in this JSON (expected `arena fit -o FILE.json`)")
            frame = pl.DataFrame(rows, infer_schema_length=None)
            meta = payload.get("meta", {})
            return _complete(frame, str(path)), dict(meta.get("settings", meta))
        if suffix == ".parquet":
            return _complete(pl.read_parquet(path, glob=False), str(path)), {}
        if suffix == ".csv":  # (model names as written: "01" and "1.0" are two models, not the number 1)
            return _complete(pl.read_csv(path, schema_overrides=COMPARED_TYPES), str(path)), {}
    except InputError:
        raise
    except Exception as error:
        raise InputError(f"{path}: cannot read leaderboard ({error})") from None
    raise InputError(f"{path}: leaderboard files are .json, .parquet or .csv (from `arena fit -o`)")


@dataclass(frozen=True)
class ScoreDraws:
    """A fit's score draws (one row per bootstrap round or normal draw, one column per model of ``models``) and
    the confidence of its intervals: what ranks among a subset of its models are computed from."""

    models: tuple[str, ...]
    draws: np.ndarray
    confidence: float

    @classmethod
    def of(cls, result: FitResult) -> ScoreDraws | None:
        if result.score_draws is None:
            return None
        return cls(tuple(result.models), result.score_draws, float(result.settings.get("confidence", 0.95)))


def common_ranks(board: pl.DataFrame, common: Sequence[str], draws: ScoreDraws | None = None) -> pl.DataFrame:
    """``model, rank, rank_lower, rank_upper`` of the ``common`` models of a leaderboard, ranked among themselves
    only, so that models the other leaderboard lacks move no one.

    ``rank`` is LMArena's among them (1 + the common models whose score interval lies wholly above). The rank
    range is the fit's, restricted: from the score draws when given (the common models' ranks in each draw,
    then the same percentiles as the fit's); otherwise from the saved range, less the other models that stood
    above: one whose score interval lies wholly above lowers both bounds by one, one whose interval overlaps
    lowers the best bound only (it may or may not have been above), so the range can only be wider than the
    exact one."""
    from arena_cli.models.uncertainty import lmarena_rank, rank_interval, ranks_of

    board = _checked(board, "leaderboard")
    is_common = board["model"].is_in(list(common)).to_numpy()
    score = board["score"].cast(pl.Float64).to_numpy()
    lower = upper = score  # without intervals: the plain order by score
    if board["score_lower"].is_not_null().any():  # a bound saved as null was infinite (an undetermined score)
        lower = board["score_lower"].cast(pl.Float64).fill_null(-np.inf).to_numpy()
        upper = board["score_upper"].cast(pl.Float64).fill_null(np.inf).to_numpy()
    rank = lmarena_rank(lower[is_common], upper[is_common])
    models = board["model"].filter(pl.Series(is_common)).to_list()
    if draws is not None:
        column = {m: i for i, m in enumerate(draws.models)}
        best, worst = rank_interval(ranks_of(draws.draws[:, [column[m] for m in models]]), draws.confidence)
        bounds = [pl.Series(best, dtype=pl.Int64), pl.Series(worst, dtype=pl.Int64)]
    else:
        other = ~is_common
        surely_above = (lower[other][None, :] > upper[is_common][:, None]).sum(axis=1)
        maybe_above = (upper[other][None, :] >= lower[is_common][:, None]).sum(axis=1) - surely_above
        n = int(is_common.sum())
        saved = board.filter(pl.Series(is_common))
        bounds = [
            (saved["rank_lower"] - pl.Series(surely_above + maybe_above)).clip(1, n),
            (saved["rank_upper"] - pl.Series(surely_above)).clip(1, n),
        ]
    return pl.DataFrame({
        "model": pl.Series(models, dtype=pl.String), "rank": pl.Series(rank, dtype=pl.Int64),
        "rank_lower": bounds[0].cast(pl.Int64), "rank_upper": bounds[1].cast(pl.Int64),
    })


def leaderboard_changes(
    old: pl.DataFrame, new: pl.DataFrame, old_draws: ScoreDraws | None = None, new_draws: ScoreDraws | None = None, *, align_scores: bool = True,
) -> pl.DataFrame:
    """One row per model of either leaderboard: ``status`` (kept, entered, left), old and new rank, rank
    interval, score and position, the score change and whether it is beyond the intervals.

    Scores are compared on one scale (``align_scores``): a fit's scores are centred on the mean of the models
    it ranks, so strong models entering lower every other score without anything having changed between the
    models both boards have. The new scores less the mean change of those models (``score_offset``, the same
    for every row) make a change mean something; boards pinned by the same anchor are on one scale already.

    Each leaderboard's own ranks are shown as they are; the rank change (``rank_change``, old minus new) and
    whether it is beyond the intervals (``rank_beyond_interval``) compare the ``common_rank_*`` columns: ranks
    among the models both leaderboards have (see :func:`common_ranks`; from the score draws when both sides
    have them, else from the saved ranges on both sides), so models that entered or left move no one."""
    win_rates = _win_rates(old, new)
    old, new = _checked(old, "OLD"), _checked(new, "NEW")
    paired = _paired(with_positions(old), with_positions(new))
    common = sorted(set(old["model"].to_list()) & set(new["model"].to_list()))
    draws = (old_draws, new_draws) if old_draws is not None and new_draws is not None else (None, None)
    for side, board, side_draws in (("old", old, draws[0]), ("new", new, draws[1])):
        ranks = common_ranks(board, common, side_draws)
        paired = paired.join(ranks.rename(lambda c: c if c == "model" else f"common_{c}_{side}"), on="model", how="left")
    status = (
        pl.when(pl.col("rank_base").is_null()).then(pl.lit("entered"))
        .when(pl.col("rank_new").is_null()).then(pl.lit("left"))
        .otherwise(pl.lit("kept"))
    )
    offset = paired.select((pl.col("score_new") - pl.col("score_base")).mean()).item() if align_scores and common else 0.0
    changes = paired.with_columns(pl.lit(offset or 0.0, dtype=pl.Float64).alias("score_offset")).with_columns(
        status.alias("status"),
        (pl.col("common_rank_old") - pl.col("common_rank_new")).alias("rank_change"),
        _interval_disjoint("common_rank_lower_new", "common_rank_upper_new", "common_rank_lower_old", "common_rank_upper_old").alias("rank_beyond_interval"),
        (pl.col("score_new") - pl.col("score_offset") - pl.col("score_base")).alias("score_change"),
        ((pl.col("score_upper_new") - pl.col("score_offset") < pl.col("score_lower_base"))
         | (pl.col("score_lower_new") - pl.col("score_offset") > pl.col("score_upper_base"))).alias("score_beyond_interval"),
    )
    rename = {f"{c}_base": f"{c}_old" for c in ("position", *COMPARED_COLUMNS) if c != "model"}
    changes = changes.rename(rename)
    columns = [
        "model", "status",
        "rank_old", "rank_lower_old", "rank_upper_old", "rank_new", "rank_lower_new", "rank_upper_new",
        "common_rank_old", "common_rank_lower_old", "common_rank_upper_old", "common_rank_new", "common_rank_lower_new", "common_rank_upper_new",
        "rank_change", "rank_beyond_interval",
        "score_old", "score_lower_old", "score_upper_old", "score_new", "score_lower_new", "score_upper_new", "score_offset", "score_change",
        "score_beyond_interval", "position_old", "position_new",
    ]
    if win_rates is not None:
        changes = changes.join(win_rates, on="model", how="left")
        columns += [c for c in win_rates.columns if c != "model"]
    return changes.select(columns).sort(["position_new", "position_old", "model"], nulls_last=True)


WIN_RATE_COLUMNS = ("win_rate", "win_rate_lower", "win_rate_upper")


def _win_rates(old: pl.DataFrame, new: pl.DataFrame) -> pl.DataFrame | None:
    """``win_rate_old/new`` (with bounds) and ``win_rate_change`` when both boards have win rates against a
    baseline (``--baseline-model``); None otherwise. A win rate needs no common scale: the baseline is 50%."""
    if not all(c in board.columns for board in (old, new) for c in WIN_RATE_COLUMNS):
        return None
    sides = [board.select("model", *[pl.col(c).alias(f"{c}_{side}") for c in WIN_RATE_COLUMNS])
             for side, board in (("old", old), ("new", new))]
    joined = sides[0].join(sides[1], on="model", how="full", coalesce=True)
    return joined.with_columns((pl.col("win_rate_new") - pl.col("win_rate_old")).alias("win_rate_change"))


@dataclass(frozen=True)
class Gate:
    """One ``--fail-on`` condition. ``value`` is the threshold (None for conditions without one)."""

    name: str
    value: float | None = None

    @property
    def label(self) -> str:
        return self.name if self.value is None else f"{self.name}={self.value:g}"


#: ``--fail-on`` conditions: name -> (needs a value, what it means). The README shows this text.
GATES: dict[str, tuple[bool, str]] = {
    "rank-shift": (True, "a model in both leaderboards moved N or more ranks among the models both have (|new rank - old rank| >= N)"),
    "score-shift": (True, "a model in both leaderboards changed score by X or more points (|new - old| >= X)"),
    "top-k-change": (True, "the set of the K highest-scoring models differs (a model entered or left the top K; a reorder within it does not count)"),
    "significant-shift": (False, "a model's new rank interval does not overlap its old one (ranks among the models both have)"),
    "models-changed": (False, "a model entered or left the leaderboard"),
}


#: The thresholds of the conditions that take one.
GATE_THRESHOLDS: dict[str, Bounds] = {
    "rank-shift": Bounds("--fail-on", low=1, integer=True),
    "score-shift": Bounds("--fail-on", low=0, low_open=True),
    "top-k-change": Bounds("--fail-on", low=1, integer=True),
}


def parse_gate(text: str) -> Gate:
    """``"rank-shift=3"`` -> Gate("rank-shift", 3.0); ``"models-changed"`` -> Gate("models-changed")."""
    name, sep, value = text.strip().partition("=")
    name = name.strip()
    if name not in GATES:
        raise OptionError("--fail-on", f"{text!r}: unknown condition; one of {', '.join(GATES)}")
    bounds = GATE_THRESHOLDS.get(name)
    if bounds is None:
        if sep:
            raise OptionError("--fail-on", f"{text!r}: {name} takes no value")
        return Gate(name)
    try:
        threshold = float(value)
    except ValueError:
        threshold = math.nan
    whole = bounds.integer and threshold.is_integer()  # "3" and "3.0" are the integer 3
    if not sep or not bounds.accepts(int(threshold) if whole else threshold):
        raise OptionError("--fail-on", f"{text!r}: {name} needs {bounds.describe()}, e.g. {name}={'3' if bounds.integer else '10'}")
    return Gate(name, threshold)


def _gate_detail(gate: Gate, changes: pl.DataFrame) -> tuple[bool, str]:
    """Whether ``gate`` is met by ``changes`` (from :func:`leaderboard_changes`), and which models met it."""
    kept = changes.filter(pl.col("status") == "kept")
    among = "" if kept.height == changes.height else f"; ranks among the {kept.height} models both have"
    if gate.name == "significant-shift" and kept.height and kept["rank_beyond_interval"].null_count() == kept.height:
        raise InputError("--fail-on significant-shift needs rank intervals of both leaderboards, and these give none (one fitted with --ci none?): "
                         "the condition could never be met; fit both with --ci bootstrap or sandwich")
    if gate.name in ("rank-shift", "significant-shift"):
        met = pl.col("rank_change").abs() >= gate.value if gate.name == "rank-shift" else pl.col("rank_beyond_interval").fill_null(False)
        hits = kept.filter(met).select("model", "common_rank_old", "common_rank_new")
        detail = [f"{m} {old}→{new}" for m, old, new in hits.iter_rows()]
        return bool(detail), ", ".join(detail) + (among if detail else "")
    if gate.name == "score-shift":
        hits = kept.filter(pl.col("score_change").abs() >= gate.value)
        detail = [f"{m} {c:+.1f}" for m, c in hits.select("model", "score_change").iter_rows()]
    elif gate.name == "top-k-change":
        k = int(gate.value or 0)
        entered = changes.filter((pl.col("position_new") <= k) & ~(pl.col("position_old") <= k).fill_null(False))["model"].to_list()
        left = changes.filter((pl.col("position_old") <= k) & ~(pl.col("position_new") <= k).fill_null(False))["model"].to_list()
        detail = [f"+{m}" for m in entered] + [f"-{m}" for m in left]
    else:
        detail = [f"+{m}" for m in changes.filter(pl.col("status") == "entered")["model"]]
        detail += [f"-{m}" for m in changes.filter(pl.col("status") == "left")["model"]]
    return bool(detail), ", ".join(detail)


def evaluate_gates(gates: Sequence[Gate], changes: pl.DataFrame) -> pl.DataFrame:
    """One row per gate: ``condition, met, models`` (the models that met it)."""
    rows = [(gate.label, *_gate_detail(gate, changes)) for gate in gates]
    return pl.DataFrame(rows, schema={"condition": pl.String, "met": pl.Boolean, "models": pl.String}, orient="row")


@dataclass(frozen=True)
class LeaderboardComparison:
    """``arena compare``: what changed between two leaderboards, and which ``--fail-on`` gates it meets."""

    changes: pl.DataFrame
    gates: pl.DataFrame
    old_label: str
    new_label: str
    settings: dict[str, Any] = field(default_factory=dict)
    #: where the rank ranges among the common models come from: "score draws" or "saved rank ranges"
    common_ranks_from: str = "saved rank ranges"
    filters: dict[str, Any] = field(default_factory=dict)
    inputs: dict[str, Any] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()

    @property
    def failed(self) -> list[str]:
        return self.gates.filter(pl.col("met"))["condition"].to_list()

    def summary(self) -> dict[str, Any]:
        changes = self.changes
        kept = changes.filter(pl.col("status") == "kept")
        return {
            "models_old": changes["rank_old"].is_not_null().sum(),
            "models_new": changes["rank_new"].is_not_null().sum(),
            "common_models": kept.height,
            "common_ranks_from": self.common_ranks_from,
            "score_offset": float(changes["score_offset"][0]) if changes.height else 0.0,
            "entered": changes.filter(pl.col("status") == "entered")["model"].to_list(),
            "left": changes.filter(pl.col("status") == "left")["model"].to_list(),
            "largest_rank_shift": int(kept.select(pl.col("rank_change").abs().max().fill_null(0)).item()) if kept.height else 0,
            "significant_shifts": int(kept["rank_beyond_interval"].fill_null(False).sum()),
            "failed_gates": self.failed,
        }

    def to_document(self) -> Document:
        from arena_cli.render.views import comparison_document

        return comparison_document(self)


def compare_leaderboards(
    old: pl.DataFrame,
    new: pl.DataFrame,
    gates: Sequence[Gate] = (),
    old_label: str = "old",
    new_label: str = "new",
    settings: Mapping[str, Any] | None = None,
    old_draws: ScoreDraws | None = None,
    new_draws: ScoreDraws | None = None,
) -> LeaderboardComparison:
    """Compare two leaderboards and evaluate the ``--fail-on`` gates on the result; rank changes are among the
    models both have, from the score draws when both sides come with them (see :func:`leaderboard_changes`)."""
    anchors = [(settings or {}).get(side, {}).get("anchor") for side in ("old", "new")]
    changes = leaderboard_changes(old, new, old_draws, new_draws, align_scores=anchors[0] is None or anchors[0] != anchors[1])
    source = "score draws" if old_draws is not None and new_draws is not None else "saved rank ranges"
    return LeaderboardComparison(changes, evaluate_gates(gates, changes), old_label, new_label, dict(settings or {}), source)


def settings_mismatch(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """Fit settings that differ between two leaderboards (their scores may then not be comparable)."""
    keys = ("style", "ties", "both_bad", "normalize", "style_transform", "anchor", "reweight", "ridge", "compat", "position_bias", "baseline_model")
    return [k for k in keys if k in old and k in new and old[k] != new[k]]
