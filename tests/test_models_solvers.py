"""The Newton solver against statsmodels (the independent reference) and against finite differences."""

from __future__ import annotations

import numpy as np
import pytest
from sim_battles import simulate

from arena_cli.models import design as D
from arena_cli.models.options import FitOptions, Penalty, Ties
from arena_cli.models.solvers import SERIAL, Problem, _line_search, _Spares, newton, statsmodels_fit

GAMMA = {"length": 0.8, "header": -0.3, "bold": 0.4}


def problem_for(frame, style="none", ties=Ties.half, ridge=0.0, reweight=False, aggregate=True):
    prepared = D.prepare(frame, FitOptions(style=style, ties=ties, min_battles=1))
    cells = D.cells(prepared)
    design = D.design(prepared, cells, D.pair_weights(D.cells(prepared)) if reweight else None)
    if not aggregate:
        design = D.design(prepared.with_features(np.zeros((1, prepared.n_rows)), ("zero",)), cells, design.row_weight if reweight else None)
    return Problem(design, davidson=ties is Ties.davidson, penalty=Penalty(ridge)), prepared


@pytest.fixture(scope="module")
def battles():
    frame, _ = simulate(2500, 7, seed=11, gamma=GAMMA)
    return frame


@pytest.mark.parametrize("style", ["none", "both"])
@pytest.mark.parametrize("reweight", [False, True])
def test_newton_equals_statsmodels_glm_to_1e6(battles, style, reweight):
    """Half ties (y = 0.5) in a binomial GLM: β and γ agree to 1e-6 (in fact to ~1e-13)."""
    problem, _ = problem_for(battles, style, reweight=reweight)
    ours = newton(problem, problem.design.row_count)
    reference = statsmodels_fit(problem, problem.design.row_count)
    assert np.abs(ours.theta - reference.theta).max() < 1e-6
    assert abs(ours.theta[: problem.M].sum()) < 1e-12  # Σβ = 0 gauge
    if style == "both":
        assert problem.k == 4


@pytest.mark.parametrize("style, ties, ridge", [("none", Ties.davidson, 0.0), ("both", Ties.davidson, 0.0), ("both", Ties.half, 0.5)])
def test_newton_equals_statsmodels_generic_likelihood(battles, style, ties, ridge):
    """Davidson's model and the ridge penalty against statsmodels' numerically differentiated likelihood."""
    problem, _ = problem_for(battles, style, ties=ties, ridge=ridge)
    ours = newton(problem, problem.design.row_count)
    reference = statsmodels_fit(problem, problem.design.row_count)
    assert np.abs(ours.theta - reference.theta).max() < 1e-5
    count = problem.design.row_count
    cw, ridge_sum = count * problem.design.row_weight, problem.ridge_sum(count)
    assert problem.terms(ours.theta, cw, ridge_sum).objective >= problem.terms(reference.theta, cw, ridge_sum).objective - 1e-9


def test_aggregated_cells_equal_per_battle_rows(battles):
    """Sufficient statistics lose nothing: the plain fit on cells equals the fit on individual battles."""
    cells_problem, _ = problem_for(battles)
    rows_problem, _ = problem_for(battles, aggregate=False)
    on_cells = newton(cells_problem, cells_problem.design.row_count)
    on_rows = newton(rows_problem, rows_problem.design.row_count)
    assert cells_problem.design.n_rows < rows_problem.design.n_rows
    np.testing.assert_allclose(on_cells.theta, on_rows.theta[: cells_problem.M], atol=1e-10)



@pytest.mark.parametrize("ties, style", [(Ties.half, "both"), (Ties.davidson, "both"), (Ties.davidson, "none")])
def test_gradient_and_hessian_match_finite_differences(battles, ties, style):
    problem, _ = problem_for(battles.head(400), style, ties=ties, ridge=0.3)
    count = problem.design.row_count
    cw = count * problem.design.row_weight
    ridge_sum = problem.ridge_sum(count)
    theta = np.random.default_rng(1).normal(0, 0.3, problem.n_params)

    def objective(t):
        return problem.terms(t, cw, ridge_sum).objective

    def gradient(t):
        return problem.gradient(t, problem.terms(t, cw, ridge_sum), cw, ridge_sum)

    h = 1e-6
    eye = np.eye(problem.n_params)
    numeric_grad = np.array([(objective(theta + h * e) - objective(theta - h * e)) / (2 * h) for e in eye])
    np.testing.assert_allclose(gradient(theta), numeric_grad, rtol=1e-6, atol=1e-5)
    numeric_hess = np.array([(gradient(theta + h * e) - gradient(theta - h * e)) / (2 * h) for e in eye])
    information = problem.information(problem.terms(theta, cw, ridge_sum), cw, ridge_sum)
    np.testing.assert_allclose(information, -numeric_hess, rtol=1e-5, atol=1e-4)


def test_warm_start_and_inactive_models(battles):
    problem, prepared = problem_for(battles)
    full = newton(problem, problem.design.row_count)
    again = newton(problem, problem.design.row_count, theta0=full.theta)
    assert again.iterations <= 2
    np.testing.assert_allclose(again.theta, full.theta, atol=1e-12)
    # leaving model 0 out = fitting the battles without it
    active = np.ones(problem.M, dtype=bool)
    active[0] = False
    keep_rows = (problem.design.pair_a[problem.design.row_pair] != 0) & (problem.design.pair_b[problem.design.row_pair] != 0)
    count = np.where(keep_rows, problem.design.row_count, 0.0)
    restricted = newton(problem, count, active=active)
    reference = statsmodels_fit(problem, count, active)
    assert restricted.theta[0] == 0.0
    np.testing.assert_allclose(restricted.theta, reference.theta, atol=1e-8)


@pytest.mark.parametrize("ties", [Ties.half, Ties.davidson])
@pytest.mark.parametrize("stretch", [1.0, 3.0, 40.0])
def test_a_line_search_takes_the_step_backtracking_takes(battles, ties, stretch):
    """The full step is taken on the gradient at its end when the objective still rises there; a longer one is
    halved as backtracking on the objective halves it: the same length, to an objective no lower than the start's."""
    problem, _ = problem_for(battles, style="both", ties=ties)
    count = problem.design.row_count
    cw, ridge = count * problem.design.row_weight, problem.ridge_sum(count)
    theta = np.zeros(problem.n_params)
    start = problem.terms(theta, cw, ridge)
    step = np.linalg.lstsq(problem.information(start, cw, ridge), problem.gradient(theta, start, cw, ridge), rcond=None)[0] * stretch
    length, moved, terms, gradient = _line_search(problem, theta, start, step, cw, ridge, _Spares(None), SERIAL)
    backtracked = 1.0
    while problem.terms(theta + backtracked * step, cw, ridge).objective < start.objective - 1e-12 * (1 + abs(start.objective)):
        backtracked *= 0.5
    assert length == backtracked
    np.testing.assert_array_equal(moved, theta + length * step)
    assert problem.terms(moved, cw, ridge).objective >= start.objective
    if gradient is not None:  # taken on the slope: it rose all along the step
        assert length == 1.0 and gradient @ step >= 0
        np.testing.assert_allclose(gradient, problem.gradient(moved, terms, cw, ridge))
    if stretch == 1.0:
        assert gradient is not None  # (a Newton step from zero: taken on the slope, no objective computed)
    if stretch == 40.0:
        assert length < 1.0  # (the test reaches the backtracking)


@pytest.mark.parametrize("ties", [Ties.half, Ties.davidson])
def test_newton_from_shared_terms_leaves_them_as_they_were(battles, ties):
    """A bootstrap round starts from the full-data fit's terms, shared by every round, and computes its own steps'
    terms in place of its earlier ones: the shared terms stay as they were, and each round's fit is the same."""
    problem, _ = problem_for(battles, style="both", ties=ties)
    full = newton(problem, problem.design.row_count)
    shared = [np.copy(a) if isinstance(a, np.ndarray) else a for a in vars(full.terms).values()]
    count = problem.design.row_count.copy()
    count[:5] += 1.0  # (a resample close to the data, as a round of many battles is: steps taken in full, no line search)
    fits = [newton(problem, count, theta0=full.theta, terms0=full.terms).theta for _ in range(2)]
    for before, after in zip(shared, vars(full.terms).values()):
        np.testing.assert_array_equal(before, after)
    np.testing.assert_array_equal(fits[0], fits[1])
    np.testing.assert_allclose(fits[0], newton(problem, count).theta, atol=1e-6)


def test_davidson_recovers_the_tie_parameter():
    frame, truth = simulate(60000, 6, seed=5, tie_model="davidson", nu=0.6)
    problem, prepared = problem_for(frame, ties=Ties.davidson)
    solution = newton(problem, problem.design.row_count)
    assert np.exp(solution.theta[-1]) == pytest.approx(0.6, rel=0.05)
    order = [truth.models.index(m) for m in prepared.models]
    np.testing.assert_allclose(solution.theta[: problem.M], truth.beta[order], atol=0.05)


@pytest.mark.parametrize("ties", [Ties.half, Ties.davidson])
def test_blocked_evaluation_equals_one_block(battles, ties, monkeypatch):
    """Per-row terms and the information are computed in blocks of rows; block edges change nothing."""
    import arena_cli.models.solvers as S

    options = FitOptions(style="length,header", ties=ties).resolved()
    prepared = D.prepare(battles, options)
    design = D.design(prepared, D.cells(prepared))
    theta = np.random.default_rng(1).normal(size=prepared.n_models + 2 + int(ties is Ties.davidson))
    count = np.random.default_rng(2).poisson(1.0, design.n_rows).astype(float)

    def evaluate():
        problem = Problem(design, davidson=ties is Ties.davidson, penalty=Penalty(0.01))
        ridge_sum = problem.ridge_sum(count)
        terms = problem.terms(theta, count, ridge_sum)
        return terms.objective, problem.gradient(theta, terms, count, ridge_sum), problem.information(terms, count, ridge_sum)

    whole = evaluate()
    monkeypatch.setattr(S, "CHUNK", 37)
    assert design.n_rows > 10 * 37
    for blocked, single in zip(evaluate(), whole):
        np.testing.assert_allclose(blocked, single, rtol=1e-12, atol=1e-9)


@pytest.mark.parametrize("threads", [2, 3, 64])
def test_threads_change_nothing(battles, threads, monkeypatch):
    """Threads share the blocks of rows, and sums over blocks are taken in block order: the same bits."""
    import arena_cli.models.solvers as S

    problem, _ = problem_for(battles, "both", ridge=0.1)
    monkeypatch.setattr(S, "CHUNK", 97)
    assert problem.design.n_rows > 5 * problem._block_rows() > 5 * S.CHUNK
    count = problem.design.row_count
    cw = count * np.random.default_rng(4).uniform(0.5, 2.0, problem.design.n_rows)  # (weights: a factor per block)
    ridge_sum = problem.ridge_sum(count)
    theta = np.random.default_rng(3).normal(0, 0.3, problem.n_params)
    with S.Workers(threads) as workers:
        one, many = problem.terms(theta, cw, ridge_sum), problem.terms(theta, cw, ridge_sum, workers=workers)
        assert one.objective == many.objective
        assert np.array_equal(one.s_d, many.s_d) and np.array_equal(one.h_dd, many.h_dd)
        assert np.array_equal(problem.gradient(theta, one, cw, ridge_sum), problem.gradient(theta, one, cw, ridge_sum, workers))
        assert np.array_equal(problem.information(one, cw, ridge_sum), problem.information(one, cw, ridge_sum, workers))
    assert np.array_equal(newton(problem, count).theta, newton(problem, count, threads=threads).theta)


@pytest.mark.parametrize("ties", [Ties.half, Ties.davidson])
def test_the_terms_at_the_maximum_are_those_of_its_theta_computed_when_asked_and_once(battles, ties):
    """A run that ends on a full step computes the terms at its last θ only when asked for (a fit without
    intervals never is): they are then the terms at the returned θ, and the solution, settled, can be sent to a
    spawned worker."""
    import pickle

    problem, _ = problem_for(battles, style="both", ties=ties)
    count = problem.design.row_count
    solution = newton(problem, count)
    at_theta = problem.terms(solution.theta, count, problem.ridge_sum(count), objective=False)
    terms = solution.terms
    assert terms is solution.terms  # (computed once)
    for name, value in vars(at_theta).items():
        if isinstance(value, np.ndarray):
            np.testing.assert_allclose(getattr(terms, name), value, rtol=1e-12, atol=1e-15)
    sent = pickle.loads(pickle.dumps(solution.settled()))
    np.testing.assert_array_equal(sent.terms.s_d, terms.s_d)
