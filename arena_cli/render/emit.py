"""Format enum -> renderer, and writing the result to stdout or atomically to a file."""

from __future__ import annotations

import sys
from pathlib import Path

from arena_cli.render.document import Document, OutputFormat, format_from_path


def render(doc: Document, fmt: OutputFormat) -> bytes:
    """Render a whole document; the bytes are complete before anything is written anywhere."""
    from arena_cli.render import text

    renderer = text.RENDERERS.get(fmt)
    if renderer is None:
        from arena_cli.render import rich_extra

        renderer = rich_extra.RENDERERS[fmt]
    return renderer(doc)


def emit(doc: Document, fmt: OutputFormat | None = None, output: Path | None = None) -> OutputFormat:
    """Write ``doc`` to ``output`` (format from its extension unless given) or to stdout (default: table)."""
    if fmt is None:
        fmt = (format_from_path(output) if output else None) or (OutputFormat.json if output else OutputFormat.table)
    if output is None and fmt is OutputFormat.table:
        from arena_cli.render import text

        text.print_rich(doc)
        return fmt
    data = render(doc, fmt)
    if output is None:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
    else:
        from arena_cli.io.atomic import atomic_write_bytes

        atomic_write_bytes(Path(output), data)
    return fmt
