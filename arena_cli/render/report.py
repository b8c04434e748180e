"""``arena report``: one document with everything a published ranking needs — what the data is, the
leaderboards with score and rank intervals, how ranks move under style control, the style coefficients, and
the plots (forest, slope, pairwise heatmaps). Rendered to html (self-contained) or markdown (with images)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import polars as pl

from arena_cli.comparison import VariantComparison, with_positions
from arena_cli.render.document import Document, Figure, Table
from arena_cli.render.views import RANK_NOTE, SCORE_DIGITS, fit_notes, leaderboard_layout, meta, rank_diff_tables, summary_tables

if TYPE_CHECKING:
    from arena_cli.results import Report

#: Tables of ``arena info``'s summary the report keeps (per-model counts are in the leaderboards already).
SUMMARY_TABLES = ("overview", "outcomes", "languages", "quarantine", "features")


def leaderboard_table(variant: str, leaderboard: pl.DataFrame, explain: bool = True, settings: Mapping[str, Any] | None = None) -> Table:
    """A variant's leaderboard as people read it: rank and score with their intervals, then the counts;
    ``explain``: with the note on how to read the rank (the report gives it once, under the first);
    ``settings``: the variant's fit settings, whose anchor and tie parameter are noted."""
    settings = settings or {}
    digits = {c: SCORE_DIGITS for c in ("score", "score_lower", "score_upper")}
    intervals = "rank_lower" in leaderboard.columns and leaderboard["rank_lower"].is_not_null().any()
    notes = (*fit_notes(settings), *((RANK_NOTE + " The same in every leaderboard below.",) if intervals and explain else ()))
    layout = leaderboard_layout(leaderboard.columns, settings.get("baseline_model"))
    return Table(f"leaderboard_{variant}", leaderboard, f"Leaderboard: {variant}", digits, notes, layout)


def data_table(table: Table) -> Table:
    """A summary table as the report shows it: titled as data, and what an empty or blank one means said in
    words rather than left as empty cells."""
    frame, notes, empty = table.frame, table.notes, table.empty
    if table.name == "overview" and frame.select(pl.col("first", "last").is_null().all()).row(0) == (True, True):
        notes = (*notes, "first, last: these battles carry no timestamps, so there is no date range.")
    if table.name == "quarantine":
        empty = "No rows quarantined: no ingest into this store rejected a row."
        if frame.height:
            notes = (*notes, f"{int(frame['rows'].sum())} row(s) quarantined in all, over every ingest into this store (filters do not apply).")
    return dataclasses.replace(table, title=f"Data: {table.title or table.name}", notes=notes, empty=empty)


def positions(leaderboards: Mapping[str, pl.DataFrame]) -> pl.DataFrame:
    """``model`` and ``position_<variant>`` (1 = highest score) for every variant: the slope chart's data."""
    from functools import reduce

    parts = [with_positions(board.select("model", "score")).select("model", pl.col("position").alias(f"position_{name}")) for name, board in leaderboards.items()]
    return reduce(lambda left, right: left.join(right, on="model", how="full", coalesce=True), parts)


def report_figures(comparison: VariantComparison, leaderboards: Mapping[str, pl.DataFrame], pairs: pl.DataFrame, last_board: str) -> tuple[Figure, ...]:
    """The report's plots, each anchored after the table it illustrates."""
    from arena_cli.render import plots
    from arena_cli.pairwise import model_order, wide_matrix

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
            caption="Win rate: share of the row model's wins against the column model (a tie counts half). Battles: battles per pair (square-root colour scale). Grey: the pair never met.",
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


def report_document(report: Report) -> Document:
    """Assemble the report from its parts (no fitting here): data summary, rank diff, coefficients,
    highlights, each variant's leaderboard, and the plots."""
    comparison = report.comparison
    leaderboards = report.leaderboards
    data_tables = [data_table(t) for t in summary_tables(report.summary) if t.name in SUMMARY_TABLES]
    results = comparison.results
    boards = [
        leaderboard_table(name, board, explain=k == 0, settings=results[name].settings if name in results else None)
        for k, (name, board) in enumerate(leaderboards.items())
    ]
    tables = (*data_tables, *rank_diff_tables(comparison), *boards)
    figures = report_figures(comparison, leaderboards, report.pairs, boards[-1].name)
    title = f"Ranking report: {report.source}" if report.source else "Ranking report"
    return Document("report", tables, meta=meta(report, source=report.source, data=report.summary.overview), title=title, figures=figures)
