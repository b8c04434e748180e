"""Streamed reads: lean reads of parquet logs whose rows need no trimming or mapping, by polars' streaming engine.

Why: most logs a fit reads were written by tools, with trimmed model names and known winner labels, and few
rows to reject (self-battles, say). For files of narrow columns (no texts; nothing nested but a struct of
counts, as LMArena's ``conv_metadata``), one streaming read feeds three queries: the rows taken as they are,
mapped by ``map_batch`` (so the read columns are never held whole); the others, which :func:`canonicalize` must
reject every one of; and the names and ids, which must need no trimming and no hashes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import polars as pl

from arena_cli.exprs import lookup
from arena_cli.io.canonical import Check, canonicalize, extra_exprs, field_exprs, id_expr, typed_meta
from arena_cli.io.fields import changed_values, parse_text
from arena_cli.io.duplicates import CONTENT_ID
from arena_cli.io.lean import LeanIds, LeanParquet, select_wanted
from arena_cli.io.readers import ROW, corrupt_parquet, scan_parquet
from arena_cli.io.results import IngestResult, ReadPath, SourceSummary
from arena_cli.schema import Frame, conform, empty_quarantine


def read_streamed(
    paths: Sequence[Path], leans: Sequence[LeanParquet], labels: dict[str, str], columns: Sequence[str],
    map_batch: Callable[[Frame], Frame],
) -> IngestResult | ReadPath:
    """The battles of ``paths`` (each with its :class:`LeanParquet`, all streamable); or the path to read them by
    instead: :attr:`ReadPath.LEAN` when a model name needs trimming or a label normalising, :attr:`ReadPath.FULL`
    when ids need hashes (see :class:`LeanIds`). ``map_batch`` gets each file's canonical query, lazily."""
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


#: Rows per streaming query: polars' streaming engine holds memory in proportion to the rows a query reads (for a
#: style fit of LMArena's nested parquet, 2.2 GB for a query of 4M rows, 0.6 GB for 1M), so a file is read a
#: slice of row groups at a time.
SLICE_ROWS = 1_000_000


def _read_file(
    path: Path, lean: LeanParquet, labels: dict[str, str], columns: Sequence[str], map_batch: Callable[[Frame], Frame]
) -> tuple[int, pl.DataFrame, pl.DataFrame, pl.DataFrame] | None:
    """One streaming pass over a file, a slice at a time (each read shared by three queries): (rows, the ids of
    the battles taken as they are (64-bit hashes, null for none; whether each looks like a content-hash id),
    those battles, mapped, quarantine of the others); None if a model name needs trimming, or a row not taken
    is one that :func:`canonicalize` accepts (a label to normalise): the batch path reads such files."""
    numbered = _scan(path, lean).with_row_index(ROW, offset=1).with_columns(_as_is(lean, labels).alias("__as_is"))
    rows = _streamed_collect([_scan(path, lean).select(pl.len())], path)[0].item()
    slices = [_read_slice(numbered.slice(start, SLICE_ROWS), path, lean, labels, columns, map_batch) for start in range(0, max(rows, 1), SLICE_ROWS)]
    names = pl.concat([name for found, _, _ in slices for name in (found["names_a"][0], found["names_b"][0])]).unique().to_frame("name")
    if changed_values(names, "name", parse_text("name", pl.String())) is not None:
        return None
    rejected = empty_quarantine()
    others = pl.concat([found["others"][0] for found, _, _ in slices])
    if others.len():  # read again, those rows only (a query of its own: as a fourth one, it slows the read)
        [other_rows] = _streamed_collect([numbered.filter(pl.col(ROW).is_in(others.implode())).drop("__as_is")], path)
        accepted, rejected = canonicalize(other_rows.with_columns(pl.col(ROW).cast(pl.Int64)), lean.plan, labels, str(path))
        if accepted.height:
            return None
    ids = pl.concat([taken_ids for _, taken_ids, _ in slices])
    taken = pl.concat([battles for _, _, battles in slices], how="diagonal_relaxed", rechunk=False)
    return rows, ids, taken, rejected


def _read_slice(
    numbered: pl.LazyFrame, path: Path, lean: LeanParquet, labels: dict[str, str], columns: Sequence[str], map_batch: Callable[[Frame], Frame]
) -> list[pl.DataFrame]:
    """The three queries of one slice of a file's rows: its names, rows not taken; ids; battles taken, mapped."""
    schema, plan = lean.schema, lean.plan
    col = plan.columns
    fields, _ = _typed_fields(lean)
    as_is, battle_id = pl.col("__as_is"), id_expr(schema, col)
    canonical = numbered.filter(as_is).select(
        pl.col(col["model_a"]).alias("model_a"),
        pl.col(col["model_b"]).alias("model_b"),
        lookup(pl.col(col["outcome"]), labels, None, pl.String()).alias("outcome"),  # every label is a known one as it is
        *[e.alias(k) for k, e in fields.items()],
        *[e.alias(k) for k, e in extra_exprs(schema, plan).items()],
        battle_id.alias("battle_id"),
    )
    checks = numbered.select(
        pl.col(col["model_a"]).unique().implode().alias("names_a"),  # of every row: a name to trim anywhere sends the file to batches
        pl.col(col["model_b"]).unique().implode().alias("names_b"),
        pl.col(ROW).filter(~as_is).implode().alias("others"),
    )
    # the ids of the rows taken, row by row (as aggregates of a filtered column, polars would hold the ids whole)
    taken_id = pl.col("__id")
    ids = numbered.filter(as_is).select(battle_id.alias("__id")).select(
        pl.when(taken_id.is_not_null()).then(taken_id.hash()).alias("hash"), taken_id.str.starts_with(CONTENT_ID).alias("content")
    )
    return _streamed_collect([checks, ids, map_batch(select_wanted(conform(canonical), columns)).lazy()], path)


def _scan(path: Path, lean: LeanParquet) -> pl.LazyFrame:
    return scan_parquet(path).select(lean.columns)


def _streamed_collect(queries: list[pl.LazyFrame], path: Path) -> list[pl.DataFrame]:
    try:
        return pl.collect_all(queries, engine="streaming")
    except (pl.exceptions.PolarsError, pl.exceptions.PanicException) as error:
        raise corrupt_parquet(path, error) from None


def _typed_fields(lean: LeanParquet) -> tuple[dict[str, pl.Expr], list[Check]]:
    """The typed fields of a file (those of :func:`field_exprs` and a ``conv_metadata`` struct's counts) with their
    checks; none for counts the footer shows in range (so that a query that only checks rows never decodes the
    struct)."""
    fields, checks = field_exprs(lean.schema, lean.plan.columns, lean.plan.extras)
    meta, meta_checks = typed_meta(lean.schema, lean.plan.columns)
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
