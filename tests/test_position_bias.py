"""The position term (``--position-bias``): the log-odds advantage of the model shown first, estimated with the
scores. Recovered from swapped games with known truth, equal to statsmodels' GLM with an intercept column on the
same design, weights honoured, refused when the order is confounded with the models."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest
from sim_battles import simulate
from typer.testing import CliRunner

from arena_cli.cli import app
from arena_cli.errors import InputError
from arena_cli.models import CIMethod, FitOptions, fit
from arena_cli.models import design as D
from arena_cli.models.options import POSITION, Penalty
from arena_cli.models.solvers import Problem
from arena_cli.simulate import simulate as simulate_votes


def swapped_games(n_pairs: int, n_models: int, position: float, seed: int) -> tuple[pl.DataFrame, np.ndarray]:
    """Each drawn pair judged twice, once in each order (arena-hard-auto's two games): P(first wins) =
    σ(β_first − β_second + position), ties so that a tie as half a win has mean exactly that (as the simulator's)."""
    rng = np.random.default_rng(seed)
    beta = np.linspace(-1.0, 1.0, n_models)
    a = rng.integers(n_models, size=n_pairs)
    b = (a + rng.integers(1, n_models, size=n_pairs)) % n_models
    first, second = np.concatenate([a, b]), np.concatenate([b, a])
    p = 1 / (1 + np.exp(-(beta[first] - beta[second] + position)))
    tau = 0.3 * (1 - np.abs(2 * p - 1))
    u = rng.random(first.size)
    outcome = np.where(u < p - tau / 2, "model_a", np.where(u < p + tau / 2, "tie", "model_b"))
    names = np.array([f"m{i}" for i in range(n_models)])
    return pl.DataFrame({"model_a": names[first], "model_b": names[second], "outcome": outcome}), beta


def test_recovered_from_swapped_games_with_known_truth():
    games, beta = swapped_games(15000, 6, position=0.35, seed=1)
    result = fit(games, FitOptions(position_bias=True, ci=CIMethod.sandwich))
    (row,) = result.coefficients.filter(pl.col("feature") == POSITION).iter_rows(named=True)
    assert row["lower"] < 0.35 < row["upper"] and row["upper"] - row["lower"] < 0.1
    assert result.position == pytest.approx(row["coef"], abs=1e-8)
    np.testing.assert_allclose(result.beta, beta - beta.mean(), atol=0.05)
    assert result.settings["position"]["coef"] == pytest.approx(row["coef"], abs=1e-8)
    # even in a balanced swapped design, leaving a real position advantage out pulls the scores together (a
    # logistic model is not collapsible): by 3% here
    plain = fit(games, FitOptions(ci=CIMethod.none))
    assert (np.abs(plain.beta) < np.abs(result.beta)).all()
    np.testing.assert_allclose(plain.beta, result.beta, rtol=0.05)


def test_recovered_from_the_simulator_with_style():
    """``simulate(position_bias=…)`` on LMArena-like votes (random sides), with style: the interval covers the
    truth (over 8 seeds the estimates average −0.245 with sd 0.008; the half-width is 0.024)."""
    sim = simulate_votes(20000, 8, seed=0, texts=False, position_bias=-0.25)
    assert sim.truth["outcome"]["position_bias"] == -0.25 and "position_bias" in sim.truth["outcome"]["model"]
    result = fit(sim.features(), FitOptions(style="both", position_bias=True, ci=CIMethod.sandwich))
    row = dict(zip(result.coefficients["feature"], result.coefficients.select("lower", "upper").rows()))[POSITION]
    assert row[0] < -0.25 < row[1]
    assert result.coefficients["feature"].to_list()[-1] == POSITION


def test_the_default_simulation_is_unchanged():
    assert "position_bias" not in simulate_votes(300, 4, seed=0, texts=False).truth["outcome"]


def glm_with_intercept(battles: pl.DataFrame, style: str) -> np.ndarray:
    """statsmodels GLM on one row per battle: reference-coded models, the standardised style terms, and a
    column of ones (the intercept: the position term); vote weights as frequency weights. Returns (β in the
    Σβ = 0 gauge, γ, π)."""
    import statsmodels.api as sm

    one_per_battle = FitOptions(style=style, min_battles=1, cluster="row")  # a cluster per battle: no aggregation
    prepared = D.prepare(battles.with_row_index("row"), one_per_battle)
    M, n = prepared.n_models, prepared.n_rows
    Z = np.zeros((n, M - 1))
    for model, sign in ((prepared.a, 1.0), (prepared.b, -1.0)):
        hit = model > 0
        Z[np.flatnonzero(hit), model[hit] - 1] += sign
    X = np.column_stack([Z, prepared.features.T, np.ones(n)])
    glm = sm.GLM(prepared.outcome / 2.0, X, family=sm.families.Binomial(), freq_weights=prepared.weight)
    params = glm.fit(method="newton", tol=1e-14, maxiter=100).params
    beta = np.concatenate([[0.0], params[: M - 1]])
    return np.concatenate([beta - beta.mean(), params[M - 1 :]])


@pytest.fixture(scope="module")
def battles() -> pl.DataFrame:
    frame, _ = simulate(3000, 6, seed=8, gamma={"length": 0.5, "bold": 0.2}, position_bias=0.3)
    return frame


@pytest.mark.parametrize("style", ["none", "length,bold"])
def test_equals_statsmodels_glm_with_an_intercept(battles, style):
    """A plain fit works on rows aggregated by *ordered* pair and outcome, a style fit on battles: both equal the
    GLM on one row per battle with an intercept column, to 1e-6."""
    ours = fit(battles, FitOptions(style=style, position_bias=True, ci=CIMethod.none, min_battles=1))
    reference = glm_with_intercept(battles, style)
    np.testing.assert_allclose(np.concatenate([ours.beta, ours.gamma]), reference, atol=1e-6)


def test_weights_are_honoured(battles):
    """A vote of weight w is w identical votes: the GLM with frequency weights, and the fit of repeated rows."""
    weights = np.random.default_rng(3).integers(1, 4, battles.height).astype(float)
    weighted = battles.with_columns(weight=pl.Series(weights))
    ours = fit(weighted, FitOptions(style="length", position_bias=True, ci=CIMethod.none, min_battles=1))
    reference = glm_with_intercept(weighted, "length")
    np.testing.assert_allclose(np.concatenate([ours.beta, ours.gamma]), reference, atol=1e-6)
    repeated = battles.select(pl.all().repeat_by(pl.Series(weights.astype(np.int64))).explode())
    again = fit(repeated, FitOptions(style="length", position_bias=True, ci=CIMethod.none, min_battles=1))
    np.testing.assert_allclose(np.concatenate([again.beta, again.gamma]), reference, atol=1e-6)


def test_the_order_of_a_pair_matters_in_the_aggregated_fit():
    """Two battles of the same pair in opposite orders with opposite outcomes: unordered cells would see one
    win each way, the ordered rows see the first-shown model win twice."""
    rows = [("a", "b", "model_a"), ("b", "a", "model_a")] * 40 + [("a", "b", "model_b"), ("b", "c", "model_b"), ("c", "a", "model_b"), ("a", "c", "model_a")] * 10
    frame = pl.DataFrame(rows, schema=["model_a", "model_b", "outcome"], orient="row")
    with_term = fit(frame, FitOptions(position_bias=True, ci=CIMethod.none, min_battles=1))
    assert with_term.position > 0.5
    np.testing.assert_allclose(np.concatenate([with_term.beta, with_term.gamma]), glm_with_intercept(frame, "none"), atol=1e-6)


def test_gradient_and_information_with_position_and_rating_penalty(battles):
    """The position term is unpenalised; a FastChat penalty (summed scale) on ratings and coefficients."""
    prepared = D.prepare(battles.head(500), FitOptions(style="length", min_battles=1))
    with_position = prepared.with_features(np.vstack([prepared.features, np.ones((1, prepared.n_rows))]), (*prepared.feature_names, POSITION))
    problem = Problem(D.design(with_position, D.cells(with_position)), davidson=False, penalty=Penalty(0.3, 0.2, per_vote=False), position=True)
    assert problem.lambdas.tolist() == [0.2] * problem.M + [0.3, 0.0]
    count = problem.design.row_count
    cw, ridge_sum = count * problem.design.row_weight, problem.ridge_sum(count)
    theta = np.random.default_rng(1).normal(0, 0.3, problem.n_params)

    def gradient(t):
        return problem.gradient(t, problem.terms(t, cw, ridge_sum), cw, ridge_sum)

    h, eye = 1e-6, np.eye(problem.n_params)
    numeric = np.array([(problem.terms(theta + h * e, cw, ridge_sum).objective - problem.terms(theta - h * e, cw, ridge_sum).objective) / (2 * h) for e in eye])
    np.testing.assert_allclose(gradient(theta), numeric, rtol=1e-6, atol=1e-5)
    hessian = np.array([(gradient(theta + h * e) - gradient(theta - h * e)) / (2 * h) for e in eye])
    np.testing.assert_allclose(problem.information(problem.terms(theta, cw, ridge_sum), cw, ridge_sum), -hessian, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("ci", ["sandwich", "bootstrap"])
@pytest.mark.parametrize("style, cluster", [("length", "judge"), ("none", None)])
def test_intervals_and_clusters(battles, ci, style, cluster):
    """Resamples of votes spread over the ordered rows of a plain fit, or of clusters; the sandwich likewise."""
    result = fit(battles, FitOptions(style=style, position_bias=True, ci=ci, rounds=60, workers=1, cluster=cluster))
    row = result.coefficients.filter(pl.col("feature") == POSITION)
    assert row["lower"].item() < row["coef"].item() < row["upper"].item() and row["upper"].item() - row["lower"].item() < 0.5


def test_confounded_order_is_an_input_error():
    """A baseline always shown first: a first-position advantage cannot be told from a stronger baseline."""
    rows = [("base", m, o) for m in ("x", "y", "z") for o in ("model_a", "model_b", "tie", "model_a")]
    frame = pl.DataFrame(rows * 20, schema=["model_a", "model_b", "outcome"], orient="row")
    with pytest.raises(InputError, match="confounded"):
        fit(frame, FitOptions(position_bias=True, ci=CIMethod.none, min_battles=1))
    # one pair the other way round identifies it (twice, with each model winning once: a single such battle, won by
    # base, would separate the outcomes, the position advantage running off with base's score)
    swapped = pl.concat([frame, pl.DataFrame([("x", "base", "model_b"), ("x", "base", "model_a")], schema=frame.schema, orient="row")])
    assert np.isfinite(fit(swapped, FitOptions(position_bias=True, ci=CIMethod.none, min_battles=1)).position)
    # so does a cycle shown in mixed orders, without any pair in both orders
    cycle = pl.DataFrame([("a", "b", o) for o in ("model_a", "model_b")] * 5 + [("b", "c", o) for o in ("model_a", "model_b")] * 5
                         + [("a", "c", o) for o in ("model_a", "model_b", "tie")] * 5, schema=frame.schema, orient="row")
    assert np.isfinite(fit(cycle, FitOptions(position_bias=True, ci=CIMethod.none, min_battles=1)).position)


def test_refused_where_it_has_no_meaning(battles):
    with pytest.raises(InputError, match="position"):
        fit(battles, FitOptions(method="elo", position_bias=True, min_battles=1))
    with_column = battles.with_columns(position=pl.lit(1.0))
    from arena_cli.errors import OptionError

    with pytest.raises(OptionError):
        fit(with_column, FitOptions(style="position", position_bias=True))


def test_cli_json_and_notes(battles, tmp_path):
    path = tmp_path / "votes.parquet"
    battles.write_parquet(path)
    runner = CliRunner()
    result = runner.invoke(app, ["fit", str(path), "--position-bias", "--ci", "sandwich", "-f", "json"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["meta"]["settings"]["position_bias"] is True and document["meta"]["settings"]["features"] == []
    assert [row["feature"] for row in document["tables"]["coefficients"]] == [POSITION]
    shown = runner.invoke(app, ["fit", str(path), "--position-bias", "--ci", "sandwich", "-f", "markdown"])
    assert "Position: the model shown first" in shown.stdout and "| position |" in shown.stdout
    plain = runner.invoke(app, ["fit", str(path), "--ci", "none", "-f", "json"])
    assert json.loads(plain.stdout)["tables"]["coefficients"] == [] and json.loads(plain.stdout)["meta"]["settings"]["position_bias"] is False
    confounded = tmp_path / "confounded.jsonl"
    pl.DataFrame([("base", m, "model_a") for m in "xyz"] * 30 + [("base", m, "model_b") for m in "xyz"] * 30,
                 schema=["model_a", "model_b", "winner"], orient="row").write_ndjson(confounded)
    refused = runner.invoke(app, ["fit", str(confounded), "--position-bias", "--ci", "none"])
    assert refused.exit_code == 3 and "confounded" in refused.output


def test_simulate_cli_position_bias(tmp_path):
    result = CliRunner().invoke(app, ["simulate", "-n", "300", "--models", "4", "--no-texts", "--position-bias", "0.5", "-o", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "truth.json").read_text())["outcome"]["position_bias"] == 0.5
    refused = CliRunner().invoke(app, ["simulate", "-n", "300", "--position-bias", "nan", "-o", str(tmp_path)])
    assert refused.exit_code == 2


def test_lmarena_140k_plain_votes():
    """On LMArena's votes (a coin decides the sides) the term is identified: the answer shown second is very
    slightly preferred, π = −0.020 [−0.029, −0.010] (sandwich), and no score moves by more than 0.31 points
    (the README quotes these)."""
    from conftest import shared_path

    battles = pl.read_parquet(shared_path("data", "lmarena-140k", "battles.parquet")).rename({"winner": "outcome"})
    with_term = fit(battles, FitOptions(position_bias=True, ci=CIMethod.sandwich))
    assert with_term.settings["position"] == pytest.approx({"coef": -0.0197, "lower": -0.0289, "upper": -0.0105}, abs=2e-4)
    plain = fit(battles, FitOptions(ci=CIMethod.none))
    moved = with_term.leaderboard.join(plain.leaderboard, on="model").select((pl.col("score") - pl.col("score_right")).abs().max()).item()
    assert 0.2 < moved < 0.35
