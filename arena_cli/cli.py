"""The ``arena`` command: a thin typer layer. Each command parses options, calls the library, renders.

Command modules import heavy libraries inside their functions so that ``arena --help`` starts fast.
"""

from __future__ import annotations

import functools
import gc
import importlib
import os
import sys
from collections.abc import Callable

from typing import Annotated, Any

import typer

from arena_cli.errors import ArenaError, ExitCode, OptionError

def _error(message: str) -> None:
    from rich.markup import escape

    from arena_cli.console import err_console, printable

    err_console.print(f"[red]error:[/red] {escape(printable(message))}", highlight=False, soft_wrap=True)


def guarded(command: Callable) -> Callable:
    """Library errors become a one-line message on stderr and their documented exit code (a bad option value is
    reported as the command line's own usage errors are, exit 2); anything else is a bug: one line and exit 1,
    with the traceback only under ``ARENA_DEBUG=1``."""

    @functools.wraps(command)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except OptionError as error:
            raise typer.BadParameter(error.reason, param_hint=f"'{error.option}'") from None
        except ArenaError as error:
            if os.environ.get("ARENA_DEBUG"):
                raise
            _error(str(error))
            raise typer.Exit(int(error.exit_code)) from None
        except BaseException as error:
            # exits and usage errors belong to the command-line layer (typer, or the click of older typers); an
            # interrupt or exit is no error; a panic in polars' Rust code (PanicException, a BaseException) is one
            if type(error).__module__.split(".")[0] in ("typer", "click") or not isinstance(error, Exception) and type(error).__module__ != "pyo3_runtime":
                raise
            if os.environ.get("ARENA_DEBUG"):
                if not isinstance(error, EOFError):
                    raise
                # click takes an EOFError for Ctrl-D at a prompt and prints only "Aborted!": show it as it is
                import traceback

                traceback.print_exc()
                raise typer.Exit(int(ExitCode.INTERNAL)) from None
            first = str(error).splitlines()[0] if str(error) else ""
            _error(f"internal error, a bug in arena-cli: {type(error).__name__}: {first} (ARENA_DEBUG=1 shows the traceback)")
            raise typer.Exit(int(ExitCode.INTERNAL)) from None

    return run


def _version(value: bool) -> None:
    if value:
        from arena_cli import __version__
        from arena_cli.console import write_stdout

        write_stdout(f"arena-cli {__version__}\n".encode())
        raise typer.Exit()


def main_options(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")] = False,
) -> None:
    """Build leaderboards you can trust from pairwise LLM vote logs (Bradley-Terry with style control)."""


#: Each command, in the order ``arena --help`` lists them: the module of arena_cli.commands that defines it, and
#: its function; ``store``'s commands form a group of their own.
COMMANDS = {
    "ingest": ("ingest", "ingest_command"),
    "info": ("ingest", "info_command"),
    "export": ("ingest", "export_command"),
    "features": ("features", "features_command"),
    "simulate": ("simulate", "simulate_command"),
    "fit": ("fit", "fit_command"),
    "diff": ("diff", "diff_command"),
    "compare": ("compare", "compare_command"),
    "report": ("report", "report_command"),
    "matrix": ("matrix", "matrix_command"),
    "judges": ("judges", "judges_command"),
}
STORE_COMMANDS = {"check": "check_command", "repair": "repair_command"}
_SETTINGS: dict[str, Any] = {"rich_markup_mode": None, "no_args_is_help": True, "context_settings": {"help_option_names": ["-h", "--help"]}}


def build_app(only: str | None = None) -> typer.Typer:
    """The ``arena`` app: every command, or only the command ``only`` (a process runs one command, and building
    every other's options from its signature costs about 20 ms of each run, a cron job's or a CI step's)."""
    built = typer.Typer(name="arena", help=main_options.__doc__, add_completion=False, pretty_exceptions_enable=False, **_SETTINGS)
    built.callback()(main_options)
    for name, (module, function) in COMMANDS.items():
        if only in (None, name):
            built.command(name)(guarded(getattr(importlib.import_module(f"arena_cli.commands.{module}"), function)))
    if only in (None, "store"):
        from arena_cli.commands import store

        store_app = typer.Typer(name="store", help="Check and repair a store: arena store check | repair.", **_SETTINGS)
        for name, function in STORE_COMMANDS.items():
            store_app.command(name)(guarded(getattr(store, function)))
        built.add_typer(store_app, name="store")
    return built


app: typer.Typer  # (no value: the module's ``__getattr__`` builds it when first asked for)


def __getattr__(name: str) -> typer.Typer:
    """``app``: the app of every command (what tests and library callers run), built when first asked for."""
    if name != "app":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    global app
    app = build_app()
    return app


#: OpenBLAS without worker threads in the ``arena`` process. The engine's dense algebra is small and runs on one
#: thread anyway (:mod:`arena_cli.models.blas`), but OpenBLAS starts its threads as numpy loads and they spin for
#: a while after: a 1M-vote style fit spent 8% more CPU time and 3% more wall time with them (medians of 11,
#: interleaved), as they compete with polars' read. Set before numpy loads, as OpenBLAS reads it only then; a
#: user's own value is kept.
BLAS_SETTINGS = ("OPENBLAS_NUM_THREADS", "1")


#: Allocations between the youngest generation's collections (Python's default: 700). A command's imports and
#: setup create some 100,000 objects that live until it exits; at the default, every tenth collection of the
#: middle generation led to a full one walking them all, and a 1M-vote style fit spent 4% of its time collecting
#: (medians of 21, interleaved). Cycles are still collected, after 50,000 allocations rather than 700.
GC_THRESHOLD = 50_000


def main() -> None:
    from arena_cli.console import guard_closed_pipes
    from arena_cli.io import files

    files.QUIET_PANICS = True  # (errors are one line: see quiet_stderr)
    gc.set_threshold(GC_THRESHOLD, *gc.get_threshold()[1:])
    os.environ.setdefault(*BLAS_SETTINGS)
    guard_closed_pipes()
    named = sys.argv[1] if len(sys.argv) > 1 else None
    try:
        build_app(named if named in COMMANDS or named == "store" else None)()
    finally:
        # The interpreter's last garbage collection walks every object polars and numpy created, ~30 ms at each
        # exit (a tenth of a short command in cron). The process is ending, so nothing needs collecting:
        # frozen objects are skipped, while atexit handlers and stream flushes still run.
        gc.freeze()
