"""The objective every fit in bench/fit.py solves, in numpy and scipy only (the baselines' virtualenv runs it too).

arena-rank 0.1.1's defaults: plain Bradley-Terry, or style control with the four LMArena groups, reweighting
and reg = 1.0 on the mean log-likelihood (``arena fit --compat arena-rank``), solved FastChat's way: scipy
L-BFGS-B on an explicit loss and gradient.
"""

from __future__ import annotations

import numpy as np

#: LMArena's four style groups: the per-side counts each sums, by their flat column names (``<name>_a``) and by
#: their paths in the nested ``conv_metadata`` of the releases (``<path with side>``, dotted as pandas flattens).
FLAT_GROUPS = {
    "length": ["tokens"],
    "header": [f"h{i}" for i in range(1, 7)],
    "list": ["ordered", "unordered"],
    "bold": ["bold_star", "bold_underscore"],
}
META_GROUPS = {
    "length": ["sum_assistant_{s}_tokens"],
    "header": [f"header_count_{{s}}.h{i}" for i in range(1, 7)],
    "list": ["list_count_{s}.ordered", "list_count_{s}.unordered"],
    "bold": ["bold_count_{s}.**", "bold_count_{s}.__"],
}
OUTCOMES = {"model_a": 1.0, "model_b": 0.0}  # anything else (tie, both_bad, tie (bothbad)) is half a win


def style_matrix(side_sums: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """Per group (a sums, b sums): d = (a - b) / (a + b + 1), standardised (population sd)."""
    columns = []
    for a, b in side_sums:
        d = (a - b) / (a + b + 1.0)
        columns.append((d - d.mean()) / d.std())
    return np.column_stack(columns)


def fit_scores(style: str, n_models: int, a: np.ndarray, b: np.ndarray, y: np.ndarray, X: np.ndarray | None,
               gtol: float, maxiter: int) -> np.ndarray:
    """Scores (1000 + 400/ln10 * beta, mean 1000) of the arena-rank objective, by scipy L-BFGS-B."""
    from scipy.optimize import minimize
    from scipy.special import expit

    M = n_models
    if style == "none":
        keys, counts = np.unique((a * M + b) * 3 + (2 * y).astype(np.int64), return_counts=True)
        a, b, y, w = keys // 3 // M, keys // 3 % M, (keys % 3) / 2.0, counts.astype(float)
        k, reg = 0, 0.0
    else:
        assert X is not None, "a style fit needs its style matrix"
        lo, hi = np.minimum(a, b), np.maximum(a, b)
        _, pair, pair_counts = np.unique(lo * M + hi, return_inverse=True, return_counts=True)
        w = 1.0 / np.maximum(pair_counts[pair], 50)
        w /= w.mean()
        k, reg = X.shape[1], 1.0
    total = w.sum()

    def loss_and_grad(theta):
        d = theta[a] - theta[b]
        if k:
            d = d + X @ theta[M:]
        p = expit(d)
        loss = -np.sum(w * (y * d - np.logaddexp(0.0, d))) / total + 0.5 * reg * theta[M:] @ theta[M:]
        r = w * (y - p) / total
        grad = np.zeros_like(theta)
        grad[:M] = -(np.bincount(a, r, minlength=M) - np.bincount(b, r, minlength=M))
        if k:
            grad[M:] = -(X.T @ r) + reg * theta[M:]
        return loss, grad

    result = minimize(loss_and_grad, np.zeros(M + k), jac=True, method="L-BFGS-B",
                      options={"gtol": gtol, "ftol": 1e-15 if gtol < 1e-8 else 2.2e-9, "maxiter": maxiter, "maxcor": 20})
    beta = result.x[:M]
    return 1000.0 + 400.0 / np.log(10.0) * (beta - beta.mean())
