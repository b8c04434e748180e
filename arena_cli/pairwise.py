"""Pairwise views of a set of battles: how often each pair met, how often each side won, and how often the
fitted model says it should win. A tie or ``both_bad`` counts as half a win for each side (LMArena's rule).
Weighted votes count their weight (a vote of weight 0 not at all), as in the fit."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import polars as pl

from arena_cli.schema import vote_weight

if TYPE_CHECKING:
    from arena_cli.models import FitResult


#: The quantities a model × model matrix can show (columns of :func:`pairwise_counts` / :func:`with_predictions`).
VALUES = {
    "battles": "Battles between the two models",
    "win_rate": "Win rate of the row model against the column model (ties count half)",
    "predicted": "Predicted probability that the row model beats the column model",
}


def pairwise_counts(battles: pl.DataFrame) -> pl.DataFrame:
    """One row per ordered pair that met: ``model, opponent, battles, wins, ties, losses, win_rate``.

    Both orders of a pair are present, so ``win_rate(a, b) + win_rate(b, a) == 1``. When some vote weighs other
    than 1, a ``weight`` column (after ``battles``) sums the pair's vote weights, ``wins``, ``ties`` and
    ``losses`` are sums of weights too, and the win rate is weighted; ``battles`` counts the votes of weight > 0.
    """
    outcome = pl.col("outcome")
    weight = vote_weight(battles.collect_schema())
    weighted = not battles.select((weight == 1.0).all()).item()
    if weighted:
        battles = battles.filter(weight > 0)
    sides = pl.concat([
        battles.select(pl.col("model_a").alias("model"), pl.col("model_b").alias("opponent"),
                       (outcome == "model_a").alias("win"), (outcome == "model_b").alias("loss"), weight.alias("weight")),
        battles.select(pl.col("model_b").alias("model"), pl.col("model_a").alias("opponent"),
                       (outcome == "model_b").alias("win"), (outcome == "model_a").alias("loss"), weight.alias("weight")),
    ])
    tie = ~pl.col("win") & ~pl.col("loss")
    if weighted:
        tallies = [pl.col("weight").sum().alias("weight"), *(pl.col("weight").filter(flag).sum().alias(name) for name, flag in (("wins", pl.col("win")), ("ties", tie), ("losses", pl.col("loss"))))]
    else:
        tallies = [pl.col("win").sum().cast(pl.Int64).alias("wins"), tie.sum().cast(pl.Int64).alias("ties"), pl.col("loss").sum().cast(pl.Int64).alias("losses")]
    counts = sides.group_by("model", "opponent").agg(pl.len().cast(pl.Int64).alias("battles"), *tallies)
    total = "weight" if weighted else "battles"
    return counts.with_columns(((pl.col("wins") + 0.5 * pl.col("ties")) / pl.col(total)).alias("win_rate")).sort("model", "opponent")


def with_predictions(pairs: pl.DataFrame, result: FitResult) -> pl.DataFrame:
    """Adds ``predicted``: the fitted probability that ``model`` beats ``opponent`` (style held equal), for
    every pair of fitted models, met or not; null for a model the fit left out."""
    from arena_cli.models import predict_win_prob

    fitted = result.leaderboard["model"].to_list()
    grid = pl.DataFrame({"model": fitted}).join(pl.DataFrame({"opponent": fitted}), how="cross").filter(pl.col("model") != pl.col("opponent"))
    probabilities = predict_win_prob(result, grid["model"].to_list(), grid["opponent"].to_list()) if grid.height else []
    grid = grid.with_columns(pl.Series("predicted", probabilities, dtype=pl.Float64))
    joined = pairs.join(grid, on=["model", "opponent"], how="full", coalesce=True)
    tallies = [c for c in ("battles", "weight", "wins", "ties", "losses") if c in pairs.columns]
    return joined.with_columns(pl.col(tallies).fill_null(0)).sort("model", "opponent")


def model_order(pairs: pl.DataFrame, result: FitResult | None = None) -> list[str]:
    """Rows and columns in leaderboard order when a fit is given, else by overall win rate (then name)."""
    if result is not None:
        fitted = result.leaderboard["model"].to_list()
        rest = sorted(set(pairs["model"].to_list()) - set(fitted))
        return fitted + rest
    total = "weight" if "weight" in pairs.columns else "battles"
    overall = pairs.group_by("model").agg(((pl.col("wins") + 0.5 * pl.col("ties")).sum() / pl.col(total).sum()).alias("rate"))
    return overall.sort(["rate", "model"], descending=[True, False])["model"].to_list()


def wide_matrix(pairs: pl.DataFrame, value: str, order: Sequence[str]) -> pl.DataFrame:
    """Rows = ``model``, one column per opponent, both in ``order``, cells = column ``value`` of ``pairs``;
    null where the pair never met (or the fit left a model out); the diagonal is null."""
    if value not in VALUES:
        raise ValueError(f"matrix value {value!r}: one of {list(VALUES)}")
    frame = pairs.filter(pl.col(value).is_not_null()) if value in pairs.columns else pairs.clear()
    wide = frame.pivot(on="opponent", index="model", values=value, aggregate_function=None) if frame.height else pl.DataFrame({"model": []}, schema={"model": pl.String})
    rows = pl.DataFrame({"model": list(order)}, schema={"model": pl.String}).join(wide, on="model", how="left")
    dtype = pl.Int64 if value == "battles" else pl.Float64
    rows = rows.with_columns(pl.lit(None, dtype=dtype).alias(m) for m in order if m not in rows.columns)
    return rows.select("model", *[pl.col(m).cast(dtype) for m in order])
