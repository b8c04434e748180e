"""`arena ingest`, `arena info`, `arena export`: getting votes in, looking at them, getting them out."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from arena_cli.commands.options import LockWaitOption, StoreOption, WhereOption, filter_options, input_option_group, source_options
from arena_cli.commands.output import Output, output_options, show, warn_all
from arena_cli.errors import OptionError
from arena_cli.io.options import BattleFilter, InputOptions, Source

if TYPE_CHECKING:
    from arena_cli.results import IngestReport


class SummaryFormat(str, Enum):
    table = "table"
    json = "json"


@input_option_group
def ingest_command(
    sources: Annotated[list[Path], typer.Argument(metavar="FILES...", help="Vote-log files: JSONL/JSON (FastChat, LMArena), parquet, CSV (Kaggle or mapped), LLM-judge logs (arena-hard-auto, AlpacaEval; a directory with -i arena-hard or alpaca-eval); .gz allowed.")],
    input: InputOptions,
    store: StoreOption = None,
    strict: Annotated[bool, typer.Option("--strict", help="Reject the whole run (exit 4, store unchanged) if any row would be quarantined.")] = False,
    summary_format: Annotated[SummaryFormat, typer.Option("--format", "-f", help="Summary on stdout as JSON too (the table always goes to stderr).")] = SummaryFormat.table,
    lock_wait: LockWaitOption = 60.0,
) -> None:
    """Validate vote logs and add their new battles to the store; rejected rows go to its quarantine."""
    from arena_cli import api
    from arena_cli.console import progress
    from arena_cli.errors import RejectedRowsError
    from arena_cli.results import IngestReport

    try:
        with progress() as bar:
            task = bar.add_task("ingesting", total=None)
            report = api.ingest(sources, store, input=input, strict=strict, lock_wait=lock_wait,
                                on_source=lambda name, rows: bar.update(task, description=f"ingesting {Path(name).name}", completed=rows))
    except RejectedRowsError as refused:  # the summary still says what the rows were; the error says the rest
        if isinstance(refused.report, IngestReport):
            _show_summary(refused.report, summary_format)
        raise
    _show_summary(report, summary_format)
    warn_all(report.warnings)


def _show_summary(report: IngestReport, summary_format: SummaryFormat) -> None:
    """The summary table on stderr; with ``--format json`` its document on stdout too."""
    from arena_cli.console import err_console
    from arena_cli.render import emit
    from arena_cli.render.document import OutputFormat
    from arena_cli.render.text import print_rich

    document = report.to_document()
    print_rich(document, err_console)
    if summary_format is SummaryFormat.json:
        emit(document, OutputFormat.json)


@source_options
@filter_options
@output_options
def info_command(source: Source, filters: BattleFilter, output: Output) -> None:
    """Summarise battles: counts, models, date range, outcomes, languages, quarantine, computed features."""
    from arena_cli import api

    show(api.describe(source, filters=filters), output)


class ExportFormat(str, Enum):
    parquet = "parquet"
    jsonl = "jsonl"
    csv = "csv"


def export_command(
    output: Annotated[Path, typer.Option("--output", "-o", help="File to write (atomically); - writes to stdout (with --format).")],
    store: StoreOption = None,
    export_format: Annotated[Optional[ExportFormat], typer.Option("--format", "-f", help="parquet, jsonl or csv (default: from the extension).", show_default=False)] = None,
    table: Annotated[str, typer.Option("--table", help="What to export: battles or quarantine.")] = "battles",
    where: WhereOption = None,
) -> None:
    """Export the store's battles (or its quarantine) to one parquet, JSONL or CSV file."""
    from arena_cli import api
    from arena_cli.console import info

    fmt = export_format.value if export_format else None
    if str(output) != "-":
        rows = api.export(output, store=store, table=table, fmt=fmt, where=where)
    elif fmt is None:
        raise OptionError("--format", "-o - (standard output) has no extension to tell the format: give --format parquet, jsonl or csv")
    else:
        rows = _export_to_stdout(store, table, fmt, where)
    if rows is not None:  # (None: the reader stopped reading, which is no error: nothing is said, as of any output)
        info(f"wrote {rows:,} rows to {'standard output' if str(output) == '-' else output}")


def _export_to_stdout(store: Path | None, table: str, fmt: str, where: str | None) -> int | None:
    """The export written whole to a temporary file, then copied to stdout (a failed one writes nothing): its rows,
    or None when stdout's reader stopped reading (the rest is not copied)."""
    import tempfile

    from arena_cli import api
    from arena_cli.console import write_stdout

    with tempfile.TemporaryDirectory() as folder:
        written = Path(folder) / f"export.{fmt}"
        rows = api.export(written, store=store, table=table, fmt=fmt, where=where)
        with open(written, "rb") as handle:
            copied = all(write_stdout(chunk) for chunk in iter(lambda: handle.read(1 << 20), b""))
    return rows if copied else None
