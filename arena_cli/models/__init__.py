"""The ranking engine as a library: rating methods behind one protocol — Bradley-Terry (plain or
style-controlled, ties as half wins or Davidson; exact Newton fits on sufficient statistics, sandwich and
bootstrap intervals) and online Elo (votes in order, bootstrap over votes) — with scores, intervals, ranks
and rank intervals built the same way for every method.

    from arena_cli.models import FitOptions, fit
    result = fit(battles, FitOptions(style="both"))
    result.leaderboard, result.coefficients, result.settings
    elo = fit(battles, FitOptions(method="elo"))

Modules: ``options`` (FitOptions and its enums), ``design`` (battles -> arrays and sufficient statistics),
``methods`` (the RatingMethod protocol, Ratings), ``bradley_terry`` and ``elo`` (the methods), ``solvers``
(Newton, statsmodels reference), ``uncertainty`` (sandwich, bootstrap, rank intervals), ``engine`` (fit,
fit_variants: the shared result side), ``result`` (FitResult). Names are loaded on first use, so importing the package (or
``arena_cli.models.options`` for a command's option enums) does not import numpy or polars.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "fit": "engine", "fit_variants": "engine",
    "FitOptions": "options", "Ties": "options", "BothBad": "options", "CIMethod": "options", "Solver": "options", "Compat": "options", "StyleTransform": "options",
    "Method": "options", "RatingMethod": "methods", "Ratings": "methods",
    "FitResult": "result", "predict_win_prob": "result", "expected_score": "result", "LEADERBOARD_COLUMNS": "result",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"arena_cli.models.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module 'arena_cli.models' has no attribute {name!r}")
