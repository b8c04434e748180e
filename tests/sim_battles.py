"""Battles with known truth for the fit's statistical tests and bench/fit.py: the product's simulator
(:func:`arena_cli.simulate.simulate`) without texts, as the frame a fit reads, and its truth as arrays.

The model (stated in ``arena_cli.simulate``): ``logit P(a beats b) = β_a − β_b + Σ_g γ_g · z_g`` with z_g the
z-scored ``(s_a − s_b) / (s_a + s_b + 1)`` of each LMArena style group; ties so that E[y] = p for y = 1, ½, 0
(half-tie Bradley-Terry is then correctly specified in the mean), or from Davidson's model
(``tie_model="davidson"``, ``nu``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from arena_cli.simulate import ELO_PER_LOGIT, STYLE_GROUPS
from arena_cli.simulate import simulate as simulate_votes


@dataclass(frozen=True)
class Truth:
    models: tuple[str, ...]
    beta: np.ndarray              # per model, mean 0
    gamma: dict[str, float]       # per style group, log-odds per sd of the z-scored group feature
    raw_gamma: dict[str, float]   # the same on the raw (a − b)/(a + b + 1) scale (what a fit with normalize=False estimates)

    def scores(self) -> np.ndarray:
        return 1000.0 + ELO_PER_LOGIT * self.beta


def simulate(n_battles: int, n_models: int, *, seed: int, gamma: dict[str, float] | None = None, **options: Any) -> tuple[pl.DataFrame, Truth]:
    """Battles (battle_id, model_a, model_b, outcome, judge, per-side LMArena counts) and the truth behind them;
    models are named ``model-000`` (the strongest), ``model-001``, ...

    A style group without a coefficient in ``gamma`` has none (no style effect unless asked). ``options`` go to
    the simulator: ``tie_model``, ``nu``, ``tie_share``, ``popularity_sd`` (uneven pair sampling), ``n_judges``,
    ``judge_sd`` (each judge's own taste: correlated votes), ...
    """
    sim = simulate_votes(n_battles, n_models, seed, texts=False, style_coefficients={g: 0.0 for g in STYLE_GROUPS} | (gamma or {}), **options)
    rows = sim.truth["models"]  # strongest first: named model-000, model-001, ...
    names = {m["model"]: f"model-{i:03d}" for i, m in enumerate(rows)}
    frame = sim.features().with_columns(pl.col("model_a", "model_b").replace_strict(names))
    style = sim.truth["style"]
    raw = {g: c / style["d_sd"][g] if style["d_sd"][g] else 0.0 for g, c in style["coefficients"].items()}
    truth = Truth(tuple(names.values()), np.array([m["beta"] for m in rows]), style["coefficients"], raw)
    return frame, truth
