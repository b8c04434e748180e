"""Options shared by several commands, declared once."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from arena_cli.render.document import OutputFormat

StoreOption = Annotated[
    Optional[Path],
    typer.Option("--store", "-s", help="Store directory (default: $ARENA_STORE or ./arena-store).", show_default=False),
]
SourcesArgument = Annotated[
    Optional[list[Path]],
    typer.Argument(help="Vote-log files to read directly instead of a store (any format `arena ingest` reads).", show_default=False),
]
FormatOption = Annotated[
    Optional[OutputFormat],
    typer.Option("--format", "-f", help="Output format (default: from the -o extension, else table).", show_default=False),
]
OutputOption = Annotated[
    Optional[Path],
    typer.Option("--output", "-o", help="Write to FILE (atomically) instead of stdout; format from the extension.", show_default=False),
]
WhereOption = Annotated[
    Optional[str],
    typer.Option("--where", help="SQL boolean filter on battle columns, e.g. \"language = 'English' AND turn > 1\".", show_default=False),
]
ModelsOption = Annotated[
    Optional[str],
    typer.Option("--models", help="Comma-separated models: keep only battles between them.", show_default=False),
]
ExcludeModelsOption = Annotated[
    Optional[str],
    typer.Option("--exclude-models", help="Comma-separated models: drop every battle involving them.", show_default=False),
]
LockWaitOption = Annotated[
    float,
    typer.Option("--lock-wait", help="Seconds to wait for another run's lock on the store before failing (exit 5)."),
]


def split_list(value: str | None) -> list[str] | None:
    """``"a, b"`` -> ``["a", "b"]``; None stays None."""
    if value is None:
        return None
    return [v.strip() for v in value.split(",") if v.strip()]


def parse_pairs(values: list[str] | None, option: str) -> dict[str, str]:
    """``["k=v", ...]`` -> dict, with a clear error for a malformed pair."""
    from arena_cli.errors import InputError

    pairs: dict[str, str] = {}
    for item in values or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InputError(f"{option} {item!r}: expected KEY=VALUE")
        pairs[key.strip()] = value.strip()
    return pairs
