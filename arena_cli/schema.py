"""The canonical battle schema: one row per vote, the single contract between ingest and everything after it.

Every reader turns its input into frames of exactly these columns (plus any unknown extra columns of
the source, kept as they are, numbers of text logs as numbers); the store, the feature extractor and the fit
read nothing else.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, TypeVar

import polars as pl

from arena_cli.errors import InputError
from arena_cli.exprs import unsigned_zero_text

#: A table or one part of it, read or to be read.
Frame = pl.DataFrame | pl.LazyFrame
#: A frame or a query, kept as it was given (for functions that work on both).
FrameT = TypeVar("FrameT", pl.DataFrame, pl.LazyFrame)


class Outcome(str, Enum):
    """Who won a battle. ``both_bad`` stays distinct from ``tie``: the fit decides how to count it."""

    MODEL_A = "model_a"
    MODEL_B = "model_b"
    TIE = "tie"
    BOTH_BAD = "both_bad"


OUTCOMES: tuple[str, ...] = tuple(o.value for o in Outcome)

#: Winner labels found in real vote logs, mapped to the canonical outcome. Anything else is quarantined
#: as ``unknown_winner``: an unmapped label never silently becomes a tie.
WINNER_LABELS: dict[str, str] = {
    "model_a": "model_a",
    "model_b": "model_b",
    "tie": "tie",
    "both_bad": "both_bad",
    "tie (bothbad)": "both_bad",
    "tie(bothbad)": "both_bad",
    "bothbad": "both_bad",
    "both bad": "both_bad",
}

MESSAGE = pl.Struct({"role": pl.String, "content": pl.String})
CONVERSATION = pl.List(MESSAGE)

#: Per-side counts of LMArena's ``conv_metadata`` (precomputed by the source), stored as ``meta_<name>_a``/``_b``.
META_COUNTS: tuple[str, ...] = (
    "tokens",
    "h1", "h2", "h3", "h4", "h5", "h6",
    "ordered", "unordered",
    "bold_star", "bold_underscore",
)
META_COLUMNS: tuple[str, ...] = tuple(f"meta_{n}_{s}" for s in ("a", "b") for n in META_COUNTS)


def meta_paths(side: str) -> dict[str, tuple[str, ...]]:
    """Where LMArena's nested ``conv_metadata`` keeps each count of :data:`META_COUNTS` for one side."""
    paths: dict[str, tuple[str, ...]] = {"tokens": (f"sum_assistant_{side}_tokens",)}
    paths.update({f"h{i}": (f"header_count_{side}", f"h{i}") for i in range(1, 7)})
    paths.update({"ordered": (f"list_count_{side}", "ordered"), "unordered": (f"list_count_{side}", "unordered")})
    paths.update({"bold_star": (f"bold_count_{side}", "**"), "bold_underscore": (f"bold_count_{side}", "__")})
    return paths

#: The canonical columns, in order, with their types. ``required`` columns are never null in the store.
BATTLE_SCHEMA: dict[str, pl.DataType] = {
    "battle_id": pl.String(),        # the source's id, or a content hash (+ occurrence) when it has none
    "model_a": pl.String(),
    "model_b": pl.String(),
    "outcome": pl.String(),          # one of OUTCOMES
    "weight": pl.Float64(),          # how much the vote counts: a finite number >= 0 (default 1)
    "timestamp": pl.Datetime("us", "UTC"),
    "judge": pl.String(),            # voter / worker id
    "question_id": pl.String(),
    "language": pl.String(),
    "turn": pl.Int32(),              # number of user turns
    "anony": pl.Boolean(),
    "category": pl.String(),
    "conversation_a": CONVERSATION,  # [{role, content}, ...] of side a, user and assistant turns
    "conversation_b": CONVERSATION,
    **{c: pl.Int64() for c in META_COLUMNS},
    "source_file": pl.String(),      # provenance: the file the row came from
    "source_row": pl.Int64(),        # 1-based line (JSONL/CSV data row) or record index (JSON array, parquet)
    "content_hash": pl.String(),     # hash of the vote's content: tells an exact duplicate from a conflicting one
}

REQUIRED: tuple[str, ...] = ("battle_id", "model_a", "model_b", "outcome", "weight", "source_file", "source_row", "content_hash")
CANONICAL: tuple[str, ...] = tuple(BATTLE_SCHEMA)

#: Values a source may leave out: a vote without a weight counts once. A field at its default is hashed as
#: absent (see :func:`arena_cli.io.duplicates.content_text`), so a log that gains the column keeps its ids.
DEFAULTS: dict[str, float] = {"weight": 1.0}


#: Sums of vote weights are given to this many significant digits: a sum's floating-point noise
#: (0.1 + 0.2 = 0.30000000000000004) goes, and a sum of tiny weights (400 votes of 1e-9) keeps its value, as a
#: number of decimals would not.
WEIGHT_DIGITS = 12


def shown_weight(total: float) -> float:
    """A sum of vote weights as results give it (:data:`WEIGHT_DIGITS` significant digits; 0.0 for -0.0)."""
    return float(unsigned_zero_text(f"{total:.{WEIGHT_DIGITS}g}"))


def vote_weight(schema: pl.Schema) -> pl.Expr:
    """Each battle's weight as Float64: 1 where it has none (a store written before weights, or a frame
    without the column). Text is read as numbers, NaN where it is none: a store written before weights were
    a field kept a log's ``weight`` column as text. Battles ingested since have valid weights; the fit checks
    the others."""
    if "weight" not in schema:
        return pl.lit(DEFAULTS["weight"], dtype=pl.Float64)
    dtype = schema["weight"]
    if dtype == pl.String:
        text = pl.col("weight").str.strip_chars().replace("", None)
        number = text.cast(pl.Float64, strict=False)
        value = pl.when(text.is_not_null() & number.is_null()).then(float("nan")).otherwise(number)
    elif dtype.is_numeric() or dtype == pl.Null:
        value = pl.col("weight").cast(pl.Float64)
    else:
        raise InputError(f"battle weights must be numbers; the 'weight' column is {dtype}")
    return value.fill_null(DEFAULTS["weight"])


class QuarantineReason(str, Enum):
    """Why a row was not stored. Each quarantined row keeps its original content, source and row."""

    UNPARSEABLE = "unparseable"                  # not valid JSON / CSV on that line
    NON_UTF8 = "non_utf8"                        # bytes that are not UTF-8
    MISSING_MODEL = "missing_model"              # model_a or model_b missing or empty
    UNKNOWN_WINNER = "unknown_winner"            # winner label not known and not mapped with --winner-map
    NO_VERDICT = "no_verdict"                    # an LLM judge gave none: a null arena-hard score or AlpacaEval preference
    SELF_BATTLE = "self_battle"                  # model_a == model_b
    WRONG_TYPE = "wrong_type"                    # a field of the wrong type (e.g. turn = "abc")
    CONFLICTING_DUPLICATE = "conflicting_duplicate"  # battle_id already stored with different content


QUARANTINE_SCHEMA: dict[str, pl.DataType] = {
    "source_file": pl.String(),
    "source_row": pl.Int64(),
    "reason": pl.String(),
    "detail": pl.String(),
    "raw": pl.String(),        # the original record as text (invalid bytes escaped)
    "raw_bytes": pl.Binary(),  # the original bytes when they were not valid UTF-8, else null
}


def empty_battles() -> pl.DataFrame:
    return pl.DataFrame(schema=BATTLE_SCHEMA)


def empty_quarantine() -> pl.DataFrame:
    return pl.DataFrame(schema=QUARANTINE_SCHEMA)


def conform(frame: FrameT) -> FrameT:
    """Give a frame (or a query) every canonical column with its canonical type and order, extras kept after them;
    a field with a default (:data:`DEFAULTS`) has it wherever it is absent."""
    schema = frame.collect_schema()
    missing = [pl.lit(DEFAULTS.get(c), dtype=t).alias(c) for c, t in BATTLE_SCHEMA.items() if c not in schema]
    casts: dict[Any, pl.DataType] = {c: t for c, t in BATTLE_SCHEMA.items() if c in schema and schema[c] != t}
    defaults = [pl.col(c).fill_null(v) for c, v in DEFAULTS.items() if c in schema]
    extras: list[str] = [c for c in schema if c not in BATTLE_SCHEMA]
    return frame.with_columns(missing).cast(casts).with_columns(defaults).select([*CANONICAL, *extras])
