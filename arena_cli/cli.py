"""The ``arena`` command: a thin typer layer. Each command parses options, calls the library, renders.

Command modules import heavy libraries inside their functions so that ``arena --help`` starts fast.
"""

from __future__ import annotations

import functools
import gc
import os
from collections.abc import Callable

from typing import Annotated, Any

import typer

from arena_cli.errors import ArenaError, ExitCode, OptionError

app = typer.Typer(
    name="arena",
    help="Build leaderboards you can trust from pairwise LLM vote logs (Bradley-Terry with style control).",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _error(message: str) -> None:
    from rich.markup import escape

    from arena_cli.console import err_console

    err_console.print(f"[red]error:[/red] {escape(message)}", highlight=False, soft_wrap=True)


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
        except Exception as error:
            # exits and usage errors belong to the command-line layer (typer, or the click of older typers)
            if type(error).__module__.split(".")[0] in ("typer", "click"):
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


@app.callback()
def main_options(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")] = False,
) -> None:
    """Build leaderboards you can trust from pairwise LLM vote logs (Bradley-Terry with style control)."""


def _register() -> None:
    from arena_cli.commands import ingest

    app.command("ingest")(guarded(ingest.ingest_command))
    app.command("info")(guarded(ingest.info_command))
    app.command("export")(guarded(ingest.export_command))

    from arena_cli.commands import features

    app.command("features")(guarded(features.features_command))

    from arena_cli.commands import simulate

    app.command("simulate")(guarded(simulate.simulate_command))

    from arena_cli.commands import fit

    app.command("fit")(guarded(fit.fit_command))

    from arena_cli.commands import compare, diff, matrix, report

    app.command("diff")(guarded(diff.diff_command))
    app.command("compare")(guarded(compare.compare_command))
    app.command("report")(guarded(report.report_command))
    app.command("matrix")(guarded(matrix.matrix_command))

    from arena_cli.commands import judges

    app.command("judges")(guarded(judges.judges_command))

    from arena_cli.commands import store

    store_app = typer.Typer(name="store", help="Check and repair a store: arena store check | repair.", no_args_is_help=True,
                            rich_markup_mode=None, context_settings={"help_option_names": ["-h", "--help"]})
    store_app.command("check")(guarded(store.check_command))
    store_app.command("repair")(guarded(store.repair_command))
    app.add_typer(store_app, name="store")


_register()


def main() -> None:
    from arena_cli.console import guard_closed_pipes

    guard_closed_pipes()
    try:
        app()
    finally:
        # The interpreter's last garbage collection walks every object polars and numpy created, ~30 ms at each
        # exit (a tenth of a short command in cron). The process is ending, so nothing needs collecting:
        # frozen objects are skipped, while atexit handlers and stream flushes still run.
        gc.freeze()
