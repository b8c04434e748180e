"""`arena diff`: how much the leaderboard moves once style is controlled — one rank-diff table over
style-control variants fitted on the same battles with the same resamples, and their style coefficients."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

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

DEFAULT_VARIANTS = "none,length,markdown,both"

VariantsOption = Annotated[
    str,
    typer.Option(
        "--variants",
        help="Comma-separated style-control variants: none, length, markdown, both, or a custom feature set joined "
        "with + (length+bold), optionally named NAME=SET (lb=length+bold).",
    ),
]
BaselineOption = Annotated[str, typer.Option("--baseline", help="The variant rank changes are measured against.")]
SortOption = Annotated[
    Optional[str],
    typer.Option("--sort", help="Sort rows by this variant's rank, or by model name with 'model' (default: the last variant).", show_default=False),
]
TopKOption = Annotated[int, typer.Option("--top-k", min=1, help="Highlights: models entering or leaving the K highest scores.")]


def run_variants(sources, store, variant_list, baseline, sort, top_k, options, *, where, models, exclude_models, recipe, encoding):
    """Load the battles every variant needs, fit all variants with a progress bar, warn once per message.

    Shared by ``arena diff`` and ``arena report``; returns the comparison, the fits and the battles."""
    from arena_cli.compare import diff_variants, parse_variants
    from arena_cli.console import progress, warn
    from arena_cli.models import CIMethod
    from arena_cli.models.inputs import load_fit_battles

    variants = parse_variants(variant_list)
    from arena_cli.io.options import BattleFilter, FeatureOptions, Source

    loaded = load_fit_battles(
        Source(tuple(sources or ()), store), BattleFilter(where, split_list(models), split_list(exclude_models)), list(variants.values()),
        cluster=options.cluster, features=FeatureOptions(recipe, encoding),
    )
    for message in loaded.warnings:
        warn(message)
    battles = loaded.battles
    with progress() as bar:
        task = bar.add_task(f"bootstrap × {len(variants)} variants", total=options.rounds, visible=options.ci in (None, CIMethod.bootstrap))
        comparison, results = diff_variants(
            battles, variants, options, baseline, sort, top_k, on_progress=lambda done, total: bar.update(task, completed=done, total=total)
        )
    for message in dict.fromkeys(m for r in results.values() for m in r.warnings):
        warn(message)
    return comparison, results, battles


def diff_command(
    sources: SourcesArgument = None,
    store: StoreOption = None,
    variants: VariantsOption = DEFAULT_VARIANTS,
    baseline: BaselineOption = "none",
    sort: SortOption = None,
    top_k: TopKOption = 10,
    where: WhereOption = None,
    models: ModelsOption = None,
    exclude_models: ExcludeModelsOption = None,
    ties: TiesOption = Ties.half,
    both_bad: BothBadOption = BothBad.tie,
    no_normalize: NoNormalizeOption = False,
    anchor: AnchorOption = None,
    reweight: ReweightOption = None,
    ridge: RidgeOption = None,
    compat: CompatOption = None,
    min_battles: MinBattlesOption = None,
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
    """Rank-diff table: each model's rank (with interval) and score under each style-control variant, and its
    rank change against the baseline; then the style coefficients per variant and the highlights.

    All variants are fitted on the same battles with the same bootstrap resamples, so differences between
    them are not noise from different draws. Markdown (-f markdown or -o diff.md) pastes into a pull request.
    """
    from dataclasses import replace

    from arena_cli.render import emit

    options = build_fit_options(
        ties=ties, both_bad=both_bad, no_normalize=no_normalize, anchor=anchor, reweight=reweight, ridge=ridge,
        compat=compat, min_battles=min_battles, ci=ci, rounds=rounds, seed=seed, confidence=confidence,
        cluster=cluster, solver=solver, workers=workers,
    )
    comparison, _, _ = run_variants(sources, store, variants, baseline, sort, top_k, options, where=where, models=models,
                                    exclude_models=exclude_models, recipe=recipe, encoding=encoding)
    settings = {**comparison.settings, "filters": {"where": where, "models": split_list(models), "exclude_models": split_list(exclude_models)},
                "feature_recipe": {"recipe": recipe, "encoding": encoding}}
    emit(replace(comparison, settings=settings).to_document(), output_format, Path(output) if output else None)
