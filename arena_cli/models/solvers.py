"""Maximum-likelihood solvers for Bradley-Terry (binomial, ties as y = 0.5) and Davidson's tie model.

Parameterisation: θ = (β_1..β_M, γ_1..γ_k[, τ]). For a battle of models a and b with style differences x,
the linear predictor is d = β_a − β_b + γ·x. With a position term the last row of x is 1 for every battle:
its γ is π, the log-odds advantage of the model shown first (model_a).

* Bradley-Terry: P(a wins) = σ(d); a battle with outcome code c ∈ {0, 1, 2} contributes
  y·d − log(1 + e^d) with y = c/2, so a tie is half a win each way.
* Davidson: P(a) ∝ e^{d/2}, P(b) ∝ e^{−d/2}, P(tie) ∝ ν = e^τ. β keeps its Bradley-Terry meaning
  (σ(d) = P(a wins | not a tie)).

The objective is Σ_rows count·weight·loglik − ½·Σ_j λ_j·θ_j², the penalty of :class:`~arena_cli.models.options.Penalty`:
λ = ridge on each style coefficient (and rating_ridge on each β) on the summed scale, times the number of
battles (or their total vote weight) when it is on the mean log-likelihood scale (arena-rank's ``reg``);
the position term and τ are not penalised. β is identified up to a common shift (a penalty on β picks
Σβ = 0 itself); the solver fixes the gauge Σβ = 0 by adding a rank-one term along the null direction of the
Hessian, which leaves the Newton step unchanged and makes the system positive definite.

Model-shaped sums use ``np.bincount`` over pairs; the few dense products (features × battles) use BLAS, which
the engine keeps single-threaded (``arena_cli.models.blas``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import TypeVar

import numpy as np

from arena_cli.models.design import Design, is_ones, product
from arena_cli.models.options import Penalty

T = TypeVar("T")


class Solution:
    """θ at the maximum, and the per-row terms there (reused by the sandwich and by every bootstrap round; None
    from statsmodels). A Newton run that ends on a full step has not computed the terms at its last θ: they are
    computed when first asked for, as a fit without intervals and a bootstrap round never are (a pass over every
    battle: 15% of a style fit's Newton time)."""

    def __init__(self, theta: np.ndarray, iterations: int, terms: _RowTerms | None = None, later: Callable[[], _RowTerms] | None = None):
        self.theta = theta
        self.iterations = iterations
        self._terms = terms
        self._later = later

    @property
    def terms(self) -> _RowTerms | None:
        return self.settled()._terms

    def settled(self) -> Solution:
        """This solution with its terms computed (and no function to compute them: it can be pickled)."""
        if self._later is not None:
            self._terms, self._later = self._later(), None
        return self


@dataclass
class _RowTerms:
    """Per-row log-likelihood, score and information in the predictor d (and τ for Davidson)."""

    objective: float
    s_d: np.ndarray
    h_dd: np.ndarray
    s_t: np.ndarray | None = None
    h_dt: np.ndarray | None = None
    h_tt: np.ndarray | None = None


class Workers:
    """Threads that share a Newton run's blocks of rows (numpy lets go of the interpreter in their arithmetic and
    ``np.bincount``). Each block's results are taken in block order, so sums over blocks, and so the fit, are the
    same bits whatever the number of threads. Use as a context manager (the threads end with it)."""

    def __init__(self, count: int = 1):
        self.count = max(1, count)
        self.pool: ThreadPoolExecutor | None = None

    def __enter__(self) -> Workers:
        if self.count > 1:
            self.pool = ThreadPoolExecutor(self.count)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.pool is not None:
            self.pool.shutdown()
            self.pool = None

    def in_order(self, compute: Callable[[slice, int], T], blocks: Sequence[slice]) -> Iterator[T]:
        """``compute(rows, slot)`` of each block, in block order, ``count`` blocks at a time (``slot``: which of
        them, for its work arrays)."""
        if self.pool is None or len(blocks) < 2:
            yield from (compute(rows, 0) for rows in blocks)
            return
        for start in range(0, len(blocks), self.count):
            wave = blocks[start : start + self.count]
            yield from self.pool.map(compute, wave, range(len(wave)))

    def runs(self, compute: Callable[[slice, int], T], blocks: Sequence[slice]) -> list[T]:
        """``compute(rows, slot)`` of each block, in block order, each thread taking a run of neighbouring blocks
        (``slot``: the run): for work that sums nothing across blocks."""
        count = min(self.count, len(blocks)) if self.pool is not None else 1
        size = -(-len(blocks) // count) if blocks else 0

        def run(slot: int) -> list[T]:
            return [compute(rows, slot) for rows in blocks[slot * size : (slot + 1) * size]]

        if count == 1 or self.pool is None:
            return run(0)
        return [result for results in self.pool.map(run, range(count)) for result in results]


#: One thread: no pool.
SERIAL = Workers()


class Problem:
    """A design with its fixed options; evaluates objective, gradient and information at θ.

    ``position``: the design's last feature row is the position term (never penalised)."""

    def __init__(self, design: Design, *, davidson: bool, penalty: Penalty = Penalty(), position: bool = False):
        self.design = design
        self.davidson = davidson
        self.penalty = penalty
        self.position = position
        self.M = design.n_models
        self.k = design.n_features
        self.n_params = self.M + self.k + int(davidson)
        #: λ per parameter, on the scale of ``penalty`` (per vote, or summed)
        self.lambdas = np.zeros(self.n_params)
        self.lambdas[: self.M] = penalty.ratings
        self.lambdas[self.M : self.M + self.k - int(position)] = penalty.coefficients
        self.pair_key = design.pair_a * self.M + design.pair_b
        self.n_pairs = design.pair_a.size
        if davidson:
            self.u = (design.row_outcome.astype(np.float64) - 1.0) / 2.0
            self.is_tie = (design.row_outcome == 1).astype(np.float64)
        self._scratch: dict[tuple[str, int], np.ndarray] = {}

    def scratch(self, name: str, shape: tuple[int, ...], slot: int = 0) -> np.ndarray:
        """A work array kept between calls (one per ``slot``: per thread): with millions of rows, fresh
        temporaries every Newton step cost more in page faults than in arithmetic. Never returned to callers."""
        array = self._scratch.get((name, slot))
        if array is None or array.shape != shape:
            array = self._scratch[name, slot] = np.empty(shape)
        return array

    def chunks(self, size: int | None = None) -> Iterator[slice]:
        """Rows in blocks of ``size`` (default ``CHUNK``): per-row temporaries live in a few cache-sized work
        arrays, not in arrays as long as the battles."""
        n, size = self.design.n_rows, size or CHUNK
        return (slice(start, min(start + size, n)) for start in range(0, n, size))

    # -- per-row terms ----------------------------------------------------------------------------------
    def predictor(self, theta: np.ndarray, rows: slice = slice(None), out: np.ndarray | None = None, slot: int = 0) -> np.ndarray:
        """d = β_a − β_b + γ·x for ``rows``."""
        beta = theta[: self.M]
        d = np.take(beta[self.design.pair_a] - beta[self.design.pair_b], self.design.row_pair[rows], out=out)
        if self.k:
            d += np.dot(theta[self.M : self.M + self.k], self.design.X[:, rows], out=self.scratch("style", (CHUNK,), slot)[: d.size])
        return d

    def ridge_sum(self, count: np.ndarray) -> np.ndarray:
        """λ per parameter on the summed scale for a resample with these battle counts (a per-vote penalty is
        weighted by the vote weights: votes of weight 3 weigh on it as three votes do)."""
        if not self.penalty.per_vote:
            return self.lambdas
        votes = count if self.design.vote_weight is None else count * self.design.vote_weight
        return self.lambdas * float(votes.sum())

    def terms(
        self, theta: np.ndarray, cw: np.ndarray, ridge_sum: np.ndarray, objective: bool = True, into: _RowTerms | None = None,
        workers: Workers = SERIAL,
    ) -> _RowTerms:
        """Per-row terms at θ; ``objective=False`` skips the log-likelihood (NaN), 40% of the cost, when no line
        search needs it. ``into``: terms no longer needed, whose arrays are overwritten (two arrays as long as
        the battles not allocated again)."""
        penalty = 0.5 * float(ridge_sum @ (theta * theta))
        if self.davidson:
            return self._davidson_terms(theta, cw, penalty)
        n = self.design.n_rows
        s_d, h_dd = (into.s_d, into.h_dd) if into is not None else (np.empty(n), np.empty(n))
        per_block = workers.runs(lambda rows, slot: self._block_terms(theta, rows, cw, s_d, h_dd, objective, slot), list(self.chunks()))
        value = 0.0 if objective else np.nan
        for block_value in per_block:  # (summed in block order)
            value += block_value
        return _RowTerms(value - penalty, s_d, h_dd)

    def _block_terms(self, theta: np.ndarray, rows: slice, cw: np.ndarray, s_d: np.ndarray, h_dd: np.ndarray, objective: bool, slot: int) -> float:
        """The terms of one block of rows into ``s_d`` and ``h_dd``, with work arrays of ``slot``; its log-likelihood."""
        m = rows.stop - rows.start
        d = self.predictor(theta, rows, out=self.scratch("d", (CHUNK,), slot)[:m], slot=slot)
        e, q = self.scratch("e", (CHUNK,), slot)[:m], self.scratch("q", (CHUNK,), slot)[:m]
        s, h = s_d[rows], h_dd[rows]
        y = np.multiply(self.design.row_outcome[rows], 0.5, out=self.scratch("y", (CHUNK,), slot)[:m])  # 1, ½, 0: a win, a tie, a loss
        np.exp(np.negative(np.abs(d, out=e), out=e), out=e)  # e^-|d|
        np.reciprocal(np.add(e, 1.0, out=q), out=q)  # 1 / (1 + e^-|d|)
        np.multiply(e, q, out=s)  # P(a wins) = e/(1 + e) where d < 0 ...
        np.multiply(s, q, out=h)  # p(1 - p) = e / (1 + e)²
        np.copyto(s, q, where=d >= 0)  # ... and 1/(1 + e) where d ≥ 0: accurate in both tails
        np.subtract(y, s, out=s)  # the score y - p
        if not objective:
            return 0.0
        softplus = np.log1p(e, out=e)
        softplus += np.maximum(d, 0.0, out=q)
        return float(cw[rows] @ np.subtract(np.multiply(y, d, out=q), softplus, out=q))

    def _davidson_terms(self, theta: np.ndarray, cw: np.ndarray, penalty: float) -> _RowTerms:
        d = np.concatenate([self.predictor(theta, rows) for rows in self.chunks()]) if self.design.n_rows else np.zeros(0)
        tau = theta[-1]
        half = 0.5 * d
        m = np.maximum(np.abs(half), tau)
        za, zb, zt = np.exp(half - m), np.exp(-half - m), np.exp(tau - m)
        z = za + zb + zt
        pa, pb, pt = za / z, zb / z, zt / z
        loglik = np.where(self.is_tie > 0, tau, self.u * d) - (m + np.log(z))
        diff = pa - pb
        return _RowTerms(
            objective=float(cw @ loglik) - penalty,
            s_d=self.u - 0.5 * diff,
            h_dd=0.25 * (pa + pb) - 0.25 * diff * diff,
            s_t=self.is_tie - pt,
            h_dt=-0.5 * diff * pt,
            h_tt=pt * (1.0 - pt),
        )

    # -- assembly ---------------------------------------------------------------------------------------
    def _model_sums(self, per_row: np.ndarray, workers: Workers = SERIAL) -> np.ndarray:
        """Σ over rows with model m as a minus Σ with m as b: the β-part of a per-row quantity."""
        return self._pair_sums_by_model(self._pair_sums(per_row, workers=workers))

    def _pair_sums(self, per_row: np.ndarray, factor: np.ndarray | None = None, workers: Workers = SERIAL) -> np.ndarray:
        """Σ per pair of a per-row quantity (times ``factor``), a block of rows at a time: ``np.bincount`` copies
        32-bit indices to 64-bit ones, so a single call would copy every row's (0.8 GB at 100M battles)."""
        row_pair, size = self.design.row_pair, self._block_rows()
        if row_pair.size <= size:
            return np.bincount(row_pair, per_row if factor is None else factor * per_row, minlength=self.n_pairs)
        sums = np.zeros(self.n_pairs)
        block_sums = lambda rows, slot: np.bincount(row_pair[rows], self._block(per_row, factor, rows, slot), minlength=self.n_pairs)  # noqa: E731
        for found in workers.in_order(block_sums, list(self.chunks(size))):
            sums += found
        return sums

    def _block_rows(self) -> int:
        """Rows per block of the per-pair sums: each block's sums cost a pass over all pairs, so a block has several
        times as many rows as there are pairs; but no more than ``PAIR_BLOCK``, so that two threads share even a
        million rows of a few hundred models (of 10⁵ pairs) evenly, in work arrays of a few MB."""
        return max(CHUNK, min(8 * self.n_pairs, PAIR_BLOCK))

    def _block(self, per_row: np.ndarray, factor: np.ndarray | None, rows: slice, slot: int = 0) -> np.ndarray:
        """``rows`` of a per-row quantity, times ``factor`` (into a work array: never a product of every row)."""
        if factor is None:
            return per_row[rows]
        return np.multiply(factor[rows], per_row[rows], out=self.scratch("factored", (self._block_rows(),), slot)[: rows.stop - rows.start])

    def _pair_sums_by_model(self, per_pair: np.ndarray) -> np.ndarray:
        return np.bincount(self.design.pair_a, per_pair, minlength=self.M) - np.bincount(self.design.pair_b, per_pair, minlength=self.M)

    def vector(self, w_d: np.ndarray, w_t: np.ndarray | None, workers: Workers = SERIAL) -> np.ndarray:
        """Σ_rows w_d·∂d/∂θ (+ w_t·∂τ/∂θ): the log-likelihood gradient when w are weighted scores."""
        out = np.empty(self.n_params)
        out[: self.M] = self._model_sums(w_d, workers)
        if self.k:
            out[self.M : self.M + self.k] = self.design.X @ w_d
        if self.davidson:
            assert w_t is not None, "a Davidson problem has a tie term"
            out[-1] = w_t.sum()
        return out

    def matrix(
        self, w_dd: np.ndarray, w_dt: np.ndarray | None = None, w_tt: np.ndarray | None = None, *, factor: np.ndarray | None = None,
        workers: Workers = SERIAL,
    ) -> np.ndarray:
        """Σ_rows (∂d/∂θ, ∂τ/∂θ) W (∂d/∂θ, ∂τ/∂θ)ᵀ for a per-row symmetric 2×2 W (1×1 without τ); ``factor``: the
        per-row factor of ``w_dd`` (taken a block at a time, Bradley-Terry only).

        With W the information this is the negative Hessian; with W the score outer product, the sandwich meat.
        The model×model block is a weighted graph Laplacian built from per-pair sums.
        """
        M, k = self.M, self.k
        out = np.zeros((self.n_params, self.n_params))
        assert factor is None or w_dt is None, "a factor is taken for the Bradley-Terry term only"
        per_pair = self._pair_sums(w_dd, factor, workers)
        W = np.bincount(self.pair_key, per_pair, minlength=M * M).reshape(M, M)
        block = -(W + W.T)
        block[np.diag_indices(M)] += W.sum(axis=0) + W.sum(axis=1)
        out[:M, :M] = block
        if k:
            X, row_pair = self.design.X, self.design.row_pair
            per_pair_cross, gram = np.zeros((k, self.n_pairs)), np.zeros((k, k))
            size = self._block_rows()

            def block_sums(rows: slice, slot: int) -> tuple[list[np.ndarray], np.ndarray]:
                weighted = np.multiply(X[:, rows], self._block(w_dd, factor, rows, slot), out=self.scratch("weighted", (k, size), slot)[:, : rows.stop - rows.start])
                return [np.bincount(row_pair[rows], weighted[j], minlength=self.n_pairs) for j in range(k)], weighted @ X[:, rows].T

            for cross_sums, block_gram in workers.in_order(block_sums, list(self.chunks(size))):
                for j in range(k):
                    per_pair_cross[j] += cross_sums[j]
                gram += block_gram
            cross = np.stack([self._pair_sums_by_model(per_pair) for per_pair in per_pair_cross], axis=1)
            out[:M, M : M + k] = cross
            out[M : M + k, :M] = cross.T
            out[M : M + k, M : M + k] = gram
        if self.davidson:
            assert w_dt is not None and w_tt is not None, "a Davidson problem has tie terms"
            bt = self._model_sums(w_dt)
            out[:M, -1] = out[-1, :M] = bt
            if k:
                out[M : M + k, -1] = out[-1, M : M + k] = self.design.X @ w_dt
            out[-1, -1] = w_tt.sum()
        return out

    def information(self, terms: _RowTerms, cw: np.ndarray, ridge_sum: np.ndarray, workers: Workers = SERIAL) -> np.ndarray:
        """Negative Hessian of the objective (penalty included)."""
        if self.davidson:
            J = self.matrix(product(cw, terms.h_dd), cw * terms.h_dt, cw * terms.h_tt, workers=workers)
        else:  # (cw · h_dd a block at a time: at 100M battles a product of every row is 0.8 GB each Newton step)
            J = self.matrix(terms.h_dd, factor=None if is_ones(cw) else cw, workers=workers)
        J[np.diag_indices(self.n_params)] += ridge_sum
        return J

    def gradient(self, theta: np.ndarray, terms: _RowTerms, cw: np.ndarray, ridge_sum: np.ndarray, workers: Workers = SERIAL) -> np.ndarray:
        """Gradient of the objective (penalty included)."""
        g = self.vector(product(cw, terms.s_d), cw * terms.s_t if self.davidson else None, workers)
        g -= ridge_sum * theta
        return g


def gauge_fixed(J: np.ndarray, active: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """J plus c·vvᵀ with v the indicator of active models: positive definite, same solution on Σβ = 0.

    Restricted to the active parameters (inactive models have no battles in this fit).
    """
    M = active.size
    keep = np.concatenate([active, np.ones(J.shape[0] - M, dtype=bool)])
    sub = J[np.ix_(keep, keep)].copy()
    m = int(active.sum())
    scale = max(float(np.trace(sub[:m, :m])) / m, 1e-12)
    sub[:m, :m] += scale / m
    return sub, keep


def newton(
    problem: Problem,
    count: np.ndarray,
    *,
    theta0: np.ndarray | None = None,
    terms0: _RowTerms | None = None,
    active: np.ndarray | None = None,
    tol: float = 1e-6,
    max_iter: int = 100,
    threads: int = 1,
) -> Solution:
    """Damped Newton to the maximum of the objective.

    Stops after a full Newton step that moved no parameter by more than ``tol``: convergence is quadratic
    there, so the remaining error is of order tol² (1e-12 by default; the gradient is then ~1e-10 per battle).
    Or earlier, after a full step of size s whose predicted successor κ·s² (κ = s / s_prev², measured on the
    last two full steps) is below tol / 100: that saves a pass over every battle, and the distance left to
    the maximum is that predicted step, far below ``tol``.

    ``count`` is the number of battles per row (a bootstrap resample changes it); ``active`` marks the models
    to fit (others must have zero counts); their β stay 0. ``terms0``: the per-row terms at ``theta0`` (they do
    not depend on the counts, so a bootstrap round reuses the full-data fit's). ``threads``: how many compute
    the per-row terms (the same result whatever the number).
    """
    with Workers(threads if problem.design.n_rows > CHUNK else 1) as workers:
        return _newton(problem, count, theta0, terms0, active, tol, max_iter, workers)


def _newton(
    problem: Problem, count: np.ndarray, theta0: np.ndarray | None, terms0: _RowTerms | None, active: np.ndarray | None,
    tol: float, max_iter: int, workers: Workers,
) -> Solution:
    design = problem.design
    cw = product(count, design.row_weight)
    ridge_sum = problem.ridge_sum(count)
    active = np.ones(problem.M, dtype=bool) if active is None else active
    if theta0 is None:
        theta = np.zeros(problem.n_params)
        if problem.davidson:
            tie_share = float(cw[design.row_outcome == 1].sum()) / float(cw.sum())
            theta[-1] = np.log(2.0 * tie_share / (1.0 - tie_share))  # ν giving that tie share at d = 0
    else:
        theta = theta0.copy()
        theta[: problem.M][~active] = 0.0
    if terms0 is not None and active.all():
        terms = replace(terms0, objective=np.nan)  # the objective depends on the counts: recomputed if needed
    else:  # (the objective only if a line search backtracks)
        terms = problem.terms(theta, cw, ridge_sum, objective=False, workers=workers)
    spares = _Spares(terms0)
    previous = 0.0  # size of the previous full step (0: none yet, no prediction)
    g: np.ndarray | None = None  # the gradient at θ, when a line search has computed it
    for iteration in range(1, max_iter + 1):
        if g is None:
            g = problem.gradient(theta, terms, cw, ridge_sum, workers)
        J, keep = gauge_fixed(problem.information(terms, cw, ridge_sum, workers), active)
        try:
            step_free = np.linalg.solve(J, g[keep])
        except np.linalg.LinAlgError:
            step_free = np.linalg.lstsq(J, g[keep], rcond=None)[0]
        step = np.zeros_like(theta)
        step[keep] = step_free
        size = float(np.max(np.abs(step)))
        converged = size < tol or size * size * size < PREDICTION_MARGIN * tol * previous * previous  # (when the step is taken in full; products, not powers, which raise on overflow where a step runs off)
        if size < TRUSTED_STEP:
            # close to the maximum the quadratic model is accurate: take the full step, no line search
            length, theta, g = 1.0, theta + step, None
            if converged:
                at = theta.copy()
                return Solution(_centred(theta, active, problem.M), iteration, later=lambda: _terms_at(problem, at, cw, ridge_sum, workers.count))
            terms = problem.terms(theta, cw, ridge_sum, objective=False, into=spares.replacing(terms), workers=workers)
        else:
            length, theta, terms, g = _line_search(problem, theta, terms, step, cw, ridge_sum, spares, workers)
        if length == 1.0 and converged:
            break
        previous = size if length == 1.0 else 0.0
    return Solution(_centred(theta, active, problem.M), iteration, terms)


def _terms_at(problem: Problem, theta: np.ndarray, cw: np.ndarray, ridge_sum: np.ndarray, threads: int) -> _RowTerms:
    with Workers(threads) as workers:
        return problem.terms(theta, cw, ridge_sum, objective=False, workers=workers)


def _centred(theta: np.ndarray, active: np.ndarray, M: int) -> np.ndarray:
    """θ with the active models' β at exact Σβ = 0 (the predictor, and so the per-row terms, are unchanged)."""
    beta = theta[:M]
    beta[active] -= beta[active].mean()
    return theta


#: Rows per block of the per-row computations (2 MB per work array).
CHUNK = 1 << 18
#: Rows per block of the per-pair sums, at most (see :meth:`Problem._block_rows`).
PAIR_BLOCK = 1 << 19
#: A Newton step moving no parameter by more than this (log-odds) is taken in full without a line search.
TRUSTED_STEP = 0.05
#: How far below ``tol`` the predicted next step must be to stop before taking it.
PREDICTION_MARGIN = 0.01


def _line_search(problem: Problem, theta, terms, step, cw, ridge_sum, spares: _Spares, workers: Workers):
    """The full step when the objective still rises at its end, told by the gradient there; else backtracking on
    the objective: halve the step until the objective does not decrease. Returns the step's length, θ and the terms
    there, and the gradient there when it was computed (else None).

    The objective is concave (log-sum-exp of affine functions, negated, plus linear terms and a ridge), so along
    the step its slope only falls: rising at the full step's end (gradient · step ≥ 0), it rose all along, and the
    full step is the one backtracking would take. That costs the gradient, needed next anyway, not the objective
    at both ends (two passes over every battle's log-likelihood)."""
    trial = theta + step
    trial_terms = problem.terms(trial, cw, ridge_sum, objective=False, into=spares.take(), workers=workers)
    trial_g = problem.gradient(trial, trial_terms, cw, ridge_sum, workers)
    if float(trial_g @ step) >= 0.0:
        return 1.0, trial, spares.swap(terms, trial_terms), trial_g
    spares.put(trial_terms)
    if np.isnan(terms.objective):
        terms = spares.swap(terms, problem.terms(theta, cw, ridge_sum, into=spares.take(), workers=workers))
    slack = 1e-12 * (1.0 + abs(terms.objective))
    length = 1.0
    while True:
        trial = theta + length * step
        trial_terms = problem.terms(trial, cw, ridge_sum, into=spares.take(), workers=workers)
        if trial_terms.objective >= terms.objective - slack or length < 1e-8:
            return length, trial, spares.swap(terms, trial_terms), None
        spares.put(trial_terms)
        length *= 0.5


class _Spares:
    """Per-row terms a Newton run no longer needs, to compute the next ones into: at 100M battles each set is
    1.6 GB, and a fresh one per step would double what the run holds. Never the caller's ``terms0`` (a
    bootstrap round's starting terms, shared by every round)."""

    def __init__(self, shared: _RowTerms | None):
        self.shared = shared
        self.free: _RowTerms | None = None

    def take(self) -> _RowTerms | None:
        free, self.free = self.free, None
        return free

    def put(self, terms: _RowTerms) -> None:
        if not self._shared(terms):
            self.free = terms

    def replacing(self, old: _RowTerms) -> _RowTerms | None:
        """Arrays for the terms that replace ``old``, which are not needed after: ``old``'s own, or a spare when
        ``old`` are the caller's (one set of terms held, not two, in a bootstrap round of small steps)."""
        return self.take() if self._shared(old) else old

    def _shared(self, terms: _RowTerms) -> bool:
        """Whether ``terms`` are the caller's ``terms0`` (or a copy of them with another objective)."""
        return self.shared is not None and terms.s_d is self.shared.s_d

    def swap(self, old: _RowTerms, new: _RowTerms) -> _RowTerms:
        """``new`` replaces ``old``, whose arrays are free from now on."""
        self.put(old)
        return new


# ------------------------------------------------------------------------------ statsmodels (reference)


def statsmodels_fit(problem: Problem, count: np.ndarray, active: np.ndarray | None = None) -> Solution:
    """The same fit by statsmodels: GLM Binomial for Bradley-Terry, a generic likelihood model for Davidson or a
    ridge penalty (numerical derivatives). Builds a dense design matrix: for small data and cross-checks."""
    import warnings

    design = problem.design
    cw = product(count, design.row_weight)
    ridge_sum = problem.ridge_sum(count)
    rows = np.flatnonzero(cw > 0)
    M, k = problem.M, problem.k
    fitted = np.flatnonzero(np.ones(M, dtype=bool) if active is None else active)
    # the first fitted model is the reference (β = 0) in statsmodels' parameterisation, and Σβ = 0 is restored
    # after; a penalty on β identifies every β itself (at Σβ = 0), so then every model has its column
    free = fitted if problem.penalty.ratings else fitted[1:]
    column = np.full(M, -1)
    column[free] = np.arange(free.size)
    n_models = free.size
    Z = np.zeros((rows.size, n_models + k))
    for model, sign in ((design.pair_a[design.row_pair[rows]], 1.0), (design.pair_b[design.row_pair[rows]], -1.0)):
        hit = column[model] >= 0
        Z[np.flatnonzero(hit), column[model[hit]]] += sign
    if k:
        Z[:, n_models:] = design.X[:, rows].T
    outcome = design.row_outcome[rows]
    import statsmodels.api as sm  # (imported outside the filter: statsmodels' import puts its own "always" filter first)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if not problem.davidson and not ridge_sum.any():
            model = sm.GLM(outcome * 0.5, Z, family=sm.families.Binomial(), freq_weights=cw[rows])
            params = model.fit(method="newton", tol=1e-14, maxiter=200, disp=0).params
        else:
            params = _generic_fit(problem, Z, outcome, cw[rows], ridge_sum[np.concatenate([free, np.arange(M, problem.n_params)])])
    theta = np.zeros(problem.n_params)
    theta[free] = params[:n_models]
    theta[fitted] -= theta[fitted].mean()
    theta[M:] = params[n_models:]
    return Solution(theta=theta, iterations=0)


def _generic_fit(problem: Problem, Z: np.ndarray, outcome: np.ndarray, weight: np.ndarray, ridge_sum: np.ndarray) -> np.ndarray:
    """Penalised Bradley-Terry or Davidson by statsmodels' GenericLikelihoodModel (its own numerical derivatives);
    ``ridge_sum``: λ per parameter of ``params``."""
    from statsmodels.base.model import GenericLikelihoodModel

    n_linear = Z.shape[1]

    class Pairwise(GenericLikelihoodModel):
        def loglike(self, params):
            d = Z @ params[:n_linear]
            penalty = 0.5 * float(ridge_sum @ (params * params))
            if not problem.davidson:
                return float(weight @ (outcome * 0.5 * d - np.logaddexp(0.0, d))) - penalty
            tau = params[-1]
            log_z = np.logaddexp(np.logaddexp(0.5 * d, -0.5 * d), tau)
            own = np.where(outcome == 2, 0.5 * d, np.where(outcome == 0, -0.5 * d, tau))
            return float(weight @ (own - log_z)) - penalty

    start = np.zeros(n_linear + int(problem.davidson))
    if problem.davidson:
        share = float(weight @ (outcome == 1)) / float(weight.sum())
        start[-1] = np.log(2.0 * share / (1.0 - share))
    model = Pairwise(outcome.astype(np.float64), Z)
    result = model.fit(start_params=start, method="bfgs", maxiter=5000, gtol=1e-9, disp=0)
    result = model.fit(start_params=result.params, method="newton", maxiter=50, tol=1e-12, disp=0)
    return np.asarray(result.params)
