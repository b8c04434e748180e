"""Renderers for the text and data formats: rich table, JSON, CSV, markdown, parquet."""

from __future__ import annotations

import io
import json
import math
from collections.abc import Callable
from typing import Any

import polars as pl

from arena_cli.render.document import Document, OutputFormat, Table

JSON_SCHEMA_VERSION = 1


def _rounded(table: Table) -> pl.DataFrame:
    frame = table.frame
    exprs = [pl.col(c).round(d) for c, d in table.float_digits.items() if c in frame.columns and frame.schema[c].is_float()]
    return frame.with_columns(exprs) if exprs else frame


def _json_value(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _json_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_value(v) for v in value]
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return value


def to_json(doc: Document) -> bytes:
    """Stable shape: ``{"schema_version", "kind", "meta", "tables": {name: [row objects]}}``, keys in a fixed order."""
    payload = {
        "schema_version": JSON_SCHEMA_VERSION,
        "kind": doc.kind,
        "meta": _json_value(doc.meta),
        "tables": {t.name: _json_value(t.frame.to_dicts()) for t in doc.tables},
    }
    return (json.dumps(payload, indent=2, ensure_ascii=False, allow_nan=False) + "\n").encode()


def _plain_frame(frame: pl.DataFrame) -> pl.DataFrame:
    """Nested columns (lists, structs) as JSON text, so flat formats can hold them."""
    nested = [c for c, t in frame.schema.items() if t.is_nested()]
    return frame.with_columns(pl.col(c).map_elements(lambda v: json.dumps(_json_value(v)), return_dtype=pl.String) for c in nested) if nested else frame


def to_csv(doc: Document) -> bytes:
    """The primary table only (CSV holds one table); use JSON for the whole document."""
    return _plain_frame(_rounded(doc.primary)).write_csv().encode()


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and math.isnan(value):
        return ""
    return str(value).replace("|", "\\|").replace("\n", " ")


def markdown_table(frame: pl.DataFrame) -> str:
    header = "| " + " | ".join(frame.columns) + " |"
    align = "|" + "|".join("---:" if t.is_numeric() else "---" for t in frame.schema.values()) + "|"
    rows = ["| " + " | ".join(_cell(v) for v in row) + " |" for row in frame.iter_rows()]
    return "\n".join([header, align, *rows])


def to_markdown(doc: Document) -> bytes:
    parts: list[str] = []
    if doc.title:
        parts.append(f"## {doc.title}\n")
    for table in doc.tables:
        if table.title:
            parts.append(f"### {table.title}\n")
        parts.append(markdown_table(_plain_frame(_rounded(table))) + "\n")
        parts.extend(f"{note}\n" for note in table.notes)
    return "\n".join(parts).encode()


def to_parquet(doc: Document) -> bytes:
    """The primary table only, full precision."""
    buffer = io.BytesIO()
    doc.primary.frame.write_parquet(buffer)
    return buffer.getvalue()


def rich_tables(doc: Document) -> list[Any]:
    from rich.table import Table as RichTable

    out = []
    for table in doc.tables:
        frame = _plain_frame(_rounded(table))
        rich_table = RichTable(title=table.title or None, caption="\n".join(table.notes) or None)
        for name, dtype in frame.schema.items():
            rich_table.add_column(name, justify="right" if dtype.is_numeric() else "left")
        for row in frame.iter_rows():
            rich_table.add_row(*(_cell(v) for v in row))
        out.append(rich_table)
    return out


def to_table_text(doc: Document) -> bytes:
    from rich.console import Console

    console = Console(file=io.StringIO(), width=200, color_system=None)
    for rich_table in rich_tables(doc):
        console.print(rich_table)
    return console.file.getvalue().encode()


def print_rich(doc: Document) -> None:
    """The terminal view: rich tables on stdout (data goes to stdout, logs to stderr)."""
    from rich.console import Console

    console = Console()
    for rich_table in rich_tables(doc):
        console.print(rich_table)


RENDERERS: dict[OutputFormat, Callable[[Document], bytes]] = {
    OutputFormat.json: to_json,
    OutputFormat.csv: to_csv,
    OutputFormat.markdown: to_markdown,
    OutputFormat.parquet: to_parquet,
    OutputFormat.table: to_table_text,
}
