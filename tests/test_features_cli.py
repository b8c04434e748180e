"""`arena features` through the CLI: listing, one-shot output from files, the store cache, clear errors."""

from __future__ import annotations

import json

import polars as pl
from typer.testing import CliRunner

from arena_cli.cli import app
from arena_cli.features.registry import FEATURE_NAMES, feature_columns

runner = CliRunner()


def flat(text: str) -> str:
    """Text as one line (the console wraps long messages)."""
    return " ".join(text.split())


def votes_file(tmp_path, n: int = 6):
    path = tmp_path / "votes.jsonl"
    records = [
        {"question_id": f"q{i}", "model_a": "alpha", "model_b": "beta", "winner": "tie",
         "conversation_a": [{"role": "user", "content": "q"}, {"role": "assistant", "content": f"# Title {i}\n- **a**\n```\n# code\n```"}],
         "conversation_b": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "short"}]}
        for i in range(n)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_list_names_every_feature():
    result = runner.invoke(app, ["features", "--list", "--format", "json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)["tables"]["features"]
    assert [r["feature"] for r in rows] == list(FEATURE_NAMES)
    assert all(r["description"] for r in rows)
    assert {r["feature"]: r["style_group"] for r in rows}["ordered"] == "list"


def test_features_of_files_as_csv(tmp_path):
    result = runner.invoke(app, ["features", str(votes_file(tmp_path)), "--format", "csv"])
    assert result.exit_code == 0, result.output
    header, *rows = result.stdout.strip().splitlines()
    assert header.split(",") == ["battle_id", *feature_columns(), "feature_source"]
    assert len(rows) == 6


def test_recipes_differ_on_code(tmp_path):
    source = str(votes_file(tmp_path))
    outputs = {}
    for recipe in ("default", "lmarena"):
        target = tmp_path / f"{recipe}.parquet"
        assert runner.invoke(app, ["features", source, "--recipe", recipe, "-o", str(target)]).exit_code == 0
        outputs[recipe] = pl.read_parquet(target)
    assert outputs["default"]["h1_a"].to_list() == [1] * 6
    assert outputs["lmarena"]["h1_a"].to_list() == [1] * 6  # the block's content is deleted, the title stays
    assert outputs["default"]["code_blocks_a"].to_list() == [1] * 6


def test_store_update_then_nothing_to_do(tmp_path):
    store = tmp_path / "store"
    assert runner.invoke(app, ["ingest", str(votes_file(tmp_path)), "--store", str(store)]).exit_code == 0
    first = runner.invoke(app, ["features", "--store", str(store)])
    assert first.exit_code == 0, first.output
    assert "computed features of 6 battles" in flat(first.stderr) and first.stdout == ""
    second = runner.invoke(app, ["features", "--store", str(store), "--format", "json"])
    assert second.exit_code == 0 and "nothing to do" in flat(second.stderr)
    assert len(json.loads(second.stdout)["tables"]["features"]) == 6


def test_files_with_a_store_name_the_store_among_the_inputs(tmp_path):
    """With FILES and --store, the store's cached features are read: meta.inputs names it (it said null)."""
    source, store = votes_file(tmp_path), tmp_path / "store"
    assert runner.invoke(app, ["ingest", str(source), "--store", str(store)]).exit_code == 0
    assert runner.invoke(app, ["features", "--store", str(store)]).exit_code == 0
    result = runner.invoke(app, ["features", str(source), "--store", str(store), "-f", "json"])
    assert result.exit_code == 0, result.output
    meta = json.loads(result.stdout)["meta"]
    assert meta["inputs"]["files"] == [str(source)] and meta["inputs"]["store"] == str(store)
    assert meta["filters"] == {}  # features takes no filters: the cache is for every battle
    alone = json.loads(runner.invoke(app, ["features", str(source), "-f", "json"]).stdout)["meta"]
    assert alone["inputs"]["store"] is None


def test_unavailable_encoding_is_one_clear_line(tmp_path, monkeypatch):
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "empty-cache"))
    monkeypatch.delenv("ARENA_DEBUG", raising=False)
    result = runner.invoke(app, ["features", str(votes_file(tmp_path)), "--encoding", "o200k_base"])
    assert result.exit_code == 8
    assert "TIKTOKEN_CACHE_DIR" in flat(result.stderr) and "Traceback" not in result.output
    unknown = runner.invoke(app, ["features", str(votes_file(tmp_path)), "--encoding", "nope"])
    assert unknown.exit_code == 8 and "unknown encoding 'nope'" in flat(unknown.stderr)


def test_unknown_recipe_is_a_usage_error(tmp_path):
    assert runner.invoke(app, ["features", str(votes_file(tmp_path)), "--recipe", "fastchat"]).exit_code == 2
