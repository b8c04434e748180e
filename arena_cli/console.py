"""The stderr console: logs, summaries and progress bars go here, data goes to stdout.

rich is imported on first use: a command that prints nothing to stderr (a cron job writing ``-o FILE``) does
not pay for it.
"""

from __future__ import annotations

import functools
import os
import sys
from typing import IO, TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console


@functools.cache
def _console() -> Console:
    return _quiet_console(stderr=True)


def stdout_console() -> Console:
    """A rich console on stdout (the terminal view of a table) that stops quietly when stdout is closed."""
    return _quiet_console()


def _quiet_console(**options: object) -> Console:
    from rich.console import Console

    class QuietConsole(Console):
        """rich's console exits with status 1 when its stream is a closed pipe; this one discards the rest."""

        def on_broken_pipe(self) -> None:
            self.quiet = True
            _discard(self.file)

    return QuietConsole(**options)  # type: ignore[arg-type]


def write_stdout(data: bytes) -> bool:
    """Data to stdout. A reader that stopped reading (``arena info | head -1``) is not an error: the rest of the
    output is discarded, silently, and the command carries on to its own exit code. False when stdout is
    closed: the data did not all reach it (what follows would go nowhere)."""
    try:
        written = sys.stdout.buffer.write(data)
        sys.stdout.flush()
    except BrokenPipeError:
        written = None
    if written is None or written < len(data):  # (a reader that stops within a write only shortens it)
        _discard(sys.stdout)
        return False
    return True


class _ClosedPipeProof:
    """A text stream whose reader may stop reading: a write into a closed pipe discards the rest of the output
    instead of raising. What typer writes itself (``--help``, a usage error) then ends with the command line's
    own code (0, 2) rather than click's 1 for a broken pipe, as our commands' output does."""

    def __init__(self, stream: IO[str]):
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            _discard(self._stream)
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            _discard(self._stream)

    def __getattr__(self, name: str) -> object:
        return getattr(self._stream, name)


def guard_closed_pipes() -> None:
    """Make stdout and stderr proof against a reader that stops reading (see :class:`_ClosedPipeProof`)."""
    if not isinstance(sys.stdout, _ClosedPipeProof):
        sys.stdout = _ClosedPipeProof(sys.stdout)
    if not isinstance(sys.stderr, _ClosedPipeProof):
        sys.stderr = _ClosedPipeProof(sys.stderr)


def _discard(stream: IO[str]) -> None:
    """Point ``stream`` at /dev/null, so that what is still buffered (flushed at exit) goes nowhere instead of
    raising BrokenPipeError again (as Python's documentation on SIGPIPE recommends)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, stream.fileno())
    os.close(devnull)


def __getattr__(name: str):
    if name == "err_console":  # ``from arena_cli.console import err_console``: created when first asked for
        return _console()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
    if not sys.stderr.isatty() or not _console().is_terminal:
        return _NoProgress()
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    return Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=_console(),
        transient=transient,
    )


#: Control characters (C0 and C1) written as escapes: a message can quote what a file holds (a winner label, a
#: column name, a path), and a terminal would act on an escape sequence in it or break the line.
_ESCAPED = {code: f"\\x{code:02x}" for code in (*range(0x20), *range(0x7F, 0xA0))}


def printable(message: str) -> str:
    """A message as one line of text a terminal shows as it is: control characters as ``\\xNN`` escapes."""
    return message.translate(_ESCAPED)


def warn(message: str) -> None:
    from rich.markup import escape

    _console().print(f"[yellow]warning:[/yellow] {escape(printable(message))}", highlight=False, soft_wrap=True)


def info(message: str) -> None:
    from rich.markup import escape

    _console().print(escape(printable(message)), highlight=False, soft_wrap=True)
