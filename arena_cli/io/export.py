"""Exporting a store table to one ordinary file (parquet, JSONL, CSV)."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from arena_cli.errors import InputError
from arena_cli.io.atomic import writable_file, write_output
from arena_cli.io.fields import json_text
from arena_cli.io.store import Store
from arena_cli.schema import empty_battles, empty_quarantine

_EXTENSIONS = {".parquet": "parquet", ".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv"}


def export_table(store: Path | None, table: str, output: Path, fmt: str | None = None, where: str | None = None) -> int | None:
    """Write ``table`` of the store to ``output``; returns the number of rows written, None when ``output`` is a
    device or pipe whose reader stopped reading before the end (``-o /dev/stdout | head``)."""
    writable_file(output)
    fmt = fmt or _EXTENSIONS.get(Path(output).suffix.lower())
    if fmt is None:
        raise InputError(f"{output}: cannot tell the export format from the extension; use --format parquet|jsonl|csv")
    if table not in ("battles", "quarantine"):
        raise InputError(f"--table {table!r}: expected battles or quarantine")
    opened = Store.open(store)
    stored = opened.read(table)
    # nothing stored yet: the table's columns all the same, so that a CSV has its header
    frame = stored if stored is not None else empty_battles() if table == "battles" else empty_quarantine()
    if where:
        from arena_cli.io.battles import filtered_by

        frame = filtered_by(frame, where)
    if fmt == "parquet":
        whole = write_output(Path(output), lambda tmp: frame.write_parquet(tmp, compression="zstd"))
        return frame.height if whole else None
    # Text formats: exact bytes (the quarantine's raw_bytes) as hex; CSV cells hold nested values as JSON.
    binary = [c for c, t in frame.schema.items() if t == pl.Binary]
    frame = frame.with_columns(pl.col(c).bin.encode("hex") for c in binary) if binary else frame
    if fmt == "jsonl":
        whole = write_output(Path(output), lambda tmp: frame.write_ndjson(tmp))
    else:
        nested = [c for c, t in frame.schema.items() if t.is_nested()]
        flat = frame.with_columns(json_text(pl.col(c)).alias(c) for c in nested) if nested else frame
        whole = write_output(Path(output), lambda tmp: flat.write_csv(tmp))
    return frame.height if whole else None

