"""Where a command's result goes: ``--format``/``-o`` (one option group), warnings to stderr, the document to
stdout or a file. The one place a command's result meets the terminal."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional, Protocol

import typer

from arena_cli.commands.options import option, option_group
from arena_cli.render.document import OutputFormat

if TYPE_CHECKING:
    from arena_cli.render.document import Document


class Renderable(Protocol):
    """A result of the Python API: it renders itself and says what the user should know."""

    @property
    def warnings(self) -> tuple[str, ...]: ...

    def to_document(self) -> Document: ...


@dataclass(frozen=True)
class Output:
    """``--format`` and ``-o``: the format (default from the file's extension, else a table) and the file."""

    format: OutputFormat | None = None
    path: Path | None = None


FormatOption = Annotated[
    Optional[OutputFormat],
    typer.Option("--format", "-f", help="Output format (default: from the -o extension, else table).", show_default=False),
]
OutputOption = Annotated[
    Optional[str],
    typer.Option("--output", "-o", metavar="FILE", help="Write to FILE (atomically) instead of stdout (- is stdout); format from the extension.", show_default=False),
]


def _output(output_format: OutputFormat | None, output: str | None) -> Output:
    from arena_cli.io.atomic import writable_file

    if output is None or output == "-":  # (-o -: standard output)
        return Output(output_format, None)
    return Output(output_format, writable_file(file_name(output)))


def file_name(output: str) -> Path:
    """``-o``'s file: a name ending in a separator names a directory, not a file (as a path, it would lose it)."""
    from arena_cli.errors import InputError

    if output.endswith(("/", os.sep)):
        raise InputError(f"cannot write {output}: a name ending in {output[-1]} is a directory's (give a file name)")
    return Path(output)


#: --format, --output: every command that prints data.
output_options = option_group("output", [option("output_format", FormatOption, None), option("output", OutputOption, None)], _output)


def warn_all(warnings: tuple[str, ...] | list[str]) -> None:
    from arena_cli.console import warn

    for message in dict.fromkeys(warnings):
        warn(message)


def show(result: Renderable, output: Output) -> tuple[OutputFormat, bool]:
    """Warnings on stderr, then the result's document on stdout or in the ``-o`` file (see :func:`emit`)."""
    from arena_cli.render import emit

    warn_all(result.warnings)
    return emit(result.to_document(), output.format, output.path)


@contextmanager
def progress_bar(description: str) -> Iterator[Callable[[int, int], None]]:
    """A progress callback for the API (``on_progress(done, total)``): a bar on a watched terminal, shown from
    the first report on, so work that reports nothing shows nothing."""
    from arena_cli.console import progress

    with progress() as bar:
        task: list[Any] = []

        def update(done: int, total: int) -> None:
            if not task:
                task.append(bar.add_task(description, total=total))
            bar.update(task[0], completed=done, total=total)

        yield update
