"""Format enum -> renderer (the one place that maps them), and writing the result to stdout or atomically
to files."""

from __future__ import annotations

import functools
import importlib
from pathlib import Path

from arena_cli.render.document import Document, OutputFormat, format_from_path

# Each format's renderer, imported on first use: ``Document -> bytes``.
RENDERERS: dict[OutputFormat, tuple[str, str]] = {
    OutputFormat.table: ("arena_cli.render.text", "to_table_text"),
    OutputFormat.json: ("arena_cli.render.text", "to_json"),
    OutputFormat.csv: ("arena_cli.render.text", "to_csv"),
    OutputFormat.markdown: ("arena_cli.render.text", "to_markdown"),
    OutputFormat.parquet: ("arena_cli.render.text", "to_parquet"),
    OutputFormat.html: ("arena_cli.render.html", "to_html"),
}


def render(doc: Document, fmt: OutputFormat) -> bytes:
    """Render a whole document; the bytes are complete before anything is written anywhere."""
    module, function = RENDERERS[fmt]
    return getattr(importlib.import_module(module), function)(doc)


def image_file(output: Path) -> Path | None:
    """The file a markdown document's images are named after and written beside: ``output`` itself, or the
    target of a symbolic link (the markdown goes there, and links its images relatively). None when ``output``
    is written in place (a device or a pipe: ``-o /dev/stdout``): there is no folder beside it to hold them."""
    from arena_cli.io.atomic import written_in_place

    return None if written_in_place(output) else output.resolve()


def render_files(doc: Document, fmt: OutputFormat, output: Path) -> dict[Path, bytes]:
    """Every file an ``-o output`` run writes: the document, and for markdown with figures one PNG per
    figure beside it (``<stem>-<figure>.png``, linked relatively so the folder can move as a whole); a
    markdown document written in place has no figures (see :func:`image_file`)."""
    named = image_file(output)
    if fmt is not OutputFormat.markdown or not doc.figures or named is None:
        return {output: render(doc, fmt)}
    from arena_cli.render.figures import png_bytes
    from arena_cli.render.text import figure_link, to_markdown

    prefix = f"{named.stem}-"
    files = {output: to_markdown(doc, figure_prefix=prefix)}
    for figure in doc.figures:
        files[named.parent / figure_link(figure, prefix)] = png_bytes(figure)
    return files


def emit(doc: Document, fmt: OutputFormat | None = None, output: Path | None = None) -> tuple[OutputFormat, bool]:
    """Write ``doc`` to ``output`` (format from its extension unless given) or to stdout (default: table). The
    format, and whether the document was written whole: False when the reader of stdout, or of a device or pipe,
    stopped reading (the rest is discarded, and that is no error)."""
    if fmt is None:
        fmt = (format_from_path(output) if output else None) or (OutputFormat.json if output else OutputFormat.table)
    if output is None and fmt is OutputFormat.table:
        from arena_cli.render import text

        return fmt, text.print_rich(doc)
    if output is None:
        from arena_cli.console import write_stdout

        return fmt, write_stdout(render(doc, fmt))
    from arena_cli.io.atomic import put_bytes, write_output

    files = render_files(doc, fmt, Path(output))
    # the document last: it appears only with every image it links
    whole = [write_output(path, functools.partial(put_bytes, data=data)) for path, data in reversed(files.items())]
    return fmt, all(whole)
