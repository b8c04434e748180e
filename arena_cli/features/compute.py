"""Per-battle style features: a pure function of a frame of battles, so it can run on any partition.

For each battle and side: tokens summed over the assistant turns (each turn tokenized on its own, as
LMArena's ``sum_assistant_tokens``), markdown counts of the assistant turns joined with a newline under the
chosen recipe, structural counts, and densities. A battle without any assistant text takes LMArena's
precomputed ``meta_*`` counts when it has them (``feature_source`` says which).

Speed: identical turns are tokenized once; tokenization runs in threads (tiktoken releases the GIL) while
the main thread removes code blocks and polars counts the regexes on all cores.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from dataclasses import dataclass

import polars as pl

from arena_cli.errors import InputError
from arena_cli.features import markdown
from arena_cli.features.registry import (
    DENSITY_GROUPS,
    FEATURES,
    LMARENA_FEATURES,
    RECIPES,
    SIDES,
    STRUCTURE_FEATURES,
    STYLE_GROUPS,
    feature_columns,
)
from arena_cli.features.tokenizer import check_encoding, count_tokens, load_encoding

#: Battles per batch: bounds the memory of intermediate texts whatever the input size.
BATCH_ROWS = 20_000
#: Texts per tokenizer task.
TOKEN_CHUNK = 256

SOURCE_TEXT = "text"
SOURCE_METADATA = "conv_metadata"


def features_schema() -> dict[str, pl.DataType]:
    """Columns of a features frame: battle_id, every ``<name>_<side>``, feature_source."""
    kinds = {f.name: (pl.Int64() if f.is_count else pl.Float64()) for f in FEATURES}
    schema: dict[str, pl.DataType] = {"battle_id": pl.String()}
    schema.update({column: kinds[column[:-2]] for column in feature_columns()})
    schema["feature_source"] = pl.String()
    return schema


def check_recipe(recipe: str) -> str:
    if recipe not in RECIPES:
        raise InputError(f"unknown recipe {recipe!r}; expected one of: {', '.join(RECIPES)}")
    return recipe


def _assistant_turns(frame: pl.DataFrame, side: str) -> pl.Series:
    """The assistant contents of each conversation (null content as empty text, no conversation as null)."""
    column = f"conversation_{side}"
    if column not in frame.columns:
        return pl.Series(column, [None] * frame.height, dtype=pl.List(pl.String))
    element = pl.element()
    return frame.select(
        pl.col(column).list.eval(element.filter(element.struct.field("role") == "assistant").struct.field("content").fill_null(""))
    ).to_series()


@dataclass
class _Counting:
    """A batch of text battles whose tokens are being counted by the pool, markdown counts already done."""

    frame: pl.DataFrame      # __order, battle_id of the battles
    flat: pl.DataFrame       # side, row, text: one row per assistant turn
    unique: pl.DataFrame     # text: the distinct turns, in the order their counts come back
    futures: list[Future]
    counts: pl.DataFrame     # markdown and structure counts, side a rows then side b rows

    def finish(self) -> pl.DataFrame:
        """Wait for the token counts and assemble one row per battle with ``<name>_<side>`` columns."""
        height = self.frame.height
        token_counts = pl.Series("tokens", [n for f in self.futures for n in f.result()], dtype=pl.Int64)
        per_turn = self.flat.join(self.unique.with_columns(token_counts), on="text", how="left")
        tokens = per_turn.group_by("side", "row").agg(pl.col("tokens").sum())
        index = pl.int_range(height, dtype=pl.UInt32, eager=True).alias("row")
        sides = []
        for i, side in enumerate(SIDES):
            side_counts = self.counts.slice(i * height, height).with_columns(index)
            side_tokens = tokens.filter(pl.col("side") == side).drop("side")
            side_frame = side_counts.join(side_tokens, on="row", how="left").sort("row").with_columns(pl.col("tokens").fill_null(0))
            sides.append(side_frame.select(pl.col(n).alias(f"{n}_{side}") for n in LMARENA_FEATURES + STRUCTURE_FEATURES))
        return pl.concat([self.frame, *sides], how="horizontal").with_columns(pl.lit(SOURCE_TEXT).alias("feature_source"))


def _start_counting(frame: pl.DataFrame, recipe: str, encoding, pool: Executor) -> _Counting:
    """Queue the batch's distinct assistant turns on the tokenizer pool, then count markdown meanwhile."""
    turns = {side: _assistant_turns(frame, side) for side in SIDES}
    index = pl.int_range(frame.height, dtype=pl.UInt32, eager=True)
    flat = pl.concat(
        [pl.DataFrame({"side": side, "row": index, "text": turns[side]}).explode("text") for side in SIDES]
    ).drop_nulls("text")
    unique = flat.select(pl.col("text").unique(maintain_order=True))
    texts = unique["text"].to_list()
    futures = [pool.submit(count_tokens, texts[i:i + TOKEN_CHUNK], encoding) for i in range(0, len(texts), TOKEN_CHUNK)]

    joined = pl.concat([turns[side].list.join("\n") for side in SIDES])
    code_free, code_blocks = markdown.clean_fenced(joined)
    recipe_text = markdown.clean_lmarena(joined) if recipe == "lmarena" else code_free
    counts = pl.concat(
        [markdown.markdown_counts(recipe_text), markdown.structure_counts(code_free), code_blocks.to_frame("code_blocks")],
        how="horizontal",
    )
    return _Counting(frame.select("__order", "battle_id"), flat, unique, futures, counts)


def _metadata_features(frame: pl.DataFrame) -> pl.DataFrame:
    """LMArena's precomputed counts (``meta_*``) as feature columns; structural ones are unknown (null)."""
    columns = []
    for side in SIDES:
        for name in LMARENA_FEATURES:
            meta = f"meta_{name}_{side}"
            value = pl.col(meta) if meta in frame.columns else pl.lit(None)
            columns.append(value.cast(pl.Int64).alias(f"{name}_{side}"))
        columns.extend(pl.lit(None, dtype=pl.Int64).alias(f"{name}_{side}") for name in STRUCTURE_FEATURES)
    names = [column.meta.output_name() for column in columns]
    return frame.with_columns(columns).select(names)  # with_columns: literals take the frame's height


def _densities() -> list[pl.Expr]:
    exprs = []
    for side in SIDES:
        tokens = pl.col(f"tokens_{side}")
        for density, group in DENSITY_GROUPS.items():
            total = pl.sum_horizontal(pl.col(f"{n}_{side}") for n in STYLE_GROUPS[group])
            value = pl.when(tokens > 0).then(total / tokens).otherwise(0.0)
            exprs.append(pl.when(tokens.is_null()).then(None).otherwise(value).alias(f"{density}_{side}"))
    return exprs


def _has_text(frame: pl.DataFrame) -> pl.Series:
    present = [
        pl.col(f"conversation_{side}").list.eval(pl.element().struct.field("role") == "assistant").list.any().fill_null(False)
        for side in SIDES
        if f"conversation_{side}" in frame.columns
    ]
    if not present:
        return pl.Series("has_text", [False] * frame.height)
    return frame.select(pl.any_horizontal(present).alias("has_text")).to_series()


def _metadata_rows(frame: pl.DataFrame) -> pl.DataFrame:
    """Battles without texts: their conv_metadata counts, or nulls."""
    known = pl.any_horizontal(pl.col(f"{n}_{s}").is_not_null() for s in SIDES for n in LMARENA_FEATURES)
    return pl.concat([frame.select("__order", "battle_id"), _metadata_features(frame)], how="horizontal").with_columns(
        pl.when(known).then(pl.lit(SOURCE_METADATA)).otherwise(None).alias("feature_source")
    )


def _start_batch(batch: pl.DataFrame, recipe: str, encoding_name: str, pool: Executor) -> Callable[[], pl.DataFrame]:
    """Queue a batch's token counts on the pool and count its markdown; the returned call finishes it."""
    batch = batch.with_row_index("__order")
    has_text = _has_text(batch)
    texts, rest = batch.filter(has_text), batch.filter(~has_text)
    counting = None
    if texts.height:
        counting = _start_counting(texts, recipe, load_encoding(encoding_name), pool)
    metadata = _metadata_rows(rest) if rest.height else None

    def finish() -> pl.DataFrame:
        parts = [part for part in (counting.finish() if counting else None, metadata) if part is not None]
        combined = pl.concat(parts, how="diagonal_relaxed").sort("__order").with_columns(_densities())
        return combined.select(pl.col(c).cast(t) for c, t in features_schema().items())

    return finish


def compute_features(
    battles: pl.DataFrame,
    recipe: str = "default",
    encoding: str = "cl100k_base",
    workers: int | None = None,
    on_batch: Callable[[int], None] | None = None,
) -> pl.DataFrame:
    """Style features of ``battles``: ``battle_id``, ``<name>_a``/``<name>_b`` for every registered feature,
    and ``feature_source`` ("text", "conv_metadata", or null when a battle has neither).

    A pure function of its rows (any partition of the battles gives the same rows). The encoding is loaded
    only if some battle has texts. ``workers``: tokenizer threads (default: all cores). ``on_batch`` is called
    with the number of battles done after each batch.
    """
    check_recipe(recipe)
    check_encoding(encoding)
    if battles.height == 0:
        return pl.DataFrame(schema=features_schema())
    frames: list[pl.DataFrame] = []

    def collect(finish: Callable[[], pl.DataFrame]) -> None:
        frames.append(finish())
        if on_batch:
            on_batch(frames[-1].height)

    # Two batches in flight: a batch's turns are queued on the pool before the previous batch is awaited,
    # so the tokenizer threads never wait for the main thread.
    with ThreadPoolExecutor(workers or os.cpu_count() or 1) as pool:
        previous = None
        for offset in range(0, battles.height, BATCH_ROWS):
            started = _start_batch(battles.slice(offset, BATCH_ROWS), recipe, encoding, pool)
            if previous is not None:
                collect(previous)
            previous = started
        collect(previous)
    return pl.concat(frames)
