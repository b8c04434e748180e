"""Vote weights from files to results (validation, ``--map weight=``, ids, stores, exports, summaries, the
matrix), and numeric extra columns of JSON and CSV logs, usable as covariates like a parquet file's."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from sim_battles import simulate
from typer.testing import CliRunner

from arena_cli.cli import app
from arena_cli.io.ingest import InputOptions, read_sources
from arena_cli.io.store import Store
from arena_cli.schema import BATTLE_SCHEMA, conform

runner = CliRunner()


def run(*args, code=0):
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == code, result.output
    return result


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def vote(i, **extra):
    return {"model_a": f"m{i % 3}", "model_b": f"m{(i + 1) % 3}", "winner": ["model_a", "model_b", "tie"][i % 3], **extra}


def test_weights_are_validated_at_ingest(tmp_path):
    """A finite number >= 0 (text or number), absent or null meaning 1; anything else is a wrong_type row
    naming the field. Zero is a weight (the vote counts for nothing)."""
    weights = [3, "0.5", None, 0, -1, "abc", "nan", "inf", "-0.0", True]
    rows = [vote(i, weight=w) for i, w in enumerate(weights)] + [vote(10)]
    result = read_sources([write_jsonl(tmp_path / "w.jsonl", rows)])
    assert result.battles.schema["weight"] == pl.Float64
    assert result.battles["weight"].to_list() == [3.0, 0.5, 1.0, 0.0, 0.0, 1.0]
    quarantine = result.quarantine.sort("source_row")
    assert quarantine["source_row"].to_list() == [5, 6, 7, 8, 10]
    assert set(quarantine["reason"]) == {"wrong_type"}
    assert set(quarantine["detail"]) == {"weight: not a valid weight (a finite number >= 0)"}


def test_weights_of_typed_and_csv_sources(tmp_path):
    path = tmp_path / "w.csv"
    with open(path, "w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["model_a", "model_b", "winner", "w"])
        writer.writerows([["a", "b", "model_a", "2"], ["a", "b", "model_b", ""], ["b", "a", "tie", "-2"]])
    mapped = read_sources([path], InputOptions(mapping={"weight": "w"}))
    assert mapped.battles["weight"].to_list() == [2.0, 1.0] and mapped.quarantine["reason"].to_list() == ["wrong_type"]
    assert read_sources([path]).battles["weight"].to_list() == [1.0, 1.0, 1.0]  # unmapped: an extra column
    typed = tmp_path / "w.parquet"
    pl.DataFrame({"model_a": ["a"] * 4, "model_b": ["b"] * 4, "winner": ["model_a"] * 4, "weight": [1, 2, -1, 0]}).write_parquet(typed)
    result = read_sources([typed])
    assert result.battles["weight"].to_list() == [1.0, 2.0, 0.0] and result.quarantine["source_row"].to_list() == [3]
    floats = tmp_path / "f.parquet"
    pl.DataFrame({"model_a": ["a"] * 3, "model_b": ["b"] * 3, "winner": ["model_a"] * 3, "weight": [float("nan"), float("inf"), 2.5]}).write_parquet(floats)
    assert read_sources([floats]).battles["weight"].to_list() == [2.5]


def test_a_weight_of_one_leaves_ids_as_they_were(tmp_path):
    """Content-hash ids of id-less votes: a weight of 1 is hashed as absent (a log that gains the column keeps
    its ids); another weight is content."""
    def ids(rows, name):
        return read_sources([write_jsonl(tmp_path / name, rows)], columns=None).battles["battle_id"].to_list()

    plain = ids([vote(i) for i in range(3)], "plain.jsonl")
    assert ids([vote(i, weight=1) for i in range(3)], "ones.jsonl") == plain
    assert ids([vote(i, weight="1.0") for i in range(3)], "text.jsonl") == plain
    assert ids([vote(i, weight=2 if i == 0 else 1) for i in range(3)], "two.jsonl")[1:] == plain[1:]
    assert ids([vote(0, weight=2)], "one.jsonl") != plain[:1]


def test_a_store_without_weights_reads_them_as_one(tmp_path):
    """Stores written before weights (parts without the column) fit as before; a newer part's weights count."""
    frame, _ = simulate(600, 4, seed=3)
    old = conform(frame.with_columns(pl.lit("old.jsonl").alias("source_file"), pl.int_range(1, pl.len() + 1).alias("source_row"))).drop("weight")
    store = Store.open(tmp_path / "store", create=True)
    with store.write() as tx:
        tx.add("battles", old)
    assert "weight" not in store.read("battles").columns
    unweighted = run("fit", "-s", store.root, "--ci", "none", "-f", "json")
    direct = run("fit", write_frame(frame, tmp_path / "votes.parquet"), "--ci", "none", "-f", "json")
    assert json.loads(unweighted.stdout)["tables"] == json.loads(direct.stdout)["tables"]
    extra = write_jsonl(tmp_path / "new.jsonl", [vote(i, weight=2) | {"model_a": "model-000", "model_b": "model-001"} for i in range(5)])
    run("ingest", extra, "-s", store.root)
    info = json.loads(run("info", "-s", store.root, "-f", "json").stdout)
    assert info["meta"]["overview"]["total_weight"] == 600 + 5 * 2
    assert info["tables"]["overview"] == [{**info["meta"]["overview"]}]  # the table is the overview, weight and all
    assert run("info", "-s", store.root, "-f", "csv").stdout.splitlines()[0] == "battles,total_weight,models,first,last"


def test_a_store_that_kept_a_weight_column_as_text_reads_it_as_numbers(tmp_path):
    """Before weights were a field, a log's weight column was an extra column, stored as text."""
    frame, _ = simulate(600, 4, seed=3)
    weights = np.random.default_rng(0).integers(1, 4, frame.height).astype(float)
    old = conform(frame.with_columns(pl.lit("old.jsonl").alias("source_file"), pl.int_range(1, pl.len() + 1).alias("source_row"))).drop("weight")
    old = old.with_columns(pl.Series("weight", [f"{w:g}" for w in weights]))
    store = Store.open(tmp_path / "store", create=True)
    with store.write() as tx:
        tx.add("battles", old)
    assert store.read("battles", ["weight"]).schema["weight"] == pl.String
    fitted = json.loads(run("fit", "-s", store.root, "--ci", "none", "-f", "json").stdout)
    direct = json.loads(run("fit", write_frame(frame.with_columns(pl.Series("weight", weights)), tmp_path / "v.parquet"), "--ci", "none", "-f", "json").stdout)
    assert fitted["tables"] == direct["tables"] and fitted["meta"]["settings"]["total_weight"] == weights.sum()


def write_frame(frame: pl.DataFrame, path):
    frame.write_parquet(path)
    return path


@pytest.mark.parametrize("suffix", ["jsonl", "csv", "parquet"])
def test_exports_keep_weights_and_ids(tmp_path, suffix):
    store = tmp_path / "store"
    run("ingest", write_jsonl(tmp_path / "w.jsonl", [vote(i, weight=[1, 2.5, 0][i % 3]) for i in range(9)]), "-s", store)
    run("export", "-s", store, "-o", tmp_path / f"out.{suffix}")
    run("ingest", tmp_path / f"out.{suffix}", "-s", tmp_path / "again")
    columns = ["battle_id", "weight", "content_hash"]
    first, second = (Store.open(s).read("battles", columns).sort("battle_id") for s in (store, tmp_path / "again"))
    assert first.equals(second)


def test_the_fit_and_summaries_report_the_total_weight(tmp_path):
    # each pair of models has a win each way and a tie, so no model is left out of the fit
    rows = [vote(i, weight=w) | {"winner": ["model_a", "model_b", "tie"][i // 3]} for i, w in enumerate([3, 1, 1, 0.5, 2, 1, 1, 1, 1])]
    path = write_jsonl(tmp_path / "w.jsonl", rows)
    info = json.loads(run("info", path, "-f", "json").stdout)
    assert info["meta"]["overview"]["battles"] == 9 and info["meta"]["overview"]["total_weight"] == 11.5
    models = {row["model"]: row for row in info["tables"]["models"]}
    assert models["m0"]["weight"] == 3 + 0.5 + 1 + 1 + 1 + 1 and sum(r["weight"] for r in info["tables"]["outcomes"]) == 11.5
    fitted = json.loads(run("fit", path, "--min-battles", "1", "--ci", "none", "-f", "json").stdout)
    assert fitted["meta"]["settings"]["n_battles"] == 9 and fitted["meta"]["settings"]["total_weight"] == 11.5
    plain = write_jsonl(tmp_path / "p.jsonl", [vote(i) for i in range(9)])
    assert "total_weight" not in json.loads(run("info", plain, "-f", "json").stdout)["meta"]["overview"]
    assert "weight" not in json.loads(run("info", plain, "-f", "json").stdout)["tables"]["models"][0]


def test_the_matrix_counts_weights(tmp_path):
    rows = [{"model_a": "x", "model_b": "y", "winner": w, "strength": s} for w, s in
            [("model_a", 3), ("model_b", 1), ("tie", 0.5), ("model_a", 0), ("model_b", 1)]]
    path = write_jsonl(tmp_path / "w.jsonl", rows)
    pairs = json.loads(run("matrix", path, "--long", "--map", "weight=strength", "--min-battles", "1", "-f", "json").stdout)["tables"]["pairs"]
    x = next(p for p in pairs if p["model"] == "x")
    assert (x["battles"], x["weight"], x["wins"], x["ties"], x["losses"]) == (4, 5.5, 3.0, 0.5, 2.0)
    assert x["win_rate"] == pytest.approx((3 + 0.25) / 5.5)
    assert x["predicted"] == pytest.approx(x["win_rate"], abs=1e-6)  # two models: the fit matches the weighted rate


def test_sums_of_weights_are_rounded_as_the_total_weight_is(tmp_path):
    """0.1 + 0.2 is 0.30000000000000004 in floating point: every sum of weights (info's tables, matrix --long's
    tallies) is given to 6 decimals, as info's total_weight is, in every format."""
    rows = [{"model_a": "x", "model_b": "y", "winner": w, "weight": s} for w, s in [("model_a", 0.1), ("model_a", 0.2), ("model_b", 0.7)]]
    path = write_jsonl(tmp_path / "w.jsonl", rows)
    noise = "0.30000000000000004"
    assert repr(0.1 + 0.2) == noise
    long = ["matrix", path, "--long", "--min-battles", "1"]
    x = next(p for p in json.loads(run(*long, "-f", "json").stdout)["tables"]["pairs"] if p["model"] == "x")
    assert (x["weight"], x["wins"], x["losses"]) == (1.0, 0.3, 0.7)
    info = json.loads(run("info", path, "-f", "json").stdout)["tables"]
    assert {r["outcome"]: r["weight"] for r in info["outcomes"]}["model_a"] == 0.3
    assert {r["model"]: r["weight"] for r in info["models"]} == {"x": 1.0, "y": 1.0}
    for shown in (run(*long).stdout, run(*long, "-f", "csv").stdout, run("info", path).stdout, run("info", path, "-f", "csv").stdout):
        assert noise not in shown
    rows = [{"model_a": "x", "model_b": "y", "winner": w, "weight": s} for w, s in [("model_a", 0.1), ("model_b", 0.2)]]
    fitted = json.loads(run("fit", write_jsonl(tmp_path / "f.jsonl", rows), "--min-battles", "1", "--ci", "none", "-f", "json").stdout)
    assert fitted["meta"]["settings"]["total_weight"] == 0.3  # the fit's own sum too


def test_a_parquet_log_read_by_polars_streaming_skips_bad_weights(tmp_path):
    frame, _ = simulate(500, 4, seed=4)
    weights = np.random.default_rng(1).integers(0, 4, frame.height).astype(float)
    weights[7] = -1.0
    weighted = write_frame(frame.with_columns(pl.Series("weight", weights)), tmp_path / "w.parquet")
    valid = write_frame(frame.with_columns(pl.Series("weight", weights)).filter(pl.col("weight") >= 0), tmp_path / "v.parquet")
    result = run("fit", weighted, "--ci", "none", "-f", "json")
    assert "1 row(s) skipped: wrong_type 1" in result.stderr
    assert json.loads(result.stdout)["tables"] == json.loads(run("fit", valid, "--ci", "none", "-f", "json").stdout)["tables"]


# ---------------------------------------------------------------------------------------- numeric extras


def test_numeric_extras_of_text_logs_are_numbers(tmp_path):
    rows = [vote(i, cov=[0.3, -1, None][i % 3], count=i, code=f"{i:03d}", flag=i % 2 == 0, mixed=[1, "x", 2][i % 3]) for i in range(6)]
    battles = read_sources([write_jsonl(tmp_path / "x.jsonl", rows)]).battles
    assert {c: battles.schema[c] for c in ("cov", "count", "code", "flag", "mixed")} == {
        "cov": pl.Float64, "count": pl.Int64, "code": pl.String, "flag": pl.String, "mixed": pl.String,
    }
    assert battles["cov"].to_list() == [0.3, -1.0, None, 0.3, -1.0, None]
    assert "cov" not in BATTLE_SCHEMA


def test_a_covariate_of_a_jsonl_or_csv_log_fits_as_the_parquet_one(tmp_path):
    frame, _ = simulate(1500, 5, seed=8, n_judges=10)
    frame = frame.with_columns(pl.Series("cov", np.random.default_rng(2).normal(size=frame.height).round(6)))
    logs = {"parquet": tmp_path / "v.parquet", "jsonl": tmp_path / "v.jsonl", "csv": tmp_path / "v.csv"}
    frame.write_parquet(logs["parquet"])
    frame.write_ndjson(logs["jsonl"])
    frame.write_csv(logs["csv"])
    tables = {kind: json.loads(run("fit", path, "--style", "cov", "--ci", "sandwich", "-f", "json").stdout)["tables"] for kind, path in logs.items()}
    assert tables["jsonl"] == tables["parquet"] and tables["csv"] == tables["parquet"]
    assert tables["parquet"]["coefficients"][0]["feature"] == "cov"
    run("ingest", logs["csv"], "-s", tmp_path / "store")
    assert Store.open(tmp_path / "store").read("battles", ["cov"]).schema["cov"] == pl.Float64
    stored = json.loads(run("fit", "-s", tmp_path / "store", "--style", "cov", "--ci", "sandwich", "-f", "json").stdout)["tables"]
    assert stored == tables["parquet"]


LLMFAO = Path(__file__).resolve().parents[2] / "shared" / "data" / "llmfao" / "battles.jsonl"


@pytest.mark.skipif(not LLMFAO.exists(), reason="needs ../shared/data/llmfao (the real crowd votes), absent in a fresh clone")
def test_real_votes_with_a_numeric_column_fit_alike_from_jsonl_csv_and_parquet(tmp_path):
    """The LLMFAO crowd votes with a numeric column added: `--style` takes it from every format, and its
    coefficient is statsmodels' logistic regression's on the same design."""
    import statsmodels.api as sm

    votes = pl.read_ndjson(LLMFAO).select("question_id", "model_a", "model_b", "winner", "judge")
    votes = votes.with_columns(pl.Series("answer_gap", np.random.default_rng(5).normal(size=votes.height).round(4)))
    logs = {"parquet": tmp_path / "v.parquet", "jsonl": tmp_path / "v.jsonl", "csv": tmp_path / "v.csv"}
    votes.write_parquet(logs["parquet"])
    votes.write_ndjson(logs["jsonl"])
    votes.write_csv(logs["csv"])
    options = ["--style", "answer_gap", "--ties", "drop", "--no-normalize", "--min-battles", "1", "--ci", "none", "-f", "json"]
    tables = {kind: json.loads(run("fit", path, *options).stdout)["tables"] for kind, path in logs.items()}
    assert tables["jsonl"] == tables["parquet"] == tables["csv"]
    decided = votes.filter(pl.col("winner").is_in(["model_a", "model_b"]))
    models = sorted(set(decided["model_a"]) | set(decided["model_b"]))
    design = np.zeros((decided.height, len(models)))
    index = {m: i for i, m in enumerate(models)}
    design[np.arange(decided.height), [index[m] for m in decided["model_a"]]] = 1.0
    design[np.arange(decided.height), [index[m] for m in decided["model_b"]]] = -1.0
    exog = np.column_stack([design[:, 1:], decided["answer_gap"].to_numpy()])  # the first model is the reference
    fitted = sm.GLM((decided["winner"] == "model_a").cast(float).to_numpy(), exog, family=sm.families.Binomial()).fit(tol=1e-12)
    assert tables["parquet"]["coefficients"][0]["coef"] == pytest.approx(fitted.params[-1], abs=1e-6)


def test_tiny_weights_keep_their_sums_and_the_matrix_order(tmp_path):
    """Sums of weights are rounded to significant digits, not decimals: 400 votes of 1e-9 summed to 0.0 in
    `meta.settings.total_weight` and in info's tables, and the win-rate matrix, ordered by rates of those rounded
    sums (0/0), came out in name order. The order is taken from the sums as they are."""
    rng = np.random.default_rng(2)
    strength = {"a": 0.0, "b": 0.6, "c": 0.3, "d": -0.4}
    rows = []
    for _ in range(400):
        x, y = rng.choice(list(strength), 2, replace=False)
        won = rng.random() < 1 / (1 + np.exp(strength[y] - strength[x]))
        rows.append({"model_a": str(x), "model_b": str(y), "winner": "model_a" if won else "model_b", "weight": 1e-9})
    path = write_jsonl(tmp_path / "tiny.jsonl", rows)
    fitted = json.loads(run("fit", path, "--min-battles", "1", "--ci", "none", "-f", "json").stdout)
    assert fitted["meta"]["settings"]["total_weight"] == pytest.approx(4e-7, rel=1e-9)
    info = json.loads(run("info", path, "-f", "json").stdout)
    assert info["meta"]["overview"]["total_weight"] == pytest.approx(4e-7, rel=1e-9)
    assert all(r["weight"] > 0 for r in info["tables"]["models"])
    frame = pl.DataFrame(rows)
    rate = {m: ((frame["model_a"] == m) & (frame["winner"] == "model_a")).sum() + ((frame["model_b"] == m) & (frame["winner"] == "model_b")).sum()
            for m in strength}
    played = {m: ((frame["model_a"] == m) | (frame["model_b"] == m)).sum() for m in strength}
    expected = sorted(strength, key=lambda m: -rate[m] / played[m])
    shown = json.loads(run("matrix", path, "-f", "json").stdout)["tables"]["matrix"]
    assert [r["model"] for r in shown] == expected


def test_a_count_matrix_of_votes_that_all_weigh_zero_is_no_data(tmp_path):
    """Every vote of weight 0: the battles and win-rate matrices were empty, exit 0, not a word."""
    rows = [{"model_a": "a", "model_b": "b", "winner": "model_a", "weight": 0.0}, {"model_a": "b", "model_b": "c", "winner": "model_b", "weight": 0.0}]
    path = write_jsonl(tmp_path / "zero.jsonl", rows)
    for value in ("battles", "win-rate"):
        result = run("matrix", path, "--value", value, code=6)
        assert "every vote weighs 0" in result.stderr


def test_votes_of_weight_minus_zero_sum_to_zero_not_minus_zero(tmp_path):
    """A weight of -0.0 is a valid 0: info's sums of such votes showed -0.0 (table, csv, json), where every other
    output shows a zero as 0.0."""
    rows = [{"model_a": "x", "model_b": "y", "winner": w, "weight": s} for w, s in [("model_a", -0.0), ("model_b", 1.0), ("tie", -0.0)]]
    rows.append({"model_a": "x", "model_b": "z", "winner": "tie", "weight": -0.0})
    path = tmp_path / "w.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert "-0.0" in path.read_text()
    for shown in (run("info", path).stdout, run("info", path, "-f", "csv").stdout, run("info", path, "-f", "json").stdout):
        assert not re.search(r"(?<![\w-])-0(\.0*)?(?![\d.])", shown)  # a number, not the "pytest-0" of a path
    tables = json.loads(run("info", path, "-f", "json").stdout)["tables"]
    assert {r["model"]: r["weight"] for r in tables["models"]} == {"x": 1.0, "y": 1.0, "z": 0.0}
    assert {r["outcome"]: r["weight"] for r in tables["outcomes"]} == {"model_a": 0.0, "model_b": 1.0, "tie": 0.0}


def test_a_shown_sum_of_weights_has_no_minus_zero():
    from arena_cli.schema import shown_weight

    assert str(shown_weight(-0.0)) == "0.0" and shown_weight(0.1 + 0.2) == 0.3 and shown_weight(-1e-300) == -1e-300
