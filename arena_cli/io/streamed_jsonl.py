"""Streamed reads of JSON lines: a lean read of a JSONL log parsed once, a block of lines at a time, by polars with
an explicit schema of only the fields the read needs; or, when anything is unusual, the path to read it by instead.
A JSON array of objects is read so too, split into lines of its records on its bytes
(:mod:`arena_cli.io.array_lines`).

Why: the batch path (:func:`arena_cli.io.readers.read_jsonl`) parses every field of every line twice (to infer the
types, then to read them all as text) and splits the lines into Python-visible text, so that any line can be
quarantined with its exact text; for a JSON array (:func:`~arena_cli.io.readers.read_json_array`) it first decodes
every record with Python's json module and writes it again as a line. Most logs a fit reads were written by tools
and have nothing to quarantine: reading only the fields validation and the caller need, with their types known, is
several times faster.

A JSON array's lines are numbered as its records, as the batch path numbers them, and a rejected record is
quarantined with the text the batch path gives it (:func:`~arena_cli.io.readers.record_text`). The batch path
measures its batches' bytes on those texts, not on the file: the blocks that may hold lines of its first batch are
told by rows alone (:data:`_FORMATS`). A number read as text is rendered by polars from the file's spelling where
the batch path has it render Python's repr of the same value: the same text (polars' parse is exact).

The fields and their meaning come from the file's first lines, read by the batch reader (:data:`PREFIX_ROWS`): the
plan (:func:`plan_for`), and that the nested fields read (``conv_metadata``, conversations) are objects and lists.
Every scalar is then read as text, as the batch path reads it; conversations as lists of ``{role, content}``;
``conv_metadata``, when the caller wants its counts, as a struct of them with integer leaves (a count that is no
integer literal is an error, so that no row is read otherwise than the batch path reads it), else as text, only
checked (:func:`_meta_counts_valid`). Each block is validated by :func:`canonicalize`, the batch path's own
validation, so the battles, the rejections and their details are the batch path's; only the original text of a
rejected line is taken from the block.

What polars (2.1) does with what a log may hold, read with an explicit schema, and what is done about it:

* a line that is not a JSON object (malformed, an array, ``NaN``, ``1e999``, two objects, nesting deeper than
  1,024 levels, a raw control character), bytes that are not UTF-8, a lone low surrogate escape, or a high
  one followed by another escape: an error, even in a field not read; then the batch path reads the file
  (:attr:`ReadPath.LEAN`), and quarantines the line as it always did;
* a line nested deeper than :data:`~arena_cli.io.json_bytes.DEEPEST` (512) levels, but not 1,024: read, even in a
  field not read; found here on the bytes of each block (:func:`_line_blocks`), and the batch path reads the file
  (and quarantines the line);
* a lone high surrogate escape followed by anything but an escape (``"\\ud800x"``): read as a NUL character,
  without an error, even by the batch path's polars read; found here on the bytes (:data:`_LONE_HIGH`), and the
  batch path reads the file;
* blank lines (spaces, tabs, CRs): skipped, as the batch path skips them; the rows are numbered by the lines that
  are not blank (:class:`LineSpans`) when a block has any; a line of a vertical tab or form feed: an error;
* CRLF line ends: read as LF ends; a byte-order mark: an error, so it is dropped first, as the batch path does;
* a key given twice: its first value, as the batch path reads it (by polars, and by Python's json module, which
  it has keep the first value too);
* a nested value where text is read: rendered as text (``{"a": 1}``, not JSON); found by the first character of
  the values read as text, or for texts within nested fields by the keys on the bytes (as
  :func:`~arena_cli.io.readers._rendered_nested` does), and the batch path reads the file;
* a number where text is read: rendered as polars renders the number (``1.0`` as ``1``, ``1e3`` as ``1000``, in
  decimal digits however large or small), as the batch path reads it; an object where text is read: keys
  decoded, ``": "`` and ``", "`` between them and the values, strings quoted (but backslashes and quotes within
  them not always escaped); where an integer is read (counts): anything but an integer literal (``1.5``, ``1.0``,
  ``"3"``, ``true``, beyond 64 bits) is an error; a non-object where an object is read, a non-list where a list
  is: an error;
* a field absent from the schema is not read at all (its syntax is still checked); a field of the schema absent
  from a line is null.

A field whose key first appears after the lines that decided the plan would change it: see :class:`_Layout`.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import numpy as np
import polars as pl

from arena_cli.errors import InputError
from arena_cli.io.array_lines import array_lines
from arena_cli.io.canonical import FEATURE_COUNT_COLUMNS, FEATURE_DENSITY_COLUMNS, canonicalize, numeric_extras
from arena_cli.io.dialects import ARENA_COLUMNS, Plan, container_for, plan_for
from arena_cli.io.fields import meta_dtype
from arena_cli.io.files import opened
from arena_cli.io.json_bytes import DEEPEST, nesting
from arena_cli.io.judged import JudgeLog
from arena_cli.io.lean import VALIDATED, LeanIds, lean_plan, select_wanted
from arena_cli.io.options import InputOptions
from arena_cli.io.readers import ROW, LineSpans, read_batches, record_text
from arena_cli.io.results import IngestResult, ReadPath, SourceSummary
from arena_cli.schema import BATTLE_SCHEMA, CONVERSATION, META_COLUMNS, Frame, conform, empty_quarantine, meta_paths

#: Lines of a file read by the batch reader to decide its plan and the shape of its nested fields (and bytes, at
#: most, for files of long lines); never more than the batch path's first batch.
PREFIX_ROWS = 2_000
PREFIX_BYTES = 4 << 20
#: A high surrogate escape not followed by a low one: polars reads it as NUL, Python's json module as an unpaired
#: surrogate (a line the batch path quarantines). An escaped backslash before it gives a false alarm, which only
#: costs the batch path.
_LONE_HIGH = re.compile(rb"\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F])")
#: What Kaggle's winner columns (``winner_model_a``, ``winner_model_b``) share, in a key.
_KAGGLE_WINNERS = '"winner_model_'
#: Keys of the texts of a message followed by a nested value, which polars would render as text.
_NESTED_IN_MESSAGE = r'"(?:role|content)":\s*[\[{]'
#: A ``conv_metadata`` given as a JSON text, not an object (polars renders an object as text much like it).
_META_AS_TEXT = re.compile(rb'"conv_metadata"\s*:\s*"')

#: What one block gives: its accepted battles, its rejected rows (quarantine), and the rows it read.
Block = tuple[pl.DataFrame, pl.DataFrame, int]


def read_json_streamed(
    paths: Sequence[Path], options: InputOptions, labels: dict[str, str], columns: Sequence[str], map_batch: Callable[[Frame], Frame]
) -> IngestResult | ReadPath:
    """The battles of ``paths``, JSON lines or JSON arrays, as :func:`arena_cli.io.reading.read_lean` gives them
    (``map_batch`` applied block by block); or the path to read them by instead: :attr:`ReadPath.LEAN` when a file
    cannot be read exactly so here, :attr:`ReadPath.FULL` when ids need hashes (see :class:`LeanIds`)."""
    lean_ids = LeanIds()
    summaries: list[SourceSummary] = []
    battles: list[pl.DataFrame] = []
    quarantine: list[pl.DataFrame] = []
    for number, path in enumerate(paths):
        container = container_for(Path(path), options)
        layout = _layout(Path(path), container, options, columns)
        if layout is None:
            return ReadPath.LEAN
        summary = SourceSummary(str(path), id_column=layout.id_column)
        summaries.append(summary)
        for read in _blocks(Path(path), _FORMATS[container], layout, options, labels):
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
    absent field null (or its default); an extra that no caller wants is dropped. Not so for keys whose mere
    presence, with null values only, changes the battles, searched for on the bytes too (a key spelt with escapes,
    ``"i\\u0064"``, given only nulls, is missed): ``column_keys``, extras the caller wants (a key given only nulls
    still gives the battles a column, where an absent one gives none); ``first_batch_keys``, keys that would take a
    field the plan maps from another column (``id`` before ``question_id``) or make the log Kaggle's, in the lines
    of the batch path's first batch, which decide its plan. Both as the text searched for: a key in quotes, or
    what keys share (Kaggle's winner columns: ``"winner_model_``).

    ``meta_text``: the ``conv_metadata`` column when the caller wants none of its counts, read as polars renders an
    object as text (decoding its counts costs more than the rest of a line): validation then only needs to know
    that every count is valid, which :func:`_meta_counts_valid` tells from the text."""

    plan: Plan
    schema: dict[str, pl.DataType]
    text: tuple[str, ...]
    watched: tuple[str, ...]
    column_keys: tuple[str, ...]
    first_batch_keys: tuple[str, ...]
    id_column: str | None
    meta_text: str | None = None

    @property
    def conversations(self) -> tuple[str, ...]:
        return tuple(c for c, dtype in self.schema.items() if dtype == CONVERSATION)


def _layout(path: Path, container: str, options: InputOptions, columns: Sequence[str]) -> _Layout | None:
    """How to read ``path`` (of ``container``: ``jsonl`` or ``json``), from its first lines; None when they are not
    those of an arena-dialect log read here: empty, with a line to quarantine, a judge's log or Kaggle's, a nested
    field of another shape, or a plan that may not be the one the batch path decides from its first batch (which
    is larger)."""
    # within the batch path's first batch, which decides its plan and the order of its columns
    prefix = next(iter(read_batches(path, container, min(PREFIX_ROWS, options.batch_rows), None, min(PREFIX_BYTES, options.batch_bytes))), None)
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
    column_keys = [c for c in dict.fromkeys(wanted) if c not in present]
    first_batch_keys = [c for c in dict.fromkeys(first_batch) if c not in present]
    features = sorted(FEATURE_COUNT_COLUMNS | FEATURE_DENSITY_COLUMNS)
    watched = tuple(c for c in dict.fromkeys([*later, *features, *column_keys, *first_batch_keys]) if c not in present)
    searched = [key for key in (f'"{c}"' for c in first_batch_keys) if not key.startswith(_KAGGLE_WINNERS)]
    searched += [_KAGGLE_WINNERS] * (len(searched) < len(first_batch_keys))
    meta_text = plan.columns.get("conv_metadata") if not set(META_COLUMNS) & set(columns) else None
    if meta_text is not None:
        schema[meta_text] = pl.String()
        plan = Plan(plan.dialect, {k: v for k, v in plan.columns.items() if k != "conv_metadata"}, plan.extras)
    text = tuple(c for c, dtype in schema.items() if dtype == pl.String and c != meta_text)
    schema.update({c: pl.Null() for c in watched})
    column_text = tuple(f'"{c}"' for c in column_keys)
    return _Layout(plan, schema, text, watched, column_text, tuple(searched), full.columns.get("battle_id"), meta_text)


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
        return meta_dtype(pl.Int64()) if isinstance(given, pl.Struct) or absent else None
    if field in ("conversation_a", "conversation_b"):
        inner = given.inner if isinstance(given, pl.List) else None
        messages = inner == pl.Null or isinstance(inner, pl.Struct) and {"role", "content"} <= {f.name for f in inner.fields}
        return CONVERSATION if messages or absent else None
    return None if given.is_nested() else pl.String()


@dataclass(frozen=True)
class _Format:
    """How the streamed read reads a container: ``blocks``, the file in blocks of whole JSON lines, about ``size``
    bytes of it each (None: the batch path reads it); ``counted``, the bytes of a block that the batch path counts
    towards the bytes of its first batch, at least (``blank``: whether the block has blank lines); ``raw``, the text
    of a rejected line as the batch path quarantines it."""

    blocks: Callable[[IO[bytes], int], Iterator[bytes | None]]
    counted: Callable[[bytes, bool], int]
    raw: Callable[[str], str]


def _line_blocks(handle: IO[bytes], size: int) -> Iterator[bytes | None]:
    """A JSON-lines file in blocks of whole lines, about ``size`` bytes each, its byte-order mark dropped; None, and no
    more, at a line nested deeper than :data:`~arena_cli.io.json_bytes.DEEPEST`, which the batch path quarantines
    (polars reads it, up to 1,024 levels)."""
    size = max(size, len(codecs.BOM_UTF8))
    rest, ended, begun = b"", False, False
    while not ended:
        piece = handle.read(size)
        ended = not piece
        if not begun:  # no part of line 1
            piece, begun = piece.removeprefix(codecs.BOM_UTF8), True
        cut = len(piece) if ended else piece.rfind(b"\n") + 1
        if not cut and not ended:  # a line longer than a block: read on
            rest += piece
            continue
        block, rest = (b"".join((rest, memoryview(piece)[:cut])) if rest or cut < len(piece) else piece), piece[cut:]
        del piece
        if block and nesting(block, DEEPEST).max() > DEEPEST:
            yield None
            return
        if block:
            yield block


#: How each container is read: JSON lines as they are (the batch path counts a block's bytes but its CRs; none, to
#: be safe, of a block with blank lines); a JSON array as lines of its records, whose bytes the batch path counts
#: once it has written them again: none (its first batch is then told by rows alone, which only adds false alarms).
_FORMATS = {
    "jsonl": _Format(_line_blocks, lambda block, blank: 0 if blank else len(block) - block.count(b"\r"), str),
    "json": _Format(array_lines, lambda block, blank: 0, record_text),
}


def _blocks(path: Path, form: _Format, layout: _Layout, options: InputOptions, labels: dict[str, str]) -> Iterator[Block | None]:
    """Each block of the file, read (see :func:`_read_block`): about ``batch_bytes`` of whole lines at a time."""
    first = 1
    rows = counted = 0  # rows read, and bytes of them the batch path counts, at least
    with opened(path) as handle:
        for block in form.blocks(handle, options.batch_bytes):
            if block is None:
                yield None
                return
            # whether some lines may be in the batch path's first batch: its first batch_rows lines, batch_bytes of them
            first_batch = rows < options.batch_rows and counted < options.batch_bytes
            newlines = block.count(b"\n")
            read = _read_block(block, first, newlines, layout, labels, str(path), first_batch, form.raw)
            yield read
            if read is None:
                return
            counted += form.counted(block, read[2] != newlines + (not block.endswith(b"\n")))
            first, rows = first + newlines, rows + read[2]


def _read_block(
    block: bytes, first: int, newlines: int, layout: _Layout, labels: dict[str, str], source: str, first_batch: bool,
    raw: Callable[[str], str],
) -> Block | None:
    """One block of whole lines, ``first`` the number of its first line, read and validated; None when it cannot be
    read exactly as the batch path reads it (see the module's docstring). ``first_batch``: whether some of its
    lines may be in the batch path's first batch; ``raw``: the text a rejected line is quarantined with."""
    try:
        frame = pl.read_ndjson(block, schema=layout.schema)
    except (Exception, pl.exceptions.PanicException):
        return None
    if _LONE_HIGH.search(block) or not _text_usual(block, layout, first_batch) or frame.select(_unusual(layout).any()).item():
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
    rows = frame.drop(*layout.watched, *([layout.meta_text] if layout.meta_text else [])).with_columns(pl.Series(ROW, numbers, dtype=pl.Int64))
    accepted, rejected = canonicalize(rows, layout.plan, labels, source)
    if rejected.height:  # their original lines, as the batch path keeps them
        spans = spans or LineSpans.of(block, first, True, blanks=False)[0]  # none blank: a row per line
        at = np.searchsorted(spans.numbers, rejected["source_row"].to_numpy())
        texts = [raw(block[int(spans.starts[i]) : int(spans.stops[i])].decode()) for i in at]
        rejected = rejected.with_columns(pl.Series("raw", texts, dtype=pl.String))
    return accepted, rejected, frame.height


def _text_usual(block: bytes, layout: _Layout, first_batch: bool) -> bool:
    """Whether the bytes of a block hold none of the keys :class:`_Layout` searches for, no nested value in the texts
    of a message, and no ``conv_metadata`` given as text where it is read as text. A few keys are searched for by
    Python, more at once by polars, in pieces."""
    if layout.meta_text and _META_AS_TEXT.search(block):
        return False
    keys = [*layout.column_keys, *(layout.first_batch_keys if first_batch else ())]
    if not (layout.column_keys or layout.conversations):
        return not any(key.encode() in block for key in keys)
    found = "|".join([*(re.escape(key) for key in keys), *([_NESTED_IN_MESSAGE] if layout.conversations else [])])
    return not pl.Series(_pieces(block), dtype=pl.Binary).cast(pl.String).str.contains(found).any()


#: Bytes of the pieces a block is searched in by polars (a search in one value takes four times its size in memory).
_PIECE_BYTES = 4 << 20


def _pieces(block: bytes) -> list[bytes]:
    """A block of lines in pieces of whole lines, about :data:`_PIECE_BYTES` each."""
    pieces, start = [], 0
    while start < len(block):
        end = block.find(b"\n", start + _PIECE_BYTES) + 1 or len(block)
        pieces.append(block[start:end])
        start = end
    return pieces


def _unusual(layout: _Layout) -> pl.Expr:
    """Per row: whether it has what the batch path reads otherwise: a nested value rendered as text, or a message
    without a role or content (in a batch of such messages only, no message is read as one)."""
    checks = [pl.col(c).str.starts_with("{") | pl.col(c).str.starts_with("[") for c in layout.text]
    checks += [
        pl.col(c).list.eval(pl.element().struct.field("role").is_null() | pl.element().struct.field("content").is_null()).list.any()
        for c in layout.conversations
    ]
    if layout.meta_text:
        checks.append(~_meta_counts_valid(pl.col(layout.meta_text)))
    return pl.any_horizontal(checks) if checks else pl.lit(False)


def _meta_counts_valid(meta: pl.Expr) -> pl.Expr:
    """Per row: whether a ``conv_metadata`` rendered as text by polars (``{"h1": 2, "bold_count_a": {"**": 0}}``:
    keys decoded, values as parsed: a number in decimal digits, ``1.0`` as ``1``) is null or an object whose every
    count :func:`meta_fields` reads is a whole number from 0 to 10^15 - 1 or null, in an object or null (so that it
    passes every check of :func:`canonicalize`). A key of a count anywhere else in it gives a false alarm, as does a
    valid count of another form (``"3"``, ``-0.0``): they only cost the batch path."""
    paths = [path for side in ("a", "b") for path in meta_paths(side).values()]
    counts = "|".join(re.escape(name) for name in sorted({path[-1] for path in paths}))
    groups = "|".join(re.escape(name) for name in sorted({path[0] for path in paths if len(path) > 1}))
    invalid = rf'"(?:{counts})": (?:[^0-9n]|[0-9]{{16}}|[0-9]+[^0-9,}}])|"(?:{groups})": [^{{n]'
    return meta.is_null() | meta.str.starts_with("{") & ~meta.str.contains(invalid)
