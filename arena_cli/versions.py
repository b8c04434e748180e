"""The versions of the libraries behind a result's numbers (``meta.versions``), built in this one place."""

from __future__ import annotations

import importlib
from collections.abc import Iterable


def library_versions(libraries: Iterable[str] = ()) -> dict[str, str]:
    """arena-cli's, numpy's and polars' (every fit's numbers depend on them), then those of ``libraries`` (a
    solver's own, such as statsmodels)."""
    import numpy as np
    import polars as pl

    import arena_cli

    versions = {"arena_cli": arena_cli.__version__, "numpy": np.__version__, "polars": pl.__version__}
    versions.update({name: importlib.import_module(name).__version__ for name in libraries})
    return versions
