"""`arena features`: style features per battle (tokens, markdown counts), printed or cached in the store."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from arena_cli.commands.options import FormatOption, LockWaitOption, OutputOption, SourcesArgument, StoreOption


class Recipe(str, Enum):
    default = "default"
    lmarena = "lmarena"


def features_command(
    sources: SourcesArgument = None,
    store: StoreOption = None,
    recipe: Annotated[Recipe, typer.Option("--recipe", "-r", help="default: fenced code removed properly before counting. lmarena: LMArena/FastChat's add_markdown_info.py bit for bit, code-removal quirk included (to reproduce published numbers).")] = Recipe.default,
    encoding: Annotated[str, typer.Option("--encoding", "-e", help="tiktoken encoding for token counts. cl100k_base (LMArena's) is bundled; others (e.g. o200k_base, arena-hard-auto v2's) must be in tiktoken's cache (TIKTOKEN_CACHE_DIR).")] = "cl100k_base",
    list_features: Annotated[bool, typer.Option("--list", help="List every feature with its description and style group, then exit.")] = False,
    workers: Annotated[Optional[int], typer.Option("--workers", min=1, help="Tokenizer threads (default: all cores).", show_default=False)] = None,
    output_format: FormatOption = None,
    output: OutputOption = None,
    lock_wait: LockWaitOption = 60.0,
) -> None:
    """Compute style features of every battle and side: tokens, headers, lists, bold, code blocks, tables, links, emoji.

    With SOURCES, print or export the features of those battles. Without, update the store's cached features
    (only battles without features for this recipe and encoding are computed) and print a summary on stderr;
    add --format or -o to also export the store's features.
    """
    from arena_cli.render import Document, Table, emit

    if list_features:
        emit(_feature_list(), output_format, output)
        return
    from arena_cli.features.tokenizer import canonical_encoding

    meta = {"recipe": recipe.value, "encoding": canonical_encoding(encoding)}
    if sources:
        features = _features_of_sources(sources, store, recipe.value, encoding, workers)
    else:
        features = _update_store(store, recipe.value, encoding, workers, lock_wait, export=output_format is not None or output is not None)
        if features is None:
            return
    from arena_cli.features.registry import feature_versions

    meta["feature_versions"] = feature_versions()
    emit(Document("features", (Table("features", features, "Style features per battle", {c: 4 for c in features.columns if "density" in c}),), meta=meta), output_format, output)


def _feature_list():
    import polars as pl

    from arena_cli.features.registry import FEATURES, STYLE_GROUPS
    from arena_cli.render import Document, Table

    group_of = {name: group for group, names in STYLE_GROUPS.items() for name in names}
    frame = pl.DataFrame({
        "feature": [f.name for f in FEATURES],
        "kind": [f.kind for f in FEATURES],
        "style_group": [group_of.get(f.name, "") for f in FEATURES],
        "description": [f.description for f in FEATURES],
    })
    note = "Columns are <feature>_a and <feature>_b. Style groups are summed per side for style control; other features are extra columns."
    return Document("feature_list", (Table("features", frame, "Style features", notes=(note,)),))


def _features_of_sources(sources: list[Path], store: Path | None, recipe: str, encoding: str, workers: int | None):
    from arena_cli.console import progress
    from arena_cli.io.battles import load_battles
    from arena_cli.features import attach_features, compute_features
    from arena_cli.features.cache import FEATURE_COLUMNS

    from arena_cli.io.options import Source

    battles = load_battles(Source(tuple(sources))).battles
    if store is not None:
        return attach_features(battles, store=store, recipe=recipe, encoding=encoding, workers=workers).select("battle_id", *FEATURE_COLUMNS)
    with progress() as bar:
        task = bar.add_task("features", total=battles.height)
        return compute_features(battles, recipe, encoding, workers, on_batch=lambda n: bar.advance(task, n))


def _update_store(store: Path | None, recipe: str, encoding: str, workers: int | None, lock_wait: float, export: bool):
    from arena_cli.console import info, progress
    from arena_cli.features import update_store_features
    from arena_cli.features.cache import read_store_features
    from arena_cli.io.store import Store

    opened = Store.open(store)
    with progress() as bar:
        task = bar.add_task("features", total=None)
        summary = update_store_features(
            opened, recipe, encoding, workers=workers, lock_wait=lock_wait,
            on_start=lambda n: bar.update(task, total=n), on_batch=lambda n: bar.advance(task, n),
        )
    info(summary.message())
    if not export:
        return None
    return read_store_features(opened, recipe, summary.encoding)
