"""What a command hands to the renderers: named tables (polars frames) plus settings, nothing format-specific."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import polars as pl
    from matplotlib.figure import Figure as MatplotlibFigure


class OutputFormat(str, Enum):
    table = "table"
    json = "json"
    csv = "csv"
    markdown = "markdown"
    parquet = "parquet"
    html = "html"


_EXTENSIONS = {
    ".json": OutputFormat.json,
    ".csv": OutputFormat.csv,
    ".md": OutputFormat.markdown,
    ".markdown": OutputFormat.markdown,
    ".parquet": OutputFormat.parquet,
    ".html": OutputFormat.html,
    ".htm": OutputFormat.html,
    ".txt": OutputFormat.table,
}


def format_from_path(path: Path) -> OutputFormat | None:
    """The format an ``-o FILE`` implies by its extension, or None when the extension says nothing."""
    return _EXTENSIONS.get(Path(path).suffix.lower())


@dataclass(frozen=True)
class Column:
    """One column of what people see (table, markdown, html), built from columns of the machine frame.

    ``value`` shown with ``digits`` decimals; with ``lower``/``upper`` it reads ``value [lower, upper]``
    (just ``value`` when both bounds are null); with ``through`` it reads ``value–through`` (a range);
    ``change`` marks a signed change (colored arrows on a terminal, ``+3`` / ``-2`` in files); ``strong``
    names a boolean column that emphasises the cell where true; ``percent`` shows shares (0..1) as
    percentages. Null values show as an em dash.

    On a terminal too narrow for every column, ``priority`` says which give way first (the highest; 0: never
    dropped), and columns of the same ``group`` continue together in a further table (columns without one
    repeat in each); what is left out is named in a note. Numbers are never cut, whatever the width.
    """

    header: str
    value: str
    lower: str | None = None
    upper: str | None = None
    through: str | None = None
    digits: int | None = None
    change: bool = False
    strong: str | None = None
    priority: int = 0
    group: str | None = None
    percent: bool = False


@dataclass(frozen=True)
class Table:
    """One table of a document. ``name`` is the stable key in JSON; ``title`` is for people.

    ``float_digits`` rounds float columns for text formats (table, markdown, csv); JSON and parquet keep
    full precision so machines lose nothing. ``layout`` (optional) is how people see the table: the
    table, markdown and html formats show those columns; json, csv and parquet always carry ``frame``.
    ``empty``: the sentence people read instead of a table without rows; a table without rows and without
    one is left out of the human views (a plain fit has no style coefficients), except the primary table.
    """

    name: str
    frame: pl.DataFrame
    title: str = ""
    float_digits: dict[str, int] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    layout: tuple[Column, ...] = ()
    empty: str = ""

    @property
    def empty_sentence(self) -> str:
        return self.empty or "No rows."


@dataclass(frozen=True)
class Figure:
    """A plot of a document, drawn on demand (matplotlib imported only when a format shows plots).

    html inlines it as SVG; markdown written to a file links a PNG written next to it; the other formats
    leave it out. It is placed after the table named ``after`` (at the end when None).
    """

    name: str
    title: str
    draw: Callable[[], MatplotlibFigure]
    caption: str = ""
    after: str | None = None


@dataclass(frozen=True)
class Document:
    """A command's result: its tables in order (the first is the primary one) and its settings (``meta``).

    ``meta`` must be JSON-serialisable and deterministic (no wall-clock times), so the same inputs and seed
    give byte-identical output.
    """

    kind: str
    tables: tuple[Table, ...]
    meta: dict[str, Any] = field(default_factory=dict)
    title: str = ""
    figures: tuple[Figure, ...] = ()

    def table(self, name: str) -> Table:
        for t in self.tables:
            if t.name == name:
                return t
        raise KeyError(name)

    @property
    def primary(self) -> Table:
        return self.tables[0]

    @property
    def readable_tables(self) -> tuple[Table, ...]:
        """The tables a person reads: one without rows is said in a sentence, or left out of tables, markdown
        and HTML when it has none to say (see :class:`Table`); machine formats keep every table so their shape
        never changes."""
        return tuple(t for t in self.tables if t.frame.height or t is self.primary or t.empty)
