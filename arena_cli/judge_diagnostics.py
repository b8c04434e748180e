"""Diagnostics of LLM judges (``arena judges``): how often a judge names the same winner when the same two
answers are shown in both orders, how often the first position wins, and how far the leaderboards of different
judges agree.

A swapped pair is two votes of one judge on one prompt (``question_id``) between the same two models, one with
each model shown first (``model_a``), as arena-hard-auto's two games are. Position consistency is the share of
pairs whose two votes name the same winner model (or both a tie); a judge without position bias and without
noise scores 1. The first position's share of the paired votes' wins measures the bias itself: every pair shows
each answer first once, so a fair judge wins as often in either position.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import combinations
from typing import TYPE_CHECKING, Any

import polars as pl

from arena_cli.errors import NoDataError

if TYPE_CHECKING:
    from arena_cli.render.document import Document

#: The columns the diagnostics read.
JUDGE_COLUMNS = ("model_a", "model_b", "outcome", "weight", "judge", "question_id")
#: Judges named in a warning about judges without a leaderboard.
SHOWN_JUDGES = 10


@dataclass(frozen=True)
class JudgeReport:
    """``judges``: per judge, its votes, swapped pairs, how many agree (``consistency``) and the shares of the
    paired votes won by the first position, the second, or tied. ``agreement``: per two judges, the rank
    correlations (Spearman, Kendall's tau-b) of their scores over the models both rank. ``scores``: each
    judge's plain Bradley-Terry leaderboard (no intervals)."""

    judges: pl.DataFrame
    agreement: pl.DataFrame
    scores: pl.DataFrame
    settings: dict[str, Any] = field(default_factory=dict)
    filters: dict[str, Any] = field(default_factory=dict)
    inputs: dict[str, Any] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()

    def to_document(self) -> Document:
        return judges_document(self)


def position_consistency(battles: pl.DataFrame) -> pl.DataFrame:
    """Per judge: ``votes``, ``pairs`` (swapped pairs), ``consistent`` (pairs naming the same winner),
    ``consistency`` (their share; null without pairs) and ``first_won``, ``second_won``, ``tied`` (shares of the
    paired votes: model_a won, model_b won, anything else)."""
    votes = battles.select("judge", "question_id", "model_a", "model_b", "outcome").with_columns(
        (pl.col("model_a") < pl.col("model_b")).alias("__lower_first"),
        pl.when(pl.col("outcome") == "model_a").then(pl.format("model {}", pl.col("model_a")))
        .when(pl.col("outcome") == "model_b").then(pl.format("model {}", pl.col("model_b")))
        .otherwise(pl.col("outcome")).alias("__winner"),
    )
    lower, upper = pl.min_horizontal("model_a", "model_b"), pl.max_horizontal("model_a", "model_b")
    pairs = (
        votes.filter(pl.col("question_id").is_not_null())
        .group_by("judge", "question_id", lower.alias("__lower"), upper.alias("__upper"))
        .agg(
            pl.col("__lower_first").sum().alias("__firsts"), (~pl.col("__lower_first")).sum().alias("__seconds"),
            pl.col("__winner").filter(pl.col("__lower_first")).first().alias("__one"),
            pl.col("__winner").filter(~pl.col("__lower_first")).first().alias("__other"),
            (pl.col("outcome") == "model_a").sum().alias("__first_won"), (pl.col("outcome") == "model_b").sum().alias("__second_won"),
        )
        .filter((pl.col("__firsts") == 1) & (pl.col("__seconds") == 1))
        .group_by("judge")
        .agg(
            pl.len().alias("pairs"), (pl.col("__one") == pl.col("__other")).sum().alias("consistent"),
            pl.col("__first_won").sum().alias("__first_won"), pl.col("__second_won").sum().alias("__second_won"),
        )
    )
    counts = votes.group_by("judge").agg(pl.len().alias("votes"))
    paired_votes = 2 * pl.col("pairs")
    return (
        counts.join(pairs, on="judge", how="left", nulls_equal=True)
        .with_columns(pl.col("pairs", "consistent", "__first_won", "__second_won").fill_null(0).cast(pl.Int64))
        .select(
            "judge", pl.col("votes").cast(pl.Int64), "pairs", "consistent",
            pl.when(pl.col("pairs") > 0).then(pl.col("consistent") / pl.col("pairs")).alias("consistency"),
            pl.when(pl.col("pairs") > 0).then(pl.col("__first_won") / paired_votes).alias("first_won"),
            pl.when(pl.col("pairs") > 0).then(pl.col("__second_won") / paired_votes).alias("second_won"),
            pl.when(pl.col("pairs") > 0).then(1 - (pl.col("__first_won") + pl.col("__second_won")) / paired_votes).alias("tied"),
        )
        .sort(["votes", "judge"], descending=[True, False], nulls_last=True)
    )


def judge_scores(battles: pl.DataFrame, min_battles: int) -> tuple[pl.DataFrame, tuple[str, ...]]:
    """Each judge's plain Bradley-Terry fit (no intervals): ``judge, rank, model, score, battles``; and what the
    fits had to say, prefixed by their judge."""
    from arena_cli import api

    boards: list[pl.DataFrame] = []
    warnings: list[str] = []
    unranked: list[str] = []
    for (judge,), votes in battles.group_by("judge", maintain_order=True):
        label = "(no judge)" if judge is None else str(judge)
        try:
            result = api.fit(votes.drop("judge", "question_id"), ci="none", min_battles=min_battles)
        except NoDataError:
            unranked.append(label)
            continue
        warnings.extend(f"judge {label}: {message}" for message in result.warnings)
        boards.append(result.leaderboard.select(pl.lit(judge, dtype=pl.String).alias("judge"), "rank", "model", "score", "battles"))
    if unranked:  # one line, however many judges (a crowd has hundreds)
        shown = ", ".join(unranked[:SHOWN_JUDGES]) + (f", … ({len(unranked)} in all)" if len(unranked) > SHOWN_JUDGES else "")
        warnings.append(
            f"no leaderboard for {len(unranked)} judge(s): fewer than two models with at least {min_battles} of the judge's votes "
            f"that a fit can rank (lower --min-battles?): {shown}"
        )
    schema = pl.Schema({"judge": pl.String(), "rank": pl.Int64(), "model": pl.String(), "score": pl.Float64(), "battles": pl.Int64()})
    scores = pl.concat([b.cast(schema) for b in boards]) if boards else pl.DataFrame(schema=schema)
    return scores, tuple(warnings)


def judge_agreement(scores: pl.DataFrame) -> pl.DataFrame:
    """Per two judges with leaderboards: the models both rank, and the Spearman and Kendall (tau-b) rank
    correlations of their scores over those models (null below three models, or when one side is constant)."""
    from scipy import stats

    boards = {judge: board for (judge,), board in scores.group_by("judge", maintain_order=True)}
    rows = []
    for one, other in combinations(sorted(boards, key=lambda j: (j is None, j or "")), 2):
        both = boards[one].join(boards[other], on="model", suffix="_other")
        x, y = both["score"].to_numpy(), both["score_other"].to_numpy()
        defined = both.height >= 3 and x.std() > 0 and y.std() > 0
        rows.append({
            "judge": one, "other_judge": other, "models": both.height,
            "spearman": float(stats.spearmanr(x, y).statistic) if defined else None,
            "kendall": float(stats.kendalltau(x, y).statistic) if defined else None,
        })
    schema: dict[str, pl.DataType] = {"judge": pl.String(), "other_judge": pl.String(), "models": pl.Int64(), "spearman": pl.Float64(), "kendall": pl.Float64()}
    return pl.DataFrame(rows, schema=schema)


def judges_document(report: JudgeReport) -> Document:
    from arena_cli.render.document import Document, Table
    from arena_cli.render.views import meta

    share = {c: 3 for c in ("consistency", "first_won", "second_won", "tied")}
    consistency_notes = (
        "pairs: swapped pairs, two votes on one prompt between the same two models, each shown first once. "
        "consistency: the share of pairs whose two votes name the same winner (or both a tie). first_won, second_won, "
        "tied: shares of the paired votes won by the answer shown first (model_a), second, or neither; a judge "
        "without position bias has first_won = second_won.",
    )
    agreement_notes = ("Rank correlations of two judges' plain Bradley-Terry scores over the models both rank (null below three).",)
    tables = (
        Table("judges", report.judges, "Position consistency per judge", share, consistency_notes,
              empty="No votes."),
        Table("agreement", report.agreement, "Agreement between judges' leaderboards", {"spearman": 3, "kendall": 3}, agreement_notes,
              empty="Fewer than two judges have a leaderboard: nothing to compare."),
        Table("scores", report.scores, "Leaderboard per judge (plain Bradley-Terry, no intervals)", {"score": 1}),
    )
    return Document("judges", tables, meta=meta(report), title="arena judges")
