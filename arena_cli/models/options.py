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
    arena_rank = "arena-rank"


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

# What each numeric fit option accepts (the CLI declares its options with these very rules).
RIDGE = Bounds("--ridge", low=0)
MIN_BATTLES = Bounds("--min-battles", low=1, integer=True)
ROUNDS = Bounds("--rounds", low=1, integer=True)
SEED = Bounds("--seed", low=0, integer=True)
CONFIDENCE = Bounds("--confidence", low=0, high=1, low_open=True, high_open=True)
WORKERS = Bounds("--workers", low=1, integer=True)
ANCHOR_SCORE = Bounds("--anchor")
TOP_K = Bounds("--top-k", low=1, integer=True)
#: Fewer expected draws than this beyond each end of an interval, rounds × (1 − confidence) / 2, and the ends
#: are among the few most extreme draws: their noise is of the order of the interval's width (below 100 rounds
#: at 95%). A fit then warns that its intervals are unreliable.
MIN_TAIL_DRAWS = 2.5


@dataclass(frozen=True)
class FitOptions:
    """Everything that determines a fit's numbers (``workers`` only changes how fast it runs).

    ``style``: ``none``, ``length``, ``markdown``, ``both`` or a comma list of feature groups, per-side
    features (``<name>_a``/``<name>_b`` columns) or numeric battle columns. ``ridge`` is the L2 penalty
    (ridge/2)·Σγ² added to the *mean* negative log-likelihood over battles (reweighting weights normalised to
    mean 1), i.e. arena-rank's ``reg``; on the summed log-likelihood it is (ridge·n/2)·Σγ².
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
    rounds: int = 1000
    seed: int = DEFAULT_SEED
    confidence: float = 0.95
    cluster: str | None = None
    solver: Solver = Solver.newton
    workers: int | None = None
    method: Method = Method.bradley_terry

    def __post_init__(self) -> None:
        """Accept plain strings for the choices (``ci="sandwich"``), as the CLI's enums are str enums."""
        enum_fields: tuple[tuple[str, type[Enum]], ...] = (
            ("ties", Ties), ("both_bad", BothBad), ("ci", CIMethod), ("solver", Solver), ("compat", Compat), ("method", Method),
        )
        for name, kind in enum_fields:
            value = getattr(self, name)
            if value is not None and not isinstance(value, kind):
                try:
                    object.__setattr__(self, name, kind(value))
                except ValueError:
                    choices = ", ".join(k.value for k in kind)
                    raise OptionError(f"--{name.replace('_', '-')}", f"{value!r}: expected one of {choices}") from None
        if isinstance(self.anchor, str):  # "model=1200", as on the command line
            object.__setattr__(self, "anchor", parse_anchor(self.anchor))
        elif self.anchor is not None:
            object.__setattr__(self, "anchor", (str(self.anchor[0]), float(ANCHOR_SCORE.check(self.anchor[1]))))

    def resolved(self) -> ResolvedFitOptions:
        """Concrete values for every ``None`` field, from the compat preset or the plain defaults."""
        styled = parse_style(self.style) != ()
        if self.compat is Compat.arena_rank:
            # arena-rank 0.1.1: BradleyTerry (no reweighting, no penalty) for plain fits; ContextualBradleyTerry
            # (reweighted, reg=1.0 on the mean log-likelihood) with style; sandwich intervals; every model kept.
            reweight, ridge, ci, min_battles = styled, 1.0 if styled else 0.0, CIMethod.sandwich, 1
        else:
            reweight, ridge, ci, min_battles = False, 0.0, CIMethod.bootstrap, DEFAULT_MIN_BATTLES
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(FitOptions)}
        out = ResolvedFitOptions(**{
            **fields,
            "reweight": reweight if self.reweight is None else self.reweight,
            "ridge": ridge if self.ridge is None else self.ridge,
            "ci": ci if self.ci is None else self.ci,
            "min_battles": min_battles if self.min_battles is None else self.min_battles,
        })
        out.validate()
        return out

    def validate(self) -> None:
        """Every numeric option within its :class:`~arena_cli.bounds.Bounds` (an :class:`OptionError` if not)."""
        for bounds, value in ((CONFIDENCE, self.confidence), (ROUNDS, self.rounds), (RIDGE, self.ridge),
                              (MIN_BATTLES, self.min_battles), (WORKERS, self.workers), (SEED, self.seed)):
            bounds.check(value)

    def few_rounds_warning(self) -> str | None:
        """Why intervals from these few resamples (or normal draws) should not be trusted, or None."""
        tail_share = (1 - self.confidence) / 2
        if self.rounds * tail_share >= MIN_TAIL_DRAWS:
            return None
        enough = math.ceil(round(MIN_TAIL_DRAWS / tail_share, 6))
        what = "rank ranges" if self.ci is CIMethod.sandwich else "intervals and rank ranges"
        return (f"--rounds {self.rounds}: {what} from fewer than {enough} draws are unreliable at confidence "
                f"{self.confidence:g} (about {self.rounds * tail_share:.2g} draws fall beyond each end, so the ends are the "
                "most extreme draws and may even exclude the estimate); use 1000, the default, for anything you publish")


@dataclass(frozen=True)
class ResolvedFitOptions(FitOptions):
    """:class:`FitOptions` with the preset-dependent fields filled in (:meth:`FitOptions.resolved`)."""

    anchor: tuple[str, float] | None = None  # a "model=score" string is parsed by FitOptions
    reweight: bool = False
    ridge: float = 0.0
    min_battles: int = DEFAULT_MIN_BATTLES
    ci: CIMethod = CIMethod.bootstrap


def parse_style(style: str) -> tuple[str, ...]:
    """``"both"`` -> its feature groups; ``"length,sentiment"`` -> the names as given; ``"none"`` -> ()."""
    from arena_cli.features.registry import VARIANTS

    spec = style.strip()
    if spec in VARIANTS:
        return tuple(VARIANTS[spec])
    names = tuple(dict.fromkeys(n.strip() for n in spec.split(",") if n.strip()))
    if not names:
        raise OptionError("--style", f"{style!r}: give none, length, markdown, both or a comma list of features")
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
