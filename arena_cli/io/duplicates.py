"""Ids, content hashes and duplicates: a vote's content hash (which tells an exact duplicate from a conflicting
one), ids for votes without one, and the split of a batch into new battles, duplicates and conflicts.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable

import numpy as np
import polars as pl

from arena_cli.io.index import BattleIndex, SortedRuns, content_key, content_words
from arena_cli.schema import BATTLE_SCHEMA, DEFAULTS, QUARANTINE_SCHEMA, QuarantineReason

#: How the id the tool makes for a vote without one begins (``sha-`` and 24 hex digits of its content hash).
CONTENT_ID = "sha-"

#: Part of every hashed text: bumped when what a hash covers changes (ids made from hashes change with it).
HASH_VERSION = "v2"
HASH_CHUNK_ROWS = 25_000


def content_hashes(frame: pl.DataFrame) -> pl.Series:
    """The content hash of every row. A chunk at a time: the texts hashed are long, and a whole batch of
    them (as Python strings) would be the largest thing an ingest holds."""
    digest = hashlib.blake2b
    hashes: list[str] = []
    for start in range(0, frame.height, HASH_CHUNK_ROWS):
        texts = content_text(frame.slice(start, HASH_CHUNK_ROWS)).to_list()
        hashes.extend(digest(t.encode(), digest_size=16).hexdigest() for t in texts)
    return pl.Series(hashes, dtype=pl.String)


#: ``,"key":null`` and ``{"key":null,`` in compact JSON: an object member that is null is left out of the
#: hash, as if absent (batches pad a nested object with the keys other rows have). ``,"`` and ``{"`` occur
#: in compact JSON only between members, never inside a string, where every quote is escaped.
_NULL_MEMBER = r',"(?:[^"\\]|\\.)*":null'
_FIRST_NULL_MEMBER = r'\{"(?:[^"\\]|\\.)*":null,?'


def content_text(frame: pl.DataFrame) -> pl.Series:
    """What a vote's content hash is taken of: each present field as ``{"name":value}`` JSON, canonical fields
    first, then extras by name; ids and provenance left out.

    Absent fields (null, empty text, or a field at its default, as a weight of 1) are skipped rather than
    written, so a vote hashes the same whatever other columns its source or batch has (a growing log that
    gains a field keeps its old ids).
    Extras are hashed as text, as the JSON and CSV readers give them, so a typed source and its JSONL or
    CSV export hash alike.
    """
    skip = {"battle_id", "content_hash", "source_file", "source_row"}
    canonical = [c for c in BATTLE_SCHEMA if c in frame.columns and c not in skip]
    extras = sorted(c for c in frame.columns if c not in BATTLE_SCHEMA)
    fields = []
    for name in canonical + extras:
        value, dtype = pl.col(name), frame.schema[name]
        if name in extras:  # as text (nested extras are JSON text already, see canonicalize)
            if dtype == pl.String and frame[name].str.contains(":null", literal=True).any():
                value = value.str.replace_all(_NULL_MEMBER, "").str.replace_all(_FIRST_NULL_MEMBER, "{")
            value, quoted = value.cast(pl.String), True
        else:
            quoted = False
        if frame.schema[name] == pl.String:
            value = pl.when(value != "").then(value)
        elif name in DEFAULTS:
            value = pl.when(value != DEFAULTS[name]).then(value)
        fields.append(pl.when(value.is_not_null()).then(_json_member(name, value, frame.schema[name], quoted)))
    return frame.select(pl.concat_str([pl.lit(HASH_VERSION), *fields], separator="\x1f", ignore_nulls=True)).to_series()


_PLAIN_NAME = re.compile(r"[A-Za-z0-9_.\- ]+")


def _json_member(name: str, value: pl.Expr, dtype: pl.DataType, quoted: bool) -> pl.Expr:
    """``{"name":value}`` as compact JSON (``value`` as a JSON string when ``quoted``). Numbers and booleans,
    whose text needs no escaping, are written directly (the same text as polars' encoder, several times
    faster); anything else goes through the encoder."""
    if (dtype.is_integer() or (quoted and (dtype.is_numeric() or dtype == pl.Boolean))) and _PLAIN_NAME.fullmatch(name):
        quote = '"' if quoted else ""
        return pl.concat_str(pl.lit(f'{{"{name}":{quote}'), value.cast(pl.String), pl.lit(f"{quote}}}"))
    return pl.struct(value.alias(name)).struct.json_encode()


def add_hashes(accepted: pl.DataFrame, occurrences: SortedRuns) -> pl.DataFrame:
    """Content hash of every row (all canonical fields and extras, not provenance) and an id for rows without
    one: ``sha-<hash>``, with ``~k`` for the k-th repeat of identical content in the same source (so appending
    to a growing log keeps every earlier id). ``occurrences`` holds the source's repeat counts so far (content
    hash -> count, updated): a lookup per batch, however many contents the source had."""
    frame = accepted.with_columns(content_hashes(accepted).alias("content_hash"))
    missing = frame["battle_id"].is_null() | (frame["battle_id"] == "")
    if missing.any():
        frame = frame.with_columns(pl.int_range(pl.len()).alias("__order"))
        without = frame.filter(missing).with_columns(pl.int_range(pl.len()).over("content_hash").alias("__k"))
        counts = without.group_by("content_hash").agg(pl.len().alias("__count"))
        words = content_words(counts["content_hash"])
        _, seen = occurrences.get(*words)
        occurrences.add(*words, counts["__count"].to_numpy().astype(np.uint64))
        counts = counts.select("content_hash", pl.Series("__seen", seen.astype(np.int64)))
        without = without.join(counts, on="content_hash", how="left").with_columns((pl.col("__k") + pl.col("__seen")).alias("__k"))
        without = without.with_columns(
            pl.concat_str(pl.lit(CONTENT_ID), pl.col("content_hash").str.slice(0, 24), pl.when(pl.col("__k") > 0).then(pl.format("~{}", pl.col("__k"))).otherwise(pl.lit(""))).alias("battle_id")
        ).drop("__k", "__seen")
        frame = pl.concat([frame.filter(~missing), without], how="vertical_relaxed").sort("__order").drop("__order")
    return frame


def split_duplicates(frame: pl.DataFrame, index: BattleIndex) -> tuple[pl.DataFrame, int, pl.DataFrame]:
    """Drop exact duplicates (same id, same content) and pull out conflicting ones (same id, other content), and
    add the new rows to ``index``.

    The reference content of an id is the one in ``index`` (the store and earlier batches) or else its first
    occurrence in this batch. Returns (new rows, number of exact duplicates, conflicting rows).
    """
    frame = frame.with_row_index("__order").with_columns(content_key(pl.col("content_hash")).alias("__key"))
    refs = frame.group_by("battle_id", maintain_order=True).agg(
        pl.col("__key").first().alias("__batch_ref"), pl.col("__order").first().alias("__first")
    )
    refs = refs.with_columns(index.references(refs["battle_id"]).alias("__seen_ref"))
    checked = frame.join(refs, on="battle_id", how="left", maintain_order="left")
    reference = pl.coalesce("__seen_ref", "__batch_ref")
    is_new = pl.col("__seen_ref").is_null() & (pl.col("__order") == pl.col("__first"))
    conflict = pl.col("__key") != reference
    helpers = ["__order", "__key", "__batch_ref", "__first", "__seen_ref"]
    new = checked.filter(is_new).drop(helpers)
    duplicates = checked.filter(~is_new & ~conflict).height
    conflicts = checked.filter(conflict).drop(helpers)
    index.add(new)
    return new, duplicates, conflicts


class SourceIds:
    """The ids one source has given so far, as 64-bit hashes (an eighth of the ids' memory; a collision only
    miscounts a warning): which rows reuse the id of an earlier row of the same source (see
    :func:`arena_cli.io.results.source_notes`)."""

    def __init__(self) -> None:
        self.hashes = SortedRuns("first")

    def reused(self, ids: pl.Series) -> pl.Series:
        """Per id (null: none): whether an earlier row of the source, in this batch or before, had it."""
        hashed = ids.hash()
        before = pl.Series(self.hashes.get(hashed.to_numpy())[0])
        reused = ids.is_not_null() & (~hashed.is_first_distinct() | before)
        self.hashes.add(hashed.filter(ids.is_not_null() & ~before).unique().to_numpy())
        return reused


def conflict_rows(conflicts: pl.DataFrame, raw_of: Callable[[pl.Series], pl.Series]) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "source_file": conflicts["source_file"],
            "source_row": conflicts["source_row"],
            "reason": [QuarantineReason.CONFLICTING_DUPLICATE.value] * conflicts.height,
            "detail": [f"battle_id {bid} already seen with different content" for bid in conflicts["battle_id"].to_list()],
            "raw": raw_of(conflicts["source_row"]),
            "raw_bytes": pl.Series([None] * conflicts.height, dtype=pl.Binary),
        },
        schema=QUARANTINE_SCHEMA,
    )
