"""Simulated vote logs with a known truth: the ground on which fits, style control and intervals are checked.

Real vote logs have no ground truth. Here every model has a true strength ``beta`` and a style profile (verbosity,
markdown habits); responses are real markdown texts assembled from parts whose LMArena counts are known by
construction (a header line adds one to its level, a list item one to its kind, a bold span one to its marker;
fenced code blocks carry look-alike lines that must not be counted); and outcomes follow a Bradley-Terry model on
strength plus style effects. An uncontrolled leaderboard is pulled toward verbose, markdown-heavy models; a
style-controlled one recovers the truth.

The outcome model, exactly (``truth.json`` states it too):

1. per battle and side, the counts of ``conv_metadata`` (tokens, h1..h6, ordered, unordered, ``**``, ``__``,
   summed over the assistant turns) are the style counts: the generator writes them on each line and uses these
   very numbers, never a re-count;
2. per style group g (length, header, list, bold) the side sums give ``d_g = (a - b) / (a + b + 1)``; over all
   battles ``d_g`` is z-scored with its realized mean and population sd (FastChat's ``preprocess_for_style``),
   so ``gamma`` is on exactly the scale a fit of these battles estimates;
3. ``p = logistic(beta_a - beta_b + sum_g gamma_g * z_g + position_bias)`` (``position_bias``: the advantage of the
   model shown first, model_a; 0 unless asked for);
4. ties: with ``tau = tie_share * (1 - |2p - 1|)`` side a wins with probability ``p - tau/2``, side b with
   ``1 - p - tau/2``, and the battle is drawn with probability ``tau`` (close calls draw most often). Counting a
   draw as half a win, ``E[y] = p`` exactly, so a logistic fit with half-wins is consistent for beta and gamma. A
   draw is labelled ``both_bad`` rather than ``tie`` more often when both models are weak; that choice is
   symmetric in a and b, so ``E[y]`` is unchanged under the half-win rule. (Dropping draws instead changes the
   estimand: ``P(a | not a draw) = (p - tau/2) / (1 - tau)`` is further from 1/2 than ``p``.)

Modules: ``generator`` (models, battles, counts, outcomes, truth, files), ``compose`` (answers written from the
counts), ``texts`` (the text banks), ``options`` (what the command line's numbers accept). Names load on first use,
so ``arena simulate --help`` needs no numpy.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "DEFAULT_STYLE_COEFFICIENTS": "options",
    **dict.fromkeys((
        "DEFAULT_TIE_SHARE", "ELO_PER_LOGIT", "GENERATOR_VERSION", "STYLE_GROUPS", "Simulation", "simulate",
        "simulate_in_parts", "style_design", "write_simulation",
    ), "generator"),
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"arena_cli.simulate.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module 'arena_cli.simulate' has no attribute {name!r}")
