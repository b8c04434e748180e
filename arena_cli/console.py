"""The stderr console: logs, summaries and progress bars go here, data goes to stdout."""

from __future__ import annotations

from rich.console import Console

err_console = Console(stderr=True)


def progress(transient: bool = True):
    """A rich progress bar on stderr (hidden when stderr is not a terminal)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    return Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=err_console,
        transient=transient,
        disable=not err_console.is_terminal,
    )


def warn(message: str) -> None:
    err_console.print(f"[yellow]warning:[/yellow] {message}", highlight=False, soft_wrap=True)


def info(message: str) -> None:
    err_console.print(message, highlight=False, soft_wrap=True)
