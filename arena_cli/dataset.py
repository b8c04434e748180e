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
) -> pl.DataFrame:
    """The battles a command works on. ``sources`` (files) win over ``store``; ``columns=None`` reads all."""
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
        lazy = opened.scan("battles", wanted)
        if lazy is None:
            raise NoDataError(f"store {opened.root} has no battles yet")
        frame = lazy.collect()
    if condition is not None:
        unknown = [c for c in condition.meta.root_names() if c not in frame.columns]
        if unknown:
            raise InputError(f"--where names unknown column(s) {unknown}; columns: {', '.join(frame.columns)}")
        try:
            frame = frame.filter(condition)
        except Exception as error:
            raise InputError(f"--where {where!r} failed: {error}") from None
    if models:
        keep = pl.Series(list(models)).implode()
        frame = frame.filter(pl.col("model_a").is_in(keep) & pl.col("model_b").is_in(keep))
    if exclude_models:
        drop = pl.Series(list(exclude_models)).implode()
        frame = frame.filter(~pl.col("model_a").is_in(drop) & ~pl.col("model_b").is_in(drop))
    if frame.height == 0:
        raise NoDataError("no battles left after filtering")
    return frame
