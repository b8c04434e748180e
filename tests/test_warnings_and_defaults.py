"""What a command says about doubtful input: too few rounds for intervals, model names that match no battle;
and defaults users rely on: an empty ``$ARENA_STORE`` is the default store, ``info`` JSON holds numbers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from arena_cli.cli import app
from arena_cli.errors import ExitCode
from arena_cli.models.options import CIMethod, FitOptions
from tests import compare_fixtures as fx

runner = CliRunner()


def run(*args):
    return runner.invoke(app, [str(a) for a in args])


@pytest.fixture(scope="module")
def log(tmp_path_factory) -> Path:
    return fx.write_simulated_log(tmp_path_factory.mktemp("log"))


@pytest.fixture(scope="module")
def store(log, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("store") / "s"
    fx.ingest_store(log, path)
    return path


# ------------------------------------------------------------------------------------------------- rounds

@pytest.mark.parametrize(("rounds", "confidence", "warned"), [
    (1, 0.95, True), (99, 0.95, True), (100, 0.95, False), (1000, 0.95, False), (499, 0.99, True), (500, 0.99, False), (10, 0.5, False),
])
def test_few_rounds_are_warned_about_relative_to_the_confidence(rounds, confidence, warned):
    warning = FitOptions(rounds=rounds, confidence=confidence).resolved().few_rounds_warning()
    assert (warning is not None) == warned
    if warned:
        assert warning.startswith(f"--rounds {rounds}:") and "unreliable" in warning


def test_the_rounds_advised_are_enough_for_the_confidence():
    assert FitOptions(rounds=1000, confidence=0.999).resolved().few_rounds_warning().endswith("use 5000 or more for anything you publish")
    assert FitOptions(rounds=50).resolved().few_rounds_warning().endswith("use 1000 or more for anything you publish")


def test_a_fit_with_one_round_warns_that_its_intervals_are_unreliable(store):
    result = run("fit", "-s", store, "--rounds", "1", "--workers", "1", "-f", "json")
    assert result.exit_code == 0, result.output
    warnings = json.loads(result.stdout)["meta"]["warnings"]
    assert any(w.startswith("--rounds 1: intervals and rank ranges from fewer than 100 draws") for w in warnings)
    assert "--rounds 1:" in result.stderr
    sandwich = FitOptions(rounds=10, ci=CIMethod.sandwich).resolved().few_rounds_warning()
    assert sandwich is not None and sandwich.startswith("--rounds 10: rank ranges")  # its score intervals need no draws


def test_no_warning_without_draws_or_with_enough(store):
    for args in (["--ci", "none", "--rounds", "1"], ["--rounds", "100", "--workers", "1"]):
        result = run("fit", "-s", store, *args, "-f", "json")
        assert result.exit_code == 0, result.output
        assert not any(w.startswith("--rounds") for w in json.loads(result.stdout)["meta"]["warnings"])


# ------------------------------------------------------------------------------------------- model names

def _models(store: Path) -> list[str]:
    return [m["model"] for m in json.loads(run("info", "-s", store, "-f", "json").stdout)["tables"]["models"]]


@pytest.mark.parametrize("source", ["store", "file"])
def test_model_names_without_battles_are_warned_about(store, log, source):
    first, second, third = _models(store)[:3]
    where = ["-s", store] if source == "store" else [log]
    result = run("fit", *where, "--ci", "none", "--min-battles", "1", "--models", f"{first},{second},{third}x", "-f", "json")
    assert result.exit_code == 0, result.output
    warnings = json.loads(result.stdout)["meta"]["warnings"]
    assert f"--models {third}x: no such model in the battles (misspelt? `arena info` lists the models)" in warnings
    assert [row["model"] for row in json.loads(result.stdout)["tables"]["leaderboard"]] != []
    excluded = run("info", *where, "--exclude-models", f"{first},nobody", "-f", "json")
    assert excluded.exit_code == 0, excluded.output
    assert [w for w in json.loads(excluded.stdout)["meta"]["warnings"] if w.startswith("--")] == [
        "--exclude-models nobody: no such model in the battles (misspelt? `arena info` lists the models)"]
    clean = run("info", *where, "--models", f"{first},{second}", "--exclude-models", third, "-f", "json")
    assert not [w for w in json.loads(clean.stdout)["meta"]["warnings"] if w.startswith("--")]


def test_models_that_cannot_meet_are_no_data(store):
    first = _models(store)[0]
    for models, said in ((f"{first},typo", "--models typo: no such model"), (first, "a battle is between two of the models")):
        result = run("fit", "-s", store, "--ci", "none", "--models", models)
        assert result.exit_code == ExitCode.NO_DATA and said in result.output, result.output


# ------------------------------------------------------------------------------------------------ defaults

def test_an_empty_arena_store_variable_means_the_default_store(log, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ARENA_STORE", "")
    assert run("ingest", log).exit_code == 0
    assert (tmp_path / "arena-store" / "manifest.json").exists() and sorted(p.name for p in tmp_path.iterdir()) == ["arena-store"]
    info = run("info", "-f", "json")
    assert info.exit_code == 0, info.output
    assert json.loads(info.stdout)["meta"]["inputs"]["store"] == "arena-store"


@pytest.mark.parametrize("command", [["ingest", "LOG"], ["info"], ["store", "repair"]])
def test_an_empty_store_option_is_a_usage_error_not_the_current_directory(log, tmp_path, monkeypatch, command):
    """`--store "$DIR"` with DIR unset: refused, where taking it as a path would make the current directory a store."""
    monkeypatch.chdir(tmp_path)
    result = run(*[str(log) if a == "LOG" else a for a in command], "--store", "")
    assert result.exit_code == ExitCode.USAGE, result.output
    assert "--store" in result.output and "an empty path" in result.output
    assert not any(tmp_path.iterdir())


def test_info_json_holds_numbers(store):
    document = json.loads(run("info", "-s", store, "-f", "json").stdout)
    [overview] = document["tables"]["overview"]
    assert overview == document["meta"]["overview"]
    assert isinstance(overview["battles"], int) and overview["battles"] == 2400 and overview["models"] == 8
    assert overview["first"] < overview["last"]
    assert run("info", "-s", store, "-f", "csv").stdout.splitlines()[:2] == ["battles,models,first,last", f"2400,8,{overview['first']},{overview['last']}"]


def test_the_license_is_an_spdx_string():
    """A license table makes setuptools (>= 77) print a deprecation warning on every install (`make demo`)."""
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())
    assert project["project"]["license"] == "Apache-2.0"
    assert project["build-system"]["requires"] == ["setuptools>=77"]
