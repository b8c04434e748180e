"""The fit options shared by every command that fits leaderboards (`arena diff`, `compare`, `report`,
`matrix`), declared once, and the :class:`FitOptions` they build."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from arena_cli.models.options import DEFAULT_MIN_BATTLES, DEFAULT_SEED, BothBad, CIMethod, Compat, Solver, Ties

STYLE_HELP = (
    "Style control: none, length (tokens), markdown (header, list, bold), both (all four), or a comma list of "
    "feature groups, features (<name>_a/_b count columns) and numeric battle columns (your own covariates)."
)

StyleOption = Annotated[str, typer.Option("--style", help=STYLE_HELP)]
TiesOption = Annotated[Ties, typer.Option("--ties", help="Ties: half (half a win each way, LMArena), drop, or davidson (Davidson's model with an estimated tie parameter).")]
BothBadOption = Annotated[BothBad, typer.Option("--both-bad", help="both_bad votes: counted as a tie (LMArena) or dropped.")]
NoNormalizeOption = Annotated[bool, typer.Option("--no-normalize", help="Use style features as transformed, without standardising them to mean 0 and sd 1.")]
AnchorOption = Annotated[Optional[str], typer.Option("--anchor", metavar="MODEL=SCORE", help="Pin one model's score (e.g. mixtral-8x7b-instruct-v0.1=1114, as LMArena); default: mean score 1000.", show_default=False)]
ReweightOption = Annotated[Optional[bool], typer.Option("--reweight/--no-reweight", help="Weight battles by 1/max(n_pair, 50), normalised to mean 1, for non-uniform pair sampling (default: off; on under --compat arena-rank with style).", show_default=False)]
RidgeOption = Annotated[Optional[float], typer.Option("--ridge", help="L2 penalty (ridge/2)·Σγ² on the style coefficients, added to the MEAN negative log-likelihood per battle (arena-rank's reg convention). Default 0: the plain MLE.", show_default=False)]
CompatOption = Annotated[Optional[Compat], typer.Option("--compat", help="Reproduce arena-rank 0.1.1's defaults: with style, reweighting and ridge 1.0; sandwich intervals; no --min-battles exclusion.", show_default=False)]
MinBattlesOption = Annotated[Optional[int], typer.Option("--min-battles", help=f"Exclude models with fewer battles (after filters), with a warning. Default {DEFAULT_MIN_BATTLES} (1 under --compat).", show_default=False)]
CIOption = Annotated[Optional[CIMethod], typer.Option("--ci", help="Intervals: bootstrap (percentile, resampling battles or --cluster), sandwich (robust covariance) or none. Default bootstrap (sandwich under --compat).", show_default=False)]
RoundsOption = Annotated[int, typer.Option("--rounds", min=1, help="Bootstrap rounds, shared by every variant (also the normal draws behind sandwich rank intervals).")]
SeedOption = Annotated[int, typer.Option("--seed", min=0, help="Seed of the resamples: the same seed gives byte-identical JSON, CSV and markdown.")]
ConfidenceOption = Annotated[float, typer.Option("--confidence", help="Confidence level of every interval.")]
ClusterOption = Annotated[Optional[str], typer.Option("--cluster", help="Resample clusters of this column (e.g. judge, question_id) instead of battles; with --ci sandwich, a cluster-robust covariance.", show_default=False)]
SolverOption = Annotated[Solver, typer.Option("--solver", help="newton: exact and fast; statsmodels: the independent reference (small data only).")]
WorkersOption = Annotated[Optional[int], typer.Option("--workers", min=1, help="Bootstrap processes (default: all cores).", show_default=False)]


def _check_recipe(value: str) -> str:
    from arena_cli.features.registry import RECIPES  # polars comes with it: not at start-up

    if value not in RECIPES:
        raise typer.BadParameter(f"{value!r} is not one of {', '.join(RECIPES)}")
    return value


RecipeOption = Annotated[str, typer.Option("--recipe", callback=_check_recipe, metavar="<default|lmarena>", help="Feature recipe for style features (see `arena features`).")]
EncodingOption = Annotated[str, typer.Option("--encoding", help="Tokenizer encoding for the length feature.")]


def build_fit_options(
    *,
    style: str = "none",
    ties: Ties = Ties.half,
    both_bad: BothBad = BothBad.tie,
    no_normalize: bool = False,
    anchor: str | None = None,
    reweight: bool | None = None,
    ridge: float | None = None,
    compat: Compat | None = None,
    min_battles: int | None = None,
    ci: CIMethod | None = None,
    rounds: int = 1000,
    seed: int = DEFAULT_SEED,
    confidence: float = 0.95,
    cluster: str | None = None,
    solver: Solver = Solver.newton,
    workers: int | None = None,
):
    """The :class:`FitOptions` of parsed command-line values (validated; presets left to each variant)."""
    from arena_cli.models import FitOptions
    from arena_cli.models.options import parse_anchor

    options = FitOptions(
        style=style, ties=ties, both_bad=both_bad, normalize=not no_normalize,
        anchor=parse_anchor(anchor) if anchor else None, reweight=reweight, ridge=ridge, compat=compat,
        min_battles=min_battles, ci=ci, rounds=rounds, seed=seed, confidence=confidence, cluster=cluster,
        solver=solver, workers=workers,
    )
    options.validate()
    return options
