"""Every command's JSON has one shape (schema_version 2): the same top-level keys, and ``meta`` opening with
``settings, filters, inputs, versions, warnings`` in that order, so scripts read every command alike."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from arena_cli.cli import app

META_KEYS = ["settings", "filters", "inputs", "versions", "warnings"]
FILTER_KEYS = {"where", "models", "exclude_models"}
FAST = ["--rounds", "20", "--workers", "1"]


def arena(*args: object) -> str:
    result = CliRunner().invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("shape")
    arena("simulate", "-n", "3000", "--models", "6", "--no-texts", "--seed", "3", "-o", root / "sim")
    log = root / "sim" / "battles.jsonl.gz"
    arena("ingest", log, "--store", root / "store")
    return log, root / "store"


def commands(log: Path, store: Path, tmp: Path) -> dict[str, list[object]]:
    board = tmp / "board.json"
    arena("fit", "--store", store, *FAST, "-o", board)
    return {
        "fit": ["fit", log, "--style", "both", *FAST, "-f", "json"],
        "diff": ["diff", "--store", store, "--variants", "none,length", *FAST, "-f", "json"],
        "compare": ["compare", board, store, "--new-where", "turn = 1", *FAST, "-f", "json"],
        "matrix": ["matrix", "--store", store, "-f", "json"],
        "info": ["info", "--store", store, "-f", "json"],
        "features": ["features", "--store", store, "-f", "json"],
        "feature_list": ["features", "--list", "-f", "json"],
        "ingest": ["ingest", log, "--store", store, "-f", "json"],
        "store_check": ["store", "check", "--store", store, "-f", "json"],
        "store_repair": ["store", "repair", "--store", store, "--dry-run", "-f", "json"],
        "judges": ["judges", "--store", store, "-f", "json"],
    }


def json_commands() -> set[str]:
    """Every command (``group_command`` for a group's) that can print JSON, found by walking the app."""
    import typer.main

    found: set[str] = set()

    def walk(command, name: str) -> None:
        for sub_name, sub in getattr(command, "commands", {}).items():
            walk(sub, f"{name}_{sub_name}" if name else sub_name)
        formats = [p for p in getattr(command, "params", []) if "--format" in getattr(p, "opts", [])]
        if any("json" in getattr(p.type, "choices", ()) for p in formats):
            found.add(name)

    walk(typer.main.get_command(app), "")
    return found


def test_every_json_command_is_checked():
    # report writes its JSON with -o (test_report_json_has_the_shape); feature_list is `features --list`
    assert json_commands() == {*CHECKED, "report"} - {"feature_list"}


def check_shape(payload: dict, kind: str) -> None:
    assert list(payload) == ["schema_version", "kind", "meta", "tables"]
    assert payload["schema_version"] == 2 and payload["kind"] == kind
    meta = payload["meta"]
    assert list(meta)[:5] == META_KEYS
    assert isinstance(meta["settings"], dict) and isinstance(meta["inputs"], dict) and isinstance(meta["warnings"], list)
    assert "arena_cli" in meta["versions"]
    if kind == "compare":  # two sides, each described as any other command's
        assert set(meta["settings"]) >= {"old", "new"} and set(meta["filters"]) == {"old", "new"}
        assert all(set(meta["filters"][side]) == FILTER_KEYS for side in ("old", "new"))
    elif kind not in ("feature_list", "features", "ingest", "store_check", "store_repair"):
        assert set(meta["filters"]) == FILTER_KEYS
    assert all(isinstance(rows, list) for rows in payload["tables"].values())


CHECKED = ["fit", "diff", "compare", "matrix", "info", "features", "feature_list", "ingest", "store_check", "store_repair", "judges"]


@pytest.mark.parametrize("command", CHECKED)
def test_every_command_has_the_one_json_shape(data, tmp_path, command):
    log, store = data
    kinds = {"fit": "leaderboard", "feature_list": "feature_list"}
    payload = json.loads(arena(*commands(log, store, tmp_path)[command]))
    check_shape(payload, kinds.get(command, command))


def test_judges_names_the_versions_every_fit_names(data, tmp_path):
    """judges fits a leaderboard per judge: its versions are a fit's (numpy and polars too), built where every
    fit's are."""
    log, store = data
    ran = commands(log, store, tmp_path)
    judges, fit = (json.loads(arena(*ran[c]))["meta"]["versions"] for c in ("judges", "fit"))
    assert judges == fit and {"numpy", "polars"} <= set(judges)


def test_report_json_has_the_shape(data, tmp_path):
    _, store = data
    out = tmp_path / "report.json"
    arena("report", "--store", store, "--variants", "none,length", *FAST, "-o", out)
    payload = json.loads(out.read_text())
    check_shape(payload, "report")
    assert payload["meta"]["inputs"] == {"files": [], "store": str(store)}
