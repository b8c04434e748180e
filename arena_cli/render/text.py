"""Renderers for the text and data formats: rich table, JSON, CSV, markdown, parquet."""

from __future__ import annotations

import io
import json
import os
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from arena_cli.console import printable
from arena_cli.render.display import Cell, Shown, json_value, plain_frame, rounded, shown
from arena_cli.render.document import Document, Figure, Table
from arena_cli.render.width import drawn_width

if TYPE_CHECKING:
    from arena_cli.render.width import Block, Plan

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
    """A cell's text as markdown shows it as it is: its pipes, and what would make code, emphasis, html or a link
    of a model's name, escaped (a line break is an escape already: see display.shown)."""
    text = _MARKUP.sub(r"\\\1", cell.text.replace("|", "\\|")).replace("](", "]\\(")
    return f"**{text}**" if cell.strong and text else text


#: Characters that mark code, emphasis or html in a markdown cell.
_MARKUP = re.compile(r"([`*<>])")


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
        parts.append(f"## {printable(doc.title)}\n")

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
            parts.append(f"### {printable(table.title)}\n")
        parts.append((markdown_table(shown(table)) if table.frame.height else table.empty_sentence) + "\n")
        parts.extend(f"{note}\n" for note in _printable_notes(table))
        figures_after(table.name)
    figures_after(None)
    return "\n".join(parts).encode()


def to_parquet(doc: Document) -> bytes:
    """The primary table only, full precision."""
    buffer = io.BytesIO()
    doc.primary.frame.write_parquet(buffer)
    return buffer.getvalue()


def _cell_text(cell: Cell, terminal: bool) -> str:
    """A cell's text as shown: a terminal draws a change as an arrow (``↑3``, coloured by :func:`_rich_cell`) and
    emphasis in bold; a file gets the plain ``+3`` / ``-2`` and a ``*`` after an emphasised cell."""
    if terminal:
        if cell.change and cell.direction:
            return ("↑" if cell.direction > 0 else "↓") + cell.magnitude
        return cell.text
    return cell.text + ("*" if cell.strong and cell.text else "")


def _rich_cell(cell: Cell, terminal: bool) -> Any:
    from rich.text import Text

    if not terminal:
        return Text(_cell_text(cell, terminal))  # no bold in a plain file
    style = "bold" if cell.strong else ""
    if cell.change and cell.direction:
        style = f"{style} {'green' if cell.direction > 0 else 'red'}"
    elif cell.change:
        style = f"{style} dim"
    return Text(_cell_text(cell, terminal), style=style.strip())


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


@dataclass(frozen=True)
class _Part:
    """One drawn part of a table: its title, its columns and their content widths (a :class:`Block`), the notes
    under it (the last part's only) and the width it is drawn at."""

    title: str
    block: Block
    notes: list[str]
    drawn: int


def _layout(table: Table, terminal: bool, width: int | None) -> tuple[Shown, list[list[str]], list[_Part]]:
    """A table with rows fitted to ``width`` terminal columns (see :mod:`arena_cli.render.width`), or every column in
    full when ``width`` is None: its shown cells, their texts column by column (see :func:`_cell_text`) and its parts.
    The notes follow the last part, wrapped at :data:`NOTE_WIDTH` or the part's width if wider."""
    from arena_cli.render.width import plan as fit

    view = shown(table)
    columns = [[_cell_text(row[k], terminal) for row in view.rows] for k in range(len(view.headers))]
    plan = fit(view.headers, columns, view.numeric, view.priority, view.groups, width)
    keys = [view.headers[k] for k in plan.blocks[0].columns if view.groups[k] is None] if len(plan.blocks) > 1 else []
    notes = [*_printable_notes(table), *_width_notes(view, plan, keys)]
    notes_width = min(width, NOTE_WIDTH) if width else NOTE_WIDTH
    parts = []
    for i, block in enumerate(plan.blocks, start=1):
        title = printable(table.title) + (f" ({i} of {len(plan.blocks)})" if len(plan.blocks) > 1 and table.title else "")
        parts.append(_Part(title, block, notes if i == len(plan.blocks) else [], max(block.width, notes_width)))
    return view, columns, parts


def _printable_notes(table: Table) -> list[str]:
    """A table's notes with control characters as escapes, line by line (a note may name a model)."""
    return ["\n".join(printable(line) for line in note.split("\n")) for note in table.notes]


def table_renderables(table: Table, terminal: bool = False, width: int | None = None) -> list[tuple[Any, int]]:
    """One table as rich renderables, each with the width it is drawn at (see :func:`_layout`); a table without
    rows is its title and a sentence."""
    from rich.cells import cell_len
    from rich.console import Group
    from rich.table import Table as RichTable
    from rich.text import Text

    if not table.frame.height:
        heading = [Text(printable(table.title), style="italic")] if table.title else []
        notes_width = min(width, NOTE_WIDTH) if width else NOTE_WIDTH
        return [(Group(*heading, Text("\n".join([table.empty_sentence, *_printable_notes(table)]))), notes_width)]
    view, _, parts = _layout(table, terminal, width)
    cells = [[_rich_cell(c, terminal) for c in row] for row in view.rows]
    out = []
    for part in parts:
        # as wide as its title when there is room, so a narrow part keeps its title on one line
        rich_table = RichTable(title=Text(part.title) if part.title else None, min_width=min(cell_len(part.title), part.drawn))
        for k, w in zip(part.block.columns, part.block.widths):  # (a header is text: a model named "[b]x" is no markup)
            rich_table.add_column(Text(view.headers[k]), justify="right" if view.numeric[k] else "left", width=w, overflow="fold")
        for row in cells:
            rich_table.add_row(*(row[k] for k in part.block.columns))
        out.append((Group(rich_table, Text("\n".join(part.notes))) if part.notes else rich_table, part.drawn))
    return out


#: The box rich draws a table in (``rich.box.HEAVY_HEAD``): top, header, header rule, row and bottom lines, each as
#: (left edge, fill, between columns, right edge).
_BOX = {"top": ("┏", "━", "┳", "┓"), "head": ("┃", " ", "┃", "┃"), "rule": ("┡", "━", "╇", "┩"), "row": ("│", " ", "│", "│"),
        "bottom": ("└", "─", "┴", "┘")}


def _plain_lines(view: Shown, columns: list[list[str]], part: _Part) -> list[str] | None:
    """A part of a table in a file or a pipe, drawn as rich draws it, line for line, but in a fiftieth of the time
    (rich lays out each of a 300-model leaderboard's 2,400 cells on its own: 0.1 s); None when rich must draw it: a
    cell, header, title or note with a line break, a tab or a control character, or wider than its space."""
    from rich.cells import cell_len

    def fits(text: str, width: int) -> bool:
        return text.isprintable() and cell_len(text) <= width

    texts = [[view.headers[k], *columns[k]] for k in part.block.columns]
    notes = "\n".join(part.notes).split("\n") if part.notes else []
    if not (all(fits(text, w) for column, w in zip(texts, part.block.widths) for text in column) and fits(part.title, part.drawn)
            and all(fits(note, part.drawn) for note in notes)):
        return None
    widths = _widened(part.block.widths, cell_len(part.title))
    table_width = drawn_width(widths)

    def line(kind: str, cells: Sequence[str]) -> str:
        left, _, between, right = _BOX[kind]
        return left + between.join(f" {cell} " for cell in cells) + right

    def rule(kind: str) -> str:
        left, fill, between, right = _BOX[kind]
        return left + between.join(fill * (w + 2) for w in widths) + right

    def aligned(text: str, width: int, right: bool) -> str:
        text = text.rstrip() if right else text
        pad = " " * (width - cell_len(text))
        return pad + text if right else text + pad

    justified = [[aligned(text, w, view.numeric[k]) for text in column] for column, w, k in zip(texts, widths, part.block.columns)]
    lines = []
    if part.title:
        title = part.title.rstrip()
        left = (table_width - cell_len(title)) // 2
        lines.append(" " * left + title + " " * (table_width - left - cell_len(title)))
    lines += [rule("top"), line("head", [column[0] for column in justified]), rule("rule")]
    lines += [line("row", row) for row in zip(*(column[1:] for column in justified))]
    lines.append(rule("bottom"))
    return lines + notes


def _widened(widths: tuple[int, ...], title_width: int) -> list[int]:
    """Content widths of a table at least as wide as its title, as rich widens it (``min_width``, which
    :func:`table_renderables` sets): the missing width shared out in proportion to the padded widths."""
    from rich._ratio import ratio_distribute

    padded = [w + 2 for w in widths]
    missing = title_width - drawn_width(widths)
    return [w + pad for w, pad in zip(widths, ratio_distribute(missing, padded))] if missing > 0 else list(widths)


class _AtWidth:
    """A renderable drawn at its own width, whatever the console's: a table wider than the terminal is drawn
    whole (printed uncropped, the terminal wraps its lines) instead of squeezed until its numbers break."""

    def __init__(self, renderable: Any, width: int) -> None:
        self.renderable, self.width = renderable, width

    def __rich_console__(self, console, options):
        yield from console.render(self.renderable, options.update(width=self.width))


def _direct_text(table: Table, width: int | None) -> str | None:
    """A table in a file or a pipe written directly (see :func:`_plain_lines`), fitted to ``width``; None when rich
    must draw some part of it, or it has no rows."""
    if not table.frame.height:
        return None
    view, columns, parts = _layout(table, False, width)
    drawn = [_plain_lines(view, columns, part) for part in parts]
    if any(lines is None for lines in drawn):
        return None
    return "".join(line + "\n" for lines in drawn if lines is not None for line in lines)


def _direct_document(doc: Document, width: int | None) -> str | None:
    """Every readable table of ``doc`` written directly, or None when rich must draw one: then rich's console is
    not even imported (a tenth of the time left of a style fit's table)."""
    texts = [_direct_text(table, width) for table in doc.readable_tables]
    return "".join(text for text in texts if text is not None) if all(text is not None for text in texts) else None


def print_tables(doc: Document, console: Any, width: int | None) -> None:
    """Every readable table of ``doc`` on ``console``, fitted to ``width`` (None: every column in full). On a plain
    console of UTF-8 text (a file, a pipe) a table is written directly when it can be (see :func:`_plain_lines`);
    otherwise, and always on a terminal, rich draws it."""
    plain = not console.is_terminal and console.color_system is None and console.encoding.lower().startswith("utf") and not console.legacy_windows
    for table in doc.readable_tables:
        text = _direct_text(table, width) if plain else None
        if text is not None:
            console.file.write(text)
            continue
        for renderable, drawn in table_renderables(table, terminal=console.is_terminal, width=width):
            console.print(_AtWidth(renderable, drawn), crop=False)


def to_table_text(doc: Document) -> bytes:
    """The table format in a file: plain text, every column in full (a file has no width)."""
    direct = _direct_document(doc, None)
    if direct is not None:
        return direct.encode()
    from rich.console import Console

    text = io.StringIO()
    print_tables(doc, Console(file=text, color_system=None), None)
    return text.getvalue().encode()


def _columns_variable() -> int | None:
    columns = os.environ.get("COLUMNS", "")
    return int(columns) if columns.isdigit() and int(columns) > 0 else None


def display_width(console: Any) -> int | None:
    """The width tables are fitted to: the terminal's; when not a terminal, ``$COLUMNS`` if set, else none (a
    pipe or file gets every column in full)."""
    return console.width if console.is_terminal else _columns_variable()


def _plain_stdout() -> bool:
    """Whether stdout is certainly plain UTF-8 text to rich, no console asked: not a terminal, no variable that makes
    rich treat it as one (``FORCE_COLOR``, ``TTY_COMPATIBLE``, ``TTY_INTERACTIVE``), not a notebook, not Windows (whose
    consoles rich may draw in other boxes)."""
    forcing = {"FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"} & os.environ.keys()
    encoding = getattr(sys.stdout, "encoding", None) or ""
    return (not forcing and not sys.stdout.isatty() and encoding.lower().startswith("utf") and "ipykernel" not in sys.modules
            and os.name != "nt")


def print_rich(doc: Document, console: Any = None) -> bool:
    """The table view on ``console`` (default: stdout; data goes to stdout, logs to stderr), fitted to its width;
    False when its reader stopped reading (the rest is discarded: :func:`arena_cli.console.stdout_console`)."""
    if console is None:
        from arena_cli.console import stdout_console, write_stdout

        direct = _direct_document(doc, _columns_variable()) if _plain_stdout() else None
        if direct is not None:
            return write_stdout(direct.encode())
        console = stdout_console()
    print_tables(doc, console, display_width(console))
    return not console.quiet
