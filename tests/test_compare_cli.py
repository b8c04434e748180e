"""`arena diff` and `arena compare` through the CLI: tables, determinism, gates and exit codes."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from arena_cli.cli import app
from arena_cli.errors import ExitCode
from tests import compare_fixtures as fx

GOLDEN = Path(__file__).parent / "golden"
FAST = ["--rounds", "20", "--seed", "3"]


def run(*args: str):
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("sim")
    path = root / "store"
    fx.ingest_store(fx.write_simulated_log(root), path)
    return path


# ------------------------------------------------------------------------------------------------ arena diff


def test_diff_prints_rank_and_coefficient_tables(store):
    result = run("diff", "--store", store, *FAST)
    assert result.exit_code == 0, result.output
    for text in ("Rank by style-control variant", "both Δ", "Style coefficients by variant", "Highlights"):
        assert text in result.stdout


def test_diff_json_csv_markdown_are_byte_identical_across_runs(store, tmp_path):
    for fmt in ("json", "csv", "markdown"):
        first = run("diff", "--store", store, *FAST, "-f", fmt).stdout_bytes
        assert first and first == run("diff", "--store", store, *FAST, "-f", fmt).stdout_bytes, fmt
    payload = json.loads(run("diff", "--store", store, *FAST, "-f", "json").stdout)
    assert list(payload["tables"]) == ["rank_diff", "coefficients", "highlights"]
    assert payload["meta"]["settings"]["seed"] == 3 and payload["meta"]["settings"]["rounds"] == 20
    assert [r["variant"] for r in payload["tables"]["coefficients"]] == ["length", "markdown", "both"]


def test_diff_markdown_golden(store):
    """End to end on simulated data (regenerate with ARENA_UPDATE_GOLDEN=1 after an intended change)."""
    data = run("diff", "--store", store, *FAST, "-f", "markdown").stdout_bytes
    path = GOLDEN / "diff_simulated.md"
    if os.environ.get("ARENA_UPDATE_GOLDEN") == "1":
        path.write_bytes(data)
    assert data == path.read_bytes()


def test_diff_custom_variants_and_output_file(store, tmp_path):
    target = tmp_path / "diff.md"
    result = run("diff", "--store", store, *FAST, "--variants", "none,lb=length+bold", "--sort", "model", "-o", target)
    assert result.exit_code == 0, result.output
    text = target.read_text()
    assert "| model | none rank | none range | none score | lb rank | lb range | lb score | lb Δ |" in text
    assert "| lb | " in text and "bold" in text


@pytest.mark.parametrize("args", [["--variants", "none,nosuchfeature"], ["--where", "no_column = 1"]])
def test_diff_input_errors_exit_3(store, args):
    result = run("diff", "--store", store, *FAST, *args)
    assert result.exit_code == ExitCode.INPUT, result.output


@pytest.mark.parametrize(
    "args",
    [["--baseline", "nope"], ["--sort", "nope"], ["--variants", "none,none"], ["--variants", "none=length"], ["--variants", "a=b=length"],
     ["--variants", "none,length", "--baseline", "both"], ["--variants", " , "]],
)
@pytest.mark.parametrize("command", ["diff", "report"])
def test_variant_choices_wrong_on_the_command_line_are_usage_errors(store, tmp_path, command, args):
    """Whether --variants is well formed and --baseline (--sort) names one of them is decided by the command line
    alone: exit 2 naming the option, before any battle is read (a missing FILE would be exit 3)."""
    if command == "report" and args[0] == "--sort":
        return
    target = ["-o", tmp_path / "r.html"] if command == "report" else []
    result = run(command, tmp_path / "no-such-log.jsonl", *FAST, *target, *args)
    assert result.exit_code == ExitCode.USAGE, result.output
    assert f"'{args[-2]}'" in result.output and "Traceback" not in result.output


def test_diff_with_no_battles_left_exits_6(store):
    result = run("diff", "--store", store, *FAST, "--where", "model_a = 'no such model'")
    assert result.exit_code == ExitCode.NO_DATA


# --------------------------------------------------------------------------------------------- arena compare


@pytest.fixture()
def boards(tmp_path) -> tuple[Path, Path]:
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    old.write_bytes(fx.fit_document("none"))
    new.write_bytes(fx.fit_document("both"))
    return old, new


def test_compare_without_gates_exits_0(boards):
    result = run("compare", *boards, "-f", "json")
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["kind"] == "compare" and payload["meta"]["summary"]["largest_rank_shift"] == 3


@pytest.mark.parametrize(
    ("gate", "code"),
    [("rank-shift=3", ExitCode.GATE), ("rank-shift=4", ExitCode.OK), ("top-k-change=2", ExitCode.GATE),
     ("top-k-change=1", ExitCode.GATE), ("significant-shift", ExitCode.GATE), ("models-changed", ExitCode.OK),
     ("score-shift=200", ExitCode.OK)],
)
def test_compare_gates_set_the_exit_code(boards, gate, code):
    result = run("compare", *boards, "--fail-on", gate, "-f", "csv")
    assert result.exit_code == code, result.output
    assert result.stdout.startswith("model,status,")  # the comparison is written either way
    if code == ExitCode.GATE:
        assert f"leaderboard changed: {gate}" in result.stderr


def test_compare_writes_the_file_before_failing(boards, tmp_path):
    target = tmp_path / "changes.md"
    result = run("compare", *boards, "--fail-on", "rank-shift=1", "--fail-on", "models-changed", "-o", target)
    assert result.exit_code == ExitCode.GATE
    assert "| rank-shift=1 | True |" in target.read_text() and "| models-changed | False |" in target.read_text()


@pytest.mark.parametrize("args", [["--old-where", "turn > 1"], ["--models", "a,b"], ["--exclude-models", "a"]])
def test_compare_input_errors_exit_3(boards, args):
    assert run("compare", *boards, *args).exit_code == ExitCode.INPUT


@pytest.mark.parametrize("condition", ["rank-shift", "nonsense=1", "score-shift=nan", "score-shift=inf", "rank-shift=inf", "top-k-change=0"])
def test_compare_malformed_conditions_are_usage_errors(boards, condition):
    result = run("compare", *boards, "--fail-on", condition)
    assert result.exit_code == ExitCode.USAGE
    assert "Invalid value for '--fail-on'" in result.output and condition in result.output


def test_compare_missing_file_exits_3(boards, tmp_path):
    assert run("compare", boards[0], tmp_path / "missing.json").exit_code == ExitCode.INPUT


def test_compare_two_slices_of_one_store(store):
    import polars as pl

    from arena_cli.io.store import Store

    stamps = Store.open(store).read("battles", ["timestamp"])["timestamp"].sort()
    middle = stamps[stamps.len() // 2].strftime("%Y-%m-%d")
    result = run("compare", store, store, "--old-where", f"timestamp < DATE '{middle}'", "--new-where", "timestamp IS NOT NULL",
                 *FAST, "--ci", "sandwich", "-f", "json", "--fail-on", "models-changed")
    assert result.exit_code in (ExitCode.OK, ExitCode.GATE), result.output
    payload = json.loads(result.stdout)
    assert payload["meta"]["settings"]["old"]["where"] == f"timestamp < DATE '{middle}'"
    assert pl.DataFrame(payload["tables"]["changes"])["status"].is_in(["kept", "entered", "left"]).all()
    for side, where in (("old", "--old-where"), ("new", "--new-where")):  # the error names the side left without battles
        empty = run("compare", store, store, where, "model_a = 'nobody'", *FAST)
        assert empty.exit_code == ExitCode.NO_DATA
        assert f"error: {side} side, {store} [model_a = 'nobody']: no battles left after filtering" in " ".join(empty.stderr.split())


# ------------------------------------------------------------------------------------------------- help text


@pytest.mark.parametrize("command", ["diff", "compare", "report", "matrix"])
def test_every_option_and_argument_has_help(command):
    import typer.main

    click_command = typer.main.get_command(app).commands[command]
    assert click_command.help and len(click_command.help) > 40
    for param in click_command.params:
        assert getattr(param, "help", None), f"arena {command}: {param.name} has no help"
    assert run(command, "--help").exit_code == 0


def test_model_filters_apply_to_a_store_side_next_to_a_leaderboard_file(boards, store):
    """Next to a store they choose the battles it is fitted on; with two files they would do nothing: exit 3."""
    assert run("compare", boards[0], store, "--exclude-models", "nobody", *FAST).exit_code == 0
    assert run("compare", *boards, "--exclude-models", "nobody").exit_code == ExitCode.INPUT


def test_model_names_that_read_as_numbers_stay_names_in_a_csv_leaderboard(tmp_path):
    """A leaderboard saved as CSV whose models are named like numbers (1, 01, 1.0) and whose intervals are empty
    (--ci none) is compared as the fit's JSON of the same leaderboard is: names as written, empty bounds as no bound
    (it ended in an internal error: names read as numbers, bounds as text)."""
    votes = tmp_path / "votes.csv"
    names = ["1", "01", "1.0", "3"]
    rows = [f"{names[i % 4]},{names[(i + 1 + i // 4 % 3) % 4]},{['model_a', 'model_b', 'tie'][i % 3]}" for i in range(240)]
    votes.write_text("model_a,model_b,winner\n" + "\n".join(rows) + "\n")
    for suffix in ("csv", "json"):
        assert run("fit", str(votes), "--ci", "none", "--min-battles", "1", "-o", str(tmp_path / f"board.{suffix}")).exit_code == 0
    compared = [run("compare", str(tmp_path / f"board.{old}"), str(tmp_path / f"board.{new}"), "-f", "json") for old, new in (("csv", "csv"), ("json", "csv"))]
    for result in compared:
        assert result.exit_code == 0, result.output
        rows = json.loads(result.stdout)["tables"]["changes"]
        assert sorted(row["model"] for row in rows) == sorted(names) and {row["status"] for row in rows} == {"kept"}
