"""`arena matrix`: pairwise battle counts, empirical win rates and model-predicted win probabilities."""

from __future__ import annotations

from enum import Enum
from typing import Annotated

import typer

from arena_cli.commands.fit_options import (
    BothBadOption,
    CompatOption,
    EncodingOption,
    MinBattlesOption,
    RecipeOption,
    ReweightOption,
    RidgeOption,
    StyleOption,
    TiesOption,
    build_fit_options,
)
from arena_cli.commands.options import (
    ExcludeModelsOption,
    FormatOption,
    ModelsOption,
    OutputOption,
    SourcesArgument,
    StoreOption,
    WhereOption,
    split_list,
)
from arena_cli.models.options import BothBad, Ties


class MatrixValue(str, Enum):
    """Which pairwise quantity the model × model matrix shows."""

    battles = "battles"
    win_rate = "win-rate"
    predicted = "predicted"

    @property
    def column(self) -> str:
        return self.value.replace("-", "_")


def matrix_command(
    sources: SourcesArgument = None,
    store: StoreOption = None,
    value: Annotated[MatrixValue, typer.Option("--value", help="What the model × model matrix shows: battles (between the two models), win-rate (of the row model, a tie or both_bad counting half) or predicted (fitted probability that the row model wins).")] = MatrixValue.win_rate,
    long: Annotated[bool, typer.Option("--long", help="One row per ordered pair with every quantity (battles, wins, ties, losses, win_rate, predicted) instead of a matrix.")] = False,
    where: WhereOption = None,
    models: ModelsOption = None,
    exclude_models: ExcludeModelsOption = None,
    style: StyleOption = "none",
    ties: TiesOption = Ties.half,
    both_bad: BothBadOption = BothBad.tie,
    reweight: ReweightOption = None,
    ridge: RidgeOption = None,
    compat: CompatOption = None,
    min_battles: MinBattlesOption = None,
    recipe: RecipeOption = "default",
    encoding: EncodingOption = "cl100k_base",
    output_format: FormatOption = None,
    output: OutputOption = None,
) -> None:
    """Pairwise matrix: battles, win rates or predicted win probabilities of every model against every other.

    Rows and columns follow the fitted leaderboard (a point fit, no intervals; --style and the fit options set
    the model behind the predictions, with style held equal). Models the fit leaves out (too few battles) come
    last, with no prediction.
    """
    from arena_cli.console import warn
    from arena_cli.io.battles import collect_parts
    from arena_cli.matrix import matrix_document, model_order, pairwise_counts, with_predictions
    from arena_cli.models import CIMethod, fit
    from arena_cli.models.inputs import load_fit_battles
    from arena_cli.render import emit

    options = build_fit_options(style=style, ties=ties, both_bad=both_bad, reweight=reweight, ridge=ridge, compat=compat,
                                min_battles=min_battles, ci=CIMethod.none).resolved()
    from arena_cli.io.options import BattleFilter, FeatureOptions, Source

    loaded = load_fit_battles(Source(tuple(sources or ()), store), BattleFilter(where, split_list(models), split_list(exclude_models)), [options.style],
                              features=FeatureOptions(recipe, encoding))
    for message in loaded.warnings:
        warn(message)
    battles = collect_parts(loaded.battles)
    result = fit(battles, options)
    for message in result.warnings:
        warn(message)
    pairs = with_predictions(pairwise_counts(battles), result)
    meta = {"settings": result.settings, "filters": {"where": where, "models": split_list(models), "exclude_models": split_list(exclude_models)}}
    emit(matrix_document(pairs, value.column, model_order(pairs, result), long=long, meta=meta), output_format, output)
