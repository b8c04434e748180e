"""Logs of LLM judges, read in their own shapes: arena-hard-auto's judgment files and AlpacaEval's annotations.

A judge's record is not one vote: an arena-hard-auto line holds two games (the model's answer and the
baseline's, shown in both orders), a fractional AlpacaEval preference is two weighted votes. Each batch of
records becomes batches of votes in the shape of an LMArena log (``battle_id, model_a, model_b, winner, weight,
judge, question_id, category`` and the rest), at most one vote per record in a batch, so that the arena dialect
validates them as any log's rows; what cannot be a vote is quarantined here, once per record and reason.

The canonical ``model_a`` is whoever the judge was shown first in that game, so position bias stays visible.
Vote ids are digests of what identifies a vote (never the prompt alone), so reading a log again adds nothing.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from arena_cli.errors import InputError
from arena_cli.io.dialects import ARENA_COLUMNS
from arena_cli.io.fields import json_text, not_text, parse_text
from arena_cli.io.files import opened
from arena_cli.io.options import DEFAULT_STRONG_WEIGHT, JUDGE_FORMATS, InputOptions
from arena_cli.io.readers import INTERNAL, NESTED, RAW, ROW, RawBatch
from arena_cli.schema import CONVERSATION, META_COUNTS, QUARANTINE_SCHEMA, QuarantineReason

ARENA_HARD, ALPACA_EVAL = JUDGE_FORMATS

#: arena-hard-auto's verdict labels (the judge's ``[[A>B]]``), read from position A: who wins, and whether strongly
#: (its show_result.py counts a strong verdict ``weight`` times, a slight one once).
VERDICTS: dict[str, tuple[str, bool]] = {
    "A>>B": ("model_a", True), "A>B": ("model_a", False), "A=B": ("tie", False), "A<B": ("model_b", False), "A<<B": ("model_b", True),
    "B>>A": ("model_b", True), "B>A": ("model_b", False), "B=A": ("tie", False), "B<A": ("model_a", False), "B<<A": ("model_a", True),
}
#: The baseline arena-hard-auto judges each category against (its utils/judge_utils.py ``JUDGE_SETTINGS``), for
#: lines that name none.
CATEGORY_BASELINES: dict[str, str] = {
    "hard_prompt": "o3-mini-2025-01-31", "coding": "o3-mini-2025-01-31", "math": "o3-mini-2025-01-31",
    "creative_writing": "gemini-2.0-flash-001", "arena-hard-v0.1": "gpt-4-0314",
}
#: The baseline of lines without a category: arena-hard-auto v0.1's judgments before v2.0 named neither.
V01_BASELINE = "gpt-4-0314"
#: A record's fields that become the vote's; the others are kept as extra columns.
ARENA_HARD_FIELDS = ("uid", "question_id", "category", "judge", "model", "baseline", "games")
ALPACA_EVAL_FIELDS = ("instruction", "output_1", "generator_1", "output_2", "generator_2", "annotator", "dataset")
#: AlpacaEval's preference for a draw besides 1.5 (older annotators wrote 0).
ALPACA_DRAW = 0.0
#: A reason a record (or one of its games) cannot be a vote: (reason, condition on the record, detail).
Problem = tuple[QuarantineReason, pl.Expr, pl.Expr]
#: Names the arena dialect reads as canonical fields: a record's own field of such a name is kept as ``extra_<name>``.
_CANONICAL_NAMES = frozenset(name for names in ARENA_COLUMNS.values() for name in names)


# ------------------------------------------------------------------------------------------- sources


def source_files(paths: Sequence[str | Path], options: InputOptions) -> list[Path]:
    """The files to read: a directory given with a judge format stands for every log of that format under it
    (arena-hard-auto: the ``*.jsonl`` of its ``model_judgment`` folders, or of the directory itself; AlpacaEval:
    every ``annotations.json``), in name order."""
    files: list[Path] = []
    for given in paths:
        path = Path(given)
        if options.fmt not in JUDGE_FORMATS or not path.is_dir():
            files.append(path)
            continue
        found = _logs_under(path, options.fmt)
        if not found:
            wanted = "no judgment files (*.jsonl)" if options.fmt == ARENA_HARD else "no annotations.json"
            raise InputError(f"{path}: {wanted} under this directory")
        files.extend(found)
    return files


def _logs_under(directory: Path, fmt: str) -> list[Path]:
    if fmt == ALPACA_EVAL:
        return sorted(f for f in directory.rglob("annotations.json") if f.is_file())
    roots = [d for d in directory.rglob("model_judgment") if d.is_dir()] or [directory]
    return sorted({f for root in roots for f in root.rglob("*.jsonl") if f.is_file()})


def judge_format(columns: Sequence[str], options: InputOptions) -> str | None:
    """The judge format of a source: the one ``--input-format`` names, else the one its fields show (as a
    Kaggle file is found by its columns); None for any other log, or a mapped one (``--map`` reads the arena
    dialect)."""
    if options.fmt in JUDGE_FORMATS:
        return options.fmt
    present = set(columns)
    if options.mapping or "model_a" in present:
        return None
    if {"games", "model"} <= present and present & {"uid", "question_id"}:
        return ARENA_HARD
    if {"generator_1", "generator_2", "preference"} <= present:
        return ALPACA_EVAL
    return None


class JudgeLog:
    """One source's batches as votes when it is a judge's log; other sources pass unchanged. The source's
    first batch with rows decides, and the options that only arena-hard-auto's judgments take are refused
    for any other source."""

    def __init__(self, path: Path, options: InputOptions):
        self.path, self.options = path, options
        self.kind: str | None = None
        self.decided = False

    def votes(self, raw: RawBatch) -> list[RawBatch]:
        if not self.decided and raw.frame.height:
            self.kind, self.decided = judge_format(raw.frame.columns, self.options), True
            self._check_fits(raw.frame.columns)
        if self.kind is None or not raw.frame.height:
            return [raw]
        frame = raw.frame if RAW in raw.frame.columns else raw.frame.with_columns(pl.struct(pl.exclude(ROW)).struct.json_encode().alias(RAW))
        parts = (arena_hard_votes if self.kind == ARENA_HARD else alpaca_eval_votes)(frame, self.path, self.options)
        first = parts[0]
        return [RawBatch(first.frame, pl.concat([raw.rejected, first.rejected])), *parts[1:]]

    def _check_fits(self, columns: Sequence[str]) -> None:
        strong = self.options.strong_weight if self.options.strong_weight != DEFAULT_STRONG_WEIGHT else None
        extras = [name for name, value in (("--answers", self.options.answers), ("--judgment-baseline", self.options.judgment_baseline), ("--strong-weight", strong))
                  if value is not None]
        if extras and self.kind != ARENA_HARD:
            raise InputError(f"{self.path}: {' and '.join(extras)} {'apply' if len(extras) > 1 else 'applies'} to arena-hard-auto judgment files; this is not one (fields: {', '.join(c for c in columns if c not in INTERNAL)})")
        needed = {ARENA_HARD: ("model", "games"), ALPACA_EVAL: ("generator_1", "generator_2", "preference")}.get(self.kind or "", ())
        missing = [c for c in needed if c not in columns]
        if missing:
            raise InputError(f"{self.path}: not {self.kind} records, no field {', '.join(missing)} (fields: {', '.join(c for c in columns if c not in INTERNAL)})")


# ----------------------------------------------------------------------------------- arena-hard-auto


def arena_hard_votes(frame: pl.DataFrame, path: Path, options: InputOptions) -> list[RawBatch]:
    """arena-hard-auto judgment lines -> one batch of votes per game (and the lines' quarantined rows, with the
    first). Game 1 showed the baseline first (position A), game 2 the judged model."""
    field = _fields(frame)
    category = field("category")
    baseline = pl.coalesce(
        field("baseline"), pl.lit(options.judgment_baseline, dtype=pl.String),
        category.replace_strict(CATEGORY_BASELINES, default=None, return_dtype=pl.String),
        pl.when(category.is_null()).then(pl.lit(V01_BASELINE)),
    )
    games = json_text(pl.col("games")) if frame.schema.get("games", pl.String).is_nested() else field("games")
    not_names, name_problems = _names_not_text(frame, ("model", "baseline"))
    lines = frame.select(
        ROW, RAW, *not_names,
        pl.coalesce(field("uid"), field("question_id")).alias("question_id"),
        field("model").alias("model"), baseline.alias("baseline"), category.alias("category"),
        pl.coalesce(field("judge"), pl.lit(_folder_judge(path), dtype=pl.String)).alias("judge"),
        games.alias("__games"),
        *_kept(frame, ARENA_HARD_FIELDS),
    )
    verdicts = {label: outcome for label, (outcome, _) in VERDICTS.items()} | {k.strip().upper(): v for k, v in options.winner_map.items()}
    strong = [label for label, (_, is_strong) in VERDICTS.items() if is_strong]
    lines = lines.with_columns(
        pl.col("__games").str.json_path_match(f"$[{k - 1}]").alias(f"__game{k}") for k in (1, 2)
    ).with_columns(
        pl.col("__games").str.json_path_match(f"$[{k - 1}].score").str.strip_chars().str.to_uppercase().replace("", None).alias(f"__label{k}")
        for k in (1, 2)
    ).with_columns(
        pl.col(f"__label{k}").replace_strict(verdicts, default=None, return_dtype=pl.String).alias(f"__outcome{k}") for k in (1, 2)
    )
    line_problems = [
        *name_problems,
        (QuarantineReason.WRONG_TYPE, pl.col("question_id").is_null(), pl.lit("uid: missing (the id of the judged prompt)")),
        (QuarantineReason.MISSING_MODEL, pl.col("model").is_null(), pl.lit("model: missing or empty")),
        (QuarantineReason.MISSING_MODEL, pl.col("baseline").is_null(), pl.format(
            "baseline: the line names none and its category {} has none by default (name it with --judgment-baseline)", pl.col("category"))),
        (QuarantineReason.SELF_BATTLE, pl.col("model") == pl.col("baseline"), pl.lit("model == baseline")),
        (QuarantineReason.WRONG_TYPE, pl.col("__games").is_null(), pl.lit("games: missing")),
        (QuarantineReason.WRONG_TYPE, ~pl.col("__games").str.starts_with("["), pl.lit("games: not a list of games")),
    ]
    not_a_game = {k: ~pl.col(f"__game{k}").str.starts_with("{") for k in (1, 2)}  # (null where the game is missing)
    game_problems = [
        (QuarantineReason.WRONG_TYPE, not_a_game[k], pl.format(f"game {k}: {{}} is not a game (an object with a score)", pl.col(f"__game{k}")))
        for k in (1, 2)
    ] + [
        (QuarantineReason.NO_VERDICT, pl.col(f"__label{k}").is_null() & ~not_a_game[k].fill_null(False), pl.lit(f"game {k}: no verdict (its score is null or missing)"))
        for k in (1, 2)
    ] + [
        (QuarantineReason.UNKNOWN_WINNER, pl.col(f"__label{k}").is_not_null() & pl.col(f"__outcome{k}").is_null(), pl.format(
            f'game {k}: unknown verdict "{{}}" (arena-hard-auto\'s: A>>B, A>B, A=B, B>A, B>>A and their mirrors A<B, A<<B, B=A, B<A, B<<A; map others with --winner-map LABEL=OUTCOME)',
            pl.col(f"__label{k}")))
        for k in (1, 2)
    ]
    lines, rejected = _quarantine(lines, path, line_problems, game_problems)
    ids = _digests(lines, ["judge", "question_id", "model", "baseline"])
    parts = []
    for k, (first, second) in ((1, ("baseline", "model")), (2, ("model", "baseline"))):
        votes = lines.with_columns(ids).filter(pl.col(f"__outcome{k}").is_not_null()).select(
            pl.format(f"arena-hard-{{}}-{k}", "__id").alias("battle_id"),
            pl.col(first).alias("model_a"), pl.col(second).alias("model_b"), pl.col(f"__outcome{k}").alias("winner"),
            pl.when(pl.col(f"__label{k}").is_in(strong)).then(pl.lit(options.strong_weight)).otherwise(pl.lit(1.0)).alias("weight"),
            "judge", "question_id", "category", pl.lit(k, dtype=pl.Int64).alias("game"), "baseline",
            *[c for c in lines.columns if c.startswith("extra_") or c in _passed(frame, ARENA_HARD_FIELDS)], ROW, RAW,
        )
        if options.answers is not None:
            votes = with_answers(votes, load_answers(options.answers))
        parts.append(RawBatch(votes, rejected if k == 1 else _no_rows()))
    return parts


def _folder_judge(path: Path) -> str | None:
    """The judge a judgment file's folder names: ``…/model_judgment/<judge>/<model>.jsonl``."""
    return path.parent.name if path.parent.parent.name == "model_judgment" else None


# ---------------------------------------------------------------------------------------------- AlpacaEval


def alpaca_eval_votes(frame: pl.DataFrame, path: Path, options: InputOptions) -> list[RawBatch]:
    """AlpacaEval annotations -> votes: ``generator_1`` is shown first (``model_a``). A preference of 1 is a
    win of output_1, 2 of output_2, 1.5 (or 0) a draw; a fractional one is two votes weighted 2 − p and p − 1,
    so the expected outcome (and AlpacaEval's win rate) is kept."""
    field = _fields(frame)
    dtype = frame.schema.get("preference", pl.String)
    given = field("preference")
    number = pl.col("preference").cast(pl.Float64, strict=False) if dtype.is_numeric() else given.cast(pl.Float64, strict=False)
    instruction = field("instruction")
    judge = pl.lit(path.parent.name if path.name == "annotations.json" else None, dtype=pl.String)
    not_names, name_problems = _names_not_text(frame, ("generator_1", "generator_2"))
    records = frame.select(
        ROW, RAW, *not_names,
        field("generator_1").alias("generator_1"), field("generator_2").alias("generator_2"),
        pl.coalesce(field("annotator"), judge).alias("judge"), field("dataset").alias("category"),
        instruction.alias("__instruction"), given.alias("__given"), number.alias("__p"),
        *[_conversation(instruction, field(f"output_{side}")).alias(f"conversation_{'ab'[side - 1]}") for side in (1, 2)],
        *_kept(frame, ALPACA_EVAL_FIELDS),
    )
    p = pl.col("__p")
    problems = [
        *name_problems,
        (QuarantineReason.MISSING_MODEL, pl.col("generator_1").is_null() | pl.col("generator_2").is_null(), pl.lit("generator_1 or generator_2 is missing or empty")),
        (QuarantineReason.SELF_BATTLE, pl.col("generator_1") == pl.col("generator_2"), pl.lit("generator_1 == generator_2")),
        (QuarantineReason.NO_VERDICT, pl.col("__given").is_null(), pl.lit("preference: missing, null or empty (the annotator gave no verdict)")),
        (QuarantineReason.WRONG_TYPE, p.is_null() | ~p.is_finite() | ((p != ALPACA_DRAW) & ~p.is_between(1, 2)), pl.format(
            "preference: {} is not AlpacaEval's (a number from 1 to 2, or 0 for a draw)", pl.col("__given"))),
    ]
    records, rejected = _quarantine(records, path, problems)
    split = (p > 1) & (p < 2) & (p != 1.5)
    records = records.with_columns(
        _digests(records, ["judge", "generator_1", "generator_2", "__instruction"]),
        pl.when(pl.col("__instruction").is_not_null()).then(_digests(records, ["__instruction"])).alias("question_id"),
    )
    kept = [c for c in records.columns if c.startswith("extra_") or c in _passed(frame, ALPACA_EVAL_FIELDS)]

    def votes(rows: pl.DataFrame, suffix: str, winner: pl.Expr, weight: pl.Expr) -> pl.DataFrame:
        return rows.select(
            pl.format(f"alpaca-eval-{{}}{suffix}", "__id").alias("battle_id"),
            pl.col("generator_1").alias("model_a"), pl.col("generator_2").alias("model_b"), winner.alias("winner"),
            weight.alias("weight"), "judge", "question_id", "category", "conversation_a", "conversation_b", *kept, ROW, RAW,
        )

    whole, halves = records.filter(~split), records.filter(split)
    outcome = pl.when(p == 1).then(pl.lit("model_a")).when(p == 2).then(pl.lit("model_b")).otherwise(pl.lit("tie"))
    first = pl.concat([votes(whole, "", outcome, pl.lit(1.0)), votes(halves, "-a", pl.lit("model_a"), 2 - p)]).sort(ROW, maintain_order=True)
    return [RawBatch(first, rejected), RawBatch(votes(halves, "-b", pl.lit("model_b"), p - 1), _no_rows())]


def _conversation(instruction: pl.Expr, output: pl.Expr) -> pl.Expr:
    """The instruction and one output as a conversation (null without the output)."""
    messages = pl.concat_list(
        pl.struct(pl.lit("user").alias("role"), instruction.alias("content")),
        pl.struct(pl.lit("assistant").alias("role"), output.alias("content")),
    ).list.eval(pl.element().filter(pl.element().struct.field("content").is_not_null()))
    return pl.when(output.is_not_null()).then(messages).cast(CONVERSATION)


# ------------------------------------------------------------------------------------------------ answers


#: Where arena-hard-auto's answer ``metadata`` (its utils/add_markdown_info.py; ``conv_metadata`` before v2.0)
#: keeps each canonical count.
ANSWER_COUNTS: dict[str, tuple[str, ...]] = {
    "tokens": ("token_len",),
    **{f"h{i}": ("header_count", f"h{i}") for i in range(1, 7)},
    "ordered": ("list_count", "ordered"), "unordered": ("list_count", "unordered"),
    "bold_star": ("bold_count", "**"), "bold_underscore": ("bold_count", "__"),
}


def load_answers(directory: Path) -> pl.DataFrame:
    """The answers of an arena-hard-auto benchmark (``--answers DIR``: its ``model_answer`` folder, or the
    benchmark folder holding it): per (model, uid), the metadata counts as text, and the conversation."""
    folder = directory / "model_answer" if (directory / "model_answer").is_dir() else directory
    if not folder.is_dir():
        raise InputError(f"--answers {directory}: not a directory")
    files = sorted(f for f in folder.iterdir() if f.is_file() and ".jsonl" in f.suffixes)
    if not files:
        raise InputError(f"--answers {directory}: no answer files (<model>.jsonl)")
    return _answers(tuple((str(f), f.stat().st_mtime_ns, f.stat().st_size) for f in files))


@functools.lru_cache(maxsize=2)
def _answers(files: tuple[tuple[str, int, int], ...]) -> pl.DataFrame:
    """Answer files read once per read of many judgment files (keyed by the files' names, times and sizes)."""
    columns: dict[str, list[Any]] = {"model": [], "uid": [], **{c: [] for c in META_COUNTS}, "conversation": []}
    complete = True
    for name, _, _ in files:
        path = Path(name)
        with opened(path) as handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                answer = _answer(path, number, line)
                columns["model"].append(answer.model)
                columns["uid"].append(answer.uid)
                for count, value in answer.counts.items():
                    columns[count].append(value)
                columns["conversation"].append(answer.conversation)
                complete = complete and answer.counts["tokens"] is not None
    schema: dict[str, pl.DataType] = {"model": pl.String(), "uid": pl.String(), **{c: pl.String() for c in META_COUNTS}, "conversation": CONVERSATION}
    answers = pl.DataFrame(columns, schema=schema).unique(["model", "uid"], keep="last", maintain_order=True)
    return answers.drop("conversation") if complete else answers  # texts only where some answer has no metadata


@dataclass(frozen=True)
class _Answer:
    model: str
    uid: str
    counts: dict[str, str | None]
    conversation: list[dict[str, str | None]]


def _answer(path: Path, number: int, line: bytes) -> _Answer:
    """One answer line: v2.0's ``uid, model, messages, metadata`` or v0.1's ``question_id, model_id, choices``."""
    try:
        record = json.loads(line)
        if not isinstance(record, dict):
            raise ValueError(f"a JSON {type(record).__name__}, not an object")
    except ValueError as error:
        raise InputError(f"--answers: {path} line {number}: not a JSON object ({error})") from None
    model = record.get("model") or record.get("model_id") or path.name.split(".jsonl")[0]
    uid = record.get("uid") or record.get("question_id")
    if not isinstance(uid, str) or not isinstance(model, str):
        raise InputError(f"--answers: {path} line {number}: no uid (or question_id) and model naming the answer")
    metadata = record.get("metadata") or record.get("conv_metadata") or {}
    counts = {count: _count_text(_at(metadata, keys)) for count, keys in ANSWER_COUNTS.items()}
    messages = record.get("messages")
    if isinstance(messages, list):
        turns = [(m.get("role"), m.get("content")) for m in messages if isinstance(m, dict)]
    else:
        choices = record.get("choices") or [{}]
        turns = [("assistant", t.get("content")) for t in (choices[0].get("turns") or []) if isinstance(t, dict)]
    conversation = [{"role": str(role), "content": _text(content)} for role, content in turns]
    return _Answer(model, uid, counts, conversation)


def _at(record: Any, keys: tuple[str, ...]) -> Any:
    for key in keys:
        record = record.get(key) if isinstance(record, dict) else None
    return record


def _count_text(value: Any) -> str | None:
    """A count as the text a JSON log gives (validated with the votes: a count that is no whole number
    quarantines the vote as ``wrong_type``)."""
    if value is None:
        return None
    return json.dumps(value) if isinstance(value, (dict, list, bool)) else str(value)


def _text(content: Any) -> str | None:
    """A message's text: a string, or arena-hard-auto's ``{"answer": ...}``."""
    if isinstance(content, dict):
        content = content.get("answer")
    return content if isinstance(content, str) else None


def with_answers(votes: pl.DataFrame, answers: pl.DataFrame) -> pl.DataFrame:
    """Both sides' answer counts (``meta_<count>_<side>``) where both sides have them, else both sides' texts."""
    joined = []
    for side in ("a", "b"):
        renamed = answers.rename({c: f"__{c}_{side}" for c in answers.columns if c not in ("model", "uid")})
        votes = votes.join(renamed, left_on=[f"model_{side}", "question_id"], right_on=["model", "uid"], how="left", maintain_order="left")
        joined += [c for c in renamed.columns if c not in ("model", "uid")]
    counted = pl.all_horizontal(pl.col(f"__tokens_{side}").is_not_null() for side in ("a", "b"))
    columns = [pl.when(counted).then(pl.col(f"__{c}_{side}")).alias(f"meta_{c}_{side}") for side in ("a", "b") for c in META_COUNTS]
    if "conversation" in answers.columns:
        columns += [pl.when(~counted).then(pl.col(f"__conversation_{side}")).alias(f"conversation_{side}") for side in ("a", "b")]
    return votes.with_columns(columns).drop(joined)


# ------------------------------------------------------------------------------------------------ shared


def _fields(frame: pl.DataFrame) -> Callable[[str], pl.Expr]:
    """A record field as trimmed text (nested values as JSON text), null where absent or empty."""

    def field(name: str) -> pl.Expr:
        return parse_text(name, frame.schema[name]) if name in frame.columns else pl.lit(None, dtype=pl.String)

    return field


def _names_not_text(frame: pl.DataFrame, names: Sequence[str]) -> tuple[list[pl.Expr], list[tuple[QuarantineReason, pl.Expr, pl.Expr]]]:
    """For the fields of a record that name a model: per record, whether one is a list or an object (or bytes not
    UTF-8), no name, as columns (``__<name>_not_text``) and the problems that reject their records, as the arena
    dialect rejects such a name (its JSON text is no name)."""
    nested = NESTED if NESTED in frame.columns else None
    found = {name: flag for name in names if name in frame.columns and (flag := not_text(name, frame.schema[name], nested)) is not None}
    columns = [flag.fill_null(False).alias(f"__{name}_not_text") for name, (flag, _) in found.items()]
    return columns, [(QuarantineReason.WRONG_TYPE, pl.col(f"__{name}_not_text"), pl.lit(f"{name}: {what}")) for name, (_, what) in found.items()]


def _passed(frame: pl.DataFrame, consumed: Sequence[str]) -> list[str]:
    """A record's fields that are no field of the vote, kept as they are."""
    return [c for c in frame.columns if c not in (*INTERNAL, *consumed) and c not in _CANONICAL_NAMES]


def _kept(frame: pl.DataFrame, consumed: Sequence[str]) -> list[pl.Expr]:
    """A record's other fields as extra columns: under their names, or ``extra_<name>`` where the arena dialect
    would read the name as a canonical field (a ``weight`` of an annotation is not the vote's weight)."""
    return [
        *[pl.col(c) for c in _passed(frame, consumed)],
        *[pl.col(c).alias(f"extra_{c}") for c in frame.columns if c in _CANONICAL_NAMES and c not in (*INTERNAL, *consumed)],
    ]


def _quarantine(records: pl.DataFrame, path: Path, problems: list[Problem], game_problems: Sequence[Problem] = ()) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Quarantine the records with a problem (the first that applies), and the games with one of the others:
    one row per record and reason (a line whose two games lack a verdict is one row, naming both). Returns the
    records left and the quarantined rows."""
    failed = pl.lit(None, dtype=pl.Int32)
    for number, (_, condition, _) in reversed(list(enumerate(problems))):
        failed = pl.when(condition.fill_null(False)).then(pl.lit(number, dtype=pl.Int32)).otherwise(failed)
    records = records.with_columns(failed.alias("__failed"))
    rows = [
        records.filter(pl.col("__failed") == number).select(ROW, RAW, pl.lit(reason.value).alias("reason"), detail.alias("detail"))
        for number, (reason, _, detail) in enumerate(problems)
    ]
    records = records.filter(pl.col("__failed").is_null()).drop("__failed")
    rows += [records.filter(condition.fill_null(False)).select(ROW, RAW, pl.lit(reason.value).alias("reason"), detail.alias("detail")) for reason, condition, detail in game_problems]
    found = pl.concat(rows).group_by(ROW, "reason", maintain_order=True).agg(pl.col(RAW).first(), pl.col("detail").str.join("; ")).sort(ROW, maintain_order=True)
    return records, pl.DataFrame({
        "source_file": [str(path)] * found.height, "source_row": found[ROW], "reason": found["reason"], "detail": found["detail"],
        "raw": found[RAW], "raw_bytes": pl.Series([None] * found.height, dtype=pl.Binary),
    }, schema=QUARANTINE_SCHEMA)


def _digests(frame: pl.DataFrame, columns: list[str]) -> pl.Series:
    """A short digest of each row's ``columns`` (stable across versions, unlike polars' hashes): vote and
    prompt ids that a second read of the same log gives again."""
    texts = frame.select(pl.concat_str([pl.col(c).fill_null("") for c in columns], separator="\x1f")).to_series().to_list()
    return pl.Series("__id", [hashlib.blake2b(t.encode(), digest_size=8).hexdigest() for t in texts], dtype=pl.String)


def _no_rows() -> pl.DataFrame:
    return pl.DataFrame(schema=QUARANTINE_SCHEMA)
