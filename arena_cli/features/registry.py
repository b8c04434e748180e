"""Every style feature the tool computes: its name, what it measures, and how the fit groups them.

The four LMArena features (length, headers, lists, bold) are the per-side counts of LMArena's
``conv_metadata``; the fit sums them into style groups and picks groups by variant, exactly as FastChat's
``preprocess_for_style`` does. The structural features and densities are extra columns next to them: no
style group uses them, so adding them can never change an LMArena-style fit.
"""

from __future__ import annotations

from dataclasses import dataclass

from arena_cli.io.options import RECIPES
from arena_cli.schema import META_COUNTS

#: Bumped whenever a feature's definition changes: cached features of an older version are recomputed.
FEATURE_VERSION = 1

SIDES = ("a", "b")


@dataclass(frozen=True)
class Feature:
    """One per-side feature, stored as ``<name>_a`` / ``<name>_b``.

    ``kind``: ``lmarena`` (a count of LMArena's recipe), ``structure`` (a count of another markdown
    element) or ``density`` (a count per token, arena-hard-auto's "markdown density").
    """

    name: str
    description: str
    kind: str

    @property
    def is_count(self) -> bool:
        return self.kind != "density"


FEATURES: tuple[Feature, ...] = (
    Feature("tokens", "tokens of the assistant turns, summed over turns (tiktoken, special tokens as text)", "lmarena"),
    *(Feature(f"h{k}", f"level-{k} headers: lines starting with {'#' * k} and a space", "lmarena") for k in range(1, 7)),
    Feature("ordered", "ordered list items: lines starting with a number, a dot and a space", "lmarena"),
    Feature("unordered", "unordered list items: lines starting with -, * or + and a space", "lmarena"),
    Feature("bold_star", "bold text written **like this** (on one line)", "lmarena"),
    Feature("bold_underscore", "bold text written __like this__ (on one line)", "lmarena"),
    Feature("code_blocks", "fenced code blocks (``` or ~~~), an unclosed fence counting once", "structure"),
    Feature("tables", "markdown tables: a row with | followed by a delimiter row such as |---|---|", "structure"),
    Feature("links", "links: [text](target) and bare http(s) URLs", "structure"),
    Feature("emoji", "emoji, a flag, skin-tone or ZWJ sequence counting once", "structure"),
    Feature("header_density", "headers (h1..h6) per token", "density"),
    Feature("list_density", "list items (ordered + unordered) per token", "density"),
    Feature("bold_density", "bold spans (** and __) per token", "density"),
)

BY_NAME: dict[str, Feature] = {f.name: f for f in FEATURES}
FEATURE_NAMES: tuple[str, ...] = tuple(f.name for f in FEATURES)

#: LMArena's per-side counts, in conv_metadata order (the ``meta_*`` columns of the battle schema).
LMARENA_FEATURES: tuple[str, ...] = META_COUNTS
STRUCTURE_FEATURES: tuple[str, ...] = tuple(f.name for f in FEATURES if f.kind == "structure")
DENSITY_FEATURES: tuple[str, ...] = tuple(f.name for f in FEATURES if f.kind == "density")

#: Style groups: features summed per side before the transform d = (a - b) / (a + b + 1).
STYLE_GROUPS: dict[str, tuple[str, ...]] = {
    "length": ("tokens",),
    "header": ("h1", "h2", "h3", "h4", "h5", "h6"),
    "list": ("ordered", "unordered"),
    "bold": ("bold_star", "bold_underscore"),
}

#: Style-control variants: which groups enter the fit.
VARIANTS: dict[str, tuple[str, ...]] = {
    "none": (),
    "length": ("length",),
    "markdown": ("header", "list", "bold"),
    "both": ("length", "header", "list", "bold"),
}

#: What each density divides by tokens.
DENSITY_GROUPS: dict[str, str] = {"header_density": "header", "list_density": "list", "bold_density": "bold"}



def side_columns(name: str) -> tuple[str, str]:
    """``tokens`` -> ``("tokens_a", "tokens_b")``."""
    return f"{name}_a", f"{name}_b"


def feature_columns(names: tuple[str, ...] | list[str] = FEATURE_NAMES) -> list[str]:
    """Per-side column names, all ``_a`` columns first, then all ``_b`` columns."""
    return [f"{n}_{s}" for s in SIDES for n in names]


def feature_key(recipe: str, encoding: str) -> str:
    """The store table holding features of one (recipe, encoding, version): ``features/<recipe>-<enc>-v<N>``."""
    return f"features/{recipe}-{encoding}-v{FEATURE_VERSION}"
