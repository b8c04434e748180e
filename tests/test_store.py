"""The store through ingest: idempotent and incremental appends, quarantine kept once, --strict, failed
writes leaving it untouched, orphan clean-up and the writer lock."""

from __future__ import annotations

import json
import threading
import time

import polars as pl
import pytest

from arena_cli.errors import InputError, RejectedRowsError, StoreLockedError
from arena_cli.io.ingest import InputOptions, ingest_to_store
from arena_cli.io.store import MANIFEST, Store


def vote(i, **changes):
    return {"question_id": f"q{i}", "model_a": f"m{i % 5}", "model_b": f"m{(i + 1) % 5}", "winner": ["model_a", "model_b", "tie"][i % 3], **changes}


def write_jsonl(path, rows):
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def state(root):
    """What a reader of the store sees: battle ids with their content, quarantine rows, listed parts."""
    store = Store.open(root)
    battles = store.read("battles")
    quarantine = store.read("quarantine")
    return {
        "battles": sorted(battles.select("battle_id", "content_hash").rows()) if battles is not None else [],
        "quarantine": sorted(quarantine.select("source_file", "source_row", "reason").rows()) if quarantine is not None else [],
        "parts": {t: [p["path"] for p in parts] for t, parts in store.manifest["tables"].items()},
    }


def files(root):
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file() and p.name != ".lock")


def test_ingesting_the_same_file_twice_adds_nothing(tmp_path):
    source = write_jsonl(tmp_path / "v.jsonl", [vote(i) for i in range(20)] + ["{junk", vote(99, model_b="m4", model_a="m4")])
    store = Store.open(tmp_path / "s", create=True)
    (first,) = ingest_to_store(store, [source])
    before = state(store.root)
    (second,) = ingest_to_store(store, [source])
    assert first.as_dict()["stored"] == 20 and first.as_dict()["quarantined"] == 2
    assert second.as_dict() | {"source": None} == {"source": None, "rows_read": 22, "stored": 0, "duplicates": 20, "quarantined": 2,
                                                    "quarantined_by_reason": {"self_battle": 1, "unparseable": 1}}
    assert state(store.root) == before  # no new part, battles or quarantine
    assert len(Store.open(store.root).manifest["ingests"]) == 2


def test_a_source_given_twice_in_one_run_is_kept_once(tmp_path):
    source = write_jsonl(tmp_path / "v.jsonl", [vote(1), "not json"])
    store = Store.open(tmp_path / "s", create=True)
    ingest_to_store(store, [source, source])
    assert store.rows("battles") == 1 and store.rows("quarantine") == 1


def test_rejected_rows_are_staged_a_part_at_a_time_and_kept_once(tmp_path, monkeypatch):
    """A file of many rejected rows is never held whole: its quarantine is written in parts as it is read. Every
    row is kept, once, when the source is given twice in the run (its rows fall in different parts) or ingested
    again; --strict still counts them all."""
    from arena_cli.io import ingest

    monkeypatch.setattr(ingest, "PART_ROWS", 4)
    lines = [vote(i) for i in range(6)] + [f"{{junk {i}" for i in range(9)] + [vote(7, model_b="m2")]
    source = write_jsonl(tmp_path / "v.jsonl", lines)
    store = Store.open(tmp_path / "s", create=True)
    first, second = ingest_to_store(store, [source, source], InputOptions(batch_rows=3))
    parts = Store.open(store.root).manifest["tables"]["quarantine"]
    assert len(parts) >= 2 and first.as_dict()["quarantined"] == second.as_dict()["quarantined"] == 10
    quarantine = Store.open(store.root).read("quarantine")
    assert quarantine.height == 10 and sorted(quarantine["source_row"].to_list()) == list(range(7, 17))
    before = state(store.root)
    ingest_to_store(store, [source], InputOptions(batch_rows=3))
    assert state(store.root)["quarantine"] == before["quarantine"]
    with pytest.raises(RejectedRowsError, match="10 row"):
        ingest_to_store(Store.open(tmp_path / "strict", create=True), [source], InputOptions(batch_rows=3), strict=True)


def test_a_growing_log_adds_only_its_new_lines(tmp_path):
    anonymous = {"model_a": "x", "model_b": "y", "winner": "tie"}  # no id: identical repeats are distinct votes
    lines = [vote(i) for i in range(10)] + [anonymous, anonymous, "{junk"]
    source = write_jsonl(tmp_path / "log.jsonl", lines)
    store = Store.open(tmp_path / "s", create=True)
    ingest_to_store(store, [source])
    first_ids = set(store.read("battles")["battle_id"])
    appended = [vote(i) for i in range(10, 15)] + [anonymous, {"model_a": "x", "model_b": "y", "winner": "tie", "note": "new field"}, "{more junk"]
    write_jsonl(source, lines + appended)
    (summary,) = ingest_to_store(store, [source], InputOptions(batch_rows=4))
    counts = summary.as_dict()
    assert (counts["stored"], counts["duplicates"], counts["quarantined"]) == (7, 12, 2)
    ids = set(store.read("battles")["battle_id"])
    assert first_ids < ids and len(ids) == 12 + 7
    repeats = sorted(i for i in ids if i.startswith("sha-") and "~" in i)
    assert [r.rsplit("~", 1)[1] for r in repeats] == ["1", "2"]  # the third identical vote, appended, is ~2
    assert store.read("quarantine")["raw"].sort().to_list() == ["{junk", "{more junk"]


def test_strict_rejects_the_run_and_leaves_the_store_unchanged(tmp_path):
    store = Store.open(tmp_path / "s", create=True)
    ingest_to_store(store, [write_jsonl(tmp_path / "a.jsonl", [vote(i) for i in range(5)])])
    before, before_files = state(store.root), files(store.root)
    bad = write_jsonl(tmp_path / "b.jsonl", [vote(i) for i in range(5, 9)] + [vote(9, winner="draw")])
    with pytest.raises(RejectedRowsError, match="unknown_winner: 1"):
        ingest_to_store(store, [bad], strict=True)
    assert state(store.root) == before and files(store.root) == before_files
    ingest_to_store(store, [write_jsonl(tmp_path / "c.jsonl", [vote(i) for i in range(5, 9)])], strict=True)
    assert store.rows("battles") == 9


def test_a_failure_mid_run_leaves_the_store_as_it_was(tmp_path):
    store = Store.open(tmp_path / "s", create=True)
    ingest_to_store(store, [write_jsonl(tmp_path / "a.jsonl", [vote(i) for i in range(5)])])
    before, before_files = state(store.root), files(store.root)
    big = write_jsonl(tmp_path / "b.jsonl", [vote(i) for i in range(5, 40)])

    def fail_on_second_batch(summary):
        if summary.rows_read > 10:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        ingest_to_store(store, [big], InputOptions(batch_rows=10), on_batch=fail_on_second_batch)
    assert state(store.root) == before and files(store.root) == before_files


def test_missing_second_source_fails_before_anything_is_read(tmp_path):
    store = Store.open(tmp_path / "s", create=True)
    good = write_jsonl(tmp_path / "a.jsonl", [vote(1)])
    with pytest.raises(InputError, match="no such file"):
        ingest_to_store(store, [good, tmp_path / "missing.jsonl"])
    (tmp_path / "votes.txt").write_text("model_a,model_b,winner\nx,y,tie\n")
    with pytest.raises(InputError, match="--input-format"):
        ingest_to_store(store, [good, tmp_path / "votes.txt"])
    assert store.rows("battles") == 0 and not (store.root / MANIFEST).exists()


def test_the_next_writer_removes_what_a_killed_run_left(tmp_path):
    store = Store.open(tmp_path / "s", create=True)
    ingest_to_store(store, [write_jsonl(tmp_path / "a.jsonl", [vote(i) for i in range(5)])])
    listed = files(store.root)
    # what a killed run at generation 1 staged: parts of generation 2 and atomic-write temporaries
    leftovers = [store.root / "battles" / "part-000002-deadbeef.parquet", store.root / "battles" / ".part-000002-0000cafe.parquet.x1.tmp",
                 store.root / "quarantine" / "part-000002-0badf00d.parquet", store.root / f".{MANIFEST}.x2.tmp"]
    pl.DataFrame({"battle_id": ["ghost"]}).write_parquet(leftovers[0])
    for path in leftovers[1:]:
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(b"half written")
    assert Store.open(store.root).read("battles")["battle_id"].to_list() == [f"q{i}" for i in range(5)]  # readers ignore them
    ingest_to_store(store, [write_jsonl(tmp_path / "b.jsonl", [vote(5)])])
    assert not any(path.exists() for path in leftovers)
    assert set(listed) <= set(files(store.root))


def test_a_second_writer_waits_for_the_lock_or_fails_clearly(tmp_path):
    store = Store.open(tmp_path / "s", create=True)
    source = write_jsonl(tmp_path / "a.jsonl", [vote(i) for i in range(3)])
    held, release = threading.Event(), threading.Event()

    def hold():
        with Store.open(tmp_path / "s", create=True).lock():
            held.set()
            release.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    held.wait(5)
    try:
        with pytest.raises(StoreLockedError, match="locked by another arena run; waited 0.2 s"):
            ingest_to_store(store, [source], lock_wait=0.2)
        threading.Timer(0.5, release.set).start()
        started = time.monotonic()
        ingest_to_store(store, [source], lock_wait=10)
        assert time.monotonic() - started >= 0.4  # it waited for the holder
    finally:
        release.set()
        holder.join()
    assert store.rows("battles") == 3


def test_store_reads_align_parts_with_different_extra_columns(tmp_path):
    store = Store.open(tmp_path / "s", create=True)
    ingest_to_store(store, [write_jsonl(tmp_path / "a.jsonl", [vote(1, tag={"x": 1})])])
    ingest_to_store(store, [write_jsonl(tmp_path / "b.jsonl", [vote(2, tag="plain", other=3)])])
    battles = store.read("battles").sort("battle_id")
    assert battles["tag"].to_list() == ['{"x":1}', "plain"]  # nested extras are kept as JSON text
    assert battles["other"].to_list() == [None, 3]  # a number in a JSON log is stored as a number
    assert store.read("battles", ["battle_id", "other"]).columns == ["battle_id", "other"]


def test_the_manifest_keeps_null_counts_and_complete_answers_from_them(tmp_path):
    store = Store.open(tmp_path / "s", create=True)
    ingest_to_store(store, [write_jsonl(tmp_path / "a.jsonl", [vote(i, tokens_a=i, tokens_b=2 * i) for i in range(4)])])
    parts = store.manifest["tables"]["battles"]
    assert parts[0]["rows"] == 4 and "tokens_a" not in parts[0]["nulls"]
    assert store.complete("battles", ["tokens_a", "tokens_b"])
    ingest_to_store(store, [write_jsonl(tmp_path / "b.jsonl", [vote(9, tokens_a=None, tokens_b=3)])])
    assert store.manifest["tables"]["battles"][1]["nulls"]["tokens_a"] == 1
    assert not store.complete("battles", ["tokens_a", "tokens_b"]) and store.complete("battles", ["tokens_b"])
    ingest_to_store(store, [write_jsonl(tmp_path / "c.jsonl", [vote(11)])])  # a part without the columns at all
    assert not store.complete("battles", ["tokens_b"])
    assert store.complete("battles", ["model_a"])


@pytest.mark.parametrize("nulls", [0, 1])
def test_complete_reads_parts_whose_manifest_entry_has_no_null_counts(tmp_path, nulls):
    """Stores written before the manifest kept null counts: the parts are read instead."""
    store = Store.open(tmp_path / "s", create=True)
    rows = [vote(i, tokens_a=None if i < nulls else i, tokens_b=i) for i in range(4)]
    ingest_to_store(store, [write_jsonl(tmp_path / "a.jsonl", rows)])
    manifest = json.loads((tmp_path / "s" / MANIFEST).read_text())
    for part in manifest["tables"]["battles"]:
        del part["nulls"]
    (tmp_path / "s" / MANIFEST).write_text(json.dumps(manifest))
    assert Store.open(tmp_path / "s").complete("battles", ["tokens_a", "tokens_b"]) is (nulls == 0)


def test_store_parts_share_one_set_of_columns(tmp_path):
    store = Store.open(tmp_path / "s", create=True)
    ingest_to_store(store, [write_jsonl(tmp_path / "a.jsonl", [vote(1, tokens_a=5)])])
    ingest_to_store(store, [write_jsonl(tmp_path / "b.jsonl", [vote(2, other="x")])])
    parts = [p.collect() for p in store.scan_parts("battles", ["model_a", "tokens_a", "other", "no_such_column"])]
    assert [p.columns for p in parts] == [["model_a", "tokens_a", "other"]] * 2
    assert [p["tokens_a"].is_null().to_list() for p in parts] == [[False], [True]]
    assert [p["other"].to_list() for p in parts] == [[None], ["x"]]


def test_battles_are_written_in_parts_bounded_by_bytes(tmp_path, monkeypatch):
    """Long conversations: a part is written once its battles hold PART_BYTES, whatever their number."""
    from arena_cli.io import ingest

    texts = [vote(i, conversation_a=[{"role": "user", "content": "words " * 500}]) for i in range(12)]
    source = write_jsonl(tmp_path / "long.jsonl", texts)
    whole = Store.open(tmp_path / "whole", create=True)
    ingest_to_store(whole, [source], InputOptions(batch_rows=3))
    monkeypatch.setattr(ingest, "PART_BYTES", 1)
    split = Store.open(tmp_path / "split", create=True)
    ingest_to_store(split, [source], InputOptions(batch_rows=3))
    assert [p["rows"] for p in whole.manifest["tables"]["battles"]] == [12]
    assert [p["rows"] for p in split.manifest["tables"]["battles"]] == [3, 3, 3, 3]
    assert split.read("battles").equals(whole.read("battles"))
