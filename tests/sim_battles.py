"""A fast vectorised generator of battles with known truth, for the fit's statistical tests and bench/fit.py.

Each model has a strength β (log-odds scale) and a verbosity; each response gets style counts (tokens,
headers, list items, bold spans) that grow with its model's verbosity. The winner follows

    logit P(a beats b) = β_a − β_b + Σ_g γ_g · (s_a − s_b) / (s_a + s_b + 1)

with s the per-side sums of each LMArena style group. Ties are drawn so that E[y] = σ(d) with y = 1, ½, 0
(``tie_model="bt"``: half-tie Bradley-Terry is then correctly specified in the mean) or from Davidson's model
(``tie_model="davidson"``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

#: The generated members of each LMArena style group (h1, h4..h6 are generated as zeros).
GROUPS = {"length": ("tokens",), "header": ("h2", "h3"), "list": ("ordered", "unordered"), "bold": ("bold_star", "bold_underscore")}


@dataclass(frozen=True)
class Truth:
    models: tuple[str, ...]
    beta: np.ndarray         # centred to mean 0
    verbosity: np.ndarray
    gamma: dict[str, float]  # per style group, on the raw (a − b)/(a + b + 1) scale
    nu: float | None         # Davidson tie parameter, when ties follow Davidson

    def scores(self) -> np.ndarray:
        return 1000.0 + 400.0 / np.log(10.0) * self.beta


def simulate(
    n_battles: int,
    n_models: int,
    *,
    seed: int,
    gamma: dict[str, float] | None = None,
    strength_sd: float = 0.6,
    tie_share: float = 0.3,
    tie_model: str = "bt",
    nu: float = 0.6,
    both_bad_share: float = 0.0,
    pair_skew: float = 0.0,
    n_judges: int = 0,
    judge_sd: float = 0.0,
) -> tuple[pl.DataFrame, Truth]:
    """Battles (model_a, model_b, outcome, per-side LMArena counts[, judge]) and the truth behind them.

    ``tie_share`` scales how often close battles tie (``bt`` ties); ``pair_skew`` > 0 makes some models
    battle far more often (non-uniform sampling); ``n_judges`` > 0 adds a ``judge`` column, and ``judge_sd``
    gives each judge its own perturbation of the strengths (a source of within-cluster correlation).
    """
    rng = np.random.default_rng(seed)
    gamma = dict(gamma or {})
    names = [f"model-{i:03d}" for i in range(n_models)]
    beta = rng.normal(0.0, strength_sd, n_models)
    beta -= beta.mean()
    verbosity = rng.normal(0.0, 1.0, n_models)

    popularity = np.exp(pair_skew * rng.normal(size=n_models))
    popularity /= popularity.sum()
    a = rng.choice(n_models, size=n_battles, p=popularity)
    b = (a + 1 + rng.choice(n_models - 1, size=n_battles)) % n_models

    def side(model: np.ndarray) -> dict[str, np.ndarray]:
        v = verbosity[model]
        n = model.size
        tokens = np.round(np.exp(5.5 + 0.6 * v + 0.5 * rng.normal(size=n))).astype(np.int64)
        rate = np.exp(0.8 * v)
        return {
            "tokens": tokens,
            "h2": rng.poisson(0.8 * rate), "h3": rng.poisson(0.6 * rate),
            "ordered": rng.poisson(1.5 * rate), "unordered": rng.poisson(2.0 * rate),
            "bold_star": rng.poisson(1.2 * rate), "bold_underscore": rng.poisson(0.1 * rate),
        }

    sa, sb = side(a), side(b)
    d = beta[a] - beta[b]
    for group, coef in gamma.items():
        ta = sum(sa[f] for f in GROUPS[group]).astype(np.float64)
        tb = sum(sb[f] for f in GROUPS[group]).astype(np.float64)
        d = d + coef * (ta - tb) / (ta + tb + 1.0)
    judge = None
    if n_judges:
        judge = rng.integers(0, n_judges, n_battles)
        taste = rng.normal(0.0, judge_sd, (n_judges, n_models))
        d = d + taste[judge, a] - taste[judge, b]

    u = rng.random(n_battles)
    if tie_model == "davidson":
        za, zb = np.exp(d / 2), np.exp(-d / 2)
        z = za + zb + nu
        p_a, p_t = za / z, nu / z
    else:
        p = 1.0 / (1.0 + np.exp(-d))
        p_t = 2.0 * tie_share * np.minimum(p, 1.0 - p)
        p_a = p - p_t / 2.0
    code = np.where(u < p_a, 2, np.where(u < p_a + p_t, 1, 0))
    labels = np.array(["model_b", "tie", "model_a"])[code]
    if both_bad_share:
        labels = np.where((code == 1) & (rng.random(n_battles) < both_bad_share), "both_bad", labels)

    name_series = pl.Series(names)
    columns = {
        "model_a": name_series.gather(a),
        "model_b": name_series.gather(b),
        "outcome": pl.Series(labels),
    }
    for feature in ("tokens", "h1", "h2", "h3", "h4", "h5", "h6", "ordered", "unordered", "bold_star", "bold_underscore"):
        for suffix, values in (("a", sa), ("b", sb)):
            columns[f"{feature}_{suffix}"] = pl.Series(values.get(feature, np.zeros(n_battles, dtype=np.int64)))
    if judge is not None:
        columns["judge"] = pl.Series([f"judge-{j}" for j in range(n_judges)]).gather(judge)
    frame = pl.DataFrame(columns)
    truth = Truth(tuple(names), beta, verbosity, gamma, nu if tie_model == "davidson" else None)
    return frame, truth

