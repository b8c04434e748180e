"""How each result of the Python API looks as a :class:`Document`: its tables, their layouts and notes, and
one ``meta`` shape for every command (``settings, filters, inputs, versions, warnings`` and the few keys of
its own), which JSON writes as ``{"schema_version": 2, "kind", "meta", "tables"}``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import polars as pl

from arena_cli.models.options import POSITION
from arena_cli.models.result import WIN_RATE_COLUMNS
from arena_cli.render.document import Column, Document, Table

if TYPE_CHECKING:
    from arena_cli.comparison import LeaderboardComparison, VariantComparison
    from arena_cli.models.result import FitResult
    from arena_cli.results import FeatureTable, IngestReport, PairwiseMatrix, Summary

SCORE_DIGITS = 1
COEF_DIGITS = 3
#: Win rates are shown as percentages with this many decimals (arena-hard-auto's one).
WIN_RATE_DIGITS = 1

#: How to read the two rank columns; they answer different questions, so a rank can lie outside its range.
RANK_NOTE = (
    "rank: 1 + the number of models whose score interval lies wholly above this model's (LMArena's rank: models "
    "share a rank while their intervals overlap). rank range: the central interval (at the fit's confidence) of "
    "the model's position by score over the resamples (normal draws for sandwich intervals). A shared rank can lie "
    "outside the range."
)


def meta(result: Any, **own: Any) -> dict[str, Any]:
    """The ``meta`` every document has, in this order: ``settings`` (what determines the numbers),
    ``filters`` (which battles), ``inputs`` (from where), ``versions``, ``warnings``; then the kind's own keys.
    A fit's settings carry the versions of the libraries behind its numbers; they are lifted out to
    ``versions`` (a document without a fit names this tool's version only)."""
    import arena_cli

    settings = dict(result.settings)
    versions = settings.pop("versions", None) or {"arena_cli": arena_cli.__version__}
    for side in ("old", "new"):  # a comparison's sides were each fitted (or read) with their own versions
        if isinstance(settings.get(side), dict) and "versions" in settings[side]:
            settings[side] = {k: v for k, v in settings[side].items() if k != "versions"}
    return {
        "settings": settings,
        "filters": result.filters,
        "inputs": result.inputs,
        "versions": versions,
        "warnings": list(dict.fromkeys(result.warnings)),
        **own,
    }


# ----------------------------------------------------------------------------------------- leaderboard


def fit_notes(settings: Mapping[str, Any]) -> tuple[str, ...]:
    """The settings that change how scores read, said beneath the table: the anchor, Davidson's tie parameter,
    the position term and the baseline of the win rates (JSON has them in ``meta.settings``: ``anchor``,
    ``tie_parameter``, ``position``, ``baseline_model``)."""
    notes = []
    anchor = settings.get("anchor")
    if anchor:
        notes.append(f"Anchored: {anchor['model']} is fixed at {anchor['score']:g} (a zero-width interval); the other scores and intervals are relative to it.")
    tie = settings.get("tie_parameter")
    if tie:
        notes.append(f"Ties: Davidson's model, tie parameter ν = {_tie_parameter(tie)}; a score difference gives P(win | not a tie).")
    position = settings.get("position")
    if position:
        notes.append(f"Position: the model shown first (model_a) has {_position(position)} log-odds of advantage (the row 'position' of the coefficients); scores are free of it.")
    baseline = settings.get("baseline_model")
    if baseline:
        notes.append(WIN_RATE_NOTE.format(baseline=baseline))
    return tuple(notes)


#: How to read the position row of the coefficients.
POSITION_NOTE = "position: the log-odds advantage of the model shown first (model_a); not a style feature, so not per sd."
#: How to read the win-rate column.
WIN_RATE_NOTE = (
    "win %: the predicted share of wins against {baseline} (a tie counts half) at equal style, averaged over the "
    "two orders of showing the pair; {baseline} itself is at 50%."
)


def _tie_parameter(tie: Mapping[str, Any]) -> str:
    bounds = f" [{tie['lower']:.3f}, {tie['upper']:.3f}]" if tie.get("lower") is not None else ""
    return f"{tie['nu']:.3f}{bounds}"


def _position(position: Mapping[str, Any]) -> str:
    bounds = f" [{position['lower']:+.3f}, {position['upper']:+.3f}]" if position.get("lower") is not None else ""
    return f"{position['coef']:+.3f}{bounds}"


def variant_fit_notes(settings: Mapping[str, Any]) -> tuple[str, ...]:
    """:func:`fit_notes` of a rank diff, whose settings keep what differs between variants in ``per_variant``:
    one anchor and baseline, and each variant's own tie parameter and position term."""
    per_variant = settings.get("per_variant") or {}
    shared = fit_notes({k: settings.get(k) for k in ("anchor", "baseline_model")})
    ties = {name: own["tie_parameter"] for name, own in per_variant.items() if own.get("tie_parameter")}
    positions = {name: own["position"] for name, own in per_variant.items() if own.get("position")}
    notes = [*shared]
    if ties:
        each = ", ".join(f"{name} {_tie_parameter(tie)}" for name, tie in ties.items())
        notes.append(f"Ties: Davidson's model, tie parameter ν per variant: {each}; a score difference gives P(win | not a tie).")
    if positions:
        each = ", ".join(f"{name} {_position(position)}" for name, position in positions.items())
        notes.append(f"Position: log-odds of advantage of the model shown first (model_a) per variant: {each}; scores are free of it.")
    return tuple(notes) if ties or positions else fit_notes(settings)


def leaderboard_layout(columns: Sequence[str], baseline: str | None = None) -> tuple[Column, ...]:
    """How people see a leaderboard: rank, rank range, model, score with its interval, the win rate against the
    ``baseline`` model when there is one, then the counts (on a narrow terminal losses, ties, wins, battles, the
    win rate and the rank range give way, in this order)."""
    counts = {"battles": 2, "wins": 3, "ties": 3, "losses": 3}
    win_rate = "win_rate" in columns and baseline is not None
    return (
        Column("rank", "rank"),
        Column("rank range", "rank_lower", through="rank_upper", priority=1),
        Column("model", "model"),
        Column("score", "score", "score_lower", "score_upper", digits=SCORE_DIGITS),
        *((Column(f"win % vs {baseline}", "win_rate", "win_rate_lower", "win_rate_upper", digits=WIN_RATE_DIGITS, percent=True, priority=1),) if win_rate else ()),
        *(Column(c, c, priority=p) for c, p in counts.items() if c in columns),
    )


def leaderboard_document(result: FitResult) -> Document:
    """The leaderboard and coefficient tables. People see ``rank range`` and ``score [lower, upper]``; JSON,
    CSV and parquet carry the leaderboard's columns."""
    s = result.settings
    style = s.get("style", "none")
    title = "Leaderboard" + ("" if style == "none" else f" (style control: {style})")
    notes = (*fit_notes(s), *(f"{e['model']} excluded ({e['battles']} battles): {e['reason']}" for e in s.get("excluded", [])))
    if result.leaderboard["rank_lower"].is_not_null().any():
        notes = (*notes, RANK_NOTE)
    tables = (
        Table(
            "leaderboard", result.leaderboard, title=title, notes=notes, layout=leaderboard_layout(result.leaderboard.columns, s.get("baseline_model")),
            float_digits={**{c: 1 for c in ("score", "score_lower", "score_upper")}, **{c: 3 for c in WIN_RATE_COLUMNS}},
        ),
        Table(
            "coefficients", result.coefficients, title="Style coefficients (log-odds per sd of each feature)",
            float_digits={c: 4 for c in ("coef", "lower", "upper")},
            layout=(Column("feature", "feature"), Column("coefficient", "coef", "lower", "upper", digits=4)),
            notes=(POSITION_NOTE,) if s.get("position") else (),
        ),
    )
    intervals = "no intervals" if s.get("ci") == "none" else f"{s.get('confidence', 0.95):.0%} {s.get('ci')} intervals"
    model_name = {"davidson": "Davidson", "elo": "Online Elo"}.get(s.get("method", ""), "Bradley-Terry")
    heading = f"{model_name} fit of {s.get('n_battles', 0):,} battles among {s.get('n_models', 0)} models, {intervals}"
    return Document(kind="leaderboard", tables=tables, meta=meta(result), title=heading)


# ------------------------------------------------------------------------------------------- rank diff


def rank_diff_tables(comparison: VariantComparison) -> tuple[Table, ...]:
    return (diff_table(comparison), coefficient_table(comparison), highlight_table(comparison))


def rank_diff_document(comparison: VariantComparison) -> Document:
    return Document("diff", rank_diff_tables(comparison), meta=meta(comparison), title="Rank changes under style control")


def diff_table(comparison: VariantComparison) -> Table:
    names = list(comparison.variants)
    layout = [Column("model", "model")]
    for name in names:
        # On a narrow terminal the scores give way first, then the ranges; then the variants continue below.
        layout.append(Column(f"{name} rank", f"rank_{name}", group=name))
        layout.append(Column(f"{name} range", f"rank_lower_{name}", through=f"rank_upper_{name}", priority=1, group=name))
        layout.append(Column(f"{name} score", f"score_{name}", digits=SCORE_DIGITS, priority=2, group=name))
        if f"win_rate_{name}" in comparison.rank_diff.columns:
            layout.append(Column(f"{name} win %", f"win_rate_{name}", digits=WIN_RATE_DIGITS, priority=2, group=name, percent=True))
        if name != comparison.baseline:
            layout.append(Column(f"{name} Δ", f"rank_change_{name}", change=True, strong=f"shifted_{name}", group=name))
    notes = (
        f"Δ: rank change against {comparison.baseline} (+ = the model climbs). Bold (* in plain text): a significant "
        f"shift, the rank interval no longer overlaps the one under {comparison.baseline}.",
        "rank: LMArena's (1 + the number of models whose score interval lies wholly above); range: the central interval "
        "of the position over the resamples, so a shared rank can lie outside it. All variants are fitted on the same battles with the same resamples; "
        "JSON and CSV also give each change's interval over those paired resamples (rank_change_lower/upper_<variant>).",
        *variant_fit_notes(comparison.settings),
    )
    digits = {c: SCORE_DIGITS if c.startswith("score") else 3 for c in comparison.rank_diff.columns if c.startswith(("score", "win_rate"))}
    return Table("rank_diff", comparison.rank_diff, "Rank by style-control variant", digits, notes, tuple(layout))


def coefficient_table(comparison: VariantComparison) -> Table:
    frame = comparison.coefficients
    features = [c for c in frame.columns if c != "variant" and not c.endswith(("_lower", "_upper"))]
    layout = (Column("variant", "variant"), *[Column(f, f, f"{f}_lower", f"{f}_upper", digits=COEF_DIGITS, group=f) for f in features])
    notes = ("Style coefficients: log-odds per standard deviation of the normalised feature difference, "
             "with intervals; — where the variant does not control for the feature.", *((POSITION_NOTE,) if POSITION in features else ()))
    digits = {c: COEF_DIGITS for c in frame.columns if c != "variant"}
    empty = "No variant controls for style, so there are no style coefficients."
    return Table("coefficients", frame, "Style coefficients by variant", digits, notes, layout, empty)


def highlight_table(comparison: VariantComparison) -> Table:
    layout = (
        Column("variant", "variant"), Column("model", "model"), Column("change", "change"),
        Column("rank before", "rank_before", priority=2), Column("rank after", "rank_after", priority=1),
        Column("Δ rank", "rank_change", change=True),
        Column("place before", "position_before", priority=3), Column("place after", "position_after", priority=3),
    )
    notes = (f"Against {comparison.baseline}: significant shifts, and models entering or leaving the top "
             f"{comparison.top_k} (place: position by score, 1 = highest; ranks tie while intervals overlap).",)
    empty = f"No significant shift, and no model entered or left the top {comparison.top_k}."
    return Table("highlights", comparison.highlights, "Highlights", notes=notes, layout=layout, empty=empty)


# ---------------------------------------------------------------------------------- two leaderboards


def comparison_document(comparison: LeaderboardComparison) -> Document:
    layout = (
        Column("model", "model"), Column("status", "status"),
        Column("old rank", "rank_old"),
        Column("old range", "rank_lower_old", through="rank_upper_old", priority=1),
        Column("new rank", "rank_new"),
        Column("new range", "rank_lower_new", through="rank_upper_new", priority=1),
        Column("Δ rank", "rank_change", change=True, strong="rank_beyond_interval"),
        Column("old score", "score_old", digits=SCORE_DIGITS, priority=3),
        Column("new score", "score_new", digits=SCORE_DIGITS, priority=2),
        Column("Δ score", "score_change", digits=SCORE_DIGITS, change=True, strong="score_beyond_interval"),
        *((Column("old win %", "win_rate_old", digits=WIN_RATE_DIGITS, percent=True, priority=3),
           Column("new win %", "win_rate_new", digits=WIN_RATE_DIGITS, percent=True, priority=2),
           Column("Δ win %", "win_rate_change", digits=WIN_RATE_DIGITS, percent=True, change=True, priority=1))
          if "win_rate_change" in comparison.changes.columns else ()),
    )
    digits = {c: SCORE_DIGITS for c in comparison.changes.columns if c.startswith("score") and "beyond" not in c}
    digits |= {c: 3 for c in comparison.changes.columns if c.startswith("win_rate")}
    n_common = int((comparison.changes["status"] == "kept").sum())
    change = "old rank - new rank" if n_common == comparison.changes.height else (
        f"the change of rank among the {n_common} models both leaderboards have, old - new (models that entered or "
        f"left move no one; rank ranges among them from the {comparison.common_ranks_from}; JSON and CSV: common_rank_*)"
    )
    offset = comparison.summary()["score_offset"]
    aligned = (f"Δ score: new - old - score_offset; score_offset, {offset:+.1f} points, the mean score change of the models both "
               f"boards have, is taken out so that they keep their mean score (models that entered or left move no score)",) if abs(offset) >= 0.05 else ()
    notes = (f"Δ rank: {change}; + = the model climbs. Bold (* in plain text): beyond the intervals (the old and new intervals do not overlap).", *aligned)
    tables = (
        Table("changes", comparison.changes, f"{comparison.old_label} → {comparison.new_label}", digits, notes, layout),
        Table("gates", comparison.gates, "--fail-on conditions"),
    )
    own = {"old": comparison.old_label, "new": comparison.new_label, "summary": comparison.summary()}
    return Document("compare", tables, meta=meta(comparison, **own), title="Leaderboard comparison")


# ---------------------------------------------------------------------------------------------- matrix


def matrix_document(matrix: PairwiseMatrix) -> Document:
    """The model × model matrix of the chosen value, or every pair with all quantities (``long``)."""
    from arena_cli.pairwise import VALUES, wide_matrix

    if matrix.long:
        digits = {"win_rate": 3, "predicted": 3}
        title = "Pairwise battles, win rates and predicted win probabilities"
        return Document("matrix", (Table("pairs", matrix.pairs, title, digits),), meta=meta(matrix), title="arena matrix")
    order = list(matrix.order)
    frame = wide_matrix(matrix.pairs, matrix.value, order)
    digits = {} if matrix.value == "battles" else {m: 3 for m in order}
    # on a narrow terminal the opponents continue in further tables, each repeating the model column
    layout = (Column("model", "model"), *[Column(m, m, group=m) for m in order])
    return Document("matrix", (Table("matrix", frame, VALUES[matrix.value], digits, layout=layout),), meta=meta(matrix), title="arena matrix")


# ------------------------------------------------------------------------------------- data and store


def summary_tables(summary: Summary) -> tuple[Table, ...]:
    # one row, each value in its own type (JSON numbers are numbers), first and last as ISO 8601 text
    types = {"battles": pl.Int64, "total_weight": pl.Float64, "models": pl.Int64, "first": pl.String, "last": pl.String}
    frame = pl.DataFrame([summary.overview], schema={k: t for k, t in types.items() if k in summary.overview or k != "total_weight"})
    tables = [Table("overview", frame, "Battles"), Table("models", summary.models, "Models"), Table("outcomes", summary.outcomes, "Outcomes")]
    if summary.languages is not None:
        tables.append(Table("languages", summary.languages, "Languages"))
    if summary.quarantine is not None:
        tables.append(Table("quarantine", summary.quarantine, "Quarantined rows", empty="No rows quarantined."))
    if summary.features is not None and summary.features.height:
        note = "from_metadata: battles without texts, whose counts are LMArena's precomputed conv_metadata."
        tables.append(Table("features", summary.features, "Computed style features", notes=(note,)))
    return tuple(tables)


def summary_document(summary: Summary) -> Document:
    return Document("info", summary_tables(summary), meta=meta(summary, overview=summary.overview), title="arena info")


def feature_document(table: FeatureTable) -> Document:
    if table.kind == "feature_list":
        note = "Columns are <feature>_a and <feature>_b. Style groups are summed per side for style control; other features are extra columns."
        return Document("feature_list", (Table("features", table.frame, "Style features", notes=(note,)),), meta=meta(table))
    digits = {c: 4 for c in table.frame.columns if "density" in c}
    return Document("features", (Table("features", table.frame, "Style features per battle", digits),), meta=meta(table))


def ingest_document(report: IngestReport) -> Document:
    rows = [s.as_dict() for s in report.summaries]
    frame = pl.DataFrame({
        "source": [r["source"] for r in rows],
        "rows_read": pl.Series([r["rows_read"] for r in rows], dtype=pl.Int64),
        "stored": pl.Series([r["stored"] for r in rows], dtype=pl.Int64),
        "duplicates": pl.Series([r["duplicates"] for r in rows], dtype=pl.Int64),
        "quarantined": pl.Series([r["quarantined"] for r in rows], dtype=pl.Int64),
        "quarantined_by_reason": [", ".join(f"{k} {v}" for k, v in r["quarantined_by_reason"].items()) for r in rows],
    })
    layout = (
        Column("source", "source"), Column("read", "rows_read"), Column("stored", "stored"),
        Column("duplicates", "duplicates", priority=1), Column("quarantined", "quarantined"), Column("reasons", "quarantined_by_reason"),
    )
    table = Table("sources", frame, f"ingest into {report.store}", layout=layout)
    return Document("ingest", (table,), meta=meta(report, store=str(report.store)))
