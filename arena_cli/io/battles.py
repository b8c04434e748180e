"""Battles for a command: from a store, or straight from vote-log files (one-shot CI use), then filtered.

Reads only the columns a command needs, plus those its ``--where`` expression names. Nothing here prints:
what a read has to tell (rows skipped in files) comes back as :attr:`Loaded.warnings`.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, TypeVar

import polars as pl

from arena_cli.errors import ArenaError, InputError, NoDataError
from arena_cli.io.options import BattleFilter, Source
from arena_cli.schema import BATTLE_SCHEMA, Frame

if TYPE_CHECKING:
    from arena_cli.io.reading import SourceColumns

T = TypeVar("T")


@dataclass(frozen=True)
class Loaded(Generic[T]):
    """Battles as read (a frame, the parts of one, or a fit's encoded parts) and what the read has to say."""

    battles: T
    warnings: tuple[str, ...] = ()


def where_expression(where: str, option: str = "--where") -> pl.Expr:
    """Parse ``--where``, a SQL condition on each battle, with polars (never eval'd as Python). A condition
    must be decided by the battle alone: aggregates (``count(*)``, ``avg(turn)``), windows and subqueries
    would be computed over each store part or batch read, not over the battles, so they are refused.
    ``option``: the option the condition came from, as errors name it."""
    try:
        condition = pl.sql_expr(where)
    except Exception as error:
        if _SUBQUERY.search(where):  # polars looks for the table it reads first ("relation 'battles' was not found")
            raise InputError(f"{option} {where!r}: subqueries are not supported") from None
        raise InputError(f"cannot parse {option} {where!r}: {_short_reason(error)}") from None
    beyond = _beyond_the_battle(condition)
    if beyond == "subquery" or any(name.startswith("_POLARS_") for name in condition.meta.root_names()):
        raise InputError(f"{option} {where!r}: subqueries are not supported")
    if beyond is not None:
        raise InputError(f"{option} {where!r} is not a condition on each battle: aggregates (count, sum, avg, ...) and windows (OVER) are not supported")
    return condition


#: ``(SELECT``, ``EXISTS (SELECT``: a subquery, which polars cannot parse when it names a table.
_SUBQUERY = re.compile(r"\(\s*select\b", re.IGNORECASE)


def _short_reason(error: Exception) -> str:
    """polars' parse errors in one short line: a construct it does not support is named, not dumped."""
    lines = str(error).strip().splitlines()
    text = " ".join(lines[0].split()) if lines else type(error).__name__
    unsupported = re.match(r"expression (\w+)\W.* is not currently supported$", text)
    if unsupported:
        return f"{unsupported.group(1)} expressions are not supported"
    return text if len(text) <= 160 else text[:157] + "..."


def _beyond_the_battle(condition: pl.Expr) -> str | None:
    """What part of ``condition`` looks at other rows than the battle's own: ``"subquery"`` (a query of its own),
    ``"aggregate"`` (an aggregate, a row count, a window), or None. Read from its serialised tree; where polars
    cannot serialise it, the condition is taken as it is."""
    try:
        tree = json.loads(condition.meta.serialize(format="json"))
    except Exception:
        return None

    def found(node: object) -> str | None:
        if isinstance(node, dict):
            if "SubPlan" in node:
                return "subquery"
            if any(key in ("Agg", "Over", "Window", "Len") for key in node):
                return "aggregate"
            return next((kind for key, value in node.items() if key != "Literal" and (kind := found(value))), None)
        if isinstance(node, list):
            return next((kind for item in node if (kind := found(item))), None)
        return "aggregate" if node == "Len" else None

    return found(tree)


class UnknownColumnsError(InputError):
    """A ``--where`` that names columns the battles lack: ``unknown``, and the ``option`` it came from."""

    def __init__(self, where: str, option: str, unknown: Sequence[str], columns: Sequence[str]):
        super().__init__(f"{option} {where!r} names unknown column(s) {', '.join(unknown)}; columns: {', '.join(columns)}")
        self.where, self.option, self.unknown = where, option, tuple(unknown)


def check_where(where: str, condition: pl.Expr, schema: pl.Schema, option: str = "--where") -> None:
    """``condition`` (``where`` parsed) against the columns it is applied to: every column it names exists, and it
    is a true/false condition that runs on them. Checked on the schema and an empty frame, before any row is
    read, so every command says the same of the same condition (a value that fails on some rows, such as a
    CAST, can only fail while they are read)."""
    unknown = [c for c in dict.fromkeys(condition.meta.root_names()) if c not in schema]
    if unknown:
        raise UnknownColumnsError(where, option, unknown, list(schema))
    try:
        dtype = pl.LazyFrame(schema=schema).select(condition).collect_schema().dtypes()[0]
        pl.DataFrame(schema=schema).select(condition)
    except Exception as error:
        raise InputError(f"{option} {where!r} failed: {_short_reason(error)}") from None
    if dtype != pl.Boolean:
        raise InputError(f"{option} {where!r} is not a true/false condition (it gives {_dtype_name(dtype)} values)")


def _dtype_name(dtype: pl.DataType) -> str:
    return "null" if dtype == pl.Null else str(dtype).lower()


def load_battles(source: Source, filters: BattleFilter | None = None, columns: Sequence[str] | None = None) -> Loaded[pl.DataFrame]:
    """The battles a command works on, as one frame (``columns=None`` reads all); see :func:`load_battle_parts`."""
    loaded = load_battle_parts(source, filters, columns)
    frame = collect_parts(loaded.battles)
    if frame.height == 0:
        raise NoDataError("no battles left after filtering")
    return Loaded(frame, loaded.warnings)


def collect_parts(parts: Sequence[Frame]) -> pl.DataFrame:
    """Parts of a table as one frame (types widened to one that holds every part's)."""
    return pl.concat([part.lazy() for part in parts], how="diagonal_relaxed").collect()


def load_battle_parts(
    source: Source,
    filters: BattleFilter | None = None,
    columns: Sequence[str] | None = None,
    map_batch: Callable[[Frame], Frame] | None = None,
) -> Loaded[list[Frame]]:
    """The battles a command works on, in parts: one lazy frame per store part (all with the same columns), or
    one frame read (and validated) from the files; only those ``filters`` keep. An empty result is for the
    consumer to find.

    ``map_batch``: a row-wise map of the filtered battles (a fit's few values per battle from many columns),
    applied part by part and, for files, batch by batch as they are read, so that only its result is ever
    held whole.
    """
    filters = filters or BattleFilter()
    condition = where_expression(filters.where, filters.where_option) if filters.where else None
    wanted = None
    if columns is not None:
        wanted = list(dict.fromkeys([*columns, *(condition.meta.root_names() if condition is not None else [])]))

    named = _NamedModels(filters)
    absent = _AbsentColumns(source, condition) if condition is not None and source.files else None

    def narrowed(part: Frame) -> Frame:
        named.look_in(part)
        if absent is not None:
            part = absent.filled(part)
        kept = _filtered(part, filters, condition)
        return map_batch(kept) if map_batch is not None else kept

    if source.files:
        from arena_cli.io.reading import read_sources
        from arena_cli.io.results import dropped_rows, nothing_read, source_notes

        if condition is not None and set(condition.meta.root_names()) <= set(BATTLE_SCHEMA):  # fail before reading
            check_where(filters.where or "", condition, pl.Schema(BATTLE_SCHEMA), filters.where_option)
        try:
            result = read_sources(list(source.files), source.input, columns=wanted, map_batch=narrowed)
        except UnknownColumnsError as error:  # a batch holds only the columns read: name those of the files
            assert absent is not None  # (only a condition names columns)
            raise UnknownColumnsError(error.where, error.option, error.unknown, absent.files.names) from None
        if absent is not None:
            absent.check(filters.where or "", filters.where_option)
        if not sum(s.stored for s in result.summaries):
            raise NoDataError(nothing_read(result.summaries, result.quarantine))
        notes = (*dropped_rows(result.summaries, result.quarantine), *source_notes(result.summaries, quarantined=False))
        return Loaded([result.battles], (*notes, *named.warnings()))
    from arena_cli.io.store import Store

    opened = Store.open(source.store_path)
    whole = opened.scan_parts("battles")
    if condition is not None and whole:  # on every stored column, not only those read
        check_where(filters.where or "", condition, whole[0].collect_schema(), filters.where_option)
    parts = opened.scan_parts("battles", wanted)
    if not parts:
        quarantined = opened.read("quarantine", ["reason"])
        reasons = "" if quarantined is None else ", ".join(f"{reason} {count}" for reason, count in sorted(quarantined["reason"].value_counts().iter_rows()))
        why = f": every row ingested was quarantined ({reasons}; `arena export --table quarantine` lists them)" if reasons else ""
        raise NoDataError(f"store {opened.root} has no battles yet{why}")
    narrowed_parts = [narrowed(part) for part in parts]
    return Loaded(narrowed_parts, named.warnings())


class _NamedModels:
    """Which of the models ``--models`` and ``--exclude-models`` name occur in the battles read (before any
    filter): a name that never does is most likely a typo, which would otherwise pass silently (a two-model
    board, or nothing excluded)."""

    def __init__(self, filters: BattleFilter):
        self.filters = filters
        self.names = list(dict.fromkeys([*(filters.models or ()), *(filters.exclude_models or ())]))
        self.seen: set[str] = set()

    def look_in(self, part: Frame) -> None:
        if not self.names or self.seen.issuperset(self.names):
            return
        sides = [part.lazy().select(pl.col(side).alias("model")) for side in ("model_a", "model_b")]
        found = pl.concat(sides).filter(pl.col("model").is_in(self.names)).unique().collect()
        self.seen.update(found["model"].to_list())

    def warnings(self) -> tuple[str, ...]:
        """One warning per option naming models without battles; no data at all when fewer than two of the
        ``--models`` occur, as no battle can then be between them."""
        unknown = {option: [m for m in names or () if m not in self.seen]
                   for option, names in (("--models", self.filters.models), ("--exclude-models", self.filters.exclude_models))}
        said = {option: f"{option} {', '.join(models)}: no such model in the battles (misspelt? `arena info` lists the models)"
                for option, models in unknown.items() if models}
        if self.filters.models and len(self.filters.models) - len(unknown["--models"]) < 2:
            raise NoDataError(said.get("--models", f"--models {', '.join(self.filters.models)}: a battle is between two of the models named"))
        return tuple(said.values())


class _AbsentColumns:
    """The columns a ``--where`` on vote-log files names that a batch lacks, null in its rows, as a read of the files
    together gives them (a store's parts, as :meth:`~arena_cli.io.store.Store.scan_parts` gives them): a column
    another file has, or another batch of the file (a judge log's votes of fractional verdicts; a JSON file's later
    rows, which may have keys its first ones lack). A column that no file's first batch shows is unknown at once
    when no later row can add one (:attr:`~arena_cli.io.reading.SourceColumns.complete`; :func:`check_where` says
    so); else it is null until every row is read, and unknown if no batch had it (:meth:`check`)."""

    def __init__(self, source: Source, condition: pl.Expr):
        self.source, self.condition = source, condition
        self.names = list(dict.fromkeys(condition.meta.root_names()))
        self.seen: set[str] = set()  # named columns some batch had
        self.unsettled: set[str] = set()  # named columns taken as null before any batch had them

    @functools.cached_property
    def files(self) -> SourceColumns:
        """The files' columns: read once, and only when a batch lacks a column the condition names."""
        from arena_cli.io.reading import source_columns

        return source_columns(list(self.source.files), self.source.input)

    def filled(self, part: Frame) -> Frame:
        """``part`` with the columns it lacks that the condition names and the files may have, null."""
        schema = part.collect_schema()
        self.seen.update(c for c in self.names if c in schema)
        missing = [c for c in self.names if c not in schema]
        if not missing:
            return part
        known = [c for c in missing if c in self.files.names]
        later = [] if self.files.complete else [c for c in missing if c not in known]
        self.unsettled.update(later)
        return _with_nulls(part, self.condition, [*known, *later])

    def check(self, where: str, option: str) -> None:
        """Once every row is read: a column taken as null that no batch had is unknown after all."""
        unknown = [c for c in self.names if c in self.unsettled and c not in self.seen]
        if unknown:
            raise UnknownColumnsError(where, option, unknown, self.files.names)


#: The types a column null in a batch's rows is given, the first under which the condition runs: a null gives a
#: condition the same value whatever its type, but polars wants one (a text function refuses a column of no type,
#: a comparison with a number refuses text).
_NULL_TYPES: tuple[pl.DataType, ...] = (pl.Null(), pl.String(), pl.Boolean(), pl.Float64(), pl.Datetime("us", "UTC"))


def _with_nulls(part: Frame, condition: pl.Expr, columns: Sequence[str]) -> Frame:
    """``part`` with ``columns`` null, of the first of :data:`_NULL_TYPES` under which ``condition`` runs."""
    if not columns:
        return part
    schema = part.collect_schema()

    def runs(dtype: pl.DataType) -> bool:
        try:
            check_where("", condition, pl.Schema({**schema, **dict.fromkeys(columns, dtype)}))
        except InputError:
            return False
        return True

    dtype = next((t for t in _NULL_TYPES if runs(t)), pl.Null())
    return part.with_columns(pl.lit(None, dtype).alias(c) for c in columns)


def _filtered(part: Frame, filters: BattleFilter, condition: pl.Expr | None) -> Frame:
    """The battles of ``part`` that ``filters`` keep (``condition``: its parsed ``where``)."""
    if condition is not None:
        where = filters.where or ""
        check_where(where, condition, part.collect_schema(), filters.where_option)
        try:
            if isinstance(part, pl.LazyFrame):  # evaluated here, on its own columns: errors surface now, not mid-command
                part.select(condition.sum()).collect()
            part = part.filter(condition)
        except ArenaError:  # a store part found damaged as the condition read it: said as such
            raise
        except Exception as error:
            raise InputError(f"{filters.where_option} {where!r} failed: {_short_reason(error)}") from None
    if filters.models:
        keep = pl.Series(list(filters.models)).implode()
        part = part.filter(pl.col("model_a").is_in(keep) & pl.col("model_b").is_in(keep))
    if filters.exclude_models:
        drop = pl.Series(list(filters.exclude_models)).implode()
        part = part.filter(~pl.col("model_a").is_in(drop) & ~pl.col("model_b").is_in(drop))
    return part


def filtered_by(frame: pl.DataFrame, where: str) -> pl.DataFrame:
    """The rows of a table in memory that a ``--where`` condition keeps (``arena export``)."""
    return _collected(_filtered(frame, BattleFilter(where), where_expression(where)))


def filter_frame(frame: pl.DataFrame, filters: BattleFilter) -> pl.DataFrame:
    """``filters`` applied to battles already in memory (a frame given to the Python API)."""
    condition = where_expression(filters.where, filters.where_option) if filters.where else None
    return _collected(_filtered(frame, filters, condition))


def _collected(frame: Frame) -> pl.DataFrame:
    return frame.collect() if isinstance(frame, pl.LazyFrame) else frame
