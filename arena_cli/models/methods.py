"""The seam between the fit's shared steps and a rating method.

A fit reads and encodes the battles (:mod:`arena_cli.models.design`), hands them to a :class:`RatingMethod`,
and turns what the method estimates (:class:`Ratings`) into a :class:`~arena_cli.models.result.FitResult`
(:mod:`arena_cli.models.engine`): scores on the published scale, the anchor, intervals from a covariance or
from draws, ranks and rank intervals, the leaderboard. A method only estimates; it never builds tables.

    class RatingMethod(Protocol):
        needs_order: bool             # one row per vote, in vote order
        needs_strong_connection: bool # models without a finite maximum-likelihood score are left out
        def rate(self, battles, cells, variants, on_progress) -> dict[str, Ratings]: ...

Methods: :class:`~arena_cli.models.bradley_terry.BradleyTerry` (plain, style-controlled, Davidson ties) and
:class:`~arena_cli.models.elo.OnlineElo` (FastChat's online Elo).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from arena_cli.models.options import Method, ResolvedFitOptions

if TYPE_CHECKING:
    from arena_cli.models.design import Cells, Prepared

#: Progress of a long computation (done, total): bootstrap rounds.
Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class Ratings:
    """What a method estimates for one style variant, on the log-odds scale.

    ``theta`` = (β per model, γ per style feature of ``feature_names``[, log ν when ``tie_parameter``]): β is
    the strength (P(a beats b) = σ(β_a − β_b) at equal style) in the Σβ = 0 gauge, indexed like the battles'
    models. Intervals come from ``covariance`` (of θ; normal intervals) when there is one, else from ``draws``
    (rounds × θ: percentile intervals); ranks from ``draws``. A draw's NaN β marks a model the round could not
    rate, ±inf one that only won or only lost.

    ``method`` is the name the settings record; ``settings`` the method's own entries (its parameters);
    ``libraries`` modules whose versions the numbers depend on, besides numpy and polars; ``warnings`` what
    the method wants the user to know; ``unbounded`` the style terms (or the position term) whose coefficient has
    no finite estimate, shown without an interval.
    """

    method: str
    theta: np.ndarray
    feature_names: tuple[str, ...]
    tie_parameter: bool = False
    covariance: np.ndarray | None = None
    draws: np.ndarray | None = None
    settings: Mapping[str, Any] = field(default_factory=dict)
    libraries: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    unbounded: tuple[str, ...] = ()


class RatingMethod(Protocol):
    """Battles in, :class:`Ratings` out.

    ``needs_order``: the battles must come one row per vote, in vote order (by ``timestamp``, then the order
    they were read), as an order-dependent method needs; otherwise identical votes may be aggregated into one
    row with a ``count``, which is all an order-free likelihood needs. ``needs_strong_connection``: models
    that would have no finite maximum-likelihood score (never lost, never won, ...) are left out beforehand.
    """

    @property
    def needs_order(self) -> bool: ...

    @property
    def needs_strong_connection(self) -> bool: ...

    def rate(
        self,
        battles: Prepared,
        cells: Cells,
        variants: Mapping[str, ResolvedFitOptions],
        on_progress: Progress | None,
    ) -> dict[str, Ratings]:
        """Rate the models of ``battles`` once per variant (name -> options; the variants differ only in
        ``style``, and ``battles`` has the features of all of them). With ``ci=bootstrap`` every variant sees the
        same resamples, round by round. ``cells``: the battles' pair-outcome cells (:func:`design.cells`)."""
        ...


def rating_method(method: Method) -> RatingMethod:
    """The implementation of ``method``."""
    if method is Method.elo:
        from arena_cli.models.elo import OnlineElo

        return OnlineElo()
    from arena_cli.models.bradley_terry import BradleyTerry

    return BradleyTerry()
