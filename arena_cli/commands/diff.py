"""`arena diff`: how much the leaderboard moves once style is controlled — one rank-diff table over
style-control variants fitted on the same battles with the same resamples, and their style coefficients."""

from __future__ import annotations

from arena_cli.commands.options import VariantChoice, feature_options, filter_options, fit_options, source_options, variant_options
from arena_cli.commands.output import Output, output_options, progress_bar, show
from arena_cli.io.options import BattleFilter, FeatureOptions, Source
from arena_cli.models.options import FitOptions


@source_options
@variant_options()
@filter_options
@fit_options(style=False)
@feature_options
@output_options
def diff_command(source: Source, choice: VariantChoice, filters: BattleFilter, options: FitOptions, features: FeatureOptions, output: Output) -> None:
    """Rank-diff table: each model's rank (with interval) and score under each style-control variant, and its
    rank change against the baseline; then the style coefficients per variant and the highlights.

    All variants are fitted on the same battles with the same bootstrap resamples, so differences between
    them are not noise from different draws. Markdown (-f markdown or -o diff.md) pastes into a pull request.
    """
    from arena_cli import api

    with progress_bar("bootstrap of every variant") as on_progress:
        comparison = api.rank_diff(
            source, choice.variants, baseline=choice.baseline, sort=choice.sort, top_k=choice.top_k, options=options,
            filters=filters, features=features, on_progress=on_progress,
        )
    show(comparison, output)
