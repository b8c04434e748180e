"""Online Elo as a :class:`~arena_cli.models.methods.RatingMethod`: FastChat's ``compute_online_elo``.

Every model starts at ``initial``; the votes are taken one at a time in vote order (by timestamp, else as
read), and each moves its two models by ``k`` times the surprise::

    e_a = 1 / (1 + base^((r_b − r_a) / scale)),   e_b = 1 / (1 + base^((r_a − r_b) / scale))
    r_a += k·(s_a − e_a),                          r_b += k·(1 − s_a − e_b)

with s_a = 1, ½, 0 for a win of model_a, a tie (``both_bad`` counts as a tie unless dropped), a win of
model_b. A weighted vote moves them by k·weight times the surprise (a vote of weight 0 is left out; a vote of
weight 3 moves ratings as one vote with three times the k, which is close to, not the same as, three votes in
a row). The result depends on the order of the votes. Defaults are FastChat's: k = 4, scale 400, base 10,
initial 1000. The ratings are reported on the log-odds scale (β = (r − initial)·ln(base)/scale), so with the
defaults the published score is the Elo rating itself.

Intervals: FastChat's ``get_bootstrap_result`` — online Elo on resamples of the votes drawn with replacement
(in the random order drawn), percentile intervals over the rounds; a model missing from a resample has no
rating in that round. The reported scores are the online ratings of the votes in order.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from arena_cli.errors import InputError
from arena_cli.models.design import A_WINS, Cells, Prepared
from arena_cli.models.methods import Progress, Ratings
from arena_cli.models.options import CIMethod, ResolvedFitOptions, Ties, parse_style

#: Votes per block of a bootstrap: the resamples' indices are drawn and held a block at a time.
BLOCK = 1 << 13


@dataclass(frozen=True)
class OnlineElo:
    """FastChat's online Elo (``compute_online_elo``), with its defaults."""

    k: float = 4.0
    scale: float = 400.0
    base: float = 10.0
    initial: float = 1000.0

    needs_order = True
    needs_strong_connection = False

    def rate(
        self,
        battles: Prepared,
        cells: Cells,
        variants: Mapping[str, ResolvedFitOptions],
        on_progress: Progress | None,
    ) -> dict[str, Ratings]:
        options = next(iter(variants.values()))
        _check(variants, options)
        if battles.vote_order is None:
            raise ValueError("online Elo needs the battles one row per vote, in vote order")
        score_a = battles.outcome / A_WINS  # 1, ½, 0
        ratings = self.ratings(battles.a, battles.b, score_a, battles.n_models, battles.weight)
        draws = None
        if options.ci is CIMethod.bootstrap:
            draws = self.bootstrap(
                battles.a, battles.b, score_a, battles.n_models, options.rounds, options.seed, options.workers, on_progress, battles.weight,
            )
        per_point = np.log(self.base) / self.scale
        rated = Ratings(
            method="elo",
            theta=(ratings - self.initial) * per_point,
            feature_names=(),
            draws=None if draws is None else (draws - self.initial) * per_point,
            settings={"k": self.k, "scale": self.scale, "base": self.base, "initial": self.initial, "vote_order": battles.vote_order},
        )
        return dict.fromkeys(variants, rated)

    def k_per_vote(self, n_votes: int, weight: np.ndarray | None) -> np.ndarray:
        """Each vote's k: ``k`` times its weight (None: every vote weighs 1)."""
        return np.full(n_votes, self.k) if weight is None else self.k * weight

    def ratings(self, a: np.ndarray, b: np.ndarray, score_a: np.ndarray, n_models: int, weight: np.ndarray | None = None) -> np.ndarray:
        """The ratings after the votes (model indices ``a``, ``b``, scores of ``a``, vote weights) in the order given.

        Each vote depends on the ratings the previous ones left, so this is a loop over the votes; on Python
        floats it runs FastChat's very arithmetic, several times faster than numpy on one vote at a time."""
        scale, base = self.scale, self.base
        rating = [self.initial] * n_models
        for i, j, s, k in zip(a.tolist(), b.tolist(), score_a.tolist(), self.k_per_vote(a.size, weight).tolist()):
            ra, rb = rating[i], rating[j]
            ea = 1 / (1 + base ** ((rb - ra) / scale))
            eb = 1 / (1 + base ** ((ra - rb) / scale))
            rating[i] = ra + k * (s - ea)
            rating[j] = rb + k * (1 - s - eb)
        return np.array(rating)

    def bootstrap(
        self, a: np.ndarray, b: np.ndarray, score_a: np.ndarray, n_models: int, rounds: int, seed: int,
        workers: int | None = None, on_progress: Progress | None = None, weight: np.ndarray | None = None,
    ) -> np.ndarray:
        """Ratings per round (rounds × models) on resamples of the votes, drawn with replacement in random order
        (each with its weight), reproducible from ``(seed, round)`` whatever the number of ``workers``; NaN for a model
        with no vote in the round's resample."""
        from arena_cli.models.uncertainty import available_cores

        workers = min(workers or available_cores(), rounds)
        groups = [range(start, rounds, workers) for start in range(workers)]
        job = (self, a, b, score_a, self.k_per_vote(a.size, weight), n_models, seed)
        if workers == 1:
            draws = [_resampled_ratings(job, groups[0], on_progress)]
        else:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
            with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context(method)) as pool:
                draws = list(pool.map(_resampled_ratings, [job] * workers, groups))
            if on_progress:
                on_progress(rounds, rounds)
        out = np.empty((rounds, n_models))
        for group, group_draws in zip(groups, draws):
            out[list(group)] = group_draws
        return out


def _resampled_ratings(
    job: tuple[OnlineElo, np.ndarray, np.ndarray, np.ndarray, np.ndarray, int, int], round_indices: range, on_progress: Progress | None = None,
) -> np.ndarray:
    """Online Elo on the resamples of ``round_indices`` (rounds × models).

    The rounds advance together, one vote of each per step, so a step is a few numpy operations on arrays as
    long as the rounds, in place. The update is FastChat's, written with e_b = 1 − e_a and base^x = e^(x·ln base)
    (equal up to rounding): r_a += k·(s_a − e_a), r_b −= the same."""
    elo, a, b, score_a, k_vote, n_models, seed = job
    rounds, n = len(round_indices), a.size
    generators = [np.random.default_rng([seed, 2, r]) for r in round_indices]
    rating = np.full(rounds * n_models, elo.initial)
    seen = np.zeros(rounds * n_models, dtype=bool)
    offset = np.arange(rounds) * n_models
    per_point = np.log(elo.base) / elo.scale
    ra, rb, step = np.empty(rounds), np.empty(rounds), np.empty(rounds)
    for start in range(0, n, BLOCK):
        steps = min(BLOCK, n - start)
        picks = np.stack([g.integers(0, n, steps) for g in generators], axis=1)  # (steps, rounds)
        index_a, index_b = a[picks] + offset, b[picks] + offset
        ks = k_vote[picks]
        scores = ks * score_a[picks]
        seen[index_a.ravel()] = True
        seen[index_b.ravel()] = True
        for t in range(steps):
            ia, ib = index_a[t], index_b[t]
            np.take(rating, ia, out=ra)
            np.take(rating, ib, out=rb)
            np.subtract(rb, ra, out=step)
            step *= per_point
            np.exp(step, out=step)
            step += 1.0
            np.divide(-ks[t], step, out=step)  # −k·e_a
            step += scores[t]                 # k·(s_a − e_a)
            rating[ia] = ra + step
            rating[ib] = rb - step
        if on_progress:
            on_progress(rounds * (start + steps) // n, rounds)
    rating[~seen] = np.nan
    return rating.reshape(rounds, n_models)


def _check(variants: Mapping[str, ResolvedFitOptions], options: ResolvedFitOptions) -> None:
    """Options online Elo has no use for are errors, not silently ignored."""
    if any(parse_style(v.style) for v in variants.values()):
        raise InputError("online Elo has no style covariates: use --style none (or the Bradley-Terry method)")
    if options.ties is Ties.davidson:
        raise InputError("online Elo counts a tie as half a win: --ties davidson is for Bradley-Terry")
    if options.ci is CIMethod.sandwich:
        raise InputError("online Elo has no sandwich covariance: its intervals come from --ci bootstrap")
    if options.cluster:
        raise InputError("online Elo resamples votes, not clusters: --cluster is for Bradley-Terry")
    if options.reweight or options.ridge:
        raise InputError("online Elo has no reweighting or ridge penalty: those are Bradley-Terry options")
    if options.position_bias:
        raise InputError("online Elo has no position term: --position-bias is for Bradley-Terry")
