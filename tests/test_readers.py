"""Container readers: every line or record is either a parsed row or a quarantined one, with its exact content."""

from __future__ import annotations

import gzip
import json

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arena_cli.errors import InputError
from arena_cli.io.dialects import container_for
from arena_cli.io.files import container_of, read_ahead
from arena_cli.io.options import InputOptions
from arena_cli.io.readers import RAW, ROW, read_batches


def test_read_ahead_gives_every_item_in_order_with_one_made_ahead_at_most():
    """Items made ahead on a thread come in order, however long each takes; one at most is made while the caller
    holds one; an error in making one reaches the caller when that item is due."""
    import threading
    import time

    lock, made, most_ahead, taken = threading.Lock(), [0], [0], [0]

    def items(count, failing=None):
        for number in range(count):
            if number == failing:
                raise ValueError(f"item {number}")
            time.sleep(0.02 * (number % 3 == 0))  # some slower than those after them
            with lock:
                made[0] += 1
                most_ahead[0] = max(most_ahead[0], made[0] - taken[0])
            yield number

    got = []
    for item in read_ahead(items(9)):
        with lock:
            taken[0] += 1
        got.append(item)
        time.sleep(0.01)
    assert got == list(range(9))
    assert most_ahead[0] <= 2  # the one held, and the one made meanwhile

    failing = read_ahead(items(4, failing=2))
    assert [next(failing), next(failing)] == [0, 1]
    with pytest.raises(ValueError, match="item 2"):
        next(failing)


def batches(path, container, batch_rows=1000):
    got = list(read_batches(path, container, batch_rows))
    frame = pl.concat([b.frame for b in got], how="diagonal") if got else pl.DataFrame()
    rejected = pl.concat([b.rejected for b in got])
    return got, frame, rejected


@pytest.mark.parametrize(
    ("name", "container"),
    [("a.jsonl", "jsonl"), ("a.ndjson", "jsonl"), ("a.json", "json"), ("a.csv", "csv"), ("a.tsv", "csv"),
     ("a.parquet", "parquet"), ("a.pq", "parquet"), ("a.jsonl.gz", "jsonl"), ("A.CSV.GZ", "csv")],
)
def test_container_from_extension(name, container):
    assert container_of(name) == container


@pytest.mark.parametrize("name", ["votes.txt", "votes", "votes.gz", "votes.xlsx"])
def test_a_name_without_a_known_extension_names_no_container(name):
    assert container_of(name) is None


@pytest.mark.parametrize("content", [b"model_a,model_b,winner\nx,y,tie\n", b"\x00\x01 binary"])  # (no content: an empty log, see test_hostile_inputs)
def test_unknown_extension_and_content_is_an_input_error_naming_the_option(tmp_path, content):
    path = tmp_path / "votes.txt"
    path.write_bytes(content)
    with pytest.raises(InputError, match="--input-format csv"):
        container_for(path, InputOptions())


def test_missing_file_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        read_batches(tmp_path / "nope.jsonl", "jsonl")


def test_jsonl_rows_numbered_by_physical_line_with_junk_quarantined(tmp_path):
    path = tmp_path / "v.jsonl"
    good = json.dumps({"model_a": "x", "model_b": "y", "winner": "tie"})
    lines = [b"\xef\xbb\xbf" + good.encode(), b"", b"   ", b"{not json", b"[1, 2]", b"null", b'{"a": NaN}',
             b'{"a": 1} trailing', good.encode() + b"\r", b'{"model_a": "\xff\xfe", "model_b": "y"}']
    path.write_bytes(b"\n".join(lines) + b"\n")
    _, frame, rejected = batches(path, "jsonl")
    assert frame[ROW].to_list() == [1, 9]
    assert frame[RAW].to_list() == [good, good]  # byte-order mark and CR gone, nothing else
    reasons = dict(zip(rejected["source_row"].to_list(), rejected["reason"].to_list()))
    assert reasons == {4: "unparseable", 5: "unparseable", 6: "unparseable", 7: "unparseable", 8: "unparseable", 10: "non_utf8"}
    raws = dict(zip(rejected["source_row"].to_list(), rejected["raw"].to_list()))
    assert [raws[r] for r in (4, 5, 6, 7, 8)] == ["{not json", "[1, 2]", "null", '{"a": NaN}', '{"a": 1} trailing']
    non_utf8 = rejected.filter(pl.col("reason") == "non_utf8").row(0, named=True)
    assert non_utf8["raw_bytes"] == b'{"model_a": "\xff\xfe", "model_b": "y"}'
    assert rejected.filter(pl.col("reason") != "non_utf8")["raw_bytes"].null_count() == 5


def test_jsonl_scalars_are_text_whatever_their_neighbours(tmp_path):
    """A value reads the same beside any other rows: 1 stays "1" next to 1.5, true next to 1 does not fail."""
    path = tmp_path / "v.jsonl"
    rows = [{"turn": 1, "anony": True, "score": 1}, {"turn": "abc", "anony": 1, "score": 1.5}, {"turn": 2.0, "anony": "no"}]
    path.write_text("\n".join(json.dumps(r) for r in rows))
    _, frame, rejected = batches(path, "jsonl")
    assert rejected.height == 0
    assert frame["turn"].to_list() == ["1", "abc", "2"]
    assert frame["anony"].to_list() == ["true", "1", "no"]
    assert frame["score"].to_list() == ["1", "1.5", None]


def test_jsonl_nested_values_with_different_shapes_keep_exact_json(tmp_path):
    """A field that is an object in one row and a list or a string in another cannot have one type: it is
    read row by row, as exact JSON text (polars' own text rendering would corrupt escapes)."""
    path = tmp_path / "v.jsonl"
    text = 'tab\t "q" back\\slash\nnl'
    rows = [{"m": {"a": [1]}, "c": [{"role": "user", "content": text}]}, {"m": {"a": {"b": 1}}, "c": "junk"}, {"m": "plain", "c": ["x"]}]
    path.write_text("\n".join(json.dumps(r) for r in rows))
    _, frame, rejected = batches(path, "jsonl")
    assert rejected.height == 0
    assert [json.loads(v) if v.startswith(("{", "[")) else v for v in frame["m"].to_list()] == [{"a": [1]}, {"a": {"b": 1}}, "plain"]
    assert json.loads(frame["c"][0]) == [{"role": "user", "content": text}]
    assert frame["c"][1] == "junk"


def test_jsonl_number_out_of_range_does_not_spoil_its_batch(tmp_path):
    """polars refuses 1e400 (valid JSON); the batch is then read line by line and reads the same."""
    path = tmp_path / "v.jsonl"
    path.write_text('{"a": 1, "b": {"c": 1.5}}\n{"a": 1e400}\n{"a": 2.0, "b": [true]}\n')
    _, frame, rejected = batches(path, "jsonl")
    assert rejected.height == 0
    assert frame["a"].to_list() == ["1", "inf", "2"]
    assert frame["b"].to_list() == ['{"c":1.5}', None, "[true]"]


def test_jsonl_batches_bound_rows_and_number_across_them(tmp_path):
    path = tmp_path / "v.jsonl"
    path.write_text("\n".join(json.dumps({"i": i}) for i in range(10)) + "\n")
    got, frame, _ = batches(path, "jsonl", batch_rows=3)
    assert [b.frame.height for b in got] == [3, 3, 3, 1]
    assert frame[ROW].to_list() == list(range(1, 11))


_GOOD_LINES = [b'{"model_a": "x", "n": 1, "c": [{"role": "user", "content": "hi"}]}', b'{"model_a": "\xc3\xa9", "m": {"k": 1.5}}',
               b'{"model_a": "y", "n": "2", "m": {"j": true}}', b"{}"]
_BAD_LINES = [b"{not json", b"[1, 2]", b"null", b'{"a": NaN}', b'{"a": 1} trailing', b'{"a": "\xff"}', b'{"a":']
_ENDS = [b"\n", b"\r\n", b"\r\r\n", b"\n\n", b"\n \t\n", b"\n\x0c\n"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(_GOOD_LINES + _BAD_LINES), st.sampled_from(_ENDS)), max_size=40), st.booleans(),
       st.booleans(), st.integers(1, 7), st.integers(1, 300))
def test_jsonl_lines_read_a_block_at_a_time_number_and_split_like_python(tmp_path, lines, bom, last_end, batch_rows, batch_bytes):
    """Whatever the blocks the file is read in (a line, a CRLF or a byte-order mark cut between two), every
    non-blank line is a row or a quarantined row, numbered by physical line, batched as one line at a time would."""
    from arena_cli.io import readers

    data = (b"\xef\xbb\xbf" if bom else b"") + b"".join(line + end for line, end in lines)
    if lines and not last_end:
        data = data.removesuffix(lines[-1][1])
    path = tmp_path / "v.jsonl"
    path.write_bytes(data)
    physical = data.removeprefix(b"\xef\xbb\xbf").split(b"\n")
    expected = {number: line.rstrip(b"\r") for number, line in enumerate(physical, start=1) if line.rstrip(b"\r").strip()}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(readers, "JSONL_READ_BYTES", 1)
        got = list(read_batches(path, "jsonl", batch_rows, None, batch_bytes))
    whole = list(read_batches(path, "jsonl", batch_rows, None, batch_bytes))
    assert [(b.frame[ROW].to_list(), b.rejected["source_row"].to_list()) for b in got] == [
        (b.frame[ROW].to_list(), b.rejected["source_row"].to_list()) for b in whole]
    sizes, size = [], 0  # lines per batch, as a line at a time would cut them
    for line in expected.values():
        size += len(line) + 1
        if not sizes or sizes[-1][0] >= batch_rows or sizes[-1][1] >= batch_bytes:
            sizes.append([0, 0])
        sizes[-1] = [sizes[-1][0] + 1, sizes[-1][1] + len(line) + 1]
    assert [b.frame.height + b.rejected.height for b in got] == [n for n, _ in sizes]
    rows = {r: raw.encode() for b in got for r, raw in zip(b.frame[ROW], b.frame[RAW])}
    rows |= {r: raw_bytes or raw.encode() for b in got for r, raw, raw_bytes in b.rejected.select("source_row", "raw", "raw_bytes").rows()}
    assert rows == expected


def test_jsonl_a_bad_line_leaves_its_neighbours_read_as_in_a_clean_batch(tmp_path):
    """Only the lines at fault are parsed one by one: the good lines of a batch with junk in it read exactly as
    without the junk (nested fields typed, not turned into text)."""
    good = [b'{"model_a": "x", "c": [{"role": "user", "content": "a\\tb"}], "m": {"k": 1}}', b'{"model_a": "y", "m": {"j": "z"}}'] * 300
    clean, junky = tmp_path / "clean.jsonl", tmp_path / "junky.jsonl"
    clean.write_bytes(b"\n".join(good) + b"\n")
    junk = [b"{not json", b"[1]", b'{"a": NaN}']
    junky.write_bytes(b"".join(line + b"\n" + (junk[i % 3] + b"\n" if i % 97 == 5 else b"") for i, line in enumerate(good)))
    _, clean_frame, _ = batches(clean, "jsonl", batch_rows=10_000)
    _, junky_frame, rejected = batches(junky, "jsonl", batch_rows=10_000)
    assert rejected.height == 7 and set(rejected["reason"]) == {"unparseable"}
    assert junky_frame.schema == clean_frame.schema and junky_frame["c"].dtype == pl.List(pl.Struct({"role": pl.String, "content": pl.String}))
    assert junky_frame.drop(ROW).equals(clean_frame.drop(ROW))


def test_gzip_jsonl_reads_like_plain(tmp_path):
    lines = "\n".join(json.dumps({"model_a": "x", "i": i}) for i in range(5)) + "\n"
    (tmp_path / "v.jsonl").write_text(lines)
    with gzip.open(tmp_path / "v.jsonl.gz", "wt") as out:
        out.write(lines)
    assert batches(tmp_path / "v.jsonl.gz", "jsonl")[1].equals(batches(tmp_path / "v.jsonl", "jsonl")[1])


def test_json_array_records_numbered_and_non_objects_quarantined(tmp_path):
    path = tmp_path / "v.json"
    path.write_text(json.dumps([{"model_a": "x", "n": 1}, 5, {"model_a": "é", "n": 2}, ["a"]]))
    _, frame, rejected = batches(path, "json")
    assert frame[ROW].to_list() == [1, 3]
    assert frame["model_a"].to_list() == ["x", "é"]
    assert rejected["source_row"].to_list() == [2, 4]
    assert set(rejected["reason"]) == {"unparseable"}


@pytest.mark.parametrize(("content", "message"), [
    (b"[{", "not valid JSON"), (b'[{"a": "\xff"}]', "not UTF-8"), (b'"x"', "JSON array"),
    (b'{"a": 1}\n{"a": 2}\n', "it looks like JSON lines: use --input-format jsonl"),
    (b'[{"a": ' + b"[" * 100_000, "not valid JSON .Unterminated array or object: line 1 column 2 "),  # cut off, too deep for Python to decode
])
def test_json_array_that_cannot_be_parsed_whole_is_an_input_error(tmp_path, content, message):
    path = tmp_path / "v.json"
    path.write_bytes(content)
    with pytest.raises(InputError, match=message):
        batches(path, "json")


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**20, 10**20) | st.floats(allow_nan=False) | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3), max_leaves=8)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(json_values, max_size=6), st.sampled_from([None, 0, 2]), st.booleans(), st.integers(1, 12), st.data())
def test_json_array_read_a_piece_at_a_time_reads_as_if_whole(tmp_path, records, indent, bom, window, data):
    """Records cut by the window (in a number, a string, a character of several bytes) read as from one piece;
    a damaged document gives json.loads' message of the whole document, position included."""
    from arena_cli.io import readers

    text = (b"\xef\xbb\xbf" if bom else b"") + json.dumps(records, indent=indent, ensure_ascii=False).encode()
    if data.draw(st.booleans(), label="damaged"):
        at = data.draw(st.integers(0, len(text)), label="at")
        text = text[:at] + data.draw(st.sampled_from([b"", b"x", b"\xff", b",", b"}", b"\xe6\x97"]), label="with") + text[at + 1 :]
    path = tmp_path / "v.json"
    path.write_bytes(text)
    try:
        whole = json.loads(text)
    except (ValueError, UnicodeDecodeError) as error:
        kind = "not UTF-8" if isinstance(error, UnicodeDecodeError) else "not valid JSON"
        expected: str | None = f"{path}: {kind} ({error}); "
    else:
        expected = None if isinstance(whole, list) or not text.strip() or isinstance(whole, dict) else "expected a JSON array"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(readers, "JSON_READ_BYTES", window)
        try:
            got = [(b.frame, b.rejected) for b in read_batches(path, "json", 2)]
        except InputError as error:
            assert expected is not None and str(error).startswith(expected), (str(error), expected)
            return
    assert expected is None
    in_one_piece = [(b.frame, b.rejected) for b in read_batches(path, "json", 2)]
    assert len(got) == len(in_one_piece)
    for (frame, rejected), (frame1, rejected1) in zip(got, in_one_piece):
        assert frame.equals(frame1) and rejected.equals(rejected1)


def test_csv_quoting_ragged_rows_and_exact_raw_bytes(tmp_path):
    path = tmp_path / "v.csv"
    path.write_bytes(
        b"\xef\xbb\xbfmodel_a,model_b,winner\r\n"
        b'x,"multi\r\nline",tie\r\n'
        b"x,y\r\n"
        b'"q","y",\xff\r\n'
        b"x,,model_b\r\n"
    )
    _, frame, rejected = batches(path, "csv")
    assert frame.columns[:3] == ["model_a", "model_b", "winner"]
    assert frame[ROW].to_list() == [2, 6]
    assert frame["model_b"].to_list() == ["multi\r\nline", None]  # an empty cell is absent
    assert frame[RAW].to_list() == ['x,"multi\r\nline",tie', "x,,model_b"]  # the lines as written
    assert rejected.select("source_row", "reason").rows() == [(4, "unparseable"), (5, "non_utf8")]
    assert rejected["raw"][0] == "x,y"
    assert rejected["raw_bytes"][1] == b'"q","y",\xff'  # exact, quotes included


def test_a_byte_order_mark_before_a_quoted_header_is_no_part_of_its_first_name(tmp_path):
    """Writers that quote every field (R's write.csv) and start with a byte-order mark: the first name is read
    without its quotes (they were kept: `"model_a"`, and no model_a column was found)."""
    path = tmp_path / "v.csv"
    path.write_bytes(b'\xef\xbb\xbf"model_a","model_b","winner"\n"x","y","tie"\n')
    _, frame, rejected = batches(path, "csv")
    assert frame.columns[:3] == ["model_a", "model_b", "winner"] and frame["model_a"].to_list() == ["x"] and rejected.height == 0


def test_tsv_and_duplicate_header(tmp_path):
    (tmp_path / "v.tsv").write_text("model_a\tmodel_b\nx\ty,z\n")
    assert batches(tmp_path / "v.tsv", "csv")[1]["model_b"].to_list() == ["y,z"]
    (tmp_path / "d.csv").write_text("a,a\n1,2\n")
    with pytest.raises(InputError, match="duplicate column"):
        batches(tmp_path / "d.csv", "csv")


def test_csv_unterminated_quote_keeps_everything_it_swallowed(tmp_path):
    path = tmp_path / "v.csv"
    path.write_text('model_a,model_b,winner\nx,y,tie\n"x,y,tie\nx,y,tie\n')
    _, frame, rejected = batches(path, "csv")
    assert frame.height == 1
    assert rejected["raw"].to_list() == ['"x,y,tie\nx,y,tie']


def test_parquet_keeps_types_and_numbers_records(tmp_path):
    path = tmp_path / "v.parquet"
    pl.DataFrame({"model_a": ["x", "y", "z"], "turn": [1, 2, 3]}).write_parquet(path)
    got, frame, rejected = batches(path, "parquet", batch_rows=2)
    assert [b.frame.height for b in got] == [2, 1]
    assert frame[ROW].to_list() == [1, 2, 3]
    assert frame.schema["turn"] == pl.Int64
    assert rejected.height == 0


def test_unreadable_parquet_is_an_input_error(tmp_path):
    path = tmp_path / "v.parquet"
    path.write_bytes(b"not parquet")
    with pytest.raises(InputError, match="parquet"):
        batches(path, "parquet")
