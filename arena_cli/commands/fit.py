"""`arena fit`: a leaderboard from the store or from files — plain or style-controlled Bradley-Terry."""

from __future__ import annotations

from arena_cli.commands.options import feature_options, filter_options, fit_options, source_options
from arena_cli.commands.output import Output, output_options, progress_bar, show
from arena_cli.io.options import BattleFilter, FeatureOptions, Source
from arena_cli.models.options import FitOptions


@source_options
@fit_options()
@filter_options
@feature_options
@output_options
def fit_command(source: Source, options: FitOptions, filters: BattleFilter, features: FeatureOptions, output: Output) -> None:
    """Fit a leaderboard: Bradley-Terry scores (1000 + 400/ln10 · strength), intervals, ranks, style coefficients.

    Reads the store (or FILES directly). Prints per model rank, rank interval, score and interval, and battle
    counts; with --style, the style coefficients beneath. Warnings (excluded models, dropped battles) go to stderr.
    """
    from arena_cli import api

    with progress_bar("bootstrap") as on_progress:
        result = api.fit(source, options, filters=filters, features=features, on_progress=on_progress)
    show(result, output)
