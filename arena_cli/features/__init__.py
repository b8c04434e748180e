"""Style features of responses (token length, markdown counts) for style control.

``registry`` lists the feature families, their features, and the style groups and variants the fit uses;
``families`` holds their compute functions, over a batch of ``answers``; ``compute`` computes them for a frame
of battles; ``cache`` keeps each family in the store and joins them onto battles.

The functions below load on first use, so importing the light ``registry`` (the CLI does, for its option
choices) does not import polars.
"""

from importlib import import_module

_EXPORTS = {
    "attach_features": "cache",
    "feature_sources": "cache",
    "update_store_features": "cache",
    "FeatureUpdate": "cache",
    "read_store_features": "cache",
    "compute_features": "compute",
}

__all__ = list(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(import_module(f"arena_cli.features.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
