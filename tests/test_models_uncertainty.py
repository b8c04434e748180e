"""Sandwich covariance, the seeded parallel bootstrap, percentile and rank intervals."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sim_battles import simulate

from arena_cli.models import CIMethod, FitOptions, fit, fit_variants
from arena_cli.models import design as D
from arena_cli.models.options import Penalty
from arena_cli.models.solvers import Problem, newton
from arena_cli.models.uncertainty import (
    Resampler,
    lmarena_rank,
    percentile_interval,
    rank_interval,
    ranks_of,
    sandwich,
)


@pytest.fixture(scope="module")
def battles():
    frame, _ = simulate(3000, 6, seed=21, gamma={"length": 0.7, "list": 0.3}, n_judges=40, judge_sd=0.3)
    return frame


def fitted_problem(frame, style="none", ridge=0.0, cluster=None, reweight=False):
    prepared = D.prepare(frame, FitOptions(style=style, min_battles=1, cluster=cluster))
    design = D.design(prepared, D.cells(prepared), D.pair_weights(D.cells(prepared)) if reweight else None)
    problem = Problem(design, davidson=False, penalty=Penalty(ridge))
    return problem, newton(problem, design.row_count).theta, prepared


def statsmodels_reference(problem, prepared, cov_type, **kwds):
    """statsmodels' own robust covariance of the same GLM, mapped to the Σβ = 0 gauge."""
    import statsmodels.api as sm

    M, k = prepared.n_models, problem.k
    battle = np.repeat(np.arange(prepared.n_rows), prepared.count.astype(int))  # one row per battle
    Z = np.zeros((prepared.n_battles, M - 1 + k))
    for model, sign in ((prepared.a[battle], 1.0), (prepared.b[battle], -1.0)):
        hit = model > 0
        Z[np.flatnonzero(hit), model[hit] - 1] += sign
    Z[:, M - 1 :] = prepared.features[:, battle].T
    result = sm.GLM(prepared.outcome[battle] * 0.5, Z, family=sm.families.Binomial()).fit(tol=1e-14, cov_type=cov_type, cov_kwds=kwds or None)
    embed = np.zeros((M + k, M - 1 + k))
    embed[1:M, : M - 1] = np.eye(M - 1)
    embed[M:, M - 1 :] = np.eye(k)
    centre = np.eye(M + k)
    centre[:M, :M] -= 1.0 / M
    T = centre @ embed
    return T @ result.cov_params() @ T.T


@pytest.mark.parametrize("style", ["none", "length,list"])
def test_sandwich_equals_statsmodels_hc0(battles, style):
    problem, theta, prepared = fitted_problem(battles, style)
    ours = sandwich(problem, theta, problem.design.row_count)
    reference = statsmodels_reference(problem, prepared, "HC0")
    np.testing.assert_allclose(ours, reference, rtol=1e-6, atol=1e-12)


def test_cluster_sandwich_equals_statsmodels_cluster_robust(battles):
    problem, theta, prepared = fitted_problem(battles, "length", cluster="judge")
    ours = sandwich(problem, theta, problem.design.row_count, problem.design.row_cluster)
    reference = statsmodels_reference(problem, prepared, "cluster", groups=prepared.cluster, use_correction=False)
    np.testing.assert_allclose(ours, reference, rtol=1e-6, atol=1e-12)
    plain_problem, plain_theta, _ = fitted_problem(battles, "none", cluster="judge")
    assert plain_problem.design.aggregated
    on_cells = sandwich(plain_problem, plain_theta, plain_problem.design.row_count, plain_problem.design.row_cluster)
    assert np.diag(on_cells).max() > np.diag(sandwich(plain_problem, plain_theta, plain_problem.design.row_count)).max()


def test_weighted_ridge_sandwich_equals_brute_force(battles):
    """Per-battle estimating functions ψ_i = w_i·s_i − (λ/n)·(0, γ), summed densely: the centred meat."""
    problem, theta, prepared = fitted_problem(battles, "length,list", ridge=0.4, reweight=True)
    design = problem.design
    M, k, n = problem.M, problem.k, prepared.n_battles
    d = theta[prepared.a] - theta[prepared.b] + theta[M:] @ prepared.features
    p = 1.0 / (1.0 + np.exp(-d))
    x = np.zeros((n, M + k))
    x[np.arange(n), prepared.a] += 1.0
    x[np.arange(n), prepared.b] -= 1.0
    x[:, M:] = prepared.features.T
    psi = (design.row_weight * (prepared.outcome / 2.0 - p))[:, None] * x
    psi[:, M:] -= problem.penalty.coefficients * theta[M:]
    J = (x * (design.row_weight * p * (1 - p))[:, None]).T @ x
    J[M:, M:] += problem.penalty.coefficients * n * np.eye(k)
    J_plus = np.linalg.pinv(J)
    expected = J_plus @ (psi.T @ psi) @ J_plus
    np.testing.assert_allclose(sandwich(problem, theta, design.row_count), expected, rtol=1e-7, atol=1e-13)


def test_resamples_are_battle_multinomials_shared_by_every_design(battles):
    prepared = D.prepare(battles, FitOptions(min_battles=1, style="length"))  # one row per battle
    cells = D.cells(prepared)
    resampler = Resampler(7, cells)
    sample = resampler.draw(3)
    per_battle = sample.per_battle()
    assert per_battle.sum() == prepared.n_battles
    np.testing.assert_array_equal(np.bincount(cells.of_battle, per_battle, minlength=cells.n_cells), sample.cell_totals)
    again = Resampler(7, cells).draw(3)
    np.testing.assert_array_equal(again.per_battle(), per_battle)
    assert not np.array_equal(Resampler(7, cells).draw(4).cell_totals, sample.cell_totals)
    # a battle's expected multiplicity is 1 (each draw picks uniformly within the multinomially drawn cell)
    mean = np.mean([Resampler(1, cells).draw(r).per_battle() for r in range(300)], axis=0)
    assert abs(mean.mean() - 1.0) < 1e-12 and np.abs(mean - 1).max() < 0.35


@pytest.mark.parametrize("block", [1, 7, 1000, 1 << 30])
def test_a_resample_spread_in_blocks_is_the_resample_spread_at_once(battles, monkeypatch, block):
    """The per-battle counts are the same whatever the block of draws (the generator's stream is the same in parts)."""
    import arena_cli.models.uncertainty as U

    prepared = D.prepare(battles, FitOptions(min_battles=1, style="length"))
    cells = D.cells(prepared)
    order, starts = Resampler(5, cells).prepare_spread()
    rng = np.random.default_rng([5, 0, 2])
    totals = rng.multinomial(prepared.n_battles, cells.size / prepared.n_battles).astype(np.float64)
    cell = np.repeat(np.arange(totals.size), totals.astype(np.int64))
    whole = np.bincount(order[starts[cell] + (rng.random(cell.size) * cells.size[cell]).astype(np.int64)], minlength=cells.of_battle.size)
    monkeypatch.setattr(U, "SPREAD_BLOCK", block)
    np.testing.assert_array_equal(Resampler(5, cells).draw(2).per_battle(), whole.astype(np.float64))


def test_bootstrap_is_identical_for_any_number_of_workers(battles):
    options = FitOptions(style="length", rounds=24, min_battles=1)
    one = fit(battles, FitOptions(**{**options.__dict__, "workers": 1}))
    two = fit(battles, FitOptions(**{**options.__dict__, "workers": 2}))
    np.testing.assert_array_equal(one.score_draws, two.score_draws)
    np.testing.assert_array_equal(one.gamma_draws, two.gamma_draws)
    assert one.leaderboard.equals(two.leaderboard)
    other_seed = fit(battles, FitOptions(**{**options.__dict__, "workers": 1, "seed": 43}))
    assert not np.array_equal(other_seed.score_draws, one.score_draws)


def test_variants_share_resamples_with_a_plain_fit(battles):
    """fit_variants' plain variant sees exactly the resamples of a plain fit of the same battles."""
    options = FitOptions(rounds=20, workers=1, min_battles=1)
    variants = fit_variants(battles, {"none": "none", "both": "both"}, options)
    alone = fit(battles, options)
    np.testing.assert_array_equal(variants["none"].score_draws, alone.score_draws)
    assert variants["both"].rank_draws.shape == variants["none"].rank_draws.shape == (20, 6)
    assert variants["both"].models == variants["none"].models


def test_bootstrap_of_a_model_that_may_never_lose_is_unbounded():
    rows = [("a", "b", "model_a"), ("b", "a", "model_a"), ("b", "c", "model_a"), ("c", "b", "tie"), ("a", "c", "model_b"), ("c", "a", "tie")] * 20
    rows += [("x", "a", "model_a"), ("x", "b", "model_a"), ("c", "x", "model_a"), ("x", "c", "model_a")]
    frame = pl.DataFrame({"model_a": [r[0] for r in rows], "model_b": [r[1] for r in rows], "outcome": [r[2] for r in rows]})
    result = fit(frame, FitOptions(min_battles=1, rounds=200, workers=1))
    row = result.leaderboard.filter(pl.col("model") == "x").row(0, named=True)
    assert row["score_upper"] == np.inf
    assert row["rank_lower"] == 1
    assert result.leaderboard.filter(pl.col("model") != "x")["score_upper"].is_finite().all()


def test_percentile_interval_matches_numpy_and_handles_infinities():
    draws = np.random.default_rng(0).normal(size=(999, 3))
    lower, upper = percentile_interval(draws, 0.9)
    np.testing.assert_allclose(lower, np.quantile(draws, 0.05, axis=0))
    np.testing.assert_allclose(upper, np.quantile(draws, 0.95, axis=0))
    column = np.concatenate([np.arange(90.0), [np.inf] * 10])[:, None]
    assert percentile_interval(column, 0.9)[1][0] == np.inf
    assert percentile_interval(column, 0.9)[0][0] == pytest.approx(np.quantile(np.arange(90.0), 0.05 * 99 / 89))
    undetermined = np.concatenate([np.zeros(90), [np.nan] * 10])[:, None]
    low, high = percentile_interval(undetermined, 0.9)
    assert low[0] == -np.inf and high[0] == np.inf


def test_ranks_and_rank_intervals():
    scores = np.array([[3.0, 1.0, 2.0, 2.0], [1.0, 3.0, 2.0, np.nan]])
    ranks = ranks_of(scores)
    np.testing.assert_array_equal(ranks, [[1, 4, 2, 2], [3, 1, 2, 0]])
    best, worst = rank_interval(ranks, 0.5)
    np.testing.assert_array_equal(best, [1, 1, 2, 1])
    np.testing.assert_array_equal(worst, [3, 4, 2, 4])
    lower = np.array([10.0, 5.0, 0.0])
    upper = np.array([20.0, 12.0, 4.0])
    np.testing.assert_array_equal(lmarena_rank(lower, upper), [1, 1, 3])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.sampled_from([0.0, 1.0, 2.5, np.inf, -np.inf, np.nan]), min_size=5, max_size=5), min_size=1, max_size=6))
def test_ranks_follow_their_definition(rows):
    """Property: 1 + the number of known scores strictly higher in the same draw; unknown (NaN) is rank 0."""
    scores = np.array(rows)
    known = ~np.isnan(scores)
    higher = (known[:, None, :] & (scores[:, None, :] > scores[:, :, None])).sum(axis=2)
    np.testing.assert_array_equal(ranks_of(scores), np.where(known, 1 + higher, 0))


def test_sandwich_intervals_and_rank_intervals_on_the_result(battles):
    result = fit(battles, FitOptions(style="length", ci=CIMethod.sandwich, rounds=500, min_battles=1))
    board = result.leaderboard
    assert (board["score_lower"] < board["score"]).all() and (board["score"] < board["score_upper"]).all()
    assert (board["rank_lower"] <= board["rank_upper"]).all()
    half = (result.coefficients["upper"] - result.coefficients["lower"]) / 2
    se = np.sqrt(np.diag(result.covariance)[result.beta.size :])
    np.testing.assert_allclose(half.to_numpy(), 1.959963984540054 * se, rtol=1e-6)
    assert result.score_draws.shape == (500, 6)
