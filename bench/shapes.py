"""The benches' vote logs: the same simulated votes (``arena_cli.simulate``) in the shapes users' files have.

Shapes (``SHAPES``), by the texts they carry; files of one kind hold the same votes (same seed, same parts):

* no texts: ``nested-parquet`` (the arena-human-preference-140k release: ``id, model_a, model_b, winner,
  evaluation_session_id, evaluation_order, conv_metadata, category_tag, language, is_code, timestamp``, with
  ``conv_metadata`` nested exactly as released: ``sum_assistant_a_tokens``, ``header_count_a{h1..h6}``,
  ``list_count_a{ordered,unordered}``, ``bold_count_a{**,__}``, ``context_a_tokens``, the same for b,
  ``sum_user_tokens``, ``turns``); ``fastchat-jsonl`` and ``fastchat-json`` (FastChat's ``clean_battle`` dumps,
  JSONL and a JSON array: ``question_id, model_a, model_b, winner`` with ``tie (bothbad)``, ``judge, turn, anony,
  language, tstamp``, then the fields its later steps add: ``conv_metadata, category_tag, is_code, dedup_tag``);
  ``flat-parquet`` (the counts as flat columns ``tokens_a, h1_a, ..., bold_underscore_b``);
* short texts (answers of a few dozen tokens): ``fastchat-short-jsonl``, the FastChat dump with its
  ``conversation_a/b``;
* realistic texts (answers of a few hundred to a few thousand tokens): ``texts-jsonl`` and ``texts-parquet``
  (FastChat's conversation release: ``conversation_a/b`` as ``list<struct{role, content}>``), and
  ``texts-meta-jsonl``, ``texts-meta-parquet`` with ``conv_metadata`` too.

Parquet shapes are written by polars, except those named ``-hub`` and ``-pyarrow``, which hold the same rows as the
shape without the suffix: ``-hub`` written as the Hugging Face hub's releases are (the ``datasets`` library:
pyarrow's writer, snappy, dictionary pages for nested leaves too, row groups of 1,000 rows), whose footers are large
and whose row groups are many; ``-pyarrow`` as pandas' ``to_parquet`` and pyarrow's ``write_table`` write with their
defaults (row groups of 1,048,576 rows: a file of up to a million votes is one row group). Both need a python with
pyarrow (:data:`WRITERS`).

Each kind also has a flat file (``flat-parquet``, ``flat-short-parquet``, ``flat-long-parquet``): the counts and
outcomes the benches' reference fits read. Files are generated part by part (memory bounded by one part, so
100M votes fit), written under a temporary name and renamed when whole, and cached in the work directory under
a name that holds the shape, size, models, seed and generator versions.
"""

from __future__ import annotations

import io
import subprocess
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's arena_cli, not an installed copy
from arena_cli.simulate import GENERATOR_VERSION, Simulation, simulate_in_parts

#: Bumped whenever a shape's bytes change for the same simulated votes.
SHAPES_VERSION = 1
DAY = 86_400
#: The simulator's period; part k of a log is shifted k periods later, so the parts follow each other.
PERIOD_DAYS = 28

#: The texts of each kind of vote log: the simulator's options, and the votes simulated per part.
KINDS: dict[str, tuple[dict, int]] = {
    "none": ({"texts": False}, 1_000_000),
    "short": ({"texts": True, "verbosity": 15.0}, 200_000),
    "long": ({"texts": True, "verbosity": 800.0}, 20_000),
}


@dataclass(frozen=True)
class Shape:
    """A file layout of one kind of votes: ``layout`` turns a simulated part (and its index) into the file's rows;
    ``counts`` says where the file keeps the style counts: ``meta`` (nested conv_metadata), ``flat`` or None."""

    name: str
    kind: str
    container: str  # parquet | jsonl | json
    layout: Callable[[Simulation, int], pl.DataFrame]
    counts: str | None
    texts: bool
    writer: str = "polars"  # polars, or a pyarrow writer of WRITERS (hub, pyarrow)
    ids: str = "question_id"  # the column of battle ids (a fit reads them to drop duplicate votes)

    def path(self, workdir: Path, n: int, n_models: int, seed: int) -> Path:
        return Path(workdir) / f"{self.name}-{n}-{n_models}-s{seed}-g{GENERATOR_VERSION}.{SHAPES_VERSION}.{self.container}"


# ------------------------------------------------------------------------------------------------------ layouts


def _shifted(sim: Simulation, k: int) -> pl.DataFrame:
    return sim.battles.with_columns(pl.col("tstamp") + k * PERIOD_DAYS * DAY)


def _user_tokens() -> pl.Expr:
    """A prompt length for the metadata's user/context token fields (the simulator does not count prompts)."""
    return (pl.col("turn") * 18 + pl.col("tstamp").cast(pl.Int64) % 37).cast(pl.Int32)


def _release_metadata() -> pl.Expr:
    """``conv_metadata`` with the fields, order and types of the arena-human-preference-140k release."""
    meta = pl.col("conv_metadata").struct.field
    fields: list[pl.Expr] = []
    for side in "ab":
        tokens = meta(f"sum_assistant_{side}_tokens").cast(pl.Int32)
        fields += [
            tokens.alias(f"sum_assistant_{side}_tokens"),
            meta(f"header_count_{side}"), meta(f"list_count_{side}"), meta(f"bold_count_{side}"),
            (_user_tokens() + tokens).alias(f"context_{side}_tokens"),
        ]
    return pl.struct(*fields, _user_tokens().alias("sum_user_tokens"), pl.col("turn").cast(pl.Int32).alias("turns")).alias("conv_metadata")


def _category_tag() -> pl.Expr:
    """LMArena's ``category_tag`` struct, filled from the simulated category."""
    category = pl.col("category")
    technical = category.is_in(["coding", "math"])
    return pl.struct(
        pl.struct((category == "creative_writing").alias("creative_writing"),
                  pl.when(category == "creative_writing").then(pl.lit("yes")).otherwise(pl.lit("no")).alias("score")).alias("creative_writing_v0.1"),
        pl.struct(technical.alias("complexity"), (category == "creative_writing").alias("creativity"),
                  (category != "creative_writing").alias("domain_knowledge"), technical.alias("problem_solving"),
                  category.is_in(["general", "advice"]).alias("real_world"), (pl.col("turn") == 1).alias("specificity"),
                  technical.alias("technical_accuracy")).alias("criteria_v0.1"),
        pl.struct((category == "advice").alias("if"), pl.col("turn").cast(pl.Int32).alias("score")).alias("if_v0.1"),
        pl.struct((category == "math").alias("math")).alias("math_v0.1"),
    ).alias("category_tag")


def release(sim: Simulation, k: int) -> pl.DataFrame:
    """The arena-human-preference-140k release (without its texts)."""
    return _shifted(sim, k).select(
        pl.col("question_id").alias("id"), "model_a", "model_b", "winner",
        pl.concat_str(pl.lit("session-"), pl.col("judge").str.strip_prefix("arena_user_")).alias("evaluation_session_id"),
        pl.lit(1, dtype=pl.Int32).alias("evaluation_order"),
        _release_metadata(), _category_tag(), "language", (pl.col("category") == "coding").alias("is_code"),
        (pl.col("tstamp") * 1e9).cast(pl.Int64).cast(pl.Datetime("ns")).alias("timestamp"),
    )


def _message_in_parts(message: pl.Expr, tokens: bool = False) -> pl.Expr:
    """A ``{role, content}`` message as the 140k release gives it: its content a list of parts
    ``{type, text, image, mimeType}`` (here one text part); with ``tokens``, its ``num_tokens`` (a word count)."""
    content = message.struct.field("content")
    part = pl.struct(pl.lit("text").alias("type"), content.alias("text"), pl.lit(None, pl.String).alias("image"), pl.lit(None, pl.String).alias("mimeType"))
    extra = [content.str.count_matches(r"\S+").cast(pl.Int32).alias("num_tokens")] if tokens else []
    return pl.struct(message.struct.field("role"), pl.concat_list(part).alias("content"), *extra)


def _in_parts(column: str, tokens: bool = False) -> pl.Expr:
    """Conversations as the 140k release gives them (:func:`_message_in_parts`; conversation_b with ``tokens``)."""
    return pl.col(column).list.eval(_message_in_parts(pl.element(), tokens)).alias(column)


def release_texts(sim: Simulation, k: int) -> pl.DataFrame:
    """The arena-human-preference-140k release with its texts: conversations in parts (:func:`_in_parts`), and
    ``full_conversation``, the turns of both sides again (``{user, model_side_a, model_side_b}``, each message in
    parts; here the first turn)."""
    battles = _shifted(sim, k)
    sides = {"user": ("a", 0), "model_side_a": ("a", 1), "model_side_b": ("b", 1)}
    turn = pl.struct(pl.col(f"conversation_{s}").list.get(i, null_on_oob=True).alias(name) for name, (s, i) in sides.items())
    in_parts = battles.select(
        _in_parts("conversation_a"), _in_parts("conversation_b", tokens=True),
        pl.concat_list(turn).alias("full_conversation").list.eval(pl.struct(_message_in_parts(pl.element().struct.field(name)).alias(name) for name in sides)),
    )
    return pl.concat([release(sim, k), in_parts], how="horizontal").select(
        "id", "model_a", "model_b", "winner", "evaluation_session_id", "evaluation_order", "conversation_a", "conversation_b",
        "full_conversation", "conv_metadata", "category_tag", "language", "is_code", "timestamp",
    )


def fastchat(sim: Simulation, k: int) -> pl.DataFrame:
    """FastChat's ``clean_battle`` dump (with conversations when simulated with texts) and the fields its
    later steps add."""
    battles = _shifted(sim, k)
    rng = np.random.default_rng(k)
    conversations = [c for c in ("conversation_a", "conversation_b") if c in battles.columns]
    return battles.select(
        "question_id", "model_a", "model_b", pl.col("winner").replace("both_bad", "tie (bothbad)"), "judge",
        *conversations, "turn", "anony", "language", "tstamp", _release_metadata(), _category_tag(),
        (pl.col("category") == "coding").alias("is_code"),
        pl.struct(pl.Series("high_freq", rng.random(battles.height) < 0.05),
                  pl.Series("sampled", rng.random(battles.height) < 0.95)).alias("dedup_tag"),
    )


def conversations(meta: bool) -> Callable[[Simulation, int], pl.DataFrame]:
    """FastChat's conversation release (``list<struct{role, content}>`` per side), with or without conv_metadata."""
    def layout(sim: Simulation, k: int) -> pl.DataFrame:
        return _shifted(sim, k).select(
            "question_id", "model_a", "model_b", "winner", "judge", "conversation_a", "conversation_b", "turn",
            "anony", "language", "tstamp", *([_release_metadata()] if meta else []),
        )
    return layout


def flat(sim: Simulation, k: int) -> pl.DataFrame:
    """Flat count columns ``<name>_a``/``<name>_b`` (the simulator's feature frame)."""
    return sim.features()


SHAPES: dict[str, Shape] = {s.name: s for s in (
    Shape("nested-parquet", "none", "parquet", release, "meta", False, ids="id"),
    Shape("nested-parquet-hub", "none", "parquet", release, "meta", False, writer="hub", ids="id"),
    Shape("nested-parquet-pyarrow", "none", "parquet", release, "meta", False, writer="pyarrow", ids="id"),
    Shape("fastchat-jsonl", "none", "jsonl", fastchat, "meta", False),
    Shape("fastchat-json", "none", "json", fastchat, "meta", False),
    Shape("flat-parquet", "none", "parquet", flat, "flat", False, ids="battle_id"),
    Shape("flat-parquet-hub", "none", "parquet", flat, "flat", False, writer="hub", ids="battle_id"),
    Shape("flat-parquet-pyarrow", "none", "parquet", flat, "flat", False, writer="pyarrow", ids="battle_id"),
    Shape("fastchat-short-jsonl", "short", "jsonl", fastchat, "meta", True),
    Shape("texts-jsonl", "long", "jsonl", conversations(meta=False), None, True),
    Shape("texts-meta-jsonl", "long", "jsonl", conversations(meta=True), "meta", True),
    Shape("texts-parquet", "long", "parquet", conversations(meta=False), None, True),
    Shape("texts-meta-parquet", "long", "parquet", conversations(meta=True), "meta", True),
    Shape("texts-parquet-hub", "long", "parquet", conversations(meta=False), None, True, writer="hub"),
    Shape("release-texts-parquet-hub", "long", "parquet", release_texts, "meta", True, writer="hub", ids="id"),
    Shape("release-texts-jsonl", "long", "jsonl", release_texts, "meta", True, ids="id"),
    Shape("flat-short-parquet", "short", "parquet", flat, "flat", False, ids="battle_id"),
    Shape("flat-long-parquet", "long", "parquet", flat, "flat", False, ids="battle_id"),
)}
#: The flat file of each kind: the counts and outcomes a reference fit reads.
REFERENCE = {s.kind: s for s in SHAPES.values() if s.layout is flat and s.writer == "polars"}
#: The shapes a bench runs by default (the reference files of the text kinds aside).
DEFAULT_SHAPES = tuple(name for name, s in SHAPES.items() if s.layout is not flat or s.kind == "none")


# ------------------------------------------------------------------------------------------------------ writing


#: Parquet writers other than polars, each run as ``python -c WRITER SOURCE TARGET`` by a python with pyarrow,
#: streaming (memory bounded by one row group): ``hub``, the ``datasets`` library's (``Dataset.to_parquet``,
#: ``push_to_hub``): pyarrow's writer with its defaults and row groups of
#: ``datasets.config.DEFAULT_MAX_BATCH_SIZE`` (1,000) rows; ``pyarrow``, pyarrow's defaults (pandas' ``to_parquet``,
#: ``pyarrow.parquet.write_table``): row groups of 1,048,576 rows.
WRITERS = {writer: f"""
import sys
import pyarrow as pa
import pyarrow.parquet as pq
source = pq.ParquetFile(sys.argv[1])
with pq.ParquetWriter(sys.argv[2], source.schema_arrow) as writer:
    for batch in source.iter_batches(batch_size={rows}):
        writer.write_table(pa.Table.from_batches([batch]), row_group_size={rows})
""" for writer, rows in (("hub", 1000), ("pyarrow", 1 << 20))}


#: The benches' baselines virtualenv (bench/fit.py), which has pyarrow.
BASELINES_PYTHON = "/tmp/benchvenv/bin/python"


class _Sink:
    """One file written part by part under a temporary name, renamed when whole; ``rewrite``: a python with pyarrow
    and the writer of :data:`WRITERS` it rewrites the file with."""

    def __init__(self, path: Path, container: str, rewrite: tuple[str, str] | None = None):
        self.path, self.container, self.rewrite = path, container, rewrite
        self.tmp = path.with_name(path.name + ".partial")
        self.parts: list[Path] = []  # parquet: parts first, joined by one streaming pass at the end
        self.handle = open(self.tmp, "wb")
        if container == "json":
            self.handle.write(b"[")

    def add(self, frame: pl.DataFrame) -> None:
        if self.container == "parquet":
            self.parts.append(self.path.with_name(f"{self.path.name}.part{len(self.parts)}"))
            frame.write_parquet(self.parts[-1])
        elif self.container == "jsonl":
            frame.write_ndjson(self.handle)
        else:  # JSON text escapes newlines, so a raw newline ends a record
            buffer = io.BytesIO()
            frame.write_ndjson(buffer)
            if self.handle.tell() > 1:
                self.handle.write(b",\n")
            self.handle.write(buffer.getvalue().rstrip(b"\n").replace(b"\n", b",\n"))

    def close(self) -> None:
        if self.container == "json":
            self.handle.write(b"]\n")
        self.handle.close()
        if self.container == "parquet":
            pl.scan_parquet(self.parts).sink_parquet(self.tmp)
            for part in self.parts:
                part.unlink()
        if self.rewrite is not None:
            polars_written = self.tmp.with_name(self.tmp.name + ".polars")
            self.tmp.rename(polars_written)
            python, writer = self.rewrite
            subprocess.run([python, "-c", WRITERS[writer], str(polars_written), str(self.tmp)], check=True)
            polars_written.unlink()
        self.tmp.rename(self.path)


def default_seed(n: int, n_models: int) -> int:
    return n + n_models


def ensure(names: Iterable[str], n: int, n_models: int, workdir: Path, seed: int | None = None,
           log: Callable[[str], None] = print, pyarrow_python: str = BASELINES_PYTHON) -> dict[str, Path]:
    """The files of the shapes ``names`` (and the reference flat file of each kind), ``n`` votes among
    ``n_models`` models, generated where not cached: one simulation pass per kind writes all its missing files.
    ``pyarrow_python``: a python with pyarrow, for the shapes written by pyarrow's writers (:data:`WRITERS`)."""
    seed = default_seed(n, n_models) if seed is None else seed
    shapes = [SHAPES[name] for name in dict.fromkeys(names)]
    shapes += [REFERENCE[kind] for kind in dict.fromkeys(s.kind for s in shapes) if REFERENCE[kind] not in shapes]
    paths = {s.name: s.path(workdir, n, n_models, seed) for s in shapes}
    for kind, (options, part_rows) in KINDS.items():
        missing = [s for s in shapes if s.kind == kind and not paths[s.name].exists()]
        if not missing:
            continue
        log(f"generating {', '.join(s.name for s in missing)}: {n:,} votes x {n_models} models ...")
        sinks = [(_Sink(paths[s.name], s.container, (pyarrow_python, s.writer) if s.writer != "polars" else None), s) for s in missing]
        for k, sim in enumerate(simulate_in_parts(n, n_models, seed, part_battles=part_rows, **options)):
            for sink, shape in sinks:
                sink.add(shape.layout(sim, k))
        for sink, _ in sinks:
            sink.close()
    return paths


def reference_path(shape: str, n: int, n_models: int, workdir: Path, seed: int | None = None) -> Path:
    seed = default_seed(n, n_models) if seed is None else seed
    return REFERENCE[SHAPES[shape].kind].path(workdir, n, n_models, seed)


def parse_names(text: str, known: Sequence[str] = tuple(SHAPES)) -> list[str]:
    """A comma list of shape names (``all``: the default shapes)."""
    names = list(DEFAULT_SHAPES) if text == "all" else [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in known]
    if unknown:
        raise SystemExit(f"unknown shape(s) {', '.join(unknown)}; shapes: {', '.join(known)}")
    return names
