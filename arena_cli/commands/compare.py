"""`arena compare OLD NEW`: what changed between two leaderboards, for cron jobs and CI gates."""

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
    StyleOption,
    TiesOption,
    WorkersOption,
    build_fit_options,
)
from arena_cli.commands.options import ExcludeModelsOption, FormatOption, ModelsOption, OutputOption, split_list
from arena_cli.models.options import DEFAULT_SEED, BothBad, Solver, Ties

SIDE_HELP = "an `arena fit -o` leaderboard file (.json, .parquet, .csv) or a store directory (fitted here with the fit options)"

FAIL_ON_HELP = (
    "Exit with code 7 when a condition is met (repeatable; the table is written first): "
    "rank-shift=N (a model moved N or more ranks), score-shift=X (a score changed by X or more points), "
    "top-k-change=K (a model entered or left the K highest scores), significant-shift (a model's new rank "
    "interval does not overlap its old one), models-changed (a model entered or left)."
)


def _side(path: Path, where: str | None, option: str, options, *, models, exclude_models, recipe, encoding):
    """A leaderboard and its settings: read from a file, or fitted on a store (optionally a --where slice)."""
    from arena_cli.compare import load_leaderboard
    from arena_cli.errors import InputError

    if not path.is_dir():
        if where:
            raise InputError(f"{option} applies to a store directory; {path} is a leaderboard file")
        return load_leaderboard(path)
    from arena_cli.console import progress, warn
    from arena_cli.models import CIMethod, fit
    from arena_cli.models.inputs import load_encoded_battles

    resolved = options.resolved()
    from arena_cli.io.options import BattleFilter, FeatureOptions, Source

    battles = load_encoded_battles(Source(store=path), BattleFilter(where, models, exclude_models), resolved, FeatureOptions(recipe, encoding)).battles
    with progress() as bar:
        task = bar.add_task(f"fitting {path.name}", total=resolved.rounds, visible=resolved.ci is CIMethod.bootstrap)
        result = fit(battles, resolved, on_progress=lambda done, total: bar.update(task, completed=done))
    for message in result.warnings:
        warn(message)
    return result.leaderboard, {**result.settings, "where": where}


def compare_command(
    old: Annotated[Path, typer.Argument(help=f"The earlier leaderboard: {SIDE_HELP}.", show_default=False)],
    new: Annotated[Path, typer.Argument(help=f"The later leaderboard: {SIDE_HELP}.", show_default=False)],
    fail_on: Annotated[Optional[list[str]], typer.Option("--fail-on", metavar="CONDITION", help=FAIL_ON_HELP, show_default=False)] = None,
    old_where: Annotated[Optional[str], typer.Option("--old-where", help="SQL filter on OLD's battles when OLD is a store, e.g. \"timestamp < DATE '2025-06-01'\".", show_default=False)] = None,
    new_where: Annotated[Optional[str], typer.Option("--new-where", help="SQL filter on NEW's battles when NEW is a store (OLD and NEW may be the same store).", show_default=False)] = None,
    models: ModelsOption = None,
    exclude_models: ExcludeModelsOption = None,
    style: StyleOption = "none",
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
    """Compare two leaderboards: models that entered or left, rank and score changes, and whether each change
    is beyond the intervals. With --fail-on, exit 7 when the leaderboard changed in a way that matters.

    Exit codes: 0 no --fail-on condition met; 7 a condition met (the comparison is still written);
    3 unreadable input or a bad --fail-on; 6 no battles left in a store slice.
    """
    from arena_cli.compare import compare_leaderboards, parse_gate, settings_mismatch
    from arena_cli.console import warn
    from arena_cli.errors import GateError, InputError
    from arena_cli.render import emit

    gates = [parse_gate(text) for text in fail_on or []]
    options = build_fit_options(
        style=style, ties=ties, both_bad=both_bad, no_normalize=no_normalize, anchor=anchor, reweight=reweight,
        ridge=ridge, compat=compat, min_battles=min_battles, ci=ci, rounds=rounds, seed=seed, confidence=confidence,
        cluster=cluster, solver=solver, workers=workers,
    )
    common = {"models": split_list(models), "exclude_models": split_list(exclude_models), "recipe": recipe, "encoding": encoding}
    if (models or exclude_models) and not (old.is_dir() or new.is_dir()):  # they choose the battles a store's fit uses
        raise InputError("--models/--exclude-models apply to a side that is a store directory; both sides are leaderboard files")
    old_board, old_settings = _side(old, old_where, "--old-where", options, **common)
    new_board, new_settings = _side(new, new_where, "--new-where", options, **common)
    differing = settings_mismatch(old_settings, new_settings)
    if differing:
        warn(f"the two leaderboards were fitted with different {', '.join(differing)}: their scores may not be comparable")
    labels = [f"{path}" + (f" [{where}]" if where else "") for path, where in ((old, old_where), (new, new_where))]
    comparison = compare_leaderboards(old_board, new_board, gates, labels[0], labels[1], {"old": old_settings, "new": new_settings})
    emit(comparison.to_document(), output_format, output)
    if comparison.failed:
        met = comparison.gates.filter(comparison.gates["met"])
        details = "; ".join(f"{c} ({m})" for c, m in met.select("condition", "models").iter_rows())
        raise GateError(f"leaderboard changed: {details}")
