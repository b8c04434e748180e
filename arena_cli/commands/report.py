"""`arena report`: a complete ranking report (data, leaderboards, rank diff, style coefficients, plots) in
one html file or a markdown file with its images."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from arena_cli.commands.diff import DEFAULT_VARIANTS, BaselineOption, TopKOption, VariantsOption, run_variants
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
from arena_cli.commands.options import ExcludeModelsOption, ModelsOption, SourcesArgument, StoreOption, WhereOption, split_list
from arena_cli.models.options import DEFAULT_SEED, BothBad, Solver, Ties
from arena_cli.render.document import OutputFormat


def report_command(
    output: Annotated[Path, typer.Option("--output", "-o", help="Report file: .html (one self-contained page, plots inline) or .md (images written beside it as <name>-<plot>.png).", show_default=False)],
    sources: SourcesArgument = None,
    store: StoreOption = None,
    output_format: Annotated[Optional[OutputFormat], typer.Option("--format", "-f", help="Override the format the -o extension implies (html, markdown; json and the rest give the tables only).", show_default=False)] = None,
    variants: VariantsOption = DEFAULT_VARIANTS,
    baseline: BaselineOption = "none",
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
) -> None:
    """Write a ranking report: data summary (battles, models, dates, outcomes, quarantine), the rank-diff
    table across style-control variants, style coefficients, highlights, every variant's leaderboard with
    score and rank intervals, and plots (score intervals with and without style control, rank shifts between
    variants, pairwise win rates and battle counts).

    The html report is one file that needs no network to view; the markdown report links PNG images
    written next to it.
    """
    from dataclasses import replace

    from arena_cli.console import info
    from arena_cli.io.battles import load_battles
    from arena_cli.info import describe, store_context
    from arena_cli.matrix import pairwise_counts
    from arena_cli.render import emit
    from arena_cli.report import report_document

    options = build_fit_options(
        ties=ties, both_bad=both_bad, no_normalize=no_normalize, anchor=anchor, reweight=reweight, ridge=ridge,
        compat=compat, min_battles=min_battles, ci=ci, rounds=rounds, seed=seed, confidence=confidence,
        cluster=cluster, solver=solver, workers=workers,
    )
    filters = {"where": where, "models": split_list(models), "exclude_models": split_list(exclude_models)}
    comparison, results, _ = run_variants(sources, store, variants, baseline, None, top_k, options, where=where, models=models,
                                          exclude_models=exclude_models, recipe=recipe, encoding=encoding)
    # The data summary and the heatmaps describe the same filtered battles the fits read.
    from arena_cli.io.options import BattleFilter, Source

    battles = load_battles(Source(tuple(sources or ()), store), BattleFilter(**filters), columns=["model_a", "model_b", "outcome", "timestamp", "language"]).battles
    quarantine, features = (None, None) if sources else store_context(store)
    settings = {**comparison.settings, "filters": filters, "feature_recipe": {"recipe": recipe, "encoding": encoding}}
    source = ", ".join(str(s) for s in sources) if sources else str(store or "store")
    doc = report_document(
        describe(battles, quarantine, features), replace(comparison, settings=settings),
        {name: r.leaderboard for name, r in results.items()}, pairwise_counts(battles), source,
    )
    written = emit(doc, output_format, output)
    info(f"wrote {written.value} report to {output}")
