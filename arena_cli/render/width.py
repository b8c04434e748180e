"""Fitting a table to a terminal's width without hiding a result.

A number is never cut: a numeric column is always as wide as its widest cell. Text (model names, paths,
reasons) wraps and folds, and a header wraps between its words. When the columns still do not fit, the least
important give way (highest ``priority`` first), and then grouped columns continue in further tables; a note
names whatever is not shown. When even that does not fit, the table is drawn wider than the terminal rather
than cut. A file or a pipe has no width: every column is shown in full.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

#: A header word longer than this may fold (model names heading the columns of a matrix).
HEADER_FOLD = 12
#: Text cells (model names, paths) fold down to this width at most.
TEXT_FOLD = 12


@dataclass(frozen=True)
class Block:
    """One table as drawn: which columns (indices into the shown table) and the content width of each."""

    columns: tuple[int, ...]
    widths: tuple[int, ...]

    @property
    def width(self) -> int:
        return drawn_width(self.widths)


@dataclass(frozen=True)
class Plan:
    """How a table fits a width: its blocks (more than one: the columns continue in further tables) and the
    columns left out (indices); ``width`` the width it was fitted to (None: no limit)."""

    blocks: tuple[Block, ...]
    dropped: tuple[int, ...]
    width: int | None

    @property
    def overflows(self) -> bool:
        return self.width is not None and any(b.width > self.width for b in self.blocks)


def drawn_width(widths: Sequence[int]) -> int:
    """Width of a boxed table with these content widths: one space of padding each side, a rule between and
    around the columns."""
    return sum(widths) + 3 * len(widths) + 1


def _len(text: str) -> int:
    from rich.cells import cell_len

    return cell_len(text)


def column_widths(header: str, cells: Sequence[str], numeric: bool, text_fold: int = TEXT_FOLD) -> tuple[int, int]:
    """(narrowest, natural) content width of a column: a numeric cell is never broken, a text cell folds to
    ``text_fold``, a header wraps between words and folds only a word longer than :data:`HEADER_FOLD`."""
    widest = max((_len(text) for text in cells), default=0)
    longest_word = max((_len(word) for word in header.split()), default=0)
    header_min = min(longest_word, max(widest, HEADER_FOLD))
    narrowest = max(widest if numeric else min(widest, text_fold), header_min, 1)
    return narrowest, max(widest, _len(header), 1)


def plan(
    headers: Sequence[str],
    cells: Sequence[Sequence[str]],
    numeric: Sequence[bool],
    priority: Sequence[int],
    groups: Sequence[str | None],
    width: int | None,
) -> Plan:
    """Fit a table (``cells`` per column, as drawn) to ``width`` terminal columns, or to its natural width
    when ``width`` is None. Text folds to :data:`TEXT_FOLD` columns, and narrower only when the table would
    otherwise not fit."""
    natural = [column_widths(h, c, n)[1] for h, c, n in zip(headers, cells, numeric)]
    if width is None:
        return Plan((Block(tuple(range(len(headers))), tuple(natural)),), (), None)

    def fitted(text_fold: int, width: int) -> Plan:
        narrowest = [column_widths(h, c, n, text_fold)[0] for h, c, n in zip(headers, cells, numeric)]
        return _fitted(narrowest, natural, numeric, priority, groups, width)

    first = fitted(TEXT_FOLD, width)
    return fitted(1, width) if first.overflows else first


def _fitted(narrowest: list[int], natural: list[int], numeric: Sequence[bool], priority: Sequence[int], groups: Sequence[str | None], width: int) -> Plan:
    """Leave out the least important columns while the narrowest widths do not fit, then continue grouped
    columns in further tables, then hand each table's spare room out."""
    def fits(columns: Sequence[int]) -> bool:
        return drawn_width([narrowest[k] for k in columns]) <= width

    shown = list(range(len(narrowest)))
    dropped: list[int] = []
    while not fits(shown):
        droppable = [k for k in shown if priority[k] > 0]
        if not droppable:
            break
        least = max(droppable, key=lambda k: (priority[k], k))
        shown.remove(least)
        dropped.append(least)
    blocks = [shown] if fits(shown) else _stacked(shown, groups, fits)

    def spread(columns: Sequence[int]) -> Block:
        """The narrowest widths, then what room is left: first to text (fewer folded names), then to headers."""
        widths = {k: narrowest[k] for k in columns}
        room = width - drawn_width(list(widths.values()))
        for k in sorted(columns, key=lambda k: (numeric[k], k)):
            extra = max(0, min(room, natural[k] - widths[k]))
            widths[k] += extra
            room -= extra
        return Block(tuple(columns), tuple(widths[k] for k in columns))

    return Plan(tuple(spread(b) for b in blocks), tuple(sorted(dropped)), width)


def _stacked(shown: Sequence[int], groups: Sequence[str | None], fits) -> list[list[int]]:
    """The shown columns in as few tables as fit, each repeating the ungrouped columns and continuing with
    whole groups in order; a group too wide on its own gets a table of its own (drawn wider than the width)."""
    keys = [k for k in shown if groups[k] is None]
    members: dict[str, list[int]] = {}
    for k in shown:
        group = groups[k]
        if group is not None:
            members.setdefault(group, []).append(k)
    blocks: list[list[int]] = []
    current: list[int] = []
    for columns in members.values():
        if current and not fits(keys + current + columns):
            blocks.append(sorted(keys + current))
            current = []
        current += columns
    blocks.append(sorted(keys + current))
    return blocks
