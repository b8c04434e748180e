"""Features cached in the store: incremental updates, one table per family and version, the older one-table layout,
attach_features."""

from __future__ import annotations

import json

import polars as pl
import pytest

from arena_cli.errors import NoDataError
from arena_cli.features import attach_features, compute_features, feature_sources, read_store_features, update_store_features
from arena_cli.features import families, registry
from arena_cli.features.cache import FEATURE_COLUMNS
from arena_cli.features.registry import Family, Feature, feature_columns
from arena_cli.io.ingest import ingest_to_store
from arena_cli.io.store import Store


def table(family: str, recipe: str = "default", encoding: str = "cl100k_base") -> str:
    return next(f for f in registry.FAMILIES if f.name == family).key(recipe, encoding)


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
    assert first.families == ("tokens", "markdown", "structure")
    assert first.tables == ("features/tokens-cl100k_base-v1", "features/markdown-default-v1", "features/structure-v1")
    assert all(store.rows(t) == 22 for t in first.tables)
    again = update_store_features(store, "default")
    assert again.computed == 0 and again.cached_before == 22 and "nothing to do" in again.message()
    # another recipe recomputes the markdown counts only; new battles are the only ones computed
    other = update_store_features(store, "lmarena")
    assert (other.computed, other.families) == (22, ("markdown",))
    assert store.rows(table("markdown", "lmarena")) == 22 and store.rows(table("tokens")) == 22
    more = tmp_path / "more.jsonl"
    write_votes(more, [vote(i, "**new**", "x") for i in range(22, 25)])
    ingest_to_store(store, [more])
    update = update_store_features(store, "default")
    assert (update.computed, update.cached_before) == (3, 22)
    assert all(store.rows(t) == 25 for t in update.tables)


def test_two_runs_at_once_cache_each_battle_once(store):
    """A run that found battles missing, while another run cached them before it took the lock, stores none of
    them again (both stored every battle: the cache held each one twice, and an export of it listed them twice)."""
    stale = Store.open(store.root)  # the other run's view: opened before the first run published
    first = update_store_features(Store.open(store.root), "default")
    second = update_store_features(stale, "default")
    assert second.computed == 22  # (it computed them, but stored none)
    assert all(Store.open(store.root).rows(t) == 22 for t in first.tables)
    assert read_store_features(Store.open(store.root), "default").height == 22


def test_a_run_reads_each_part_of_the_cache_once(store, monkeypatch):
    """Each part of battles is checked against the cache as the run found it and the parts written since, never
    the whole cache again (a join with it per part made a run quadratic in the store's size)."""
    for number in range(3):
        more = store.root.parent / f"more-{number}.jsonl"
        write_votes(more, [vote(i, f"**{number}**", "x") for i in range(100 + 10 * number, 110 + 10 * number)])
        ingest_to_store(store, [more])
    store = Store.open(store.root)
    reads: list[str] = []
    read_part = Store.read_part

    def counted(self, table, relative, columns):
        reads.append(relative)
        return read_part(self, table, relative, columns)

    monkeypatch.setattr(Store, "read_part", counted)
    update = update_store_features(store, "default")
    assert update.computed == 52 and not reads  # (nothing was cached)
    more = store.root.parent / "later.jsonl"
    write_votes(more, [vote(i, "*later*", "x") for i in range(200, 205)])
    ingest_to_store(store, [more])
    again = update_store_features(Store.open(store.root), "default")
    assert (again.computed, again.cached_before) == (5, 52)
    cache_parts = [p for p in reads if p.startswith("features/")]
    assert len(cache_parts) == len(set(cache_parts)) == 3  # each family's part (one write of 52 battles), once


def test_a_run_publishes_every_million_battles_or_so(store, monkeypatch):
    """A run publishes what it computed when it has enough battles (or after enough seconds), not once per part of
    battles: each write checks every part of the store, so a write per part was quadratic in the parts. What it
    published stays when it is interrupted."""
    from arena_cli.features import cache

    for number in range(4):
        more = store.root.parent / f"part-{number}.jsonl"
        write_votes(more, [vote(i, f"**{number}**", "x") for i in range(100 + 10 * number, 110 + 10 * number)])
        ingest_to_store(store, [more])
    store = Store.open(store.root)
    monkeypatch.setattr(cache, "WRITE_BATTLES", 25)
    update = update_store_features(store, "default")
    assert (update.battles, update.computed, update.cached_before) == (62, 62, 0)
    assert [len(Store.open(store.root).parts(t)) for t in update.tables] == [2, 2, 2]  # 22 + 10, then 10 + 10 + 10
    with store.write() as tx:  # a battle the store holds twice (a store written by other means)
        tx.add("battles", store.read("battles").head(1))
    again = update_store_features(Store.open(store.root), "default")
    assert (again.battles, again.computed, again.cached_before) == (63, 0, 63)  # (both rows of the battle are cached)


def test_cached_features_equal_computed_ones(store):
    update_store_features(Store.open(store.root), "lmarena")
    store.refresh()  # another Store object published the features
    cached = read_store_features(store, "lmarena").sort("battle_id")
    direct = compute_features(store.read("battles"), "lmarena").sort("battle_id")
    assert cached.equals(direct)
    markdown = store.read(table("markdown", "lmarena")).sort("battle_id")
    assert markdown.drop("content_hash").equals(compute_features(store.read("battles"), "lmarena", families=["markdown"]).sort("battle_id"))
    metadata_row = cached.filter(pl.col("battle_id") == "q20").row(0, named=True)
    assert (metadata_row["tokens_a"], metadata_row["h2_a"], metadata_row["unordered_b"], metadata_row["feature_source"]) == (12, 2, 4, "conv_metadata")


def test_feature_sources_report(store):
    update_store_features(store, "default")
    report = feature_sources(store)
    counts = {"battles": 22, "from_text": 20, "from_metadata": 1, "without_features": 1}
    assert report.to_dicts() == [{"feature_set": name, **counts} for name in ("markdown-default-v1", "structure-v1", "tokens-cl100k_base-v1")]


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
    key = table("markdown")
    # a cached value the computation would not give proves the cache is used
    cached = store.read(key).with_columns(pl.lit(-1, dtype=pl.Int64).alias("h6_a"))
    replaced = store.parts(key)
    with store.write() as tx:
        tx.manifest["tables"].pop(key)
        tx.add(key, cached.filter(pl.col("battle_id") != "q3"))
    for part in replaced:  # a part no manifest lists is damage, not something the store deletes
        part.unlink()
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


def test_a_store_in_the_one_table_layout_is_read_not_recomputed(store, monkeypatch):
    """Stores written before families had their own tables: ``features/<recipe>-<encoding>-v1`` holds every
    feature; it serves as version 1 of each family whose columns it has."""
    battles = store.read("battles")
    old = compute_features(battles, "default").insert_column(1, battles["content_hash"])
    old = old.with_columns(pl.lit(-7, dtype=pl.Int64).alias("tokens_a"))  # a value no computation gives
    with store.write() as tx:
        tx.add("features/default-cl100k_base-v1", old)
    calls = []
    count_tokens = families.count_tokens
    monkeypatch.setattr(families, "count_tokens", lambda texts, *args: calls.append(len(texts)) or count_tokens(texts, *args))

    assert update_store_features(store, "default").computed == 0
    attached = attach_features(store.read("battles", ["battle_id", "content_hash", "model_a"]), store=store)
    assert set(attached.filter(pl.col("feature_source") == "text")["tokens_a"]) == {-7}
    densities_a = ["header_density_a", "list_density_a", "bold_density_a"]  # derived from the cached tokens_a
    read = read_store_features(store, "default").sort("battle_id")
    assert read.drop(densities_a).equals(old.drop("content_hash", *densities_a).sort("battle_id"))
    # another recipe: the markdown counts only; the tokens still come from the old table
    lmarena = update_store_features(store, "lmarena")
    assert (lmarena.computed, lmarena.families) == (22, ("markdown",))
    assert calls == [] and "features/default-cl100k_base-v1" in store.tables()


def count_words(answers) -> pl.DataFrame:
    return answers.joined.fill_null("").str.count_matches(r"\w+").cast(pl.Int64).to_frame("words")


def test_a_new_family_is_computed_alone_and_never_recomputes_tokens(store, monkeypatch):
    update_store_features(store, "default")
    calls = []
    count_tokens = families.count_tokens
    monkeypatch.setattr(families, "count_tokens", lambda texts, *args: calls.append(len(texts)) or count_tokens(texts, *args))
    words = Family("words", (Feature("words", "words of the answers", "toy"),), count_words)
    monkeypatch.setattr(registry, "FAMILIES", (*registry.FAMILIES, words))

    update = update_store_features(store, "default")
    assert (update.computed, update.cached_before, update.families) == (22, 0, ("words",))
    assert store.rows("features/words-v1") == 22 and update.tables[-1] == "features/words-v1"
    assert update_store_features(store, "default").computed == 0
    attached = attach_features(store.read("battles", ["battle_id", "content_hash", "model_a"]), store=store)
    assert [c for c in attached.columns if c.startswith("words")] == ["words_a", "words_b"]
    row = attached.filter(pl.col("battle_id") == "q3").row(0, named=True)
    assert (row["words_a"], row["words_b"]) == (3, 3)  # "# Answer 3\n- item", "plain plain plain "
    assert attached.filter(pl.col("battle_id") == "q20")["words_a"].to_list() == [None]  # conv_metadata has no words
    assert calls == []
    # without a cache, the family is computed with all the others
    direct = compute_features(store.read("battles"), "default")
    assert direct.columns == ["battle_id", *feature_columns([*registry.FEATURE_NAMES, "words"]), "feature_source"]
