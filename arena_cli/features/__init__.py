"""Style features of responses (token length, markdown counts) for style control.

``registry`` lists every feature and the style groups and variants the fit uses; ``compute`` computes them
for a frame of battles; ``cache`` keeps them in the store and joins them onto battles.
"""

from arena_cli.features.cache import FeatureUpdate, attach_features, feature_sources, update_store_features
from arena_cli.features.compute import compute_features

__all__ = ["attach_features", "compute_features", "feature_sources", "update_store_features", "FeatureUpdate"]
