"""``arena report``: one document with everything a published ranking needs — what the data is, the
leaderboards with score and rank intervals, how ranks move under style control, the style coefficients, and
the plots (forest, slope, pairwise heatmaps). Rendered to html (self-contained) or markdown (with images)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import polars as pl

from arena_cli.compare import SCORE_DIGITS, VariantComparison, with_positions
from arena_cli.render.document import Column, Document, Figure, Table

#: Tables of ``arena info``'s summary the report keeps (per-model counts are in the leaderboards already).
SUMMARY_TABLES = ("overview", "outcomes", "languages", "quarantine", "features")


def leaderboard_table(variant: str, leaderboard: pl.DataFrame) -> Table:
    """A variant's leaderboard as people read it: rank and score with their intervals, then the counts."""
    layout = (
        Column("rank", "rank", "rank_lower", "rank_upper"),
        Column("model", "model"),
        Column("score", "score", "score_lower", "score_upper", digits=SCORE_DIGITS),
        *[Column(c, c) for c in ("battles", "wins", "ties", "losses") if c in leaderboard.columns],
    )
    digits = {c: SCORE_DIGITS for c in ("score", "score_lower", "score_upper")}
    return Table(f"leaderboard_{variant}", leaderboard, f"Leaderboard: {variant}", digits, layout=layout)


def positions(leaderboards: Mapping[str, pl.DataFrame]) -> pl.DataFrame:
    """``model`` and ``position_<variant>`` (1 = highest score) for every variant: the slope chart's data."""
    from functools import reduce

    parts = [with_positions(board.select("model", "score")).select("model", pl.col("position").alias(f"position_{name}")) for name, board in leaderboards.items()]
    return reduce(lambda left, right: left.join(right, on="model", how="full", coalesce=True), parts)


def report_figures(comparison: VariantComparison, leaderboards: Mapping[str, pl.DataFrame], pairs: pl.DataFrame, last_board: str) -> tuple[Figure, ...]:
    """The report's plots, each anchored after the table it illustrates."""
    from arena_cli import plots
    from arena_cli.matrix import model_order, wide_matrix

    names = list(leaderboards)
    baseline, last = comparison.baseline, names[-1]
    forest_boards = {baseline: leaderboards[baseline]} | ({last: leaderboards[last]} if last != baseline else {})
    order = leaderboards[last].sort(["score", "model"], descending=[True, False])["model"].to_list()
    order += [m for m in model_order(pairs) if m not in order]
    slope = positions(leaderboards).join(comparison.rank_diff.select("model", *([f"shifted_{last}"] if last != baseline else [])), on="model", how="left")
    figures = [
        Figure(
            "forest", f"Scores with intervals: {' vs '.join(forest_boards)}", lambda: plots.forest_plot(forest_boards),
            caption="Each model's score and interval with and without style control, ordered by the controlled score.",
            after=last_board,
        ),
        Figure(
            "heatmap", "Pairwise win rates and battle counts",
            lambda: plots.heatmaps(wide_matrix(pairs, "win_rate", order), wide_matrix(pairs, "battles", order)),
            caption="Left: share of the row model's wins against the column model (a tie counts half). Right: battles per pair (square-root colour scale). Grey: the pair never met.",
            after=None,
        ),
    ]
    if len(names) > 1:
        shifted = f"shifted_{last}" if last != baseline else None
        figures.insert(0, Figure(
            "slope", "Leaderboard position by variant", lambda: plots.slope_chart(slope, names, shifted),
            caption=f"Position (1 = highest score) under each variant; coloured: a significant rank shift from {baseline} to {last}.",
            after="rank_diff",
        ))
    return tuple(figures)


def report_document(
    summary: Document,
    comparison: VariantComparison,
    leaderboards: Mapping[str, pl.DataFrame],
    pairs: pl.DataFrame,
    source: str = "",
) -> Document:
    """Assemble the report from its parts (no fitting here): data summary, rank diff, coefficients,
    highlights, each variant's leaderboard, and the plots."""
    data_tables = [
        Table(t.name, t.frame, f"Data: {t.title or t.name}", t.float_digits, t.notes, t.layout)
        for t in summary.tables if t.name in SUMMARY_TABLES
    ]
    boards = [leaderboard_table(name, board) for name, board in leaderboards.items()]
    tables = (*data_tables, *comparison.tables(), *boards)
    figures = report_figures(comparison, leaderboards, pairs, boards[-1].name)
    meta: dict[str, Any] = {
        "source": source,
        "data": summary.meta,
        "variants": comparison.variants,
        "baseline": comparison.baseline,
        "top_k": comparison.top_k,
        "settings": comparison.settings,
    }
    title = f"Ranking report: {source}" if source else "Ranking report"
    return Document("report", tables, meta=meta, title=title, figures=figures)


def store_context(store) -> tuple[pl.DataFrame, dict[str, int]]:
    """The store's quarantine reasons and cached feature sets (with their battle counts), for the summary."""
    from arena_cli.io.store import Store

    opened = Store.open(store)
    quarantine = opened.read("quarantine", ["reason"])
    if quarantine is None:
        quarantine = pl.DataFrame(schema={"reason": pl.String})
    feature_sets = {t.removeprefix("features/"): opened.rows(t) for t in opened.tables() if t.startswith("features/")}
    return quarantine, feature_sets
