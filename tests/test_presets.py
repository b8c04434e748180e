"""``--compat fastchat`` and ``--compat arena-hard`` against the objectives of FastChat and arena-hard-auto,
re-implemented from their code (``tests/upstream.py``) and minimised to convergence by scipy on the same data.

Tolerance 1e-6 on the parameters (log-odds, log10 ratings, win rates): both sides are converged (Newton here,
L-BFGS-B with gtol 1e-12 there; observed differences are ~1e-9), so anything larger is a different objective.
"""

from __future__ import annotations

import json
import math

import numpy as np
import polars as pl
import pytest
from conftest import shared_path
from sim_battles import simulate
from typer.testing import CliRunner
from upstream import (
    FASTCHAT_DEFAULTS, LOG10, arena_hard_style_features, arena_hard_win_rates, fastchat_bt, fastchat_contextual_bt,
    fastchat_style_features,
)

from arena_cli.cli import app
from arena_cli.errors import InputError
from arena_cli.models import CIMethod, FitOptions, fit
from arena_cli.models.options import Compat

GROUPS = {"length": ("tokens",), "header": tuple(f"h{i}" for i in range(1, 7)), "list": ("ordered", "unordered"), "bold": ("bold_star", "bold_underscore")}


def side_sums(battles: pl.DataFrame, side: str) -> np.ndarray:
    return np.array([sum(battles[f"{c}_{side}"].to_numpy() for c in members) for members in GROUPS.values()])


def fastchat_arrays(battles: pl.DataFrame) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """``preprocess_for_elo``'s matchups and outcomes (tie and both_bad as ½), models sorted by name."""
    models = sorted(set(battles["model_a"]) | set(battles["model_b"]))
    index = {m: i for i, m in enumerate(models)}
    matchups = np.column_stack([[index[m] for m in battles["model_a"]], [index[m] for m in battles["model_b"]]])
    outcome = battles["outcome"].to_numpy()
    outcomes = np.where(outcome == "model_a", 1.0, np.where(outcome == "model_b", 0.0, 0.5))
    return matchups, outcomes, models


def ratings_of(result, models: list[str]) -> np.ndarray:
    """Our β in FastChat's units (log10 odds, Σ = 0), in the order of ``models``."""
    return np.array([result.beta[result.index(m)] for m in models]) / LOG10


# ------------------------------------------------------------------------------------------------ FastChat


def test_presets_fill_only_unset_options():
    from arena_cli.models.options import FASTCHAT_ANCHOR, Penalty, StyleTransform

    styled = FitOptions(style="both", compat="fastchat").resolved()
    assert styled.penalty == Penalty(0.5, 0.5 / LOG10**2, per_vote=False)
    assert (styled.min_battles, styled.ci, styled.confidence, styled.preset_anchor) == (1, CIMethod.bootstrap, 0.95, FASTCHAT_ANCHOR)
    assert FitOptions(compat="fastchat").resolved().penalty == Penalty()
    assert FitOptions(style="both", compat="fastchat", ridge=0.2).resolved().penalty == Penalty(0.2)
    assert FitOptions(compat="fastchat", method="elo").resolved().preset_anchor is None
    hard = FitOptions(compat="arena-hard").resolved()
    assert (hard.confidence, hard.style_transform, hard.preset_anchor, hard.min_battles) == (0.9, StyleTransform.arena_hard, (None, 1000.0), 1)
    own = FitOptions(compat="arena-hard", confidence=0.95, style_transform="lmarena", min_battles=5).resolved()
    assert (own.confidence, own.style_transform, own.min_battles) == (0.95, StyleTransform.lmarena, 5)
    plain = FitOptions().resolved()
    assert (plain.confidence, plain.style_transform, plain.preset_anchor, plain.penalty) == (0.95, StyleTransform.lmarena, None, Penalty())


@pytest.fixture(scope="module")
def styled_battles() -> pl.DataFrame:
    battles, _ = simulate(6000, 8, seed=3, gamma={"length": 0.3, "header": 0.1, "list": 0.1, "bold": 0.12})
    return battles


def test_fastchat_style_fit_is_fastchats_penalised_objective_at_its_optimum(styled_battles):
    """compute_style_control: reg 0.5 on the summed log-loss over every rating (log10 units) and coefficient."""
    matchups, outcomes, models = fastchat_arrays(styled_battles)
    features = fastchat_style_features(side_sums(styled_battles, "a"), side_sums(styled_battles, "b"))
    theirs = fastchat_contextual_bt(matchups, features, outcomes, len(models))
    ours = fit(styled_battles, FitOptions(style="both", compat=Compat.fastchat, ci=CIMethod.none))
    np.testing.assert_allclose(ratings_of(ours, models), theirs[: len(models)], atol=1e-6)
    np.testing.assert_allclose(ours.gamma, theirs[len(models):], atol=1e-6)
    settings = ours.settings
    assert (settings["ridge"], settings["rating_ridge"], settings["min_battles"]) == (0.5, pytest.approx(0.5 / LOG10**2), 1)
    assert settings["ridge_scale"].startswith("summed") and settings["anchor"] is None
    # the penalty matters here (0.14 points on 6,000 votes): the plain MLE is 100 tolerances away
    mle = fit(styled_battles, FitOptions(style="both", ci=CIMethod.none, min_battles=1))
    assert np.abs(ratings_of(mle, models) - theirs[: len(models)]).max() > 1e-4


def test_every_command_fits_fastchats_penalised_objective(styled_battles):
    """The API's fit, rank diff and matrix resolve the preset once: resolved twice, FastChat's penalty on the
    ratings and its summed scale (no option of their own) were lost, and `arena fit` fitted another objective
    than `arena diff`."""
    import arena_cli as arena

    engine = fit(styled_battles, FitOptions(style="both", compat=Compat.fastchat, ci=CIMethod.none))
    ours = arena.fit(styled_battles, style="both", compat="fastchat", ci="none")
    assert ours.settings["rating_ridge"] == pytest.approx(0.5 / LOG10**2) and ours.settings["ridge_scale"].startswith("summed")
    assert ours.leaderboard.equals(engine.leaderboard)
    diff = arena.rank_diff(styled_battles, ["both"], baseline="both", compat="fastchat", ci="none")
    assert diff.results["both"].leaderboard.equals(engine.leaderboard)


def test_fastchat_plain_fit_is_its_unpenalised_bt(styled_battles):
    """compute_bt has no penalty: the plain fit is the MLE, on FastChat's (matchup, outcome) counts."""
    matchups, outcomes, models = fastchat_arrays(styled_battles)
    unique, weights = np.unique(np.column_stack([matchups, outcomes * 2]), axis=0, return_counts=True)
    theirs = fastchat_bt(unique[:, :2].astype(np.int64), unique[:, 2] / 2, weights.astype(float), len(models))
    ours = fit(styled_battles, FitOptions(compat=Compat.fastchat, ci=CIMethod.none))
    np.testing.assert_allclose(ratings_of(ours, models), theirs, atol=1e-6)
    assert ours.settings["ridge"] == 0.0 and "rating_ridge" not in ours.settings


def test_fastchat_pins_mixtral_at_1114_only_when_it_is_fitted(styled_battles):
    renamed = styled_battles.with_columns(pl.col("model_a", "model_b").replace("model-003", "mixtral-8x7b-instruct-v0.1"))
    pinned = fit(renamed, FitOptions(compat="fastchat", ci="sandwich"))
    board = dict(zip(pinned.leaderboard["model"], pinned.leaderboard["score"]))
    assert board["mixtral-8x7b-instruct-v0.1"] == 1114.0
    assert pinned.settings["anchor"] == {"model": "mixtral-8x7b-instruct-v0.1", "score": 1114.0}
    free = fit(styled_battles, FitOptions(compat="fastchat", ci="none"))
    assert free.settings["anchor"] is None and free.scores.mean() == pytest.approx(1000.0)
    own = fit(renamed, FitOptions(compat="fastchat", ci="none", anchor="model-000=1200"))  # an explicit anchor wins
    assert own.settings["anchor"] == {"model": "model-000", "score": 1200.0}


def test_fastchat_explicit_ridge_replaces_its_penalty(styled_battles):
    """--ridge given with --compat fastchat is --ridge as documented (coefficients only, mean scale)."""
    ours = fit(styled_battles, FitOptions(style="both", compat="fastchat", ridge=0.0, ci="none"))
    mle = fit(styled_battles, FitOptions(style="both", min_battles=1, ci="none"))
    np.testing.assert_allclose(ours.beta, mle.beta, atol=1e-9)
    assert "rating_ridge" not in ours.settings


def test_fastchat_penalty_by_the_statsmodels_reference_solver():
    """The independent solver fits the same penalised objective (every β free, no reference model)."""
    battles, _ = simulate(600, 4, seed=5, gamma={"length": 0.4})
    options = dict(style="length", compat="fastchat", ci="none")
    newton = fit(battles, FitOptions(**options))
    reference = fit(battles, FitOptions(**options, solver="statsmodels"))
    np.testing.assert_allclose(newton.beta, reference.beta, atol=1e-5)
    np.testing.assert_allclose(newton.gamma, reference.gamma, atol=1e-5)


def test_fastchat_variants_are_each_their_own_preset(styled_battles):
    import arena_cli as arena

    diff = arena.rank_diff(styled_battles, "none,both", compat="fastchat", ci="none")
    per_variant = diff.settings["per_variant"]
    assert per_variant["none"]["ridge"] == 0.0 and per_variant["both"]["ridge"] == 0.5


# ----------------------------------------------------------------------------------------- arena-hard-auto

LABEL_TO_SCORE = {"A>>B": 1.0, "A>B": 1.0, "A=B": 0.5, "B>A": 0.0, "B>>A": 0.0}
BASELINE = "o3-mini-2025-01-31"


def arena_hard_judgments(seed: int = 0, n_questions: int = 150, weight: int = 3, first_advantage: float = 0.2):
    """Judgments as arena-hard-auto makes them: each model against the baseline on every question, judged twice
    (game 1 shows the baseline first, game 2 the model). Returns our games (one row per game, a strong verdict of
    weight ``weight``, per-side counts) and arena-hard-auto's exploded rows (model, the two answers' metadata
    (tokens, headers, list items, bold), score)."""
    rng = np.random.default_rng(seed)
    strength = {BASELINE: 0.0, "gpt-x": 0.7, "claude-y": 0.3, "llama-z": -0.2, "qwen-w": -0.9}
    answers = {m: np.column_stack([rng.integers(40, 900, n_questions), rng.poisson(2, n_questions), rng.poisson(5, n_questions), rng.poisson(3, n_questions)])
               for m in strength}
    games, exploded = [], []
    for model in list(strength)[1:]:
        for q in range(n_questions):
            labels = []
            for first, second in ((BASELINE, model), (model, BASELINE)):
                a, b = answers[first][q], answers[second][q]
                p = 1 / (1 + math.exp(-(strength[first] - strength[second] + 0.6 * (a[0] - b[0]) / (a[0] + b[0]) + 0.1 * (a[3] - b[3]) + first_advantage)))
                label = rng.choice(list(LABEL_TO_SCORE), p=[0.28 * p, 0.52 * p, 0.2, 0.52 * (1 - p), 0.28 * (1 - p)])
                labels.append(label)
                counts = {f"{name}_{side}": int(v[i]) for side, v in (("a", a), ("b", b)) for i, name in enumerate(("tokens", "h2", "ordered", "bold_star"))}
                zeros = {f"{name}_{side}": 0 for side in "ab" for name in ("h1", "h3", "h4", "h5", "h6", "unordered", "bold_underscore")}
                outcome = {"A": "model_a", "=": "tie", "B": "model_b"}[label[0] if label[1] != "=" else "="]
                games.append({"question_id": f"{model}-q{q}-{len(labels)}", "model_a": first, "model_b": second, "outcome": outcome,
                              "weight": float(weight if ">>" in label else 1), **counts, **zeros})
            # load_judgments: label_to_score[game 2] + [1 - s for s in label_to_score[game 1]], strong verdicts repeated
            for label, flip in ((labels[1], False), (labels[0], True)):
                for _ in range(weight if ">>" in label else 1):
                    score = LABEL_TO_SCORE[label]
                    exploded.append((model, answers[model][q], answers[BASELINE][q], 1 - score if flip else score))
    return pl.DataFrame(games), exploded


@pytest.fixture(scope="module")
def judgments():
    return arena_hard_judgments()


def test_arena_hard_style_fit_is_arena_hard_autos_objective_at_its_optimum(judgments):
    """Its transform (length without +1, markdown densities, ddof 1, differences taken model minus baseline
    although game 1 shows the baseline first), strong verdicts as 3 votes, its win rate against the baseline."""
    games, exploded = judgments
    models = sorted({BASELINE, *(row[0] for row in exploded)})
    features = arena_hard_style_features(np.array([row[1] for row in exploded]), np.array([row[2] for row in exploded]))
    win_rates, coefs = arena_hard_win_rates(models, BASELINE, [row[0] for row in exploded], features, np.array([row[3] for row in exploded]))
    ours = fit(games, FitOptions(style="both", compat=Compat.arena_hard, ci=CIMethod.none))
    board = dict(zip(ours.leaderboard["model"], ours.leaderboard["win_rate"]))
    assert board == pytest.approx(win_rates, abs=1e-6)
    np.testing.assert_allclose(ours.gamma, coefs, atol=1e-6)
    settings = ours.settings
    assert (settings["baseline_model"], settings["style_transform"], settings["confidence"]) == (BASELINE, "arena-hard", 0.9)
    assert settings["anchor"] == {"model": BASELINE, "score": 1000.0}
    # LMArena's transform on the same games is another model
    lmarena = fit(games, FitOptions(style="both", compat=Compat.arena_hard, style_transform="lmarena", ci=CIMethod.none))
    assert np.abs(lmarena.gamma - coefs).max() > 1e-2


def test_arena_hard_plain_win_rate_is_the_mean_score(judgments):
    """Without style control arena-hard-auto reports each model's mean score against the baseline (strong
    verdicts thrice); the BT fit of models that meet only the baseline gives exactly that."""
    games, exploded = judgments
    ours = fit(games, FitOptions(compat="arena-hard", ci="none"))
    means = pl.DataFrame({"model": [r[0] for r in exploded], "mean": [r[3] for r in exploded]}).group_by("model").agg(pl.col("mean").mean())
    joined = ours.leaderboard.join(means, on="model")
    assert joined.height == 4 and (joined["win_rate"] - joined["mean"]).abs().max() < 1e-6
    assert ours.leaderboard.filter(pl.col("model") == BASELINE)["win_rate"].item() == 0.5


def test_arena_hard_needs_a_baseline(judgments):
    games, _ = judgments
    mixed = pl.concat([games, games.head(3).with_columns(model_a=pl.lit("gpt-x"), model_b=pl.lit("claude-y"))])
    with pytest.raises(InputError, match="--baseline-model"):
        fit(mixed, FitOptions(compat="arena-hard", ci="none"))
    named = fit(mixed, FitOptions(compat="arena-hard", ci="none", baseline_model=BASELINE))
    assert named.settings["baseline_model"] == BASELINE
    with pytest.raises(InputError, match="no such model"):
        fit(games, FitOptions(ci="none", baseline_model="nobody"))


def test_arena_hard_bootstrap_gives_90_percent_win_rate_intervals(judgments):
    games, _ = judgments
    result = fit(games, FitOptions(style="length", compat="arena-hard", rounds=200, workers=1))
    board = result.leaderboard
    assert (board["win_rate_lower"] <= board["win_rate"]).all() and (board["win_rate"] <= board["win_rate_upper"]).all()
    baseline = board.filter(pl.col("model") == BASELINE)
    assert baseline.select("win_rate", "win_rate_lower", "win_rate_upper").row(0) == (0.5, 0.5, 0.5)
    wider = fit(games, FitOptions(style="length", compat="arena-hard", rounds=200, workers=1, confidence=0.95)).leaderboard
    assert ((wider["win_rate_upper"] - wider["win_rate_lower"]) >= (board["win_rate_upper"] - board["win_rate_lower"])).all()


def test_arena_hard_cli(judgments, tmp_path):
    games, _ = judgments
    path = tmp_path / "games.jsonl"
    games.write_ndjson(path)
    result = CliRunner().invoke(app, ["fit", str(path), "--style", "both", "--compat", "arena-hard", "--ci", "none", "-f", "json"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["schema_version"] == 2 and document["meta"]["settings"]["baseline_model"] == BASELINE
    assert {"win_rate", "win_rate_lower", "win_rate_upper"} <= set(document["tables"]["leaderboard"][0])
    table = CliRunner().invoke(app, ["fit", str(path), "--compat", "arena-hard", "--ci", "none", "-f", "markdown"])
    assert f"win % vs {BASELINE}" in table.stdout and "is at 50%" in table.stdout


# ---------------------------------------------------------------------------------------------- real votes


def test_lmarena_140k_fastchat_converged_and_fastchats_early_stop():
    """FastChat's own L-BFGS options stop after 19 iterations on these votes: the 2-battle model lands 16 points
    from its optimum, which shifts the mean-1000 scale (every other score by 0.31), and the well-measured models
    are within 0.09 points of their optimum relative to each other (the README says so). Ours is the MLE."""
    battles = pl.read_parquet(shared_path("data", "lmarena-140k", "battles.parquet")).rename({"winner": "outcome"})
    ours = fit(battles, FitOptions(compat="fastchat", ci="none"))
    reference = ours.leaderboard.join(pl.read_csv(shared_path("reference", "lmarena-140k", "mle_bt.csv")), on="model")
    assert reference.height == 53 and (reference["score"] - reference["rating"]).abs().max() < 1e-6
    kept = battles.filter(pl.col("model_a") != pl.col("model_b"))
    matchups, outcomes, models = fastchat_arrays(kept)
    unique, weights = np.unique(np.column_stack([matchups, outcomes * 2]), axis=0, return_counts=True)
    arrays = (unique[:, :2].astype(np.int64), unique[:, 2] / 2, weights.astype(float), len(models))
    converged, early = fastchat_bt(*arrays), fastchat_bt(*arrays, options=FASTCHAT_DEFAULTS)
    np.testing.assert_allclose(ratings_of(ours, models), converged, atol=1e-6)
    gap = pl.DataFrame({"model": models, "gap": 400 * (early - converged)}).join(ours.leaderboard.select("model", "battles"), on="model")
    well = gap.filter(pl.col("battles") >= 50)["gap"]
    assert 0.05 < (well - well.mean()).abs().max() < 0.1
    assert 0.25 < well.abs().max() < 0.4
    assert gap.filter(pl.col("battles") < 50)["gap"].abs().max() > 10


def test_llmfao_fastchat_style_control():
    battles = pl.read_ndjson(shared_path("data", "llmfao", "battles.jsonl")).select("question_id", "model_a", "model_b", pl.col("winner").alias("outcome"))
    battles = battles.join(pl.read_csv(shared_path("reference", "llmfao", "features.csv")), on="question_id", how="left")
    matchups, outcomes, models = fastchat_arrays(battles)
    features = fastchat_style_features(side_sums(battles, "a"), side_sums(battles, "b"))
    theirs = fastchat_contextual_bt(matchups, features, outcomes, len(models))
    ours = fit(battles, FitOptions(style="both", compat="fastchat", ci="none"))
    assert len(ours.models) == 59
    np.testing.assert_allclose(ratings_of(ours, models), theirs[: len(models)], atol=1e-6)
    np.testing.assert_allclose(ours.gamma, theirs[len(models):], atol=1e-6)
