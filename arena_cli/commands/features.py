"""`arena features`: style features per battle (tokens, markdown counts), printed or cached in the store."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from arena_cli.commands.options import LockWaitOption, number, recipe_options, source_options
from arena_cli.commands.output import Output, output_options, progress_bar, show
from arena_cli.io.options import FeatureOptions, Source
from arena_cli.models.options import WORKERS


@source_options
@recipe_options
@output_options
def features_command(
    source: Source,
    features: FeatureOptions,
    output: Output,
    list_features: Annotated[bool, typer.Option("--list", help="List every feature with its description and style group, then exit.")] = False,
    workers: Annotated[Optional[int], typer.Option("--workers", click_type=number(WORKERS), help="Tokenizer threads (default: all cores).", show_default=False)] = None,
    lock_wait: LockWaitOption = 60.0,
) -> None:
    """Compute style features of every battle and side: tokens, headers, lists, bold, code blocks, tables, links, emoji.

    With FILES, print or export the features of those battles. Without, update the store's cached features
    (only battles without features for this recipe and encoding are computed) and print a summary on stderr;
    add --format or -o to also export the store's features.
    """
    from arena_cli import api

    if list_features:
        show(api.feature_list(), output)
        return
    if source.files:
        with progress_bar("features") as on_progress:
            table = api.compute_features(source, store=source.store, features=features, workers=workers, on_progress=on_progress)
        show(table, output)
        return
    from arena_cli.console import info

    with progress_bar("features") as on_progress:
        update = api.update_features(source.store, features=features, workers=workers, lock_wait=lock_wait, on_progress=on_progress)
    info(update.message())
    if output.format is not None or output.path is not None:
        show(api.stored_features(source.store, features=features), output)
