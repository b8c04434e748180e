"""Per-battle style features: a pure function of a frame of battles, so it can run on any partition.

The features are those of the registry's families (``registry.FAMILIES``), computed family by family on each
batch of battles (:class:`~arena_cli.features.answers.Answers`: side a's answers, then side b's). A battle
without any assistant text takes LMArena's precomputed ``meta_<feature>_<side>`` counts for the features that
have one, null for the others (``feature_source`` says which). Derived families (densities) are computed last,
from the other families' values, for every battle.

Speed: a batch's families run in threads (tiktoken and polars release the GIL), and the next batch is queued
before the previous one is collected, so the tokenizer threads never wait for the markdown counting.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor

import polars as pl

from arena_cli.errors import InputError
from arena_cli.features import registry
from arena_cli.features.answers import Answers
from arena_cli.features.registry import SIDES, Family, check_families, check_recipe, feature_columns
from arena_cli.features.tokenizer import check_encoding
from arena_cli.io.options import DEFAULT_ENCODING, DEFAULT_RECIPE
from arena_cli.schema import META_COUNTS

#: Battles per batch: bounds the memory of intermediate texts whatever the input size.
BATCH_ROWS = 20_000

SOURCE_TEXT = "text"
SOURCE_METADATA = "conv_metadata"


def plan(names: Iterable[str] | None = None) -> tuple[tuple[Family, ...], tuple[Family, ...]]:
    """The registered families to compute for ``names`` (default: all), with those they need, in registry order;
    and the families asked for."""
    families = check_families(registry.FAMILIES)
    if names is None:
        return families, families
    asked = set(names)
    if unknown := asked - {f.name for f in families}:
        raise InputError(f"unknown feature families {sorted(unknown)}; known: {', '.join(f.name for f in families)}")
    needed = set(asked)
    for family in reversed(families):
        if family.name in needed:
            needed.update(family.needs)
    return tuple(f for f in families if f.name in needed), tuple(f for f in families if f.name in asked)


def features_schema(families: Sequence[Family] | None = None) -> dict[str, pl.DataType]:
    """Columns of a features frame: battle_id, every ``<name>_<side>`` of ``families`` (default: all
    registered), feature_source."""
    families = registry.FAMILIES if families is None else families
    features = {f.name: f for family in families for f in family.features}
    schema: dict[str, pl.DataType] = {"battle_id": pl.String()}
    for column in feature_columns(features):
        schema[column] = pl.Int64() if features[column[:-2]].is_count else pl.Float64()
    schema["feature_source"] = pl.String()
    return schema


def _assistant_turns(frame: pl.DataFrame, side: str) -> pl.Series:
    """The assistant contents of each conversation (null content as empty text, no conversation as null)."""
    column = f"conversation_{side}"
    if column not in frame.columns:
        return pl.Series(column, [None] * frame.height, dtype=pl.List(pl.String))
    element = pl.element()
    return frame.select(
        pl.col(column).list.eval(element.filter(element.struct.field("role") == "assistant").struct.field("content").fill_null(""))
    ).to_series()


def _run(family: Family, answers: Answers) -> pl.DataFrame:
    """The family's features of ``answers``, checked: one row per answer, one column per feature, in order."""
    values = family.compute(answers)
    if values.height != answers.height or not set(family.names) <= set(values.columns):
        raise RuntimeError(f"feature family {family.name!r} must return one row per answer with columns {list(family.names)}")
    return values.select(family.names)


def _wide(values: pl.DataFrame, battles: int) -> pl.DataFrame:
    """Per-answer values (side a's rows, then side b's) as per-battle ``<name>_<side>`` columns."""
    return pl.concat(
        [values.slice(i * battles, battles).rename({c: f"{c}_{side}" for c in values.columns}) for i, side in enumerate(SIDES)],
        how="horizontal",
    )


def _long(features: pl.DataFrame, names: Sequence[str]) -> pl.DataFrame:
    """Per-battle ``<name>_<side>`` columns as per-answer values (side a's rows, then side b's)."""
    return pl.concat([features.select(pl.col(f"{n}_{side}").alias(n) for n in names) for side in SIDES])


def derive(features: pl.DataFrame, families: Sequence[Family], recipe: str, encoding: str) -> pl.DataFrame:
    """``features`` (per battle, ``<name>_<side>`` columns) with the columns of the derived ones of ``families``,
    computed from the columns of the families they need (also in ``families``)."""
    by_name = {f.name: f for f in families}
    for family in families:
        if family.stored:
            continue
        values = _long(features, [n for needed in family.needs for n in by_name[needed].names])
        turns = pl.Series("turns", [None] * values.height, dtype=pl.List(pl.String))
        derived = _run(family, Answers(turns, recipe, encoding, values=values))
        features = pl.concat([features, _wide(derived, features.height)], how="horizontal")
    return features


def _has_text(frame: pl.DataFrame) -> pl.Series:
    present = [
        pl.col(f"conversation_{side}").list.eval(pl.element().struct.field("role") == "assistant").list.any().fill_null(False)
        for side in SIDES
        if f"conversation_{side}" in frame.columns
    ]
    if not present:
        return pl.Series("has_text", [False] * frame.height)
    return frame.select(pl.any_horizontal(present).alias("has_text")).to_series()


def _metadata_rows(frame: pl.DataFrame, families: Sequence[Family]) -> pl.DataFrame:
    """Battles without texts: LMArena's precomputed ``meta_*`` counts for the features that have one, null for
    the others; the source is ``conv_metadata`` when the battle has any such count."""
    columns = []
    for side in SIDES:
        for feature in (f for family in families for f in family.features):
            meta = f"meta_{feature.name}_{side}"
            dtype = pl.Int64 if feature.is_count else pl.Float64
            columns.append((pl.col(meta).cast(dtype) if meta in frame.columns else pl.lit(None, dtype)).alias(f"{feature.name}_{side}"))
    present = [pl.col(c).is_not_null() for c in (f"meta_{n}_{s}" for s in SIDES for n in META_COUNTS) if c in frame.columns]
    known = pl.any_horizontal(present) if present else pl.lit(False)
    source = pl.when(known).then(pl.lit(SOURCE_METADATA)).otherwise(None).alias("feature_source")
    return frame.with_columns(*columns, source).select("__order", "battle_id", *(c.meta.output_name() for c in columns), "feature_source")


def _start_batch(
    batch: pl.DataFrame, families: Sequence[Family], schema: dict[str, pl.DataType], recipe: str, encoding: str,
    pool: Executor, tokenizer: Executor,
) -> Callable[[], pl.DataFrame]:
    """Queue each family of a batch's texts on ``pool``; the returned call waits for them and finishes the batch."""
    batch = batch.with_row_index("__order")
    has_text = _has_text(batch)
    texts, rest = batch.filter(has_text), batch.filter(~has_text)
    stored = [f for f in families if f.stored]
    futures = []
    if texts.height:
        answers = Answers(pl.concat([_assistant_turns(texts, side) for side in SIDES]), recipe, encoding, executor=tokenizer)
        futures = [pool.submit(_run, family, answers) for family in stored]

    def finish() -> pl.DataFrame:
        parts = []
        if texts.height:
            values = _wide(pl.concat([future.result() for future in futures], how="horizontal"), texts.height)
            parts.append(pl.concat([texts.select("__order", "battle_id"), values], how="horizontal")
                         .with_columns(pl.lit(SOURCE_TEXT).alias("feature_source")))
        if rest.height:
            parts.append(_metadata_rows(rest, stored))
        combined = derive(pl.concat(parts, how="diagonal_relaxed").sort("__order"), families, recipe, encoding)
        return combined.select(pl.col(c).cast(t) for c, t in schema.items())

    return finish


def compute_features(
    battles: pl.DataFrame,
    recipe: str = DEFAULT_RECIPE,
    encoding: str = DEFAULT_ENCODING,
    workers: int | None = None,
    on_batch: Callable[[int], None] | None = None,
    families: Iterable[str] | None = None,
) -> pl.DataFrame:
    """Style features of ``battles``: ``battle_id``, ``<name>_a``/``<name>_b`` for every feature of the registered
    ``families`` (default: all), and ``feature_source`` ("text", "conv_metadata", or null when a battle has
    neither).

    A pure function of its rows (any partition of the battles gives the same rows). The encoding is loaded
    only if some battle has texts. ``workers``: tokenizer threads (default: all cores). ``on_batch`` is called
    with the number of battles done after each batch.
    """
    check_recipe(recipe)
    check_encoding(encoding)
    computed, wanted = plan(families)
    schema = features_schema(wanted)
    if battles.height == 0:
        return pl.DataFrame(schema=schema)
    frames: list[pl.DataFrame] = []

    def collect(finish: Callable[[], pl.DataFrame]) -> None:
        frames.append(finish())
        if on_batch:
            on_batch(frames[-1].height)

    # Two batches in flight: a batch's families are queued before the previous batch is awaited.
    threads = 2 * sum(f.stored for f in computed)
    with ThreadPoolExecutor(workers or os.cpu_count() or 1) as tokenizer, ThreadPoolExecutor(threads) as pool:
        previous = None
        for offset in range(0, battles.height, BATCH_ROWS):
            started = _start_batch(battles.slice(offset, BATCH_ROWS), computed, schema, recipe, encoding, pool, tokenizer)
            if previous is not None:
                collect(previous)
            previous = started
        if previous is not None:
            collect(previous)
    return pl.concat(frames)
