"""The stderr console: logs, summaries and progress bars go here, data goes to stdout."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape

err_console = Console(stderr=True)


class _NoProgress:
    """What a progress bar is where nobody watches (cron, CI, a pipe): rich's is not even imported."""

    def __enter__(self) -> _NoProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def add_task(self, *args: object, **kwargs: object) -> int:
        return 0

    def update(self, *args: object, **kwargs: object) -> None:
        return None

    def advance(self, *args: object, **kwargs: object) -> None:
        return None


def progress(transient: bool = True):
    """A rich progress bar on stderr, or nothing when stderr is not a terminal."""
    if not err_console.is_terminal:
        return _NoProgress()
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    return Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=err_console,
        transient=transient,
    )


def warn(message: str) -> None:
    err_console.print(f"[yellow]warning:[/yellow] {escape(message)}", highlight=False, soft_wrap=True)


def info(message: str) -> None:
    err_console.print(escape(message), highlight=False, soft_wrap=True)
