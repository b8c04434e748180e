"""Battles for a command: from a store, or straight from vote-log files (one-shot CI use), then filtered.

Reads only the columns a command needs, plus those its ``--where`` expression names.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from arena_cli.errors import InputError, NoDataError
from arena_cli.schema import Frame

def where_expression(where: str) -> pl.Expr:
    """Parse a SQL boolean expression with polars (never eval'd as Python)."""
    try:
        return pl.sql_expr(where)
    except Exception as error:
        raise InputError(f"--where {where!r}: not a valid SQL expression ({error})") from None


def load_battles(sources: Sequence[Path] = (), store: Path | None = None, columns: Sequence[str] | None = None, **filters: Any) -> pl.DataFrame:
    """The battles a command works on. ``sources`` (files) win over ``store``; ``columns=None`` reads all;
    ``filters``: ``where``, ``models``, ``exclude_models`` (see :func:`load_battle_parts`)."""
    frame = collect_parts(load_battle_parts(sources, store, columns, **filters))
    if frame.height == 0:
        raise NoDataError("no battles left after filtering")
    return frame


def collect_parts(parts: Sequence[Frame]) -> pl.DataFrame:
    """Parts of a table as one frame (types widened to one that holds every part's)."""
    return pl.concat([part.lazy() for part in parts], how="diagonal_relaxed").collect()


def load_battle_parts(
    sources: Sequence[Path] = (),
    store: Path | None = None,
    columns: Sequence[str] | None = None,
    where: str | None = None,
    models: Sequence[str] | None = None,
    exclude_models: Sequence[str] | None = None,
    reduce: Callable[[Frame], Frame] | None = None,
    check: Callable[[pl.DataFrame], None] | None = None,
) -> list[Frame]:
    """The battles a command works on, in parts: one lazy frame per store part (all with the same columns), or
    one frame read (and validated) from the files; only those matching the SQL ``where`` and, when given,
    between ``models`` and not involving ``exclude_models``. An empty result is for the consumer to find.

    ``reduce``: a row-wise projection of the filtered battles (a fit's few values per battle from many
    columns), applied part by part and, for files, batch by batch as they are read, so that only its result
    is ever held whole. ``check``: called on the (reduced) battles read from files before their skipped rows
    are reported; it raises to abandon the read (which then reports nothing).
    """
    condition = where_expression(where) if where else None
    wanted = None
    if columns is not None:
        wanted = list(dict.fromkeys([*columns, *(condition.meta.root_names() if condition is not None else [])]))

    def narrowed(part: Frame) -> Frame:
        if condition is not None:
            names = part.collect_schema().names()
            unknown = [c for c in condition.meta.root_names() if c not in names]
            if unknown:
                raise InputError(f"--where names unknown column(s) {unknown}; columns: {', '.join(names)}")
            try:
                if isinstance(part, pl.LazyFrame):  # evaluated here, on its own columns: errors surface now, not mid-command
                    part.select(condition.sum()).collect()
                part = part.filter(condition)
            except Exception as error:
                # the first line says what failed; polars adds the query plan of a lazy frame after it
                raise InputError(f"--where {where!r} failed: {str(error).splitlines()[0]}") from None
        if models:
            keep = pl.Series(list(models)).implode()
            part = part.filter(pl.col("model_a").is_in(keep) & pl.col("model_b").is_in(keep))
        if exclude_models:
            drop = pl.Series(list(exclude_models)).implode()
            part = part.filter(~pl.col("model_a").is_in(drop) & ~pl.col("model_b").is_in(drop))
        return reduce(part) if reduce is not None else part

    if sources:
        from arena_cli.io.ingest import read_sources
        from arena_cli.console import warn

        result = read_sources([Path(s) for s in sources], columns=wanted, reduce=narrowed)
        if check is not None:
            check(result.battles)
        rejected = result.quarantine.height
        if rejected:
            reasons = result.quarantine["reason"].value_counts(sort=True)
            warn(f"{rejected} row(s) skipped: " + ", ".join(f"{r} {n}" for r, n in reasons.iter_rows()) + " (use `arena ingest` to keep them in a quarantine)")
        return [result.battles]
    from arena_cli.io.store import Store

    opened = Store.open(store)
    parts = opened.scan_parts("battles", wanted)
    if not parts:
        raise NoDataError(f"store {opened.root} has no battles yet")
    return [narrowed(part) for part in parts]
