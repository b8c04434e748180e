"""Canonical battles from one batch of source rows: map the columns a :class:`~arena_cli.io.dialects.Plan`
names to the canonical fields, validate every row, and split the batch into accepted battles and quarantined
rows (each keeping its original content, source, row and reason).
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from arena_cli.features.registry import FEATURES, side_columns
from arena_cli.io.dialects import Plan, kaggle_conversation, kaggle_outcome
from arena_cli.io.fields import (
    MAX_COUNT,
    as_text,
    by_distinct,
    control_names,
    decode_conversations,
    decode_json,
    field_path,
    holds_bytes,
    is_given,
    json_text,
    may_leave_years,
    meta_text_dtype,
    non_negative,
    parse_boolean,
    parse_count,
    parse_text,
    parse_timestamp,
    parse_turn,
    parse_weight,
    not_text,
    within_years,
    without_bytes,
    typed_conversation,
    whole_number,
)
from arena_cli.io.readers import NESTED, RAW, ROW
from arena_cli.schema import BATTLE_SCHEMA, CONVERSATION, META_COLUMNS, QUARANTINE_SCHEMA, QuarantineReason, empty_quarantine, meta_paths


#: What a typed field must be, said when a row's value is not (counts: :data:`COUNT`).
WANTED = {
    "weight": "not a valid weight (a finite number >= 0)",
    "timestamp": "not a valid timestamp (unix seconds or milliseconds, or ISO 8601 text)",
    "turn": "not a valid turn (a whole number from 0 to 2^31-1)",
    "anony": "not a valid anony (true/false, 1/0, yes/no)",
}
COUNT = "not a valid count (a whole number from 0 to 2^53-1)"

#: A wrong-type check: (reason, flag, field, detail). The row is bad where ``flag`` (on source columns) holds
#: and, when a ``field`` is named, its parsed value is null.
Check = tuple[str, pl.Expr, str | None, "str | pl.Expr"]


def field_exprs(
    schema: pl.Schema, col: dict[str, str], extras: Sequence[str] = (), batch: pl.DataFrame | None = None
) -> tuple[dict[str, pl.Expr], list[Check]]:
    """The typed fields (weight, timestamp, turn, anony, counts) and plain text fields (judge, question_id, language,
    category) a plan maps, as expressions on the source columns, with the wrong-type check of each typed one;
    and the checks of the ``extras`` that hold precomputed style features (see :func:`feature_checks`) or dates and
    times (:func:`time_checks`).

    ``batch``: the rows the expressions are for, when known. Text fields of few values (turn, anony) are then
    parsed once per distinct value, and text timestamps that are all numbers skip the date formats: a JSON log
    gives these as text, and parsing them row by row cost a JSON fit more than its battles' other fields."""
    out: dict[str, pl.Expr] = {}
    bad: list[Check] = [*feature_checks(schema, extras), *time_checks(schema, extras)]
    parsers = {"weight": parse_weight, "timestamp": parse_timestamp, "turn": parse_turn, "anony": parse_boolean, **{c: parse_count for c in META_COLUMNS}}
    for name, parse in parsers.items():
        if name not in col:
            continue
        source, dtype = col[name], schema[col[name]]
        value = parse(source, dtype)
        present = parse_text(source, dtype).is_not_null() if dtype == pl.String else is_given(pl.col(source), dtype)  # blank text is absent
        if batch is not None and dtype == pl.String:
            if name in ("turn", "anony"):
                both = by_distinct(batch, source, pl.struct(value.alias("value"), present.alias("present")))
                value, present = both.struct.field("value"), both.struct.field("present")
            elif name == "timestamp" and _number_texts(batch, source):
                value, present = parse_timestamp(source, dtype, texts=False), pl.col(source).is_not_null()
        out[name] = value
        bad.append((QuarantineReason.WRONG_TYPE.value, present, name, f"{source}: {WANTED.get(name, COUNT)}"))
    for name in ("judge", "question_id", "language", "category"):
        if name in col:
            out[name] = parse_text(col[name], schema[col[name]])
    return out, bad


def _number_texts(batch: pl.DataFrame, column: str) -> bool:
    """Whether every value of a text column is a number as written (no blank, no space around it, no date)."""
    return not batch.select((pl.col(column).cast(pl.Float64, strict=False).is_null() & pl.col(column).is_not_null()).any()).item()


def typed_meta(schema: pl.Schema, col: dict[str, str], in_range: bool = False) -> tuple[dict[str, pl.Expr], list[Check]]:
    """LMArena's per-side counts of a typed (parquet) ``conv_metadata`` struct, with their checks (see
    :func:`meta_fields`) after those of its shape (:func:`conv_metadata_shape_checks`); none when the plan maps
    no typed ``conv_metadata``. ``in_range``: every count is taken as an integer in range, unchecked row by row
    (the caller checks them otherwise: see :class:`arena_cli.io.lean.LeanParquet`)."""
    if "conv_metadata" not in col or schema[col["conv_metadata"]] == pl.String:
        return {}, []
    name = col["conv_metadata"]
    dtype = schema[name]
    shape = conv_metadata_shape_checks(name, dtype)
    if not isinstance(dtype, pl.Struct):
        return {}, shape
    out, bad = meta_fields(pl.col(name), dtype, name, in_range)
    return out, [*shape, *bad]


def meta_fields(meta: pl.Expr, dtype: pl.DataType, name: str, in_range: bool = False) -> tuple[dict[str, pl.Expr], list[Check]]:
    """The counts of :data:`META_COUNTS` that a ``conv_metadata`` value (a struct) has, as ``meta_<count>_<side>``,
    each with the wrong-type check that names its field (``conv_metadata.header_count_a.h1``); ``in_range``: as
    for :func:`typed_meta`."""
    out: dict[str, pl.Expr] = {}
    bad: list[Check] = []
    for side in ("a", "b"):
        for count, path in meta_paths(side).items():
            found = field_path(meta, dtype, path)
            if found is not None:
                value, leaf = found
                # (not strict: a value out of range, which a read checking the extremes then finds, would stop the read)
                out[f"meta_{count}_{side}"] = value.cast(pl.Int64, strict=False) if in_range else whole_number(value, leaf, MAX_COUNT)
                bad.append((QuarantineReason.WRONG_TYPE.value, is_given(value, leaf), f"meta_{count}_{side}", f"{'.'.join((name, *path))}: {COUNT}"))
    return out, bad


#: Per-side style feature columns a source may give precomputed (``tokens_a``, ``h1_b``, ``bold_density_a``):
#: the fit reads them as counts, or (densities) as numbers of at least 0.
FEATURE_COUNT_COLUMNS = frozenset(c for f in FEATURES if f.is_count for c in side_columns(f.name))
FEATURE_DENSITY_COLUMNS = frozenset(c for f in FEATURES if not f.is_count for c in side_columns(f.name))


def feature_checks(schema: pl.Schema, extras: Sequence[str]) -> list[Check]:
    """A row whose precomputed style feature is not a count (a density: not a number of at least 0) has a wrong
    type, as a stored ``conv_metadata`` count would: left in, it would stop every fit that uses the feature."""
    checks: list[Check] = []
    for name in extras:
        if name in FEATURE_COUNT_COLUMNS:
            valid, wanted = whole_number(pl.col(name), schema[name], MAX_COUNT), COUNT
        elif name in FEATURE_DENSITY_COLUMNS:
            valid, wanted = non_negative(pl.col(name), schema[name]), "not a valid density (a number of at least 0)"
        else:
            continue
        checks.append((QuarantineReason.WRONG_TYPE.value, is_given(pl.col(name), schema[name]) & valid.is_null(), None, f"{name}: {wanted}"))
    return checks


def extra_exprs(schema: pl.Schema, plan: Plan) -> dict[str, pl.Expr]:
    """The source columns no field takes, kept under their names (``extra_<name>`` where a name is canonical)."""
    return {name if name not in BATTLE_SCHEMA else f"extra_{name}": _extra_value(name, schema[name]) for name in plan.extras}


def _extra_value(name: str, dtype: pl.DataType) -> pl.Expr:
    """An extra column as the store keeps it. Nested extras are exact JSON text: their inferred types vary from
    batch to batch (and a batch read line by line gives text), and store parts must agree on each column's type.
    Bytes are hex text (a style feature's, the number it spells) and durations ISO 8601 text (``PT1.5S``), which every export format can write; a date or
    time is kept as it is (one outside the years 1 to 9999 rejects its row: :func:`time_checks`)."""
    value = pl.col(name)
    if dtype.is_nested():
        return json_text(without_bytes(value, dtype))
    if dtype == pl.Binary:  # (a style feature's bytes were validated as the number their text spells: that text)
        return as_text(value, dtype) if name in FEATURE_COUNT_COLUMNS | FEATURE_DENSITY_COLUMNS else value.bin.encode("hex")
    if isinstance(dtype, pl.Duration):
        return value.dt.to_string()
    return value


def time_checks(schema: pl.Schema, extras: Sequence[str]) -> list[Check]:
    """A row whose extra date or time is outside the years 1 to 9999 has a wrong type (damage, or a wrong unit; polars
    cannot convert some such times, and the store keeps the column as it is)."""
    return [
        (QuarantineReason.WRONG_TYPE.value, pl.col(name).is_not_null() & ~within_years(pl.col(name), schema[name]), None,
         f"{name}: a date or time outside the years 1 to 9999")
        for name in extras if may_leave_years(schema[name])
    ]


def numeric_extras(frame: pl.DataFrame) -> pl.DataFrame:
    """Extras read as text (JSON, CSV) whose values are all numbers, or absent, as numbers: Int64 when every
    value is an integer, else Float64; so a covariate column of a text log is as numeric as a parquet one.
    Digits that no Int64 holds as written (a leading zero, too many digits: ids, codes) keep a column text.

    Applied to battles once they are hashed (hashes take extras as text), batch by batch: a column with a
    value that is not a number in some batch is text in that batch, and reads as text overall."""
    names = [n for n, dtype in frame.schema.items() if n not in BATTLE_SCHEMA and dtype == pl.String]
    if not names:
        return frame
    checks, parsed = [], {}
    for i, name in enumerate(names):
        text = pl.col(name).str.strip_chars().replace("", None)
        as_int, as_float = text.cast(pl.Int64, strict=False), text.cast(pl.Float64, strict=False)
        digits = text.str.contains(r"^[+-]?[0-9]+$")
        exact_int = text.str.contains(r"^[+-]?(?:0|[1-9][0-9]*)$") & as_int.is_not_null()
        checks += [
            (text.is_null() | exact_int).all().alias(f"int{i}"),
            (text.is_null() | (as_float.is_not_null() & (~digits | exact_int))).all().alias(f"float{i}"),
        ]
        parsed[name] = (as_int, as_float)
    found = frame.select(checks).row(0, named=True)
    casts = {}
    for i, name in enumerate(names):
        if found[f"int{i}"] or found[f"float{i}"]:
            casts[name] = parsed[name][0 if found[f"int{i}"] else 1]
    return frame.with_columns(**casts) if casts else frame


def id_expr(schema: pl.Schema, col: dict[str, str]) -> pl.Expr:
    return parse_text(col["battle_id"], schema[col["battle_id"]]) if "battle_id" in col else pl.lit(None, dtype=pl.String)


def canonicalize(batch: pl.DataFrame, plan: Plan, labels: dict[str, str], source: str) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Map one batch to canonical columns and validate every row. Returns (accepted, quarantined)."""
    schema = batch.schema
    col = plan.columns
    out: dict[str, pl.Expr] = {}
    nested = NESTED if NESTED in schema else None
    names_not_text = {name: found for name in ("model_a", "model_b") if (found := not_text(col[name], schema[col[name]], nested)) is not None}
    for name in ("model_a", "model_b"):
        text = parse_text(col[name], schema[col[name]])
        if name in names_not_text:  # (a null nested value is no name either: missing)
            text = pl.when(pl.col(col[name]).is_not_null()).then(text)
        out[name] = by_distinct(batch, col[name], text)

    if plan.dialect == "kaggle" and "outcome" not in col:
        outcome = kaggle_outcome(batch)
        label = None
    else:
        label = parse_text(col["outcome"], schema[col["outcome"]])
        outcome = by_distinct(batch, col["outcome"], label.str.to_lowercase().replace_strict(labels, default=None, return_dtype=pl.String))
    out["outcome"] = outcome

    # the wrong-type flags are computed with the fields in one pass; the checks then only read computed
    # columns, so no parser runs twice
    fields, bad = field_exprs(schema, col, plan.extras, batch)
    out.update(fields)

    decoded: dict[str, pl.Series] = {}
    for side in ("a", "b"):
        name = f"conversation_{side}"
        if name in col:
            dtype = schema[col[name]]
            typed = typed_conversation(col[name], dtype)
            present = parse_text(col[name], dtype).is_not_null() if dtype == pl.String else pl.col(col[name]).is_not_null()  # blank text is absent
            if typed is not None:
                out[name] = typed
                if holds_bytes(dtype):  # (none where bytes in its messages are not UTF-8)
                    bad.append((QuarantineReason.WRONG_TYPE.value, present, name, f"{col[name]}: bytes that are not UTF-8 in a message"))
                continue
            if dtype == pl.String:  # JSON text (JSON and CSV sources)
                decoded[name] = decode_conversations(batch[col[name]])
                out[name] = pl.col(f"__{name}")
            else:  # a typed column (parquet) of some other shape: no value of it is a conversation
                out[name] = pl.lit(None, dtype=CONVERSATION)
            bad.append((QuarantineReason.WRONG_TYPE.value, present, name, f"{col[name]}: not a list of {{role, content}} messages"))
        elif plan.dialect == "kaggle":
            decoded[name], decoded[f"{name}_invalid"] = kaggle_conversation(batch, f"response_{side}")
            out[name] = pl.col(f"__{name}")
            bad.append((QuarantineReason.WRONG_TYPE.value, pl.col(f"__{name}_invalid"), None, f"prompt/response_{side}: not a JSON list of turns"))

    if "conv_metadata" in col and schema[col["conv_metadata"]] == pl.String:  # JSON text (JSON and CSV sources)
        name = col["conv_metadata"]
        decoded["conv_metadata"] = decode_json(batch[name], meta_text_dtype())
        detail = pl.col(name).map_elements(lambda text: conv_metadata_problem(text, name), return_dtype=pl.String)
        bad.append((QuarantineReason.WRONG_TYPE.value, pl.col(name).is_not_null() & pl.col("__conv_metadata").is_null(), None, detail))
        meta, meta_checks = meta_fields(pl.col("__conv_metadata"), meta_text_dtype(), name)
    else:
        meta, meta_checks = typed_meta(schema, col)
    out.update(meta)
    bad += meta_checks

    if decoded:
        batch = batch.with_columns(pl.Series(f"__{k}", v) for k, v in decoded.items())

    extras = extra_exprs(schema, plan)

    if label is None:
        winner_detail = pl.lit("winner_model_a/winner_model_b/winner_tie: exactly one must be 1")
    else:
        winner_detail = pl.concat_str(pl.lit("unknown winner label "), pl.format('"{}"', label.fill_null("")), pl.lit(" (map it with --winner-map LABEL=OUTCOME)"))
    checks: list[tuple[str, pl.Expr, pl.Expr]] = [  # (reason, condition on the computed columns, detail), first match wins
        *[(QuarantineReason.WRONG_TYPE.value, pl.col(f"__{name}_not_text"), pl.lit(f"{name}: {what}"))
          for name, (_, what) in names_not_text.items()],
        (QuarantineReason.MISSING_MODEL.value, pl.col("model_a").is_null() | pl.col("model_b").is_null(), pl.lit("model_a or model_b is missing or empty")),
        *[(QuarantineReason.WRONG_TYPE.value, pl.col(name).is_in(unprintable), pl.lit(f"{name}: a control character in the model name"))
          for name in ("model_a", "model_b") if (unprintable := control_names(batch, col[name]))],
        (QuarantineReason.UNKNOWN_WINNER.value, pl.col("outcome").is_null(), winner_detail),
        *[(reason, pl.col(f"__flag{i}") & (pl.col(field).is_null() if field else True), pl.lit(text) if isinstance(text, str) else text)
          for i, (reason, _, field, text) in enumerate(bad)],
        (QuarantineReason.SELF_BATTLE.value, pl.col("model_a") == pl.col("model_b"), pl.lit("model_a == model_b")),
    ]
    failed = pl.lit(None, dtype=pl.Int8)
    for number, (_, condition, _) in reversed(list(enumerate(checks))):
        failed = pl.when(condition.fill_null(False)).then(pl.lit(number, dtype=pl.Int8)).otherwise(failed)

    frame = batch.select(
        *[e.alias(k) for k, e in out.items()],
        *[e.alias(k) for k, e in extras.items()],
        id_expr(schema, col).alias("battle_id"),
        pl.col(ROW).alias("source_row"),
        *[flag.fill_null(False).alias(f"__flag{i}") for i, (_, flag, _, _) in enumerate(bad)],
        *[flag.fill_null(False).alias(f"__{name}_not_text") for name, (flag, _) in names_not_text.items()],
        *([pl.col(RAW)] if RAW in batch.columns else []),
    ).with_columns(failed.alias("__failed"), pl.lit(source).alias("source_file"))
    helpers = [f"__flag{i}" for i in range(len(bad))] + [f"__{name}_not_text" for name in names_not_text]

    rejected = frame.filter(pl.col("__failed").is_not_null())
    if rejected.height:
        # reasons and messages only for the rejected rows (the winner label is read back from their source rows)
        sources = batch.join(rejected.select(pl.col("source_row").alias(ROW)), on=ROW, how="semi", maintain_order="left")
        detail = pl.lit(None, dtype=pl.String)
        for number, (_, _, text) in enumerate(checks):
            detail = pl.when(pl.col("__failed") == number).then(text).otherwise(detail)
        details = sources.with_columns(rejected["__failed"]).select(detail)
        raw = rejected[RAW] if RAW in rejected.columns else raw_records(batch, rejected["source_row"])
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
        rejected = empty_quarantine()
    accepted = frame.drop("__failed", RAW, *helpers, strict=False)
    return accepted, rejected


def conv_metadata_shape_checks(column: str, dtype: pl.DataType) -> list[Check]:
    """A typed ``conv_metadata`` (parquet, or JSON objects that all share one shape) that is not an object, or whose
    header, list or bold counts are not objects: no count can be read from it, which is a wrong type, not an
    absent count."""
    wrong = QuarantineReason.WRONG_TYPE.value
    if not isinstance(dtype, pl.Struct):
        return [(wrong, pl.col(column).is_not_null(), None, f"{column}: not an LMArena conv_metadata object")]
    fields = {f.name: f.dtype for f in dtype.fields}
    groups = dict.fromkeys(path[0] for side in ("a", "b") for path in meta_paths(side).values() if len(path) > 1)
    return [(wrong, pl.col(column).struct.field(name).is_not_null(), None, f"{column}.{name}: not an object of counts")
            for name in groups if name in fields and not isinstance(fields[name], pl.Struct)]


def conv_metadata_problem(text: str, column: str) -> str:
    """Which field of a ``conv_metadata`` JSON text that does not decode is wrong: its first count that is not a
    number (a list, an object, ``1e999``) or object of counts that is not an object, named by its path. Run on
    quarantined rows only, so that the detail says what the row's author must fix."""
    import json
    import math

    try:
        meta = json.loads(text)
    except (ValueError, RecursionError):
        meta = None
    if isinstance(meta, dict):
        for side in ("a", "b"):
            for path in meta_paths(side).values():
                value: object = meta
                for depth, key in enumerate(path):
                    value = value.get(key) if isinstance(value, dict) else None
                    if value is None:
                        break
                    named = ".".join((column, *path[: depth + 1]))
                    if depth < len(path) - 1 and not isinstance(value, dict):
                        return f"{named}: not an object of counts"
                    if depth == len(path) - 1 and (isinstance(value, (list, dict, bool)) or isinstance(value, float) and not math.isfinite(value)):
                        return f"{named}: {COUNT}"
    return f"{column}: not an LMArena conv_metadata object"


def raw_records(batch: pl.DataFrame, rows: pl.Series) -> pl.Series:
    """The original record as JSON text, for quarantined rows of typed sources (parquet)."""
    picked = batch.join(pl.DataFrame({ROW: rows}), on=ROW, how="semi", maintain_order="left").drop(ROW)
    return picked.select(pl.struct(_json_ready(picked[name]) for name in picked.columns).struct.json_encode().alias("raw"))["raw"]


def _json_ready(values: pl.Series) -> pl.Expr:
    """A column as JSON can hold it: bytes as hex text (polars cannot write bytes as JSON), and a date or time
    outside the years 1 to 9999 (damage, or a wrong unit) as the number the file stores, for every row, as polars
    cannot write some such times."""
    column = pl.col(values.name)
    if values.dtype in (pl.Date, pl.Datetime) and not within_years(values, values.dtype).all():
        return column.to_physical()
    return without_bytes(column, values.dtype)


def align(frame: pl.DataFrame, plan: Plan) -> pl.DataFrame:
    """Later batches of a JSON source may lack a column the first one had (or add new ones): align to the plan."""
    needed = set(plan.columns.values()) | set(plan.extras)
    missing = [pl.lit(None, dtype=pl.String).alias(c) for c in needed if c not in frame.columns]
    return frame.with_columns(missing) if missing else frame


def raw_of(batch: pl.DataFrame, rows: pl.Series) -> pl.Series:
    if RAW in batch.columns:
        return batch.join(pl.DataFrame({ROW: rows}), on=ROW, how="semi", maintain_order="left")[RAW]
    return raw_records(batch, rows)

