"""`arena ingest`, `arena export`, `arena info` through the CLI: exit codes, summaries, round trips."""

from __future__ import annotations

import json

import polars as pl
import pytest
from typer.testing import CliRunner

from arena_cli.cli import app
from arena_cli.io.store import MANIFEST, Store

runner = CliRunner()


def arena(*args):
    return runner.invoke(app, [str(a) for a in args])


def said(result):
    """stderr with rich's line wrapping undone."""
    return " ".join(result.stderr.split())


def write_jsonl(path, rows):
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


VOTES = [
    {"question_id": f"q{i}", "model_a": f"m{i % 4}", "model_b": f"m{(i + 1) % 4}", "winner": ["model_a", "model_b", "tie", "both_bad"][i % 4],
     "tstamp": 1.7e9 + 60 * i, "turn": 1 + i % 2, "anony": i % 3 != 0, "language": ["English", "German"][i % 2], "judge": f"u{i % 3}",
     "conversation_a": [{"role": "user", "content": f"q {i}"}, {"role": "assistant", "content": "**a**\n# h"}],
     "conversation_b": [{"role": "user", "content": f"q {i}"}, {"role": "assistant", "content": "b\tc \\ d"}],
     "conv_metadata": {"sum_assistant_a_tokens": 5 + i, "header_count_a": {"h1": 1}, "bold_count_a": {"**": 1, "__": 0}},
     "category": "chat", "is_code": i % 5 == 0, "tags": {"x": [i, "y"]}}
    for i in range(24)
]


@pytest.fixture
def votes(tmp_path):
    return write_jsonl(tmp_path / "votes.jsonl", VOTES + ["{junk", {**VOTES[0], "question_id": "self", "model_b": "m0"}])


def ingest_json(*args):
    result = arena("ingest", *args, "--format", "json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_ingest_prints_a_json_summary(tmp_path, votes):
    payload = ingest_json(votes, "--store", tmp_path / "s")
    assert payload["kind"] == "ingest" and payload["meta"]["store"] == str(tmp_path / "s")
    assert payload["meta"]["inputs"] == {"files": [str(votes)], "store": str(tmp_path / "s")}
    (source,) = payload["tables"]["sources"]
    assert source == {"source": str(votes), "rows_read": 26, "stored": 24, "duplicates": 0, "quarantined": 2,
                      "quarantined_by_reason": "self_battle 1, unparseable 1"}
    again = ingest_json(votes, "--store", tmp_path / "s")["tables"]["sources"][0]
    assert (again["stored"], again["duplicates"], again["quarantined"]) == (0, 24, 2)


def test_store_from_environment(tmp_path, votes, monkeypatch):
    monkeypatch.setenv("ARENA_STORE", str(tmp_path / "env-store"))
    assert arena("ingest", votes).exit_code == 0
    assert Store.open(tmp_path / "env-store").rows("battles") == 24


@pytest.mark.parametrize(("args", "message"), [
    (["missing.jsonl"], "no such file"),
    (["votes.txt"], "use --input-format csv"),  # neither the name nor the content (CSV) tells the format
    (["votes.jsonl", "--map", "colour=c"], "unknown field"),
    (["votes.jsonl", "--map", "model_a=nope"], "no column 'nope'"),
    (["votes.jsonl", "--winner-map", "x=draw"], "outcome must be one of"),
])
def test_input_errors_exit_3_without_creating_a_store(tmp_path, votes, args, message):
    (tmp_path / "votes.txt").write_text("model_a,model_b,winner\nx,y,tie\n")
    args = [str(tmp_path / a) if a.startswith("votes") or a.startswith("missing") else a for a in args]
    result = arena("ingest", *args, "--store", tmp_path / "s")
    assert result.exit_code == 3, result.output
    assert message in said(result)
    assert not (tmp_path / "s" / MANIFEST).exists()


@pytest.mark.parametrize("args", [[], ["ingest"], ["ingest", "x.jsonl", "--bogus"], ["ingest", "x.jsonl", "--input-format", "xml"],
                                  ["ingest", "x.jsonl", "--lock-wait", "soon"], ["export"],
                                  ["ingest", "x.jsonl", "--map", "model_a"], ["ingest", "x.jsonl", "--winner-map", "=model_a"]])
def test_usage_errors_exit_2(tmp_path, args):
    assert arena(*args, "--store", tmp_path / "s").exit_code == 2 if args else arena().exit_code == 2
    assert not (tmp_path / "s").exists()


def test_strict_exits_4_and_changes_nothing(tmp_path, votes):
    store = tmp_path / "s"
    clean = write_jsonl(tmp_path / "clean.jsonl", VOTES[:10])
    assert arena("ingest", clean, "--store", store).exit_code == 0
    manifest = (store / MANIFEST).read_bytes()
    result = arena("ingest", votes, "--store", store, "--strict")
    assert result.exit_code == 4
    assert "--strict: 2 row(s) rejected (self_battle: 1, unparseable: 1); the store is unchanged" in said(result)
    assert (store / MANIFEST).read_bytes() == manifest


def test_a_refused_strict_run_still_prints_its_summary(tmp_path, votes):
    result = arena("ingest", votes, "--store", tmp_path / "s", "--strict", "-f", "json")
    assert result.exit_code == 4 and not (tmp_path / "s").exists()
    document = json.loads(result.stdout)
    (source,) = document["tables"]["sources"]
    assert source["stored"] == 0 and source["quarantined"] == 2 and source["rows_read"] > 2
    assert any(w.startswith("--strict: 2 row(s) rejected") and "not stored either" in w for w in document["meta"]["warnings"])


def test_lock_held_elsewhere_exits_5(tmp_path, votes):
    store = tmp_path / "s"
    with Store.open(store, create=True).lock():
        result = arena("ingest", votes, "--store", store, "--lock-wait", "0.2")
    assert result.exit_code == 5
    assert "is locked by another arena run; waited 0.2 s" in said(result)


def test_mapped_csv_with_winner_map(tmp_path):
    path = tmp_path / "crowd.csv"
    path.write_text("id,left,right,winner\n1,a,b,left\n2,b,c,right\n3,a,c,tie\n4,c,a,unsure\n")
    payload = ingest_json(path, "--store", tmp_path / "s", "--map", "model_a=left", "--map", "model_b=right", "--map", "outcome=winner",
                          "--winner-map", "left=model_a", "--winner-map", "right=model_b")
    assert payload["tables"]["sources"][0]["quarantined_by_reason"] == "unknown_winner 1"
    assert Store.open(tmp_path / "s").read("battles")["outcome"].to_list() == ["model_a", "model_b", "tie"]


@pytest.mark.parametrize("fmt", ["parquet", "jsonl", "csv"])
def test_export_round_trip(tmp_path, votes, fmt):
    store, fresh = tmp_path / "s", tmp_path / "fresh"
    ingest_json(votes, "--store", store)
    out = tmp_path / f"battles.{fmt}"
    result = arena("export", "--store", store, "-o", out)
    assert result.exit_code == 0 and "wrote 24 rows" in said(result)
    again = ingest_json(out, "--store", store)["tables"]["sources"][0]
    assert (again["stored"], again["duplicates"], again["quarantined"]) == (0, 24, 0)  # the same battles, nothing new
    ingest_json(out, "--store", fresh)
    original = Store.open(store).read("battles").drop("source_file", "source_row").sort("battle_id")
    copied = Store.open(fresh).read("battles").drop("source_file", "source_row").sort("battle_id")
    assert copied.select(original.columns).equals(original)


def test_export_quarantine_keeps_exact_bytes_as_hex(tmp_path):
    source = tmp_path / "v.jsonl"
    source.write_bytes(json.dumps(VOTES[0]).encode() + b"\n" + b'{"model_a": "\xff"}\n')
    ingest_json(source, "--store", tmp_path / "s")
    for fmt in ("jsonl", "csv", "parquet"):
        out = tmp_path / f"q.{fmt}"
        assert arena("export", "--store", tmp_path / "s", "--table", "quarantine", "-o", out).exit_code == 0
        frame = pl.read_parquet(out) if fmt == "parquet" else pl.read_ndjson(out) if fmt == "jsonl" else pl.read_csv(out)
        raw_bytes = frame["raw_bytes"][0]
        assert (raw_bytes if fmt == "parquet" else bytes.fromhex(raw_bytes)) == b'{"model_a": "\xff"}'


def test_export_where_and_errors(tmp_path, votes):
    store = tmp_path / "s"
    ingest_json(votes, "--store", store)
    out = tmp_path / "german.jsonl"
    assert arena("export", "--store", store, "-o", out, "--where", "language = 'German' AND turn = 2").exit_code == 0
    assert pl.read_ndjson(out)["question_id"].to_list() == [f"q{i}" for i in range(1, 24, 2)]
    assert arena("export", "--store", store, "-o", tmp_path / "x.xlsx").exit_code == 3
    assert arena("export", "--store", store, "-o", out, "--table", "models").exit_code == 3
    assert arena("export", "--store", tmp_path / "nowhere", "-o", out).exit_code == 3


def test_info_json_shape(tmp_path, votes):
    store = tmp_path / "s"
    ingest_json(votes, "--store", store)
    result = arena("info", "--store", store, "--format", "json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["kind"] == "info"
    overview = doc["meta"]["overview"]
    assert overview["battles"] == 24 and overview["models"] == 4
    assert overview["first"].startswith("2023-11-14T22:13:20") and overview["last"].startswith("2023-11-14T22:36:20")
    assert set(doc["tables"]) >= {"overview", "models", "outcomes", "languages", "quarantine"}
    assert {r["outcome"]: r["battles"] for r in doc["tables"]["outcomes"]} == {"model_a": 6, "model_b": 6, "tie": 6, "both_bad": 6}
    assert {r["reason"]: r["rows"] for r in doc["tables"]["quarantine"]} == {"self_battle": 1, "unparseable": 1}
    first = doc["tables"]["models"][0]
    assert set(first) == {"model", "battles", "wins", "losses", "ties", "both_bad"}
    assert sum(r["battles"] for r in doc["tables"]["models"]) == 48


def test_info_on_files_where_and_exit_codes(tmp_path, votes):
    result = arena("info", votes, "--format", "json", "--where", "language = 'English'")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["meta"]["overview"]["battles"] == 12
    assert "2 row(s) skipped" in said(result)
    assert arena("info", votes, "--where", "nosuch = 1").exit_code == 3
    assert arena("info", votes, "--where", "language = = 1").exit_code == 3
    assert arena("info", votes, "--where", "language = 'Klingon'").exit_code == 6
    assert arena("info", "--store", tmp_path / "nowhere").exit_code == 3


def test_info_says_where_features_came_from(tmp_path):
    """Battles without texts take LMArena's conv_metadata counts, and `arena info` says how many did."""
    meta = {"sum_assistant_a_tokens": 120, "sum_assistant_b_tokens": 80, "header_count_a": {"h1": 1}, "bold_count_b": {"**": 2}}
    lines = [{"model_a": "x", "model_b": "y", "winner": "model_a", "conv_metadata": meta, "question_id": "m"}]
    lines.append({"model_a": "y", "model_b": "x", "winner": "tie", "question_id": "t",
                  "conversation_a": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "# hi"}],
                  "conversation_b": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "**b**"}]})
    lines.append({"model_a": "x", "model_b": "y", "winner": "model_b", "question_id": "n"})
    log = tmp_path / "votes.jsonl"
    log.write_text("".join(json.dumps(line) + "\n" for line in lines))
    store = tmp_path / "store"
    for args in (["ingest", str(log), "-s", str(store)], ["features", "-s", str(store)]):
        assert runner.invoke(app, args).exit_code == 0
    result = runner.invoke(app, ["info", "-s", str(store), "-f", "json"])
    rows = json.loads(result.stdout)["tables"]["features"]  # one row per cached feature family
    assert {(row["battles"], row["from_text"], row["from_metadata"], row["without_features"]) for row in rows} == {(3, 1, 1, 1)}
