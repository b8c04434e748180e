"""Ingest: vote logs in the formats people have -> validated canonical battles, and nothing lost.

Flow per batch: a container reader (:mod:`arena_cli.io.readers`) gives rows; a dialect maps source columns to
the canonical fields (:mod:`arena_cli.schema`); every row is validated (a rejected row keeps its original
content, source, row and reason); ids and content hashes are computed; duplicates are dropped (same id, same
content) or quarantined (same id, different content). The same stream feeds both the store
(:func:`ingest_to_store`) and one-shot in-memory use (:func:`read_sources`).
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from arena_cli.errors import InputError, RejectedRowsError
from arena_cli.exprs import lookup
from arena_cli.io.options import InputOptions
from arena_cli.io.readers import RAW, ROW, container_of, read_batches
from arena_cli.schema import (
    Frame,
    BATTLE_SCHEMA,
    CONVERSATION,
    META_COLUMNS,
    OUTCOMES,
    QUARANTINE_SCHEMA,
    WINNER_LABELS,
    QuarantineReason,
    conform,
    meta_paths,
)

#: Fields a user can map with ``--map FIELD=COLUMN``.
MAPPABLE = (
    "battle_id", "model_a", "model_b", "outcome", "timestamp", "judge", "question_id", "language", "turn",
    "anony", "category", "conversation_a", "conversation_b", "conv_metadata",
)

#: Where the LMArena / FastChat / arena-human-preference shapes keep each field (first present wins).
ARENA_COLUMNS: dict[str, tuple[str, ...]] = {
    "battle_id": ("battle_id", "id", "question_id"),
    "model_a": ("model_a",),
    "model_b": ("model_b",),
    "outcome": ("winner", "outcome"),
    "timestamp": ("tstamp", "timestamp"),
    "judge": ("judge",),
    "question_id": ("question_id",),
    "language": ("language",),
    "turn": ("turn",),
    "anony": ("anony",),
    "category": ("category",),
    "conversation_a": ("conversation_a",),
    "conversation_b": ("conversation_b",),
    "conv_metadata": ("conv_metadata",),
    **{c: (c,) for c in META_COLUMNS},  # the counts by their canonical names (an `arena export`)
}
#: Provenance columns of an `arena export`: they describe an earlier ingest, not the vote, so they are
#: neither content nor extras (the new ingest records its own).
EXPORTED_PROVENANCE = ("source_file", "source_row", "content_hash")
KAGGLE_COLUMNS = ("id", "model_a", "model_b", "prompt", "response_a", "response_b", "winner_model_a", "winner_model_b", "winner_tie")

FORMATS = ("auto", "jsonl", "json", "csv", "parquet", "kaggle")
HASH_VERSION = "v2"
PART_ROWS = 500_000


@dataclass
class SourceSummary:
    source: str
    rows_read: int = 0
    stored: int = 0
    duplicates: int = 0
    quarantined: Counter = field(default_factory=Counter)

    def as_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "rows_read": self.rows_read,
            "stored": self.stored,
            "duplicates": self.duplicates,
            "quarantined": sum(self.quarantined.values()),
            "quarantined_by_reason": dict(sorted(self.quarantined.items())),
        }


@dataclass
class IngestResult:
    """In-memory result of reading sources: canonical battles, quarantined rows, per-source counts."""

    battles: pl.DataFrame
    quarantine: pl.DataFrame
    summaries: list[SourceSummary]


# -- parsing helpers (vectorized; each returns the parsed value and whether a present value failed) -------------

def _text(col: str, dtype: pl.DataType) -> pl.Expr:
    """A field as trimmed text; empty text is absent, as an empty CSV cell is."""
    expr = pl.col(col)
    if dtype == pl.String:
        expr = expr.str.strip_chars()
    elif dtype.is_nested():
        expr = pl.struct(expr).struct.json_encode()
    else:
        expr = expr.cast(pl.String)
    return expr.replace("", None)


def _timestamp(col: str, dtype: pl.DataType) -> pl.Expr:
    if isinstance(dtype, pl.Datetime):
        return pl.col(col).dt.replace_time_zone(None).dt.replace_time_zone("UTC").cast(BATTLE_SCHEMA["timestamp"]) if dtype.time_zone is None else pl.col(col).dt.convert_time_zone("UTC").cast(BATTLE_SCHEMA["timestamp"])
    if dtype.is_numeric():
        seconds = pl.col(col).cast(pl.Float64)
    else:
        seconds = pl.col(col).cast(pl.String).str.strip_chars().cast(pl.Float64, strict=False)
    micros = pl.when(seconds.abs() < 1e11).then(seconds * 1e6).otherwise(seconds * 1e3)
    from_epoch = pl.from_epoch(micros.round(0).cast(pl.Int64, strict=False), time_unit="us").dt.replace_time_zone("UTC")
    if dtype.is_numeric():
        return from_epoch
    text = pl.col(col).cast(pl.String).str.strip_chars()
    parsed = [text.str.to_datetime(format=f, strict=False, time_zone="UTC", time_unit="us") for f in (
        "%Y-%m-%dT%H:%M:%S%.f%#z", "%Y-%m-%d %H:%M:%S%.f%#z", "%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M:%S%.f",
        "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S", "%Y-%m-%d",
    )]
    return pl.coalesce([from_epoch, *parsed])


def _integer(col: str, dtype: pl.DataType, width: pl.DataType = pl.Int32) -> pl.Expr:
    number = pl.col(col).cast(pl.Float64, strict=False) if dtype.is_numeric() else pl.col(col).cast(pl.String).str.strip_chars().cast(pl.Float64, strict=False)
    return pl.when(number == number.floor()).then(number).cast(pl.Int64, strict=False).cast(width, strict=False)


def _count(col: str, dtype: pl.DataType) -> pl.Expr:
    return _integer(col, dtype, pl.Int64)


def _boolean(col: str, dtype: pl.DataType) -> pl.Expr:
    if dtype == pl.Boolean:
        return pl.col(col)
    text = pl.col(col).cast(pl.String).str.strip_chars().str.to_lowercase()
    return text.replace_strict({"true": True, "false": False, "1": True, "0": False, "1.0": True, "0.0": False, "yes": True, "no": False}, default=None, return_dtype=pl.Boolean)


def _conversation_from_typed(col: str, dtype: pl.DataType) -> pl.Expr | None:
    inner = dtype.inner if isinstance(dtype, pl.List) else None
    if isinstance(inner, pl.Struct) and {"role", "content"} <= {f.name for f in inner.fields}:
        return pl.col(col).list.eval(pl.struct(pl.element().struct.field("role").cast(pl.String), pl.element().struct.field("content").cast(pl.String))).cast(CONVERSATION)
    if inner == pl.Null:  # only empty lists (or lists of nulls) were seen: an empty list is an empty conversation
        return pl.when(pl.col(col).list.len() == 0).then(pl.col(col).cast(CONVERSATION))
    return None


def _decode_json(series: pl.Series, dtype: pl.DataType) -> pl.Series:
    """Decode JSON text to ``dtype``; rows that do not fit become null (found one by one only on failure).

    Blank text is not JSON: it becomes null first (polars decodes an all-blank column to zero rows).
    """
    series = series.to_frame().select(pl.when(pl.first().str.strip_chars() != "").then(pl.first())).to_series().alias(series.name)
    try:
        return series.str.json_decode(dtype)
    except Exception:
        import json

        def one(value: str | None) -> str | None:
            if value is None:
                return None
            try:
                pl.Series([value]).str.json_decode(dtype)
                json.loads(value)
                return value
            except Exception:
                return None

        return pl.Series(series.name, [one(v) for v in series.to_list()], dtype=pl.String).str.json_decode(dtype)


def json_text(value: pl.Expr) -> pl.Expr:
    """A nested value as compact JSON text per row (null stays null): encode ``{"v": value}``, keep the value."""
    wrapped = pl.struct(value.alias("v")).struct.json_encode()
    return pl.when(value.is_not_null()).then(wrapped.str.slice(5).str.strip_suffix("}"))


def _meta_text_dtype() -> pl.Struct:
    fields: dict[str, pl.DataType] = {}
    for side in ("a", "b"):
        fields[f"sum_assistant_{side}_tokens"] = pl.String
        fields[f"header_count_{side}"] = pl.Struct({f"h{i}": pl.String for i in range(1, 7)})
        fields[f"list_count_{side}"] = pl.Struct({"ordered": pl.String, "unordered": pl.String})
        fields[f"bold_count_{side}"] = pl.Struct({"**": pl.String, "__": pl.String})
    return pl.Struct(fields)


def _field_path(expr: pl.Expr, dtype: pl.DataType, path: tuple[str, ...]) -> pl.Expr | None:
    for name in path:
        if not isinstance(dtype, pl.Struct):
            return None
        fields = {f.name: f.dtype for f in dtype.fields}
        if name not in fields:
            return None
        expr, dtype = expr.struct.field(name), fields[name]
    return expr.cast(pl.String).cast(pl.Float64, strict=False).cast(pl.Int64, strict=False)


# -- the dialects --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Plan:
    """Which source column feeds each canonical field: decided from a source's first batch, extended by
    columns that appear in later ones (see :func:`plan_for`)."""

    dialect: str  # "arena" | "kaggle"
    columns: dict[str, str]
    extras: tuple[str, ...]


def plan_for(columns: list[str], options: InputOptions, source: str, previous: Plan | None = None) -> Plan:
    """Decide the plan from a source's columns. With ``previous`` (the plan of the source's earlier batches),
    columns that appear later are added to it, as extras or as fields it had no column for, and every
    earlier choice stands: a row's meaning never depends on its batch."""
    present = [c for c in columns if c not in (ROW, RAW)]
    if previous is not None:
        present = list(dict.fromkeys([*previous.columns.values(), *previous.extras, *present]))
        kaggle = previous.dialect == "kaggle"
    else:
        kaggle = options.fmt == "kaggle" or (not options.mapping and {"winner_model_a", "winner_model_b"} <= set(present))
    chosen: dict[str, str] = {}
    if kaggle:
        missing = [c for c in ("model_a", "model_b", "winner_model_a", "winner_model_b") if c not in present]
        if missing:
            raise InputError(f"{source}: not a Kaggle-style file, missing columns {missing}")
        chosen = {"battle_id": "id"} if "id" in present else {}
        chosen.update(model_a="model_a", model_b="model_b")
        consumed = set(KAGGLE_COLUMNS)
    else:
        for target, candidates in ARENA_COLUMNS.items():
            found = next((c for c in candidates if c in present), None)
            if found is not None:
                chosen[target] = found
        if options.mapping:
            # A mapped file is not an LMArena export: its "id" may name a pair or a prompt, not a vote, so
            # its ids are used only when mapped explicitly; otherwise every vote gets a content-hash id.
            chosen.pop("battle_id", None)
        consumed = set()
    for target, column in options.mapping.items():
        if target == "battle_id" and column == "":
            chosen.pop("battle_id", None)
            continue
        if column not in present:
            raise InputError(f"{source}: --map {target}={column}: no column {column!r} (columns: {', '.join(present)})")
        chosen[target] = column
    if kaggle:
        chosen = {k: v for k, v in chosen.items() if k in ("battle_id", "model_a", "model_b") or k in options.mapping}
    if previous is not None:
        chosen = {**chosen, **previous.columns}
    for required in ("model_a", "model_b") + (() if kaggle else ("outcome",)):
        if required not in chosen:
            hint = "use --map model_a=COL --map model_b=COL --map outcome=COL" if required != "outcome" else "use --map outcome=COL"
            raise InputError(f"{source}: cannot find the {required} column ({hint}; columns: {', '.join(present)})")
    consumed |= set(chosen.values()) | set(EXPORTED_PROVENANCE)
    extras = tuple(c for c in present if c not in consumed)
    return Plan("kaggle" if kaggle else "arena", chosen, extras)


def _winner_labels(options: InputOptions) -> dict[str, str]:
    labels = dict(WINNER_LABELS)
    for label, outcome in options.winner_map.items():
        if outcome not in OUTCOMES:
            raise InputError(f"--winner-map {label}={outcome}: the outcome must be one of {', '.join(OUTCOMES)}")
        labels[label.strip().lower()] = outcome
    return labels


def _kaggle_outcome(frame: pl.DataFrame) -> pl.Expr:
    """Kaggle's one-hot winner columns; anything but exactly one flag set is an unknown winner."""
    flags = [
        pl.col(c).cast(pl.String).str.strip_chars().cast(pl.Float64, strict=False) if c in frame.columns else pl.lit(0.0)
        for c in ("winner_model_a", "winner_model_b", "winner_tie")
    ]
    ones = sum((f == 1.0).cast(pl.Int32) for f in flags)
    outcome = (
        pl.when(ones != 1).then(None)
        .when(flags[0] == 1.0).then(pl.lit("model_a"))
        .when(flags[1] == 1.0).then(pl.lit("model_b"))
        .otherwise(pl.lit("tie"))
    )
    return outcome


def _kaggle_conversation(frame: pl.DataFrame, response: str) -> tuple[pl.Series, pl.Series]:
    """Kaggle keeps prompts and responses as JSON lists of turns: interleave them into user/assistant turns.
    Also returns which rows have a prompt or response that is present but not such a list."""
    turns = pl.List(pl.String)
    none = pl.Series([None] * frame.height, dtype=turns)
    prompts = _decode_json(frame["prompt"].cast(pl.String), turns) if "prompt" in frame.columns else none
    answers = _decode_json(frame[response].cast(pl.String), turns) if response in frame.columns else none
    invalid = pl.Series([False] * frame.height)
    for given, parsed in (("prompt", prompts), (response, answers)):
        if given in frame.columns:
            invalid = invalid | (frame[given].is_not_null() & parsed.is_null())
    pairs = pl.DataFrame({"p": prompts, "r": answers}).with_row_index("i")
    length = pl.max_horizontal(pl.col("p").list.len().fill_null(0), pl.col("r").list.len())
    messages = (
        pairs.filter(pl.col("r").is_not_null())
        .with_columns(pl.int_ranges(0, length).alias("k"))
        .explode("k")
        .drop_nulls("k")
        .select(
            "i",
            pl.concat_list(
                pl.struct(pl.lit("user").alias("role"), pl.col("p").list.get(pl.col("k"), null_on_oob=True).alias("content")),
                pl.struct(pl.lit("assistant").alias("role"), pl.col("r").list.get(pl.col("k"), null_on_oob=True).alias("content")),
            ).alias("m"),
        )
        .explode("m")
        .filter(~((pl.col("m").struct.field("role") == "user") & pl.col("m").struct.field("content").is_null()))
        .group_by("i", maintain_order=True)
        .agg(pl.col("m"))
    )
    return pairs.select("i").join(messages, on="i", how="left", maintain_order="left")["m"].cast(CONVERSATION), invalid


def _by_distinct(batch: pl.DataFrame, column: str, expr: pl.Expr) -> pl.Expr:
    """``expr``, a String function of one text ``column``, evaluated once per distinct value and looked up per
    row; or the column itself when ``expr`` leaves every value as it is. A log has a handful of model names and
    winner labels: they are trimmed and normalised once each, not once per vote."""
    if batch.schema[column] != pl.String:
        return expr
    distinct = _changed(batch.select(pl.col(column).unique()), column, expr)
    if distinct is None:
        return pl.col(column)
    return pl.col(column).replace_strict(distinct[column], distinct["__value"], default=None, return_dtype=pl.String)


def _changed(distinct: pl.DataFrame, column: str, expr: pl.Expr) -> pl.DataFrame | None:
    """The distinct values of ``column`` with ``expr`` of each (``__value``); None when it leaves all as they are."""
    distinct = distinct.with_columns(expr.alias("__value"))
    return None if distinct.select(pl.col(column).eq_missing(pl.col("__value")).all()).item() else distinct


#: A wrong-type check: (reason, flag, field, detail). The row is bad where ``flag`` (on source columns) holds
#: and, when a ``field`` is named, its parsed value is null.
Check = tuple[str, pl.Expr, str | None, str]


def _field_exprs(schema: pl.Schema, col: dict[str, str]) -> tuple[dict[str, pl.Expr], list[Check]]:
    """The typed fields (timestamp, turn, anony, counts) and plain text fields (judge, question_id, language,
    category) a plan maps, as expressions on the source columns, with the wrong-type check of each typed one."""
    out: dict[str, pl.Expr] = {}
    bad: list[Check] = []
    parsers = {"timestamp": _timestamp, "turn": _integer, "anony": _boolean, **{c: _count for c in META_COLUMNS}}
    for name, parse in parsers.items():
        if name in col:
            out[name] = parse(col[name], schema[col[name]])
            present = _text(col[name], schema[col[name]]).is_not_null()
            bad.append((QuarantineReason.WRONG_TYPE.value, present, name, f"{col[name]}: not a valid {name}"))
    for name in ("judge", "question_id", "language", "category"):
        if name in col:
            out[name] = _text(col[name], schema[col[name]])
    return out, bad


def _extra_exprs(schema: pl.Schema, plan: Plan) -> dict[str, pl.Expr]:
    """The source columns no field takes, kept under their names (``extra_<name>`` where a name is canonical)."""
    extras: dict[str, pl.Expr] = {}
    for name in plan.extras:
        target = name if name not in BATTLE_SCHEMA else f"extra_{name}"
        # Nested extras are kept as exact JSON text: their inferred types vary from batch to batch (and a
        # batch read line by line gives text), and store parts must agree on each column's type.
        extras[target] = json_text(pl.col(name)) if schema[name].is_nested() else pl.col(name)
    return extras


def _id_expr(schema: pl.Schema, col: dict[str, str]) -> pl.Expr:
    return _text(col["battle_id"], schema[col["battle_id"]]) if "battle_id" in col else pl.lit(None, dtype=pl.String)


def canonicalize(batch: pl.DataFrame, plan: Plan, labels: dict[str, str], source: str) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Map one batch to canonical columns and validate every row. Returns (accepted, quarantined)."""
    schema = batch.schema
    col = plan.columns
    out: dict[str, pl.Expr] = {}
    for name in ("model_a", "model_b"):
        out[name] = _by_distinct(batch, col[name], _text(col[name], schema[col[name]]))

    if plan.dialect == "kaggle" and "outcome" not in col:
        outcome = _kaggle_outcome(batch)
        label = None
    else:
        label = _text(col["outcome"], schema[col["outcome"]])
        outcome = _by_distinct(batch, col["outcome"], label.str.to_lowercase().replace_strict(labels, default=None, return_dtype=pl.String))
    out["outcome"] = outcome

    # the wrong-type flags are computed with the fields in one pass; the checks then only read computed
    # columns, so no parser runs twice
    fields, bad = _field_exprs(schema, col)
    out.update(fields)

    decoded: dict[str, pl.Series] = {}
    for side in ("a", "b"):
        name = f"conversation_{side}"
        if name in col:
            dtype = schema[col[name]]
            typed = _conversation_from_typed(col[name], dtype)
            present = _text(col[name], dtype).is_not_null() if dtype == pl.String else pl.col(col[name]).is_not_null()  # blank text is absent
            if typed is not None:
                out[name] = typed
                continue
            if dtype == pl.String:  # JSON text (JSON and CSV sources)
                decoded[name] = _decode_json(batch[col[name]], CONVERSATION)
                out[name] = pl.col(f"__{name}")
            else:  # a typed column (parquet) of some other shape: no value of it is a conversation
                out[name] = pl.lit(None, dtype=CONVERSATION)
            bad.append((QuarantineReason.WRONG_TYPE.value, present, name, f"{col[name]}: not a list of {{role, content}} messages"))
        elif plan.dialect == "kaggle":
            decoded[name], decoded[f"{name}_invalid"] = _kaggle_conversation(batch, f"response_{side}")
            out[name] = pl.col(f"__{name}")
            bad.append((QuarantineReason.WRONG_TYPE.value, pl.col(f"__{name}_invalid"), None, f"prompt/response_{side}: not a JSON list of turns"))

    if "conv_metadata" in col:
        dtype = schema[col["conv_metadata"]]
        if dtype == pl.String:
            decoded["conv_metadata"] = _decode_json(batch[col["conv_metadata"]], _meta_text_dtype())
            meta_expr, meta_dtype = pl.col("__conv_metadata"), _meta_text_dtype()
            bad.append((QuarantineReason.WRONG_TYPE.value, pl.col(col["conv_metadata"]).is_not_null() & pl.col("__conv_metadata").is_null(), None, f"{col['conv_metadata']}: not an LMArena conv_metadata object"))
        else:
            meta_expr, meta_dtype = pl.col(col["conv_metadata"]), dtype
        for side in ("a", "b"):
            for count, path in meta_paths(side).items():
                value = _field_path(meta_expr, meta_dtype, path)
                if value is not None:
                    out[f"meta_{count}_{side}"] = value

    if decoded:
        batch = batch.with_columns(pl.Series(f"__{k}", v) for k, v in decoded.items())

    extras = _extra_exprs(schema, plan)

    if label is None:
        winner_detail = pl.lit("winner_model_a/winner_model_b/winner_tie: exactly one must be 1")
    else:
        winner_detail = pl.concat_str(pl.lit("unknown winner label "), pl.format('"{}"', label.fill_null("")), pl.lit(" (map it with --winner-map LABEL=OUTCOME)"))
    checks: list[tuple[str, pl.Expr, pl.Expr]] = [  # (reason, condition on the computed columns, detail), first match wins
        (QuarantineReason.MISSING_MODEL.value, pl.col("model_a").is_null() | pl.col("model_b").is_null(), pl.lit("model_a or model_b is missing or empty")),
        (QuarantineReason.UNKNOWN_WINNER.value, pl.col("outcome").is_null(), winner_detail),
        *[(reason, pl.col(f"__flag{i}") & (pl.col(field).is_null() if field else True), pl.lit(text)) for i, (reason, _, field, text) in enumerate(bad)],
        (QuarantineReason.SELF_BATTLE.value, pl.col("model_a") == pl.col("model_b"), pl.lit("model_a == model_b")),
    ]
    failed = pl.lit(None, dtype=pl.Int8)
    for number, (_, condition, _) in reversed(list(enumerate(checks))):
        failed = pl.when(condition.fill_null(False)).then(pl.lit(number, dtype=pl.Int8)).otherwise(failed)

    frame = batch.select(
        *[e.alias(k) for k, e in out.items()],
        *[e.alias(k) for k, e in extras.items()],
        _id_expr(schema, col).alias("battle_id"),
        pl.col(ROW).alias("source_row"),
        *[flag.fill_null(False).alias(f"__flag{i}") for i, (_, flag, _, _) in enumerate(bad)],
        *([pl.col(RAW)] if RAW in batch.columns else []),
    ).with_columns(failed.alias("__failed"), pl.lit(source).alias("source_file"))
    helpers = [f"__flag{i}" for i in range(len(bad))]

    rejected = frame.filter(pl.col("__failed").is_not_null())
    if rejected.height:
        # reasons and messages only for the rejected rows (the winner label is read back from their source rows)
        sources = batch.join(rejected.select(pl.col("source_row").alias(ROW)), on=ROW, how="semi", maintain_order="left")
        detail = pl.lit(None, dtype=pl.String)
        for number, (_, _, text) in enumerate(checks):
            detail = pl.when(pl.col("__failed") == number).then(text).otherwise(detail)
        details = sources.with_columns(rejected["__failed"]).select(detail)
        raw = rejected[RAW] if RAW in rejected.columns else _raw_records(batch, rejected["source_row"])
        rejected = pl.DataFrame(
            {
                "source_file": rejected["source_file"],
                "source_row": rejected["source_row"],
                "reason": rejected["__failed"].replace_strict(list(range(len(checks))), [c[0] for c in checks], return_dtype=pl.String),
                "detail": details.to_series(),
                "raw": raw,
                "raw_bytes": pl.Series([None] * rejected.height, dtype=pl.Binary),
            },
            schema=QUARANTINE_SCHEMA,
        )
        frame = frame.filter(pl.col("__failed").is_null())
    else:
        rejected = pl.DataFrame(schema=QUARANTINE_SCHEMA)
    accepted = frame.drop("__failed", RAW, *helpers, strict=False)
    return accepted, rejected


def _raw_records(batch: pl.DataFrame, rows: pl.Series) -> pl.Series:
    """The original record as JSON text, for quarantined rows of typed sources (parquet)."""
    picked = batch.join(pl.DataFrame({ROW: rows}), on=ROW, how="semi", maintain_order="left")
    return picked.select(pl.struct(pl.exclude(ROW)).struct.json_encode().alias("raw"))["raw"]


# -- ids, hashes, duplicates ---------------------------------------------------------------------------------

HASH_CHUNK_ROWS = 25_000


def _content_hashes(frame: pl.DataFrame) -> pl.Series:
    """The content hash of every row. A chunk at a time: the texts hashed are long, and a whole batch of
    them (as Python strings) would be the largest thing an ingest holds."""
    digest = hashlib.blake2b
    hashes: list[str] = []
    for start in range(0, frame.height, HASH_CHUNK_ROWS):
        texts = _content_text(frame.slice(start, HASH_CHUNK_ROWS)).to_list()
        hashes.extend(digest(t.encode(), digest_size=16).hexdigest() for t in texts)
    return pl.Series(hashes, dtype=pl.String)


#: ``,"key":null`` and ``{"key":null,`` in compact JSON: an object member that is null is left out of the
#: hash, as if absent (batches pad a nested object with the keys other rows have). ``,"`` and ``{"`` occur
#: in compact JSON only between members, never inside a string, where every quote is escaped.
_NULL_MEMBER = r',"(?:[^"\\]|\\.)*":null'
_FIRST_NULL_MEMBER = r'\{"(?:[^"\\]|\\.)*":null,?'


def _content_text(frame: pl.DataFrame) -> pl.Series:
    """What a vote's content hash is taken of: each present field as ``{"name":value}`` JSON, canonical fields
    first, then extras by name; ids and provenance left out.

    Absent fields (null, or empty text) are skipped rather than written as null, so a vote hashes the same
    whatever other columns its source or batch has (a growing log that gains a field keeps its old ids).
    Extras are hashed as text, as the JSON and CSV readers give them, so a typed source and its JSONL or
    CSV export hash alike.
    """
    skip = {"battle_id", "content_hash", "source_file", "source_row"}
    canonical = [c for c in BATTLE_SCHEMA if c in frame.columns and c not in skip]
    extras = sorted(c for c in frame.columns if c not in BATTLE_SCHEMA)
    fields = []
    for name in canonical + extras:
        value, dtype = pl.col(name), frame.schema[name]
        if name in extras:  # as text (nested extras are JSON text already, see canonicalize)
            if dtype == pl.String and frame[name].str.contains(":null", literal=True).any():
                value = value.str.replace_all(_NULL_MEMBER, "").str.replace_all(_FIRST_NULL_MEMBER, "{")
            value, quoted = value.cast(pl.String), True
        else:
            quoted = False
        if frame.schema[name] == pl.String:
            value = pl.when(value != "").then(value)
        fields.append(pl.when(value.is_not_null()).then(_json_member(name, value, frame.schema[name], quoted)))
    return frame.select(pl.concat_str([pl.lit(HASH_VERSION), *fields], separator="\x1f", ignore_nulls=True)).to_series()


_PLAIN_NAME = re.compile(r"[A-Za-z0-9_.\- ]+")


def _json_member(name: str, value: pl.Expr, dtype: pl.DataType, quoted: bool) -> pl.Expr:
    """``{"name":value}`` as compact JSON (``value`` as a JSON string when ``quoted``). Numbers and booleans,
    whose text needs no escaping, are written directly (the same text as polars' encoder, several times
    faster); anything else goes through the encoder."""
    if (dtype.is_integer() or (quoted and (dtype.is_numeric() or dtype == pl.Boolean))) and _PLAIN_NAME.fullmatch(name):
        quote = '"' if quoted else ""
        return pl.concat_str(pl.lit(f'{{"{name}":{quote}'), value.cast(pl.String), pl.lit(f"{quote}}}"))
    return pl.struct(value.alias(name)).struct.json_encode()


def add_hashes(accepted: pl.DataFrame, occurrences: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Content hash of every row (all canonical fields and extras, not provenance) and an id for rows without
    one: ``sha-<hash>``, with ``~k`` for the k-th repeat of identical content in the same source (so appending
    to a growing log keeps every earlier id). ``occurrences`` carries the repeat counts across batches."""
    frame = accepted.with_columns(_content_hashes(accepted).alias("content_hash"))
    missing = frame["battle_id"].is_null() | (frame["battle_id"] == "")
    if missing.any():
        frame = frame.with_columns(pl.int_range(pl.len()).alias("__order"))
        without = frame.filter(missing).with_columns(pl.int_range(pl.len()).over("content_hash").alias("__k"))
        without = without.join(occurrences, on="content_hash", how="left").with_columns(
            (pl.col("__k") + pl.col("__seen").fill_null(0)).alias("__k")
        )
        occurrences = pl.concat([occurrences, without.group_by("content_hash").agg(pl.len().cast(pl.Int64).alias("__seen"))]).group_by("content_hash").agg(pl.col("__seen").sum())
        without = without.with_columns(
            pl.concat_str(pl.lit("sha-"), pl.col("content_hash").str.slice(0, 24), pl.when(pl.col("__k") > 0).then(pl.format("~{}", pl.col("__k"))).otherwise(pl.lit(""))).alias("battle_id")
        ).drop("__k", "__seen")
        frame = pl.concat([frame.filter(~missing), without], how="vertical_relaxed").sort("__order").drop("__order")
    return frame, occurrences


def _content_key(hashes: pl.Expr) -> pl.Expr:
    # 64 bits of the content hash tell two contents of one id apart as well as 128, in half the memory.
    return hashes.str.slice(0, 16).str.to_integer(base=16, dtype=pl.UInt64, strict=False)


_NO_BATTLES = pl.DataFrame(schema={"battle_id": pl.String, "content_hash": pl.String})


def seen_keys(battles: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame | pl.LazyFrame:
    """What duplicate detection keeps of each battle already stored or accepted: (battle_id, content_key)."""
    return battles.select("battle_id", _content_key(pl.col("content_hash")).alias("content_key"))


def split_duplicates(frame: pl.DataFrame, seen: pl.DataFrame) -> tuple[pl.DataFrame, int, pl.DataFrame]:
    """Drop exact duplicates (same id, same content) and pull out conflicting ones (same id, other content).

    The reference content of an id is the stored one (``seen``, from :func:`seen_keys`: the store and
    earlier batches) or else its first occurrence in this batch. Returns (new rows, number of exact
    duplicates, conflicting rows). Only the seen ids that occur in the batch are joined: ``seen`` grows
    with the store, and a join would hash all of it for every batch.
    """
    frame = frame.with_row_index("__order").with_columns(_content_key(pl.col("content_hash")).alias("__key"))
    firsts = frame.group_by("battle_id", maintain_order=True).agg(
        pl.col("__key").first().alias("__batch_ref"), pl.col("__order").first().alias("__first")
    )
    known = seen.filter(pl.col("battle_id").is_in(firsts["battle_id"].implode())).unique("battle_id", keep="first")
    refs = firsts.join(known.rename({"content_key": "__seen_ref"}), on="battle_id", how="left")
    checked = frame.join(refs, on="battle_id", how="left", maintain_order="left")
    reference = pl.coalesce("__seen_ref", "__batch_ref")
    is_new = pl.col("__seen_ref").is_null() & (pl.col("__order") == pl.col("__first"))
    conflict = pl.col("__key") != reference
    helpers = ["__order", "__key", "__batch_ref", "__first", "__seen_ref"]
    new = checked.filter(is_new).drop(helpers)
    duplicates = checked.filter(~is_new & ~conflict).height
    conflicts = checked.filter(conflict).drop(helpers)
    return new, duplicates, conflicts


def _conflict_rows(conflicts: pl.DataFrame, raw_of: Callable[[pl.Series], pl.Series]) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "source_file": conflicts["source_file"],
            "source_row": conflicts["source_row"],
            "reason": [QuarantineReason.CONFLICTING_DUPLICATE.value] * conflicts.height,
            "detail": [f"battle_id {bid} already seen with different content" for bid in conflicts["battle_id"].to_list()],
            "raw": raw_of(conflicts["source_row"]),
            "raw_bytes": pl.Series([None] * conflicts.height, dtype=pl.Binary),
        },
        schema=QUARANTINE_SCHEMA,
    )


def _detect_fmt(path: Path, options: InputOptions) -> str:
    if options.fmt in ("auto", "kaggle"):
        return container_of(path)
    return options.fmt


def stream(
    paths: list[Path], options: InputOptions, seen: pl.DataFrame, columns: Sequence[str] | None = None
) -> Iterator[tuple[SourceSummary, pl.DataFrame, pl.DataFrame]]:
    """The ingest stream: per batch, (summary so far, new canonical battles, quarantined rows).

    ``seen`` is :func:`seen_keys` of the battles already stored; it grows as batches are accepted.

    With ``columns`` (a lean read, see :func:`read_sources`) only those canonical columns are kept, only the
    source columns they and validation need are read (parquet), and no content hash is computed: ids are
    checked afterwards by :func:`_LeanIds`, which asks for a full read where hashes could change the outcome.
    """
    labels = check_sources(paths, options)
    lean_ids = _LeanIds() if columns is not None else None
    for number, path in enumerate(paths):
        summary = SourceSummary(str(path))
        plan: Plan | None = None
        occurrences = pl.DataFrame(schema={"content_hash": pl.String, "__seen": pl.Int64})
        batches = 0
        fmt = _detect_fmt(Path(path), options)
        read_columns, batch_rows = None, options.batch_rows
        if columns is not None and fmt == "parquet":
            lean = _lean_parquet(Path(path), options, columns)
            read_columns, batch_rows = lean.columns, lean.batch_rows(options)
        for raw in read_batches(Path(path), fmt, batch_rows, read_columns):
            batches += 1
            summary.rows_read += raw.frame.height + raw.rejected.height
            summary.quarantined.update(raw.rejected["reason"].to_list())
            accepted = pl.DataFrame()
            rejected = raw.rejected
            if raw.frame.height:
                plan = plan_for(raw.frame.columns, options, str(path), previous=plan)
                batch = _align(raw.frame, plan)
                accepted, invalid = canonicalize(batch, plan if columns is None else _lean_plan(plan, columns), labels, str(path))
                summary.quarantined.update(invalid["reason"].to_list())
                rejected = pl.concat([rejected, invalid])
                if lean_ids is not None:
                    lean_ids.add(number, accepted["battle_id"])
                    accepted = _wanted(conform(accepted), columns)
                else:
                    accepted, occurrences = add_hashes(accepted, occurrences)
                    accepted, duplicates, conflicts = split_duplicates(accepted, seen)
                    summary.duplicates += duplicates
                    conflict_rows = _conflict_rows(conflicts, lambda rows, b=batch: _raw_of(b, rows))
                    summary.quarantined.update(conflict_rows["reason"].to_list())
                    rejected = pl.concat([rejected, conflict_rows])
                    accepted = conform(accepted)
                    seen = pl.concat([seen, seen_keys(accepted)])
                summary.stored += accepted.height
            yield summary, accepted, rejected
        if not batches:  # an empty source still gets its (zero) summary
            empty = conform(pl.DataFrame(schema=BATTLE_SCHEMA))
            yield summary, empty if columns is None else _wanted(empty, columns), pl.DataFrame(schema=QUARANTINE_SCHEMA)
    if lean_ids is not None:
        lean_ids.check()


# -- lean reads: battles for one computation, without ids or hashes ------------------------------------------

#: Fields whose values can reject a row: a lean read reads and checks them even when it keeps none of them.
VALIDATED = ("model_a", "model_b", "outcome", "timestamp", "turn", "anony", "conversation_a", "conversation_b", "conv_metadata", *META_COLUMNS)
#: Columns that only a full read computes (a lean read is refused when any is asked for).
IDENTITY = ("battle_id", "content_hash", "source_file", "source_row")


def _wanted(frame: pl.DataFrame | pl.LazyFrame, columns: Sequence[str]) -> pl.DataFrame | pl.LazyFrame:
    """The wanted columns that a canonical frame has (every canonical one; extras where the source had them)."""
    names = frame.collect_schema().names()
    return frame.select([c for c in columns if c in names])


def _lean_plan(plan: Plan, columns: Sequence[str]) -> Plan:
    """The plan restricted to the validated fields, the ids and the wanted columns (arena dialect)."""
    if plan.dialect == "kaggle":
        return plan
    keep = {*VALIDATED, "battle_id", *columns}
    fields = {name: source for name, source in plan.columns.items() if name in keep}
    extras = tuple(e for e in plan.extras if e in keep or f"extra_{e}" in keep)
    return Plan(plan.dialect, fields, extras)


#: A lean parquet read of narrow columns only (no texts, nothing nested) takes batches of about this many bytes
#: (up to a million rows) rather than the ingest's rows per batch: every batch costs a dozen small queries.
NARROW_BATCH_BYTES = 64 << 20
NARROW_BATCH_ROWS = 1_000_000
#: Fields that hold texts (conversations) or documents: a read of any of them keeps the ingest's batch size.
TEXT_FIELDS = ("conversation_a", "conversation_b", "conv_metadata")
#: Bytes per value of a short string (a model name, a label) as polars holds it: a 16-byte view and its text
#: (a number or a time takes at most 8).
SHORT_TEXT_BYTES = 32


@dataclass(frozen=True)
class _LeanParquet:
    """What a lean read takes from one parquet file: the columns (None: all of them, for the Kaggle dialect),
    and whether they are narrow (no texts, nothing nested)."""

    schema: pl.Schema
    plan: Plan
    columns: list[str] | None
    narrow: bool

    def batch_rows(self, options: InputOptions) -> int:
        if not self.narrow:
            return options.batch_rows
        dtypes = [self.schema[c] for c in self.columns or ()]
        row_bytes = sum(8 if dtype.is_numeric() or dtype.is_temporal() or dtype == pl.Boolean else SHORT_TEXT_BYTES for dtype in dtypes) or 1
        return min(NARROW_BATCH_ROWS, max(options.batch_rows, NARROW_BATCH_BYTES // row_bytes))


def _lean_parquet(path: Path, options: InputOptions, columns: Sequence[str]) -> _LeanParquet:
    from arena_cli.io.readers import parquet_schema

    schema = parquet_schema(path)
    plan = _lean_plan(plan_for(list(schema), options, str(path)), columns)
    if plan.dialect == "kaggle":
        return _LeanParquet(schema, plan, None, narrow=False)
    read = [c for c in dict.fromkeys([*plan.columns.values(), *plan.extras]) if c in schema]
    narrow = not set(TEXT_FIELDS) & set(plan.columns) and not any(schema[c].is_nested() for c in read)
    return _LeanParquet(schema, plan, read, narrow)


class _LeanIds:
    """The ids a lean read saw. Without hashes it cannot tell a duplicate from a conflict, nor name id-less
    votes, so it asks for a full read (:class:`_FullReadNeeded`) whenever either could matter: an id seen
    twice, id-less votes in more than one source (the same vote in two logs is one battle), or id-less votes
    next to ids that look like content-hash ids."""

    def __init__(self) -> None:
        self.ids: list[pl.Series] = []
        self.idless_sources: set[int] = set()  # by position: a file given twice is two sources

    def add(self, source: int, ids: pl.Series) -> None:
        if ids.null_count():
            self.idless_sources.add(source)
            if len(self.idless_sources) > 1:
                raise _FullReadNeeded
        self.ids.append(ids.drop_nulls())

    def check(self) -> None:
        ids = pl.concat(self.ids) if self.ids else pl.Series(dtype=pl.String)
        if ids.is_duplicated().any():
            raise _FullReadNeeded
        if self.idless_sources and ids.str.starts_with("sha-").any():
            raise _FullReadNeeded


class _FullReadNeeded(Exception):
    """A lean read met ids that only content hashes can settle."""


# -- streamed reads: lean reads of parquet logs whose rows need no trimming or mapping ------------------------


def _streamed(paths: list[Path], options: InputOptions, columns: Sequence[str], reduce: Callable[[Frame], Frame]) -> IngestResult | None:
    """A lean read of parquet files in two polars streaming passes per file; None where it does not apply.

    Why: most logs a fit reads were written by tools, with trimmed model names and known winner labels, and
    few rows to reject (self-battles, say). For files of narrow columns (no texts, nothing nested), a first
    pass (:func:`_checked_rows`) finds the rows to take as they are and gives the others to
    :func:`canonicalize`, which must reject every one of them; a second reads, maps and ``reduce``s the rows
    taken in one streaming query, which never holds the read columns whole. Any other file, or a row to trim
    or whose label to normalise, returns None: the batch path (:func:`stream`) reads the files.
    """
    labels = check_sources(paths, options)
    if not paths:
        return None
    leans: list[_LeanParquet] = []
    for path in paths:
        if _detect_fmt(Path(path), options) != "parquet":
            return None
        lean = _lean_parquet(Path(path), options, columns)
        names = [lean.plan.columns[f] for f in ("model_a", "model_b", "outcome")] if lean.plan.dialect == "arena" else []
        if not lean.narrow or not names or any(lean.schema[c] != pl.String for c in names):
            return None
        leans.append(lean)
    lean_ids = _LeanIds()
    summaries: dict[str, SourceSummary] = {}  # one per source, as batch reads give
    quarantine: list[pl.DataFrame] = []
    for number, (path, lean) in enumerate(zip(paths, leans)):
        checked = _checked_rows(Path(path), lean, labels)
        if checked is None:
            return None
        rows, ids, rejected = checked
        lean_ids.add(number, ids)
        summary = summaries[str(path)] = SourceSummary(str(path), rows_read=rows, stored=rows - rejected.height)
        summary.quarantined.update(rejected["reason"].to_list())
        quarantine.append(rejected)
    lean_ids.check()
    battles = []
    for path, lean in zip(paths, leans):
        schema, plan = lean.schema, lean.plan
        col = plan.columns
        fields, _ = _field_exprs(schema, col)
        canonical = _scan(Path(path), lean).filter(_as_is(lean, labels)).select(
            pl.col(col["model_a"]).alias("model_a"),
            pl.col(col["model_b"]).alias("model_b"),
            lookup(pl.col(col["outcome"]), labels, None, pl.String).alias("outcome"),  # every label is a known one as it is
            *[e.alias(k) for k, e in fields.items()],
            *[e.alias(k) for k, e in _extra_exprs(schema, plan).items()],
            _id_expr(schema, col).alias("battle_id"),
        )
        battles.append(_streamed_collect(reduce(_wanted(conform(canonical), columns)), Path(path)))
    return IngestResult(pl.concat(battles, how="diagonal_relaxed"), pl.concat(quarantine), list(summaries.values()))


def _scan(path: Path, lean: _LeanParquet) -> pl.LazyFrame:
    return pl.scan_parquet(path).select(lean.columns)


def _streamed_collect(query: pl.LazyFrame, path: Path) -> pl.DataFrame:
    try:
        return query.lazy().collect(engine="streaming")
    except pl.exceptions.PolarsError as error:
        raise InputError(f"{path}: unreadable parquet file ({error})") from None


def _as_is(lean: _LeanParquet, labels: dict[str, str]) -> pl.Expr:
    """Per row: whether :func:`canonicalize` accepts it as it is, model names aside (they are checked once per
    distinct value): both present and different, a winner label among ``labels`` as it is, typed fields that
    parse."""
    schema, col = lean.schema, lean.plan.columns
    a, b, outcome = (pl.col(col[f]) for f in ("model_a", "model_b", "outcome"))
    fields, checks = _field_exprs(schema, col)
    return pl.all_horizontal(
        a.is_not_null(), b.is_not_null(), a != b, outcome.is_in(list(labels)),
        *[~(flag & fields[field].is_null()) for _, flag, field, _ in checks],
    ).fill_null(False)


def _checked_rows(path: Path, lean: _LeanParquet, labels: dict[str, str]) -> tuple[int, pl.Series, pl.DataFrame] | None:
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
            *([_id_expr(schema, col).filter(as_is).implode().alias("ids")] if has_ids else []),
            (~as_is).sum().alias("others"),
        ),
        path,
    )
    names = pl.concat([found["names_a"][0], found["names_b"][0]]).to_frame("name")
    if _changed(names, "name", _text("name", pl.String)) is not None:
        return None
    rejected = pl.DataFrame(schema=QUARANTINE_SCHEMA)
    if found["others"].item():  # read again, those rows only
        others = _streamed_collect(numbered.filter(~as_is).drop("__as_is"), path).with_columns(pl.col(ROW).cast(pl.Int64))
        accepted, rejected = canonicalize(others, lean.plan, labels, str(path))
        if accepted.height:
            return None
    rows = int(found["rows"].item())
    ids = found["ids"][0] if has_ids else pl.Series("ids", [None] if rows > rejected.height else [], dtype=pl.String)  # id-less votes
    return rows, ids, rejected


def check_sources(paths: list[Path], options: InputOptions) -> dict[str, str]:
    """Fail fast, before any lock is taken or row read: every source exists and has a known format, and
    ``--map``/``--winner-map`` are well formed. Returns the winner labels to use."""
    labels = _winner_labels(options)
    for mapped in options.mapping:
        if mapped not in MAPPABLE:
            raise InputError(f"--map {mapped}=...: unknown field (one of: {', '.join(MAPPABLE)})")
    for path in paths:
        if not Path(path).is_file():
            raise InputError(f"no such file: {path}")
        _detect_fmt(Path(path), options)
    return labels


def _align(frame: pl.DataFrame, plan: Plan) -> pl.DataFrame:
    """Later batches of a JSON source may lack a column the first one had (or add new ones): align to the plan."""
    needed = set(plan.columns.values()) | set(plan.extras)
    missing = [pl.lit(None, dtype=pl.String).alias(c) for c in needed if c not in frame.columns]
    return frame.with_columns(missing) if missing else frame


def _raw_of(batch: pl.DataFrame, rows: pl.Series) -> pl.Series:
    if RAW in batch.columns:
        return batch.join(pl.DataFrame({ROW: rows}), on=ROW, how="semi", maintain_order="left")[RAW]
    return _raw_records(batch, rows)


def read_sources(
    paths: list[Path], options: InputOptions | None = None, columns: Sequence[str] | None = None,
    reduce: Callable[[Frame], Frame] | None = None,
) -> IngestResult:
    """Read vote logs in memory (no store): for one-shot use such as ``arena fit votes.jsonl``.

    ``columns``: the canonical columns the caller needs. Unless they include an id or provenance column, the
    read is *lean*: the same battles as a full read (every row validated, duplicates dropped), but hashes
    are computed only when ids make them necessary, which is rare and then costs a second, full read. The
    quarantined rows of a lean read of parquet show only the columns that were read. Parquet files whose
    rows need no trimming or mapping are read by polars' streaming engine (see :func:`_streamed`).

    ``reduce``: a row-wise projection of the battles (a fit's few values per battle from many columns);
    a lean read applies it batch by batch as the battles are read (or within the streaming query, to a
    ``LazyFrame``), so only its result is ever held whole.
    """
    options = options or InputOptions()
    reduce = reduce or (lambda frame: frame)
    if columns is not None and not set(columns) & set(IDENTITY):
        try:
            streamed = _streamed(paths, options, columns, reduce)
            return streamed if streamed is not None else _collect(stream(paths, options, seen_keys(_NO_BATTLES), columns), columns, reduce)
        except _FullReadNeeded:
            pass
    result = _collect(stream(paths, options, seen_keys(_NO_BATTLES)), None, lambda frame: frame)
    result.battles = reduce(result.battles if columns is None else _wanted(result.battles, columns))
    return result


def _collect(
    batches: Iterator[tuple[SourceSummary, pl.DataFrame, pl.DataFrame]], columns: Sequence[str] | None,
    reduce: Callable[[pl.DataFrame], pl.DataFrame],
) -> IngestResult:
    battles: list[pl.DataFrame] = []
    quarantine: list[pl.DataFrame] = []
    summaries: dict[str, SourceSummary] = {}
    lean = columns is not None
    for summary, accepted, rejected in batches:
        summaries[summary.source] = summary
        if accepted.height or lean:
            battles.append(reduce(accepted))
        if rejected.height:
            quarantine.append(rejected)
    frame = pl.concat(battles, how="diagonal_relaxed") if battles else reduce(conform(pl.DataFrame(schema=BATTLE_SCHEMA)))
    rejected_all = pl.concat(quarantine) if quarantine else pl.DataFrame(schema=QUARANTINE_SCHEMA)
    return IngestResult(frame, rejected_all, list(summaries.values()))


def ingest_to_store(store, paths: list[Path], options: InputOptions | None = None, *, strict: bool = False,
                    lock_wait: float = 60.0, on_batch: Callable[[SourceSummary], None] | None = None) -> list[SourceSummary]:
    """Append the new battles of ``paths`` to ``store`` in one atomic publish (all sources or none).

    Idempotent: battles already stored are counted as duplicates. Quarantined rows are stored too, except
    rows already quarantined earlier (same source, row, reason and content). With ``strict``, any rejected
    row aborts the run and the store is left unchanged.
    """
    options = options or InputOptions()
    summaries: dict[str, SourceSummary] = {}
    with store.write(wait=lock_wait) as tx:
        stored = store.scan("battles", ["battle_id", "content_hash"])
        seen = seen_keys(_NO_BATTLES) if stored is None else seen_keys(stored).collect()
        old_quarantine = store.read("quarantine", ["source_file", "source_row", "reason", "raw"])
        pending: list[pl.DataFrame] = []
        pending_rows = 0
        rejected_parts: list[pl.DataFrame] = []
        for summary, accepted, rejected in stream(paths, options, seen):
            summaries[summary.source] = summary
            if on_batch:
                on_batch(summary)
            if rejected.height:
                rejected_parts.append(rejected)
            if accepted.height:
                pending.append(accepted)
                pending_rows += accepted.height
            if pending_rows >= PART_ROWS:
                tx.add("battles", pl.concat(pending, how="diagonal_relaxed", rechunk=False))
                pending, pending_rows = [], 0
        rejected_all = pl.concat(rejected_parts) if rejected_parts else pl.DataFrame(schema=QUARANTINE_SCHEMA)
        if strict and rejected_all.height:
            counts = Counter(rejected_all["reason"].to_list())
            raise RejectedRowsError(
                f"--strict: {rejected_all.height} row(s) rejected ({', '.join(f'{k}: {v}' for k, v in sorted(counts.items()))}); the store is unchanged"
            )
        if pending:
            tx.add("battles", pl.concat(pending, how="diagonal_relaxed", rechunk=False))
        identity = ["source_file", "source_row", "reason", "raw"]
        rejected_all = rejected_all.unique(identity, keep="first", maintain_order=True)  # a source given twice
        if old_quarantine is not None and rejected_all.height:
            rejected_all = rejected_all.join(old_quarantine, on=identity, how="anti", nulls_equal=True)
        tx.add("quarantine", rejected_all)
        tx.log({"sources": [s.as_dict() for s in summaries.values()]})
    return list(summaries.values())
