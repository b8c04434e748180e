"""Online Elo through the rating-method seam: FastChat's loop, vote order, bootstrap over votes."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import polars as pl
import pytest

from arena_cli.errors import InputError
from arena_cli.models import CIMethod, FitOptions, fit
from arena_cli.models import design as D
from arena_cli.models.elo import OnlineElo, _resampled_ratings
from arena_cli.models.methods import rating_method
from arena_cli.models.options import Method
from sim_battles import simulate

ELO = FitOptions(method="elo", ci=CIMethod.none, min_battles=1)


def fastchat_online_elo(rows, k=4, scale=400, base=10, init_rating=1000):
    """FastChat's ``compute_online_elo``, one vote at a time (winner: model_a, model_b, tie, tie (bothbad))."""
    rating = defaultdict(lambda: init_rating)
    for model_a, model_b, winner in rows:
        ra, rb = rating[model_a], rating[model_b]
        ea = 1 / (1 + base ** ((rb - ra) / scale))
        eb = 1 / (1 + base ** ((ra - rb) / scale))
        if winner == "model_a":
            sa = 1
        elif winner == "model_b":
            sa = 0
        elif winner in ("tie", "tie (bothbad)"):
            sa = 0.5
        else:
            raise ValueError(winner)
        rating[model_a] += k * (sa - ea)
        rating[model_b] += k * (1 - sa - eb)
    return dict(rating)


def fastchat_rows(frame: pl.DataFrame):
    """The votes in FastChat's vocabulary (both_bad is a tie), in the frame's order."""
    winner = pl.col("outcome").replace({"both_bad": "tie (bothbad)"})
    return frame.select("model_a", "model_b", winner).rows()


@pytest.fixture(scope="module")
def log() -> pl.DataFrame:
    """A simulated log with ties and both_bad votes, its timestamps a permutation of the rows."""
    frame, _ = simulate(3000, 7, seed=11)  # draws are ties or both_bad
    minutes = np.random.default_rng(5).permutation(frame.height).astype(np.int64) * 60_000_000
    return frame.select("model_a", "model_b", "outcome").with_columns(pl.Series("timestamp", minutes).cast(pl.Datetime("us", "UTC")))


def scores(result) -> dict[str, float]:
    return dict(zip(result.models, result.scores.tolist()))


def test_online_elo_equals_fastchats_loop_in_timestamp_order(log):
    result = fit(log, ELO)
    reference = fastchat_online_elo(fastchat_rows(log.sort("timestamp")))
    assert set(result.models) == set(reference)
    for model, score in scores(result).items():
        assert score == pytest.approx(reference[model], abs=1e-9)
    assert result.settings["method"] == "elo" and result.settings["vote_order"] == D.BY_TIMESTAMP
    # the shared result side: leaderboard sorted by score, records, LMArena rank from the scores alone
    board = result.leaderboard
    assert board["model"].to_list() == sorted(reference, key=lambda m: -reference[m])
    assert board["battles"].sum() == 2 * log.height
    assert result.rank_draws is None and board["score_lower"].null_count() == board.height


def test_shuffled_rows_with_the_same_timestamps_rate_the_same(log):
    shuffled = log.sample(fraction=1.0, shuffle=True, seed=3)
    assert shuffled["model_a"].to_list() != log["model_a"].to_list()
    assert scores(fit(shuffled, ELO)) == scores(fit(log, ELO))


def test_another_vote_order_rates_differently(log):
    reversed_time = log.with_columns((pl.col("timestamp").max() - pl.col("timestamp") + pl.col("timestamp").min()).alias("timestamp"))
    forward, backward = scores(fit(log, ELO)), scores(fit(reversed_time, ELO))
    assert max(abs(forward[m] - backward[m]) for m in forward) > 1.0
    reference = fastchat_online_elo(fastchat_rows(reversed_time.sort("timestamp")))
    assert all(backward[m] == pytest.approx(reference[m], abs=1e-9) for m in backward)


def test_without_timestamps_the_votes_are_taken_as_read(log):
    untimed = log.sample(fraction=1.0, shuffle=True, seed=8).drop("timestamp")
    result = fit(untimed, ELO)
    reference = fastchat_online_elo(fastchat_rows(untimed))
    assert all(score == pytest.approx(reference[m], abs=1e-9) for m, score in scores(result).items())
    assert result.settings["vote_order"] == D.AS_READ
    # parts are read in order: two halves give the same ratings as the whole
    halves = [untimed.head(1000).lazy(), untimed.tail(untimed.height - 1000).lazy()]
    assert scores(fit(halves, ELO)) == scores(result)


def test_equal_timestamps_keep_the_order_read(log):
    coarse = log.with_columns(pl.col("timestamp").dt.truncate("1h"))  # 60 votes per hour share a timestamp
    result = fit(coarse, ELO)
    reference = fastchat_online_elo(fastchat_rows(coarse.sort("timestamp", maintain_order=True)))
    assert all(score == pytest.approx(reference[m], abs=1e-9) for m, score in scores(result).items())


def test_bootstrap_rounds_are_fastchats_resamples(log):
    """Each round is online Elo on a resample of the votes drawn with replacement, in the order drawn."""
    battles = D.prepare(log, ELO)
    score_a = battles.outcome / D.A_WINS
    elo = OnlineElo()
    draws = _resampled_ratings((elo, battles.a, battles.b, score_a, elo.k_per_vote(battles.n_rows, None), battles.n_models, 42), range(3))
    rows = list(zip(battles.a.tolist(), battles.b.tolist(), np.array(["model_b", "tie", "model_a"])[battles.outcome].tolist()))
    for r in range(3):
        picks = np.random.default_rng([42, 2, r]).integers(0, battles.a.size, battles.a.size)
        reference = fastchat_online_elo([rows[i] for i in picks])
        assert np.allclose(draws[r], [reference[m] for m in range(battles.n_models)], rtol=0, atol=1e-8)


def test_bootstrap_intervals_ranks_and_workers(log):
    options = FitOptions(method="elo", rounds=40, min_battles=1, workers=1)
    one = fit(log, options)
    two = fit(log, FitOptions(method="elo", rounds=40, min_battles=1, workers=2))
    np.testing.assert_array_equal(one.score_draws, two.score_draws)
    assert one.score_draws.shape == (40, 7) and one.rank_draws.shape == (40, 7)
    board = one.leaderboard
    assert (board["score_lower"] < board["score_upper"]).all()
    assert (board["rank_lower"] <= board["rank_upper"]).all()


def test_a_model_missing_from_a_resample_has_no_rating_there():
    elo = OnlineElo()
    a, b, s = np.array([0, 0, 1]), np.array([1, 1, 2]), np.array([1.0, 0.5, 0.0])
    draws = elo.bootstrap(a, b, s, 3, rounds=30, seed=1, workers=1)
    missing = np.isnan(draws)
    assert missing.any() and not missing.all(axis=1).any()


def test_order_is_kept_only_for_a_method_that_needs_it(log):
    assert rating_method(Method.elo).needs_order and not rating_method(Method.bradley_terry).needs_order
    assert "timestamp" in D.Encoder(ELO).columns and "timestamp" not in D.Encoder(FitOptions()).columns
    assert D.Encoder(FitOptions(style="length,sentiment", cluster="judge")).columns == ("model_a", "model_b", "outcome", "weight", "judge", "sentiment")
    plain = D.prepare(log, FitOptions(min_battles=1))
    assert plain.vote_order is None and plain.n_rows < plain.n_battles  # aggregated by pair and outcome
    ordered = D.prepare(log, ELO)
    assert ordered.n_rows == ordered.n_battles == log.height


def test_encoded_battles_keep_their_order(log):
    encoder = D.Encoder(ELO)
    parts = [encoder(part) for part in (log.head(1500), log.tail(1500))]
    assert scores(fit(D.Encoded(parts), ELO)) == scores(fit(log, ELO))


def test_elo_keeps_models_bradley_terry_cannot_rate():
    """A model that never lost has an Elo rating but no finite maximum-likelihood score."""
    rows = [("a", "b", "model_a")] * 3 + [("b", "c", "model_a"), ("c", "b", "model_a")] * 3
    frame = pl.DataFrame(rows, schema=["model_a", "model_b", "outcome"], orient="row")
    assert fit(frame, ELO).models == ("a", "b", "c")
    assert "a" not in fit(frame, FitOptions(min_battles=1, ci=CIMethod.none)).models


@pytest.mark.parametrize("options", [
    dict(style="length"), dict(ci="sandwich"), dict(ties="davidson"), dict(cluster="judge"), dict(ridge=1.0),
    dict(compat="arena-rank"),
])
def test_options_elo_has_no_use_for_are_errors(options):
    frame, _ = simulate(500, 4, seed=2, n_judges=5)
    with pytest.raises(InputError):
        fit(frame, FitOptions(method="elo", min_battles=1, **options))
