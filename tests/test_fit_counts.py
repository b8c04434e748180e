"""Where a style fit takes its counts: LMArena's precomputed conv_metadata counts (--counts precomputed) or the
texts (--counts texts), and a store's cached counts joined part by part."""

from __future__ import annotations

import json

import polars as pl
import pytest
from typer.testing import CliRunner

from arena_cli.cli import app
from arena_cli.features import attach_features, update_store_features
from arena_cli.features.registry import feature_columns
from arena_cli.io.ingest import ingest_to_store
from arena_cli.io.options import FeatureOptions, Source
from arena_cli.io.store import Store
from arena_cli.models.inputs import load_fit_battles

runner = CliRunner()
MODELS = ("alpha", "beta", "gamma")
COUNTED = ("tokens", "h1", "h2", "h3", "h4", "h5", "h6", "ordered", "unordered", "bold_star", "bold_underscore")


def metadata(i: int) -> dict:
    """conv_metadata whose counts differ from what the texts of :func:`vote` give."""
    return {
        "sum_assistant_a_tokens": 100 + i, "sum_assistant_b_tokens": 7 + i % 5,
        "header_count_a": {f"h{k}": (i + k) % 3 for k in range(1, 7)}, "header_count_b": {f"h{k}": 0 for k in range(1, 7)},
        "list_count_a": {"ordered": i % 4, "unordered": 1}, "list_count_b": {"ordered": 0, "unordered": i % 2},
        "bold_count_a": {"**": i % 3, "__": 0}, "bold_count_b": {"**": 1, "__": i % 2},
    }


def vote(i: int, *, texts: bool = True, meta: bool = True) -> dict:
    record = {"question_id": f"q{i}", "model_a": MODELS[i % 3], "model_b": MODELS[(i + 1 + i // 3 % 2) % 3],
              "winner": ("model_a", "model_b", "tie")[(i * 7 + i // 5) % 3]}
    if texts:
        for side, answer in (("a", "# T\n" * (i % 4) + "- x\n" * (i % 5) + "word " * (i % 9)), ("b", "**b** " * (i % 3) + "y " * (i % 5))):
            record[f"conversation_{side}"] = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": answer}]
    if meta:
        record["conv_metadata"] = metadata(i)
    return record


def write(path, votes) -> None:
    path.write_text("".join(json.dumps(v) + "\n" for v in votes))


def fit(*args: str) -> dict:
    result = runner.invoke(app, ["fit", *args, "--style", "both", "--ci", "none", "--min-battles", "1", "-f", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def coefficients(document: dict) -> list[float]:
    return [c["coef"] for c in document["tables"]["coefficients"]]


@pytest.fixture
def log(tmp_path):
    path = tmp_path / "votes.jsonl"
    write(path, [vote(i) for i in range(60)] + [vote(60 + i, meta=False) for i in range(20)] + [vote(80 + i, texts=False) for i in range(20)])
    return path


def test_precomputed_counts_are_used_where_a_battle_has_them(log, tmp_path):
    """The default takes conv_metadata counts; --counts texts recounts them; the same votes with only one of the
    two give the same fits; meta.settings says which was asked for."""
    texts_only, meta_only = tmp_path / "texts.jsonl", tmp_path / "meta.jsonl"
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    write(texts_only, [{k: v for k, v in r.items() if k != "conv_metadata" or "conversation_a" not in r} for r in rows])
    write(meta_only, [{k: v for k, v in r.items() if not k.startswith("conversation_") or "conv_metadata" not in r} for r in rows])
    precomputed, texts = fit(str(log)), fit(str(log), "--counts", "texts")
    assert precomputed["meta"]["settings"]["feature_source"] == "precomputed"
    assert texts["meta"]["settings"]["feature_source"] == "texts"
    assert coefficients(precomputed) != coefficients(texts)
    assert coefficients(precomputed) == coefficients(fit(str(meta_only), "--counts", "texts"))
    assert coefficients(texts) == coefficients(fit(str(texts_only)))


@pytest.mark.parametrize("cached", [True, False], ids=["features-cached", "nothing-cached"])
@pytest.mark.parametrize("texts", [True, False], ids=["some-texts", "no-texts"])
def test_a_store_fit_prefers_precomputed_counts_as_a_file_fit_does(log, tmp_path, cached, texts):
    """A battle with only conv_metadata takes its counts under either --counts, from a store as from the file, with
    its features cached by `arena features` or not (then computed part by part)."""
    if not texts:
        write(log, [vote(i, texts=False) for i in range(60)])
    store = Store.open(tmp_path / "store", create=True)
    ingest_to_store(store, [log])
    if cached:
        update_store_features(store)
    for counts in ("precomputed", "texts"):
        assert coefficients(fit("-s", str(store.root), "--counts", counts)) == coefficients(fit(str(log), "--counts", counts))


def test_a_bad_counts_value_is_a_usage_error(log):
    result = runner.invoke(app, ["fit", str(log), "--style", "both", "--counts", "metadata"])
    assert result.exit_code == 2


def replace(store: Store, table: str, rows: pl.DataFrame) -> None:
    old = store.parts(table)
    with store.write() as tx:
        tx.manifest["tables"].pop(table)
        tx.add(table, rows)
    for path in old:  # a part no manifest lists is damage, not something the store deletes
        path.unlink()


def _store_counts(store: Store, counts: str = "texts") -> pl.DataFrame:
    loaded = load_fit_battles(Source(store=store.root), None, ["both"], features=FeatureOptions(counts=counts), extra_columns=["battle_id"])
    return pl.concat([part.lazy().collect() for part in loaded.battles])


def test_cached_counts_joined_part_by_part_are_those_attach_features_gives(tmp_path, monkeypatch):
    """Battles of several store parts, each with the cached counts of its key (a cached value the texts would
    not give proves the cache is read); a battle the cache lacks is computed, the others kept in order."""
    store = Store.open(tmp_path / "store", create=True)
    for part in range(3):
        path = tmp_path / f"votes{part}.jsonl"
        write(path, [vote(30 * part + i, meta=False) for i in range(30)])
        ingest_to_store(store, [path])
    update_store_features(store)
    key = next(t for t in store.tables() if t.startswith("features/markdown"))
    cached = store.read(key).with_columns(pl.lit(9, dtype=pl.Int64).alias("h6_a"))
    replace(store, key, cached)
    battles = store.read("battles", ["battle_id", "content_hash", "model_a", "model_b", "outcome"])
    expected = attach_features(battles, store=store).select("battle_id", *feature_columns(COUNTED))
    with monkeypatch.context() as patched:  # every battle is cached: no whole read, nothing computed
        patched.setattr("arena_cli.features.attach_features", None)
        joined = _store_counts(store)
    assert joined.select(expected.columns).equals(expected)
    assert set(joined["h6_a"]) == {9}
    replace(store, key, cached.filter(pl.col("battle_id") != "q31"))  # one battle the cache lacks
    recomputed = _store_counts(store)
    assert recomputed["battle_id"].to_list() == battles["battle_id"].to_list()
    assert recomputed.filter(pl.col("battle_id") == "q31")["h6_a"].item() == 0
    assert set(recomputed.filter(pl.col("battle_id") != "q31")["h6_a"]) == {9}


def test_counts_a_store_has_not_cached_are_computed_part_by_part_from_each_parts_texts(tmp_path, monkeypatch):
    """A style fit from a store without cached counts computes them from the texts of one part at a time (the
    store's texts are never read whole, nor read again for each part), and fits what a file fit of the same votes
    fits."""
    import arena_cli.features as features

    store = Store.open(tmp_path / "store", create=True)
    votes = [vote(i, meta=False) for i in range(90)]
    for part in range(3):
        path = tmp_path / f"votes{part}.jsonl"
        write(path, votes[30 * part : 30 * (part + 1)])
        ingest_to_store(store, [path])
    write(tmp_path / "all.jsonl", votes)
    seen: list[int] = []
    attach = features.attach_features
    monkeypatch.setattr(features, "attach_features", lambda battles, **k: seen.append(battles.height) or attach(battles, **k))
    scan = Store.scan

    def no_second_read_of_texts(self, table, columns=None):
        assert not (table == "battles" and "conversation_a" in (columns or [])), "texts read from the store again"
        return scan(self, table, columns)

    monkeypatch.setattr(Store, "scan", no_second_read_of_texts)
    from_store = fit("--store", str(store.root))
    assert seen == [30, 30, 30]
    assert coefficients(from_store) == pytest.approx(coefficients(fit(str(tmp_path / "all.jsonl"))), abs=1e-9)


@pytest.mark.parametrize("without_meta", [0, 5])
def test_a_parquet_log_with_nested_conv_metadata_is_streamed_with_its_counts(tmp_path, monkeypatch, without_meta):
    """LMArena's release shape: conv_metadata as a parquet struct of counts. Its fit is streamed (counts mapped
    within the query) and equals the fit of the same votes as JSONL and by the batch path; battles without
    counts are found after the read and settled by a second read, as the batch path settles them."""
    from arena_cli.io import reading
    from arena_cli.io.results import ReadPath

    votes = [vote(i, texts=False) for i in range(80)]
    for record in votes[:without_meta]:
        record.pop("conv_metadata")
    jsonl, parquet = tmp_path / "votes.jsonl", tmp_path / "votes.parquet"
    write(jsonl, votes)
    pl.read_ndjson(jsonl).write_parquet(parquet)
    lean = reading.read_lean
    monkeypatch.setattr(reading, "read_lean", lambda *a, **k: pytest.fail("a struct of counts is read by the streamed path"))
    from_parquet = fit(str(parquet))
    monkeypatch.setattr(reading, "read_lean", lean)
    monkeypatch.setattr(reading, "read_streamed", lambda *a, **k: ReadPath.LEAN)
    for other in (fit(str(parquet)), fit(str(jsonl))):
        assert coefficients(from_parquet) == pytest.approx(coefficients(other), rel=1e-12)
        assert from_parquet["tables"]["leaderboard"] == other["tables"]["leaderboard"]


def in_parts(record: dict) -> dict:
    """A vote as LMArena's releases since 2025 give it: each message's content a list of parts (here one text part,
    and an image beside the user's)."""
    def parts(message: dict) -> dict:
        text = [{"type": "text", "text": message["content"], "image": None, "mimeType": None}]
        image = [{"type": "image", "text": None, "image": "x.png", "mimeType": "image/png"}] if message["role"] == "user" else []
        return {"role": message["role"], "content": text + image}

    return {**record, **{f"conversation_{s}": [parts(m) for m in record[f"conversation_{s}"]] for s in "ab"}}


@pytest.mark.parametrize("suffix", ["parquet", "jsonl"])
def test_a_log_whose_messages_are_given_in_parts_fits_as_the_same_votes_given_as_text(tmp_path, suffix):
    """LMArena's release shape (content as parts, conv_metadata beside): its counts, precomputed or counted from the
    texts, and its ingest give what the same votes with text content give."""
    votes = [vote(i) for i in range(60)]
    as_text, as_parts = tmp_path / f"text.{suffix}", tmp_path / f"parts.{suffix}"
    for path, records in ((as_text, votes), (as_parts, [in_parts(v) for v in votes])):
        if suffix == "parquet":
            pl.DataFrame(records).write_parquet(path)
        else:
            write(path, records)
    for counts in ("precomputed", "texts"):
        given, expected = fit(str(as_parts), "--counts", counts), fit(str(as_text), "--counts", counts)
        assert given["tables"] == expected["tables"]
    stores = {}
    for name, path in (("text", as_text), ("parts", as_parts)):
        store = Store.open(tmp_path / name, create=True)
        ingest_to_store(store, [path])
        stores[name] = store.read("battles", ["battle_id", "conversation_a", "conversation_b"]).sort("battle_id")
    assert stores["parts"].equals(stores["text"])
