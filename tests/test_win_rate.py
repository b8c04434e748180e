"""Win rates against a baseline model (``--baseline-model``): arena-hard-auto's predicted win rate from the
Bradley-Terry scores, at equal style with the order shown averaged out, with intervals (delta method on the logit
under the sandwich, percentiles of the draws under the bootstrap)."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sim_battles import simulate
from typer.testing import CliRunner

from arena_cli.cli import app
from arena_cli.errors import InputError
from arena_cli.models import CIMethod, FitOptions, fit, predict_win_prob
from arena_cli.models.result import POINTS_PER_LOGIT, expected_score

BASE = "model-003"


@pytest.fixture(scope="module")
def battles() -> pl.DataFrame:
    frame, _ = simulate(4000, 7, seed=21, gamma={"length": 0.4})
    return frame


def by_model(result, column: str) -> dict[str, float]:
    return dict(zip(result.leaderboard["model"], result.leaderboard[column]))


def arena_hard_predict_win_rate(rating: float, baseline: float) -> float:
    """arena-hard-auto v0.1 ``predict_win_rate`` (SCALE 400, BASE 10) on our scores."""
    return 1 / (1 + 10 ** ((baseline - rating) / 400))


def test_sandwich_win_rates_are_those_of_the_score_interval_ends(battles):
    """With the baseline anchored, a model's score interval is the interval of β − β_baseline, and the win-rate
    interval is exactly the win rates at its ends (no position term, ties as half wins)."""
    result = fit(battles, FitOptions(style="length", ci=CIMethod.sandwich, baseline_model=BASE, anchor=f"{BASE}=1000"))
    board = result.leaderboard
    for row in board.iter_rows(named=True):
        for score, rate in (("score", "win_rate"), ("score_lower", "win_rate_lower"), ("score_upper", "win_rate_upper")):
            assert row[rate] == pytest.approx(arena_hard_predict_win_rate(row[score], 1000.0), abs=2e-6)
    assert board.filter(pl.col("model") == BASE).select("win_rate", "win_rate_lower", "win_rate_upper").row(0) == (0.5, 0.5, 0.5)
    assert result.settings["baseline_model"] == BASE
    # the anchor changes no win rate
    free = fit(battles, FitOptions(style="length", ci=CIMethod.sandwich, baseline_model=BASE))
    assert by_model(free, "win_rate_lower") == pytest.approx(by_model(result, "win_rate_lower"), abs=1e-9)


def test_bootstrap_win_rates_are_percentiles_of_the_draws(battles):
    result = fit(battles, FitOptions(ci=CIMethod.bootstrap, rounds=200, workers=1, baseline_model=BASE, anchor=f"{BASE}=1000"))
    for row in result.leaderboard.iter_rows(named=True):
        assert row["win_rate_lower"] <= row["win_rate"] <= row["win_rate_upper"]
        # a monotone map of the (anchored) score draws: the same percentiles, up to their interpolation
        for score, rate in (("score_lower", "win_rate_lower"), ("score_upper", "win_rate_upper")):
            assert row[rate] == pytest.approx(arena_hard_predict_win_rate(row[score], 1000.0), abs=1e-3)


def test_no_intervals_without_them(battles):
    board = fit(battles, FitOptions(ci=CIMethod.none, baseline_model=BASE)).leaderboard
    assert board["win_rate"].is_not_null().all() and board["win_rate_lower"].is_null().all()
    assert "win_rate" not in fit(battles, FitOptions(ci=CIMethod.none)).leaderboard.columns


def test_position_bias_is_averaged_over_both_orders(battles):
    result = fit(battles, FitOptions(ci=CIMethod.sandwich, baseline_model=BASE, position_bias=True))
    pi = result.position
    base = result.index(BASE)
    for model, rate in by_model(result, "win_rate").items():
        delta = result.beta[result.index(model)] - result.beta[base]
        expected = 0.5 * (1 / (1 + np.exp(-(delta + pi))) + 1 / (1 + np.exp(-(delta - pi))))
        assert rate == pytest.approx(expected, abs=1e-6)
        assert predict_win_prob(result, model, BASE) == pytest.approx(expected, abs=1e-9)
    lower, upper = by_model(result, "win_rate_lower"), by_model(result, "win_rate_upper")
    assert all(lower[m] < rate < upper[m] for m, rate in by_model(result, "win_rate").items() if m != BASE)


def test_davidson_counts_a_tie_as_half_a_win(battles):
    result = fit(battles, FitOptions(ties="davidson", ci=CIMethod.sandwich, baseline_model=BASE))
    nu = np.exp(result.log_nu)
    base = result.index(BASE)
    for model, rate in by_model(result, "win_rate").items():
        d = result.beta[result.index(model)] - result.beta[base]
        win, loss = np.exp(d / 2), np.exp(-d / 2)
        assert rate == pytest.approx((win + nu / 2) / (win + loss + nu), abs=1e-6)


@given(st.floats(-30, 30), st.floats(-5, 5), st.one_of(st.none(), st.floats(-5, 3)), st.floats(0.01, 5))
def test_expected_score_properties(delta, position, log_nu, step):
    """½ between equal models whatever the position term and ν; one side's share and the other's add to 1;
    increasing in the strength difference."""
    assert expected_score(np.array([0.0]), position, log_nu)[0] == pytest.approx(0.5, abs=1e-12)
    pair = expected_score(np.array([delta, -delta]), position, log_nu)
    assert pair.sum() == pytest.approx(1.0, abs=1e-12)
    assert expected_score(np.array([delta + step]), position, log_nu)[0] >= expected_score(np.array([delta]), position, log_nu)[0]


def test_infinite_strengths_give_certain_win_rates():
    assert expected_score(np.array([np.inf, -np.inf]), 0.3).tolist() == [1.0, 0.0]
    assert expected_score(np.array([np.inf, -np.inf]), 0.3, 0.2).tolist() == [1.0, 0.0]


def test_elo_win_rates(battles):
    result = fit(battles, FitOptions(method="elo", rounds=30, workers=1, baseline_model=BASE))
    scores, rates = by_model(result, "score"), by_model(result, "win_rate")
    for model, rate in rates.items():
        assert rate == pytest.approx(arena_hard_predict_win_rate(scores[model], scores[BASE]), abs=1e-6)


def test_unknown_baseline_is_an_input_error(battles, tmp_path):
    with pytest.raises(InputError, match="--baseline-model 'nobody'"):
        fit(battles, FitOptions(ci=CIMethod.none, baseline_model="nobody"))
    path = tmp_path / "votes.parquet"
    battles.write_parquet(path)
    result = CliRunner().invoke(app, ["fit", str(path), "--baseline-model", "nobody", "--ci", "none"])
    assert result.exit_code == 3 and "no such model" in result.output


def test_diff_and_report_carry_the_win_rates(battles, tmp_path):
    path = tmp_path / "votes.parquet"
    battles.write_parquet(path)
    runner = CliRunner()
    common = ["--baseline-model", BASE, "--rounds", "20", "--workers", "1"]
    diff = runner.invoke(app, ["diff", str(path), "--variants", "none,length", *common, "-f", "json"])
    assert diff.exit_code == 0, diff.output
    row = json.loads(diff.stdout)["tables"]["rank_diff"][0]
    assert {f"{c}_{v}" for c in ("win_rate", "win_rate_lower", "win_rate_upper") for v in ("none", "length")} <= set(row)
    shown = runner.invoke(app, ["diff", str(path), "--variants", "none,length", *common, "-f", "markdown"])
    assert "none win %" in shown.stdout and f"against {BASE}" in shown.stdout
    report = tmp_path / "report.md"
    made = runner.invoke(app, ["report", str(path), "--variants", "none,length", *common, "-o", str(report)])
    assert made.exit_code == 0, made.output
    text = report.read_text()
    assert f"win % vs {BASE}" in text and "length win %" in text
    table = runner.invoke(app, ["fit", str(path), *common, "-f", "csv"])
    assert table.stdout.splitlines()[0].startswith("rank,rank_lower,rank_upper,model,score,score_lower,score_upper,win_rate,win_rate_lower,win_rate_upper,battles")
