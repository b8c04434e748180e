"""``fit`` and ``fit_variants``: battles in, :class:`FitResult` out (design → solver → uncertainty → tables)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from statistics import NormalDist

import numpy as np
import polars as pl

from arena_cli.errors import InputError
from arena_cli.models import design as designs
from arena_cli.models.options import DEFAULT_MIN_BATTLES, CIMethod, Compat, FitOptions, Solver, Ties, parse_style
from arena_cli.models.result import COEF_DECIMALS, POINTS_PER_LOGIT, SCORE_OFFSET, FitResult, coefficient_frame, leaderboard_frame
from arena_cli.models.solvers import Problem, Solution, newton, statsmodels_fit

Progress = Callable[[int, int], None]


def fit(battles: designs.Battles, options: FitOptions = FitOptions(), *, on_progress: Progress | None = None) -> FitResult:
    """Fit one leaderboard. ``battles`` (a frame, or the parts of one) has ``model_a, model_b, outcome`` plus
    the columns the style needs; lazy frames are read once, keeping only what the fit uses. Or battles
    reduced as they were read (:func:`arena_cli.models.inputs.load_encoded_battles`)."""
    return fit_variants(battles, {options.style: options.style}, options, on_progress=on_progress)[options.style]


def fit_variants(
    battles: designs.Battles,
    variants: Mapping[str, str],
    options: FitOptions = FitOptions(),
    *,
    on_progress: Progress | None = None,
) -> dict[str, FitResult]:
    """Fit several style variants (name -> style spec) on exactly the same battles.

    All variants share the battle set (battles lacking any variant's features are left out of every
    variant), the model exclusions and, with ``ci=bootstrap``, the very same resamples round by round, so
    their scores, ranks and draws can be compared like with like (``rank_draws`` row r of every variant comes
    from resample r).
    """
    if not variants:
        raise InputError("no style variants to fit")
    from arena_cli.models.blas import single_threaded

    with single_threaded():
        return _fit_variants(battles, variants, options, on_progress)


@dataclasses.dataclass(frozen=True)
class _VariantFit:
    spec: str
    options: FitOptions
    prepared: designs.Prepared
    problem: Problem
    solution: Solution


def _fit_variants(battles: designs.Battles, variants: Mapping[str, str], options: FitOptions, on_progress: Progress | None) -> dict[str, FitResult]:
    union = tuple(dict.fromkeys(t for spec in variants.values() for t in parse_style(spec)))
    base = dataclasses.replace(options, style=",".join(union) if union else "none").resolved()
    prepared = designs.prepare(battles, base)
    cell_index = designs.cells(prepared)
    records = designs.record_counts(cell_index, prepared.n_models)

    fits: dict[str, _VariantFit] = {}
    for name, spec in variants.items():
        variant = dataclasses.replace(options, style=spec).resolved()
        wanted = [t for t in parse_style(spec) if t in prepared.feature_names]
        rows = [prepared.feature_names.index(t) for t in wanted]
        features = prepared.features if rows == list(range(prepared.features.shape[0])) else prepared.features[rows]
        variant_battles = prepared.with_features(features, tuple(wanted))
        weight = designs.pair_weights(cell_index) if variant.reweight else None
        design = designs.design(variant_battles, cell_index, weight)
        problem = Problem(design, davidson=variant.ties is Ties.davidson, ridge=variant.ridge if wanted else 0.0)
        solution = _solve(problem, variant_battles, cell_index, weight, variant.solver)
        fits[name] = _VariantFit(spec, variant, variant_battles, problem, solution)

    draws: dict[str, np.ndarray | None] = dict.fromkeys(fits)
    covariances: dict[str, np.ndarray | None] = dict.fromkeys(fits)
    if base.ci is CIMethod.bootstrap:
        from arena_cli.models.uncertainty import BootstrapJob, Resampler, bootstrap

        job = BootstrapJob(
            problems=tuple(f.problem for f in fits.values()), solutions=tuple(f.solution for f in fits.values()),
            resampler=Resampler(base.seed, cell_index, prepared.cluster), solver=base.solver.value,
        )
        draws = dict(zip(fits, bootstrap(job, base.rounds, base.workers, on_progress)))
    elif base.ci is CIMethod.sandwich:
        from arena_cli.models.uncertainty import normal_draws, sandwich

        for name, f in fits.items():
            design = f.problem.design
            covariances[name] = sandwich(
                f.problem, f.solution.theta, design.row_count, design.row_cluster,
                arena_rank=base.compat is Compat.arena_rank, terms=f.solution.terms,
            )
            draws[name] = normal_draws(f.solution.theta, covariances[name], base.rounds, base.seed)
    return {name: _result(f, draws[name], covariances[name], records) for name, f in fits.items()}


def _solve(problem: Problem, prepared: designs.Prepared, cell_index: designs.Cells, weight: np.ndarray | None, solver: Solver) -> Solution:
    """The full-data fit. A style fit starts from the plain fit on the pair-outcome cells (a few milliseconds),
    which saves Newton passes over every battle."""
    count = problem.design.row_count
    if solver is Solver.statsmodels:
        return statsmodels_fit(problem, count)
    if not problem.k:
        return newton(problem, count)
    plain = designs.design(prepared.with_features(np.zeros((0, prepared.n_rows)), ()), cell_index, weight)
    start = newton(Problem(plain, davidson=problem.davidson, ridge=0.0), plain.row_count, tol=1e-3).theta
    theta0 = np.concatenate([start[: problem.M], np.zeros(problem.k), start[problem.M :]])
    return newton(problem, count, theta0=theta0)


def _result(fitted: _VariantFit, theta_draws: np.ndarray | None, covariance: np.ndarray | None, records: dict[str, np.ndarray]) -> FitResult:
    from arena_cli.models.uncertainty import lmarena_rank, percentile_interval, rank_interval, ranks_of

    spec, options, prepared, problem, solution = fitted.spec, fitted.options, fitted.prepared, fitted.problem, fitted.solution

    M, k = problem.M, problem.k
    theta = solution.theta
    beta, gamma = theta[:M], theta[M : M + k]
    anchor_index = _anchor_index(options, prepared.models)

    def to_scores(b: np.ndarray) -> np.ndarray:
        scores = SCORE_OFFSET + POINTS_PER_LOGIT * b
        if anchor_index is not None:
            scores = scores + (options.anchor[1] - scores[..., [anchor_index]])
        return scores

    scores = to_scores(beta)
    z = NormalDist().inv_cdf(0.5 + options.confidence / 2.0)
    lower = upper = coef_lower = coef_upper = rank_lower = rank_upper = None
    score_draws = gamma_draws = rank_draws = None
    tie_parameter = None
    if theta_draws is not None:
        score_draws = to_scores(theta_draws[:, :M])
        gamma_draws = theta_draws[:, M : M + k]
        rank_draws = ranks_of(score_draws)
        rank_lower, rank_upper = rank_interval(rank_draws, options.confidence)
    if covariance is not None:
        variance = np.diag(covariance)[:M]
        if anchor_index is not None:
            variance = variance + covariance[anchor_index, anchor_index] - 2.0 * covariance[:M, anchor_index]
        half = z * POINTS_PER_LOGIT * np.sqrt(np.clip(variance, 0.0, None))
        lower, upper = scores - half, scores + half
        se = np.sqrt(np.diag(covariance)[M:])
        coef_lower, coef_upper = gamma - z * se[:k], gamma + z * se[:k]
        if problem.davidson:
            tie_parameter = (theta[-1] - z * se[-1], theta[-1] + z * se[-1])
    elif theta_draws is not None:
        lower, upper = percentile_interval(score_draws, options.confidence)
        if k:
            coef_lower, coef_upper = percentile_interval(gamma_draws, options.confidence)
        if problem.davidson:
            tie_parameter = tuple(b[0] for b in percentile_interval(theta_draws[:, -1:], options.confidence))
    rank = lmarena_rank(lower, upper) if lower is not None else lmarena_rank(scores, scores)

    warnings = list(prepared.warnings)
    few = [m for m, n in zip(prepared.models, records["battles"]) if n < DEFAULT_MIN_BATTLES]
    if few:
        warnings.append(f"{len(few)} model(s) with fewer than {DEFAULT_MIN_BATTLES} battles: their scores are poorly determined ({', '.join(few)})")
    if options.ridge and not k and options.compat is None:
        warnings.append("--ridge penalises style coefficients; this fit has none, so it has no effect")

    log_nu = float(theta[-1]) if problem.davidson else None
    settings = _settings(spec, options, prepared, problem, log_nu, tie_parameter)
    return FitResult(
        leaderboard=leaderboard_frame(prepared.models, scores, lower, upper, rank, rank_lower, rank_upper, records),
        coefficients=coefficient_frame(prepared.feature_names, gamma, coef_lower, coef_upper),
        settings=settings, models=prepared.models, beta=beta, gamma=gamma, feature_names=prepared.feature_names,
        scores=scores, covariance=covariance, score_draws=score_draws, gamma_draws=gamma_draws,
        rank_draws=rank_draws, log_nu=log_nu, warnings=tuple(warnings),
    )


def _anchor_index(options: FitOptions, models: tuple[str, ...]) -> int | None:
    if options.anchor is None:
        return None
    model = options.anchor[0]
    if model not in models:
        raise InputError(f"--anchor {model!r}: no such model in the fit (models: {', '.join(models[:10])}{', …' if len(models) > 10 else ''})")
    return models.index(model)


def _settings(spec, options: FitOptions, prepared, problem: Problem, log_nu, tie_parameter) -> dict:
    """JSON-safe and deterministic: everything needed to reproduce the numbers."""
    import arena_cli

    versions = {"arena_cli": arena_cli.__version__, "numpy": np.__version__, "polars": pl.__version__}
    if options.solver is Solver.statsmodels:
        import statsmodels

        versions["statsmodels"] = statsmodels.__version__
    settings = {
        "method": "davidson" if problem.davidson else "bradley-terry",
        "style": spec,
        "features": list(prepared.feature_names),
        "normalize": options.normalize,
        "ties": options.ties.value,
        "both_bad": options.both_bad.value,
        "reweight": bool(options.reweight),
        "ridge": float(options.ridge) if problem.k else 0.0,
        "ridge_scale": "mean log-likelihood (arena-rank reg); summed scale = ridge x n_battles",
        "compat": options.compat.value if options.compat else None,
        "anchor": {"model": options.anchor[0], "score": float(options.anchor[1])} if options.anchor else None,
        "score_scale": {"offset": SCORE_OFFSET, "points_per_logit": float(POINTS_PER_LOGIT), "gauge": "anchor" if options.anchor else "mean beta = 0"},
        "min_battles": options.min_battles,
        "ci": options.ci.value,
        "confidence": options.confidence,
        "rounds": options.rounds if options.ci is not CIMethod.none else None,
        "seed": options.seed,
        "cluster": options.cluster,
        "solver": options.solver.value,
        "n_battles": prepared.n_battles,
        "n_models": prepared.n_models,
        "excluded": [dataclasses.asdict(e) for e in prepared.excluded],
        "versions": versions,
    }
    if log_nu is not None:
        bounds = [round(float(np.exp(v)), COEF_DECIMALS) for v in tie_parameter] if tie_parameter else [None, None]
        settings["tie_parameter"] = {"nu": round(float(np.exp(log_nu)), COEF_DECIMALS), "lower": bounds[0], "upper": bounds[1]}
    return settings
