"""The ranking engine as a library: Bradley-Terry (plain or style-controlled, ties as half wins or Davidson),
exact Newton fits on sufficient statistics, sandwich and bootstrap intervals, rank intervals.

    from arena_cli.models import FitOptions, fit
    result = fit(battles, FitOptions(style="both"))
    result.leaderboard, result.coefficients, result.settings

Modules: ``options`` (FitOptions and its enums), ``design`` (battles -> arrays and sufficient statistics),
``solvers`` (Newton, statsmodels reference), ``engine`` (fit, fit_variants), ``result`` (FitResult);
uncertainty lives in ``arena_cli.models.uncertainty``. Names are loaded on first use, so importing the package (or
``arena_cli.models.options`` for a command's option enums) does not import numpy or polars.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "fit": "engine", "fit_variants": "engine",
    "FitOptions": "options", "Ties": "options", "BothBad": "options", "CIMethod": "options", "Solver": "options", "Compat": "options",
    "FitResult": "result", "predict_win_prob": "result", "LEADERBOARD_COLUMNS": "result",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"arena_cli.models.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module 'arena_cli.models' has no attribute {name!r}")
