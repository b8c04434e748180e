"""What a command hands to the renderers: named tables (polars frames) plus settings, nothing format-specific."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import polars as pl


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
class Table:
    """One table of a document. ``name`` is the stable key in JSON; ``title`` is for people.

    ``float_digits`` rounds float columns for text formats (table, markdown, csv); JSON and parquet keep
    full precision so machines lose nothing.
    """

    name: str
    frame: pl.DataFrame
    title: str = ""
    float_digits: dict[str, int] = field(default_factory=dict)
    notes: tuple[str, ...] = ()


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

    def table(self, name: str) -> Table:
        for t in self.tables:
            if t.name == name:
                return t
        raise KeyError(name)

    @property
    def primary(self) -> Table:
        return self.tables[0]
