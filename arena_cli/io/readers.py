"""Containers: turn a file (JSONL, JSON array, CSV, parquet; text optionally compressed) into batches of rows.

A reader yields :class:`RawBatch` objects: the parsed rows as a frame (``__row`` = 1-based line or record
number, ``__raw`` = the original text when cheap to keep) plus the rows it could not parse at all, already in
quarantine form. Batches bound memory: a file of any size is read at most ``batch_rows`` rows and about
``batch_bytes`` bytes at a time (rows of long conversations are few to a batch). What the columns *mean* is decided later, by the dialects in :mod:`arena_cli.io.ingest`.
"""

from __future__ import annotations

import codecs
import csv
import io
import json
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import numpy as np
import polars as pl

if TYPE_CHECKING:
    from polars._typing import PolarsDataType

from arena_cli.errors import InputError
from arena_cli.io.files import check_file, local_path, opened, parquet_content, quiet_stderr, scan_parquet, text_content
from arena_cli.io.footer import RowGroup, row_groups, time_zones
from arena_cli.io.json_bytes import DEEPEST, SCAN_BYTES, Brackets, nesting, positions
from arena_cli.io.options import BATCH_BYTES
from arena_cli.schema import QUARANTINE_SCHEMA, QuarantineReason

ROW = "__row"
RAW = "__raw"
#: The top-level fields of each row given a list or an object, when a batch read by Python's json module
#: (:func:`_python_objects_frame`) renders them as text beside rows that give them text: so that validation tells
#: a model name ``{"n": 1}`` (no name) from the name ``"{\"n\": 1}"``.
NESTED = "__nested"
#: The columns a reader adds to a source's own.
INTERNAL = (ROW, RAW, NESTED)
DEFAULT_BATCH_ROWS = 200_000


def refuse_internal_names(source: str | Path, columns: Iterable[str]) -> None:
    """A source field named as a column the readers add (:data:`INTERNAL`) would collide with it or be taken for
    it: an input error, before anything is read as it."""
    taken = [c for c in columns if c in INTERNAL]
    if taken:
        raise InputError(f"{source}: a field is named {taken[0]}, a name arena-cli keeps for its own use; rename it")


@dataclass(frozen=True)
class RawBatch:
    frame: pl.DataFrame      # source columns + ROW (+ RAW for text containers)
    rejected: pl.DataFrame   # QUARANTINE_SCHEMA rows: unparseable / non-UTF-8 lines


class _Bad:
    """Rows rejected by a container reader, collected in quarantine form."""

    def __init__(self, source: str):
        self.source = source
        self.rows: list[int] = []
        self.reasons: list[str] = []
        self.details: list[str] = []
        self.raws: list[bytes] = []

    def add(self, row: int, reason: QuarantineReason, detail: str, raw: bytes) -> None:
        self.rows.append(row)
        self.reasons.append(reason.value)
        self.details.append(detail)
        self.raws.append(raw)

    def extend_by_row(self, other: _Bad) -> None:
        """Add the rows of ``other`` in the order of their row numbers."""
        for i in sorted(range(len(other.rows)), key=other.rows.__getitem__):
            self.rows.append(other.rows[i])
            self.reasons.append(other.reasons[i])
            self.details.append(other.details[i])
            self.raws.append(other.raws[i])

    def frame(self) -> pl.DataFrame:
        """Quarantine rows: ``raw`` as text (invalid bytes escaped), ``raw_bytes`` exact when not UTF-8."""
        exact = [raw if reason == QuarantineReason.NON_UTF8.value else None for reason, raw in zip(self.reasons, self.raws)]
        return pl.DataFrame(
            {
                "source_file": [self.source] * len(self.rows),
                "source_row": self.rows,
                "reason": self.reasons,
                "detail": self.details,
                "raw": [raw.decode("utf-8", errors="backslashreplace") for raw in self.raws],
                "raw_bytes": exact,
            },
            schema=QUARANTINE_SCHEMA,
        )


class _Uneven(ValueError):
    """The lines of a batch are JSON objects, but polars cannot read them as one frame."""


def _json_objects_frame(data: bytes, lines: pl.Series) -> pl.DataFrame:
    """Parse JSON-object lines into a frame: every scalar field as text, nested fields with inferred types.

    Text for scalars makes a row's parse independent of the rows beside it: polars infers one type per
    column, so a number or a boolean would otherwise read differently depending on its batch (``1`` as
    "1.0" beside a float, or a batch that fails outright on ``true`` beside ``1``). The dialects decode the
    fields they know, reporting a wrong type per row. Nested values (conversations, metadata) keep their
    types because polars' text rendering of them is not JSON: it leaves backslashes and control characters
    unescaped, which would corrupt message texts. So a batch where one field is nested in some rows and
    not in others (polars would render those values as text) raises :class:`_Uneven`, as does one that
    polars splits into other lines than Python does.
    """
    inferred = pl.scan_ndjson(io.BytesIO(data), infer_schema_length=None).collect_schema()
    if not inferred:
        return pl.DataFrame(schema={})
    schema = {k: t if t.is_nested() else pl.String for k, t in inferred.items()}
    frame = pl.read_ndjson(io.BytesIO(data), schema=schema)
    if _rendered_nested(lines, frame, pl.Struct(schema)):
        raise _Uneven("a field is nested in some rows and not in others")
    if frame.width and frame.height != lines.len():
        raise _Uneven(f"read {frame.height} rows from {lines.len()} lines")
    return frame


def _rendered_nested(lines: pl.Series, frame: pl.DataFrame, dtype: pl.Struct) -> bool:
    """Whether polars had to render some nested value as text: a text slot of the inferred type (a field,
    at any depth, or the items of a list of texts, at any depth) that holds an object or array in some row.

    Named text slots are found on the lines themselves (``"name": {`` or ``"name": [``; a nested key of
    the same name gives a false alarm, which only costs the slow path); lists of texts by their items (a message's
    content a list of texts in one line gives the others' parts as texts: ``[{"text": "hi"}]``).
    """
    names: set[str] = set()
    text_lists: list[tuple[str, ...]] = []  # each: its column, then the fields and lists (``""``) down to its items

    def walk(dtype: PolarsDataType, name: str | None, path: tuple[str, ...]) -> None:
        if dtype == pl.String and name is not None:
            names.add(name)
        elif isinstance(dtype, pl.Struct):
            for field in dtype.fields:
                walk(field.dtype, field.name, (*path, field.name))
        elif isinstance(dtype, pl.List):
            if dtype.inner == pl.String:
                text_lists.append((*path, ""))
            walk(dtype.inner, None, (*path, ""))

    for field in dtype.fields:
        walk(field.dtype, field.name, (field.name,))
    if names and lines.str.contains('"(?:' + "|".join(re.escape(n) for n in sorted(names)) + r')":\s*[\[{]').any():
        return True

    def items(path: tuple[str, ...]) -> pl.Series:
        values = frame[path[0]]
        for step in path[1:]:
            values = values.explode() if step == "" else values.struct.field(step)
        return values

    def rendered(values: pl.Series) -> bool:
        return bool((values.str.starts_with("{") | values.str.starts_with("[")).any())

    return any(rendered(items(path)) for path in text_lists)


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not valid JSON")


def _as_text(value: Any) -> str | None:
    """A parsed JSON value as the text the fast path gives: scalars as polars renders them, nested values
    as exact compact JSON."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return str(int(value))
    return str(value)


def _first_values(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object as polars reads it: a key given twice has its first value (Python's json would keep the
    last), so that every read of a record gives the same fields."""
    value = dict(pairs)
    if len(value) < len(pairs):
        value = {}
        for key, item in pairs:
            value.setdefault(key, item)
    return value


#: How Python's json module decodes a JSON array's records (and a line polars cannot read): keys' first values.
_DECODER = json.JSONDecoder(object_pairs_hook=_first_values)


def _json_object(text: str) -> dict:
    """One line parsed as Python's json module does, raising ValueError unless it is a JSON object of text
    that can be written back as UTF-8."""
    try:
        value = json.loads(text, parse_constant=_reject_constant, object_pairs_hook=_first_values)
        if not isinstance(value, dict):
            raise ValueError(f"a JSON {type(value).__name__}, not an object")
        json.dumps(value, ensure_ascii=False).encode("utf-8")  # a lone surrogate escape is no character
    except (ValueError, UnicodeEncodeError, RecursionError) as error:
        raise ValueError("nested too deeply" if isinstance(error, RecursionError) else str(error)) from None
    return value


def _quarantine_line(bad: _Bad, row: int, text: str, error: ValueError) -> None:
    bad.add(row, QuarantineReason.UNPARSEABLE, f"invalid JSON: {error}", text.encode("utf-8", errors="surrogatepass"))


def _python_objects_frame(rows: Sequence[int], texts: list[str], bad: _Bad) -> pl.DataFrame:
    """The slow path, for a batch polars cannot read as one frame (a field with different shapes in different
    rows, a number polars refuses): parse line by line, quarantine the lines that are not JSON objects, and
    give every field as text, nested values as exact JSON text (and which they are: :data:`NESTED`)."""
    kept_rows: list[int] = []
    kept_texts: list[str] = []
    values: list[dict] = []
    for row, text in zip(rows, texts):
        try:
            values.append(_json_object(text))
        except ValueError as error:
            _quarantine_line(bad, row, text, error)
            continue
        kept_rows.append(row)
        kept_texts.append(text)
    keys = dict.fromkeys(k for value in values for k in value)
    frame = pl.DataFrame({k: [_as_text(v.get(k)) for v in values] for k in keys}, schema={k: pl.String for k in keys})
    numbered = _numbered(frame, kept_rows, pl.Series(RAW, kept_texts, dtype=pl.String), bad.source)
    nested = [[k for k, item in value.items() if isinstance(item, (dict, list))] for value in values]
    return numbered.with_columns(pl.Series(NESTED, nested, dtype=pl.List(pl.String))) if any(nested) else numbered


#: Lines a batch that polars cannot read is cut into, piece by piece, to find the lines at fault; a piece of at
#: most ``_FEW_LINES`` lines that polars cannot read is parsed line by line.
_PIECES = 16
_FEW_LINES = 64


def _suspect_lines(data: bytes, ends: np.ndarray, lines: pl.Series, lo: int, hi: int) -> list[int]:
    """The lines in ``[lo, hi)`` of a batch (``ends``: where each line ends in ``data``, after its newline)
    that may be what polars cannot read: those of the few-line pieces it cannot read. A piece it reads,
    though not as one frame (:class:`_Uneven`), holds none."""
    if hi - lo <= _FEW_LINES:
        return list(range(lo, hi))
    suspects: list[int] = []
    step = -(-(hi - lo) // _PIECES)
    for start in range(lo, hi, step):
        stop = min(start + step, hi)
        try:
            _json_objects_frame(data[ends[start - 1] if start else 0 : ends[stop - 1]], lines.slice(start, stop - start))
        except _Uneven:
            pass
        except Exception:
            suspects += _suspect_lines(data, ends, lines, start, stop)
    return suspects


def _objects_frame(rows: np.ndarray, data: bytes, lines: pl.Series, bad: _Bad) -> pl.DataFrame:
    """The batch's JSON objects as one frame, read by polars as a whole. When polars cannot read it, the lines
    at fault are found by reading pieces of the batch, those that are not JSON objects are quarantined, and
    the rest are read as a whole again (line by line when that fails too, or when no line was at fault)."""
    try:
        read: pl.DataFrame | None = _json_objects_frame(data, lines)
    except _Uneven:
        return _python_objects_frame(rows.tolist(), lines.to_list(), bad)
    except Exception:
        read = None
    if read is not None:  # (numbered outside the try: a field named as a reader's column is the user's error)
        return _numbered(read, rows, lines, bad.source)
    ends = _ends(lines)
    keep = np.ones(len(rows), dtype=bool)
    faulty = _Bad(bad.source)
    for line in _suspect_lines(data, ends, lines, 0, len(rows)):
        text = lines[line]
        try:
            _json_object(text)
        except ValueError as error:
            _quarantine_line(faulty, int(rows[line]), text, error)
            keep[line] = False
    frame = None
    if not keep.all():
        rows, lines, data = rows[keep], lines.filter(keep), _kept(data, ends, keep)
        try:
            frame = _json_objects_frame(data, lines)
        except Exception:
            pass
        else:
            frame = _numbered(frame, rows, lines, bad.source)
    if frame is None:
        frame = _python_objects_frame(rows.tolist(), lines.to_list(), faulty)
    bad.extend_by_row(faulty)
    return frame


#: Levels of nesting polars is let read with the types it infers: its read of a nested value takes time that grows
#: with the square of the value's depth (a millisecond a value at 40 levels, seconds at 500), and overflows its
#: stack from about 500 levels of objects. A batch with a line nested deeper is read by Python's json module.
INFERRED_DEEPEST = 16


def _parse_lines(source: str, rows: np.ndarray, data: bytes) -> RawBatch:
    """One batch of JSON lines (``data``: the non-blank lines, each ended by a newline; ``rows``: their line
    numbers) -> frame; undecodable or unparseable lines (and those nested deeper than
    :data:`~arena_cli.io.json_bytes.DEEPEST`) go to quarantine, the rest survive.

    The batch stays one block of bytes (no Python object per line) unless something is wrong with it."""
    bad = _Bad(source)
    lines = _lines_of(data, len(rows))
    if lines is None:  # not all UTF-8 (or split unlike Python would): line by line
        good_rows, texts = [], []
        for row, line in zip(rows.tolist(), data.split(b"\n")):
            try:
                texts.append(line.decode("utf-8"))
                good_rows.append(row)
            except UnicodeDecodeError as error:
                bad.add(row, QuarantineReason.NON_UTF8, f"invalid UTF-8 byte at offset {error.start}", line)
        rows, lines = np.array(good_rows, dtype=np.int64), pl.Series(RAW, texts, dtype=pl.String)
        data = "".join(t + "\n" for t in texts).encode()
    depths = nesting(data, INFERRED_DEEPEST)[: len(rows)]
    deep = depths > DEEPEST
    if deep.any():  # read by no one (see arena_cli.io.json_bytes)
        for line in np.flatnonzero(deep).tolist():
            bad.add(int(rows[line]), QuarantineReason.UNPARSEABLE, f"nested deeper than {DEEPEST} levels", lines[line].encode("utf-8", errors="surrogatepass"))
        rows, lines, data, depths = rows[~deep], lines.filter(~deep), _kept(data, _ends(lines), ~deep), depths[~deep]
    if not len(rows):
        return RawBatch(_numbered(pl.DataFrame(), rows, lines, source), bad.frame())
    if depths.max() > INFERRED_DEEPEST:
        return RawBatch(_python_objects_frame(rows.tolist(), lines.to_list(), bad), bad.frame())
    return RawBatch(_objects_frame(rows, data, lines, bad), bad.frame())


def _ends(lines: pl.Series) -> np.ndarray:
    """Where each line of a batch ends in its bytes, after its newline."""
    return np.cumsum(lines.str.len_bytes().to_numpy() + 1)


def _kept(data: bytes, ends: np.ndarray, keep: np.ndarray) -> bytes:
    """The lines of a batch (``data``, each line ending at ``ends``) that ``keep`` says."""
    return b"".join(data[(ends[i - 1] if i else 0) : ends[i]] for i in np.flatnonzero(keep))


def _lines_of(data: bytes, count: int) -> pl.Series | None:
    """The batch's lines as one text column, split by polars' CSV reader with a separator and no quoting
    that JSON lines never contain (no Python object per line). None when the bytes are not UTF-8 or do
    not split into exactly the expected lines."""
    try:
        lines = pl.read_csv(io.BytesIO(data), has_header=False, separator="\x1f", quote_char=None, schema={RAW: pl.String})[RAW]
    except Exception:
        return None
    if lines.len() != count or lines.null_count() or lines.str.len_bytes().sum() + count != len(data):
        return None
    return lines


def _numbered(frame: pl.DataFrame, rows: Sequence[int] | np.ndarray, lines: pl.Series, source: str) -> pl.DataFrame:
    """Add the row numbers and original lines (a frame of no fields, from ``{}`` lines, gets them alone)."""
    refuse_internal_names(source, frame.columns)
    numbered = pl.DataFrame({ROW: pl.Series(rows, dtype=pl.Int64), RAW: lines.cast(pl.String)})
    return pl.concat([frame, numbered], how="horizontal") if frame.width else numbered


#: Bytes a line may be made of and still be blank (what ``bytes.strip`` takes away), and a line's end.
_SPACE = np.frombuffer(b" \t\n\r\x0b\x0c", dtype=np.uint8)
_NEWLINE, _CR = ord("\n"), ord("\r")
#: Bytes of a JSON-lines file read at a time at least (more when ``batch_bytes`` says so).
JSONL_READ_BYTES = 1 << 20


@dataclass(frozen=True)
class LineSpans:
    """The lines found in a block of a JSON-lines file: where each starts and stops (a CR before its newline
    left out), its number in the file, and whether it holds anything but white space."""

    starts: np.ndarray
    stops: np.ndarray
    numbers: np.ndarray
    filled: np.ndarray

    @classmethod
    def of(cls, block: bytes, first: int, final: bool, blanks: bool = True) -> tuple[LineSpans, int]:
        """The whole lines of ``block`` (the last one too when ``final``), numbered from ``first``; and the
        bytes they take, newlines included. ``blanks``: whether it may hold blank lines (else none is)."""
        text = np.frombuffer(block, dtype=np.uint8)
        stops = positions(text, lambda chunk: chunk == _NEWLINE)
        used = int(stops[-1]) + 1 if len(stops) else 0
        if final and used < len(block):
            stops, used = np.append(stops, len(block)), len(block)
        starts = np.concatenate(([0], stops[:-1] + 1)) if len(stops) else stops
        while len(stops):  # line.rstrip(b"\r\n"): every CR at the end of the line goes
            cr = (stops > starts) & (text[stops - 1] == _CR)
            if not cr.any():
                break
            stops = np.where(cr, stops - 1, stops)
        if not blanks:
            return cls(starts, stops, first + np.arange(len(stops)), np.ones(len(stops), dtype=bool)), used
        filled = (stops > starts) & ~np.isin(text[np.minimum(starts, max(len(text) - 1, 0))], _SPACE)
        for line in np.flatnonzero(~filled & (stops > starts)):  # starts with white space: blank only if all is
            filled[line] = bool(block[starts[line] : stops[line]].strip())
        return cls(starts, stops, first + np.arange(len(stops)), filled), used


def _line_batches(handle: IO[bytes], batch_rows: int, batch_bytes: int) -> Iterator[tuple[np.ndarray, bytes]]:
    """The non-blank lines of a JSON-lines file in batches, as read: (their line numbers, the lines each ended
    by a newline, CRs at a line's end and a byte-order mark at the file's start dropped). A batch ends after
    ``batch_rows`` lines or after the line that brings it to ``batch_bytes`` bytes.

    The file is read a block at a time and its lines found with numpy, not one by one."""
    size = max(batch_bytes, JSONL_READ_BYTES)
    piece = handle.read(max(size, len(codecs.BOM_UTF8)))
    block, first, final = piece.removeprefix(codecs.BOM_UTF8), 1, not piece  # a byte-order mark is no part of line 1
    while True:
        found, used = LineSpans.of(block, first, final)
        kept = np.flatnonzero(found.filled)
        ends = np.cumsum(found.stops[kept] - found.starts[kept] + 1)  # bytes of the kept lines, newlines included
        start = 0  # of the kept lines not yet given
        while start < len(kept):
            before = int(ends[start - 1]) if start else 0
            stop = min(start + batch_rows, int(np.searchsorted(ends, before + batch_bytes)) + 1, len(kept))
            if not final and stop - start < batch_rows and ends[stop - 1] - before < batch_bytes:
                break  # not a whole batch yet: read on
            lines = kept[start:stop]
            yield found.numbers[lines], _joined(block, found.starts[lines], found.stops[lines])
            start = stop
        rest = int(kept[start - 1]) + 1 if start else 0  # the first line not given (blank lines given or not alike)
        given = int(found.starts[rest]) if rest < len(found.starts) else used
        block, first = block[given:], first + rest
        if final:
            return
        piece = handle.read(size)
        block, final = block + piece, not piece


def _joined(block: bytes, starts: np.ndarray, stops: np.ndarray) -> bytes:
    """The lines from ``block`` each ended by a newline: a slice of it when they follow one another there."""
    first, last = int(starts[0]), int(stops[-1])
    if last < len(block) and block[last] == _NEWLINE and last - first + 1 == int((stops - starts + 1).sum()):
        return block[first : last + 1]
    return b"".join(block[int(a) : int(b)] + b"\n" for a, b in zip(starts, stops))


def read_jsonl(path: Path, batch_rows: int = DEFAULT_BATCH_ROWS, batch_bytes: int = BATCH_BYTES) -> Iterator[RawBatch]:
    with opened(path) as handle:
        for rows, data in _line_batches(handle, batch_rows, batch_bytes):
            yield _parse_lines(str(path), rows, data)


#: Bytes of a JSON array read at a time (more when one record is longer).
JSON_READ_BYTES = 1 << 20
_JSON_SPACE = re.compile(r"[ \t\n\r]*")
#: Line ends, which are white space in a record (or no JSON), made spaces.
_LINE_ENDS = str.maketrans("\r\n", "  ")
_DAMAGED_ARRAY = "a JSON array is parsed whole, so none of it was read"


class _JsonText:
    """A JSON document read a piece at a time, values decoded one by one: the window of text not yet consumed,
    and where it starts in the document, so that messages give the document's line, column and character."""

    def __init__(self, path: Path, handle: IO[bytes]):
        self.path, self.handle = path, handle
        self.utf8 = codecs.getincrementaldecoder("utf-8")("surrogatepass")  # as json.loads reads bytes
        self.json = _DECODER
        self.text, self.pos = "", 0
        self.offset = self.lines = self.line_start = 0  # of text[0]: document position, newlines before it, start of its line
        self.bytes_read = 0
        self.skipped: int | None = None  # bytes of a byte-order mark, once the text has begun
        self.ended = False

    def more(self) -> bool:
        """Drop the consumed text and read the next piece (False at the end of the file)."""
        if self.ended:
            return False
        data = self.handle.read(max(JSON_READ_BYTES, len(self.text) - self.pos))
        pending = len(self.utf8.getstate()[0])
        try:
            piece = self.utf8.decode(data, final=not data)
        except UnicodeDecodeError as error:
            bom = self.skipped if self.skipped is not None else len(codecs.BOM_UTF8) * error.object.startswith(codecs.BOM_UTF8)
            at, bad = self.bytes_read - pending + error.start - bom, error.object[error.start : error.end]
            where = f"byte 0x{bad[0]:02x} in position {at}" if len(bad) == 1 else f"bytes in position {at}-{at + len(bad) - 1}"
            raise InputError(f"{self.path}: not UTF-8 ('utf-8' codec can't decode {where}: {error.reason}); {_DAMAGED_ARRAY}") from None
        if self.skipped is None and piece:  # a UTF-8 byte-order mark is no part of the text (json.loads of bytes)
            self.skipped = len(codecs.BOM_UTF8) * piece.startswith("\ufeff")
            piece = piece.removeprefix("\ufeff")
        self.bytes_read += len(data)
        self.ended = not data
        self.lines += self.text.count("\n", 0, self.pos)
        last = self.text.rfind("\n", 0, self.pos)
        if last >= 0:
            self.line_start = self.offset + last + 1
        self.offset += self.pos
        self.text, self.pos = self.text[self.pos :] + piece, 0
        return True

    def peek(self) -> str:
        """The next character that is not white space, consumed up to it ("" at the end)."""
        while True:
            self.pos = _JSON_SPACE.match(self.text, self.pos).end()  # type: ignore[union-attr]
            if self.pos < len(self.text) or not self.more():
                return self.text[self.pos : self.pos + 1]

    def value(self) -> Any:
        """The next value; decoded again once more text is read when it may run on past the window: a cut
        record, or a number the window's end could have cut short (``1.`` of ``1.5`` reads as 1, ``1.5e+``
        of ``1.5e+7`` as 1.5: up to two characters left after it)."""
        while True:
            try:
                value, end = self.json.raw_decode(self.text, self.pos)
            except json.JSONDecodeError as error:
                if self.more():
                    continue
                raise self.invalid(error.msg, error.pos) from None
            if end + 2 < len(self.text) or not self.more():
                self.pos = end
                return value

    def line(self) -> bytes:
        """The next value as one line of JSON: decoded and written again (:func:`_record_line`); or, nested too deeply
        for Python's json module to decode or write again, as the file spells it, its line ends made spaces (the
        batch reader quarantines it for its depth, see :mod:`arena_cli.io.json_bytes`)."""
        start = self.offset + self.pos  # in the document: reading on drops the text before ``pos``, not after
        try:
            value = self.value()
        except RecursionError:
            self.skip()
        else:
            try:
                return _record_line(value)
            except RecursionError:
                pass
        return self.text[start - self.offset : self.pos].translate(_LINE_ENDS).encode("utf-8", errors="surrogatepass") + b"\n"

    def skip(self) -> None:
        """Move past the array or object at ``pos``, found by its brackets and braces outside strings (on its UTF-8
        bytes, a piece at a time), reading on as needed; an error when the document ends within it."""
        brackets, at = Brackets(lines=False), self.pos
        while True:
            if at == len(self.text):
                after = at - self.pos
                if not self.more():
                    raise self.invalid("Unterminated array or object", self.pos)
                at = self.pos + after
                continue
            piece = self.text[at : at + SCAN_BYTES].encode("utf-8", errors="surrogatepass")
            found, _, depth = brackets.scan(np.frombuffer(piece, dtype=np.uint8))
            closed = np.flatnonzero(depth == 0)
            if len(closed):
                self.pos = at + len(piece[: int(found[closed[0]]) + 1].decode("utf-8", errors="surrogatepass"))
                return
            at = min(at + SCAN_BYTES, len(self.text))

    def invalid(self, message: str, at: int, hint: str = "") -> InputError:
        """The error for damage at ``at`` (in the window), placed as json.loads places it in the document."""
        line = self.lines + self.text.count("\n", 0, at) + 1
        last = self.text.rfind("\n", 0, at)
        column = at - last if last >= 0 else self.offset + at - self.line_start + 1
        return InputError(f"{self.path}: not valid JSON ({message}: line {line} column {column} (char {self.offset + at})); {_DAMAGED_ARRAY}{hint}")


def _record_lines(path: Path, handle: IO[bytes]) -> Iterator[bytes]:
    """The records of a JSON array (or the one object a file holds), each as one line (:meth:`_JsonText.line`),
    decoded as the file is read."""
    text = _JsonText(path, handle)
    first = text.peek()
    if not first:
        return
    if first == "[":
        text.pos += 1
        if text.peek() == "]":
            text.pos += 1
        else:
            while True:
                yield text.line()
                after = text.peek()
                text.pos += 1
                if after == "]":
                    break
                if after != ",":
                    raise text.invalid("Expecting ',' delimiter", text.pos - 1)
                text.peek()
        if text.peek():
            raise text.invalid("Extra data", text.pos)
        return
    record = text.line()
    if text.peek():
        raise text.invalid("Extra data", text.pos, "; it looks like JSON lines: use --input-format jsonl" if first == "{" else "")
    if first != "{":
        raise InputError(f"{path}: expected a JSON array of battle objects")
    yield record


def _record_line(record: Any) -> bytes:
    try:
        return json.dumps(record, ensure_ascii=False).encode() + b"\n"
    except UnicodeEncodeError:  # a lone surrogate escape: keep it escaped
        return json.dumps(record).encode() + b"\n"


def record_text(text: str) -> str:
    """The text a JSON array's record (``text``, as the file spells it) is read with, and quarantined with:
    decoded and written again, as :func:`read_json_array` reads every record."""
    return _record_line(_DECODER.decode(text)).decode().removesuffix("\n")


def read_json_array(path: Path, batch_rows: int = DEFAULT_BATCH_ROWS, batch_bytes: int = BATCH_BYTES) -> Iterator[RawBatch]:
    """A JSON array of objects (FastChat's battle dumps). Rows are numbered by record (1-based). The array is
    decoded as it is read, record by record; a damaged one (cut off, say) is an input error wherever the
    damage is: batches already given are of no use then, none of it is read. An empty file is an empty log."""
    rows: list[int] = []
    block = bytearray()
    with opened(path) as handle:
        for number, line in enumerate(_record_lines(path, handle), start=1):
            rows.append(number)
            block += line
            if len(rows) >= batch_rows or len(block) >= batch_bytes:
                batch = _parse_lines(str(path), np.array(rows, dtype=np.int64), bytes(block))
                rows, block = [], bytearray()
                yield batch
    if rows:
        yield _parse_lines(str(path), np.array(rows, dtype=np.int64), bytes(block))


class _RecordingLines:
    """The lines fed to ``csv.reader``, remembered until taken: the exact text of each record (or of a line
    the reader rejects) is kept as its raw content, byte for byte."""

    def __init__(self, lines: Iterator[str]):
        self.lines = lines
        self.taken: list[str] = []

    def __iter__(self) -> _RecordingLines:
        return self

    def __next__(self) -> str:
        line = next(self.lines)
        self.taken.append(line)
        return line

    def take(self) -> str:
        text, self.taken = "".join(self.taken), []
        return text.removesuffix("\n").removesuffix("\r")


def read_csv(path: Path, batch_rows: int = DEFAULT_BATCH_ROWS, batch_bytes: int = BATCH_BYTES) -> Iterator[RawBatch]:
    """CSV/TSV with a header row. Rows are numbered by physical line of their first line (header = 1).

    Python's csv module reads it (quoted multi-line fields, ragged rows detected per row); every field is
    text, as for JSON. Invalid UTF-8 is read through as surrogates, so such a record is quarantined with its
    exact bytes.
    """
    source = str(path)
    csv.field_size_limit(sys.maxsize)
    delimiter = "\t" if ".tsv" in [s.lower() for s in Path(path).suffixes] else ","
    with opened(path) as binary:
        # (a byte-order mark dropped before the csv module reads the header: a quoted first name would keep its quotes)
        lines = _RecordingLines(io.TextIOWrapper(binary, encoding="utf-8-sig", errors="surrogateescape", newline=""))
        reader = csv.reader(lines, delimiter=delimiter)
        try:
            header = next(reader)
        except StopIteration:
            return
        except csv.Error as error:
            raise InputError(f"{path}: unreadable CSV header: {error}") from None
        lines.take()
        if not any(header):
            raise InputError(f"{path}: the first line, the CSV header, is empty")
        if any(_damaged_text(name) for name in header):
            raise InputError(f"{path}: the CSV header has bytes that are not UTF-8 text (or NUL characters): {_shown(header)}")
        if len(set(header)) != len(header):
            raise InputError(f"{path}: duplicate column names in the CSV header")
        refuse_internal_names(path, header)
        width = len(header)
        columns: list[list[str | None]] = [[] for _ in range(width)]
        rows: list[int] = []
        raws: list[str] = []
        raw_chars = 0
        bad = _Bad(source)

        def flush() -> RawBatch:
            frame = pl.DataFrame({name: col for name, col in zip(header, columns)}, schema={h: pl.String for h in header})
            frame = frame.with_columns(pl.Series(ROW, rows, dtype=pl.Int64), pl.Series(RAW, raws, dtype=pl.String))
            return RawBatch(frame, bad.frame())

        line_start = reader.line_num + 1
        while True:
            try:
                fields = next(reader)
            except StopIteration:
                break
            except csv.Error as error:
                bad.add(line_start, QuarantineReason.UNPARSEABLE, f"CSV error: {error}", lines.take().encode("utf-8", errors="surrogateescape"))
                line_start = reader.line_num + 1
                continue
            row, line_start = line_start, reader.line_num + 1
            raw = lines.take()
            if not fields:
                continue
            if any("\udc80" <= ch <= "\udcff" for ch in raw):
                bad.add(row, QuarantineReason.NON_UTF8, "invalid UTF-8 bytes", raw.encode("utf-8", errors="surrogateescape"))
                continue
            if "\x00" in raw:
                bad.add(row, QuarantineReason.UNPARSEABLE, "a NUL character (binary data?)", raw.encode())
                continue
            if len(fields) != width:
                bad.add(row, QuarantineReason.UNPARSEABLE, f"{len(fields)} fields, the header has {width}", raw.encode())
                continue
            for column, value in zip(columns, fields):
                column.append(value if value != "" else None)
            rows.append(row)
            raws.append(raw)
            raw_chars += len(raw)
            if len(rows) >= batch_rows or raw_chars >= batch_bytes:
                yield flush()
                columns = [[] for _ in range(width)]
                rows, raws, raw_chars = [], [], 0
                bad = _Bad(source)
        if rows or bad.rows:
            yield flush()


def _damaged_text(text: str) -> bool:
    """Text read with invalid UTF-8 bytes (as surrogate escapes) or NUL characters."""
    return "\x00" in text or any("\udc80" <= ch <= "\udcff" for ch in text)


def _shown(header: list[str]) -> str:
    return ",".join(header).encode("utf-8", errors="surrogateescape").decode("utf-8", errors="backslashreplace").replace("\x00", "\\x00")[:120]


#: What reading a damaged parquet file raises: polars' errors, and the panics of its decoder (not Exceptions).
PARQUET_ERRORS = (Exception, pl.exceptions.PanicException)


def corrupt_parquet(path: Path, error: BaseException) -> InputError:
    """The one-line error for a parquet file polars cannot read (its messages can run to several lines): one that
    names the column of a type polars cannot read, when that is why, else damage."""
    first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    wide = _first_wide_decimal(_schema_or_none(path)) if "precision must be between" in first else None
    if wide is not None:
        return _wide_decimal(path, wide[0], wide[1].precision or 0)
    zone = re.search(r"unable to parse time zone: '([^']*)'", first)
    if zone:
        column = next((column for column, found in time_zones(local_path(path)) if found == zone[1]), None)
        times = f"the times of column {column}" if column is not None else "a column's times"
        return InputError(f"{path}: {times} have the time zone {zone[1]!r}, which polars cannot read (it reads UTC, named zones "
                          "such as Asia/Kolkata, and offsets of whole hours): write them in UTC or with a named zone")
    twice = re.search(r"column with name '(.*)' has more than one occurrence", first) if isinstance(error, pl.exceptions.DuplicateError) else None
    if twice:
        return InputError(f"{path}: two columns are named {twice[1]}: rename one")
    if first == "not yet implemented":
        return InputError(f"{path}: a column is of a type polars cannot read yet (a list view, say): write it as another type, or leave it out")
    return InputError(f"{path}: corrupt or truncated parquet ({first})")


#: The most digits a decimal polars reads may have (its decimals are 128-bit).
MAX_DECIMAL_DIGITS = 38


def refuse_wide_decimals(path: Path, scan: pl.LazyFrame, schema: Mapping[str, PolarsDataType]) -> None:
    """Decimals polars cannot read among the columns read (``schema``, of ``scan``) are an input error before
    anything is read: one of more than :data:`MAX_DECIMAL_DIGITS` digits at any depth (polars refuses it at the top
    level, but reads it within a struct with wrong values); and a decimal within a struct, a list or a map that
    polars cannot read (a 256-bit one of fewer digits: it panics), found by reading one row of such columns."""
    wide = _first_wide_decimal(schema)
    if wide is not None:
        raise _wide_decimal(path, wide[0], wide[1].precision or 0)
    for name, dtype in schema.items():
        found = _decimal_in(name, dtype, lambda _: True) if dtype.is_nested() else None
        if found is None:
            continue
        try:
            with quiet_stderr():  # (a panic's message, and its backtrace, are written there before it is raised)
                scan.select(name).head(1).collect().estimated_size()
        except pl.exceptions.PanicException:
            raise InputError(f"{path}: column {found[0]} is a decimal within a struct, a list or a map that polars cannot read (a 256-bit "
                             "decimal, say): write it as a 128-bit decimal, an integer or a float (or leave it out), then read the file "
                             "again") from None
        except pl.exceptions.PolarsError as error:
            raise corrupt_parquet(path, error) from None


def _first_wide_decimal(schema: Mapping[str, PolarsDataType]) -> tuple[str, pl.Decimal] | None:
    """The first decimal of more than :data:`MAX_DECIMAL_DIGITS` digits at any depth of ``schema``, with its path."""
    too_wide = lambda decimal: decimal.precision is not None and decimal.precision > MAX_DECIMAL_DIGITS  # noqa: E731
    return next((found for name, dtype in schema.items() if (found := _decimal_in(name, dtype, too_wide)) is not None), None)


def _schema_or_none(path: Path) -> Mapping[str, PolarsDataType]:
    """A parquet file's schema, as polars reads it (a wide decimal's type, whose values it cannot read), or none."""
    try:
        with quiet_stderr():
            return scan_parquet(local_path(path)).collect_schema()
    except PARQUET_ERRORS:
        return {}


def _decimal_in(path: str, dtype: PolarsDataType, wanted: Callable[[pl.Decimal], bool]) -> tuple[str, pl.Decimal] | None:
    """The first decimal type within ``dtype`` (the type of the column or field at ``path``) that is ``wanted``, with
    its dotted path."""
    if isinstance(dtype, pl.Decimal):
        return (path, dtype) if wanted(dtype) else None
    if isinstance(dtype, pl.Struct):
        return next((found for field in dtype.fields if (found := _decimal_in(f"{path}.{field.name}", field.dtype, wanted)) is not None), None)
    if isinstance(dtype, (pl.List, pl.Array)):
        return _decimal_in(path, dtype.inner, wanted)
    if isinstance(dtype, pl.Map):
        return _decimal_in(path, dtype.key, wanted) or _decimal_in(path, dtype.value, wanted)
    return None


def _wide_decimal(path: Path, column: str, digits: int) -> InputError:
    return InputError(f"{path}: column {column} is a decimal of {digits} digits, and polars reads at most {MAX_DECIMAL_DIGITS}: "
                      "write it as text or a float (or leave it out), then read the file again")


def parquet_schema(path: Path, scan: pl.LazyFrame | None = None) -> pl.Schema:
    """A parquet file's schema (from ``scan``, a scan of it, when given)."""
    parquet_content(path)
    try:
        with quiet_stderr():  # (polars panics on some types it cannot read: a time zone of a half-hour offset, a list view)
            return (scan_parquet(path) if scan is None else scan).collect_schema()
    except PARQUET_ERRORS as error:
        raise corrupt_parquet(path, error) from None


#: A row group larger than a batch is decoded whole up to this many batches' bytes and rows (in as few slices of
#: that size as it takes beyond): polars decodes a whole row group to read any slice of it, so reading it batch
#: by batch would decode it again for every batch (a row group of long conversations, a gigabyte decoded, takes
#: seconds each time).
PARQUET_WINDOW_BATCHES = 8


def read_parquet(path: Path, batch_rows: int = DEFAULT_BATCH_ROWS, columns: list[str] | None = None,
                 batch_bytes: int = BATCH_BYTES) -> Iterator[RawBatch]:
    """Parquet keeps its types; rows are numbered by record (1-based). ``__raw`` is filled in only for the
    rows that end up quarantined (see the ingest), since typed rows need no text copy. ``columns``: read
    only these. Damage found in any batch is an input error (the footer, checked first, can be sound).

    Batches of at most ``batch_rows`` rows and about ``batch_bytes`` bytes are cut from windows of whole row
    groups (see :func:`parquet_windows`)."""
    parquet_content(path)
    try:
        lazy = scan_parquet(path)
        refuse_internal_names(path, parquet_schema(path, lazy) if columns is None else columns)
        if columns is not None:
            lazy = lazy.select(columns)
        schema = parquet_schema(path, lazy)
        refuse_wide_decimals(path, lazy, schema)
        extensions = [name for name, dtype in schema.items() if isinstance(dtype, pl.Extension)]
        lazy = lazy.with_columns(pl.col(name).ext.storage() for name in extensions)  # (an extension type's values as its storage type's)
        total = lazy.select(pl.len()).collect().item()
        groups = row_groups(local_path(path))
        if groups is None:  # row groups too many to list: small ones, cut anywhere (each window about a batch on disk)
            step = max(1, min(batch_rows, batch_bytes * total // max(1, local_path(path).stat().st_size)))
            windows = [(start, min(step, total - start)) for start in range(0, total, step)]
        elif sum(group.rows for group in groups) != total:
            raise ValueError(f"{total} rows, its row groups {sum(group.rows for group in groups)}")
        else:
            windows = parquet_windows(groups, columns, batch_rows, batch_bytes)
    except InputError:
        raise
    except PARQUET_ERRORS as error:
        raise corrupt_parquet(path, error) from None
    for start, rows in windows:
        try:
            with quiet_stderr():  # (polars panics on some damaged pages, writing its message and backtrace there first)
                window = lazy.slice(start, rows).collect()
        except PARQUET_ERRORS as error:
            raise corrupt_parquet(path, error) from None
        if window.height != rows:
            raise corrupt_parquet(path, ValueError(f"{start + rows} rows in its footer, {start + window.height} in its data"))
        step = max(1, min(batch_rows, batch_bytes * rows // max(1, int(window.estimated_size()))))
        for offset in range(0, rows, step):
            frame = window.slice(offset, step)
            first = start + offset + 1
            yield RawBatch(frame.with_columns(pl.int_range(first, first + frame.height, dtype=pl.Int64).alias(ROW)),
                           pl.DataFrame(schema=QUARANTINE_SCHEMA))


def parquet_windows(groups: list[RowGroup], columns: list[str] | None, batch_rows: int, batch_bytes: int) -> list[tuple[int, int]]:
    """(first row, rows) of each read: consecutive row groups that fit in a batch together, a larger one alone,
    and one larger than :data:`PARQUET_WINDOW_BATCHES` batches in equal slices of at most that."""
    windows: list[tuple[int, int]] = []
    start = rows = size = 0
    for group in (group for group in groups if group.rows):
        decoded = group.decoded_bytes(columns)
        if rows and (rows + group.rows > batch_rows or size + decoded > batch_bytes):
            windows.append((start, rows))
            start, rows, size = start + rows, 0, 0
        if group.rows > batch_rows or decoded > batch_bytes:
            slices = max(-(-group.rows // (PARQUET_WINDOW_BATCHES * batch_rows)), -(-decoded // (PARQUET_WINDOW_BATCHES * batch_bytes)))
            step = -(-group.rows // slices)
            windows += [(start + at, min(step, group.rows - at)) for at in range(0, group.rows, step)]
            start += group.rows
        else:
            rows, size = rows + group.rows, size + decoded
    if rows:
        windows.append((start, rows))
    return windows


TEXT_READERS = {"jsonl": read_jsonl, "json": read_json_array, "csv": read_csv}


def read_batches(path: Path, container: str, batch_rows: int = DEFAULT_BATCH_ROWS, columns: list[str] | None = None,
                 batch_bytes: int = BATCH_BYTES) -> Iterator[RawBatch]:
    """Batches of a file. ``columns`` (parquet only; text containers parse whole rows anyway): read only these."""
    check_file(path)
    if container == "parquet":
        return read_parquet(Path(path), batch_rows, columns, batch_bytes)
    text_content(path, container)
    return TEXT_READERS[container](Path(path), batch_rows, batch_bytes)
