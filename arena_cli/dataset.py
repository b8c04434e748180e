"""Battles for a command: from a store, or straight from vote-log files (one-shot CI use), then filtered.

Reads only the columns a command needs, plus those its ``--where`` expression names.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import polars as pl

from arena_cli.errors import InputError, NoDataError


def where_expression(where: str) -> pl.Expr:
    """Parse a SQL boolean expression with polars (never eval'd as Python)."""
    try:
        return pl.sql_expr(where)
    except Exception as error:
        raise InputError(f"--where {where!r}: not a valid SQL expression ({error})") from None


def load_battles(
    sources: Sequence[Path] = (),
    store: Path | None = None,
    columns: Sequence[str] | None = None,
    where: str | None = None,
    models: Sequence[str] | None = None,
    exclude_models: Sequence[str] | None = None,
    lazy: bool = False,
) -> pl.DataFrame | pl.LazyFrame:
    """The battles a command works on. ``sources`` (files) win over ``store``; ``columns=None`` reads all.

    ``lazy``: a LazyFrame, so that a consumer computing a few values per battle from many columns (a fit's
    style terms from the per-side counts) never holds those columns whole. Files are still read (and
    validated) when called; a store is only scanned when the result is collected.
    """
    condition = where_expression(where) if where else None
    wanted = None
    if columns is not None:
        wanted = list(dict.fromkeys([*columns, *(condition.meta.root_names() if condition is not None else [])]))
    if sources:
        from arena_cli.io.ingest import read_sources
        from arena_cli.console import warn

        result = read_sources([Path(s) for s in sources], columns=wanted)
        rejected = result.quarantine.height
        if rejected:
            reasons = result.quarantine["reason"].value_counts(sort=True)
            warn(f"{rejected} row(s) skipped: " + ", ".join(f"{r} {n}" for r, n in reasons.iter_rows()) + " (use `arena ingest` to keep them in a quarantine)")
        frame = result.battles
    else:
        from arena_cli.io.store import Store

        opened = Store.open(store)
        scan = opened.scan("battles", wanted)
        if scan is None:
            raise NoDataError(f"store {opened.root} has no battles yet")
        frame = scan if lazy else scan.collect()
    if condition is not None:
        names = frame.collect_schema().names()
        unknown = [c for c in condition.meta.root_names() if c not in names]
        if unknown:
            raise InputError(f"--where names unknown column(s) {unknown}; columns: {', '.join(names)}")
        try:
            if isinstance(frame, pl.LazyFrame):  # evaluated once here (its columns only): errors surface now, not mid-fit
                frame.select(condition.sum()).collect()
            frame = frame.filter(condition)
        except Exception as error:
            raise InputError(f"--where {where!r} failed: {error}") from None
    if models:
        keep = pl.Series(list(models)).implode()
        frame = frame.filter(pl.col("model_a").is_in(keep) & pl.col("model_b").is_in(keep))
    if exclude_models:
        drop = pl.Series(list(exclude_models)).implode()
        frame = frame.filter(~pl.col("model_a").is_in(drop) & ~pl.col("model_b").is_in(drop))
    if isinstance(frame, pl.LazyFrame):
        return frame  # emptiness is found by the consumer's first pass
    if frame.height == 0:
        raise NoDataError("no battles left after filtering")
    return frame.lazy() if lazy else frame
