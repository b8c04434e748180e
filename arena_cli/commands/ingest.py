"""`arena ingest`, `arena info`, `arena export`: getting votes in, looking at them, getting them out."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from arena_cli.commands.options import (
    FormatOption,
    LockWaitOption,
    OutputOption,
    SourcesArgument,
    StoreOption,
    WhereOption,
    parse_pairs,
)


class InputFormat(str, Enum):
    auto = "auto"
    jsonl = "jsonl"
    json = "json"
    csv = "csv"
    parquet = "parquet"
    kaggle = "kaggle"


class SummaryFormat(str, Enum):
    table = "table"
    json = "json"


def ingest_command(
    sources: Annotated[list[Path], typer.Argument(help="Vote-log files: JSONL/JSON (FastChat, LMArena), parquet, CSV (Kaggle or mapped); .gz allowed.")],
    store: StoreOption = None,
    input_format: Annotated[InputFormat, typer.Option("--input-format", "-i", help="Input format; auto detects from the extension and the columns.")] = InputFormat.auto,
    mapping: Annotated[Optional[list[str]], typer.Option("--map", help="FIELD=COLUMN: take a canonical field from another column (repeatable). --map battle_id= ignores id columns.")] = None,
    winner_map: Annotated[Optional[list[str]], typer.Option("--winner-map", help="LABEL=OUTCOME: map a winner label to model_a, model_b, tie or both_bad (repeatable).")] = None,
    strict: Annotated[bool, typer.Option("--strict", help="Reject the whole run (exit 4, store unchanged) if any row would be quarantined.")] = False,
    summary_format: Annotated[SummaryFormat, typer.Option("--format", "-f", help="Summary on stdout as JSON too (the table always goes to stderr).")] = SummaryFormat.table,
    lock_wait: LockWaitOption = 60.0,
) -> None:
    """Validate vote logs and add their new battles to the store; rejected rows go to its quarantine."""
    from arena_cli.console import err_console, progress
    from arena_cli.io.ingest import InputOptions, check_sources, ingest_to_store
    from arena_cli.io.store import Store

    options = InputOptions(fmt=input_format.value, mapping=parse_pairs(mapping, "--map"), winner_map=parse_pairs(winner_map, "--winner-map"))
    check_sources(sources, options)  # a typo in a path or option must not leave an empty store behind
    target = Store.open(store, create=True)
    with progress() as bar:
        task = bar.add_task("ingesting", total=None)
        summaries = ingest_to_store(target, sources, options, strict=strict, lock_wait=lock_wait,
                                    on_batch=lambda s: bar.update(task, description=f"ingesting {Path(s.source).name}", completed=s.rows_read))
    _print_summary(err_console, summaries, target.root)
    if summary_format is SummaryFormat.json:
        import json

        payload = {"store": str(target.root), "sources": [s.as_dict() for s in summaries]}
        typer.echo(json.dumps(payload, indent=2))


def _print_summary(console, summaries, root: Path) -> None:
    from rich.table import Table

    table = Table(title=f"ingest into {root}")
    for column in ("source", "read", "stored", "duplicates", "quarantined", "reasons"):
        table.add_column(column, justify="left" if column in ("source", "reasons") else "right")
    for s in summaries:
        d = s.as_dict()
        reasons = ", ".join(f"{k} {v}" for k, v in d["quarantined_by_reason"].items())
        table.add_row(d["source"], f"{d['rows_read']:,}", f"{d['stored']:,}", f"{d['duplicates']:,}", f"{d['quarantined']:,}", reasons)
    console.print(table)


def info_command(
    sources: SourcesArgument = None,
    store: StoreOption = None,
    where: WhereOption = None,
    output_format: FormatOption = None,
    output: OutputOption = None,
) -> None:
    """Summarise battles: counts, models, date range, outcomes, languages, quarantine, computed features."""
    from arena_cli.io.battles import load_battles
    from arena_cli.info import describe, store_context
    from arena_cli.render import emit

    columns = ["model_a", "model_b", "outcome", "timestamp", "language"]
    from arena_cli.io.options import BattleFilter, Source

    loaded = load_battles(Source(tuple(sources or ()), store), BattleFilter(where), columns=columns)
    from arena_cli.console import warn

    for message in loaded.warnings:
        warn(message)
    battles = loaded.battles
    quarantine, features = (None, None) if sources else store_context(store)
    emit(describe(battles, quarantine, features), output_format, output)


class ExportFormat(str, Enum):
    parquet = "parquet"
    jsonl = "jsonl"
    csv = "csv"


def export_command(
    output: Annotated[Path, typer.Option("--output", "-o", help="File to write (atomically).")],
    store: StoreOption = None,
    export_format: Annotated[Optional[ExportFormat], typer.Option("--format", "-f", help="parquet, jsonl or csv (default: from the extension).", show_default=False)] = None,
    table: Annotated[str, typer.Option("--table", help="What to export: battles or quarantine.")] = "battles",
    where: WhereOption = None,
) -> None:
    """Export the store's battles (or its quarantine) to one parquet, JSONL or CSV file."""
    from arena_cli.io.export import export_table

    rows = export_table(store, table, output, export_format.value if export_format else None, where)
    from arena_cli.console import info

    info(f"wrote {rows:,} rows to {output}")
