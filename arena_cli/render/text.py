"""Renderers for the text and data formats: rich table, JSON, CSV, markdown, parquet."""

from __future__ import annotations

import io
import json
from typing import Any

from arena_cli.render.display import Cell, Shown, json_value, plain_frame, rounded, shown
from arena_cli.render.document import Document, Figure

JSON_SCHEMA_VERSION = 2


def to_json(doc: Document) -> bytes:
    """Stable shape: ``{"schema_version", "kind", "meta", "tables": {name: [row objects]}}``, keys in a fixed order."""
    payload = {
        "schema_version": JSON_SCHEMA_VERSION,
        "kind": doc.kind,
        "meta": json_value(doc.meta),
        "tables": {t.name: json_value(t.frame.to_dicts()) for t in doc.tables},
    }
    return (json.dumps(payload, indent=2, ensure_ascii=False, allow_nan=False) + "\n").encode()


def to_csv(doc: Document) -> bytes:
    """The primary table only (CSV holds one table); use JSON for the whole document."""
    return plain_frame(rounded(doc.primary)).write_csv().encode()


def _markdown_cell(cell: Cell) -> str:
    text = cell.text.replace("|", "\\|").replace("\n", " ")
    return f"**{text}**" if cell.strong and text else text


def markdown_table(table: Shown) -> str:
    header = "| " + " | ".join(h.replace("|", "\\|") for h in table.headers) + " |"
    align = "|" + "|".join("---:" if numeric else "---" for numeric in table.numeric) + "|"
    rows = ["| " + " | ".join(_markdown_cell(c) for c in row) + " |" for row in table.rows]
    return "\n".join([header, align, *rows])


def figure_link(figure: Figure, prefix: str) -> str:
    """Where markdown expects a figure's image: ``<prefix><name>.png``, beside the markdown file."""
    return f"{prefix}{figure.name}.png"


def to_markdown(doc: Document, figure_prefix: str | None = None) -> bytes:
    """GitHub-flavoured markdown (pastes into a pull-request comment). Figures are linked as images only
    when ``figure_prefix`` says where their PNG files are written (see :func:`emit`)."""
    parts: list[str] = []
    if doc.title:
        parts.append(f"## {doc.title}\n")

    def figures_after(anchor: str | None) -> None:
        if figure_prefix is None:
            return
        for figure in doc.figures:
            if figure.after == anchor:
                parts.append(f"### {figure.title}\n")
                parts.append(f"![{figure.title}]({figure_link(figure, figure_prefix)})\n")
                if figure.caption:
                    parts.append(f"{figure.caption}\n")

    for table in doc.readable_tables:
        if table.title:
            parts.append(f"### {table.title}\n")
        parts.append(markdown_table(shown(table)) + "\n")
        parts.extend(f"{note}\n" for note in table.notes)
        figures_after(table.name)
    figures_after(None)
    return "\n".join(parts).encode()


def to_parquet(doc: Document) -> bytes:
    """The primary table only, full precision."""
    buffer = io.BytesIO()
    doc.primary.frame.write_parquet(buffer)
    return buffer.getvalue()


def _rich_cell(cell: Cell, terminal: bool) -> Any:
    """A terminal draws changes as coloured arrows and emphasis in bold; a file gets the plain ``+3`` / ``-2``
    and a ``*`` after an emphasised cell."""
    from rich.text import Text

    if not terminal:
        return Text(cell.text + ("*" if cell.strong and cell.text else ""))  # no bold in a plain file
    style = "bold" if cell.strong else ""
    if cell.change and cell.direction:
        arrow, colour = ("↑", "green") if cell.direction > 0 else ("↓", "red")
        return Text(arrow + cell.magnitude, style=f"{style} {colour}".strip())
    if cell.change:
        return Text(cell.text, style=f"{style} dim".strip())
    return Text(cell.text, style=style)


def rich_tables(doc: Document, terminal: bool = False) -> list[Any]:
    from rich.table import Table as RichTable
    from rich.text import Text

    out = []
    for table in doc.readable_tables:
        view = shown(table)
        caption = Text("\n".join(table.notes)) if table.notes else None
        rich_table = RichTable(title=Text(table.title) if table.title else None, caption=caption, caption_justify="left")
        for k, (header, numeric) in enumerate(zip(view.headers, view.numeric)):
            # names (models, features) are never cut short: the numbers beside them wrap first
            widest = max((len(row[k].text) for row in view.rows), default=0)
            rich_table.add_column(header, justify="right" if numeric else "left", min_width=None if numeric else min(widest, 40))
        for row in view.rows:
            rich_table.add_row(*(_rich_cell(c, terminal) for c in row))
        out.append(rich_table)
    return out


def to_table_text(doc: Document) -> bytes:
    from rich.console import Console

    text = io.StringIO()
    console = Console(file=text, width=200, color_system=None)
    for rich_table in rich_tables(doc):
        _print_unsqueezed(console, rich_table)
    return text.getvalue().encode()


def _print_unsqueezed(console, rich_table) -> None:
    """A file or pipe has no width: each table gets at least its natural width, so nothing wraps."""
    from rich.measure import Measurement

    natural = Measurement.get(console, console.options.update(max_width=10_000), rich_table).maximum
    console.width = max(200, natural)
    console.print(rich_table)


def print_rich(doc: Document) -> None:
    """The terminal view: rich tables on stdout (data goes to stdout, logs to stderr)."""
    from arena_cli.console import stdout_console

    console = stdout_console()
    terminal = console.is_terminal
    for rich_table in rich_tables(doc, terminal=terminal):
        if terminal:
            console.print(rich_table)
        else:  # piped: as wide as a table file, not squeezed to 80 columns
            _print_unsqueezed(console, rich_table)
