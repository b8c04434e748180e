"""arena-cli: trustworthy leaderboards from pairwise LLM vote logs.

The whole pipeline is a Python API; every ``arena`` command is one call of it::

    import arena_cli as arena

    board = arena.fit("votes.jsonl.gz", style="both")      # a FitResult: leaderboard, coefficients, settings
    diff = arena.rank_diff(store="arena-store")             # uncontrolled vs length vs markdown vs both
    change = arena.compare("old.json", "new.json", fail_on=["rank-shift=3"])

Names load on first use, so ``import arena_cli`` (and ``arena --help``) stays cheap.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    # the pipeline, one function per command
    "load_battles": "api", "fit": "api", "rank_diff": "api", "compare": "api", "report": "api", "matrix": "api",
    "describe": "api", "ingest": "api", "compute_features": "api", "update_features": "api",
    "stored_features": "api", "feature_list": "api", "export": "api", "check_store": "api", "repair_store": "api",
    "judges": "api",
    # what the calls take
    "Source": "io.options", "BattleFilter": "io.options", "InputOptions": "io.options", "FeatureOptions": "io.options",
    "FitOptions": "models.options", "Ties": "models.options", "BothBad": "models.options", "CIMethod": "models.options",
    "Solver": "models.options", "Compat": "models.options", "StyleTransform": "models.options",
    # what they return
    "FitResult": "models.result", "VariantComparison": "comparison", "LeaderboardComparison": "comparison",
    "Summary": "results", "PairwiseMatrix": "results", "Report": "results", "FeatureTable": "results",
    "IngestReport": "results", "Loaded": "io.battles", "predict_win_prob": "models.result",
    "expected_score": "models.result",
    "StoreCheck": "io.repair", "StoreRepair": "io.repair", "JudgeReport": "judge_diagnostics",
    # errors, each with its exit code
    "ArenaError": "errors", "OptionError": "errors", "InputError": "errors", "NoDataError": "errors", "GateError": "errors",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"arena_cli.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module 'arena_cli' has no attribute {name!r}")
