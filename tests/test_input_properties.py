"""Property tests of what a read does with every row and every count.

Counts (``conv_metadata``'s, the ``meta_<count>_a`` columns, precomputed feature columns such as ``tokens_a``)
and ``turn``: a value is stored exactly when it is a whole number in range, absent when absent, and otherwise
its row is quarantined as ``wrong_type`` with the field named — never nulled, rounded or clipped — from text
(JSON lines) and from typed parquet columns alike, by full and lean reads alike.

Rows: every row read is stored, an exact duplicate or quarantined, in an ingest, a full read and the lean
read a command makes, and a command's warnings count every row it did not use.
"""

from __future__ import annotations

import json
import math
import re

import polars as pl
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arena_cli.io.battles import load_battle_parts
from arena_cli.io.fields import MAX_COUNT, MAX_TURN
from arena_cli.io.ingest import ingest_to_store, read_sources
from arena_cli.io.options import Source
from arena_cli.io.store import Store

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
ABSENT, INVALID = "absent", "invalid"

#: Where a count sits in a row: (how to put a value there, the stored column, the maximum, the start of the detail).
PLACES = {
    "conv_metadata": (lambda v: {"conv_metadata": {"sum_assistant_a_tokens": v}}, "meta_tokens_a", MAX_COUNT, "conv_metadata.sum_assistant_a_tokens: not a valid count"),
    "meta column": (lambda v: {"meta_tokens_a": v}, "meta_tokens_a", MAX_COUNT, "meta_tokens_a: not a valid count"),
    "feature column": (lambda v: {"tokens_a": v}, None, MAX_COUNT, "tokens_a: not a valid count"),
    "turn": (lambda v: {"turn": v}, "turn", MAX_TURN, "turn: not a valid turn"),
}


def expected(value, maximum):
    """What a count becomes: its whole number, ABSENT or INVALID (the oracle, in plain Python)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return ABSENT
    if isinstance(value, bool):
        return INVALID
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return INVALID
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        return INVALID
    return int(value) if 0 <= value <= maximum else INVALID


numbers = (
    st.integers(-(2**70), 2**70) | st.integers(-3, 3) | st.sampled_from([2**31 - 1, 2**31, 2**53 - 1, 2**53, 2**63 - 1, 2**63, -(2**63)])
    | st.floats(allow_nan=False, allow_infinity=False) | st.sampled_from([0.0, -0.0, 3.0, 3.5, 1e30, 1e15, 2.0**53])
)
texts = st.from_regex(r" ?-?[0-9]{1,20}(\.[0-9]{1,3})?(e[0-9]{1,2})? ?", fullmatch=True) | st.sampled_from(["abc", "", "  ", "NaN", "inf", "-0", "0x10", "1,000", "7 "])
json_values = numbers | texts | st.booleans() | st.none()


def vote(i: int, extra: dict) -> dict:
    return {"question_id": f"v{i}", "model_a": "x", "model_b": "y", "winner": "model_a", **extra}


def check_counts(result, values, place):
    _, column, maximum, detail = PLACES[place]
    stored = {int(r["battle_id"][1:]): r for r in result.battles.iter_rows(named=True)}
    rejected = {r["source_row"] - 1: r for r in result.quarantine.iter_rows(named=True)}
    assert len(stored) + len(rejected) == len(values)
    for i, value in enumerate(values):
        want = expected(value, maximum)
        if want == INVALID:
            assert i in rejected, (value, stored.get(i))
            assert rejected[i]["reason"] == "wrong_type" and rejected[i]["detail"].startswith(detail), (value, rejected[i])
        else:
            assert i in stored, (value, rejected.get(i))
            if column is not None:
                assert stored[i][column] == (None if want == ABSENT else want), value


@SETTINGS
@given(st.lists(json_values, min_size=1, max_size=12), st.sampled_from(list(PLACES)))
def test_counts_from_json_lines_are_stored_exactly_or_quarantined(tmp_path, values, place):
    put = PLACES[place][0]
    path = tmp_path / "v.jsonl"
    path.write_text("".join(json.dumps(vote(i, put(v))) + "\n" for i, v in enumerate(values)))
    check_counts(read_sources([path]), values, place)


typed_values = (
    st.integers(-(2**63), 2**63 - 1).map(lambda v: ("int", v)) | st.integers(-3, 2**54).map(lambda v: ("int", v))
    | st.floats(allow_nan=True, allow_infinity=True).map(lambda v: ("float", v)) | st.sampled_from([("float", 5.0), ("float", 2.0**53), ("int", 2**53 - 1)])
)


@SETTINGS
@given(st.lists(typed_values, min_size=1, max_size=12), st.sampled_from(["int", "float"]), st.sampled_from(list(PLACES)))
def test_counts_from_typed_parquet_columns_are_stored_exactly_or_quarantined(tmp_path, typed, kind, place):
    if kind == "int":
        values = [v for k, v in typed if k == "int"] or [1]
    else:
        values = [float(v) for _, v in typed]
    dtype = pl.Int64 if kind == "int" else pl.Float64
    n = len(values)
    column = pl.Series(values, dtype=dtype)
    frame = pl.DataFrame({"question_id": [f"v{i}" for i in range(n)], "model_a": ["x"] * n, "model_b": ["y"] * n, "winner": ["model_a"] * n})
    if place == "conv_metadata":
        frame = frame.with_columns(pl.struct(column.alias("sum_assistant_a_tokens")).alias("conv_metadata"))
    else:
        frame = frame.with_columns(column.alias({"meta column": "meta_tokens_a", "feature column": "tokens_a", "turn": "turn"}[place]))
    path = tmp_path / "v.parquet"
    frame.write_parquet(path)
    full = read_sources([path])
    check_counts(full, values, place)
    lean = read_sources([path], columns=["model_a", "model_b", "outcome"])
    assert lean.battles.height == full.battles.height and lean.quarantine.height == full.quarantine.height


# -- every row: stored, an exact duplicate or quarantined ---------------------------------------------------------------

ids = st.sampled_from(["a", "b", "c", "d"]) | st.none()
rows = st.fixed_dictionaries({
    "question_id": ids, "model_a": st.sampled_from(["m1", "m2", "m3"]), "model_b": st.sampled_from(["m1", "m2", "m4"]),
    "winner": st.sampled_from(["model_a", "model_b", "tie", "draw?"]), "turn": st.sampled_from([1, 2, -1]),
})


@SETTINGS
@given(st.lists(rows | st.just("{junk"), min_size=1, max_size=30), st.lists(st.integers(0, 29), max_size=8), st.booleans())
def test_every_row_is_stored_a_duplicate_or_quarantined_in_every_read(tmp_path_factory, records, repeats, two_files):
    tmp = tmp_path_factory.mktemp("rows")
    records = records + [records[i % len(records)] for i in repeats]  # exact repeats of earlier rows
    lines = [r if isinstance(r, str) else json.dumps({k: v for k, v in r.items() if v is not None}) for r in records]
    paths = [tmp / "a.jsonl"]
    paths[0].write_text("".join(line + "\n" for line in lines))
    if two_files:
        paths.append(tmp / "b.jsonl")
        paths[1].write_text("".join(line + "\n" for line in lines[: len(lines) // 2]))
    rows_in = len(lines) + (len(lines) // 2 if two_files else 0)

    full = read_sources(paths)
    lean = read_sources(paths, columns=["model_a", "model_b", "outcome"])
    for result in (full, lean):
        assert sum(s.rows_read for s in result.summaries) == rows_in
        for s in result.summaries:
            assert s.rows_read == s.stored + s.duplicates + sum(s.quarantined.values())
            assert s.reused_ids <= s.quarantined["conflicting_duplicate"]
        assert result.battles.height == sum(s.stored for s in result.summaries)
        assert result.quarantine.height == sum(sum(s.quarantined.values()) for s in result.summaries)
    assert [s.as_dict() for s in lean.summaries] == [s.as_dict() for s in full.summaries]

    store = Store.open(tmp / "s", create=True)
    summaries = ingest_to_store(store, paths)
    assert [s.as_dict() for s in summaries] == [s.as_dict() for s in full.summaries]
    assert Store.open(store.root).rows("battles") == full.battles.height
    assert Store.open(store.root).rows("quarantine") == full.quarantine.height

    if full.battles.height:  # what a command says: every row it did not use, counted
        loaded = load_battle_parts(Source(tuple(paths)), columns=["model_a", "model_b", "outcome"])
        used = sum(part.lazy().collect().height for part in loaded.battles)
        counted = sum(int(m.group(1).replace(",", "")) for w in loaded.warnings for m in [re.match(r"([\d,]+) (?:exact duplicate|row)", w)] if m)
        assert used + counted == rows_in, loaded.warnings
