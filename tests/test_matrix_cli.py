"""`arena matrix` through the CLI: battles, win rates and predicted win probabilities as table, csv, json."""

from __future__ import annotations

import io
import json
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from arena_cli.cli import app
from arena_cli.errors import ExitCode
from tests import compare_fixtures as fx


def run(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("sim")
    path = root / "store"
    fx.ingest_store(fx.write_simulated_log(root), path)
    return path


def test_battle_matrix_matches_the_counts(store):
    result = run("matrix", "--store", store, "--value", "battles", "-f", "csv")
    assert result.exit_code == 0, result.output
    wide = pl.read_csv(io.StringIO(result.stdout))
    from arena_cli.io.store import Store

    battles = Store.open(store).read("battles", ["model_a", "model_b", "outcome"])
    assert int(wide.drop("model").sum().sum_horizontal().item()) == 2 * battles.height
    assert wide.columns[1:] == wide["model"].to_list()  # rows and columns in the same order


@pytest.mark.parametrize("value", ["battles", "win-rate"])
def test_counts_and_win_rates_need_no_fit(store, value):
    """A fit that can rank nothing (every model below --min-battles) stops predictions, never counts: they are the
    battles as they are, ordered by overall win rate, and the fit option that changed nothing is said."""
    result = run("matrix", "--store", store, "--value", value, "--min-battles", 100_000, "-f", "json")
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    settings = document["meta"]["settings"]
    assert settings == {"value": value.replace("-", "_"), "layout": "wide", "n_battles": settings["n_battles"], "n_models": 8}
    from arena_cli.io.store import Store

    assert settings["n_battles"] == Store.open(store).read("battles", ["model_a"]).height
    assert any("min_battles" in w for w in document["meta"]["warnings"]) and "min_battles" in result.stderr
    pairs = pl.DataFrame(json.loads(run("matrix", "--store", store, "--long", "--min-battles", 1, "-f", "json").stdout)["tables"]["pairs"])
    overall = pairs.group_by("model").agg(((pl.col("wins") + 0.5 * pl.col("ties")).sum() / pl.col("battles").sum()).alias("rate"))
    assert [row["model"] for row in document["tables"]["matrix"]] == overall.sort(["rate", "model"], descending=[True, False])["model"].to_list()
    assert run("matrix", "--store", store, "--value", "predicted", "--min-battles", 100_000).exit_code == ExitCode.NO_DATA


def test_long_layout_has_predictions_that_sum_to_one(store):
    result = run("matrix", "--store", store, "--long", "-f", "json")
    assert result.exit_code == 0, result.output
    pairs = pl.DataFrame(json.loads(result.stdout)["tables"]["pairs"])
    assert {"battles", "wins", "ties", "losses", "win_rate", "predicted"} <= set(pairs.columns)
    mirrored = pairs.join(pairs, left_on=["model", "opponent"], right_on=["opponent", "model"], suffix="_r")
    assert ((mirrored["predicted"] + mirrored["predicted_r"] - 1).abs() < 1e-12).all()


def test_predicted_matrix_orders_by_fitted_score(store):
    result = run("matrix", "--store", store, "--value", "predicted", "-f", "json")
    rows = json.loads(result.stdout)["tables"]["matrix"]
    first, last = rows[0]["model"], rows[-1]["model"]
    assert rows[0][last] > 0.5 > rows[-1][first]


def test_win_rate_table_and_markdown(store):
    table = run("matrix", "--store", store)
    assert table.exit_code == 0 and "Win rate of the row model" in table.stdout
    markdown = run("matrix", "--store", store, "-f", "markdown").stdout
    assert markdown.count("\n| ") == 1 + 8  # header and one row per model (8 models)


def test_matrix_from_a_file_and_bad_value(tmp_path):
    log = fx.write_simulated_log(tmp_path)
    result = run("matrix", log, "--value", "battles", "-f", "csv")
    assert result.exit_code == 0, result.output
    assert run("matrix", log, "--value", "elo").exit_code == ExitCode.USAGE

