"""`arena report`: a complete ranking report (data, leaderboards, rank diff, style coefficients, plots) in
one html file or a markdown file with its images."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from arena_cli.commands.options import VariantChoice, feature_options, filter_options, fit_options, source_options, variant_options
from arena_cli.commands.output import file_name, progress_bar, warn_all
from arena_cli.errors import OptionError
from arena_cli.io.options import BattleFilter, FeatureOptions, Source
from arena_cli.models.options import FitOptions
from arena_cli.render.document import OutputFormat


@source_options
@variant_options(sort=False)
@filter_options
@fit_options(style=False)
@feature_options
def report_command(
    output: Annotated[str, typer.Option("--output", "-o", metavar="FILE", help="Report file: .html (one self-contained page, plots inline) or .md (images written beside it as <name>-<plot>.png).", show_default=False)],
    source: Source,
    choice: VariantChoice,
    filters: BattleFilter,
    options: FitOptions,
    features: FeatureOptions,
    output_format: Annotated[Optional[OutputFormat], typer.Option("--format", "-f", help="Override the format the -o extension implies (html, markdown; json and the rest give the tables only).", show_default=False)] = None,
) -> None:
    """Write a ranking report: data summary (battles, models, dates, outcomes, quarantine), the rank-diff
    table across style-control variants, style coefficients, highlights, every variant's leaderboard with
    score and rank intervals, and plots (score intervals with and without style control, rank shifts between
    variants, pairwise win rates and battle counts).

    The html report is one file that needs no network to view; the markdown report links PNG images
    written next to it.
    """
    from arena_cli import api
    from arena_cli.console import info
    from arena_cli.io.atomic import writable_file
    from arena_cli.render import emit
    from arena_cli.render.emit import image_file

    if output == "-":
        raise OptionError("--output", "a report is a file (a markdown one has its images beside it): give a file name (an html page to stdout: -o /dev/stdout -f html)")
    path = writable_file(file_name(output))
    with progress_bar("bootstrap of every variant") as on_progress:
        report = api.report(
            source, choice.variants, baseline=choice.baseline, top_k=choice.top_k, options=options, filters=filters,
            features=features, on_progress=on_progress,
        )
    document = report.to_document()
    written, whole = emit(document, output_format, path)
    left_out = written is OutputFormat.markdown and bool(document.figures) and image_file(path) is None
    warn_all((*report.warnings, *([f"{output} is not a regular file (a device or a pipe): the markdown report has no folder beside it "
                                   f"for its {len(document.figures)} plot images, so they are left out; write it to a file "
                                   "(-o report.md) to have them, or use html (-f html), which holds them inline"] if left_out else [])))
    if whole:  # (else the reader of a device or pipe stopped reading, which is no error: nothing is said)
        info(f"wrote {written.value} report to {output}")
