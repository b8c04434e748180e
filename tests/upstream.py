"""The objectives of FastChat and arena-hard-auto, re-implemented from their code for the ``--compat`` tests,
and minimised here to convergence with scipy (in float64; arena-hard-auto runs torch in float32).

* FastChat ``fastchat/serve/monitor/rating_systems.py`` (lm-sys/FastChat @0e6d3e4b): ``preprocess_for_style``
  (d = (a - b)/(a + b + 1) per group, z-scored with ``np.std``), ``contextual_bt_loss_and_grad`` (summed
  log-loss + (reg/2)·‖θ‖², θ = ratings in log10 units and style coefficients, reg = 0.5) and ``bt_loss_and_grad``
  with ``fit_bt`` (plain BT on the (matchup, outcome) counts, no penalty); ``scale_and_offset`` (400·r + 1000).
* arena-hard-auto ``show_result.py`` and ``utils/math_utils.py`` (lmarena/arena-hard-auto @196f6b8, v2):
  ``load_judgments`` (game 2 scores the model as A, game 1 as 1 − its score as B; a strong verdict is ``weight``
  rows), ``print_leaderboard_with_style_features`` (length (m − b)/(m + b); markdown densities c/(tokens + 1),
  then (m − b)/(m + b + 1); standardised with ``torch.std``, ddof 1), ``one_hot_encode`` (+1 model, −1 baseline),
  ``bt_loss`` (summed BCE with logits) and ``to_winrate_probabilities`` (e^β_m / (e^β_m + e^β_baseline)).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit

#: Tolerances that run L-BFGS-B to convergence (its defaults stop early: see the README).
CONVERGED = {"maxiter": 100_000, "gtol": 1e-12, "ftol": 1e-16, "maxcor": 50}
#: FastChat's own options of ``fit_bt`` / ``fit_contextual_bt``.
FASTCHAT_DEFAULTS = {"maxiter": 100, "gtol": 1e-6}
LOG10 = math.log(10.0)


def fastchat_style_features(side_a: np.ndarray, side_b: np.ndarray) -> np.ndarray:
    """``preprocess_for_style``: (groups, n) per-side sums in, (n, groups) z-scored features out."""
    style_diff = (side_a - side_b).astype(float)
    style_sum = (side_a + side_b).astype(float) + np.ones(style_diff.shape)
    style_diff /= style_sum
    return ((style_diff - np.mean(style_diff, axis=1)[:, None]) / np.std(style_diff, axis=1)[:, None]).T


def fastchat_contextual_bt(matchups: np.ndarray, features: np.ndarray, outcomes: np.ndarray, n_models: int, options=CONVERGED) -> np.ndarray:
    """``fit_contextual_bt`` with its defaults (alpha ln 10, reg 0.5): (ratings in log10 units, coefficients)."""

    def loss_and_grad(params, alpha=LOG10, reg=0.5, half_reg=0.25):
        reg_loss = half_reg * np.inner(params, params)
        ratings, feature_params = params[:n_models], params[n_models:]
        matchup_ratings = ratings[matchups]
        probs = expit(alpha * (matchup_ratings[:, 0] - matchup_ratings[:, 1]) + features @ feature_params)
        loss = -(np.log(probs) * outcomes + np.log(1.0 - probs) * (1.0 - outcomes)).sum() + reg_loss
        error = outcomes - probs
        grad = reg * params
        np.add.at(grad[:n_models], matchups[:, [0, 1]], (-alpha * error)[:, None] * np.array([1.0, -1.0]))
        grad[n_models:] -= features.T @ error
        return loss, grad

    start = np.zeros(n_models + features.shape[1])
    return minimize(loss_and_grad, start, jac=True, method="L-BFGS-B", options=options).x


def fastchat_bt(matchups: np.ndarray, outcomes: np.ndarray, weights: np.ndarray, n_models: int, options=CONVERGED) -> np.ndarray:
    """``fit_bt``: ratings in log10 units from the unique (matchup, outcome) rows and their counts."""

    def loss_and_grad(ratings, alpha=LOG10):
        matchup_ratings = ratings[matchups]
        probs = expit(alpha * (matchup_ratings[:, 0] - matchup_ratings[:, 1]))
        loss = -((np.log(probs) * outcomes + np.log(1.0 - probs) * (1.0 - outcomes)) * weights).sum()
        grad = np.zeros_like(ratings)
        np.add.at(grad, matchups[:, [0, 1]], (-alpha * (outcomes - probs) * weights)[:, None] * np.array([1.0, -1.0]))
        return loss, grad

    return minimize(loss_and_grad, np.zeros(n_models), jac=True, method="L-BFGS-B", options=options).x


def arena_hard_style_features(model: np.ndarray, baseline: np.ndarray) -> np.ndarray:
    """(n, 4) rows of (tokens, headers, list items, bold spans) of the model's and the baseline's answers in,
    the standardised (n, 4) style matrix of ``print_leaderboard_with_style_features`` out."""
    final = np.zeros_like(model, dtype=float)
    final[:, 0] = (model[:, 0] - baseline[:, 0]) / (model[:, 0] + baseline[:, 0])
    model_density = model[:, 1:] / (model[:, :1] + 1)
    baseline_density = baseline[:, 1:] / (baseline[:, :1] + 1)
    final[:, 1:] = (model_density - baseline_density) / (model_density + baseline_density + 1)
    return (final - final.mean(axis=0)) / final.std(axis=0, ddof=1)


def arena_hard_win_rates(models: list[str], baseline: str, battle_models: list[str], features: np.ndarray, scores: np.ndarray) -> tuple[dict[str, float], np.ndarray]:
    """The BT fit of ``print_leaderboard_with_style_features`` on its exploded rows (one per score), to
    convergence: each model's win rate against the baseline, and the style coefficients."""
    index = {m: i for i, m in enumerate(models)}
    one_hot = np.zeros((len(battle_models), len(models)))
    one_hot[np.arange(len(battle_models)), [index[m] for m in battle_models]] = 1.0
    one_hot[:, index[baseline]] = -1.0
    design = np.hstack([one_hot, features])

    def loss_and_grad(coefs):
        logits = design @ coefs
        loss = float(np.sum(np.logaddexp(0.0, logits) - scores * logits))  # binary_cross_entropy_with_logits, sum
        return loss, design.T @ (expit(logits) - scores)

    coefs = minimize(loss_and_grad, np.full(design.shape[1], 0.5), jac=True, method="L-BFGS-B", options=CONVERGED).x
    beta = coefs[: len(models)]
    return {m: float(expit(beta[index[m]] - beta[index[baseline]])) for m in models}, coefs[len(models):]
