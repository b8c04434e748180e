"""Ingest dialects (FastChat / LMArena, arena-human-preference, Kaggle, mapped logs): canonical rows,
every rejected row quarantined with its reason and original content, ids and content hashes."""

from __future__ import annotations

import csv
import gzip
import json
from collections import Counter

import polars as pl
import pytest

from arena_cli.errors import InputError
from arena_cli.io.ingest import InputOptions, read_sources
from arena_cli.schema import BATTLE_SCHEMA, CANONICAL, META_COLUMNS


def write_jsonl(path, rows):
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def write_csv(path, header, rows):
    with open(path, "w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def conv(question, answer):
    return [{"role": "user", "content": question}, {"role": "assistant", "content": answer}]


def side_meta(side, tokens, headers, ordered, unordered, star, underscore):
    return {
        f"sum_assistant_{side}_tokens": tokens,
        f"header_count_{side}": {f"h{i + 1}": n for i, n in enumerate(headers)},
        f"list_count_{side}": {"ordered": ordered, "unordered": unordered},
        f"bold_count_{side}": {"**": star, "__": underscore},
    }


FASTCHAT = [
    {"model_a": "gpt-4", "model_b": "claude-2", "winner": "model_a", "judge": "arena_user_1", "turn": 1, "anony": True,
     "language": "English", "tstamp": 1700000000.25, "conversation_a": conv("hi", "# Hello\n**bold**"),
     "conversation_b": conv("hi", "hey"),
     "conv_metadata": {**side_meta("a", 12, [1, 0, 0, 0, 0, 0], 0, 2, 1, 0), **side_meta("b", 3, [0, 0, 0, 0, 0, 1], 4, 0, 0, 5)}},
    {"model_a": "claude-2", "model_b": "llama-2", "winner": "tie (bothbad)", "judge": "arena_user_2", "turn": 2, "anony": False,
     "language": "German", "tstamp": 1700000100},
    {"model_a": "llama-2", "model_b": "gpt-4", "winner": "tie", "judge": "arena_user_1", "turn": 1, "anony": True,
     "language": "English", "tstamp": 1700000200},
]


def summary(result):
    (only,) = result.summaries
    return only.as_dict()


def test_fastchat_json_array_and_jsonl_give_the_same_battles(tmp_path):
    (tmp_path / "b.json").write_text(json.dumps(FASTCHAT))
    write_jsonl(tmp_path / "b.jsonl", FASTCHAT)
    from_array = read_sources([tmp_path / "b.json"]).battles
    from_lines = read_sources([tmp_path / "b.jsonl"]).battles
    assert from_array.drop("source_file").equals(from_lines.drop("source_file"))
    assert from_array.columns == list(CANONICAL)
    assert from_array.schema == pl.Schema(BATTLE_SCHEMA)
    first = from_array.row(0, named=True)
    assert (first["outcome"], first["turn"], first["anony"], first["judge"]) == ("model_a", 1, True, "arena_user_1")
    assert first["timestamp"].isoformat() == "2023-11-14T22:13:20.250000+00:00"
    assert first["conversation_a"] == conv("hi", "# Hello\n**bold**")
    meta = {c: first[c] for c in META_COLUMNS}
    assert meta["meta_tokens_a"] == 12 and meta["meta_h1_a"] == 1 and meta["meta_unordered_a"] == 2 and meta["meta_bold_star_a"] == 1
    assert meta["meta_tokens_b"] == 3 and meta["meta_h6_b"] == 1 and meta["meta_ordered_b"] == 4 and meta["meta_bold_underscore_b"] == 5
    assert from_array["outcome"].to_list() == ["model_a", "both_bad", "tie"]
    assert from_array[1, "meta_tokens_a"] is None  # no conv_metadata: null, not zero


def test_arena_human_preference_parquet_typed_columns(tmp_path):
    path = tmp_path / "ahp.parquet"
    pl.DataFrame({
        "question_id": ["q1", "q2", "q3", "q4", "q5"],
        "model_a": ["a", "b", "a", "c", "b"],
        "model_b": ["b", "c", "c", "a", "a"],
        "winner": ["model_a", "model_b", "tie", "tie (bothbad)", "both_bad"],
        "conversation_a": [conv("q", "x")] * 5,
        "conversation_b": [conv("q", "y")] * 5,
        "turn": [1, 1, 2, 1, 3],
        "anony": [True, True, False, True, True],
        "language": ["English"] * 5,
        "tstamp": [1.7e9, 1.7e9 + 1, 1.7e9 + 2, 1.7e9 + 3, 1.7e9 + 4],
        "is_code": [False, True, False, False, True],
    }).write_parquet(path)
    result = read_sources([path])
    battles = result.battles
    assert summary(result)["stored"] == 5
    assert battles["battle_id"].to_list() == ["q1", "q2", "q3", "q4", "q5"]
    assert battles["outcome"].to_list() == ["model_a", "model_b", "tie", "both_bad", "both_bad"]
    assert battles["turn"].to_list() == [1, 1, 2, 1, 3]
    assert battles["conversation_b"][0].to_list() == conv("q", "y")
    assert battles["is_code"].to_list() == [False, True, False, False, True]  # an extra column, kept


def test_kaggle_csv_one_hot_winner_and_turn_lists(tmp_path):
    path = write_csv(tmp_path / "train.csv", ["id", "model_a", "model_b", "prompt", "response_a", "response_b", "winner_model_a", "winner_model_b", "winner_tie"], [
        ["1", "gpt", "claude", json.dumps(["hi", "more"]), json.dumps(["hello", "ok"]), json.dumps(["yo", None]), "1", "0", "0"],
        ["2", "gpt", "claude", json.dumps(["hi"]), json.dumps(["hello"]), json.dumps(["yo"]), "0", "1", "0"],
        ["3", "gpt", "claude", json.dumps(["hi"]), json.dumps(["hello"]), json.dumps(["yo"]), "0", "0", "1"],
        ["4", "gpt", "claude", json.dumps(["hi"]), json.dumps(["hello"]), json.dumps(["yo"]), "0", "0", "0"],
        ["5", "gpt", "claude", json.dumps(["hi"]), json.dumps(["hello"]), json.dumps(["yo"]), "1", "1", "0"],
        ["6", "gpt", "claude", "not json", json.dumps(["hello"]), json.dumps(["yo"]), "1", "0", "0"],
        # flags that are not 0 or 1 are no flags, whatever the others: never a tie
        ["7", "gpt", "claude", json.dumps(["hi"]), json.dumps(["hello"]), json.dumps(["yo"]), "", "", ""],
        ["8", "gpt", "claude", json.dumps(["hi"]), json.dumps(["hello"]), json.dumps(["yo"]), "yes", "no", "no"],
        ["9", "gpt", "claude", json.dumps(["hi"]), json.dumps(["hello"]), json.dumps(["yo"]), "-1", "0", "1"],
        ["10", "gpt", "claude", json.dumps(["hi"]), json.dumps(["hello"]), json.dumps(["yo"]), "1", "", "0"],
    ])
    result = read_sources([path])
    battles = result.battles
    assert battles["battle_id"].to_list() == ["1", "2", "3"]
    assert battles["outcome"].to_list() == ["model_a", "model_b", "tie"]
    assert battles["conversation_a"][0].to_list() == conv("hi", "hello") + conv("more", "ok")
    assert battles["conversation_b"][0].to_list() == conv("hi", "yo") + [{"role": "user", "content": "more"}, {"role": "assistant", "content": None}]
    reasons = dict(zip(result.quarantine["source_row"].to_list(), result.quarantine["reason"].to_list()))
    assert reasons == {5: "unknown_winner", 6: "unknown_winner", 7: "wrong_type", 8: "unknown_winner", 9: "unknown_winner", 10: "unknown_winner", 11: "unknown_winner"}


def test_mapped_csv_with_winner_map(tmp_path):
    path = write_csv(tmp_path / "crowd.csv", ["pair", "left", "right", "verdict", "worker"], [
        ["p1", "x", "y", "left", "w1"], ["p1", "x", "y", "right", "w2"], ["p2", "y", "z", "tie", "w1"], ["p2", "y", "z", "draw", "w3"],
    ])
    options = InputOptions(mapping={"model_a": "left", "model_b": "right", "outcome": "verdict", "judge": "worker"},
                            winner_map={"left": "model_a", "Right": "model_b"})
    result = read_sources([path], options)
    assert result.battles.select("model_a", "model_b", "outcome", "judge").rows() == [
        ("x", "y", "model_a", "w1"), ("x", "y", "model_b", "w2"), ("y", "z", "tie", "w1")]
    assert result.battles["battle_id"].str.starts_with("sha-").all()  # "pair" names a pair, not a vote
    assert result.battles["pair"].to_list() == ["p1", "p1", "p2"]
    (bad,) = result.quarantine.rows(named=True)
    assert (bad["reason"], bad["source_row"], bad["raw"]) == ("unknown_winner", 5, "p2,y,z,draw,w3")
    assert '"draw"' in bad["detail"] and "--winner-map" in bad["detail"]


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet", ".csv"])
def test_generic_mapping_reads_every_container(tmp_path, suffix):
    frame = pl.DataFrame({"m1": ["a", "b"], "m2": ["b", "c"], "res": ["1", "2"], "when": ["2024-05-01 10:00:00", "2024-05-02"]})
    path = tmp_path / f"v{suffix}"
    {".jsonl": frame.write_ndjson, ".parquet": frame.write_parquet, ".csv": frame.write_csv}[suffix](path)
    options = InputOptions(mapping={"model_a": "m1", "model_b": "m2", "outcome": "res", "timestamp": "when"},
                            winner_map={"1": "model_a", "2": "model_b"})
    battles = read_sources([path], options).battles
    assert battles["outcome"].to_list() == ["model_a", "model_b"]
    assert [t.isoformat() for t in battles["timestamp"]] == ["2024-05-01T10:00:00+00:00", "2024-05-02T00:00:00+00:00"]


def test_gzip_inputs(tmp_path):
    with gzip.open(tmp_path / "b.jsonl.gz", "wt") as out:
        out.write("".join(json.dumps(r) + "\n" for r in FASTCHAT))
    with gzip.open(tmp_path / "b.json.gz", "wt") as out:
        out.write(json.dumps(FASTCHAT))
    with gzip.open(tmp_path / "b.csv.gz", "wt", newline="") as out:
        out.write("model_a,model_b,winner\nx,y,model_b\n")
    assert read_sources([tmp_path / "b.jsonl.gz"]).battles.height == 3
    assert read_sources([tmp_path / "b.json.gz"]).battles.height == 3
    assert read_sources([tmp_path / "b.csv.gz"]).battles["outcome"].to_list() == ["model_b"]


ROW_OK = {"model_a": "x", "model_b": "y", "winner": "model_a"}


def row(**changes):
    return json.dumps({**ROW_OK, **changes})


QUARANTINE_CASES = [
    ("{broken", "unparseable"),
    ("[1, 2]", "unparseable"),
    (row(model_a=None), "missing_model"),
    (row(model_b="  "), "missing_model"),
    (json.dumps({"model_a": "x", "winner": "tie"}), "missing_model"),
    (row(winner="draw"), "unknown_winner"),
    (row(winner=None), "unknown_winner"),
    (row(winner="TIE (bothbad) maybe"), "unknown_winner"),
    (row(model_b="x"), "self_battle"),
    (row(turn="abc"), "wrong_type"),
    (row(turn=1.5), "wrong_type"),
    (row(tstamp="yesterday"), "wrong_type"),
    (row(anony="perhaps"), "wrong_type"),
    (row(conversation_a="hello"), "wrong_type"),
    (row(conversation_a=["hello"]), "wrong_type"),
    (row(conversation_b={"role": "user"}), "wrong_type"),
    (row(conv_metadata="tokens: 5"), "wrong_type"),
]


def test_every_quarantine_reason_keeps_content_source_and_line(tmp_path):
    lines = [row(question_id="ok-1")] + [text for text, _ in QUARANTINE_CASES] + [row(question_id="ok-2")]
    path = write_jsonl(tmp_path / "v.jsonl", lines)
    path.write_bytes(path.read_bytes() + b'{"model_a": "\xc3\x28", "model_b": "y", "winner": "tie"}\n')
    result = read_sources([path])
    quarantine = result.quarantine.sort("source_row")
    expected = [reason for _, reason in QUARANTINE_CASES] + ["non_utf8"]
    assert quarantine["reason"].to_list() == expected
    assert quarantine["source_row"].to_list() == [*range(2, 2 + len(QUARANTINE_CASES)), len(lines) + 1]
    assert quarantine["raw"].to_list()[:-1] == [text for text, _ in QUARANTINE_CASES]
    assert set(quarantine["source_file"]) == {str(path)}
    assert quarantine["raw_bytes"][-1] == b'{"model_a": "\xc3\x28", "model_b": "y", "winner": "tie"}'
    assert quarantine["detail"].null_count() == 0
    assert result.battles["battle_id"].to_list() == ["ok-1", "ok-2"]
    counts = summary(result)
    assert counts["rows_read"] == counts["stored"] + counts["duplicates"] + counts["quarantined"] == len(expected) + 2
    assert counts["quarantined_by_reason"] == dict(Counter(expected))


def test_a_bad_row_never_spoils_good_rows_beside_it(tmp_path):
    """One row of the wrong shape makes polars read its batch row by row; its neighbours read the same."""
    text = 'a\tb "c" d\\e\nf'
    good = [row(question_id=f"q{i}", turn=i % 3 + 1, anony=i % 2 == 0, conversation_a=conv("hi", text), score=i / 2) for i in range(6)]
    clean = read_sources([write_jsonl(tmp_path / "clean.jsonl", good)]).battles
    spoiled = read_sources([write_jsonl(tmp_path / "spoiled.jsonl", good[:3] + [row(conversation_a=["x"], anony=1), row(turn=True)] + good[3:])])
    assert spoiled.quarantine["reason"].to_list() == ["wrong_type", "wrong_type"]
    assert spoiled.battles.drop("source_file", "source_row").equals(clean.drop("source_file", "source_row"))
    assert clean["conversation_a"][0].to_list() == conv("hi", text)


def test_unknown_labels_never_become_ties(tmp_path):
    labels = ["model_a", "Model_B", " tie ", "tie (bothbad)", "both_bad", "bothbad", "draw", "tie?", "a", "", "0"]
    rows = [row(winner=w, question_id=str(i)) for i, w in enumerate(labels)]
    result = read_sources([write_jsonl(tmp_path / "v.jsonl", rows)])
    outcomes = dict(zip(result.battles["battle_id"].to_list(), result.battles["outcome"].to_list()))
    assert outcomes == {"0": "model_a", "1": "model_b", "2": "tie", "3": "both_bad", "4": "both_bad", "5": "both_bad"}
    assert result.quarantine["reason"].to_list() == ["unknown_winner"] * 5


def test_winner_map_overrides_and_extends_labels(tmp_path):
    rows = [row(winner="A", question_id="1"), row(winner="tie", question_id="2")]
    battles = read_sources([write_jsonl(tmp_path / "v.jsonl", rows)], InputOptions(winner_map={"a": "model_b", "TIE": "both_bad"})).battles
    assert battles["outcome"].to_list() == ["model_b", "both_bad"]


@pytest.mark.parametrize(("options", "message"), [
    (InputOptions(winner_map={"x": "draw"}), "outcome must be one of"),
    (InputOptions(mapping={"colour": "c"}), "unknown field"),
    (InputOptions(mapping={"model_a": "nope"}), "no column 'nope'"),
])
def test_bad_options_are_input_errors(tmp_path, options, message):
    with pytest.raises(InputError, match=message):
        read_sources([write_jsonl(tmp_path / "v.jsonl", [row()])], options)


def test_a_file_without_model_columns_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="model_a column"):
        read_sources([write_jsonl(tmp_path / "v.jsonl", [{"a": 1, "b": 2, "w": "x"}])])


def test_exact_duplicates_dropped_and_conflicts_quarantined(tmp_path):
    rows = [row(question_id="q1"), row(question_id="q2"), row(question_id="q1"), row(question_id="q1", winner="model_b"), row(question_id="q2")]
    result = read_sources([write_jsonl(tmp_path / "v.jsonl", rows)], InputOptions(batch_rows=2))
    assert result.battles["battle_id"].to_list() == ["q1", "q2"]
    assert result.battles["outcome"].to_list() == ["model_a", "model_a"]
    (conflict,) = result.quarantine.rows(named=True)
    assert (conflict["reason"], conflict["source_row"], conflict["raw"]) == ("conflicting_duplicate", 4, rows[3])
    assert summary(result) | {"source": None} == {"source": None, "rows_read": 5, "stored": 2, "duplicates": 2, "quarantined": 1,
                                                   "quarantined_by_reason": {"conflicting_duplicate": 1}}


def test_id_less_votes_get_stable_content_ids_and_repeats_stay_distinct(tmp_path):
    votes = [json.dumps({"model_a": "x", "model_b": "y", "winner": w}) for w in ("model_a", "model_a", "model_b", "model_a")]
    path = write_jsonl(tmp_path / "v.jsonl", votes)
    ids = read_sources([path]).battles["battle_id"].to_list()
    base = ids[0]
    assert base.startswith("sha-") and ids == [base, f"{base}~1", ids[2], f"{base}~2"]
    assert read_sources([path], InputOptions(batch_rows=1)).battles["battle_id"].to_list() == ids
    moved = write_jsonl(tmp_path / "elsewhere.jsonl", votes)
    assert read_sources([moved]).battles["battle_id"].to_list() == ids  # the id is the content's, not the file's


def test_ids_and_hashes_do_not_depend_on_batches(tmp_path):
    """Same rows, different neighbours (batch size, columns that only some rows have): same ids and hashes."""
    rows = [json.dumps({"model_a": f"m{i % 4}", "model_b": f"m{(i + 1) % 4}", "winner": "tie", "turn": i % 2 + 1,
                        "score": [1, 1.5, "x"][i % 3], "tags": {"a": i} if i % 2 else {"b": "z"}, **({"late": i} if i > 7 else {})})
            for i in range(10)]
    path = write_jsonl(tmp_path / "v.jsonl", rows)
    whole = read_sources([path]).battles
    for batch_rows in (1, 3, 7):
        split = read_sources([path], InputOptions(batch_rows=batch_rows)).battles
        assert split.select("battle_id", "content_hash").equals(whole.select("battle_id", "content_hash")), batch_rows
        assert split["late"].to_list() == [None] * 8 + [8, 9]  # a column that appears in a later batch is kept (numbers as numbers)
    assert whole["score"].to_list()[:3] == ["1", "1.5", "x"]


def test_canonical_columns_of_an_export_are_read_back(tmp_path):
    exported = {"model_a": "x", "model_b": "y", "battle_id": "b1", "outcome": "tie", "meta_tokens_a": 7, "meta_h2_b": "3",
                "source_file": "old.jsonl", "source_row": 9, "content_hash": "abc", "timestamp": "2024-01-02T03:04:05.123456+00:00"}
    battles = read_sources([write_jsonl(tmp_path / "v.jsonl", [exported])]).battles
    first = battles.row(0, named=True)
    assert (first["battle_id"], first["meta_tokens_a"], first["meta_h2_b"], first["source_row"]) == ("b1", 7, 3, 1)
    assert first["timestamp"].isoformat() == "2024-01-02T03:04:05.123456+00:00"
    assert "extra_source_file" not in battles.columns and "extra_content_hash" not in battles.columns


def test_empty_source_has_a_zero_summary(tmp_path):
    (tmp_path / "empty.jsonl").write_text("\n\n")
    result = read_sources([tmp_path / "empty.jsonl"])
    assert summary(result)["rows_read"] == 0
    assert result.battles.height == 0 and result.battles.columns == list(CANONICAL)


def test_quarantine_details_name_the_problem_of_the_first_failed_check(tmp_path):
    cases = {
        row(winner="Draw "): 'unknown winner label "Draw" (map it with --winner-map LABEL=OUTCOME)',
        row(turn="abc"): "turn: not a valid turn (a whole number from 0 to 2^31-1)",
        row(tstamp="yesterday"): "tstamp: not a valid timestamp (unix seconds or milliseconds, or ISO 8601 text)",
        row(model_b="x"): "model_a == model_b",
        row(model_a=None, turn="abc"): "model_a or model_b is missing or empty",
        row(winner="?", model_b="x"): 'unknown winner label "?" (map it with --winner-map LABEL=OUTCOME)',
        row(conversation_a="hello"): "conversation_a: not a list of {role, content} messages",
        row(conv_metadata="tokens: 5"): "conv_metadata: not an LMArena conv_metadata object",
        row(conv_metadata={"header_count_b": {"h2": -1}}): "conv_metadata.header_count_b.h2: not a valid count (a whole number from 0 to 2^53-1)",
    }
    result = read_sources([write_jsonl(tmp_path / "v.jsonl", [row(question_id="ok"), *cases])])
    assert result.quarantine.sort("source_row")["detail"].to_list() == list(cases.values())
    assert result.battles["battle_id"].to_list() == ["ok"]


# -- lean reads: the battles of a full read, for the columns asked ------------------------------------------

LEAN_COLUMNS = ["model_a", "model_b", "outcome", "turn", "score"]


def _lean_cases(tmp_path):
    mixed = [row(question_id="a", score=1), row(question_id="b", turn="x"), row(question_id="c", winner="draw", score=2), row(question_id="d", turn=2)]
    idless = [row(score=1), row(score=1), row(winner="model_b"), row(model_b="x")]
    frame = pl.DataFrame({"id": ["p1", "p2", "p3"], "model_a": ["x", "y", "x"], "model_b": ["y", "z", "x"], "winner": ["model_a", "tie", "model_b"],
                          "turn": [1, None, 3], "score": [0.5, 1.5, 2.5], "unused": ["u", "v", "w"]})
    frame.write_parquet(tmp_path / "p.parquet")
    return {
        "ids and bad rows": ([write_jsonl(tmp_path / "mixed.jsonl", mixed)], True),
        "repeated votes without ids": ([write_jsonl(tmp_path / "idless.jsonl", idless)], True),
        "parquet, columns skipped": ([tmp_path / "p.parquet"], True),
        "two sources with ids": ([tmp_path / "mixed.jsonl", tmp_path / "p.parquet"], True),
        "repeated and conflicting ids": ([write_jsonl(tmp_path / "dup.jsonl", [*mixed, row(question_id="a"), row(question_id="a", winner="tie")])], False),
        "the same file twice": ([tmp_path / "mixed.jsonl", tmp_path / "mixed.jsonl"], False),
        "votes without ids in two sources": ([tmp_path / "idless.jsonl", write_jsonl(tmp_path / "idless2.jsonl", idless[:1])], False),
        "a file without ids given twice": ([tmp_path / "idless.jsonl", tmp_path / "idless.jsonl"], False),
        "ids like content-hash ids": ([write_jsonl(tmp_path / "sha.jsonl", [row(), row(question_id="sha-1234", winner="tie")])], False),
    }


@pytest.mark.parametrize("case", [
    "ids and bad rows", "repeated votes without ids", "parquet, columns skipped", "two sources with ids",
    "repeated and conflicting ids", "the same file twice", "votes without ids in two sources", "a file without ids given twice",
    "ids like content-hash ids",
])
def test_a_lean_read_gives_the_battles_of_a_full_read(tmp_path, monkeypatch, case):
    from arena_cli.io import reading

    paths, lean = _lean_cases(tmp_path)[case]
    full = read_sources(paths)
    if lean:  # no hashing at all
        monkeypatch.setattr(reading, "add_hashes", lambda *a: pytest.fail("a lean read hashed"))
    result = read_sources(paths, columns=LEAN_COLUMNS)
    expected = full.battles.select([c for c in LEAN_COLUMNS if c in full.battles.columns])
    assert result.battles.columns == expected.columns
    assert result.battles.equals(expected)
    assert result.quarantine.select("source_file", "source_row", "reason", "detail").equals(full.quarantine.select("source_file", "source_row", "reason", "detail"))
    assert [s.stored for s in result.summaries] == [s.stored for s in full.summaries]


def _canonical_parquet(path, **changes):
    """A parquet log as tools write it (trimmed names, known labels, typed fields, extras, ids), with ``changes``."""
    frame = pl.DataFrame({
        "id": ["p1", "p2", "p3", "p4"], "model_a": ["x", "y", "x", "z"], "model_b": ["y", "z", "z", "x"],
        "winner": ["model_a", "tie (bothbad)", "model_b", "tie"], "turn": ["1", None, "3", "2"],
        "tstamp": [1.7e9, 1.7e9 + 60, None, 1.7e9 + 3600], "language": ["en", " de ", None, ""], "score": [0.5, 1.5, 2.5, None],
    }).with_columns(**{name: pl.Series(values) for name, values in changes.items()})
    frame.write_parquet(path)
    return path


STREAMED_COLUMNS = [*LEAN_COLUMNS, "timestamp", "language", "meta_tokens_a", "meta_h1_b", "meta_bold_star_a"]


def _meta(tokens_a=10, h1_b=1):
    """LMArena's nested conv_metadata (a part of it), typed as parquet keeps it."""
    return {"sum_assistant_a_tokens": tokens_a, "sum_assistant_b_tokens": 7, "header_count_b": {"h1": h1_b, "h2": 0}, "bold_count_a": {"**": 2, "__": 0}}


@pytest.mark.parametrize("change, streamed", [
    ({}, True),
    ({"id": [None, None, None, None]}, True),
    ({"winner": ["model_a", "draw", "model_b", "tie"]}, True),  # an unknown label: quarantined
    ({"model_b": ["y", "z", "x", "x"]}, True),  # a self-battle: quarantined
    ({"model_a": ["x", None, "x", "z"], "turn": ["1", "two", "3", "2"]}, True),  # a missing name, an unparsable turn
    ({"model_b": ["y", "z ", "z", "x"]}, False),  # a name to trim
    ({"winner": ["model_a", "Tie", "model_b", "tie"]}, False),  # a label to normalise
    ({"id": ["p1", "p2", "p1", "p4"]}, False),  # a repeated id: hashes decide (a full read)
    ({"conv_metadata": [_meta(), _meta(5, 0), None, _meta(0, 3)]}, True),  # a struct of counts is narrow
    ({"conv_metadata": [_meta(), _meta(-5, 0), _meta(1, 2**60), _meta(0, None)]}, True),  # counts out of range: quarantined
    ({"conv_metadata": [{"sum_assistant_a_tokens": "10"}, None, None, None]}, False),  # a struct holding text: batches
    # conversations typed as lists of messages fail no check: not read, so narrow
    ({"conversation_a": [[{"role": "user", "content": "hi"}], [], None, [{"role": "assistant", "content": "x"}]]}, True),
    ({"conversation_b": ["hi", None, "[]", "x"]}, False),  # conversations as text (JSON to decode): batches
])
@pytest.mark.parametrize("slice_rows", [3, None])
def test_parquet_logs_already_canonical_are_streamed_with_the_battles_of_a_full_read(tmp_path, monkeypatch, change, streamed, slice_rows):
    """A parquet log whose rows need no trimming or mapping (rows to reject aside) is read by one streaming
    pass, a slice of rows at a time; any other goes through the batch path. Either way the battles and
    rejections, with their reasons, details and original records, are those of a full read."""
    from arena_cli.io import reading, streamed as streamed_reads
    from arena_cli.io.results import ReadPath

    if slice_rows:
        monkeypatch.setattr(streamed_reads, "SLICE_ROWS", slice_rows)
        monkeypatch.setattr(streamed_reads, "MIN_SLICE_ROWS", 1)

    path = _canonical_parquet(tmp_path / "v.parquet", **change)
    full = read_sources([path])
    calls, lean, whole = [], reading.read_lean, reading.read_full
    monkeypatch.setattr(reading, "read_lean", lambda *a, **k: calls.append(1) or lean(*a, **k))
    monkeypatch.setattr(reading, "read_full", lambda *a, **k: calls.append(1) or whole(*a, **k))
    result = read_sources([path], columns=STREAMED_COLUMNS)
    assert (not calls) == streamed
    expected = full.battles.select([c for c in STREAMED_COLUMNS if c in full.battles.columns])
    assert result.battles.columns == expected.columns
    assert result.battles.equals(expected)
    assert result.quarantine.select("source_row", "reason", "detail").equals(full.quarantine.select("source_row", "reason", "detail"))
    if streamed:  # the original records, of the columns read (as a lean batch read gives them)
        monkeypatch.setattr(reading, "read_streamed", lambda *a: ReadPath.LEAN)
        assert result.quarantine.equals(read_sources([path], columns=STREAMED_COLUMNS).quarantine)
    assert [(s.rows_read, s.stored, s.duplicates, s.quarantined) for s in result.summaries] == [(s.rows_read, s.stored, s.duplicates, s.quarantined) for s in full.summaries]


def test_streamed_reads_map_within_the_query_and_check_ids_across_files(tmp_path):
    """``map_batch`` gets the canonical query, lazily; ids are checked across all files as batch reads do."""
    one = _canonical_parquet(tmp_path / "one.parquet")
    two = _canonical_parquet(tmp_path / "two.parquet", id=["q1", "q2", "q3", "q4"])
    seen = []

    def map_batch(frame):
        seen.append(type(frame))
        return frame.select("model_a", "outcome")

    result = read_sources([one, two], columns=STREAMED_COLUMNS, map_batch=map_batch)
    assert seen == [pl.LazyFrame, pl.LazyFrame]
    assert result.battles["outcome"].to_list() == ["model_a", "both_bad", "model_b", "tie"] * 2
    repeated = read_sources([one, one], columns=STREAMED_COLUMNS)  # the same ids twice: duplicates, dropped
    assert repeated.battles.equals(read_sources([one], columns=STREAMED_COLUMNS).battles)
    idless = _canonical_parquet(tmp_path / "idless.parquet", id=[None] * 4)
    assert read_sources([idless, idless], columns=STREAMED_COLUMNS).battles.height == 4  # one vote in two logs


def test_streamed_reads_give_vote_weights_only_where_the_log_has_them(tmp_path):
    """A log without weights gives no column of ones (every vote weighs 1; a fit knows that without one); a
    log with weights gives them, and the fit of either is that of a full read."""
    from arena_cli import api
    from arena_cli.io.battles import Source

    plain = _canonical_parquet(tmp_path / "plain.parquet")
    weighted = _canonical_parquet(tmp_path / "weighted.parquet", weight=[2.0, 1.0, 0.5, 3.0])
    assert "weight" not in read_sources([plain], columns=[*STREAMED_COLUMNS, "weight"]).battles.columns
    assert read_sources([weighted], columns=[*STREAMED_COLUMNS, "weight"]).battles["weight"].to_list() == [2.0, 1.0, 0.5, 3.0]
    for path in (plain, weighted):
        streamed = api.fit(Source((path,)), min_battles=1, ci="none")
        whole = api.fit(read_sources([path]).battles, min_battles=1, ci="none")
        assert streamed.leaderboard.equals(whole.leaderboard)


@pytest.mark.parametrize("suffix", ["jsonl", "parquet"])
@pytest.mark.parametrize("mixed", [False, True])
def test_a_message_given_in_parts_reads_as_its_texts_and_content_of_another_shape_is_no_conversation(tmp_path, suffix, mixed):
    """Content given as parts (``[{type, text, image, mimeType}]``, as LMArena's releases since 2025 and chat APIs
    give it) reads as the parts' texts joined by a newline, an image as no text; content of another shape (an
    object) is no conversation: the row is quarantined as a wrong type. So by every read path, whether a file's
    lines share one shape (JSON lines then read typed) or not (read as JSON text)."""
    def message(role, *texts, image=False):
        parts = [{"type": "text", "text": text, "image": None, "mimeType": None} for text in texts]
        return {"role": role, "content": parts + ([{"type": "image", "text": None, "image": "x.png", "mimeType": "image/png"}] if image else [])}

    rows = [{"model_a": "a", "model_b": "b", "winner": "model_a",
             "conversation_a": [message("user", "hi", image=True), message("assistant", "# Title", "**bold**")]},
            {"model_a": "b", "model_b": "a", "winner": "tie", "conversation_a": [message("user", image=True), message("assistant", "ok")]}]
    if mixed:
        rows.append({"model_a": "a", "model_b": "c", "winner": "model_b", "conversation_a": [{"role": "user", "content": "plain"}]})
        rows.append({"model_a": "c", "model_b": "b", "winner": "model_b", "conversation_a": [{"role": "user", "content": {"text": "an object"}}]})
    path = tmp_path / f"v.{suffix}"
    if suffix == "jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    else:  # (parquet holds one shape: each shape in a file of its own)
        pl.DataFrame(rows[:2]).write_parquet(path)
    expected = [[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "# Title\n**bold**"}],
                [{"role": "user", "content": ""}, {"role": "assistant", "content": "ok"}]]
    result = read_sources([path])
    assert result.battles["conversation_a"].to_list()[:2] == expected
    if mixed and suffix == "jsonl":
        assert result.battles["conversation_a"].to_list()[2] == [{"role": "user", "content": "plain"}]
        for columns in (None, ["model_a", "model_b", "outcome"]):
            quarantined = read_sources([path], columns=columns).quarantine
            assert quarantined["source_row"].to_list() == [4]
            assert quarantined["detail"].to_list() == ["conversation_a: not a list of {role, content} messages"]
    else:
        assert not result.quarantine.height
        assert read_sources([path], columns=["model_a", "model_b", "outcome"]).battles.height == 2


@pytest.mark.parametrize("name", ["v[1].parquet", "v*.parquet", "v?.parquet"])
def test_a_parquet_file_is_read_by_its_name_not_as_a_pattern(tmp_path, name):
    """Glob characters in a file's name are part of it (polars would take ``v[1].parquet`` as a pattern)."""
    path = _canonical_parquet(tmp_path / name)
    (tmp_path / "v1.parquet").write_bytes(b"not parquet")  # what the pattern v[1].parquet would match
    full = read_sources([path])
    assert full.battles.height == 4
    assert read_sources([path], columns=STREAMED_COLUMNS).battles.equals(full.battles.select(STREAMED_COLUMNS))


def test_a_corrupt_parquet_file_is_an_input_error_on_the_streamed_path(tmp_path):
    path = _canonical_parquet(tmp_path / "v.parquet")
    data = path.read_bytes()
    path.write_bytes(data[:8] + b"\0" * 64 + data[72:])
    with pytest.raises(InputError):
        read_sources([path], columns=STREAMED_COLUMNS)


def test_a_read_asking_for_ids_is_a_full_read(tmp_path):
    path = write_jsonl(tmp_path / "v.jsonl", [row(), row()])
    battles = read_sources([path], columns=["battle_id", "model_a"]).battles
    assert battles.columns == ["battle_id", "model_a"]
    assert battles["battle_id"].str.starts_with("sha-").all() and battles["battle_id"].n_unique() == 2


def test_lean_parquet_reads_size_their_batches_by_the_columns_read(tmp_path):
    """Narrow columns (names, labels, counts) are read in batches of about NARROW_BATCH_BYTES, more rows the
    fewer columns; a read of texts keeps the ingest's rows per batch."""
    from arena_cli.io.lean import NARROW_BATCH_BYTES, NARROW_BATCH_ROWS, SHORT_TEXT_BYTES, lean_parquet
    from arena_cli.io.options import InputOptions

    counts = {f"c{i}_{side}": [1] for i in range(10) for side in "ab"}
    votes = pl.DataFrame({"model_a": ["x"], "model_b": ["y"], "winner": ["tie"], **counts})
    votes.write_parquet(tmp_path / "v.parquet")
    conversation = [[{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]]
    votes.with_columns(pl.Series("conversation_a", conversation)).write_parquet(tmp_path / "texts.parquet")
    options = InputOptions()
    names = ["model_a", "model_b", "outcome"]

    def read(path, columns):
        lean = lean_parquet(tmp_path / path, options, columns)
        return lean.columns, lean.batch_rows(options)

    narrow = min(NARROW_BATCH_ROWS, NARROW_BATCH_BYTES // (3 * SHORT_TEXT_BYTES))
    assert read("v.parquet", names) == (["model_a", "model_b", "winner"], narrow)
    columns, rows = read("v.parquet", [*names, *counts])
    assert set(columns) == {"model_a", "model_b", "winner", *counts}
    assert options.batch_rows < rows == NARROW_BATCH_BYTES // (3 * SHORT_TEXT_BYTES + 8 * len(counts)) < NARROW_BATCH_ROWS
    # conversations typed as lists of messages fail no check: read only when kept, and then in the ingest's batches
    assert read("texts.parquet", names) == (["model_a", "model_b", "winner"], narrow)
    columns, rows = read("texts.parquet", [*names, "conversation_a"])
    assert "conversation_a" in columns and rows == options.batch_rows
    votes.with_columns(conversation_a=pl.lit('[{"role": "user", "content": "q"}]')).write_parquet(tmp_path / "json.parquet")
    columns, rows = read("json.parquet", names)  # conversations as JSON text are read to be validated
    assert "conversation_a" in columns and rows == options.batch_rows
    # nor can a parquet time within the years 1 to 9999 fail its check: nanoseconds always are, others as the
    # writer's statistics show (a date or time extra likewise; read to be checked when one may be outside them)
    far = 2**62
    for unit, value, checked in [("ns", far, False), ("us", 0, False), ("ms", 0, False), ("us", far, True), ("ms", -far, True)]:
        votes.with_columns(tstamp=pl.lit(value).cast(pl.Datetime(unit)), seen=pl.lit(value).cast(pl.Datetime(unit))).write_parquet(tmp_path / "timed.parquet")
        assert ("tstamp" in read("timed.parquet", names)[0]) == checked
        assert ("seen" in read("timed.parquet", names)[0]) == checked
        assert "tstamp" in read("timed.parquet", [*names, "timestamp"])[0]


COUNT_DETAIL = "not a valid count (a whole number from 0 to 2^53-1)"


@pytest.mark.parametrize(("conv_metadata", "detail"), [
    ('{"sum_assistant_a_tokens": []}', f"conv_metadata.sum_assistant_a_tokens: {COUNT_DETAIL}"),
    ('{"sum_assistant_a_tokens": {}}', f"conv_metadata.sum_assistant_a_tokens: {COUNT_DETAIL}"),
    ('{"sum_assistant_b_tokens": 1e999}', f"conv_metadata.sum_assistant_b_tokens: {COUNT_DETAIL}"),
    ('{"sum_assistant_a_tokens": 3, "bold_count_b": {"**": [1]}}', f"conv_metadata.bold_count_b.**: {COUNT_DETAIL}"),
    ('{"list_count_a": {"ordered": {"n": 1}}}', f"conv_metadata.list_count_a.ordered: {COUNT_DETAIL}"),
    ('{"sum_assistant_b_tokens": 2, "header_count_a": [1, 2], "sum_assistant_a_tokens": [3]}', "conv_metadata.header_count_a: not an object of counts"),
])
def test_a_conv_metadata_that_does_not_decode_names_its_field(tmp_path, conv_metadata, detail):
    """A count of the wrong JSON type spoils the decoding of the whole object; the detail still names the count."""
    line = row(question_id="bad")[:-1] + f', "conv_metadata": {conv_metadata}}}'
    result = read_sources([write_jsonl(tmp_path / "v.jsonl", [row(question_id="ok"), line])])
    assert result.quarantine.select("reason", "detail").rows() == [("wrong_type", detail)]
    assert result.battles["battle_id"].to_list() == ["ok"]


@pytest.mark.parametrize(("conv_metadata", "detail"), [
    ([1, 2], "conv_metadata: not an LMArena conv_metadata object"),
    ("tokens: 5", "conv_metadata: not an LMArena conv_metadata object"),
    ({"sum_assistant_a_tokens": 3, "header_count_a": [1, 2]}, "conv_metadata.header_count_a: not an object of counts"),
    ({"sum_assistant_a_tokens": 3, "list_count_b": 4}, "conv_metadata.list_count_b: not an object of counts"),
])
@pytest.mark.parametrize("container", ["jsonl", "parquet"])
def test_a_conv_metadata_of_one_wrong_shape_throughout_is_said_not_read_as_absent(tmp_path, conv_metadata, detail, container):
    """When every row's conv_metadata has the same wrong shape, the reader types the column so (a list, a struct
    whose header counts are a list): its counts are a wrong type, never silently absent."""
    rows = [{**json.loads(row(question_id=f"bad{i}")), "conv_metadata": conv_metadata} for i in range(2)]
    if container == "jsonl":
        path = write_jsonl(tmp_path / "v.jsonl", rows)
    else:
        path = tmp_path / "v.parquet"
        pl.DataFrame(rows).write_parquet(path)
    result = read_sources([path])
    assert result.quarantine.select("reason", "detail").rows() == [("wrong_type", detail)] * 2
    assert result.battles.height == 0


def _conversation_line(i, *contents):
    return json.dumps({"id": str(i), "model_a": "a", "model_b": "b", "winner": "tie",
                       "conversation_a": [{"role": r, "content": c} for r, c in zip(("user", "assistant"), contents)]}) + "\n"


_PARTS = [{"type": "text", "text": "hi"}]


@pytest.mark.parametrize(("lines", "texts", "quarantined"), [
    ([(_PARTS, "an answer")], [["hi", "an answer"]], []),  # parts for the user, a text for the answer
    ([(["a", "b"],), (_PARTS,)], [["hi"]], [1]),  # content a list of texts: no conversation, whatever its neighbours
    ([([{"type": "image", "image": "x.png"}],)], [[""]], []),  # an image alone, on its own
    ([([{"type": "image", "image": "x.png"}],), (_PARTS,)], [[""], ["hi"]], []),  # ... and beside a text
    ([([],)], [[""]], []),
    ([([],), (_PARTS,)], [[""], ["hi"]], []),
    ([({"text": "an object"},), (_PARTS,)], [["hi"]], [1]),
])
def test_messages_in_parts_read_alike_whatever_the_other_lines_of_a_batch(tmp_path, lines, texts, quarantined):
    """One rule for a message's content, however polars types a batch of JSON lines (a struct when they share one
    shape, JSON text when not): a text, or parts whose texts join (none: an empty text); anything else quarantines
    its own row only."""
    path = tmp_path / "v.jsonl"
    path.write_text("".join(_conversation_line(i + 1, *contents) for i, contents in enumerate(lines)))
    for columns in (None, ["model_a", "model_b", "outcome", "conversation_a"]):
        result = read_sources([path], columns=columns)
        assert [[m["content"] for m in c] for c in result.battles["conversation_a"].to_list()] == texts
        assert result.quarantine["source_row"].to_list() == quarantined


@pytest.mark.parametrize("text", [b"hi", b"\xff\xfe"])
@pytest.mark.parametrize("where", ["role", "part"])
def test_bytes_of_a_message_are_read_as_utf8_text_by_every_read_path(tmp_path, text, where):
    """A role or a part's text stored as bytes is read as its UTF-8 text; bytes that are not UTF-8 quarantine their
    row, by a read that wants the texts and by one that does not (which used to take the row unread)."""
    part = pl.Struct({"type": pl.String, "text": pl.Binary if where == "part" else pl.String})
    message = pl.Struct({"role": pl.Binary if where == "role" else pl.String, "content": pl.List(part)})
    given = {"role": text if where == "role" else "user", "content": [{"type": "text", "text": text if where == "part" else "hi"}]}
    path = tmp_path / "v.parquet"
    pl.DataFrame({"model_a": ["a", "b"], "model_b": ["b", "a"], "winner": ["model_a", "tie"],
                  "conversation_a": [[given], [{"role": b"user" if where == "role" else "user", "content": [{"type": "text", "text": b"ok" if where == "part" else "ok"}]}]]},
                 schema_overrides={"conversation_a": pl.List(message)}).write_parquet(path)
    for columns in (None, ["model_a", "model_b", "outcome"]):
        result = read_sources([path], columns=columns)
        assert result.battles.height == (2 if text == b"hi" else 1)
        assert result.quarantine["detail"].to_list() == ([] if text == b"hi" else ["conversation_a: bytes that are not UTF-8 in a message"])


@pytest.mark.parametrize("part", [pl.Null(), pl.Struct({"type": pl.String})])
def test_a_role_of_bytes_beside_parts_without_texts_is_checked_as_utf8(tmp_path, part):
    message = pl.Struct({"role": pl.Binary, "content": pl.List(part)})
    content = [] if part == pl.Null() else [{"type": "image"}]
    path = tmp_path / "v.parquet"
    pl.DataFrame({"model_a": ["a", "b"], "model_b": ["b", "a"], "winner": ["tie", "tie"],
                  "conversation_a": [[{"role": b"user", "content": content}], [{"role": b"\xff", "content": content}]]},
                 schema_overrides={"conversation_a": pl.List(message)}).write_parquet(path)
    result = read_sources([path])
    assert result.battles["conversation_a"].to_list() == [[{"role": "user", "content": ""}]]
    assert result.quarantine["detail"].to_list() == ["conversation_a: bytes that are not UTF-8 in a message"]
