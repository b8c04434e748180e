"""Features cached in the store: incremental updates, one table per (recipe, encoding, version), attach_features."""

from __future__ import annotations

import json

import polars as pl
import pytest

from arena_cli.errors import NoDataError
from arena_cli.features import attach_features, compute_features, feature_sources, update_store_features
from arena_cli.features.cache import FEATURE_COLUMNS, pending_battles
from arena_cli.features.registry import feature_key
from arena_cli.io.ingest import ingest_to_store
from arena_cli.io.store import Store


def vote(i: int, answer_a: str | None, answer_b: str | None, **extra) -> dict:
    record = {"question_id": f"q{i}", "model_a": "alpha", "model_b": "beta", "winner": "model_a", **extra}
    for side, answer in (("a", answer_a), ("b", answer_b)):
        if answer is not None:
            record[f"conversation_{side}"] = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": answer}]
    return record


def write_votes(path, votes) -> None:
    path.write_text("".join(json.dumps(v) + "\n" for v in votes))


@pytest.fixture
def store(tmp_path):
    source = tmp_path / "votes.jsonl"
    metadata = {"sum_assistant_a_tokens": 12, "sum_assistant_b_tokens": 30,
                "header_count_a": {f"h{k}": 0 for k in range(1, 7)} | {"h2": 2}, "header_count_b": {f"h{k}": 0 for k in range(1, 7)},
                "list_count_a": {"ordered": 1, "unordered": 0}, "list_count_b": {"ordered": 0, "unordered": 4},
                "bold_count_a": {"**": 3, "__": 0}, "bold_count_b": {"**": 0, "__": 1}}
    write_votes(source, [vote(i, f"# Answer {i}\n- item", "plain " * i) for i in range(20)]
                + [vote(20, None, None, conv_metadata=metadata), vote(21, None, None)])
    opened = Store.open(tmp_path / "store", create=True)
    ingest_to_store(opened, [source])
    return opened


def test_update_is_incremental(store, tmp_path):
    first = update_store_features(store, "default")
    assert (first.battles, first.computed, first.from_text, first.from_metadata, first.without) == (22, 22, 20, 1, 1)
    assert store.rows(feature_key("default", "cl100k_base")) == 22
    again = update_store_features(store, "default")
    assert again.computed == 0 and again.cached_before == 22 and "nothing to do" in again.message()
    # another recipe is another cache; new battles are the only ones computed
    assert update_store_features(store, "lmarena").computed == 22
    more = tmp_path / "more.jsonl"
    write_votes(more, [vote(i, "**new**", "x") for i in range(22, 25)])
    ingest_to_store(store, [more])
    assert pending_battles(store, "default").height == 3
    update = update_store_features(store, "default")
    assert (update.computed, update.cached_before) == (3, 22)
    assert store.rows(feature_key("default", "cl100k_base")) == 25


def test_cached_features_equal_computed_ones(store):
    update_store_features(Store.open(store.root), "lmarena")
    store.refresh()  # another Store object published the features
    cached = store.read(feature_key("lmarena", "cl100k_base")).sort("battle_id")
    direct = compute_features(store.read("battles"), "lmarena").sort("battle_id")
    assert cached.drop("content_hash").equals(direct)
    metadata_row = cached.filter(pl.col("battle_id") == "q20").row(0, named=True)
    assert (metadata_row["tokens_a"], metadata_row["h2_a"], metadata_row["unordered_b"], metadata_row["feature_source"]) == (12, 2, 4, "conv_metadata")


def test_feature_sources_report(store):
    update_store_features(store, "default")
    report = feature_sources(store)
    assert report.to_dicts() == [{"feature_set": "default-cl100k_base-v1", "battles": 22, "from_text": 20, "from_metadata": 1, "without_features": 1}]


def test_a_failed_run_leaves_the_store_unchanged(store, monkeypatch):
    from arena_cli.features import cache

    def broken(*args, **kwargs):
        raise RuntimeError("killed")

    monkeypatch.setattr(cache, "compute_features", broken)
    before = (store.root / "manifest.json").read_text()
    with pytest.raises(RuntimeError):
        update_store_features(store, "default")
    assert (store.root / "manifest.json").read_text() == before


def test_attach_features_uses_the_cache_and_computes_the_rest(store):
    update_store_features(store, "default")
    key = feature_key("default", "cl100k_base")
    # a cached value the computation would not give proves the cache is used
    cached = store.read(key).with_columns(pl.lit(-1, dtype=pl.Int64).alias("h6_a"))
    with store.write() as tx:
        tx.manifest["tables"].pop(key)
        tx.add(key, cached.filter(pl.col("battle_id") != "q3"))
    few_columns = store.read("battles", ["battle_id", "content_hash", "model_a", "model_b", "outcome"])
    attached = attach_features(few_columns, store=store.root)
    assert attached.columns == [*few_columns.columns, *FEATURE_COLUMNS]
    assert attached["battle_id"].to_list() == few_columns["battle_id"].to_list()
    h6 = dict(zip(attached["battle_id"], attached["h6_a"]))
    assert h6["q3"] == 0 and h6["q1"] == -1  # q3 computed from the store's texts, q1 from the cache
    assert attached.filter(pl.col("battle_id") == "q3")["h1_a"].to_list() == [1]


def test_attach_features_without_a_store(store):
    battles = store.read("battles")
    attached = attach_features(battles.with_columns(pl.lit(0).alias("tokens_a")), recipe="lmarena")
    assert attached.select(FEATURE_COLUMNS).equals(compute_features(battles, "lmarena").drop("battle_id"))


def test_a_store_without_battles(tmp_path):
    with pytest.raises(NoDataError):
        update_store_features(Store.open(tmp_path / "empty", create=True))


def test_an_unknown_encoding_never_names_a_cache(store):
    from arena_cli.errors import EncodingUnavailableError

    with pytest.raises(EncodingUnavailableError):
        update_store_features(store, "default", "cl100k_bsae")
    assert not [t for t in store.tables() if t.startswith("features/")]
