"""FitResult: leaderboard shape and order, anchor gauge, win probabilities, the rendered document."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from sim_battles import simulate

from arena_cli.models import LEADERBOARD_COLUMNS, CIMethod, FitOptions, fit, predict_win_prob
from arena_cli.models.result import POINTS_PER_LOGIT


@pytest.fixture(scope="module")
def result():
    frame, _ = simulate(5000, 5, seed=8, gamma={"length": 0.5})
    return fit(frame, FitOptions(style="length", ci=CIMethod.sandwich, rounds=200))


def test_leaderboard_columns_types_and_order(result):
    board = result.leaderboard
    assert tuple(board.columns) == LEADERBOARD_COLUMNS
    assert board.schema["rank"] == pl.Int64 and board.schema["score"] == pl.Float64 and board.schema["model"] == pl.String
    assert board["score"].to_list() == sorted(board["score"].to_list(), reverse=True)
    assert board["score"].mean() == pytest.approx(1000.0, abs=1e-5)
    assert result.coefficients.columns == ["feature", "coef", "lower", "upper"]
    np.testing.assert_allclose(result.scores, 1000 + POINTS_PER_LOGIT * result.beta)


def test_anchor_pins_one_model_and_shifts_everything_else():
    frame, _ = simulate(5000, 5, seed=8)
    free = fit(frame, FitOptions(ci=CIMethod.sandwich))
    pinned = fit(frame, FitOptions(ci=CIMethod.sandwich, anchor=("model-002", 1114.0)))
    shift = 1114.0 - free.scores[free.index("model-002")]
    np.testing.assert_allclose(pinned.scores, free.scores + shift)
    row = pinned.leaderboard.filter(pl.col("model") == "model-002").row(0, named=True)
    assert row["score"] == row["score_lower"] == row["score_upper"] == 1114.0
    assert pinned.settings["anchor"] == {"model": "model-002", "score": 1114.0}


def test_predicted_win_probabilities(result):
    a, b = result.models[0], result.models[1]
    p = predict_win_prob(result, a, b)
    assert p == pytest.approx(1 / (1 + np.exp(-(result.beta[0] - result.beta[1]))))
    assert predict_win_prob(result, b, a) == pytest.approx(1 - p)
    grid = predict_win_prob(result, [a, a, b], [b, a, a])
    np.testing.assert_allclose(grid, [p, 0.5, 1 - p])
    # 400 points of score difference are 10:1 odds, as on the Elo scale
    gap = (result.scores[0] - result.scores[1]) / 400
    assert p / (1 - p) == pytest.approx(10**gap)
    with pytest.raises(KeyError):
        predict_win_prob(result, "nobody", a)


def test_document_tables_and_meta(result):
    doc = result.to_document()
    assert doc.kind == "leaderboard"
    assert [t.name for t in doc.tables] == ["leaderboard", "coefficients"]
    assert doc.table("leaderboard").frame.equals(result.leaderboard)
    assert doc.meta["settings"] == {k: v for k, v in result.settings.items() if k != "versions"}
    assert doc.meta["versions"] == result.settings["versions"]
    assert "5,000 battles among 5 models" in doc.title


def test_settings_are_json_safe_and_deterministic(result):
    import json

    again = fit(simulate(5000, 5, seed=8, gamma={"length": 0.5})[0], FitOptions(style="length", ci=CIMethod.sandwich, rounds=200))
    assert json.dumps(result.settings, sort_keys=True) == json.dumps(again.settings, sort_keys=True)
    assert again.leaderboard.equals(result.leaderboard)
