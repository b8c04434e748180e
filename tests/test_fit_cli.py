"""`arena fit` through the CLI: formats, options, determinism, errors and exit codes."""

from __future__ import annotations

import json

import polars as pl
import pytest
from sim_battles import simulate
from typer.testing import CliRunner

from arena_cli.cli import app
from arena_cli.models import LEADERBOARD_COLUMNS

runner = CliRunner()


@pytest.fixture(scope="module")
def votes(tmp_path_factory):
    """A parquet vote log with per-side style counts and a user covariate."""
    frame, _ = simulate(4000, 6, seed=2, gamma={"length": 0.6}, n_judges=20)
    frame = frame.with_columns(
        (pl.col("tokens_a").log() - pl.col("tokens_b").log()).alias("log_length_ratio"),
        pl.when(pl.int_range(pl.len()) % 3 == 0).then(pl.lit("English")).otherwise(pl.lit("German")).alias("language"),
    )
    path = tmp_path_factory.mktemp("votes") / "votes.parquet"
    frame.write_parquet(path)
    return path


def run(*args, ok=True):
    result = runner.invoke(app, ["fit", *map(str, args)])
    if ok:
        assert result.exit_code == 0, result.output
    return result


def test_json_document_shape(votes, tmp_path):
    out = tmp_path / "fit.json"
    run(votes, "--style", "length", "--rounds", "30", "--workers", "1", "-o", out)
    document = json.loads(out.read_text())
    assert list(document) == ["schema_version", "kind", "meta", "tables"]
    assert document["kind"] == "leaderboard"
    assert list(document["tables"]) == ["leaderboard", "coefficients"]
    rows = document["tables"]["leaderboard"]
    assert list(rows[0]) == list(LEADERBOARD_COLUMNS)
    assert [r["score"] for r in rows] == sorted((r["score"] for r in rows), reverse=True)
    assert document["tables"]["coefficients"][0]["feature"] == "length"
    meta = document["meta"]
    assert list(meta) == ["settings", "filters", "inputs", "versions", "warnings"]
    settings = meta["settings"]
    assert settings["style"] == "length" and settings["ci"] == "bootstrap" and settings["rounds"] == 30 and settings["seed"] == 42
    assert settings["n_battles"] == 4000 and meta["filters"] == {"where": None, "models": None, "exclude_models": None}
    assert {"arena_cli", "numpy", "polars"} <= set(meta["versions"])


@pytest.mark.parametrize(("typed", "fitted"), [("length,", "length"), (" length , bold,length", "length,bold"), (" both ", "both"), ("none,", "none")])
def test_a_style_is_shown_as_it_was_read(votes, typed, fitted):
    """--style 'length,' fits length: the title and meta say length, not the text typed (so does the API)."""
    document = json.loads(run(votes, "--style", typed, "--ci", "none", "-f", "json").stdout)
    assert document["meta"]["settings"]["style"] == fitted
    title = run(votes, "--style", typed, "--ci", "none").stdout
    assert f"(style control: {fitted})" in title if fitted != "none" else "style control" not in title
    import arena_cli

    assert arena_cli.fit(votes, style=typed, ci="none").settings["style"] == fitted


def test_output_is_byte_identical_across_runs_and_workers(votes, tmp_path):
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    run(votes, "--rounds", "40", "--workers", "1", "-o", first)
    run(votes, "--rounds", "40", "--workers", "2", "-o", second)
    assert first.read_bytes() == second.read_bytes()


@pytest.mark.parametrize("fmt", ["csv", "markdown", "table"])
def test_text_formats_on_stdout(votes, fmt):
    result = run(votes, "--style", "length", "--ci", "sandwich", "--format", fmt)
    assert "model-00" in result.stdout
    if fmt == "csv":
        assert result.stdout.splitlines()[0] == ",".join(LEADERBOARD_COLUMNS)
    else:
        assert "length" in result.stdout  # the coefficients table beneath the leaderboard


def test_parquet_output_from_extension(votes, tmp_path):
    out = tmp_path / "board.parquet"
    run(votes, "--ci", "none", "-o", out)
    board = pl.read_parquet(out)
    assert board.columns == list(LEADERBOARD_COLUMNS)
    assert board["score_lower"].is_null().all() and board["rank"].to_list() == list(range(1, 7))


def test_filters_anchor_and_covariates(votes, tmp_path):
    out = tmp_path / "fit.json"
    run(votes, "--where", "language = 'English'", "--exclude-models", "model-005", "--anchor", "model-000=1114",
        "--style", "log_length_ratio", "--ci", "sandwich", "-o", out)
    document = json.loads(out.read_text())
    rows = {r["model"]: r for r in document["tables"]["leaderboard"]}
    assert "model-005" not in rows and rows["model-000"]["score"] == 1114.0
    assert rows["model-000"]["score_lower"] == rows["model-000"]["score_upper"] == 1114.0  # the anchor is exact
    assert document["meta"]["settings"]["n_battles"] < 4000 / 2
    assert document["meta"]["settings"]["anchor"] == {"model": "model-000", "score": 1114.0}
    assert document["tables"]["coefficients"][0]["feature"] == "log_length_ratio"
    kept = tmp_path / "kept.json"
    run(votes, "--models", "model-001,model-002,model-003", "--ci", "none", "-o", kept)
    assert {r["model"] for r in json.loads(kept.read_text())["tables"]["leaderboard"]} == {"model-001", "model-002", "model-003"}


def test_davidson_and_compat_settings(votes, tmp_path):
    out = tmp_path / "fit.json"
    run(votes, "--ties", "davidson", "--ci", "sandwich", "-o", out)
    meta = json.loads(out.read_text())["meta"]["settings"]
    assert meta["method"] == "davidson" and meta["tie_parameter"]["lower"] < meta["tie_parameter"]["nu"] < meta["tie_parameter"]["upper"]
    compat = tmp_path / "compat.json"
    run(votes, "--style", "both", "--compat", "arena-rank", "-o", compat)
    meta = json.loads(compat.read_text())["meta"]["settings"]
    assert (meta["compat"], meta["ridge"], meta["reweight"], meta["ci"], meta["min_battles"]) == ("arena-rank", 1.0, True, "sandwich", 1)


@pytest.mark.parametrize(
    "args, code, message",
    [
        (["--style", "sparkle"], 3, "sparkle"),
        (["--anchor", "nobody=1000", "--ci", "none"], 3, "--anchor"),
        (["--anchor", "model-000"], 2, "MODEL=SCORE"),
        (["--anchor", "model-000=inf"], 2, "--anchor"),
        (["--where", "language = 'Klingon'"], 6, "no battles"),
        (["--min-battles", "100000", "--ci", "none"], 6, "fewer than two models"),
        (["--cluster", "nope"], 3, "--cluster"),
        (["--confidence", "1.5"], 2, "--confidence"),
    ],
)
@pytest.mark.parametrize("source", ["file", "store"])
def test_errors_have_messages_and_exit_codes(votes, votes_store, source, args, code, message):
    result = run(*([votes] if source == "file" else ["--store", votes_store]), *args, ok=False)
    assert result.exit_code == code, result.output
    assert message in result.output


def test_a_fit_with_nothing_to_rank_says_what_the_read_left_out(tmp_path):
    """The rows a read skipped are often why nothing is left: here a question_id that names prompts, so that
    every repeat is a conflicting duplicate. The error says so, on its one line."""
    path = tmp_path / "prompts.jsonl"
    models = ["m0", "m1", "m2"]
    path.write_text("".join(json.dumps({"question_id": f"q{i % 10}", "model_a": models[i % 3], "model_b": models[(i + 1) % 3],
                                        "winner": "model_a" if i % 2 else "model_b"}) + "\n" for i in range(200)))
    result = run(str(path), "--ci", "none", ok=False)
    assert result.exit_code == 6
    error = result.stderr.strip().splitlines()[-1]
    assert error.startswith("error: fewer than two models left to rank") and "the read said: 60 exact duplicate row(s) dropped" in error and "130 row(s) skipped" in error
    assert "question_id probably names prompts" in error


@pytest.fixture(scope="module")
def votes_store(votes, tmp_path_factory):
    store = tmp_path_factory.mktemp("store") / "s"
    assert runner.invoke(app, ["ingest", str(votes), "--store", str(store)]).exit_code == 0
    return store


@pytest.mark.parametrize("where", ["model_a > 3", "turn + 'x' = 1", "timestamp > 'abc'"])
def test_a_where_that_cannot_be_evaluated_is_an_input_error(votes, votes_store, where):
    for source in ([votes], ["--store", votes_store]):
        result = run(*source, "--where", where, "--ci", "none", ok=False)
        assert result.exit_code == 3, result.output
        assert f"--where {where!r}" in result.output


def test_messages_with_brackets_are_printed_as_they_are(votes):
    result = run(votes, "--anchor", "[bold]x[/bold]=1000", "--ci", "none", ok=False)
    assert result.exit_code == 3
    assert "'[bold]x[/bold]'" in result.output


def test_warnings_go_to_stderr_not_into_the_data(tmp_path):
    frame = pl.DataFrame({
        "model_a": ["a", "b", "c", "a", "d"] * 30, "model_b": ["b", "c", "a", "c", "a"] * 30,
        "outcome": ["model_a", "model_a", "model_a", "tie", "model_b"] * 30,
    })
    path = tmp_path / "few.csv"
    frame.head(148).write_csv(path)
    result = run(path, "--ci", "none", "--format", "csv")
    assert "d (29 battle(s)) excluded" in result.stderr
    assert "excluded" not in result.stdout


def test_style_fit_on_the_default_store(tmp_path, monkeypatch):
    """Without --store, the store is $ARENA_STORE (or ./arena-store), with its texts and feature cache."""
    frame, _ = simulate(1500, 5, seed=4)
    log = tmp_path / "votes.jsonl"
    pl.DataFrame({
        "model_a": frame["model_a"], "model_b": frame["model_b"], "winner": frame["outcome"],
        "conversation_a": [[{"role": "user", "content": "q"}, {"role": "assistant", "content": "word " * (n % 40)}] for n in range(frame.height)],
        "conversation_b": [[{"role": "user", "content": "q"}, {"role": "assistant", "content": "# h\n" * (n % 7) + "- x\n" * (n // 7 % 5) + "**b** " * (n // 35 % 3)}] for n in range(frame.height)],
    }).write_ndjson(log)
    monkeypatch.setenv("ARENA_STORE", str(tmp_path / "store"))
    assert runner.invoke(app, ["ingest", str(log)]).exit_code == 0
    result = run("--style", "both", "--ci", "none", "--format", "json")
    coefficients = json.loads(result.stdout)["tables"]["coefficients"]
    assert [c["feature"] for c in coefficients] == ["length", "header", "list", "bold"]


def test_battles_without_any_style_features_exit_6(tmp_path):
    log = tmp_path / "bare.jsonl"
    log.write_text("".join(f'{{"model_a": "{a}", "model_b": "{b}", "winner": "model_a"}}\n' for a, b in [("x", "y"), ("y", "z"), ("z", "x")]))
    result = run(log, "--style", "length", "--ci", "none", ok=False)
    assert result.exit_code == 6


def _texts_log(path, frame, extra_rows=(), counts=()):
    """A JSONL log with texts (style features come from them), ids, the ``counts`` columns of ``frame``, and
    the given extra raw lines."""
    rows = [
        json.dumps({
            "question_id": f"q{i}", "model_a": row["model_a"], "model_b": row["model_b"], "winner": row["outcome"],
            "conversation_a": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "word " * (i % 40)}],
            "conversation_b": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "# h\n" * (i % 7) + "- x\n" * (i // 7 % 5)}],
            **{c: row[c] for c in counts},
        })
        for i, row in enumerate(frame.iter_rows(named=True))
    ]
    path.write_text("\n".join([*rows, *extra_rows]) + "\n")
    return path


@pytest.mark.parametrize("case", ["texts", "repeated ids", "precomputed counts", "counts with a gap"])
def test_a_fit_from_files_equals_the_fit_from_their_store(tmp_path, votes, case):
    """One-shot reads (lean, or full when ids repeat) give the battles an ingest stores: the same numbers."""
    frame, _ = simulate(1200, 5, seed=8)
    if case == "precomputed counts":
        paths = [votes]
    elif case == "counts with a gap":  # counts for every battle but one: that one's come from its texts
        counts = [f"{f}_{side}" for f in ("tokens", "h1", "h2", "h3", "h4", "h5", "h6") for side in "ab"]
        gap = frame.with_columns(pl.when(pl.int_range(pl.len()) == 700).then(None).otherwise(pl.col("tokens_b")).alias("tokens_b"))
        paths = [_texts_log(tmp_path / "votes.jsonl", gap, counts=counts)]
    else:
        bad = ['{"question_id": "bad1", "model_a": "x", "model_b": "x", "winner": "tie"}', '{"broken']
        if case == "repeated ids":
            bad += ['{"question_id": "q3", "model_a": "m", "model_b": "n", "winner": "tie"}']
        paths = [_texts_log(tmp_path / "votes.jsonl", frame, bad)]
    store = tmp_path / "store"
    assert runner.invoke(app, ["ingest", *map(str, paths), "--store", str(store)]).exit_code == 0
    options = ["--style", "length,header", "--ci", "sandwich", "--format", "json"]
    from_files = json.loads(run(*paths, *options).stdout)["tables"]
    from_store = json.loads(run("--store", store, *options).stdout)["tables"]
    assert from_files == from_store
    assert len(from_files["coefficients"]) == 2


def test_a_log_read_again_for_its_missing_counts_reports_its_skipped_rows_once(tmp_path):
    """Counts missing for one battle are computed from the texts, after a second read: the rows skipped are
    reported once, not once per read."""
    frame, _ = simulate(600, 4, seed=3)
    counts = [f"tokens_{side}" for side in "ab"]
    gap = frame.with_columns(pl.when(pl.int_range(pl.len()) == 7).then(None).otherwise(pl.col("tokens_b")).alias("tokens_b"))
    log = _texts_log(tmp_path / "votes.jsonl", gap, ['{"model_a": "x", "model_b": "x", "winner": "tie"}'], counts=counts)
    result = run(log, "--style", "length", "--ci", "none")
    assert result.stderr.count("row(s) skipped: self_battle 1") == 1


def test_a_store_of_several_ingests_fits_like_the_file_they_came_from(tmp_path, votes):
    """Stored counts are read part by part (each ingest adds parts); clusters and filters span the parts."""
    frame = pl.read_parquet(votes)
    store = tmp_path / "store"
    for i, chunk in enumerate(frame.iter_slices(1500)):
        chunk.write_parquet(tmp_path / f"chunk{i}.parquet")
        assert runner.invoke(app, ["ingest", str(tmp_path / f"chunk{i}.parquet"), "--store", str(store)]).exit_code == 0
    options = ["--style", "both", "--cluster", "judge", "--rounds", "30", "--where", "language = 'German'", "--format", "json"]
    from_store = json.loads(run("--store", store, *options).stdout)["tables"]
    assert from_store == json.loads(run(votes, *options).stdout)["tables"]


def test_counts_in_a_json_log_fit_like_the_same_counts_in_parquet(tmp_path, votes):
    """JSON logs keep extra columns as text; their per-side counts are read as numbers."""
    frame = pl.read_parquet(votes)
    frame.write_ndjson(tmp_path / "votes.jsonl")
    options = ["--style", "both", "--ci", "sandwich", "--format", "json"]
    assert json.loads(run(tmp_path / "votes.jsonl", *options).stdout)["tables"] == json.loads(run(votes, *options).stdout)["tables"]
