"""Streamed reads of JSON lines: a lean read of a JSONL log parsed once, a block of lines at a time, by polars with
an explicit schema of only the fields the read needs; or, when anything is unusual, the path to read it by instead.

Why: the batch path (:func:`arena_cli.io.readers.read_jsonl`) parses every field of every line twice (to infer the
types, then to read them all as text) and splits the lines into Python-visible text, so that any line can be
quarantined with its exact text. Most logs a fit reads were written by tools and have nothing to quarantine:
reading only the fields validation and the caller need, with their types known, is several times faster.

The fields and their meaning come from the file's first lines, read by the batch reader (:data:`PREFIX_ROWS`): the
plan (:func:`plan_for`), and that the nested fields read (``conv_metadata``, conversations) are objects and lists.
Every scalar is then read as text, as the batch path reads it; ``conv_metadata`` as a struct of its counts, with
integer leaves (a count that is no integer literal is an error, so a row is never read otherwise than the batch
path reads it); conversations as lists of ``{role, content}``. Each block is validated by :func:`canonicalize`,
the batch path's own validation, so the battles, the rejections and their details are the batch path's; only the
original text of a rejected line is taken from the block.

What polars (2.1) does with what a log may hold, read with an explicit schema, and what is done about it:

* a line that is not a JSON object (malformed, an array, ``NaN``, ``1e999``, two objects, nesting deeper than
  about a thousand, a raw control character), bytes that are not UTF-8, a lone low surrogate escape, or a high
  one followed by another escape: an error, even in a field not read; then the batch path reads the file
  (:attr:`ReadPath.LEAN`), and quarantines the line as it always did;
* a lone high surrogate escape followed by anything but an escape (``"\\ud800x"``): read as a NUL character,
  without an error, even by the batch path's polars read; found here on the bytes (:data:`_LONE_HIGH`), and the
  batch path reads the file;
* blank lines (spaces, tabs, CRs): skipped, as the batch path skips them; the rows are numbered by the lines that
  are not blank (:class:`LineSpans`) when a block has any; a line of a vertical tab or form feed: an error;
* CRLF line ends: read as LF ends; a byte-order mark: an error, so it is dropped first, as the batch path does;
* a key given twice: its first value, as the batch path's polars read (Python's json module, which the batch
  path uses for a batch polars cannot read as one frame, would take the last);
* a nested value where text is read: rendered as text (``{"a": 1}``, not JSON); found by the first character of
  the values read as text, or for texts within nested fields by the keys on the bytes (as
  :func:`~arena_cli.io.readers._rendered_nested` does), and the batch path reads the file;
* a number where text is read: rendered as polars renders the number (``1.0`` as ``1``, ``1e3`` as ``1000``), as
  the batch path reads it; where an integer is read (counts): anything but an integer literal (``1.5``, ``1.0``,
  ``"3"``, ``true``, beyond 64 bits) is an error; a non-object where an object is read, a non-list where a list
  is: an error;
* a field absent from the schema is not read at all (its syntax is still checked); a field of the schema absent
  from a line is null.

A field whose key first appears after the lines that decided the plan would change it: see :class:`_Layout`.
"""

from __future__ import annotations

import codecs
import io
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from arena_cli.errors import InputError
from arena_cli.io.canonical import FEATURE_COUNT_COLUMNS, FEATURE_DENSITY_COLUMNS, canonicalize, numeric_extras
from arena_cli.io.dialects import ARENA_COLUMNS, Plan, plan_for
from arena_cli.io.files import opened
from arena_cli.io.judged import JudgeLog
from arena_cli.io.lean import VALIDATED, LeanIds, lean_plan, select_wanted
from arena_cli.io.options import InputOptions
from arena_cli.io.readers import ROW, LineSpans, read_batches
from arena_cli.io.results import IngestResult, ReadPath, SourceSummary
from arena_cli.schema import BATTLE_SCHEMA, CONVERSATION, Frame, conform, empty_quarantine, meta_paths

#: Lines of a file read by the batch reader to decide its plan and the shape of its nested fields (and bytes, at
#: most, for files of long lines).
PREFIX_ROWS = 2_000
PREFIX_BYTES = 4 << 20
#: A high surrogate escape not followed by a low one: polars reads it as NUL, Python's json module as an unpaired
#: surrogate (a line the batch path quarantines). An escaped backslash before it gives a false alarm, which only
#: costs the batch path.
_LONE_HIGH = re.compile(rb"\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F])")
#: Keys of the texts of a message followed by a nested value, which polars would render as text.
_NESTED_IN_MESSAGE = r'"(?:role|content)":\s*[\[{]'

#: What one block gives: its accepted battles, its rejected rows (quarantine), and the rows it read.
Block = tuple[pl.DataFrame, pl.DataFrame, int]


def read_jsonl_streamed(
    paths: Sequence[Path], options: InputOptions, labels: dict[str, str], columns: Sequence[str], map_batch: Callable[[Frame], Frame]
) -> IngestResult | ReadPath:
    """The battles of JSON-lines ``paths`` as :func:`arena_cli.io.reading.read_lean` gives them (``map_batch``
    applied block by block); or the path to read them by instead: :attr:`ReadPath.LEAN` when a file cannot be
    read exactly so here, :attr:`ReadPath.FULL` when ids need hashes (see :class:`LeanIds`)."""
    lean_ids = LeanIds()
    summaries: list[SourceSummary] = []
    battles: list[pl.DataFrame] = []
    quarantine: list[pl.DataFrame] = []
    for number, path in enumerate(paths):
        layout = _layout(Path(path), options, columns)
        if layout is None:
            return ReadPath.LEAN
        summary = SourceSummary(str(path), id_column=layout.id_column)
        summaries.append(summary)
        for read in _blocks(Path(path), layout, options, labels):
            if read is None:
                return ReadPath.LEAN
            accepted, rejected, rows = read
            summary.rows_read += rows
            summary.quarantined.update(rejected["reason"].to_list())
            if not lean_ids.add(number, accepted["battle_id"]):
                return ReadPath.FULL
            summary.stored += accepted.height
            wanted = select_wanted(conform(numeric_extras(accepted)), columns)
            if any(dtype == pl.String for name, dtype in wanted.schema.items() if name not in BATTLE_SCHEMA):
                return ReadPath.LEAN  # an extra of text, whose type would depend on the batch path's batches
            mapped = map_batch(wanted)
            battles.append(mapped.collect() if isinstance(mapped, pl.LazyFrame) else mapped)
            if rejected.height:
                quarantine.append(rejected)
    if not lean_ids.settled():
        return ReadPath.FULL
    return IngestResult(pl.concat(battles, how="diagonal_relaxed"), pl.concat(quarantine) if quarantine else empty_quarantine(), summaries)


@dataclass(frozen=True)
class _Layout:
    """How one file is read: its lean ``plan``, the ``schema`` of the fields read (``text``: those read as text),
    and the keys that would have changed the plan had they been in the lines that decided it.

    ``watched``: keys the first lines lack that would change the plan (a field it lacks, as ``weight`` or the
    counts; an extra that validation reads, as a style feature; any key below), read as null columns: polars fails
    on a value in one, and the batch path reads the file. Absent and null mean the same for a field: a null value
    parses to null and fails no check in :func:`canonicalize`, and :func:`~arena_cli.schema.conform` gives an
    absent field null (or its default); an extra that no caller wants is dropped. Not so for the ``byte_keys``,
    whose mere presence, with null values only, changes the battles: an extra the caller wants (a key given only
    nulls still gives the battles a column, where an absent one gives none), and, in the lines of the batch path's
    first batch, which decide its plan, a key that would take a field the plan maps from another column (``id``
    before ``question_id``) or make the log Kaggle's. Those are searched for on the bytes (a key spelt with
    escapes, ``"i\\u0064"``, given only nulls, is missed)."""

    plan: Plan
    schema: dict[str, pl.DataType]
    text: tuple[str, ...]
    watched: tuple[str, ...]
    column_keys: tuple[str, ...]
    first_batch_keys: tuple[str, ...]
    id_column: str | None

    @property
    def conversations(self) -> tuple[str, ...]:
        return tuple(c for c, dtype in self.schema.items() if dtype == CONVERSATION)


def _layout(path: Path, options: InputOptions, columns: Sequence[str]) -> _Layout | None:
    """How to read ``path``, from its first lines; None when they are not those of an arena-dialect log read here:
    empty, with a line to quarantine, a judge's log or Kaggle's, a nested field of another shape, or a plan that
    may not be the one the batch path decides from its first batch (which is larger)."""
    prefix = next(iter(read_batches(path, "jsonl", PREFIX_ROWS, None, PREFIX_BYTES)), None)
    if prefix is None or not prefix.frame.height or prefix.rejected.height:
        return None
    judged = JudgeLog(path, options)
    judged.votes(prefix)  # refuses the options of judges' logs, as the batch path does
    if judged.kind is not None:
        return None
    try:
        full = plan_for(prefix.frame.columns, options, str(path))
    except InputError:  # the batch path's first batch, which is larger, may have the column
        return None
    if full.dialect != "arena":
        return None
    plan = lean_plan(full, columns)
    schema: dict[str, pl.DataType] = {}
    for field, column in [*plan.columns.items(), *((extra, extra) for extra in plan.extras)]:
        dtype = _read_type(field, prefix.frame[column])
        if dtype is None:
            return None
        schema[column] = dtype
    present = set(prefix.frame.columns)
    later, first_batch = _plan_keys(plan, options, columns)
    wanted = [c for c in columns if c not in BATTLE_SCHEMA] + [c.removeprefix("extra_") for c in columns if c.startswith("extra_")]
    column_keys = tuple(c for c in dict.fromkeys(wanted) if c not in present)
    first_batch_keys = tuple(c for c in dict.fromkeys(first_batch) if c not in present)
    features = sorted(FEATURE_COUNT_COLUMNS | FEATURE_DENSITY_COLUMNS)
    watched = tuple(c for c in dict.fromkeys([*later, *features, *column_keys, *first_batch_keys]) if c not in present)
    text = tuple(c for c, dtype in schema.items() if dtype == pl.String)
    schema.update({c: pl.Null() for c in watched})
    return _Layout(plan, schema, text, watched, column_keys, first_batch_keys, full.columns.get("battle_id"))


def _plan_keys(plan: Plan, options: InputOptions, columns: Sequence[str]) -> tuple[list[str], list[str]]:
    """The source columns that would change a lean plan if any line had them (for fields it lacks), and those that
    would change it if the first batch had them (columns before the one a field is taken from; Kaggle's)."""
    later: list[str] = []
    first: list[str] = []
    for field, candidates in ARENA_COLUMNS.items():
        if field in options.mapping or field not in {*VALIDATED, "battle_id", *columns}:
            continue
        chosen = plan.columns.get(field)
        if chosen is None:
            if not (field == "battle_id" and options.mapping):  # a mapped log takes no ids unless mapped
                later += candidates
        elif chosen in candidates:
            first += candidates[: candidates.index(chosen)]
    if not options.mapping:
        first += ["winner_model_a", "winner_model_b"]
    return later, first


def _read_type(field: str, values: pl.Series) -> pl.DataType | None:
    """The type a field is read as: text; a nested field with the type of its shape (``conv_metadata`` an object,
    conversations lists of messages) when the first lines give it that shape or none; None when they give a
    nested field another shape, or another field a nested value (the batch path reads those)."""
    given = values.dtype
    absent = given == pl.String and values.null_count() == values.len()
    if field == "conv_metadata":
        return conv_metadata_counts() if isinstance(given, pl.Struct) or absent else None
    if field in ("conversation_a", "conversation_b"):
        inner = given.inner if isinstance(given, pl.List) else None
        messages = inner == pl.Null or isinstance(inner, pl.Struct) and {"role", "content"} <= {f.name for f in inner.fields}
        return CONVERSATION if messages or absent else None
    return None if given.is_nested() else pl.String()


def conv_metadata_counts() -> pl.Struct:
    """LMArena's ``conv_metadata`` as read here: the counts that validation reads, as integers."""
    fields: dict[str, dict[str, pl.DataType] | pl.DataType] = {}
    for side in ("a", "b"):
        for path in meta_paths(side).values():
            if len(path) == 1:
                fields[path[0]] = pl.Int64()
            else:
                group = fields.setdefault(path[0], {})
                assert isinstance(group, dict)
                group[path[1]] = pl.Int64()
    return pl.Struct({name: pl.Struct(dtype) if isinstance(dtype, dict) else dtype for name, dtype in fields.items()})


def _blocks(path: Path, layout: _Layout, options: InputOptions, labels: dict[str, str]) -> Iterator[Block | None]:
    """Each block of the file, read (see :func:`_read_block`): about ``batch_bytes`` of whole lines at a time."""
    first, size = 1, max(options.batch_bytes, len(codecs.BOM_UTF8))
    rows = offset = 0
    skipped = 0  # bytes before the block that the batch path drops, at most: CRs, blank lines, a byte-order mark
    with opened(path) as handle:
        data = handle.read(size)
        ended = not data
        if data.startswith(codecs.BOM_UTF8):  # no part of line 1
            data, offset, skipped = data[len(codecs.BOM_UTF8) :], len(codecs.BOM_UTF8), len(codecs.BOM_UTF8)
        while data or not ended:
            cut = len(data) if ended else data.rfind(b"\n") + 1
            if cut:
                block, data = data[:cut], data[cut:]
                # the batch path's first batch: its first lines, up to batch_rows of them and batch_bytes of them
                first_batch = rows < options.batch_rows and offset - skipped < options.batch_bytes
                newlines = block.count(b"\n")
                read = _read_block(block, first, newlines, layout, labels, str(path), first_batch)
                yield read
                if read is None:
                    return
                if first_batch:
                    blank = read[2] != newlines + (not block.endswith(b"\n"))
                    skipped += len(block) if blank else block.count(b"\r")
                first, rows, offset = first + newlines, rows + read[2], offset + len(block)
            if not ended:
                piece = handle.read(size)
                data, ended = data + piece, not piece


def _read_block(
    block: bytes, first: int, newlines: int, layout: _Layout, labels: dict[str, str], source: str, first_batch: bool
) -> Block | None:
    """One block of whole lines, ``first`` the number of its first line, read and validated; None when it cannot be
    read exactly as the batch path reads it (see the module's docstring). ``first_batch``: whether some of its
    lines may be in the batch path's first batch."""
    try:
        frame = pl.read_ndjson(io.BytesIO(block), schema=layout.schema)
    except (Exception, pl.exceptions.PanicException):
        return None
    if _LONE_HIGH.search(block):
        return None
    keys = [*layout.column_keys, *(layout.first_batch_keys if first_batch else ())]
    if keys or layout.conversations:
        text = pl.Series([block], dtype=pl.Binary).cast(pl.String)
        if keys and text.str.contains_any([f'"{key}"' for key in keys]).item():
            return None
        if layout.conversations and text.str.contains(_NESTED_IN_MESSAGE).item():
            return None
    if frame.select(_unusual(layout).any()).item():
        return None
    lines = newlines + (not block.endswith(b"\n"))
    spans = None
    if frame.height == lines:
        numbers = np.arange(first, first + lines, dtype=np.int64)
    else:  # blank lines, which polars skips: the rows are the lines that are not blank
        spans = LineSpans.of(block, first, True)[0]
        numbers = spans.numbers[spans.filled]
        if len(numbers) != frame.height:
            return None
    rows = frame.drop(layout.watched).with_columns(pl.Series(ROW, numbers, dtype=pl.Int64))
    accepted, rejected = canonicalize(rows, layout.plan, labels, source)
    if rejected.height:  # their original lines, as the batch path keeps them
        spans = spans or LineSpans.of(block, first, True)[0]
        at = np.searchsorted(spans.numbers, rejected["source_row"].to_numpy())
        texts = [block[int(spans.starts[i]) : int(spans.stops[i])].decode() for i in at]
        rejected = rejected.with_columns(pl.Series("raw", texts, dtype=pl.String))
    return accepted, rejected, frame.height


def _unusual(layout: _Layout) -> pl.Expr:
    """Per row: whether it has what the batch path reads otherwise: a nested value rendered as text, or a message
    without a role or content (in a batch of such messages only, no message is read as one)."""
    checks = [pl.col(c).str.starts_with("{") | pl.col(c).str.starts_with("[") for c in layout.text]
    checks += [
        pl.col(c).list.eval(pl.element().struct.field("role").is_null() | pl.element().struct.field("content").is_null()).list.any()
        for c in layout.conversations
    ]
    return pl.any_horizontal(checks) if checks else pl.lit(False)
