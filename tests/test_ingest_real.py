"""The shared real vote logs ingest with the documented counts (skipped cleanly without ../shared)."""

from __future__ import annotations

import json

from conftest import shared_path

from arena_cli.io.ingest import InputOptions, ingest_to_store, read_sources
from arena_cli.io.store import Store


def test_lmarena_140k_parquet(tmp_path):
    source = shared_path("data", "lmarena-140k", "battles.parquet")
    store = Store.open(tmp_path / "s", create=True)
    (summary,) = ingest_to_store(store, [source])
    counts = summary.as_dict()
    assert (counts["rows_read"], counts["stored"], counts["duplicates"]) == (135_634, 135_624, 0)
    assert counts["quarantined_by_reason"] == {"self_battle": 10}
    quarantine = store.read("quarantine")
    assert quarantine.height == 10 and set(quarantine["reason"]) == {"self_battle"}
    assert set(quarantine["source_file"]) == {str(source)}
    for record in quarantine.iter_rows(named=True):
        original = json.loads(record["raw"])
        assert original["model_a"] == original["model_b"] and record["detail"] == "model_a == model_b"
    battles = store.read("battles", ["battle_id", "outcome"])
    assert battles["battle_id"].n_unique() == 135_624
    assert set(battles["outcome"]) == {"model_a", "model_b", "tie", "both_bad"}


def test_llmfao_jsonl_and_mapped_csv_agree():
    jsonl = read_sources([shared_path("data", "llmfao", "battles.jsonl")])
    mapping = {"model_a": "left", "model_b": "right", "outcome": "winner"}
    csv = read_sources([shared_path("data", "llmfao", "crowd-comparisons.csv")],
                       InputOptions(mapping=mapping, winner_map={"left": "model_a", "right": "model_b"}))
    for result in (jsonl, csv):
        (summary,) = result.summaries
        assert (summary.rows_read, summary.stored, summary.duplicates) == (8_931, 8_931, 0)
        assert result.quarantine.height == 0
    counts = [dict(r.battles["outcome"].value_counts().iter_rows()) for r in (jsonl, csv)]
    assert counts[0] == counts[1]
    assert sum(counts[0].values()) == 8_931
    pairs = [sorted(r.battles.select("model_a", "model_b", "outcome").rows()) for r in (jsonl, csv)]
    assert pairs[0] == pairs[1]  # vote for vote, not just in total
