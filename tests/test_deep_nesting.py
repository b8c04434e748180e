"""Hostile nesting: a JSON line or array record nested deeper than :data:`~arena_cli.io.json_bytes.DEEPEST` levels is
quarantined by every read (its reason and raw text kept, the rows around it read), whatever the file's shape; none
crashes the process (polars' read with inferred types overflows its stack on such lines), gives an internal error
(Python's json module gives up on them) or takes seconds (polars' time grows with the square of the depth)."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import arena_cli
from arena_cli.cli import app
from arena_cli.io import json_bytes, readers
from arena_cli.io.json_bytes import DEEPEST, Brackets, nesting
from arena_cli.io.readers import INFERRED_DEEPEST, read_batches
from arena_cli.io.store import Store

runner = CliRunner()
TOO_DEEP = f"nested deeper than {DEEPEST} levels"
GOOD = [{"model_a": a, "model_b": b, "winner": "model_a"} for a, b in ["ab", "ba", "bc", "cb", "ca", "ac"]]


def nested(levels: int, kind: str) -> str:
    """A JSON value nested ``levels`` deep, as Python's json module writes it."""
    if kind == "lists":
        return "[" * levels + "]" * levels
    if kind == "objects":
        return '{"a": ' * levels + "1" + "}" * levels
    return '[{"a": ' * (levels // 2) + ("[1]" if levels % 2 else "1") + "}]" * (levels // 2)


def vote(levels: int, kind: str) -> str:
    """A vote whose line nests ``levels`` deep, as Python's json module writes it."""
    return '{"model_a": "a", "model_b": "c", "winner": "tie", "x": %s}' % nested(levels - 1, kind)


def write(path: Path, lines: list[str]) -> Path:
    """The lines as JSON lines or a JSON array (``path``'s name says), gzip-compressed when it ends in ``.gz``."""
    text = "".join(line + "\n" for line in lines) if ".jsonl" in path.name else "[" + ",\n".join(lines) + "]"
    path.write_bytes(gzip.compress(text.encode()) if path.name.endswith(".gz") else text.encode())
    return path


def arena(*args):
    return runner.invoke(app, [str(a) for a in args])


CASES = {  # levels of the hostile line, its kind, and whether it is quarantined
    "as deep as may be": (DEEPEST, "lists", False),
    "one level too deep": (DEEPEST + 1, "objects", True),
    "too deep for Python's json module": (5000, "mixed", True),
}


@pytest.mark.parametrize("name", ["votes.jsonl", "votes.json", "votes.jsonl.gz", "votes.json.gz"])
@pytest.mark.parametrize("alone", [True, False])
@pytest.mark.parametrize("case", CASES)
def test_a_line_nested_too_deeply_is_quarantined_by_ingest_and_skipped_by_fit(tmp_path, name, alone, case):
    levels, kind, quarantined = CASES[case]
    hostile = vote(levels, kind)
    lines = [hostile] if alone else [*map(json.dumps, GOOD[:2]), hostile, *map(json.dumps, GOOD[2:])]
    path = write(tmp_path / name, lines)
    row = lines.index(hostile) + 1

    ingested = arena("ingest", path, "--store", tmp_path / "store", "--format", "json")
    assert ingested.exit_code == 0, ingested.output
    (summary,) = json.loads(ingested.stdout)["tables"]["sources"]
    assert (summary["rows_read"], summary["stored"], summary["quarantined"]) == (len(lines), len(lines) - quarantined, quarantined)
    rejected = Store.open(tmp_path / "store").read("quarantine", ["source_row", "reason", "detail", "raw"])
    assert (rejected.rows() if rejected is not None else []) == ([(row, "unparseable", TOO_DEEP, hostile)] if quarantined else [])

    fitted = arena("fit", path, "--ci", "none", "--min-battles", "1")
    assert "Traceback" not in fitted.output and "internal error" not in fitted.stderr
    if quarantined:
        assert f"row {row}, {TOO_DEEP}" in fitted.stderr
    assert fitted.exit_code == (6 if alone and quarantined else 0), fitted.output


def test_the_lines_that_crashed_polars_are_read_in_a_moment(tmp_path):
    """Two lines with a field nested 900 levels deep (polars' read with the types it infers overflowed its stack:
    the process died after half a minute), and one nested 600 levels of objects (the same, from one line): run
    apart, so that a crash fails the test, not the run."""
    lists = write(tmp_path / "lists.jsonl", [json.dumps(GOOD[0]), vote(901, "lists"), vote(901, "lists"), *map(json.dumps, GOOD[1:])])
    objects = write(tmp_path / "objects.json", [vote(601, "objects")])
    root = Path(arena_cli.__file__).resolve().parents[1]  # the code under test, not an installed copy
    done = subprocess.run([sys.executable, "-m", "arena_cli", "fit", str(lists), str(objects), "--ci", "none", "--min-battles", "1"],
                          cwd=root, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert f"3 row(s) skipped: unparseable 3 (first: {lists} row 2, {TOO_DEEP}" in done.stderr


def test_every_array_record_about_as_deep_as_python_decodes_is_quarantined(tmp_path):
    """Around the depth where Python's json module gives up, a record is decoded but not written again, or not
    decoded: either way it is quarantined, as the file spells it (an internal error, or the whole file refused,
    before)."""
    limit = next(levels for levels in range(200, 5000, 10) if not _decodes("[" * levels + "]" * levels))
    path = tmp_path / "votes.json"
    for levels in range(limit - 60, limit + 3):
        write(path, [json.dumps(GOOD[0]), vote(levels, "lists")])
        (batch,) = read_batches(path, "json")
        assert batch.frame[readers.ROW].to_list() == [1]
        assert batch.rejected.select("source_row", "detail", "raw").rows() == [(2, TOO_DEEP, vote(levels, "lists"))], levels


def _decodes(text: str) -> bool:
    try:
        json.loads(text)
    except RecursionError:
        return False
    return True


def test_a_record_python_decodes_but_cannot_write_again_is_quarantined_as_spelt(tmp_path, monkeypatch):
    def too_deep(record):
        raise RecursionError

    monkeypatch.setattr(readers, "_record_line", too_deep)
    record = '{"model_a":  "a",\n "x": %s}' % nested(DEEPEST, "objects")
    (batch,) = read_batches(write(tmp_path / "votes.json", [record]), "json")
    assert batch.rejected.select("detail", "raw").rows() == [(TOO_DEEP, record.replace("\n", " "))]


@pytest.mark.parametrize("window", [7, 1 << 20])
def test_a_record_too_deep_to_decode_is_found_whole_on_its_bytes(tmp_path, monkeypatch, window):
    """Its end found by its brackets outside strings (strings with brackets, quotes and backslashes; laid out on
    lines; read a window at a time), the records after it read."""
    monkeypatch.setattr(readers, "JSON_READ_BYTES", window)
    tricky = json.dumps({"s": '"]}\\"[{' + "\\" * 5, "é": "😀 }"})
    deep = '{"model_a": "a", "t": %s,\n  "x": %s\n}' % (tricky, "[" * 3000 + tricky + "]" * 3000)
    path = write(tmp_path / "votes.json", [json.dumps(GOOD[0]), deep, json.dumps(GOOD[1]), deep, json.dumps(GOOD[2])])
    batches = list(read_batches(path, "json", batch_rows=2))
    assert [row for batch in batches for row in batch.frame[readers.ROW].to_list()] == [1, 3, 5]
    rejected = pl.concat([batch.rejected for batch in batches])
    assert rejected.select("source_row", "detail", "raw").rows() == [(row, TOO_DEEP, deep.replace("\n", " ")) for row in (2, 4)]


def test_a_batch_nested_deeper_than_polars_infers_fast_is_read_by_python(tmp_path):
    """Up to :data:`INFERRED_DEEPEST` levels polars reads the batch with the types it infers (a nested field keeps
    its type); a line nested deeper has Python's json module read its batch (every field as text), whose battles
    are the same."""
    shallow = write(tmp_path / "shallow.jsonl", [json.dumps(GOOD[0]), vote(INFERRED_DEEPEST, "mixed")])
    deep = write(tmp_path / "deep.jsonl", [json.dumps(GOOD[0]), vote(INFERRED_DEEPEST + 1, "mixed")])
    assert next(iter(read_batches(shallow, "jsonl"))).frame["x"].dtype.is_nested()
    frame = next(iter(read_batches(deep, "jsonl"))).frame
    assert frame["x"].to_list() == [None, nested(INFERRED_DEEPEST, "mixed").replace(" ", "")]
    assert frame["model_a"].to_list() == ["a", "a"]


# -- how deep each line nests, on its bytes ------------------------------------------------------------------------


def reference_depths(block: bytes) -> list[int]:
    """Byte by byte: a quote after an odd run of backslashes is escaped (in a string or not), brackets count outside
    strings, every line on its own."""
    depths = []
    for line in block.split(b"\n"):
        depth = deepest = 0
        inside = escaped = False
        for byte in line:
            if byte == ord("\\"):
                escaped = not escaped
                continue
            if byte == ord('"') and not escaped:
                inside = not inside
            elif not inside and byte in b"[{":
                depth += 1
                deepest = max(deepest, depth)
            elif not inside and byte in b"]}":
                depth -= 1
            escaped = False
        depths.append(deepest)
    return depths


#: What a line's depth depends on, and other bytes.
ALPHABET = b'[]{}"\\\\\n a'


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=80).map(lambda data: bytes(ALPHABET[byte % len(ALPHABET)] for byte in data)), st.integers(1, 9), st.integers(0, 3),
       st.integers(1, 6))
def test_nesting_is_exact_for_lines_past_the_floor_however_the_bytes_are_cut(block, piece, floor, deepest):
    """Up to the limit (here ``deepest``, a line nested deeper given as one level more, however much deeper)."""
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(json_bytes, "SCAN_BYTES", piece)
        patched.setattr(json_bytes, "DEEPEST", deepest)
        found = nesting(block, floor)
    expected = np.minimum(reference_depths(block), deepest + 1)
    counts = np.array([line.count(b"[") + line.count(b"{") for line in block.split(b"\n")])
    past = counts > floor
    assert np.array_equal(found[past], expected[past])
    assert np.array_equal(found[~past], counts[~past]) and (found[~past] <= floor).all()


def test_a_long_line_is_scanned_a_piece_at_a_time_and_no_further_than_it_must():
    """A line of millions of brackets (its marks as positions would take gigabytes, and seconds to scan), and the
    lines after it."""
    block = b'{"a": 1}\n' + b"[" * 3_000_000 + b'"]' + b"]" * 3_000_000 + b'\n{"b": [[]], "c": "[[[["}'
    assert nesting(block, 0).tolist() == [1, DEEPEST + 1, 3]


def test_brackets_carry_what_a_piece_leaves_open():
    """A string, an escape and the depth left open at a piece's end, for a text that is no lines (newlines white space)."""
    text = b'[{"a": "x\\\\\\"]\n", "b": [\n[]]}]'
    brackets = Brackets(lines=False)
    depths = np.concatenate([brackets.scan(np.frombuffer(text[at : at + 3], dtype=np.uint8))[2] for at in range(0, len(text), 3)])
    assert depths.tolist() == [1, 2, 2, 3, 4, 3, 2, 1, 0]  # the third within a string


@pytest.mark.parametrize("content", [b"[" * 100_000 + b"]" * 100_000, vote(100_000, "objects").encode()])
def test_a_file_of_one_value_nested_too_deeply_is_one_record_to_quarantine(tmp_path, content):
    """An array of arrays 100,000 deep (its one record not even an object), or the one object a file holds."""
    path = tmp_path / "votes.json"
    path.write_bytes(content)
    (batch,) = read_batches(path, "json")
    assert batch.frame.height == 0 and batch.rejected.select("source_row", "detail").rows() == [(1, TOO_DEEP)]
