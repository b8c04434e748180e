"""Dialects: which source column feeds each canonical field (:class:`Plan`), for LMArena-style logs, Kaggle's
arena-human-preference files and ``--map``; and the checks of sources and options done before any row is read.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import polars as pl

from arena_cli.errors import InputError
from arena_cli.io.fields import decode_json
from arena_cli.io.files import check_file, container_of, sniff_container
from arena_cli.io.options import CONTAINERS, FORMATS, JUDGE_FORMATS, InputOptions
from arena_cli.io.readers import INTERNAL
from arena_cli.schema import CONVERSATION, META_COLUMNS, OUTCOMES, WINNER_LABELS

#: Fields a user can map with ``--map FIELD=COLUMN``.
MAPPABLE = (
    "battle_id", "model_a", "model_b", "outcome", "weight", "timestamp", "judge", "question_id", "language", "turn",
    "anony", "category", "conversation_a", "conversation_b", "conv_metadata",
)

#: Where the LMArena / FastChat / arena-human-preference shapes keep each field (first present wins).
ARENA_COLUMNS: dict[str, tuple[str, ...]] = {
    "battle_id": ("battle_id", "id", "question_id"),
    "model_a": ("model_a",),
    "model_b": ("model_b",),
    "outcome": ("winner", "outcome"),
    "weight": ("weight",),
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
    present = [c for c in columns if c not in INTERNAL]
    if previous is not None:
        present = list(dict.fromkeys([*previous.columns.values(), *previous.extras, *present]))
        kaggle = previous.dialect == "kaggle"
    else:
        kaggle = options.fmt == "kaggle" or (not _mapped_columns(options) and {"winner_model_a", "winner_model_b"} <= set(present))
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
        if _mapped_columns(options):
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


def _mapped_columns(options: InputOptions) -> dict[str, str]:
    """The ``--map`` entries that name a column (``--map battle_id=`` names none: it only drops the ids)."""
    return {field: column for field, column in options.mapping.items() if column}


def winner_labels(options: InputOptions) -> dict[str, str]:
    labels = dict(WINNER_LABELS)
    for label, outcome in options.winner_map.items():
        if outcome not in OUTCOMES:
            raise InputError(f"--winner-map {label}={outcome}: the outcome must be one of {', '.join(OUTCOMES)}")
        labels[label.strip().lower()] = outcome
    return labels


def kaggle_outcome(frame: pl.DataFrame) -> pl.Expr:
    """Kaggle's one-hot winner columns; anything but every flag 0 or 1 and exactly one of them 1 is an unknown
    winner (a blank, a word or a -1 is no flag: never read as 0, which would make a tie of a row of them)."""
    flags = [
        pl.col(c).cast(pl.String).str.strip_chars().cast(pl.Float64, strict=False) if c in frame.columns else pl.lit(0.0)
        for c in ("winner_model_a", "winner_model_b", "winner_tie")
    ]
    valid = pl.all_horizontal([flag.is_in([0.0, 1.0]) for flag in flags]).fill_null(False)
    ones = pl.sum_horizontal([(flag == 1.0).cast(pl.Int32) for flag in flags])
    return (
        pl.when(~valid | (ones != 1)).then(None)
        .when(flags[0] == 1.0).then(pl.lit("model_a"))
        .when(flags[1] == 1.0).then(pl.lit("model_b"))
        .otherwise(pl.lit("tie"))
    )


def kaggle_conversation(frame: pl.DataFrame, response: str) -> tuple[pl.Series, pl.Series]:
    """Kaggle keeps prompts and responses as JSON lists of turns: interleave them into user/assistant turns.
    Also returns which rows have a prompt or response that is present but not such a list."""
    turns = pl.List(pl.String)
    none = pl.Series([None] * frame.height, dtype=turns)
    prompts = decode_json(frame["prompt"].cast(pl.String), turns) if "prompt" in frame.columns else none
    answers = decode_json(frame[response].cast(pl.String), turns) if response in frame.columns else none
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


def container_for(path: Path, options: InputOptions) -> str:
    """The container to read ``path`` as: ``--input-format``'s, else the one its name says, else the one its
    content shows (standard input, an unknown extension)."""
    if options.fmt not in FORMATS:
        raise InputError(f"--input-format {options.fmt}: unknown format (one of: {', '.join(FORMATS)})")
    if options.fmt not in CONTAINERS:
        return container_of(path) or sniff_container(path)
    return options.fmt


def check_sources(paths: list[Path], options: InputOptions) -> dict[str, str]:
    """Fail fast, before any lock is taken or row read: every source exists and has a known format, and
    ``--map``/``--winner-map`` are well formed. Returns the winner labels to use."""
    from arena_cli.io.judged import source_files

    labels = winner_labels(options)
    for mapped in options.mapping:
        if mapped not in MAPPABLE:
            raise InputError(f"--map {mapped}=...: unknown field (one of: {', '.join(MAPPABLE)})")
    if options.mapping and options.fmt in JUDGE_FORMATS:
        raise InputError(f"--map does not apply to --input-format {options.fmt}: its records have fields of their own")
    for path in source_files(paths, options):
        check_file(path)
        container_for(Path(path), options)
    return labels

