"""Lean reads: the battles one computation needs (a fit's names, outcomes and counts), without ids or hashes.

A lean read gives the battles of a full read (every row validated, duplicates dropped) but reads only the
source columns that validation and the wanted columns need (parquet), and hashes nothing: the ids it saw
(:class:`LeanIds`) tell whether hashes could change the outcome, which is rare and then needs a full read.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from arena_cli.errors import InputError
from arena_cli.io.canonical import FEATURE_COUNT_COLUMNS, FEATURE_DENSITY_COLUMNS, conv_metadata_shape_checks
from arena_cli.io.dialects import Plan, plan_for
from arena_cli.io.options import InputOptions
from arena_cli.io.duplicates import CONTENT_ID
from arena_cli.io.fields import MAX_COUNT, field_path, holds_bytes, may_leave_years, physical_range, typed_conversation
from arena_cli.io.files import scan_parquet
from arena_cli.io.readers import PARQUET_ERRORS, parquet_schema, refuse_wide_decimals
from arena_cli.schema import META_COLUMNS, FrameT, meta_paths

if TYPE_CHECKING:
    from polars._typing import PolarsDataType

#: Fields whose values can reject a row: a lean read reads and checks them even when it keeps none of them.
VALIDATED = (
    "model_a", "model_b", "outcome", "weight", "timestamp", "turn", "anony", "conversation_a", "conversation_b", "conv_metadata",
    *META_COLUMNS, *sorted(FEATURE_COUNT_COLUMNS | FEATURE_DENSITY_COLUMNS),
)
#: Columns that only a full read computes (a lean read is refused when any is asked for).
IDENTITY = ("battle_id", "content_hash", "source_file", "source_row")


def select_wanted(frame: FrameT, columns: Sequence[str], plan: Plan | None = None) -> FrameT:
    """The wanted columns that a canonical frame has (every canonical one; extras where the source had them).
    With the source's ``plan``: not the vote weights when the source has none (every vote then weighs 1,
    which a fit knows without a column of ones: 0.8 GB at 100M votes)."""
    names = frame.collect_schema().names()
    unweighted = plan is not None and "weight" not in plan.columns
    return frame.select([c for c in columns if c in names and not (unweighted and c == "weight")])


def lean_plan(plan: Plan, columns: Sequence[str], checked: Collection[str] = ()) -> Plan:
    """The plan restricted to the validated fields, the ids and the wanted columns (arena dialect); and the
    ``checked`` extras, which can reject a row (a typed source's dates and times: see ``canonical.time_checks``)."""
    if plan.dialect == "kaggle":
        return plan
    keep = {*VALIDATED, "battle_id", *columns}
    fields = {name: source for name, source in plan.columns.items() if name in keep}
    extras = tuple(e for e in plan.extras if e in keep or f"extra_{e}" in keep or e in checked)
    return Plan(plan.dialect, fields, extras)


#: A lean parquet read of narrow columns only (no texts, nothing nested) takes batches of about this many bytes
#: (up to a million rows) rather than the ingest's rows per batch: every batch costs a dozen small queries.
NARROW_BATCH_BYTES = 64 << 20
NARROW_BATCH_ROWS = 1_000_000
#: Fields that hold texts (conversations) or documents: a read of any of them keeps the ingest's batch size,
#: unless it is a struct of numbers only (LMArena's ``conv_metadata`` as released in parquet: a few counts).
TEXT_FIELDS = ("conversation_a", "conversation_b", "conv_metadata")
#: Bytes per value of a short string (a model name, a label) as polars holds it: a 16-byte view and its text
#: (a number or a time takes at most 8).
SHORT_TEXT_BYTES = 32


@dataclass(frozen=True)
class LeanParquet:
    """What a lean read takes from one parquet file: the columns (None: all of them, for the Kaggle dialect),
    whether they are narrow (no texts, nothing nested but a struct of numbers), and whether the ``conv_metadata``
    counts are taken as in range, no row checked: when they are not read, because the footer's statistics show
    them in range (a plain read); when they are read (a style read), if they are integers, each slice's least and
    greatest count checked instead (:func:`counts_out_of_range`; a slice that fails has its rows checked)."""

    schema: pl.Schema
    plan: Plan
    columns: list[str] | None
    narrow: bool
    #: the file's scan, which every query of the read shares: polars parses a footer once per scan, and a footer of
    #: many row groups takes time (13 ms for the 1,000 of a 1M-vote file as the hub writes it), once per query else
    scan: pl.LazyFrame = field(compare=False, repr=False)
    counts_in_range: bool = False

    def batch_rows(self, options: InputOptions) -> int:
        if not self.narrow:
            return options.batch_rows
        row_bytes = sum(_value_bytes(self.schema[c]) for c in self.columns or ()) or 1
        return min(NARROW_BATCH_ROWS, max(options.batch_rows, NARROW_BATCH_BYTES // row_bytes))

    @property
    def streamable(self) -> bool:
        """Whether a streamed read (:mod:`arena_cli.io.streamed`) can take the file: narrow columns, and model
        names and winner labels as text (an LMArena-style file)."""
        if self.plan.dialect != "arena" or not self.narrow:
            return False
        return all(self.schema[self.plan.columns[f]] == pl.String for f in ("model_a", "model_b", "outcome"))


def lean_parquet(path: Path, options: InputOptions, columns: Sequence[str]) -> LeanParquet:
    """What a lean read wanting ``columns`` reads of a parquet file, decided from its schema (and footer) alone."""
    scan = scan_parquet(path)
    schema = parquet_schema(path, scan)
    try:
        full = plan_for(list(schema), options, str(path))
    except InputError:
        if _has_rows(scan):
            raise
        # a file of no rows is an empty log whatever its columns, as a full read finds it: nothing to read
        return LeanParquet(schema, Plan("arena", {}, ()), [], narrow=False, scan=scan)
    plan = lean_plan(full, columns, _unsettled_times(scan, schema, full.extras))
    if plan.dialect == "kaggle":
        return LeanParquet(schema, plan, None, narrow=False, scan=scan)
    meta = plan.columns.get("conv_metadata")
    counts_wanted = bool(set(META_COLUMNS) & set(columns))
    if meta is None:
        counts_in_range = False
    elif counts_wanted:  # (asking the statistics would cost 20-40 ms; the values read are checked anyway)
        counts_in_range = count_bounds(schema, meta) is not None
    else:
        counts_in_range = _counts_in_range(scan, schema, meta)
    unread = {"conv_metadata"} if counts_in_range and not counts_wanted else set()
    # a list of {role, content} messages as parquet types it fails no check (nor does a list of nulls), unless it
    # holds bytes (which must be UTF-8): conversations not wanted are not read to be checked (a plain fit of a log
    # with texts reads no text)
    unread |= {f for f in ("conversation_a", "conversation_b") if f in plan.columns and f not in columns
               and typed_conversation(plan.columns[f], schema[plan.columns[f]]) is not None and not holds_bytes(schema[plan.columns[f]])}
    # nor does a parquet time within the years 1 to 9999, which nanoseconds always are, and others as the writer's
    # statistics show
    time = plan.columns.get("timestamp")
    if "timestamp" not in columns and time is not None and isinstance(schema[time], pl.Datetime) and not _unsettled_times(scan, schema, [time]):
        unread.add("timestamp")
    if unread:  # read only to be checked, and no row can fail its checks: not read at all
        plan = Plan(plan.dialect, {k: v for k, v in plan.columns.items() if k not in unread}, plan.extras)
    read = [c for c in dict.fromkeys([*plan.columns.values(), *plan.extras]) if c in schema]
    refuse_wide_decimals(path, scan, {c: schema[c] for c in read})
    extensions = [c for c in read if isinstance(schema[c], pl.Extension)]
    if extensions:  # an extension type's values as its storage type's, as a full read stores them
        scan = scan.with_columns(pl.col(c).ext.storage() for c in extensions)
        schema = scan.collect_schema()
    narrow = all(_numbers_only(schema[plan.columns[f]]) for f in TEXT_FIELDS if f in plan.columns) and not any(
        schema[c].is_nested() and not _numbers_only(schema[c]) for c in read
    )
    return LeanParquet(schema, plan, read, narrow, scan, counts_in_range)


def _unsettled_times(scan: pl.LazyFrame, schema: pl.Schema, extras: Sequence[str]) -> list[str]:
    """The date and time columns of ``extras`` that may hold a time outside the years 1 to 9999 (which rejects its row), by the
    writer's statistics (a query for such rows, which they answer unread where they show none): to be read and
    checked."""
    times = [e for e in extras if e in schema and may_leave_years(schema[e])]  # (nanoseconds: all within)
    if not times:
        return []
    bounds = {e: [pl.lit(bound).cast(schema[e]) for bound in physical_range(schema[e])] for e in times}  # (typed as the column, for the statistics)
    outside = [(pl.col(e) < low) | (pl.col(e) > high) for e, (low, high) in bounds.items()]
    try:
        return times if scan.filter(pl.any_horizontal(outside)).head(1).select(pl.len()).collect().item() else []
    except PARQUET_ERRORS:
        return times  # damage, which the read reports


def _has_rows(scan: pl.LazyFrame) -> bool:
    try:  # (the footer's row count)
        return bool(scan.select(pl.len()).collect().item())
    except PARQUET_ERRORS:
        return True  # damage, which the read reports


#: Integer types whose every value is at most MAX_COUNT.
_NARROW_INTEGERS = (pl.Int8, pl.Int16, pl.Int32, pl.UInt8, pl.UInt16, pl.UInt32)


def _counts_in_range(scan: pl.LazyFrame, schema: pl.Schema, column: str) -> bool:
    """Whether the writer's statistics show every count of the file's ``conv_metadata`` struct ``column`` a whole
    number in range (so that no row fails a count check): integer leaves, none of whose values is out of
    [0, MAX_COUNT].

    Asked of polars as a query for the rows out of range, which the writer's minimum and maximum of each count per
    row group answer without decoding the struct (20 ms for 8 row groups or 100,000; the bounds typed as the leaf,
    else polars cannot compare them with the statistics). Where a row group has no statistics, or may hold a value
    out of range, polars decodes its counts to answer. (A read that decodes the counts checks them as they
    decode instead: see :class:`LeanParquet`.)"""
    bounds = count_bounds(schema, column)
    if bounds is None:
        return False
    out_of_range = [value < low for value, low, _ in bounds if low is not None] + [value > high for value, _, high in bounds if high is not None]
    if not out_of_range:
        return True
    try:  # (the first row found out of range answers)
        return scan.filter(functools.reduce(operator.or_, out_of_range)).head(1).select(pl.len()).collect().item() == 0
    except PARQUET_ERRORS:
        return False  # damage, which the read reports


def count_bounds(schema: pl.Schema, column: str) -> list[tuple[pl.Expr, pl.Expr | None, pl.Expr | None]] | None:
    """Each count of a ``conv_metadata`` struct ``column`` with the bounds its type lets it pass (None: the type
    keeps it within), as literals of the leaf's type; None when some count is not an integer (or the struct's shape
    fails its checks), so that rows must be checked one by one."""
    dtype = schema[column]
    if not isinstance(dtype, pl.Struct) or conv_metadata_shape_checks(column, dtype):
        return None
    bounds: list[tuple[pl.Expr, pl.Expr | None, pl.Expr | None]] = []
    for side in ("a", "b"):
        for leaf in meta_paths(side).values():
            found = field_path(pl.col(column), dtype, leaf)
            if found is None:
                continue  # a count the struct does not have: nothing to check
            value, leaf_type = found
            if not leaf_type.is_integer():
                return None
            low = pl.lit(0, leaf_type) if leaf_type.is_signed_integer() else None
            high = pl.lit(MAX_COUNT, leaf_type) if leaf_type not in _NARROW_INTEGERS else None
            if low is not None or high is not None:
                bounds.append((value, low, high))
    return bounds


def counts_out_of_range(schema: pl.Schema, column: str) -> pl.Expr:
    """Whether some count of a ``conv_metadata`` struct ``column`` in a frame is out of range, from each count's
    minimum and maximum (half a row-by-row check's time): a read that takes the counts as in range
    (:attr:`LeanParquet.counts_in_range`) checks the values it decoded."""
    bounds = count_bounds(schema, column) or []
    checks = [value.min() < low for value, low, _ in bounds if low is not None] + [value.max() > high for value, _, high in bounds if high is not None]
    return pl.any_horizontal(checks).fill_null(False) if checks else pl.lit(False)


def _numbers_only(dtype: PolarsDataType) -> bool:
    """Whether a column holds numbers only: a number, or a struct of such (no text, no list)."""
    if isinstance(dtype, pl.Struct):
        return all(_numbers_only(field.dtype) for field in dtype.fields)
    return dtype.is_numeric() or dtype == pl.Null


def _value_bytes(dtype: PolarsDataType) -> int:
    """Bytes per value as polars holds it: 8 for a number, time or flag, :data:`SHORT_TEXT_BYTES` for a short text;
    a struct the sum of its fields."""
    if isinstance(dtype, pl.Struct):
        return sum(_value_bytes(field.dtype) for field in dtype.fields)
    return 8 if dtype.is_numeric() or dtype.is_temporal() or dtype == pl.Boolean else SHORT_TEXT_BYTES


class LeanIds:
    """The ids a lean read saw. Without hashes it cannot tell a duplicate from a conflict, nor name id-less
    votes, so a full read is needed whenever either could matter: an id seen twice, id-less votes in more
    than one source (the same vote in two logs is one battle), or id-less votes next to ids that look like
    content-hash ids.

    Ids are kept as 64-bit hashes (a tenth of their memory at 100M votes): two equal ids have equal hashes, so
    no repeat is missed; two ids whose hashes collide only cost a full read that was not needed."""

    def __init__(self) -> None:
        self.hashes: list[pl.Series] = []
        self.idless_sources: set[int] = set()  # by position: a file given twice is two sources
        self.content_ids = False  # whether an id looks like a content-hash id (``sha-...``)

    def add(self, source: int, ids: pl.Series) -> bool:
        """Record the ids of a source's battles (null: none); False once a full read is needed."""
        named = ids.drop_nulls()
        return self.add_hashed(source, named.hash(), idless=bool(ids.null_count()), content_ids=bool(named.str.starts_with(CONTENT_ID).any()))

    def add_hashed(self, source: int, hashes: pl.Series, *, idless: bool, content_ids: bool) -> bool:
        """:meth:`add` of ids already reduced (as a streaming query does): the hashes of the present ids
        (``Series.hash``/``Expr.hash``, default seed), whether some battle had none, whether some looks like a
        content-hash id."""
        if idless:
            self.idless_sources.add(source)
            if len(self.idless_sources) > 1:
                return False
        self.hashes.append(hashes)
        self.content_ids = self.content_ids or content_ids
        return True

    def settled(self) -> bool:
        """Whether every id seen is settled without hashes (else a full read is needed)."""
        hashes = pl.concat(self.hashes) if self.hashes else pl.Series(dtype=pl.UInt64)
        if hashes.n_unique() < hashes.len():  # (a parallel count, four times as fast as marking each repeat)
            return False
        return not (self.idless_sources and self.content_ids)
