"""Field parsers: source values (text from JSON and CSV, typed values from parquet) -> canonical types.

Vectorised polars expressions, one per kind of field. A parser gives null where a present value does not
parse; the caller (:func:`arena_cli.io.canonical.canonicalize`) turns that into a ``wrong_type`` rejection.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

import polars as pl

if TYPE_CHECKING:
    from polars._typing import PolarsDataType

from arena_cli.schema import BATTLE_SCHEMA, CONVERSATION, meta_paths


def parse_text(col: str, dtype: pl.DataType) -> pl.Expr:
    """A field as trimmed text; empty text is absent, as an empty CSV cell is. Bytes are decoded as UTF-8 (null
    where they are not UTF-8), a duration is ISO 8601 text (``PT1.5S``), a nested value JSON text."""
    expr = pl.col(col)
    if is_text_like(dtype):
        expr = as_text(expr, dtype).str.strip_chars()
    elif dtype.is_nested():  # (a null too, as {"<col>":null}: stored and hashed so since the first version)
        expr = pl.struct(without_bytes(expr, dtype).alias(col)).struct.json_encode()
    elif isinstance(dtype, pl.Duration):
        expr = expr.dt.to_string()
    else:
        expr = expr.cast(pl.String)
    return expr.replace("", None)


def as_text(value: pl.Expr, dtype: PolarsDataType) -> pl.Expr:
    """A text-like value (:func:`is_text_like`) as text: bytes decoded as UTF-8 (null where they are not UTF-8), a
    dictionary-encoded value as its text."""
    if dtype == pl.String:
        return value
    return _utf8(value) if dtype == pl.Binary else value.cast(pl.String)


def _utf8(value: pl.Expr) -> pl.Expr:
    return value.map_batches(_utf8_text, return_dtype=pl.String)


def _utf8_text(values: pl.Series) -> pl.Series:
    """Bytes as UTF-8 text, null where they are not (decoded one by one only in a column that has such bytes)."""
    try:
        return values.cast(pl.String)
    except pl.exceptions.ComputeError:
        return pl.Series(values.name, [_decoded(v) for v in values.to_list()], dtype=pl.String)


def _decoded(value: bytes | None) -> str | None:
    try:
        return None if value is None else value.decode()
    except UnicodeDecodeError:
        return None


def not_text(col: str, dtype: pl.DataType, nested: str | None = None) -> tuple[pl.Expr, str] | None:
    """For a field that must be text (a model name): per row, whether its value is present but no text (a list
    or an object; bytes that are not UTF-8), and what it is; None for a type whose values are all text.
    ``nested``: the column that names, row by row, the fields given a list or an object that a reader rendered
    as text (:data:`~arena_cli.io.readers.NESTED`), when the batch has one."""
    if dtype.is_nested():
        return pl.col(col).is_not_null(), "a list or an object, not text"
    if dtype == pl.String and nested is not None:
        return pl.col(nested).list.contains(pl.lit(col, dtype=pl.String)).fill_null(False), "a list or an object, not text"
    if dtype == pl.Binary:
        return pl.col(col).is_not_null() & _utf8(pl.col(col)).is_null(), "bytes that are not UTF-8"
    return None


def without_bytes(value: pl.Expr, dtype: PolarsDataType) -> pl.Expr:
    """``value`` with every bytes value in it (nested ones too) as hex text: polars cannot write bytes as JSON."""
    if not holds_bytes(dtype):
        return value
    if dtype == pl.Binary:
        return value.bin.encode("hex")
    if isinstance(dtype, (pl.List, pl.Array)):
        return value.cast(pl.List(dtype.inner)).list.eval(without_bytes(pl.element(), dtype.inner))
    assert isinstance(dtype, pl.Struct)
    fields = pl.struct(without_bytes(value.struct.field(f.name), f.dtype).alias(f.name) for f in dtype.fields)
    return pl.when(value.is_not_null()).then(fields)


def holds_bytes(dtype: PolarsDataType) -> bool:
    if isinstance(dtype, pl.Struct):
        return any(holds_bytes(f.dtype) for f in dtype.fields)
    if isinstance(dtype, (pl.List, pl.Array)):
        return holds_bytes(dtype.inner)
    return dtype == pl.Binary


#: A character no model name has: a C0 or C1 control character (a NUL, an escape, a line break or tab within the
#: name), a line or paragraph separator, or an invisible formatting character (zero-width spaces, joiners and marks,
#: direction marks, overrides and isolates, a soft hyphen, a byte-order mark, tag characters). Such a name is damage
#: (a flipped byte in a parquet dictionary page decodes to one), a terminal escape sequence, which every table,
#: warning and log line that names the model would send to the user's terminal, or a name that shows as another's.
CONTROL_CHARACTER = r"[\x00-\x1f\x7f-\x9f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u2069\ufeff\U000e0000-\U000e007f]"


def control_names(batch: pl.DataFrame, column: str) -> list[str]:
    """The distinct model names of a column, as text and trimmed (:func:`parse_text`), that have a control
    character (few or none; a column of numbers has none, a nested one is no name)."""
    dtype = batch.schema[column]
    if not is_text_like(dtype):
        return []
    names = batch.select(pl.col(column).unique()).select(parse_text(column, dtype))
    return names.filter(pl.col(column).str.contains(CONTROL_CHARACTER))[column].to_list()


def is_text_like(dtype: PolarsDataType) -> bool:
    """Whether a type's values are read as text as they are: text, dictionary-encoded text (a parquet column
    written so, a pandas category), bytes (as some writers store text)."""
    return dtype in (pl.String, pl.Binary) or isinstance(dtype, (pl.Categorical, pl.Enum))


def parse_timestamp(col: str, dtype: pl.DataType, texts: bool = True) -> pl.Expr:
    """A timestamp as UTC: a datetime, unix seconds or milliseconds (a number, or number text), or ISO 8601
    text; null outside the years 1 to 9999 (see :data:`TIMESTAMP_RANGE`). ``texts=False``: the caller knows every
    value given is number text, as written, so the trimming and the seven date formats are skipped (they cost twice
    what the numbers do)."""
    if dtype == pl.Date or isinstance(dtype, pl.Datetime):
        # (out of range masked first: polars panics converting such a time)
        value = pl.when(within_years(pl.col(col), dtype)).then(pl.col(col))
        if not isinstance(dtype, pl.Datetime):  # a date: midnight UTC
            return value.cast(pl.Datetime("us")).dt.replace_time_zone("UTC")
        return value.dt.replace_time_zone(None).dt.replace_time_zone("UTC").cast(BATTLE_SCHEMA["timestamp"]) if dtype.time_zone is None else value.dt.convert_time_zone("UTC").cast(BATTLE_SCHEMA["timestamp"])
    if isinstance(dtype, pl.Duration) or dtype.is_nested():  # no time
        return pl.lit(None, BATTLE_SCHEMA["timestamp"])
    source = _utf8(pl.col(col)) if dtype == pl.Binary else pl.col(col)  # (text a writer stored as bytes)
    if dtype.is_numeric():
        seconds = source.cast(pl.Float64)
    elif not texts:
        seconds = source.cast(pl.Float64, strict=False)
    else:
        seconds = source.cast(pl.String).str.strip_chars().cast(pl.Float64, strict=False)
    micros = pl.when(seconds.abs() < 1e11).then(seconds * 1e6).otherwise(seconds * 1e3).round(0).cast(pl.Int64, strict=False)
    from_epoch = pl.when(micros.is_between(*TIMESTAMP_RANGE)).then(micros).cast(BATTLE_SCHEMA["timestamp"])
    if dtype.is_numeric() or not texts:
        return from_epoch
    text = pl.when(seconds.is_null()).then(source.cast(pl.String).str.strip_chars())  # a number is no date text: parsed once
    parsed = [text.str.to_datetime(format=f, strict=False, time_zone="UTC", time_unit="us") for f in (
        "%Y-%m-%dT%H:%M:%S%.f%#z", "%Y-%m-%d %H:%M:%S%.f%#z", "%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M:%S%.f",
        "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S", "%Y-%m-%d",
    )]
    time = pl.coalesce([from_epoch, *parsed])
    return pl.when(time.to_physical().is_between(*TIMESTAMP_RANGE)).then(time)  # (ISO text of the year 0 parses)


#: The timestamps taken, in microseconds from the epoch: 0001-01-01 to 9999-12-31 (UTC), the years ISO 8601 text
#: and Python's datetime hold; a time past them is damage or a wrong unit (and polars cannot convert some).
TIMESTAMP_RANGE = (-62_135_596_800_000_000, 253_402_300_799_999_999)


SeriesOrExpr = TypeVar("SeriesOrExpr", pl.Series, pl.Expr)


def within_years(value: SeriesOrExpr, dtype: pl.DataType) -> SeriesOrExpr:
    """Per value of a date or datetime type: whether it is a time within :data:`TIMESTAMP_RANGE` (null stays null)."""
    return value.to_physical().is_between(*physical_range(dtype))


def may_leave_years(dtype: PolarsDataType) -> bool:
    """Whether a type's values can be times outside :data:`TIMESTAMP_RANGE`: a date, or a datetime of micro- or
    milliseconds (64 bits of nanoseconds span the years 1677 to 2262)."""
    return dtype == pl.Date or isinstance(dtype, pl.Datetime) and dtype.time_unit != "ns"


def physical_range(dtype: pl.DataType) -> tuple[int, int]:
    """The stored numbers of a date or datetime type that are times within :data:`TIMESTAMP_RANGE` (whole units)."""
    if dtype == pl.Date:
        return -719_162, 2_932_896  # days from the epoch to 0001-01-01 and to 9999-12-31
    low, high = TIMESTAMP_RANGE
    unit = dtype.time_unit if isinstance(dtype, pl.Datetime) else "us"
    if unit == "ms":
        return -(-low // 1000), high // 1000
    per_micro = 1000 if unit == "ns" else 1
    return max(low * per_micro, -(2**63)), min(high * per_micro, 2**63 - 1)


#: The largest count read: a JSON or CSV number is read as a double, which holds every whole number up to here
#: exactly (and a typed column's larger values could not be told from their neighbours once read as one).
MAX_COUNT = 2**53 - 1
#: The largest turn number: the canonical ``turn`` is an Int32.
MAX_TURN = 2**31 - 1


def is_given(value: pl.Expr, dtype: PolarsDataType) -> pl.Expr:
    """Whether a value is there: not null and, for text, not blank (as an empty CSV cell is absent); bytes that are
    not UTF-8 are there (and no text)."""
    if dtype == pl.Binary:
        text = _utf8(value)
        return value.is_not_null() & (text.is_null() | (text.str.strip_chars() != ""))
    return as_text(value, dtype).str.strip_chars() != "" if is_text_like(dtype) else value.is_not_null()


def as_number(value: pl.Expr, dtype: PolarsDataType) -> pl.Expr:
    """A typed number or number text as a Float64; null for anything else (text that is no number, a boolean, a
    nested value)."""
    if dtype.is_numeric():
        return value.cast(pl.Float64, strict=False)
    if not is_text_like(dtype):  # a nested value, a boolean, a time or a duration, an extension type's value
        return pl.lit(None, dtype=pl.Float64)
    return as_text(value, dtype).str.strip_chars().cast(pl.Float64, strict=False)


def whole_number(value: pl.Expr, dtype: PolarsDataType, maximum: int) -> pl.Expr:
    """``value`` (text, or a typed number) as an Int64 when it is a whole number from 0 to ``maximum``; else
    null, for the caller to reject: a fraction, a negative or too large number, a boolean or other text is never
    rounded, clipped or read as absent."""
    if dtype.is_integer():  # every value whole: only the range to check (no round trip through floats)
        return pl.when(value.is_between(0, maximum)).then(value.cast(pl.Int64, strict=False))
    number = as_number(value, dtype)
    return pl.when((number == number.floor()) & number.is_between(0, maximum)).then(number).cast(pl.Int64, strict=False)


def non_negative(value: pl.Expr, dtype: PolarsDataType) -> pl.Expr:
    """``value`` (text, or a typed number) as a Float64 when it is a finite number of at least 0, else null."""
    number = as_number(value, dtype)
    return pl.when(number.is_finite() & (number >= 0)).then(number)


def parse_turn(col: str, dtype: pl.DataType) -> pl.Expr:
    return whole_number(pl.col(col), dtype, MAX_TURN).cast(pl.Int32)


def parse_count(col: str, dtype: pl.DataType) -> pl.Expr:
    return whole_number(pl.col(col), dtype, MAX_COUNT)


def parse_weight(col: str, dtype: pl.DataType) -> pl.Expr:
    """A vote's weight: a finite number >= 0 (null otherwise: a negative, NaN or infinite weight is no weight)."""
    return non_negative(pl.col(col), dtype)


def parse_boolean(col: str, dtype: pl.DataType) -> pl.Expr:
    if dtype == pl.Boolean:
        return pl.col(col)
    if not (dtype.is_numeric() or is_text_like(dtype)):
        return pl.lit(None, dtype=pl.Boolean)
    text = (as_text(pl.col(col), dtype) if is_text_like(dtype) else pl.col(col).cast(pl.String)).str.strip_chars().str.to_lowercase()
    return text.replace_strict({"true": True, "false": False, "1": True, "0": False, "1.0": True, "0.0": False, "yes": True, "no": False}, default=None, return_dtype=pl.Boolean)


#: What joins the texts of a message given in parts (``[{type, text}, ...]``), as one text: a part's first line starts
#: a line, as markdown reads it.
PART_SEPARATOR = "\n"


def typed_conversation(col: str, dtype: pl.DataType) -> pl.Expr | None:
    """A typed column (parquet; nested JSON) as conversations, when it is a list of messages whose role is a scalar
    and whose content is one, or a list of parts (LMArena's releases since 2025: ``[{type, text, image,
    mimeType}]``): the message's text is then its parts' texts, those given, joined by :data:`PART_SEPARATOR`, so
    that an image alone, or no part, is an empty text; None for any other shape (content a list of texts, say),
    whose values are no conversation. Bytes are read as UTF-8 text, and a conversation whose role, content or part
    texts are bytes that are not UTF-8 is none."""
    inner = dtype.inner if isinstance(dtype, (pl.List, pl.Array)) else None
    fields = {f.name: f.dtype for f in inner.fields} if isinstance(inner, pl.Struct) else {}
    if isinstance(inner, pl.Struct) and {"role", "content"} <= set(fields) and _casts_to_text(fields["role"]):
        text = _message_text(fields["content"])
        if text is None:
            return None
        messages = pl.col(col).arr.to_list() if isinstance(dtype, pl.Array) else pl.col(col)  # (a fixed-size list: as many messages in every row)
        if _read_bytes(fields["role"], fields["content"]):
            messages = messages.map_batches(_utf8_messages, return_dtype=pl.List(inner))
        return messages.list.eval(pl.struct(pl.element().struct.field("role").cast(pl.String), text.alias("content"))).cast(CONVERSATION)
    if isinstance(dtype, pl.List) and inner == pl.Null:  # only empty lists (or lists of nulls) were seen: an empty list is an empty conversation
        return pl.when(pl.col(col).list.len() == 0).then(pl.col(col).cast(CONVERSATION))
    return None


def _message_text(content: PolarsDataType) -> pl.Expr | None:
    """The text of a message (the element of a list of messages) whose content has type ``content``: a scalar as
    text, or a list of parts as :func:`typed_conversation` reads it; None for another type."""
    given = pl.element().struct.field("content")
    if _casts_to_text(content):
        return given.cast(pl.String)
    if isinstance(content, pl.Array):  # a fixed-size list: as many parts in every message
        given, content = given.arr.to_list(), pl.List(content.inner)
    part = content.inner if isinstance(content, pl.List) else None
    if not (part == pl.Null or isinstance(part, pl.Struct)):
        return None
    text = _part_text(part)
    if text is None:  # parts without texts (images, or no part at all in a batch): an empty text
        return pl.when(given.is_not_null()).then(pl.lit(""))
    if not _casts_to_text(text):
        return None
    return given.list.eval(pl.element().struct.field("text").cast(pl.String).drop_nulls()).list.join(PART_SEPARATOR)


def _part_text(part: PolarsDataType | None) -> PolarsDataType | None:
    """The type of the ``text`` of a message's parts of type ``part`` (None: they have none)."""
    return {f.name: f.dtype for f in part.fields}.get("text") if isinstance(part, pl.Struct) else None


def _read_bytes(role: PolarsDataType, content: PolarsDataType) -> bool:
    """Whether a message's role, content or part texts, as read, are bytes (to be checked for UTF-8)."""
    part = content.inner if isinstance(content, (pl.List, pl.Array)) else None
    return pl.Binary in (role, content, _part_text(part))


def _casts_to_text(dtype: PolarsDataType) -> bool:
    """Whether every value of a type is text as it is (bytes: UTF-8 text, see :func:`_utf8_messages`), or a number
    or a boolean (or null) that casts to text."""
    return is_text_like(dtype) or dtype.is_numeric() or dtype in (pl.Boolean, pl.Null)


def _utf8_messages(conversations: pl.Series) -> pl.Series:
    """Conversations whose messages hold bytes where a text is read (:func:`_read_bytes`), as they are where every
    such value is UTF-8, else null (the caller rejects them as no conversation); checked one by one only in a batch
    that has such bytes. Other bytes (an image's, say) are not read, so not checked."""
    messages = conversations.explode()
    read = [messages.struct.field("role"), messages.struct.field("content")]
    if isinstance(read[1].dtype, (pl.List, pl.Array)):  # parts: their texts, if they have any
        parts = read.pop()
        parts = (parts.arr.to_list() if isinstance(parts.dtype, pl.Array) else parts).explode()
        read += [parts.struct.field("text")] if _part_text(parts.dtype) is not None else []
    try:
        for values in read:
            values.cast(pl.String)
        return conversations
    except pl.exceptions.ComputeError:
        def utf8(value: object) -> bool:
            return not isinstance(value, bytes) or _decoded(value) is not None

        def readable(message: dict | None) -> bool:
            content = message["content"] if message is not None else None
            texts = [part.get("text") for part in content if part is not None] if isinstance(content, list) else [content]
            return message is None or all(utf8(value) for value in (message["role"], *texts))

        # (built again: a null row keeps its values below it, which a cast of every message would still meet)
        rows = conversations.to_list()
        return pl.Series(conversations.name, [row if row is None or all(map(readable, row)) else None for row in rows], dtype=conversations.dtype)


#: Conversations whose messages give their content in parts, as their JSON text is decoded (the other keys of a
#: part, ``type``, ``image``, ..., are not read).
PARTS_CONVERSATION = pl.List(pl.Struct({"role": pl.String(), "content": pl.List(pl.Struct({"text": pl.String()}))}))


def decode_conversations(series: pl.Series) -> pl.Series:
    """JSON text of conversations as :data:`~arena_cli.schema.CONVERSATION`, read as :func:`typed_conversation`
    reads them: each message's content a text, or a list of parts (objects); null where neither. A batch is decoded
    whole as either shape; where neither fits, row by row, and a conversation whose messages differ in shape
    (parts for the user, a text for the answer, as chat APIs log them) message by message (:func:`_mixed_messages`)."""
    series = _unblank(series)
    for shape in (CONVERSATION, PARTS_CONVERSATION):  # (a batch of one shape: one decode)
        whole = _decoded_whole(series, shape)
        if whole is not None:
            return whole if shape is CONVERSATION else _texts_of_parts(whole).alias(series.name)
    decoded = _decoded_rows(series, CONVERSATION)
    others = decoded.is_null() & series.is_not_null()
    if others.any():
        parts = _texts_of_parts(_decoded_rows(series.to_frame().select(pl.when(others).then(pl.first())).to_series(), PARTS_CONVERSATION))
        decoded = pl.select(pl.coalesce(decoded, parts)).to_series()
        mixed = decoded.is_null() & others
        if mixed.any():
            rows = [_mixed_messages(text) if todo else None for text, todo in zip(series.to_list(), mixed.to_list())]
            decoded = pl.select(pl.coalesce(decoded, pl.Series(rows, dtype=CONVERSATION))).to_series()
    return decoded.alias(series.name)


def _texts_of_parts(conversations: pl.Series) -> pl.Series:
    return conversations.to_frame("parts").select(typed_conversation("parts", PARTS_CONVERSATION)).to_series()


def _mixed_messages(text: str) -> list[dict[str, str | None]] | None:
    """A conversation's JSON text whose messages differ in shape, read message by message as
    :func:`typed_conversation` reads each; None unless every role and text is a string (or null)."""
    import json

    try:
        messages = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(messages, list):
        return None
    read: list[dict[str, str | None]] = []
    for message in messages:
        if not isinstance(message, dict) or not isinstance(message.get("role"), (str, type(None))):
            return None
        content = message.get("content")
        if isinstance(content, list):
            if not all(isinstance(part, (dict, type(None))) and isinstance((part or {}).get("text"), (str, type(None))) for part in content):
                return None
            content = PART_SEPARATOR.join(part["text"] for part in content if part is not None and part.get("text") is not None)
        elif not isinstance(content, (str, type(None))):
            return None
        read.append({"role": message.get("role"), "content": content})
    return read


def decode_json(series: pl.Series, dtype: pl.DataType) -> pl.Series:
    """Decode JSON text to ``dtype``; rows that do not fit become null (found one by one only on failure).

    Blank text is not JSON: it becomes null first (polars decodes an all-blank column to zero rows).
    """
    series = _unblank(series)
    whole = _decoded_whole(series, dtype)
    return whole if whole is not None else _decoded_rows(series, dtype)


def _unblank(series: pl.Series) -> pl.Series:
    return series.to_frame().select(pl.when(pl.first().str.strip_chars() != "").then(pl.first())).to_series().alias(series.name)


def _decoded_whole(series: pl.Series, dtype: pl.DataType) -> pl.Series | None:
    """JSON text (none blank) decoded to ``dtype`` in one pass; None when some row does not fit."""
    try:
        return series.str.json_decode(dtype)
    except Exception:
        return None


def _decoded_rows(series: pl.Series, dtype: pl.DataType) -> pl.Series:
    """JSON text (none blank) decoded to ``dtype``, a row that does not fit null (each tried on its own)."""
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


def meta_dtype(leaf: pl.DataType) -> pl.Struct:
    """LMArena's ``conv_metadata`` as a struct of the counts validation reads (:func:`meta_paths`), each of type
    ``leaf``."""
    fields: dict[str, dict[str, pl.DataType] | pl.DataType] = {}
    for side in ("a", "b"):
        for path in meta_paths(side).values():
            if len(path) == 1:
                fields[path[0]] = leaf
            else:
                group = fields.setdefault(path[0], {})
                assert isinstance(group, dict)
                group[path[1]] = leaf
    return pl.Struct({name: pl.Struct(dtype) if isinstance(dtype, dict) else dtype for name, dtype in fields.items()})


def meta_text_dtype() -> pl.Struct:
    """``conv_metadata`` decoded from JSON text: every count as text, parsed and checked as a parquet count is."""
    return meta_dtype(pl.String())


def field_path(expr: pl.Expr, dtype: PolarsDataType, path: tuple[str, ...]) -> tuple[pl.Expr, PolarsDataType] | None:
    """The value at ``path`` in a struct column, with its type; None where the struct has no such field."""
    for name in path:
        if not isinstance(dtype, pl.Struct):
            return None
        fields = {f.name: f.dtype for f in dtype.fields}
        if name not in fields:
            return None
        expr, dtype = expr.struct.field(name), fields[name]
    return expr, dtype


def by_distinct(batch: pl.DataFrame, column: str, expr: pl.Expr) -> pl.Expr:
    """``expr``, a function of one text ``column``, evaluated once per distinct value and looked up per row; or
    the column itself when ``expr`` is text that leaves every value as it is. A log has a handful of model names,
    winner labels, turn numbers and yes/no flags: each is trimmed and parsed once, not once per vote."""
    if batch.schema[column] != pl.String:
        return expr
    distinct = changed_values(batch.select(pl.col(column).unique()), column, expr)
    if distinct is None:
        return pl.col(column)
    return pl.col(column).replace_strict(distinct[column], distinct["__value"], default=None, return_dtype=distinct.schema["__value"])


def changed_values(distinct: pl.DataFrame, column: str, expr: pl.Expr) -> pl.DataFrame | None:
    """The distinct values of ``column`` with ``expr`` of each (``__value``); None when it leaves all as they are
    (values of another type are never left as they are)."""
    distinct = distinct.with_columns(expr.alias("__value"))
    same_type = distinct.schema["__value"] == distinct.schema[column]
    return None if same_type and distinct.select(pl.col(column).eq_missing(pl.col("__value")).all()).item() else distinct

