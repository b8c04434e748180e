"""What is in a set of battles: counts, models, dates, outcomes, languages, quarantine."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import polars as pl

from arena_cli.exprs import unsigned_zero
from arena_cli.results import Summary
from arena_cli.schema import WEIGHT_DIGITS, shown_weight, vote_weight

def rounded_weights(frame: pl.DataFrame, columns: Sequence[str]) -> pl.DataFrame:
    """``frame`` with its float ``columns`` (sums of vote weights) to :data:`~arena_cli.schema.WEIGHT_DIGITS`
    significant digits: the same on every machine, whatever order the sum took (4.6421715367 may come out
    4.642171536699999), 0.0 for -0.0 (votes of weight -0.0). For display: rates and orders are taken from the
    sums as they are."""
    return frame.with_columns(unsigned_zero(pl.col(c).round_sig_figs(WEIGHT_DIGITS)).alias(c) for c in columns if c in frame.columns and frame.schema[c].is_float())


def store_context(store) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The store's quarantine reasons and, per cached feature set, where its battles' features came from."""
    from arena_cli.features.cache import feature_sources
    from arena_cli.io.store import Store

    opened = Store.open(store)
    quarantine = opened.read("quarantine", ["reason"])
    if quarantine is None:
        quarantine = pl.DataFrame(schema={"reason": pl.String})
    return quarantine, feature_sources(opened)


def summarize(battles: pl.DataFrame, quarantine: pl.DataFrame | None = None, features: pl.DataFrame | None = None) -> Summary:
    """A summary of ``battles`` (and of the quarantine and cached features, when known). When some vote weighs
    other than 1, the total vote weight is given next to each count of battles (``weight``, ``total_weight``)."""
    weight = vote_weight(battles.schema)
    weighted = not battles.select((weight == 1.0).all()).item()
    battles = battles.with_columns(weight.alias("__weight"))
    weights = [pl.col("__weight").sum().alias("weight")] if weighted else []
    per_side = pl.concat([
        battles.select(pl.col("model_a").alias("model"), pl.col("outcome").replace_strict({"model_a": "win", "model_b": "loss"}, default=pl.col("outcome")), "__weight"),
        battles.select(pl.col("model_b").alias("model"), pl.col("outcome").replace_strict({"model_b": "win", "model_a": "loss"}, default=pl.col("outcome")), "__weight"),
    ])
    models = (
        per_side.group_by("model")
        .agg(
            pl.len().alias("battles"),
            *weights,
            (pl.col("outcome") == "win").sum().alias("wins"),
            (pl.col("outcome") == "loss").sum().alias("losses"),
            (pl.col("outcome") == "tie").sum().alias("ties"),
            (pl.col("outcome") == "both_bad").sum().alias("both_bad"),
        )
        .sort(["battles", "model"], descending=[True, False])
    )
    outcomes = battles.group_by("outcome").agg(pl.len().alias("battles"), *weights).sort("outcome").with_columns(
        (pl.col("battles") / battles.height).round(4).alias("share")
    )
    overview: dict[str, int | float | str | None] = {"battles": battles.height}
    if weighted:
        overview["total_weight"] = shown_weight(float(battles["__weight"].sum()))
    overview.update({"models": models.height, "first": None, "last": None})
    if "timestamp" in battles.columns and battles["timestamp"].is_not_null().any():
        first, last = battles["timestamp"].min(), battles["timestamp"].max()
        if isinstance(first, datetime) and isinstance(last, datetime):
            overview["first"], overview["last"] = first.isoformat(), last.isoformat()
    languages = None
    if "language" in battles.columns and battles["language"].is_not_null().any():
        languages = battles.group_by("language").agg(pl.len().alias("battles"), *weights).sort(["battles", "language"], descending=[True, False])
    reasons = None
    if quarantine is not None:
        reasons = quarantine.group_by("reason").agg(pl.len().alias("rows")).sort("reason") if quarantine.height else pl.DataFrame(schema={"reason": pl.String, "rows": pl.UInt32})
    models, outcomes = rounded_weights(models, ["weight"]), rounded_weights(outcomes, ["weight"])
    languages = rounded_weights(languages, ["weight"]) if languages is not None else None
    return Summary(overview, models, outcomes, languages, reasons, features)
