"""The html format: one self-contained page (inline CSS, figures as inline SVG, no scripts, no network)."""

from __future__ import annotations

import json
import re
from html import escape

from arena_cli.console import printable
from arena_cli.render.display import Cell, json_value, shown
from arena_cli.render.document import Document, Figure, Table

_STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 2rem auto; max-width: 1200px;
       padding: 0 1rem; color: #1f2328; line-height: 1.45; }
h1 { font-size: 1.6rem; border-bottom: 1px solid #d0d7de; padding-bottom: .3rem; }
h2 { font-size: 1.2rem; margin-top: 2rem; }
table { border-collapse: collapse; margin: .5rem 0 1rem; font-size: .85rem; font-variant-numeric: tabular-nums; }
th, td { border: 1px solid #d0d7de; padding: .2rem .5rem; }
th { background: #f6f8fa; text-align: left; }
td.num { text-align: right; white-space: nowrap; }
tbody tr:nth-child(even) { background: #fafbfc; }
.up { color: #1a7f37; } .down { color: #cf222e; } .same { color: #8c959f; }
p.note { color: #57606a; font-size: .85rem; margin: .2rem 0; }
figure { margin: 1rem 0 2rem; } figcaption { color: #57606a; font-size: .85rem; }
figure svg { max-width: 100%; height: auto; }
details pre { background: #f6f8fa; padding: .5rem; font-size: .8rem; overflow-x: auto; }
""".strip()


def _text(text: str) -> str:
    """A title, note or caption as page text: markup escaped, and control characters as ``\\xNN`` escapes, as the
    text and markdown formats show them (a note may name a model from a library caller's frame)."""
    return escape(printable(text))


def _cell(cell: Cell, numeric: bool) -> str:
    text = escape(cell.text)
    if cell.change:
        arrow = {1: "↑", -1: "↓", 0: ""}[cell.direction]
        tone = {1: "up", -1: "down", 0: "same"}[cell.direction]
        text = f'<span class="{tone}">{arrow}{escape(cell.magnitude) if cell.direction else text}</span>'
    if cell.strong:
        text = f"<strong>{text}</strong>"
    return f'<td class="num">{text}</td>' if numeric else f"<td>{text}</td>"


def _table(table: Table) -> list[str]:
    heading = f'<h2 id="{escape(table.name)}">{_text(table.title or table.name)}</h2>'
    if not table.frame.height:
        return [heading, f'<p class="empty">{_text(table.empty_sentence)}</p>', *(f'<p class="note">{_text(note)}</p>' for note in table.notes)]
    view = shown(table)
    out = [heading, "<table>", "<thead><tr>"]
    out.append("".join(f"<th>{escape(h)}</th>" for h in view.headers))
    out.append("</tr></thead>")
    out.append("<tbody>")
    out.extend("<tr>" + "".join(_cell(c, n) for c, n in zip(row, view.numeric)) + "</tr>" for row in view.rows)
    out.append("</tbody></table>")
    out.extend(f'<p class="note">{_text(note)}</p>' for note in table.notes)
    return out


def inline_svg(svg: str, prefix: str) -> str:
    """An SVG made fit to sit in a page beside others: every id (and each reference to it) gets ``prefix``,
    since matplotlib numbers ids per figure (``text_1``, glyphs, markers, clip paths) and one page has one id
    space, where a repeated id is invalid and a reference may resolve into another figure; and the root's
    namespace declarations go, which html needs not (the parser puts ``<svg>`` in its namespace)."""
    svg = re.sub(r'\bid="([^"]+)"', lambda m: f'id="{prefix}{m[1]}"', svg)
    svg = re.sub(r'url\(#([^)]+)\)', lambda m: f"url(#{prefix}{m[1]})", svg)
    svg = re.sub(r'href="#([^"]+)"', lambda m: f'href="#{prefix}{m[1]}"', svg)
    end = svg.index(">") + 1  # the root element's opening tag
    opening = re.sub(r'\s+xmlns(:xlink)?="[^"]*"', "", svg[:end])
    return opening + svg[end:]


def _figure(figure: Figure) -> list[str]:
    from arena_cli.render.figures import svg_text

    svg = inline_svg(svg_text(figure), f"fig-{figure.name}-")
    out = [f'<h2 id="{escape(figure.name)}">{_text(figure.title)}</h2>', "<figure>", svg]
    if figure.caption:
        out.append(f"<figcaption>{_text(figure.caption)}</figcaption>")
    out.append("</figure>")
    return out


def to_html(doc: Document) -> bytes:
    """Tables in order, each figure after the table it names, the settings (``meta``) at the end."""
    title = doc.title or doc.kind
    body = [f"<h1>{_text(title)}</h1>"]
    for table in doc.readable_tables:
        body.extend(_table(table))
        for figure in doc.figures:
            if figure.after == table.name:
                body.extend(_figure(figure))
    for figure in doc.figures:
        if figure.after is None:
            body.extend(_figure(figure))
    if doc.meta:
        settings = json.dumps(json_value(doc.meta), indent=2, ensure_ascii=False, allow_nan=False)
        body.append(f"<details><summary>Settings</summary><pre>{escape(settings)}</pre></details>")
    page = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_text(title)}</title>",
        f"<style>\n{_STYLE}\n</style>",
        "</head>",
        "<body>",
        *body,
        "</body>",
        "</html>",
    ]
    return ("\n".join(page) + "\n").encode()
