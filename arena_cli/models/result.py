"""A fit's result: self-describing (leaderboard, coefficients, settings, draws) and renderable."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

if TYPE_CHECKING:
    from arena_cli.render.document import Document

#: The score scale: 1000 + POINTS_PER_LOGIT·β, i.e. 400 points for a factor of 10 in the odds (Elo-like).
SCORE_OFFSET = 1000.0
POINTS_PER_LOGIT = 400.0 / np.log(10.0)

LEADERBOARD_COLUMNS = (
    "rank", "rank_lower", "rank_upper", "model", "score", "score_lower", "score_upper", "battles", "wins", "ties", "losses",
)
#: With a baseline model (``--baseline-model``), after ``score_upper``: the predicted win rate against it.
WIN_RATE_COLUMNS = ("win_rate", "win_rate_lower", "win_rate_upper")
#: Output rounding (score points, log-odds): far below any meaningful difference, and enough to make the
#: JSON byte-identical across machines whose floating-point summation orders differ in the last bits.
SCORE_DECIMALS = 6
COEF_DECIMALS = 9


@dataclass(frozen=True)
class FitResult:
    """One fitted leaderboard.

    ``leaderboard`` has exactly :data:`LEADERBOARD_COLUMNS` (and :data:`WIN_RATE_COLUMNS` after the score with a
    baseline model), sorted by score (descending, then model); ``coefficients`` has ``feature, coef, lower,
    upper`` (log-odds per standard deviation of each style feature, and the position term's log-odds with
    ``position_bias``; empty without either). The arrays are indexed like ``models`` (alphabetical): ``beta`` is the
    natural-scale strength in the Σβ = 0 gauge, ``scores`` the published scores (anchor applied),
    ``covariance`` the sandwich covariance of (β, γ[, log ν]) (None unless ``ci=sandwich``),
    ``score_draws``/``gamma_draws``/``rank_draws`` one row per bootstrap round (or per normal draw under the
    sandwich; None with ``ci=none``). ``filters``, ``inputs``: which battles were fitted, and from where (the
    Python API fills them); ``warnings``: what the user should know (excluded models, skipped rows).
    """

    leaderboard: pl.DataFrame
    coefficients: pl.DataFrame
    settings: dict[str, Any]
    models: tuple[str, ...]
    beta: np.ndarray
    gamma: np.ndarray
    feature_names: tuple[str, ...]
    scores: np.ndarray
    covariance: np.ndarray | None
    score_draws: np.ndarray | None
    gamma_draws: np.ndarray | None
    rank_draws: np.ndarray | None
    log_nu: float | None
    warnings: tuple[str, ...]
    filters: dict[str, Any] = field(default_factory=dict)
    inputs: dict[str, Any] = field(default_factory=dict)

    def to_document(self) -> Document:
        """The leaderboard and coefficient tables, with settings, filters, inputs and warnings as ``meta``."""
        from arena_cli.render.views import leaderboard_document

        return leaderboard_document(self)

    @property
    def position(self) -> float:
        """The position term π (log-odds advantage of the model shown first), 0 without one."""
        from arena_cli.models.options import POSITION

        return float(self.gamma[self.feature_names.index(POSITION)]) if POSITION in self.feature_names else 0.0

    def index(self, model: str) -> int:
        try:
            return self.models.index(model)
        except ValueError:
            raise KeyError(f"{model!r} is not in this fit") from None


def predict_win_prob(result: FitResult, model_a: str | Sequence[str], model_b: str | Sequence[str]) -> float | np.ndarray:
    """Model-predicted P(model_a beats model_b) with equal style (style differences at their mean, 0), and the
    order they are shown in averaged out when the fit has a position term.

    Half a tie counts as half a win in the Bradley-Terry fit; under Davidson's model this is the probability
    of winning a battle that is not a tie.
    """
    scalar = isinstance(model_a, str) and isinstance(model_b, str)
    ia = np.array([result.index(m) for m in ([model_a] if isinstance(model_a, str) else model_a)])
    ib = np.array([result.index(m) for m in ([model_b] if isinstance(model_b, str) else model_b)])
    p = expected_score(result.beta[ia] - result.beta[ib], result.position)
    return float(p[0]) if scalar else p


def expected_score(delta: np.ndarray, position: float | np.ndarray = 0.0, log_nu: float | np.ndarray | None = None) -> np.ndarray:
    """The predicted share of wins (a tie counting half) of a model whose strength exceeds its opponent's by
    ``delta`` (log-odds) at equal style, averaged over the two orders of showing them: ½·(p(δ + π) + p(δ − π))
    for the position term π. p is σ under Bradley-Terry, P(win) + ½·P(tie) under Davidson's model (``log_nu``).
    Exactly ½ at δ = 0, whatever π and ν. Computed in log space, so that infinite strengths give 0 or 1."""
    delta = np.asarray(delta, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        return 0.5 * (_shown_first(delta + position, log_nu) + _shown_first(delta - position, log_nu))


def _shown_first(d: np.ndarray, log_nu: float | np.ndarray | None) -> np.ndarray:
    """σ(d); under Davidson's model (e^{d/2} + ν/2) / (e^{d/2} + e^{-d/2} + ν), which is σ of the log-ratio of
    (e^{d/2} + ν/2) and (e^{-d/2} + ν/2)."""
    if log_nu is not None:
        half_tie = np.asarray(log_nu) - np.log(2.0)
        d = np.logaddexp(0.5 * d, half_tie) - np.logaddexp(-0.5 * d, half_tie)
    return np.exp(-np.logaddexp(0.0, -d))


def leaderboard_frame(
    models: Sequence[str],
    scores: np.ndarray,
    lower: np.ndarray | None,
    upper: np.ndarray | None,
    rank: np.ndarray,
    rank_lower: np.ndarray | None,
    rank_upper: np.ndarray | None,
    records: dict[str, np.ndarray],
    win_rate: tuple[np.ndarray, np.ndarray | None, np.ndarray | None] | None = None,
) -> pl.DataFrame:
    """``win_rate``: (estimate, lower, upper) against the baseline model, when there is one."""
    n = len(models)

    def floats(values):
        return _column(np.round(values, SCORE_DECIMALS) if values is not None else None, n, pl.Float64)

    def ints(values):
        return _column(values, n, pl.Int64)

    frame = pl.DataFrame({
        "rank": ints(rank), "rank_lower": ints(rank_lower), "rank_upper": ints(rank_upper),
        "model": pl.Series(list(models), dtype=pl.String),
        "score": floats(scores), "score_lower": floats(lower), "score_upper": floats(upper),
        **({name: floats(values) for name, values in zip(WIN_RATE_COLUMNS, win_rate)} if win_rate is not None else {}),
        **{k: ints(records[k]) for k in ("battles", "wins", "ties", "losses")},
    })
    return frame.sort(["score", "model"], descending=[True, False], nulls_last=True)


def coefficient_frame(names: Sequence[str], coef: np.ndarray, lower: np.ndarray | None, upper: np.ndarray | None) -> pl.DataFrame:
    k = len(names)

    def floats(values):
        return _column(np.round(values, COEF_DECIMALS) if values is not None else None, k, pl.Float64)

    frame = pl.DataFrame({"feature": pl.Series(list(names), dtype=pl.String), "coef": floats(coef), "lower": floats(lower), "upper": floats(upper)})
    return frame.with_columns(pl.col("lower", "upper").fill_nan(None))  # (a coefficient with no finite estimate has no interval)


def _column(values: np.ndarray | None, n: int, dtype: pl.DataType) -> pl.Series:
    """A table column from per-model values (nulls when there are none). Built from a list: polars imports
    ``numpy.ma`` for the first series it makes from an array, 7-10 ms of a fit that makes no other."""
    return pl.Series(values.tolist() if values is not None else [None] * n, dtype=dtype)
