"""Library exceptions and the exit codes they map to at the CLI edge (one place, documented in the README)."""

from __future__ import annotations

from enum import IntEnum
from typing import Any


class ExitCode(IntEnum):
    OK = 0
    INTERNAL = 1          # a bug: an unexpected exception (with traceback under ARENA_DEBUG=1)
    USAGE = 2             # bad command-line usage: unknown option, malformed or out-of-range value (typer/click's own code)
    INPUT = 3             # input cannot be read (missing file, unknown format, bad --map/--where, empty store), or -o cannot be written
    REJECTED = 4          # --strict and some rows were quarantined (they are kept in the quarantine)
    LOCKED = 5            # the store is locked by another run and the wait timed out
    NO_DATA = 6           # nothing left to fit after filters (or too few battles)
    GATE = 7              # `arena compare --fail-on`: a gating condition was met
    ENCODING = 8          # a tokenizer encoding cannot be loaded offline


class ArenaError(Exception):
    """An error a user can act on: its message is printed as is, its code becomes the exit status."""

    exit_code: ExitCode = ExitCode.INTERNAL

    def __init__(self, message: str, exit_code: ExitCode | None = None):
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


class OptionError(ArenaError, ValueError):
    """An option value that is malformed or out of range whatever the input (``--ridge nan``, ``--rounds 0``): a
    usage error, exit 2 like the command line's own, and a ValueError to Python callers."""

    exit_code = ExitCode.USAGE

    def __init__(self, option: str, reason: str):
        super().__init__(f"{option}: {reason}")
        self.option, self.reason = option, reason


class InputError(ArenaError):
    exit_code = ExitCode.INPUT


class RejectedRowsError(ArenaError):
    """``--strict`` refused a run. ``summaries`` (what each source's rows were) and ``report`` (the API's
    summary of the run) let a script that asked for the summary get it even then."""

    exit_code = ExitCode.REJECTED
    summaries: tuple[Any, ...] = ()
    report: object = None


class StoreLockedError(ArenaError):
    exit_code = ExitCode.LOCKED


class NoDataError(ArenaError):
    exit_code = ExitCode.NO_DATA


class GateError(ArenaError):
    exit_code = ExitCode.GATE


class EncodingUnavailableError(ArenaError):
    exit_code = ExitCode.ENCODING
