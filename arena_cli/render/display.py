"""What people see of a table: text cells built once from a table's layout, shared by the table, markdown
and html renderers so the three agree cell for cell (each renderer only adds its own emphasis and colour)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

import polars as pl

from arena_cli.console import printable
from arena_cli.exprs import unsigned_zero, unsigned_zero_text
from arena_cli.render.document import Column, Table

MISSING = "—"


@dataclass(frozen=True)
class Cell:
    """One shown cell. ``text`` is the plain form written to files (``+3``, ``3 [2, 5]``); a change cell
    also carries its ``direction`` (sign) and ``magnitude`` (unsigned text) so a terminal can draw arrows."""

    text: str
    change: bool = False
    direction: int = 0
    magnitude: str = ""
    strong: bool = False


@dataclass(frozen=True)
class Shown:
    """A whole table as people see it: headers, which columns are numeric (right-aligned, never broken), rows
    of cells; and for a narrow terminal each column's ``priority`` and ``group`` (see :class:`Column`)."""

    headers: list[str]
    numeric: list[bool]
    rows: list[list[Cell]]
    priority: list[int]
    groups: list[str | None]


def json_value(value: Any) -> Any:
    """A JSON-safe copy: non-finite floats become null, dates ISO strings, tuples lists."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: json_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_value(v) for v in value]
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return value


def rounded(table: Table) -> pl.DataFrame:
    """The frame with float columns rounded to the table's ``float_digits`` (text formats only); a value that
    rounds to zero is 0.0, never -0.0 (a tiny negative difference, which says nothing of its sign once rounded)."""
    frame = table.frame
    exprs = [unsigned_zero(pl.col(c).round(d)).alias(c) for c, d in table.float_digits.items() if c in frame.columns and frame.schema[c].is_float()]
    return frame.with_columns(exprs) if exprs else frame


def plain_frame(frame: pl.DataFrame) -> pl.DataFrame:
    """Nested columns (lists, structs) as JSON text, so flat formats can hold them."""
    nested = [c for c, t in frame.schema.items() if t.is_nested()]
    if not nested:
        return frame
    return frame.with_columns(pl.col(c).map_elements(lambda v: json.dumps(json_value(v)), return_dtype=pl.String) for c in nested)


def plain_text(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return printable(str(value))


def _number(value: Any, digits: int | None) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return MISSING
    if isinstance(value, float) and digits is not None:
        return unsigned_zero_text(f"{value:.{digits}f}")
    return printable(str(value))


def _change(value: Any, digits: int | None, strong: bool) -> Cell:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return Cell(MISSING, strong=strong)
    magnitude = _number(abs(value), digits)
    direction = 0 if float(magnitude) == 0 else (1 if value > 0 else -1)
    sign = {1: "+", -1: "-", 0: ""}[direction]
    return Cell(sign + magnitude, change=True, direction=direction, magnitude=magnitude, strong=strong)


def _column_cells(frame: pl.DataFrame, column: Column, digits: int | None) -> list[Cell]:
    if column.percent:
        frame = frame.with_columns(pl.col(c) * 100 for c in (column.value, column.lower, column.upper) if c)
    values = frame[column.value].to_list()
    strong = frame[column.strong].fill_null(False).to_list() if column.strong else [False] * len(values)
    if column.change:
        return [_change(v, digits, s) for v, s in zip(values, strong)]
    texts = [_number(v, digits) for v in values]
    if column.lower and column.upper:
        bounds = zip(frame[column.lower].to_list(), frame[column.upper].to_list())
        texts = [
            t if t == MISSING or (lo is None and hi is None) else f"{t} [{_number(lo, digits)}, {_number(hi, digits)}]"
            for t, (lo, hi) in zip(texts, bounds)
        ]
    if column.through:
        ends = frame[column.through].to_list()
        texts = [
            MISSING if t == MISSING or end is None else t if _number(end, digits) == t else f"{t}–{_number(end, digits)}"
            for t, end in zip(texts, ends)
        ]
    return [Cell(t, strong=s) for t, s in zip(texts, strong)]


def shown(table: Table) -> Shown:
    """The table as people see it: its ``layout`` when given, else every column of the frame, floats with the
    table's ``float_digits`` (on a narrow terminal the first column stays, the others give way from the right).
    Control characters in a cell or header (a model name a library caller gave) are shown as escapes."""
    if not table.layout:
        frame = plain_frame(table.frame)
        digits = [table.float_digits.get(c) if t.is_float() else None for c, t in frame.schema.items()]
        rows = [[Cell(_number(v, d) if d is not None else plain_text(v)) for v, d in zip(row, digits)] for row in frame.iter_rows()]
        n = frame.width
        return Shown([printable(c) for c in frame.columns], [t.is_numeric() for t in frame.schema.values()], rows, list(range(n)), [None] * n)
    frame = table.frame
    columns = [
        _column_cells(frame, c, c.digits if c.digits is not None else table.float_digits.get(c.value))
        for c in table.layout
    ]
    numeric = [frame.schema[c.value].is_numeric() for c in table.layout]
    rows = [list(row) for row in zip(*columns)] if columns else []
    return Shown([printable(c.header) for c in table.layout], numeric, rows, [c.priority for c in table.layout], [c.group for c in table.layout])
