"""Per-vote weights in every fit: a vote of integer weight w gives the point estimates of w identical votes,
but stays one observation for the uncertainty (sandwich and bootstrap); a vote of weight 0 is no vote."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sim_battles import simulate

from arena_cli import fit
from arena_cli.models.elo import OnlineElo

STYLE = "length,cov"  # a feature group from per-side counts and a user covariate, used as it is


@pytest.fixture(scope="module")
def weighted() -> pl.DataFrame:
    """Simulated votes with style counts, a covariate, judges, and integer weights 1..3."""
    frame, _ = simulate(3000, 6, seed=11, gamma={"length": 0.5}, n_judges=40)
    rng = np.random.default_rng(5)
    return frame.with_columns(
        pl.Series("cov", rng.normal(size=frame.height)),
        pl.Series("weight", rng.integers(1, 4, frame.height).astype(np.float64)),
    )


def duplicated(frame: pl.DataFrame) -> pl.DataFrame:
    """Each vote repeated ``weight`` times, without the weights."""
    return frame[np.repeat(np.arange(frame.height), frame["weight"].cast(pl.Int64).to_numpy())].drop("weight")


def assert_same_fit(one, other, tol=1e-9):
    assert one.models == other.models
    np.testing.assert_allclose(one.beta, other.beta, rtol=0, atol=tol)
    np.testing.assert_allclose(one.gamma, other.gamma, rtol=0, atol=tol)
    if one.log_nu is not None or other.log_nu is not None:
        assert one.log_nu == pytest.approx(other.log_nu, abs=tol)


@pytest.mark.parametrize("options", [
    {"style": "none"},
    {"style": STYLE},
    {"style": "none", "ties": "davidson"},
    {"style": STYLE, "ties": "davidson"},
    {"style": "none", "reweight": True},
    {"style": STYLE, "reweight": True, "ridge": 0.5},
    {"style": STYLE, "normalize": False},
    {"style": "none", "cluster": "judge"},
])
def test_integer_weights_give_the_point_estimates_of_duplicated_votes(weighted, options):
    """Frequency semantics for the point estimate: the objective, the standardisation of style terms, the pair
    frequencies of --reweight and the ridge penalty's scale all count a vote of weight w as w votes."""
    assert_same_fit(fit(weighted, ci="none", **options), fit(duplicated(weighted), ci="none", **options))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3), st.sampled_from(["model_a", "model_b", "tie"]), st.integers(0, 3)), min_size=1, max_size=40),
       st.sampled_from(["half", "drop"]))
def test_any_integer_weights_are_duplicated_votes(votes, ties):
    """Whatever the comparison graph (models left out for having no finite score, weights of 0), the weighted
    fit is the fit of the duplicated votes, or both fail alike. (Davidson's model is left to the simulated
    votes above: on tiny graphs its maximum can lie at infinity where half-tie credit says it is finite.)"""
    from arena_cli.errors import ArenaError

    frame = pl.DataFrame(
        [{"model_a": f"m{a}", "model_b": f"m{b}", "outcome": o, "weight": float(w)} for a, b, o, w in votes],
        schema={"model_a": pl.String, "model_b": pl.String, "outcome": pl.String, "weight": pl.Float64},
    )
    outcomes = []
    for battles in (frame, duplicated(frame)):
        try:
            outcomes.append(fit(battles, ci="none", min_battles=1, ties=ties))
        except ArenaError as error:
            outcomes.append(type(error))
    if isinstance(outcomes[0], type) or isinstance(outcomes[1], type):
        assert outcomes[0] == outcomes[1]
    else:
        assert_same_fit(*outcomes, tol=1e-7)


def test_the_statsmodels_solver_honours_weights(weighted):
    small = weighted.head(800)
    for style in ("none", "cov"):
        newton = fit(small, style=style, ci="none")
        reference = fit(small, style=style, ci="none", solver="statsmodels")
        assert_same_fit(newton, reference, tol=1e-6)


def test_a_vote_of_weight_zero_is_no_vote(weighted):
    """Everything, intervals and bootstrap draws included, is as if the vote were not there."""
    zeroed = weighted.with_columns(pl.when(pl.int_range(pl.len()) % 7 == 0).then(0.0).otherwise(pl.col("weight")).alias("weight"))
    removed = zeroed.filter(pl.col("weight") > 0)
    for options in ({"style": "none"}, {"style": STYLE}, {"style": "none", "ci": "sandwich"}):
        one = fit(zeroed, rounds=20, workers=1, **options)
        other = fit(removed, rounds=20, workers=1, **options)
        assert one.leaderboard.equals(other.leaderboard) and one.coefficients.equals(other.coefficients)
        assert one.settings == other.settings
    only_ones = weighted.with_columns(pl.when(pl.int_range(pl.len()) % 7 == 0).then(0.0).otherwise(1.0).alias("weight"))
    unweighted = only_ones.filter(pl.col("weight") > 0).drop("weight")
    assert fit(only_ones, rounds=20, workers=1).leaderboard.equals(fit(unweighted, rounds=20, workers=1).leaderboard)


@pytest.mark.parametrize(("heavy", "message"), [(1e13, "resolves weights within a ratio of 1e\\+12"), (1e308, "sum beyond what a double holds")])
def test_weights_a_double_cannot_sum_are_refused(weighted, heavy, message):
    """Beside a vote of weight 1e20 the others vanish from every sum (every score came out at the offset); two of
    1e308 sum to infinity (every score NaN). A weight of 0 is no vote and stretches no range."""
    from arena_cli.errors import InputError

    extreme = weighted.with_columns(pl.when(pl.int_range(pl.len()) < 2).then(heavy).otherwise(pl.col("weight")).alias("weight"))
    with pytest.raises(InputError, match=message):
        fit(extreme, ci="none")
    wide = weighted.with_columns(pl.when(pl.int_range(pl.len()) < 2).then(1e11).when(pl.int_range(pl.len()) < 4).then(0.0).otherwise(1.0).alias("weight"))
    assert fit(wide, ci="none").leaderboard.height


def test_weights_of_one_are_the_unweighted_fit(weighted):
    ones = weighted.with_columns(pl.lit(1.0).alias("weight"))
    for options in ({"style": "none"}, {"style": STYLE, "ci": "sandwich"}):
        one, other = fit(ones, rounds=20, workers=1, **options), fit(ones.drop("weight"), rounds=20, workers=1, **options)
        assert one.leaderboard.equals(other.leaderboard) and one.settings == other.settings
        assert "total_weight" not in one.settings
    assert fit(weighted, ci="none").settings["total_weight"] == weighted["weight"].sum()


# ------------------------------------------------------------------------------------------- sandwich


def glm_reference(frame: pl.DataFrame, result, covariate: bool):
    """statsmodels' GLM Binomial of the same fit: the first model as reference (β = 0), a tie as y = ½."""
    import statsmodels.api as sm

    models = list(result.models)
    a = frame["model_a"].replace_strict(models, list(range(len(models)))).to_numpy()
    b = frame["model_b"].replace_strict(models, list(range(len(models)))).to_numpy()
    Z = np.zeros((frame.height, len(models)))
    Z[np.arange(frame.height), a] += 1.0
    Z[np.arange(frame.height), b] -= 1.0
    Z = Z[:, 1:]
    if covariate:
        cov = frame["cov"].to_numpy()
        w = frame["weight"].to_numpy()
        mean = cov @ w / w.sum()
        sd = np.sqrt(((cov - mean) ** 2) @ w / w.sum())
        Z = np.column_stack([Z, (cov - mean) / sd])
    y = frame["outcome"].replace_strict({"model_a": 1.0, "model_b": 0.0, "tie": 0.5, "both_bad": 0.5}).to_numpy()
    return sm.GLM(y, Z, family=sm.families.Binomial(), var_weights=frame["weight"].to_numpy()).fit(cov_type="HC0", tol=1e-14)


@pytest.mark.parametrize("covariate", [False, True])
def test_the_sandwich_is_statsmodels_var_weights_with_hc0(weighted, covariate):
    """A vote of weight w is one observation whose score is w times its own: the meat takes w², which is
    statsmodels' GLM with ``var_weights`` and a robust HC0 covariance (``freq_weights`` would take w, as for w
    independent votes). Compared on what both parameterisations identify: differences to the first model,
    and the style coefficient."""
    result = fit(weighted, style="cov" if covariate else "none", ci="sandwich", rounds=10)
    glm = glm_reference(weighted, result, covariate)
    M = len(result.models)
    contrasts = np.zeros((M - 1 + covariate, result.covariance.shape[0]))
    contrasts[np.arange(M - 1), np.arange(1, M)] = 1.0
    contrasts[: M - 1, 0] = -1.0
    if covariate:
        contrasts[-1, M] = 1.0
    theta = np.concatenate([result.beta, result.gamma])
    np.testing.assert_allclose(contrasts[:, : theta.size] @ theta, glm.params, rtol=0, atol=1e-8)
    np.testing.assert_allclose(contrasts @ result.covariance @ contrasts.T, glm.cov_params(), rtol=1e-7, atol=1e-12)


def test_a_constant_weight_changes_no_interval_but_duplication_does(weighted):
    """Scaling every weight by 3 leaves the sandwich as it is; three copies of every vote shrink it by 3."""
    base = weighted.with_columns(pl.lit(1.0).alias("weight"))
    triple = base.with_columns(pl.lit(3.0).alias("weight"))
    plain, scaled = fit(base, ci="sandwich", rounds=10), fit(triple, ci="sandwich", rounds=10)
    copies = fit(duplicated(triple), ci="sandwich", rounds=10)
    np.testing.assert_allclose(scaled.covariance, plain.covariance, rtol=1e-9, atol=1e-14)
    np.testing.assert_allclose(copies.covariance, plain.covariance / 3.0, rtol=1e-9, atol=1e-14)


# ------------------------------------------------------------------------------------------- bootstrap


def test_the_weighted_bootstrap_is_seeded_and_independent_of_workers(weighted):
    for style in ("none", STYLE):
        one = fit(weighted, style=style, rounds=40, workers=1, seed=3)
        again = fit(weighted, style=style, rounds=40, workers=2, seed=3)
        np.testing.assert_array_equal(one.score_draws, again.score_draws)
        assert not np.array_equal(one.score_draws, fit(weighted, style=style, rounds=40, workers=1, seed=4).score_draws)


def test_the_bootstrap_resamples_votes_each_with_its_weight(weighted):
    """Every vote of weight 3: a style fit's resamples are the unweighted fit's (the same votes drawn, the
    objective scaled by 3), not those of three copies of every vote, whose spread is √3 smaller."""
    base = weighted.with_columns(pl.lit(1.0).alias("weight"))
    triple = base.with_columns(pl.lit(3.0).alias("weight"))
    plain, scaled = fit(base, style=STYLE, rounds=60, workers=1), fit(triple, style=STYLE, rounds=60, workers=1)
    np.testing.assert_allclose(scaled.score_draws, plain.score_draws, rtol=0, atol=1e-3)
    np.testing.assert_allclose(scaled.gamma_draws, plain.gamma_draws, rtol=0, atol=1e-6)
    copies = fit(duplicated(triple), style="none", rounds=200, workers=1)
    spread = fit(triple, style="none", rounds=200, workers=1).score_draws.std(axis=0) / copies.score_draws.std(axis=0)
    assert 1.4 < np.median(spread) < 2.1  # √3 ≈ 1.73


# ----------------------------------------------------------------------------------------------- Elo


def test_online_elo_moves_ratings_by_k_times_the_weight(weighted):
    """A vote of weight w moves the ratings as one vote with k·w; weight 0 is no vote."""
    votes = weighted.head(400).with_columns(pl.lit("2025-01-01").str.to_datetime().dt.replace_time_zone("UTC").alias("timestamp"))
    doubled = votes.with_columns(pl.lit(2.0).alias("weight"))
    elo = OnlineElo()
    a, b = np.array([0, 1, 2, 0]), np.array([1, 2, 0, 2])
    s = np.array([1.0, 0.5, 0.0, 1.0])
    np.testing.assert_array_equal(elo.ratings(a, b, s, 3, np.full(4, 2.0)), OnlineElo(k=8.0).ratings(a, b, s, 3))
    np.testing.assert_array_equal(
        elo.bootstrap(a, b, s, 3, rounds=5, seed=1, workers=1, weight=np.full(4, 2.0)), OnlineElo(k=8.0).bootstrap(a, b, s, 3, rounds=5, seed=1, workers=1)
    )
    zeroed = doubled.with_columns(pl.when(pl.int_range(pl.len()) % 5 == 0).then(0.0).otherwise(pl.col("weight")).alias("weight"))
    one = fit(zeroed, method="elo", rounds=20, workers=1, min_battles=1)
    other = fit(zeroed.filter(pl.col("weight") > 0), method="elo", rounds=20, workers=1, min_battles=1)
    assert one.leaderboard.equals(other.leaderboard)
    assert not fit(doubled, method="elo", ci="none").leaderboard.equals(fit(votes.drop("weight"), method="elo", ci="none").leaderboard)


def test_weights_of_a_library_frame_are_checked(weighted):
    from arena_cli.errors import InputError

    with pytest.raises(InputError, match="finite numbers >= 0"):
        fit(weighted.with_columns(pl.lit(-1.0).alias("weight")), ci="none")
    with pytest.raises(InputError, match="finite numbers >= 0"):
        fit(weighted.with_columns(pl.lit("x").alias("weight")), ci="none")
    with pytest.raises(InputError, match="must be numbers"):
        fit(weighted.with_columns(pl.lit(True).alias("weight")), ci="none")
    nulls = weighted.with_columns(pl.lit(None, dtype=pl.Float64).alias("weight"))
    assert fit(nulls, ci="none").leaderboard.equals(fit(weighted.drop("weight"), ci="none").leaderboard)


def test_davidson_on_ties_only_is_an_input_error():
    """Only ties (weighted or not): ν has no finite estimate, an input error rather than a failed fit."""
    from arena_cli.errors import InputError

    ties = pl.DataFrame({"model_a": ["a", "b"], "model_b": ["b", "a"], "outcome": ["tie", "tie"], "weight": [1.0, 2.0]})
    for battles in (ties, ties.drop("weight")):
        with pytest.raises(InputError, match="every battle is a tie"):
            fit(battles, ties="davidson", ci="none", min_battles=1)
