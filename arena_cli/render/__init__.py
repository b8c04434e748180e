"""One rendering layer for every command: a command builds a :class:`Document`, a renderer turns it into
bytes for one :class:`OutputFormat`. Adding a format touches only this package."""

from __future__ import annotations

from arena_cli.render.document import Document, OutputFormat, Table, format_from_path
from arena_cli.render.emit import emit, render

__all__ = ["Document", "Table", "OutputFormat", "format_from_path", "emit", "render"]
