"""Property tests of the ingest on arbitrary vote logs: JSON lines and CSV rows with random model names,
winner labels (known and unknown), fields of wrong types, junk lines and bytes.

Whatever the input: the ingest does not crash, rows read = stored + duplicates + quarantined, every row is
either stored or quarantined with its exact original text, every known label maps to its outcome, no
unknown label becomes a tie, and a store exported and ingested again is unchanged.
"""

from __future__ import annotations

import csv
import io
import json

import polars as pl
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from arena_cli.io.export import export_table
from arena_cli.io.ingest import InputOptions, ingest_to_store, read_sources
from arena_cli.io.store import Store
from arena_cli.schema import WINNER_LABELS

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

KNOWN_LABELS = [*WINNER_LABELS, "Model_A", " tie ", "TIE (BOTHBAD)", "Both Bad"]
line_text = st.text(st.characters(blacklist_characters="\n\r", blacklist_categories=("Cs",)), max_size=12)
names = st.sampled_from(["gpt-4", "claude", "llama", " gpt-4 ", "", "  ", "é模型", 'q"u,o\'te', "back\\slash", "tab\tname"]) | st.none() | st.integers(-3, 3)
labels = st.sampled_from(KNOWN_LABELS) | line_text | st.none() | st.integers(0, 2)
messages = st.lists(st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant"]), "content": line_text | st.just('a\\b "c"\td\nnl')}), max_size=3)
scalars = st.none() | st.booleans() | st.integers(-10, 10) | st.floats(allow_nan=False, allow_infinity=False, width=32) | line_text
nested = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["a", "b", "c"]), inner, max_size=3), max_leaves=6)

vote = st.fixed_dictionaries(
    {"model_a": names, "model_b": names, "winner": labels},
    optional={
        "question_id": st.sampled_from(["q1", "q2", "q3", ""]),
        "turn": st.integers(0, 4) | st.sampled_from(["2", "abc", 1.5, 2.0, True]),
        "tstamp": st.floats(1e9, 2e9) | st.sampled_from(["2024-05-01 10:00:00", "yesterday"]),
        "anony": st.booleans() | st.sampled_from(["true", "no", "maybe", 1]),
        "language": line_text,
        "conversation_a": messages | line_text | st.lists(line_text, max_size=2),
        "conv_metadata": st.fixed_dictionaries({"sum_assistant_a_tokens": st.integers(0, 99), "bold_count_b": st.fixed_dictionaries({"**": st.integers(0, 3)})}) | line_text,
        "extra": nested,
    },
)
junk = line_text.map(str.encode) | st.binary(max_size=12).filter(lambda b: b"\n" not in b) | st.sampled_from([b"[1, 2]", b"null", b'{"a": NaN}', b"{", b"\xff\xfe{}"])
lines = st.lists(st.one_of(vote.map(lambda v: json.dumps(v, ensure_ascii=False).encode()), junk), max_size=25)


def expected_text(value):
    return None if value is None else (json.dumps(value) if isinstance(value, bool) else str(value)).strip()


def check_every_row_accounted(result, body: list[bytes], labels_of, models_of):
    """The properties every ingest must have, whatever the rows."""
    (summary,) = result.summaries
    counted = [n for n, line in enumerate(body, start=1) if line.strip()]
    assert summary.rows_read == len(counted)
    assert summary.rows_read == summary.stored + summary.duplicates + sum(summary.quarantined.values())
    stored_rows = result.battles["source_row"].to_list()
    quarantined_rows = result.quarantine["source_row"].to_list()
    assert len(set(stored_rows) | set(quarantined_rows)) == len(stored_rows) + len(quarantined_rows)  # once each
    assert set(stored_rows) | set(quarantined_rows) <= set(counted)
    for battle in result.battles.iter_rows(named=True):
        label = labels_of(battle["source_row"])
        assert battle["outcome"] == WINNER_LABELS[label], label
        assert (battle["model_a"], battle["model_b"]) == models_of(battle["source_row"])
    for record in result.quarantine.iter_rows(named=True):
        original = body[record["source_row"] - 1].removesuffix(b"\r")  # CR LF ends a line; the CR is not content
        if record["reason"] == "non_utf8":
            assert record["raw_bytes"] == original
        else:
            assert record["raw"] == original.decode()
    return summary


@SETTINGS
@given(st.lists(vote, min_size=1, max_size=3), lines)
def test_json_lines_never_crash_and_lose_nothing(tmp_path, first, rest):
    body = [json.dumps(v).encode() for v in first] + rest
    path = tmp_path / "votes.jsonl"
    path.write_bytes(b"\n".join(body) + b"\n")

    def parsed(row):
        return json.loads(body[row - 1])

    def label_of(row):
        return expected_text(parsed(row)["winner"]).lower()

    result = read_sources([path])
    check_every_row_accounted(result, body, label_of, lambda row: tuple(expected_text(parsed(row)[k]) for k in ("model_a", "model_b")))
    unknown = {n for n, line in enumerate(body, start=1) if line in {json.dumps(v).encode() for v in first} or line.startswith(b"{")}
    for row in set(result.battles["source_row"]) & unknown:
        assert label_of(row) in WINNER_LABELS  # an unknown label is never stored (as a tie or anything else)


csv_cells = st.sampled_from(["x", "y", "z", "", " x ", 'say "hi"', "a,b", "multi\nline", "é"])
csv_rows = st.lists(st.tuples(csv_cells, csv_cells, st.sampled_from(["L", "R", "T", "B", "l", "?", "", "draw"]), csv_cells), max_size=20)
ragged = st.sampled_from(["x,y", "x,y,L,w,extra", '"unterminated,y,L,w'])


@SETTINGS
@given(csv_rows, st.lists(st.tuples(st.integers(0, 20), ragged | st.binary(min_size=1, max_size=6).filter(lambda b: b"\n" not in b and b"\r" not in b and b'"' not in b)), max_size=3))
def test_mapped_csv_never_crashes_and_keeps_exact_records(tmp_path, rows, junk_rows):
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    records = []
    for row in rows:
        writer.writerow(row)
        records.append(out.getvalue().encode())
        out.seek(0)
        out.truncate()
    for position, extra in sorted(junk_rows, key=lambda item: item[0], reverse=True):
        records.insert(min(position, len(records)), extra if isinstance(extra, bytes) else extra.encode())
    if any(r.startswith(b'"unterminated') for r in records):
        records = records[: next(i for i, r in enumerate(records) if r.startswith(b'"unterminated')) + 1]  # it swallows the rest
    path = tmp_path / "crowd.csv"
    path.write_bytes(b"left,right,verdict,worker\n" + b"".join(r if r.endswith(b"\n") else r + b"\n" for r in records))
    winner_map = {"L": "model_a", "R": "model_b", "T": "tie", "B": "both_bad"}
    options = InputOptions(mapping={"model_a": "left", "model_b": "right", "outcome": "verdict", "judge": "worker"}, winner_map=winner_map)
    result = read_sources([path], options)
    (summary,) = result.summaries
    assert summary.rows_read == len(records)
    assert summary.rows_read == summary.stored + summary.duplicates + sum(summary.quarantined.values())
    start_lines = {}
    line = 2
    for record in records:
        start_lines[line] = record.removesuffix(b"\n")
        line += record.count(b"\n") + (0 if record.endswith(b"\n") else 1)
    for battle in result.battles.iter_rows(named=True):
        left, right, verdict, _ = next(csv.reader(io.StringIO(start_lines[battle["source_row"]].decode())))
        assert battle["outcome"] == {k.lower(): v for k, v in winner_map.items()}[verdict.lower()]
        assert (battle["model_a"], battle["model_b"]) == (left.strip(), right.strip())
    for record in result.quarantine.iter_rows(named=True):
        original = start_lines[record["source_row"]]
        assert (record["raw_bytes"] if record["reason"] == "non_utf8" else record["raw"].encode()) == original


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.lists(vote, min_size=1, max_size=12), st.lists(junk, max_size=3), st.sampled_from(["jsonl", "parquet", "csv"]))
def test_export_then_ingest_leaves_the_store_unchanged(tmp_path_factory, votes, junk_lines, fmt):
    if fmt == "csv":  # a NUL in a CSV row reads as binary damage (quarantined): text with one round-trips through JSONL and parquet only
        votes = [v for v in votes if "\x00" not in json.dumps(v, ensure_ascii=False)]
    work = tmp_path_factory.mktemp("roundtrip")
    source = work / "votes.jsonl"
    source.write_bytes(b"\n".join([json.dumps(v).encode() for v in votes] + junk_lines) + b"\n")
    store = Store.open(work / "s", create=True)
    ingest_to_store(store, [source])
    store.refresh()
    if store.rows("battles") == 0:
        return
    before = {t: store.read(t).sort("source_file", "source_row") for t in ("battles", "quarantine") if store.rows(t)}
    exported = work / f"export.{fmt}"
    export_table(store.root, "battles", exported)
    (summary,) = ingest_to_store(store, [exported])
    assert (summary.stored, summary.duplicates, sum(summary.quarantined.values())) == (0, store.rows("battles"), 0)
    store.refresh()
    after = {t: store.read(t).sort("source_file", "source_row") for t in ("battles", "quarantine") if store.rows(t)}
    assert before.keys() == after.keys()
    for table, frame in before.items():
        assert after[table].equals(frame), table
    assert isinstance(after["battles"], pl.DataFrame)


scalar_columns = st.sampled_from([pl.Int64, pl.Int8, pl.UInt32, pl.Float64, pl.Float32, pl.Boolean, pl.String])


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_content_text_fast_members_equal_the_json_encoder(data):
    """Numbers and booleans written directly give exactly the text polars' JSON encoder gives (hashes stay)."""
    import re as regex

    from arena_cli.io import duplicates

    rows = data.draw(st.integers(1, 6))
    columns = {"model_a": pl.Series(["a"] * rows), "model_b": pl.Series(["b"] * rows), "outcome": pl.Series(["tie"] * rows)}
    columns["turn"] = pl.Series(data.draw(st.lists(st.none() | st.integers(-5, 10**12), min_size=rows, max_size=rows)), dtype=pl.Int64)
    for k, dtype in enumerate(data.draw(st.lists(scalar_columns, max_size=4))):
        if dtype == pl.Boolean:
            values = st.none() | st.booleans()
        elif dtype.is_integer():
            values = st.none() | st.integers(0, 100)
        elif dtype.is_float():
            values = st.none() | st.floats(allow_nan=True, allow_infinity=True, width=32)
        else:
            values = st.none() | line_text | st.just('{"a":null,"b":1}')
        columns[f"extra {k}"] = pl.Series(data.draw(st.lists(values, min_size=rows, max_size=rows)), dtype=dtype)
    frame = pl.DataFrame(columns)
    fast = duplicates.content_text(frame)
    original = duplicates._PLAIN_NAME
    try:
        duplicates._PLAIN_NAME = regex.compile(r"(?!)")  # every member through the encoder
        assert duplicates.content_text(frame).to_list() == fast.to_list()
    finally:
        duplicates._PLAIN_NAME = original


names = st.sampled_from(["m1", "m2", " m1", "m2 ", "", "  ", None])
winner_labels = st.sampled_from(["model_a", "model_b", "tie", "both_bad", "Model_A", " tie", "", "nobody", None])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(names, names, winner_labels), min_size=1, max_size=12))
@example([("m1", "m2", "model_a"), ("m2", "m1", "tie"), ("m1", "m2", None)])
@example([("m1", "m2", "model_a"), ("m2", "", "tie"), ("m1", "m2 ", "Model_A")])
def test_parquet_rows_are_checked_per_distinct_value_exactly_as_per_row(tmp_path, rows):
    """Model names and winner labels are validated once per distinct value, and used as they are when all are
    clean: the battles and rejections equal those of validating every row."""
    import arena_cli.io.canonical as canonical

    path = tmp_path / "votes.parquet"
    pl.DataFrame(rows, schema={"model_a": pl.String, "model_b": pl.String, "winner": pl.String}, orient="row").write_parquet(path)
    fast = read_sources([path])
    original = canonical.by_distinct
    canonical.by_distinct = lambda batch, column, expr: expr
    try:
        slow = read_sources([path])
    finally:
        canonical.by_distinct = original
    assert fast.battles.equals(slow.battles)
    assert fast.quarantine.equals(slow.quarantine)


field_texts = st.sampled_from(["1", "0", "2", " 3", "3 ", "1.0", "1.5", "-2", "1e3", "nan", "inf", "", "  ", "true", " TRUE", "no", "Yes", "maybe", None])
time_texts = st.sampled_from(["1740960014.859", "1740960014859", "0", "-5", "1e9", "nan", "inf", " 1740960014", "", "2024-05-01 10:00:00",
                              "2024-05-01T10:00:00+02:00", "2024-05-01", "yesterday", None])


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(time_texts, field_texts, field_texts), min_size=1, max_size=12))
@example([("1740960014.859", "1", "true"), ("1740960014859", "2", "false")])
@example([("1740960014.859", "1", "true"), ("2024-05-01", " 2", "no")])
def test_text_fields_parsed_per_batch_equal_those_parsed_per_row(rows):
    """Timestamps, turns and anony flags given as text are parsed per distinct value, and number timestamps
    without the date formats, when the batch allows: the battles and rejections equal those of parsing every
    row in full."""
    from arena_cli.io import canonical
    from arena_cli.io.dialects import Plan
    from arena_cli.io.readers import ROW

    batch = pl.DataFrame(
        [("m1", "m2", "model_a", *row, number) for number, row in enumerate(rows, 1)],
        schema={"model_a": pl.String, "model_b": pl.String, "winner": pl.String, "tstamp": pl.String, "turn": pl.String, "anony": pl.String, ROW: pl.Int64},
        orient="row",
    )
    plan = Plan("arena", {"model_a": "model_a", "model_b": "model_b", "outcome": "winner", "timestamp": "tstamp", "turn": "turn", "anony": "anony"}, ())
    labels = {label: label for label in ("model_a", "model_b", "tie", "both_bad")}
    fast = canonical.canonicalize(batch, plan, labels, "votes.jsonl")
    original = canonical.field_exprs
    canonical.field_exprs = lambda schema, col, extras=(), batch=None: original(schema, col, extras)
    try:
        slow = canonical.canonicalize(batch, plan, labels, "votes.jsonl")
    finally:
        canonical.field_exprs = original
    assert fast[0].equals(slow[0])
    assert fast[1].equals(slow[1])


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(
        st.tuples(names, names, winner_labels, st.sampled_from(["1", "2", " 3", "x", "", None]), st.sampled_from(["i1", "i2", "i3", "sha-1", None])),
        min_size=0, max_size=10,
    ),
    st.booleans(),
    st.booleans(),
)
@example([("m1", "m2", "model_a", "1", "i1"), ("m2", "m1", "tie", None, "i2")], True, True)
@example([("m1", "m2", "model_a", "1", None), ("m2", "m1", "tie", None, None)], False, True)
@example([("m1", "m2", "model_a", "1", None), ("m2", "m2", "tie", None, None)], True, False)
def test_lean_reads_of_parquet_give_the_battles_of_a_full_read(tmp_path, rows, twice, with_ids):
    """Whichever path a lean read of parquet takes (streamed when rows need no trimming or mapping, else batches),
    its battles, rejections and counts equal those of a full read."""
    path = tmp_path / "votes.parquet"
    schema = {"model_a": pl.String, "model_b": pl.String, "winner": pl.String, "turn": pl.String, "id": pl.String}
    frame = pl.DataFrame(rows, schema=schema, orient="row")
    (frame if with_ids else frame.drop("id")).write_parquet(path)
    paths = [path, path] if twice else [path]
    columns = ["model_a", "model_b", "outcome", "turn"]
    full, lean = read_sources(paths), read_sources(paths, columns=columns)
    assert lean.battles.equals(full.battles.select(columns))
    assert lean.quarantine.select("source_row", "reason", "detail").equals(full.quarantine.select("source_row", "reason", "detail"))
    assert [(s.rows_read, s.stored, s.duplicates) for s in lean.summaries] == [(s.rows_read, s.stored, s.duplicates) for s in full.summaries]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.lists(vote, min_size=1, max_size=4), st.lists(st.integers(0, 3), min_size=1, max_size=14), st.lists(junk, max_size=2),
       st.sampled_from(["jsonl", "json", "parquet"]), st.integers(1, 3000))
def test_battles_do_not_depend_on_the_bytes_per_batch(tmp_path_factory, votes, picks, junk_lines, fmt, budget):
    """Ids (occurrences of repeated id-less votes, reused ids), hashes, row numbers and quarantined rows are
    the same whatever the bytes per batch, down to one row a batch."""
    from arena_cli.io.readers import read_batches

    chosen = [votes[i % len(votes)] for i in picks]
    path = tmp_path_factory.mktemp("budget") / f"v.{fmt}"
    if fmt == "jsonl":
        path.write_bytes(b"".join(json.dumps(v, ensure_ascii=False).encode() + b"\n" for v in chosen) + b"".join(j + b"\n" for j in junk_lines))
    elif fmt == "json":
        path.write_text(json.dumps([*chosen, 5, ["x"]], ensure_ascii=False, indent=1))
    else:
        pl.DataFrame({"model_a": [f"m{i}" for i in picks], "model_b": [f"m{i + 1}" for i in picks], "winner": ["tie"] * len(picks),
                      "text": ["long text " * (i * 40) for i in picks]}).write_parquet(path)

    def read(options):
        result = read_sources([path], options)
        return (result.battles.select("battle_id", "content_hash", "source_row", "model_a", "model_b", "outcome"),
                result.quarantine.select("source_row", "reason", "raw").sort("source_row"))

    whole, split = read(InputOptions()), read(InputOptions(batch_bytes=budget))
    assert split[0].equals(whole[0]) and split[1].equals(whole[1])
    extra_rows = {"json": 2, "jsonl": sum(1 for j in junk_lines if j.rstrip(b"\r\n").strip()), "parquet": 0}[fmt]
    assert len(list(read_batches(path, fmt, batch_bytes=1))) == len(picks) + extra_rows  # one row a batch
