"""JSON text scanned on its bytes with numpy, a piece at a time, without decoding it: where given bytes are, which
quotes are escaped, and how deep each line nests.

How deep a JSON value may nest is bounded: :data:`DEEPEST` levels (``{"a": 1}`` is one level, ``{"a": [1]}`` two),
and every read quarantines a line or a record nested deeper. Each reader of a line reads deeper nesting otherwise:
polars reads 1,024 levels and refuses more; Python's json module gives up at about a thousand, less what its
caller's stack takes; polars' read of a value nested hundreds of levels deep, with the types it infers, takes
seconds, or overflows its stack (the process dies).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

#: Levels of nesting a line (a record of an array) may have: one nested deeper is quarantined.
DEEPEST = 512
#: Bytes scanned at a time (a mask of a whole block would cost more to allocate than to fill).
SCAN_BYTES = 1 << 20
_QUOTE, _BACKSLASH, _NEWLINE = b'"\\\n'
_LBRACE, _RBRACE = b"{}"
#: Bytes below this are control characters (none may be raw in a string).
CONTROL = 0x20
#: The depth each bracket or brace adds.
STEP = np.zeros(256, dtype=np.int64)
STEP[list(b"[{")], STEP[list(b"]}")] = 1, -1


def positions(text: np.ndarray, found: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """Where in ``text`` the bytes ``found`` tells (a mask of bytes from bytes) are, a piece at a time."""
    return np.concatenate([np.flatnonzero(found(text[at : at + SCAN_BYTES])) + at for at in range(0, len(text), SCAN_BYTES)]
                          or [np.zeros(0, dtype=np.int64)])


def marks(text: np.ndarray, most: int | None = None) -> tuple[np.ndarray, np.ndarray] | None:
    """Where the brackets, braces and control bytes of ``text`` are, and how many quotes (escaped or not) are
    before each: a piece at a time, the quotes counted between the marks, not found one by one. None as soon as
    more than ``most`` are found (their positions take sixteen bytes each: a text of brackets, thirty times its
    size and more once read)."""
    found, quotes, total = [np.zeros(0, dtype=np.int64)], [np.zeros(0, dtype=np.int64)], 0
    for at in range(0, len(text), SCAN_BYTES):
        piece = text[at : at + SCAN_BYTES]
        folded = piece | 0x20  # [ and ] as { and }
        marked = np.flatnonzero((folded == _LBRACE) | (folded == _RBRACE) | (piece < CONTROL))
        before, all_quotes = _quotes_before(piece, marked)
        found.append(marked + at)
        quotes.append(before + total)
        total += all_quotes
        if most is not None and (most := most - len(marked)) < 0:
            return None
    return np.concatenate(found), np.concatenate(quotes)


def _quotes_before(piece: np.ndarray, found: np.ndarray) -> tuple[np.ndarray, int]:
    """How many quotes (escaped or not) are before each of ``found`` in ``piece``, and in all: counted from the
    piece's start to the first, from each to the next and from the last to the end, not found one by one."""
    counts = np.cumsum(np.add.reduceat((piece == _QUOTE).view(np.uint8), np.concatenate(([0], found)), dtype=np.uint32), dtype=np.int64)
    return counts[:-1], int(counts[-1])


def escaped_quotes(text: np.ndarray, backslashes: np.ndarray | None = None, carried: bool = False) -> np.ndarray:
    """Where the escaped quotes of ``text`` are: right after a run of backslashes of odd length (``backslashes``:
    where they are, when known; ``carried``: whether the text before ``text`` ended in such a run)."""
    if backslashes is None:
        backslashes = positions(text, lambda piece: piece == _BACKSLASH)
    after = backslashes[backslashes + 1 < len(text)] + 1
    quotes = after[text[after] == _QUOTE]
    if carried and len(text) and text[0] == _QUOTE:
        quotes = np.concatenate(([0], quotes))
    return quotes[_escaped(quotes, backslashes, carried)]


def _escaped(quotes: np.ndarray, backslashes: np.ndarray, carried: bool = False) -> np.ndarray:
    """Whether each quote ends a run of backslashes (right before it) of odd length; a run at the text's start is one
    longer when ``carried`` (the text before it ended in a run of odd length)."""
    if not len(backslashes):
        return (quotes == 0) & carried
    last = np.maximum(np.searchsorted(backslashes, quotes) - 1, 0)  # the last backslash before each quote
    length = _run_lengths(backslashes, last, carried)
    return np.where(backslashes[last] == quotes - 1, length % 2 == 1, (quotes == 0) & carried)


def _run_lengths(backslashes: np.ndarray, which: np.ndarray | int, carried: bool) -> np.ndarray:
    """How long the run of backslashes is up to each of ``which`` (indices into ``backslashes``): each run known by
    the position of its first backslash among them all, however long the run."""
    starts = np.ones(len(backslashes), dtype=bool)
    starts[1:] = np.diff(backslashes) != 1
    first = np.maximum.accumulate(np.where(starts, np.arange(len(backslashes)), 0))[which]
    return which - first + 1 + (carried & (backslashes[first] == 0))


def nesting(block: bytes | memoryview, floor: int) -> np.ndarray:
    """How deep each line of ``block`` nests (its brackets and braces outside strings; the lines are those a split
    on newlines gives, the last one after the last newline, empty or not): exactly for a line with more than
    ``floor`` opening brackets and braces (in strings or not), up to :data:`DEEPEST` (a line nested deeper as
    ``DEEPEST + 1``); at most ``floor`` for the others.

    The opening brackets and braces of every line are counted first, a piece at a time (nothing kept but a count
    per line); only the lines with more than ``floor`` of them are scanned for strings (:class:`Brackets`), one
    after another, each on its own: an unclosed string or bracket in a line that is no valid JSON ends with it."""
    text = np.frombuffer(block, dtype=np.uint8)
    counts, carried = [], 0  # the opening ones of each line ended so far, and of the line not yet ended
    for at in range(0, len(text), SCAN_BYTES):
        piece = text[at : at + SCAN_BYTES]
        found = _openings_and_ends(piece)
        ends = np.flatnonzero(piece[found] == _NEWLINE)
        if len(ends):
            counts.append(np.diff(ends, prepend=-1) - 1)
            counts[-1][0] += carried
            carried = len(found) - int(ends[-1]) - 1
        else:
            carried += len(found)
    depths = np.concatenate([*counts, [carried]])
    suspects = np.flatnonzero(depths > floor)
    if len(suspects):
        newlines = positions(text, lambda piece: piece == _NEWLINE)
        starts = np.concatenate(([0], newlines + 1))[suspects]
        depths[suspects] = _depths(block, starts, np.append(newlines, len(text))[suspects])
    return depths


def deeper(text: np.ndarray, levels: int, depth: int = 0) -> bool:
    """Whether ``text``, a JSON text from where ``depth`` brackets are open, nests deeper than ``levels`` somewhere:
    scanned a piece at a time (:class:`Brackets`), no further than where it does."""
    brackets = Brackets(lines=False, depth=depth)
    for at in range(0, len(text), SCAN_BYTES):
        depths = brackets.scan(text[at : at + SCAN_BYTES])[2]
        if len(depths) and depths.max() > levels:
            return True
    return False


def _openings_and_ends(piece: np.ndarray) -> np.ndarray:
    """Where the opening brackets and braces and the newlines of ``piece`` are; the mask made in place (a new array
    for each step costs more to allocate than to fill)."""
    folded = piece | 0x20  # [ as {
    found = np.equal(folded, _LBRACE, out=folded.view(bool))
    found |= piece == _NEWLINE
    return np.flatnonzero(found)


def _depths(block: bytes | memoryview, starts: np.ndarray, stops: np.ndarray) -> np.ndarray:
    """How deep the lines ``block[starts[i]:stops[i]]`` nest, up to :data:`DEEPEST` (a line nested deeper as
    ``DEEPEST + 1``), scanned one after another, each ended by a newline (see :func:`_line_pieces`)."""
    deepest = np.zeros(len(starts), dtype=np.int64)
    brackets, line = Brackets(lines=True), 0  # the first line the next piece holds part of
    for piece in _line_pieces(block, starts, stops, deepest):
        found, ended, depth = brackets.scan(np.frombuffer(piece, dtype=np.uint8))
        if len(found):
            local = np.cumsum(ended) - ended
            first = np.flatnonzero(np.diff(local, prepend=-1))  # each line's first mark in the piece
            lines = line + local[first]
            deepest[lines] = np.maximum(deepest[lines], np.maximum.reduceat(depth, first))
            line += int(ended.sum())
    return np.minimum(deepest, DEEPEST + 1)


def _line_pieces(block: bytes | memoryview, starts: np.ndarray, stops: np.ndarray, deepest: np.ndarray) -> Iterator[bytes]:
    """The lines ``block[starts[i]:stops[i]]``, each ended by a newline, one after another in pieces of about
    :data:`SCAN_BYTES`; the rest of a line left out once ``deepest``, filled in as the pieces are scanned, has it
    nested deeper than :data:`DEEPEST` (a line of millions of brackets is scanned no further than its first piece)."""
    view, size = memoryview(block), 0
    parts: list[bytes | memoryview] = []
    for line, (start, stop) in enumerate(zip(starts.tolist(), stops.tolist())):
        for at in range(start, stop, SCAN_BYTES):
            if deepest[line] > DEEPEST:
                break
            parts.append(view[at : min(at + SCAN_BYTES, stop)])
            size += len(parts[-1])
            if size >= SCAN_BYTES:
                yield b"".join(parts)
                parts, size = [], 0
        parts.append(b"\n")
        size += 1
    yield b"".join(parts)


@dataclass
class Brackets:
    """The brackets and braces of a JSON text outside its strings, and how deep each leaves it, scanned a piece at a
    time: what a piece leaves open (a string, an escape, the depth) is carried to the next, so that a text of any
    length takes memory for a piece only. ``lines``: a newline ends a line, and its strings and brackets with it
    (JSON lines); else newlines are white space like any other."""

    lines: bool
    depth: int = 0
    inside: bool = False
    escape: bool = False

    def scan(self, piece: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Where the brackets and braces of ``piece`` (and its newlines, for lines) are, which are newlines, and the
        depth after each (within its line; a newline's is its line's last)."""
        if not len(piece):
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=bool), np.zeros(0, dtype=np.int64)
        backslashes = np.flatnonzero(piece == _BACKSLASH)
        escaped = escaped_quotes(piece, backslashes, self.escape)
        folded = piece | 0x20  # [ and ] as { and }
        marked = folded == _LBRACE
        marked |= folded == _RBRACE
        if self.lines:
            marked |= piece == _NEWLINE
        found = np.flatnonzero(marked)
        kinds = piece[found]
        before, quotes = _quotes_before(piece, found)
        before, quotes = before - np.searchsorted(escaped, found), quotes - len(escaped)  # those not escaped
        ended = kinds == _NEWLINE
        line = np.cumsum(ended) - ended  # the line of each mark, in the piece
        inside = (before + np.concatenate(([int(self.inside)], -before[ended]))[line]) % 2 == 1
        depth = np.cumsum(np.where(inside, 0, STEP[kinds]))
        depth += np.concatenate(([self.depth], -depth[ended]))[line]
        if ended.any():
            last = int(np.flatnonzero(ended)[-1])
            self.depth, self.inside = int(depth[-1]) if last < len(found) - 1 else 0, (quotes - int(before[last])) % 2 == 1
        else:
            self.depth, self.inside = int(depth[-1]) if len(found) else self.depth, (int(self.inside) + quotes) % 2 == 1
        self.escape = bool(piece[-1] == _BACKSLASH and _run_lengths(backslashes, len(backslashes) - 1, self.escape) % 2)
        return found, ended, depth
