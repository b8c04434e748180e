"""What a numeric option accepts, said once: the library checks values with it (raising
:class:`~arena_cli.errors.OptionError`), and the command line declares the option with it, so ``--help`` shows
the range and a bad value is refused while the command line is read."""

from __future__ import annotations

import math
import numbers
import operator
from dataclasses import dataclass
from typing import Any

from arena_cli.errors import OptionError


@dataclass(frozen=True)
class Bounds:
    """A finite number (an integer with ``integer``) from ``low`` to ``high``, each end included unless ``open``."""

    option: str
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    integer: bool = False

    def check(self, value: Any) -> Any:
        """``value`` unchanged if it is accepted (None is: an option left unset); else an :class:`OptionError`."""
        if value is None or self.accepts(value):
            return value
        raise OptionError(self.option, f"{_shown(value)} is not {self.describe()}")

    def accepts(self, value: Any) -> bool:
        number: int | float
        if isinstance(value, bool):
            return False
        if isinstance(value, numbers.Integral):
            number = operator.index(value)  # exact, however large
        elif isinstance(value, numbers.Real) and not self.integer and math.isfinite(value):
            number = float(value)
        else:
            return False
        below = self.low is not None and (number <= self.low if self.low_open else number < self.low)
        above = self.high is not None and (number >= self.high if self.high_open else number > self.high)
        return not (below or above)

    def describe(self) -> str:
        """``an integer >= 1``, ``a finite number >= 0``, ``a number > 0 and < 1``."""
        noun = "an integer" if self.integer else "a finite number" if self.low is None or self.high is None else "a number"
        ends = []
        if self.low is not None:
            ends.append(f"{'>' if self.low_open else '>='} {self.low:g}")
        if self.high is not None:
            ends.append(f"{'<' if self.high_open else '<='} {self.high:g}")
        return " ".join([noun, " and ".join(ends)]) if ends else noun


def _shown(value: Any) -> str:
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return str(int(value))
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return str(float(value))
    return repr(value)
