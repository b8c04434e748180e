"""Reading vote logs: the ingest stream (:func:`stream`, which feeds the store) and in-memory reads
(:func:`read_sources`), by the fastest path that gives the same battles (:class:`ReadPath`).

Flow per batch: a container reader (:mod:`arena_cli.io.readers`) gives rows; a dialect
(:mod:`arena_cli.io.dialects`) maps source columns to the canonical fields; every row is validated
(:mod:`arena_cli.io.canonical`); a full read then hashes contents and settles duplicates
(:mod:`arena_cli.io.duplicates`), a lean one (:mod:`arena_cli.io.lean`) only checks that no id needs hashes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import polars as pl

from arena_cli.io.canonical import align, canonicalize, numeric_extras, raw_of
from arena_cli.io.dialects import Plan, check_sources, container_for, plan_for
from arena_cli.io.duplicates import SourceIds, add_hashes, conflict_rows, split_duplicates
from arena_cli.io.fields import may_leave_years
from arena_cli.io.files import read_ahead
from arena_cli.io.index import BattleIndex, SortedRuns
from arena_cli.io.lean import IDENTITY, LeanIds, LeanParquet, lean_parquet, lean_plan, select_wanted
from arena_cli.io.judged import JudgeLog, source_files
from arena_cli.io.options import InputOptions
from arena_cli.io.readers import read_batches
from arena_cli.io.results import IngestResult, ReadPath, SourceSummary, keep_summary
from arena_cli.io.streamed import read_streamed
from arena_cli.io.streamed_jsonl import read_json_streamed
from arena_cli.schema import BATTLE_SCHEMA, Frame, conform, empty_battles, empty_quarantine

#: A row-wise map of battles (a fit's few values per battle from many columns), applied as they are read.
MapBatch = Callable[[Frame], Frame]


@dataclass(frozen=True)
class ReadChoice:
    """The read path for some sources, and what was learnt choosing it (each file's lean plan, for a streamed read)."""

    path: ReadPath
    leans: tuple[LeanParquet, ...] = ()


def choose_read_path(paths: Sequence[Path], options: InputOptions, columns: Sequence[str] | None) -> ReadChoice:
    """The fastest read path that can give the battles a caller wants, from the files' containers and (parquet)
    schemas alone, no row read: a full read when ``columns`` is None or names an id or provenance column (only
    hashes give them), a streamed read when every file is parquet of narrow columns with text names and labels or
    every file is JSON lines or a JSON array, else a lean batch read. A fast path that finds mid-way it cannot
    finish names the path to take instead."""
    if columns is None or set(columns) & set(IDENTITY):
        return ReadChoice(ReadPath.FULL)
    containers = {container_for(Path(path), options) for path in paths}
    if containers <= {"jsonl", "json"}:
        return ReadChoice(ReadPath.STREAMED_JSON)
    if containers != {"parquet"}:
        return ReadChoice(ReadPath.LEAN)
    leans = tuple(lean_parquet(Path(path), options, columns) for path in paths)
    if not all(lean.streamable for lean in leans):
        return ReadChoice(ReadPath.LEAN)
    return ReadChoice(ReadPath.STREAMED, leans)


def read_sources(
    paths: list[Path], options: InputOptions | None = None, columns: Sequence[str] | None = None,
    map_batch: MapBatch | None = None,
) -> IngestResult:
    """Read vote logs in memory (no store): for one-shot use such as ``arena fit votes.jsonl``.

    ``columns``: the canonical columns the caller needs. Unless they include an id or provenance column, the
    read is *lean*: the same battles as a full read (every row validated, duplicates dropped), but hashes
    are computed only when ids make them necessary, which is rare and then costs a second, full read. The
    quarantined rows of a lean read of parquet show only the columns that were read.

    ``map_batch``: a row-wise map of the battles; a lean read applies it batch by batch as the battles are read
    (or within the streaming query, to a ``LazyFrame``), so only its result is ever held whole.
    """
    options = options or InputOptions()
    map_batch = map_batch or _unchanged
    labels = check_sources(paths, options)
    paths = source_files(paths, options)
    choice = choose_read_path(paths, options, columns)
    path = choice.path
    if path is ReadPath.STREAMED and columns is not None:
        streamed = read_streamed(paths, choice.leans, labels, columns, map_batch)
        if isinstance(streamed, IngestResult):
            return streamed
        path = streamed
    if path is ReadPath.STREAMED_JSON and columns is not None:
        streamed = read_json_streamed(paths, options, labels, columns, map_batch)
        if isinstance(streamed, IngestResult):
            return streamed
        path = streamed
    if path is ReadPath.LEAN and columns is not None:
        lean = read_lean(paths, options, labels, columns, map_batch)
        if isinstance(lean, IngestResult):
            return lean
    return read_full(paths, options, labels, columns, map_batch)


@dataclass(frozen=True)
class SourceColumns:
    """The columns the battles of vote-log files have, as a full read gives them: every canonical column (null
    where a file lacks it), then the files' own (kept as they are, or as ``extra_<name>``), as far as each file's
    first batch shows them (``names``); and whether those are all the columns any row has (``complete``): a JSON
    lines or JSON array file's later rows may have keys its first ones lack, a parquet or CSV file's may not."""

    names: list[str]
    complete: bool


def source_columns(paths: Sequence[Path], options: InputOptions | None = None) -> SourceColumns:
    """The columns of vote-log files (see :class:`SourceColumns`): what a ``--where`` may name; one batch a file is
    read."""
    options = options or InputOptions()
    labels = check_sources(list(paths), options)
    columns = dict.fromkeys(BATTLE_SCHEMA)
    files = source_files(paths, options)
    for path in files:
        for _, rows, accepted, _ in _validated(Path(path), options, labels):
            if rows is not None:
                columns.update(dict.fromkeys(accepted.columns))
                break
    return SourceColumns(list(columns), not any(_is_json(Path(path), options) for path in files))


def _unchanged(frame: Frame) -> Frame:
    return frame


def stream(paths: list[Path], options: InputOptions, index: BattleIndex) -> Iterator[tuple[SourceSummary, pl.DataFrame, pl.DataFrame]]:
    """The ingest stream: per batch, (summary so far, new canonical battles, quarantined rows).

    ``index`` holds the battles already stored; the new ones are added to it as batches are accepted.
    """
    labels = check_sources(paths, options)
    for path in source_files(paths, options):
        occurrences = SortedRuns("sum")
        source_ids = SourceIds()
        text = _is_text(Path(path), options)
        for summary, rows, accepted, rejected in _validated(Path(path), options, labels):
            if rows is not None:
                reused_rows = accepted.filter(source_ids.reused(accepted["battle_id"]))["source_row"]
                accepted = add_hashes(accepted, occurrences)
                accepted, duplicates, conflicts = split_duplicates(accepted, index)
                summary.duplicates += duplicates
                summary.reused_ids += int(conflicts["source_row"].is_in(reused_rows.implode()).sum())
                conflicted = conflict_rows(conflicts, partial(raw_of, rows))
                summary.quarantined.update(conflicted["reason"].to_list())
                rejected = pl.concat([rejected, conflicted])
                accepted = conform(numeric_extras(accepted) if text else accepted)
                summary.stored += accepted.height
            yield summary, accepted, rejected


def read_full(
    paths: list[Path], options: InputOptions, labels: dict[str, str], columns: Sequence[str] | None, map_batch: MapBatch
) -> IngestResult:
    """Every battle with its id and content hash; ``map_batch`` applied to them all once read."""
    battles: list[pl.DataFrame] = []
    quarantine: list[pl.DataFrame] = []
    summaries: list[SourceSummary] = []
    for summary, accepted, rejected in stream(paths, options, BattleIndex()):
        keep_summary(summaries, summary)
        if accepted.height:
            battles.append(accepted)
        if rejected.height:
            quarantine.append(rejected)
    frame = pl.concat(battles, how="diagonal_relaxed") if battles else empty_battles()
    mapped = map_batch(frame if columns is None else select_wanted(frame, columns))
    return IngestResult(_collected(mapped), _quarantine(quarantine), summaries)


def read_lean(
    paths: list[Path], options: InputOptions, labels: dict[str, str], columns: Sequence[str], map_batch: MapBatch
) -> IngestResult | ReadPath:
    """The battles' ``columns``, batch by batch through ``map_batch``, without hashes; or :attr:`ReadPath.FULL` as
    soon as the ids seen need hashes to be settled (see :class:`LeanIds`)."""
    lean_ids = LeanIds()
    battles: list[Frame] = []
    quarantine: list[pl.DataFrame] = []
    summaries: list[SourceSummary] = []
    for number, path in enumerate(paths):
        text = _is_text(Path(path), options)
        for summary, rows, accepted, rejected in _validated(Path(path), options, labels, columns):
            keep_summary(summaries, summary)
            if rows is not None:
                if not lean_ids.add(number, accepted["battle_id"]):
                    return ReadPath.FULL
                summary.stored += accepted.height
                accepted = numeric_extras(accepted) if text else accepted
            battles.append(map_batch(select_wanted(conform(accepted) if rows is not None else empty_battles(), columns)))
            if rejected.height:
                quarantine.append(rejected)
    if not lean_ids.settled():
        return ReadPath.FULL
    if not battles:  # no sources
        battles.append(map_batch(select_wanted(empty_battles(), columns)))
    frame = pl.concat([_collected(part) for part in battles], how="diagonal_relaxed")
    return IngestResult(frame, _quarantine(quarantine), summaries)


def _validated(
    path: Path, options: InputOptions, labels: dict[str, str], columns: Sequence[str] | None = None
) -> Iterator[tuple[SourceSummary, pl.DataFrame | None, pl.DataFrame, pl.DataFrame]]:
    """One source's batches, validated: (summary so far, the source rows or None for a batch of none, accepted
    canonical battles, rejected rows). An empty source yields its (zero) summary once.

    With ``columns`` (a lean read), only the source columns they and validation need are read (parquet)."""
    summary = SourceSummary(str(path))
    plan: Plan | None = None
    batches = 0
    fmt = container_for(path, options)
    read_columns, batch_rows = None, options.batch_rows
    if columns is not None and fmt == "parquet":
        lean = lean_parquet(path, options, columns)
        read_columns, batch_rows = lean.columns, lean.batch_rows(options)
    judged = JudgeLog(path, options)  # a judge's log: its records as votes, in batches of one vote per record
    for read in read_ahead(read_batches(path, fmt, batch_rows, read_columns, options.batch_bytes)):  # the next batch parsed meanwhile
        for raw in judged.votes(read):
            batches += 1
            summary.rows_read += raw.frame.height + raw.rejected.height
            summary.quarantined.update(raw.rejected["reason"].to_list())
            if not raw.frame.height:
                yield summary, None, pl.DataFrame(), raw.rejected
                continue
            plan = plan_for(raw.frame.columns, options, str(path), previous=plan)
            summary.id_column = plan.columns.get("battle_id")
            rows = align(raw.frame, plan)
            accepted, invalid = canonicalize(rows, plan if columns is None else lean_plan(plan, columns, [c for c in read_columns or () if may_leave_years(rows.schema[c])]), labels, str(path))
            summary.quarantined.update(invalid["reason"].to_list())
            yield summary, rows, accepted, pl.concat([raw.rejected, invalid])
    if not batches:
        yield summary, None, pl.DataFrame(), empty_quarantine()


def _is_json(path: Path, options: InputOptions) -> bool:
    """Whether a source is JSON lines or a JSON array, whose rows each have the keys they give."""
    return container_for(path, options) in ("jsonl", "json")


def _is_text(path: Path, options: InputOptions) -> bool:
    """Whether a source's container gives its scalars as text (all but parquet), numbers included."""
    return container_for(path, options) != "parquet"


def _collected(frame: Frame) -> pl.DataFrame:
    return frame.collect() if isinstance(frame, pl.LazyFrame) else frame


def _quarantine(parts: list[pl.DataFrame]) -> pl.DataFrame:
    return pl.concat(parts) if parts else empty_quarantine()
