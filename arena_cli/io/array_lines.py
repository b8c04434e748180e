"""A JSON array of objects (FastChat's battle dumps) split into its records on the bytes, as JSON lines (one record
a line), so that the streamed read of JSON lines (:mod:`arena_cli.io.streamed_jsonl`) reads it; or word that the
file is to be read by the batch reader (:func:`~arena_cli.io.readers.read_json_array`, which decodes every record
in Python), because it is no such array or holds what that reader would read otherwise.

A block at a time, vectorised with numpy: the quotes not escaped (a quote after an odd run of backslashes is) tell
which bytes are outside strings; among the brackets and braces there, the depth (opening ones less closing ones
before them) tells the array's top level: its ``[`` and ``]`` and its records' outer braces. Between those only
white space may be, and between two records one comma, which ends a line; line ends outside strings become spaces.
A block is cut after the last comma it holds between two records, where nothing is open but the array, and the
rest carried to the next one.

A block laid out as one record a line (``},\n{``: JSON lines joined by commas), but the file's last one, is split
at its line ends instead, without finding its strings (in under a third of the time): the comma before each
becomes the line's end. A line this gets wrong is no JSON object (one cut within a record ends in a string or with
a bracket open; one holding two records has a comma between them), which polars refuses: so whenever polars reads
every line as one object, the lines are the array's records (else the batch reader reads the file).

So the file must be a ``[`` (after white space and a byte-order mark), objects separated by single commas, a
``]``, and white space to its end. What is within the objects is left to polars, which reads each line strictly
(anything but one JSON object is an error, and the file goes to the batch reader), but for what it reads
otherwise than Python's json module: a raw control character in a string (a raw line end would be the end of a
line to polars; Python refuses them all); and a record nested deeper than
:data:`~arena_cli.io.json_bytes.DEEPEST`, which the batch reader quarantines (found here where the records'
strings are found, else by the streamed read, on the lines made).
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO

import numpy as np

from arena_cli.io.json_bytes import CONTROL, DEEPEST, STEP, deeper, escaped_quotes, marks, positions

_TAB, _NEWLINE, _SPACE = b"\t\n "
_LBRACKET, _RBRACKET, _LBRACE, _RBRACE, _COMMA = b"[]{},"
#: White space in JSON (tab, CR and LF the only control characters outside strings).
_WHITE_BYTES = np.zeros(256, dtype=bool)
_WHITE_BYTES[list(b" \t\n\r")] = True
#: The depth before each bracket of the array's top level (its ``[`` and ``]``, its records' outer braces), -1 for
#: other bytes; and those that may follow one another (records are objects).
_TOP_DEPTH = np.full(256, -1, dtype=np.int64)
_TOP_DEPTH[[_LBRACKET, _LBRACE, _RBRACE, _RBRACKET]] = [0, 1, 2, 1]
_FOLLOWS = np.array([first << 8 | then for first, then in (b"[{", b"[]", b"{}", b"}{", b"}]")])
_WHITE = re.compile(rb"[ \t\n\r]*")
#: Bytes of a block for each bracket, brace or control byte it may hold before it is first checked, a piece at a
#: time, for nesting too deep: each takes some thirty bytes here (a record of nothing but brackets, nested too deeply,
#: would take thirty times its size).
_BYTES_A_MARK = 8


@dataclass(frozen=True)
class LineBlock:
    """A block of whole JSON lines, in pieces of whole lines, and how many lines it holds: its line ends, and one
    more for a last line without one (known as the block is made, so that the next block's first line number is
    known before this one is read)."""

    pieces: list[bytes]
    lines: int


def array_lines(handle: IO[bytes], size: int, piece: int) -> Iterator[LineBlock | None]:
    """The records of the JSON array that ``handle`` reads, in blocks of JSON lines (each record one line, ended by
    a newline), about ``size`` bytes of the file at a time (more for a record longer than half that), each in
    pieces of whole lines of about ``piece`` bytes; None, and no more, as soon as the file is found not to be one
    the streamed read reads (see the module's docstring).

    The file is read into one buffer, over and over (a block's lines are made in place, the rest moved to its
    start), so that a block costs no more than one copy: its pieces."""
    buffer = bytearray(max(size, len(codecs.BOM_UTF8)))
    length = fill(handle, buffer, 0)
    ended, begun = length < len(buffer), False  # begun: past the array's ``[``
    if length >= len(codecs.BOM_UTF8) and buffer.startswith(codecs.BOM_UTF8):
        buffer[:length] = buffer[len(codecs.BOM_UTF8) : length] + bytes(len(codecs.BOM_UTF8))
        length -= len(codecs.BOM_UTF8)
    while True:
        split = _split(buffer, length, begun, ended)
        if split is None:
            yield None
            return
        used, records, closed = split
        if records:
            yield LineBlock(_pieces(buffer, used, piece), records)
        begun = begun or used > 0
        if closed:
            rest: bytes | bytearray = buffer[used:length]
            while _WHITE.fullmatch(rest):
                rest = handle.read(size)
                if not rest:
                    return
            yield None  # text after the array
            return
        if ended:  # the file ends within the array
            yield None
            return
        kept = length - used
        if 2 * kept > len(buffer):  # no room to read on: a larger buffer
            buffer = buffer[used:length] + bytes(len(buffer))
        else:
            buffer[:kept] = buffer[used:length]
        length = fill(handle, buffer, kept)
        ended = length < len(buffer)


def _pieces(buffer: bytearray, used: int, size: int) -> list[bytes]:
    """The first ``used`` bytes of ``buffer`` (whole lines) in pieces of whole lines, about ``size`` bytes each."""
    pieces, start = [], 0
    with memoryview(buffer) as view:
        while start < used:
            end = buffer.find(b"\n", start + size, used) + 1 or used
            pieces.append(bytes(view[start:end]))
            start = end
    return pieces


def fill(handle: IO[bytes], buffer: bytearray, start: int) -> int:
    """Read into ``buffer`` from ``start`` until it is full or the file ends; the bytes it then holds."""
    with memoryview(buffer) as view:
        while start < len(buffer):
            read = handle.readinto(view[start:])  # type: ignore[attr-defined]
            if not read:
                break
            start += read
    return start


def _split(buffer: bytearray, length: int, begun: bool, ended: bool) -> tuple[int, int, bool] | None:
    """The bytes at the start of a block (the first ``length`` of ``buffer``) that hold complete records (up to the
    comma after the last one, or to the array's ``]``), made JSON lines in place; how many records they hold, and
    whether the array ends there. None when the block shows the file is not read here. ``begun``: whether the block
    starts after the array's ``[`` and a comma (else at the file's start); ``ended``: whether it holds the file's
    end (found by the scan of its strings and brackets only)."""
    text = np.frombuffer(buffer, dtype=np.uint8, count=length)
    ends = None if ended else _record_ends(text, begun)
    if ends is not None:
        return _split_lines(text, ends)
    # brackets packed densely (in a record nested too deeply, or not) are first checked for nesting, the array's own counted
    marked = marks(text, length // _BYTES_A_MARK) or (None if deeper(text, DEEPEST + 1, int(begun)) else marks(text))
    if marked is None:
        return None
    found, quotes = marked
    inside = (quotes - np.searchsorted(escaped_quotes(text), found)) % 2 == 1
    kinds = text[found]
    controls = kinds < CONTROL
    if (controls & (inside | ~_WHITE_BYTES[kinds])).any():  # raw in a string, or outside one and no white space
        return None
    breaks = found[controls & (kinds != _TAB)]
    found, kinds = found[~controls & ~inside], kinds[~controls & ~inside]
    depth = np.cumsum(STEP[kinds]) + begun  # after each, the array's own bracket counted
    if len(depth) and depth.max() > DEEPEST + 1:
        return None
    before = depth - STEP[kinds]
    top = np.minimum(before, depth) <= 1
    at, kinds = found[top], kinds[top]
    if (_TOP_DEPTH[kinds] != before[top]).any() or not np.isin(kinds[:-1].astype(np.int64) << 8 | kinds[1:], _FOLLOWS).all():
        return None
    if len(kinds) and kinds[0] != (_LBRACE if begun else _LBRACKET):
        return None
    commas = _separators(text, at, kinds)
    if commas is None:
        return None
    closed = bool(len(kinds)) and kinds[-1] == _RBRACKET
    if not closed and not len(commas):
        return 0, 0, False
    used = int(at[-1] if closed else commas[-1]) + 1
    records = int(((kinds == _LBRACE) & (at < used)).sum())  # none: an empty array
    if records:
        text[breaks[breaks < used]] = _SPACE
        text[commas] = _NEWLINE
        if closed:
            text[used - 1] = _NEWLINE
        if not begun:
            text[at[0]] = _SPACE
    return used, records, closed


def _record_ends(text: np.ndarray, begun: bool) -> np.ndarray | None:
    """The line ends of a block laid out as one record a line (``},\n{``): each right after a record's brace and a
    comma and, but the last, right before the next record's brace (the block's first byte, the file's ``[`` or the
    line end before its first record, is none of them). None when the block is laid out otherwise or holds no
    such line end."""
    if len(text) < 2 or text[0] != (_NEWLINE if begun else _LBRACKET) or text[1] != _LBRACE:
        return None
    ends = positions(text[1:], lambda piece: piece == _NEWLINE) + 1
    if not len(ends) or ends[0] < 3:
        return None
    if (text[ends - 1] != _COMMA).any() or (text[ends - 2] != _RBRACE).any() or (text[ends[:-1] + 1] != _LBRACE).any():
        return None
    return ends


def _split_lines(text: np.ndarray, ends: np.ndarray) -> tuple[int, int, bool]:
    """A block of one record a line (``ends``, see :func:`_record_ends`) made JSON lines in place, up to the comma
    before its last line end (the rest carried to the next block, whose first byte it is), as :func:`_split` gives
    them: each comma a line end, each line end and the first byte a space. (A record nested deeper than
    :data:`~arena_cli.io.json_bytes.DEEPEST` is found on the lines made, as on JSON lines.)"""
    used = int(ends[-1])
    text[ends - 1] = _NEWLINE
    text[ends[:-1]] = _SPACE
    text[0] = _SPACE
    return used, len(ends), False


def _separators(text: np.ndarray, at: np.ndarray, kinds: np.ndarray) -> np.ndarray | None:
    """The commas between records, given the top level's brackets (``at``, of ``kinds``); None when the bytes
    between them are not white space and, between two records, one comma (``[1]``, ``[{},,{}]``, ``[{},]``)."""
    between = np.flatnonzero((kinds[:-1] == _LBRACKET) | (kinds[:-1] == _RBRACE))  # gaps after [ and after records
    starts = np.concatenate(([0], at[between] + 1))  # and the block's first bytes, before its first bracket
    stops = np.concatenate((at[:1] if len(at) else [len(text)], at[between + 1]))
    lengths = stops - starts
    offsets = np.cumsum(lengths) - lengths
    where = np.arange(lengths.sum()) + np.repeat(starts - offsets, lengths)
    found = np.flatnonzero(~_WHITE_BYTES[text[where]])
    commas = where[found]
    expected = np.concatenate(([False], (kinds[between] == _RBRACE) & (kinds[between + 1] == _LBRACE)))
    gaps = np.searchsorted(offsets, found, side="right") - 1
    if (text[commas] != _COMMA).any() or not np.array_equal(np.bincount(gaps, minlength=len(lengths)), expected):
        return None
    return commas
