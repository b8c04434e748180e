"""`arena compare OLD NEW`: what changed between two leaderboards, for cron jobs and CI gates."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from arena_cli.commands.options import feature_options, fit_options, model_filter_options
from arena_cli.commands.output import Output, output_options, progress_bar, show
from arena_cli.io.options import BattleFilter, FeatureOptions
from arena_cli.models.options import FitOptions

SIDE_HELP = "an `arena fit -o` leaderboard file (.json, .parquet, .csv) or a store directory (fitted here with the fit options)"

FAIL_ON_HELP = (
    "Exit with code 7 when a condition is met (repeatable; the table is written first): "
    "rank-shift=N (a model moved N or more ranks), score-shift=X (a score changed by X or more points), "
    "top-k-change=K (a model entered or left the K highest scores), significant-shift (a model's new rank "
    "interval does not overlap its old one), models-changed (a model entered or left). Ranks are compared among "
    "the models both leaderboards have, so models entering or leaving move no one."
)


@model_filter_options
@fit_options()
@feature_options
@output_options
def compare_command(
    old: Annotated[Path, typer.Argument(help=f"The earlier leaderboard: {SIDE_HELP}.", show_default=False)],
    new: Annotated[Path, typer.Argument(help=f"The later leaderboard: {SIDE_HELP}.", show_default=False)],
    filters: BattleFilter,
    options: FitOptions,
    features: FeatureOptions,
    output: Output,
    fail_on: Annotated[Optional[list[str]], typer.Option("--fail-on", metavar="CONDITION", help=FAIL_ON_HELP, show_default=False)] = None,
    old_where: Annotated[Optional[str], typer.Option("--old-where", help="SQL filter on OLD's battles when OLD is a store, e.g. \"timestamp < DATE '2025-06-01'\".", show_default=False)] = None,
    new_where: Annotated[Optional[str], typer.Option("--new-where", help="SQL filter on NEW's battles when NEW is a store (OLD and NEW may be the same store).", show_default=False)] = None,
) -> None:
    """Compare two leaderboards: models that entered or left, rank and score changes, and whether each change
    is beyond the intervals. With --fail-on, exit 7 when the leaderboard changed in a way that matters.

    Exit codes: 0 no --fail-on condition met; 7 a condition met (the comparison is still written);
    2 a malformed --fail-on; 3 unreadable input; 6 no battles left in a store slice.
    """
    from arena_cli import api
    from arena_cli.errors import GateError

    with progress_bar("bootstrap") as on_progress:
        comparison = api.compare(
            old, new, fail_on=fail_on or (), old_where=old_where, new_where=new_where, options=options, filters=filters,
            features=features, on_progress=on_progress,
        )
    show(comparison, output)
    if comparison.failed:
        met = comparison.gates.filter(comparison.gates["met"])
        details = "; ".join(f"{c} ({m})" for c, m in met.select("condition", "models").iter_rows())
        raise GateError(f"leaderboard changed: {details}")
