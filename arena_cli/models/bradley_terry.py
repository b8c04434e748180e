"""Bradley-Terry as a :class:`~arena_cli.models.methods.RatingMethod`: plain or style-controlled, ties as half
wins or Davidson's model, fitted by exact Newton on sufficient statistics (or statsmodels, as a reference),
with bootstrap or sandwich intervals.

The likelihood does not depend on vote order, so the battles may come aggregated by (pair, outcome).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from arena_cli.models import design as designs
from arena_cli.models.methods import Progress, Ratings
from arena_cli.models.options import POSITION, CIMethod, Compat, Penalty, ResolvedFitOptions, Solver, Ties, parse_style
from arena_cli.models.solvers import Problem, Solution, newton, statsmodels_fit


@dataclass(frozen=True)
class _VariantFit:
    options: ResolvedFitOptions
    battles: designs.Prepared
    problem: Problem
    solution: Solution


class BradleyTerry:
    """Bradley-Terry maximum likelihood (Davidson's model with ``ties=davidson``)."""

    needs_order = False
    needs_strong_connection = True

    def rate(
        self,
        battles: designs.Prepared,
        cells: designs.Cells,
        variants: Mapping[str, ResolvedFitOptions],
        on_progress: Progress | None,
    ) -> dict[str, Ratings]:
        # the variants share everything but the style, so the first one's options stand for all of them here
        shared = next(iter(variants.values()))
        if shared.position_bias:
            designs.check_position_identified(battles)
        fits: dict[str, _VariantFit] = {}
        for name, options in variants.items():
            wanted = [t for t in parse_style(options.style) if t in battles.feature_names]
            rows = [battles.feature_names.index(t) for t in wanted]
            features = battles.features if rows == list(range(battles.features.shape[0])) else battles.features[rows]
            names = tuple(wanted)
            if options.position_bias:  # an intercept: a covariate that is 1 in every battle (+1 for model_a)
                features, names = np.vstack([features, np.ones((1, battles.n_rows))]), (*names, POSITION)
            variant_battles = battles.with_features(features, names)
            weight = designs.pair_weights(cells) if options.reweight else None
            design = designs.design(variant_battles, cells, weight)
            problem = Problem(
                design, davidson=options.ties is Ties.davidson, penalty=options.penalty if wanted else Penalty(), position=options.position_bias,
            )
            solution = _solve(problem, variant_battles, cells, weight, options)
            fits[name] = _VariantFit(options, variant_battles, problem, solution)

        draws: dict[str, np.ndarray | None] = dict.fromkeys(fits)
        covariances: dict[str, np.ndarray | None] = dict.fromkeys(fits)
        if shared.ci is CIMethod.bootstrap:
            from arena_cli.models.uncertainty import BootstrapJob, Resampler, bootstrap

            job = BootstrapJob(
                problems=tuple(f.problem for f in fits.values()), solutions=tuple(f.solution for f in fits.values()),
                resampler=Resampler(shared.seed, cells, battles.cluster, battles.count), solver=shared.solver,
            )
            draws = dict(zip(fits, bootstrap(job, shared.rounds, shared.workers, on_progress)))
        elif shared.ci is CIMethod.sandwich:
            from arena_cli.models.uncertainty import normal_draws, sandwich

            for name, f in fits.items():
                design = f.problem.design
                covariance = sandwich(
                    f.problem, f.solution.theta, design.row_count, design.row_cluster,
                    arena_rank=shared.compat is Compat.arena_rank, terms=f.solution.terms,
                )
                covariances[name] = covariance
                draws[name] = normal_draws(f.solution.theta, covariance, shared.rounds, shared.seed)
        return {name: _ratings(f, covariances[name], draws[name]) for name, f in fits.items()}


def _solve(problem: Problem, battles: designs.Prepared, cells: designs.Cells, weight: np.ndarray | None, options: ResolvedFitOptions) -> Solution:
    """The full-data fit, on ``--workers`` threads (default: every core; the bootstrap's rounds run in processes
    of their own, one thread each). A style fit starts from the plain fit on the pair-outcome cells (a few
    milliseconds), which saves Newton passes over every battle."""
    from arena_cli.models.uncertainty import available_cores

    count = problem.design.row_count
    if options.solver is Solver.statsmodels:
        return statsmodels_fit(problem, count)
    threads = options.workers or available_cores()
    if not problem.k:
        return newton(problem, count, threads=threads)
    plain = designs.design(battles.with_features(np.zeros((0, battles.n_rows)), ()), cells, weight)
    start = newton(Problem(plain, davidson=problem.davidson), plain.row_count, tol=1e-3).theta
    theta0 = np.concatenate([start[: problem.M], np.zeros(problem.k), start[problem.M :]])
    return newton(problem, count, theta0=theta0, threads=threads)


def _ratings(fitted: _VariantFit, covariance: np.ndarray | None, draws: np.ndarray | None) -> Ratings:
    options, problem = fitted.options, fitted.problem
    styled = problem.k > int(problem.position)
    warnings: tuple[str, ...] = ()
    if options.ridge and not styled and options.compat is None:
        warnings = ("--ridge penalises style coefficients; this fit has none, so it has no effect",)
    penalty = problem.penalty
    settings = {
        "reweight": bool(options.reweight),
        "ridge": float(penalty.coefficients),
        "ridge_scale": "mean log-likelihood (arena-rank reg); summed scale = ridge x n_battles" if penalty.per_vote else
                       "summed log-likelihood (FastChat reg); rating_ridge on beta = reg / ln(10)^2 (ratings in log10 units)",
        **({"rating_ridge": float(penalty.ratings)} if penalty.ratings else {}),
        "compat": options.compat.value if options.compat else None,
        "solver": options.solver.value,
    }
    return Ratings(
        method="davidson" if problem.davidson else "bradley-terry",
        theta=fitted.solution.theta, feature_names=fitted.battles.feature_names, tie_parameter=problem.davidson,
        covariance=covariance, draws=draws, settings=settings,
        libraries=("statsmodels",) if options.solver is Solver.statsmodels else (), warnings=warnings,
    )
