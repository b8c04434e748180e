"""Real votes against independent results (../shared/reference: statsmodels GLM MLEs and arena-rank 0.1.1).

Tolerances: scores to 0.01 points and coefficients to 1e-4, as the issue asks; both references were run to
convergence, so agreement is in fact much closer (stated per test).
"""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest
from conftest import shared_path

from arena_cli.models import CIMethod, Compat, FitOptions, fit
from arena_cli.models import design as D
from arena_cli.models.solvers import Problem, newton
from arena_cli.models.uncertainty import sandwich

STYLES = ["none", "length", "markdown", "both"]


@pytest.fixture(scope="module")
def lmarena():
    return pl.read_parquet(shared_path("data", "lmarena-140k", "battles.parquet")).rename({"winner": "outcome"})


@pytest.fixture(scope="module")
def llmfao():
    battles = pl.read_ndjson(shared_path("data", "llmfao", "battles.jsonl"))
    battles = battles.select("question_id", "model_a", "model_b", pl.col("winner").alias("outcome"))
    features = pl.read_csv(shared_path("reference", "llmfao", "features.csv"))
    return battles.join(features, on="question_id", how="left")


def centred_gap(board: pl.DataFrame, reference: pl.DataFrame) -> float:
    """Max |score − reference| after centring both on the common models with at least 50 battles."""
    joined = board.join(reference, on="model").filter(pl.col("battles") >= 50)
    ours = joined["score"] - joined["score"].mean()
    theirs = joined["rating"] - joined["rating"].mean()
    return float((ours - theirs).abs().max())


def test_lmarena_140k_plain_scores(lmarena):
    """Default settings exclude the 2-battle model (with a warning), which moves the others by < 0.008."""
    result = fit(lmarena, FitOptions(ci=CIMethod.none))
    assert result.settings["n_battles"] == 135_622  # 10 self-battles and the excluded model's 2 battles left out
    assert any("qwen3-coder-480b-a35b-instruct" in w and "excluded" in w for w in result.warnings)
    assert any("self-battle" in w for w in result.warnings)
    for name in ("mle_bt.csv", "arena_rank_bt_sandwich.csv"):
        reference = pl.read_csv(shared_path("reference", "lmarena-140k", name))
        assert centred_gap(result.leaderboard, reference) < 0.01


def test_lmarena_140k_compat_reproduces_arena_rank_with_intervals(lmarena):
    """Every model kept (with a few-battles warning); scores equal the exact MLE to 1e-5 and arena-rank's
    (converged) ratings and sandwich intervals to 0.01."""
    result = fit(lmarena, FitOptions(compat=Compat.arena_rank))
    assert any("qwen3-coder-480b-a35b-instruct" in w and "fewer than 50" in w for w in result.warnings)
    mle = result.leaderboard.join(pl.read_csv(shared_path("reference", "lmarena-140k", "mle_bt.csv")), on="model")
    assert mle.height == 53 and (mle["score"] - mle["rating"]).abs().max() < 1e-5
    ar = result.leaderboard.join(pl.read_csv(shared_path("reference", "lmarena-140k", "arena_rank_bt_sandwich.csv")), on="model")
    for ours, theirs in (("score", "rating"), ("score_lower", "rating_lower"), ("score_upper", "rating_upper")):
        assert (ar[ours] - ar[theirs]).abs().max() < 0.01


def test_lmarena_140k_exact_sandwich_differs_from_arena_ranks_only_by_its_hessian_ridge(lmarena):
    """Our default sandwich is the exact H⁻¹BH⁻¹; arena-rank adds 1e-5·n to H's diagonal. Adding it to our
    J reproduces its half-widths to 1e-4 for every model — so J and B are the same matrices. Without it the
    widths differ by < 2%, except for the 2-battle model whose width the added term shrinks 3.7-fold."""
    options = FitOptions(min_battles=1).resolved()
    prepared = D.prepare(lmarena, options)
    problem = Problem(D.design(prepared, D.cells(prepared)), davidson=False)
    theta = newton(problem, problem.design.row_count).theta
    exact = sandwich(problem, theta, problem.design.row_count)
    ridged = sandwich(problem, theta, problem.design.row_count, arena_rank=True)
    reference = pl.read_csv(shared_path("reference", "lmarena-140k", "arena_rank_bt_sandwich.csv"))
    half = pl.DataFrame({
        "model": list(prepared.models),
        "exact": 1.959963984540054 * 400 / np.log(10) * np.sqrt(np.diag(exact)[: problem.M]),
        "ridged": 1.959963984540054 * 400 / np.log(10) * np.sqrt(np.diag(ridged)[: problem.M]),
    }).join(reference.with_columns(ref=(pl.col("rating_upper") - pl.col("rating_lower")) / 2), on="model")
    assert (half["ridged"] - half["ref"]).abs().max() < 1e-4
    well_measured = half.filter(pl.col("model") != "qwen3-coder-480b-a35b-instruct")
    assert ((well_measured["exact"] / well_measured["ref"] - 1).abs() < 0.02).all()


@pytest.mark.parametrize("style", STYLES)
def test_llmfao_mle_style_variants(llmfao, style):
    """Default settings (plain MLE): scores to 0.01 (observed < 1e-5), coefficients to 1e-4 (observed < 1e-12)."""
    result = fit(llmfao, FitOptions(style=style, ci=CIMethod.none))
    reference = pl.read_csv(shared_path("reference", "llmfao", f"mle_style_{style}.csv"))
    joined = result.leaderboard.join(reference, on="model")
    assert joined.height == 59
    assert (joined["score"] - joined["rating"]).abs().max() < 0.01
    expected = json.loads(shared_path("reference", "llmfao", "style_coefficients.json").read_text())[style]["mle_coefficients"] or {}
    assert dict(zip(result.coefficients["feature"], result.coefficients["coef"])).keys() == expected.keys()
    for feature, value in expected.items():
        assert result.gamma[result.feature_names.index(feature)] == pytest.approx(value, abs=1e-4)


@pytest.mark.parametrize("style", STYLES)
def test_llmfao_arena_rank_compat(llmfao, style):
    """--compat arena-rank (reg 1.0 on the mean log-likelihood, reweighting, its sandwich): scores and intervals
    to 0.01 (observed < 5e-4), coefficients to 1e-4 (observed < 1e-7)."""
    result = fit(llmfao, FitOptions(style=style, compat=Compat.arena_rank))
    reference = pl.read_csv(shared_path("reference", "llmfao", f"arena_rank_style_{style}.csv"))
    joined = result.leaderboard.join(reference, on="model")
    assert joined.height == 59
    for ours, theirs in (("score", "rating"), ("score_lower", "rating_lower"), ("score_upper", "rating_upper")):
        assert (joined[ours] - joined[theirs]).abs().max() < 0.01
    expected = json.loads(shared_path("reference", "llmfao", "style_coefficients.json").read_text())[style]["arena_rank_coefficients"] or {}
    for feature, value in expected.items():
        assert result.gamma[result.feature_names.index(feature)] == pytest.approx(value, abs=1e-4)
    assert result.settings["ridge"] == (1.0 if style != "none" else 0.0)
    assert result.settings["reweight"] is (style != "none")


def test_llmfao_end_to_end_from_store_and_from_file(tmp_path):
    """`arena ingest` + `arena fit --style both` computes the features itself (texts, tokenizer) and lands on the
    reference MLE to 0.01, from a store and straight from the file."""
    from typer.testing import CliRunner

    from arena_cli.cli import app

    votes = shared_path("data", "llmfao", "battles.jsonl")
    reference = pl.read_csv(shared_path("reference", "llmfao", "mle_style_both.csv"))
    runner = CliRunner()
    assert runner.invoke(app, ["ingest", str(votes), "--store", str(tmp_path / "store")]).exit_code == 0
    for source in (["--store", str(tmp_path / "store")], [str(votes)]):
        out = tmp_path / "fit.json"
        result = runner.invoke(app, ["fit", *source, "--style", "both", "--ci", "none", "-o", str(out)])
        assert result.exit_code == 0, result.output
        board = pl.DataFrame(json.loads(out.read_text())["tables"]["leaderboard"]).join(reference, on="model")
        assert board.height == 59 and (board["score"] - board["rating"]).abs().max() < 0.01
