"""`arena store check` and `arena store repair`: is the store consistent, and make it so without losing data."""

from __future__ import annotations

from typing import Annotated

import typer

from arena_cli.commands.options import LockWaitOption, StoreOption
from arena_cli.commands.output import Output, output_options, show


@output_options
def check_command(
    output: Output,
    store: StoreOption = None,
    deep: Annotated[bool, typer.Option("--deep", help="Also read every part's data whole (slower): finds damage inside the data, which footers do not show.")] = False,
) -> None:
    """Check the store: its manifest, every part it lists (footers, schemas, row counts) and unlisted files.

    Prints the problems found; exit 0 when the store is consistent, 3 when it is not.
    """
    from arena_cli import api
    from arena_cli.console import info
    from arena_cli.errors import InputError

    check = api.check_store(store, deep=deep)
    show(check, output)
    if not check.healthy:
        if any(p.kind == "manifest_newer" for p in check.problems):  # not this version's to rewrite
            raise InputError(check.message() + "; upgrade arena-cli to use it (`arena store repair` will not rewrite it)")
        raise InputError(check.message() + f"; `arena store repair --store {_quoted(check.root)}` fixes it")
    info(check.message())


@output_options
def repair_command(
    output: Output,
    store: StoreOption = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Only say what the repair would do.")] = False,
    adopt_unpublished: Annotated[bool, typer.Option("--adopt-unpublished", help="Also adopt readable parts that no manifest says were published (a killed run's), if they repeat no stored battle.")] = False,
    lock_wait: LockWaitOption = 60.0,
) -> None:
    """Repair the store: rebuild a consistent manifest from the parts on disk, deleting nothing.

    Keeps the readable listed parts, adopts readable unlisted parts that were published, and moves the rest
    (unreadable, truncated, of a wrong schema, never published) to STORE/lost+found/.
    """
    from arena_cli import api
    from arena_cli.console import info

    repair = api.repair_store(store, dry_run=dry_run, adopt_unpublished=adopt_unpublished, lock_wait=lock_wait)
    show(repair, output)
    info(repair.message())


def _quoted(path: object) -> str:
    import shlex

    return shlex.quote(str(path))
