"""`io.battles.load_battles`: from a store or straight from files, only the needed columns, filtered."""

from __future__ import annotations

import json

import pytest

from arena_cli.io import battles
from arena_cli.io.options import BattleFilter, Source
from arena_cli.errors import ExitCode, InputError, NoDataError
from arena_cli.io.ingest import ingest_to_store
from arena_cli.io.store import Store

VOTES = [
    {"question_id": f"q{i}", "model_a": "abc"[i % 3], "model_b": "bcd"[i % 3], "winner": ["model_a", "model_b", "tie"][i % 3],
     "language": ["English", "German"][i % 2], "turn": 1 + i % 3, "tstamp": 1.7e9 + i}
    for i in range(12)
]


@pytest.fixture
def votes(tmp_path):
    path = tmp_path / "votes.jsonl"
    path.write_text("".join(json.dumps(v) + "\n" for v in VOTES) + "{junk\n")
    return path


def load_battles(sources=(), store=None, columns=None, where=None, models=None, exclude_models=None):
    return battles.load_battles(Source(tuple(sources), store), BattleFilter(where, models, exclude_models), columns).battles


@pytest.fixture
def store(tmp_path, votes):
    opened = Store.open(tmp_path / "s", create=True)
    ingest_to_store(opened, [votes])
    return opened.root


def test_store_and_files_give_the_same_battles(store, votes):
    from_store = load_battles(store=store).sort("battle_id")
    from_files = load_battles([votes]).sort("battle_id")
    assert from_store.equals(from_files)
    assert from_store.height == 12


def test_files_win_over_the_store(tmp_path, store):
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps({"model_a": "x", "model_b": "y", "winner": "tie"}) + "\n")
    assert load_battles([other], store=store)["model_a"].to_list() == ["x"]


def test_only_the_requested_columns_and_those_the_filter_names(store, votes):
    for source in ({"store": store}, {"sources": [votes]}):
        frame = load_battles(**source, columns=["model_a", "model_b", "outcome"], where="turn > 1 AND language = 'German'")
        assert frame.columns == ["model_a", "model_b", "outcome", "turn", "language"]
        assert frame.height == len([v for v in VOTES if v["turn"] > 1 and v["language"] == "German"])


def test_model_filters(store):
    assert set(load_battles(store=store, models=["a", "b"])[["model_a", "model_b"]].rows()) == {("a", "b")}
    kept = load_battles(store=store, exclude_models=["d"])
    assert "d" not in set(kept["model_a"]) | set(kept["model_b"]) and kept.height == 8


@pytest.mark.parametrize(("where", "message"), [
    ("language = = 'x'", "cannot parse --where"),
    ("colour = 'red'", "unknown column"),
    ("model_a > 3 +", "cannot parse --where"),
    ("model_a + 1 > 1", "failed: arithmetic on"),
])
def test_bad_filters_are_input_errors(store, where, message):
    with pytest.raises(InputError, match=message) as caught:
        load_battles(store=store, columns=["model_a"], where=where)
    assert caught.value.exit_code == ExitCode.INPUT == 3
    assert "\n" not in str(caught.value)  # one line, not the query plan of a lazy read


@pytest.mark.parametrize("container", ["jsonl", "parquet", "csv"])
def test_an_unknown_column_of_files_lists_the_columns_one_can_filter_on(tmp_path, container):
    """A read takes only the columns the command needs: the message lists the files' columns (every canonical one
    and the files' own), not the four a lean read took."""
    import polars as pl

    frame = pl.DataFrame([{**v, "category_tag": "coding"} for v in VOTES]).drop("tstamp")
    path = tmp_path / f"votes.{container}"
    getattr(frame, f"write_{'ndjson' if container == 'jsonl' else container}")(path)
    with pytest.raises(InputError, match="unknown column") as caught:
        load_battles([path], columns=["model_a", "model_b", "outcome", "weight"], where="colour = 'red'")
    listed = str(caught.value).split("; columns: ")[1].split(", ")
    assert {"model_a", "language", "judge", "timestamp", "category_tag"} <= set(listed) and "colour" not in listed
    assert load_battles([path], columns=["model_a"], where="category_tag = 'coding'").height == len(VOTES)


@pytest.mark.parametrize("columns", [None, ["model_a", "model_b", "outcome", "weight"]])
def test_a_column_only_some_files_have_is_null_in_the_others(tmp_path, columns):
    """A --where on a column of the second file only was refused as unknown, the error listing the column among
    those one can filter on (and the files in the other order were read). The rows of a file without the column
    have it null, as a read of the files together gives it."""
    import polars as pl

    frame = pl.DataFrame(VOTES).drop("tstamp")
    first, second = tmp_path / "1.jsonl", tmp_path / "2.jsonl"
    frame.write_ndjson(first)
    frame.with_columns(pl.col("question_id") + "-2", custom_col=pl.int_range(pl.len()) % 2).write_ndjson(second)
    kept = sum(i % 2 for i in range(frame.height))
    for files in ([first, second], [second, first]):
        assert load_battles(files, columns=columns, where="custom_col = 1").height == kept
        assert load_battles(files, columns=columns, where="custom_col IS NULL").height == frame.height  # (the other file's)
    with pytest.raises(InputError, match="unknown column"):
        load_battles([first, second], columns=columns, where="colour = 'red'")


@pytest.mark.parametrize("container", ["jsonl", "json"])
def test_a_column_only_later_rows_of_a_json_file_have_can_be_filtered_on(tmp_path, container):
    """A JSON file's first batch (which decides the read's plan) and the streamed read's first lines lacked a column
    that later rows have: a --where on it was refused as naming an unknown column. It is null in the rows that lack
    it, as a read of the store it is ingested into gives it, for a lean read and a full one, a fit, a matrix and
    info; text functions run on it (a column of nulls of no type refused LIKE); a column no row has is still
    unknown, the columns one can filter on listed."""
    from arena_cli import api
    from arena_cli.io.options import InputOptions

    rows = [{"question_id": f"q{i}", "model_a": "abcd"[i % 4], "model_b": "abcd"[(i + 1 + i // 4 % 3) % 4], "winner": ["model_a", "model_b", "tie"][i % 3],
             **({"lang": ["English", "German"][i % 2]} if i >= 200 else {})} for i in range(300)]
    path = tmp_path / f"late.{container}"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows) if container == "jsonl" else json.dumps(rows, indent=1))
    small = InputOptions(batch_rows=100, batch_bytes=4000)  # batches (and streamed blocks) of a few dozen lines
    source = Source((path,), input=small)
    opened = Store.open(tmp_path / "s", create=True)
    ingest_to_store(opened, [path], small)
    english = sum(row.get("lang") == "English" for row in rows)
    for where, kept in [("lang = 'English'", english), ("lang LIKE 'Eng%'", english), ("lang IS NULL", 200)]:
        for columns in (None, ["model_a", "model_b", "outcome", "weight"]):
            assert battles.load_battles(source, BattleFilter(where), columns).battles.height == kept, (where, columns)
            assert load_battles(store=opened.root, columns=columns, where=where).height == kept
        fitted = [api.fit(data, store=store, where=where, ci="none", min_battles=1).leaderboard for data, store in ((source, None), (None, opened.root))]
        assert fitted[0].equals(fitted[1])
        assert api.matrix(source, where=where, value="battles").settings["n_battles"] == kept
        assert api.describe(source, where=where).overview["battles"] == kept
    styled = tmp_path / f"styled.{container}"
    counted = [{**row, "tokens_a": 10 + i % 7, "tokens_b": 12 + i % 5} for i, row in enumerate(rows)]
    styled.write_text("".join(json.dumps(row) + "\n" for row in counted) if container == "jsonl" else json.dumps(counted))
    with_counts = Store.open(tmp_path / "styled", create=True)
    ingest_to_store(with_counts, [styled], small)
    fitted = [api.fit(data, store=store, where="lang = 'German'", style="length", ci="none", min_battles=1)
              for data, store in ((Source((styled,), input=small), None), (None, with_counts.root))]
    assert fitted[0].leaderboard.equals(fitted[1].leaderboard) and fitted[0].settings["n_battles"] == fitted[1].settings["n_battles"] > 0
    with pytest.raises(InputError, match="names unknown column.s. colour; columns: ") as caught:
        battles.load_battles(source, BattleFilter("colour = 'red'"), ["model_a"])
    assert {"model_a", "question_id", "language"} <= set(str(caught.value).split("; columns: ")[1].split(", "))


def test_an_alpaca_eval_extra_column_can_be_filtered_on():
    """AlpacaEval's preference is kept as an extra column; with no fractional preference the votes of fractional
    ones (a batch of their own) were empty and lacked it, and the filter was refused as naming an unknown column."""
    from arena_cli.io.options import InputOptions

    path = "tests/fixtures/alpaca-eval/results/Mistral-7B-Instruct-v0.2/alpaca_eval_gpt4_turbo_fn/annotations.json"
    source = Source(files=(path,), input=InputOptions(fmt="alpaca-eval"))
    assert battles.load_battles(source, BattleFilter(where="preference = 1"), ["model_a", "model_b", "outcome", "weight"]).battles.height == 4


def test_nothing_left_is_no_data(tmp_path, store):
    with pytest.raises(NoDataError):
        load_battles(store=store, where="language = 'Klingon'")
    with pytest.raises(NoDataError):
        load_battles(store=store, models=["a", "zzz"], exclude_models=["b"])
    junk = tmp_path / "junk.jsonl"
    junk.write_text("{junk\n")
    only_quarantine = Store.open(tmp_path / "junk-store", create=True)
    ingest_to_store(only_quarantine, [junk])
    with pytest.raises(NoDataError, match="no battles yet"):
        load_battles(store=only_quarantine.root)
    with pytest.raises(InputError, match="no store"):
        load_battles(store=tmp_path / "missing")
