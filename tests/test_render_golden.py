"""Golden files: every output format of every comparison document (diff, compare, matrix, report), built from
hand-built leaderboards and battles, compared byte for byte with ``tests/golden/``.

Regenerate after an intended change with ``ARENA_UPDATE_GOLDEN=1 pytest tests/test_render_golden.py`` and
review the diff. Plots are left out of the comparison (their SVG bytes belong to the matplotlib version): in
html each inline ``<svg>`` is replaced by a marker; parquet is compared as the frame it holds.
"""

from __future__ import annotations

import io
import os
import re
from pathlib import Path

import polars as pl
import pytest

from arena_cli import comparison as compare
from arena_cli import info
from arena_cli import pairwise as matrix
from arena_cli.results import PairwiseMatrix, Report
from arena_cli.render import Document, OutputFormat, render
from tests import compare_fixtures as fx

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("ARENA_UPDATE_GOLDEN") == "1"
TEXT_FORMATS = [OutputFormat.table, OutputFormat.json, OutputFormat.csv, OutputFormat.markdown, OutputFormat.html]
EXTENSION = {OutputFormat.table: "txt", OutputFormat.json: "json", OutputFormat.csv: "csv", OutputFormat.markdown: "md", OutputFormat.html: "html"}


def diff_document() -> Document:
    return compare.compare_variants(fx.leaderboards(), fx.all_coefficients(), fx.VARIANTS, top_k=3, settings={"seed": 7, "rounds": 50}).to_document()


def compare_document() -> Document:
    old = fx.leaderboard("none").filter(pl.col("model") != "foxtrot")
    new = fx.leaderboard("both").filter(pl.col("model") != "alpha")
    gates = [compare.parse_gate(g) for g in ("rank-shift=2", "top-k-change=3", "significant-shift", "models-changed", "score-shift=200")]
    return compare.compare_leaderboards(old, new, gates, "last-week.json", "this-week.json").to_document()


def matrix_document() -> Document:
    pairs = matrix.pairwise_counts(fx.battles())
    return PairwiseMatrix(pairs, tuple(matrix.model_order(pairs)), "win_rate").to_document()


def report_document() -> Document:
    battles = fx.battles()
    comparison = compare.compare_variants(fx.leaderboards(), fx.all_coefficients(), fx.VARIANTS, settings={"seed": 7})
    return Report(info.summarize(battles), comparison, fx.leaderboards(), matrix.pairwise_counts(battles), "fixture").to_document()


DOCUMENTS = {"diff": diff_document, "compare": compare_document, "matrix": matrix_document, "report": report_document}


def _comparable(data: bytes, fmt: OutputFormat) -> bytes:
    if fmt is OutputFormat.html:
        return re.sub(rb"<svg[\s>].*?</svg>", b"<svg><!-- plot --></svg>", data, flags=re.S)
    return data


def _check(path: Path, data: bytes) -> None:
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    if not path.exists():
        pytest.fail(f"golden file {path.name} missing: run with ARENA_UPDATE_GOLDEN=1 and review it")
    assert data == path.read_bytes(), f"{path.name} differs from the golden file (ARENA_UPDATE_GOLDEN=1 regenerates it)"


@pytest.mark.parametrize("fmt", TEXT_FORMATS, ids=lambda f: f.value)
@pytest.mark.parametrize("name", list(DOCUMENTS))
def test_golden(name, fmt):
    data = _comparable(render(DOCUMENTS[name](), fmt), fmt)
    _check(GOLDEN / f"{name}.{EXTENSION[fmt]}", data)


@pytest.mark.parametrize("name", list(DOCUMENTS))
def test_golden_parquet_holds_the_primary_table(name):
    doc = DOCUMENTS[name]()
    frame = pl.read_parquet(io.BytesIO(render(doc, OutputFormat.parquet)))
    assert frame.equals(doc.primary.frame)
    _check(GOLDEN / f"{name}.parquet.csv", frame.write_csv().encode())


def test_rendering_twice_is_byte_identical():
    for name, build in DOCUMENTS.items():
        for fmt in TEXT_FORMATS:
            if name == "report" and fmt is OutputFormat.html:
                continue  # plots: covered by test_render_layout.test_html_inlines_figures_as_svg_deterministically
            assert render(build(), fmt) == render(build(), fmt)
