"""Uncertainty of a fit: sandwich covariance, the seeded parallel bootstrap, percentile and rank intervals.

Bootstrap resamples are defined once per round from ``(seed, round)`` alone, so draws are identical whatever
the number of workers or the machine, and several fits of the same battles (style variants) see the very same
resamples. A round first draws how many battles fall in each (ordered pair, outcome) cell — a multinomial over
the cells, which is all a plain fit needs — and then, only when a style fit needs per-battle counts, spreads
each cell's count uniformly over its battles; together this is exactly a multinomial resample of battles.
With ``cluster``, clusters are resampled instead and every battle inherits its cluster's count. Weighted votes
are resampled as votes: a drawn vote brings its own weight, so a vote of weight 3 is drawn (or not) as one.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from arena_cli.errors import InputError
from arena_cli.models.design import Cells, Design, credit_edges, mle_components, product, strongly_connected
from arena_cli.models.options import Solver
from arena_cli.models.solvers import Problem, Solution, gauge_fixed, newton, statsmodels_fit

#: Convergence of a bootstrap round's Newton steps: the last full step is below 1e-3, so the round's error
#: is of order 1e-6 log-odds (2e-4 score points), far below the Monte Carlo error of any percentile.
ROUND_TOL = 1e-3


# ------------------------------------------------------------------------------------------- sandwich


def sandwich(
    problem: Problem, theta: np.ndarray, count: np.ndarray, cluster: np.ndarray | None = None, *,
    arena_rank: bool = False, terms=None, fixed: np.ndarray | None = None,
) -> np.ndarray:
    """Robust (Huber-White) covariance J⁻¹ B J⁻¹ of θ in the Σβ = 0 gauge.

    J is the negative Hessian of the objective; B the outer products of the per-battle estimating functions
    (per-cluster sums with ``cluster``), centred so that a ridge penalty's non-zero mean score is removed.
    A battle's estimating function is its score times its weight (vote weight × reweighting factor): a vote
    of weight 3 is one observation, not three, so B takes weight² (statsmodels' GLM ``var_weights`` with HC0,
    not ``freq_weights``). Aggregated rows contribute count × the outer product of their common score.

    ``arena_rank=True`` reproduces arena-rank 0.1.1's formula instead (for ``--compat arena-rank``): its J
    leaves the ridge penalty out and adds 1e-5 per battle to the whole diagonal, and its centring term is
    ridge²·γγᵀ (λθ (λθ)ᵀ, λ on the mean scale). ``terms``: the solver's per-row terms at θ, when at hand.

    ``fixed``: parameters held where they are (a coefficient with no finite estimate, which the fit ran off
    towards infinity): the others' covariance is the one given them, and theirs is 0.
    """
    design = problem.design
    weight = design.row_weight
    cw = product(count, weight)
    n = float(count.sum())
    ridge_sum = problem.ridge_sum(count)
    terms = terms or problem.terms(theta, cw, ridge_sum)
    # the total score is ~0 at the maximum except for a ridge penalty's share; arena-rank's centring has no use for it
    total = None if arena_rank else problem.vector(cw * terms.s_d, cw * terms.s_t if problem.davidson else None)
    if cluster is None:
        factor = product(cw, weight)
        sd, st = terms.s_d, terms.s_t
        B = problem.matrix(factor * sd * sd, *((factor * sd * st, factor * st * st) if problem.davidson else ()))
        centring = None if total is None else np.outer(total, total) / n
    else:
        S = _cluster_scores(problem, terms, cw, cluster)
        B = np.asarray((S.T @ S).todense())
        if total is not None:
            share = np.bincount(cluster, count, minlength=S.shape[0]) / n
            shared = np.asarray(S.T @ share).ravel()
            centring = np.outer(total, shared) + np.outer(shared, total) - float(share @ share) * np.outer(total, total)
    if arena_rank:
        J = problem.information(terms, cw, np.zeros(problem.n_params)) + 1e-5 * n * np.eye(problem.n_params)
        penalised = problem.lambdas * theta
        centring = np.outer(penalised, penalised)
    else:
        J, _ = gauge_fixed(problem.information(terms, cw, ridge_sum), np.ones(problem.M, dtype=bool))
    free = np.ones(problem.n_params, dtype=bool) if fixed is None else ~fixed
    if not free.all():
        J, B = J[np.ix_(free, free)], B[np.ix_(free, free)]
        centring = None if centring is None else centring[np.ix_(free, free)]
    try:
        J_inv = np.linalg.inv(J)
    except np.linalg.LinAlgError:  # (terms collinear or confounded with the models are refused before the fit: a last resort)
        raise InputError("--ci sandwich: the fit's information matrix has no inverse, so its parameters are not all identified "
                         "(a style term that is a function of the models, say each model's answers always of one length); "
                         "fit without that term, or use --ci bootstrap") from None
    if free.all():
        return J_inv @ (B - centring) @ J_inv
    covariance = np.zeros((problem.n_params, problem.n_params))
    covariance[np.ix_(free, free)] = J_inv @ (B - centring) @ J_inv
    return covariance


def _cluster_scores(problem: Problem, terms, cw: np.ndarray, cluster: np.ndarray):
    """Sparse (clusters × parameters) matrix of per-cluster sums of weighted per-battle scores."""
    from scipy.sparse import coo_matrix

    design = problem.design
    M, k = problem.M, problem.k
    r = cw * terms.s_d
    a = design.pair_a[design.row_pair]
    b = design.pair_b[design.row_pair]
    rows = [cluster, cluster, *([cluster] * k)]
    cols = [a, b, *(np.full(r.size, M + j) for j in range(k))]
    vals = [r, -r, *(r * design.X[j] for j in range(k))]
    if problem.davidson:
        rows.append(cluster)
        cols.append(np.full(r.size, problem.n_params - 1))
        vals.append(cw * terms.s_t)
    G = int(cluster.max()) + 1
    return coo_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(G, problem.n_params)).tocsr()


def normal_draws(theta: np.ndarray, covariance: np.ndarray, rounds: int, seed: int) -> np.ndarray:
    """Draws from N(θ, V) (V may be singular along the gauge): rank intervals under the sandwich."""
    values, vectors = np.linalg.eigh(covariance)
    root = vectors * np.sqrt(np.clip(values, 0.0, None))
    z = np.random.default_rng([seed, 1]).standard_normal((rounds, theta.size))
    return theta + z @ root.T


# ------------------------------------------------------------------------------------------- resampling


@dataclass
class Resampler:
    """One battle resample per round, reproducible from ``(seed, round)``. ``count``: the battles of each row of
    ``cells.of_battle`` (None: one each), for designs whose rows are not aggregated by cell."""

    seed: int
    cells: Cells
    cluster: np.ndarray | None = None
    count: np.ndarray | None = None
    _order: np.ndarray | None = field(default=None, repr=False)
    _starts: np.ndarray | None = field(default=None, repr=False)

    @property
    def n_battles(self) -> int:
        return int(round(self.cells.size.sum()))

    def prepare_spread(self) -> tuple[np.ndarray, np.ndarray]:
        """Index battles by cell (done once, before workers fork, so they share it): the rows of the battles in
        cell order (a row of several battles once for each), and where each cell starts among them."""
        if self._order is None or self._starts is None:
            order = np.argsort(self.cells.of_battle, kind="stable")
            if self.count is not None:
                order = np.repeat(order, self.count[order].astype(np.int64))
            if order.size != self.n_battles:
                raise ValueError("battle-level resamples need the battles of every row")
            self._order = order
            self._starts = np.concatenate([[0], np.cumsum(self.cells.size[:-1])]).astype(np.int64)
        return self._order, self._starts

    def spread(self, cell_totals: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Per-row battle counts: each cell's count spread uniformly over the cell's battles, ``SPREAD_BLOCK``
        resampled battles at a time (each battle's cell, offset and row, taken whole, are arrays as long as the
        battles in every bootstrap worker: 40 MB each at 1M battles). The draws are the same as in one block:
        the generator's stream is the same whether drawn at once or in parts."""
        order, starts = self.prepare_spread()
        totals = cell_totals.astype(np.int64)
        ends = np.cumsum(totals)  # the resampled battles of cell c are ends[c] - totals[c] .. ends[c] - 1
        counts = np.zeros(self.cells.of_battle.size)
        for first in range(0, int(ends[-1]) if ends.size else 0, SPREAD_BLOCK):
            last = min(first + SPREAD_BLOCK, int(ends[-1]))
            cells = slice(int(np.searchsorted(ends, first, side="right")), int(np.searchsorted(ends, last - 1, side="right")) + 1)
            cell = np.repeat(np.arange(cells.start, cells.stop), np.minimum(ends[cells], last) - np.maximum(ends[cells] - totals[cells], first))
            offset = (rng.random(cell.size) * self.cells.size[cell]).astype(np.int64)
            np.add.at(counts, order[starts[cell] + offset], 1.0)
        return counts

    def draw(self, round_index: int) -> Sample:
        rng = np.random.default_rng([self.seed, 0, round_index])
        if self.cluster is None:
            totals = rng.multinomial(self.n_battles, self.cells.size / self.n_battles).astype(np.float64)
            return Sample(self, rng, totals, None)
        G = int(self.cluster.max()) + 1
        per_cluster = rng.multinomial(G, np.full(G, 1.0 / G)).astype(np.float64)
        cluster_totals = np.bincount(self.cells.of_battle, per_cluster[self.cluster], minlength=self.cells.n_cells)
        return Sample(self, rng, cluster_totals, per_cluster)


#: Resampled battles per block of :meth:`Resampler.spread`.
SPREAD_BLOCK = 1 << 18


@dataclass
class Sample:
    """One round's resample: counts per cell, and per design row on demand."""

    resampler: Resampler
    rng: np.random.Generator
    cell_totals: np.ndarray
    per_cluster: np.ndarray | None
    _per_battle: np.ndarray | None = None

    def per_battle(self) -> np.ndarray:
        if self._per_battle is None:
            if self.per_cluster is not None:
                self._per_battle = self.per_cluster[self.resampler.cluster]
            else:
                self._per_battle = self.resampler.spread(self.cell_totals, self.rng)
        return self._per_battle

    def row_counts(self, design: Design) -> np.ndarray:
        if not design.aggregated:
            return self.per_battle()
        if design.row_cluster is None or self.per_cluster is None:
            return self.cell_totals[design.row_cell]
        return design.row_count * self.per_cluster[design.row_cluster]


def sample_status(cells: Cells, totals: np.ndarray, n_models: int) -> tuple[np.ndarray, np.ndarray]:
    """(active models, fill values) of a resample: models outside its main comparison component get
    +inf (only ever won against it), -inf (only ever lost) or NaN (no comparison at all) instead of a fit."""
    present = totals > 0
    a, b = cells.pair_a[cells.pair[present]], cells.pair_b[cells.pair[present]]
    involved = np.zeros(n_models, dtype=bool)
    involved[a] = involved[b] = True
    edges = credit_edges(a, b, cells.outcome[present], n_models)
    fill = np.full(n_models, np.nan)
    if involved.all() and strongly_connected(edges, n_models, involved):
        return involved, fill
    main, above, below = mle_components(edges, n_models, involved)
    fill[above] = np.inf
    fill[below] = -np.inf
    return main, fill


# -------------------------------------------------------------------------------------------- bootstrap


@dataclass(frozen=True)
class BootstrapJob:
    """Everything a worker needs: the problems (one per style variant) and their full-data solutions."""

    problems: tuple[Problem, ...]
    solutions: tuple[Solution, ...]
    resampler: Resampler
    solver: Solver


_JOB: BootstrapJob | None = None


def _install(job: BootstrapJob) -> None:
    from arena_cli.models.blas import use_one_thread

    global _JOB
    _JOB = job
    use_one_thread()


def _run_rounds(indices: Sequence[int]) -> list[list[np.ndarray]]:
    """Fit every problem on each round's resample; θ per (round, problem), inactive models filled."""
    job = _JOB
    assert job is not None, "_install runs before any round"
    out = []
    for index in indices:
        sample = job.resampler.draw(index)
        n_models = job.problems[0].M
        active, fill = sample_status(job.resampler.cells, sample.cell_totals, n_models)
        thetas = []
        for problem, solution in zip(job.problems, job.solutions):
            theta0 = solution.theta
            count = sample.row_counts(problem.design)
            if not active.all():
                pair_active = active[problem.design.pair_a] & active[problem.design.pair_b]
                count = np.where(pair_active[problem.design.row_pair], count, 0.0)
            if job.solver is Solver.statsmodels:
                theta = statsmodels_fit(problem, count, active).theta
            else:
                theta = newton(problem, count, theta0=theta0, terms0=solution.terms, active=active, tol=ROUND_TOL).theta
            beta = theta[:n_models]
            beta[active] += theta0[:n_models][active].mean() - beta[active].mean()
            beta[~active] = fill[~active]
            thetas.append(theta)
        out.append(thetas)
    return out


def bootstrap(
    job: BootstrapJob,
    rounds: int,
    workers: int | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> list[np.ndarray]:
    """θ draws per problem, shape (rounds, n_params), in round order (independent of ``workers``)."""
    workers = min(workers or available_cores(), rounds)
    for solution in job.solutions:  # every round starts from the full-data terms: computed once, before workers fork
        solution.settled()
    if any(not p.design.aggregated for p in job.problems) and job.resampler.cluster is None:
        job.resampler.prepare_spread()
    chunk = max(1, min(50, rounds // (workers * 8) or 1))
    batches = [list(range(start, min(start + chunk, rounds))) for start in range(0, rounds, chunk)]
    results: dict[int, list[list[np.ndarray]]] = {}
    done = 0
    if workers == 1:
        _install(job)
        for i, batch in enumerate(batches):
            results[i] = _run_rounds(batch)
            done += len(batch)
            if on_progress:
                on_progress(done, rounds)
    else:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor, as_completed

        method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
        context = multiprocessing.get_context(method)
        with ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=_install, initargs=(job,)) as pool:
            futures = {pool.submit(_run_rounds, batch): i for i, batch in enumerate(batches)}
            for future in as_completed(futures):
                i = futures[future]
                results[i] = future.result()
                done += len(batches[i])
                if on_progress:
                    on_progress(done, rounds)
    ordered = [thetas for i in range(len(batches)) for thetas in results[i]]
    return [np.stack([round_thetas[p] for round_thetas in ordered]) for p in range(len(job.problems))]


def available_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


# ------------------------------------------------------------------------------------ interval summaries


def percentile_interval(draws: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval per column. Undetermined draws (NaN) count against both bounds (−inf for the
    lower, +inf for the upper), and an infinite neighbour makes the bound infinite rather than NaN."""
    tail = (1.0 - confidence) / 2.0
    lower = _quantile(np.where(np.isnan(draws), -np.inf, draws), tail)
    upper = _quantile(np.where(np.isnan(draws), np.inf, draws), 1.0 - tail)
    return lower, upper


def _quantile(draws: np.ndarray, q: float) -> np.ndarray:
    """Linear-interpolation quantile per column (numpy's default), safe with infinities."""
    ordered = np.sort(draws, axis=0)
    position = q * (ordered.shape[0] - 1)
    low, frac = int(np.floor(position)), position - np.floor(position)
    below, above = ordered[low], ordered[min(low + 1, ordered.shape[0] - 1)]
    with np.errstate(invalid="ignore"):
        value = below + frac * (above - below)
    return np.where(np.isfinite(below) & np.isfinite(above), value, np.where(frac > 0, above, below))


def ranks_of(score_draws: np.ndarray) -> np.ndarray:
    """Rank of each model in each draw: 1 + the number of models scoring strictly higher (NaN: rank 0,
    and not counted against the others)."""
    descending = -score_draws  # NaN sorts last, after every known score, and equals nothing
    order = np.argsort(descending, axis=1, kind="stable")
    ordered = np.take_along_axis(descending, order, axis=1)
    new = np.ones(ordered.shape, dtype=bool)
    new[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    # a score's rank is 1 + the position where its value first appears in the descending order
    first = np.maximum.accumulate(np.where(new, np.arange(ordered.shape[1]), 0), axis=1)
    ranks = np.empty(score_draws.shape, dtype=np.int32)
    np.put_along_axis(ranks, order, (1 + first).astype(np.int32), axis=1)
    ranks[np.isnan(score_draws)] = 0
    return ranks


def rank_interval(rank_draws: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """Best and worst plausible rank: outer percentiles of the rank draws (an undetermined rank counts as
    1 for the best bound and as last for the worst)."""
    tail = (1.0 - confidence) / 2.0
    n_models = rank_draws.shape[1]
    best = np.quantile(np.where(rank_draws == 0, 1, rank_draws), tail, axis=0, method="lower")
    worst = np.quantile(np.where(rank_draws == 0, n_models, rank_draws), 1.0 - tail, axis=0, method="higher")
    return best.astype(np.int64), worst.astype(np.int64)


def lmarena_rank(lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """LMArena's rank: 1 + the number of models whose lower bound exceeds this model's upper bound."""
    return 1 + (lower[None, :] > upper[:, None]).sum(axis=1)
