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
from arena_cli.io.lean import CONTENT_ID, LeanIds, LeanParquet, select_wanted
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
        rows, found, taken, rejected = read
        if not lean_ids.add_hashed(number, found["ids"][0], idless=found["idless"].item(), content_ids=found["content_ids"].item()):
            return ReadPath.FULL
        summary = SourceSummary(str(path), rows_read=rows, stored=rows - rejected.height)
        summaries.append(summary)
        summary.quarantined.update(rejected["reason"].to_list())
        quarantine.append(rejected)
        battles.append(taken)
    if not lean_ids.settled():
        return ReadPath.FULL
    return IngestResult(pl.concat(battles, how="diagonal_relaxed"), pl.concat(quarantine), summaries)


def _read_file(
    path: Path, lean: LeanParquet, labels: dict[str, str], columns: Sequence[str], map_batch: Callable[[Frame], Frame]
) -> tuple[int, pl.DataFrame, pl.DataFrame, pl.DataFrame] | None:
    """One streaming pass over a file (one read shared by three queries): (rows, what is known of its names and
    ids, its battles taken as they are, mapped, quarantine of the others); None if a model name needs trimming,
    or a row not taken is one that :func:`canonicalize` accepts (a label to normalise): the batch path reads
    such files."""
    schema, plan = lean.schema, lean.plan
    col = plan.columns
    fields, _ = _typed_fields(lean)
    numbered = _scan(path, lean).with_row_index(ROW, offset=1).with_columns(_as_is(lean, labels).alias("__as_is"))
    as_is, battle_id = pl.col("__as_is"), id_expr(schema, col)
    taken_ids = battle_id.filter(as_is)
    canonical = numbered.filter(as_is).select(
        pl.col(col["model_a"]).alias("model_a"),
        pl.col(col["model_b"]).alias("model_b"),
        lookup(pl.col(col["outcome"]), labels, None, pl.String()).alias("outcome"),  # every label is a known one as it is
        *[e.alias(k) for k, e in fields.items()],
        *[e.alias(k) for k, e in extra_exprs(schema, plan).items()],
        battle_id.alias("battle_id"),
    )
    checks = numbered.select(
        pl.len().alias("rows"),
        pl.col(col["model_a"]).unique().implode().alias("names_a"),  # of every row: a name to trim anywhere sends the file to batches
        pl.col(col["model_b"]).unique().implode().alias("names_b"),
        taken_ids.drop_nulls().hash().implode().alias("ids"),
        (taken_ids.is_null().any() if "battle_id" in col else as_is.any()).alias("idless"),
        taken_ids.str.starts_with(CONTENT_ID).any().fill_null(False).alias("content_ids"),
        pl.col(ROW).filter(~as_is).implode().alias("others"),
    )
    found, taken = _streamed_collect([checks, map_batch(select_wanted(conform(canonical), columns)).lazy()], path)
    names = pl.concat([found["names_a"][0], found["names_b"][0]]).to_frame("name")
    if changed_values(names, "name", parse_text("name", pl.String())) is not None:
        return None
    rejected = empty_quarantine()
    others = found["others"][0]
    if others.len():  # read again, those rows only (a query of its own: as a third one above, it slows the read)
        [other_rows] = _streamed_collect([numbered.filter(pl.col(ROW).is_in(others.implode())).drop("__as_is")], path)
        accepted, rejected = canonicalize(other_rows.with_columns(pl.col(ROW).cast(pl.Int64)), plan, labels, str(path))
        if accepted.height:
            return None
    return int(found["rows"].item()), found, taken, rejected


def _scan(path: Path, lean: LeanParquet) -> pl.LazyFrame:
    return scan_parquet(path).select(lean.columns)


def _streamed_collect(queries: list[pl.LazyFrame], path: Path) -> list[pl.DataFrame]:
    try:
        return pl.collect_all(queries, engine="streaming")
    except (pl.exceptions.PolarsError, pl.exceptions.PanicException) as error:
        raise corrupt_parquet(path, error) from None


def _typed_fields(lean: LeanParquet) -> tuple[dict[str, pl.Expr], list[Check]]:
    """The typed fields of a file (those of :func:`field_exprs` and a ``conv_metadata`` struct's counts) with their checks."""
    fields, checks = field_exprs(lean.schema, lean.plan.columns, lean.plan.extras)
    meta, meta_checks = typed_meta(lean.schema, lean.plan.columns)
    return {**fields, **meta}, [*checks, *meta_checks]


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
