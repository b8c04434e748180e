"""`arena report` through the CLI: a self-contained html page with its plots, markdown with images beside it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from arena_cli.cli import app
from arena_cli.errors import ExitCode
from tests import compare_fixtures as fx

FAST = ["--rounds", "20", "--seed", "5"]


def run(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("sim")
    path = root / "store"
    fx.ingest_store(fx.write_simulated_log(root), path)
    return path


def test_html_report_is_one_self_contained_file(store, tmp_path):
    target = tmp_path / "report.html"
    result = run("report", "--store", store, "-o", target, *FAST)
    assert result.exit_code == 0, result.output
    page = target.read_text()
    for section in ("Data: Battles", "Data: Quarantined rows", "Rank by style-control variant", "Style coefficients by variant",
                    "Leaderboard: none", "Leaderboard: both", "Leaderboard position by variant", "Scores with intervals",
                    "Pairwise win rates and battle counts"):
        assert section in page, section
    assert page.count("<svg") == 3
    # Nothing to fetch: no scripts, stylesheets, images or fonts from elsewhere (SVG namespaces are names, not requests).
    assert not re.search(r"<script|<link|<img|@import|url\((?!#)|src=", page)  # url(#id): clip paths inside the SVG
    assert "http://" not in page and "https://" not in page  # not even SVG namespaces or metadata vocabularies
    ids = re.findall(r'\bid="([^"]+)"', page)
    assert len(ids) == len(set(ids))  # three inlined SVGs, one id space: each figure's ids are its own
    referenced = set(re.findall(r'(?:url\(#|href="#)([^)"]+)', page))
    assert referenced and referenced <= set(ids)
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]


def test_markdown_report_links_images_written_beside_it(store, tmp_path):
    target = tmp_path / "out" / "ranking.md"
    target.parent.mkdir()
    result = run("report", "--store", store, "-o", target, *FAST)
    assert result.exit_code == 0, result.output
    text = target.read_text()
    images = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text)
    assert images == ["ranking-slope.png", "ranking-forest.png", "ranking-heatmap.png"]
    for name in images:
        assert (target.parent / name).read_bytes().startswith(b"\x89PNG")
    again = tmp_path / "again" / "ranking.md"
    again.parent.mkdir()
    run("report", "--store", store, "-o", again, *FAST)
    assert again.read_bytes() == target.read_bytes()  # deterministic given --seed


def test_report_json_has_every_table(store, tmp_path):
    target = tmp_path / "report.json"
    assert run("report", "--store", store, "-o", target, *FAST, "--variants", "none,length").exit_code == 0
    payload = json.loads(target.read_text())
    assert list(payload["tables"]) == ["overview", "outcomes", "languages", "quarantine", "rank_diff", "coefficients",
                                       "highlights", "leaderboard_none", "leaderboard_length"]
    assert payload["meta"]["settings"]["variants"] == {"none": "none", "length": "length"}


def test_report_needs_an_output_file(store):
    assert run("report", "--store", store).exit_code == ExitCode.USAGE


def test_report_from_files_without_a_store(tmp_path):
    log = fx.write_simulated_log(tmp_path)
    target = tmp_path / "report.html"
    result = run("report", log, "-o", target, *FAST, "--variants", "none,both")
    assert result.exit_code == 0, result.output
    assert "Data: Quarantined rows" not in target.read_text()  # files have no quarantine to report


def test_heatmaps_keep_long_model_names_whole_and_readable():
    """Many models with long names: every label inside the figure, in a font not scaled below legibility."""
    import polars as pl

    from arena_cli.render import plots
    from arena_cli.render.document import Figure
    from arena_cli.render.figures import svg_text

    models = [f"Open-Assistant StableLM SFT-{k} (70B) chat" for k in range(60)]
    frame = pl.DataFrame({"model": models, **{m: [0.5] * len(models) for m in models}})
    figure = plots.heatmaps(frame, frame)
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    bounds = figure.bbox
    for ax in figure.axes:
        box = ax.get_tightbbox(renderer)
        assert box.x0 >= bounds.x0 - 1 and box.y0 >= bounds.y0 - 1 and box.x1 <= bounds.x1 + 1 and box.y1 <= bounds.y1 + 1
    width = float(re.search(r'width="([\d.]+)pt"', svg_text(Figure("h", "h", lambda: figure))).group(1))
    assert width <= plots.PAGE_WIDTH * 72  # shown at natural size on the page: the 6 pt names stay 6 pt


def test_forest_plot_draws_an_interval_that_excludes_its_score():
    """From few bootstrap rounds an interval can lie wholly on one side of its estimate: drawn from its ends."""
    import polars as pl

    from arena_cli.render import plots

    board = pl.DataFrame({"model": ["a", "b", "c"], "score": [1010.0, 1000.0, 990.0],
                          "score_lower": [1012.0, 995.0, None], "score_upper": [1020.0, 998.0, None]})
    figure = plots.forest_plot({"none": board})
    lines = figure.axes[0].collections[0].get_segments()
    assert [(seg[0][0], seg[1][0]) for seg in lines] == [(1012.0, 1020.0), (995.0, 998.0), (990.0, 990.0)]


def test_a_report_from_very_few_rounds_is_written(store, tmp_path):
    result = run("report", "-s", store, "-o", tmp_path / "r.html", "--rounds", "2", "--variants", "none,both")
    assert result.exit_code == 0, result.output


def test_a_markdown_report_to_a_device_or_pipe_leaves_its_plots_out_with_a_warning(store, tmp_path):
    """`-o /dev/stdout`, `/dev/null` or a named pipe has no folder beside it: no `/dev/stdout-forest.png`, no link to
    an image that is nowhere; the markdown is written in place, and a warning says the plots were left out."""
    import os
    import threading

    pipe = tmp_path / "pipe.md"
    os.mkfifo(pipe)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(pipe.read_bytes()))
    reader.start()
    for target in (pipe, Path("/dev/null")):
        result = run("report", "--store", store, "-o", target, "-f", "markdown", *FAST)
        assert result.exit_code == 0, result.output
        message = " ".join(result.stderr.split())
        assert f"warning: {target} is not a regular file (a device or a pipe)" in message and "3 plot images" in message
        assert not list(target.parent.glob(f"{target.name}-*")) and not list(target.parent.glob(f"{target.stem}-*.png"))
    reader.join(timeout=60)
    assert received and b"Leaderboard: none" in received[0] and b"![" not in received[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe.md"]


def test_a_markdown_report_through_a_symbolic_link_has_its_images_beside_the_target(store, tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "links").mkdir()
    target = tmp_path / "real" / "board.md"
    target.write_text("old")
    link = tmp_path / "links" / "latest.md"
    link.symlink_to(target)
    result = run("report", "--store", store, "-o", link, *FAST)
    assert result.exit_code == 0 and "not a regular file" not in result.stderr, result.output
    assert link.is_symlink()
    images = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", target.read_text())
    assert images == ["board-slope.png", "board-forest.png", "board-heatmap.png"]
    assert all((target.parent / name).read_bytes().startswith(b"\x89PNG") for name in images)
    assert [p.name for p in (tmp_path / "links").iterdir()] == ["latest.md"]
