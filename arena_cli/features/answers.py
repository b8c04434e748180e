"""The batch of answers a feature family computes on.

One row per answer: side a's answers of a batch of battles, then side b's (so a family's output is split per
side by position). The texts' shared preparations (the turns joined, fenced code removed, LMArena's code
removal) are made once per batch, on first use, whichever family asks first: families of a batch run in
threads, so each preparation is guarded by its own lock.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from arena_cli.features import markdown


@dataclass
class Answers:
    """``turns``: each answer's assistant turns (a list of texts; null for a side without conversation).
    ``values``: per answer, the features a derived family needs (empty for the others). ``executor``: threads
    a family may use for work that releases the GIL (tokenizing)."""

    turns: pl.Series
    recipe: str
    encoding: str
    values: pl.DataFrame = field(default_factory=pl.DataFrame)
    executor: Executor | None = None
    _done: dict[str, Any] = field(default_factory=dict, repr=False)
    _locks: dict[str, threading.Lock] = field(default_factory=dict, repr=False)

    @property
    def height(self) -> int:
        return self.turns.len()

    def _once(self, name: str, make: Callable[[], Any]) -> Any:
        with self._locks.setdefault(name, threading.Lock()):  # setdefault is atomic
            if name not in self._done:
                self._done[name] = make()
            return self._done[name]

    @property
    def joined(self) -> pl.Series:
        """Each answer's turns joined with a newline, as LMArena counts markdown (null without conversation)."""
        result: pl.Series = self._once("joined", lambda: self.turns.list.join("\n"))
        return result

    def _fenced(self) -> tuple[pl.Series, pl.Series]:
        result: tuple[pl.Series, pl.Series] = self._once("fenced", lambda: markdown.clean_fenced(self.joined))
        return result

    @property
    def code_free(self) -> pl.Series:
        """The joined texts without their fenced code blocks (every other character kept)."""
        return self._fenced()[0]

    @property
    def code_blocks(self) -> pl.Series:
        """How many fenced code blocks each joined text had."""
        return self._fenced()[1]

    @property
    def recipe_text(self) -> pl.Series:
        """The joined texts as the recipe counts markdown on: LMArena's code removal, or fenced code removed."""
        if self.recipe == "lmarena":
            result: pl.Series = self._once("lmarena", lambda: markdown.clean_lmarena(self.joined))
            return result
        return self.code_free
