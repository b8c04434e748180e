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
Every scalar is then read as text, as the batch path reads it; conversations, when the caller wants them, as lists
of ``{role, content}``, else as the roles of their messages only (their texts, most of a log's bytes, are only
checked, on the bytes: :func:`_searched`); conversations whose contents are lists of parts (LMArena's releases since
2025), as such lists whether the caller wants them or not, validated as the batch path validates them
(:func:`_read_type`); ``conv_metadata``, when the caller wants its counts, as a struct of
them with integer leaves (a count that is no integer literal is an error, so that no row is read otherwise than the
batch path reads it), its groups of counts (``header_count_a``) read as text and parsed where they can be
(:func:`_grouped_counts`); else only checked: as a struct of no fields (whether it is an object), its counts on
the bytes (:func:`_invalid_counts`), and as text where they may be invalid (:func:`_meta_counts_valid`). Each
block is validated by :func:`canonicalize`, the batch path's own validation, so the battles, the rejections and
their details are the batch path's; only the original text of a rejected line is taken from the block.

What polars (2.1) does with what a log may hold, read with an explicit schema, and what is done about it:

* a line that is not a JSON object (malformed, an array, ``NaN``, ``1e999``, two objects, nesting deeper than
  1,024 levels, a raw control character), bytes that are not UTF-8, a lone low surrogate escape, or a high
  one followed by another escape: an error, even in a field not read; then the batch path reads the file
  (:attr:`ReadPath.LEAN`), and quarantines the line as it always did;
* a line nested deeper than :data:`~arena_cli.io.json_bytes.DEEPEST` (512) levels, but not 1,024: read, even in a
  field not read; found here on the bytes of each block (:func:`_too_deep`), and the batch path reads the file
  (and quarantines the line);
* a lone high surrogate escape followed by anything but an escape (``"\\ud800x"``): read as a NUL character,
  without an error, even by the batch path's polars read; found here on the bytes (:data:`_LONE_HIGH`), and the
  batch path reads the file;
* blank lines (spaces, tabs, CRs): skipped, as the batch path skips them; the rows are numbered by the lines that
  are not blank (:class:`LineSpans`) when a block has any; a line of a vertical tab or form feed: an error;
* CRLF line ends: read as LF ends; a byte-order mark: an error, so it is dropped first, as the batch path does;
* a key given twice: its first value, as the batch path reads it (by polars, and by Python's json module, which
  it has keep the first value too); but polars infers a field's type from its last value, so that the batch path
  may read a nested field (conversations, ``conv_metadata``) given twice in a line with the fields or the shape of
  the other value: found on the bytes (:func:`_searched`), and the batch path reads the file;
* a nested value where text is read: rendered as text (``{"a": 1}``, not JSON); found by the first character of
  the values read as text, or for the texts of messages by their keys on the bytes (:func:`_searched`, which also
  finds a message without a text, or with a null one), and the batch path reads the file;
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
import functools
import io
import re
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import numpy as np
import polars as pl

from arena_cli.errors import InputError
from arena_cli.io.array_lines import LineBlock, array_lines, fill
from arena_cli.io.canonical import FEATURE_COUNT_COLUMNS, FEATURE_DENSITY_COLUMNS, canonicalize, numeric_extras
from arena_cli.io.dialects import ARENA_COLUMNS, Plan, container_for, plan_for
from arena_cli.io.fields import PARTS_CONVERSATION, meta_dtype
from arena_cli.io.files import opened, read_ahead
from arena_cli.io.json_bytes import DEEPEST, nesting
from arena_cli.io.judged import JudgeLog
from arena_cli.io.lean import VALIDATED, LeanIds, lean_plan, select_wanted
from arena_cli.io.options import InputOptions
from arena_cli.io.readers import INTERNAL, ROW, LineSpans, read_batches, record_text
from arena_cli.io.results import IngestResult, ReadPath, SourceSummary
from arena_cli.schema import BATTLE_SCHEMA, CONVERSATION, META_COLUMNS, Frame, conform, empty_quarantine, meta_paths

#: Lines of a file read by the batch reader to decide its plan and the shape of its nested fields (and bytes, at
#: most, for files of long lines); never more than the batch path's first batch.
PREFIX_ROWS = 500
PREFIX_BYTES = 4 << 20
#: JSON in the patterns below (polars' regular expressions, which have no look-around): white space between
#: tokens, and a string, from its opening quote to its closing one.
_SPACE = r"\s*"
_STRING = r'"(?:[^"\\]|\\.)*"'
#: Escapes sought on the bytes, by what follows their ``\u``: a high surrogate not followed by a low one, which
#: polars reads as NUL and Python's json module as an unpaired surrogate (a line the batch path quarantines); and a
#: letter, a digit, an underscore or an asterisk, which JSON writers never escape (``\u0072``, ``r``), since keys
#: are sought as they are spelt without (those :class:`_Layout` searches for, those of messages,
#: :data:`_MESSAGE_KEYS`, of nested fields, :func:`_searched`, and of counts, :func:`_invalid_counts`).
_LONE_HIGH = r"[dD][89abAB][0-9a-fA-F]{2}(?:[^\\]|\\[^u]|\\u[^dD]|\\u[dD][^c-fC-F])"
_NAME_CHARACTER = r"00(?:2[aA]|3[0-9]|[46][1-9a-fA-F]|[57][0-9aA]|5[fF])"
#: What comes before an escape's ``\u`` (a string's quote at least), so that a ``\u`` after an escaped backslash
#: is none: searched for only where a ``\u`` alone is found (a pattern that starts with a literal is searched
#: for much faster).
_NOT_ESCAPED = r"[^\\](?:\\\\)*"
#: The keys ``role`` and ``content`` of an object: both, side by side (role first or content first) with a string
#: for the first one's value and up to the second one's opening quote (a message, as logs write it); or either
#: alone. Only a key follows a brace or a comma and white space straight away (a quote within a string is escaped).
#: (A key spelt with an escaped letter is not found: see :data:`_NAME_CHARACTER`.)
_MESSAGE_KEYS = (
    rf'[{{,]{_SPACE}(?:"role"{_SPACE}:{_SPACE}{_STRING}{_SPACE},{_SPACE}"content"|"content"{_SPACE}:{_SPACE}{_STRING}{_SPACE},{_SPACE}"role")'
    rf'{_SPACE}:{_SPACE}"|[{{,]{_SPACE}"(?:role|content)"{_SPACE}:'
)
#: A message's role, or a part's text, given anything but a string or null, on the bytes: polars renders such a
#: value where text is read (``1.0`` as ``1``, an object as text), where the batch path infers another type for it.
#: (A key in quotes followed by a colon is a key, or the end of one with an escaped quote: a false alarm. Starting
#: with a literal, the pattern is searched for with the others at little cost.)
_PART_VALUES = rf'"(?:role|text)"{_SPACE}:{_SPACE}[^"n\s]'
#: What Kaggle's winner columns (``winner_model_a``, ``winner_model_b``) share, in a key.
_KAGGLE_WINNERS = '"winner_model_'
#: Conversations read only to be checked: the role of each message (its content is still read by polars, not kept).
_ROLES = pl.List(pl.Struct({"role": pl.String()}))

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
        for read in read_ahead(_blocks(Path(path), _FORMATS[container], layout, options, labels)):
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
    on a value in one, and the batch path reads the file. Only a block whose bytes hold one of them (in quotes) is
    read with those columns (:func:`_read`): each costs polars as much as a field it reads, and they are dozens.
    Absent and null mean the same for a field: a null value parses to null and fails no check in
    :func:`canonicalize`, and :func:`~arena_cli.schema.conform` gives an absent field null (or its default); an
    extra that no caller wants is dropped. Not so for keys whose mere presence, with null values only, changes the
    battles, searched for on the bytes too: ``column_keys``, extras the caller wants (a key given only nulls still
    gives the battles a column, where an absent one gives none), and the names of the columns the batch path's
    readers add, which it refuses as a source's (:data:`~arena_cli.io.readers.INTERNAL`); ``first_batch_keys``,
    keys that would take a field the plan maps from another column (``id`` before ``question_id``) or make the log
    Kaggle's, in the lines of the batch path's first batch, which decide its plan. Both as the text searched for:
    a key in quotes, or what keys share (Kaggle's winner columns: ``"winner_model_``).

    ``meta_checked``: the ``conv_metadata`` column when the caller wants none of its counts, read as a struct of no
    fields (decoding its counts costs more than the rest of a line, rendering it as text half as much): validation
    then only needs to know that it is an object or null (polars refuses any other value there) and that every count
    is valid, which the bytes tell (:func:`_invalid_counts`) or, where they hold a count in another form (``1.0``),
    the object as polars renders it as text, read again so (:meth:`again`, :func:`_meta_counts_valid`).
    ``meta_groups``: when the caller wants the counts, each group of them (``header_count_a``: ``h1`` to ``h6``)
    with its keys in the order the first lines give them; its groups are then read as text, not as structs (polars
    decodes a struct within a struct at several times the cost of its text), and parsed (:func:`_grouped_counts`).
    Conversations the caller does not want are only checked too, read as the roles of their messages only
    (:data:`_ROLES`; their texts are most of a log's bytes): that every message has a role and a text is told from
    the frame and the bytes (:func:`_searched`)."""

    plan: Plan
    schema: dict[str, pl.DataType]
    text: tuple[str, ...]
    watched: tuple[str, ...]
    column_keys: tuple[str, ...]
    first_batch_keys: tuple[str, ...]
    id_column: str | None
    meta_checked: str | None = None
    meta_groups: tuple[tuple[str, tuple[str, ...]], ...] = ()

    @property
    def conversations(self) -> tuple[str, ...]:
        return (*self.texts, *self.parts)

    @property
    def texts(self) -> tuple[str, ...]:
        """The conversations whose messages' contents are texts."""
        return tuple(c for c, dtype in self.schema.items() if dtype in (CONVERSATION, _ROLES))

    @property
    def parts(self) -> tuple[str, ...]:
        """The conversations whose messages' contents are lists of parts (LMArena's releases since 2025)."""
        return tuple(c for c, dtype in self.schema.items() if dtype == PARTS_CONVERSATION)

    @property
    def nested(self) -> tuple[str, ...]:
        """The nested fields read (conversations, ``conv_metadata``)."""
        return tuple(c for c, dtype in self.schema.items() if dtype.is_nested())

    @property
    def unwatched(self) -> dict[str, pl.DataType]:
        """The schema without the watched keys: what a block none of them is in is read with."""
        return {c: dtype for c, dtype in self.schema.items() if c not in self.watched}

    @property
    def meta_read(self) -> str | None:
        """The ``conv_metadata`` column read with its groups of counts as text (see ``meta_groups``)."""
        return self.plan.columns["conv_metadata"] if self.meta_groups else None

    def again(self, watched: bool, counts: bool) -> dict[str, pl.DataType]:
        """The schema a block is read with: with the watched keys when its bytes hold one; with ``conv_metadata``
        as text when they hold a count that may be invalid and it is only checked, with its groups of counts as
        text unless so when the counts are read."""
        schema = self.schema if watched else self.unwatched
        if counts and self.meta_checked:
            return {**schema, self.meta_checked: pl.String()}
        if not counts and self.meta_read:
            dtype = schema[self.meta_read]
            assert isinstance(dtype, pl.Struct)
            return {**schema, self.meta_read: pl.Struct({f.name: pl.String() if f.dtype.is_nested() else f.dtype for f in dtype.fields})}
        return schema

    @property
    def checked_only(self) -> tuple[str, ...]:
        """The columns read only to be checked here, which validation does not see."""
        return tuple(c for c, dtype in self.schema.items() if c == self.meta_checked or dtype == _ROLES)


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
    meta_groups: tuple[tuple[str, tuple[str, ...]], ...] = ()
    for field, column in [*plan.columns.items(), *((extra, extra) for extra in plan.extras)]:
        dtype = _read_type(field, prefix.frame[column])
        if dtype is None:
            return None
        schema[column] = dtype
        if field == "conv_metadata":
            meta_groups = _group_orders(prefix.frame[column].dtype, dtype)
    present = set(prefix.frame.columns)
    later, first_batch = _plan_keys(plan, options, columns)
    wanted = [c for c in columns if c not in BATTLE_SCHEMA] + [c.removeprefix("extra_") for c in columns if c.startswith("extra_")]
    column_keys = [c for c in dict.fromkeys(wanted) if c not in present]
    first_batch_keys = [c for c in dict.fromkeys(first_batch) if c not in present]
    features = sorted(FEATURE_COUNT_COLUMNS | FEATURE_DENSITY_COLUMNS)
    watched = tuple(c for c in dict.fromkeys([*later, *features, *column_keys, *first_batch_keys]) if c not in present)
    searched = [key for key in (f'"{c}"' for c in first_batch_keys) if not key.startswith(_KAGGLE_WINNERS)]
    searched += [_KAGGLE_WINNERS] * (len(searched) < len(first_batch_keys))
    meta_checked = plan.columns.get("conv_metadata") if not set(META_COLUMNS) & set(columns) else None
    # (conversations in parts are read whole and validated as the batch path validates them: see _read_type)
    checked: list[str] = [field for field in ("conversation_a", "conversation_b") if field in plan.columns and field not in columns and schema[plan.columns[field]] != PARTS_CONVERSATION]
    schema.update({plan.columns[field]: _ROLES for field in checked})
    if meta_checked is not None:
        schema[meta_checked] = pl.Struct([])
        checked.append("conv_metadata")
    plan = Plan(plan.dialect, {k: v for k, v in plan.columns.items() if k not in checked}, plan.extras)
    text = tuple(c for c, dtype in schema.items() if dtype == pl.String)
    schema.update({c: pl.Null() for c in watched})
    column_text = tuple(f'"{c}"' for c in [*column_keys, *INTERNAL])  # (the batch path refuses a field so named)
    meta_groups = () if meta_checked else meta_groups
    return _Layout(plan, schema, text, watched, column_text, tuple(searched), full.columns.get("battle_id"), meta_checked, meta_groups)


def _group_orders(given: pl.DataType, read: pl.DataType) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The groups of counts of ``conv_metadata`` (of type ``read``), each with its keys in the order the first lines
    give them (``given``, inferred from them); none when a group there has other keys (its text would not parse)."""
    if not isinstance(given, pl.Struct) or not isinstance(read, pl.Struct):
        return ()
    shown = {f.name: f.dtype for f in given.fields}
    groups = []
    for group in read.fields:
        if isinstance(group.dtype, pl.Struct):
            inferred = shown.get(group.name)
            keys = tuple(f.name for f in inferred.fields) if isinstance(inferred, pl.Struct) else ()
            if sorted(keys) != sorted(f.name for f in group.dtype.fields):
                return ()
            groups.append((group.name, keys))
    return tuple(groups)


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
    nested field another shape, or another field a nested value (the batch path reads those).

    Conversations whose messages' contents are lists of parts (objects) in the first lines are read as
    :data:`~arena_cli.io.fields.PARTS_CONVERSATION`, whether the caller wants them or not: a message's text is then
    its parts' texts, as the batch path reads them (:func:`~arena_cli.io.fields.typed_conversation`), checked by
    validation; a content of another shape in a later line (a text, a part that is no object) stops polars' read,
    and a role or a part's text that is not a string or null is found on the bytes (:data:`_PART_VALUES`)."""
    given = values.dtype
    absent = given == pl.String and values.null_count() == values.len()
    if field == "conv_metadata":
        return meta_dtype(pl.Int64()) if isinstance(given, pl.Struct) or absent else None
    if field in ("conversation_a", "conversation_b"):
        inner = given.inner if isinstance(given, pl.List) else None
        fields = {f.name: f.dtype for f in inner.fields} if isinstance(inner, pl.Struct) else {}
        content = fields.get("content")
        if "role" in fields and isinstance(content, pl.List) and isinstance(content.inner, pl.Struct):
            return PARTS_CONVERSATION
        messages = inner == pl.Null or {"role", "content"} <= set(fields)
        return CONVERSATION if messages or absent else None
    return None if given.is_nested() else pl.String()


@dataclass(frozen=True)
class _Format:
    """How the streamed read reads a container: ``blocks``, the file in blocks of whole JSON lines, about ``size``
    bytes of it each, each in pieces of whole lines (None: the batch path reads it); ``counted``, the bytes of a
    block that the batch path counts towards the bytes of its first batch, at least (``blank``: whether the block
    has blank lines); ``raw``, the text of a rejected line as the batch path quarantines it; ``rows_are_lines``,
    whether each line of a block is a row (none is blank), so that a block's rows are known before it is read."""

    blocks: Callable[[IO[bytes], int], Iterator[LineBlock | None]]
    counted: Callable[[list[bytes], bool], int]
    raw: Callable[[str], str]
    rows_are_lines: bool = False


_NEWLINE = ord("\n")
#: Bytes of the pieces a block is in: polars reads them as one frame, but searches each on its own (a search in one
#: value takes four times its size in memory, and is slower).
_PIECE_BYTES = 4 << 20


def _line_blocks(handle: IO[bytes], size: int) -> Iterator[LineBlock | None]:
    """A JSON-lines file in blocks of whole lines, about ``size`` bytes each (its byte-order mark dropped), in pieces
    of whole lines, about :data:`_PIECE_BYTES` each, with their lines counted.

    The file is read into one buffer of a piece's size, over and over (the rest of its last line moved to its start;
    a larger buffer while a line longer than it is read), so that a block costs one copy: its pieces."""
    buffer = bytearray(max(_PIECE_BYTES, len(codecs.BOM_UTF8)))
    length = fill(handle, buffer, 0)
    start = len(codecs.BOM_UTF8) if buffer.startswith(codecs.BOM_UTF8, 0, length) else 0  # no part of line 1
    block: list[bytes] = []
    held = ends = 0  # bytes and line ends of the block
    while True:
        ended = length < len(buffer)
        cut = length if ended else buffer.rfind(b"\n", start, length) + 1
        if cut > start:
            with memoryview(buffer) as view:
                block.append(bytes(view[start:cut]))
            held, ends = held + cut - start, ends + int(np.count_nonzero(np.frombuffer(block[-1], dtype=np.uint8) == _NEWLINE))
        if block and (held >= size or ended):
            yield LineBlock(block, ends + (not block[-1].endswith(b"\n")))
            block, held, ends = [], 0, 0
        if ended:
            return
        if cut:  # the rest of the last line to the buffer's start (and a buffer made larger for a long line, back to a piece's size)
            buffer[: length - cut] = buffer[cut:length]
            length, start = length - cut, 0
            del buffer[max(_PIECE_BYTES, length) :]
        else:  # a line longer than the buffer: read on
            buffer.extend(bytes(len(buffer)))
        length = fill(handle, buffer, length)


def _array_blocks(handle: IO[bytes], size: int) -> Iterator[LineBlock | None]:
    """A JSON array in blocks of JSON lines of its records (:func:`~arena_cli.io.array_lines.array_lines`), in
    pieces of about :data:`_PIECE_BYTES`."""
    return array_lines(handle, size, _PIECE_BYTES)


#: How each container is read: JSON lines as they are (the batch path counts a block's bytes but its CRs; none, to
#: be safe, of a block with blank lines); a JSON array as lines of its records, whose bytes the batch path counts
#: once it has written them again: none (its first batch is then told by rows alone, which only adds false alarms).
_FORMATS = {
    "jsonl": _Format(_line_blocks, lambda pieces, blank: 0 if blank else sum(len(piece) - piece.count(b"\r") for piece in pieces), str),
    "json": _Format(_array_blocks, lambda pieces, blank: 0, record_text, rows_are_lines=True),
}


#: Blocks read at once, each on a thread of its own: polars' read and searches of one block leave much of a core to
#: the Python between them, and of another block's.
BLOCKS_AT_ONCE = 2


def _blocks(path: Path, form: _Format, layout: _Layout, options: InputOptions, labels: dict[str, str]) -> Iterator[Block | None]:
    """Each block of the file, read (see :func:`_read_block`), in order: about ``batch_bytes`` of whole lines at a
    time, :data:`BLOCKS_AT_ONCE` at once, but one at a time while a block may hold lines of the batch path's first
    batch (whether it does depends on the rows of the blocks before), unless its rows are its lines (a JSON
    array's records: :class:`_Format`)."""
    first = 1
    rows = counted = 0  # rows read, and bytes of them the batch path counts, at least (while it may matter)
    with opened(path) as handle, ThreadPoolExecutor(BLOCKS_AT_ONCE) as pool:
        reading: deque[Future[Block | None]] = deque()
        for lines in read_ahead(form.blocks(handle, options.batch_bytes)):
            # whether some lines may be in the batch path's first batch: its first batch_rows lines, batch_bytes of them
            first_batch = lines is not None and rows < options.batch_rows and counted < options.batch_bytes
            while reading and (lines is None or len(reading) == BLOCKS_AT_ONCE):  # (none is being read in the first batch)
                block = reading.popleft().result()
                yield block
                if block is None:
                    return
            if lines is None:
                yield None
                return
            if not first_batch or form.rows_are_lines:
                reading.append(pool.submit(_read_block, lines, first, layout, labels, str(path), first_batch, form.raw))
                first, rows = first + lines.lines, rows + lines.lines  # (a JSON array's bytes are never counted)
                continue
            block = _read_block(lines, first, layout, labels, str(path), True, form.raw)
            yield block
            if block is None:
                return
            counted += form.counted(lines.pieces, block[2] != lines.lines)
            first, rows = first + lines.lines, rows + block[2]
        while reading:
            block = reading.popleft().result()
            yield block
            if block is None:
                return


def _read_block(
    block: LineBlock, first: int, layout: _Layout, labels: dict[str, str], source: str, first_batch: bool, raw: Callable[[str], str],
) -> Block | None:
    """One block of whole lines, ``first`` the number of its first line, read and validated; None when it cannot be
    read exactly as the batch path reads it (see the module's docstring). ``first_batch``: whether some of its lines
    may be in the batch path's first batch; ``raw``: the text a rejected line is quarantined with."""
    pieces, lines = block.pieces, block.lines
    frame = _read(pieces, layout, first_batch)
    if frame is None:
        return None
    spans = None
    if frame.height == lines:
        numbers = np.arange(first, first + lines, dtype=np.int64)
    else:  # blank lines, which polars skips: the rows are the lines that are not blank
        spans = LineSpans.of(b"".join(pieces), first, True)[0]
        numbers = spans.numbers[spans.filled]
        if len(numbers) != frame.height:
            return None
    rows = frame.drop(*layout.checked_only).with_columns(pl.Series(ROW, numbers, dtype=pl.Int64))
    accepted, rejected = canonicalize(rows, layout.plan, labels, source)
    if rejected.height:  # their original lines, as the batch path keeps them
        text = b"".join(pieces)
        spans = spans or LineSpans.of(text, first, True, blanks=False)[0]  # none blank: a row per line
        at = np.searchsorted(spans.numbers, rejected["source_row"].to_numpy())
        texts = [raw(text[int(spans.starts[i]) : int(spans.stops[i])].decode()) for i in at]
        rejected = rejected.with_columns(pl.Series("raw", texts, dtype=pl.String))
    return accepted, rejected, frame.height


def _read(pieces: list[bytes], layout: _Layout, first_batch: bool) -> pl.DataFrame | None:
    """The lines of a block (in pieces) read with the layout's schema; None when it may hold anything read otherwise
    than the batch path reads it (see the module's docstring)."""
    try:
        if _too_deep(pieces):
            return None
        text = pl.Series(pieces, dtype=pl.Binary).cast(pl.String)  # not UTF-8: polars could not read the block either
        def scan(schema: dict[str, pl.DataType]) -> pl.LazyFrame:
            sources: list[IO[bytes]] = [io.BytesIO(piece) for piece in pieces]
            return pl.scan_ndjson(sources, schema=schema)

        # read and searched at once, on polars' threads
        frame, searched = pl.collect_all([scan(layout.again(False, False)), _searched(text, layout, first_batch)])
        flagged, paired, given = searched.row(0)
        flags = _flags(text, layout, first_batch) if flagged else {}
        found, watched, counts, parts = (flags.get(name, False) for name in ("found", "watched", "counts", "parts"))
        if parts:
            return None

        def again(counts: bool) -> pl.DataFrame:  # the watched keys dropped after the read (dropped from the scan, they would not be read)
            return scan(layout.again(watched, counts)).collect().drop(layout.watched if watched else ())

        if watched or counts:  # perhaps a value of a watched key or an invalid count: read again (see _Layout)
            frame = again(counts)
        if layout.meta_read and not counts:
            grouped = _grouped_counts(frame, layout)
            frame = again(True) if grouped is None else grouped
    except (Exception, pl.exceptions.PanicException):
        return None
    if found and text.str.contains(_sought(layout, first_batch, _NOT_ESCAPED)).any() or not paired:
        return None
    frame = frame.rechunk()  # a chunk per few dozen lines: validation's expressions cost several times more on them
    unusual, values = frame.select(_unusual(layout, frame.schema).any(), pl.sum_horizontal(0, *(pl.col(c).is_not_null().sum() for c in layout.nested))).row(0)
    return None if unusual or given != values else frame


def _too_deep(pieces: list[bytes]) -> bool:
    """Whether a line of a block (in ``pieces``) nests deeper than :data:`~arena_cli.io.json_bytes.DEEPEST`, which
    the batch path quarantines (polars reads it, up to 1,024 levels, even in a field not read): found before the
    block is read. A line so deep has more opening brackets than that (in strings or not): each piece's are
    counted per line, a slice at a time, and only a line with more is scanned for its strings
    (:func:`~arena_cli.io.json_bytes.nesting`): the memory it takes is a slice's and a number per line, however
    many brackets a block holds (their positions in a whole block took several times its size on a text of
    brackets)."""
    return any(nesting(piece, DEEPEST).max() > DEEPEST for piece in pieces)


def _searched(text: pl.Series, layout: _Layout, first_batch: bool) -> pl.LazyFrame:
    """What the text of a block (in pieces of whole lines) is searched for: whether it holds any of
    :func:`_flag_patterns`; whether, when the block has conversations of texts, every key ``role`` or ``content`` in it is in
    a pair (:data:`_MESSAGE_KEYS`); and the keys of nested fields given a value other than null.

    When every such key is in a pair, each has a string (not null, not nested) and its partner beside it: so every
    message, which has a role (:func:`_unusual`: a key spelt as it is, since no letter is escaped), has a text,
    whichever of a key given twice is read.

    A nested field given twice in a line is read by its first value, but the batch path infers its type from the
    last one, which may have other fields or another shape: so the keys of nested fields given a value (not null)
    must be as many as the values read (:func:`_read`). Each value read is given to its key (spelt as it is), so
    then no line gives another: a line gives its key the value read, and nulls after it at most, which polars'
    inference skips."""
    search = pl.col("text")
    paired = search.str.extract_all(_MESSAGE_KEYS).explode().drop_nulls().str.ends_with('"').all() if layout.texts else pl.lit(True)
    flagged = search.str.contains("|".join(_flag_patterns(layout, first_batch).values())).any()
    keys = "|".join(re.escape(c) for c in layout.nested)
    given = search.str.count_matches(rf'"(?:{keys})"{_SPACE}:{_SPACE}[^n\s]').sum() if keys else pl.lit(0, dtype=pl.UInt32)
    return pl.LazyFrame({"text": text}).select(flagged.alias("flagged"), paired.alias("paired"), given.alias("given"))


def _flag_patterns(layout: _Layout, first_batch: bool) -> dict[str, str]:
    """What a block is searched for, by name, each the pattern of something rare (a block is searched for all of
    them at once, in one pass over its bytes, and for each apart only when one is found: :func:`_flags`):
    ``found``, what the batch path may read otherwise (:func:`_sought`: any ``\\u`` taken for an escape);
    ``watched``, a watched key (:class:`_Layout`); ``counts``, a count only checked that may be invalid
    (:func:`_invalid_counts`), or what keeps groups of counts from being read as text (see
    :func:`_grouped_counts`); ``parts``, a role or a part's text that is no string in conversations in parts
    (:data:`_PART_VALUES`)."""
    patterns = {"found": _sought(layout, first_batch, "")}
    if layout.parts:
        patterns["parts"] = _PART_VALUES
    if layout.watched:
        patterns["watched"] = "|".join(re.escape(f'"{c}"') for c in layout.watched)
    if layout.meta_checked:
        patterns["counts"] = _invalid_counts()
    elif layout.meta_read:
        patterns["counts"] = f"{_groups_not_objects()}|{_QUOTE_IN_KEY}"
    return patterns


def _flags(text: pl.Series, layout: _Layout, first_batch: bool) -> dict[str, bool]:
    """Which of :func:`_flag_patterns` a block's text holds."""
    search = pl.col("text")
    patterns = _flag_patterns(layout, first_batch)
    return pl.LazyFrame({"text": text}).select(search.str.contains(p).any().alias(name) for name, p in patterns.items()).collect().row(0, named=True)


#: A key with a quote in it (escaped: ``\\"`` or ``\\u0022``), on the bytes: polars renders keys as text without
#: escaping them, so that in a group of counts read as text such a key could read as keys and counts of its own.
_QUOTE_IN_KEY = r'(?:\\"|\\u0022)(?:[^"\\]|\\.)*"\s*:'


def _grouped_counts(frame: pl.DataFrame, layout: _Layout) -> pl.DataFrame | None:
    """The block read with the groups of counts of ``conv_metadata`` as text (:meth:`_Layout.again`), those groups
    parsed: the frame a read of them as structs gives; None unless every group read is an object of exactly its
    counts, in the order of ``meta_groups``, each of at most 15 digits (then the block is read with structs).

    polars renders a number as text in its decimal digits: a whole number in another form (``1.0``, ``1e3``) reads
    as that number, as the batch path reads it (a double, every whole number of up to 15 digits exact); any other
    (``1.5``, ``-1``, ``true``, a string) does not parse. A block whose bytes hold a group that is not an object
    (a string reads as its text) or a key with a quote in it is read with structs (:func:`_flag_patterns`)."""
    column = layout.meta_read
    assert column is not None
    typed = layout.schema[column]
    assert isinstance(typed, pl.Struct)
    orders = dict(layout.meta_groups)
    meta = frame[column]
    texts = meta.struct.unnest().with_columns(meta.is_not_null().alias(_PRESENT))
    captured = texts.lazy().select(
        pl.col(group).str.extract_groups(r"^\{" + ", ".join(f'"{re.escape(key)}": ([0-9]{{1,15}})' for key in keys) + r"\}$")
        .struct.rename_fields([f"{group}.{key}" for key in keys])
        for group, keys in orders.items()
    ).collect().unnest(*orders)
    if any(captured[f"{group}.{keys[0]}"].null_count() != texts[group].null_count() for group, keys in orders.items()):
        return None
    fields = [
        pl.when(pl.col(f.name).is_not_null()).then(pl.struct(pl.col(f"{f.name}.{key.name}").cast(key.dtype).alias(key.name) for key in f.dtype.fields)).alias(f.name)
        if isinstance(f.dtype, pl.Struct) else pl.col(f.name)
        for f in typed.fields
    ]
    parsed = pl.concat([texts, captured], how="horizontal").select(pl.when(pl.col(_PRESENT)).then(pl.struct(fields)).alias(column))
    return frame.with_columns(parsed[column])


#: Whether a row's ``conv_metadata`` is there, beside its fields (none is so named) while its groups are parsed.
_PRESENT = "__present__"


def _sought(layout: _Layout, first_batch: bool, before: str) -> str:
    """The pattern of what a block must not hold: the escapes sought (:data:`_LONE_HIGH`, :data:`_NAME_CHARACTER`),
    ``before`` their ``\\u`` (see :data:`_NOT_ESCAPED`); the keys :class:`_Layout` searches for."""
    keys = [*layout.column_keys, *(layout.first_batch_keys if first_batch else ())]
    return "|".join([rf"{before}\\u(?:{_LONE_HIGH}|{_NAME_CHARACTER})", *(re.escape(key) for key in keys)])


def _unusual(layout: _Layout, schema: pl.Schema) -> pl.Expr:
    """Per row (of a block read with ``schema``): whether it has what the batch path reads otherwise: a nested value
    rendered as text, a message without a role (in a batch of such messages only, no message is read as one; one
    without a text is found on the bytes, :func:`_searched`), or a count only checked and read as text that is
    invalid."""
    checks = [pl.col(c).str.starts_with("{") | pl.col(c).str.starts_with("[") for c in layout.text]
    checks += [pl.col(c).list.eval(pl.element().struct.field("role").is_null()).list.any() for c in layout.conversations]
    if layout.meta_checked and schema[layout.meta_checked] == pl.String:
        checks.append(~_meta_counts_valid(pl.col(layout.meta_checked)))
    return pl.any_horizontal(checks) if checks else pl.lit(False)


def _meta_counts_valid(meta: pl.Expr) -> pl.Expr:
    """Per row: whether a ``conv_metadata`` rendered as text by polars (``{"h1": 2, "bold_count_a": {"**": 0}}``:
    keys decoded, values as parsed: a number in decimal digits, ``1.0`` as ``1``) is null or an object whose every
    count :func:`meta_fields` reads is a whole number from 0 to 10^15 - 1 or null, in an object or null (so that it
    passes every check of :func:`canonicalize`): the rendered text holds none of :func:`_invalid_counts`. A key of
    a count anywhere else in it gives a false alarm, as does a valid count of another form (``"3"``, ``-0.0``):
    they only cost the batch path."""
    return meta.is_null() | meta.str.starts_with("{") & ~meta.str.contains(_invalid_counts())


@functools.cache
def _invalid_counts() -> str:
    """The pattern of a count that may be invalid, on a line's bytes (or on polars' rendering of the object as
    text): a key of a count :func:`meta_fields` reads given anything but a whole number from 0 to 10^15 - 1 in
    decimal digits, or null; or a key of a group of them given anything but an object or null
    (:func:`_groups_not_objects`). Found wherever it is, in a line that polars reads as JSON: a key in a string has
    its quotes escaped, and one spelt with an escape is sought apart (:data:`_NAME_CHARACTER`). A key of a count
    elsewhere, or a valid count of another form (``1.0``), only costs a read of ``conv_metadata`` as text."""
    counts = "|".join(re.escape(name) for name in sorted({path[-1] for path in _meta_paths()}))
    return rf'"(?:{counts})"{_SPACE}:{_SPACE}(?:[^0-9n\s]|[0-9]{{16}}|[0-9]+[.eE])|{_groups_not_objects()}'


@functools.cache
def _groups_not_objects() -> str:
    """The pattern of a key of a group of counts (``header_count_a``) given anything but an object or null, on a
    line's bytes: polars reads a group given as a string, read as text, as the string's text."""
    groups = "|".join(re.escape(name) for name in sorted({path[0] for path in _meta_paths() if len(path) > 1}))
    return rf'"(?:{groups})"{_SPACE}:{_SPACE}[^{{n\s]'


def _meta_paths() -> list[tuple[str, ...]]:
    return [path for side in ("a", "b") for path in meta_paths(side).values()]
