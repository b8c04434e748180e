"""What ``arena simulate`` accepts, said once for the library and the command line (which declares its options
with these rules, so this module stays light)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

from arena_cli.bounds import Bounds
from arena_cli.errors import OptionError
from arena_cli.models.options import SEED

#: Upper ends: what one machine's memory holds (a simulated log is built in memory before it is written).
BATTLES = Bounds("--battles", low=1, high=100_000_000, integer=True)
MODELS = Bounds("--models", low=2, high=100_000, integer=True)
MODEL_SEED = dataclasses.replace(SEED, option="--model-seed")
#: Log-odds of at most 50 either way (the advantage of the model shown first; a style coefficient, per standard
#: deviation): beyond, every battle's outcome is certain, and the logistic's exponentials overflow.
MAX_LOG_ODDS = 50.0
POSITION_BIAS = Bounds("--position-bias", low=-MAX_LOG_ODDS, high=MAX_LOG_ODDS)
#: Log-odds per standard deviation of each group's z-scored feature. Larger than LMArena's published estimates
#: on purpose, so that the pull of style on an uncontrolled leaderboard is plain to see.
DEFAULT_STYLE_COEFFICIENTS: dict[str, float] = {"length": 0.30, "header": 0.10, "list": 0.10, "bold": 0.12}


def true_style_coefficients(given: Mapping[str, Any] | None) -> dict[str, float]:
    """The true style coefficients: the defaults, with the groups ``given`` replaced (numbers, or their text as
    the command line's ``--style GROUP=COEF`` gives them). An unknown group or a coefficient that is not a finite
    number is an :class:`OptionError`."""
    given = dict(given or {})
    unknown = sorted(set(given) - set(DEFAULT_STYLE_COEFFICIENTS))
    if unknown:
        raise OptionError("--style", f"unknown style group(s) {', '.join(unknown)}; groups: {', '.join(DEFAULT_STYLE_COEFFICIENTS)}")
    coefficients = dict(DEFAULT_STYLE_COEFFICIENTS)
    for group, value in given.items():
        try:
            coefficient = float(value)
        except (TypeError, ValueError):
            coefficient = math.nan
        if isinstance(value, bool) or not math.isfinite(coefficient) or abs(coefficient) > MAX_LOG_ODDS:
            raise OptionError("--style", f"{group}={value}: the coefficient must be a number from -{MAX_LOG_ODDS:g} to {MAX_LOG_ODDS:g}")
        coefficients[group] = coefficient
    return coefficients
