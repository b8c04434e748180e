"""What a fit is asked to do: one frozen :class:`FitOptions`, resolved against a compatibility preset.

Fields left at ``None`` take the default of the chosen ``compat`` preset (or the plain default when there is
none), so an explicit option always wins over a preset.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from enum import Enum

from arena_cli.bounds import Bounds
from arena_cli.errors import OptionError


class Ties(str, Enum):
    """How a tie enters the likelihood."""

    half = "half"          # y = 0.5: half a win each way (LMArena)
    drop = "drop"          # ties are left out
    davidson = "davidson"  # Davidson's model, with an estimated tie parameter nu


class BothBad(str, Enum):
    """How a ``both_bad`` vote is counted."""

    tie = "tie"    # as a tie (LMArena)
    drop = "drop"  # left out


class CIMethod(str, Enum):
    sandwich = "sandwich"    # robust (Huber-White) covariance, normal intervals
    bootstrap = "bootstrap"  # percentile intervals over resamples of battles (or clusters)
    none = "none"


class Solver(str, Enum):
    newton = "newton"            # exact Newton on sufficient statistics (the default, fast)
    statsmodels = "statsmodels"  # statsmodels GLM / likelihood models: an independent reference for small data


class Compat(str, Enum):
    """A published tool whose defaults (and conventions) the fit takes for every option left unset."""

    arena_rank = "arena-rank"  # arena-rank 0.1.1 (LMArena's package)
    fastchat = "fastchat"      # FastChat's rating_systems.py (LMArena's leaderboard code before arena-rank)
    arena_hard = "arena-hard"  # arena-hard-auto v2's show_result.py: win rates against a baseline


class StyleTransform(str, Enum):
    """How a style term's per-side values become the battle's covariate (before standardisation)."""

    lmarena = "lmarena"        # d = (a - b) / (a + b + 1) on each group's per-side sums; population sd (FastChat, arena-rank)
    arena_hard = "arena-hard"  # length (a - b) / (a + b); other counts as densities c / (tokens + 1), then
    #                            (a - b) / (a + b + 1); oriented against the baseline model; sd with ddof 1


class Method(str, Enum):
    """The rating method (:mod:`arena_cli.models.methods`)."""

    bradley_terry = "bradley-terry"  # Bradley-Terry maximum likelihood (Davidson with --ties davidson), style covariates
    elo = "elo"                      # FastChat's online Elo over the votes in order, bootstrap over votes


#: The default style-control variants of ``arena diff`` and ``arena report``, as in LMArena's style-control post.
DEFAULT_VARIANTS = "none,length,markdown,both"
#: Highlights: models entering or leaving the K highest scores.
DEFAULT_TOP_K = 10

#: Default seed: output is byte-identical across runs unless ``--seed`` changes.
DEFAULT_SEED = 42
#: Models with fewer battles than this (after filters) are excluded, with a warning.
DEFAULT_MIN_BATTLES = 50
#: Reweighting floor: a pair's weight is 1 / max(n_pair, REWEIGHT_FLOOR) (arena-rank's min_pair_count).
REWEIGHT_FLOOR = 50
#: The default confidence of every interval (arena-hard-auto reports 90%).
DEFAULT_CONFIDENCE = 0.95
ARENA_HARD_CONFIDENCE = 0.90
#: FastChat's ``reg`` of ``fit_contextual_bt``: the penalty (reg/2)·Σθ² on the *summed* log-likelihood, over the
#: model ratings (in log10-odds units, so λ = reg/ln(10)² on β) and the style coefficients alike.
FASTCHAT_REG = 0.5
#: FastChat's ``scale_and_offset``: mixtral-8x7b-instruct-v0.1 pinned at 1114 when it is among the models.
FASTCHAT_ANCHOR = ("mixtral-8x7b-instruct-v0.1", 1114.0)
#: arena-hard-auto's Elo display (``compute_mle_elo``): the baseline model pinned at 1000.
ARENA_HARD_BASELINE_SCORE = 1000.0
#: The name of the position term (the first-shown model's advantage) among the coefficients.
POSITION = "position"

# What each numeric fit option accepts (the CLI declares its options with these very rules).
#: Ridges and anchor scores of at most 10^12: a ridge beyond has long fixed every coefficient at 0 (from about 10^100
#: the solver's sums overflow), and scores near 10^15 lose their decimals.
RIDGE = Bounds("--ridge", low=0, high=1e12)
MIN_BATTLES = Bounds("--min-battles", low=1, integer=True)
#: At most 100,000 resamples: percentiles gain nothing beyond, and each round holds a draw per model.
ROUNDS = Bounds("--rounds", low=1, high=100_000, integer=True)
SEED = Bounds("--seed", low=0, integer=True)
CONFIDENCE = Bounds("--confidence", low=0, high=1, low_open=True, high_open=True)
WORKERS = Bounds("--workers", low=1, integer=True)
ANCHOR_SCORE = Bounds("--anchor", low=-1e12, high=1e12)
TOP_K = Bounds("--top-k", low=1, integer=True)
#: Fewer expected draws than this beyond each end of an interval, rounds × (1 − confidence) / 2, and the ends
#: are among the few most extreme draws: their noise is of the order of the interval's width (below 100 rounds
#: at 95%). A fit then warns that its intervals are unreliable.
MIN_TAIL_DRAWS = 2.5
#: Bootstrap rounds (and normal draws) by default: enough for 95% intervals (25 draws beyond each end).
DEFAULT_ROUNDS = 1000


@dataclass(frozen=True)
class FitOptions:
    """Everything that determines a fit's numbers (``workers`` only changes how fast it runs).

    ``style``: ``none``, ``length``, ``markdown``, ``both`` or a comma list of feature groups, per-side
    features (``<name>_a``/``<name>_b`` columns) or numeric battle columns. ``ridge`` is the L2 penalty
    (ridge/2)·Σγ² added to the *mean* negative log-likelihood over battles (reweighting weights normalised to
    mean 1), i.e. arena-rank's ``reg``; on the summed log-likelihood it is (ridge·n/2)·Σγ².
    ``position_bias``: estimate the advantage of the model shown first (model_a), a log-odds intercept.
    ``baseline_model``: also report each model's predicted win rate against this model (``--compat arena-hard``
    finds it in the data). ``style_transform``: how style terms are computed (default: the preset's).
    """

    style: str = "none"
    ties: Ties = Ties.half
    both_bad: BothBad = BothBad.tie
    normalize: bool = True
    anchor: tuple[str, float] | str | None = None
    reweight: bool | None = None
    ridge: float | None = None
    compat: Compat | None = None
    min_battles: int | None = None
    ci: CIMethod | None = None
    rounds: int = DEFAULT_ROUNDS
    seed: int = DEFAULT_SEED
    confidence: float | None = None
    cluster: str | None = None
    solver: Solver = Solver.newton
    workers: int | None = None
    method: Method = Method.bradley_terry
    position_bias: bool = False
    baseline_model: str | None = None
    style_transform: StyleTransform | None = None

    def __post_init__(self) -> None:
        """Accept plain strings for the choices (``ci="sandwich"``), as the CLI's enums are str enums."""
        enum_fields: tuple[tuple[str, type[Enum]], ...] = (
            ("ties", Ties), ("both_bad", BothBad), ("ci", CIMethod), ("solver", Solver), ("compat", Compat), ("method", Method),
            ("style_transform", StyleTransform),
        )
        for name, kind in enum_fields:
            value = getattr(self, name)
            if value is not None and not isinstance(value, kind):
                try:
                    object.__setattr__(self, name, kind(value))
                except ValueError:
                    choices = ", ".join(k.value for k in kind)
                    raise OptionError(f"--{name.replace('_', '-')}", f"{value!r}: expected one of {choices}") from None
        if self.cluster is not None and not self.cluster.strip():  # (an unset shell variable: no clusters would be used)
            raise OptionError("--cluster", f"{self.cluster!r}: give the name of a column")
        if isinstance(self.anchor, str):  # "model=1200", as on the command line
            object.__setattr__(self, "anchor", parse_anchor(self.anchor))
        elif self.anchor is not None:
            object.__setattr__(self, "anchor", (str(self.anchor[0]), float(ANCHOR_SCORE.check(self.anchor[1]))))

    def resolved(self) -> ResolvedFitOptions:
        """Concrete values for every ``None`` field, from the compat preset or the plain defaults. Only of options
        as given: a preset's values that no option names (FastChat's penalty on ratings) are not fields of these."""
        if isinstance(self, ResolvedFitOptions):
            raise TypeError("FitOptions.resolved() of options already resolved: resolve the options as given")
        styled = parse_style(self.style) != ()
        if self.position_bias and POSITION in parse_style(self.style):
            raise OptionError("--position-bias", f"the style term {POSITION!r} has the name of the position term; rename the column")
        preset: dict[str, object] = {
            "reweight": False, "ridge": 0.0, "ci": CIMethod.bootstrap, "min_battles": DEFAULT_MIN_BATTLES,
            "confidence": DEFAULT_CONFIDENCE, "style_transform": StyleTransform.lmarena,
        }
        fixed: dict[str, object] = {}  # what a preset sets that no option of its own can
        if self.compat is Compat.arena_rank:
            # arena-rank 0.1.1: BradleyTerry (no reweighting, no penalty) for plain fits; ContextualBradleyTerry
            # (reweighted, reg=1.0 on the mean log-likelihood) with style; sandwich intervals; every model kept.
            preset.update(reweight=styled, ridge=1.0 if styled else 0.0, ci=CIMethod.sandwich, min_battles=1)
        elif self.compat is Compat.fastchat:
            # FastChat: compute_bt (no penalty) for plain fits; fit_contextual_bt with style: reg 0.5 on the summed
            # log-likelihood over every rating and coefficient; every model kept; mixtral pinned at 1114 if present.
            preset.update(min_battles=1)
            if styled and self.ridge is None:
                fixed = {"ridge": FASTCHAT_REG, "rating_ridge": FASTCHAT_REG / math.log(10.0) ** 2, "ridge_per_vote": False}
            if self.method is Method.bradley_terry:
                fixed["preset_anchor"] = FASTCHAT_ANCHOR
        elif self.compat is Compat.arena_hard:
            # arena-hard-auto v2: its style transform, 90% intervals, every model kept; the baseline pinned at 1000.
            preset.update(min_battles=1, confidence=ARENA_HARD_CONFIDENCE, style_transform=StyleTransform.arena_hard)
            fixed["preset_anchor"] = (None, ARENA_HARD_BASELINE_SCORE)
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(FitOptions)}
        out = ResolvedFitOptions(**{
            **fields,
            **{name: default if fields[name] is None else fields[name] for name, default in preset.items()},
            **fixed,
        })
        out.validate()
        return out

    def validate(self) -> None:
        """Every numeric option within its :class:`~arena_cli.bounds.Bounds` (an :class:`OptionError` if not)."""
        for bounds, value in ((CONFIDENCE, self.confidence), (ROUNDS, self.rounds), (RIDGE, self.ridge),
                              (MIN_BATTLES, self.min_battles), (WORKERS, self.workers), (SEED, self.seed)):
            bounds.check(value)


@dataclass(frozen=True)
class ResolvedFitOptions(FitOptions):
    """:class:`FitOptions` with the preset-dependent fields filled in (:meth:`FitOptions.resolved`)."""

    anchor: tuple[str, float] | None = None  # a "model=score" string is parsed by FitOptions
    reweight: bool = False
    ridge: float = 0.0
    min_battles: int = DEFAULT_MIN_BATTLES
    ci: CIMethod = CIMethod.bootstrap
    confidence: float = DEFAULT_CONFIDENCE
    style_transform: StyleTransform = StyleTransform.lmarena
    #: the penalty on each model's β (FastChat's penalty on its ratings), on the scale ``ridge`` is on
    rating_ridge: float = 0.0
    #: whether the penalties are on the mean log-likelihood (× the total vote weight), else on the summed one
    ridge_per_vote: bool = True
    #: a preset's anchor when ``anchor`` is unset, applied only if the model is fitted (None: the baseline model)
    preset_anchor: tuple[str | None, float] | None = None

    @property
    def penalty(self) -> Penalty:
        """The L2 penalty of a style fit (a fit without style terms is never penalised)."""
        return Penalty(self.ridge, self.rating_ridge, self.ridge_per_vote)

    def few_rounds_warning(self) -> str | None:
        """Why intervals from these few resamples (or normal draws) should not be trusted, or None."""
        tail_share = (1 - self.confidence) / 2
        if self.rounds * tail_share >= MIN_TAIL_DRAWS:
            return None
        enough = math.ceil(round(MIN_TAIL_DRAWS / tail_share, 6))
        what = "rank ranges" if self.ci is CIMethod.sandwich else "intervals and rank ranges"
        return (f"--rounds {self.rounds}: {what} from fewer than {enough} draws are unreliable at confidence "
                f"{self.confidence:g} (about {self.rounds * tail_share:.2g} draws fall beyond each end, so the ends are the "
                f"most extreme draws and may even exclude the estimate); use {max(enough, DEFAULT_ROUNDS)} or more for anything you publish")


@dataclass(frozen=True)
class Penalty:
    """The L2 penalty (1/2)·(``coefficients``·Σγ² + ``ratings``·Σβ²) subtracted from the log-likelihood; the
    position term and Davidson's tie parameter are never penalised. ``per_vote``: each λ is on the mean
    log-likelihood (arena-rank's ``reg``), i.e. multiplied by the total vote weight on the summed scale;
    otherwise it is on the summed scale (FastChat's ``reg``)."""

    coefficients: float = 0.0
    ratings: float = 0.0
    per_vote: bool = True

    def __bool__(self) -> bool:
        return bool(self.coefficients or self.ratings)


def as_resolved(options: FitOptions) -> ResolvedFitOptions:
    """``options`` with concrete values: resolved if they are not yet (resolving them again would lose what a
    preset set beyond the fields of :class:`FitOptions`)."""
    return options if isinstance(options, ResolvedFitOptions) else options.resolved()


def parse_style(style: str) -> tuple[str, ...]:
    """``"both"`` -> its feature groups; ``"length,sentiment"`` -> the names as given; ``"none"`` -> ()."""
    from arena_cli.features.registry import VARIANTS

    spec = style.strip()
    if spec in VARIANTS:
        return tuple(VARIANTS[spec])
    names = tuple(dict.fromkeys(n.strip() for n in spec.split(",") if n.strip()))
    if not names:
        raise OptionError("--style", f"{style!r}: give none, length, markdown, both or a comma list of features")
    if names == ("none",):  # ('none,', as 'length,' is 'length')
        return ()
    if "none" in names:
        raise OptionError("--style", f"{style!r}: 'none' cannot be combined with features")
    return names


def parse_anchor(text: str) -> tuple[str, float]:
    """``"mixtral-8x7b-instruct-v0.1=1114"`` -> ("mixtral-8x7b-instruct-v0.1", 1114.0); split at the last ``=``, as
    a model name may hold one."""
    model, sep, score = text.rpartition("=")
    try:
        value = float(score)
    except ValueError:
        value = None
    if not sep or not model.strip() or value is None:
        raise OptionError("--anchor", f"{text!r}: expected MODEL=SCORE, e.g. mixtral-8x7b-instruct-v0.1=1114")
    return model.strip(), ANCHOR_SCORE.check(value)
