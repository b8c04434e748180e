"""The read floor of a fit: a process that only reads, with polars, the columns a fit of one vote log needs, the
cheapest honest way (parquet: the needed columns and struct fields; JSON: a schema of the needed fields only),
and does nothing with them. `arena fit` cannot be faster than this; bench/fit.py reports its ratio to it.

    python bench/floor.py file|store|features PATH STYLE COUNTS IDS

COUNTS: where the style counts are (``meta``, ``flat``, ``texts``: conversations only, ``none``); ``features``
reads a store's battles and its cached lmarena-recipe features. IDS: a log file's column of battle ids, which a
fit of the file reads to drop duplicate votes (a store holds none: its ingest dropped them). Imports polars only.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import polars as pl

SIDES = "ab"
COUNTS = ["tokens", "h1", "h2", "h3", "h4", "h5", "h6", "ordered", "unordered", "bold_star", "bold_underscore"]
INT = pl.Int64()
META_FIELDS = {
    **{f"sum_assistant_{s}_tokens": INT for s in SIDES},
    **{f"header_count_{s}": pl.Struct({f"h{i}": INT for i in range(1, 7)}) for s in SIDES},
    **{f"list_count_{s}": pl.Struct({"ordered": INT, "unordered": INT}) for s in SIDES},
    **{f"bold_count_{s}": pl.Struct({"**": INT, "__": INT}) for s in SIDES},
}
CONVERSATION = pl.List(pl.Struct({"role": pl.String(), "content": pl.String()}))


def file_schema(style: str, counts: str, ids: str) -> dict[str, pl.DataType]:
    """The fields a fit reads from a vote log file, with their types."""
    schema: dict[str, pl.DataType] = {name: pl.String() for name in (ids, "model_a", "model_b", "outcome" if counts == "flat" else "winner")}
    if style != "none":
        if counts == "meta":
            schema["conv_metadata"] = pl.Struct(META_FIELDS)
        elif counts == "flat":
            schema.update({f"{c}_{s}": INT for s in SIDES for c in COUNTS})
        else:
            schema.update({f"conversation_{s}": CONVERSATION for s in SIDES})
    return schema


def read_file(path: str, style: str, counts: str, ids: str) -> list[pl.DataFrame]:
    schema = file_schema(style, counts, ids)
    if path.endswith(".parquet"):
        columns = [pl.col(name).struct.field(*dtype.to_schema()) if isinstance(dtype, pl.Struct) else pl.col(name)
                   for name, dtype in schema.items()]
        return [pl.scan_parquet(path).select(columns).collect()]
    reader = pl.read_ndjson if path.endswith(".jsonl") else pl.read_json
    return [reader(path, schema=schema)]


def read_store(path: str, style: str, counts: str, features: bool) -> list[pl.DataFrame]:
    """A store's battle parts (models, outcome and, without ``features``, the counts the battles carry) and, with
    ``features``, the cached count columns of its lmarena-recipe tables."""
    tables = json.loads((Path(path) / "manifest.json").read_text())["tables"]
    parts = lambda table: [str(Path(path) / part["path"]) for part in tables[table]]  # noqa: E731
    columns = ["model_a", "model_b", "outcome"]
    if style != "none" and not features:
        columns += {"meta": [f"meta_{c}_{s}" for s in SIDES for c in COUNTS], "flat": [f"{c}_{s}" for s in SIDES for c in COUNTS],
                    "texts": [f"conversation_{s}" for s in SIDES]}[counts]
    frames = [pl.scan_parquet(parts("battles")).select(columns).collect()]
    if style != "none" and features:
        for table in tables:
            if table.startswith(("features/tokens-", "features/markdown-lmarena-")):
                scan = pl.scan_parquet(parts(table))
                frames.append(scan.select([c for c in scan.collect_schema().names() if c.rsplit("_", 1)[0] in COUNTS]).collect())
    return frames


if __name__ == "__main__":
    kind, path, style, counts, ids = sys.argv[1:]
    frames = read_file(path, style, counts, ids) if kind == "file" else read_store(path, style, counts, features=kind == "features")
    print(sum(frame.height for frame in frames))
