"""Bradley-Terry as a :class:`~arena_cli.models.methods.RatingMethod`: plain or style-controlled, ties as half
wins or Davidson's model, fitted by exact Newton on sufficient statistics (or statsmodels, as a reference),
with bootstrap or sandwich intervals.

The likelihood does not depend on vote order, so the battles may come aggregated by (pair, outcome).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from arena_cli.errors import InputError
from arena_cli.models import design as designs
from arena_cli.models.design import product
from arena_cli.models.methods import Progress, Ratings
from arena_cli.models.options import POSITION, CIMethod, Compat, Penalty, ResolvedFitOptions, Solver, Ties, parse_style
from arena_cli.models.solvers import Problem, Solution, newton, statsmodels_fit


@dataclass(frozen=True)
class _VariantFit:
    options: ResolvedFitOptions
    battles: designs.Prepared
    problem: Problem
    solution: Solution
    #: per style term (and position term): its range over the battles, which turns a coefficient into the most it
    #: moves the log-odds of one battle against another's
    scale: np.ndarray
    #: per term: whether its coefficient has no finite estimate, and the warnings that say so (:func:`_separation`)
    separated: np.ndarray
    warnings: tuple[str, ...]


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
        chosen = {name: [t for t in parse_style(options.style) if t in battles.feature_names] for name, options in variants.items()}
        gram = designs.design_gram(battles, cells) if battles.feature_names else None
        if gram is not None:
            for wanted in chosen.values():
                designs.refuse_collinear(gram.terms, battles, wanted)
        if shared.position_bias:
            designs.check_position_identified(battles)
        if gram is not None:
            for wanted in chosen.values():
                if wanted:
                    designs.refuse_confounded(gram, battles, wanted, shared.position_bias)
        span = dict(zip(gram.names, gram.span)) if gram is not None else {}
        fits: dict[str, _VariantFit] = {}
        for name, options in variants.items():
            wanted = chosen[name]
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
            scale = np.array([POSITION_SPAN if n == POSITION else span[n] for n in names])
            fits[name] = _VariantFit(options, variant_battles, problem, solution, scale, *_separation(problem, solution, names, scale))

        draws: dict[str, np.ndarray | None] = dict.fromkeys(fits)
        covariances: dict[str, np.ndarray | None] = dict.fromkeys(fits)
        if shared.ci is CIMethod.bootstrap:
            from arena_cli.models.uncertainty import BootstrapJob, Resampler, bootstrap

            job = BootstrapJob(
                problems=tuple(f.problem for f in fits.values()), solutions=tuple(f.solution for f in fits.values()),
                resampler=Resampler(shared.seed, cells, battles.cluster, battles.count), solver=shared.solver,
            )
            resampled = bootstrap(job, shared.rounds, shared.workers, on_progress)
            return {name: _ratings(f, None, d, _separated_resamples(f, d, shared.confidence)) for (name, f), d in zip(fits.items(), resampled)}
        if shared.ci is CIMethod.sandwich:
            from arena_cli.models.uncertainty import normal_draws, sandwich

            for name, f in fits.items():
                design = f.problem.design
                fixed = np.zeros(f.problem.n_params, dtype=bool)
                fixed[f.problem.M : f.problem.M + f.problem.k] = f.separated  # (the others' covariance given them)
                covariance = sandwich(
                    f.problem, f.solution.theta, design.row_count, design.row_cluster,
                    arena_rank=shared.compat is Compat.arena_rank, terms=f.solution.terms, fixed=fixed,
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


def _ratings(fitted: _VariantFit, covariance: np.ndarray | None, draws: np.ndarray | None, resampled: tuple[str, ...] = ()) -> Ratings:
    options, problem = fitted.options, fitted.problem
    styled = problem.k > int(problem.position)
    warnings = (*fitted.warnings, *resampled)
    if options.ridge and not styled and options.compat is None:
        warnings += ("--ridge penalises style coefficients; this fit has none, so it has no effect",)
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
        unbounded=tuple(name for name, out in zip(fitted.battles.feature_names, fitted.separated) if out),
    )


#: A term that moves the log-odds of one battle against another's by more than this (its coefficient times its
#: range over the battles; the position term's, between the two orders: 2·|π|) is taken as one whose coefficient
#: has no finite estimate. No real preference effect comes near (20 log-odds is odds of 5·10⁸:1); a
#: maximum-likelihood fit reaches it when the term separates the outcomes (the side it favours wins every battle it
#: decides), where Newton's steps run the coefficient on until the probabilities round to 0 or 1 (about 37 log-odds
#: on each battle it decides). Its range, not its sd: a rare term (a refusal indicator) has a small sd.
SEPARATED = 20.0
#: The position term's range: +π shown first, −π shown second.
POSITION_SPAN = 2.0
#: A parameter whose variance at the optimum exceeds its variance at p = ½ (every battle informative) by more than
#: 1 / this is one the battles do not determine: battles a term decides keep ~1e-16 of their information.
UNDETERMINED = 1e-9
#: A battle whose p(1 − p) at the optimum is below this (|log-odds| beyond 20) is decided by a separating term.
DECIDED = 1e-9
#: A bootstrap resample's coefficient beyond the bound and this many standard deviations of the others' from their
#: median ran off (:func:`_separated_resamples`).
RUNAWAY_SPREADS = 10.0
#: A term that keeps its information yet decides more than this share of the battles outright is warned about (its
#: estimate is finite, and kept with its interval): one far outlier decides a battle or two, a real effect none.
DECIDED_SHARE = 0.01


def _separation(problem: Problem, solution: Solution, names: tuple[str, ...], scale: np.ndarray) -> tuple[np.ndarray, tuple[str, ...]]:
    """Which terms' coefficients have no finite estimate (:data:`SEPARATED`), and a warning that says so.

    A warning, not a refusal, while the scores are determined: the battles such a term does not decide still
    measure the models, and the scores are their maximum-likelihood fit. Whether they are, the information at the
    optimum tells (:func:`_undetermined`): when some score runs off with the term, or rests on no battle it leaves
    open, every score shown (centred on their mean) means nothing, and the fit is refused (an :class:`InputError`).
    Other terms that run off with it lose their interval too, and are named. The size alone is not enough: a
    term with a real effect and a far outlier (one answer of 50,000 tokens) can pass the bound, but keeps its
    information at the optimum; only a term whose information has collapsed there is taken as separating. Costs
    nothing unless a coefficient is that large."""
    M = problem.M
    if not np.isfinite(solution.theta).all():  # (statsmodels' answer where a term separates the outcomes)
        raise InputError("--solver statsmodels found no finite estimate for these battles (a style or position term that separates the outcomes, "
                         "say); the default solver (--solver newton) says which term, and whether the scores stand without it")
    gamma = solution.theta[M : M + problem.k]
    beyond = np.abs(gamma) * scale > SEPARATED
    if not beyond.any():
        return beyond, ()
    undetermined, left_open = _undetermined(problem, solution)
    separated = beyond & undetermined[M : M + problem.k]  # (a heavy-tailed term with a real effect keeps its information)
    total = float(problem.design.row_count.sum())
    if not separated.any():
        if total - left_open <= DECIDED_SHARE * total:
            return separated, ()
        big = [name for name, out in zip(names, beyond) if out]
        return separated, (
            f"{_subject(big)} {'decides' if len(big) == 1 else 'decide'} {total - left_open:,.0f} of {total:,.0f} battles outright (predicted odds "
            f"beyond 5·10⁸:1); the scores rest on the others. A preference effect that strong is rarely real: check how the term was computed "
            "(without --position-bias, standardising shifts every battle by the term's mean)",
        )
    flagged = [(name, float(coef)) for name, coef, out in zip(names, gamma, separated) if out]
    one = len(flagged) == 1
    how = f"{_subject([name for name, _ in flagged])} {'separates' if one else 'separate'} the outcomes"
    how += f" ({_favoured(*flagged[0])})" if one else ""
    if undetermined[:M].any():
        fix = "--position-bias" if [name for name, _ in flagged] == [POSITION] else "it" if one else "them"
        raise InputError(f"{how}: {'it has' if one else 'they have'} no finite estimate, and given {'it' if one else 'them'} the battles leave the "
                         f"scores undetermined (a score runs off with {'it' if one else 'them'}, or rests on no battle left open); fit without {fix}")
    also = [name for name, out, free in zip(names, separated, undetermined[M : M + problem.k]) if free and not out]
    stopped = ", ".join(f"{name} at {coef:+.1f}" for name, coef in flagged)
    warning = (
        f"{how}, so {'its coefficient has' if one else 'their coefficients have'} no finite estimate (the fit stopped: {stopped}; shown without an "
        f"interval, {'it means' if one else 'they mean'} nothing); the scores rest on the {left_open:,.0f} of {total:,.0f} "
        f"battles {'it leaves' if one else 'they leave'} open" + (f", which leave the coefficient of {_subject(also)} undetermined too" if also else "")
    )
    return separated | undetermined[M : M + problem.k], (warning,)


def _undetermined(problem: Problem, solution: Solution) -> tuple[np.ndarray, float]:
    """Per parameter: whether the battles leave it undetermined at the optimum: its variance there (the inverse of
    the information, the gauge Σβ aside) is beyond 1 / :data:`UNDETERMINED` times what it would be at p = ½ (each
    parameter scaled to variance 1 there). A direction along which a separating term runs off, alone or with some
    scores, has lost its information. And how many battles are left open (p(1 − p) above :data:`DECIDED`). Two
    passes over the battles."""
    design, M = problem.design, problem.M
    count = design.row_count
    cw = product(count, design.row_weight)
    ridge_sum = problem.ridge_sum(count)
    terms = solution.terms or problem.terms(solution.theta, cw, ridge_sum, objective=False)  # (statsmodels' has none)
    information = problem.information(terms, cw, ridge_sum)
    if problem.davidson:  # (the win/loss part at p = ½; ν's own information as it is: ties keep it determined)
        none = np.zeros(design.n_rows)
        at_half = np.diag(problem.matrix(0.25 * np.broadcast_to(cw, (design.n_rows,)), none, none)).copy()
        at_half[-1] = information[-1, -1]
    else:
        at_half = np.diag(problem.matrix(np.broadcast_to(0.25, (design.n_rows,)), factor=None if designs.is_ones(cw) else cw)).copy()
    scale = np.sqrt(np.maximum(at_half, 1e-300))
    gauge = np.zeros(problem.n_params)
    gauge[:M] = scale[:M] / np.linalg.norm(scale[:M])  # Σβ in these units: never any information, nor an estimate
    values, vectors = np.linalg.eigh(information / np.outer(scale, scale) + np.outer(gauge, gauge))
    variance = (vectors * vectors / np.maximum(values, 1e-14)).sum(axis=1)  # (below 1e-14, an eigenvalue is 0 to double precision)
    return variance > 1.0 / UNDETERMINED, float(count[terms.h_dd > DECIDED].sum())


def _separated_resamples(fitted: _VariantFit, draws: np.ndarray, confidence: float) -> tuple[str, ...]:
    """Bootstrap resamples can separate a term's outcomes where the battles do not (a rare covariate, few votes):
    there the term has no finite estimate, and its draw is set to ±inf, so that a percentile interval reaching
    those resamples is unbounded rather than a number they made up. One warning per term whose interval that makes
    unbounded (none for resamples beyond its ends, nor for a term the full fit already warned about).

    A resample ran off when its coefficient is beyond the size bound (:data:`SEPARATED`) and also far from the
    resamples within it: more than :data:`RUNAWAY_SPREADS` of their standard deviations from their median. The
    bound alone cannot tell: a real effect with a far outlier passes it in many resamples (or all of them, when
    its full fit does), by sampling noise; one that ran off stopped where the battles it decides round to
    certainty, tens of log-odds away. Without two resamples within the bound there is nothing to compare with, and
    nothing is set."""
    from arena_cli.models.uncertainty import percentile_interval

    M, names = fitted.problem.M, fitted.battles.feature_names
    warnings = []
    for j, name in enumerate(names):
        column = draws[:, M + j]
        beyond = np.abs(column) * fitted.scale[j] > SEPARATED
        within = column[~beyond & np.isfinite(column)]
        if fitted.separated[j] or not beyond.any() or within.size < 2:
            continue
        runaway = beyond & (np.abs(column - np.median(within)) > RUNAWAY_SPREADS * within.std())
        if not runaway.any():
            continue
        column[runaway] = np.copysign(np.inf, column[runaway])
        lower, upper = (float(end[0]) for end in percentile_interval(column[:, None], confidence))
        unbounded = [where for where, end in (("below", lower), ("above", upper)) if not np.isfinite(end)]
        if unbounded:
            warnings.append(f"{_subject([name])}: {int(runaway.sum())} of {column.size} bootstrap resamples give it no finite estimate (their battles "
                            f"separate the outcomes), so its interval is unbounded {' and '.join(unbounded)}")
    return tuple(warnings)


def _subject(names: list[str]) -> str:
    """How a warning names style terms and the position term."""
    terms = [repr(name) for name in names if name != POSITION]
    said = [f"style term{'s' if len(terms) > 1 else ''} {', '.join(terms)}"] if terms else []
    return " and ".join([*said, *(["the position term"] if POSITION in names else [])])


def _favoured(name: str, coef: float) -> str:
    """Who wins the battles a separating term decides, said of the term."""
    from arena_cli.features.registry import BY_NAME, STYLE_GROUPS

    if name == POSITION:
        return f"the model shown {'first' if coef > 0 else 'second'} wins every battle it decides"
    if name in ("length", "tokens"):
        return f"the {'longer' if coef > 0 else 'shorter'} answer wins every battle it decides"
    if name in STYLE_GROUPS or name in BY_NAME:
        return f"the answer with {'more' if coef > 0 else 'less'} {name.replace('_', ' ')} wins every battle it decides"
    high, low = ("high", "low") if coef > 0 else ("low", "high")
    return f"of the battles it decides, model_a wins those where {name!r} is {high}, model_b those where it is {low}"
