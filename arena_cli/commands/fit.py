"""`arena fit`: a leaderboard from the store or from files — plain or style-controlled Bradley-Terry."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

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
from arena_cli.models.options import DEFAULT_MIN_BATTLES, DEFAULT_SEED, BothBad, CIMethod, Compat, Solver, Ties

STYLE_HELP = (
    "Style control: none, length (tokens), markdown (header, list, bold), both (all four), or a comma list of "
    "feature groups, features (<name>_a/_b count columns) and numeric battle columns (your own covariates)."
)


def fit_command(
    sources: SourcesArgument = None,
    store: StoreOption = None,
    style: Annotated[str, typer.Option("--style", help=STYLE_HELP)] = "none",
    ties: Annotated[Ties, typer.Option("--ties", help="Ties: half (half a win each way, LMArena), drop, or davidson (Davidson's model with an estimated tie parameter).")] = Ties.half,
    both_bad: Annotated[BothBad, typer.Option("--both-bad", help="both_bad votes: counted as a tie (LMArena) or dropped.")] = BothBad.tie,
    no_normalize: Annotated[bool, typer.Option("--no-normalize", help="Use style features as transformed, without standardising them to mean 0 and sd 1.")] = False,
    anchor: Annotated[Optional[str], typer.Option("--anchor", metavar="MODEL=SCORE", help="Pin one model's score (e.g. mixtral-8x7b-instruct-v0.1=1114, as LMArena); default: mean score 1000.", show_default=False)] = None,
    reweight: Annotated[Optional[bool], typer.Option("--reweight/--no-reweight", help="Weight battles by 1/max(n_pair, 50), normalised to mean 1, for non-uniform pair sampling (default: off; on under --compat arena-rank with style).", show_default=False)] = None,
    ridge: Annotated[Optional[float], typer.Option("--ridge", help="L2 penalty (ridge/2)·Σγ² on the style coefficients, added to the MEAN negative log-likelihood per battle (arena-rank's reg convention; = ridge·n/2 on the summed scale). Default 0: the plain MLE.", show_default=False)] = None,
    compat: Annotated[Optional[Compat], typer.Option("--compat", help="Reproduce arena-rank 0.1.1's defaults: with style, reweighting and ridge 1.0; sandwich intervals with its formula; no --min-battles exclusion.", show_default=False)] = None,
    min_battles: Annotated[Optional[int], typer.Option("--min-battles", help=f"Exclude models with fewer battles (after filters), with a warning. Default {DEFAULT_MIN_BATTLES} (1 under --compat).", show_default=False)] = None,
    where: WhereOption = None,
    models: ModelsOption = None,
    exclude_models: ExcludeModelsOption = None,
    ci: Annotated[Optional[CIMethod], typer.Option("--ci", help="Intervals: bootstrap (percentile, resampling battles or --cluster), sandwich (robust covariance) or none. Default bootstrap (sandwich under --compat).", show_default=False)] = None,
    rounds: Annotated[int, typer.Option("--rounds", min=1, help="Bootstrap rounds (also the normal draws behind sandwich rank intervals).")] = 1000,
    seed: Annotated[int, typer.Option("--seed", min=0, help="Seed of the resamples: the same seed gives byte-identical output on any machine and any --workers.")] = DEFAULT_SEED,
    confidence: Annotated[float, typer.Option("--confidence", help="Confidence level of every interval.")] = 0.95,
    cluster: Annotated[Optional[str], typer.Option("--cluster", help="Resample clusters of this column (e.g. judge, question_id) instead of battles; with --ci sandwich, a cluster-robust covariance.", show_default=False)] = None,
    solver: Annotated[Solver, typer.Option("--solver", help="newton: exact and fast; statsmodels: the independent reference (small data only).")] = Solver.newton,
    workers: Annotated[Optional[int], typer.Option("--workers", min=1, help="Bootstrap processes (default: all cores).", show_default=False)] = None,
    recipe: Annotated[str, typer.Option("--recipe", help="Feature recipe for style features (see `arena features`).")] = "default",
    encoding: Annotated[str, typer.Option("--encoding", help="Tokenizer encoding for the length feature.")] = "cl100k_base",
    output_format: FormatOption = None,
    output: OutputOption = None,
) -> None:
    """Fit a leaderboard: Bradley-Terry scores (1000 + 400/ln10 · strength), intervals, ranks, style coefficients.

    Reads the store (or FILES directly). Prints per model rank, rank interval, score and interval, and battle
    counts; with --style, the style coefficients beneath. Warnings (excluded models, dropped battles) go to stderr.
    """
    import dataclasses

    from arena_cli.console import progress, warn
    from arena_cli.models import FitOptions, fit
    from arena_cli.models.inputs import load_fit_battles
    from arena_cli.models.options import parse_anchor
    from arena_cli.render import emit

    options = FitOptions(
        style=style, ties=ties, both_bad=both_bad, normalize=not no_normalize,
        anchor=parse_anchor(anchor) if anchor else None, reweight=reweight, ridge=ridge, compat=compat,
        min_battles=min_battles, ci=ci, rounds=rounds, seed=seed, confidence=confidence, cluster=cluster,
        solver=solver, workers=workers,
    ).resolved()
    model_list, excluded_list = split_list(models), split_list(exclude_models)
    battles = load_fit_battles(
        sources or (), store, [options.style], cluster=cluster, where=where, models=model_list,
        exclude_models=excluded_list, recipe=recipe, encoding=encoding,
    )
    with progress() as bar:
        task = bar.add_task("bootstrap", total=options.rounds, visible=options.ci is CIMethod.bootstrap)
        result = fit(battles, options, on_progress=lambda done, total: bar.update(task, completed=done))
    for message in result.warnings:
        warn(message)
    settings = {**result.settings, "filters": {"where": where, "models": model_list, "exclude_models": excluded_list}}
    if result.feature_names:
        settings["feature_recipe"] = {"recipe": recipe, "encoding": encoding}
    emit(dataclasses.replace(result, settings=settings).to_document(), output_format, output)
