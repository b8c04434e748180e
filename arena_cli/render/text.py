"""Renderers for the text and data formats: rich table, JSON, CSV, markdown, parquet."""

from __future__ import annotations

import io
import json
import os
from typing import TYPE_CHECKING, Any

from arena_cli.render.display import Cell, Shown, json_value, plain_frame, rounded, shown
from arena_cli.render.document import Document, Figure, Table

if TYPE_CHECKING:
    from arena_cli.render.width import Plan

#: How a fitted table's note on its left-out columns begins.
NOT_SHOWN = "Not shown at"
#: Notes under a table wrap at this width, or at the table's if wider (and never beyond the terminal).
NOTE_WIDTH = 100

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
        parts.append((markdown_table(shown(table)) if table.frame.height else table.empty_sentence) + "\n")
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


def _width_notes(view: Shown, plan: Plan, keys: list[str]) -> list[str]:
    """What the reader of a fitted table must know: which columns it leaves out, that it continues, or that
    it is wider than the terminal."""
    notes = []
    if plan.dropped:
        names = ", ".join(view.headers[k] for k in plan.dropped)
        them = "them" if len(plan.dropped) > 1 else "it"
        notes.append(f"{NOT_SHOWN} {plan.width} columns: {names}. A wider terminal shows {them}, and so does -f json.")
    if len(plan.blocks) > 1:
        repeated = f"; {', '.join(keys)} repeated in each" if keys else ""
        notes.append(f"Split into {len(plan.blocks)} tables to fit {plan.width} columns{repeated}.")
    if plan.overflows:
        needed = max(b.width for b in plan.blocks)
        notes.append(f"{needed} columns wide, more than the {plan.width} available: lines run past the edge rather than cut a number.")
    return notes


def table_renderables(table: Table, terminal: bool = False, width: int | None = None) -> list[tuple[Any, int]]:
    """One table as rich renderables, each with the width it is drawn at: fitted to ``width`` terminal columns
    (see :mod:`arena_cli.render.width`), or every column in full when ``width`` is None. The notes follow the
    last part, wrapped at :data:`NOTE_WIDTH` or the table's width if wider; a table without rows is its title
    and a sentence."""
    from rich.cells import cell_len
    from rich.console import Group
    from rich.table import Table as RichTable
    from rich.text import Text

    from arena_cli.render.width import plan as fit

    notes_width = min(width, NOTE_WIDTH) if width else NOTE_WIDTH
    if not table.frame.height:
        heading = [Text(table.title, style="italic")] if table.title else []
        return [(Group(*heading, Text("\n".join([table.empty_sentence, *table.notes]))), notes_width)]
    view = shown(table)
    cells = [[_rich_cell(c, terminal) for c in row] for row in view.rows]
    columns = [[row[k].plain for row in cells] for k in range(len(view.headers))]
    plan = fit(view.headers, columns, view.numeric, view.priority, view.groups, width)
    keys = [view.headers[k] for k in plan.blocks[0].columns if view.groups[k] is None] if len(plan.blocks) > 1 else []
    notes = [*table.notes, *_width_notes(view, plan, keys)]
    out = []
    for i, block in enumerate(plan.blocks, start=1):
        title = table.title + (f" ({i} of {len(plan.blocks)})" if len(plan.blocks) > 1 and table.title else "")
        drawn = max(block.width, notes_width)
        # as wide as its title when there is room, so a narrow part keeps its title on one line
        rich_table = RichTable(title=Text(title) if title else None, min_width=min(cell_len(title), drawn))
        for k, w in zip(block.columns, block.widths):
            rich_table.add_column(view.headers[k], justify="right" if view.numeric[k] else "left", width=w, overflow="fold")
        if not terminal and all(_one_line(columns[k], w) for k, w in zip(block.columns, block.widths)):
            rich_table.add_row(*(Text("\n").join(row[k] for row in cells) for k in block.columns))
        else:
            for row in cells:
                rich_table.add_row(*(row[k] for k in block.columns))
        last = i == len(plan.blocks) and notes
        out.append((Group(rich_table, Text("\n".join(notes))) if last else rich_table, drawn))
    return out


def _one_line(texts: list[str], width: int) -> bool:
    """Whether every cell of a column is one line at ``width`` (no line break, tab or fold). A plain table (a file,
    a pipe) whose every cell is so is drawn as one row whose cells are whole columns: the same text, in a third of
    the time (rich lays out each cell on its own: 0.1 s for a leaderboard of 300 models). Not on a terminal: there
    a styled cell's padding takes its style (a cell of the row's own), which a whole column's line would not."""
    from rich.cells import cell_len

    return all("\n" not in text and "\t" not in text and cell_len(text) <= width for text in texts)


def rich_tables(doc: Document, terminal: bool = False, width: int | None = None) -> list[tuple[Any, int]]:
    """Every readable table of ``doc`` as rich renderables with the width each is drawn at."""
    return [drawn for table in doc.readable_tables for drawn in table_renderables(table, terminal, width)]


class _AtWidth:
    """A renderable drawn at its own width, whatever the console's: a table wider than the terminal is drawn
    whole (printed uncropped, the terminal wraps its lines) instead of squeezed until its numbers break."""

    def __init__(self, renderable: Any, width: int) -> None:
        self.renderable, self.width = renderable, width

    def __rich_console__(self, console, options):
        yield from console.render(self.renderable, options.update(width=self.width))


def print_tables(doc: Document, console: Any, width: int | None) -> None:
    """Every readable table of ``doc`` on ``console``, fitted to ``width`` (None: every column in full)."""
    for renderable, drawn in rich_tables(doc, terminal=console.is_terminal, width=width):
        console.print(_AtWidth(renderable, drawn), crop=False)


def to_table_text(doc: Document) -> bytes:
    """The table format in a file: plain text, every column in full (a file has no width)."""
    from rich.console import Console

    text = io.StringIO()
    print_tables(doc, Console(file=text, color_system=None), None)
    return text.getvalue().encode()


def display_width(console: Any) -> int | None:
    """The width tables are fitted to: the terminal's; when not a terminal, ``$COLUMNS`` if set, else none (a
    pipe or file gets every column in full)."""
    if console.is_terminal:
        return console.width
    columns = os.environ.get("COLUMNS", "")
    return int(columns) if columns.isdigit() and int(columns) > 0 else None


def print_rich(doc: Document, console: Any = None) -> None:
    """The table view on ``console`` (default: stdout; data goes to stdout, logs to stderr), fitted to its width."""
    if console is None:
        from arena_cli.console import stdout_console

        console = stdout_console()
    print_tables(doc, console, display_width(console))
