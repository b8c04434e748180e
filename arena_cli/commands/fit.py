"""`arena fit`: a leaderboard from the store or from files — plain or style-controlled Bradley-Terry."""

from __future__ import annotations

from arena_cli.commands.fit_options import (
    AnchorOption,
    BothBadOption,
    CIOption,
    ClusterOption,
    CompatOption,
    ConfidenceOption,
    EncodingOption,
    MinBattlesOption,
    NoNormalizeOption,
    RecipeOption,
    ReweightOption,
    RidgeOption,
    RoundsOption,
    SeedOption,
    SolverOption,
    StyleOption,
    TiesOption,
    WorkersOption,
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
from arena_cli.models.options import DEFAULT_SEED, BothBad, Solver, Ties


def fit_command(
    sources: SourcesArgument = None,
    store: StoreOption = None,
    style: StyleOption = "none",
    ties: TiesOption = Ties.half,
    both_bad: BothBadOption = BothBad.tie,
    no_normalize: NoNormalizeOption = False,
    anchor: AnchorOption = None,
    reweight: ReweightOption = None,
    ridge: RidgeOption = None,
    compat: CompatOption = None,
    min_battles: MinBattlesOption = None,
    where: WhereOption = None,
    models: ModelsOption = None,
    exclude_models: ExcludeModelsOption = None,
    ci: CIOption = None,
    rounds: RoundsOption = 1000,
    seed: SeedOption = DEFAULT_SEED,
    confidence: ConfidenceOption = 0.95,
    cluster: ClusterOption = None,
    solver: SolverOption = Solver.newton,
    workers: WorkersOption = None,
    recipe: RecipeOption = "default",
    encoding: EncodingOption = "cl100k_base",
    output_format: FormatOption = None,
    output: OutputOption = None,
) -> None:
    """Fit a leaderboard: Bradley-Terry scores (1000 + 400/ln10 · strength), intervals, ranks, style coefficients.

    Reads the store (or FILES directly). Prints per model rank, rank interval, score and interval, and battle
    counts; with --style, the style coefficients beneath. Warnings (excluded models, dropped battles) go to stderr.
    """
    import dataclasses

    from arena_cli.console import progress, warn
    from arena_cli.models import CIMethod, fit
    from arena_cli.models.inputs import load_encoded_battles
    from arena_cli.render import emit

    options = build_fit_options(
        style=style, ties=ties, both_bad=both_bad, no_normalize=no_normalize, anchor=anchor, reweight=reweight,
        ridge=ridge, compat=compat, min_battles=min_battles, ci=ci, rounds=rounds, seed=seed, confidence=confidence,
        cluster=cluster, solver=solver, workers=workers,
    ).resolved()
    model_list, excluded_list = split_list(models), split_list(exclude_models)
    from arena_cli.io.options import BattleFilter, FeatureOptions, Source

    loaded = load_encoded_battles(Source(tuple(sources or ()), store), BattleFilter(where, model_list, excluded_list), options, FeatureOptions(recipe, encoding))
    for message in loaded.warnings:
        warn(message)
    battles = loaded.battles
    with progress() as bar:
        task = bar.add_task("bootstrap", total=options.rounds, visible=options.ci is CIMethod.bootstrap)
        result = fit(battles, options, on_progress=lambda done, total: bar.update(task, completed=done))
    for message in result.warnings:
        warn(message)
    settings = {**result.settings, "filters": {"where": where, "models": model_list, "exclude_models": excluded_list}}
    if result.feature_names:
        settings["feature_recipe"] = {"recipe": recipe, "encoding": encoding}
    emit(dataclasses.replace(result, settings=settings).to_document(), output_format, output)
