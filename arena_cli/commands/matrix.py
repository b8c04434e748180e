"""`arena matrix`: pairwise battle counts, empirical win rates and model-predicted win probabilities."""

from __future__ import annotations

from enum import Enum
from typing import Annotated

import typer

from arena_cli.commands.options import feature_options, filter_options, fit_options, source_options
from arena_cli.commands.output import Output, output_options, show
from arena_cli.io.options import BattleFilter, FeatureOptions, Source
from arena_cli.models.options import FitOptions


class MatrixValue(str, Enum):
    """Which pairwise quantity the model × model matrix shows."""

    battles = "battles"
    win_rate = "win-rate"
    predicted = "predicted"

    @property
    def column(self) -> str:
        return self.value.replace("-", "_")


@source_options
@filter_options
@fit_options(intervals=False)
@feature_options
@output_options
def matrix_command(
    source: Source,
    filters: BattleFilter,
    options: FitOptions,
    features: FeatureOptions,
    output: Output,
    value: Annotated[MatrixValue, typer.Option("--value", help="What the model × model matrix shows: battles (between the two models), win-rate (of the row model, a tie or both_bad counting half) or predicted (fitted probability that the row model wins).")] = MatrixValue.win_rate,
    long: Annotated[bool, typer.Option("--long", help="One row per ordered pair with every quantity (battles, wins, ties, losses, win_rate, predicted) instead of a matrix.")] = False,
) -> None:
    """Pairwise matrix: battles, win rates or predicted win probabilities of every model against every other.

    Battles and win rates are counted as they are, rows and columns by overall win rate (a tie counting half):
    no fit. Predictions (--value predicted, --long) come from a point fit (no intervals; --style and the fit
    options set the model behind them, with style held equal), rows and columns in its leaderboard order; models
    the fit leaves out (too few battles) come last, with no prediction.
    """
    from arena_cli import api

    show(api.matrix(source, value=value.column, long=long, options=options, filters=filters, features=features), output)
