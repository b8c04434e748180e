"""The compute functions of the registered feature families (see ``registry``): one row per answer in, one
column per feature out, pure functions of their rows."""

from __future__ import annotations

import polars as pl

from arena_cli.features import markdown
from arena_cli.features.answers import Answers
from arena_cli.features.registry import DENSITY_GROUPS, STYLE_GROUPS
from arena_cli.features.tokenizer import count_tokens, load_encoding

#: Texts per tokenizer task.
TOKEN_CHUNK = 256


def tokens(answers: Answers) -> pl.DataFrame:
    """Tokens of each answer, summed over its turns (each turn tokenized on its own, as LMArena's
    ``sum_assistant_tokens``); identical turns are tokenized once, in the answers' threads."""
    index = pl.int_range(answers.height, dtype=pl.UInt32, eager=True).alias("answer")
    flat = pl.DataFrame([index, answers.turns.alias("text")]).explode("text").drop_nulls("text")
    unique = flat.select(pl.col("text").unique(maintain_order=True))
    counts = count_tokens(unique["text"].to_list(), load_encoding(answers.encoding), answers.executor, TOKEN_CHUNK)
    per_turn = flat.join(unique.with_columns(pl.Series("tokens", counts, dtype=pl.Int64)), on="text", how="left")
    per_answer = per_turn.group_by("answer").agg(pl.col("tokens").sum())
    return (
        index.to_frame()
        .join(per_answer, on="answer", how="left", maintain_order="left")
        .select(pl.col("tokens").fill_null(0))
    )


def markdown_counts(answers: Answers) -> pl.DataFrame:
    """LMArena's ten markdown counts of the joined turns, under the answers' recipe."""
    return markdown.markdown_counts(answers.recipe_text)


def structure(answers: Answers) -> pl.DataFrame:
    """Fenced code blocks, then tables, links and emoji outside code."""
    return pl.concat(
        [answers.code_blocks.to_frame("code_blocks"), markdown.structure_counts(answers.code_free)], how="horizontal"
    )


def densities(answers: Answers) -> pl.DataFrame:
    """Headers, list items and bold spans per token (0 without tokens; null when tokens are unknown)."""
    tokens = pl.col("tokens")
    exprs = []
    for density, group in DENSITY_GROUPS.items():
        total = pl.sum_horizontal(pl.col(n) for n in STYLE_GROUPS[group])
        value = pl.when(tokens > 0).then(total / tokens).otherwise(0.0)
        exprs.append(pl.when(tokens.is_null()).then(None).otherwise(value).alias(density))
    return answers.values.select(exprs)
