"""Every style feature the tool computes, in families; the style groups and variants the fit uses.

A :class:`Family` is a set of per-side features computed together by one pure function over a batch of
answers (:class:`~arena_cli.features.answers.Answers`), with its own version: the store caches each family on
its own (see ``cache``), so adding a family or bumping one family's version recomputes that family only. The
registry is the tuple :data:`FAMILIES`; computing, caching and ``arena features --list`` loop over it.
Adding a family::

    # arena_cli/features/families.py: one row per answer in, one column per feature out
    def hedges(answers: Answers) -> pl.DataFrame:
        return answers.joined.fill_null("").str.count_matches(r"(?i)\\b(?:maybe|perhaps)\\b").cast(pl.Int64).to_frame("hedges")

    # here, appended to FAMILIES (and a style group, if the fit should be able to use it)
    Family("hedging", (Feature("hedges", "hedging words: maybe, perhaps", "hedging"),),
           _implemented_in("families:hedges"), groups={"hedging": ("hedges",)})

The four LMArena features (length, headers, lists, bold) are the per-side counts of LMArena's
``conv_metadata``; the fit sums them into style groups and picks groups by variant, exactly as FastChat's
``preprocess_for_style`` does. The structural features and densities are extra columns next to them: no
style group uses them, so adding them can never change an LMArena-style fit.

Light on purpose: no polars at import (the CLI reads the variants and recipes at start-up); a family's
function is imported when it first runs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from importlib import import_module
from typing import TYPE_CHECKING

from arena_cli.errors import InputError
from arena_cli.io.options import RECIPES

if TYPE_CHECKING:
    import polars as pl

    from arena_cli.features.answers import Answers

SIDES = ("a", "b")


@dataclass(frozen=True)
class Feature:
    """One per-side feature, stored as ``<name>_a`` / ``<name>_b``.

    ``kind``: ``lmarena`` (a count of LMArena's recipe), ``structure`` (a count of another markdown
    element) or ``density`` (a count per token, arena-hard-auto's "markdown density"); a new family may name
    its own. Densities are floats, every other kind an integer count.
    """

    name: str
    description: str
    kind: str

    @property
    def is_count(self) -> bool:
        return self.kind != "density"


#: A family's computation: a batch of answers in, one row per answer and one column per feature out.
Compute = Callable[["Answers"], "pl.DataFrame"]


@dataclass(frozen=True)
class Family:
    """Features computed together, cached together, versioned together.

    ``compute`` gets the answers of a batch (side a's answers, then side b's) and returns one row per answer
    with a column per feature: a pure function of its rows. ``recipe`` / ``encoding``: whether the values
    depend on the markdown recipe / the tokenizer encoding (they then name the family's cache table).
    ``needs``: families this one is computed from, through ``answers.values``; such a *derived* family is
    cheap by nature, never cached, and computed for every battle with features, texts or not. ``groups``:
    style groups over its features that the fit can use. Bump ``version`` whenever a value changes: the
    cache of that family, and of no other, is recomputed.
    """

    name: str
    features: tuple[Feature, ...]
    compute: Compute
    version: int = 1
    recipe: bool = False
    encoding: bool = False
    needs: tuple[str, ...] = ()
    groups: Mapping[str, tuple[str, ...]] = field(default_factory=dict, hash=False)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.features)

    @property
    def stored(self) -> bool:
        """Cached in the store: every family computed from texts (derived ones are computed on reading)."""
        return not self.needs

    def key(self, recipe: str, encoding: str) -> str:
        """The store table of this family: ``features/<family>[-<recipe>][-<encoding>]-v<version>``."""
        parts = [self.name, *([recipe] if self.recipe else []), *([encoding] if self.encoding else []), f"v{self.version}"]
        return "features/" + "-".join(parts)


def _implemented_in(function: str) -> Compute:
    """``"module:function"`` of ``arena_cli.features``, imported on the first call (keeps this module light)."""
    module, name = function.split(":")

    def compute(answers: Answers) -> pl.DataFrame:
        implementation: Compute = getattr(import_module(f"arena_cli.features.{module}"), name)
        return implementation(answers)

    compute.__qualname__ = f"arena_cli.features.{module}.{name}"
    return compute


_MARKDOWN: tuple[Feature, ...] = (
    *(Feature(f"h{k}", f"level-{k} headers: lines starting with {'#' * k} and a space", "lmarena") for k in range(1, 7)),
    Feature("ordered", "ordered list items: lines starting with a number, a dot and a space", "lmarena"),
    Feature("unordered", "unordered list items: lines starting with -, * or + and a space", "lmarena"),
    Feature("bold_star", "bold text written **like this** (on one line)", "lmarena"),
    Feature("bold_underscore", "bold text written __like this__ (on one line)", "lmarena"),
)

#: What each density divides by tokens (a style group of the markdown family).
DENSITY_GROUPS: dict[str, str] = {"header_density": "header", "list_density": "list", "bold_density": "bold"}

#: The registry, in column order.
FAMILIES: tuple[Family, ...] = (
    Family(
        "tokens",
        (Feature("tokens", "tokens of the assistant turns, summed over turns (tiktoken, special tokens as text)", "lmarena"),),
        _implemented_in("families:tokens"),
        encoding=True,
        groups={"length": ("tokens",)},
    ),
    Family(
        "markdown",
        _MARKDOWN,
        _implemented_in("families:markdown_counts"),
        recipe=True,
        groups={
            "header": ("h1", "h2", "h3", "h4", "h5", "h6"),
            "list": ("ordered", "unordered"),
            "bold": ("bold_star", "bold_underscore"),
        },
    ),
    Family(
        "structure",
        (
            Feature("code_blocks", "fenced code blocks (``` or ~~~), an unclosed fence counting once", "structure"),
            Feature("tables", "markdown tables: a row with | followed by a delimiter row such as |---|---|", "structure"),
            Feature("links", "links: [text](target) and bare http(s) URLs", "structure"),
            Feature("emoji", "emoji, a flag, skin-tone or ZWJ sequence counting once", "structure"),
        ),
        _implemented_in("families:structure"),
    ),
    Family(
        "densities",
        (
            Feature("header_density", "headers (h1..h6) per token", "density"),
            Feature("list_density", "list items (ordered + unordered) per token", "density"),
            Feature("bold_density", "bold spans (** and __) per token", "density"),
        ),
        _implemented_in("families:densities"),
        needs=("tokens", "markdown"),
    ),
)

FEATURES: tuple[Feature, ...] = tuple(f for family in FAMILIES for f in family.features)
BY_NAME: dict[str, Feature] = {f.name: f for f in FEATURES}
FEATURE_NAMES: tuple[str, ...] = tuple(f.name for f in FEATURES)

#: LMArena's per-side counts, in conv_metadata order (``schema.META_COUNTS``: the ``meta_*`` columns of a battle).
LMARENA_FEATURES: tuple[str, ...] = tuple(f.name for f in FEATURES if f.kind == "lmarena")
STRUCTURE_FEATURES: tuple[str, ...] = tuple(f.name for f in FEATURES if f.kind == "structure")

#: Style groups: features summed per side before the transform d = (a - b) / (a + b + 1).
STYLE_GROUPS: dict[str, tuple[str, ...]] = {g: members for family in FAMILIES for g, members in family.groups.items()}

#: Style-control variants: which groups enter the fit.
VARIANTS: dict[str, tuple[str, ...]] = {
    "none": (),
    "length": ("length",),
    "markdown": ("header", "list", "bold"),
    "both": ("length", "header", "list", "bold"),
}


def check_recipe(recipe: str) -> str:
    """``recipe`` if it is a known markdown recipe, else :class:`InputError`."""
    if recipe not in RECIPES:
        raise InputError(f"unknown recipe {recipe!r}; expected one of: {', '.join(RECIPES)}")
    return recipe


def check_families(families: Iterable[Family]) -> tuple[Family, ...]:
    """``families`` as a tuple, if they make a registry: distinct family and feature names (no family named
    like a recipe: that is the cache's older layout), and derived families after what they need."""
    seen: set[str] = set()
    features: set[str] = set()
    checked = tuple(families)
    for family in checked:
        if family.name in seen or family.name in RECIPES:
            raise ValueError(f"feature family {family.name!r} is registered twice or named like a recipe")
        if unknown := [n for n in family.needs if n not in seen]:
            raise ValueError(f"feature family {family.name!r} needs {unknown}, which no earlier family provides")
        if clash := features.intersection(family.names):
            raise ValueError(f"feature family {family.name!r} repeats features {sorted(clash)}")
        seen.add(family.name)
        features.update(family.names)
    return checked


def feature_versions(families: Iterable[Family] = FAMILIES) -> dict[str, int]:
    """The version of each family (a document's ``feature_versions``)."""
    return {family.name: family.version for family in families}


def side_columns(name: str) -> tuple[str, str]:
    """``tokens`` -> ``("tokens_a", "tokens_b")``."""
    return f"{name}_a", f"{name}_b"


def feature_columns(names: Iterable[str] = FEATURE_NAMES) -> list[str]:
    """Per-side column names, all ``_a`` columns first, then all ``_b`` columns."""
    names = tuple(names)
    return [f"{n}_{s}" for s in SIDES for n in names]
