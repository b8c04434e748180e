"""`arena judges`: how consistent LLM judges are, and how far their leaderboards agree."""

from __future__ import annotations

from typing import Annotated

import typer

from arena_cli.commands.options import filter_options, number, source_options
from arena_cli.commands.output import Output, output_options, show
from arena_cli.io.options import BattleFilter, Source
from arena_cli.models.options import DEFAULT_MIN_BATTLES, MIN_BATTLES


@source_options
@filter_options
@output_options
def judges_command(
    source: Source,
    filters: BattleFilter,
    output: Output,
    min_battles: Annotated[int, typer.Option("--min-battles", click_type=number(MIN_BATTLES), help="Leave a model out of a judge's leaderboard when that judge has fewer votes on it.")] = DEFAULT_MIN_BATTLES,
) -> None:
    """Diagnose LLM judges: position consistency on swapped pairs, first-position wins, agreement between judges.

    A swapped pair is two votes of one judge on one prompt (question_id) between the same two models, each shown
    first once (arena-hard-auto's two games). Agreement: rank correlations of each judge's plain Bradley-Terry scores.
    """
    from arena_cli import api

    show(api.judges(source, filters=filters, min_battles=min_battles), output)
