"""Streamed reads: lean reads of parquet logs whose rows need no trimming or mapping, by polars' streaming engine.

Why: most logs a fit reads were written by tools, with trimmed model names and known winner labels, and few
rows to reject (self-battles, say). For files of narrow columns (no texts, nothing nested), a first pass
(:func:`_checked_rows`) finds the rows to take as they are and gives the others to :func:`canonicalize`,
which must reject every one of them; a second reads, maps and ``map_batch``es the rows taken in one streaming
query, which never holds the read columns whole.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import polars as pl

from arena_cli.exprs import lookup
from arena_cli.io.canonical import canonicalize, extra_exprs, field_exprs, id_expr
from arena_cli.io.fields import changed_values, parse_text
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
    summaries: dict[str, SourceSummary] = {}  # one per source, as batch reads give
    quarantine: list[pl.DataFrame] = []
    for number, (path, lean) in enumerate(zip(paths, leans)):
        checked = _checked_rows(Path(path), lean, labels)
        if checked is None:
            return ReadPath.LEAN
        rows, ids, rejected = checked
        if not lean_ids.add(number, ids):
            return ReadPath.FULL
        summary = summaries[str(path)] = SourceSummary(str(path), rows_read=rows, stored=rows - rejected.height)
        summary.quarantined.update(rejected["reason"].to_list())
        quarantine.append(rejected)
    if not lean_ids.settled():
        return ReadPath.FULL
    battles = []
    for path, lean in zip(paths, leans):
        schema, plan = lean.schema, lean.plan
        col = plan.columns
        fields, _ = field_exprs(schema, col)
        canonical = _scan(Path(path), lean).filter(_as_is(lean, labels)).select(
            pl.col(col["model_a"]).alias("model_a"),
            pl.col(col["model_b"]).alias("model_b"),
            lookup(pl.col(col["outcome"]), labels, None, pl.String()).alias("outcome"),  # every label is a known one as it is
            *[e.alias(k) for k, e in fields.items()],
            *[e.alias(k) for k, e in extra_exprs(schema, plan).items()],
            id_expr(schema, col).alias("battle_id"),
        )
        battles.append(_streamed_collect(map_batch(select_wanted(conform(canonical), columns)), Path(path)))
    return IngestResult(pl.concat(battles, how="diagonal_relaxed"), pl.concat(quarantine), list(summaries.values()))


def _scan(path: Path, lean: LeanParquet) -> pl.LazyFrame:
    return scan_parquet(path).select(lean.columns)


def _streamed_collect(query: Frame, path: Path) -> pl.DataFrame:
    try:
        return query.lazy().collect(engine="streaming")
    except (pl.exceptions.PolarsError, pl.exceptions.PanicException) as error:
        raise corrupt_parquet(path, error) from None


def _as_is(lean: LeanParquet, labels: dict[str, str]) -> pl.Expr:
    """Per row: whether :func:`canonicalize` accepts it as it is, model names aside (they are checked once per
    distinct value): both present and different, a winner label among ``labels`` as it is, typed fields that
    parse."""
    schema, col = lean.schema, lean.plan.columns
    a, b, outcome = (pl.col(col[f]) for f in ("model_a", "model_b", "outcome"))
    fields, checks = field_exprs(schema, col, lean.plan.extras)
    return pl.all_horizontal(
        a.is_not_null(), b.is_not_null(), a != b, outcome.is_in(list(labels)),
        *[~(flag & fields[field].is_null()) if field is not None else ~flag for _, flag, field, _ in checks],
    ).fill_null(False)


def _checked_rows(path: Path, lean: LeanParquet, labels: dict[str, str]) -> tuple[int, pl.Series, pl.DataFrame] | None:
    """One streaming pass over a file's names, labels, ids and typed fields: (rows, ids of the rows taken as they
    are, quarantine of the others); None if a model name needs trimming, or a row not taken is one that
    :func:`canonicalize` accepts (a label to normalise): the batch path reads such files."""
    schema, col = lean.schema, lean.plan.columns
    a, b, as_is = pl.col(col["model_a"]), pl.col(col["model_b"]), pl.col("__as_is")
    numbered = _scan(path, lean).with_row_index(ROW, offset=1).with_columns(_as_is(lean, labels).alias("__as_is"))
    has_ids = "battle_id" in col
    found = _streamed_collect(
        numbered.select(
            pl.len().alias("rows"),
            a.unique().implode().alias("names_a"),  # of every row: a name to trim anywhere sends the file to batches
            b.unique().implode().alias("names_b"),
            *([id_expr(schema, col).filter(as_is).implode().alias("ids")] if has_ids else []),
            (~as_is).sum().alias("others"),
        ),
        path,
    )
    names = pl.concat([found["names_a"][0], found["names_b"][0]]).to_frame("name")
    if changed_values(names, "name", parse_text("name", pl.String())) is not None:
        return None
    rejected = empty_quarantine()
    if found["others"].item():  # read again, those rows only
        others = _streamed_collect(numbered.filter(~as_is).drop("__as_is"), path).with_columns(pl.col(ROW).cast(pl.Int64))
        accepted, rejected = canonicalize(others, lean.plan, labels, str(path))
        if accepted.height:
            return None
    rows = int(found["rows"].item())
    ids = found["ids"][0] if has_ids else pl.Series("ids", [None] if rows > rejected.height else [], dtype=pl.String)  # id-less votes
    return rows, ids, rejected

