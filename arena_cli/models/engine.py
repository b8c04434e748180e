"""``fit`` and ``fit_variants``: battles in, :class:`FitResult` out (encode → rating method → the shared result side:
scores, intervals, ranks, tables, settings)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from statistics import NormalDist
from typing import Any

import numpy as np

from arena_cli.errors import InputError
from arena_cli.schema import shown_weight
from arena_cli.models import design as designs
from arena_cli.models.methods import Progress, Ratings, rating_method
from arena_cli.models.options import POSITION, DEFAULT_MIN_BATTLES, CIMethod, FitOptions, ResolvedFitOptions, parse_style
from arena_cli.models.result import (
    COEF_DECIMALS, POINTS_PER_LOGIT, SCORE_OFFSET, FitResult, coefficient_frame, expected_score, leaderboard_frame,
)


def fit(battles: designs.Battles, options: FitOptions = FitOptions(), *, on_progress: Progress | None = None) -> FitResult:
    """Fit one leaderboard. ``battles`` (a frame, or the parts of one) has ``model_a, model_b, outcome`` plus
    the columns the style needs (and ``timestamp``, for a method that takes votes in order, when the battles
    have one); lazy frames are read once, keeping only what the fit uses. Or battles reduced as they were
    read (:func:`arena_cli.models.inputs.load_encoded_battles`). ``options.method`` picks the rating method."""
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


def _fit_variants(battles: designs.Battles, variants: Mapping[str, str], options: FitOptions, on_progress: Progress | None) -> dict[str, FitResult]:
    union = tuple(dict.fromkeys(t for spec in variants.values() for t in parse_style(spec)))
    base = dataclasses.replace(options, style=",".join(union) if union else "none").resolved()
    prepared = designs.prepare(battles, base)
    cell_index = designs.cells(prepared)
    records = designs.record_counts(cell_index, prepared.n_models)
    resolved = {name: dataclasses.replace(options, style=spec).resolved() for name, spec in variants.items()}
    ratings = rating_method(base.method).rate(prepared, cell_index, resolved, on_progress)
    return {name: _result(ratings[name], resolved[name], prepared, records) for name in variants}


def _result(ratings: Ratings, options: ResolvedFitOptions, prepared: designs.Prepared, records: dict[str, np.ndarray]) -> FitResult:
    """The shared result side: a method's estimates on the published score scale, with intervals, ranks and rank
    intervals, the leaderboard and coefficient tables, warnings and settings."""
    from arena_cli.models.uncertainty import lmarena_rank, percentile_interval, rank_interval, ranks_of

    M, k = prepared.n_models, len(ratings.feature_names)
    theta, theta_draws, covariance = ratings.theta, ratings.draws, ratings.covariance
    beta, gamma = theta[:M], theta[M : M + k]
    anchor = _anchor(options, prepared.models, prepared.baseline)

    def to_scores(b: np.ndarray) -> np.ndarray:
        scores = SCORE_OFFSET + POINTS_PER_LOGIT * b
        if anchor is not None:
            index, score = anchor
            scores = scores + (score - scores[..., [index]])
        return scores

    scores = to_scores(beta)
    z = NormalDist().inv_cdf(0.5 + options.confidence / 2.0)
    lower = upper = coef_lower = coef_upper = rank_lower = rank_upper = None
    score_draws = gamma_draws = rank_draws = None
    tie_interval = None
    if theta_draws is not None:
        score_draws = to_scores(theta_draws[:, :M])
        gamma_draws = theta_draws[:, M : M + k]
        rank_draws = ranks_of(score_draws)
        rank_lower, rank_upper = rank_interval(rank_draws, options.confidence)
    if covariance is not None:
        variance = np.diag(covariance)[:M]
        if anchor is not None:
            index = anchor[0]
            variance = variance + covariance[index, index] - 2.0 * covariance[:M, index]
        half = z * POINTS_PER_LOGIT * np.sqrt(np.clip(variance, 0.0, None))
        lower, upper = scores - half, scores + half
        se = np.sqrt(np.diag(covariance)[M:])
        coef_lower, coef_upper = gamma - z * se[:k], gamma + z * se[:k]
        if ratings.tie_parameter:
            tie_interval = (theta[-1] - z * se[-1], theta[-1] + z * se[-1])
    elif theta_draws is not None and score_draws is not None and gamma_draws is not None:
        lower, upper = percentile_interval(score_draws, options.confidence)
        if k:
            coef_lower, coef_upper = percentile_interval(gamma_draws, options.confidence)
        if ratings.tie_parameter:
            tie_lower, tie_upper = percentile_interval(theta_draws[:, -1:], options.confidence)
            tie_interval = (tie_lower[0], tie_upper[0])
    rank = lmarena_rank(lower, upper) if lower is not None and upper is not None else lmarena_rank(scores, scores)
    if coef_lower is not None and coef_upper is not None and ratings.unbounded:  # (no finite estimate: no interval either)
        shown = np.array([name not in ratings.unbounded for name in ratings.feature_names])
        coef_lower, coef_upper = np.where(shown, coef_lower, np.nan), np.where(shown, coef_upper, np.nan)

    warnings = list(prepared.warnings)
    few = [m for m, n in zip(prepared.models, records["battles"]) if n < DEFAULT_MIN_BATTLES]
    if few:
        warnings.append(f"{len(few)} model(s) with fewer than {DEFAULT_MIN_BATTLES} battles: their scores are poorly determined ({', '.join(few)})")
    warnings += ratings.warnings
    if theta_draws is not None and (few_rounds := options.few_rounds_warning()):
        warnings.append(few_rounds)

    log_nu = float(theta[-1]) if ratings.tie_parameter else None
    win_rate = _win_rates(ratings, prepared.baseline, M, covariance, z, options.confidence)
    position = None
    if POSITION in ratings.feature_names:
        j = ratings.feature_names.index(POSITION)
        bounds = (None, None)
        if coef_lower is not None and coef_upper is not None and POSITION not in ratings.unbounded:
            bounds = (coef_lower[j], coef_upper[j])
        position = (float(gamma[j]), *bounds)
    return FitResult(
        leaderboard=leaderboard_frame(prepared.models, scores, lower, upper, rank, rank_lower, rank_upper, records, win_rate),
        coefficients=coefficient_frame(ratings.feature_names, gamma, coef_lower, coef_upper),
        settings=_settings(ratings, options, prepared, log_nu, tie_interval, anchor, position), models=prepared.models, beta=beta, gamma=gamma,
        feature_names=ratings.feature_names, scores=scores, covariance=covariance, score_draws=score_draws,
        gamma_draws=gamma_draws, rank_draws=rank_draws, log_nu=log_nu, warnings=tuple(warnings),
    )


def _anchor(options: ResolvedFitOptions, models: tuple[str, ...], baseline: int | None) -> tuple[int, float] | None:
    """(index of the anchor model, its published score), or None without an anchor: ``--anchor``, else the
    preset's when its model is fitted (FastChat pins mixtral only where it is; arena-hard pins the baseline)."""
    if options.anchor is None:
        if options.preset_anchor is None:
            return None
        model, score = options.preset_anchor
        index = baseline if model is None else models.index(model) if model in models else None
        return None if index is None else (index, score)
    model, score = options.anchor
    if model not in models:
        raise InputError(f"--anchor {model!r}: no such model in the fit (models: {', '.join(models[:10])}{', …' if len(models) > 10 else ''})")
    return models.index(model), score


def _win_rates(
    ratings: Ratings, baseline: int | None, M: int, covariance: np.ndarray | None, z: float, confidence: float,
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None] | None:
    """Each model's predicted win rate against the baseline model (:func:`~arena_cli.models.result.expected_score`:
    equal style, both orders averaged), with its interval: under the sandwich by the delta method on the logit
    of the win rate (with no position term and ties as half wins, exactly the win rates at the ends of the
    interval of β − β_baseline); with bootstrap draws their percentiles. None without a baseline model."""
    from arena_cli.models.uncertainty import percentile_interval

    if baseline is None:
        return None
    position = M + ratings.feature_names.index(POSITION) if POSITION in ratings.feature_names else None

    def rates(theta: np.ndarray, shift: Sequence[float] = (0.0, 0.0, 0.0)) -> np.ndarray:
        """Win rates at θ (one row per draw), with (δ, π, log ν) shifted by ``shift`` (for derivatives)."""
        beta = theta[..., :M]
        delta = beta - beta[..., [baseline]] + shift[0]
        pi = theta[..., [position]] + shift[1] if position is not None else 0.0
        log_nu = theta[..., [-1]] + shift[2] if ratings.tie_parameter else None
        return expected_score(delta, pi, log_nu)

    estimate = rates(ratings.theta)
    if covariance is not None:
        # d logit(rate) / d(δ, π, log ν) by central differences, then the gradient in θ and its variance
        def logit(j: int, step: float) -> np.ndarray:
            with np.errstate(divide="ignore"):
                rate = rates(ratings.theta, [step if i == j else 0.0 for i in range(3)])
                return np.log(rate) - np.log1p(-rate)

        h = 1e-5
        slope = [(logit(j, h) - logit(j, -h)) / (2 * h) for j in range(3)]
        G = np.zeros((M, ratings.theta.size))
        G[np.arange(M), np.arange(M)] += slope[0]
        G[:, baseline] -= slope[0]
        if position is not None:
            G[:, position] = slope[1]
        if ratings.tie_parameter:
            G[:, -1] = slope[2]
        se = np.sqrt(np.clip(np.einsum("ij,jk,ik->i", G, covariance, G), 0.0, None))
        with np.errstate(divide="ignore"):
            centre = np.log(estimate) - np.log1p(-estimate)
        return estimate, expected_score(centre - z * se), expected_score(centre + z * se)
    if ratings.draws is not None:
        lower, upper = percentile_interval(rates(ratings.draws), confidence)
        return estimate, np.clip(lower, 0.0, 1.0), np.clip(upper, 0.0, 1.0)
    return estimate, None, None


def _settings(
    ratings: Ratings, options: ResolvedFitOptions, prepared: designs.Prepared, log_nu: float | None,
    tie_interval: tuple[float, float] | None, anchor: tuple[int, float] | None, position: tuple[float, float | None, float | None] | None,
) -> dict[str, Any]:
    """JSON-safe and deterministic: everything needed to reproduce the numbers."""
    from arena_cli.versions import library_versions

    versions = library_versions(ratings.libraries)
    settings: dict[str, Any] = {
        "method": ratings.method,
        "style": options.style,
        "features": [f for f in ratings.feature_names if f != POSITION],
        "normalize": options.normalize,
        "style_transform": options.style_transform.value,
        "ties": options.ties.value,
        "both_bad": options.both_bad.value,
        **ratings.settings,
        "anchor": {"model": prepared.models[anchor[0]], "score": float(anchor[1])} if anchor else None,
        "score_scale": {"offset": SCORE_OFFSET, "points_per_logit": float(POINTS_PER_LOGIT), "gauge": "anchor" if anchor else "mean beta = 0"},
        "position_bias": options.position_bias,
        "baseline_model": prepared.models[prepared.baseline] if prepared.baseline is not None else None,
        "min_battles": options.min_battles,
        "ci": options.ci.value,
        "confidence": options.confidence,
        "rounds": options.rounds if options.ci is not CIMethod.none else None,
        "seed": options.seed,
        "cluster": options.cluster,
        "n_battles": prepared.n_battles,
        **({"total_weight": shown_weight(prepared.total_weight)} if prepared.weight is not None else {}),  # (as info gives it)
        "n_models": prepared.n_models,
        "excluded": [dataclasses.asdict(e) for e in prepared.excluded],
        "versions": versions,
    }
    if log_nu is not None:
        with np.errstate(over="ignore"):  # (a resample whose ties ran off: ν unbounded above, inf as other unbounded ends)
            bounds = [round(float(np.exp(v)), COEF_DECIMALS) for v in tie_interval] if tie_interval else [None, None]
        settings["tie_parameter"] = {"nu": round(float(np.exp(log_nu)), COEF_DECIMALS), "lower": bounds[0], "upper": bounds[1]}
    if position is not None:
        settings["position"] = dict(zip(("coef", "lower", "upper"), (None if v is None else round(float(v), COEF_DECIMALS) for v in position)))
    return settings
