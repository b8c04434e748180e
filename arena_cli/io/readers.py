"""Containers: turn a file (JSONL, JSON array, CSV, parquet; optionally gzip-compressed) into batches of rows.

A reader yields :class:`RawBatch` objects: the parsed rows as a frame (``__row`` = 1-based line or record
number, ``__raw`` = the original text when cheap to keep) plus the rows it could not parse at all, already in
quarantine form. Batches bound memory: a file of any size is read ``batch_rows`` rows at a time. What the
columns *mean* is decided later, by the dialects in :mod:`arena_cli.io.ingest`.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from arena_cli.errors import InputError
from arena_cli.schema import QUARANTINE_SCHEMA, QuarantineReason

ROW = "__row"
RAW = "__raw"
DEFAULT_BATCH_ROWS = 200_000


@dataclass(frozen=True)
class RawBatch:
    frame: pl.DataFrame      # source columns + ROW (+ RAW for text containers)
    rejected: pl.DataFrame   # QUARANTINE_SCHEMA rows: unparseable / non-UTF-8 lines


CONTAINERS = ("jsonl", "json", "csv", "parquet")


def container_of(path: Path) -> str:
    """The container a file's extension names (``.gz`` looked through)."""
    suffixes = [s.lower() for s in Path(path).suffixes]
    if suffixes and suffixes[-1] == ".gz":
        suffixes = suffixes[:-1]
    ext = suffixes[-1] if suffixes else ""
    kinds = {".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "json", ".csv": "csv", ".tsv": "csv", ".parquet": "parquet", ".pq": "parquet"}
    if ext not in kinds:
        raise InputError(f"{path}: cannot tell the format from the extension {ext or '(none)'!r}; use --format")
    return kinds[ext]


def _open_binary(path: Path):
    path = Path(path)
    try:
        handle = open(path, "rb")
    except OSError as error:
        raise InputError(f"cannot read {path}: {error.strerror}") from None
    if path.suffix.lower() == ".gz":
        return gzip.GzipFile(fileobj=handle)
    return handle


def _rejected(source: str, rows: list[int], reasons: list[str], details: list[str], raws: list[bytes]) -> pl.DataFrame:
    text = [r.decode("utf-8", errors="backslashreplace") for r in raws]
    exact = [None if reason != QuarantineReason.NON_UTF8.value else r for reason, r in zip(reasons, raws)]
    return pl.DataFrame(
        {"source_file": [source] * len(rows), "source_row": rows, "reason": reasons, "detail": details, "raw": text, "raw_bytes": exact},
        schema=QUARANTINE_SCHEMA,
    )


def _json_objects_frame(lines: list[str]) -> pl.DataFrame:
    """Parse JSON-object lines into a frame: scalar fields as text, nested fields (conversations, metadata)
    with the types polars infers.

    Scalars as text is what lets the dialects report a wrong type per row instead of failing a whole batch
    on one odd value; nested values keep their types because polars' text rendering of them is not JSON.
    """
    frame = pl.read_ndjson(io.BytesIO("\n".join(lines).encode()), infer_schema_length=None)
    scalars = [c for c, t in frame.schema.items() if not t.is_nested() and t != pl.String]
    return frame.with_columns(pl.col(c).cast(pl.String) for c in scalars) if scalars else frame


def _parse_lines(source: str, rows: list[int], lines: list[bytes]) -> RawBatch:
    """Lines of one batch -> frame; undecodable or unparseable lines go to quarantine, the rest survive."""
    bad_rows: list[int] = []
    bad_reasons: list[str] = []
    bad_details: list[str] = []
    bad_raw: list[bytes] = []
    good_rows: list[int] = []
    texts: list[str] = []
    try:
        texts = b"\n".join(lines).decode("utf-8").split("\n")
        good_rows = rows
    except UnicodeDecodeError:
        for row, line in zip(rows, lines):
            try:
                texts.append(line.decode("utf-8"))
                good_rows.append(row)
            except UnicodeDecodeError as error:
                bad_rows.append(row)
                bad_reasons.append(QuarantineReason.NON_UTF8.value)
                bad_details.append(f"invalid UTF-8 byte at offset {error.start}")
                bad_raw.append(line)
    frame: pl.DataFrame | None = None
    if texts:
        try:
            frame = _json_objects_frame(texts)
        except Exception:
            frame = None
        if frame is None or frame.height != len(texts):
            kept_rows, kept_texts = [], []
            for row, text in zip(good_rows, texts):
                try:
                    value = json.loads(text)
                    problem = None if isinstance(value, dict) else f"a JSON {type(value).__name__}, not an object"
                except ValueError as error:
                    problem = f"invalid JSON: {error}"
                if problem is None:
                    kept_rows.append(row)
                    kept_texts.append(text)
                else:
                    bad_rows.append(row)
                    bad_reasons.append(QuarantineReason.UNPARSEABLE.value)
                    bad_details.append(problem)
                    bad_raw.append(text.encode())
            good_rows, texts = kept_rows, kept_texts
            frame = _json_objects_frame(texts) if texts else pl.DataFrame()
    if frame is None or not texts:
        frame = pl.DataFrame()
    frame = frame.with_columns(pl.Series(ROW, good_rows, dtype=pl.Int64), pl.Series(RAW, texts, dtype=pl.String))
    return RawBatch(frame, _rejected(source, bad_rows, bad_reasons, bad_details, bad_raw))


def read_jsonl(path: Path, batch_rows: int = DEFAULT_BATCH_ROWS) -> Iterator[RawBatch]:
    source = str(path)
    rows: list[int] = []
    lines: list[bytes] = []
    with _open_binary(path) as handle:
        for number, line in enumerate(handle, start=1):
            line = line.rstrip(b"\r\n")
            if not line.strip():
                continue
            rows.append(number)
            lines.append(line)
            if len(lines) >= batch_rows:
                yield _parse_lines(source, rows, lines)
                rows, lines = [], []
    if lines:
        yield _parse_lines(source, rows, lines)


def read_json_array(path: Path, batch_rows: int = DEFAULT_BATCH_ROWS) -> Iterator[RawBatch]:
    """A JSON array of objects (FastChat's battle dumps). Rows are numbered by record (1-based)."""
    with _open_binary(path) as handle:
        data = handle.read()
    try:
        records = json.loads(data)
    except UnicodeDecodeError as error:
        raise InputError(f"{path}: not UTF-8 ({error}); a JSON array is parsed whole, so nothing was stored") from None
    except ValueError as error:
        raise InputError(f"{path}: not valid JSON ({error}); a JSON array is parsed whole, so nothing was stored") from None
    if isinstance(records, dict):
        records = [records]
    if not isinstance(records, list):
        raise InputError(f"{path}: expected a JSON array of battle objects")
    for start in range(0, len(records), batch_rows):
        chunk = records[start : start + batch_rows]
        lines = [json.dumps(r, ensure_ascii=False).encode() for r in chunk]
        yield _parse_lines(str(path), list(range(start + 1, start + 1 + len(chunk))), lines)


def read_csv(path: Path, batch_rows: int = DEFAULT_BATCH_ROWS) -> Iterator[RawBatch]:
    """CSV/TSV with a header row. Rows are numbered by physical line of their first line (header = 1).

    Python's csv module reads it (quoted multi-line fields, ragged rows detected per row); every field is
    text, as for JSON.
    """
    source = str(path)
    csv.field_size_limit(sys.maxsize)
    delimiter = "\t" if ".tsv" in [s.lower() for s in Path(path).suffixes] else ","
    with _open_binary(path) as binary:
        text = io.TextIOWrapper(binary, encoding="utf-8", errors="surrogateescape", newline="")
        reader = csv.reader(text, delimiter=delimiter)
        try:
            header = next(reader)
        except StopIteration:
            return
        except csv.Error as error:
            raise InputError(f"{path}: unreadable CSV header: {error}") from None
        if header and header[0].startswith("\ufeff"):
            header[0] = header[0][1:]
        if len(set(header)) != len(header):
            raise InputError(f"{path}: duplicate column names in the CSV header")
        width = len(header)
        columns: list[list[str | None]] = [[] for _ in range(width)]
        rows: list[int] = []
        raws: list[str] = []
        bad: tuple[list[int], list[str], list[str], list[bytes]] = ([], [], [], [])

        def flush() -> RawBatch:
            frame = pl.DataFrame({name: col for name, col in zip(header, columns)}, schema={h: pl.String for h in header})
            frame = frame.with_columns(pl.Series(ROW, rows, dtype=pl.Int64), pl.Series(RAW, raws, dtype=pl.String))
            return RawBatch(frame, _rejected(source, *bad))

        line_start = reader.line_num + 1
        while True:
            try:
                fields = next(reader)
            except StopIteration:
                break
            except csv.Error as error:
                bad[0].append(line_start)
                bad[1].append(QuarantineReason.UNPARSEABLE.value)
                bad[2].append(f"CSV error: {error}")
                bad[3].append(b"")
                line_start = reader.line_num + 1
                continue
            row, line_start = line_start, reader.line_num + 1
            if not fields:
                continue
            raw = _csv_line(fields, delimiter)
            if any("\udc80" <= ch <= "\udcff" for field in fields for ch in field):
                bad[0].append(row)
                bad[1].append(QuarantineReason.NON_UTF8.value)
                bad[2].append("invalid UTF-8 bytes")
                bad[3].append(raw.encode("utf-8", errors="surrogateescape"))
                continue
            if len(fields) != width:
                bad[0].append(row)
                bad[1].append(QuarantineReason.UNPARSEABLE.value)
                bad[2].append(f"{len(fields)} fields, the header has {width}")
                bad[3].append(raw.encode())
                continue
            for column, value in zip(columns, fields):
                column.append(value if value != "" else None)
            rows.append(row)
            raws.append(raw)
            if len(rows) >= batch_rows:
                yield flush()
                columns = [[] for _ in range(width)]
                rows, raws = [], []
                bad = ([], [], [], [])
        if rows or bad[0]:
            yield flush()


def _csv_line(fields: list[str], delimiter: str) -> str:
    out = io.StringIO()
    csv.writer(out, delimiter=delimiter, lineterminator="").writerow(fields)
    return out.getvalue()


def read_parquet(path: Path, batch_rows: int = DEFAULT_BATCH_ROWS) -> Iterator[RawBatch]:
    """Parquet keeps its types; rows are numbered by record (1-based). ``__raw`` is filled in only for the
    rows that end up quarantined (see the ingest), since typed rows need no text copy."""
    try:
        lazy = pl.scan_parquet(path)
        total = lazy.select(pl.len()).collect().item()
    except Exception as error:
        raise InputError(f"{path}: unreadable parquet file ({error})") from None
    for start in range(0, total, batch_rows):
        frame = lazy.slice(start, batch_rows).collect()
        frame = frame.with_columns(pl.int_range(start + 1, start + 1 + frame.height, dtype=pl.Int64).alias(ROW))
        yield RawBatch(frame, pl.DataFrame(schema=QUARANTINE_SCHEMA))


READERS = {"jsonl": read_jsonl, "json": read_json_array, "csv": read_csv, "parquet": read_parquet}


def read_batches(path: Path, container: str, batch_rows: int = DEFAULT_BATCH_ROWS) -> Iterator[RawBatch]:
    if not Path(path).exists():
        raise InputError(f"no such file: {path}")
    return READERS[container](Path(path), batch_rows)
