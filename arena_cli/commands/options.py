"""Option groups, declared once and attached to every command that takes them.

Each group is a decorator (as sqlite-utils stacks click decorators): it puts its options into the command's
signature, where typer reads them, and calls the command with one object built from their values — a
:class:`~arena_cli.io.options.Source`, a :class:`~arena_cli.io.options.BattleFilter`, :class:`FitOptions`,
:class:`~arena_cli.io.options.FeatureOptions` or the variant choice of ``diff`` and ``report``. Adding an
option to every fitting command is a change here only.

Nothing heavy is imported: ``arena --help`` builds every signature.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import os
import typing
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from arena_cli.bounds import Bounds
from arena_cli.errors import OptionError
from arena_cli.io.files import container_of
from arena_cli.io.options import (
    COUNTS, DEFAULT_ENCODING, DEFAULT_RECIPE, DEFAULT_STRONG_WEIGHT, FORMATS, LOCK_WAIT, RECIPES, STRONG_WEIGHT, BattleFilter, FeatureOptions, InputOptions, Source,
)
from arena_cli.models.options import (
    CONFIDENCE,
    DEFAULT_MIN_BATTLES,
    DEFAULT_ROUNDS,
    DEFAULT_SEED,
    DEFAULT_TOP_K,
    DEFAULT_VARIANTS,
    MIN_BATTLES,
    RIDGE,
    ROUNDS,
    SEED,
    TOP_K,
    WORKERS,
    BothBad,
    CIMethod,
    Compat,
    FitOptions,
    Solver,
    StyleTransform,
    Ties,
)

try:
    from typer._click.types import FLOAT, INT, FloatRange, ParamType  # the click typer vendors (0.24 and later)
except ImportError:  # older typers run on click itself
    from click.types import FLOAT, INT, FloatRange, ParamType  # type: ignore[no-redef]


def option_group(name: str, options: list[inspect.Parameter], build: Callable[..., Any]) -> Callable[[Callable], Callable]:
    """A decorator replacing the command's parameter ``name`` by ``options`` (in its place in ``--help``);
    the command receives ``build(**their values)`` as ``name``. What the options set in the environment (see
    :func:`_allocate`) lasts until the command ends."""

    def decorate(command: Callable) -> Callable:
        signature = inspect.signature(command)
        if name not in signature.parameters:
            raise TypeError(f"{command.__name__} has no parameter {name!r} for its option group")
        hints = typing.get_type_hints(command, include_extras=True)
        parameters: list[inspect.Parameter] = []
        for parameter in signature.parameters.values():
            if parameter.name == name:
                parameters.extend(options)
            else:
                annotation = hints.get(parameter.name, parameter.annotation)
                parameters.append(parameter.replace(annotation=annotation, kind=inspect.Parameter.KEYWORD_ONLY))
        names = [option.name for option in options]

        @functools.wraps(command)
        def run(**values: Any) -> Any:
            with _command_allocator():
                values[name] = build(**{n: values.pop(n) for n in names})
                return command(**values)

        run.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
        run.__annotations__ = {p.name: p.annotation for p in parameters}
        return run

    return decorate


def option(name: str, annotation: Any, default: Any) -> inspect.Parameter:
    """One option of a group: a keyword parameter typer reads from its annotation."""
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)


class _Checked(FloatRange):
    """A number parsed as click parses it, then checked by its :class:`Bounds` (the range is click's only for
    ``--help``)."""

    def __init__(self, bounds: Bounds):
        super().__init__(bounds.low, bounds.high, bounds.low_open, bounds.high_open)
        self.bounds = bounds
        self.name = "integer range" if bounds.integer else "float range"

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        parsed = (INT if self.bounds.integer else FLOAT).convert(value, param, ctx)
        try:
            return self.bounds.check(parsed)
        except OptionError as error:
            self.fail(error.reason, param, ctx)


def number(bounds: Bounds) -> Any:
    """The click type of a numeric option ruled by ``bounds``: ``--help`` shows its range, and every value is
    checked by the library's own rule while the command line is read (nan, inf, out of range: exit 2)."""
    return _Checked(bounds)


def split_list(value: str | None) -> tuple[str, ...] | None:
    """``"a, b"`` -> ``("a", "b")``; None stays None."""
    if value is None:
        return None
    return tuple(v.strip() for v in value.split(",") if v.strip())


def parse_pairs(values: list[str] | None, option: str, *, last: bool = False) -> dict[str, str]:
    """``["k=v", ...]`` -> dict; a malformed pair is a usage error. Split at the first ``=`` (the key is a name
    that holds none: ``--map`` fields, ``--style`` groups, so a column name may hold one), or at the ``last``
    (the value is the one without: ``--winner-map``'s outcomes, so a label may hold one, as arena-hard's ``A=B``)."""
    pairs: dict[str, str] = {}
    for item in values or []:
        key, sep, value = item.rpartition("=") if last else item.partition("=")
        if not sep or not key.strip():
            raise OptionError(option, f"{item!r}: expected {'LABEL=OUTCOME' if last else 'KEY=VALUE'}")
        if key.strip() in pairs and pairs[key.strip()] != value.strip():  # (which one was meant?)
            raise OptionError(option, f"{key.strip()!r} is given twice: {pairs[key.strip()]!r} and {value.strip()!r}")
        pairs[key.strip()] = value.strip()
    return pairs


# -------------------------------------------------------------------------------------------- inputs

class _StorePath(ParamType):
    """A store directory. An empty one is a usage error: it comes from a variable left unset (``--store "$DIR"``),
    and taken as a path it would make the current directory a store."""

    name = "path"

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        if isinstance(value, Path):
            return value
        if not str(value).strip():
            self.fail("an empty path (a variable left unset?); leave --store out for $ARENA_STORE or ./arena-store", param, ctx)
        return Path(value)


StoreOption = Annotated[
    Optional[Path],
    typer.Option("--store", "-s", click_type=_StorePath(), help="Store directory (default: $ARENA_STORE or ./arena-store).", show_default=False),
]
LockWaitOption = Annotated[
    float,
    typer.Option("--lock-wait", click_type=number(LOCK_WAIT), help="Seconds to wait for another run's lock on the store before failing (exit 5)."),
]


#: The container or dialect of vote-log files (auto: from the extension and the columns): io's list, as choices.
InputFormat = Enum("InputFormat", {name: name for name in FORMATS}, type=str)  # type: ignore[misc]  # members come from io


InputFormatOption = Annotated[InputFormat, typer.Option("--input-format", "-i", help="Input format of FILES (- reads standard input); auto detects from the extension (else the content) and the columns. arena-hard and alpaca-eval read LLM-judge logs (a directory: every log under it).")]
MapOption = Annotated[
    Optional[list[str]],
    typer.Option("--map", metavar="FIELD=COLUMN", help="Take a canonical field from another column (repeatable). --map battle_id= ignores id columns.", show_default=False),
]
WinnerMapOption = Annotated[
    Optional[list[str]],
    typer.Option("--winner-map", metavar="LABEL=OUTCOME", help="Map a winner label to model_a, model_b, tie or both_bad (repeatable).", show_default=False),
]


StrongWeightOption = Annotated[float, typer.Option("--strong-weight", click_type=number(STRONG_WEIGHT), help="arena-hard judgments: the weight of a strong verdict (A>>B, B>>A), as arena-hard-auto's --weight; a slight one weighs 1.")]
AnswersOption = Annotated[
    Optional[Path],
    typer.Option("--answers", metavar="DIR", help="arena-hard judgments: the benchmark's model_answer folder (or the benchmark folder); both sides' answer metadata (style counts), else texts, are joined by model and uid.", show_default=False),
]
JudgmentBaselineOption = Annotated[
    Optional[str],
    typer.Option("--judgment-baseline", metavar="MODEL", help="arena-hard judgments: the baseline of lines that name none (default: their category's, as arena-hard-auto's; gpt-4-0314 without a category).", show_default=False),
]


def input_options(
    input_format: InputFormat, mapping: list[str] | None, winner_map: list[str] | None, strong_weight: float = DEFAULT_STRONG_WEIGHT,
    answers: Path | None = None, judgment_baseline: str | None = None,
) -> InputOptions:
    return InputOptions(
        fmt=input_format.value, mapping=parse_pairs(mapping, "--map"), winner_map=parse_pairs(winner_map, "--winner-map", last=True),
        strong_weight=strong_weight, answers=answers, judgment_baseline=judgment_baseline,
    )


_INPUT_PARAMETERS = [
    option("input_format", InputFormatOption, InputFormat("auto")),
    option("mapping", MapOption, None),
    option("winner_map", WinnerMapOption, None),
    option("strong_weight", StrongWeightOption, DEFAULT_STRONG_WEIGHT),
    option("answers", AnswersOption, None),
    option("judgment_baseline", JudgmentBaselineOption, None),
]


def _source(sources: list[Path] | None, store: Path | None, **input_values: Any) -> Source:
    source = Source(tuple(sources or ()), store, input_options(**input_values))
    named = source.input.fmt == "auto"  # else --input-format says (a judge's format too: not read so)
    if source.files and all((container_of(path) if named else source.input.fmt) in ("jsonl", "json") for path in source.files):
        _allocate(JSON_READ_ALLOCATOR)
    return source


#: FILES or --store, and how to read the files: every command that reads battles.
source_options = option_group("source", [
    option("sources", Annotated[Optional[list[Path]], typer.Argument(
        metavar="[FILES]...", help="Vote-log files to read directly instead of a store (any format `arena ingest` reads).", show_default=False)], None),
    option("store", StoreOption, None),
    *_INPUT_PARAMETERS,
], _source)

#: Only the input options, for commands whose FILES argument is their own (``arena ingest``).
input_option_group = option_group("input", _INPUT_PARAMETERS, input_options)


# ------------------------------------------------------------------------------------------- filters

def _filters(where: str | None = None, models: str | None = None, exclude_models: str | None = None) -> BattleFilter:
    return BattleFilter(where, split_list(models), split_list(exclude_models))


WhereOption = Annotated[
    Optional[str],
    typer.Option("--where", help="SQL boolean filter on battle columns, e.g. \"language = 'English' AND turn > 1\".", show_default=False),
]
_MODEL_FILTERS = [
    option("models", Annotated[Optional[str], typer.Option("--models", help="Comma-separated models: keep only battles between them.", show_default=False)], None),
    option("exclude_models", Annotated[Optional[str], typer.Option("--exclude-models", help="Comma-separated models: drop every battle involving them.", show_default=False)], None),
]

#: --where, --models, --exclude-models: which battles a command works on.
filter_options = option_group("filters", [option("where", WhereOption, None), *_MODEL_FILTERS], _filters)
#: --models, --exclude-models only (``arena compare`` takes a --where per side).
model_filter_options = option_group("filters", _MODEL_FILTERS, _filters)


# ---------------------------------------------------------------------------------------------- fit

STYLE_HELP = (
    "Style control: none, length (tokens), markdown (header, list, bold), both (all four), or a comma list of "
    "feature groups, features (<name>_a/_b count columns) and numeric battle columns (your own covariates)."
)

_MODEL_OPTIONS = [
    option("ties", Annotated[Ties, typer.Option("--ties", help="Ties: half (half a win each way, LMArena), drop, or davidson (Davidson's model with an estimated tie parameter).")], Ties.half),
    option("both_bad", Annotated[BothBad, typer.Option("--both-bad", help="both_bad votes: counted as a tie (LMArena) or dropped.")], BothBad.tie),
    option("no_normalize", Annotated[bool, typer.Option("--no-normalize", help="Use style features as transformed, without standardising them to mean 0 and sd 1.")], False),
    # a list, so that a second --anchor is refused rather than silently kept in place of the first
    option("anchor", Annotated[Optional[list[str]], typer.Option("--anchor", metavar="MODEL=SCORE", help="Pin one model's score (e.g. mixtral-8x7b-instruct-v0.1=1114, as LMArena); default: mean score 1000. Given once.", show_default=False)], None),
    option("reweight", Annotated[Optional[bool], typer.Option("--reweight/--no-reweight", help="Weight battles by 1/max(n_pair, 50), normalised to mean 1, for non-uniform pair sampling (default: off; on under --compat arena-rank with style).", show_default=False)], None),
    option("ridge", Annotated[Optional[float], typer.Option("--ridge", click_type=number(RIDGE), help="L2 penalty (ridge/2)·Σγ² on the style coefficients, added to the MEAN negative log-likelihood per battle (arena-rank's reg convention). Default 0: the plain MLE.", show_default=False)], None),
    option("compat", Annotated[Optional[Compat], typer.Option("--compat", help="Take a published tool's defaults for every option left unset (no --min-battles exclusion in each): arena-rank 0.1.1 (with style, reweighting and ridge 1.0; sandwich intervals); fastchat (its rating_systems.py: with style, its penalty 0.5 on every rating and coefficient; mixtral-8x7b-instruct-v0.1 at 1114 when fitted); arena-hard (arena-hard-auto v2: its style transform, the model in every battle as --baseline-model, pinned at 1000; 90% intervals).", show_default=False)], None),
    option("min_battles", Annotated[Optional[int], typer.Option("--min-battles", click_type=number(MIN_BATTLES), help=f"Exclude models with fewer battles (after filters), with a warning. Default {DEFAULT_MIN_BATTLES} (1 under --compat).", show_default=False)], None),
    option("position_bias", Annotated[bool, typer.Option("--position-bias", help="Estimate the advantage of the model shown first (model_a): a log-odds intercept fitted with the scores, in the coefficients as 'position'.")], False),
    option("baseline_model", Annotated[Optional[str], typer.Option("--baseline-model", metavar="MODEL", help="Add each model's predicted win rate against MODEL (win_rate, with its interval; MODEL itself 50%), at equal style with the order shown averaged out, as arena-hard-auto reports.", show_default=False)], None),
    option("style_transform", Annotated[Optional[StyleTransform], typer.Option("--style-transform", help="How style terms are computed: lmarena ((a-b)/(a+b+1), population sd) or arena-hard (length (a-b)/(a+b), markdown as densities per token, oriented against the baseline, sd with ddof 1). Default lmarena (arena-hard under --compat arena-hard).", show_default=False)], None),
    option("solver", Annotated[Solver, typer.Option("--solver", help="newton: exact and fast; statsmodels: the independent reference (small data only).")], Solver.newton),
]
_INTERVAL_OPTIONS = [
    option("ci", Annotated[Optional[CIMethod], typer.Option("--ci", help="Intervals: bootstrap (percentile, resampling battles or --cluster), sandwich (robust covariance) or none. Default bootstrap (sandwich under --compat arena-rank).", show_default=False)], None),
    option("rounds", Annotated[int, typer.Option("--rounds", click_type=number(ROUNDS), help="Bootstrap rounds, shared by every variant (also the normal draws behind sandwich rank intervals).")], DEFAULT_ROUNDS),
    option("seed", Annotated[int, typer.Option("--seed", click_type=number(SEED), help="Seed of the resamples: the same seed gives byte-identical JSON, CSV and markdown.")], DEFAULT_SEED),
    option("confidence", Annotated[Optional[float], typer.Option("--confidence", click_type=number(CONFIDENCE), help="Confidence level of every interval. Default 0.95 (0.90 under --compat arena-hard).", show_default=False)], None),
    option("cluster", Annotated[Optional[str], typer.Option("--cluster", help="Resample clusters of this column (e.g. judge, question_id) instead of battles; with --ci sandwich, a cluster-robust covariance.", show_default=False)], None),
    option("workers", Annotated[Optional[int], typer.Option("--workers", click_type=number(WORKERS), help="Bootstrap processes (default: all cores).", show_default=False)], None),
]


#: polars' allocator (jemalloc): how long it keeps the pages a read freed before it hands them back. polars sets
#: 0.5 s (dirty) and 1 s (muzzy) as it loads. Set as the options are parsed, before polars is first imported (it
#: appends this to its own; jemalloc reads it once, at its first allocation, and so does a spawned worker as its
#: polars loads), and kept until the command ends; a value the user set is kept.
ALLOCATOR = "_RJEM_MALLOC_CONF"
#: A command that resamples (``--ci bootstrap``): bootstrap workers, forked after the read, would each keep a copy
#: of the pages freed in the last second; returned within 200 ms, a 1M-vote style fit's process tree from a store
#: takes 610 → 448 MB (PSS). Not every command: a read of 10M votes or more then faults its pages in again and
#: again (10-40% more system time).
RESAMPLE_ALLOCATOR = "dirty_decay_ms:200,muzzy_decay_ms:0"
#: A command that reads only JSON files (lines or arrays), and does not resample: their read takes a block's worth
#: of pages again and again, zeroed, after polars handed them back; kept 5 s, a 100k-vote JSON-lines style fit
#: with texts is 7% faster at 40 MB more at its peak. Not parquet: a 10M-vote parquet fit was no faster so, at
#: 21% more peak memory.
JSON_READ_ALLOCATOR = "dirty_decay_ms:5000,muzzy_decay_ms:5000"
#: The allocator's settings as the running command found them (None: unset; the user's own otherwise), one entry
#: while a command runs.
_found: list[str | None] = []


@contextlib.contextmanager
def _command_allocator() -> Iterator[None]:
    """Around a command (its options built, then its work; the outermost of its option groups): the allocator's
    settings its options ask for (:func:`_allocate`) last for this command alone. When it ends, however it ends,
    the environment has them as the command found it (the user's own, or none), so that a next command in the
    same process (typer's CliRunner, a program calling the entry point again) starts from the user's environment,
    not from this command's choice (nor from what polars added as it loaded)."""
    if _found:
        yield
        return
    _found.append(os.environ.get(ALLOCATOR))
    try:
        yield
    finally:
        found = _found.pop()
        if found is None:
            os.environ.pop(ALLOCATOR, None)
        else:
            os.environ[ALLOCATOR] = found


def _allocate(setting: str) -> None:
    """Set polars' allocator to ``setting`` for the running command unless the user set it (the command found it
    set), or the command's other options asked for :data:`RESAMPLE_ALLOCATOR` (its workers' memory weighs more
    than the read's speed), whichever is parsed first."""
    if _found[0] is None and os.environ.get(ALLOCATOR) != RESAMPLE_ALLOCATOR:
        os.environ[ALLOCATOR] = setting


def _fit_options(*, style: str = "none", no_normalize: bool = False, anchor: list[str] | None = None, **values: Any) -> FitOptions:
    anchors = [a for a in anchor or () if a]  # (an empty one, as from an unset variable, pins nothing)
    if len(anchors) > 1:  # a fit pins one score: which of them was meant?
        raise OptionError("--anchor", f"given {len(anchors)} times ({', '.join(map(repr, anchors))}): a fit pins one model's score")
    options = FitOptions(style=style, normalize=not no_normalize, anchor=anchors[0] if anchors else None, **values)
    if options.resolved().ci is CIMethod.bootstrap:
        _allocate(RESAMPLE_ALLOCATOR)
    return options


def fit_options(*, style: bool = True, intervals: bool = True) -> Callable[[Callable], Callable]:
    """The fit options as one :class:`FitOptions` (unresolved: presets are left to each variant). ``style``:
    whether the command takes --style (``diff`` and ``report`` fit --variants instead); ``intervals``: the
    interval options (``matrix`` makes a point fit)."""
    options = [option("style", Annotated[str, typer.Option("--style", help=STYLE_HELP)], "none")] if style else []
    options += _MODEL_OPTIONS + (_INTERVAL_OPTIONS if intervals else [])
    return option_group("options", options, _fit_options)


def _check_recipe(value: str) -> str:
    if value not in RECIPES:
        raise typer.BadParameter(f"{value!r} is not one of {', '.join(RECIPES)}")
    return value


RecipeOption = Annotated[str, typer.Option("--recipe", "-r", callback=_check_recipe, metavar="<default|lmarena>", help="Markdown recipe: default removes fenced code properly before counting; lmarena is LMArena/FastChat's add_markdown_info.py bit for bit, code-removal quirk included (to reproduce published numbers).")]
EncodingOption = Annotated[str, typer.Option("--encoding", "-e", help="tiktoken encoding for token counts. cl100k_base (LMArena's) is bundled; others (e.g. o200k_base, arena-hard-auto v2's) must be in tiktoken's cache (TIKTOKEN_CACHE_DIR).")]


def _check_counts(value: str) -> str:
    if value not in COUNTS:
        raise typer.BadParameter(f"{value!r} is not one of {', '.join(COUNTS)}")
    return value


CountsOption = Annotated[str, typer.Option("--counts", callback=_check_counts, metavar="<precomputed|texts>", help="LMArena counts of a battle with both texts and conv_metadata: precomputed uses its conv_metadata counts (as LMArena's published leaderboards did), texts counts them again from the texts (slow on large logs).")]

#: --recipe, --encoding: how style features are computed from texts (``arena features``).
recipe_options = option_group("features", [
    option("recipe", RecipeOption, DEFAULT_RECIPE),
    option("encoding", EncodingOption, DEFAULT_ENCODING),
], FeatureOptions)
#: ... and --counts: where a fit takes the counts of battles that carry LMArena's precomputed ones.
feature_options = option_group("features", [
    option("recipe", RecipeOption, DEFAULT_RECIPE),
    option("encoding", EncodingOption, DEFAULT_ENCODING),
    option("counts", CountsOption, "precomputed"),
], FeatureOptions)


# ----------------------------------------------------------------------------------------- variants

@dataclass(frozen=True)
class VariantChoice:
    """Which style-control variants ``diff`` and ``report`` fit, and how they are compared."""

    variants: str = DEFAULT_VARIANTS
    baseline: str = "none"
    top_k: int = DEFAULT_TOP_K
    sort: str | None = None


def variant_options(*, sort: bool = True) -> Callable[[Callable], Callable]:
    """--variants, --baseline, --top-k (and --sort where rows are sorted) as one :class:`VariantChoice`."""
    options = [
        option("variants", Annotated[str, typer.Option("--variants", help="Comma-separated style-control variants: none, length, markdown, both, or a custom feature set joined with + (length+bold), optionally named NAME=SET (lb=length+bold).")], DEFAULT_VARIANTS),
        option("baseline", Annotated[str, typer.Option("--baseline", help="The variant rank changes are measured against.")], "none"),
        option("top_k", Annotated[int, typer.Option("--top-k", click_type=number(TOP_K), help="Highlights: models entering or leaving the K highest scores.")], DEFAULT_TOP_K),
    ]
    if sort:
        options.append(option("sort", Annotated[Optional[str], typer.Option("--sort", help="Sort rows by this variant's rank, or by model name with 'model' (default: the last variant).", show_default=False)], None))
    return option_group("choice", options, VariantChoice)
