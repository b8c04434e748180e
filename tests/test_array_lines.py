"""Splitting a JSON array into JSON lines on its bytes (:mod:`arena_cli.io.array_lines`): each record one line, in
order, whatever its strings hold and however the file is laid out or cut into blocks; and word (None) as soon as
the file is not an array of objects, or holds what the batch reader reads otherwise."""

from __future__ import annotations

import io
import json
import tracemalloc

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arena_cli.io import array_lines as module
from arena_cli.io.array_lines import array_lines


def _split(data: bytes, size: int = 1 << 20, piece: int = 100) -> list[bytes | None]:
    """The blocks ``data`` is split into, each its pieces joined, asserting they are whole lines."""
    blocks = list(array_lines(io.BytesIO(data), size, piece))
    assert all(block.pieces and all(p.endswith(b"\n") for p in block.pieces) for block in blocks if block is not None)
    assert all(block.lines == b"".join(block.pieces).count(b"\n") for block in blocks if block is not None)
    return [None if block is None else b"".join(block.pieces) for block in blocks]


def _dumps(records: list, layout: int | str | None = None, ensure_ascii: bool = True) -> bytes:
    """``records`` as a JSON array, as :func:`json.dumps` writes it with the ``indent`` ``layout``, or with
    ``"lines"`` one record a line (JSON lines joined by commas)."""
    if layout == "lines":
        return ("[" + ",\n".join(json.dumps(record, ensure_ascii=ensure_ascii) for record in records) + "]\n").encode()
    return json.dumps(records, indent=layout, ensure_ascii=ensure_ascii).encode()


def _records(blocks: list[bytes | None]) -> list:
    """The records the lines hold (each line one JSON object), asserting each block is whole lines."""
    assert None not in blocks
    assert all(block and block.endswith(b"\n") for block in blocks)  # type: ignore[union-attr]
    lines = b"".join(blocks).split(b"\n")[:-1]  # type: ignore[arg-type]
    return [json.loads(line) for line in lines]


#: Strings a JSON text may hold that a splitter on bytes could mistake for structure.
TRICKY = [
    'say "hi"', "a\\", "a\\\\", '\\"', '\\\\"', "\\" * 7 + '"', "\\" * 1000 + '"' + "\\" * 999, "},{", "],[", "[{", "}]",
    ",", "{[,]}", "\n\r\t", "quote at end\"", "é😀", "\u2028", "", '"', "\\u0022",
]
RECORDS = [
    {"model_a": "a", "model_b": "b", "text": text, "nested": {"list": [1, {"x": [text, []]}], "empty": {}}, "n": i}
    for i, text in enumerate(TRICKY)
]


@pytest.mark.parametrize("layout", [None, 2, "\t", "lines"])
def test_records_with_tricky_strings_become_one_line_each(layout):
    data = _dumps(RECORDS, layout)
    assert _records(_split(data)) == RECORDS
    assert _records(_split(data, 200)) == RECORDS


@pytest.mark.parametrize("indent", [None, 2])
def test_a_block_may_end_at_any_byte(indent):
    """However the file is cut into blocks (a block boundary at every position), the same records, in order."""
    records = [record for record in RECORDS if len(record["text"]) < 10][:8]
    data = b"\xef\xbb\xbf \r\n" + json.dumps(records, indent=indent, ensure_ascii=False).replace("\n", "\r\n").encode() + b" \n"
    for size in range(1, len(data) + 1):
        assert _records(_split(data, size)) == records, size


def test_a_block_of_one_record_a_line_may_end_at_any_byte():
    """Blocks laid out as one record a line are split at their line ends, the lines made as the scan of their
    strings makes them (the file's last block is scanned): the same lines, byte for byte."""
    records = [record for record in RECORDS if len(record["text"]) < 10][:8]
    data = _dumps(records, "lines")
    whole = b"".join(_split(data))
    assert _records([whole]) == records
    for size in range(1, len(data) + 1):
        assert b"".join(_split(data, size)) == whole, size


def test_a_block_of_one_record_a_line_is_split_without_a_scan_of_its_strings(monkeypatch):
    """Every block but the file's last: the scan of strings and brackets (:func:`marks`) sees only the last."""
    records = [{"n": n, "text": "},\\n{" * n} for n in range(200)]
    data = _dumps(records, "lines")
    scanned: list[int] = []
    marks = module.marks
    monkeypatch.setattr(module, "marks", lambda text, *most: scanned.append(len(text)) or marks(text, *most))
    blocks = _split(data, 1024)
    assert _records(blocks) == records and len(blocks) > 10
    assert len(set(scanned)) == 1 and scanned[0] < 2048


@pytest.mark.parametrize("levels", [module.DEEPEST, module.DEEPEST + 1])
def test_a_record_of_one_a_line_nested_too_deeply_is_made_its_line_for_the_streamed_read_to_find(levels):
    """In a block split at its line ends (not the file's last), a record is made a line however deep it nests; the
    streamed read then finds one too deep on the lines, as on JSON lines."""
    from arena_cli.io.streamed_jsonl import _too_deep

    records = [{"n": 1}, {"a": json.loads("[" * (levels - 1) + "]" * (levels - 1))}, {"n": 2}, {"n": 3}]
    data = _dumps(records, "lines")
    blocks = _split(data, len(data) - 12)
    assert _records(blocks) == records
    pieces = [block for block in blocks if block is not None]
    assert _too_deep(pieces) == (levels > module.DEEPEST)


def test_a_record_longer_than_a_block_is_read_whole():
    records = [{"text": "x" * 5000}, {"text": "\\" * 4001 + '"'}, {"n": 1}]
    assert _records(_split(json.dumps(records).encode(), 64)) == records


@pytest.mark.parametrize("data", [b"[]", b"[ ]", b" [\n]\n", b"\xef\xbb\xbf[]"])
def test_an_empty_array_has_no_lines(data):
    assert _split(data) == [] and _split(data, 1) == []


def test_lines_keep_the_records_bytes_but_line_ends():
    """Only the array's brackets, the commas between records and line ends outside strings change (to spaces and
    newlines): the lines are the file's bytes, byte for byte otherwise."""
    data = b'[\r\n  {"a": "\\u00e9 [,]"},\n\t{"b" :\n1.50E+3}\n]'
    assert _split(data) == [b'     {"a": "\\u00e9 [,]"}\n \t{"b" : 1.50E+3} \n']


@pytest.mark.parametrize("data", [
    b"", b"  \n", b"{}", b'{"a": 1}', b"17", b'"[{}]"', b"x[{}]", b'"a" [{}]',  # not an array
    b"[{}", b'[{"a": "x"}, {"b"', b"[{},", b"[",  # cut off
    b"[{}] x", b"[{}][]", b"[{}]]", b"[]]", b"[{}] ,",  # text after the array
    b"[1]", b'["x"]', b"[null]", b"[[]]", b"[{}, 1]", b'[{}, "x"]', b"[{}, [1]]", b"[true, {}]",  # not objects
    b"[,{}]", b"[{},,{}]", b"[{},]", b"[{} {}]", b"[{}\n{}]",  # commas
    b"[{]", b"[{}}]", b'[{"a": [1}]', b'[{"a": 1]]', b"[}]",  # brackets
    b'[{"a": "x\ny"}]', b'[{"a": "x\ry"}]', b'[{"a": "x\ty"}]', b'[{"a": "\x00"}]', b'[{"a": "\x1f"}]',  # raw control characters in strings
    b"[{}\x0c]", b"\x0b[{}]", b"[{}]\x00",  # control characters that are no white space
    b'[{"a": "x\\"}]', b'[{"a": "\\\\\\"}]',  # a string escaped to its end
    b'[{"a": ' + b"[" * module.DEEPEST + b"]" * module.DEEPEST + b"}]",  # a record nested too deeply
])
def test_what_is_no_array_of_objects_read_alike_is_said(data):
    """Each gives None, at once or after the lines before it, with blocks of any size."""
    for size in (1, 3, 1 << 20):
        blocks = _split(data, size)
        assert blocks[-1:] == [None], (size, blocks)


def test_nesting_up_to_the_limit_is_split():
    """A record nested as deeply as may be (the array's own bracket not counted)."""
    deep = {"a": json.loads("[" * (module.DEEPEST - 1) + "]" * (module.DEEPEST - 1))}
    assert _records(_split(json.dumps([deep, deep]).encode())) == [deep, deep]


def test_brackets_packed_densely_but_not_too_deep_are_split():
    records = [{"x": [[]] * 5000, "y": "[" * 1000}, {"x": [{}] * 3000}]
    assert _records(_split(json.dumps(records).encode(), 4096)) == records


def test_a_record_of_brackets_nested_too_deeply_is_refused_in_little_memory():
    """Its brackets are not all kept as positions (sixteen bytes each, and more once read): the block is first
    checked for nesting a piece at a time."""
    data = b'[{"a": ' + b"[" * 4_000_000 + b"]" * 4_000_000 + b"}]"
    tracemalloc.start()
    try:
        assert _split(data, 1 << 23)[-1:] == [None]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 12 * len(data)


def test_a_long_run_of_backslashes_is_counted_whole():
    """A quote after 10^5 backslashes: escaped when the run is odd (it is then in the string), not when even."""
    even = "\\" * 100_000
    records = [{"a": even, "b": even + '"'}, {"c": "\\" + even}]
    data = json.dumps(records).encode()
    assert data.count(b"\\" * 200_001 + b'"')  # a run of 2*10^5 + 1 backslashes before an escaped quote
    assert _records(_split(data)) == records
    assert _records(_split(data, 4096)) == records


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(st.characters(blacklist_categories=("Cs",)) | st.sampled_from(list('"\\[]{},:\n'))),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.dictionaries(st.text(max_size=8), JSON_VALUES, max_size=5), max_size=6),
    st.sampled_from([None, 0, 2, "\t", "lines"]), st.booleans(), st.integers(1, 200),
)
def test_any_array_of_objects_is_split_into_its_records(records, layout, ascii_only, size):
    data = _dumps(records, layout, ascii_only)
    assert _records(_split(data, size)) == records


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")  # as polars reads it


def _strict(line: bytes) -> object:
    return json.loads(line, parse_constant=_no_constant)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.dictionaries(st.sampled_from(["a", "b,", "c]"]), JSON_VALUES, max_size=3), min_size=1, max_size=4),
    st.sampled_from([None, 2, "lines"]),
    st.lists(st.tuples(st.integers(0, 10**6), st.sampled_from(["insert", "replace", "delete"]), st.sampled_from(list(b'"\\,[]{}\n\r :1ae'))),
             min_size=1, max_size=3),
    st.integers(1, 50),
)
def test_lines_of_a_damaged_array_hold_its_records_when_each_parses(records, layout, damage, size):
    """Damage anywhere (a byte inserted, replaced or deleted): when every line given parses as one JSON object
    (as polars checks each), the file is an array of exactly those objects; otherwise the file was not given."""
    data = bytearray(_dumps(records, layout))
    for at, how, byte in damage:
        at %= len(data) + (how == "insert")
        if how == "insert":
            data.insert(at, byte)
        elif how == "replace" and at < len(data):
            data[at] = byte
        elif at < len(data):
            del data[at]
    blocks = _split(bytes(data), size)
    if None in blocks:
        return
    try:
        lines = [_strict(line) for line in b"".join(blocks).split(b"\n")[:-1]]  # type: ignore[arg-type]
    except ValueError:
        return
    if not all(isinstance(line, dict) for line in lines):
        return
    assert _strict(bytes(data)) == lines
