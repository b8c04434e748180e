"""Streamed reads: lean reads of parquet logs whose rows need no trimming or mapping, a slice at a time.

Why: most logs a fit reads were written by tools, with trimmed model names and known winner labels, and few
rows to reject (self-battles, say). For files of narrow columns (no texts; nothing nested but a struct of
counts, as LMArena's ``conv_metadata``), each slice of rows is read once and gives: the rows taken as they are,
mapped by ``map_batch`` (so only the mapped values are held for the whole file); the others, which
:func:`canonicalize` must reject every one of; and the names and ids, which must need no trimming and no hashes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from arena_cli.exprs import lookup
from arena_cli.io.canonical import Check, canonicalize, extra_exprs, field_exprs, id_expr, typed_meta
from arena_cli.io.fields import CONTROL_CHARACTER, changed_values, parse_text
from arena_cli.io.duplicates import CONTENT_ID
from arena_cli.io.lean import LeanIds, LeanParquet, counts_out_of_range, select_wanted
from arena_cli.io.files import local_path, quiet_stderr, read_ahead
from arena_cli.io.readers import ROW, corrupt_parquet
from arena_cli.io.results import IngestResult, ReadPath, SourceSummary
from arena_cli.schema import Frame, conform, empty_quarantine


def read_streamed(
    paths: Sequence[Path], leans: Sequence[LeanParquet], labels: dict[str, str], columns: Sequence[str],
    map_batch: Callable[[Frame], Frame],
) -> IngestResult | ReadPath:
    """The battles of ``paths`` (each with its :class:`LeanParquet`, all streamable); or the path to read them by
    instead: :attr:`ReadPath.LEAN` when a model name needs trimming or a label normalising, :attr:`ReadPath.FULL`
    when ids need hashes (see :class:`LeanIds`). ``map_batch`` gets each slice's canonical query, lazily."""
    lean_ids = LeanIds()
    summaries: list[SourceSummary] = []  # one per source, as batch reads give
    quarantine: list[pl.DataFrame] = []
    battles: list[pl.DataFrame] = []
    for number, (path, lean) in enumerate(zip(paths, leans)):
        read = _read_file(Path(path), lean, labels, columns, map_batch)
        if read is None:
            return ReadPath.LEAN
        rows, ids, taken, rejected = read
        if not lean_ids.add_hashed(number, ids["hash"].drop_nulls(), idless=bool(ids["hash"].null_count()), content_ids=bool(ids["content"].any())):
            return ReadPath.FULL
        summary = SourceSummary(str(path), rows_read=rows, stored=rows - rejected.height)
        summaries.append(summary)
        summary.quarantined.update(rejected["reason"].to_list())
        quarantine.append(rejected)
        battles.append(taken)
    if not lean_ids.settled():
        return ReadPath.FULL
    return IngestResult(pl.concat(battles, how="diagonal_relaxed"), pl.concat(quarantine), summaries)


#: Rows per slice, at most: a file is read a slice of rows at a time, each slice whole in memory (about 0.3 GB at
#: 1M rows for a style fit of LMArena's nested parquet), so that memory is bounded by the slice and every check
#: and map of a slice shares one read of it (as queries of their own, each would read the file again).
SLICE_ROWS = 1_000_000
#: A file is cut into this many slices at least, of ``MIN_SLICE_ROWS`` rows at least: the next slice is read while
#: one is checked and mapped, so a file of a few slices spends less time waiting than one of one.
SLICES = 4
MIN_SLICE_ROWS = 100_000


def slice_rows(rows: int) -> int:
    """The rows of each slice of a file of ``rows`` rows, read a slice at a time (see :data:`SLICES`)."""
    return max(1, min(SLICE_ROWS, max(MIN_SLICE_ROWS, -(-rows // SLICES))))


class _ArrowStructs:
    """A file's struct columns (LMArena's ``conv_metadata``: counts only, as a streamed read's structs are), a
    slice after another, decoded by pyarrow; the slice's other columns by polars.

    Why: polars 2.1 decodes a struct column at five to eight times the CPU of the same values as flat columns, and
    every leaf of it whatever a query selects; pyarrow decodes it at about the cost of flat columns. A style fit of
    1M votes of LMArena's nested parquet took 1.36 times the time of the same votes as flat columns (hub-written),
    1.19 (pyarrow-written) and 1.32 (polars-written); with pyarrow 1.16, 1.12 and 1.19. From a slice that pyarrow
    cannot read as polars does (its rows or types otherwise, damage) on, polars reads the whole slices, reporting
    damage as for any file."""

    def __init__(self, path: Path, lean: LeanParquet, structs: list[str], rows_per_slice: int):
        self.path, self.order = path, list(lean.columns or ())
        self.types = {c: lean.schema[c] for c in structs}
        self.others = [c for c in self.order if c not in structs]
        self.batches: Iterator[Any] | None = None
        self.errors: tuple[type[BaseException], ...] = (OSError, ValueError, TypeError, pl.exceptions.PolarsError)
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError:  # (a dependency: only a broken install lacks it)
            return
        self.errors += (pa.ArrowException,)
        try:
            file = pq.ParquetFile(local_path(path))
            if all(_numbers(file.schema_arrow.field(c).type) for c in structs):
                self.batches = file.iter_batches(batch_size=rows_per_slice, columns=structs, use_threads=False)
        except self.errors:
            pass  # (polars reads the file, and reports what is wrong with it)

    @classmethod
    def of(cls, path: Path, lean: LeanParquet, rows_per_slice: int) -> _ArrowStructs | None:
        structs = [c for c in lean.columns or () if isinstance(lean.schema[c], pl.Struct)]
        return cls(path, lean, structs, rows_per_slice) if structs else None

    def slice(self, scan: pl.LazyFrame, start: int, length: int) -> pl.DataFrame | None:
        """Rows ``start`` to ``start + length`` of the file's columns, the slices taken in order; None when polars
        is to read them (and every slice after them)."""
        if self.batches is None:
            return None
        try:
            batch = next(self.batches, None)
            structs = None if batch is None or batch.num_rows != length else pl.from_arrow(batch)
        except self.errors:
            structs = None
        if not isinstance(structs, pl.DataFrame) or structs.schema != pl.Schema(self.types):
            self.batches = None
            return None
        rest = _collect(scan.select(self.others).slice(start, length), self.path)
        if rest.height != length:
            self.batches = None
            return None
        return rest.hstack(structs.get_columns()).select(self.order)


def _numbers(dtype: Any) -> bool:
    """Whether an Arrow type is a struct (at any depth) of integers and floats only: what polars takes from Arrow
    as they are (it misreads the 32- and 64-bit decimals pyarrow writes, in a struct, as other values)."""
    import pyarrow as pa

    if pa.types.is_struct(dtype):
        return all(_numbers(dtype.field(i).type) for i in range(dtype.num_fields))
    return bool(pa.types.is_integer(dtype) or pa.types.is_floating(dtype))


@dataclass(frozen=True)
class _Slice:
    """What one slice of a file gives: the ids of the battles taken as they are (64-bit hashes, null for none;
    whether each looks like a content-hash id), those battles, mapped, and quarantine of the others."""

    ids: pl.DataFrame
    battles: pl.DataFrame
    rejected: pl.DataFrame


def _read_file(
    path: Path, lean: LeanParquet, labels: dict[str, str], columns: Sequence[str], map_batch: Callable[[Frame], Frame]
) -> tuple[int, pl.DataFrame, pl.DataFrame, pl.DataFrame] | None:
    """One pass over a file, a slice at a time: (rows, ids, battles taken, mapped, quarantine; see :class:`_Slice`);
    None if a model name needs trimming or has a control character (its rows are rejected), or a row not taken is
    one that :func:`canonicalize` accepts (a label to normalise): the batch path reads such files."""
    scan = lean.scan.select(lean.columns)
    rows = _collect(scan.select(pl.len()), path).item()
    size = slice_rows(rows)
    cuts = [(start, min(size, max(rows, 1) - start)) for start in range(0, max(rows, 1), size)]
    structs = _ArrowStructs.of(path, lean, size)
    slices: list[_Slice] = []

    def read(start: int, length: int) -> pl.DataFrame:
        frame = structs.slice(scan, start, length) if structs is not None else None
        return _few_chunks(frame if frame is not None else _collect(scan.slice(start, length), path))

    frames = read_ahead(read(start, length) for start, length in cuts)  # the next slice read while this one is checked
    for (start, _), frame in zip(cuts, frames):
        found = _read_slice(frame, start, path, lean, labels, columns, map_batch)
        del frame
        if found is None:
            return None
        slices.append(found)
    ids = pl.concat([found.ids for found in slices])
    taken = pl.concat([found.battles for found in slices], how="diagonal_relaxed", rechunk=False)
    return rows, ids, taken, pl.concat([empty_quarantine(), *(found.rejected for found in slices)])


#: A slice read as more chunks than this (a chunk per row group) is made one chunk: the checks and maps of a slice
#: of a file of 1,000-row row groups (as the hub's releases are), 250 chunks, took 1.4 times as long, and copying
#: a slice of a few chunks costs more than it saves.
MAX_SLICE_CHUNKS = 16


def _few_chunks(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.rechunk() if max(frame.n_chunks("all"), default=1) > MAX_SLICE_CHUNKS else frame


def _read_slice(
    frame: pl.DataFrame, start: int, path: Path, lean: LeanParquet, labels: dict[str, str], columns: Sequence[str],
    map_batch: Callable[[Frame], Frame],
) -> _Slice | None:
    """One slice of a file's rows (``start`` the first's place), checked and mapped; None as for :func:`_read_file`.

    The checks, the ids and the mapped battles are independent queries of the slice, collected together (polars
    runs them side by side): the battles are mapped as if every row were taken as it is, and again, from the rows
    that are, when some are not (rows to reject are few, and in few logs)."""
    col = lean.plan.columns
    rows = frame.lazy()
    # each column's names as one list (two lists found side by side: half the time of one list of both columns')
    names = rows.select(pl.col(col[f]).unique().implode().alias(f) for f in ("model_a", "model_b"))
    as_is = rows.select(_as_is(lean, labels).alias("as_is"))
    # counts taken as in range (see LeanParquet): checked by their extremes, and row by row in a slice that fails
    extremes_checked = lean.counts_in_range and "conv_metadata" in col
    out_of_range = rows.select(counts_out_of_range(lean.schema, col["conv_metadata"]) if extremes_checked else pl.lit(False))
    per_side, taken, ids, battles, counts_wrong = _collect_all([names, as_is, *_taken(rows, lean, labels, columns, map_batch), out_of_range], path)
    distinct = pl.concat([per_side[f].explode() for f in ("model_a", "model_b")]).unique().to_frame("name")
    if changed_values(distinct, "name", parse_text("name", pl.String())) is not None or distinct["name"].str.contains(CONTROL_CHARACTER).any():
        return None
    if counts_wrong.item():
        return _read_slice(frame, start, path, dataclasses.replace(lean, counts_in_range=False), labels, columns, map_batch)
    if taken["as_is"].all():
        return _Slice(ids, battles, empty_quarantine())
    kept = taken["as_is"]
    others = frame.with_row_index(ROW, offset=start + 1).filter(~kept).with_columns(pl.col(ROW).cast(pl.Int64))
    accepted, rejected = canonicalize(others, lean.plan, labels, str(path))
    if accepted.height:
        return None
    ids, battles = _collect_all(_taken(frame.lazy().filter(kept), lean, labels, columns, map_batch), path)
    return _Slice(ids, battles, rejected)


def _taken(
    rows: pl.LazyFrame, lean: LeanParquet, labels: dict[str, str], columns: Sequence[str], map_batch: Callable[[Frame], Frame]
) -> list[pl.LazyFrame]:
    """The ids (see :class:`_Slice`) and the mapped canonical battles of rows taken as they are, as queries."""
    schema, plan = lean.schema, lean.plan
    col = plan.columns
    fields, _ = _typed_fields(lean)
    battle_id = id_expr(schema, col)
    canonical = rows.select(
        pl.col(col["model_a"]).alias("model_a"),
        pl.col(col["model_b"]).alias("model_b"),
        lookup(pl.col(col["outcome"]), labels, None, pl.String()).alias("outcome"),  # every label is a known one as it is
        *[e.alias(k) for k, e in fields.items()],
        *[e.alias(k) for k, e in extra_exprs(schema, plan).items()],
        battle_id.alias("battle_id"),
    )
    ids = rows.select(battle_id.alias("id")).select(
        pl.when(pl.col("id").is_not_null()).then(pl.col("id").hash()).alias("hash"), pl.col("id").str.starts_with(CONTENT_ID).alias("content")
    )
    return [ids, map_batch(select_wanted(conform(canonical), columns, plan)).lazy()]


def _collect_all(queries: list[pl.LazyFrame], path: Path) -> list[pl.DataFrame]:
    try:
        with quiet_stderr():  # (polars panics on some damaged pages, writing its message and backtrace there first)
            return pl.collect_all(queries)
    except (pl.exceptions.PolarsError, pl.exceptions.PanicException) as error:
        raise corrupt_parquet(path, error) from None


def _collect(query: pl.LazyFrame, path: Path) -> pl.DataFrame:
    try:
        with quiet_stderr():
            return query.collect()
    except (pl.exceptions.PolarsError, pl.exceptions.PanicException) as error:
        raise corrupt_parquet(path, error) from None


def _typed_fields(lean: LeanParquet) -> tuple[dict[str, pl.Expr], list[Check]]:
    """The typed fields of a file (those of :func:`field_exprs` and a ``conv_metadata`` struct's counts) with their
    checks; none for counts taken as in range (see :class:`LeanParquet`: each slice's extremes are checked instead,
    half the time of a check row by row)."""
    fields, checks = field_exprs(lean.schema, lean.plan.columns, lean.plan.extras)
    meta, meta_checks = typed_meta(lean.schema, lean.plan.columns, lean.counts_in_range)
    return {**fields, **meta}, [*checks, *([] if lean.counts_in_range else meta_checks)]


def _as_is(lean: LeanParquet, labels: dict[str, str]) -> pl.Expr:
    """Per row: whether :func:`canonicalize` accepts it as it is, model names aside (they are checked once per
    distinct value): both present and different, a winner label among ``labels`` as it is, typed fields that
    parse."""
    col = lean.plan.columns
    a, b, outcome = (pl.col(col[f]) for f in ("model_a", "model_b", "outcome"))
    fields, checks = _typed_fields(lean)
    return pl.all_horizontal(
        a.is_not_null(), b.is_not_null(), a != b, outcome.is_in(list(labels)),
        *[~(flag & fields[field].is_null()) if field is not None else ~flag for _, flag, field, _ in checks],
    ).fill_null(False)
